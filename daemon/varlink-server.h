#pragma once

/* A generic Varlink server on sd-event: listening sockets, connections, call dispatch to
 * registered interfaces, the built-in org.varlink.service interface, and limits on every
 * resource a client controls. It knows nothing about the interfaces it serves.
 *
 * Each connection handles one call at a time, as the protocol requires: calls pipelined behind
 * a call that has not finished yet (an asynchronous reply, or an open "more" stream) wait in the
 * connection's buffer and are dispatched in order once it finishes, so replies always come in
 * call order.
 *
 * Protocol violations (a message that is not valid JSON, or not a valid call) are answered with
 * org.varlink.service.InvalidParameter naming the offending key ("message" for invalid JSON), and
 * the connection is then closed once that reply is written: the client has shown it does not
 * speak the protocol, and nothing after it can be trusted. An oversize message closes the
 * connection at once, since the stream cannot be resynchronised. A call with "upgrade" is
 * answered with MethodNotImplemented: no method here supports protocol upgrades. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "varlink.h"

typedef struct VarlinkServer VarlinkServer;
typedef struct VarlinkCallCtx VarlinkCallCtx;

/* Bounds on what clients can make the server hold. */
typedef struct VarlinkServerLimits {
        size_t max_message_bytes;   /* one incoming message; longer closes the connection */
        size_t max_output_bytes;    /* unsent reply bytes per connection; more drops the client */
        unsigned max_connections;   /* further connections are accepted and closed at once */
        unsigned max_pending_calls; /* calls buffered per connection before reading pauses */
        uint64_t idle_timeout_usec; /* no call running, nothing received: close; 0 = never */
} VarlinkServerLimits;

/* Fills @ret with the defaults: 64 KiB messages, 16 MiB output queue, 64 connections, 32 pending
 * calls, 60 s idle timeout. */
void varlink_server_limits_default(VarlinkServerLimits *ret);

/* Handles one call. @params is always an object (empty when the call had none), borrowed for
 * the duration of the handler; take a reference to keep it. The handler either replies before
 * returning, or takes a reference on @call and replies later. A negative return without a reply
 * closes the connection (for failures that leave nothing sensible to answer, such as -ENOMEM);
 * answers for the client, including refusals, are sent with varlink_call_error(). */
typedef int (*VarlinkMethodFunc)(VarlinkCallCtx *call, json_t *params, void *userdata);

/* Called once when the connection of a call that has not finished goes away (the client closed
 * it, or it was dropped for a limit, or the server is freed). It runs from the event loop, never
 * from inside a varlink_call_*() function. The call stays valid while references are held. */
typedef void (*VarlinkCallCloseFunc)(VarlinkCallCtx *call, void *userdata);

/* The method requires the "more" flag; calls without it get org.varlink.service.ExpectedMore. */
#define VARLINK_METHOD_REQUIRES_MORE (1u << 0)

typedef struct VarlinkMethod {
        const char *name; /* member name, e.g. "GetStatus"; must stay valid */
        VarlinkMethodFunc func;
        unsigned flags; /* VARLINK_METHOD_* */
} VarlinkMethod;

/* What the server counts of the calls to one method since it started; never reset. A call
 * counts once dispatched (parsed, its method looked up), whether it is then refused, answered
 * with an error or run. */
#define VARLINK_DURATION_BUCKETS 10
typedef struct VarlinkMethodStats {
        uint64_t calls;
        uint64_t refused; /* refused by the gate (VarlinkServerGate) */
        /* CPU time of the server's thread: reading and parsing each call, the gate, the
         * handler and what it sent at once. */
        uint64_t cpu_ns;
        /* Calls that were let through and answered (the final reply, or the first of a
         * "more" call), and how long after dispatch: per bucket of varlink_duration_bounds_ns,
         * not cumulative; the last one counts those above the last bound. */
        uint64_t answered;
        uint64_t duration_sum_ns;
        uint64_t duration_counts[VARLINK_DURATION_BUCKETS + 1];
} VarlinkMethodStats;

/* The upper bounds (inclusive) of the duration buckets, in ns: 100 us to 5 s in 1-5 steps. */
extern const uint64_t varlink_duration_bounds_ns[VARLINK_DURATION_BUCKETS];

/* An admission policy for the calls, run by the server on every call it dispatches. */
typedef struct VarlinkServerGate {
        /* Before the call runs (before the server's own answers to an unknown method, too):
         * returns true to let it run, or false once it has answered the call itself (with
         * varlink_call_error()), which counts as a refusal. */
        bool (*admit)(VarlinkCallCtx *call, void *userdata);
        /* After each call's dispatch: @cpu_ns more was spent on calls of @method (a
         * fully-qualified name). */
        void (*charge)(const char *method, uint64_t cpu_ns, void *userdata);
        void *userdata;
} VarlinkServerGate;

/* Creates a server attached to @e (a reference is taken). @limits NULL means the defaults.
 * Returns 0, -EINVAL for a zero limit (except the idle timeout) or -ENOMEM. */
int varlink_server_new(sd_event *e, const VarlinkServerLimits *limits, VarlinkServer **ret);

/* Closes every connection (running the close callbacks of unfinished calls), closes the
 * listening sockets and removes the socket files the server created. Accepts NULL; returns
 * NULL. Must not be called from inside a method handler. */
VarlinkServer *varlink_server_free(VarlinkServer *s);

/* Sets the pointer passed to every method handler of the registered interfaces. */
void varlink_server_set_userdata(VarlinkServer *s, void *userdata);

/* Serves an already bound and listening AF_UNIX stream socket (e.g. from sd_listen_fds()). The
 * server owns @fd on success. Returns 0, -ENOTSOCK, -EINVAL (not a listening stream socket) or
 * another negative errno. */
int varlink_server_listen_fd(VarlinkServer *s, int fd);

/* Creates the socket @path (creating missing parent directories with mode 0755), with file
 * mode @mode. A socket file left by a dead process is replaced; a live one gives -EADDRINUSE,
 * anything that is not a socket -EEXIST. Returns 0, -EINVAL (no path, or an abstract "@name"),
 * -ENAMETOOLONG or another negative errno. */
int varlink_server_listen_path(VarlinkServer *s, const char *path, mode_t mode);

/* Registers interface @name with its Varlink description text (served by
 * GetInterfaceDescription) and @n methods. The table is copied; method names must stay valid.
 * Returns 0, -EINVAL (invalid or duplicate names, missing handler), -EEXIST or -ENOMEM. */
int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description_text,
                                 const VarlinkMethod *methods, size_t n);

/* Sets what org.varlink.service.GetInfo reports. NULL leaves a field empty. Returns 0 or
 * -ENOMEM. */
int varlink_server_set_info(VarlinkServer *s, const char *vendor, const char *product,
                            const char *version, const char *url);

/* Sets the gate every call passes (copied); NULL removes it. */
void varlink_server_set_gate(VarlinkServer *s, const VarlinkServerGate *gate);

/* Calls @f with the statistics of each registered method (@interface and @method its names),
 * then once with NULL names for the calls to no registered method. */
typedef void (*VarlinkStatsFunc)(const char *interface, const char *method,
                                 const VarlinkMethodStats *stats, void *userdata);
void varlink_server_foreach_stats(const VarlinkServer *s, VarlinkStatsFunc f, void *userdata);

/* Runs no further call of @call's connection for @usec from now: the calls the client sends
 * meanwhile wait in the connection's buffer (reading pauses once the pending-call limit is
 * reached), and the connection stays open. For a refusal whose client should wait before its
 * next call, so that refusing cannot itself be made to cost without bound. A later hold
 * replaces an earlier one. Call it before answering @call: once answered, it no longer knows
 * its connection and this does nothing (as it does once the connection is gone). */
void varlink_call_hold_connection(VarlinkCallCtx *call, uint64_t usec);

/* Takes a reference on @call; returns @call. */
VarlinkCallCtx *varlink_call_ref(VarlinkCallCtx *call);

/* Drops a reference; the call is freed with the last one. Accepts NULL; returns NULL. Dropping
 * the last reference held outside the server before the final reply closes the connection, since
 * the call could then never be answered (its close callback is not run in that case). */
VarlinkCallCtx *varlink_call_unref(VarlinkCallCtx *call);

/* Sends the final reply with @params (stolen; NULL means no parameters) and finishes the call.
 * Nothing is sent for oneway calls. Returns 0; -ECONNRESET if the client is gone or was dropped
 * by this reply (queue limit); -EALREADY if the call had finished; -ENOMEM. */
int varlink_call_reply(VarlinkCallCtx *call, json_t *params);

/* As varlink_call_reply(), with the whole reply already written as JSON: @message, @len bytes
 * (and a NUL after them) of VARLINK_REPLY_TEXT_HEAD, one JSON object of parameters and
 * VARLINK_REPLY_TEXT_TAIL, sent as they are and freed (the caller answers for their being
 * valid JSON without a NUL; NULL is taken for out of memory, and closes the connection). For
 * large replies written without building a jansson tree, and without a copy. */
#define VARLINK_REPLY_TEXT_HEAD "{\"parameters\":"
#define VARLINK_REPLY_TEXT_TAIL "}"
int varlink_call_reply_text(VarlinkCallCtx *call, char *message, size_t len);

/* Sends a reply with "continues": true to a call made with "more"; the call stays open. Returns
 * as varlink_call_reply(), or -EINVAL if the call did not ask for more. */
int varlink_call_reply_continue(VarlinkCallCtx *call, json_t *params);

/* Sends error @error (a fully-qualified error name) with @params (stolen; NULL means none) and
 * finishes the call. Returns as varlink_call_reply(). */
int varlink_call_error(VarlinkCallCtx *call, const char *error, json_t *params);

/* Sends org.varlink.service.InvalidParameter naming @name and finishes the call. */
int varlink_call_error_invalid_parameter(VarlinkCallCtx *call, const char *name);

/* Checks @params against a field table like varlink_params_check(). Returns 0 if they are valid;
 * otherwise answers the call with InvalidParameter naming the field (finishing it) and returns
 * -EINVAL, after which the handler just returns 0. */
int varlink_call_check_params(VarlinkCallCtx *call, json_t *params, const VarlinkField *fields,
                              size_t n);

/* Sets the callback run if the connection goes away before the call finishes (see
 * VarlinkCallCloseFunc). Replaces any earlier one. */
void varlink_call_set_close_callback(VarlinkCallCtx *call, VarlinkCallCloseFunc cb, void *userdata);

/* The fully-qualified method name of the call. */
const char *varlink_call_method(const VarlinkCallCtx *call);

/* The peer's credentials from SO_PEERCRED, taken when the connection was accepted. Any output
 * pointer may be NULL. Returns 0. */
int varlink_call_peer(const VarlinkCallCtx *call, uid_t *ret_uid, gid_t *ret_gid, pid_t *ret_pid);

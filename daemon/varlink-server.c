#include "varlink-server.h"
#include "varlink-server-internal.h"

#include "sockaddr-un.h"
#include "util.h"
#include "varlink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Bytes read from a socket at a time, and reads per wake-up: enough to take a burst of calls in
 * one go without letting one busy client monopolise the loop. */
#define READ_CHUNK 65536
#define READS_PER_WAKEUP 4
/* Calls run per callback of a connection (the one that reads them, and the one deferred for
 * what is left), for fairness between connections. */
#define CALLS_PER_ITERATION 16
/* Connections accepted per wake-up of a listening socket. */
#define ACCEPTS_PER_WAKEUP 16
/* Pause before accepting again after running out of file descriptors or memory. */
#define ACCEPT_RETRY_USEC 100000ULL
/* An output buffer bigger than this is given back once drained. */
#define OUTPUT_KEEP_ALLOC 65536

static const char service_description[] =
        "# The Varlink Service Interface is provided by every varlink service. It\n"
        "# describes the service and the interfaces it implements.\n"
        "interface org.varlink.service\n"
        "\n"
        "# Get a list of all the interfaces a service provides and information\n"
        "# about the implementation.\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "# Get the description of an interface that is implemented by this service.\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "# The requested interface was not found.\n"
        "error InterfaceNotFound (interface: string)\n"
        "\n"
        "# The requested method was not found\n"
        "error MethodNotFound (method: string)\n"
        "\n"
        "# The interface defines the requested method, but the service does not\n"
        "# implement it.\n"
        "error MethodNotImplemented (method: string)\n"
        "\n"
        "# One of the passed parameters is invalid.\n"
        "error InvalidParameter (parameter: string)\n"
        "\n"
        "# Client is denied access\n"
        "error PermissionDenied ()\n"
        "\n"
        "# Method is expected to be called with 'more' set to true, but wasn't\n"
        "error ExpectedMore ()\n";

const uint64_t varlink_duration_bounds_ns[VARLINK_DURATION_BUCKETS] = {
        100000ULL,   500000ULL,    1000000ULL,   5000000ULL,    10000000ULL,
        50000000ULL, 100000000ULL, 500000000ULL, 1000000000ULL, 5000000000ULL,
};

typedef struct Interface {
        char *name;
        char *description;
        VarlinkMethod *methods;
        VarlinkMethodStats *stats; /* one per method */
        size_t n_methods;
        bool builtin; /* handlers get the server, not the user's pointer */
} Interface;

typedef struct Listener {
        VarlinkServer *server;
        struct Listener *next;
        int fd;
        sd_event_source *io;
        sd_event_source *retry;
        char *path; /* the socket file we created, removed again on free */
} Listener;

typedef struct Connection {
        VarlinkServer *server;
        struct Connection *prev, *next;
        int fd;
        sd_event_source *io;
        sd_event_source *defer; /* runs buffered calls and tears the connection down */
        sd_event_source *idle;
        VarlinkReader *reader;
        char *out;
        size_t out_start, out_end, out_alloc;
        VarlinkCallCtx *current; /* the call being handled; holds a reference */
        uid_t uid;
        gid_t gid;
        pid_t pid;
        uint64_t last_activity_usec;
        sd_event_source *hold; /* ends a varlink_call_hold_connection() */
        bool held;             /* run no call until the hold ends */
        bool eof;              /* the peer will send nothing more */
        bool closing;          /* protocol error: close once the queued output is written */
        bool dead;             /* close at the next opportunity from the event loop */
} Connection;

struct VarlinkCallCtx {
        unsigned n_ref;
        Connection *conn; /* NULL once finished or once the connection is gone */
        json_t *msg;      /* owns the strings and parameters 'call' points into; shared */
        json_t *empty;    /* the parameters of a call that has none: {} of its own */
        VarlinkCall call;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool finished;
        bool closed;
        VarlinkMethodStats *stats; /* of its method, once looked up */
        uint64_t start_ns;         /* CLOCK_MONOTONIC at dispatch */
        bool timed;                /* let through: its first answer goes into the durations */
        VarlinkCallCloseFunc close_cb;
        void *close_userdata;
};

struct VarlinkServer {
        sd_event *event;
        VarlinkServerLimits limits;
        void *userdata;
        char *vendor, *product, *version, *url;
        Interface *interfaces;
        size_t n_interfaces;
        Listener *listeners;
        Connection *connections;
        unsigned n_connections;
        char *read_buf;
        VarlinkServerGate gate;
        /* CPU charged to the gate for calls, in all. */
        uint64_t charged_ns;
        /* The event loop's iteration and the thread's CPU clock at the end of the last
         * callback of the server (0: none yet). */
        uint64_t last_iteration, last_end_cpu_ns;
        VarlinkMethodStats unknown_stats; /* calls to no registered method */
        VarlinkMemo *memo;                /* the calls parsed last, shared by the connections */
};

void varlink_server_limits_default(VarlinkServerLimits *ret)
{
        *ret = (VarlinkServerLimits){
                .max_message_bytes = 64 * 1024,
                .max_output_bytes = 16 * 1024 * 1024,
                .max_connections = 64,
                .max_pending_calls = 32,
                .idle_timeout_usec = 60 * 1000000ULL,
        };
}

static int service_get_info(VarlinkCallCtx *call, json_t *params, void *userdata);
static int service_get_interface_description(VarlinkCallCtx *call, json_t *params, void *userdata);

static const VarlinkMethod service_methods[] = {
        {"GetInfo", service_get_info, 0},
        {"GetInterfaceDescription", service_get_interface_description, 0},
};

static uint64_t server_now(VarlinkServer *s)
{
        uint64_t now = 0;

        (void)sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        return now;
}

/* ---- connections ---- */

static bool conn_out_empty(const Connection *c)
{
        return c->out_start == c->out_end;
}

static bool conn_can_read(const Connection *c)
{
        size_t pending = varlink_reader_n_complete(c->reader) + (c->current ? 1 : 0);

        return !c->eof && !c->closing && !c->dead && pending < c->server->limits.max_pending_calls;
}

/* Brings the event sources in line with the connection state. Safe from any context, including
 * method handlers: it never closes anything itself. */
static void conn_update(Connection *c)
{
        uint32_t events = 0;
        bool defer;

        if (c->dead) {
                (void)sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
                (void)sd_event_source_set_enabled(c->defer, SD_EVENT_ON);
                return;
        }
        if (conn_can_read(c)) {
                events |= EPOLLIN;
        }
        if (!conn_out_empty(c)) {
                events |= EPOLLOUT;
        }
        /* With no events requested the source stays enabled: epoll still reports a hang-up,
         * which is how a stream whose client went away is noticed. */
        if (sd_event_source_set_io_events(c->io, events) < 0) {
                c->dead = true;
                (void)sd_event_source_set_enabled(c->defer, SD_EVENT_ON);
                return;
        }
        if (c->closing) {
                defer = conn_out_empty(c);
        } else if (c->current) {
                defer = false;
        } else if (varlink_reader_n_complete(c->reader) > 0) {
                defer = !c->held;
        } else {
                defer = c->eof && conn_out_empty(c);
        }
        (void)sd_event_source_set_enabled(c->defer, defer ? SD_EVENT_ON : SD_EVENT_OFF);
}

/* Marks the connection for closing; the close itself happens from the event loop so that no
 * close callback ever runs inside a caller's varlink_call_*() invocation. */
static void conn_fail(Connection *c)
{
        c->dead = true;
        conn_update(c);
}

/* Frees @c, which is in no list: its event sources, its socket and its buffers. */
static void conn_free(Connection *c)
{
        if (!c) {
                return;
        }
        c->io = sd_event_source_disable_unref(c->io);
        c->defer = sd_event_source_disable_unref(c->defer);
        c->idle = sd_event_source_disable_unref(c->idle);
        c->hold = sd_event_source_disable_unref(c->hold);
        if (c->fd >= 0) {
                close(c->fd);
        }
        varlink_reader_free(c->reader);
        free(c->out);
        free(c);
}

static void conn_freep(Connection **c)
{
        conn_free(*c);
}
#define _cleanup_conn_ __attribute__((cleanup(conn_freep)))

static void conn_disconnect(Connection *c)
{
        VarlinkServer *s = c->server;
        VarlinkCallCtx *call = c->current;

        if (c->prev) {
                c->prev->next = c->next;
        } else {
                s->connections = c->next;
        }
        if (c->next) {
                c->next->prev = c->prev;
        }
        s->n_connections--;
        c->current = NULL;
        conn_free(c);

        /* The call outlives its connection while its handler holds it: it learns it closed. */
        if (call) {
                call->conn = NULL;
                call->closed = true;
                if (call->close_cb) {
                        call->close_cb(call, call->close_userdata);
                }
                varlink_call_unref(call);
        }
}

static void conn_touch(Connection *c)
{
        c->last_activity_usec = server_now(c->server);
}

static void conn_flush(Connection *c)
{
        size_t before = c->out_start;

        while (c->out_start < c->out_end) {
                ssize_t n = send(c->fd, c->out + c->out_start, c->out_end - c->out_start,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        if (errno != EAGAIN && errno != EWOULDBLOCK) {
                                c->dead = true;
                        }
                        break;
                }
                c->out_start += (size_t)n;
        }
        if (c->out_start != before) {
                /* A client slowly draining a long reply is not idle. */
                conn_touch(c);
        }
        if (c->out_start == c->out_end) {
                c->out_start = c->out_end = 0;
                if (c->out_alloc > OUTPUT_KEEP_ALLOC) {
                        free(c->out);
                        c->out = NULL;
                        c->out_alloc = 0;
                }
        }
}

/* Queues the message @message of @len bytes (its NUL terminator included; taken over) behind any
 * unsent output and writes what the socket takes. A client whose unsent output would exceed
 * the limit is dropped rather than buffered without bound. */
static int conn_enqueue_text(Connection *c, char *message, size_t len)
{
        _cleanup_free_ char *text = message; /* freed on every return */
        size_t max = c->server->limits.max_output_bytes;
        size_t off = 0, rest, queued = c->out_end - c->out_start;

        /* Nothing queued: write straight from the message and keep only what is left. */
        while (queued == 0 && off < len) {
                ssize_t n = send(c->fd, text + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        if (errno != EAGAIN && errno != EWOULDBLOCK) {
                                conn_fail(c);
                                return -ECONNRESET;
                        }
                        break;
                }
                off += (size_t)n;
        }
        if (off > 0) {
                conn_touch(c);
        }
        rest = len - off;
        if (rest > max || queued > max - rest) {
                conn_fail(c);
                return -ECONNRESET;
        }
        if (rest > 0 && c->out_end + rest > c->out_alloc) {
                size_t alloc;
                char *p;

                if (c->out_start > 0) {
                        memmove(c->out, c->out + c->out_start, queued);
                        c->out_start = 0;
                        c->out_end = queued;
                }
                alloc = c->out_alloc ? c->out_alloc : 4096;
                while (alloc < c->out_end + rest) {
                        alloc *= 2;
                }
                if (alloc > c->out_alloc) {
                        p = realloc(c->out, alloc);
                        if (!p) {
                                conn_fail(c);
                                return -ENOMEM;
                        }
                        c->out = p;
                        c->out_alloc = alloc;
                }
        }
        if (rest > 0) {
                memcpy(c->out + c->out_end, text + off, rest);
                c->out_end += rest;
        }
        conn_update(c);
        return 0;
}

/* conn_enqueue_text() of @msg (stolen), serialized. */
static int conn_enqueue(Connection *c, json_t *msg)
{
        size_t len;
        char *text;
        int r;

        if (!msg) {
                conn_fail(c);
                return -ENOMEM;
        }
        r = varlink_message_serialize(msg, &text, &len);
        json_decref(msg);
        if (r < 0) {
                conn_fail(c);
                return r;
        }
        return conn_enqueue_text(c, text, len);
}

/* Answers a message that is not a valid call, then closes once that answer is written. */
static void conn_protocol_error(Connection *c, json_t *error)
{
        if (!error) {
                conn_fail(c);
                return;
        }
        (void)conn_enqueue(c, error);
        c->closing = true;
        conn_update(c);
}

static const Interface *server_find_interface(const VarlinkServer *s, const char *name, size_t len)
{
        for (size_t i = 0; i < s->n_interfaces; i++) {
                if (strlen(s->interfaces[i].name) == len &&
                    memcmp(s->interfaces[i].name, name, len) == 0) {
                        return &s->interfaces[i];
                }
        }
        return NULL;
}

static json_t *single_string_object(const char *key, json_t *value)
{
        json_t *o = json_object();

        if (!o || json_object_set_new(o, key, value) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static int call_send(VarlinkCallCtx *call, json_t *msg, bool final);

static void call_run(VarlinkServer *s, VarlinkCallCtx *call)
{
        const char *method = call->call.method;
        const char *member = strrchr(method, '.') + 1;
        size_t iface_len = (size_t)(member - 1 - method);
        const Interface *iface;
        const VarlinkMethod *m = NULL;
        json_t *params;
        int r;

        iface = server_find_interface(s, method, iface_len);
        for (size_t i = 0; iface && i < iface->n_methods; i++) {
                if (strcmp(iface->methods[i].name, member) == 0) {
                        m = &iface->methods[i];
                        call->stats = &iface->stats[i];
                        break;
                }
        }
        if (!m) {
                call->stats = &s->unknown_stats;
        }
        call->stats->calls++;
        if (s->gate.admit && !s->gate.admit(call, s->gate.userdata)) {
                call->stats->refused++;
                if (!call->finished && call->conn) {
                        conn_fail(call->conn);
                }
                return;
        }
        call->timed = true;
        if (!iface) {
                (void)call_send(
                        call,
                        varlink_error_new(
                                VARLINK_ERROR_INTERFACE_NOT_FOUND,
                                single_string_object("interface", json_stringn(method, iface_len))),
                        true);
                return;
        }
        if (!m || call->call.upgrade) {
                const char *error =
                        m ? VARLINK_ERROR_METHOD_NOT_IMPLEMENTED : VARLINK_ERROR_METHOD_NOT_FOUND;

                (void)call_send(call,
                                varlink_error_new(
                                        error, single_string_object("method", json_string(method))),
                                true);
                return;
        }
        if ((m->flags & VARLINK_METHOD_REQUIRES_MORE) && !call->call.more) {
                (void)call_send(call, varlink_error_new(VARLINK_ERROR_EXPECTED_MORE, NULL), true);
                return;
        }

        params = call->call.parameters;
        if (!params) {
                /* Handlers always see an object: one of the call's own, not added to the
                 * message, which the server's memo shares with the calls that repeat it. */
                params = call->empty = json_object();
                if (!params) {
                        conn_fail(call->conn);
                        return;
                }
                call->call.parameters = params;
        }

        r = m->func(call, params, iface->builtin ? (void *)s : s->userdata);
        if (r < 0 && !call->finished && call->conn) {
                conn_fail(call->conn);
        }
}

/* Dispatches @msg, read from the connection's buffer when the thread's CPU clock read
 * @cpu_start_ns. Returns what that clock read when the call was done with (the start of the
 * next), or 0 when it was not read. */
static uint64_t conn_dispatch(Connection *c, json_t *msg, uint64_t cpu_start_ns)
{
        VarlinkServer *s = c->server;
        uint64_t cpu_ns, end_ns = 0;
        json_t *error = NULL;
        VarlinkCallCtx *call;
        VarlinkCall parsed;

        if (varlink_call_parse(msg, &parsed, &error) < 0) {
                json_decref(msg);
                conn_protocol_error(c, error);
                return 0;
        }
        call = calloc(1, sizeof(*call));
        if (!call) {
                json_decref(msg);
                conn_fail(c);
                return 0;
        }
        /* One reference for the connection, one for the duration of the handler. */
        call->n_ref = 2;
        call->conn = c;
        call->msg = msg;
        call->call = parsed;
        call->uid = c->uid;
        call->gid = c->gid;
        call->pid = c->pid;
        call->start_ns = now_ns(CLOCK_MONOTONIC);
        c->current = call;
        conn_touch(c);

        call_run(s, call);
        if (call->stats) {
                end_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
                cpu_ns = end_ns - cpu_start_ns;
                call->stats->cpu_ns += cpu_ns;
                s->charged_ns += cpu_ns;
                if (s->gate.charge) {
                        s->gate.charge(call->call.method, cpu_ns, s->gate.userdata);
                }
        }
        varlink_call_unref(call);
        return end_ns;
}

/* Runs up to @budget buffered calls, stopping at one that does not finish right away. The
 * thread's CPU clock read @cpu_ns when the callback that runs them began (0: not read; it is
 * then read before the first call is parsed), and each call's end is the next one's start: a
 * call costs one reading of that clock, which is a system call. Returns the last call's end
 * reading, 0 when no call was charged. */
static uint64_t conn_process(Connection *c, size_t budget, uint64_t cpu_ns)
{
        uint64_t end_ns = 0;

        while (budget-- > 0 && !c->dead && !c->closing && !c->current && !c->held) {
                json_t *msg = NULL;
                json_t *error;
                int r;

                if (cpu_ns == 0 && varlink_reader_n_complete(c->reader) > 0) {
                        cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
                }

                r = varlink_reader_next_memo(c->reader, c->server->memo, &msg);
                if (r == 0) {
                        break;
                }
                end_ns = 0; /* until this message is a call done with: the end is read later */
                if (r == -EBADMSG) {
                        error = varlink_error_invalid_parameter("message");
                        conn_protocol_error(c, error);
                        break;
                }
                if (r < 0) {
                        conn_fail(c);
                        break;
                }
                cpu_ns = end_ns = conn_dispatch(c, msg, cpu_ns);
        }
        return end_ns;
}

/* Called at the end of every event-loop callback of a connection: closes it if it is finished
 * or failed (and returns true: @c is gone), otherwise updates what it waits for. */
static bool conn_settle(Connection *c)
{
        bool idle_eof = c->eof && !c->current && varlink_reader_n_complete(c->reader) == 0 &&
                        conn_out_empty(c);

        if (c->dead || (c->closing && conn_out_empty(c)) || idle_eof) {
                conn_disconnect(c);
                return true;
        }
        conn_update(c);
        return false;
}

static void conn_read(Connection *c)
{
        VarlinkServer *s = c->server;

        for (int i = 0; i < READS_PER_WAKEUP && conn_can_read(c); i++) {
                ssize_t n = recv(c->fd, s->read_buf, READ_CHUNK, MSG_DONTWAIT);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        if (errno != EAGAIN && errno != EWOULDBLOCK) {
                                c->dead = true;
                        }
                        return;
                }
                if (n == 0) {
                        /* Calls sent just before the end still run (a oneway call followed by
                         * close is the normal way to use oneway); the buffer is bounded. */
                        c->eof = true;
                        (void)conn_process(c, SIZE_MAX, 0);
                        return;
                }
                conn_touch(c);
                if (varlink_reader_feed(c->reader, s->read_buf, (size_t)n) < 0) {
                        c->dead = true;
                        return;
                }
                /* Less than asked for: the socket is empty (epoll says when it is not). */
                if (n < READ_CHUNK) {
                        return;
                }
        }
}

/* Where a callback of the server began: its thread's CPU clock, what calls were charged, and
 * the loop's own turn before it when that was for the server too. */
typedef struct Uncharged {
        uint64_t cpu_start_ns, charged_ns, turn_ns;
} Uncharged;

/* The loop dispatches one event source per iteration. When the iteration before this one ran
 * a callback of the server too, the CPU time since that callback ended is the loop's own turn
 * (waiting in epoll, preparing and dispatching) for the server, which clients that keep it
 * busy cause as much as their calls: under a flood of cheap calls it outweighs them. When
 * something else ran in between (a harvest, a timer), that time is not the clients'. */
static Uncharged uncharged_begin(const VarlinkServer *s)
{
        uint64_t now = now_ns(CLOCK_THREAD_CPUTIME_ID), iteration = 0;
        Uncharged u = {now, s->charged_ns, 0};

        if (sd_event_get_iteration(s->event, &iteration) >= 0 && s->last_iteration > 0 &&
            iteration == s->last_iteration + 1 && now > s->last_end_cpu_ns) {
                u.turn_ns = now - s->last_end_cpu_ns;
        }
        return u;
}

/* What the callback begun at @u cost that no call was charged for (reading what is not yet a
 * call, sending replies that waited, settling a connection, its timers, accepting, closing),
 * and the loop's turn before it, go to the gate as a call to no method: the more calls clients
 * make, the more of it there is, and it is theirs. @last_ns is the callback's last reading of
 * the thread's CPU clock when what followed it was only bookkeeping (0: read it now), a
 * reading fewer per callback: that rest then counts with the loop's next turn when that turn
 * is the server's too, and goes uncharged otherwise. */
static void uncharged_end(VarlinkServer *s, const Uncharged *u, uint64_t last_ns)
{
        uint64_t end = last_ns > 0 ? last_ns : now_ns(CLOCK_THREAD_CPUTIME_ID);
        uint64_t cpu_ns = end - u->cpu_start_ns + u->turn_ns;
        uint64_t calls_ns = s->charged_ns - u->charged_ns;

        if (s->gate.charge && cpu_ns > calls_ns) {
                s->gate.charge("", cpu_ns - calls_ns, s->gate.userdata);
        }
        (void)sd_event_get_iteration(s->event, &s->last_iteration);
        s->last_end_cpu_ns = end;
}

static int conn_on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        Connection *c = userdata;
        VarlinkServer *s = c->server;
        Uncharged u = uncharged_begin(s);
        uint64_t last_ns = 0;

        if (revents & EPOLLOUT) {
                conn_flush(c);
        }
        if (!c->dead && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                if (conn_can_read(c)) {
                        conn_read(c);
                        /* A call read here is answered in this callback: the loop takes one
                         * turn for it, which a client that calls now and then finds cold. The
                         * first call is charged its reading too, not replies sent before it
                         * (read then before it is parsed). At the end of the stream the read
                         * ran them all. */
                        if (!c->eof) {
                                last_ns = conn_process(c, CALLS_PER_ITERATION,
                                                       revents & EPOLLOUT ? 0 : u.cpu_start_ns);
                        }
                } else if (revents & (EPOLLHUP | EPOLLERR)) {
                        /* The peer closed both directions: nothing we send can arrive. */
                        c->dead = true;
                }
        }
        if (conn_settle(c)) { /* @c is gone: closing it was work of its own */
                last_ns = 0;
        }
        uncharged_end(s, &u, last_ns);
        return 0;
}

static int conn_on_defer(sd_event_source *source, void *userdata)
{
        Connection *c = userdata;
        VarlinkServer *s = c->server;
        Uncharged u = uncharged_begin(s);
        uint64_t last_ns = conn_process(c, CALLS_PER_ITERATION, u.cpu_start_ns);

        if (conn_settle(c)) {
                last_ns = 0;
        }
        uncharged_end(s, &u, last_ns);
        return 0;
}

static int conn_on_idle(sd_event_source *source, uint64_t usec, void *userdata)
{
        Connection *c = userdata;
        uint64_t timeout = c->server->limits.idle_timeout_usec;
        uint64_t now = server_now(c->server);
        uint64_t next;

        if (c->current || c->held || c->dead) {
                /* A running call (a "more" stream, say) is not idleness, nor a refused one's
                 * wait for its retry time. */
                next = now + timeout;
        } else if (now >= c->last_activity_usec + timeout) {
                conn_disconnect(c);
                return 0;
        } else {
                next = c->last_activity_usec + timeout;
        }
        if (sd_event_source_set_time(source, next) < 0 ||
            sd_event_source_set_enabled(source, SD_EVENT_ONESHOT) < 0) {
                conn_fail(c);
        }
        return 0;
}

static int conn_on_hold(sd_event_source *source, uint64_t usec, void *userdata)
{
        Connection *c = userdata;
        VarlinkServer *s = c->server;
        Uncharged u = uncharged_begin(s);

        c->held = false;
        (void)conn_settle(c);
        uncharged_end(s, &u, 0);
        return 0;
}

/* Takes @fd, a connection just accepted, whatever the result. */
static int conn_new(VarlinkServer *s, int fd)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        uint64_t timeout = s->limits.idle_timeout_usec;
        _cleanup_conn_ Connection *c = calloc(1, sizeof(*c));
        int r;

        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        c->server = s;
        c->fd = fd;

        /* Credentials are taken once, at accept, so they describe who connected. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                return -errno;
        }
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;
        conn_touch(c);

        r = varlink_reader_new(s->limits.max_message_bytes, &c->reader);
        if (r < 0) {
                return r;
        }
        r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, conn_on_io, c);
        if (r < 0) {
                return r;
        }
        r = sd_event_add_defer(s->event, &c->defer, conn_on_defer, c);
        if (r < 0) {
                return r;
        }
        r = sd_event_source_set_enabled(c->defer, SD_EVENT_OFF);
        if (r < 0) {
                return r;
        }
        if (timeout > 0) {
                uint64_t accuracy = timeout / 20;

                r = sd_event_add_time_relative(s->event, &c->idle, CLOCK_MONOTONIC, timeout,
                                               accuracy > 0 ? accuracy : 1, conn_on_idle, c);
                if (r < 0) {
                        return r;
                }
        }
        c->next = s->connections;
        if (c->next) {
                c->next->prev = c;
        }
        s->connections = c;
        s->n_connections++;
        c = NULL; /* the server's now */
        return 0;
}

/* ---- listeners ---- */

static int listener_on_retry(sd_event_source *source, uint64_t usec, void *userdata)
{
        Listener *l = userdata;

        (void)sd_event_source_set_enabled(l->io, SD_EVENT_ON);
        return 0;
}

static void listener_pause(Listener *l)
{
        VarlinkServer *s = l->server;
        int r;

        /* Out of descriptors or memory: the listening socket stays readable, so keep it quiet
         * for a moment instead of spinning. */
        if (!l->retry) {
                r = sd_event_add_time_relative(s->event, &l->retry, CLOCK_MONOTONIC,
                                               ACCEPT_RETRY_USEC, 0, listener_on_retry, l);
        } else {
                r = sd_event_source_set_time_relative(l->retry, ACCEPT_RETRY_USEC);
                if (r >= 0) {
                        r = sd_event_source_set_enabled(l->retry, SD_EVENT_ONESHOT);
                }
        }
        if (r >= 0) {
                (void)sd_event_source_set_enabled(l->io, SD_EVENT_OFF);
        }
}

/* Closes the connections whose client has gone (the socket is shut both ways), which the loop
 * would otherwise close only on their next turn. Returns how many it closed. A client that
 * only shut its sending side still gets its replies. */
static unsigned server_close_gone(VarlinkServer *s)
{
        unsigned n = 0;

        for (Connection *c = s->connections, *next; c; c = next) {
                struct pollfd p = {.fd = c->fd};

                next = c->next;
                if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) {
                        conn_disconnect(c);
                        n++;
                }
        }
        return n;
}

static int listener_on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        Listener *l = userdata;
        VarlinkServer *s = l->server;
        Uncharged u = uncharged_begin(s);

        for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
                int cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (cfd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) {
                                continue;
                        }
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM) {
                                listener_pause(l);
                        }
                        break;
                }
                if (s->n_connections >= s->limits.max_connections &&
                    (server_close_gone(s) == 0 || s->n_connections >= s->limits.max_connections)) {
                        /* Accepting and closing tells the client at once, where leaving it in
                         * the backlog would keep the listening socket readable forever. */
                        close(cfd);
                        continue;
                }
                (void)conn_new(s, cfd);
        }
        uncharged_end(s, &u, 0);
        return 0;
}

static Listener *listener_free(Listener *l)
{
        if (!l) {
                return NULL;
        }
        l->io = sd_event_source_disable_unref(l->io);
        l->retry = sd_event_source_disable_unref(l->retry);
        if (l->fd >= 0) {
                close(l->fd);
        }
        if (l->path) {
                (void)unlink(l->path);
                free(l->path);
        }
        free(l);
        return NULL;
}

/* Takes ownership of @fd and @path (either way). */
static int server_add_listener(VarlinkServer *s, int fd, char *path)
{
        Listener *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l) {
                close(fd);
                if (path) {
                        (void)unlink(path);
                }
                free(path);
                return -ENOMEM;
        }
        l->server = s;
        l->fd = fd;
        l->path = path;
        r = sd_event_add_io(s->event, &l->io, fd, EPOLLIN, listener_on_io, l);
        if (r < 0) {
                listener_free(l);
                return r;
        }
        l->next = s->listeners;
        s->listeners = l;
        return 0;
}

int varlink_server_listen_fd(VarlinkServer *s, int fd)
{
        struct stat st;
        int type = 0, domain = 0, accepting = 0, flags;
        socklen_t len;

        if (fd < 0) {
                return -EBADF;
        }
        if (fstat(fd, &st) < 0) {
                return -errno;
        }
        if (!S_ISSOCK(st.st_mode)) {
                return -ENOTSOCK;
        }
        len = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
                return -errno;
        }
        len = sizeof(domain);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0) {
                return -errno;
        }
        len = sizeof(accepting);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0) {
                return -errno;
        }
        if (type != SOCK_STREAM || domain != AF_UNIX || !accepting) {
                return -EINVAL;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                return -errno;
        }
        return server_add_listener(s, fd, NULL);
}

static int mkdir_parents(const char *path)
{
        char *copy = strdup(path);
        int r = 0;

        if (!copy) {
                return -ENOMEM;
        }
        for (char *p = copy + 1; *p != '\0'; p++) {
                if (*p != '/') {
                        continue;
                }
                *p = '\0';
                if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
                        r = -errno;
                        break;
                }
                *p = '/';
        }
        free(copy);
        return r;
}

/* Returns 1 if something accepts connections on @sa, 0 if the socket file is stale. */
static int socket_is_live(const struct sockaddr_un *sa, socklen_t sa_len)
{
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int r;

        if (fd < 0) {
                return -errno;
        }
        if (connect(fd, (const struct sockaddr *)sa, sa_len) == 0) {
                r = 1;
        } else if (errno == ECONNREFUSED || errno == ENOENT) {
                r = 0;
        } else {
                /* EAGAIN: a full backlog still means a live server. */
                r = 1;
        }
        close(fd);
        return r;
}

/* Binds @fd to @sa (the socket file @path), replacing a socket file there that no server
 * listens on any more. Returns 0, -EEXIST when @path is not a socket, -EADDRINUSE when a
 * server listens there, or a negative errno. */
static int bind_replacing(int fd, const char *path, const struct sockaddr_un *sa, socklen_t sa_len)
{
        struct stat st;
        int r;

        if (bind(fd, (const struct sockaddr *)sa, sa_len) == 0) {
                return 0;
        }
        if (errno != EADDRINUSE) {
                return -errno;
        }
        if (lstat(path, &st) < 0) {
                return -errno;
        }
        if (!S_ISSOCK(st.st_mode)) {
                return -EEXIST;
        }
        r = socket_is_live(sa, sa_len);
        if (r != 0) {
                return r > 0 ? -EADDRINUSE : r;
        }
        if (unlink(path) < 0 && errno != ENOENT) {
                return -errno;
        }
        if (bind(fd, (const struct sockaddr *)sa, sa_len) < 0) {
                return -errno;
        }
        return 0;
}

int varlink_server_listen_path(VarlinkServer *s, const char *path, mode_t mode)
{
        struct sockaddr_un sa;
        socklen_t sa_len;
        _cleanup_close_ int fd = -1;
        char *copy;
        int r;

        /* A socket file only: an abstract name has no file to give a mode or to replace. */
        if (path && path[0] == '@') {
                return -EINVAL;
        }
        r = sockaddr_un_set(&sa, path, &sa_len);
        if (r < 0) {
                return r;
        }
        r = mkdir_parents(path);
        if (r < 0) {
                return r;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
                return -errno;
        }
        r = bind_replacing(fd, path, &sa, sa_len);
        if (r < 0) {
                return r;
        }
        /* The mode is set before listen(): until then nobody can connect, whatever mode the
         * umask gave the file at bind(). */
        if (chmod(path, mode) < 0 || listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                (void)unlink(path);
                return r;
        }
        copy = strdup(path);
        if (!copy) {
                (void)unlink(path);
                return -ENOMEM;
        }
        r = server_add_listener(s, fd, copy);
        fd = -1; /* the listener's, or closed */
        return r;
}

/* ---- server ---- */

static int server_add_interface_internal(VarlinkServer *s, const char *name,
                                         const char *description, const VarlinkMethod *methods,
                                         size_t n, bool builtin)
{
        Interface *array, *iface;

        if (!varlink_interface_name_is_valid(name) || !description || (n > 0 && !methods)) {
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (!varlink_member_name_is_valid(methods[i].name) || !methods[i].func) {
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++) {
                        if (strcmp(methods[i].name, methods[j].name) == 0) {
                                return -EINVAL;
                        }
                }
        }
        if (server_find_interface(s, name, strlen(name))) {
                return -EEXIST;
        }
        array = realloc(s->interfaces, (s->n_interfaces + 1) * sizeof(*array));
        if (!array) {
                return -ENOMEM;
        }
        s->interfaces = array;
        iface = &array[s->n_interfaces];
        *iface = (Interface){
                .name = strdup(name),
                .description = strdup(description),
                .methods = n > 0 ? malloc(n * sizeof(*methods)) : NULL,
                .stats = n > 0 ? calloc(n, sizeof(VarlinkMethodStats)) : NULL,
                .n_methods = n,
                .builtin = builtin,
        };
        if (!iface->name || !iface->description || (n > 0 && (!iface->methods || !iface->stats))) {
                free(iface->name);
                free(iface->description);
                free(iface->methods);
                free(iface->stats);
                return -ENOMEM;
        }
        if (n > 0) {
                memcpy(iface->methods, methods, n * sizeof(*methods));
        }
        s->n_interfaces++;
        return 0;
}

int varlink_server_add_interface(VarlinkServer *s, const char *name, const char *description_text,
                                 const VarlinkMethod *methods, size_t n)
{
        return server_add_interface_internal(s, name, description_text, methods, n, false);
}

int varlink_server_new(sd_event *e, const VarlinkServerLimits *limits, VarlinkServer **ret)
{
        VarlinkServer *s;
        int r;

        if (!e) {
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                return -ENOMEM;
        }
        if (limits) {
                s->limits = *limits;
        } else {
                varlink_server_limits_default(&s->limits);
        }
        if (s->limits.max_message_bytes == 0 || s->limits.max_output_bytes == 0 ||
            s->limits.max_output_bytes > SIZE_MAX / 4 || s->limits.max_connections == 0 ||
            s->limits.max_pending_calls == 0) {
                free(s);
                return -EINVAL;
        }
        s->event = sd_event_ref(e);
        s->read_buf = malloc(READ_CHUNK);
        if (!s->read_buf || varlink_memo_new(&s->memo) < 0) {
                varlink_server_free(s);
                return -ENOMEM;
        }
        r = server_add_interface_internal(s, VARLINK_SERVICE_INTERFACE, service_description,
                                          service_methods, ELEMENTSOF(service_methods), true);
        if (r < 0) {
                varlink_server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

VarlinkServer *varlink_server_free(VarlinkServer *s)
{
        if (!s) {
                return NULL;
        }
        while (s->connections) {
                conn_disconnect(s->connections);
        }
        while (s->listeners) {
                Listener *l = s->listeners;

                s->listeners = l->next;
                listener_free(l);
        }
        for (size_t i = 0; i < s->n_interfaces; i++) {
                free(s->interfaces[i].name);
                free(s->interfaces[i].description);
                free(s->interfaces[i].methods);
                free(s->interfaces[i].stats);
        }
        free(s->interfaces);
        free(s->vendor);
        free(s->product);
        free(s->version);
        free(s->url);
        free(s->read_buf);
        varlink_memo_free(s->memo);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

void varlink_server_set_userdata(VarlinkServer *s, void *userdata)
{
        s->userdata = userdata;
}

static int replace_string(char **field, const char *value)
{
        char *copy = NULL;

        if (value) {
                copy = strdup(value);
                if (!copy) {
                        return -ENOMEM;
                }
        }
        free(*field);
        *field = copy;
        return 0;
}

int varlink_server_set_info(VarlinkServer *s, const char *vendor, const char *product,
                            const char *version, const char *url)
{
        if (replace_string(&s->vendor, vendor) < 0 || replace_string(&s->product, product) < 0 ||
            replace_string(&s->version, version) < 0 || replace_string(&s->url, url) < 0) {
                return -ENOMEM;
        }
        return 0;
}

unsigned varlink_server_n_connections(const VarlinkServer *s)
{
        return s->n_connections;
}

void varlink_server_set_gate(VarlinkServer *s, const VarlinkServerGate *gate)
{
        s->gate = gate ? *gate : (VarlinkServerGate){0};
}

void varlink_server_foreach_stats(const VarlinkServer *s, VarlinkStatsFunc f, void *userdata)
{
        for (size_t i = 0; i < s->n_interfaces; i++) {
                for (size_t k = 0; k < s->interfaces[i].n_methods; k++) {
                        f(s->interfaces[i].name, s->interfaces[i].methods[k].name,
                          &s->interfaces[i].stats[k], userdata);
                }
        }
        f(NULL, NULL, &s->unknown_stats, userdata);
}

/* ---- org.varlink.service ---- */

static int service_get_info(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        VarlinkServer *s = userdata;
        json_t *interfaces, *reply;

        if (varlink_call_check_params(call, params, NULL, 0) < 0) {
                return 0;
        }
        interfaces = json_array();
        for (size_t i = 0; interfaces && i < s->n_interfaces; i++) {
                if (json_array_append_new(interfaces, json_string(s->interfaces[i].name)) < 0) {
                        json_decref(interfaces);
                        interfaces = NULL;
                }
        }
        if (!interfaces) {
                return -ENOMEM;
        }
        reply = json_pack("{s:s, s:s, s:s, s:s, s:o}", "vendor", s->vendor ? s->vendor : "",
                          "product", s->product ? s->product : "", "version",
                          s->version ? s->version : "", "url", s->url ? s->url : "", "interfaces",
                          interfaces);
        if (!reply) {
                return -ENOMEM;
        }
        return varlink_call_reply(call, reply);
}

static int service_get_interface_description(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"interface", JSON_STRING, true},
        };
        VarlinkServer *s = userdata;
        const Interface *iface;
        const char *name;

        if (varlink_call_check_params(call, params, fields, 1) < 0) {
                return 0;
        }
        name = json_string_value(json_object_get(params, "interface"));
        iface = server_find_interface(s, name, strlen(name));
        if (!iface) {
                return varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND,
                                          single_string_object("interface", json_string(name)));
        }
        return varlink_call_reply(
                call, single_string_object("description", json_string(iface->description)));
}

/* ---- calls ---- */

VarlinkCallCtx *varlink_call_ref(VarlinkCallCtx *call)
{
        if (call) {
                call->n_ref++;
        }
        return call;
}

VarlinkCallCtx *varlink_call_unref(VarlinkCallCtx *call)
{
        if (!call) {
                return NULL;
        }
        if (--call->n_ref > 0) {
                if (call->n_ref == 1 && call->conn && !call->finished) {
                        /* Only the connection's reference is left: nobody can ever answer this
                         * call, and the calls behind it would wait forever. */
                        call->close_cb = NULL;
                        conn_fail(call->conn);
                }
                return NULL;
        }
        json_decref(call->msg);
        json_decref(call->empty);
        free(call);
        return NULL;
}

/* The first answer of a call that was let through: its duration since dispatch. */
static void call_account_answer(VarlinkCallCtx *call)
{
        uint64_t d = now_ns(CLOCK_MONOTONIC) - call->start_ns;
        size_t k = 0;

        call->timed = false;
        while (k < VARLINK_DURATION_BUCKETS && d > varlink_duration_bounds_ns[k]) {
                k++;
        }
        call->stats->answered++;
        call->stats->duration_sum_ns += d;
        call->stats->duration_counts[k]++;
}

/* Sends @msg, or the message @text of @len bytes (NUL included) when @msg is NULL; takes over
 * either. Neither: out of memory. */
static int call_send_any(VarlinkCallCtx *call, json_t *msg, char *text, size_t len, bool final)
{
        Connection *c = call->conn;
        int r = 0;

        if (call->finished) {
                json_decref(msg);
                free(text);
                return -EALREADY;
        }
        if (call->timed) {
                call_account_answer(call);
        }
        if (!c || c->dead) {
                json_decref(msg);
                free(text);
                r = -ECONNRESET;
        } else if (!msg && !text) {
                /* Leaving the client waiting for an answer we cannot build helps nobody. */
                conn_fail(c);
                return -ENOMEM;
        } else if (call->call.oneway) {
                json_decref(msg);
                free(text);
        } else {
                r = msg ? conn_enqueue(c, msg) : conn_enqueue_text(c, text, len);
        }
        if (final) {
                /* Finished even when the client is gone: whoever replied is done with the call
                 * and expects no close callback any more. */
                call->finished = true;
                call->conn = NULL;
                if (c) {
                        if (c->current == call) {
                                c->current = NULL;
                        }
                        conn_touch(c);
                        conn_update(c);
                        varlink_call_unref(call);
                }
        }
        return r;
}

static int call_send(VarlinkCallCtx *call, json_t *msg, bool final)
{
        return call_send_any(call, msg, NULL, 0, final);
}

int varlink_call_reply_text(VarlinkCallCtx *call, char *message, size_t len)
{
        /* The NUL that ends the message on the wire is the one after it. */
        return call_send_any(call, NULL, message, message ? len + 1 : 0, true);
}

int varlink_call_reply(VarlinkCallCtx *call, json_t *params)
{
        return call_send(call, varlink_reply_new(params, false), true);
}

int varlink_call_reply_continue(VarlinkCallCtx *call, json_t *params)
{
        if (!call->call.more) {
                json_decref(params);
                return -EINVAL;
        }
        return call_send(call, varlink_reply_new(params, true), false);
}

int varlink_call_error(VarlinkCallCtx *call, const char *error, json_t *params)
{
        return call_send(call, varlink_error_new(error, params), true);
}

int varlink_call_error_invalid_parameter(VarlinkCallCtx *call, const char *name)
{
        return call_send(call, varlink_error_invalid_parameter(name), true);
}

int varlink_call_check_params(VarlinkCallCtx *call, json_t *params, const VarlinkField *fields,
                              size_t n)
{
        json_t *error = NULL;

        if (varlink_params_check(params, fields, n, &error) == 0) {
                return 0;
        }
        (void)call_send(call, error, true);
        return -EINVAL;
}

void varlink_call_set_close_callback(VarlinkCallCtx *call, VarlinkCallCloseFunc cb, void *userdata)
{
        call->close_cb = cb;
        call->close_userdata = userdata;
}

bool varlink_call_is_closed(const VarlinkCallCtx *call)
{
        return call->closed || (call->conn && call->conn->dead);
}

bool varlink_call_wants_more(const VarlinkCallCtx *call)
{
        return call->call.more;
}

const char *varlink_call_method(const VarlinkCallCtx *call)
{
        return call->call.method;
}

void varlink_call_hold_connection(VarlinkCallCtx *call, uint64_t usec)
{
        Connection *c = call->conn;
        int r;

        if (!c || c->dead) {
                return;
        }
        if (!c->hold) {
                /* Within a millisecond: the client was told when to come back. */
                r = sd_event_add_time_relative(c->server->event, &c->hold, CLOCK_MONOTONIC, usec,
                                               1000, conn_on_hold, c);
        } else {
                r = sd_event_source_set_time_relative(c->hold, usec);
                if (r >= 0) {
                        r = sd_event_source_set_enabled(c->hold, SD_EVENT_ONESHOT);
                }
        }
        /* Without a timer nothing would end the hold: run the calls as they come instead. */
        c->held = r >= 0;
        conn_update(c);
}

int varlink_call_peer(const VarlinkCallCtx *call, uid_t *ret_uid, gid_t *ret_gid, pid_t *ret_pid)
{
        if (ret_uid) {
                *ret_uid = call->uid;
        }
        if (ret_gid) {
                *ret_gid = call->gid;
        }
        if (ret_pid) {
                *ret_pid = call->pid;
        }
        return 0;
}

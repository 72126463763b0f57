#pragma once

/* A small blocking Varlink client for command-line tools: one connection, one call at a time,
 * every wait bounded by a timeout. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct VarlinkClient VarlinkClient;

/* Default wait for each reply, and the default size limit of one reply. */
#define VARLINK_CLIENT_TIMEOUT_USEC_DEFAULT (30 * 1000000ULL)
#define VARLINK_CLIENT_MAX_MESSAGE_DEFAULT (64 * 1024 * 1024)

/* Connects to the AF_UNIX stream socket @path (a file, or "@name" in the abstract namespace),
 * waiting at most @timeout_usec (0: no bound) for a server whose listen queue is full, and sets
 * that timeout for the calls. Returns 0, -EINVAL, -ENAMETOOLONG, -ENOMEM, -ETIMEDOUT, or the
 * negative errno of socket()/connect() (-ENOENT, -ECONNREFUSED, -EACCES, ...). */
int varlink_client_connect_timeout(const char *path, uint64_t timeout_usec, VarlinkClient **ret);

/* varlink_client_connect_timeout() with VARLINK_CLIENT_TIMEOUT_USEC_DEFAULT. */
int varlink_client_connect(const char *path, VarlinkClient **ret);

/* The connection's socket, e.g. to shutdown() it from another thread and so end a wait. */
int varlink_client_fd(const VarlinkClient *c);

/* Closes the connection. Accepts NULL; returns NULL. */
VarlinkClient *varlink_client_free(VarlinkClient *c);

/* Sets how long to wait for sending a call and for each reply; 0 waits forever. */
void varlink_client_set_timeout(VarlinkClient *c, uint64_t usec);

/* Calls @method with @params (borrowed; NULL means none) and waits for the reply. Returns 0 when
 * a reply arrived: on success *ret_error_name is NULL and *ret_params holds the reply parameters;
 * on a Varlink error *ret_error_name is the malloc'ed error name and *ret_params its parameters.
 * Either output may be NULL. Returns a negative errno if no reply could be had: -ETIMEDOUT,
 * -ECONNRESET (closed by the server), -EBADMSG or -EPROTO (not a valid reply), -EMSGSIZE, or
 * -ENOTCONN after an earlier such failure left the connection unusable. */
int varlink_client_call(VarlinkClient *c, const char *method, json_t *params, json_t **ret_params,
                        char **ret_error_name);

/* Handles one reply of a "more" call: @params are the reply's parameters (borrowed),
 * @error_name is NULL or the error that ends the call, @continues tells whether more replies
 * follow. Return a negative value to stop waiting for more. */
typedef int (*VarlinkReplyFunc)(json_t *params, const char *error_name, bool continues,
                                void *userdata);

/* Calls @method with "more" and runs @callback for each reply until the final one. Returns 0
 * after the final reply (or an error reply) was handed to the callback, the callback's negative
 * value if it stopped early (the connection is then unusable, as the server is still sending),
 * or a negative errno as varlink_client_call(). The timeout applies to each reply. */
int varlink_client_call_more(VarlinkClient *c, const char *method, json_t *params,
                             VarlinkReplyFunc callback, void *userdata);

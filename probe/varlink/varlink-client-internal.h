#pragma once

/* For the tests of varlink-client.c only: a client on a socket a test connected, a smaller
 * reply limit, a call that wants no reply. */

#include <jansson.h>
#include <stddef.h>

#include "varlink-client.h"

/* Wraps an already connected stream socket; the client owns @fd on success. Returns 0, -EBADF or
 * -ENOMEM. */
int varlink_client_new_from_fd(int fd, VarlinkClient **ret);

/* Sets the size limit of one reply (bytes, without the terminator). Returns 0, -EINVAL, -ENOMEM,
 * or -EBUSY while part of a reply is buffered. */
int varlink_client_set_max_message(VarlinkClient *c, size_t max);

/* Sends @method with "oneway": the server runs it and sends nothing back. Returns 0 once the call
 * is written, or a negative errno. */
int varlink_client_call_oneway(VarlinkClient *c, const char *method, json_t *params);

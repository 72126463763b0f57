#pragma once

/* The address of an AF_UNIX socket from its name, for the Varlink client and server and for
 * the service manager's notification socket. Never logs. */

#include <sys/socket.h>
#include <sys/un.h>

/* Fills @ret for @path: a file path, or "@name" for @name in the abstract namespace (as
 * $NOTIFY_SOCKET has it), and *@ret_len with the length of the address to pass to bind(),
 * connect() or sendto(). Returns 0, -EINVAL for a NULL or empty @path or a lone "@", or
 * -ENAMETOOLONG when the name does not fit in sun_path (a file path with its terminator). */
int sockaddr_un_set(struct sockaddr_un *ret, const char *path, socklen_t *ret_len);

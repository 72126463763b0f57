#include "varlink-client.h"
#include "varlink-client-internal.h"

#include "sockaddr-un.h"
#include "util.h"
#include "varlink.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_READ_CHUNK 65536

struct VarlinkClient {
        int fd;
        VarlinkReader *reader;
        uint64_t timeout_usec;
        bool broken; /* out of sync with the server: no further calls */
};

int varlink_client_new_from_fd(int fd, VarlinkClient **ret)
{
        VarlinkClient *c;
        int r;

        if (fd < 0) {
                return -EBADF;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                return -ENOMEM;
        }
        r = varlink_reader_new(VARLINK_CLIENT_MAX_MESSAGE_DEFAULT, &c->reader);
        if (r < 0) {
                free(c);
                return r;
        }
        c->fd = fd;
        c->timeout_usec = VARLINK_CLIENT_TIMEOUT_USEC_DEFAULT;
        *ret = c;
        return 0;
}

int varlink_client_connect_timeout(const char *path, uint64_t timeout_usec, VarlinkClient **ret)
{
        struct sockaddr_un sa;
        socklen_t sa_len;
        int fd, r;

        r = sockaddr_un_set(&sa, path, &sa_len);
        if (r < 0) {
                return r;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                return -errno;
        }
        /* connect() on AF_UNIX waits while the server's listen queue is full (a server that
         * does not accept), for as long as the send timeout allows. */
        if (timeout_usec > 0) {
                struct timeval tv = {
                        .tv_sec = (time_t)(timeout_usec / 1000000ULL),
                        .tv_usec = (suseconds_t)(timeout_usec % 1000000ULL),
                };

                if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                        r = -errno;
                        close(fd);
                        return r;
                }
        }
        while (connect(fd, (struct sockaddr *)&sa, sa_len) < 0) {
                if (errno == EINTR) {
                        continue;
                }
                /* The send timeout ran out while the listen queue stayed full. */
                r = errno == EAGAIN ? -ETIMEDOUT : -errno;
                close(fd);
                return r;
        }
        r = varlink_client_new_from_fd(fd, ret);
        if (r < 0) {
                close(fd);
                return r;
        }
        (*ret)->timeout_usec = timeout_usec;
        return 0;
}

int varlink_client_connect(const char *path, VarlinkClient **ret)
{
        return varlink_client_connect_timeout(path, VARLINK_CLIENT_TIMEOUT_USEC_DEFAULT, ret);
}

int varlink_client_fd(const VarlinkClient *c)
{
        return c->fd;
}

VarlinkClient *varlink_client_free(VarlinkClient *c)
{
        if (c) {
                close(c->fd);
                varlink_reader_free(c->reader);
                free(c);
        }
        return NULL;
}

void varlink_client_set_timeout(VarlinkClient *c, uint64_t usec)
{
        c->timeout_usec = usec;
}

int varlink_client_set_max_message(VarlinkClient *c, size_t max)
{
        VarlinkReader *r;
        int ret;

        if (varlink_reader_buffered(c->reader) > 0) {
                return -EBUSY;
        }
        ret = varlink_reader_new(max, &r);
        if (ret < 0) {
                return ret;
        }
        varlink_reader_free(c->reader);
        c->reader = r;
        return 0;
}

static uint64_t client_deadline(const VarlinkClient *c)
{
        return c->timeout_usec == 0 ? UINT64_MAX : now_ns(CLOCK_MONOTONIC) / 1000 + c->timeout_usec;
}

/* Waits for @events until @deadline; returns 0 when ready, -ETIMEDOUT or -errno. */
static int client_wait(VarlinkClient *c, short events, uint64_t deadline)
{
        for (;;) {
                struct pollfd p = {.fd = c->fd, .events = events};
                int timeout_ms = -1;
                int n;

                if (deadline != UINT64_MAX) {
                        uint64_t now = now_ns(CLOCK_MONOTONIC) / 1000;

                        if (now >= deadline) {
                                return -ETIMEDOUT;
                        }
                        /* Round up so that a short remaining wait does not spin at 0 ms. */
                        timeout_ms = (deadline - now + 999) / 1000 > INT32_MAX
                                             ? INT32_MAX
                                             : (int)((deadline - now + 999) / 1000);
                }
                n = poll(&p, 1, timeout_ms);
                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        return -errno;
                }
                if (n > 0) {
                        return 0;
                }
        }
}

static int client_send(VarlinkClient *c, json_t *msg, uint64_t deadline)
{
        size_t len, off = 0;
        char *text;
        int r;

        if (!msg) {
                return -ENOMEM;
        }
        r = varlink_message_serialize(msg, &text, &len);
        json_decref(msg);
        if (r < 0) {
                return r;
        }
        while (off < len) {
                ssize_t n = send(c->fd, text + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        if (errno == EAGAIN || errno == EWOULDBLOCK) {
                                r = client_wait(c, POLLOUT, deadline);
                                if (r < 0) {
                                        break;
                                }
                                continue;
                        }
                        r = errno == EPIPE ? -ECONNRESET : -errno;
                        break;
                }
                off += (size_t)n;
        }
        free(text);
        /* A partly written call leaves the stream in an unknown state. */
        if (r < 0 && off > 0) {
                c->broken = true;
        }
        return r < 0 ? r : 0;
}

static int client_receive(VarlinkClient *c, uint64_t deadline, json_t **ret)
{
        char *buf = NULL;
        int r;

        for (;;) {
                ssize_t n;

                r = varlink_reader_next(c->reader, ret);
                if (r != 0) {
                        break;
                }
                if (!buf) {
                        buf = malloc(CLIENT_READ_CHUNK);
                        if (!buf) {
                                r = -ENOMEM;
                                break;
                        }
                }
                r = client_wait(c, POLLIN, deadline);
                if (r < 0) {
                        break;
                }
                n = recv(c->fd, buf, CLIENT_READ_CHUNK, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
                                continue;
                        }
                        r = -errno;
                        break;
                }
                if (n == 0) {
                        r = -ECONNRESET;
                        break;
                }
                r = varlink_reader_feed(c->reader, buf, (size_t)n);
                if (r < 0) {
                        break;
                }
        }
        free(buf);
        return r < 0 ? r : 0;
}

/* Receives one reply and checks it against what the call allows. */
static int client_receive_reply(VarlinkClient *c, bool more, json_t **ret_msg,
                                VarlinkReply *ret_reply)
{
        json_t *msg = NULL;
        int r;

        r = client_receive(c, client_deadline(c), &msg);
        if (r < 0) {
                /* Whatever part of the reply is in flight would be taken for the next one. */
                c->broken = true;
                return r;
        }
        r = varlink_reply_parse(msg, ret_reply);
        if (r == 0 && ret_reply->continues && !more) {
                r = -EPROTO;
        }
        if (r < 0) {
                json_decref(msg);
                c->broken = true;
                return r;
        }
        *ret_msg = msg;
        return 0;
}

static int client_start(VarlinkClient *c, const char *method, json_t *params, bool more,
                        bool oneway)
{
        if (c->broken) {
                return -ENOTCONN;
        }
        if (!method) {
                return -EINVAL;
        }
        if (params && !json_is_object(params)) {
                return -EINVAL;
        }
        return client_send(c, varlink_call_new(method, json_incref(params), more, oneway),
                           client_deadline(c));
}

int varlink_client_call(VarlinkClient *c, const char *method, json_t *params, json_t **ret_params,
                        char **ret_error_name)
{
        VarlinkReply reply;
        json_t *msg, *out;
        char *error = NULL;
        int r;

        r = client_start(c, method, params, false, false);
        if (r < 0) {
                return r;
        }
        r = client_receive_reply(c, false, &msg, &reply);
        if (r < 0) {
                return r;
        }
        out = reply.parameters ? json_incref(reply.parameters) : json_object();
        if (reply.error) {
                error = strdup(reply.error);
        }
        json_decref(msg);
        if (!out || (reply.error && !error)) {
                json_decref(out);
                free(error);
                return -ENOMEM;
        }
        if (ret_params) {
                *ret_params = out;
        } else {
                json_decref(out);
        }
        if (ret_error_name) {
                *ret_error_name = error;
        } else {
                free(error);
        }
        return 0;
}

int varlink_client_call_more(VarlinkClient *c, const char *method, json_t *params,
                             VarlinkReplyFunc callback, void *userdata)
{
        int r;

        if (!callback) {
                return -EINVAL;
        }
        r = client_start(c, method, params, true, false);
        if (r < 0) {
                return r;
        }
        for (;;) {
                VarlinkReply reply;
                json_t *msg, *empty = NULL;

                r = client_receive_reply(c, true, &msg, &reply);
                if (r < 0) {
                        return r;
                }
                if (!reply.parameters) {
                        empty = json_object();
                        if (!empty) {
                                json_decref(msg);
                                c->broken = true;
                                return -ENOMEM;
                        }
                }
                r = callback(reply.parameters ? reply.parameters : empty, reply.error,
                             reply.continues, userdata);
                json_decref(empty);
                json_decref(msg);
                if (!reply.continues) {
                        return r < 0 ? r : 0;
                }
                if (r < 0) {
                        c->broken = true;
                        return r;
                }
        }
}

int varlink_client_call_oneway(VarlinkClient *c, const char *method, json_t *params)
{
        return client_start(c, method, params, false, true);
}

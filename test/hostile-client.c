/* jitter-hostile: throws junk at a Varlink socket from many connections, then checks that the
 * server still answers properly. Used by the end-to-end tests; exit 0 when it does.
 *   jitter-hostile SOCKET [ROUNDS] */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "varlink-client.h"

#define HOLD_MAX 48

static const char *sock_path;
static unsigned seed = 12345;

static int dial(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                if (fd >= 0) {
                        close(fd);
                }
                return -1;
        }
        return fd;
}

/* Best-effort send: the server may close on us at any point, which is fine. */
static void send_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;

        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n <= 0) {
                        if (n < 0 && errno == EAGAIN) {
                                struct pollfd pfd = { fd, POLLOUT, 0 };

                                if (poll(&pfd, 1, 100) > 0) {
                                        continue;
                                }
                        }
                        return;
                }
                p += n;
                len -= (size_t)n;
        }
}

static void drain_and_close(int fd)
{
        char buf[65536];
        struct pollfd pfd = { fd, POLLIN, 0 };

        while (poll(&pfd, 1, 20) > 0 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
        }
        close(fd);
}

static void junk_random(void)
{
        char buf[4096];
        size_t n = (size_t)(rand_r(&seed) % sizeof(buf));
        int fd = dial();

        if (fd < 0) {
                return;
        }
        for (size_t i = 0; i < n; i++) {
                buf[i] = (char)rand_r(&seed);
        }
        send_all(fd, buf, n);
        send_all(fd, "", 1);
        drain_and_close(fd);
}

static void junk_text(const char *msg)
{
        int fd = dial();

        if (fd < 0) {
                return;
        }
        send_all(fd, msg, strlen(msg) + 1);
        drain_and_close(fd);
}

static void junk_nested(size_t depth)
{
        char *buf = malloc(2 * depth + 64);
        size_t len = 0;
        int fd = dial();

        if (fd < 0 || !buf) {
                free(buf);
                if (fd >= 0) {
                        close(fd);
                }
                return;
        }
        len += (size_t)sprintf(buf, "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"cpus\":");
        for (size_t i = 0; i < depth; i++) {
                buf[len++] = '[';
        }
        for (size_t i = 0; i < depth; i++) {
                buf[len++] = ']';
        }
        buf[len++] = '}';
        buf[len++] = '}';
        buf[len++] = '\0';
        send_all(fd, buf, len);
        drain_and_close(fd);
        free(buf);
}

static void junk_oversized(void)
{
        size_t len = 4 * 1024 * 1024;
        char *buf = malloc(len);
        int fd = dial();

        if (fd >= 0 && buf) {
                memset(buf, 'x', len);
                memcpy(buf, "{\"method\":\"", 11);
                send_all(fd, buf, len);
        }
        if (fd >= 0) {
                drain_and_close(fd);
        }
        free(buf);
}

static void junk_pipelined(unsigned n)
{
        const char call[] = "{\"method\":\"org.varlink.service.GetInfo\"}";
        int fd = dial();

        if (fd < 0) {
                return;
        }
        for (unsigned i = 0; i < n; i++) {
                send_all(fd, call, sizeof(call));
        }
        drain_and_close(fd);
}

static void disconnect_mid_message(void)
{
        const char part[] = "{\"method\":\"io.jitterd.GetSta";
        int fd = dial();

        if (fd >= 0) {
                send_all(fd, part, sizeof(part) - 1);
                close(fd);
        }
}

/* A client that asks for a lot and never reads: the server must drop it, not block. */
static int never_reads(void)
{
        const char call[] = "{\"method\":\"io.jitterd.GetHistogram\",\"parameters\":{\"cpu\":1,"
                            "\"window\":\"all\",\"kind\":\"diffdiff\"}}";
        int fd = dial();

        if (fd < 0) {
                return -1;
        }
        for (int i = 0; i < 2000; i++) {
                send_all(fd, call, sizeof(call));
        }
        return fd;
}

static int check_answers(void)
{
        VarlinkClient *c = NULL;
        json_t *reply = NULL;
        char *err = NULL;
        int r;

        r = varlink_client_connect(sock_path, &c);
        if (r < 0) {
                fprintf(stderr, "jitter-hostile: cannot connect afterwards: %s\n", strerror(-r));
                return -1;
        }
        varlink_client_set_timeout(c, 2000000);
        r = varlink_client_call(c, "io.jitterd.GetStatus", NULL, &reply, &err);
        if (r < 0 || err || !json_object_get(reply, "probes")) {
                fprintf(stderr, "jitter-hostile: GetStatus failed afterwards: %s %s\n",
                        strerror(-r), err ? err : "");
                r = -1;
        }
        json_decref(reply);
        free(err);
        varlink_client_free(c);
        return r < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
        static const char *const texts[] = {
                "{", "}", "[]", "null", "\"str\"", "{\"method\":1}", "{\"method\":\"x\"}",
                "{\"method\":\"io.jitterd.Nope\"}", "{\"method\":\"nope.Nope\"}",
                "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"bogus\":1}}",
                "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"cpus\":[99999]}}",
                "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"window\":\"7y\"}}",
                "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"cpus\":\"1\"}}",
                "{\"method\":\"io.jitterd.GetEvents\",\"parameters\":{\"limit\":-5}}",
                "{\"method\":\"io.jitterd.GetEvents\",\"parameters\":{\"since\":\"forever\"}}",
                "{\"method\":\"io.jitterd.GetHistogram\",\"parameters\":{\"cpu\":1e400}}",
                "{\"method\":\"io.jitterd.Monitor\"}",
                "{\"method\":\"io.jitterd.Monitor\",\"more\":true,\"oneway\":true}",
                "{\"method\":\"io.jitterd.Reset\",\"oneway\":true,\"extra\":1}",
                "{\"method\":\"io.jitterd.GetStatus\",\"upgrade\":true}",
                "{\"method\":\"io.jitterd.GetStatus\"\x01}", "\xff\xfe\xfd",
        };
        int held[HOLD_MAX];
        size_t n_held = 0;
        unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
        int failures = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: jitter-hostile SOCKET [ROUNDS]\n");
                return 2;
        }
        sock_path = argv[1];
        for (unsigned r = 0; r < rounds; r++) {
                for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                        junk_text(texts[i]);
                }
                for (int i = 0; i < 20; i++) {
                        junk_random();
                }
                junk_nested(20000);
                junk_pipelined(200);
                disconnect_mid_message();
                if (r % 5 == 0) {
                        junk_oversized();
                }
                /* Silent clients and clients that never read, kept open. */
                if (n_held + 2 <= HOLD_MAX) {
                        held[n_held++] = dial();
                        held[n_held++] = never_reads();
                }
                if (check_answers() < 0) {
                        failures++;
                }
        }
        for (size_t i = 0; i < n_held; i++) {
                if (held[i] >= 0) {
                        close(held[i]);
                }
        }
        if (check_answers() < 0) {
                failures++;
        }
        printf("jitter-hostile: %u rounds, %d checks failed\n", rounds, failures);
        return failures ? 1 : 0;
}

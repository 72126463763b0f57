/* jitter-hostile: throws junk at a Varlink socket from many connections, then checks that the
 * server still answers properly. Used by the end-to-end tests; exit 0 when it does.
 *   jitter-hostile SOCKET [ROUNDS [SEED [HOLD]]]
 * SEED varies the random junk between parallel instances (default 12345); HOLD is how many
 * silent and never-reading connections it keeps open at once (default 48), so that parallel
 * instances can stay within the server's connection limit. */
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
#include "util.h"

#define HOLD_MAX 48

static const char *sock_path;
static unsigned seed = 12345;

/* Well-formed calls, the raw material of truncated and mutated messages. */
static const char *const valid_calls[] = {
        "{\"method\":\"org.varlink.service.GetInfo\"}",
        "{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":"
        "{\"interface\":\"io.jitterd\"}}",
        "{\"method\":\"io.jitterd.GetStatus\"}",
        "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"cpus\":[1],\"window\":\"10s\","
        "\"without_analyses\":true}}",
        "{\"method\":\"io.jitterd.GetWindow\",\"parameters\":{\"cpu\":1,\"window\":\"all\"}}",
        "{\"method\":\"io.jitterd.GetHistogram\",\"parameters\":{\"cpu\":1,\"window\":\"1m\","
        "\"kind\":\"diffdiff\"}}",
        "{\"method\":\"io.jitterd.GetEvents\",\"parameters\":{\"since\":\"1m\",\"limit\":50}}",
        "{\"method\":\"io.jitterd.GetTimeline\",\"parameters\":{\"cpu\":1,\"window\":\"1h\"}}",
        "{\"method\":\"io.jitterd.Monitor\",\"parameters\":{\"cpus\":[1]},\"more\":true}",
};
#define N_VALID ELEMENTSOF(valid_calls)

static int dial(void)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
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
                                struct pollfd pfd = {fd, POLLOUT, 0};

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
        struct pollfd pfd = {fd, POLLIN, 0};

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

/* A valid call cut short, then terminated: invalid JSON as far as the server can tell. */
static void junk_truncated(void)
{
        const char *call = valid_calls[rand_r(&seed) % N_VALID];
        size_t len = strlen(call), cut = (size_t)rand_r(&seed) % len;
        int fd = dial();

        if (fd < 0) {
                return;
        }
        send_all(fd, call, cut);
        send_all(fd, "", 1);
        drain_and_close(fd);
}

/* A valid call with a few bytes changed at random: mostly invalid, sometimes a call with odd
 * values, all pipelined on one connection. */
static void junk_mutated(unsigned n)
{
        char buf[512];
        int fd = dial();

        if (fd < 0) {
                return;
        }
        for (unsigned i = 0; i < n; i++) {
                const char *call = valid_calls[rand_r(&seed) % N_VALID];
                size_t len = strlen(call);

                memcpy(buf, call, len + 1);
                for (int k = 1 + rand_r(&seed) % 3; k > 0; k--) {
                        buf[(size_t)rand_r(&seed) % len] = (char)(rand_r(&seed) % 256);
                }
                /* A NUL put in by the mutation ends the message early; the rest follows as
                 * another message, as it would on the wire. */
                send_all(fd, buf, len + 1);
        }
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
        len += (size_t)sprintf(buf,
                               "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"cpus\":");
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

/* The slowest GetStatus answer seen, in microseconds: latency under load, for the log; and
 * the Busy refusals waited out before one. */
static uint64_t slowest_us;
static unsigned busy_waited;

/* Answering is what counts, not how fast under a flood on the same CPU: the deadline is
 * generous (sanitizer builds are several times slower). */
#define ANSWER_TIMEOUT_USEC 10000000ULL

static int check_answers(void)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC) / 1000;
        VarlinkClient *c = NULL;
        json_t *reply = NULL;
        char *err = NULL;
        int r;

        r = varlink_client_connect(sock_path, &c);
        if (r < 0) {
                fprintf(stderr, "jitter-hostile: cannot connect afterwards: %s\n", strerror(-r));
                return -1;
        }
        varlink_client_set_timeout(c, ANSWER_TIMEOUT_USEC);
        r = varlink_client_call(c, "io.jitterd.GetStatus", NULL, &reply, &err);
        /* The attack may have spent the clients' budget: a Busy refusal with its retry delay
         * is the daemon's answer then, and a client that waits the delay out is served, within
         * the deadline. */
        while (r >= 0 && err && strcmp(err, "io.jitterd.Busy") == 0 &&
               json_integer_value(json_object_get(reply, "retry_after_ms")) > 0 &&
               now_ns(CLOCK_MONOTONIC) / 1000 - t0 +
                               (uint64_t)json_integer_value(
                                       json_object_get(reply, "retry_after_ms")) *
                                       1000 <
                       ANSWER_TIMEOUT_USEC) {
                busy_waited++;
                usleep((useconds_t)json_integer_value(json_object_get(reply, "retry_after_ms")) *
                       1000);
                json_decref(reply);
                free(err);
                reply = NULL;
                err = NULL;
                r = varlink_client_call(c, "io.jitterd.GetStatus", NULL, &reply, &err);
        }
        if (r < 0 || err || !json_object_get(reply, "probes")) {
                fprintf(stderr, "jitter-hostile: GetStatus failed afterwards: %s %s\n",
                        strerror(-r), err ? err : "");
                r = -1;
        }
        json_decref(reply);
        free(err);
        varlink_client_free(c);
        if (now_ns(CLOCK_MONOTONIC) / 1000 - t0 > slowest_us) {
                slowest_us = now_ns(CLOCK_MONOTONIC) / 1000 - t0;
        }
        return r < 0 ? -1 : 0;
}

/* Long because the rounds of junk and the checks afterwards run in order. */
int main(int argc, char **argv)
{
        static const char *const texts[] = {
                "{",
                "}",
                "[]",
                "null",
                "\"str\"",
                "{\"method\":1}",
                "{\"method\":\"x\"}",
                "{\"method\":\"io.jitterd.Nope\"}",
                "{\"method\":\"nope.Nope\"}",
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
                "{\"method\":\"io.jitterd.GetStatus\"\x01}",
                "\xff\xfe\xfd",
        };
        int held[HOLD_MAX];
        size_t n_held = 0, hold = HOLD_MAX;
        unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
        int failures = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: jitter-hostile SOCKET [ROUNDS [SEED [HOLD]]]\n");
                return 2;
        }
        sock_path = argv[1];
        if (argc > 3) {
                seed = (unsigned)strtoul(argv[3], NULL, 10);
        }
        if (argc > 4) {
                hold = strtoul(argv[4], NULL, 10);
                if (hold > HOLD_MAX) {
                        hold = HOLD_MAX;
                }
        }
        for (unsigned r = 0; r < rounds; r++) {
                for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                        junk_text(texts[i]);
                }
                for (int i = 0; i < 20; i++) {
                        junk_random();
                }
                for (int i = 0; i < 10; i++) {
                        junk_truncated();
                }
                junk_mutated(100);
                junk_nested(20000);
                junk_pipelined(200);
                disconnect_mid_message();
                if (r % 5 == 0) {
                        junk_oversized();
                }
                /* Silent clients and clients that never read, kept open. */
                if (n_held + 2 <= hold) {
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
        printf("jitter-hostile: %u rounds, %d checks failed, slowest answer %llu ms (%u Busy "
               "refusals waited out)\n",
               rounds, failures, (unsigned long long)(slowest_us / 1000), busy_waited);
        return failures ? 1 : 0;
}

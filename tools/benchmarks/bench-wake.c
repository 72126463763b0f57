/* jitter-bench-wake: what a call costs when it comes after the client slept, as a dashboard's
 * calls do, against one that follows another right away; and the same for a peer that does
 * nothing but answer, so that the machine's own share of the difference is measured beside
 * jitterd's. The peer is a child process: it waits in epoll, reads the call and sends a reply
 * as long as jitterd's first one, on the same CPUs and with the same policy as this program
 * (run it where jitterd's event loop runs: taskset, chrt). Rounds alternate: sleep, GetStats
 * (window 1m) to jitterd, at once another; sleep, the same two to the peer. Prints
 * "jitterd COLD_P50 COLD_P99 WARM_P50 WARM_P99" and "peer ..." in us, each call timed from its
 * first byte written to the last byte of its reply read. A reply that is an error (Busy, say),
 * or that takes longer than CALL_TIMEOUT_SEC, ends the run with status 1.
 *   jitter-bench-wake SOCKET ROUNDS SLEEP_MS */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char call_msg[] =
        "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"window\":\"1m\","
        "\"without_analyses\":true}}";

/* A call not answered within this long ends the run: a benchmark never waits without bound. */
#define CALL_TIMEOUT_SEC 10

static char reply_buf[1 << 20];

/* Each send and receive on @fd, and a connect, waits at most CALL_TIMEOUT_SEC. */
static int set_timeouts(int fd)
{
        struct timeval tv = {.tv_sec = CALL_TIMEOUT_SEC};

        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                return -errno;
        }
        return 0;
}

/* Whether the reply in reply_buf (@len bytes, its NUL included) is a reply and not an error. */
static bool reply_ok(size_t len)
{
        json_t *reply = json_loadb(reply_buf, len - 1, 0, NULL);
        json_t *error = json_object_get(reply, "error");
        bool ok = json_is_object(reply) && !error;

        if (!ok) {
                fprintf(stderr, "jitter-bench-wake: %s%s\n",
                        error ? "an error reply: " : "a reply that is not a JSON object",
                        json_is_string(error) ? json_string_value(error) : "");
        }
        json_decref(reply);
        return ok;
}

/* Sends the call (its NUL included) on @fd and reads the reply up to its NUL, all within
 * CALL_TIMEOUT_SEC. Returns the round trip in ns, or 0 after saying what failed; the reply's
 * length in @ret_len. The reply is checked after the time is taken. */
static uint64_t round_trip(int fd, size_t *ret_len)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC), t1;
        uint64_t deadline = t0 + CALL_TIMEOUT_SEC * 1000000000ULL;
        size_t have = 0;

        if (send(fd, call_msg, sizeof(call_msg), MSG_NOSIGNAL) != (ssize_t)sizeof(call_msg)) {
                fprintf(stderr, "jitter-bench-wake: send: %s\n", strerror(errno));
                return 0;
        }
        while (have == 0 || reply_buf[have - 1] != '\0') {
                ssize_t n;

                if (have == sizeof(reply_buf) || now_ns(CLOCK_MONOTONIC) > deadline) {
                        fprintf(stderr, "jitter-bench-wake: %s\n",
                                have == sizeof(reply_buf) ? "a reply over 1 MiB"
                                                          : "no whole reply within the timeout");
                        return 0;
                }
                n = recv(fd, reply_buf + have, sizeof(reply_buf) - have, 0);
                if (n <= 0) {
                        fprintf(stderr, "jitter-bench-wake: no reply: %s\n",
                                n < 0 ? strerror(errno) : "connection closed");
                        return 0;
                }
                have += (size_t)n;
        }
        t1 = now_ns(CLOCK_MONOTONIC);
        *ret_len = have;
        return reply_ok(have) ? t1 - t0 : 0;
}

/* The peer: answers every NUL-ended message on @fd with @len bytes (the last a NUL), waiting
 * in epoll as an event loop does, until the other end closes (or kills it). */
static int peer_serve(int fd, size_t len)
{
        _cleanup_free_ char *reply = malloc(len);
        struct epoll_event ev = {.events = EPOLLIN};
        _cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
        char buf[4096];

        if (!reply || len < 3 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
                return 1;
        }
        /* A reply the client can parse: an empty JSON object, padded with blanks. */
        memset(reply, ' ', len);
        reply[0] = '{';
        reply[len - 2] = '}';
        reply[len - 1] = '\0';
        for (;;) {
                ssize_t n;

                if (epoll_wait(ep, &ev, 1, -1) < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        return 1;
                }
                n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n == 0) {
                        return 0;
                }
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR) {
                                continue;
                        }
                        return 1;
                }
                if (buf[n - 1] == '\0' && send(fd, reply, len, MSG_NOSIGNAL) != (ssize_t)len) {
                        return 1;
                }
        }
}

/* Connects to jitterd at @path, its waits bounded. Returns the socket, or -1 after saying
 * why. */
static int connect_to(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd, r;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "jitter-bench-wake: socket path too long: %s\n", path);
                return -1;
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        r = fd < 0 ? -errno : set_timeouts(fd);
        if (r == 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
        }
        if (r < 0) {
                fprintf(stderr, "jitter-bench-wake: cannot connect to %s: %s\n", path,
                        strerror(-r));
                if (fd >= 0) {
                        close(fd);
                }
                return -1;
        }
        return fd;
}

/* Starts the peer, answering @len bytes, on the other end of the socket returned in
 * @ret_fd. Returns its pid, or -1 after saying why. */
static pid_t peer_start(size_t len, int *ret_fd)
{
        int pair[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                fprintf(stderr, "jitter-bench-wake: socketpair: %s\n", strerror(errno));
                return -1;
        }
        pid = fork();
        if (pid == 0) {
                close(pair[0]);
                _exit(peer_serve(pair[1], len));
        }
        close(pair[1]);
        if (pid < 0 || set_timeouts(pair[0]) < 0) {
                fprintf(stderr, "jitter-bench-wake: cannot start the peer: %s\n", strerror(errno));
                close(pair[0]);
                if (pid > 0) {
                        kill(pid, SIGKILL);
                        (void)waitpid(pid, NULL, 0);
                }
                return -1;
        }
        *ret_fd = pair[0];
        return pid;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

static void print_line(const char *who, uint64_t *cold, uint64_t *warm, size_t n)
{
        qsort(cold, n, sizeof(*cold), cmp_u64);
        qsort(warm, n, sizeof(*warm), cmp_u64);
        printf("%s %.1f %.1f %.1f %.1f\n", who, (double)cold[n / 2] / 1e3,
               (double)cold[(size_t)((double)n * 0.99)] / 1e3, (double)warm[n / 2] / 1e3,
               (double)warm[(size_t)((double)n * 0.99)] / 1e3);
}

/* The rounds, on jitterd's socket @fd and the peer's @peer_fd: @lat[0] and [1] jitterd's
 * calls after the sleep and right after, [2] and [3] the peer's. Returns 0, or -1 after a
 * failed call. */
static int run_rounds(int fd, int peer_fd, long rounds, long ms, uint64_t *lat[4])
{
        int fds[2] = {fd, peer_fd};

        for (long i = 0; i < rounds; i++) {
                for (int p = 0; p < 2; p++) {
                        size_t len;

                        sleep_ms(ms);
                        lat[2 * p][i] = round_trip(fds[p], &len);
                        if (lat[2 * p][i] == 0 ||
                            (lat[2 * p + 1][i] = round_trip(fds[p], &len)) == 0) {
                                return -1;
                        }
                }
        }
        return 0;
}

int main(int argc, char **argv)
{
        _cleanup_free_ uint64_t *cold = NULL, *warm = NULL, *peer_cold = NULL, *peer_warm = NULL;
        _cleanup_close_ int fd = -1, peer_fd = -1;
        long rounds, ms;
        size_t len = 0;
        pid_t peer = -1;
        int r;

        if (argc != 4 || (rounds = atol(argv[2])) <= 0 || (ms = atol(argv[3])) < 0) {
                fprintf(stderr, "usage: jitter-bench-wake SOCKET ROUNDS SLEEP_MS\n");
                return 2;
        }
        cold = calloc((size_t)rounds, sizeof(uint64_t));
        warm = calloc((size_t)rounds, sizeof(uint64_t));
        peer_cold = calloc((size_t)rounds, sizeof(uint64_t));
        peer_warm = calloc((size_t)rounds, sizeof(uint64_t));
        if (!cold || !warm || !peer_cold || !peer_warm) {
                fprintf(stderr, "jitter-bench-wake: out of memory\n");
                return 1;
        }
        fd = connect_to(argv[1]);
        /* jitterd's reply sets the peer's length. */
        if (fd < 0 || round_trip(fd, &len) == 0 || (peer = peer_start(len, &peer_fd)) < 0) {
                return 1;
        }
        r = run_rounds(fd, peer_fd, rounds, ms, (uint64_t *[4]){cold, warm, peer_cold, peer_warm});
        kill(peer, SIGKILL);
        (void)waitpid(peer, NULL, 0);
        if (r < 0) {
                return 1;
        }
        print_line("jitterd", cold, warm, (size_t)rounds);
        print_line("peer", peer_cold, peer_warm, (size_t)rounds);
        return 0;
}

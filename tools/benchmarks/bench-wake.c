/* jitter-bench-wake: what a call costs when it comes after the client slept, as a dashboard's
 * calls do, against one that follows another right away; and the same for a peer that does
 * nothing but answer, so that the machine's own share of the difference is measured beside
 * jitterd's. The peer is a child process: it waits in epoll, reads the call and sends a reply
 * as long as jitterd's first one, on the same CPUs and with the same policy as this program
 * (run it where jitterd's event loop runs: taskset, chrt). Rounds alternate: sleep, GetStats
 * (window 1m) to jitterd, at once another; sleep, the same two to the peer. Prints
 * "jitterd COLD_P50 COLD_P99 WARM_P50 WARM_P99" and "peer ..." in us, each call timed from its
 * first byte written to the last byte of its reply read.
 *   jitter-bench-wake SOCKET ROUNDS SLEEP_MS */
#include <errno.h>
#include <signal.h>
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

/* A reply not in within this long ends the run: a benchmark never waits without a bound. */
#define CALL_TIMEOUT_SEC 10

static char reply_buf[1 << 20];

/* Sends the call (its NUL included) on @fd and reads the reply up to its NUL. Returns the
 * round trip in ns, or 0 after saying what failed. Also the reply's length in @ret_len. */
static uint64_t round_trip(int fd, size_t *ret_len)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        size_t have = 0;

        if (send(fd, call_msg, sizeof(call_msg), MSG_NOSIGNAL) != (ssize_t)sizeof(call_msg)) {
                fprintf(stderr, "jitter-bench-wake: send: %s\n", strerror(errno));
                return 0;
        }
        for (;;) {
                ssize_t n = recv(fd, reply_buf + have, sizeof(reply_buf) - have, 0);

                if (n <= 0) {
                        fprintf(stderr, "jitter-bench-wake: no reply: %s\n",
                                n < 0 ? strerror(errno) : "connection closed");
                        return 0;
                }
                have += (size_t)n;
                if (reply_buf[have - 1] == '\0') {
                        *ret_len = have;
                        return now_ns(CLOCK_MONOTONIC) - t0;
                }
                if (have == sizeof(reply_buf)) {
                        fprintf(stderr, "jitter-bench-wake: a reply over 1 MiB\n");
                        return 0;
                }
        }
}

/* The peer: answers every NUL-ended message on @fd with @len bytes (the last a NUL), waiting
 * in epoll as an event loop does, until the other end closes. */
static int peer_serve(int fd, size_t len)
{
        char *reply = malloc(len), buf[4096];
        struct epoll_event ev = {.events = EPOLLIN};
        int ep = epoll_create1(EPOLL_CLOEXEC);

        if (!reply || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
                return 1;
        }
        memset(reply, ' ', len);
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

static int connect_to(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct timeval tv = {.tv_sec = CALL_TIMEOUT_SEC};
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "jitter-bench-wake: socket path too long: %s\n", path);
                return -1;
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
                fprintf(stderr, "jitter-bench-wake: cannot connect to %s: %s\n", path,
                        strerror(errno));
                if (fd >= 0) {
                        close(fd);
                }
                return -1;
        }
        return fd;
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

int main(int argc, char **argv)
{
        long rounds, ms;
        uint64_t *lat[4] = {NULL};
        int fd, pair[2];
        size_t len = 0;
        pid_t peer;
        int status = 1;

        if (argc != 4 || (rounds = atol(argv[2])) <= 0 || (ms = atol(argv[3])) < 0) {
                fprintf(stderr, "usage: jitter-bench-wake SOCKET ROUNDS SLEEP_MS\n");
                return 2;
        }
        fd = connect_to(argv[1]);
        /* jitterd's reply sets the peer's length. */
        if (fd < 0 || round_trip(fd, &len) == 0) {
                return 1;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                fprintf(stderr, "jitter-bench-wake: socketpair: %s\n", strerror(errno));
                return 1;
        }
        peer = fork();
        if (peer < 0) {
                fprintf(stderr, "jitter-bench-wake: fork: %s\n", strerror(errno));
                return 1;
        }
        if (peer == 0) {
                close(pair[0]);
                close(fd);
                _exit(peer_serve(pair[1], len));
        }
        close(pair[1]);
        {
                struct timeval tv = {.tv_sec = CALL_TIMEOUT_SEC};

                (void)setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        }
        for (int k = 0; k < 4; k++) {
                lat[k] = calloc((size_t)rounds, sizeof(uint64_t));
                if (!lat[k]) {
                        goto out;
                }
        }
        for (long i = 0; i < rounds; i++) {
                int fds[2] = {fd, pair[0]};

                for (int p = 0; p < 2; p++) {
                        size_t l;

                        sleep_ms(ms);
                        lat[2 * p][i] = round_trip(fds[p], &l);
                        lat[2 * p + 1][i] = lat[2 * p][i] ? round_trip(fds[p], &l) : 0;
                        if (lat[2 * p + 1][i] == 0) {
                                goto out;
                        }
                }
        }
        print_line("jitterd", lat[0], lat[1], (size_t)rounds);
        print_line("peer", lat[2], lat[3], (size_t)rounds);
        status = 0;
out:
        close(pair[0]);
        close(fd);
        kill(peer, SIGKILL);
        (void)waitpid(peer, NULL, 0);
        for (int k = 0; k < 4; k++) {
                free(lat[k]);
        }
        return status;
}

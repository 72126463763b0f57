/* jitter-flood: floods a Varlink socket with calls from many connections, back to back and
 * without heeding any retry delay, and counts what comes back. Used by e2e-budget.
 *   jitter-flood [--status] [--busy-times FILE] SOCKET CONNECTIONS SECONDS
 * Each connection sends io.jitterd.GetStats {"window": "all"} (with --status:
 * io.jitterd.GetStatus, a call of the light bucket) again as soon as the answer to the last one
 * arrives, for SECONDS; --busy-times writes the CLOCK_REALTIME of every refusal of those calls
 * to FILE, in ns, one a line. A separate connection calls io.jitterd.GetStatus every 200 ms
 * meanwhile. Afterwards every flooding connection must answer one GetStatus (a Busy is
 * waited out, five times at most). Prints one JSON object with the counts; exits 0 once it has
 * counted, 1 when it cannot connect, 2 on bad arguments. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sockaddr-un.h"
#include "util.h"

#define MAX_CONNS 60
#define BUSY "io.jitterd.Busy"

/* What the flooding connections call, and where their refusals' times go (or NULL). */
static const char *flood_call;
static FILE *busy_times;

static const char stats_call[] =
        "{\"method\":\"io.jitterd.GetStats\",\"parameters\":{\"window\":\"all\","
        "\"without_analyses\":true}}";
static const char status_call[] = "{\"method\":\"io.jitterd.GetStatus\"}";

typedef struct Conn {
        int fd;
        char *buf;
        size_t len, alloc;
        bool waiting; /* a call is out */
        bool closed;  /* the server closed it */
        uint64_t sent_ns;
} Conn;

typedef struct Counts {
        unsigned long calls, ok, busy, busy_retry, other, retry_min_ms, retry_max_ms;
        uint64_t ok_max_ns; /* the longest a call that was answered took */
} Counts;

static uint64_t mono_ns(void)
{
        return now_ns(CLOCK_MONOTONIC);
}

static int dial(const char *path)
{
        struct sockaddr_un sa;
        socklen_t len;
        int fd;

        if (sockaddr_un_set(&sa, path, &len) < 0) {
                return -1;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) < 0) {
                if (fd >= 0) {
                        close(fd);
                }
                return -1;
        }
        return fd;
}

static int send_call(Conn *c, const char *call)
{
        size_t len = strlen(call) + 1, off = 0;

        while (off < len) {
                ssize_t n = send(c->fd, call + off, len - off, MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        c->closed = true;
                        return -1;
                }
                off += (size_t)n;
        }
        c->waiting = true;
        c->sent_ns = mono_ns();
        return 0;
}

/* Reads what is there; returns one complete message (free it) or NULL. */
static json_t *read_reply(Conn *c)
{
        char *nul;
        json_t *msg;

        for (;;) {
                nul = c->len ? memchr(c->buf, '\0', c->len) : NULL;
                if (nul) {
                        size_t used = (size_t)(nul - c->buf) + 1;

                        msg = json_loads(c->buf, 0, NULL);
                        memmove(c->buf, c->buf + used, c->len - used);
                        c->len -= used;
                        c->waiting = false;
                        return msg ? msg : json_null();
                }
                if (c->alloc - c->len < 65536) {
                        c->alloc = c->alloc ? c->alloc * 2 : 131072;
                        c->buf = realloc(c->buf, c->alloc);
                        if (!c->buf) {
                                exit(1);
                        }
                }
                ssize_t n = recv(c->fd, c->buf + c->len, c->alloc - c->len, MSG_DONTWAIT);

                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                        c->closed = true;
                        return NULL;
                }
                if (n < 0) {
                        return NULL;
                }
                c->len += (size_t)n;
        }
}

/* Counts @msg; returns its retry delay in ms for a Busy with one, 0 otherwise. */
static unsigned long count_reply(Counts *k, json_t *msg, bool *ret_ok)
{
        const char *error = json_string_value(json_object_get(msg, "error"));
        json_t *retry = json_object_get(json_object_get(msg, "parameters"), "retry_after_ms");

        *ret_ok = false;
        k->calls++;
        if (!error) {
                k->ok++;
                *ret_ok = true;
                return 0;
        }
        if (strcmp(error, BUSY) != 0) {
                k->other++;
                fprintf(stderr, "unexpected error %s\n", error);
                return 0;
        }
        k->busy++;
        if (!json_is_integer(retry) || json_integer_value(retry) <= 0) {
                return 0;
        }
        k->busy_retry++;
        unsigned long ms = (unsigned long)json_integer_value(retry);

        if (k->retry_min_ms == 0 || ms < k->retry_min_ms) {
                k->retry_min_ms = ms;
        }
        if (ms > k->retry_max_ms) {
                k->retry_max_ms = ms;
        }
        return ms;
}

/* Waits up to @timeout_ms for the answer to @c's call; NULL on timeout or close. */
static json_t *wait_reply(Conn *c, int timeout_ms)
{
        uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000ULL;

        while (!c->closed) {
                json_t *msg = read_reply(c);
                struct pollfd p = {.fd = c->fd, .events = POLLIN};
                uint64_t now = mono_ns();

                if (msg) {
                        return msg;
                }
                if (c->closed || now >= end) {
                        return NULL;
                }
                (void)poll(&p, 1, (int)((end - now) / 1000000) + 1);
        }
        return NULL;
}

static void flood(Conn *conns, int n, Conn *status, double seconds, Counts *k, Counts *ks,
                  uint64_t *status_max_ns)
{
        uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9), next_status = 0;
        struct pollfd p[MAX_CONNS + 1];
        bool ok;

        for (int i = 0; i < n; i++) {
                (void)send_call(&conns[i], flood_call);
        }
        for (;;) {
                uint64_t now = mono_ns();
                bool any = false;

                if (now < end && !status->waiting && now >= next_status) {
                        (void)send_call(status, status_call);
                        next_status = now + 200000000ULL;
                }
                for (int i = 0; i <= n; i++) {
                        Conn *c = i < n ? &conns[i] : status;

                        p[i] = (struct pollfd){.fd = c->fd, .events = POLLIN};
                        any |= c->waiting && !c->closed;
                }
                if (!any && now >= end) {
                        return;
                }
                if (now >= end + 30000000000ULL) {
                        fprintf(stderr, "answers still missing 30 s after the flood\n");
                        return;
                }
                (void)poll(p, (nfds_t)n + 1, 50);
                for (int i = 0; i <= n; i++) {
                        Conn *c = i < n ? &conns[i] : status;
                        json_t *msg;

                        while (!c->closed && (msg = read_reply(c))) {
                                if (c == status) {
                                        uint64_t d = mono_ns() - c->sent_ns;

                                        (void)count_reply(ks, msg, &ok);
                                        if (d > *status_max_ns) {
                                                *status_max_ns = d;
                                        }
                                } else {
                                        uint64_t d = mono_ns() - c->sent_ns;

                                        unsigned long busy = k->busy;

                                        (void)count_reply(k, msg, &ok);
                                        if (ok && d > k->ok_max_ns) {
                                                k->ok_max_ns = d;
                                        }
                                        if (busy_times && k->busy > busy) {
                                                fprintf(busy_times, "%llu\n",
                                                        (unsigned long long)now_ns(CLOCK_REALTIME));
                                        }
                                        if (mono_ns() < end) {
                                                (void)send_call(c, flood_call);
                                        }
                                }
                                json_decref(msg);
                        }
                }
        }
}

/* One GetStatus on each connection, a Busy waited out up to five times. */
static int answer_after(Conn *conns, int n, unsigned long *ret_calls)
{
        int answered = 0;

        *ret_calls = 0;
        for (int i = 0; i < n; i++) {
                Counts k = {0};
                bool ok = false;

                for (int tries = 0; tries < 6 && !ok && !conns[i].closed; tries++) {
                        json_t *msg;
                        unsigned long retry;

                        if (send_call(&conns[i], status_call) < 0 ||
                            !(msg = wait_reply(&conns[i], 10000))) {
                                break;
                        }
                        retry = count_reply(&k, msg, &ok);
                        (*ret_calls)++;
                        json_decref(msg);
                        if (retry > 0) {
                                usleep((useconds_t)retry * 1000);
                        }
                }
                answered += ok;
        }
        return answered;
}

int main(int argc, char **argv)
{
        Conn conns[MAX_CONNS] = {0}, status = {0};
        Counts k = {0}, ks = {0};
        uint64_t status_max_ns = 0;
        int n, dropped = 0, answered;
        unsigned long after_calls;
        double seconds;

        flood_call = stats_call;
        for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argc--, argv++) {
                if (strcmp(argv[1], "--status") == 0) {
                        flood_call = status_call;
                } else if (strcmp(argv[1], "--busy-times") == 0 && argc > 2) {
                        busy_times = fopen(argv[2], "we");
                        if (!busy_times) {
                                fprintf(stderr, "cannot create %s: %m\n", argv[2]);
                                return 2;
                        }
                        argc--, argv++;
                } else {
                        break;
                }
        }
        if (argc != 4 || (n = atoi(argv[2])) < 1 || n > MAX_CONNS ||
            (seconds = atof(argv[3])) <= 0) {
                fprintf(stderr, "usage: jitter-flood [--status] [--busy-times FILE] SOCKET "
                                "CONNECTIONS SECONDS\n");
                return 2;
        }
        for (int i = 0; i <= n; i++) {
                Conn *c = i < n ? &conns[i] : &status;

                c->fd = dial(argv[1]);
                if (c->fd < 0) {
                        fprintf(stderr, "cannot connect to %s: %m\n", argv[1]);
                        return 1;
                }
        }
        flood(conns, n, &status, seconds, &k, &ks, &status_max_ns);
        if (busy_times && fclose(busy_times) != 0) {
                fprintf(stderr, "cannot write the refusals' times: %m\n");
                return 1;
        }
        for (int i = 0; i < n; i++) {
                dropped += conns[i].closed || conns[i].waiting;
        }
        answered = answer_after(conns, n, &after_calls);
        printf("{\"calls\":%lu,\"ok\":%lu,\"busy\":%lu,\"busy_retry\":%lu,\"other\":%lu,"
               "\"retry_min_ms\":%lu,\"retry_max_ms\":%lu,\"dropped\":%d,\"answered_after\":%d,"
               "\"after_calls\":%lu,"
               "\"status_calls\":%lu,\"status_ok\":%lu,\"status_busy\":%lu,"
               "\"status_max_ms\":%.1f,\"status_closed\":%s,\"ok_max_ms\":%.1f}\n",
               k.calls, k.ok, k.busy, k.busy_retry, k.other, k.retry_min_ms, k.retry_max_ms,
               dropped, answered, after_calls, ks.calls, ks.ok, ks.busy,
               (double)status_max_ns / 1e6, status.closed ? "true" : "false",
               (double)k.ok_max_ns / 1e6);
        for (int i = 0; i <= n; i++) {
                Conn *c = i < n ? &conns[i] : &status;

                close(c->fd);
                free(c->buf);
        }
        return 0;
}

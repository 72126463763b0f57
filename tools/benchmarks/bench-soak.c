/* jitter-bench-soak: a client that keeps a daemon busy the way dashboards and an operator
 * would, for tools/bench --soak. On one connection, @RATE times per second: GetStats (window 1m),
 * GetEvents (the last minute, at most 1000), GetStatus and GetCauses (window 1m); and once a
 * second GetStats (window 24h) and GetStats (window all). Each call is timed at the socket: from
 * its first byte written to the last byte of its reply read, the parsing of the reply (done
 * afterwards, to see whether it was an error) left out. Another thread opens a connection,
 * calls Monitor, takes one reply and hangs up, over and over. A failed call (a Busy refusal
 * included) is counted, said on stderr, and the loop goes on (on a new connection when the old
 * one broke). Every minute it prints a line; at the end one line per method, "= METHOD CALLS
 * P50_US P99_US P99.9_US MAX_US", then "= Monitor REPLIES" and "= errors ERRORS"; it exits 1
 * when there were errors, after those lines.
 *   jitter-bench-soak SOCKET SECONDS [RATE] */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "util.h"
#include "varlink-client.h"

static const char *socket_path;
static atomic_bool done;
static atomic_ulong monitor_replies, errors;

static void sleep_ns(uint64_t ns)
{
        struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

        nanosleep(&ts, NULL);
}

static void count_error(const char *what, const char *why)
{
        fprintf(stderr, "jitter-bench-soak: %s failed: %s\n", what, why);
        atomic_fetch_add(&errors, 1);
}

static int one_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        (void)params;
        (void)continues;
        (void)userdata;
        if (error_name) {
                count_error("Monitor", error_name);
                return -ECANCELED;
        }
        atomic_fetch_add(&monitor_replies, 1);
        /* Hang up after the first reply: what a client that goes away does. */
        return -ECANCELED;
}

static void *monitor_loop(void *arg)
{
        (void)arg;
        while (!atomic_load(&done)) {
                VarlinkClient *c;
                int r = varlink_client_connect(socket_path, &c);

                if (r < 0) {
                        count_error("connecting for Monitor", strerror(-r));
                        sleep_ns(100000000ULL);
                        continue;
                }
                r = varlink_client_call_more(c, "io.jitterd.Monitor", NULL, one_reply, NULL);
                /* -ECANCELED: the hang-up after the first reply, counted by one_reply(). */
                if (r < 0 && r != -ECANCELED) {
                        count_error("Monitor", strerror(-r));
                }
                varlink_client_free(c);
        }
        return NULL;
}

/* A growing array of latencies. */
typedef struct Lat {
        uint64_t *v;
        size_t n, cap;
} Lat;

static int lat_add(Lat *l, uint64_t ns)
{
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 4096;
                uint64_t *v = realloc(l->v, cap * sizeof(*v));

                if (!v) {
                        return -ENOMEM;
                }
                l->v = v;
                l->cap = cap;
        }
        l->v[l->n++] = ns;
        return 0;
}

static double lat_pct(Lat *l, double p)
{
        size_t i;

        if (l->n == 0) {
                return 0;
        }
        i = (size_t)((double)l->n * p);
        return (double)l->v[i < l->n ? i : l->n - 1] / 1e3;
}

/* The connection the timed calls use: opened by the Varlink client, then read and written raw
 * on its socket, so that the time taken is the daemon's, from the first byte of the call
 * written to the last byte of the reply read, without the parsing of the reply (done
 * afterwards, untimed, to see whether it was an error). */
typedef struct Conn {
        VarlinkClient *client;
        int fd; /* the client's socket; -1 when closed */
        char *buf;
        size_t cap;
} Conn;

/* A reply that has not come in this long is an error, and its connection is closed. */
#define CALL_TIMEOUT_SEC 10

static int conn_open(Conn *c)
{
        struct timeval tv = {.tv_sec = CALL_TIMEOUT_SEC};
        int r = varlink_client_connect(socket_path, &c->client);

        if (r < 0) {
                return r;
        }
        c->fd = varlink_client_fd(c->client);
        if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                r = -errno;
                c->client = varlink_client_free(c->client);
                c->fd = -1;
                return r;
        }
        return 0;
}

static void conn_close(Conn *c)
{
        c->client = varlink_client_free(c->client);
        c->fd = -1;
}

/* Sends @msg (its NUL included) and reads the reply up to its NUL into c->buf; the time from
 * the write to the NUL read in @ret_ns. Returns the reply's length, or a negative errno. */
static ssize_t conn_call(Conn *c, const char *msg, size_t len, uint64_t *ret_ns)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        size_t off = 0, have = 0;

        while (off < len) {
                ssize_t n = send(c->fd, msg + off, len - off, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR) {
                        continue;
                }
                if (n < 0) {
                        return -errno;
                }
                off += (size_t)n;
        }
        for (;;) {
                ssize_t n;

                if (have == c->cap) {
                        size_t cap = c->cap ? c->cap * 2 : 65536;
                        char *p = realloc(c->buf, cap);

                        if (!p) {
                                return -ENOMEM;
                        }
                        c->buf = p;
                        c->cap = cap;
                }
                n = recv(c->fd, c->buf + have, c->cap - have, 0);
                if (n < 0 && errno == EINTR) {
                        continue;
                }
                if (n <= 0) {
                        return n < 0 ? -errno : -ECONNRESET;
                }
                /* One call at a time: the reply's NUL is the last byte read. */
                have += (size_t)n;
                if (c->buf[have - 1] == '\0') {
                        *ret_ns = now_ns(CLOCK_MONOTONIC) - t0;
                        return (ssize_t)have - 1;
                }
        }
}

/* One call on @c, timed; a failed one (an error reply included) is counted as an error, and a
 * connection that broke is closed (the next round opens another). */
static void timed_call(Conn *c, const char *msg, size_t len, const char *method, Lat *lat)
{
        uint64_t ns = 0;
        ssize_t n = conn_call(c, msg, len, &ns);
        json_t *reply, *error;

        if (n < 0) {
                count_error(method, strerror((int)-n));
                conn_close(c);
                return;
        }
        reply = json_loadb(c->buf, (size_t)n, 0, NULL);
        error = json_object_get(reply, "error");
        if (!reply || error) {
                count_error(method, json_is_string(error) ? json_string_value(error)
                                                          : "a reply that is not JSON");
        } else if (lat_add(lat, ns) < 0) {
                count_error(method, "no memory to keep its latency");
        }
        json_decref(reply);
}

static void lat_sort(Lat *l)
{
        qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
}

/* The calls of the client: the method, its parameters (a JSON text, or NULL), and whether it is
 * one of those made once a second rather than at RATE. */
typedef struct SoakCall {
        const char *name; /* as printed */
        const char *method;
        const char *params;
        bool each_second;
        char *msg; /* the call as sent, its NUL included */
        size_t msg_len;
        Lat lat;
} SoakCall;

static SoakCall calls[] = {
        {.name = "GetStats(1m)",
         .method = "io.jitterd.GetStats",
         .params = "{\"window\": \"1m\", \"without_analyses\": true}"},
        {.name = "GetEvents(1m,1000)",
         .method = "io.jitterd.GetEvents",
         .params = "{\"since\": \"1m\", \"limit\": 1000}"},
        {.name = "GetStatus", .method = "io.jitterd.GetStatus"},
        {.name = "GetCauses(1m)",
         .method = "io.jitterd.GetCauses",
         .params = "{\"window\": \"1m\"}"},
        {.name = "GetStats(24h)",
         .method = "io.jitterd.GetStats",
         .params = "{\"window\": \"24h\", \"without_analyses\": true}",
         .each_second = true},
        {.name = "GetStats(all)",
         .method = "io.jitterd.GetStats",
         .params = "{\"window\": \"all\", \"without_analyses\": true}",
         .each_second = true},
};

/* Writes the message of each call. Returns 0, or -1 after saying what is wrong. */
static int prepare_calls(void)
{
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                json_t *params = calls[i].params ? json_loads(calls[i].params, 0, NULL) : NULL;
                json_t *call = json_pack("{ss}", "method", calls[i].method);

                if (calls[i].params &&
                    (!params || json_object_set(call, "parameters", params) < 0)) {
                        json_decref(call);
                        call = NULL;
                }
                json_decref(params);
                calls[i].msg = call ? json_dumps(call, JSON_COMPACT) : NULL;
                json_decref(call);
                if (!calls[i].msg) {
                        fprintf(stderr, "jitter-bench-soak: bad parameters %s\n", calls[i].params);
                        return -1;
                }
                calls[i].msg_len = strlen(calls[i].msg) + 1;
        }
        return 0;
}

/* The last lines: each call's latencies, the Monitor replies, the errors. */
static void print_summary(void)
{
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                Lat *l = &calls[i].lat;

                lat_sort(l);
                printf("= %s %zu %.1f %.1f %.1f %.1f\n", calls[i].name, l->n, lat_pct(l, 0.5),
                       lat_pct(l, 0.99), lat_pct(l, 0.999),
                       l->n ? (double)l->v[l->n - 1] / 1e3 : 0.0);
                free(calls[i].msg);
                free(l->v);
        }
        printf("= Monitor %lu\n= errors %lu\n", atomic_load(&monitor_replies),
               atomic_load(&errors));
}

int main(int argc, char **argv)
{
        uint64_t start, end, next, period_ns, next_report, next_second;
        Conn c = {.fd = -1};
        pthread_t monitor;
        long seconds, rate = 20;
        size_t rounds;
        size_t i;

        if (argc < 3 || (seconds = atol(argv[2])) <= 0 ||
            (argc > 3 && (rate = atol(argv[3])) <= 0)) {
                fprintf(stderr, "usage: jitter-bench-soak SOCKET SECONDS [RATE]\n");
                return 2;
        }
        socket_path = argv[1];
        if (prepare_calls() < 0) {
                return 1;
        }
        if (pthread_create(&monitor, NULL, monitor_loop, NULL) != 0) {
                fprintf(stderr, "jitter-bench-soak: cannot start the Monitor thread\n");
                return 1;
        }
        period_ns = 1000000000ULL / (uint64_t)rate;
        start = next = next_second = now_ns(CLOCK_MONOTONIC);
        end = start + (uint64_t)seconds * 1000000000ULL;
        next_report = start + 60000000000ULL;
        for (rounds = 0; now_ns(CLOCK_MONOTONIC) < end; rounds++) {
                bool second = false;
                uint64_t t;
                int r;

                if (c.fd < 0 && (r = conn_open(&c)) < 0) {
                        count_error("connecting", strerror(-r));
                }
                if (now_ns(CLOCK_MONOTONIC) >= next_second) {
                        second = true;
                        next_second += 1000000000ULL;
                }
                for (i = 0; i < ELEMENTSOF(calls); i++) {
                        if (c.fd >= 0 && (!calls[i].each_second || second)) {
                                timed_call(&c, calls[i].msg, calls[i].msg_len, calls[i].method,
                                           &calls[i].lat);
                        }
                }
                t = now_ns(CLOCK_MONOTONIC);
                if (t >= next_report) {
                        printf("  %3.0f min: %zu rounds, %lu Monitor replies, %lu errors\n",
                               (double)(t - start) / 60e9, rounds + 1,
                               atomic_load(&monitor_replies), atomic_load(&errors));
                        fflush(stdout);
                        next_report += 60000000000ULL;
                }
                next += period_ns;
                if (next > t) {
                        sleep_ns(next - t);
                } else {
                        next = t;
                }
        }
        atomic_store(&done, true);
        /* The Monitor thread ends with its next reply, within an interval or its timeout. */
        pthread_join(monitor, NULL);
        print_summary();
        conn_close(&c);
        free(c.buf);
        return atomic_load(&errors) ? 1 : 0;
}

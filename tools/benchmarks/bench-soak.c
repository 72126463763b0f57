/* jitter-bench-soak: a client that keeps a daemon busy the way a dashboard and an operator
 * would, for tools/bench --soak. One thread calls GetStats (window 1m), GetEvents (the last
 * minute, at most 1000) and GetStatus (what `jitterctl status` and dashboards call) on one
 * connection, @RATE times per second; another opens a connection, calls Monitor, takes one
 * reply and hangs up, over and over. A failed call is counted, said on stderr, and the loop
 * goes on (on a new connection when the old one broke). Every minute it prints a line, and at
 * the end "GETSTATS_CALLS P50_US P99_US MAX_US GETEVENTS_CALLS P50_US P99_US GETSTATUS_CALLS
 * P50_US P99_US MONITOR_REPLIES ERRORS"; it exits 1 when there were errors, after that line.
 *   jitter-bench-soak SOCKET SECONDS [RATE] */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-clock.h"
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

/* One call on *@c, timed; a failed one is counted as an error, and a connection that broke is
 * closed (the next round opens another). */
static void timed_call(VarlinkClient **c, const char *method, json_t *params, Lat *lat)
{
        json_t *reply = NULL;
        char *err = NULL;
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        int r = varlink_client_call(*c, method, params, &reply, &err);

        if (r < 0 || err) {
                count_error(method, err ? err : strerror(-r));
                if (r < 0) {
                        *c = varlink_client_free(*c);
                }
        } else if (lat_add(lat, now_ns(CLOCK_MONOTONIC) - t0) < 0) {
                count_error(method, "no memory to keep its latency");
        }
        free(err);
        json_decref(reply);
}

static void lat_sort(Lat *l)
{
        qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
}

int main(int argc, char **argv)
{
        Lat stats = {0}, events = {0}, status = {0};
        json_t *stats_params, *events_params;
        uint64_t start, end, next, period_ns, next_report;
        VarlinkClient *c = NULL;
        pthread_t monitor;
        long seconds, rate = 20;

        if (argc < 3 || (seconds = atol(argv[2])) <= 0 ||
            (argc > 3 && (rate = atol(argv[3])) <= 0)) {
                fprintf(stderr, "usage: jitter-bench-soak SOCKET SECONDS [RATE]\n");
                return 2;
        }
        socket_path = argv[1];
        stats_params = json_pack("{ss sb}", "window", "1m", "without_analyses", true);
        events_params = json_pack("{ss si}", "since", "1m", "limit", 1000);
        if (!stats_params || !events_params ||
            pthread_create(&monitor, NULL, monitor_loop, NULL) != 0) {
                fprintf(stderr, "jitter-bench-soak: cannot start the Monitor thread\n");
                return 1;
        }
        period_ns = 1000000000ULL / (uint64_t)rate;
        start = next = now_ns(CLOCK_MONOTONIC);
        end = start + (uint64_t)seconds * 1000000000ULL;
        next_report = start + 60000000000ULL;
        while (now_ns(CLOCK_MONOTONIC) < end) {
                uint64_t t;
                int r;

                if (!c && (r = varlink_client_connect(socket_path, &c)) < 0) {
                        count_error("connecting", strerror(-r));
                        c = NULL;
                }
                if (c) {
                        timed_call(&c, "io.jitterd.GetStats", stats_params, &stats);
                }
                if (c) {
                        timed_call(&c, "io.jitterd.GetEvents", events_params, &events);
                }
                if (c) {
                        timed_call(&c, "io.jitterd.GetStatus", NULL, &status);
                }
                t = now_ns(CLOCK_MONOTONIC);
                if (t >= next_report) {
                        printf("  %3.0f min: %zu GetStats, %zu GetEvents, %zu GetStatus, %lu "
                               "Monitor replies, %lu errors\n",
                               (double)(t - start) / 60e9, stats.n, events.n, status.n,
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
        lat_sort(&stats);
        lat_sort(&events);
        lat_sort(&status);
        printf("%zu %.1f %.1f %.1f %zu %.1f %.1f %zu %.1f %.1f %lu %lu\n", stats.n,
               lat_pct(&stats, 0.5), lat_pct(&stats, 0.99),
               stats.n ? (double)stats.v[stats.n - 1] / 1e3 : 0.0, events.n, lat_pct(&events, 0.5),
               lat_pct(&events, 0.99), status.n, lat_pct(&status, 0.5), lat_pct(&status, 0.99),
               atomic_load(&monitor_replies), atomic_load(&errors));
        json_decref(stats_params);
        json_decref(events_params);
        free(stats.v);
        free(events.v);
        free(status.v);
        varlink_client_free(c);
        return atomic_load(&errors) ? 1 : 0;
}

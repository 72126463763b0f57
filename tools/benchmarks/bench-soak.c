/* jitter-bench-soak: a client that keeps a daemon busy the way a dashboard and an operator
 * would, for tools/bench --soak. One thread calls GetStats (window 1m) and GetEvents (the last
 * minute, at most 1000) on one connection, @RATE times per second; another opens a connection,
 * calls Monitor, takes one reply and hangs up, over and over. Every minute it prints a line,
 * and at the end "GETSTATS_CALLS P50_US P99_US MAX_US GETEVENTS_CALLS P50_US P99_US
 * MONITOR_REPLIES ERRORS".
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

static int one_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        (void)params;
        (void)continues;
        (void)userdata;
        if (error_name) {
                atomic_fetch_add(&errors, 1);
                return -1;
        }
        atomic_fetch_add(&monitor_replies, 1);
        /* Hang up after the first reply: what a client that goes away does. */
        return -1;
}

static void *monitor_loop(void *arg)
{
        (void)arg;
        while (!atomic_load(&done)) {
                VarlinkClient *c;

                if (varlink_client_connect(socket_path, &c) < 0) {
                        atomic_fetch_add(&errors, 1);
                        struct timespec ts = {0, 100000000L};
                        nanosleep(&ts, NULL);
                        continue;
                }
                (void)varlink_client_call_more(c, "io.jitterd.Monitor", NULL, one_reply, NULL);
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

/* One call, timed; a failed one counts as an error. */
static int timed_call(VarlinkClient *c, const char *method, json_t *params, Lat *lat)
{
        json_t *reply = NULL;
        char *err = NULL;
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        int r = varlink_client_call(c, method, params, &reply, &err);

        if (r < 0 || err) {
                fprintf(stderr, "jitter-bench-soak: %s failed: %s\n", method,
                        err ? err : strerror(-r));
                atomic_fetch_add(&errors, 1);
                free(err);
                json_decref(reply);
                return r < 0 ? r : -EIO;
        }
        json_decref(reply);
        return lat_add(lat, now_ns(CLOCK_MONOTONIC) - t0);
}

int main(int argc, char **argv)
{
        Lat stats = {0}, events = {0};
        json_t *stats_params, *events_params;
        uint64_t start, end, next, period_ns, next_report;
        VarlinkClient *c;
        pthread_t monitor;
        long seconds, rate = 20;
        int r;

        if (argc < 3 || (seconds = atol(argv[2])) <= 0 ||
            (argc > 3 && (rate = atol(argv[3])) <= 0)) {
                fprintf(stderr, "usage: jitter-bench-soak SOCKET SECONDS [RATE]\n");
                return 2;
        }
        socket_path = argv[1];
        r = varlink_client_connect(socket_path, &c);
        if (r < 0) {
                fprintf(stderr, "jitter-bench-soak: cannot connect to %s: %s\n", socket_path,
                        strerror(-r));
                return 1;
        }
        if (pthread_create(&monitor, NULL, monitor_loop, NULL) != 0) {
                fprintf(stderr, "jitter-bench-soak: cannot start the Monitor thread\n");
                return 1;
        }
        stats_params = json_pack("{ss}", "window", "1m");
        events_params = json_pack("{ss si}", "since", "1m", "limit", 1000);
        period_ns = 1000000000ULL / (uint64_t)rate;
        start = next = now_ns(CLOCK_MONOTONIC);
        end = start + (uint64_t)seconds * 1000000000ULL;
        next_report = start + 60000000000ULL;
        while (now_ns(CLOCK_MONOTONIC) < end) {
                uint64_t t;

                if (timed_call(c, "io.jitterd.GetStats", stats_params, &stats) < 0 ||
                    timed_call(c, "io.jitterd.GetEvents", events_params, &events) < 0) {
                        break;
                }
                t = now_ns(CLOCK_MONOTONIC);
                if (t >= next_report) {
                        printf("  %3.0f min: %zu GetStats, %zu GetEvents, %lu Monitor replies, "
                               "%lu errors\n",
                               (double)(t - start) / 60e9, stats.n, events.n,
                               atomic_load(&monitor_replies), atomic_load(&errors));
                        fflush(stdout);
                        next_report += 60000000000ULL;
                }
                next += period_ns;
                if (next > t) {
                        struct timespec ts = {(time_t)((next - t) / 1000000000ULL),
                                              (long)((next - t) % 1000000000ULL)};
                        nanosleep(&ts, NULL);
                } else {
                        next = t;
                }
        }
        atomic_store(&done, true);
        /* The Monitor thread ends with its next reply, within an interval or its timeout. */
        pthread_join(monitor, NULL);
        qsort(stats.v, stats.n, sizeof(*stats.v), cmp_u64);
        qsort(events.v, events.n, sizeof(*events.v), cmp_u64);
        printf("%zu %.1f %.1f %.1f %zu %.1f %.1f %lu %lu\n", stats.n, lat_pct(&stats, 0.5),
               lat_pct(&stats, 0.99), stats.n ? (double)stats.v[stats.n - 1] / 1e3 : 0.0, events.n,
               lat_pct(&events, 0.5), lat_pct(&events, 0.99), atomic_load(&monitor_replies),
               atomic_load(&errors));
        json_decref(stats_params);
        json_decref(events_params);
        free(stats.v);
        free(events.v);
        varlink_client_free(c);
        return atomic_load(&errors) ? 1 : 0;
}

/* tools/bench --scale: what jitterd's own work costs as the number of probed CPUs grows, with
 * synthetic CPUs that replay recorded intervals (scale.h), and how to record those.
 *
 *   jitter-bench-scale [--fixture FILE] [--cpus N,N,...] [--minutes M] [--no-textfile]
 *   jitter-bench-scale --record FILE [--cpu C] [--seconds S]
 *
 * For each N (default 1,16,64,256): M minutes of history (default 10, the fine retention)
 * harvested for N CPUs, the last 3 minutes of which are timed: the manager's CPU time per
 * interval and CPU, for the tick (epochs, the attribution counters from a /proc/interrupts
 * and /proc/softirqs of N columns), the harvest (slots into the history) and the textfile;
 * then GetStats as the API builds it (with the reply's serialization, in CPU time), for one
 * CPU and for all, over 1m and 24h; and the memory. The last 60 intervals end when GetStats is
 * asked, so that "1m" holds a minute. --record runs a real probe on CPU C for S seconds and writes
 * its intervals as the loop left them. */

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "counter.h"
#include "probe.h"
#include "scale-fixture.h"
#include "scale-probe.h"
#include "scale.h"
#include "util.h"
#define DEFAULT_FIXTURE "tools/benchmarks/scale-fixture/amd-epyc-kvm.txt"
#define TIMED_MINUTES 3
#define ONE_CPU_CALLS 200

/* --- recording ------------------------------------------------------------------------------ */

static void cpu_model(char *buf, size_t size)
{
        FILE *f = fopen("/proc/cpuinfo", "re");
        char line[256];

        snprintf(buf, size, "unknown CPU");
        while (f && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
                        snprintf(buf, size, "%s", strchr(line, ':') + 2);
                        buf[strcspn(buf, "\n")] = 0;
                        break;
                }
        }
        if (f) {
                fclose(f);
        }
}

/* Waits (at most 2 s) until @p acknowledged an epoch after @epoch. */
static bool wait_ack(Probe *p, uint64_t epoch)
{
        for (int i = 0; i < 2000 && probe_acked_epoch(p) <= epoch; i++) {
                usleep(1000);
        }
        return probe_acked_epoch(p) > epoch;
}

/* An interruption read from the ring, not yet given to an interval: absolute ticks. */
typedef struct Pending {
        uint64_t start_ticks;
        uint64_t duration_ticks;
} Pending;

/* Moves the interruptions of @pending that ended by @end into @iv, as offsets from @start: the
 * loop counts a gap in the slot of the sample that ends it. */
static int take_events(Pending *pending, size_t *n_pending, uint64_t start, uint64_t end,
                       ScaleInterval *iv)
{
        size_t keep = 0;

        iv->ring = calloc(*n_pending ? *n_pending : 1, sizeof(*iv->ring));
        if (!iv->ring) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < *n_pending; i++) {
                const Pending *e = &pending[i];

                if (e->start_ticks + e->duration_ticks <= end) {
                        iv->ring[iv->n_ring++] = (ScaleEvent){
                                .offset_ticks = e->start_ticks > start ? e->start_ticks - start : 0,
                                .duration_ticks = e->duration_ticks,
                        };
                } else {
                        pending[keep++] = *e;
                }
        }
        *n_pending = keep;
        return 0;
}

/* One interval of the running probe @p: advance, capture the ended slot with its events,
 * harvest it. Returns 0 or a negative errno. */
static int record_one(Probe *p, RingReader *rd, Pending *pending, size_t *n_pending,
                      size_t max_pending, ScaleFixture *x, bool keep)
{
        uint64_t e = probe_epoch(p), start, s, d;
        ScaleInterval iv;
        ProbeSlot *slot = malloc(sizeof(*slot));
        int r;

        if (!slot) {
                return -ENOMEM;
        }
        if (probe_advance(p) < 0 || !wait_ack(p, e)) {
                free(slot);
                return -ETIMEDOUT;
        }
        r = scale_probe_capture(p, e, &iv, &start);
        (void)probe_harvest(p, e, slot);
        free(slot);
        if (r < 0) {
                return r;
        }
        while (ring_pop(probe_ring(p), rd, &s, &d) == 1 && *n_pending < max_pending) {
                pending[(*n_pending)++] = (Pending){s, d};
        }
        r = take_events(pending, n_pending, start, start + iv.duration_ticks, &iv);
        if (r == 0 && keep) {
                r = scale_fixture_add(x, &iv);
        }
        scale_interval_clear(&iv);
        return r;
}

static int start_probe(int cpu, CounterInfo *ci, Probe **ret)
{
        ProbeConfig pc = {.cpu = cpu,
                          .threshold_ns = 10000,
                          .preheat_ns = NSEC_PER_SEC,
                          .ring_capacity = 8192};
        int r = counter_info_init(COUNTER_HW, 10.0, 200, ci);

        if (r < 0) {
                r = counter_info_init(COUNTER_CLOCK, 10.0, 200, ci);
        }
        if (r < 0) {
                return r;
        }
        pc.counter = *ci;
        r = probe_new(&pc, ret);
        if (r < 0) {
                return r;
        }
        r = probe_start(*ret);
        for (int i = 0; r == 0 && i < 300 && probe_state(*ret) != PROBE_RUNNING; i++) {
                usleep(10000);
        }
        if (r == 0 && probe_state(*ret) != PROBE_RUNNING) {
                r = -ETIMEDOUT;
        }
        return r;
}

static int record(const char *path, int cpu, unsigned seconds)
{
        Pending pending[4096];
        size_t n_pending = 0;
        RingReader rd = {0};
        ScaleFixture *x = NULL;
        char model[200], day[16];
        CounterInfo ci;
        Probe *p = NULL;
        FILE *f;
        int r;

        r = scale_fixture_new(&x);
        if (r == 0) {
                r = start_probe(cpu, &ci, &p);
        }
        if (r < 0) {
                fprintf(stderr, "cannot run a probe on CPU %d: %s\n", cpu, strerror(-r));
                probe_free(p);
                scale_fixture_free(x);
                return 1;
        }
        cpu_model(model, sizeof(model));
        strftime(day, sizeof(day), "%Y-%m-%d", gmtime(&(time_t){time(NULL)}));
        snprintf(x->origin, sizeof(x->origin), "CPU %d of %s, %u s on %s", cpu, model, seconds,
                 day);
        x->hz = ci.hz;
        x->floor_ticks = probe_floor_ticks(p);
        x->band_ticks = probe_band_ticks(p);
        /* The first interval began in the preheat: left out. */
        for (unsigned i = 0; r == 0 && i <= seconds; i++) {
                usleep(1000000);
                r = record_one(p, &rd, pending, &n_pending, 4096, x, i > 0);
        }
        probe_free(p);
        f = r == 0 ? fopen(path, "we") : NULL;
        if (r == 0 && (!f || scale_fixture_write(x, f) < 0 || fclose(f) != 0)) {
                r = -EIO;
        }
        if (r < 0) {
                fprintf(stderr, "cannot record %s: %s\n", path, strerror(-r));
        }
        scale_fixture_free(x);
        return r < 0 ? 1 : 0;
}

/* --- the table ----------------------------------------------------------------------------- */

typedef struct Latency {
        double p50_us, p99_us;
} Latency;

/* GetStats for @cpu (-1: all) over @window, @calls times: the builder and the serialization,
 * in the thread's CPU time, which a busy machine does not inflate as it does wall time (the
 * builder neither sleeps nor waits). */
static Latency time_stats(Scale *s, int cpu, const char *window, unsigned calls)
{
        uint64_t *ns = calloc(calls, sizeof(*ns));
        ScaleCost ignored = {0};
        Latency l = {0, 0};

        if (!ns) {
                return l;
        }
        /* One more interval, ending now: a daemon harvests every interval, so its windows are
         * current (read from the running sums); a CPU whose last interval ended more than two
         * intervals ago has stopped, and its windows are merged interval by interval. */
        if (scale_run(s, 1, now_ns(CLOCK_MONOTONIC) - NSEC_PER_SEC, &ignored) < 0) {
                free(ns);
                return l;
        }
        for (unsigned i = 0; i < calls; i++) {
                uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                json_t *arr = scale_stats(s, cpu, window);
                char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;

                ns[i] = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
                free(text);
                json_decref(arr);
        }
        qsort(ns, calls, sizeof(*ns), cmp_u64);
        l.p50_us = (double)ns[calls / 2] / 1e3;
        l.p99_us = (double)ns[calls * 99 / 100] / 1e3;
        free(ns);
        return l;
}

static double rss_mib(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[128];
        unsigned long kb = 0;

        while (f && fgets(line, sizeof(line), f)) {
                if (sscanf(line, "VmRSS: %lu kB", &kb) == 1) {
                        break;
                }
        }
        if (f) {
                fclose(f);
        }
        return (double)kb / 1024;
}

/* Fills @minutes of history, times the last TIMED_MINUTES of them. The last minute is run
 * with its intervals ending when it is over (waiting for that if it runs faster). */
static int fill(Scale *s, unsigned minutes, ScaleCost *cost)
{
        unsigned untimed = (minutes - TIMED_MINUTES) * 60, timed = (TIMED_MINUTES - 1) * 60;
        uint64_t now = now_ns(CLOCK_MONOTONIC), t0, end;
        ScaleCost ignored = {0};
        double per;
        int r;

        /* Everything but the last minute ends a minute before now. */
        r = scale_run(s, untimed, now - 60 * NSEC_PER_SEC - (untimed + timed) * NSEC_PER_SEC,
                      &ignored);
        t0 = now_ns(CLOCK_MONOTONIC);
        if (r == 0) {
                r = scale_run(s, timed, now - 60 * NSEC_PER_SEC - timed * NSEC_PER_SEC, cost);
        }
        per = (double)(now_ns(CLOCK_MONOTONIC) - t0) / timed;
        end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(per * 60);
        if (r == 0) {
                r = scale_run(s, 60, end - 60 * NSEC_PER_SEC, cost);
        }
        while (now_ns(CLOCK_MONOTONIC) < end) {
                usleep(10000);
        }
        return r;
}

static void print_header(const ScaleFixture *x, unsigned minutes, bool textfile)
{
        printf("synthetic CPUs replaying %zu intervals recorded on %s\n", x->n_intervals,
               x->origin);
        printf("%u min of history per CPU; the manager's CPU time per interval and CPU over the "
               "last %u min; GetStats as the API builds and serializes it (CPU time)\n",
               minutes, TIMED_MINUTES);
        printf("%5s %9s %9s %9s %8s | %17s %17s | %9s %9s | %8s %8s %8s %8s\n", "CPUs", "tick us",
               "harv us", textfile ? "text us" : "-", "% core", "GetStats 1 CPU 1m", "24h",
               "all 1m", "24h", "probe", "history", "attrib", "RSS");
        printf("%5s %9s %9s %9s %8s | %17s %17s | %9s %9s | %8s %8s %8s %8s\n", "", "per CPU",
               "per CPU", "per CPU", "per CPU", "p50/p99 us", "p50/p99 us", "p50 ms", "p50 ms",
               "KiB/CPU", "KiB/CPU", "KiB", "MiB");
}

static int run_table_row(const ScaleFixture *x, size_t n, unsigned minutes, bool textfile)
{
        char root[] = "/tmp/jitter-scale.XXXXXX";
        ScaleOptions o = {.n_cpus = n, .fixture = x, .root = root, .textfile = textfile};
        ScaleCost c = {0};
        Scale *s = NULL;
        Latency one_1m, one_24h, all_1m, all_24h;
        unsigned all_calls = n > 64 ? 5 : 20;
        double per;
        int r;

        if (!mkdtemp(root)) {
                return -errno;
        }
        r = scale_new(&o, &s);
        if (r == 0) {
                r = fill(s, minutes, &c);
        }
        if (r < 0) {
                scale_free(s);
                fprintf(stderr, "%zu CPUs: %s\n", n, strerror(-r));
                return r;
        }
        one_1m = time_stats(s, (int)(n / 2), "1m", ONE_CPU_CALLS);
        one_24h = time_stats(s, (int)(n / 2), "24h", ONE_CPU_CALLS);
        all_1m = time_stats(s, -1, "1m", all_calls);
        all_24h = time_stats(s, -1, "24h", all_calls);
        per = (double)c.intervals * (double)n;
        printf("%5zu %9.1f %9.1f %9.1f %8.4f | %8.0f/%-8.0f %8.0f/%-8.0f | %9.2f %9.2f | %8.0f "
               "%8.0f %8.0f %8.1f\n",
               n, c.tick_ns / per / 1e3, c.harvest_ns / per / 1e3, c.textfile_ns / per / 1e3,
               100.0 * (double)(c.tick_ns + c.harvest_ns + c.textfile_ns) / per / 1e9,
               one_1m.p50_us, one_1m.p99_us, one_24h.p50_us, one_24h.p99_us, all_1m.p50_us / 1e3,
               all_24h.p50_us / 1e3, scale_probe_bytes(s) / 1024.0 / (double)n,
               scale_history_bytes(s) / 1024.0 / (double)n, scale_attrib_bytes(s) / 1024.0,
               rss_mib());
        fflush(stdout);
        scale_free(s);
        rmdir(root);
        return 0;
}

static int parse_cpus(const char *arg, size_t *ret, size_t *ret_n)
{
        char *end;
        size_t n = 0;

        for (const char *p = arg; *p; p = *end ? end + 1 : end) {
                unsigned long v = strtoul(p, &end, 10);

                if (end == p || (*end && *end != ',') || v == 0 || v > CPU_SETSIZE || n == 16) {
                        return -EINVAL;
                }
                ret[n++] = v;
        }
        *ret_n = n;
        return n > 0 ? 0 : -EINVAL;
}

static int usage(void)
{
        fprintf(stderr, "usage: jitter-bench-scale [--fixture FILE] [--cpus N,N,...] [--minutes "
                        "M] [--no-textfile]\n"
                        "       jitter-bench-scale --record FILE [--cpu C] [--seconds S]\n");
        return 2;
}

static int run_table(const char *path, const size_t *cpus, size_t n_cpus, unsigned minutes,
                     bool textfile)
{
        ScaleFixture *x = NULL;
        FILE *f = fopen(path, "re");
        int r = f ? scale_fixture_read(f, &x) : -errno;

        if (f) {
                fclose(f);
        }
        if (r < 0) {
                fprintf(stderr, "cannot read the fixture %s: %s\n", path, strerror(-r));
                return 1;
        }
        print_header(x, minutes, textfile);
        for (size_t i = 0; r == 0 && i < n_cpus; i++) {
                r = run_table_row(x, cpus[i], minutes, textfile);
        }
        scale_fixture_free(x);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
                {"fixture", required_argument, NULL, 'f'}, {"cpus", required_argument, NULL, 'n'},
                {"minutes", required_argument, NULL, 'm'}, {"no-textfile", no_argument, NULL, 't'},
                {"record", required_argument, NULL, 'r'},  {"cpu", required_argument, NULL, 'c'},
                {"seconds", required_argument, NULL, 's'}, {},
        };
        size_t cpus[16] = {1, 16, 64, 256}, n_cpus = 4;
        const char *fixture = DEFAULT_FIXTURE, *record_path = NULL;
        unsigned minutes = 10, seconds = 20;
        bool textfile = true;
        int cpu = 1, c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 'f':
                        fixture = optarg;
                        break;
                case 'n':
                        if (parse_cpus(optarg, cpus, &n_cpus) < 0) {
                                return usage();
                        }
                        break;
                case 'm':
                        minutes = (unsigned)atoi(optarg);
                        break;
                case 't':
                        textfile = false;
                        break;
                case 'r':
                        record_path = optarg;
                        break;
                case 'c':
                        cpu = atoi(optarg);
                        break;
                case 's':
                        seconds = (unsigned)atoi(optarg);
                        break;
                default:
                        return usage();
                }
        }
        if (optind != argc || minutes < TIMED_MINUTES || minutes > 24 * 60 || seconds < 1 ||
            seconds > 600 || cpu < 0) {
                return usage();
        }
        if (record_path) {
                return record(record_path, cpu, seconds);
        }
        return run_table(fixture, cpus, n_cpus, minutes, textfile);
}

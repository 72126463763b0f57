/* Fills one CPU's history with 24 hours of intervals recorded from a real probe, then reports
 * what a harvest costs, what each standard window's query costs, and the memory per CPU.
 *
 *   jitter-bench-history [--hours N] [SHAPE]
 *                      replay SHAPE (default: test/history/vm-cpu1.shape of the source tree)
 *   jitter-bench-history --record FILE [--cpu N] [--seconds S]
 *                      run a real probe (the daemon's defaults) and save its intervals as a
 *                      shape; it takes CPU N (default 1), so run it under that CPU's lock
 *
 * The replay cycles through the recorded intervals (and their interruptions, made again from
 * each interval's gap histogram) until a day is full, so the history holds the buckets and
 * event durations a real CPU gives; then it goes on for N more hours (default 4) to show that
 * the memory stays flat once the retention is full. Times are CPU time of this thread. Exits
 * 2 when a day takes more than 3 MiB. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "history.h"
#include "shape.h"
#include "util.h"
#define DAY_S 86400u
#define MIB (1024.0 * 1024.0)

#ifndef SHAPE_DEFAULT
#define SHAPE_DEFAULT ""
#endif

/* --- recording ------------------------------------------------------------------------------ */

typedef struct Recording {
        ProbeSlot *slots;
        size_t n, cap;
} Recording;

static int harvest(Probe *p, uint64_t *epoch, Recording *rec, bool keep)
{
        while (*epoch < probe_acked_epoch(p)) {
                if (rec->n == rec->cap) {
                        size_t cap = rec->cap ? rec->cap * 2 : 64;
                        ProbeSlot *s = realloc(rec->slots, cap * sizeof(*s));

                        if (!s) {
                                return -ENOMEM;
                        }
                        rec->slots = s;
                        rec->cap = cap;
                }
                if (probe_harvest(p, *epoch, &rec->slots[rec->n]) == 0 && keep &&
                    rec->slots[rec->n].gap.count > 0) {
                        rec->n++;
                }
                (*epoch)++;
        }
        return 0;
}

static int write_shape(const char *path, const Recording *rec, const CounterInfo *ci,
                       uint64_t threshold_ns)
{
        FILE *f = fopen(path, "we");

        if (!f) {
                return -errno;
        }
        shape_write_header(f, ci->hz, NSEC_PER_SEC, threshold_ns, rec->n);
        for (size_t i = 0; i < rec->n; i++) {
                shape_write_interval(f, rec->slots[i].start_ticks - rec->slots[0].start_ticks,
                                     &rec->slots[i]);
        }
        return fclose(f) != 0 ? -errno : 0;
}

/* Runs a probe on @cpu as the daemon does by default (SCHED_OTHER, 10 us threshold, 1 s
 * preheat, 1 s intervals) for @seconds and saves its intervals to @path. */
static int record(const char *path, int cpu, unsigned seconds)
{
        ProbeConfig pc = {.cpu = cpu,
                          .threshold_ns = 10000,
                          .preheat_ns = NSEC_PER_SEC,
                          .ring_capacity = 8192};
        Recording rec = {0};
        RingReader rd = {0};
        uint64_t epoch = 1, t0, next, start, dur;
        Probe *p = NULL;
        int r;

        r = counter_info_init(COUNTER_HW, 10.0, 2000, &pc.counter);
        if (r >= 0) {
                r = probe_new(&pc, &p);
        }
        if (r >= 0) {
                r = probe_start(p);
        }
        if (r < 0) {
                fprintf(stderr, "cannot run a probe on CPU %d: %s %s\n", cpu, strerror(-r),
                        p ? probe_failure(p) : "");
                probe_free(p);
                return 1;
        }
        /* Keep this thread off the probed CPU, as the daemon keeps its manager. */
        {
                cpu_set_t others;

                if (sched_getaffinity(0, sizeof(others), &others) == 0) {
                        CPU_CLR(cpu, &others);
                        if (CPU_COUNT(&others) > 0) {
                                (void)sched_setaffinity(0, sizeof(others), &others);
                        }
                }
        }
        t0 = now_ns(CLOCK_MONOTONIC);
        while (probe_state(p) != PROBE_RUNNING &&
               now_ns(CLOCK_MONOTONIC) - t0 < 10 * NSEC_PER_SEC) {
                usleep(10000);
        }
        /* Start on a fresh interval: what came before is preheat. */
        (void)probe_advance(p);
        next = now_ns(CLOCK_MONOTONIC) + NSEC_PER_SEC;
        while (r >= 0 && rec.n < seconds && probe_state(p) == PROBE_RUNNING) {
                usleep(100000);
                /* The interruptions are in the slots' histograms; the ring is only emptied. */
                while (ring_pop(probe_ring(p), &rd, &start, &dur) == 1) {
                }
                r = harvest(p, &epoch, &rec, epoch > 2);
                if (now_ns(CLOCK_MONOTONIC) >= next) {
                        (void)probe_advance(p);
                        next += NSEC_PER_SEC;
                }
        }
        probe_stop(p);
        if (r >= 0) {
                r = write_shape(path, &rec, &pc.counter, pc.threshold_ns);
        }
        printf("recorded %zu intervals on CPU %d: %s\n", rec.n, cpu, r < 0 ? strerror(-r) : path);
        probe_free(p);
        free(rec.slots);
        return r < 0 ? 1 : 0;
}

/* --- replay --------------------------------------------------------------------------------- */

static uint64_t cpu_ns(void)
{
        return now_ns(CLOCK_THREAD_CPUTIME_ID);
}

static long rss_kib(void)
{
        FILE *f = fopen("/proc/self/statm", "re");
        long pages = 0, rss = 0;

        if (f) {
                if (fscanf(f, "%ld %ld", &pages, &rss) != 2) {
                        rss = 0;
                }
                fclose(f);
        }
        return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

typedef struct Replay {
        const Shape *shape;
        History *h;
        ProbeSlot *slot;
        ShapeEvent *ev;
        size_t max_ev;
        TickConv conv;
        uint64_t t0, events;
        unsigned n; /* intervals added */
        uint64_t add_ns, add_max_ns;
} Replay;

/* Adds the next @count intervals, cycling through the shape. */
static int replay(Replay *rp, unsigned count)
{
        for (unsigned k = 0; k < count; k++, rp->n++) {
                const Shape *s = rp->shape;
                uint64_t t = rp->t0 + (uint64_t)rp->n * s->interval_ns, start, took;
                size_t n_ev;
                int r = shape_interval(s, rp->n % s->n, 0, rp->slot);

                if (r < 0) {
                        return r;
                }
                rp->slot->end_ticks -= rp->slot->start_ticks;
                rp->slot->start_ticks = tickconv_from_ns(&rp->conv, t);
                rp->slot->end_ticks += rp->slot->start_ticks;
                n_ev = shape_events(rp->slot, tickconv_from_ns(&rp->conv, s->threshold_ns), rp->ev,
                                    rp->max_ev);
                n_ev = n_ev < rp->max_ev ? n_ev : rp->max_ev;
                for (size_t e = 0; e < n_ev; e++) {
                        uint64_t at = t + tickconv_to_ns(&rp->conv, rp->ev[e].offset_ticks);
                        HistoryEvent ev = {
                                .cpu = 0,
                                .start_ns = at,
                                .start_real_ns = at + 1700000000ULL * NSEC_PER_SEC,
                                .duration_ns = tickconv_to_ns(&rp->conv, rp->ev[e].duration_ticks),
                        };

                        (void)history_add_event(rp->h, &ev);
                }
                rp->events += (uint64_t)n_ev;
                start = cpu_ns();
                r = history_add_interval(rp->h, 0, t, s->interval_ns, rp->slot, false, NULL);
                took = cpu_ns() - start;
                if (r < 0) {
                        return r;
                }
                rp->add_ns += took;
                rp->add_max_ns = took > rp->add_max_ns ? took : rp->add_max_ns;
        }
        return 0;
}

/* Prints what each standard window's query costs (CPU time, mean of many), and for
 * comparison what merging the same 24 h interval by interval costs (history_query()). */
static void queries(History *h, HistoryWindow *w)
{
        uint64_t from, to, start;
        const unsigned reps = 200;
        int r = 0;

        for (HistorySpan span = 0; span < HISTORY_SPAN_MAX; span++) {
                start = cpu_ns();
                for (unsigned i = 0; i < reps && r == 0; i++) {
                        r = history_window(h, 0, span, w);
                }
                printf("  window %-4s %8.1f us  (%u intervals, %" PRIu64 " samples)%s\n",
                       history_span_name(span), (double)(cpu_ns() - start) / reps / 1000.0,
                       w->intervals, w->slot.gap.count, r < 0 ? " FAILED" : "");
        }
        r = history_window(h, 0, HISTORY_SPAN_24H, w);
        from = w->from_ns;
        to = w->to_ns;
        start = cpu_ns();
        for (unsigned i = 0; i < reps / 10 && r == 0; i++) {
                r = history_query(h, 0, from, to, false, w);
        }
        printf("  merging the 24 h interval by interval: %.1f us (%u intervals)%s\n",
               (double)(cpu_ns() - start) / (reps / 10) / 1000.0, w->intervals,
               r < 0 ? " FAILED" : "");
}

static int bench(const char *path, unsigned extra_hours)
{
        const HistoryOptions opt = {
                .interval_ns = NSEC_PER_SEC,
                .fine_retention_ns = 600 * NSEC_PER_SEC,
                .coarse_interval_ns = HISTORY_COARSE_INTERVAL_NS,
                .coarse_retention_ns = DAY_S * NSEC_PER_SEC,
                .events_per_cpu = 10000,
        };
        Shape shape;
        Replay rp = {.shape = &shape, .t0 = 1000 * NSEC_PER_SEC};
        HistoryWindow *w = malloc(sizeof(*w));
        size_t empty, day;
        long rss_day;
        int r;

        r = shape_read(path, &shape);
        if (r < 0) {
                fprintf(stderr, "cannot read the shape %s: %s\n", path, strerror(-r));
                return 1;
        }
        tickconv_init(&rp.conv, shape.hz);
        rp.slot = malloc(sizeof(*rp.slot));
        rp.max_ev = 1u << 16;
        rp.ev = malloc(rp.max_ev * sizeof(*rp.ev));
        r = w && rp.slot && rp.ev ? history_new(&opt, &rp.h) : -ENOMEM;
        if (r < 0) {
                fprintf(stderr, "history_new: %s\n", strerror(-r));
                return 1;
        }
        printf("shape: %s, %zu intervals of %" PRIu64 " ms at %" PRIu64 " Hz\n", path, shape.n,
               shape.interval_ns / 1000000, shape.hz);
        empty = history_memory_bytes(rp.h);
        r = replay(&rp, DAY_S);
        day = history_memory_bytes(rp.h);
        rss_day = rss_kib();
        printf("after 24 h (%u intervals, %" PRIu64 " interruptions):\n", rp.n, rp.events);
        printf("  harvest (history_add_interval): %.1f us mean, %.1f us max (CPU time)\n",
               (double)rp.add_ns / rp.n / 1000.0, (double)rp.add_max_ns / 1000.0);
        printf("  memory per CPU: %zu bytes (%.2f MiB; budget 3 MiB): intervals and windows %zu "
               "(%.2f MiB), interruptions %zu (%.2f MiB)\n",
               day - empty, (double)(day - empty) / MIB, day - empty - history_event_bytes(rp.h),
               (double)(day - empty - history_event_bytes(rp.h)) / MIB, history_event_bytes(rp.h),
               (double)history_event_bytes(rp.h) / MIB);
        queries(rp.h, w);
        /* Past the retention nothing grows: neither the history's count nor the process. */
        for (unsigned hour = 1; r >= 0 && hour <= extra_hours; hour++) {
                rp.add_ns = rp.add_max_ns = 0;
                r = replay(&rp, 3600);
                printf("24 h + %u h: harvest %.1f us mean, %.1f us max; memory %+ld bytes, RSS "
                       "%+ld KiB\n",
                       hour, (double)rp.add_ns / 3600 / 1000.0, (double)rp.add_max_ns / 1000.0,
                       (long)history_memory_bytes(rp.h) - (long)day, rss_kib() - rss_day);
        }
        if (r < 0) {
                fprintf(stderr, "replay: %s\n", strerror(-r));
        }
        r = r < 0 ? 1 : day - empty <= 3u * 1024 * 1024 ? 0 : 2;
        history_free(rp.h);
        shape_free(&shape);
        free(rp.slot);
        free(rp.ev);
        free(w);
        return r;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                {"record", required_argument, NULL, 'r'},
                {"cpu", required_argument, NULL, 'c'},
                {"seconds", required_argument, NULL, 's'},
                {"hours", required_argument, NULL, 'h'},
                {},
        };
        const char *out = NULL;
        unsigned seconds = 200, hours = 4;
        int cpu = 1, c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'r':
                        out = optarg;
                        break;
                case 'c':
                        cpu = atoi(optarg);
                        break;
                case 's':
                        seconds = (unsigned)atoi(optarg);
                        break;
                case 'h':
                        hours = (unsigned)atoi(optarg);
                        break;
                default:
                        fprintf(stderr,
                                "usage: %s [SHAPE] | --record FILE [--cpu N] "
                                "[--seconds S]\n",
                                argv[0]);
                        return 1;
                }
        }
        if (out) {
                return record(out, cpu, seconds);
        }
        return bench(optind < argc ? argv[optind] : SHAPE_DEFAULT, hours);
}

/* Fills one CPU's history with 24 hours of synthetic intervals shaped like a real probe's,
 * then reports the memory it takes and how long the common queries take.
 *
 * An interval of a probe looping every ~60 ticks holds tens of millions of gaps: a dense core
 * of exact buckets around the loop's period, misses just above it, then a long sparse tail
 * out to milliseconds made by a few noise sources (timer tick, IPIs, softirqs, a device IRQ,
 * rare long ones), each with its typical duration; the diff-of-diff is a dense core around 0
 * with the same tails on both sides. As on a real CPU, the tails of consecutive intervals
 * fall mostly into the same buckets, so a coarse interval (the merge of 60) holds somewhat
 * more buckets than a fine one, not 60 times more. */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history.h"
#include "rng.h"
#include "util.h"

#define NSEC_PER_SEC 1000000000ULL
#define FLOOR_TICKS 60

static void add_gap(ProbeSlot *s, uint64_t v, uint64_t n)
{
        s->gap_hist.counts[histogram_index(v)] += n;
        s->gap.count += n;
        s->gap.sum += (unsigned __int128)v * n;
        s->gap.sumsq += (unsigned __int128)v * v * n;
        if (v < s->gap.min) {
                s->gap.min = v;
        }
        if (v > s->gap.max) {
                s->gap.max = v;
        }
        if (v >= FLOOR_TICKS + 40) {
                s->lost_ticks += (v - FLOOR_TICKS) * n;
        }
}

static void add_dd(ProbeSlot *s, int64_t v, uint64_t n)
{
        uint64_t m = v < 0 ? -(uint64_t)v : (uint64_t)v;

        if (v < 0) {
                s->dd_hist.neg.counts[histogram_index(m)] += n;
        } else {
                s->dd_hist.pos.counts[histogram_index(m)] += n;
        }
        s->dd.count += n;
        s->dd.sum += (__int128)v * (__int128)n;
        s->dd.sumsq += (unsigned __int128)m * m * n;
        if (v < s->dd.min) {
                s->dd.min = v;
        }
        if (v > s->dd.max) {
                s->dd.max = v;
        }
}

/* Noise sources of a tuned but not perfect CPU: each takes the CPU away for a typical time
 * (log-normal around its center, in ticks of a 2.4 GHz counter) at some rate per second. */
typedef struct Source {
        double center_ticks;
        double sigma; /* of the natural logarithm */
        double rate;  /* per second; below 1: the chance per second */
        uint16_t attrib_id;
} Source;

static const Source sources[] = {
        {3000, 0.12, 250, 0},    /* local timer tick (irq:LOC) */
        {7000, 0.20, 2, 1},      /* rescheduling IPI (irq:RES) */
        {12000, 0.25, 10, 2},    /* RCU / timer softirq */
        {20000, 0.30, 0.5, 3},   /* TLB shootdown */
        {50000, 0.30, 0.2, 4},   /* a device IRQ that was not moved away */
        {500000, 1.20, 0.05, 5}, /* rare long ones: SMI, a stray kernel thread */
};

/* Adds one interruption of @v ticks: a long gap, and the jump up and back down it makes in the
 * diff-of-diff. */
static void add_interruption(ProbeSlot *s, uint64_t v, uint64_t n)
{
        add_gap(s, v, n);
        add_dd(s, (int64_t)(v - FLOOR_TICKS), n);
        add_dd(s, -(int64_t)(v - FLOOR_TICKS), n);
        if (v >= 24000) {
                s->events += n;
        }
}

/* One second of a probe looping every FLOOR_TICKS ticks. */
static void synth_interval(ProbeSlot *s, uint64_t start_ticks, AttribDelta *a)
{
        probe_slot_clear(s);
        s->start_ticks = start_ticks;
        s->end_ticks = start_ticks + 2400000000ULL;
        a->n = 0;

        /* Core: every tick value from just below the floor to well above it. */
        for (int d = -4; d < 36; d++) {
                double w = exp(-(double)(d * d) / 18.0);
                uint64_t n =
                        (uint64_t)(30e6 * w * (0.8 + 0.4 * rng_uniform())) + 1 + rng_next() % 50;

                add_gap(s, (uint64_t)(FLOOR_TICKS + d), n);
        }
        for (int d = -40; d <= 40; d++) {
                double w = exp(-(double)(d * d) / 60.0);
                uint64_t n = (uint64_t)(20e6 * w * (0.8 + 0.4 * rng_uniform()));

                if (n > 0) {
                        add_dd(s, d, n);
                }
        }
        /* Cache and TLB misses just above the core, thinning out towards 250 ticks; filled a
         * bucket at a time (thousands per second). */
        for (uint64_t v = FLOOR_TICKS + 40; v < 250;
             v = histogram_bucket_upper(histogram_index(v)) + 1) {
                double expect = 4000.0 * exp(-(double)(v - FLOOR_TICKS - 40) / 40.0);
                uint64_t n = (uint64_t)(expect * (0.7 + 0.6 * rng_uniform()));

                if (n > 0) {
                        add_gap(s, v, n);
                        add_dd(s, (int64_t)(v - FLOOR_TICKS), n);
                        add_dd(s, -(int64_t)(v - FLOOR_TICKS), n);
                }
        }
        for (size_t k = 0; k < sizeof(sources) / sizeof(sources[0]); k++) {
                const Source *src = &sources[k];
                uint64_t n = src->rate >= 1 ? (uint64_t)(src->rate * (0.8 + 0.4 * rng_uniform()))
                                            : rng_uniform() < src->rate;

                for (uint64_t i = 0; i < n; i++) {
                        add_interruption(
                                s, (uint64_t)(src->center_ticks * exp(src->sigma * rng_normal())),
                                1);
                }
                if (n > 0) {
                        a->items[a->n++] = (AttribCount){.id = src->attrib_id, .count = n};
                }
        }
        /* Context switches of the probe thread, now and then. */
        if (rng_next() % 8 == 0) {
                a->items[a->n++] = (AttribCount){.id = 6, .count = 1};
        }
}

static unsigned count_buckets(const Histogram *h)
{
        unsigned n = 0;

        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                n += h->counts[i] != 0;
        }
        return n;
}

/* Long because the benchmark fills, measures and prints in one sequence. */
int main(void)
{
        const HistoryOptions opt = {
                .interval_ns = NSEC_PER_SEC,
                .fine_retention_ns = 600 * NSEC_PER_SEC,
                .coarse_interval_ns = 60 * NSEC_PER_SEC,
                .coarse_retention_ns = 86400 * NSEC_PER_SEC,
                .events_per_cpu = 10000,
        };
        const unsigned seconds = 86400;
        uint64_t t0 = 1000 * NSEC_PER_SEC, t_add = 0, start;
        unsigned gap_buckets = 0, dd_buckets = 0;
        size_t empty_bytes, bytes;
        HistoryWindow *w = malloc(sizeof(*w));
        ProbeSlot *slot = malloc(sizeof(*slot));
        AttribDelta *a = malloc(sizeof(*a));
        History *h;
        double q24, q1;
        int r;

        if (!w || !slot || !a) {
                fprintf(stderr, "out of memory\n");
                return 1;
        }
        rng_seed(0x2545f4914f6cdd1dULL); /* the synthetic day the README's figures come from */
        r = history_new(&opt, &h);
        if (r < 0) {
                fprintf(stderr, "history_new: %s\n", strerror(-r));
                return 1;
        }
        empty_bytes = history_memory_bytes(h);

        for (unsigned i = 0; i < seconds; i++) {
                uint64_t t = t0 + (uint64_t)i * NSEC_PER_SEC;

                synth_interval(slot, (uint64_t)i * 2400000000ULL + 1, a);
                if (i < 100) {
                        gap_buckets += count_buckets(&slot->gap_hist);
                        dd_buckets += count_buckets(&slot->dd_hist.neg) +
                                      count_buckets(&slot->dd_hist.pos);
                }
                start = now_ns(CLOCK_MONOTONIC);
                r = history_add_interval(h, 0, t, NSEC_PER_SEC, slot, false, a);
                t_add += now_ns(CLOCK_MONOTONIC) - start;
                if (r < 0) {
                        fprintf(stderr, "history_add_interval: %s\n", strerror(-r));
                        return 1;
                }
                for (uint64_t e = 0; e < slot->events; e++) {
                        HistoryEvent ev = {
                                .cpu = 0,
                                .start_ns = t + e * 1000,
                                .start_real_ns = t + e * 1000,
                                .duration_ns = 10000 + rng_next() % 100000,
                        };

                        (void)history_add_event(h, &ev);
                }
        }
        bytes = history_memory_bytes(h);

        /* The newest time recorded plays "now". */
        {
                uint64_t now = t0 + (uint64_t)seconds * NSEC_PER_SEC;
                const unsigned reps = 20;

                start = now_ns(CLOCK_MONOTONIC);
                for (unsigned i = 0; i < reps; i++) {
                        r = history_query(h, 0, now - 86400 * NSEC_PER_SEC, now, false, w);
                }
                q24 = (double)(now_ns(CLOCK_MONOTONIC) - start) / reps / 1000.0;
                if (r < 0) {
                        fprintf(stderr, "history_query: %s\n", strerror(-r));
                        return 1;
                }
                printf("24h window: %u intervals, %" PRIu64 " samples, %.0f us\n", w->intervals,
                       w->slot.gap.count, q24);
                start = now_ns(CLOCK_MONOTONIC);
                for (unsigned i = 0; i < reps; i++) {
                        r = history_query(h, 0, now - 60 * NSEC_PER_SEC, now, false, w);
                }
                q1 = (double)(now_ns(CLOCK_MONOTONIC) - start) / reps / 1000.0;
                printf("1m window: %u intervals, %" PRIu64 " samples, %.0f us; %u gap and %u "
                       "dd buckets\n",
                       w->intervals, w->slot.gap.count, q1, count_buckets(&w->slot.gap_hist),
                       count_buckets(&w->slot.dd_hist.neg) + count_buckets(&w->slot.dd_hist.pos));
        }
        printf("per 1 s interval: %.0f gap buckets, %.0f dd buckets (mean of the first 100)\n",
               gap_buckets / 100.0, dd_buckets / 100.0);
        printf("add_interval: %.1f us mean\n", (double)t_add / seconds / 1000.0);
        printf("history_memory_bytes: %zu (empty: %zu)\n", bytes, empty_bytes);
        printf("bytes per CPU for 24 h: %zu (%.2f MiB; budget 4 MiB)\n", bytes - empty_bytes,
               (double)(bytes - empty_bytes) / (1024.0 * 1024.0));
        history_free(h);
        free(w);
        free(slot);
        free(a);
        return bytes - empty_bytes <= 4u * 1024 * 1024 ? 0 : 2;
}

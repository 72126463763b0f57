/* Rolling history: windows against a reference the test builds from the gaps it made up, the
 * fine → coarse roll-over, retention, totals, reset, events, and the checkpoint (round trip,
 * corrupt and truncated files, a counter of another frequency). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "history.h"
#include "ref-bucket.h"
#include "rng.h"

#define S 1000000000ULL
#define MS 1000000ULL

/* A run of @n equal gaps of @v ticks, as a probe would see them one after the other. */
typedef struct Run {
        uint64_t v, n;
} Run;

#define MAX_RUNS 256

/* What the test added: the gaps themselves, from which the expected windows are built, and
 * the slot a probe would have handed over for them. */
typedef struct Added {
        uint64_t start_ns, duration_ns;
        bool stalled;
        Run runs[MAX_RUNS];
        size_t n_runs;
        ProbeSlot slot;
        AttribDelta attrib;
} Added;

/* Small retention so roll-over and retention happen within a few hundred intervals: fine
 * intervals of 1 s kept for 20 s, coarse ones of 5 s kept for 60 s (12 of them). */
static const HistoryOptions small_opt = {
        .interval_ns = 1 * S,
        .fine_retention_ns = 20 * S,
        .coarse_interval_ns = 5 * S,
        .coarse_retention_ns = 60 * S,
        .events_per_cpu = 8,
};

/* Gaps from 1000 ticks on are interruptions; the floor is 20 ticks. */
#define EVENT_TICKS 1000
#define FLOOR_TICKS 20

/* Records the run and fills the slot the way the probe's loop does, with the engine's own
 * inline adders: this is the input, not what the test compares with. */
static void add_gap(Added *a, uint64_t v, uint64_t n, uint64_t *prev, bool *have_prev)
{
        ProbeSlot *s = &a->slot;

        assert_true(a->n_runs < MAX_RUNS);
        a->runs[a->n_runs++] = (Run){.v = v, .n = n};
        for (uint64_t k = 0; k < n && k < 2; k++) {
                stats_add(&s->gap, v);
                histogram_add(&s->gap_hist, v);
                if (*have_prev) {
                        signed_stats_add(&s->dd, (int64_t)(v - *prev));
                        signed_histogram_add(&s->dd_hist, (int64_t)(v - *prev));
                }
                *prev = v;
                *have_prev = true;
        }
        /* The rest of a long run at once: the same gap, and a diff-of-diff of 0 each. */
        if (n > 2) {
                s->gap.count += n - 2;
                s->gap.sum += (unsigned __int128)v * (n - 2);
                s->gap.sumsq += (unsigned __int128)v * v * (n - 2);
                histogram_add_n(&s->gap_hist, v, n - 2);
                s->dd.count += n - 2;
                s->dd.min = s->dd.min > 0 ? 0 : s->dd.min;
                s->dd.max = s->dd.max < 0 ? 0 : s->dd.max;
                histogram_add_n(&s->dd_hist.pos, 0, n - 2);
        }
        if (v >= EVENT_TICKS) {
                s->events += n;
                s->lost_ticks += (v - FLOOR_TICKS) * n;
        }
}

/* A probe-like interval: a core around 20-30 ticks (sometimes with counts beyond 2^40, so the
 * 128-bit sums and long varints are used), a log-spread tail, now and then an extreme value;
 * a stalled interval is empty. Attribution: a few sources, sometimes one twice. */
static void make_interval(Added *a, uint64_t start_ns, uint64_t duration_ns, bool stalled)
{
        ProbeSlot *s = &a->slot;
        uint64_t prev = 0;
        bool have_prev = false;

        a->start_ns = start_ns;
        a->duration_ns = duration_ns;
        a->stalled = stalled;
        a->n_runs = 0;
        probe_slot_clear(s);
        a->attrib.n = 0;
        if (stalled) {
                return;
        }
        s->start_ticks = start_ns * 3 + rng_next() % 1000;
        s->end_ticks = s->start_ticks + duration_ns * 3;
        for (unsigned i = 0, n = 20 + (unsigned)(rng_next() % 200); i < n; i++) {
                uint64_t v;

                if (rng_next() % 6 == 0) {
                        unsigned bits = 6 + (unsigned)(rng_next() % 30);

                        v = (1ULL << bits) + rng_next() % (1ULL << bits);
                } else {
                        v = 20 + rng_next() % 12;
                }
                add_gap(a, v, 1 + (rng_next() % 8 == 0 ? rng_next() % 5 : 0), &prev, &have_prev);
        }
        if (rng_next() % 4 == 0) {
                add_gap(a, 25, (1ULL << 40) + rng_next() % 1000000, &prev, &have_prev);
        }
        if (rng_next() % 16 == 0) {
                add_gap(a, UINT64_MAX - rng_next() % 1000, 1, &prev, &have_prev);
        }
        for (unsigned i = 0, n = (unsigned)(rng_next() % 5); i < n; i++) {
                a->attrib.items[a->attrib.n++] = (AttribCount){
                        .id = (uint16_t)(rng_next() % 6),
                        .count = 1 + rng_next() % (rng_next() % 2 ? 10 : 1ULL << 40),
                };
        }
}

static int add(History *h, int cpu, Added *a)
{
        return history_add_interval(h, cpu, a->start_ns, a->duration_ns, &a->slot, a->stalled,
                                    &a->attrib);
}

static void assert_slot_equal(const ProbeSlot *x, const ProbeSlot *y)
{
        assert_int_equal(x->start_ticks, y->start_ticks);
        assert_int_equal(x->end_ticks, y->end_ticks);
        assert_int_equal(x->lost_ticks, y->lost_ticks);
        assert_int_equal(x->events, y->events);
        assert_int_equal(x->gap.count, y->gap.count);
        assert_int_equal(x->gap.min, y->gap.min);
        assert_int_equal(x->gap.max, y->gap.max);
        assert_true(x->gap.sum == y->gap.sum);
        assert_true(x->gap.sumsq == y->gap.sumsq);
        assert_int_equal(x->dd.count, y->dd.count);
        assert_int_equal(x->dd.min, y->dd.min);
        assert_int_equal(x->dd.max, y->dd.max);
        assert_true(x->dd.sum == y->dd.sum);
        assert_true(x->dd.sumsq == y->dd.sumsq);
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                assert_int_equal(x->gap_hist.counts[i], y->gap_hist.counts[i]);
                assert_int_equal(x->dd_hist.neg.counts[i], y->dd_hist.neg.counts[i]);
                assert_int_equal(x->dd_hist.pos.counts[i], y->dd_hist.pos.counts[i]);
        }
}

/* ---- the reference ------------------------------------------------------------------------ */

/* What a window must hold, computed from the runs of gaps alone with none of the engine's
 * code (no probe_slot_merge, histogram_index or stats functions). Sums are taken modulo 2^128
 * as the engine's are, so an extreme gap wraps the sum of squares the same way. */
#define REF_SOURCES 16

typedef struct Reference {
        uint64_t count, min, max;
        unsigned __int128 sum, sumsq;
        uint64_t dd_count;
        int64_t dd_min, dd_max;
        __int128 dd_sum;
        unsigned __int128 dd_sumsq;
        uint64_t events, lost_ticks, start_ticks, end_ticks;
        uint64_t gap_hist[HIST_BUCKETS], dd_neg[HIST_BUCKETS], dd_pos[HIST_BUCKETS];
        uint64_t attrib[REF_SOURCES];
        uint64_t intervals_with_samples, stalls, duration_ns, from_ns, to_ns;
} Reference;

static void ref_init(Reference *r)
{
        memset(r, 0, sizeof(*r));
        r->min = UINT64_MAX;
        r->dd_min = INT64_MAX;
        r->dd_max = INT64_MIN;
        r->from_ns = UINT64_MAX;
}

/* @n diff-of-diffs of @d. */
static void ref_dd(Reference *r, int64_t d, uint64_t n)
{
        uint64_t m = d < 0 ? -(uint64_t)d : (uint64_t)d;

        r->dd_count += n;
        r->dd_sum += (__int128)d * (__int128)n;
        r->dd_sumsq += (unsigned __int128)m * m * n;
        r->dd_min = d < r->dd_min ? d : r->dd_min;
        r->dd_max = d > r->dd_max ? d : r->dd_max;
        if (d < 0) {
                r->dd_neg[ref_bucket(m)] += n;
        } else {
                r->dd_pos[ref_bucket(m)] += n;
        }
}

static void ref_add(Reference *r, const Added *a)
{
        uint64_t prev = 0;

        r->stalls += a->stalled;
        r->duration_ns += a->duration_ns;
        r->from_ns = a->start_ns < r->from_ns ? a->start_ns : r->from_ns;
        r->to_ns =
                a->start_ns + a->duration_ns > r->to_ns ? a->start_ns + a->duration_ns : r->to_ns;
        for (size_t i = 0; i < a->attrib.n; i++) {
                assert_true(a->attrib.items[i].id < REF_SOURCES);
                r->attrib[a->attrib.items[i].id] += a->attrib.items[i].count;
        }
        if (a->n_runs == 0) {
                return;
        }
        /* An interval's ticks span from its first sample to its last. */
        if (r->intervals_with_samples++ == 0 || a->slot.start_ticks < r->start_ticks) {
                r->start_ticks = a->slot.start_ticks;
        }
        r->end_ticks = a->slot.end_ticks > r->end_ticks ? a->slot.end_ticks : r->end_ticks;
        for (size_t i = 0; i < a->n_runs; i++) {
                uint64_t v = a->runs[i].v, n = a->runs[i].n;

                r->count += n;
                r->sum += (unsigned __int128)v * n;
                r->sumsq += (unsigned __int128)v * v * n;
                r->min = v < r->min ? v : r->min;
                r->max = v > r->max ? v : r->max;
                r->gap_hist[ref_bucket(v)] += n;
                if (v >= EVENT_TICKS) {
                        r->events += n;
                        r->lost_ticks += (v - FLOOR_TICKS) * n;
                }
                /* Diff-of-diffs within the interval: the step into the run, then zeros. */
                if (i > 0) {
                        ref_dd(r, (int64_t)(v - prev), 1);
                }
                if (n > 1) {
                        ref_dd(r, 0, n - 1);
                }
                prev = v;
        }
}

/* @w must hold exactly the intervals @use marks, as the reference computes them. */
static void assert_window(const HistoryWindow *w, const Added *a, size_t n, const bool *use)
{
        Reference *r = malloc(sizeof(*r));
        size_t k = 0, nonzero = 0;

        assert_non_null(r);
        ref_init(r);
        for (size_t i = 0; i < n; i++) {
                if (use[i]) {
                        ref_add(r, &a[i]);
                        k++;
                }
        }
        assert_int_equal(w->slot.gap.count, r->count);
        assert_int_equal(w->slot.gap.min, r->min);
        assert_int_equal(w->slot.gap.max, r->max);
        assert_true(w->slot.gap.sum == r->sum);
        assert_true(w->slot.gap.sumsq == r->sumsq);
        assert_int_equal(w->slot.dd.count, r->dd_count);
        assert_int_equal(w->slot.dd.min, r->dd_min);
        assert_int_equal(w->slot.dd.max, r->dd_max);
        assert_true(w->slot.dd.sum == r->dd_sum);
        assert_true(w->slot.dd.sumsq == r->dd_sumsq);
        assert_int_equal(w->slot.events, r->events);
        assert_int_equal(w->slot.lost_ticks, r->lost_ticks);
        if (r->intervals_with_samples > 0) {
                assert_int_equal(w->slot.start_ticks, r->start_ticks);
                assert_int_equal(w->slot.end_ticks, r->end_ticks);
        }
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (w->slot.gap_hist.counts[i] != r->gap_hist[i] ||
                    w->slot.dd_hist.neg.counts[i] != r->dd_neg[i] ||
                    w->slot.dd_hist.pos.counts[i] != r->dd_pos[i]) {
                        fail_msg("bucket %u: gap %" PRIu64 " (expected %" PRIu64
                                 "), diff-of-diff -%" PRIu64 " +%" PRIu64 " (expected -%" PRIu64
                                 " +%" PRIu64 ")",
                                 i, w->slot.gap_hist.counts[i], r->gap_hist[i],
                                 w->slot.dd_hist.neg.counts[i], w->slot.dd_hist.pos.counts[i],
                                 r->dd_neg[i], r->dd_pos[i]);
                }
        }
        assert_int_equal(w->stalls, r->stalls);
        assert_int_equal(w->duration_ns, r->duration_ns);
        if (k > 0) {
                assert_int_equal(w->from_ns, r->from_ns);
                assert_int_equal(w->to_ns, r->to_ns);
        } else {
                assert_int_equal(w->intervals, 0);
        }
        for (unsigned id = 0; id < REF_SOURCES; id++) {
                nonzero += r->attrib[id] != 0;
        }
        assert_int_equal(w->attrib.n, nonzero);
        for (size_t i = 0; i < w->attrib.n; i++) {
                if (i > 0) {
                        assert_true(w->attrib.items[i - 1].id < w->attrib.items[i].id);
                }
                assert_true(w->attrib.items[i].id < REF_SOURCES);
                assert_int_equal(w->attrib.items[i].count, r->attrib[w->attrib.items[i].id]);
        }
        free(r);
}

static void mark(bool *use, size_t n, size_t lo, size_t hi)
{
        memset(use, 0, n * sizeof(*use));
        for (size_t i = lo; i <= hi && i < n; i++) {
                use[i] = true;
        }
}

static uint64_t end_of(const Added *a)
{
        return a->start_ns + a->duration_ns;
}

static void test_options(void **state)
{
        HistoryOptions o = small_opt;
        History *h = NULL;

        (void)state;
        assert_int_equal(history_new(&o, &h), 0);
        h = history_free(h);
        assert_null(h);
        assert_null(history_free(NULL));

        o.interval_ns = 0;
        assert_int_equal(history_new(&o, &h), -EINVAL);
        o = small_opt;
        o.coarse_interval_ns = 5 * S + 1; /* not a multiple */
        assert_int_equal(history_new(&o, &h), -EINVAL);
        o = small_opt;
        o.coarse_retention_ns = 4 * S; /* less than one coarse interval */
        assert_int_equal(history_new(&o, &h), -EINVAL);
        o = small_opt;
        o.fine_retention_ns = 1; /* 1 ns of 1 s intervals */
        assert_int_equal(history_new(&o, &h), -EINVAL);
        o = small_opt;
        o.fine_retention_ns = 86400 * 365 * S; /* 31 million fine intervals per CPU */
        assert_int_equal(history_new(&o, &h), -EINVAL);
        assert_int_equal(history_new(NULL, &h), -EINVAL);
}

static void test_invalid_input(void **state)
{
        Added *a = calloc(2, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryEvent ev = {.cpu = CPU_SETSIZE};
        History *h;
        cpu_set_t cpus;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        make_interval(&a[0], 100 * S, S, false);
        make_interval(&a[1], 99 * S, S, false);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), -ENOENT);
        assert_int_equal(history_query(h, -1, 0, UINT64_MAX, true, w), -ENOENT);
        assert_int_equal(add(h, -1, &a[0]), -EINVAL);
        assert_int_equal(add(h, CPU_SETSIZE, &a[0]), -EINVAL);
        assert_int_equal(history_add_interval(h, 0, 5, 0, &a[0].slot, false, NULL), -EINVAL);
        assert_int_equal(history_add_interval(h, 0, UINT64_MAX - 5, 10, &a[0].slot, false, NULL),
                         -EINVAL);
        assert_int_equal(history_add_event(h, &ev), -EINVAL);
        a[0].attrib.n = 1;
        a[0].attrib.items[0] = (AttribCount){.id = ATTRIB_MAX_SOURCES, .count = 1};
        assert_int_equal(add(h, 0, &a[0]), -EINVAL);
        a[0].attrib.items[0].id = 3;
        history_cpus(h, &cpus);
        assert_int_equal(CPU_COUNT(&cpus), 0);

        assert_int_equal(add(h, 0, &a[0]), 0);
        /* Out of order: refused, and nothing recorded. */
        assert_int_equal(add(h, 0, &a[1]), -EINVAL);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), 0);
        assert_int_equal(w->intervals, 1);
        assert_int_equal(history_query(h, 0, 10, 5, false, w), -EINVAL);
        history_cpus(h, &cpus);
        assert_int_equal(CPU_COUNT(&cpus), 1);
        assert_true(CPU_ISSET(0, &cpus));
        history_free(h);
        free(a);
        free(w);
}

/* Fine intervals only, of uneven lengths: every window is the exact merge of the intervals
 * that lie wholly inside it. */
static void test_window_exact_merge(void **state)
{
        const size_t n = 15;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryOptions o = small_opt;
        bool use[15];
        uint64_t t = 1000 * S + 123;
        History *h;

        (void)state;
        o.coarse_interval_ns = 60 * S; /* no roll-over within this test */
        o.coarse_retention_ns = 600 * S;
        assert_int_equal(history_new(&o, &h), 0);
        for (size_t i = 0; i < n; i++) {
                uint64_t d = 500 * MS + rng_next() % (1000 * MS);

                make_interval(&a[i], t, d, i == 4);
                assert_int_equal(add(h, 2, &a[i]), 0);
                t += d + (i == 7 ? 3 * S : 0); /* a hole: the probe was offline */
        }
        for (unsigned trial = 0; trial < 60; trial++) {
                size_t lo = rng_next() % n, hi = lo + rng_next() % (n - lo);
                uint64_t from = a[lo].start_ns, to = end_of(&a[hi]);

                /* Cutting into the first or last interval leaves it out. */
                if (rng_next() % 3 == 0 && lo < hi) {
                        from += 1;
                        lo++;
                }
                if (rng_next() % 3 == 0 && lo < hi) {
                        to -= 1;
                        hi--;
                }
                assert_int_equal(history_query(h, 2, from, to, false, w), 0);
                mark(use, n, lo, hi);
                assert_int_equal(w->intervals, hi - lo + 1);
                assert_window(w, a, n, use);
        }
        /* A window between two intervals is empty. */
        assert_int_equal(history_query(h, 2, a[3].start_ns + 1, end_of(&a[3]) + 1, false, w), 0);
        mark(use, n, 1, 0);
        assert_window(w, a, n, use);
        assert_int_equal(w->slot.gap.count, 0);
        /* The stalled interval counts as one stall. */
        assert_int_equal(history_query(h, 2, a[4].start_ns, end_of(&a[4]), false, w), 0);
        assert_int_equal(w->intervals, 1);
        assert_int_equal(w->stalls, 1);
        /* Another CPU is never seen. */
        assert_int_equal(history_query(h, 3, 0, UINT64_MAX, false, w), -ENOENT);
        history_free(h);
        free(a);
        free(w);
}

static uint64_t sum_samples(const Added *a, size_t lo, size_t hi)
{
        uint64_t n = 0;

        for (size_t i = lo; i <= hi; i++) {
                n += a[i].slot.gap.count;
        }
        return n;
}

/* 100 intervals of 1 s from t = 1000 s: coarse periods [1000 s, 1005 s) ... ; intervals 95-99
 * fill the period still open. Finished periods 1000 ... 1090: the newest 12 are kept
 * (intervals 35-94); the fine ring keeps intervals 80-99. The oldest fine interval starts a
 * period, so the whole history is coarse 35-79 and fine 80-99: everything kept, once. */
static void test_rollover_aligned(void **state)
{
        const size_t n = 100;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        bool use[100];
        History *h;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 1000 * S + i * S, S, i % 17 == 3);
                assert_int_equal(add(h, 0, &a[i]), 0);
        }
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), 0);
        mark(use, n, 35, 99);
        assert_window(w, a, n, use);
        assert_int_equal(w->slot.gap.count, sum_samples(a, 35, 99));
        assert_int_equal(w->intervals, 9 + 20); /* 9 coarse, 20 fine */

        /* The last minute-like span: fine intervals only. */
        assert_int_equal(history_query(h, 0, a[90].start_ns, end_of(&a[99]), false, w), 0);
        mark(use, n, 90, 99);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 10);

        /* A span of whole coarse periods older than the fine intervals. */
        assert_int_equal(history_query(h, 0, a[40].start_ns, end_of(&a[59]), false, w), 0);
        mark(use, n, 40, 59);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 4);

        /* Dropped by retention. */
        assert_int_equal(history_query(h, 0, a[0].start_ns, end_of(&a[34]), false, w), 0);
        assert_int_equal(w->intervals, 0);
        assert_int_equal(w->slot.gap.count, 0);

        /* The totals outlive the retention. */
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, true, w), 0);
        mark(use, n, 0, 99);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 100);
        history_free(h);
        free(a);
        free(w);
}

typedef struct Points {
        size_t n;
        uint64_t start[64];
        uint64_t samples[64];
        bool coarse[64];
        uint64_t attrib_total[64];
        size_t stop_after;
} Points;

static int collect(const HistoryPoint *pt, void *userdata)
{
        Points *p = userdata;
        uint64_t t = 0;

        assert_true(p->n < 64);
        p->start[p->n] = pt->start_ns;
        p->samples[p->n] = pt->samples;
        p->coarse[p->n] = pt->coarse;
        for (size_t i = 0; i < pt->attrib->n; i++) {
                t += pt->attrib->items[i].count;
        }
        p->attrib_total[p->n] = t;
        p->n++;
        return p->n == p->stop_after ? 42 : 0;
}

static uint64_t attrib_total(const Added *a, size_t lo, size_t hi)
{
        uint64_t t = 0;

        for (size_t i = lo; i <= hi; i++) {
                for (size_t k = 0; k < a[i].attrib.n; k++) {
                        t += a[i].attrib.items[k].count;
                }
        }
        return t;
}

/* 102 intervals from t = 1000.3 s: the oldest fine interval (82) is in the middle of the
 * period of intervals 80-84, whose first two are gone from the fine ring. Finished periods:
 * 1000 ... 1095, of which 1040 ... 1095 are kept (intervals 40-99). A window that holds all
 * of 80-84 takes the coarse interval and fine ones from 85; one that starts later takes fine
 * ones from 82. */
static void test_rollover_unaligned(void **state)
{
        const size_t n = 102;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        Points *pts = calloc(1, sizeof(*pts));
        bool use[102];
        History *h;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 1000 * S + 300 * MS + i * S, S, false);
                assert_int_equal(add(h, 1, &a[i]), 0);
        }
        assert_int_equal(history_query(h, 1, 0, UINT64_MAX, false, w), 0);
        mark(use, n, 40, 101);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 9 + 17);

        assert_int_equal(history_query(h, 1, a[80].start_ns, UINT64_MAX, false, w), 0);
        mark(use, n, 80, 101);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 1 + 17);

        assert_int_equal(history_query(h, 1, a[82].start_ns, UINT64_MAX, false, w), 0);
        mark(use, n, 82, 101);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 20);

        /* Interval 81 is gone from the fine ring and its period is not wholly inside. */
        assert_int_equal(history_query(h, 1, a[81].start_ns, UINT64_MAX, false, w), 0);
        mark(use, n, 82, 101);
        assert_window(w, a, n, use);

        assert_int_equal(history_query(h, 1, a[40].start_ns, end_of(&a[79]), false, w), 0);
        mark(use, n, 40, 79);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, 8);

        /* A coarse interval is taken only when wholly inside. */
        assert_int_equal(history_query(h, 1, a[41].start_ns, end_of(&a[78]), false, w), 0);
        mark(use, n, 45, 74);
        assert_window(w, a, n, use);

        /* The same intervals one by one, oldest first; stop early on request. */
        pts->stop_after = 0;
        assert_int_equal(history_foreach_point(h, 1, 0, UINT64_MAX, collect, pts), 0);
        assert_int_equal(pts->n, 9 + 17);
        for (size_t k = 0; k < 9; k++) {
                size_t first = 40 + 5 * k;

                assert_true(pts->coarse[k]);
                assert_int_equal(pts->start[k], a[first].start_ns);
                assert_int_equal(pts->samples[k], sum_samples(a, first, first + 4));
                assert_int_equal(pts->attrib_total[k], attrib_total(a, first, first + 4));
        }
        for (size_t k = 9; k < pts->n; k++) {
                size_t i = 85 + (k - 9);

                assert_false(pts->coarse[k]);
                assert_int_equal(pts->start[k], a[i].start_ns);
                assert_int_equal(pts->samples[k], a[i].slot.gap.count);
                assert_int_equal(pts->attrib_total[k], attrib_total(a, i, i));
        }
        memset(pts, 0, sizeof(*pts));
        pts->stop_after = 3;
        assert_int_equal(history_foreach_point(h, 1, 0, UINT64_MAX, collect, pts), 42);
        assert_int_equal(pts->n, 3);
        assert_int_equal(history_foreach_point(h, 7, 0, UINT64_MAX, collect, pts), -ENOENT);
        history_free(h);
        free(a);
        free(w);
        free(pts);
}

/* Long after the retention: what is kept is bounded, the totals hold everything. */
static void test_totals_and_memory(void **state)
{
        const size_t n = 400;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        size_t empty, after_one, at_100 = 0, at_200 = 0, at_400, base;
        bool *use = calloc(n, sizeof(*use));
        History *h;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        empty = history_memory_bytes(h);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 50 * S + i * S, S, false);
                assert_int_equal(add(h, 5, &a[i]), 0);
                if (i == 0) {
                        after_one = history_memory_bytes(h);
                        assert_true(after_one > empty);
                }
                if (i == 99) {
                        at_100 = history_memory_bytes(h);
                }
                if (i == 199) {
                        at_200 = history_memory_bytes(h);
                }
                for (unsigned e = 0; e < 3; e++) {
                        HistoryEvent ev = {
                                .cpu = 5, .start_ns = a[i].start_ns + e, .duration_ns = 20000};

                        assert_int_equal(history_add_event(h, &ev), 0);
                }
        }
        at_400 = history_memory_bytes(h);
        assert_true(at_100 > after_one);

        assert_int_equal(history_query(h, 5, 0, UINT64_MAX, true, w), 0);
        mark(use, n, 0, n - 1);
        assert_window(w, a, n, use);
        assert_int_equal(w->intervals, n);

        /* Reset: empty but still known; what is left is the fixed part of a CPU. */
        history_reset(h, 5);
        base = history_memory_bytes(h);
        assert_true(base < at_100);
        assert_int_equal(history_query(h, 5, 0, UINT64_MAX, true, w), 0);
        assert_int_equal(w->intervals, 0);
        assert_int_equal(w->slot.gap.count, 0);
        assert_int_equal(history_query(h, 5, 0, UINT64_MAX, false, w), 0);
        assert_int_equal(w->intervals, 0);

        /* Past the retention (about 80 s here) the encoded intervals take about the same
         * room however long the history runs; without retention 400 would take 4 times what
         * 100 take. */
        assert_true(at_200 - base < (at_100 - base) * 3 / 2);
        assert_true(at_400 - base < (at_100 - base) * 3 / 2);
        assert_true(at_400 - base > (at_100 - base) * 2 / 3);
        history_free(h);
        free(a);
        free(w);
        free(use);
}

static void test_reset(void **state)
{
        Added *a = calloc(40, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryEvent ev[4];
        bool use[20];
        History *h;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < 20; i++) {
                make_interval(&a[i], 10 * S + i * S, S, false);
                make_interval(&a[20 + i], 10 * S + i * S, S, false);
                assert_int_equal(add(h, 0, &a[i]), 0);
                assert_int_equal(add(h, 1, &a[20 + i]), 0);
                assert_int_equal(history_add_event(h, &(HistoryEvent){.cpu = (int)(i % 2),
                                                                      .start_ns = a[i].start_ns,
                                                                      .duration_ns = 1}),
                                 0);
        }
        history_reset(h, 0);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, true, w), 0);
        assert_int_equal(w->intervals, 0);
        assert_int_equal(history_query(h, 1, 0, UINT64_MAX, true, w), 0);
        mark(use, 20, 0, 19);
        assert_window(w, a + 20, 20, use);
        assert_int_equal(history_events(h, NULL, 0, 0, ev, 4), 4);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(ev[i].cpu, 1);
        }
        /* After a reset, time may start over (a restarted probe). */
        make_interval(&a[0], 5 * S, S, false);
        assert_int_equal(add(h, 0, &a[0]), 0);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), 0);
        mark(use, 20, 0, 0);
        assert_window(w, a, 20, use);

        history_reset(h, -1);
        assert_int_equal(history_events(h, NULL, 0, 0, ev, 4), 0);
        assert_int_equal(history_query(h, 1, 0, UINT64_MAX, false, w), 0);
        assert_int_equal(w->intervals, 0);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, true, w), 0);
        assert_int_equal(w->intervals, 0);
        history_free(h);
        free(a);
        free(w);
}

static void test_events(void **state)
{
        HistoryEvent ev[32];
        cpu_set_t cpus;
        History *h;
        size_t n;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0); /* 8 events per CPU */
        assert_int_equal(history_events(h, NULL, 0, 0, ev, 32), 0);
        /* CPU 0: 12 events at 10, 20 ... 120 µs, lasting 1 ... 12 µs; CPU 3: 5 at 15, 35 ... */
        for (unsigned i = 1; i <= 12; i++) {
                HistoryEvent e = {.cpu = 0,
                                  .start_ns = i * 10000,
                                  .start_real_ns = i,
                                  .duration_ns = i * 1000};

                assert_int_equal(history_add_event(h, &e), 0);
                if (i <= 5) {
                        e = (HistoryEvent){.cpu = 3,
                                           .start_ns = 15000 + (i - 1) * 20000,
                                           .duration_ns = 50000};
                        assert_int_equal(history_add_event(h, &e), 0);
                }
        }
        /* CPU 0 keeps its newest 8 (50 ... 120 µs); merged in time order, newest last. */
        n = history_events(h, NULL, 0, 0, ev, 32);
        assert_int_equal(n, 8 + 5);
        for (size_t i = 1; i < n; i++) {
                assert_true(ev[i - 1].start_ns <= ev[i].start_ns);
        }
        assert_int_equal(ev[0].start_ns, 15000);
        assert_int_equal(ev[n - 1].start_ns, 120000);
        assert_int_equal(ev[n - 1].cpu, 0);
        assert_int_equal(ev[n - 1].start_real_ns, 12);

        /* The newest 3. */
        n = history_events(h, NULL, 0, 0, ev, 3);
        assert_int_equal(n, 3);
        assert_int_equal(ev[0].start_ns, 100000);
        assert_int_equal(ev[1].start_ns, 110000);
        assert_int_equal(ev[2].start_ns, 120000);

        /* Since, min duration, CPU set. */
        n = history_events(h, NULL, 75000, 0, ev, 32);
        assert_int_equal(n, 5 + 2); /* CPU 0: 80 ... 120; CPU 3: 75, 95 */
        assert_int_equal(ev[0].start_ns, 75000);
        assert_int_equal(ev[0].cpu, 3);
        n = history_events(h, NULL, 0, 11000, ev, 32);
        assert_int_equal(n, 2 + 5);
        CPU_ZERO(&cpus);
        CPU_SET(3, &cpus);
        n = history_events(h, &cpus, 0, 0, ev, 32);
        assert_int_equal(n, 5);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(ev[i].cpu, 3);
        }
        CPU_ZERO(&cpus);
        CPU_SET(1, &cpus);
        assert_int_equal(history_events(h, &cpus, 0, 0, ev, 32), 0);
        assert_int_equal(history_events(h, NULL, 0, 0, ev, 0), 0);
        history_free(h);
}

/* --- checkpoint ------------------------------------------------------------------------- */

typedef struct Buf {
        char *data;
        size_t size;
} Buf;

static int save(History *h, AttribTable *t, uint64_t hz, Buf *b)
{
        FILE *f;
        int r;

        b->data = NULL;
        b->size = 0;
        f = open_memstream(&b->data, &b->size);
        assert_non_null(f);
        r = history_save(h, t, hz, f);
        assert_int_equal(fclose(f), 0);
        return r;
}

static int load(History *h, AttribTable *t, uint64_t hz, const void *data, size_t size)
{
        FILE *f = tmpfile();
        int r;

        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, size, f), size);
        rewind(f);
        r = history_load(h, t, hz, f);
        fclose(f);
        return r;
}

static AttribTable *table_with(const char *const *names, size_t n)
{
        AttribTable *t;

        assert_int_equal(attrib_table_new(&t), 0);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(attrib_table_id(t, names[i]), (int)i);
        }
        return t;
}

static const char *const source_names[] = {"irq:LOC",         "irq:RES", "softirq:TIMER",
                                           "ctxsw:voluntary", "irq:24",  "smi"};

#define HZ 2400000000ULL

static void assert_same_queries(History *x, History *y, int cpu)
{
        HistoryWindow *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
        const uint64_t spans[][2] = {
                {0, UINT64_MAX}, {1040 * S, 1090 * S}, {1085 * S, UINT64_MAX}, {0, 1060 * S}};

        for (size_t i = 0; i <= sizeof(spans) / sizeof(spans[0]); i++) {
                bool all = i == sizeof(spans) / sizeof(spans[0]);
                uint64_t from = all ? 0 : spans[i][0], to = all ? UINT64_MAX : spans[i][1];

                assert_int_equal(history_query(x, cpu, from, to, all, a), 0);
                assert_int_equal(history_query(y, cpu, from, to, all, b), 0);
                assert_slot_equal(&a->slot, &b->slot);
                assert_int_equal(a->from_ns, b->from_ns);
                assert_int_equal(a->to_ns, b->to_ns);
                assert_int_equal(a->duration_ns, b->duration_ns);
                assert_int_equal(a->intervals, b->intervals);
                assert_int_equal(a->stalls, b->stalls);
                assert_int_equal(a->attrib.n, b->attrib.n);
                for (size_t k = 0; k < a->attrib.n; k++) {
                        assert_int_equal(a->attrib.items[k].id, b->attrib.items[k].id);
                        assert_int_equal(a->attrib.items[k].count, b->attrib.items[k].count);
                }
        }
        free(a);
        free(b);
}

/* Two CPUs, past retention, events, a stall: the history a daemon has after a while. */
static History *make_history(Added *a, size_t n)
{
        History *h;

        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 1000 * S + 300 * MS + (i / 2) * S, S, i == 51);
                assert_int_equal(add(h, (int)(i % 2) * 3, &a[i]), 0);
                if (i % 7 == 0) {
                        HistoryEvent e = {.cpu = (int)(i % 2) * 3,
                                          .start_ns = a[i].start_ns,
                                          .start_real_ns = a[i].start_ns + 77,
                                          .duration_ns = 10000 + i};

                        assert_int_equal(history_add_event(h, &e), 0);
                }
        }
        return h;
}

static void test_save_load_roundtrip(void **state)
{
        const size_t n = 204;
        Added *a = calloc(n + 8, sizeof(*a));
        AttribTable *t = table_with(source_names, 6);
        HistoryEvent e1[64], e2[64];
        History *h = make_history(a, n), *h2;
        Buf b1, b2;
        size_t n1, n2;

        (void)state;
        assert_int_equal(save(h, t, HZ, &b1), 0);
        assert_int_equal(history_new(&small_opt, &h2), 0);
        assert_int_equal(load(h2, t, HZ, b1.data, b1.size), 0);
        assert_int_equal(attrib_table_size(t), 6);
        assert_same_queries(h, h2, 0);
        assert_same_queries(h, h2, 3);
        /* And the same as what went in: the totals of each CPU, by the reference. */
        {
                HistoryWindow *w = malloc(sizeof(*w));
                bool *use = calloc(n, sizeof(*use));

                for (int cpu = 0; cpu <= 3; cpu += 3) {
                        for (size_t i = 0; i < n; i++) {
                                use[i] = (int)(i % 2) * 3 == cpu;
                        }
                        assert_int_equal(history_query(h2, cpu, 0, UINT64_MAX, true, w), 0);
                        assert_window(w, a, n, use);
                }
                free(use);
                free(w);
        }
        n1 = history_events(h, NULL, 0, 0, e1, 64);
        n2 = history_events(h2, NULL, 0, 0, e2, 64);
        assert_int_equal(n1, n2);
        assert_true(n1 > 0);
        for (size_t i = 0; i < n1; i++) {
                assert_int_equal(e1[i].cpu, e2[i].cpu);
                assert_int_equal(e1[i].start_ns, e2[i].start_ns);
                assert_int_equal(e1[i].start_real_ns, e2[i].start_real_ns);
                assert_int_equal(e1[i].duration_ns, e2[i].duration_ns);
        }
        assert_int_equal(history_memory_bytes(h), history_memory_bytes(h2));

        /* The reloaded history is the same state: it saves to the same bytes... */
        assert_int_equal(save(h2, t, HZ, &b2), 0);
        assert_int_equal(b1.size, b2.size);
        assert_memory_equal(b1.data, b2.data, b1.size);
        free(b2.data);

        /* ...and goes on the same way, finishing the coarse period that was open. */
        for (size_t i = n; i < n + 8; i++) {
                make_interval(&a[i], 1000 * S + 300 * MS + (i / 2) * S, S, false);
                assert_int_equal(add(h, (int)(i % 2) * 3, &a[i]), 0);
                assert_int_equal(add(h2, (int)(i % 2) * 3, &a[i]), 0);
        }
        assert_same_queries(h, h2, 0);
        assert_same_queries(h, h2, 3);

        /* Loading replaces: a CPU that is not in the file is gone. */
        assert_int_equal(add(h2, 9, &a[0]), 0);
        assert_int_equal(load(h2, t, HZ, b1.data, b1.size), 0);
        {
                HistoryWindow *w = malloc(sizeof(*w));

                assert_int_equal(history_query(h2, 9, 0, UINT64_MAX, true, w), -ENOENT);
                free(w);
        }
        free(b1.data);
        history_free(h);
        history_free(h2);
        attrib_table_free(t);
        free(a);
}

/* A daemon that learned its sources in another order: counts stay with their names. */
static void test_load_remaps_sources(void **state)
{
        const char *const other[] = {"smi", "softirq:TIMER", "irq:NMI"};
        const size_t n = 60;
        Added *a = calloc(n, sizeof(*a));
        AttribTable *t = table_with(source_names, 6), *t2 = table_with(other, 3);
        HistoryWindow *w1 = malloc(sizeof(*w1)), *w2 = malloc(sizeof(*w2));
        History *h = make_history(a, n), *h2;
        Buf b;

        (void)state;
        assert_int_equal(save(h, t, HZ, &b), 0);
        assert_int_equal(history_new(&small_opt, &h2), 0);
        assert_int_equal(load(h2, t2, HZ, b.data, b.size), 0);
        assert_int_equal(attrib_table_size(t2), 3 + 4);
        for (int cpu = 0; cpu <= 3; cpu += 3) {
                for (int all = 0; all <= 1; all++) {
                        assert_int_equal(history_query(h, cpu, 0, UINT64_MAX, all, w1), 0);
                        assert_int_equal(history_query(h2, cpu, 0, UINT64_MAX, all, w2), 0);
                        assert_slot_equal(&w1->slot, &w2->slot);
                        assert_int_equal(w1->attrib.n, w2->attrib.n);
                        assert_true(w1->attrib.n > 0);
                        for (size_t k = 0; k < w1->attrib.n; k++) {
                                const char *name = attrib_table_name(t, w1->attrib.items[k].id);
                                int id2 = attrib_table_id(t2, name);

                                assert_true(id2 >= 0);
                                assert_int_equal(attrib_delta_get(&w2->attrib, (unsigned)id2),
                                                 w1->attrib.items[k].count);
                        }
                }
        }
        /* A table lacking a name the history uses cannot save it. */
        {
                AttribTable *small = table_with(source_names, 2);
                Buf x;

                assert_int_equal(save(h, small, HZ, &x), -EINVAL);
                free(x.data);
                attrib_table_free(small);
        }
        free(b.data);
        history_free(h);
        history_free(h2);
        attrib_table_free(t);
        attrib_table_free(t2);
        free(a);
        free(w1);
        free(w2);
}

static uint32_t crc32_ref(const uint8_t *p, size_t n)
{
        uint32_t crc = 0xffffffffu;

        while (n--) {
                crc ^= *p++;
                for (unsigned k = 0; k < 8; k++) {
                        crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
                }
        }
        return ~crc;
}

/* A small history, and its state as saved, to check a failed load changed nothing. */
static History *small_history(Added *a, size_t n, AttribTable *t, Buf *ret)
{
        History *h;

        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 10 * S + i * S, S, false);
                a[i].attrib.n = 1;
                a[i].attrib.items[0] = (AttribCount){.id = (uint16_t)(i % 2), .count = i + 1};
                assert_int_equal(add(h, 1, &a[i]), 0);
        }
        assert_int_equal(
                history_add_event(
                        h, &(HistoryEvent){.cpu = 1, .start_ns = 11 * S, .duration_ns = 20000}),
                0);
        assert_int_equal(save(h, t, HZ, ret), 0);
        return h;
}

static void assert_unchanged(History *h, AttribTable *t, const Buf *before)
{
        Buf now;

        assert_int_equal(save(h, t, HZ, &now), 0);
        assert_int_equal(now.size, before->size);
        assert_memory_equal(now.data, before->data, now.size);
        free(now.data);
}

static void test_load_truncated(void **state)
{
        Added *a = calloc(8, sizeof(*a));
        AttribTable *t = table_with(source_names, 2);
        Buf file, mine;
        History *h, *other;

        (void)state;
        other = small_history(a, 8, t, &file);
        /* The history loaded into has content of its own, which must survive. */
        h = small_history(a, 3, t, &mine);
        assert_true(file.size > 100);
        assert_true(crc32_ref((const uint8_t *)file.data, file.size - 4) ==
                    ((uint32_t)(uint8_t)file.data[file.size - 4] |
                     (uint32_t)(uint8_t)file.data[file.size - 3] << 8 |
                     (uint32_t)(uint8_t)file.data[file.size - 2] << 16 |
                     (uint32_t)(uint8_t)file.data[file.size - 1] << 24));
        for (size_t len = 0; len < file.size; len++) {
                assert_int_equal(load(h, t, HZ, file.data, len), -EBADMSG);
        }
        assert_unchanged(h, t, &mine);
        /* Trailing bytes are as wrong as missing ones. */
        {
                char *longer = malloc(file.size + 1);

                memcpy(longer, file.data, file.size);
                longer[file.size] = 0;
                assert_int_equal(load(h, t, HZ, longer, file.size + 1), -EBADMSG);
                free(longer);
        }
        assert_unchanged(h, t, &mine);
        assert_int_equal(load(h, t, HZ, file.data, file.size), 0);
        assert_unchanged(h, t, &file);
        history_free(h);
        history_free(other);
        attrib_table_free(t);
        free(file.data);
        free(mine.data);
        free(a);
}

static void test_load_corrupt(void **state)
{
        Added *a = calloc(8, sizeof(*a));
        AttribTable *t = table_with(source_names, 2);
        Buf file, mine;
        History *h, *other;
        uint8_t *p;

        (void)state;
        other = small_history(a, 8, t, &file);
        h = small_history(a, 3, t, &mine);
        p = (uint8_t *)file.data;
        /* Every byte, flipped by a random non-zero mask. */
        for (size_t pos = 0; pos < file.size; pos++) {
                uint8_t mask = (uint8_t)(1 + rng_next() % 255);

                p[pos] ^= mask;
                assert_int_equal(load(h, t, HZ, p, file.size), -EBADMSG);
                p[pos] ^= mask;
        }
        /* Random single bits, and random bursts of bytes. */
        for (unsigned trial = 0; trial < 2000; trial++) {
                size_t pos = rng_next() % file.size, len = 1 + rng_next() % 8;
                uint8_t saved[8];

                if (pos + len > file.size) {
                        len = file.size - pos;
                }
                memcpy(saved, p + pos, len);
                if (trial % 2) {
                        p[pos] ^= (uint8_t)(1u << (rng_next() % 8));
                } else {
                        for (size_t k = 0; k < len; k++) {
                                p[pos + k] = (uint8_t)rng_next();
                        }
                }
                if (memcmp(saved, p + pos, len) != 0) {
                        assert_int_equal(load(h, t, HZ, p, file.size), -EBADMSG);
                }
                memcpy(p + pos, saved, len);
        }
        /* A foreign file. */
        assert_int_equal(load(h, t, HZ, "not a checkpoint at all, but long enough", 40), -EBADMSG);
        assert_unchanged(h, t, &mine);
        assert_int_equal(load(h, t, HZ, file.data, file.size), 0);
        history_free(h);
        history_free(other);
        attrib_table_free(t);
        free(file.data);
        free(mine.data);
        free(a);
}

static void fix_crc(uint8_t *p, size_t size)
{
        uint32_t crc = crc32_ref(p, size - 4);

        for (unsigned i = 0; i < 4; i++) {
                p[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        }
}

/* Damage the checksum cannot see (the file was written wrong, not corrupted on disk): every
 * length, index and order is still checked, nothing crashes or leaks, and a refused file
 * changes nothing. */
static void test_load_crafted(void **state)
{
        Added *a = calloc(8, sizeof(*a));
        AttribTable *t = table_with(source_names, 2);
        HistoryWindow *w = malloc(sizeof(*w));
        Buf file, mine;
        History *h, *other;
        uint8_t *p;
        unsigned refused = 0;

        (void)state;
        other = small_history(a, 8, t, &file);
        h = small_history(a, 3, t, &mine);
        p = malloc(file.size);
        for (unsigned trial = 0; trial < 3000; trial++) {
                size_t size = file.size;
                int r;

                memcpy(p, file.data, size);
                for (unsigned k = 0, n = 1 + (unsigned)(rng_next() % 4); k < n; k++) {
                        size_t pos = 36 + rng_next() % (size - 40); /* after magic, hz, boot id */

                        p[pos] = trial % 3 ? (uint8_t)rng_next() : (uint8_t)(p[pos] ^ 0x80);
                }
                if (trial % 5 == 0) {
                        size = 40 + rng_next() % (file.size - 40); /* cut, then checksummed */
                }
                fix_crc(p, size);
                r = load(h, t, HZ, p, size);
                if (r == 0) {
                        /* Accepted: it must be a usable history. */
                        cpu_set_t cpus;

                        history_cpus(h, &cpus);
                        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                                if (CPU_ISSET(cpu, &cpus)) {
                                        assert_int_equal(
                                                history_query(h, cpu, 0, UINT64_MAX, false, w), 0);
                                        assert_int_equal(
                                                history_query(h, cpu, 0, UINT64_MAX, true, w), 0);
                                }
                        }
                        attrib_table_free(t);
                        t = table_with(source_names, 2);
                        assert_int_equal(load(h, t, HZ, mine.data, mine.size), 0);
                } else {
                        assert_int_equal(r, -EBADMSG);
                        refused++;
                }
                assert_unchanged(h, t, &mine);
        }
        assert_true(refused > 1000);
        history_free(h);
        history_free(other);
        attrib_table_free(t);
        free(file.data);
        free(mine.data);
        free(a);
        free(w);
        free(p);
}

/* Checkpoints whose ticks or times would mean something else here. */
static void test_load_stale(void **state)
{
        Added *a = calloc(8, sizeof(*a));
        AttribTable *t = table_with(source_names, 2);
        Buf file, mine;
        History *h, *other;
        uint8_t *p;
        bool boot_known = false;

        (void)state;
        other = small_history(a, 8, t, &file);
        h = small_history(a, 3, t, &mine);
        assert_int_equal(load(h, t, HZ + HZ / 1000000 * 150, file.data, file.size), -ESTALE);
        assert_int_equal(load(h, t, HZ - HZ / 1000000 * 150, file.data, file.size), -ESTALE);
        assert_int_equal(load(h, t, HZ / 2, file.data, file.size), -ESTALE);
        assert_unchanged(h, t, &mine);
        /* Within 100 ppm: the same counter, calibrated again. */
        assert_int_equal(load(h, t, HZ + HZ / 1000000 * 90, file.data, file.size), 0);
        assert_unchanged(h, t, &file);

        /* Another boot: CLOCK_MONOTONIC started over. The boot id follows magic, version and
         * hz; change it and make the checksum right again. */
        p = (uint8_t *)file.data;
        for (size_t i = 20; i < 36; i++) {
                boot_known = boot_known || p[i] != 0;
        }
        if (boot_known) {
                p[20] ^= 0x5a;
                fix_crc(p, file.size);
                assert_int_equal(load(other, t, HZ, p, file.size), -ESTALE);
        } else {
                print_message("skipped: a checkpoint of another boot: no boot id readable "
                              "here\n");
        }
        history_free(h);
        history_free(other);
        attrib_table_free(t);
        free(file.data);
        free(mine.data);
        free(a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_options),
                cmocka_unit_test(test_invalid_input),
                cmocka_unit_test(test_window_exact_merge),
                cmocka_unit_test(test_rollover_aligned),
                cmocka_unit_test(test_rollover_unaligned),
                cmocka_unit_test(test_totals_and_memory),
                cmocka_unit_test(test_reset),
                cmocka_unit_test(test_events),
                cmocka_unit_test(test_save_load_roundtrip),
                cmocka_unit_test(test_load_remaps_sources),
                cmocka_unit_test(test_load_truncated),
                cmocka_unit_test(test_load_corrupt),
                cmocka_unit_test(test_load_crafted),
                cmocka_unit_test(test_load_stale),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Rolling history: every standard window, after every kind of step (retention roll-over,
 * gaps, stalls, reset, checkpoint and restore), against a reference the test merges itself
 * from the gaps it made up, at the resolution history.h promises; arbitrary ranges; the
 * events by duration band and what each band dropped; and the checkpoint (round trip,
 * corrupt, truncated and crafted files, a counter of another frequency, another version, and
 * a real version-1 checkpoint of the previous daemon migrated against what that daemon
 * answered). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "histogram-internal.h"
#include "history-internal.h"
#include "history/ref-coarse.h"
#include "rng.h"
#include "util.h"

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
        slot_clear(s);
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
 * code (no slot_merge, histogram_index or stats functions). Sums are taken modulo 2^128
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
        unsigned intervals; /* stored intervals the window merges (a coarse one counts once) */
        bool coarse;        /* some of it is kept at the coarse resolution */
} Reference;

/* How an interval is expected in a window: not at all, at the probe's resolution, or at the
 * coarse one (8 sub-buckets per power of two). */
enum { OUT = 0, FINE, COARSE };

static unsigned ref_bucket_at(uint64_t v, int res)
{
        return res == COARSE ? ref_coarse_bucket(v) : ref_bucket(v);
}

static void ref_init(Reference *r)
{
        memset(r, 0, sizeof(*r));
        r->min = UINT64_MAX;
        r->dd_min = INT64_MAX;
        r->dd_max = INT64_MIN;
        r->from_ns = UINT64_MAX;
}

/* @n diff-of-diffs of @d. */
static void ref_dd(Reference *r, int64_t d, uint64_t n, int res)
{
        uint64_t m = d < 0 ? -(uint64_t)d : (uint64_t)d;

        r->dd_count += n;
        r->dd_sum += (__int128)d * (__int128)n;
        r->dd_sumsq += (unsigned __int128)m * m * n;
        r->dd_min = d < r->dd_min ? d : r->dd_min;
        r->dd_max = d > r->dd_max ? d : r->dd_max;
        if (d < 0) {
                r->dd_neg[ref_bucket_at(m, res)] += n;
        } else {
                r->dd_pos[ref_bucket_at(m, res)] += n;
        }
}

/* An interval as the reference reads it: the runs of gaps it was made of, and its meta-data.
 * The windows test keeps thousands of these (the slots it fed are not kept). */
typedef struct Fed {
        uint64_t start_ns, duration_ns, start_ticks, end_ticks;
        bool stalled;
        size_t n_runs;
        const Run *runs;
        size_t n_attrib;
        AttribCount attrib[8];
} Fed;

static Fed fed_of(const Added *a)
{
        Fed f = {
                .start_ns = a->start_ns,
                .duration_ns = a->duration_ns,
                .start_ticks = a->slot.start_ticks,
                .end_ticks = a->slot.end_ticks,
                .stalled = a->stalled,
                .n_runs = a->n_runs,
                .runs = a->runs,
                .n_attrib = a->attrib.n,
        };

        assert_true(a->attrib.n <= 8);
        memcpy(f.attrib, a->attrib.items, a->attrib.n * sizeof(AttribCount));
        return f;
}

/* Adds the interval @a at resolution @res (FINE or COARSE). */
static void ref_add_fed(Reference *r, const Fed *a, int res)
{
        uint64_t prev = 0;

        r->coarse = r->coarse || res == COARSE;
        r->stalls += a->stalled;
        r->duration_ns += a->duration_ns;
        r->from_ns = a->start_ns < r->from_ns ? a->start_ns : r->from_ns;
        r->to_ns =
                a->start_ns + a->duration_ns > r->to_ns ? a->start_ns + a->duration_ns : r->to_ns;
        for (size_t i = 0; i < a->n_attrib; i++) {
                assert_true(a->attrib[i].id < REF_SOURCES);
                r->attrib[a->attrib[i].id] += a->attrib[i].count;
        }
        if (a->n_runs == 0) {
                return;
        }
        /* An interval's ticks span from its first sample to its last. */
        if (r->intervals_with_samples++ == 0 || a->start_ticks < r->start_ticks) {
                r->start_ticks = a->start_ticks;
        }
        r->end_ticks = a->end_ticks > r->end_ticks ? a->end_ticks : r->end_ticks;
        for (size_t i = 0; i < a->n_runs; i++) {
                uint64_t v = a->runs[i].v, n = a->runs[i].n;

                r->count += n;
                r->sum += (unsigned __int128)v * n;
                r->sumsq += (unsigned __int128)v * v * n;
                r->min = v < r->min ? v : r->min;
                r->max = v > r->max ? v : r->max;
                r->gap_hist[ref_bucket_at(v, res)] += n;
                if (v >= EVENT_TICKS) {
                        r->events += n;
                        r->lost_ticks += (v - FLOOR_TICKS) * n;
                }
                /* Diff-of-diffs within the interval: the step into the run, then zeros. */
                if (i > 0) {
                        ref_dd(r, (int64_t)(v - prev), 1, res);
                }
                if (n > 1) {
                        ref_dd(r, 0, n - 1, res);
                }
                prev = v;
        }
}

static void ref_add(Reference *r, const Added *a, int res)
{
        Fed f = fed_of(a);

        ref_add_fed(r, &f, res);
}

/* @dst += @src: the merge of two sets of intervals. */
static void ref_merge(Reference *dst, const Reference *src)
{
        dst->count += src->count;
        dst->sum += src->sum;
        dst->sumsq += src->sumsq;
        dst->min = src->min < dst->min ? src->min : dst->min;
        dst->max = src->max > dst->max ? src->max : dst->max;
        dst->dd_count += src->dd_count;
        dst->dd_sum += src->dd_sum;
        dst->dd_sumsq += src->dd_sumsq;
        dst->dd_min = src->dd_min < dst->dd_min ? src->dd_min : dst->dd_min;
        dst->dd_max = src->dd_max > dst->dd_max ? src->dd_max : dst->dd_max;
        dst->events += src->events;
        dst->lost_ticks += src->lost_ticks;
        if (src->intervals_with_samples > 0 &&
            (dst->intervals_with_samples == 0 || src->start_ticks < dst->start_ticks)) {
                dst->start_ticks = src->start_ticks;
        }
        dst->end_ticks = src->end_ticks > dst->end_ticks ? src->end_ticks : dst->end_ticks;
        dst->intervals_with_samples += src->intervals_with_samples;
        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                dst->gap_hist[b] += src->gap_hist[b];
                dst->dd_neg[b] += src->dd_neg[b];
                dst->dd_pos[b] += src->dd_pos[b];
        }
        for (unsigned id = 0; id < REF_SOURCES; id++) {
                dst->attrib[id] += src->attrib[id];
        }
        dst->stalls += src->stalls;
        dst->duration_ns += src->duration_ns;
        dst->from_ns = src->from_ns < dst->from_ns ? src->from_ns : dst->from_ns;
        dst->to_ns = src->to_ns > dst->to_ns ? src->to_ns : dst->to_ns;
        dst->coarse = dst->coarse || src->coarse;
}

/* @w must hold exactly what @r holds; @what names the window in a failure. */
static void assert_ref(const char *what, const HistoryWindow *w, const Reference *r)
{
        size_t nonzero = 0;

        if (w->slot.gap.count != r->count || w->intervals != r->intervals ||
            w->duration_ns != r->duration_ns) {
                fail_msg("%s: %" PRIu64 " samples in %u intervals (%" PRIu64
                         " ns), expected %" PRIu64 " in %u (%" PRIu64 " ns)",
                         what, w->slot.gap.count, w->intervals, w->duration_ns, r->count,
                         r->intervals, r->duration_ns);
        }
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
                        fail_msg("%s: bucket %u: gap %" PRIu64 " (expected %" PRIu64
                                 "), diff-of-diff -%" PRIu64 " +%" PRIu64 " (expected -%" PRIu64
                                 " +%" PRIu64 ")",
                                 what, i, w->slot.gap_hist.counts[i], r->gap_hist[i],
                                 w->slot.dd_hist.neg.counts[i], w->slot.dd_hist.pos.counts[i],
                                 r->dd_neg[i], r->dd_pos[i]);
                }
        }
        assert_int_equal(w->hist_sub_bits, r->coarse ? 3 : 5);
        assert_int_equal(w->stalls, r->stalls);
        if (r->intervals > 0) {
                assert_int_equal(w->from_ns, r->from_ns);
                assert_int_equal(w->to_ns, r->to_ns);
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
}

/* @w must hold exactly the intervals @res marks (OUT, FINE or COARSE each), as @stored
 * intervals. */
static void assert_window(const HistoryWindow *w, const Added *a, size_t n, const uint8_t *res,
                          unsigned stored)
{
        Reference *r = malloc(sizeof(*r));

        assert_non_null(r);
        ref_init(r);
        for (size_t i = 0; i < n; i++) {
                if (res[i] != OUT) {
                        ref_add(r, &a[i], res[i]);
                }
        }
        r->intervals = stored;
        assert_ref("window", w, r);
        free(r);
}

/* Marks intervals @lo..@hi as @kind, the others as OUT. */
static void mark(uint8_t *res, size_t n, size_t lo, size_t hi, int kind)
{
        memset(res, OUT, n);
        for (size_t i = lo; i <= hi && i < n; i++) {
                res[i] = (uint8_t)kind;
        }
}

/* Marks intervals @lo..@hi as @kind, leaving the others. */
static void mark_more(uint8_t *res, size_t lo, size_t hi, int kind)
{
        for (size_t i = lo; i <= hi; i++) {
                res[i] = (uint8_t)kind;
        }
}

static uint64_t end_of(const Added *a)
{
        return a->start_ns + a->duration_ns;
}

/* ---- construction, input ------------------------------------------------------------------ */

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
        o = small_opt;
        o.events_per_cpu = (1u << 22) + 1;
        assert_int_equal(history_new(&o, &h), -EINVAL);
        assert_int_equal(history_new(NULL, &h), -EINVAL);
}

static void test_invalid_input(void **state)
{
        Added *a = calloc(2, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryEvent ev = {.cpu = CPU_SETSIZE};
        HistoryBand bands[HISTORY_BANDS];
        uint8_t res[2];
        History *h;
        cpu_set_t cpus;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        make_interval(&a[0], 100 * S, S, false);
        make_interval(&a[1], 99 * S, S, false);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), -ENOENT);
        assert_int_equal(history_query(h, -1, 0, UINT64_MAX, true, w), -ENOENT);
        assert_int_equal(history_window(h, 0, HISTORY_SPAN_1M, w), -ENOENT);
        assert_int_equal(history_window(h, 0, HISTORY_SPAN_MAX, w), -EINVAL);
        assert_int_equal(history_event_bands(h, 0, bands), -ENOENT);
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
        mark(res, 2, 0, 0, FINE);
        assert_window(w, a, 2, res, 1);
        assert_int_equal(history_window(h, 0, HISTORY_SPAN_10S, w), 0);
        assert_window(w, a, 2, res, 1);
        assert_int_equal(history_query(h, 0, 10, 5, false, w), -EINVAL);
        history_cpus(h, &cpus);
        assert_int_equal(CPU_COUNT(&cpus), 1);
        assert_true(CPU_ISSET(0, &cpus));
        assert_string_equal(history_span_name(HISTORY_SPAN_24H), "24h");
        assert_null(history_span_name(HISTORY_SPAN_MAX));
        {
                HistorySpan span;

                assert_int_equal(history_span_from_name("5m", &span), 0);
                assert_int_equal(span, HISTORY_SPAN_5M);
                assert_int_equal(history_span_from_name("2m", &span), -EINVAL);
                assert_int_equal(history_span_from_name(NULL, &span), -EINVAL);
        }
        assert_true(history_span_ns(HISTORY_SPAN_10S) == 10 * NSEC_PER_SEC);
        assert_true(history_span_ns(HISTORY_SPAN_24H) == NSEC_PER_DAY);
        assert_true(history_span_ns(HISTORY_SPAN_ALL) == 0);
        assert_true(history_span_ns(HISTORY_SPAN_MAX) == 0);
        history_free(h);
        free(a);
        free(w);
}

/* ---- arbitrary ranges (history_query) ----------------------------------------------------- */

/* How a fine interval of @a is kept once @newest is the newest: coarse once it has left the
 * longest window kept fine (10 s with small_opt: it starts before newest start + 1 s - 10 s). */
static int fine_res(const Added *a, const Added *newest)
{
        return a->start_ns + 10 * S < newest->start_ns + S ? COARSE : FINE;
}

/* Fine intervals only, of uneven lengths: every window is the exact merge of the intervals
 * that lie wholly inside it, at the resolution each is kept at. */
static void test_window_exact_merge(void **state)
{
        const size_t n = 15;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryOptions o = small_opt;
        uint8_t res[15];
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
                memset(res, OUT, n);
                for (size_t i = lo; i <= hi; i++) {
                        res[i] = (uint8_t)fine_res(&a[i], &a[n - 1]);
                }
                assert_window(w, a, n, res, (unsigned)(hi - lo + 1));
        }
        /* A window between two intervals is empty. */
        assert_int_equal(history_query(h, 2, a[3].start_ns + 1, end_of(&a[3]) + 1, false, w), 0);
        memset(res, OUT, n);
        assert_window(w, a, n, res, 0);
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
 * (intervals 35-94); the fine ring keeps intervals 80-99, of which 80-89 have left the 10 s
 * window and are kept coarse. The oldest fine interval starts a period, so the whole history
 * is coarse 35-79 and fine 80-99: everything kept, once. */
static void test_rollover_aligned(void **state)
{
        const size_t n = 100;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        uint8_t res[100];
        History *h;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 1000 * S + i * S, S, i % 17 == 3);
                assert_int_equal(add(h, 0, &a[i]), 0);
        }
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), 0);
        mark(res, n, 35, 89, COARSE);
        mark_more(res, 90, 99, FINE);
        assert_window(w, a, n, res, 9 + 20); /* 9 coarse, 20 fine */
        assert_int_equal(w->slot.gap.count, sum_samples(a, 35, 99));

        /* The last 10 s: fine intervals only, at full resolution. */
        assert_int_equal(history_query(h, 0, a[90].start_ns, end_of(&a[99]), false, w), 0);
        mark(res, n, 90, 99, FINE);
        assert_window(w, a, n, res, 10);

        /* A span of whole coarse periods older than the fine intervals. */
        assert_int_equal(history_query(h, 0, a[40].start_ns, end_of(&a[59]), false, w), 0);
        mark(res, n, 40, 59, COARSE);
        assert_window(w, a, n, res, 4);

        /* Dropped by retention. */
        assert_int_equal(history_query(h, 0, a[0].start_ns, end_of(&a[34]), false, w), 0);
        assert_int_equal(w->intervals, 0);
        assert_int_equal(w->slot.gap.count, 0);

        /* The totals outlive the retention, at full resolution. */
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, true, w), 0);
        mark(res, n, 0, 99, FINE);
        assert_window(w, a, n, res, 100);
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
 * ones from 82. Fine intervals up to 91 have left the 10 s window (kept coarse). */
static void test_rollover_unaligned(void **state)
{
        const size_t n = 102;
        Added *a = calloc(n, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        Points *pts = calloc(1, sizeof(*pts));
        uint8_t res[102];
        History *h;

        (void)state;
        assert_int_equal(history_new(&small_opt, &h), 0);
        for (size_t i = 0; i < n; i++) {
                make_interval(&a[i], 1000 * S + 300 * MS + i * S, S, false);
                assert_int_equal(add(h, 1, &a[i]), 0);
        }
        assert_int_equal(history_query(h, 1, 0, UINT64_MAX, false, w), 0);
        mark(res, n, 40, 91, COARSE);
        mark_more(res, 92, 101, FINE);
        assert_window(w, a, n, res, 9 + 17);

        assert_int_equal(history_query(h, 1, a[80].start_ns, UINT64_MAX, false, w), 0);
        mark(res, n, 80, 91, COARSE);
        mark_more(res, 92, 101, FINE);
        assert_window(w, a, n, res, 1 + 17);

        assert_int_equal(history_query(h, 1, a[82].start_ns, UINT64_MAX, false, w), 0);
        mark(res, n, 82, 91, COARSE);
        mark_more(res, 92, 101, FINE);
        assert_window(w, a, n, res, 20);

        /* Interval 81 is gone from the fine ring and its period is not wholly inside. */
        assert_int_equal(history_query(h, 1, a[81].start_ns, UINT64_MAX, false, w), 0);
        assert_window(w, a, n, res, 20);

        assert_int_equal(history_query(h, 1, a[40].start_ns, end_of(&a[79]), false, w), 0);
        mark(res, n, 40, 79, COARSE);
        assert_window(w, a, n, res, 8);

        /* A coarse interval is taken only when wholly inside. */
        assert_int_equal(history_query(h, 1, a[41].start_ns, end_of(&a[78]), false, w), 0);
        mark(res, n, 45, 74, COARSE);
        assert_window(w, a, n, res, 6);

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
        uint8_t *res = calloc(n, sizeof(*res));
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
        assert_true(history_event_bytes(h) > 0 && history_event_bytes(h) < at_400);

        assert_int_equal(history_query(h, 5, 0, UINT64_MAX, true, w), 0);
        mark(res, n, 0, n - 1, FINE);
        assert_window(w, a, n, res, (unsigned)n);

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
        free(res);
}

static void test_reset(void **state)
{
        Added *a = calloc(40, sizeof(*a));
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryBand bands[HISTORY_BANDS];
        HistoryEvent ev[4];
        uint8_t res[20];
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
        for (HistorySpan span = 0; span < HISTORY_SPAN_MAX; span++) {
                assert_int_equal(history_window(h, 0, span, w), 0);
                assert_int_equal(w->intervals, 0);
                assert_int_equal(w->slot.gap.count, 0);
                assert_int_equal(w->attrib.n, 0);
        }
        assert_int_equal(history_event_bands(h, 0, bands), 0);
        assert_int_equal(bands[0].kept + bands[0].dropped, 0);
        assert_int_equal(history_query(h, 1, 0, UINT64_MAX, true, w), 0);
        mark(res, 20, 0, 19, FINE);
        assert_window(w, a + 20, 20, res, 20);
        assert_int_equal(history_events(h, NULL, 0, 0, ev, 4), 4);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(ev[i].cpu, 1);
        }
        /* After a reset, time may start over (a restarted probe). */
        make_interval(&a[0], 5 * S, S, false);
        assert_int_equal(add(h, 0, &a[0]), 0);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, false, w), 0);
        mark(res, 20, 0, 0, FINE);
        assert_window(w, a, 20, res, 1);
        assert_int_equal(history_window(h, 0, HISTORY_SPAN_10S, w), 0);
        assert_window(w, a, 20, res, 1);

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

/* ---- the standard windows ----------------------------------------------------------------- */

/* Retentions of a few minutes, so that both rings roll over many times: fine intervals of 1 s
 * kept 60 s (the 10s and 1m windows are fine ones), coarse ones of 10 s kept 30 min (the 5m,
 * 1h and 24h windows are long ones; the last two reach the end of that retention). */
static const HistoryOptions win_opt = {
        .interval_ns = 1 * S,
        .fine_retention_ns = 60 * S,
        .coarse_interval_ns = 10 * S,
        .coarse_retention_ns = 1800 * S,
        .events_per_cpu = 8,
};
#define WIN_FINE 60    /* fine intervals kept */
#define WIN_COARSE 180 /* coarse intervals kept */
#define WIN_MAX 3000   /* intervals fed in a row, at most */

static const uint64_t span_ns[HISTORY_SPAN_ALL] = {10 * S, 60 * S, 300 * S, 3600 * S, 86400 * S};

/* A finished coarse period as the test sums it: its intervals at the coarse resolution. */
typedef struct Period {
        uint64_t index; /* start / coarse interval */
        uint64_t first_start_ns;
        Reference ref;
} Period;

/* What the test fed since the last reset, and its own sums. */
typedef struct Follow {
        History *h;
        Added *scratch;
        Fed *fed;  /* every interval since the last reset */
        Run *runs; /* their runs, MAX_RUNS each */
        size_t n;
        Period *closed; /* ring of the newest WIN_COARSE finished periods */
        size_t n_closed;
        Period *open;      /* the period being filled */
        Reference *all;    /* everything since the reset */
        Reference *expect; /* scratch */
        HistoryWindow *w;
        unsigned checks;
} Follow;

static void follow_reset(Follow *f)
{
        f->n = 0;
        f->n_closed = 0;
        ref_init(&f->open->ref);
        f->open->index = UINT64_MAX;
        ref_init(f->all);
}

/* Feeds one interval to the history and to the test's own sums. */
static void follow_add(Follow *f, uint64_t start, uint64_t duration, bool stalled)
{
        uint64_t p = start / win_opt.coarse_interval_ns;
        Fed *fed;

        assert_true(f->n < WIN_MAX);
        make_interval(f->scratch, start, duration, stalled);
        assert_int_equal(add(f->h, 0, f->scratch), 0);
        fed = &f->fed[f->n];
        *fed = fed_of(f->scratch);
        memcpy(&f->runs[f->n * MAX_RUNS], f->scratch->runs, fed->n_runs * sizeof(Run));
        fed->runs = &f->runs[f->n * MAX_RUNS];
        f->n++;
        ref_add_fed(f->all, fed, FINE);
        if (f->open->index != p) {
                /* An interval of a later period closes the open one. */
                if (f->open->index != UINT64_MAX) {
                        f->closed[f->n_closed % WIN_COARSE] = *f->open;
                        f->n_closed++;
                }
                ref_init(&f->open->ref);
                f->open->index = p;
                f->open->first_start_ns = start;
        }
        ref_add_fed(&f->open->ref, fed, COARSE);
        f->open->ref.intervals++;
}

/* What window @span must hold by history.h's rule, from the test's own sums: E = newest start
 * + 1 s; a fine window the kept fine intervals that start at or after E - span; a long one the
 * kept finished periods whose first interval starts at or after E - span, and the open
 * period, coarse. */
static void follow_expect(Follow *f, HistorySpan span, Reference *r)
{
        uint64_t e, cutoff;

        if (span == HISTORY_SPAN_ALL) {
                *r = *f->all;
                r->intervals = (unsigned)f->n;
                return;
        }
        ref_init(r);
        r->coarse = span_ns[span] > win_opt.fine_retention_ns;
        if (f->n == 0) {
                return;
        }
        e = f->fed[f->n - 1].start_ns + win_opt.interval_ns;
        cutoff = e > span_ns[span] ? e - span_ns[span] : 0;
        if (!r->coarse) {
                for (size_t i = f->n > WIN_FINE ? f->n - WIN_FINE : 0; i < f->n; i++) {
                        if (f->fed[i].start_ns >= cutoff) {
                                ref_add_fed(r, &f->fed[i], FINE);
                                r->intervals++;
                        }
                }
                return;
        }
        for (size_t k = f->n_closed > WIN_COARSE ? f->n_closed - WIN_COARSE : 0; k < f->n_closed;
             k++) {
                const Period *p = &f->closed[k % WIN_COARSE];

                if (p->first_start_ns >= cutoff) {
                        ref_merge(r, &p->ref);
                        r->intervals++;
                }
        }
        ref_merge(r, &f->open->ref);
        r->intervals += f->open->ref.intervals;
}

static void follow_check(Follow *f, const char *when)
{
        uint64_t max, to;
        char what[96];

        for (HistorySpan span = 0; span < HISTORY_SPAN_MAX; span++) {
                snprintf(what, sizeof(what), "%s, %zu fed, window %s", when, f->n,
                         history_span_name(span));
                assert_int_equal(history_window(f->h, 0, span, f->w), 0);
                follow_expect(f, span, f->expect);
                assert_ref(what, f->w, f->expect);
                /* GetStatus' read of the worst gap alone. */
                assert_int_equal(history_window_max_gap(f->h, 0, span, &max, &to), 0);
                assert_int_equal(max, f->expect->count > 0 ? f->expect->max : 0);
                if (f->expect->intervals > 0) {
                        assert_int_equal(to, f->expect->to_ns);
                }
        }
        f->checks++;
}

/* The history saved and loaded into a new one, which goes on in its place. */
static void follow_restore(Follow *f)
{
        AttribTable *t;
        char *data = NULL;
        size_t size = 0;
        History *h2;
        FILE *out = open_memstream(&data, &size), *in;

        assert_int_equal(attrib_table_new(&t), 0);
        for (unsigned i = 0; i < REF_SOURCES; i++) {
                char name[16];

                snprintf(name, sizeof(name), "irq:%u", i);
                assert_int_equal(attrib_table_id(t, name), (int)i);
        }
        assert_non_null(out);
        assert_int_equal(history_save(f->h, t, 1000000000ULL, out), 0);
        assert_int_equal(fclose(out), 0);
        in = fmemopen(data, size, "r");
        assert_int_equal(history_new(&win_opt, &h2), 0);
        assert_int_equal(history_load(h2, t, 1000000000ULL, in), 0);
        fclose(in);
        free(data);
        attrib_table_free(t);
        history_free(f->h);
        f->h = h2;
}

/* Every standard window against the test's own merge, after single intervals, stalls, short
 * and long intervals, gaps of seconds to beyond every retention, resets and restores from a
 * checkpoint, through many roll-overs of both rings: exact counts, sums, minima and maxima,
 * each bucket at the window's resolution, the edges, stalls and attribution. */
static void test_windows_follow(void **state)
{
        Follow f = {0};
        uint64_t t = 5000 * S + 123456789;

        (void)state;
        rng_seed(0xf0110e);
        f.scratch = calloc(1, sizeof(*f.scratch));
        f.fed = calloc(WIN_MAX, sizeof(*f.fed));
        f.runs = calloc((size_t)WIN_MAX * MAX_RUNS, sizeof(*f.runs));
        f.closed = calloc(WIN_COARSE, sizeof(*f.closed));
        f.open = calloc(1, sizeof(*f.open));
        f.all = malloc(sizeof(*f.all));
        f.expect = malloc(sizeof(*f.expect));
        f.w = malloc(sizeof(*f.w));
        assert_true(f.scratch && f.fed && f.runs && f.closed && f.open && f.all && f.expect && f.w);
        assert_int_equal(history_new(&win_opt, &f.h), 0);
        follow_reset(&f);
        for (unsigned step = 0; step < 2 * WIN_MAX - 200; step++) {
                uint64_t d = rng_next() % 10 == 0 ? 300 * MS + rng_next() % (1300 * MS) : S;
                bool special = false;

                if (step == WIN_MAX - 200) {
                        /* A reset: the history starts over, and so does the test. */
                        history_reset(f.h, 0);
                        follow_reset(&f);
                        follow_check(&f, "after a reset");
                        t -= 3600 * S; /* time may start over after a reset */
                }
                follow_add(&f, t, d, rng_next() % 20 == 0);
                t += d + rng_next() % 1000;
                if (rng_next() % 150 == 0) {
                        t += (5 + rng_next() % 120) * S; /* the probe was away a while */
                        special = true;
                }
                if (rng_next() % 700 == 0) {
                        t += (200 + rng_next() % 4000) * S; /* ...or very long */
                        special = true;
                }
                if (step % 700 == 350) {
                        follow_restore(&f);
                        follow_check(&f, "restored");
                        continue;
                }
                if (special || rng_next() % 10 == 0) {
                        follow_check(&f, special ? "before a gap" : "as it goes");
                }
        }
        print_message("%u checks of every window\n", f.checks);
        history_free(f.h);
        free(f.scratch);
        free(f.fed);
        free(f.runs);
        free(f.closed);
        free(f.open);
        free(f.all);
        free(f.expect);
        free(f.w);
}

/* ---- events by band ----------------------------------------------------------------------- */

/* Events as the test fed them, by band, for its own account of what each band keeps. */
typedef struct EventLog {
        HistoryEvent *ev;
        size_t n, cap;
} EventLog;

static const uint64_t band_edge[HISTORY_BANDS + 1] = {0, 100000, 1000000, 10000000, UINT64_MAX};

static unsigned band_of_ref(uint64_t d)
{
        unsigned b = 0;

        while (b + 1 < HISTORY_BANDS && d >= band_edge[b + 1]) {
                b++;
        }
        return b;
}

static void log_add(EventLog *log, History *h, const HistoryEvent *e)
{
        assert_true(log->n < log->cap);
        log->ev[log->n++] = *e;
        assert_int_equal(history_add_event(h, e), 0);
}

/* What @h must keep of what @log fed (one CPU, @cap per band): the newest @cap of each band;
 * and what it must have dropped: the rest. Checks history_event_bands() and that
 * history_events() gives exactly the kept ones, newest last, each as fed. */
static void assert_bands(History *h, int cpu, const EventLog *log, unsigned cap,
                         uint64_t extra_dropped)
{
        HistoryBand bands[HISTORY_BANDS];
        size_t fed[HISTORY_BANDS] = {0}, seen[HISTORY_BANDS] = {0}, total = 0, got;
        bool *keep = calloc(log->n + 1, sizeof(*keep));
        HistoryEvent *ev = calloc(log->n + 4, sizeof(*ev));
        cpu_set_t one;

        for (size_t i = 0; i < log->n; i++) {
                fed[band_of_ref(log->ev[i].duration_ns)]++;
        }
        for (size_t i = log->n; i-- > 0;) {
                unsigned b = band_of_ref(log->ev[i].duration_ns);

                keep[i] = seen[b]++ < cap;
                total += keep[i];
        }
        assert_int_equal(history_event_bands(h, cpu, bands), 0);
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                uint64_t kept = fed[b] < cap ? fed[b] : cap, oldest = 0, newest = 0;

                for (size_t i = 0; i < log->n; i++) {
                        if (keep[i] && band_of_ref(log->ev[i].duration_ns) == b) {
                                oldest = oldest ? oldest : log->ev[i].start_ns;
                                newest = log->ev[i].start_ns;
                        }
                }
                assert_int_equal(bands[b].min_duration_ns, band_edge[b]);
                assert_int_equal(bands[b].max_duration_ns, band_edge[b + 1]);
                assert_int_equal(bands[b].capacity, cap);
                assert_int_equal(bands[b].kept, kept);
                assert_int_equal(bands[b].dropped, fed[b] - kept + (b == 0 ? extra_dropped : 0));
                assert_int_equal(bands[b].oldest_ns, oldest);
                assert_int_equal(bands[b].newest_ns, newest);
        }
        /* Each band alone, and the newest 3 of it. */
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                size_t k = 0, n_band = history_band_events(h, cpu, b, 0, ev, log->n + 1);

                assert_int_equal(n_band, bands[b].kept);
                for (size_t i = 0; i < log->n; i++) {
                        if (keep[i] && band_of_ref(log->ev[i].duration_ns) == b) {
                                assert_int_equal(ev[k].start_ns, log->ev[i].start_ns);
                                assert_int_equal(ev[k].duration_ns, log->ev[i].duration_ns);
                                k++;
                        }
                }
                assert_int_equal(k, n_band);
                if (n_band >= 3) {
                        uint64_t newest = ev[n_band - 1].start_ns;

                        assert_int_equal(history_band_events(h, cpu, b, 0, ev, 3), 3);
                        assert_int_equal(ev[2].start_ns, newest);
                        assert_int_equal(history_band_events(h, cpu, b, newest, ev, 3), 1);
                }
        }
        assert_int_equal(history_band_events(h, cpu, HISTORY_BANDS, 0, ev, 1), 0);
        assert_int_equal(history_band_events(h, cpu + 100, 0, 0, ev, 1), 0);
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        got = history_events(h, &one, 0, 0, ev, log->n + 1);
        assert_int_equal(got, total);
        for (size_t i = 0, k = 0; i < log->n; i++) {
                if (keep[i]) {
                        assert_int_equal(ev[k].cpu, cpu);
                        assert_int_equal(ev[k].start_ns, log->ev[i].start_ns);
                        assert_int_equal(ev[k].start_real_ns, log->ev[i].start_real_ns);
                        assert_int_equal(ev[k].duration_ns, log->ev[i].duration_ns);
                        k++;
                }
        }
        free(keep);
        free(ev);
}

/* Bands keep their newest events each, rare long ones outliving frequent short ones; every
 * dropped event is counted; the edges are where history.h says; what a band stores comes back
 * exactly, also a clock step and an interruption longer than 32 bits of nanoseconds; the
 * bands and their counts survive a checkpoint, a smaller history drops (and counts) what it
 * cannot hold, and a reset forgets the counts. */
/* A second CPU's events merge with the first's in time order, newest last; the filters. */
static void bands_merge_and_filter(History *h, const EventLog *log)
{
        HistoryBand bands[HISTORY_BANDS];
        HistoryEvent ev[64], e;
        cpu_set_t cpus;
        size_t n;

        assert_int_equal(history_event_bands(h, 2, bands), 0);
        /* Another CPU, merged in time order; filters. */
        for (unsigned i = 5; i-- > 0;) {
                e = (HistoryEvent){.cpu = 3,
                                   .start_ns = log->ev[log->n - 1 - 3 * i].start_ns + 1,
                                   .duration_ns = 2000000};
                assert_int_equal(history_add_event(h, &e), 0);
        }
        n = history_events(h, NULL, 0, 0, ev, 64);
        assert_int_equal(n, bands[0].kept + bands[1].kept + bands[2].kept + bands[3].kept + 5);
        for (size_t i = 1; i < n; i++) {
                assert_true(ev[i - 1].start_ns <= ev[i].start_ns);
        }
        n = history_events(h, NULL, 0, 0, ev, 3);
        assert_int_equal(n, 3);
        assert_int_equal(ev[2].start_ns, log->ev[log->n - 1].start_ns + 1);
        assert_int_equal(ev[2].cpu, 3);
        n = history_events(h, NULL, 0, 1000000, ev, 64);
        assert_int_equal(n, bands[2].kept + bands[3].kept + 5);
        for (size_t i = 0; i < n; i++) {
                assert_true(ev[i].duration_ns >= 1000000);
        }
        n = history_events(h, NULL, log->ev[log->n - 20].start_ns, 0, ev, 64);
        for (size_t i = 0; i < n; i++) {
                assert_true(ev[i].start_ns >= log->ev[log->n - 20].start_ns);
        }
        assert_true(n >= 5 && n <= 20 + 5);
        CPU_ZERO(&cpus);
        CPU_SET(1, &cpus);
        assert_int_equal(history_events(h, &cpus, 0, 0, ev, 64), 0);
        assert_int_equal(history_events(h, NULL, 0, 0, ev, 0), 0);
}

/* Through a checkpoint, the same events and counts. A history that keeps 4 per band drops
 * the oldest 4 of each full band, counted; one that keeps none counts every event. */
static void bands_checkpoint(History *h, const EventLog *log)
{
        HistoryOptions o = small_opt;
        HistoryBand bands[HISTORY_BANDS];
        HistoryEvent e;
        AttribTable *t;
        History *h2;
        char *data = NULL;
        size_t size = 0;
        FILE *f;

        /* Events a little out of order (the counter's mapping to the clock moved back a few
         * ns between two intervals), and real times far from the monotonic ones, are kept as
         * they are and saved in a file that loads. */
        for (unsigned i = 0; i < 4; i++) {
                e = (HistoryEvent){.cpu = 5,
                                   .start_ns = 1000 - i % 2 * 10 + i * 3,
                                   .start_real_ns = i < 2 ? i : UINT64_MAX - i,
                                   .duration_ns = 50000};
                assert_int_equal(history_add_event(h, &e), 0);
        }
        assert_int_equal(attrib_table_new(&t), 0);
        f = open_memstream(&data, &size);
        assert_int_equal(history_save(h, t, 1000000000ULL, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(history_new(&o, &h2), 0);
        f = fmemopen(data, size, "r");
        assert_int_equal(history_load(h2, t, 1000000000ULL, f), 0);
        fclose(f);
        assert_bands(h2, 2, log, 8, 0);
        {
                HistoryEvent got[8];
                cpu_set_t five;

                CPU_ZERO(&five);
                CPU_SET(5, &five);
                assert_int_equal(history_events(h2, &five, 0, 0, got, 8), 4);
                for (unsigned i = 0; i < 4; i++) {
                        bool found = false;

                        for (unsigned k = 0; k < 4; k++) {
                                found = found ||
                                        (got[k].start_ns == 1000 - i % 2 * 10 + i * 3 &&
                                         got[k].start_real_ns == (i < 2 ? i : UINT64_MAX - i));
                        }
                        assert_true(found);
                }
        }
        history_free(h2);
        o.events_per_cpu = 4;
        assert_int_equal(history_new(&o, &h2), 0);
        f = fmemopen(data, size, "r");
        assert_int_equal(history_load(h2, t, 1000000000ULL, f), 0);
        fclose(f);
        assert_bands(h2, 2, log, 4, 0);
        history_free(h2);

        /* No room at all: every event is counted as dropped. */
        o.events_per_cpu = 0;
        assert_int_equal(history_new(&o, &h2), 0);
        e = (HistoryEvent){.cpu = 1, .start_ns = 1, .duration_ns = 20000};
        assert_int_equal(history_add_event(h2, &e), 0);
        assert_int_equal(history_event_bands(h2, 1, bands), 0);
        assert_int_equal(bands[0].kept, 0);
        assert_int_equal(bands[0].dropped, 1);
        history_free(h2);
        free(data);
        attrib_table_free(t);
}

static void test_event_bands(void **state)
{
        HistoryOptions o = small_opt; /* 8 events per band */
        EventLog log = {.cap = 4096};
        HistoryBand bands[HISTORY_BANDS];
        HistoryEvent e;
        History *h;
        uint64_t t_ns = 1000 * S, offset = 1700000000ULL * S;

        (void)state;
        log.ev = calloc(log.cap, sizeof(*log.ev));
        assert_int_equal(history_new(&o, &h), 0);
        /* The edges themselves. */
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                e = (HistoryEvent){.cpu = 2,
                                   .start_ns = t_ns,
                                   .start_real_ns = t_ns + offset,
                                   .duration_ns = band_edge[b] ? band_edge[b] : 1};
                log_add(&log, h, &e);
                t_ns += 1000;
                if (b + 1 < HISTORY_BANDS) {
                        e.start_ns = e.start_real_ns = t_ns;
                        e.start_real_ns += offset;
                        e.duration_ns = band_edge[b + 1] - 1;
                        log_add(&log, h, &e);
                        t_ns += 1000;
                }
        }
        assert_bands(h, 2, &log, 8, 0);
        /* Many short ones, fewer longer ones, a few long ones; a clock step of 5 s half way,
         * and interruptions beyond 2^32 ns. */
        for (unsigned i = 0; i < 3000; i++) {
                uint64_t d = 10000 + rng_next() % 90000;

                if (i % 7 == 0) {
                        d = 100000 + rng_next() % 900000;
                }
                if (i % 101 == 0) {
                        d = 1000000 + rng_next() % 9000000;
                }
                if (i % 503 == 0) {
                        d = i % 1006 == 0 ? (1ULL << 32) + rng_next() % S : 10000000 + i;
                }
                if (i == 1500) {
                        offset += 5 * S;
                }
                e = (HistoryEvent){.cpu = 2,
                                   .start_ns = t_ns,
                                   .start_real_ns = t_ns + offset,
                                   .duration_ns = d};
                log_add(&log, h, &e);
                t_ns += 200000 + rng_next() % 3000000;
                if (i % 500 == 0) {
                        assert_bands(h, 2, &log, 8, 0);
                }
        }
        assert_bands(h, 2, &log, 8, 0);
        /* The long band still holds events from the first part of the run, the short one only
         * the last few milliseconds. */
        assert_int_equal(history_event_bands(h, 2, bands), 0);
        assert_true(bands[3].oldest_ns < log.ev[log.n / 2].start_ns);
        assert_true(bands[0].oldest_ns > log.ev[log.n - 100].start_ns);

        bands_merge_and_filter(h, &log);

        bands_checkpoint(h, &log);

        /* A reset forgets the events and what was dropped. */
        history_reset(h, 2);
        log.n = 0;
        assert_bands(h, 2, &log, 8, 0);
        history_free(h);
        free(log.ev);
}
/* ---- checkpoint -------------------------------------------------------------------------- */

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
        const size_t n_spans = ELEMENTSOF(spans);

        /* Arbitrary ranges, the totals, and every standard window. */
        for (size_t i = 0; i <= n_spans + HISTORY_SPAN_MAX; i++) {
                bool all = i == n_spans;
                uint64_t from = i < n_spans ? spans[i][0] : 0;
                uint64_t to = i < n_spans ? spans[i][1] : UINT64_MAX;

                if (i > n_spans) {
                        assert_int_equal(history_window(x, cpu, (HistorySpan)(i - n_spans - 1), a),
                                         0);
                        assert_int_equal(history_window(y, cpu, (HistorySpan)(i - n_spans - 1), b),
                                         0);
                } else {
                        assert_int_equal(history_query(x, cpu, from, to, all, a), 0);
                        assert_int_equal(history_query(y, cpu, from, to, all, b), 0);
                }
                assert_slot_equal(&a->slot, &b->slot);
                assert_int_equal(a->hist_sub_bits, b->hist_sub_bits);
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
                uint8_t *res = calloc(n, sizeof(*res));

                for (int cpu = 0; cpu <= 3; cpu += 3) {
                        for (size_t i = 0; i < n; i++) {
                                res[i] = (int)(i % 2) * 3 == cpu ? FINE : OUT;
                        }
                        assert_int_equal(history_query(h2, cpu, 0, UINT64_MAX, true, w), 0);
                        assert_window(w, a, n, res, (unsigned)n / 2);
                }
                free(res);
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
        /* The same memory, but for what the allocator rounds differently and the buffer
         * intervals are encoded in (it keeps the largest size it was asked for). */
        assert_true(history_memory_bytes(h2) < history_memory_bytes(h) + 64 * 1024 &&
                    history_memory_bytes(h) < history_memory_bytes(h2) + 64 * 1024);

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
        /* Every byte, flipped by a random non-zero mask. A damaged version says a version
         * this code does not know, or a corrupt file. */
        for (size_t pos = 0; pos < file.size; pos++) {
                uint8_t mask = (uint8_t)(1 + rng_next() % 255);
                int r;

                p[pos] ^= mask;
                r = load(h, t, HZ, p, file.size);
                if (pos >= 8 && pos < 12 && r == -EPROTONOSUPPORT) {
                        r = -EBADMSG;
                }
                assert_int_equal(r, -EBADMSG);
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
                        int r = load(h, t, HZ, p, file.size);

                        assert_true(r == -EBADMSG || (pos < 12 && r == -EPROTONOSUPPORT));
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
                                        for (HistorySpan s = 0; s < HISTORY_SPAN_MAX; s++) {
                                                assert_int_equal(history_window(h, cpu, s, w), 0);
                                        }
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

/* ---- the previous format ------------------------------------------------------------------ */

static void *read_file(const char *name, size_t *ret_size)
{
        char path[512];
        FILE *f;
        void *data;
        long size;

        snprintf(path, sizeof(path), "%s/history/%s", TEST_SOURCE_DIR, name);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        size = ftell(f);
        assert_true(size > 0);
        rewind(f);
        data = malloc((size_t)size);
        assert_non_null(data);
        assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        *ret_size = (size_t)size;
        return data;
}

static uint64_t json_u64(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        assert_non_null(v);
        return json_is_integer(v) ? (uint64_t)json_integer_value(v) : (uint64_t)json_real_value(v);
}

/* @w against one window the previous daemon answered for (GetStats and GetHistogram, in ns by
 * its counter's frequency): exact counts, sums in ns, extremes, and every bucket. */
static void assert_answered(const char *what, const HistoryWindow *w, json_t *o,
                            const TickConv *conv)
{
        json_t *gap = json_object_get(o, "gap"), *dd = json_object_get(o, "dd");
        size_t k = 0;

        print_message("%s: %" PRIu64 " samples, %" PRIu64 " interruptions in %u intervals\n", what,
                      w->slot.gap.count, w->slot.events, w->intervals);
        assert_int_equal(w->slot.gap.count, json_u64(o, "samples"));
        assert_int_equal(w->slot.events, json_u64(o, "interruptions"));
        assert_int_equal(tickconv_to_ns(conv, w->slot.lost_ticks), json_u64(o, "lost_ns"));
        assert_int_equal(w->duration_ns, json_u64(o, "duration_ns"));
        assert_int_equal(w->from_ns, json_u64(o, "from_ns"));
        assert_int_equal(w->to_ns, json_u64(o, "to_ns"));
        assert_int_equal(w->stalls, json_u64(o, "stalls"));
        assert_int_equal(tickconv_to_ns(conv, w->slot.gap.min), json_u64(o, "gap_min_ns"));
        assert_int_equal(tickconv_to_ns(conv, w->slot.gap.max), json_u64(o, "gap_max_ns"));
        assert_int_equal(histogram_total(&w->slot.gap_hist), json_u64(o, "gap_total"));
        assert_int_equal(signed_histogram_total(&w->slot.dd_hist), json_u64(o, "dd_total"));
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (w->slot.gap_hist.counts[i] != 0) {
                        json_t *b = json_array_get(gap, k++);

                        assert_non_null(b);
                        assert_int_equal(tickconv_to_ns(conv, histogram_bucket_lower(i)),
                                         json_integer_value(json_array_get(b, 0)));
                        assert_int_equal(w->slot.gap_hist.counts[i],
                                         json_integer_value(json_array_get(b, 1)));
                }
        }
        assert_int_equal(k, json_array_size(gap));
        /* The diff-of-diff from the most negative bucket to the most positive. */
        k = 0;
        for (unsigned i = HIST_BUCKETS; i-- > 0;) {
                if (w->slot.dd_hist.neg.counts[i] != 0) {
                        assert_int_equal(
                                w->slot.dd_hist.neg.counts[i],
                                json_integer_value(json_array_get(json_array_get(dd, k++), 1)));
                }
        }
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (w->slot.dd_hist.pos.counts[i] != 0) {
                        assert_int_equal(
                                w->slot.dd_hist.pos.counts[i],
                                json_integer_value(json_array_get(json_array_get(dd, k++), 1)));
                }
        }
        assert_int_equal(k, json_array_size(dd));
}

/* The hour holds the whole run of the version-1 fixture: coarse, with every count exact. */
static void assert_hour_holds_all(History *h)
{
        HistoryWindow *w = malloc(sizeof(*w)), *w2 = malloc(sizeof(*w2));

        assert_int_equal(history_window(h, 1, HISTORY_SPAN_1H, w2), 0);
        assert_int_equal(history_query(h, 1, 0, 0, true, w), 0);
        assert_int_equal(w2->hist_sub_bits, 3);
        assert_int_equal(w2->slot.gap.count, w->slot.gap.count);
        assert_true(w2->slot.gap.sum == w->slot.gap.sum && w2->slot.gap.sumsq == w->slot.gap.sumsq);
        assert_int_equal(w2->slot.gap.min, w->slot.gap.min);
        assert_int_equal(w2->slot.gap.max, w->slot.gap.max);
        assert_int_equal(w2->slot.dd.min, w->slot.dd.min);
        assert_int_equal(w2->slot.dd.max, w->slot.dd.max);
        assert_int_equal(w2->slot.events, w->slot.events);
        assert_int_equal(histogram_total(&w2->slot.gap_hist), w->slot.gap.count);

        free(w);
        free(w2);
}

/* The events of the version-1 fixture, as its daemon answered GetEvents, in bands that say
 * their drops before are not known. */
static void assert_same_events(History *h, json_t *events)
{
        HistoryBand bands[HISTORY_BANDS];
        HistoryEvent ev[32];

        assert_int_equal(history_events(h, NULL, 0, 0, ev, 32), json_array_size(events));
        for (size_t i = 0; i < json_array_size(events); i++) {
                json_t *e = json_array_get(events, i);

                assert_int_equal(ev[i].cpu, 1);
                assert_int_equal(ev[i].start_ns, json_integer_value(json_array_get(e, 0)));
                assert_int_equal(ev[i].duration_ns, json_integer_value(json_array_get(e, 1)));
        }
        assert_int_equal(history_event_bands(h, 1, bands), 0);
        assert_true(bands[0].dropped_before_unknown);
        assert_int_equal(bands[0].kept + bands[1].kept + bands[2].kept + bands[3].kept,
                         json_array_size(events));
}

/* test/history/checkpoint-v1.state was written by the daemon of the previous format (version
 * 1) after about 130 s on CPU 1 of this VM kind: intervals of 10 s kept 1 min, coarse ones of
 * 1 min kept 1 h, 16 events. checkpoint-v1.json holds what that daemon answered, for the same
 * state, to GetStatus (its counter frequency), GetStats and GetHistogram (windows all and 1m:
 * the 1m one gives its edges) and GetEvents. Migrated, the history gives the same answers:
 * the totals and the fine intervals at full resolution, every bucket; the long windows (whose
 * coarse intervals are folded) the same counts, sums and extremes; the same events, in bands
 * that say their drops before are not known. Saved again, it is a version-2 file that loads
 * to the same. */
static void test_load_version1(void **state)
{
        const HistoryOptions old = {
                .interval_ns = 10 * S,
                .fine_retention_ns = 60 * S,
                .coarse_interval_ns = 60 * S,
                .coarse_retention_ns = 3600 * S,
                .events_per_cpu = 16,
        };
        size_t size, json_size;
        uint8_t *file = read_file("checkpoint-v1.state", &size), *copy;
        char *text = read_file("checkpoint-v1.json", &json_size);
        HistoryWindow *w = malloc(sizeof(*w));
        HistoryBand bands[HISTORY_BANDS];
        AttribTable *t = table_with(source_names, 0);
        json_error_t err;
        json_t *root;
        TickConv conv;
        uint64_t hz;
        uint32_t version;
        History *h, *h2;
        Buf again;
        FILE *f;

        (void)state;
        root = json_loadb(text, json_size, 0, &err);
        assert_non_null(root);
        hz = json_u64(root, "hz");
        tickconv_init(&conv, hz);
        f = fmemopen(file, size, "r");
        assert_int_equal(history_checkpoint_version(f, &version), 0);
        fclose(f);
        assert_int_equal(version, 1);
        /* It was written in another boot (CLOCK_MONOTONIC then is not now's): a boot id of
         * zeros is one that was not known, which loads. */
        copy = malloc(size);
        memcpy(copy, file, size);
        memset(copy + 20, 0, 16);
        fix_crc(copy, size);
        assert_int_equal(history_new(&old, &h), 0);
        assert_int_equal(load(h, t, hz, copy, size), 0);

        assert_int_equal(history_query(h, 1, 0, 0, true, w), 0);
        assert_int_equal(w->hist_sub_bits, 5);
        assert_answered("all", w, json_object_get(root, "all"), &conv);
        {
                json_t *m = json_object_get(root, "1m");

                assert_int_equal(
                        history_query(h, 1, json_u64(m, "from_ns"), json_u64(m, "to_ns"), false, w),
                        0);
                assert_int_equal(w->hist_sub_bits, 5);
                assert_answered("1m", w, m, &conv);
        }
        assert_hour_holds_all(h);
        assert_same_events(h, json_object_get(root, "events"));

        assert_int_equal(save(h, t, hz, &again), 0);
        f = fmemopen(again.data, again.size, "r");
        assert_int_equal(history_checkpoint_version(f, &version), 0);
        fclose(f);
        assert_int_equal(version, HISTORY_CHECKPOINT_VERSION);
        assert_int_equal(history_new(&old, &h2), 0);
        assert_int_equal(load(h2, t, hz, again.data, again.size), 0);
        assert_same_queries(h, h2, 1);
        assert_int_equal(history_event_bands(h2, 1, bands), 0);
        assert_true(bands[0].dropped_before_unknown);

        json_decref(root);
        history_free(h);
        history_free(h2);
        attrib_table_free(t);
        free(again.data);
        free(file);
        free(copy);
        free(text);
        free(w);
}

/* A checkpoint of a version this code does not read (a newer daemon's, after a downgrade) is
 * refused as such, its version readable for the message, and the history stays as it was. */
static void test_load_other_version(void **state)
{
        Added *a = calloc(8, sizeof(*a));
        AttribTable *t = table_with(source_names, 2);
        Buf file, mine;
        History *h, *other;
        uint32_t version;
        FILE *f;

        (void)state;
        other = small_history(a, 8, t, &file);
        h = small_history(a, 3, t, &mine);
        for (uint32_t v = 0; v < 6; v++) {
                if (v == 1 || v == 2) {
                        continue;
                }
                for (unsigned i = 0; i < 4; i++) {
                        file.data[8 + i] = (char)(v >> (8 * i));
                }
                fix_crc((uint8_t *)file.data, file.size);
                f = fmemopen(file.data, file.size, "r");
                assert_int_equal(history_checkpoint_version(f, &version), 0);
                fclose(f);
                assert_int_equal(version, v);
                assert_int_equal(load(h, t, HZ, file.data, file.size), -EPROTONOSUPPORT);
                assert_unchanged(h, t, &mine);
        }
        f = fmemopen((void *)"JTRDHIS", 7, "r");
        assert_int_equal(history_checkpoint_version(f, &version), -EBADMSG);
        fclose(f);
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
                cmocka_unit_test(test_windows_follow),
                cmocka_unit_test(test_event_bands),
                cmocka_unit_test(test_save_load_roundtrip),
                cmocka_unit_test(test_load_remaps_sources),
                cmocka_unit_test(test_load_truncated),
                cmocka_unit_test(test_load_corrupt),
                cmocka_unit_test(test_load_crafted),
                cmocka_unit_test(test_load_stale),
                cmocka_unit_test(test_load_version1),
                cmocka_unit_test(test_load_other_version),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

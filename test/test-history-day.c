/* A day of history at the daemon's defaults (the interval, fine and coarse retentions and
 * events kept of config.c, the coarse interval of history.h, as the daemon takes them: 1 s
 * intervals kept 10 min, 1 min ones kept 24 h, 10 000 events) through the real history code,
 * with synthetic intervals shaped like a tuned core's and interruptions at the rate of a noisy
 * untuned VM (a few hundred a second, so the event ring is full within a minute): the whole
 * memory of the history, its event ring included, stays within 4 MiB for the CPU, by its own
 * account and by the allocator's; every window the API offers (10s, 1m, 5m, 1h, 24h, all)
 * holds exactly what the test itself computes it must, and the events kept are exactly the
 * newest ones fed, before the first roll-over from fine to coarse, across it, at a day and
 * past it, and each time again after a checkpoint and a restore (the restored history then
 * goes on). The expected windows come from the values the test generated, summed with its own
 * bucket rule and sums; the selection of intervals follows the rule history.h states (fine
 * intervals where kept, a coarse one only when it lies wholly in the window and some of its
 * intervals have left the fine ones). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "history.h"
#include "ref-bucket.h"
#include "rng.h"

#define S 1000000000ULL
#define FLOOR 60    /* ticks of the loop's own period */
#define EVENT 24000 /* ticks from which a gap is an interruption */
#define SOURCES 7
#define T0 (1000 * S + 300000000ULL) /* not on a period boundary */
#define HZ 2400000000ULL             /* 2400 ticks per us */
#define MIB (1024 * 1024)
#define REAL_OFFSET (1700000000ULL * S) /* CLOCK_REALTIME - CLOCK_MONOTONIC */

/* The daemon's defaults (see setup_defaults()). */
static HistoryOptions opt;
static uint64_t IV;   /* the interval */
static size_t FINE;   /* fine intervals kept */
static size_t PERIOD; /* intervals in a coarse one */
static size_t COARSE; /* coarse intervals kept */
static uint64_t PERIOD_NS;

/* The history as the daemon makes it (manager.c): the retentions and events kept from the
 * configuration's defaults, the coarse interval from history.h. */
static void setup_defaults(void)
{
        Config c;

        config_init_defaults(&c);
        opt = (HistoryOptions){
                .interval_ns = c.history_interval_ns,
                .fine_retention_ns = c.history_fine_retention_ns,
                .coarse_interval_ns = HISTORY_COARSE_INTERVAL_NS,
                .coarse_retention_ns = c.history_coarse_retention_ns,
                .events_per_cpu = c.history_events_per_cpu,
        };
        IV = opt.interval_ns;
        PERIOD_NS = opt.coarse_interval_ns;
        FINE = opt.fine_retention_ns / IV;
        PERIOD = PERIOD_NS / IV;
        COARSE = opt.coarse_retention_ns / PERIOD_NS;
        print_message("defaults: %" PRIu64 " ms intervals, %zu kept; %zu per coarse one, %zu "
                      "kept; %u events kept\n",
                      IV / 1000000, FINE, PERIOD, COARSE, opt.events_per_cpu);
        /* What the reference below assumes: whole intervals per coarse one, the fine ring as
         * long as the retention (history_new() would lengthen a shorter one), whole us, and a
         * start that is not on a coarse boundary. */
        assert_true(PERIOD_NS % IV == 0 && IV % 1000 == 0 && T0 % PERIOD_NS != 0);
        assert_true(FINE >= PERIOD + PERIOD / 8 + 2);
}

static const char *const source_names[SOURCES] = {
        "irq:LOC", "irq:RES", "softirq:RCU", "irq:TLB", "irq:24", "smi", "ctxsw:involuntary"};

/* ---- what one interval holds -------------------------------------------------------------- */

typedef struct Pair {
        int64_t v;
        uint64_t n;
} Pair;

#define MAX_PAIRS 1024

typedef struct Gen {
        Pair gap[MAX_PAIRS], dd[MAX_PAIRS];
        size_t n_gap, n_dd;
        uint64_t attrib[SOURCES];
        uint64_t start_ticks, end_ticks;
} Gen;

static void gen_gap(Gen *g, uint64_t v, uint64_t n)
{
        assert_true(g->n_gap < MAX_PAIRS);
        g->gap[g->n_gap++] = (Pair){(int64_t)v, n};
}

static void gen_dd(Gen *g, int64_t v, uint64_t n)
{
        assert_true(g->n_dd < MAX_PAIRS);
        g->dd[g->n_dd++] = (Pair){v, n};
}

static uint64_t ticks_of(uint64_t ns)
{
        return ns / 1000 * (HZ / 1000000);
}

/* One interval (a second at the default) of a tuned core, from the interval's own seed, so
 * that the test can make it again when it needs its values: a dense core around the loop's
 * period, misses above it thinning out to 250 ticks, interruptions of six sources (timer
 * tick, IPIs, softirqs, a device IRQ, rare long ones) of log-normal lengths, each an up and a
 * down step in the diff-of-diff. */
static void generate(size_t i, Gen *g)
{
        static const struct {
                double center, sigma, rate;
        } src[] = {{3000, 0.12, 250}, {7000, 0.2, 2},    {12000, 0.25, 10},
                   {20000, 0.3, 0.5}, {50000, 0.3, 0.2}, {500000, 1.2, 0.05}};

        memset(g, 0, sizeof(*g));
        rng_seed(0x5eed0000ULL + i);
        g->start_ticks = ticks_of(T0 + i * IV) + rng_next() % 1000;
        g->end_ticks = g->start_ticks + ticks_of(IV) - rng_next() % 1000;
        for (int d = -4; d < 36; d++) {
                gen_gap(g, (uint64_t)(FLOOR + d),
                        (uint64_t)(30e6 * exp(-(double)(d * d) / 18.0) *
                                   (0.8 + 0.4 * rng_uniform())) +
                                1 + rng_next() % 50);
        }
        for (int d = -40; d <= 40; d++) {
                uint64_t n = (uint64_t)(20e6 * exp(-(double)(d * d) / 60.0) *
                                        (0.8 + 0.4 * rng_uniform()));

                if (n > 0) {
                        gen_dd(g, d, n);
                }
        }
        for (uint64_t v = FLOOR + 40; v < 250; v += 1 + v / 40) {
                uint64_t n = (uint64_t)(4000.0 * exp(-(double)(v - FLOOR - 40) / 40.0) *
                                        (0.7 + 0.6 * rng_uniform()));

                if (n > 0) {
                        gen_gap(g, v, n);
                        gen_dd(g, (int64_t)(v - FLOOR), n);
                        gen_dd(g, -(int64_t)(v - FLOOR), n);
                }
        }
        for (size_t k = 0; k < sizeof(src) / sizeof(src[0]); k++) {
                uint64_t n = src[k].rate >= 1
                                     ? (uint64_t)(src[k].rate * (0.8 + 0.4 * rng_uniform()))
                                     : rng_uniform() < src[k].rate;

                for (uint64_t e = 0; e < n; e++) {
                        uint64_t v = (uint64_t)(src[k].center * exp(src[k].sigma * rng_normal()));

                        gen_gap(g, v < FLOOR + 40 ? FLOOR + 40 : v, 1);
                        v = g->gap[g->n_gap - 1].v;
                        gen_dd(g, (int64_t)(v - FLOOR), 1);
                        gen_dd(g, -(int64_t)(v - FLOOR), 1);
                }
                g->attrib[k] = n;
        }
        g->attrib[6] = rng_next() % 8 == 0;
}

/* The interruptions of interval @i, from their own seed, in time order, into @ev (room for
 * EVENTS_MAX): what a noisy untuned VM records, 200 to 400 a second, most of 5-15 us (its
 * timer ticks and the host's), one in a hundred of up to a few ms. Returns how many. */
#define EVENTS_MAX 512
static size_t generate_events(size_t i, HistoryEvent *ev)
{
        uint64_t start = T0 + i * IV;
        size_t n;

        rng_seed(0xe7e70000ULL + i);
        n = (size_t)((200 + rng_next() % 201) * IV / S);
        assert_true(n <= EVENTS_MAX);
        for (size_t k = 0; k < n; k++) {
                uint64_t slice = IV / n, at = start + k * slice + rng_next() % (slice / 2);

                ev[k] = (HistoryEvent){
                        .cpu = 0,
                        .start_ns = at,
                        .start_real_ns = at + REAL_OFFSET,
                        .duration_ns = rng_next() % 100 == 0 ? 20000 + rng_next() % 3000000
                                                             : 5000 + rng_next() % 10000,
                };
        }
        return n;
}

/* The slot a probe would hand over for @g, filled with the engine's own adders: this is the
 * input, not what the test compares with. */
static void fill_slot(const Gen *g, ProbeSlot *s, AttribDelta *a)
{
        probe_slot_clear(s);
        s->start_ticks = g->start_ticks;
        s->end_ticks = g->end_ticks;
        for (size_t k = 0; k < g->n_gap; k++) {
                uint64_t v = (uint64_t)g->gap[k].v, n = g->gap[k].n;

                histogram_add_n(&s->gap_hist, v, n);
                s->gap.count += n;
                s->gap.sum += (unsigned __int128)v * n;
                s->gap.sumsq += (unsigned __int128)v * v * n;
                s->gap.min = v < s->gap.min ? v : s->gap.min;
                s->gap.max = v > s->gap.max ? v : s->gap.max;
                if (v >= FLOOR + 40) {
                        s->lost_ticks += (v - FLOOR) * n;
                }
                if (v >= EVENT) {
                        s->events += n;
                }
        }
        for (size_t k = 0; k < g->n_dd; k++) {
                int64_t v = g->dd[k].v;
                uint64_t n = g->dd[k].n, m = v < 0 ? -(uint64_t)v : (uint64_t)v;

                histogram_add_n(v < 0 ? &s->dd_hist.neg : &s->dd_hist.pos, m, n);
                s->dd.count += n;
                s->dd.sum += (__int128)v * (__int128)n;
                s->dd.sumsq += (unsigned __int128)m * m * n;
                s->dd.min = v < s->dd.min ? v : s->dd.min;
                s->dd.max = v > s->dd.max ? v : s->dd.max;
        }
        a->n = 0;
        for (uint16_t id = 0; id < SOURCES; id++) {
                if (g->attrib[id]) {
                        a->items[a->n++] = (AttribCount){.id = id, .count = g->attrib[id]};
                }
        }
}

/* ---- the reference ------------------------------------------------------------------------ */

#define BUCKETS 1920

typedef struct Ref {
        uint64_t count, min, max, dd_count, events, lost, start_ticks, end_ticks;
        int64_t dd_min, dd_max;
        unsigned __int128 sum, sumsq, dd_sumsq;
        __int128 dd_sum;
        uint64_t gap[BUCKETS], neg[BUCKETS], pos[BUCKETS];
        uint64_t attrib[SOURCES];
        uint64_t from_ns, to_ns, duration_ns;
        unsigned intervals;
} Ref;

static void ref_init(Ref *r)
{
        memset(r, 0, sizeof(*r));
        r->min = UINT64_MAX;
        r->start_ticks = UINT64_MAX;
        r->dd_min = INT64_MAX;
        r->dd_max = INT64_MIN;
        r->from_ns = UINT64_MAX;
}

/* Adds interval @i, made again from its seed. */
static void ref_add_interval(Ref *r, size_t i)
{
        static Gen g;
        uint64_t start = T0 + i * IV;

        generate(i, &g);
        for (size_t k = 0; k < g.n_gap; k++) {
                uint64_t v = (uint64_t)g.gap[k].v, n = g.gap[k].n;

                r->count += n;
                r->sum += (unsigned __int128)v * n;
                r->sumsq += (unsigned __int128)v * v * n;
                r->min = v < r->min ? v : r->min;
                r->max = v > r->max ? v : r->max;
                r->gap[ref_bucket(v)] += n;
                r->lost += v >= FLOOR + 40 ? (v - FLOOR) * n : 0;
                r->events += v >= EVENT ? n : 0;
        }
        for (size_t k = 0; k < g.n_dd; k++) {
                int64_t v = g.dd[k].v;
                uint64_t n = g.dd[k].n, m = v < 0 ? -(uint64_t)v : (uint64_t)v;

                r->dd_count += n;
                r->dd_sum += (__int128)v * (__int128)n;
                r->dd_sumsq += (unsigned __int128)m * m * n;
                r->dd_min = v < r->dd_min ? v : r->dd_min;
                r->dd_max = v > r->dd_max ? v : r->dd_max;
                (v < 0 ? r->neg : r->pos)[ref_bucket(m)] += n;
        }
        for (size_t k = 0; k < SOURCES; k++) {
                r->attrib[k] += g.attrib[k];
        }
        r->start_ticks = g.start_ticks < r->start_ticks ? g.start_ticks : r->start_ticks;
        r->end_ticks = g.end_ticks > r->end_ticks ? g.end_ticks : r->end_ticks;
        r->from_ns = start < r->from_ns ? start : r->from_ns;
        r->to_ns = start + IV > r->to_ns ? start + IV : r->to_ns;
        r->duration_ns += IV;
}

/* @dst += @src, as one more stored interval of the window. */
static void ref_merge(Ref *dst, const Ref *src)
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
        dst->lost += src->lost;
        for (unsigned b = 0; b < BUCKETS; b++) {
                dst->gap[b] += src->gap[b];
                dst->neg[b] += src->neg[b];
                dst->pos[b] += src->pos[b];
        }
        for (size_t k = 0; k < SOURCES; k++) {
                dst->attrib[k] += src->attrib[k];
        }
        dst->start_ticks =
                src->start_ticks < dst->start_ticks ? src->start_ticks : dst->start_ticks;
        dst->end_ticks = src->end_ticks > dst->end_ticks ? src->end_ticks : dst->end_ticks;
        dst->from_ns = src->from_ns < dst->from_ns ? src->from_ns : dst->from_ns;
        dst->to_ns = src->to_ns > dst->to_ns ? src->to_ns : dst->to_ns;
        dst->duration_ns += src->duration_ns;
        dst->intervals++;
}

static void assert_window(const char *what, const HistoryWindow *w, const Ref *r)
{
        size_t nonzero = 0;

        if (w->slot.gap.count != r->count || w->intervals != r->intervals ||
            w->duration_ns != r->duration_ns || w->from_ns != r->from_ns || w->to_ns != r->to_ns) {
                fail_msg("%s: %" PRIu64 " samples in %u intervals [%" PRIu64 ", %" PRIu64
                         "] (%" PRIu64 " ns), expected %" PRIu64 " in %u [%" PRIu64 ", %" PRIu64
                         "] (%" PRIu64 " ns)",
                         what, w->slot.gap.count, w->intervals, w->from_ns, w->to_ns,
                         w->duration_ns, r->count, r->intervals, r->from_ns, r->to_ns,
                         r->duration_ns);
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
        assert_int_equal(w->slot.lost_ticks, r->lost);
        assert_int_equal(w->slot.start_ticks, r->start_ticks);
        assert_int_equal(w->slot.end_ticks, r->end_ticks);
        assert_int_equal(w->stalls, 0);
        for (unsigned b = 0; b < BUCKETS; b++) {
                if (w->slot.gap_hist.counts[b] != r->gap[b] ||
                    w->slot.dd_hist.neg.counts[b] != r->neg[b] ||
                    w->slot.dd_hist.pos.counts[b] != r->pos[b]) {
                        fail_msg("%s: bucket %u: gap %" PRIu64 " -%" PRIu64 " +%" PRIu64
                                 ", expected %" PRIu64 " -%" PRIu64 " +%" PRIu64,
                                 what, b, w->slot.gap_hist.counts[b], w->slot.dd_hist.neg.counts[b],
                                 w->slot.dd_hist.pos.counts[b], r->gap[b], r->neg[b], r->pos[b]);
                }
        }
        for (size_t k = 0; k < SOURCES; k++) {
                nonzero += r->attrib[k] != 0;
        }
        assert_int_equal(w->attrib.n, nonzero);
        for (size_t k = 0; k < w->attrib.n; k++) {
                assert_true(w->attrib.items[k].id < SOURCES);
                assert_int_equal(w->attrib.items[k].count, r->attrib[w->attrib.items[k].id]);
        }
}

/* ---- the day ------------------------------------------------------------------------------ */

typedef struct Day {
        History *h;
        AttribTable *t;
        size_t n;                 /* intervals added */
        uint64_t fed;             /* events added */
        HistoryEvent *got, *want; /* opt.events_per_cpu + 1 each */
        Ref *periods;             /* [p % (COARSE + 2)]: what coarse period p holds */
        Ref *total;               /* everything since the start */
        Ref *expect;              /* scratch */
        Ref *one;                 /* scratch */
        HistoryWindow *w;
} Day;

static size_t period_of(size_t i)
{
        return (size_t)((T0 + i * IV) / PERIOD_NS);
}

static size_t first_of_period(size_t p)
{
        uint64_t t = p * PERIOD_NS;

        return t <= T0 ? 0 : (size_t)((t - T0 + IV - 1) / IV);
}

/* What history_query(from, to) must give after d->n intervals, by history.h's rule. */
static void expected(Day *d, uint64_t from, uint64_t to, Ref *r)
{
        size_t fine_first = d->n > FINE ? d->n - FINE : 0, open = period_of(d->n - 1);
        size_t oldest = open > COARSE ? open - COARSE : 0; /* oldest finished period kept */

        ref_init(r);
        for (size_t p = oldest > period_of(0) ? oldest : period_of(0); p < open; p++) {
                size_t first = first_of_period(p), last = first_of_period(p + 1) - 1;
                uint64_t start = T0 + first * IV, end = T0 + (last + 1) * IV;

                if (first < fine_first && from <= start && end <= to) {
                        ref_merge(r, &d->periods[p % (COARSE + 2)]);
                }
        }
        for (size_t i = fine_first; i < d->n; i++) {
                size_t p = period_of(i), first = first_of_period(p);
                uint64_t start = T0 + i * IV;
                bool coarse_used = false;

                if (p < open && p >= oldest && first < fine_first) {
                        uint64_t ps = T0 + first * IV, pe = T0 + first_of_period(p + 1) * IV;

                        coarse_used = from <= ps && pe <= to;
                }
                if (!coarse_used && from <= start && start + IV <= to) {
                        ref_init(d->one);
                        ref_add_interval(d->one, i);
                        ref_merge(r, d->one);
                }
        }
}

static void add_until(Day *d, size_t n)
{
        static ProbeSlot slot;
        static AttribDelta attrib;
        static HistoryEvent ev[EVENTS_MAX];
        static Gen g;

        for (; d->n < n; d->n++) {
                size_t p = period_of(d->n), n_ev = generate_events(d->n, ev);
                Ref *pr = &d->periods[p % (COARSE + 2)];

                /* The daemon drains the events of an interval as it harvests it. */
                for (size_t k = 0; k < n_ev; k++) {
                        assert_int_equal(history_add_event(d->h, &ev[k]), 0);
                }
                d->fed += n_ev;
                generate(d->n, &g);
                fill_slot(&g, &slot, &attrib);
                assert_int_equal(
                        history_add_interval(d->h, 0, T0 + d->n * IV, IV, &slot, false, &attrib),
                        0);
                if (d->n == 0 || p != period_of(d->n - 1)) {
                        ref_init(pr);
                }
                ref_init(d->one);
                ref_add_interval(d->one, d->n);
                ref_merge(pr, d->one);
                pr->intervals = 1; /* a coarse interval is one interval of a window */
                d->total->intervals = 0;
                ref_merge(d->total, d->one);
        }
        d->total->intervals = (unsigned)d->n;
}

/* The events @h keeps are the newest events_per_cpu fed (or all, when fewer were), newest
 * last, each as it was fed: made again here from the intervals' seeds, newest interval first. */
static void check_events(Day *d, History *h, const char *when)
{
        static HistoryEvent ev[EVENTS_MAX];
        size_t keep = d->fed < opt.events_per_cpu ? (size_t)d->fed : opt.events_per_cpu;
        size_t got = history_events(h, NULL, 0, 0, d->got, (size_t)opt.events_per_cpu + 1);
        size_t have = 0;

        for (size_t i = d->n; i-- > 0 && have < keep;) {
                size_t n = generate_events(i, ev);

                while (n-- > 0 && have < keep) {
                        d->want[keep - 1 - have++] = ev[n];
                }
        }
        if (got != keep) {
                fail_msg("%s: %zu events kept of %" PRIu64 " fed, expected %zu", when, got, d->fed,
                         keep);
        }
        for (size_t k = 0; k < keep; k++) {
                const HistoryEvent *a = &d->got[k], *b = &d->want[k];

                if (a->cpu != b->cpu || a->start_ns != b->start_ns ||
                    a->start_real_ns != b->start_real_ns || a->duration_ns != b->duration_ns) {
                        fail_msg("%s: event %zu of %zu: CPU %d at %" PRIu64 " (%" PRIu64
                                 " real) for %" PRIu64 " ns, expected CPU %d at %" PRIu64
                                 " (%" PRIu64 ") for %" PRIu64,
                                 when, k, keep, a->cpu, a->start_ns, a->start_real_ns,
                                 a->duration_ns, b->cpu, b->start_ns, b->start_real_ns,
                                 b->duration_ns);
                }
        }
}

/* Every window of the API, ending now, against the reference, and the events kept. */
static void check_windows(Day *d, History *h, const char *when)
{
        static const struct {
                const char *name;
                uint64_t seconds;
        } windows[] = {{"10s", 10}, {"1m", 60}, {"5m", 300}, {"1h", 3600}, {"24h", 86400}};
        uint64_t now = T0 + d->n * IV;
        char what[96];

        for (size_t k = 0; k < sizeof(windows) / sizeof(windows[0]); k++) {
                uint64_t from = now > windows[k].seconds * S ? now - windows[k].seconds * S : 0;

                snprintf(what, sizeof(what), "%s, window %s", when, windows[k].name);
                assert_int_equal(history_query(h, 0, from, now, false, d->w), 0);
                expected(d, from, now, d->expect);
                assert_window(what, d->w, d->expect);
        }
        snprintf(what, sizeof(what), "%s, window all", when);
        assert_int_equal(history_query(h, 0, 0, UINT64_MAX, true, d->w), 0);
        assert_window(what, d->w, d->total);
        check_events(d, h, when);
}

/* Checkpoint and restore into a new history; the restored one gives the same windows and
 * carries on in place of the old one. */
static void checkpoint_restore(Day *d, const char *when)
{
        char *data = NULL, what[96];
        size_t size = 0;
        History *h2;
        FILE *f = open_memstream(&data, &size);

        assert_non_null(f);
        assert_int_equal(history_save(d->h, d->t, HZ, f), 0);
        assert_int_equal(fclose(f), 0);
        f = fmemopen(data, size, "r");
        assert_non_null(f);
        assert_int_equal(history_new(&opt, &h2), 0);
        assert_int_equal(history_load(h2, d->t, HZ, f), 0);
        fclose(f);
        free(data);
        snprintf(what, sizeof(what), "%s, restored", when);
        check_windows(d, h2, what);
        history_free(d->h);
        d->h = h2;
}

/* Bytes the allocator has handed out and not had back (the main arena and mmapped chunks):
 * the history's memory counted from outside it, chunk headers included. */
static size_t heap_bytes(void)
{
        struct mallinfo2 mi = mallinfo2();

        return mi.uordblks + mi.hblkhd;
}

static void test_day(void **state)
{
        /* Before any roll-over, at the fine retention, across the first coarse intervals
         * taking over, an hour, half a day, a day, and past the day. */
        const size_t at[] = {
                FINE * 9 / 10,
                FINE,
                FINE + PERIOD + 1,
                3600 * S / IV + 17,
                opt.coarse_retention_ns / 2 / IV,
                opt.coarse_retention_ns / IV,
                opt.coarse_retention_ns / IV + FINE + 100,
        };
        Day d = {0};
        char when[64];
        size_t peak = 0, peak_heap = 0, heap0;

        (void)state;
        d.periods = calloc(COARSE + 2, sizeof(*d.periods));
        d.total = malloc(sizeof(*d.total));
        d.expect = malloc(sizeof(*d.expect));
        d.one = malloc(sizeof(*d.one));
        d.w = malloc(sizeof(*d.w));
        d.got = calloc((size_t)opt.events_per_cpu + 1, sizeof(*d.got));
        d.want = calloc((size_t)opt.events_per_cpu + 1, sizeof(*d.want));
        assert_true(d.periods && d.total && d.expect && d.one && d.w && d.got && d.want);
        ref_init(d.total);
        assert_int_equal(attrib_table_new(&d.t), 0);
        for (size_t k = 0; k < SOURCES; k++) {
                assert_int_equal(attrib_table_id(d.t, source_names[k]), (int)k);
        }
        /* From here on, only the history allocates and keeps memory. */
        heap0 = heap_bytes();
        assert_int_equal(history_new(&opt, &d.h), 0);
        for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
                size_t bytes, heap;

                add_until(&d, at[k]);
                bytes = history_memory_bytes(d.h);
                heap = heap_bytes() - heap0;
                peak = bytes > peak ? bytes : peak;
                peak_heap = heap > peak_heap ? heap : peak_heap;
                print_message("after %zu intervals (%.2f h) and %" PRIu64 " events: %zu bytes "
                              "(%.2f MiB), %zu by the allocator\n",
                              d.n, (double)(d.n * IV) / 3600e9, d.fed, bytes, (double)bytes / MIB,
                              heap);
                if (bytes > 4 * MIB || heap > 4 * MIB) {
                        fail_msg("%zu bytes of history (%zu by the allocator) for one CPU after "
                                 "%zu intervals: above 4 MiB",
                                 bytes, heap, d.n);
                }
                snprintf(when, sizeof(when), "after %zu intervals", d.n);
                check_windows(&d, d.h, when);
                checkpoint_restore(&d, when);
        }
        print_message("peak: %zu bytes (%.2f MiB) for one CPU, %zu (%.2f MiB) by the allocator\n",
                      peak, (double)peak / MIB, peak_heap, (double)peak_heap / MIB);
        history_free(d.h);
        attrib_table_free(d.t);
        free(d.periods);
        free(d.total);
        free(d.expect);
        free(d.one);
        free(d.w);
        free(d.got);
        free(d.want);
}

static int setup(void **state)
{
        (void)state;
        setup_defaults();
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_day),
        };

        return cmocka_run_group_tests(tests, setup, NULL);
}

/* A day of history at the daemon's defaults (the interval, fine and coarse retentions and
 * events kept of config.c, the coarse interval of history.h, as the daemon takes them) through
 * the real history code, filled with the intervals a real probe recorded on CPU 1 of this VM
 * kind (test/history/vm-cpu1.shape: 200 s of a SCHED_OTHER probe, about 860 histogram buckets
 * and 1 200 interruptions a second, replayed in a cycle) and their interruptions (made again
 * from each interval's gap histogram; those below 100 us fed in one interval of thirty, which
 * keeps their band as full as all of them would, in a fraction of the time). At steps through
 * the day and past it, and each time again after a checkpoint and a restore (the restored
 * history then goes on):
 * - every standard window (history_window) holds exactly what the test sums itself from the
 *   slots it fed, by the rule and at the resolution history.h states (counts, sums, minima,
 *   maxima, every bucket, attribution, edges);
 * - each band keeps exactly the newest events it was fed, newest last, and counts every other
 *   one as dropped;
 * - the whole memory of the history for the CPU stays within 3 MiB, by its own account and by
 *   the allocator's, and does not grow once the day is full. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "history.h"
#include "history/ref-coarse.h"
#include "history/shape.h"
#include "util.h"

#define S 1000000000ULL
#define SOURCES 7
#define T0 (1000 * S + 300000000ULL) /* not on a period boundary */
#define MIB (1024 * 1024)
#define REAL_OFFSET (1700000000ULL * S) /* CLOCK_REALTIME - CLOCK_MONOTONIC */
#define SHORT_EVERY 30                  /* intervals per one whose events below 100 us are fed */
#define MAX_EVENTS 65536

/* The daemon's defaults (see setup()). */
static HistoryOptions opt;
static uint64_t IV;   /* the interval */
static size_t FINE;   /* fine intervals kept */
static size_t COARSE; /* coarse intervals kept */
static uint64_t PERIOD_NS;

static const char *const source_names[SOURCES] = {
        "irq:LOC", "irq:RES", "softirq:RCU", "irq:TLB", "irq:24", "smi", "ctxsw:involuntary"};

/* ---- the recorded intervals, and the test's own sums of them ------------------------------ */

/* The additive part of a set of intervals (sums modulo 2^64 and 2^128, as the history's), and
 * a fine-resolution histogram of each kind. */
typedef struct Sums {
        uint64_t count, dd_count, events, lost;
        unsigned __int128 sum, sumsq, dd_sumsq, dd_sum;
        uint64_t gap[HIST_BUCKETS], neg[HIST_BUCKETS], pos[HIST_BUCKETS];
} Sums;

typedef struct Day {
        Shape shape;
        ProbeSlot *slots; /* the shape's intervals, decoded once */
        Sums *prefix;     /* [k]: the sum of the shape's intervals 0..k-1 */
        uint64_t threshold_ticks;
        TickConv conv;
        History *h;
        AttribTable *t;
        size_t n; /* intervals fed */
        /* The newest events_per_cpu events fed to each band, and how many were fed. */
        HistoryEvent *band_ev[HISTORY_BANDS];
        uint64_t band_fed[HISTORY_BANDS];
        HistoryEvent *got, *want; /* HISTORY_BANDS * events_per_cpu + 1 each */
        ShapeEvent *ev;
        Sums *expect;
        HistoryWindow *w;
} Day;

static void sums_add(Sums *dst, const Sums *src, uint64_t times)
{
        dst->count += src->count * times;
        dst->dd_count += src->dd_count * times;
        dst->events += src->events * times;
        dst->lost += src->lost * times;
        dst->sum += src->sum * times;
        dst->sumsq += src->sumsq * times;
        dst->dd_sum += src->dd_sum * times;
        dst->dd_sumsq += src->dd_sumsq * times;
        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                dst->gap[b] += src->gap[b] * times;
                dst->neg[b] += src->neg[b] * times;
                dst->pos[b] += src->pos[b] * times;
        }
}

/* @dst -= @src (modulo, as they add). */
static void sums_sub(Sums *dst, const Sums *src)
{
        dst->count -= src->count;
        dst->dd_count -= src->dd_count;
        dst->events -= src->events;
        dst->lost -= src->lost;
        dst->sum -= src->sum;
        dst->sumsq -= src->sumsq;
        dst->dd_sum -= src->dd_sum;
        dst->dd_sumsq -= src->dd_sumsq;
        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                dst->gap[b] -= src->gap[b];
                dst->neg[b] -= src->neg[b];
                dst->pos[b] -= src->pos[b];
        }
}

/* The sum of the fed intervals 0..@x-1: whole cycles of the shape and a part of one. */
static void sums_upto(const Day *d, size_t x, Sums *ret)
{
        memset(ret, 0, sizeof(*ret));
        sums_add(ret, &d->prefix[d->shape.n], x / d->shape.n);
        sums_add(ret, &d->prefix[x % d->shape.n], 1);
}

/* Interval @i as fed: the recorded slot, moved to its place in time. */
static const ProbeSlot *slot_of(const Day *d, size_t i)
{
        return &d->slots[i % d->shape.n];
}

static uint64_t start_ticks_of(const Day *d, size_t i)
{
        return tickconv_from_ns(&d->conv, T0 + i * IV);
}

/* The attribution of interval @i: a few sources, some not moving. */
static uint64_t attrib_of(size_t i, unsigned k)
{
        return (i * (k + 3) + k) % 11 / 2;
}

/* Reads the shape and sums it: each interval's own numbers are the input; the sums are the
 * test's arithmetic. */
static void day_load_shape(Day *d)
{
        char path[512];
        size_t n;

        snprintf(path, sizeof(path), "%s/history/vm-cpu1.shape", TEST_SOURCE_DIR);
        assert_int_equal(shape_read(path, &d->shape), 0);
        n = d->shape.n;
        tickconv_init(&d->conv, d->shape.hz);
        d->threshold_ticks = tickconv_from_ns(&d->conv, d->shape.threshold_ns);
        d->slots = calloc(n, sizeof(*d->slots));
        d->prefix = calloc(n + 1, sizeof(*d->prefix));
        assert_true(d->slots && d->prefix);
        for (size_t i = 0; i < n; i++) {
                const ProbeSlot *s = &d->slots[i];
                Sums *p = &d->prefix[i + 1];

                assert_int_equal(shape_interval(&d->shape, i, 0, &d->slots[i]), 0);
                assert_true(s->gap.count > 0);
                *p = d->prefix[i];
                p->count += s->gap.count;
                p->dd_count += s->dd.count;
                p->events += s->events;
                p->lost += s->lost_ticks;
                p->sum += s->gap.sum;
                p->sumsq += s->gap.sumsq;
                p->dd_sum += (unsigned __int128)s->dd.sum;
                p->dd_sumsq += s->dd.sumsq;
                for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                        p->gap[b] += s->gap_hist.counts[b];
                        p->neg[b] += s->dd_hist.neg.counts[b];
                        p->pos[b] += s->dd_hist.pos.counts[b];
                }
        }
        print_message("shape: %zu intervals recorded at %" PRIu64 " Hz, %" PRIu64
                      " interruptions\n",
                      n, d->shape.hz, d->prefix[n].events);
}

/* ---- what a window must hold ---------------------------------------------------------------- */

/* @w must be the fed intervals @a..@b-1 (@stored of them as stored intervals), at @coarse
 * resolution or not. */
static void assert_range(const char *what, Day *d, const HistoryWindow *w, size_t a, size_t b,
                         unsigned stored, bool coarse)
{
        Sums *e = d->expect;
        uint64_t gap_min = UINT64_MAX, gap_max = 0, attrib[SOURCES] = {0};
        int64_t dd_min = INT64_MAX, dd_max = INT64_MIN;
        Sums *upto_a = malloc(sizeof(*upto_a));
        size_t nonzero = 0;

        sums_upto(d, b, e);
        sums_upto(d, a, upto_a);
        sums_sub(e, upto_a);
        free(upto_a);
        for (size_t i = a; i < b && i < a + d->shape.n; i++) {
                const ProbeSlot *s = slot_of(d, i);

                gap_min = s->gap.min < gap_min ? s->gap.min : gap_min;
                gap_max = s->gap.max > gap_max ? s->gap.max : gap_max;
                dd_min = s->dd.min < dd_min ? s->dd.min : dd_min;
                dd_max = s->dd.max > dd_max ? s->dd.max : dd_max;
        }
        for (size_t i = a; i < b; i++) {
                for (unsigned k = 0; k < SOURCES; k++) {
                        attrib[k] += attrib_of(i, k);
                }
        }
        if (w->slot.gap.count != e->count || w->intervals != stored || w->from_ns != T0 + a * IV ||
            w->to_ns != T0 + b * IV) {
                fail_msg("%s: %" PRIu64 " samples in %u intervals [%" PRIu64 ", %" PRIu64
                         "], expected %" PRIu64 " in %u [%" PRIu64 ", %" PRIu64 "]",
                         what, w->slot.gap.count, w->intervals, w->from_ns, w->to_ns, e->count,
                         stored, (uint64_t)(T0 + a * IV), (uint64_t)(T0 + b * IV));
        }
        assert_int_equal(w->duration_ns, (b - a) * IV);
        assert_int_equal(w->slot.gap.min, gap_min);
        assert_int_equal(w->slot.gap.max, gap_max);
        assert_true(w->slot.gap.sum == e->sum && w->slot.gap.sumsq == e->sumsq);
        assert_int_equal(w->slot.dd.count, e->dd_count);
        assert_int_equal(w->slot.dd.min, dd_min);
        assert_int_equal(w->slot.dd.max, dd_max);
        assert_true((unsigned __int128)w->slot.dd.sum == e->dd_sum &&
                    w->slot.dd.sumsq == e->dd_sumsq);
        assert_int_equal(w->slot.events, e->events);
        assert_int_equal(w->slot.lost_ticks, e->lost);
        assert_int_equal(w->slot.start_ticks, start_ticks_of(d, a));
        assert_int_equal(w->slot.end_ticks, start_ticks_of(d, b - 1) +
                                                    slot_of(d, b - 1)->end_ticks -
                                                    slot_of(d, b - 1)->start_ticks);
        assert_int_equal(w->stalls, 0);
        assert_int_equal(w->hist_sub_bits, coarse ? 3 : 5);
        for (unsigned k = 0; k < 3; k++) {
                const uint64_t *want = k == 0 ? e->gap : k == 1 ? e->neg : e->pos;
                const uint64_t *got = k == 0   ? w->slot.gap_hist.counts
                                      : k == 1 ? w->slot.dd_hist.neg.counts
                                               : w->slot.dd_hist.pos.counts;
                uint64_t folded[HIST_BUCKETS] = {0};

                /* Coarse: each fine count in the fine bucket of its coarse bucket's top. */
                for (unsigned i = 0; coarse && i < HIST_BUCKETS; i++) {
                        folded[ref_coarse_bucket(ref_bucket_lower(i))] += want[i];
                }
                for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                        if (got[i] != (coarse ? folded[i] : want[i])) {
                                fail_msg("%s: histogram %u, bucket %u: %" PRIu64
                                         ", expected %" PRIu64,
                                         what, k, i, got[i], coarse ? folded[i] : want[i]);
                        }
                }
        }
        for (unsigned k = 0; k < SOURCES; k++) {
                nonzero += attrib[k] != 0;
        }
        assert_int_equal(w->attrib.n, nonzero);
        for (size_t i = 0; i < w->attrib.n; i++) {
                assert_true(w->attrib.items[i].id < SOURCES);
                assert_int_equal(w->attrib.items[i].count, attrib[w->attrib.items[i].id]);
        }
}

static size_t period_of(size_t i)
{
        return (size_t)((T0 + i * IV) / PERIOD_NS);
}

static size_t first_of_period(size_t p)
{
        uint64_t t = p * PERIOD_NS;

        return t <= T0 ? 0 : (size_t)((t - T0 + IV - 1) / IV);
}

/* Every standard window after d->n intervals, by history.h's rule: E = T0 + n intervals; a
 * fine window the kept fine intervals from E - span; a long one the kept finished periods
 * whose first interval starts at or after E - span, and the period being filled; all. */
static void check_windows(Day *d, History *h, const char *when)
{
        const uint64_t span_s[HISTORY_SPAN_ALL] = {10, 60, 300, 3600, 86400};
        size_t n = d->n, open = period_of(n - 1);
        char what[96];

        for (HistorySpan span = 0; span < HISTORY_SPAN_MAX; span++) {
                size_t first = 0, periods = 0;
                bool coarse = false;

                snprintf(what, sizeof(what), "%s, window %s", when, history_span_name(span));
                assert_int_equal(history_window(h, 0, span, d->w), 0);
                if (span == HISTORY_SPAN_ALL) {
                        assert_range(what, d, d->w, 0, n, (unsigned)n, false);
                        continue;
                }
                coarse = span_s[span] * S > opt.fine_retention_ns;
                if (!coarse) {
                        first = n > span_s[span] * S / IV ? n - span_s[span] * S / IV : 0;
                        first = n > FINE && first < n - FINE ? n - FINE : first;
                        assert_range(what, d, d->w, first, n, (unsigned)(n - first), false);
                        continue;
                }
                /* The kept finished periods (the newest COARSE) that start late enough. */
                first = first_of_period(open);
                for (size_t p = open; p-- > period_of(0) && open - p <= COARSE;) {
                        size_t f = first_of_period(p);

                        if (T0 + f * IV + span_s[span] * S < T0 + n * IV) {
                                break;
                        }
                        first = f;
                        periods++;
                }
                assert_range(what, d, d->w, first, n,
                             (unsigned)(periods + n - first_of_period(open)), true);
        }
}

/* ---- events ---------------------------------------------------------------------------------- */

static unsigned band_of_ref(uint64_t ns)
{
        return ns >= 10000000 ? 3 : ns >= 1000000 ? 2 : ns >= 100000 ? 1 : 0;
}

/* Feeds the interruptions of interval @i, the short ones only in one interval of SHORT_EVERY,
 * and keeps the test's own account of each band. */
static void feed_events(Day *d, size_t i)
{
        const ProbeSlot *s = slot_of(d, i);
        size_t n = shape_events(s, d->threshold_ticks, d->ev, MAX_EVENTS);

        assert_true(n <= MAX_EVENTS);
        for (size_t k = 0; k < n; k++) {
                /* Spread over this interval (the recorded one may have been a little longer):
                 * the events of one CPU come in time order. */
                uint64_t at = T0 + i * IV + IV / (n + 1) * (k + 1);
                HistoryEvent e = {
                        .cpu = 0,
                        .start_ns = at,
                        .start_real_ns = at + REAL_OFFSET,
                        .duration_ns = tickconv_to_ns(&d->conv, d->ev[k].duration_ticks),
                };
                unsigned b = band_of_ref(e.duration_ns);

                if (b == 0 && i % SHORT_EVERY != 0) {
                        continue;
                }
                assert_int_equal(history_add_event(d->h, &e), 0);
                d->band_ev[b][d->band_fed[b] % opt.events_per_cpu] = e;
                d->band_fed[b]++;
        }
}

static int cmp_start(const void *a, const void *b)
{
        const HistoryEvent *x = a, *y = b;

        return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* Each band keeps the newest events_per_cpu it was fed and counts the others as dropped; all
 * of them come out newest last. */
static void check_events(Day *d, History *h, const char *when)
{
        size_t cap = opt.events_per_cpu, want = 0, got;
        HistoryBand bands[HISTORY_BANDS];

        assert_int_equal(history_event_bands(h, 0, bands), 0);
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                uint64_t kept = d->band_fed[b] < cap ? d->band_fed[b] : cap;

                if (bands[b].kept != kept || bands[b].dropped != d->band_fed[b] - kept) {
                        fail_msg("%s: band %u keeps %" PRIu64 " and dropped %" PRIu64 " of %" PRIu64
                                 " fed",
                                 when, b, bands[b].kept, bands[b].dropped, d->band_fed[b]);
                }
                for (uint64_t k = d->band_fed[b] - kept; k < d->band_fed[b]; k++) {
                        d->want[want++] = d->band_ev[b][k % cap];
                }
                if (kept > 0) {
                        assert_int_equal(bands[b].oldest_ns,
                                         d->band_ev[b][(d->band_fed[b] - kept) % cap].start_ns);
                        assert_int_equal(bands[b].newest_ns,
                                         d->band_ev[b][(d->band_fed[b] - 1) % cap].start_ns);
                }
                print_message("%s: band %u: %" PRIu64 " kept, %" PRIu64 " dropped\n", when, b,
                              bands[b].kept, bands[b].dropped);
        }
        qsort(d->want, want, sizeof(*d->want), cmp_start);
        got = history_events(h, NULL, 0, 0, d->got, HISTORY_BANDS * cap + 1);
        assert_int_equal(got, want);
        for (size_t k = 0; k < want; k++) {
                const HistoryEvent *a = &d->got[k], *b = &d->want[k];

                if (a->cpu != b->cpu || a->start_ns != b->start_ns ||
                    a->start_real_ns != b->start_real_ns || a->duration_ns != b->duration_ns) {
                        fail_msg("%s: event %zu of %zu: at %" PRIu64 " for %" PRIu64
                                 " ns, expected at %" PRIu64 " for %" PRIu64,
                                 when, k, want, a->start_ns, a->duration_ns, b->start_ns,
                                 b->duration_ns);
                }
        }
}

/* ---- the day ------------------------------------------------------------------------------- */

static void add_until(Day *d, size_t n)
{
        static ProbeSlot slot;
        static AttribDelta attrib;

        for (; d->n < n; d->n++) {
                const ProbeSlot *s = slot_of(d, d->n);

                /* The daemon drains the events of an interval as it harvests it. */
                feed_events(d, d->n);
                slot = *s;
                slot.start_ticks = start_ticks_of(d, d->n);
                slot.end_ticks = slot.start_ticks + (s->end_ticks - s->start_ticks);
                attrib.n = 0;
                for (unsigned k = 0; k < SOURCES; k++) {
                        if (attrib_of(d->n, k) != 0) {
                                attrib.items[attrib.n++] = (AttribCount){
                                        .id = (uint16_t)k, .count = attrib_of(d->n, k)};
                        }
                }
                assert_int_equal(
                        history_add_interval(d->h, 0, T0 + d->n * IV, IV, &slot, false, &attrib),
                        0);
        }
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
        assert_int_equal(history_save(d->h, d->t, d->shape.hz, f), 0);
        assert_int_equal(fclose(f), 0);
        f = fmemopen(data, size, "r");
        assert_non_null(f);
        assert_int_equal(history_new(&opt, &h2), 0);
        assert_int_equal(history_load(h2, d->t, d->shape.hz, f), 0);
        fclose(f);
        free(data);
        snprintf(what, sizeof(what), "%s, restored", when);
        check_windows(d, h2, what);
        check_events(d, h2, what);
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

/* Long because the day is one sequence: fill to each step, measure, check, restore. */
static void test_day(void **state)
{
        /* Before any roll-over, at the fine retention, across the first coarse intervals
         * taking over, an hour, half a day, a day, and past the day. */
        const size_t at[] = {
                FINE * 9 / 10,
                FINE,
                FINE + PERIOD_NS / IV + 1,
                3600 * S / IV + 17,
                opt.coarse_retention_ns / 2 / IV,
                opt.coarse_retention_ns / IV,
                opt.coarse_retention_ns / IV + FINE + 100,
        };
        const size_t events_max = HISTORY_BANDS * (size_t)opt.events_per_cpu + 1;
        Day *d = calloc(1, sizeof(*d));
        char when[64];
        size_t peak = 0, peak_heap = 0, heap0, day_bytes = 0;

        (void)state;
        assert_non_null(d);
        day_load_shape(d);
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                d->band_ev[b] = calloc(opt.events_per_cpu, sizeof(HistoryEvent));
                assert_non_null(d->band_ev[b]);
        }
        d->got = calloc(events_max, sizeof(*d->got));
        d->want = calloc(events_max, sizeof(*d->want));
        d->ev = calloc(MAX_EVENTS, sizeof(*d->ev));
        d->expect = malloc(sizeof(*d->expect));
        d->w = malloc(sizeof(*d->w));
        assert_true(d->got && d->want && d->ev && d->expect && d->w);
        assert_int_equal(attrib_table_new(&d->t), 0);
        for (size_t k = 0; k < SOURCES; k++) {
                assert_int_equal(attrib_table_id(d->t, source_names[k]), (int)k);
        }
        /* From here on, only the history allocates and keeps memory. */
        heap0 = heap_bytes();
        assert_int_equal(history_new(&opt, &d->h), 0);
        for (size_t k = 0; k < ELEMENTSOF(at); k++) {
                size_t bytes, heap;

                add_until(d, at[k]);
                bytes = history_memory_bytes(d->h);
                heap = heap_bytes() - heap0;
                peak = bytes > peak ? bytes : peak;
                peak_heap = heap > peak_heap ? heap : peak_heap;
                print_message("after %zu intervals (%.2f h): %zu bytes (%.2f MiB, of which "
                              "interruptions %zu), %zu by the allocator\n",
                              d->n, (double)(d->n * IV) / 3600e9, bytes, (double)bytes / MIB,
                              history_event_bytes(d->h), heap);
                if (bytes > 3 * MIB || heap > 3 * MIB) {
                        fail_msg("%zu bytes of history (%zu by the allocator) for one CPU after "
                                 "%zu intervals: above 3 MiB",
                                 bytes, heap, d->n);
                }
                /* Once the retention is full, the intervals leaving make room for those coming:
                 * the memory moves with their sizes (by far less than 1 %) but does not grow. */
                if (d->n == opt.coarse_retention_ns / IV) {
                        day_bytes = bytes;
                } else if (day_bytes > 0 && bytes > day_bytes + day_bytes / 100) {
                        fail_msg("%zu bytes after %zu intervals, %zu after the day: it grew", bytes,
                                 d->n, day_bytes);
                }
                snprintf(when, sizeof(when), "after %zu intervals", d->n);
                check_windows(d, d->h, when);
                check_events(d, d->h, when);
                checkpoint_restore(d, when);
        }
        print_message("peak: %zu bytes (%.2f MiB) for one CPU, %zu (%.2f MiB) by the allocator\n",
                      peak, (double)peak / MIB, peak_heap, (double)peak_heap / MIB);
        history_free(d->h);
        attrib_table_free(d->t);
        shape_free(&d->shape);
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                free(d->band_ev[b]);
        }
        free(d->slots);
        free(d->prefix);
        free(d->got);
        free(d->want);
        free(d->ev);
        free(d->expect);
        free(d->w);
        free(d);
}

/* The history as the daemon makes it (manager.c): the retentions and events kept from the
 * configuration's defaults, the coarse interval from history.h. */
static int setup(void **state)
{
        Config c;

        (void)state;
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
        COARSE = opt.coarse_retention_ns / PERIOD_NS;
        print_message("defaults: %" PRIu64 " ms intervals, %zu kept; %zu per coarse one, %zu "
                      "kept; %u events kept per band\n",
                      IV / 1000000, FINE, (size_t)(PERIOD_NS / IV), COARSE, opt.events_per_cpu);
        /* What the reference assumes: whole intervals per coarse one, the fine ring as long as
         * the retention (history_new() would lengthen a shorter one), and a start that is not
         * on a coarse boundary. */
        return PERIOD_NS % IV == 0 && T0 % PERIOD_NS != 0 &&
                               FINE >= PERIOD_NS / IV + PERIOD_NS / IV / 8 + 2
                       ? 0
                       : -1;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_day),
        };

        return cmocka_run_group_tests(tests, setup, NULL);
}

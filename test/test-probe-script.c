/* The hot loop against a known sequence: the probe reads a scripted counter, and every statistic,
 * histogram bucket, event, the floor and the time lost are computed here again from the
 * definitions (DESIGN.md, probe.h), with none of the probe's own code. The probe runs the loop
 * specialised for a scripted counter, which is the same loop as for the hardware counter, and
 * ends by itself when the script does. Natively it runs in its own thread (probe_start());
 * under qemu-user (7.2, on a 2-CPU AMD EPYC KVM guest) even pthread_create() hangs, so there
 * the test calls the probe thread's function itself, which is why it includes probe.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "histogram-internal.h"
#include "probe-hooks.c"
#include "util.h"

#define CHUNK PROBE_CHECK_EVERY
#define MAX_ADVANCES (PROBE_SLOTS - 1) /* epochs the probe may move on without a harvest */

/* --- The reference: the log-linear buckets, from their definition -------------------------- */

/* Values below 64 have a bucket each; from 2^e (e >= 6) to 2^(e+1) - 1 there are 32 buckets of
 * 2^(e-5) values each, numbered on from 64 + 32 (e - 6). Found by walking the powers of two and
 * dividing, not as the probe does. */
static unsigned ref_index(uint64_t v)
{
        unsigned e = 6;

        if (v < 64) {
                return (unsigned)v;
        }
        while (e < 63 && v >= (2ULL << e)) {
                e++;
        }
        return 64 + 32 * (e - 6) + (unsigned)((v - (1ULL << e)) / (1ULL << (e - 5)));
}

static uint64_t ref_lower(unsigned index)
{
        unsigned e = 6 + (index - 64) / 32;

        if (index < 64) {
                return index;
        }
        return (1ULL << e) + (uint64_t)((index - 64) % 32) * (1ULL << (e - 5));
}

static uint64_t ref_upper(unsigned index)
{
        if (index < 64) {
                return index;
        }
        return ref_lower(index) + (1ULL << (6 + (index - 64) / 32 - 5)) - 1;
}

/* ns to ticks at @hz, rounded up (a threshold is never undercut). */
static uint64_t ref_ticks(uint64_t ns, uint64_t hz)
{
        return (uint64_t)(((unsigned __int128)ns * hz + 999999999u) / 1000000000u);
}

typedef struct RefEvent {
        uint64_t start, duration;
} RefEvent;

/* What one slot must hold. */
typedef struct RefSlot {
        uint64_t start_ticks, end_ticks;
        uint64_t n, min, max;
        unsigned __int128 sum, sumsq;
        uint64_t dd_n;
        int64_t dd_min, dd_max;
        __int128 dd_sum;
        unsigned __int128 dd_sumsq;
        uint64_t gap_hist[HIST_BUCKETS], neg[HIST_BUCKETS], pos[HIST_BUCKETS];
        uint64_t lost, events;
        long double gap_vals_sum; /* for the two-pass variance */
} RefSlot;

static void ref_slot_init(RefSlot *r)
{
        memset(r, 0, sizeof(*r));
        r->min = UINT64_MAX;
        r->dd_min = INT64_MAX;
        r->dd_max = INT64_MIN;
}

static void ref_add(RefSlot *r, uint64_t gap, uint64_t prev_gap, uint64_t floor, uint64_t band)
{
        int64_t dd = (int64_t)gap - (int64_t)prev_gap;
        uint64_t mag = dd < 0 ? (uint64_t)-dd : (uint64_t)dd;

        r->n++;
        r->sum += gap;
        r->sumsq += (unsigned __int128)gap * gap;
        r->min = gap < r->min ? gap : r->min;
        r->max = gap > r->max ? gap : r->max;
        r->gap_hist[ref_index(gap)]++;
        r->dd_n++;
        r->dd_sum += dd;
        r->dd_sumsq += (unsigned __int128)mag * mag;
        r->dd_min = dd < r->dd_min ? dd : r->dd_min;
        r->dd_max = dd > r->dd_max ? dd : r->dd_max;
        (dd < 0 ? r->neg : r->pos)[ref_index(mag)]++;
        if (gap >= band) {
                r->lost += gap - floor;
        }
}

/* Population variance, two passes over the values. */
static long double two_pass_variance(const uint64_t *v, size_t n, bool is_signed)
{
        long double mean = 0, acc = 0;

        for (size_t i = 0; i < n; i++) {
                mean += is_signed ? (long double)(int64_t)v[i] : (long double)v[i];
        }
        mean /= (long double)n;
        for (size_t i = 0; i < n; i++) {
                long double d = (is_signed ? (long double)(int64_t)v[i] : (long double)v[i]) - mean;

                acc += d * d;
        }
        return acc / (long double)n;
}

static void assert_close(long double got, long double want, long double rel, const char *what)
{
        long double err = fabsl(got - want), scale = fabsl(want) > 1 ? fabsl(want) : 1;

        if (err > rel * scale) {
                fail_msg("%s: got %.17Lg, want %.17Lg", what, got, want);
        }
}

/* --- The script: what the counter reads ---------------------------------------------------- */

typedef struct Script {
        Probe *p;
        /* While the probe preheats: gaps cycling through pre_gaps, every reading kept. */
        const uint64_t *pre_gaps;
        size_t n_pre_gaps;
        uint64_t *pre;
        size_t n_pre, cap_pre;
        uint64_t t;
        /* Then the recording: offsets from the first reading, and the readings given. */
        const uint64_t *rec_off;
        uint64_t *rec;
        size_t n_rec, pos;
        /* The owner advances the epoch while the counter gives these readings. */
        size_t advance_at[MAX_ADVANCES];
        size_t n_advances;
        size_t advanced;
        bool overrun;
} Script;

/* Runs in the probe thread, as its counter. The probe is preheating until set_floor() and
 * RUNNING from the first reading of the recording on. The last reading is that of a check of
 * the loop (2 + k * CHUNK readings), where the loop sees the stop request made here. */
static uint64_t script_read(void *userdata)
{
        Script *s = userdata;
        size_t i;

        if (probe_state(s->p) == PROBE_PREHEATING) {
                if (s->n_pre == s->cap_pre) {
                        s->overrun = true;
                        return s->t;
                }
                s->pre[s->n_pre] = s->t;
                s->t += s->pre_gaps[s->n_pre % s->n_pre_gaps];
                return s->pre[s->n_pre++];
        }
        if (s->pos >= s->n_rec) {
                s->overrun = true;
                return s->rec[s->n_rec - 1];
        }
        i = s->pos++;
        if (i == 0) {
                /* The counter goes on from where preheat left it. */
                s->t += 1000;
        }
        s->rec[i] = s->t + s->rec_off[i];
        if (s->advanced < s->n_advances && s->advance_at[s->advanced] == i) {
                /* The owner's part, done here so it lands on a known reading. */
                assert_true(probe_advance(s->p) > 0);
                s->advanced++;
        }
        if (i == s->n_rec - 1) {
                probe_request_stop(s->p);
        }
        return s->rec[i];
}

/* --- Building sequences -------------------------------------------------------------------- */

typedef struct Gaps {
        uint64_t *v;
        size_t n, cap;
} Gaps;

static void put(Gaps *g, uint64_t v)
{
        if (g->n == g->cap) {
                g->cap = g->cap ? 2 * g->cap : 4096;
                g->v = realloc(g->v, g->cap * sizeof(*g->v));
                assert_non_null(g->v);
        }
        g->v[g->n++] = v;
}

/* Pads @g so that the recording ends on a check of the loop: readings are the initial two
 * (their gap, g->v[0], is only the predecessor of the first sample) and the samples, a whole
 * number of CHUNK of them. */
static void pad_to_chunk(Gaps *g, uint64_t filler)
{
        while (g->n < 1 + CHUNK || (g->n - 1) % CHUNK != 0) {
                put(g, filler);
        }
}

/* --- Running a script and checking it ------------------------------------------------------ */

typedef struct Run {
        uint64_t hz;
        uint64_t threshold_ns;
        uint64_t preheat_ns;
        const uint64_t *pre_gaps;
        size_t n_pre_gaps;
        Gaps gaps; /* of the recording; gaps.v[0] is the gap between its first two readings */
        size_t advance_at[MAX_ADVANCES];
        size_t n_advances;
} Run;

/* The slot each sample falls in: the probe looks at the epoch word after every CHUNK-th sample
 * (probe.h), so an epoch advanced while reading i starts after the first such sample at or
 * after it. Sample j (j >= 1) is reading j + 1. Returns the index of the check's reading. */
static size_t boundary_at_or_after(size_t reading)
{
        size_t j = reading < 2 ? 1 : reading - 1; /* the sample of that reading */

        j = (j + CHUNK - 1) / CHUNK * CHUNK;
        return j + 1;
}

static void check_stats(const ProbeSlot *got, const RefSlot *want, const uint64_t *gap_vals,
                        const uint64_t *dd_vals, int slot)
{
        char what[64];

        /* Count, sum, squares, extremes: exact. */
        assert_int_equal(got->gap.count, want->n);
        assert_true(got->gap.sum == want->sum);
        assert_true(got->gap.sumsq == want->sumsq);
        assert_int_equal(got->gap.min, want->min);
        assert_int_equal(got->gap.max, want->max);
        assert_int_equal(got->dd.count, want->dd_n);
        assert_true(got->dd.sum == want->dd_sum);
        assert_true(got->dd.sumsq == want->dd_sumsq);
        assert_int_equal(got->dd.min, want->dd_min);
        assert_int_equal(got->dd.max, want->dd_max);
        /* Mean and variance: the exact sums give them to the last bits of a double; the
         * two-pass reference agrees to far better than any report shows. */
        snprintf(what, sizeof(what), "slot %d gap mean", slot);
        assert_close(stats_mean(&got->gap), (long double)want->sum / (long double)want->n, 1e-15L,
                     what);
        snprintf(what, sizeof(what), "slot %d gap stddev", slot);
        assert_close(sqrtl(stats_variance(&got->gap)),
                     sqrtl(two_pass_variance(gap_vals, want->n, false)), 1e-9L, what);
        snprintf(what, sizeof(what), "slot %d dd mean", slot);
        assert_close(signed_stats_mean(&got->dd), (long double)want->dd_sum / (long double)want->n,
                     1e-15L, what);
        snprintf(what, sizeof(what), "slot %d dd stddev", slot);
        assert_close(sqrtl(signed_stats_variance(&got->dd)),
                     sqrtl(two_pass_variance(dd_vals, want->n, true)), 1e-9L, what);
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (got->gap_hist.counts[i] != want->gap_hist[i] ||
                    got->dd_hist.neg.counts[i] != want->neg[i] ||
                    got->dd_hist.pos.counts[i] != want->pos[i]) {
                        fail_msg("slot %d bucket %u [%llu, %llu]: gap %llu/%llu, dd- %llu/%llu, "
                                 "dd+ %llu/%llu (got/want)",
                                 slot, i, (unsigned long long)ref_lower(i),
                                 (unsigned long long)ref_upper(i),
                                 (unsigned long long)got->gap_hist.counts[i],
                                 (unsigned long long)want->gap_hist[i],
                                 (unsigned long long)got->dd_hist.neg.counts[i],
                                 (unsigned long long)want->neg[i],
                                 (unsigned long long)got->dd_hist.pos.counts[i],
                                 (unsigned long long)want->pos[i]);
                }
        }
}

/* The floor: the median of the preheat's gaps as a histogram tells it, i.e. the upper edge of
 * the bucket of the ceil(n/2)-th smallest, but never above the largest gap. */
static uint64_t ref_floor(const uint64_t *pre, size_t n_pre)
{
        size_t n = n_pre - 3, k;
        uint64_t *g = malloc(n * sizeof(*g)), v, max = 0;

        assert_non_null(g);
        /* pre[0] set the deadline, pre[1] and pre[2] are the loop's first two reads. */
        for (size_t i = 0; i < n; i++) {
                g[i] = pre[i + 3] - pre[i + 2];
                max = g[i] > max ? g[i] : max;
        }
        /* A counting pass instead of a sort: find the ceil(n/2)-th smallest. */
        k = (n + 1) / 2;
        v = 0;
        for (uint64_t x = 0;; x++) {
                size_t c = 0;

                for (size_t i = 0; i < n; i++) {
                        c += g[i] <= x;
                }
                if (c >= k) {
                        v = x;
                        break;
                }
        }
        free(g);
        v = ref_upper(ref_index(v));
        return v < max ? v : max;
}

/* What the probe must have recorded, computed from the script's readings alone. */
typedef struct Expect {
        uint64_t floor, band, threshold;
        size_t n_slots;
        RefSlot *ref;
        size_t n_events;
        RefEvent *events;
} Expect;

/* Gives the probe @run's script as its counter and runs it until the script ends. The probe
 * is left stopped, its slots unharvested; @sc holds every reading it was given. */
static Probe *play_script(Run *run, Script *sc)
{
        ProbeConfig pc = {
                .cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1,
                .threshold_ns = run->threshold_ns,
                .preheat_ns = run->preheat_ns,
                .ring_capacity = 1 << 16,
        };
        ProbeHooks hooks = {.read_counter = script_read, .userdata = sc};
        size_t n_rec = run->gaps.n + 1;
        uint64_t *off = calloc(n_rec, sizeof(*off));
        Probe *p;

        assert_non_null(off);
        assert_true((n_rec - 2) % CHUNK == 0);
        for (size_t i = 1; i < n_rec; i++) {
                off[i] = off[i - 1] + run->gaps.v[i - 1];
        }
        *sc = (Script){
                .pre_gaps = run->pre_gaps,
                .n_pre_gaps = run->n_pre_gaps,
                .cap_pre = 1 << 22,
                .t = 1000000007ULL,
                .rec_off = off,
                .n_rec = n_rec,
                .n_advances = run->n_advances,
        };
        sc->pre = calloc(sc->cap_pre, sizeof(*sc->pre));
        sc->rec = calloc(n_rec, sizeof(*sc->rec));
        assert_true(sc->pre && sc->rec);
        memcpy(sc->advance_at, run->advance_at, sizeof(sc->advance_at));
        pc.counter.source = COUNTER_HW;
        pc.counter.hz = run->hz;
        tickconv_init(&pc.counter.conv, run->hz);

        assert_int_equal(probe_new(&pc, &p), 0);
        sc->p = p;
        probe_set_hooks(&hooks);
#ifdef JITTERD_TEST_EMULATED
        {
                cpu_set_t mine;

                assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
                probe_thread(p);
                assert_int_equal(sched_setaffinity(0, sizeof(mine), &mine), 0);
        }
#else
        assert_int_equal(probe_start(p), 0);
#endif
        /* The probe has its copy: @hooks is this function's, the next probe's are another's. */
        probe_set_hooks(NULL);
        /* The script ends the run (a stop request from here would cut it short); under a
         * sanitizer that takes a while, but not two minutes. */
        for (int i = 0; i < 120000 && probe_state(p) != PROBE_STOPPED; i++) {
                struct timespec ts = {0, 1000000};

                if (probe_state(p) == PROBE_FAILED) {
                        fail_msg("the probe failed: %s", probe_failure(p));
                }
                nanosleep(&ts, NULL);
        }
        assert_int_equal(probe_state(p), PROBE_STOPPED);
        assert_int_equal(probe_stop(p), 0);
        assert_false(sc->overrun);
        assert_int_equal(sc->pos, n_rec);
        assert_int_equal(sc->advanced, run->n_advances);
        assert_int_equal(probe_migrations(p), 0);
        return p;
}

/* Computes from @sc's readings what each slot and the event ring must hold. */
static void expect_from_script(const Run *run, const Script *sc, Expect *x)
{
        const size_t n_samples = sc->n_rec - 2;
        size_t bounds[MAX_ADVANCES + 1];

        /* The floor and band from the preheat the script gave. */
        x->floor = ref_floor(sc->pre, sc->n_pre);
        x->band = x->floor +
                  (x->floor > ref_ticks(100, run->hz) ? x->floor : ref_ticks(100, run->hz));
        x->threshold = ref_ticks(run->threshold_ns, run->hz);
        x->n_slots = run->n_advances + 1;
        x->ref = calloc(x->n_slots, sizeof(*x->ref));
        x->events = calloc(n_samples, sizeof(*x->events));
        x->n_events = 0;
        assert_true(x->ref && x->events);

        /* Which readings start a new slot. */
        for (size_t k = 0; k < run->n_advances; k++) {
                bounds[k] = boundary_at_or_after(run->advance_at[k]);
        }
        bounds[run->n_advances] = SIZE_MAX;
        for (size_t k = 0; k < x->n_slots; k++) {
                ref_slot_init(&x->ref[k]);
        }
        x->ref[0].start_ticks = sc->rec[1];
        for (size_t j = 1, k = 0; j <= n_samples; j++) {
                uint64_t gap = sc->rec[j + 1] - sc->rec[j], prev_gap = sc->rec[j] - sc->rec[j - 1];

                ref_add(&x->ref[k], gap, prev_gap, x->floor, x->band);
                if (gap >= x->threshold) {
                        x->events[x->n_events++] = (RefEvent){sc->rec[j], gap};
                        x->ref[k].events++;
                }
                if (j % CHUNK == 0) {
                        x->ref[k].end_ticks = sc->rec[j + 1];
                }
                if (j + 1 == bounds[k]) {
                        k++;
                        x->ref[k].start_ticks = sc->rec[j + 1];
                }
        }
}

/* Harvests every slot of the stopped probe and checks it exactly against @x. */
static void check_slots(Probe *p, const Script *sc, const Expect *x)
{
        const size_t n_samples = sc->n_rec - 2;
        uint64_t *gap_vals = calloc(n_samples, sizeof(*gap_vals));
        uint64_t *dd_vals = calloc(n_samples, sizeof(*dd_vals));
        ProbeSlot *slot = malloc(sizeof(*slot));

        assert_true(gap_vals && dd_vals && slot);
        /* Stopped, the probe needs no acknowledgement of the last. */
        for (size_t k = 0, j0 = 1; k < x->n_slots; k++) {
                const RefSlot *want = &x->ref[k];

                if (1 + k == probe_epoch(p)) {
                        assert_true(probe_advance(p) > 0);
                }
                assert_int_equal(probe_harvest(p, 1 + k, slot), 0);
                assert_int_equal(slot->start_ticks, want->start_ticks);
                assert_int_equal(slot->end_ticks, want->end_ticks);
                assert_int_equal(slot->lost_ticks, want->lost);
                assert_int_equal(slot->events, want->events);
                for (size_t i = 0; i < want->n; i++) {
                        size_t j = j0 + i;

                        gap_vals[i] = sc->rec[j + 1] - sc->rec[j];
                        dd_vals[i] = (uint64_t)((int64_t)gap_vals[i] -
                                                (int64_t)(sc->rec[j] - sc->rec[j - 1]));
                }
                check_stats(slot, want, gap_vals, dd_vals, (int)k);
                j0 += want->n;
        }
        free(slot);
        free(gap_vals);
        free(dd_vals);
}

/* Every event, in order, with its start and duration; none lost. */
static void check_events(Probe *p, const Expect *x)
{
        RingReader rd = {0};
        uint64_t s, d;
        size_t ev = 0;

        while (ring_pop(probe_ring(p), &rd, &s, &d) == 1) {
                assert_true(ev < x->n_events);
                if (s != x->events[ev].start || d != x->events[ev].duration) {
                        fail_msg("event %zu: got start %llu duration %llu, want %llu %llu", ev,
                                 (unsigned long long)s, (unsigned long long)d,
                                 (unsigned long long)x->events[ev].start,
                                 (unsigned long long)x->events[ev].duration);
                }
                ev++;
        }
        assert_int_equal(ev, x->n_events);
        assert_int_equal(rd.dropped, 0);
}

static void run_script(Run *run)
{
        Script sc;
        Expect x;
        Probe *p = play_script(run, &sc);

        expect_from_script(run, &sc, &x);
        assert_int_equal(probe_floor_ticks(p), x.floor);
        assert_int_equal(probe_band_ticks(p), x.band);
        check_slots(p, &sc, &x);
        check_events(p, &x);
        printf("  %zu samples in %zu slots, %zu events, floor %llu, band %llu, threshold %llu "
               "ticks\n",
               sc.n_rec - 2, x.n_slots, x.n_events, (unsigned long long)x.floor,
               (unsigned long long)x.band, (unsigned long long)x.threshold);

        probe_free(p);
        free(sc.pre);
        free(sc.rec);
        free((void *)sc.rec_off);
        free(x.ref);
        free(x.events);
        free(run->gaps.v);
}

/* --- The sequences ------------------------------------------------------------------------- */

static const uint64_t pre_1ghz[] = {20, 21, 22, 21, 21, 20, 23, 21};

/* At 1 GHz: runs, alternations, every value around the exact range, the band and the
 * threshold, both edges of buckets up to 2^42, large diff-of-diffs of both signs, zero gaps,
 * interruptions on and next to the loop's checks, and three epoch changes (in a block, on a
 * check, just before one). */
static void test_known_sequence(void **state)
{
        Run run = {.hz = 1000000000ULL,
                   .threshold_ns = 10000,
                   .preheat_ns = 200000,
                   .pre_gaps = pre_1ghz,
                   .n_pre_gaps = ELEMENTSOF(pre_1ghz)};
        Gaps *g = &run.gaps;
        const uint64_t thr = 10000, band = 21 + 100;

        (void)state;
        put(g, 21);
        for (int i = 0; i < 3000; i++) {
                put(g, 21); /* a run: the same pair again and again */
        }
        for (int i = 0; i < 2000; i++) {
                put(g, i % 2 ? 42 : 21); /* alternation */
        }
        for (uint64_t v = 0; v <= 300; v++) {
                put(g, v); /* the exact range, its end (63, 64) and the band (120, 121, 122) */
                put(g, 21);
        }
        for (int i = 0; i < 50; i++) {
                put(g, 0); /* a counter that did not move */
        }
        /* Diff-of-diffs at the exact range's end, both signs, both paths. */
        put(g, 0), put(g, 63), put(g, 0), put(g, 64), put(g, 0), put(g, 63), put(g, 127);
        put(g, 63), put(g, 0), put(g, 65), put(g, 1), put(g, 64);
        /* Around the threshold and the band. */
        for (uint64_t v = thr - 2; v <= thr + 2; v++) {
                put(g, v), put(g, 21);
        }
        for (uint64_t v = band - 2; v <= band + 2; v++) {
                put(g, v), put(g, 21);
        }
        /* Both edges of buckets from 64 to 2^42, alone and in pairs (a large diff-of-diff
         * between two large gaps, and of each sign against a short one). */
        for (unsigned i = 64; ref_lower(i) < (1ULL << 42); i += 5) {
                put(g, ref_lower(i)), put(g, 21);
                put(g, ref_upper(i)), put(g, ref_lower(i)), put(g, 21);
        }
        pad_to_chunk(g, 21);
        /* Interruptions on a check and next to one: samples CHUNK k - 1, k, k + 1 are gaps
         * v[CHUNK k - 1 ..]. */
        for (size_t k = 2; k < 6; k++) {
                g->v[CHUNK * k - 1] = 15000 + k;
                g->v[CHUNK * k] = 64;
                g->v[CHUNK * k + 1] = 63;
        }
        for (int i = 0; i < 8 * (int)CHUNK; i++) {
                put(g, i % 3 ? 21 : 22);
        }
        pad_to_chunk(g, 21);
        run.n_advances = 3;
        run.advance_at[0] = 5000;          /* inside a block */
        run.advance_at[1] = CHUNK * 8 + 1; /* the reading of a check */
        run.advance_at[2] = CHUNK * 12;    /* the reading just before one */
        run_script(&run);
}

static const uint64_t pre_25mhz[] = {0, 0, 1, 0};

/* An arm64 cntvct at 25 MHz: 64 ticks are 2.56 us, the loop runs ~4 samples a tick. A 1 us
 * threshold is 25 ticks, far inside the exact buckets; every gap from it on is an event, and
 * every gap from the band (3 ticks) on counts as lost. */
static void test_slow_counter(void **state)
{
        static const uint64_t thresholds_ns[] = {1000, 2000, 100};

        (void)state;
        for (size_t t = 0; t < ELEMENTSOF(thresholds_ns); t++) {
                Run run = {.hz = 25000000ULL,
                           .threshold_ns = thresholds_ns[t],
                           .preheat_ns = 400000,
                           .pre_gaps = pre_25mhz,
                           .n_pre_gaps = ELEMENTSOF(pre_25mhz)};
                Gaps *g = &run.gaps;

                put(g, 0);
                for (int i = 0; i < 4000; i++) {
                        put(g, i % 4 == 3);
                }
                for (uint64_t v = 0; v <= 70; v++) {
                        put(g, v), put(g, 0), put(g, 1);
                }
                for (uint64_t v = 20; v <= 30; v++) {
                        put(g, v), put(g, v); /* two in a row: a diff-of-diff of 0 */
                }
                pad_to_chunk(g, 0);
                g->v[CHUNK] = 26; /* an event on a check */
                g->v[CHUNK + 1] = 2;
                run.n_advances = 1;
                run.advance_at[0] = 3000;
                run_script(&run);
        }
}

/* A threshold below the band (and below the exact range): at 1 GHz with a floor of 21 ticks the
 * band is 121, and a 30 ns threshold is 30 ticks. Every gap from 30 on is an event, also those
 * the pair table could otherwise take (30..63), and every one from 121 on is time lost. */
static void test_threshold_below_band(void **state)
{
        static const uint64_t thresholds_ns[] = {30, 33, 64};

        (void)state;
        for (size_t t = 0; t < ELEMENTSOF(thresholds_ns); t++) {
                Run run = {.hz = 1000000000ULL,
                           .threshold_ns = thresholds_ns[t],
                           .preheat_ns = 200000,
                           .pre_gaps = pre_1ghz,
                           .n_pre_gaps = ELEMENTSOF(pre_1ghz)};
                Gaps *g = &run.gaps;

                put(g, 21);
                for (int i = 0; i < 2000; i++) {
                        put(g, i % 2 ? 22 : 21);
                }
                for (uint64_t v = 0; v <= 130; v++) {
                        put(g, v), put(g, 21);
                }
                for (uint64_t v = 14; v <= 70; v++) {
                        put(g, v), put(g, v), put(g, 20); /* a run of two, then back */
                }
                pad_to_chunk(g, 21);
                g->v[CHUNK] = thresholds_ns[t]; /* an event on a check */
                g->v[CHUNK + 1] = thresholds_ns[t] - 1;
                run.n_advances = 1;
                run.advance_at[0] = 1500;
                run_script(&run);
        }
}

/* The reference's own bucket rule agrees with the histogram's bounds; everything above rests
 * on the rule, so it is checked on its own terms too: consecutive, no gaps, at most 1/32 of the
 * lower edge wide from 64 on. */
static void test_reference_buckets(void **state)
{
        (void)state;
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                assert_int_equal(ref_lower(i), histogram_bucket_lower(i));
                assert_int_equal(ref_upper(i), histogram_bucket_upper(i));
                assert_int_equal(ref_index(ref_lower(i)), i);
                assert_int_equal(ref_index(ref_upper(i)), i);
                if (i + 1 < HIST_BUCKETS) {
                        assert_int_equal(ref_upper(i) + 1, ref_lower(i + 1));
                }
                if (i >= 64) {
                        assert_true((ref_upper(i) - ref_lower(i) + 1) * 32 <= ref_lower(i));
                }
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reference_buckets),
                cmocka_unit_test(test_known_sequence),
                cmocka_unit_test(test_slow_counter),
                cmocka_unit_test(test_threshold_below_band),
        };

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                fprintf(stderr, "skipped: the probe is pinned to CPU 1 (this machine has one)\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}

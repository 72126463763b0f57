/* Unit tests of the scale benchmark's code path (tools/benchmarks/scale*.c): synthetic CPUs
 * fed with intervals the test makes from gap sequences of its own, through the manager's real
 * tick and harvest, the history and the API's GetStats builder, must report what was fed:
 * samples, minimum, maximum and mean gap, interruptions and time lost, computed here from the
 * gaps themselves, and the attribution counters the generated /proc files moved on each CPU's
 * column. Also the fixture format (written and read back), and the committed fixture: each
 * recorded interval accounts for each of its samples once, in the pair table or the
 * histograms, as the loop records them. The harness is included (it holds the manager's
 * module); the log is kept in memory. No probe thread runs. */

#include "../tools/benchmarks/scale.c"
#include "../tools/benchmarks/scale-fixture.c"
#include "../tools/benchmarks/scale-probe.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "log-capture.h"
#include "util.h"

#define N_CPUS 4
#define INTERVALS 5
#define FIXTURE_FILE TEST_SOURCE_DIR "/../tools/benchmarks/scale-fixture/amd-epyc-kvm.txt"
/* The test's counter: 1 GHz, so a tick is a nanosecond. */
#define HZ 1000000000ULL
#define FLOOR 20
#define BAND 120
#define THRESHOLD 10000 /* the daemon's default, 10 us */
#define FAST 64         /* the loop's pair table: gaps below 2 * HIST_SUB ticks */

/* What the test knows of one interval's gaps, from the gaps themselves. */
typedef struct Truth {
        uint64_t samples, sum, min, max, events, lost;
        uint64_t small[FAST]; /* how many gaps of each value below FAST */
} Truth;

/* Counts a value of @n cells of @hist (dense) into a sparse list. */
static void to_sparse(const uint64_t *dense, size_t n, ScaleCount **ret, size_t *ret_n)
{
        *ret = calloc(n, sizeof(**ret));
        assert_non_null(*ret);
        *ret_n = 0;
        for (size_t i = 0; i < n; i++) {
                if (dense[i]) {
                        (*ret)[(*ret_n)++] = (ScaleCount){(uint32_t)i, dense[i]};
                }
        }
}

/* The interval a probe's loop leaves for the gaps @g[0..@n) (the gap before them @prev), as
 * the loop's contract (probe.c) has it: a pair of gaps both below FAST is one count in the
 * pair table, any other sample goes to the histograms, with squares and extremes of values of
 * FAST or more only; count and sum of every sample; time lost and interruptions. */
static void encode(const uint64_t *g, size_t n, uint64_t prev, ScaleInterval *iv, Truth *t)
{
        static uint64_t gap_hist[HIST_BUCKETS], neg[HIST_BUCKETS], pos[HIST_BUCKETS], pairs[4096];
        uint64_t at = 0;

        memset(gap_hist, 0, sizeof(gap_hist));
        memset(neg, 0, sizeof(neg));
        memset(pos, 0, sizeof(pos));
        memset(pairs, 0, sizeof(pairs));
        memset(iv, 0, sizeof(*iv));
        stats_init(&iv->gap);
        signed_stats_init(&iv->dd);
        *t = (Truth){.min = UINT64_MAX};
        iv->ring = calloc(n, sizeof(*iv->ring));
        assert_non_null(iv->ring);
        for (size_t i = 0; i < n; i++) {
                const uint64_t gap = g[i];
                const int64_t dd = (int64_t)gap - (int64_t)prev;
                const uint64_t mag = dd < 0 ? (uint64_t)-dd : (uint64_t)dd;

                at += gap;
                iv->gap.count++;
                iv->gap.sum += gap;
                iv->dd.count++;
                iv->dd.sum += dd;
                if ((gap | prev) < FAST) {
                        pairs[prev * FAST + gap]++;
                } else {
                        gap_hist[histogram_index(gap)]++;
                        (dd < 0 ? neg : pos)[histogram_index(mag)]++;
                        if (gap >= FAST) {
                                iv->gap.sumsq += (unsigned __int128)gap * gap;
                                iv->gap.min = gap < iv->gap.min ? gap : iv->gap.min;
                                iv->gap.max = gap > iv->gap.max ? gap : iv->gap.max;
                        }
                        if (mag >= FAST) {
                                iv->dd.sumsq += (unsigned __int128)mag * mag;
                                iv->dd.min = dd < iv->dd.min ? dd : iv->dd.min;
                                iv->dd.max = dd > iv->dd.max ? dd : iv->dd.max;
                        }
                }
                if (gap >= BAND) {
                        iv->lost_ticks += gap - FLOOR;
                }
                if (gap >= THRESHOLD) {
                        iv->events++;
                        iv->ring[iv->n_ring++] = (ScaleEvent){at - gap, gap};
                }
                prev = gap;
                if (gap < FAST) {
                        t->small[gap]++;
                }
                t->samples++;
                t->sum += gap;
                t->min = gap < t->min ? gap : t->min;
                t->max = gap > t->max ? gap : t->max;
        }
        t->events = iv->events;
        t->lost = iv->lost_ticks;
        iv->duration_ticks = at;
        to_sparse(gap_hist, HIST_BUCKETS, &iv->gap_hist, &iv->n_gap_hist);
        to_sparse(neg, HIST_BUCKETS, &iv->dd_neg, &iv->n_dd_neg);
        to_sparse(pos, HIST_BUCKETS, &iv->dd_pos, &iv->n_dd_pos);
        to_sparse(pairs, 4096, &iv->pairs, &iv->n_pairs);
}

/* Interval @k: a loop of 20 + k ns with some 1-tick jitter, 8 + k interruptions of
 * 15 + 7 * j us, and a few misses above the band: about 20 ms of samples. */
static void make_gaps(unsigned k, uint64_t *g, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                g[i] = 20 + k + (i % 3 == 0);
        }
        for (unsigned j = 0; j < 8 + k; j++) {
                g[(j + 1) * (n / 16)] = 15000 + 7000 * (uint64_t)j;
        }
        for (unsigned j = 0; j < 5; j++) {
                g[(j + 1) * (n / 7) + 3] = 200 + 50 * (uint64_t)j;
        }
}

typedef struct Fixture {
        ScaleFixture *x;
        Truth truth[3];
        char root[64];
        Scale *s;
} Fixture;

static int setup(void **state)
{
        Fixture *f = calloc(1, sizeof(*f));
        static uint64_t g[1000000];

        assert_non_null(f);
        assert_int_equal(scale_fixture_new(&f->x), 0);
        f->x->hz = HZ;
        f->x->floor_ticks = FLOOR;
        f->x->band_ticks = BAND;
        snprintf(f->x->origin, sizeof(f->x->origin), "test-scale");
        for (unsigned k = 0; k < 3; k++) {
                ScaleInterval iv;

                make_gaps(k, g, ELEMENTSOF(g));
                encode(g, ELEMENTSOF(g), 20 + k, &iv, &f->truth[k]);
                assert_int_equal(scale_fixture_add(f->x, &iv), 0);
                scale_interval_clear(&iv);
        }
        snprintf(f->root, sizeof(f->root), "/tmp/jitter-scale-test.XXXXXX");
        assert_non_null(mkdtemp(f->root));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;

        scale_free(f->s);
        rmdir(f->root);
        scale_fixture_free(f->x);
        free(f);
        return 0;
}

static void make_scale(Fixture *f)
{
        ScaleOptions o = {.n_cpus = N_CPUS, .fixture = f->x, .root = f->root, .textfile = true};
        int r = scale_new(&o, &f->s);

        if (r == -EPERM || r == -ENOMEM) {
                fprintf(stderr, "skipped: cannot lock the probes' memory here: %s\n", strerror(-r));
                exit(77);
        }
        assert_int_equal(r, 0);
}

static uint64_t json_u64(json_t *o, const char *path)
{
        char *copy = strdup(path), *save = NULL;
        json_t *v = o;

        for (char *k = strtok_r(copy, ".", &save); k && v; k = strtok_r(NULL, ".", &save)) {
                v = json_object_get(v, k);
        }
        free(copy);
        if (!json_is_number(v)) {
                fail_msg("%s is not a number", path);
        }
        return (uint64_t)json_number_value(v);
}

/* What window "all" of CPU @c must hold: the intervals it was fed, (k + c) % 3 for each k. */
static Truth expected(const Fixture *f, int c)
{
        Truth e = {.min = UINT64_MAX};

        for (unsigned k = 0; k < INTERVALS; k++) {
                const Truth *t = &f->truth[(k + (unsigned)c) % 3];

                e.samples += t->samples;
                e.sum += t->sum;
                e.min = t->min < e.min ? t->min : e.min;
                e.max = t->max > e.max ? t->max : e.max;
                e.events += t->events;
                e.lost += t->lost;
                for (unsigned v = 0; v < FAST; v++) {
                        e.small[v] += t->small[v];
                }
        }
        return e;
}

/* The median as the histogram has it: the value of the ceil(total / 2)-th smallest gap,
 * which these intervals put among the small ones, each in a bucket of its own. */
static uint64_t median(const Truth *e)
{
        uint64_t rank = (e->samples + 1) / 2, seen = 0;

        for (unsigned v = 0; v < FAST; v++) {
                seen += e->small[v];
                if (seen >= rank) {
                        return v;
                }
        }
        fail_msg("the median is not a small gap");
        return 0;
}

static void check_cpu(const Fixture *f, int c, const char *window)
{
        json_t *arr = scale_stats(f->s, c, window), *o;
        const Truth e = expected(f, c);
        /* The generated counters: the first tick only takes its base. */
        const uint64_t ticks = INTERVALS - 1, loc = 24 + N_CPUS + 1;
        char key[32];

        assert_non_null(arr);
        assert_int_equal(json_array_size(arr), 1);
        o = json_array_get(arr, 0);
        assert_int_equal(json_u64(o, "cpu"), c);
        assert_int_equal(json_u64(o, "samples"), e.samples);
        assert_int_equal(json_u64(o, "gap.count"), e.samples);
        assert_int_equal(json_u64(o, "gap.min_ns"), e.min);
        assert_int_equal(json_u64(o, "gap.max_ns"), e.max);
        assert_int_equal(json_u64(o, "gap.median_ns"), median(&e));
        assert_int_equal(json_u64(o, "diffdiff.count"), e.samples);
        assert_float_equal(json_number_value(json_object_get(json_object_get(o, "gap"), "mean_ns")),
                           (double)e.sum / (double)e.samples, 1e-6);
        assert_int_equal(json_u64(o, "interruptions.count"), e.events);
        assert_int_equal(json_u64(o, "lost_ns"), e.lost);
        assert_int_equal(json_u64(o, "interrupts.LOC"), ticks * scale_irq_step(f->s, loc, c));
        assert_int_equal(json_u64(o, "softirqs.TIMER"), ticks * scale_softirq_step(1, c));
        assert_int_equal(json_u64(o, "softirqs.RCU"), ticks * scale_softirq_step(9, c));
        assert_int_equal(json_u64(o, "ctxsw.voluntary"), ticks * scale_ctxsw_step(true, c));
        assert_int_equal(json_u64(o, "ctxsw.involuntary"), ticks * scale_ctxsw_step(false, c));
        /* The device rows of this CPU (IRQ 24 + row), and none of the others'. */
        for (unsigned r = 0; r < 24 + N_CPUS; r++) {
                json_t *v;

                snprintf(key, sizeof(key), "%u", 24 + r);
                v = json_object_get(json_object_get(o, "interrupts"), key);
                if (r % N_CPUS == (unsigned)c) {
                        assert_int_equal(json_integer_value(v), ticks * scale_irq_step(f->s, r, c));
                } else {
                        assert_null(v);
                }
        }
        json_decref(arr);
}

/* Every synthetic CPU reports what it was fed, in "all" and in "1m" (which holds them all). */
static void test_cpus_report_what_was_fed(void **state)
{
        Fixture *f = *state;
        ScaleCost cost = {0};
        char path[128];
        struct stat st;
        json_t *all;

        make_scale(f);
        assert_int_equal(
                scale_run(f->s, INTERVALS, now_ns(CLOCK_MONOTONIC) - 10 * NSEC_PER_SEC, &cost), 0);
        assert_int_equal(cost.intervals, INTERVALS);
        for (int c = 0; c < N_CPUS; c++) {
                check_cpu(f, c, "all");
                check_cpu(f, c, "1m");
        }
        all = scale_stats(f->s, -1, "all");
        assert_non_null(all);
        assert_int_equal(json_array_size(all), N_CPUS);
        for (size_t i = 0; i < N_CPUS; i++) {
                assert_int_equal(json_u64(json_array_get(all, i), "cpu"), i);
        }
        json_decref(all);
        snprintf(path, sizeof(path), "%s/jitterd.prom", f->root);
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size > 0);
}

static void assert_counts_equal(const ScaleCount *a, const ScaleCount *b, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(a[i].index, b[i].index);
                assert_int_equal(a[i].count, b[i].count);
        }
}

/* Written and read back, a fixture is the same. */
static void test_fixture_round_trip(void **state)
{
        Fixture *f = *state;
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        ScaleFixture *y = NULL;

        assert_non_null(m);
        assert_int_equal(scale_fixture_write(f->x, m), 0);
        fclose(m);
        m = fmemopen(text, len, "r");
        assert_int_equal(scale_fixture_read(m, &y), 0);
        fclose(m);
        free(text);
        assert_int_equal(y->hz, HZ);
        assert_int_equal(y->n_intervals, f->x->n_intervals);
        for (size_t i = 0; i < y->n_intervals; i++) {
                const ScaleInterval *a = &f->x->intervals[i], *b = &y->intervals[i];

                assert_int_equal(b->duration_ticks, a->duration_ticks);
                assert_int_equal(b->events, a->events);
                assert_true(b->gap.sum == a->gap.sum && b->gap.sumsq == a->gap.sumsq);
                assert_true(b->dd.sum == a->dd.sum && b->dd.sumsq == a->dd.sumsq);
                assert_int_equal(b->dd.min, a->dd.min);
                assert_int_equal(b->n_pairs, a->n_pairs);
                assert_int_equal(b->n_gap_hist, a->n_gap_hist);
                assert_int_equal(b->n_ring, a->n_ring);
                assert_counts_equal(a->pairs, b->pairs, a->n_pairs);
                assert_counts_equal(a->gap_hist, b->gap_hist, a->n_gap_hist);
                assert_counts_equal(a->dd_neg, b->dd_neg, a->n_dd_neg);
        }
        scale_fixture_free(y);
}

static uint64_t total(const ScaleCount *c, size_t n)
{
        uint64_t t = 0;

        for (size_t i = 0; i < n; i++) {
                t += c[i].count;
        }
        return t;
}

/* The committed recording: each sample once in the pair table or the histograms, each
 * interruption in the ring; replayed on one CPU, GetStats counts them all. */
static void test_recorded_fixture(void **state)
{
        Fixture *f = *state;
        FILE *in = fopen(FIXTURE_FILE, "re");
        uint64_t samples = 0, events = 0;
        ScaleOptions o = {.n_cpus = 1, .root = f->root};
        ScaleCost cost = {0};
        ScaleFixture *x = NULL;
        json_t *arr;

        assert_non_null(in);
        assert_int_equal(scale_fixture_read(in, &x), 0);
        fclose(in);
        assert_true(x->n_intervals >= 10);
        for (size_t i = 0; i < x->n_intervals; i++) {
                const ScaleInterval *iv = &x->intervals[i];
                uint64_t pairs = total(iv->pairs, iv->n_pairs);

                assert_int_equal(pairs + total(iv->gap_hist, iv->n_gap_hist), iv->gap.count);
                assert_int_equal(pairs + total(iv->dd_neg, iv->n_dd_neg) +
                                         total(iv->dd_pos, iv->n_dd_pos),
                                 iv->dd.count);
                assert_int_equal(iv->n_ring, iv->events);
                samples += iv->gap.count;
                events += iv->events;
        }
        o.fixture = x;
        assert_int_equal(scale_new(&o, &f->s), 0);
        assert_int_equal(scale_run(f->s, (unsigned)x->n_intervals,
                                   now_ns(CLOCK_MONOTONIC) - 100 * NSEC_PER_SEC, &cost),
                         0);
        arr = scale_stats(f->s, 0, "all");
        assert_int_equal(json_u64(json_array_get(arr, 0), "samples"), samples);
        assert_int_equal(json_u64(json_array_get(arr, 0), "interruptions.count"), events);
        json_decref(arr);
        f->s = scale_free(f->s);
        scale_fixture_free(x);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_cpus_report_what_was_fed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fixture_round_trip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_recorded_fixture, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

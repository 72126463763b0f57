/* Histogram against a sorted reference: bucket edges, percentiles, merge, subtract. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>

#include "histogram-internal.h"
#include "histogram.h"
#include "rng.h"
#include "util.h"

/* Log-uniform over 0 .. 2^44, so every magnitude is exercised. */
static uint64_t random_value(void)
{
        unsigned bits = (unsigned)(rng_next() % 45);

        return bits == 0 ? 0 : rng_next() & ((1ULL << bits) - 1);
}

static void test_bucket_edges(void **state)
{
        (void)state;
        assert_int_equal(histogram_bucket_lower(0), 0);
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                uint64_t lo = histogram_bucket_lower(i), hi = histogram_bucket_upper(i);

                assert_true(lo <= hi);
                assert_int_equal(histogram_index(lo), i);
                assert_int_equal(histogram_index(hi), i);
                if (i + 1 < HIST_BUCKETS) {
                        assert_int_equal(hi + 1, histogram_bucket_lower(i + 1));
                }
                /* Exact below 64, and at most 1/32 of the value wide above. */
                if (i < 2 * HIST_SUB) {
                        assert_int_equal(lo, hi);
                } else {
                        assert_true((hi - lo + 1) * HIST_SUB <= lo);
                }
        }
        assert_int_equal(histogram_bucket_upper(HIST_BUCKETS - 1), UINT64_MAX);
        assert_int_equal(histogram_index(UINT64_MAX), HIST_BUCKETS - 1);
        assert_true(histogram_index(1ULL << 40) < HIST_BUCKETS);
}

static void test_percentiles_against_sorted(void **state)
{
        const size_t n = 200000;
        const double qs[] = {0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1};
        uint64_t *v = malloc(n * sizeof(*v)), many[ELEMENTSOF(qs)];
        Histogram *h = calloc(1, sizeof(*h));

        (void)state;
        for (size_t i = 0; i < n; i++) {
                v[i] = random_value();
                histogram_add(h, v[i]);
        }
        qsort(v, n, sizeof(*v), cmp_u64);
        assert_int_equal(histogram_total(h), n);
        for (size_t k = 0; k < ELEMENTSOF(qs); k++) {
                size_t rank = qs[k] <= 0 ? 1 : (size_t)ceil(qs[k] * (double)n);
                uint64_t ref = v[rank - 1];

                /* The reported value is the upper edge of the bucket that holds the true one. */
                assert_int_equal(histogram_quantile(h, qs[k]),
                                 histogram_bucket_upper(histogram_index(ref)));
        }
        /* All of them in one pass: each the same edge of the bucket of the true one. */
        histogram_quantiles(h, qs, ELEMENTSOF(qs), many);
        for (size_t k = 0; k < ELEMENTSOF(qs); k++) {
                size_t rank = qs[k] <= 0 ? 1 : (size_t)ceil(qs[k] * (double)n);

                assert_int_equal(many[k], histogram_bucket_upper(histogram_index(v[rank - 1])));
        }
        /* Counting above a bucket edge is exact. */
        for (int k = 0; k < 200; k++) {
                uint64_t edge = histogram_bucket_lower(histogram_index(random_value()));
                uint64_t expect = 0;

                for (size_t i = 0; i < n; i++) {
                        expect += v[i] >= edge;
                }
                assert_int_equal(histogram_count_at_or_above(h, edge), expect);
        }
        free(v);
        free(h);
}

static void test_merge_subtract(void **state)
{
        Histogram *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
        Histogram *all = calloc(1, sizeof(*all)), *m = calloc(1, sizeof(*m));

        (void)state;
        for (int i = 0; i < 50000; i++) {
                uint64_t x = random_value(), y = random_value() + 1000;

                histogram_add(a, x);
                histogram_add(b, y);
                histogram_add(all, x);
                histogram_add(all, y);
        }
        histogram_merge(m, a);
        histogram_merge(m, b);
        assert_memory_equal(m->counts, all->counts, sizeof(all->counts));
        assert_int_equal(histogram_subtract(m, b), 0);
        assert_memory_equal(m->counts, a->counts, sizeof(a->counts));
        /* Subtracting what is not there is refused and changes nothing. */
        assert_int_equal(histogram_subtract(m, all), -ERANGE);
        assert_memory_equal(m->counts, a->counts, sizeof(a->counts));
        histogram_clear(m);
        assert_int_equal(histogram_total(m), 0);
        assert_int_equal(histogram_quantile(m, 0.5), 0);
        /* An empty histogram gives zeros, and asking for no quantile writes none. */
        {
                const double qs[] = {0.5, 0.99};
                uint64_t got[2] = {7, 7};
                int64_t sgot[2] = {7, 7};
                SignedHistogram *e = calloc(1, sizeof(*e));

                histogram_quantiles(m, qs, 2, got);
                assert_true(got[0] == 0 && got[1] == 0);
                signed_histogram_quantiles(e, qs, 2, sgot);
                assert_true(sgot[0] == 0 && sgot[1] == 0);
                histogram_add(m, 100);
                got[0] = 7;
                histogram_quantiles(m, qs, 0, got);
                assert_int_equal(got[0], 7);
                free(e);
        }
        free(a);
        free(b);
        free(all);
        free(m);
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return x < y ? -1 : x > y;
}

static void test_signed(void **state)
{
        const size_t n = 100000;
        int64_t *v = malloc(n * sizeof(*v));
        SignedHistogram *h = calloc(1, sizeof(*h)), *h2 = calloc(1, sizeof(*h2));
        const double qs[] = {0.00001, 0.01, 0.25, 0.5, 0.75, 0.99, 0.99999};
        int64_t many[ELEMENTSOF(qs)];

        (void)state;
        for (size_t i = 0; i < n; i++) {
                int64_t x = (int64_t)random_value();

                v[i] = (rng_next() & 1) ? -x : x;
                signed_histogram_add(h, v[i]);
        }
        signed_histogram_add(h, INT64_MIN);
        assert_int_equal(signed_histogram_total(h), n + 1);
        qsort(v, n, sizeof(*v), cmp_i64);
        /* Remove INT64_MIN again to compare with the sorted reference. */
        signed_histogram_clear(h2);
        signed_histogram_add(h2, INT64_MIN);
        assert_int_equal(signed_histogram_subtract(h, h2), 0);
        signed_histogram_quantiles(h, qs, ELEMENTSOF(qs), many);
        for (size_t k = 0; k < ELEMENTSOF(qs); k++) {
                size_t rank = (size_t)ceil(qs[k] * (double)n);
                int64_t ref = v[rank - 1], got = signed_histogram_quantile(h, qs[k]);
                uint64_t mag = ref < 0 ? -(uint64_t)ref : (uint64_t)ref;
                unsigned idx = histogram_index(mag);

                /* Never below the true value, and within its bucket; the same in one pass. */
                assert_int_equal(many[k], got);
                assert_true(got >= ref);
                if (ref < 0) {
                        assert_int_equal(got, -(int64_t)histogram_bucket_lower(idx));
                } else {
                        assert_int_equal(got, (int64_t)histogram_bucket_upper(idx));
                }
        }
        free(v);
        free(h);
        free(h2);
}

static int64_t walk_last;
static uint64_t walk_seen;

static int walk(int64_t lo, int64_t hi, uint64_t count, void *u)
{
        (void)u;
        assert_true(lo <= hi);
        assert_true(lo > walk_last || walk_seen == 0);
        walk_last = hi;
        walk_seen += count;
        return 0;
}

static void test_signed_foreach_order(void **state)
{
        SignedHistogram *h = calloc(1, sizeof(*h));

        (void)state;
        for (int i = 0; i < 10000; i++) {
                int64_t x = (int64_t)random_value();

                signed_histogram_add(h, (i & 1) ? -x : x);
        }
        /* At the probe's resolution and at coarser ones (each bucket a sum of whole ones). */
        for (unsigned bits = 0; bits <= HIST_SUB_BITS; bits++) {
                walk_seen = 0;
                assert_int_equal(signed_histogram_foreach(h, bits, walk, NULL), 0);
                assert_int_equal(walk_seen, 10000);
        }
        free(h);
}

/* At the probe's resolution the buckets are the histogram's own, as they are. */
static int walk_fine(uint64_t lo, uint64_t hi, uint64_t count, void *u)
{
        const Histogram *h = u;
        unsigned i = histogram_index(lo);

        assert_int_equal(lo, histogram_bucket_lower(i));
        assert_int_equal(hi, histogram_bucket_upper(i));
        assert_int_equal(count, h->counts[i]);
        walk_seen += count;
        return 0;
}

static void test_foreach_fine(void **state)
{
        Histogram *h = calloc(1, sizeof(*h));

        (void)state;
        assert_non_null(h);
        for (int i = 0; i < 10000; i++) {
                histogram_add(h, random_value());
        }
        histogram_add(h, UINT64_MAX);
        walk_seen = 0;
        assert_int_equal(histogram_foreach(h, HIST_SUB_BITS, walk_fine, h), 0);
        assert_int_equal(walk_seen, 10001);
        free(h);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bucket_edges),
                cmocka_unit_test(test_percentiles_against_sorted),
                cmocka_unit_test(test_merge_subtract),
                cmocka_unit_test(test_signed),
                cmocka_unit_test(test_signed_foreach_order),
                cmocka_unit_test(test_foreach_fine),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

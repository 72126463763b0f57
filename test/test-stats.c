/* Exact integer statistics against a two-pass floating-point reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <math.h>

#include "rng.h"
#include "stats.h"

static void assert_close(double got, double want, double rel)
{
        double tol = fabs(want) * rel + 1e-12;

        if (fabs(got - want) > tol) {
                fail_msg("got %.17g, want %.17g", got, want);
        }
}

static void test_against_two_pass(void **state)
{
        const size_t n = 100000;
        uint64_t *v = malloc(n * sizeof(*v));
        long double mean = 0, var = 0;
        Stats s;

        (void)state;
        stats_init(&s);
        for (size_t i = 0; i < n; i++) {
                /* Mostly a floor of ~20 ticks, sometimes a large gap: what a probe sees. */
                v[i] = (rng_next() % 100 == 0) ? rng_next() % (1ULL << 36) : 18 + rng_next() % 5;
                stats_add(&s, v[i]);
        }
        for (size_t i = 0; i < n; i++) {
                mean += v[i];
        }
        mean /= n;
        for (size_t i = 0; i < n; i++) {
                var += ((long double)v[i] - mean) * ((long double)v[i] - mean);
        }
        var /= n;
        assert_int_equal(s.count, n);
        assert_close(stats_mean(&s), (double)mean, 1e-12);
        assert_close(stats_variance(&s), (double)var, 1e-9);
        free(v);
}

static void test_signed_against_two_pass(void **state)
{
        const size_t n = 100000;
        int64_t *v = malloc(n * sizeof(*v));
        long double mean = 0, var = 0;
        SignedStats s;

        (void)state;
        signed_stats_init(&s);
        for (size_t i = 0; i < n; i++) {
                v[i] = (int64_t)(rng_next() % 2001) - 1000;
                if (rng_next() % 1000 == 0) {
                        v[i] *= 1000000;
                }
                signed_stats_add(&s, v[i]);
        }
        for (size_t i = 0; i < n; i++) {
                mean += v[i];
        }
        mean /= n;
        for (size_t i = 0; i < n; i++) {
                var += ((long double)v[i] - mean) * ((long double)v[i] - mean);
        }
        var /= n;
        assert_close(signed_stats_mean(&s), (double)mean, 1e-9);
        assert_close(signed_stats_variance(&s), (double)var, 1e-9);
        assert_true(s.min < 0 && s.max > 0);
        free(v);
}

/* What 10^12 samples accumulate: a running double sum would have lost the small variance
 * long before; the exact sums keep it. Built through merge, as the daemon builds windows. */
static void test_no_drift_at_1e12(void **state)
{
        const uint64_t half = 500000000000ULL; /* 5e11 samples of each value */
        const uint64_t a = 1ULL << 40, b = (1ULL << 40) + 2;
        Stats s1 = {.count = half, .min = a, .max = a}, s2 = s1, all;

        (void)state;
        s1.sum = (unsigned __int128)a * half;
        s1.sumsq = (unsigned __int128)a * a * half;
        s2 = (Stats){.count = half,
                     .min = b,
                     .max = b,
                     .sum = (unsigned __int128)b * half,
                     .sumsq = (unsigned __int128)b * b * half};
        stats_init(&all);
        stats_merge(&all, &s1);
        stats_merge(&all, &s2);
        assert_int_equal(all.count, 2 * half);
        assert_int_equal(all.min, a);
        assert_int_equal(all.max, b);
        /* Values a and a+2 in equal numbers: mean a+1, variance exactly 1. */
        assert_close(stats_mean(&all), (double)(a + 1), 1e-15);
        assert_close(stats_variance(&all), 1.0, 1e-12);
        assert_close(stats_variance(&s1), 0.0, 0);
}

static void test_empty_and_single(void **state)
{
        Stats s;
        SignedStats ss;

        (void)state;
        stats_init(&s);
        signed_stats_init(&ss);
        assert_true(stats_mean(&s) == 0.0);
        assert_true(stats_variance(&s) == 0.0);
        stats_add(&s, 42);
        signed_stats_add(&ss, -42);
        assert_int_equal(s.min, 42);
        assert_int_equal(s.max, 42);
        assert_true(ss.min == -42 && ss.max == -42);
        assert_true(stats_variance(&s) == 0.0);
        assert_true(signed_stats_mean(&ss) == -42.0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_against_two_pass),
                cmocka_unit_test(test_signed_against_two_pass),
                cmocka_unit_test(test_no_drift_at_1e12),
                cmocka_unit_test(test_empty_and_single),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

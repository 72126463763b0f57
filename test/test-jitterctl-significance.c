/* Unit tests of the Mann–Whitney U test and the sample summary behind `jitterctl compare`:
 * known textbook values, ties, the degenerate cases, and U against a direct pair count; and of
 * the per-interval worst gaps it takes from a timeline. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "jitterctl-significance.h"

#define assert_near(a, b, eps)                                                                     \
        do {                                                                                       \
                if (!(fabs((double)(a) - (double)(b)) <= (eps))) {                                 \
                        print_error("%s = %.12g, want %.12g\n", #a, (double)(a), (double)(b));     \
                        fail();                                                                    \
                }                                                                                  \
        } while (0)

/* The tortoise and the hare: finishing order T H H H H H T T T T T H, ranked by position. R's
 * wilcox.test(c(1,7,8,9,10,11), c(2,3,4,5,6,12), exact = FALSE) gives W = 25, p = 0.298. By
 * hand: rank sum of A = 46, U_A = 46 - 6 * 7 / 2 = 25, U = min(25, 36 - 25) = 11; mean 18,
 * sigma = sqrt(6 * 6 * 13 / 12) = sqrt(39); z = (25 - 18 - 0.5) / sqrt(39). */
static void test_textbook(void **state)
{
        const double a[] = {1, 7, 8, 9, 10, 11};
        const double b[] = {2, 3, 4, 5, 6, 12};
        MannWhitney mw = {0};

        assert_int_equal(mann_whitney(a, 6, b, 6, &mw), 0);
        assert_int_equal(mw.n_a, 6);
        assert_int_equal(mw.n_b, 6);
        assert_near(mw.u_a, 25, 1e-12);
        assert_near(mw.u, 11, 1e-12);
        assert_near(mw.z, 6.5 / sqrt(39), 1e-12);
        assert_near(mw.p, 0.2979530616, 1e-9);
        assert_false(mw.p < MANN_WHITNEY_ALPHA);

        /* Swapping the samples mirrors U_A and z, and leaves U and p. */
        assert_int_equal(mann_whitney(b, 6, a, 6, &mw), 0);
        assert_near(mw.u_a, 11, 1e-12);
        assert_near(mw.u, 11, 1e-12);
        assert_near(mw.z, -6.5 / sqrt(39), 1e-12);
        assert_near(mw.p, 0.2979530616, 1e-9);
}

/* Ties share the mean rank and shrink the variance. Pooled: 1a 2a 2a 2b 3a 3b 4b 5b; ranks of
 * A: 1, 3, 3, 5.5 = 12.5, U_A = 12.5 - 10 = 2.5; tie term (27 - 3) + (8 - 2) = 30; sigma =
 * sqrt(16 / 12 * (9 - 30 / 56)); z = (2.5 - 8 + 0.5) / sigma. */
static void test_ties(void **state)
{
        const double a[] = {3, 2, 1, 2};
        const double b[] = {5, 2, 4, 3};
        double sigma = sqrt(16.0 / 12 * (9 - 30.0 / 56));
        MannWhitney mw = {0};

        assert_int_equal(mann_whitney(a, 4, b, 4, &mw), 0);
        assert_near(mw.u_a, 2.5, 1e-12);
        assert_near(mw.u, 2.5, 1e-12);
        assert_near(mw.z, -5.0 / sigma, 1e-12);
        assert_near(mw.p, 0.1366582477, 1e-9);
}

static void test_identical(void **state)
{
        double a[40], b[40];
        MannWhitney mw = {0};

        for (int i = 0; i < 40; i++) {
                a[i] = b[i] = 1000 + (i % 7) * 13;
        }
        assert_int_equal(mann_whitney(a, 40, b, 40, &mw), 0);
        assert_near(mw.u_a, 800, 1e-9);
        assert_near(mw.z, 0, 1e-12);
        assert_near(mw.p, 1, 1e-12);
        assert_false(mw.p < MANN_WHITNEY_ALPHA);

        /* All values equal: no variance at all, and no difference. */
        for (int i = 0; i < 40; i++) {
                a[i] = b[i] = 5;
        }
        assert_int_equal(mann_whitney(a, 40, b, 3, &mw), 0);
        assert_near(mw.z, 0, 0);
        assert_near(mw.p, 1, 0);
}

static void test_shifted(void **state)
{
        double a[50], b[50];
        MannWhitney mw = {0};

        /* Before: 0..49, after: 100..149; every pair has a < b. */
        for (int i = 0; i < 50; i++) {
                a[i] = i;
                b[i] = 100 + i;
        }
        assert_int_equal(mann_whitney(a, 50, b, 50, &mw), 0);
        assert_near(mw.u_a, 0, 0);
        assert_near(mw.u, 0, 0);
        assert_near(mw.z, (0 - 1250 + 0.5) / sqrt(2500.0 * 101 / 12), 1e-9);
        assert_true(mw.p < 1e-15);
        assert_true(mw.p < MANN_WHITNEY_ALPHA);

        /* A small shift within a large spread is not significant. */
        for (int i = 0; i < 50; i++) {
                a[i] = (i * 37) % 100;
                b[i] = (i * 37) % 100 + 2;
        }
        assert_int_equal(mann_whitney(a, 50, b, 50, &mw), 0);
        assert_false(mw.p < MANN_WHITNEY_ALPHA);
}

/* U_A is the number of pairs with a > b, ties counting one half: checked against that
 * definition on data with many ties, in samples of different sizes. */
static void test_against_pair_count(void **state)
{
        double a[37], b[23];
        unsigned seed = 12345;

        for (int round = 0; round < 20; round++) {
                double pairs = 0;
                MannWhitney mw = {0};

                for (int i = 0; i < 37; i++) {
                        seed = seed * 1103515245u + 12345u;
                        a[i] = (double)((seed >> 16) % 10);
                }
                for (int i = 0; i < 23; i++) {
                        seed = seed * 1103515245u + 12345u;
                        b[i] = (double)((seed >> 16) % 10) + round % 3;
                }
                for (int i = 0; i < 37; i++) {
                        for (int j = 0; j < 23; j++) {
                                pairs += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
                        }
                }
                assert_int_equal(mann_whitney(a, 37, b, 23, &mw), 0);
                assert_near(mw.u_a, pairs, 1e-9);
                assert_near(mw.u, fmin(pairs, 37 * 23 - pairs), 1e-9);
                assert_true(mw.p >= 0 && mw.p <= 1);
        }
}

static void test_invalid(void **state)
{
        const double a[] = {1, 2};
        const double n[] = {1, NAN};
        MannWhitney mw = {0};

        assert_int_equal(mann_whitney(a, 0, a, 2, &mw), -EINVAL);
        assert_int_equal(mann_whitney(a, 2, a, 0, &mw), -EINVAL);
        assert_int_equal(mann_whitney(a, 2, n, 2, &mw), -EINVAL);
}

static void test_summary(void **state)
{
        const double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
        const double one[] = {42};
        SampleSummary s;

        sample_summarize(v, 8, &s);
        assert_int_equal(s.n, 8);
        assert_near(s.min, 2, 0);
        assert_near(s.max, 9, 0);
        assert_near(s.mean, 5, 1e-12);
        assert_near(s.stddev, sqrt(32.0 / 7), 1e-12);

        sample_summarize(one, 1, &s);
        assert_int_equal(s.n, 1);
        assert_near(s.mean, 42, 0);
        assert_near(s.stddev, 0, 0);

        sample_summarize(NULL, 0, &s);
        assert_int_equal(s.n, 0);

        /* Large values with a small spread: no cancellation. */
        {
                double big[3] = {1e12 + 1, 1e12 + 2, 1e12 + 3};

                sample_summarize(big, 3, &s);
                assert_near(s.mean, 1e12 + 2, 1e-3);
                assert_near(s.stddev, 1, 1e-6);
        }
}

static json_t *point(json_int_t duration, json_int_t samples, json_int_t max_gap)
{
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "start_ns", (json_int_t)0,
                         "duration_ns", duration, "samples", samples, "max_gap_ns", max_gap,
                         "interruptions", (json_int_t)0, "lost_ns", (json_int_t)0, "stalled", 0);
}

static void test_timeline_worst_gaps(void **state)
{
        const json_int_t s = 1000000000, m = 60 * s;
        json_t *points = json_pack("[o, o, o, o, o, o, o, o, o]", point(m, 10, 900),
                                   point(m + 5, 10, 800), point(m, 10, 700), point(s, 10, 11),
                                   point(s + s / 50, 10, 12), point(s - s / 50, 10, 13),
                                   point(s, 0, 0), point(s, 10, 14), point(s, 10, 15));
        uint64_t interval = 0;
        double *v = NULL;
        int n;

        /* Five fine intervals with samples outnumber three coarse ones; the empty one is
         * skipped. */
        n = timeline_worst_gaps(points, &v, &interval);
        assert_int_equal(n, 5);
        assert_true(interval >= (uint64_t)(s - s / 50) && interval <= (uint64_t)(s + s / 50));
        assert_true(v[0] == 11 && v[1] == 12 && v[2] == 13 && v[3] == 14 && v[4] == 15);
        free(v);
        json_decref(points);

        /* Intervals of 200 ms that thefts held open by up to 23 ms, each making the next one
         * as much shorter: around 200 ms, those within 10 % of it on either side (185 to 215
         * ms; 177 and 223 differ by 23 ms, more than a tenth of 200), six, not the four
         * that a cluster grown from the shortest would hold (195 to 205). */
        {
                const json_int_t ms = 1000000;

                points = json_pack(
                        "[o, o, o, o, o, o, o, o]", point(177 * ms, 10, 1), point(223 * ms, 10, 2),
                        point(185 * ms, 10, 3), point(215 * ms, 10, 4), point(200 * ms, 10, 5),
                        point(200 * ms, 10, 6), point(195 * ms, 10, 7), point(205 * ms, 10, 8));
                n = timeline_worst_gaps(points, &v, &interval);
                assert_int_equal(n, 6);
                assert_true(v[0] == 3 && v[1] == 4 && v[2] == 5 && v[3] == 6 && v[4] == 7 &&
                            v[5] == 8);
                assert_int_equal(interval, 200 * ms);
                free(v);
                json_decref(points);
        }

        points = json_pack("[o]", point(s, 0, 0));
        assert_int_equal(timeline_worst_gaps(points, &v, &interval), 0);
        assert_int_equal(interval, 0);
        free(v);
        json_decref(points);

        points = json_pack("[{s:i}]", "samples", 1);
        assert_int_equal(timeline_worst_gaps(points, &v, &interval), -EINVAL);
        json_decref(points);
        assert_int_equal(timeline_worst_gaps(NULL, &v, &interval), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_textbook),
                cmocka_unit_test(test_ties),
                cmocka_unit_test(test_identical),
                cmocka_unit_test(test_shifted),
                cmocka_unit_test(test_against_pair_count),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_summary),
                cmocka_unit_test(test_timeline_worst_gaps),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

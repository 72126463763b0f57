/* Unit tests of what jitterctl reads from the daemon's JSON: histogram buckets (joining rows,
 * quantile rows for the markers), statistics back into a SlotSummary, and the per-interval
 * worst gaps that compare tests. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "jitterctl-buckets.h"
#include "jitterctl-format.h"
#include "jitterctl-summary.h"

static json_t *bucket(json_int_t lo, json_int_t hi, json_int_t count)
{
        return json_pack("{s:I, s:I, s:I}", "lower_ns", lo, "upper_ns", hi, "count", count);
}

static void test_from_json(void **state)
{
        json_t *a = json_pack("[o, o, o]", bucket(200, 206, 5), bucket(100, 103, 7),
                              bucket(150, 155, 0));
        ReportBucket *b = NULL;

        /* Sorted by lower edge, empty buckets dropped. */
        assert_int_equal(buckets_from_json(a, &b), 2);
        assert_int_equal(b[0].lower_ns, 100);
        assert_int_equal(b[0].upper_ns, 103);
        assert_int_equal(b[0].count, 7);
        assert_int_equal(b[1].lower_ns, 200);
        free(b);
        json_decref(a);

        a = json_pack("[]");
        assert_int_equal(buckets_from_json(a, &b), 0);
        free(b);
        json_decref(a);

        a = json_pack("[o]", bucket(10, 5, 1));
        assert_int_equal(buckets_from_json(a, &b), -EINVAL);
        json_decref(a);
        a = json_pack("[o]", bucket(10, 11, -1));
        assert_int_equal(buckets_from_json(a, &b), -EINVAL);
        json_decref(a);
        a = json_pack("[{s:i, s:i}]", "lower_ns", 1, "upper_ns", 2);
        assert_int_equal(buckets_from_json(a, &b), -EINVAL);
        json_decref(a);
        a = json_pack("{}");
        assert_int_equal(buckets_from_json(a, &b), -EINVAL);
        json_decref(a);
}

static void test_join(void **state)
{
        /* 3 % buckets from 100 ns: rows may grow to 125 ns. */
        ReportBucket b[] = {
                {100, 103, 1}, {103, 106, 2}, {106, 110, 3}, {110, 113, 4},   {113, 117, 5},
                {117, 120, 6}, {120, 124, 7}, {124, 128, 8}, {1000, 1030, 9},
        };
        ReportBucket s[] = {
                {-130, -125, 1}, {-125, -120, 2}, {-1, 0, 3}, {0, 1, 4}, {1, 2, 5},
        };
        size_t n = report_buckets_join(b, sizeof(b) / sizeof(b[0]));

        assert_int_equal(n, 3);
        assert_int_equal(b[0].lower_ns, 100);
        assert_int_equal(b[0].upper_ns, 124);
        assert_int_equal(b[0].count, 1 + 2 + 3 + 4 + 5 + 6 + 7);
        assert_int_equal(b[1].lower_ns, 124);
        assert_int_equal(b[1].count, 8);
        assert_int_equal(b[2].lower_ns, 1000);
        assert_int_equal(buckets_total(b, n), 45);

        /* Negative rows join by magnitude; rows touching zero never join. */
        n = report_buckets_join(s, sizeof(s) / sizeof(s[0]));
        assert_int_equal(n, 4);
        assert_int_equal(s[0].lower_ns, -130);
        assert_int_equal(s[0].upper_ns, -120);
        assert_int_equal(s[0].count, 3);
        assert_int_equal(s[1].lower_ns, -1);
        assert_int_equal(s[2].lower_ns, 0);
        assert_int_equal(s[3].lower_ns, 1);
}

static void test_quantile_index(void **state)
{
        const ReportBucket b[] = {{10, 11, 50}, {11, 12, 49}, {100, 110, 1}};
        const ReportBucket c[] = {{10, 11, 7}, {11, 12, 93}};
        const ReportBucket none[] = {{10, 11, 0}};

        assert_int_equal(buckets_quantile_index(b, 3, 0.5), 0);
        assert_int_equal(buckets_quantile_index(b, 3, 0.99), 1);
        /* 0.07 * 100 is 7.000000000000001 in binary: still the 7th sample, in row 0. */
        assert_int_equal(buckets_quantile_index(c, 2, 0.07), 0);
        assert_int_equal(buckets_quantile_index(c, 2, 0.071), 1);
        assert_int_equal(buckets_quantile_index(b, 3, 0.991), 2);
        assert_int_equal(buckets_quantile_index(b, 3, 0.9999), 2);
        assert_int_equal(buckets_quantile_index(b, 3, 1.0), 2);
        assert_int_equal(buckets_quantile_index(b, 3, 1e-9), 0);
        assert_int_equal(buckets_quantile_index(none, 1, 0.5), -1);
        assert_int_equal(buckets_quantile_index(b, 0, 0.5), -1);
}

static json_t *values(double min, double max)
{
        return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:{s:f, s:f, s:f}}", "count",
                         (json_int_t)1000, "min_ns", min, "max_ns", max, "mean_ns", 12.5,
                         "stddev_ns", 3.0, "median_ns", 11.0, "percentiles", "p90", 15.0, "p99",
                         20.0, "p99.99", 900.0);
}

static void test_summary_from_json(void **state)
{
        json_t *stats = json_pack(
                "{s:i, s:I, s:I, s:o, s:o, s:{s:I, s:f}, s:I, s:f}", "cpu", 1, "samples",
                (json_int_t)1000, "duration_ns", (json_int_t)2000000000, "gap", values(8, 5000),
                "diffdiff", values(-4990, 4990), "interruptions", "count", (json_int_t)3,
                "per_second", 1.5, "lost_ns", (json_int_t)40000, "cpu_available_pct", 99.998);
        SlotSummary s;
        double v;

        assert_int_equal(slot_summary_from_json(stats, &s), 0);
        assert_int_equal(s.samples, 1000);
        assert_int_equal(s.duration_ns, 2000000000);
        assert_int_equal(s.events, 3);
        assert_true(s.events_per_s == 1.5);
        assert_int_equal(s.lost_ns, 40000);
        assert_true(s.cpu_available_pct == 99.998);
        assert_int_equal(s.gap.count, 1000);
        assert_true(s.gap.min_ns == 8 && s.gap.max_ns == 5000);
        assert_true(s.gap.variance_ns2 == 9.0);
        assert_true(s.dd.min_ns == -4990);
        /* summary_percentile_names: p90, p99, p99.9, p99.99, p99.999, p99.9999. */
        assert_true(s.gap.pct_ns[0] == 15.0);
        assert_true(s.gap.pct_ns[1] == 20.0);
        assert_true(isnan(s.gap.pct_ns[2]));
        assert_true(s.gap.pct_ns[3] == 900.0);

        assert_true(values_percentile(json_object_get(stats, "gap"), "p99.99", &v));
        assert_true(v == 900.0);
        /* p50 comes from the median when the map lacks it. */
        assert_true(values_percentile(json_object_get(stats, "gap"), "p50", &v));
        assert_true(v == 11.0);
        assert_false(values_percentile(json_object_get(stats, "gap"), "p99.9", &v));

        json_object_del(json_object_get(stats, "gap"), "mean_ns");
        assert_int_equal(slot_summary_from_json(stats, &s), -EINVAL);
        json_decref(stats);
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
                cmocka_unit_test(test_from_json),
                cmocka_unit_test(test_join),
                cmocka_unit_test(test_quantile_index),
                cmocka_unit_test(test_summary_from_json),
                cmocka_unit_test(test_timeline_worst_gaps),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of what jitterctl reads from the daemon's JSON: histogram buckets (joining rows,
 * quantile rows for the markers), statistics back into a SlotSummary, and the typed readers of a
 * GetStats entry and a Monitor interval. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "summary-json-internal.h"
#include "jitterctl-buckets.h"
#include "jitterctl-buckets-internal.h"
#include "jitterctl-format.h"
#include "summary-json.h"
#include "util.h"

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
        size_t n = report_buckets_join(b, ELEMENTSOF(b));

        assert_int_equal(n, 3);
        assert_int_equal(b[0].lower_ns, 100);
        assert_int_equal(b[0].upper_ns, 124);
        assert_int_equal(b[0].count, 1 + 2 + 3 + 4 + 5 + 6 + 7);
        assert_int_equal(b[1].lower_ns, 124);
        assert_int_equal(b[1].count, 8);
        assert_int_equal(b[2].lower_ns, 1000);
        assert_int_equal(buckets_total(b, n), 45);

        /* Negative rows join by magnitude; rows touching zero never join. */
        n = report_buckets_join(s, ELEMENTSOF(s));
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

/* A GetStats entry read member by member: what is there is read, what is missing stays 0, NaN
 * or NULL with its bit clear, and a malformed member is refused without losing the others. */
static void test_cpu_stats_read(void **state)
{
        json_t *o = json_pack("{s:i, s:s, s:I, s:I, s:o, s:o, s:{s:I, s:f}, s:I, s:f, s:I, s:n, "
                              "s:{s:i}, s:{}, s:{}, s:[], s:[]}",
                              "cpu", 3, "window", "5m", "samples", (json_int_t)1000, "duration_ns",
                              (json_int_t)2000000000, "gap", values(8, 5000), "diffdiff",
                              values(-4990, 4990), "interruptions", "count", (json_int_t)3,
                              "per_second", 1.5, "lost_ns", (json_int_t)40000, "cpu_available_pct",
                              99.998, "stalls", (json_int_t)2, "smi", "interrupts", "LOC", 12,
                              "softirqs", "ctxsw", "causes", "periods");
        const unsigned all = CPU_STATS_CPU | CPU_STATS_SAMPLES | CPU_STATS_DURATION |
                             CPU_STATS_EVENTS | CPU_STATS_LOST | CPU_STATS_STALLS |
                             CPU_STATS_GAP_COUNT | CPU_STATS_DD_COUNT;
        CpuStats s;

        assert_int_equal(cpu_stats_read(o, &s), 0);
        /* smi is null: no SMI counter, not an SMI count of 0. */
        assert_int_equal(s.have, all);
        assert_int_equal(s.cpu, 3);
        assert_string_equal(s.window, "5m");
        assert_int_equal(s.summary.samples, 1000);
        assert_int_equal(s.summary.duration_ns, 2000000000);
        assert_int_equal(s.summary.events, 3);
        assert_true(s.summary.events_per_s == 1.5);
        assert_int_equal(s.summary.lost_ns, 40000);
        assert_true(s.summary.cpu_available_pct == 99.998);
        assert_int_equal(s.stalls, 2);
        assert_true(s.summary.gap.max_ns == 5000 && s.summary.dd.min_ns == -4990);
        assert_int_equal(json_integer_value(json_object_get(s.interrupts, "LOC")), 12);
        assert_true(json_is_object(s.softirqs) && json_is_object(s.ctxsw));
        assert_true(json_is_array(s.causes) && json_is_array(s.periods));

        json_object_set_new(o, "smi", json_integer(4));
        json_object_del(o, "samples");
        json_object_del(o, "window");
        json_object_del(json_object_get(o, "gap"), "max_ns");
        json_object_del(o, "interruptions");
        json_object_del(o, "interrupts");
        assert_int_equal(cpu_stats_read(o, &s), 0);
        assert_int_equal(s.have, (all | CPU_STATS_SMI) & ~(CPU_STATS_SAMPLES | CPU_STATS_EVENTS));
        assert_int_equal(s.smi, 4);
        assert_int_equal(s.summary.samples, 0);
        assert_null(s.window);
        assert_true(isnan(s.summary.gap.max_ns) && s.summary.gap.min_ns == 8);
        assert_true(isnan(s.summary.events_per_s));
        assert_null(s.interrupts);

        /* Malformed: refused, and the members that are well-formed are still read. */
        json_object_set_new(o, "stalls", json_string("2"));
        assert_int_equal(cpu_stats_read(o, &s), -EBADMSG);
        assert_false(s.have & CPU_STATS_STALLS);
        assert_int_equal(s.cpu, 3);
        json_object_set_new(o, "stalls", json_integer(-1));
        assert_int_equal(cpu_stats_read(o, &s), -EBADMSG);
        json_object_set_new(o, "stalls", json_integer(2));
        json_object_set_new(o, "ctxsw", json_array());
        assert_int_equal(cpu_stats_read(o, &s), -EBADMSG);
        assert_null(s.ctxsw);
        json_object_set_new(o, "ctxsw", json_object());
        json_object_set_new(json_object_get(o, "diffdiff"), "percentiles", json_integer(1));
        assert_int_equal(cpu_stats_read(o, &s), -EBADMSG);
        json_decref(o);

        o = json_array();
        assert_int_equal(cpu_stats_read(o, &s), -EBADMSG);
        assert_int_equal(s.have, 0);
        assert_true(isnan(s.summary.gap.mean_ns));
        json_decref(o);
        assert_int_equal(cpu_stats_read(NULL, &s), -EBADMSG);
}

static void test_value_summary_get(void **state)
{
        ValueSummary v = {
                .count = 9,
                .min_ns = 1,
                .max_ns = 2,
                .mean_ns = 3,
                .stddev_ns = 4,
                .median_ns = 5,
                .pct_ns = {90, 99, 99.9, 99.99, 99.999, NAN},
        };

        assert_true(value_summary_get(&v, "min_ns") == 1);
        assert_true(value_summary_get(&v, "max_ns") == 2);
        assert_true(value_summary_get(&v, "mean_ns") == 3);
        assert_true(value_summary_get(&v, "stddev_ns") == 4);
        assert_true(value_summary_get(&v, "median_ns") == 5);
        assert_true(value_summary_get(&v, "p50") == 5);
        assert_true(value_summary_get(&v, "p90") == 90);
        assert_true(value_summary_get(&v, "p99.99") == 99.99);
        assert_true(isnan(value_summary_get(&v, "p99.9999")));
        assert_true(isnan(value_summary_get(&v, "p99.5")));
        assert_true(isnan(value_summary_get(&v, "count")));
}

/* Monitor's IntervalCpu: what interval_cpu_to_json() writes, read with jansson, and read back
 * by interval_cpu_read(), also when the object has only some members. */
static void test_interval_cpu(void **state)
{
        SlotSummary s = {
                .samples = 500,
                .events = 7,
                .lost_ns = 12000,
                .cpu_available_pct = 99.25,
                .gap = {.max_ns = 45000, .pct_ns = {10, 21.5}},
        };
        json_t *o = interval_cpu_to_json(2, "running", &s);
        json_int_t cpu, samples, max_gap, events, lost;
        const char *st;
        double p99, avail;
        IntervalCpu ic;

        assert_non_null(o);
        assert_int_equal(json_unpack(o, "{s:I, s:s, s:I, s:I, s:F, s:I, s:I, s:F !}", "cpu", &cpu,
                                     "state", &st, "samples", &samples, "max_gap_ns", &max_gap,
                                     "p99_ns", &p99, "interruptions", &events, "lost_ns", &lost,
                                     "cpu_available_pct", &avail),
                         0);
        assert_true(cpu == 2 && samples == 500 && max_gap == 45000 && events == 7 && lost == 12000);
        assert_string_equal(st, "running");
        assert_true(p99 == 21.5 && avail == 99.25);

        json_object_set_new(o, "interrupts", json_pack("{s:i}", "LOC", 5));
        assert_int_equal(interval_cpu_read(o, &ic), 0);
        assert_int_equal(ic.have, INTERVAL_CPU_CPU | INTERVAL_CPU_SAMPLES | INTERVAL_CPU_MAX_GAP |
                                          INTERVAL_CPU_EVENTS | INTERVAL_CPU_LOST);
        assert_int_equal(ic.cpu, 2);
        assert_string_equal(ic.state, "running");
        assert_int_equal(ic.samples, 500);
        assert_int_equal(ic.max_gap_ns, 45000);
        assert_true(ic.p99_ns == 21.5);
        assert_int_equal(ic.events, 7);
        assert_int_equal(ic.lost_ns, 12000);
        assert_true(ic.cpu_available_pct == 99.25);
        assert_int_equal(json_integer_value(json_object_get(ic.interrupts, "LOC")), 5);
        json_decref(o);

        o = json_pack("{s:i, s:s, s:I, s:s}", "cpu", 1, "state", "stalled", "samples",
                      (json_int_t)0, "max_gap_ns", "5000");
        assert_int_equal(interval_cpu_read(o, &ic), -EBADMSG);
        assert_int_equal(ic.have, INTERVAL_CPU_CPU | INTERVAL_CPU_SAMPLES);
        assert_int_equal(ic.max_gap_ns, 0);
        assert_true(isnan(ic.p99_ns));
        assert_null(ic.interrupts);
        json_decref(o);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_from_json),      cmocka_unit_test(test_join),
                cmocka_unit_test(test_quantile_index), cmocka_unit_test(test_summary_from_json),
                cmocka_unit_test(test_cpu_stats_read), cmocka_unit_test(test_value_summary_get),
                cmocka_unit_test(test_interval_cpu),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

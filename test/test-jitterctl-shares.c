/* Unit tests of jitterctl explain's comparison with GetCauses and GetStats replies written by
 * hand, each row's shares, error and verdict worked out here: a task let in by a reschedule
 * IPI shares a row with the involuntary switches, a tick that lets a kworker in now and then
 * does not, nor does an IPI that lets tasks in at too few of its occurrences; each of the fit's
 * groups in a row adds its error once; numbered IRQs are one row; too little trace, no fit and
 * a counter only the trace knows; which rows are a cross-check (a standard error under
 * EXPLAIN_CROSS_CHECK_STDERR), and the estimate alone, for a window without trace. */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "jitterctl-shares.h"
#include "util.h"

/* The time lost in every window here: 1 s. */
#define LOST 1000000000.0

static json_t *load(const char *text)
{
        json_error_t err;
        json_t *o = json_loads(text, 0, &err);

        if (!o) {
                fail_msg("bad test JSON at %d: %s", err.position, err.text);
        }
        return o;
}

/* The compare row named @source in @out, or NULL. */
static json_t *row(json_t *out, const char *source)
{
        json_t *r;
        size_t i;

        json_array_foreach(json_object_get(out, "compare"), i, r)
        {
                if (strcmp(json_string_value(json_object_get(r, "source")), source) == 0) {
                        return r;
                }
        }
        return NULL;
}

static void assert_row(json_t *out, const char *source, double exact, double ls, double se,
                       const char *verdict)
{
        json_t *r = row(out, source), *v;

        if (!r) {
                fail_msg("no row \"%s\" in %s", source,
                         json_dumps(json_object_get(out, "compare"), JSON_COMPACT));
        }
        assert_true(fabs(json_number_value(json_object_get(r, "exact_share")) - exact) < 1e-9);
        v = json_object_get(r, "ls_share");
        if (isnan(ls)) {
                assert_true(!v || json_is_null(v));
        } else {
                assert_true(fabs(json_number_value(v) - ls) < 1e-9);
        }
        v = json_object_get(r, "ls_stderr");
        if (isnan(se)) {
                assert_true(!v || json_is_null(v));
        } else {
                assert_true(fabs(json_number_value(v) - se) < 1e-9);
        }
        assert_string_equal(json_string_value(json_object_get(r, "verdict")), verdict);
}

/* A GetCauses entry: the thief (500 ms, let in by @res_count reschedule IPIs), the IPI's own
 * vector, the tick (50 ms) and a kworker the tick let in (2 ms); all of the 600 ms of
 * interruptions explained (@explained_ns). */
static json_t *causes_of(int res_count, long explained_ns)
{
        char text[2048];

        snprintf(text, sizeof(text),
                 "{\"cpu\": 1, \"window\": \"all\", \"interruptions\": 1000,"
                 " \"interruptions_ns\": 600000000, \"explained\": 1000, \"explained_ns\": %ld,"
                 " \"trace_lost\": 0, \"other_ns\": 0, \"unexplained_ns\": 47000000,"
                 " \"causes\": ["
                 "  {\"kind\": \"task\", \"name\": \"thief:7\", \"ns\": 500000000, \"count\": 100,"
                 "   \"counter\": \"ctxsw:involuntary\"},"
                 "  {\"kind\": \"vector\", \"name\": \"local_timer\", \"ns\": 30000000,"
                 "   \"count\": 2500, \"counter\": \"irq:LOC\"},"
                 "  {\"kind\": \"timer\", \"name\": \"tick_nohz_handler\", \"ns\": 20000000,"
                 "   \"count\": 2500, \"counter\": \"irq:LOC\"},"
                 "  {\"kind\": \"work\", \"name\": \"vmstat_update\", \"ns\": 2000000,"
                 "   \"count\": 3, \"counter\": \"ctxsw:involuntary\"},"
                 "  {\"kind\": \"vector\", \"name\": \"reschedule\", \"ns\": 1000000,"
                 "   \"count\": 100, \"counter\": \"irq:RES\"},"
                 "  {\"kind\": \"vector\", \"name\": \"mystery\", \"ns\": 0, \"count\": 1,"
                 "   \"counter\": null}],"
                 " \"woken_by\": {\"irq:RES\": {\"ns\": 500000000, \"count\": %d},"
                 "  \"irq:LOC\": {\"ns\": 2000000, \"count\": 3}}}",
                 explained_ns, res_count);
        return load(text);
}

/* A GetStats entry whose fit gives RES 45 % (+- 1 %) and the switches 5 % (+- 2 %), and cannot
 * price the tick. */
static json_t *stats_of(void)
{
        return load("{\"cpu\": 1, \"lost_ns\": 1000000000, \"interruptions\": {\"count\": 1000},"
                    " \"causes\": ["
                    "  {\"source\": \"irq:RES\", \"count\": 110, \"explains\": 0.45,"
                    "   \"explains_stderr\": 0.01, \"group\": \"irq:RES\","
                    "   \"group_explains_stderr\": 0.01},"
                    "  {\"source\": \"ctxsw:involuntary\", \"count\": 130, \"explains\": 0.05,"
                    "   \"explains_stderr\": 0.02, \"group\": \"ctxsw:involuntary\","
                    "   \"group_explains_stderr\": 0.02},"
                    "  {\"source\": \"irq:LOC\", \"count\": 2500, \"explains\": 0.0,"
                    "   \"explains_stderr\": null, \"group\": \"irq:LOC\","
                    "   \"group_explains_stderr\": null}]}");
}

/* The reschedule IPI let the thief in at 100 of its 110 occurrences, for half the time lost:
 * one row with the switches, the two errors in quadrature; the tick let a kworker in for
 * 0.2 % of the time lost: a row of its own, which the fit cannot price. */
static void test_woken_row(void **state)
{
        json_t *causes = causes_of(100, 600000000), *stats = stats_of();
        json_t *out = shares_compare_cpu(causes, stats);

        (void)state;
        assert_non_null(out);
        /* exact: the thief, the kworker and the vector; band max(0.05, 0.25 * 0.503) */
        assert_row(out, "ctxsw:involuntary + irq:RES", (500e6 + 2e6 + 1e6) / LOST, 0.45 + 0.05,
                   sqrt(0.01 * 0.01 + 0.02 * 0.02), "agree");
        assert_row(out, "irq:LOC", 50e6 / LOST, 0.0, NAN, "uncertain");
        assert_row(out, "(no counter)", 0.0, NAN, NAN, "trace only");
        assert_null(row(out, "ctxsw:involuntary"));
        assert_null(row(out, "irq:RES"));
        assert_true(json_is_true(json_object_get(out, "fit")));
        json_decref(out);
        json_decref(causes);
        json_decref(stats);
}

/* The same IPI let tasks in at only 40 of its 110 occurrences: its count does not move with
 * the switches, so each counter is its own row, and the two disagree (the fit puts the time
 * on the IPI). */
static void test_woken_too_rarely(void **state)
{
        json_t *causes = causes_of(40, 600000000), *stats = stats_of();
        json_t *out = shares_compare_cpu(causes, stats);

        (void)state;
        assert_non_null(out);
        /* band max(0.05, 0.25 * 0.502); 0.452 apart, more than it and two errors */
        assert_row(out, "ctxsw:involuntary", 502e6 / LOST, 0.05, 0.02, "disagree");
        assert_row(out, "irq:RES", 1e6 / LOST, 0.45, 0.01, "disagree");
        json_decref(out);
        json_decref(causes);
        json_decref(stats);
}

/* The trace explains 80 % of the interruptions' time: no row is compared. */
static void test_too_little_trace(void **state)
{
        json_t *causes = causes_of(100, 480000000), *stats = stats_of();
        json_t *out = shares_compare_cpu(causes, stats);

        (void)state;
        assert_non_null(out);
        assert_true(fabs(json_number_value(json_object_get(out, "coverage")) - 0.8) < 1e-9);
        assert_row(out, "ctxsw:involuntary + irq:RES", 503e6 / LOST, 0.5,
                   sqrt(0.01 * 0.01 + 0.02 * 0.02), "no trace");
        json_decref(out);
        json_decref(causes);
        json_decref(stats);
}

/* A row that holds the fit's group of two (the switches with softirq:TIMER, +- 3 % together)
 * and a counter the woken_by rule joins to it (irq:CAL, +- 2 %): each group's error once,
 * 3.6 %; numbered IRQs against the trace's device IRQs in one row, their errors in quadrature;
 * without "explains" (no fit) every row says so. */
static void test_groups_in_a_row(void **state)
{
        json_t *causes =
                load("{\"cpu\": 1, \"window\": \"all\", \"interruptions\": 10,"
                     " \"interruptions_ns\": 400000000, \"explained\": 10,"
                     " \"explained_ns\": 400000000, \"other_ns\": 0, \"unexplained_ns\": 0,"
                     " \"causes\": ["
                     "  {\"kind\": \"task\", \"name\": \"t:9\", \"ns\": 300000000, \"count\": 5,"
                     "   \"counter\": \"ctxsw:involuntary\"},"
                     "  {\"kind\": \"irq\", \"name\": \"virtio0\", \"ns\": 100000000, \"count\": 5,"
                     "   \"counter\": \"irq:device\"}],"
                     " \"woken_by\": {\"irq:CAL\": {\"ns\": 300000000, \"count\": 5}}}");
        json_t *stats =
                load("{\"cpu\": 1, \"lost_ns\": 1000000000, \"interruptions\": {\"count\": 10},"
                     " \"causes\": ["
                     "  {\"source\": \"ctxsw:involuntary\", \"count\": 5, \"explains\": 0.2,"
                     "   \"explains_stderr\": 0.3, \"group\": \"softirq:TIMER\","
                     "   \"group_explains_stderr\": 0.03},"
                     "  {\"source\": \"softirq:TIMER\", \"count\": 9, \"explains\": 0.1,"
                     "   \"explains_stderr\": 0.3, \"group\": \"softirq:TIMER\","
                     "   \"group_explains_stderr\": 0.03},"
                     "  {\"source\": \"irq:CAL\", \"count\": 6, \"explains\": 0.05,"
                     "   \"explains_stderr\": 0.02, \"group\": \"irq:CAL\","
                     "   \"group_explains_stderr\": 0.02},"
                     "  {\"source\": \"irq:11\", \"count\": 5, \"explains\": 0.06,"
                     "   \"explains_stderr\": 0.006, \"group\": \"irq:11\","
                     "   \"group_explains_stderr\": 0.006},"
                     "  {\"source\": \"irq:12\", \"count\": 5, \"explains\": 0.03,"
                     "   \"explains_stderr\": 0.008, \"group\": \"irq:12\","
                     "   \"group_explains_stderr\": 0.008}]}");
        json_t *out = shares_compare_cpu(causes, stats), *nofit;
        json_t *r;
        size_t i;

        (void)state;
        assert_non_null(out);
        /* band max(0.05, 0.25 * 0.35), two errors of 3.6 % within it */
        assert_row(out, "ctxsw:involuntary + irq:CAL + softirq:TIMER", 0.3, 0.35,
                   sqrt(0.03 * 0.03 + 0.02 * 0.02), "agree");
        assert_row(out, "irq:device", 0.1, 0.09, sqrt(0.006 * 0.006 + 0.008 * 0.008), "agree");
        json_decref(out);
        /* The same without a fit. */
        json_array_foreach(json_object_get(stats, "causes"), i, r)
        {
                json_object_del(r, "explains");
        }
        nofit = shares_compare_cpu(causes, stats);
        assert_non_null(nofit);
        assert_false(json_is_true(json_object_get(nofit, "fit")));
        json_array_foreach(json_object_get(nofit, "compare"), i, r)
        {
                assert_string_equal(json_string_value(json_object_get(r, "verdict")), "no fit");
        }
        json_decref(nofit);
        json_decref(causes);
        json_decref(stats);
}

/* Rows whose least-squares share has standard error @se (NAN: null) in the fit, each with the
 * exact share @exact and the least-squares share @ls. */
static const struct {
        const char *source;
        double exact, ls, se;
} cross_check_rows[] = {
        {"irq:A", 0.10, 0.11, 0.049}, {"irq:B", 0.20, 0.19, 0.051}, {"irq:C", 0.05, 0.04, NAN},
        {"irq:D", 0.15, 0.15, 0.0},   {"irq:E", 0.02, 0.30, 0.049},
};

/* GetCauses and GetStats entries of cross_check_rows, a cause the fit has no counter of
 * (softirq:X) and the fit's background, known to within @background_se (NAN: null). */
static void cross_check_input(double background_se, json_t **ret_causes, json_t **ret_stats)
{
        json_t *causes = load("{\"cpu\": 1, \"window\": \"all\", \"interruptions\": 100,"
                              " \"interruptions_ns\": 600000000, \"explained\": 100,"
                              " \"explained_ns\": 600000000, \"other_ns\": 0,"
                              " \"unexplained_ns\": 0, \"woken_by\": {},"
                              " \"causes\": [{\"kind\": \"softirq\", \"name\": \"X\","
                              " \"ns\": 1000000, \"count\": 1, \"counter\": \"softirq:X\"}]}");
        json_t *stats = load("{\"cpu\": 1, \"window\": \"all\", \"lost_ns\": 1000000000,"
                             " \"interruptions\": {\"count\": 100}, \"causes\": []}");

        for (size_t i = 0; i < ELEMENTSOF(cross_check_rows); i++) {
                double se = cross_check_rows[i].se;
                json_t *s = isnan(se) ? json_null() : json_real(se);

                json_array_append_new(json_object_get(causes, "causes"),
                                      json_pack("{ss ss sI si ss}", "kind", "irq", "name",
                                                cross_check_rows[i].source, "ns",
                                                (json_int_t)(cross_check_rows[i].exact * LOST),
                                                "count", 10, "counter",
                                                cross_check_rows[i].source));
                json_array_append_new(json_object_get(stats, "causes"),
                                      json_pack("{ss si sf sO ss sO}", "source",
                                                cross_check_rows[i].source, "count", 10, "explains",
                                                cross_check_rows[i].ls, "explains_stderr", s,
                                                "group", cross_check_rows[i].source,
                                                "group_explains_stderr", s));
                json_decref(s);
        }
        json_object_set_new(
                stats, "background",
                json_pack("{sf sf so}", "ns_per_second", 1e6, "explains", 0.2, "explains_stderr",
                          isnan(background_se) ? json_null() : json_real(background_se)));
        *ret_causes = causes;
        *ret_stats = stats;
}

/* A row is a cross-check exactly where its standard error is known and under
 * EXPLAIN_CROSS_CHECK_STDERR (worked out here from the inputs): 0.049 is, 0.051 and none are
 * not; the row the fit has no counter of is not; every row keeps its verdict all the same. */
static void test_cross_check(void **state)
{
        const double background_se[] = {0.03, 0.07, NAN};

        (void)state;
        for (size_t b = 0; b < ELEMENTSOF(background_se); b++) {
                json_t *causes, *stats, *out, *bg;
                size_t shown = 0;

                cross_check_input(background_se[b], &causes, &stats);
                out = shares_compare_cpu(causes, stats);
                assert_non_null(out);
                for (size_t i = 0; i < ELEMENTSOF(cross_check_rows); i++) {
                        double se = cross_check_rows[i].se;
                        bool expect = !isnan(se) && se < EXPLAIN_CROSS_CHECK_STDERR;
                        json_t *r = row(out, cross_check_rows[i].source);

                        assert_non_null(r);
                        assert_true(json_is_boolean(json_object_get(r, "cross_check")));
                        assert_int_equal(json_is_true(json_object_get(r, "cross_check")), expect);
                        assert_non_null(json_string_value(json_object_get(r, "verdict")));
                        shown += expect;
                }
                /* irq:A and irq:D, and irq:E, which the fit knows well and which disagrees */
                assert_int_equal(shown, 3);
                assert_string_equal(
                        json_string_value(json_object_get(row(out, "irq:E"), "verdict")),
                        "disagree");
                assert_string_equal(
                        json_string_value(json_object_get(row(out, "irq:C"), "verdict")),
                        "uncertain");
                assert_false(json_is_true(json_object_get(row(out, "softirq:X"), "cross_check")));
                assert_string_equal(
                        json_string_value(json_object_get(row(out, "softirq:X"), "verdict")),
                        "trace only");
                bg = json_object_get(out, "background");
                assert_non_null(bg);
                assert_int_equal(json_is_true(json_object_get(bg, "cross_check")),
                                 !isnan(background_se[b]) &&
                                         background_se[b] < EXPLAIN_CROSS_CHECK_STDERR);
                /* GetStats' own background is left as it was. */
                assert_null(json_object_get(json_object_get(stats, "background"), "cross_check"));
                json_decref(out);
                json_decref(causes);
                json_decref(stats);
        }
}

/* Without the trace: every row the fit has, the largest share first, each with its error
 * (null where unknown), and the background; no exact share, no verdict. Without a fit, none. */
static void test_estimate(void **state)
{
        size_t n = ELEMENTSOF(cross_check_rows);
        json_t *causes, *stats, *out, *rows, *r;
        double last = INFINITY;
        size_t i;

        (void)state;
        cross_check_input(0.07, &causes, &stats);
        out = shares_estimate_cpu(stats);
        assert_non_null(out);
        assert_true(json_is_true(json_object_get(out, "fit")));
        assert_int_equal(json_integer_value(json_object_get(out, "cpu")), 1);
        assert_string_equal(json_string_value(json_object_get(out, "window")), "all");
        assert_int_equal(json_integer_value(json_object_get(out, "lost_ns")), 1000000000);
        rows = json_object_get(out, "estimate");
        assert_int_equal(json_array_size(rows), n);
        json_array_foreach(rows, i, r)
        {
                double ls = json_number_value(json_object_get(r, "ls_share"));
                size_t k;

                for (k = 0; k < n; k++) {
                        if (strcmp(cross_check_rows[k].source,
                                   json_string_value(json_object_get(r, "source"))) == 0) {
                                break;
                        }
                }
                assert_true(k < n);
                assert_true(fabs(ls - cross_check_rows[k].ls) < 1e-9);
                assert_true(ls <= last);
                last = ls;
                if (isnan(cross_check_rows[k].se)) {
                        assert_true(json_is_null(json_object_get(r, "ls_stderr")));
                } else {
                        assert_true(fabs(json_number_value(json_object_get(r, "ls_stderr")) -
                                         cross_check_rows[k].se) < 1e-9);
                }
                assert_null(json_object_get(r, "exact_share"));
                assert_null(json_object_get(r, "verdict"));
        }
        assert_true(fabs(json_number_value(
                                 json_object_get(json_object_get(out, "background"), "explains")) -
                         0.2) < 1e-9);
        json_decref(out);
        /* The same without a fit. */
        json_array_foreach(json_object_get(stats, "causes"), i, r)
        {
                json_object_del(r, "explains");
        }
        json_object_del(stats, "background");
        out = shares_estimate_cpu(stats);
        assert_non_null(out);
        assert_false(json_is_true(json_object_get(out, "fit")));
        assert_int_equal(json_array_size(json_object_get(out, "estimate")), 0);
        assert_null(json_object_get(out, "background"));
        json_decref(out);
        json_decref(causes);
        json_decref(stats);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_woken_row),        cmocka_unit_test(test_woken_too_rarely),
                cmocka_unit_test(test_too_little_trace), cmocka_unit_test(test_groups_in_a_row),
                cmocka_unit_test(test_cross_check),      cmocka_unit_test(test_estimate),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

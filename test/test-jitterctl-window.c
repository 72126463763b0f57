/* Unit tests of jitterctl's own analyses of a window (jitterctl-window.c), from GetWindow replies
 * made here with known ground truth: 100 intervals of 1 s in which each occurrence of irq:X
 * costs 5 us and softirq:Y nothing, and interruptions every 10 ms with a few at random among
 * them. The fit must give irq:X its cost and share, the periodicity the 10 ms period, the counts
 * must come from the GetStats entry; a reply that is not GetWindow's changes nothing. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-window.h"
#include "util.h"

#define INTERVALS 100
#define X_COST_NS 5000
#define PERIOD_NS 10000000LL
#define EVENTS 2000

/* A GetWindow reply: in interval i, irq:X moves 100 + (i * 37) % 50 times and softirq:Y
 * 20 + (i * 11) % 7 times; time lost is X_COST_NS per irq:X. Events: every PERIOD_NS from 1 s on,
 * and one in 20 of them followed by one 3.3 ms later. */
static json_t *window_reply(void)
{
        json_t *durations = json_array(), *lost = json_array(), *counts = json_array();
        json_t *starts = json_array();
        long long prev = 0, t = 1000000000LL;

        for (int i = 0; i < INTERVALS; i++) {
                long long x = 100 + (i * 37) % 50, y = 20 + (i * 11) % 7;

                json_array_append_new(durations, json_integer(1000000000));
                json_array_append_new(lost, json_integer(x * X_COST_NS));
                json_array_append_new(counts, json_pack("[I I I I]", 0LL, x, 1LL, y));
        }
        for (int k = 0; k < EVENTS; k++, t += PERIOD_NS) {
                json_array_append_new(starts, json_integer(t - prev));
                prev = t;
                if (k % 20 == 7) {
                        json_array_append_new(starts, json_integer(3300000));
                        prev += 3300000;
                }
        }
        return json_pack("{sI ss sI sI sI sI s[ss] so so so sI sI so sI}", "cpu", 1LL, "window",
                         "all", "from_ns", 0LL, "to_ns", 100000000000LL, "duration_ns",
                         100000000000LL, "interruptions", (json_int_t)(EVENTS + EVENTS / 20),
                         "sources", "irq:X", "softirq:Y", "durations_ns", durations, "lost_ns",
                         lost, "counts", counts, "intervals_dropped", 0LL, "intervals_stalled", 0LL,
                         "event_starts_ns", starts, "events_complete_from_ns", 0LL);
}

static void test_fit_and_periods(void **state)
{
        json_t *w = window_reply();
        json_t *entry = json_pack("{sI s{sI} s{sI}}", "cpu", 1LL, "interrupts", "X", 12345LL,
                                  "softirqs", "Y", 2222LL);
        json_t *c, *p;
        bool found = false;
        size_t i;

        (void)state;
        assert_int_equal(window_analyses_add(w, 0, entry), 0);
        c = json_array_get(json_object_get(entry, "causes"), 0);
        assert_string_equal(json_string_value(json_object_get(c, "source")), "irq:X");
        /* The count is the window's, as GetStats has it, not the sum of the rows. */
        assert_int_equal(json_integer_value(json_object_get(c, "count")), 12345);
        assert_true(fabs(json_real_value(json_object_get(c, "cost_ns")) - X_COST_NS) < 50);
        assert_true(json_real_value(json_object_get(c, "explains")) > 0.98);
        assert_non_null(json_object_get(entry, "background"));
        json_array_foreach(json_object_get(entry, "periods"), i, p)
        {
                json_int_t ns = json_integer_value(json_object_get(p, "period_ns"));

                found |= llabs(ns - PERIOD_NS) <= PERIOD_NS / 1000;
        }
        assert_true(found);
        /* What the fit worked on: the 100 intervals, none left out. */
        assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(entry, "causes_searched"), "intervals")),
                         INTERVALS);
        assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(entry, "causes_searched"), "intervals_dropped")),
                         0);
        json_decref(entry);
        json_decref(w);
}

/* What each list of test_period_within_band covered: all bands from the flood's start, each band
 * its own; the short band, which holds no more of the window than the list of all bands, not
 * searched again, the thefts' band, which holds all of it, searched. */
static void check_searched(json_t *s, long long flood_from)
{
        assert_int_equal(json_array_size(s), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(s, 0), "bands")),
                            "all");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 0), "from_ns")),
                         flood_from);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 1), "dropped")),
                         5000);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 2), "events")), 60);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 2), "from_ns")), 0);
        assert_true(json_is_false(json_object_get(json_array_get(s, 1), "searched")));
        assert_true(json_is_true(json_object_get(json_array_get(s, 2), "searched")));
}

/* A theft every 100 ms, 40 of them from 1 s on, beside a flood of a wake-up every 200 us whose
 * newest 10 000 (the last 2 s) are all that the list of all bands holds: the list of all bands
 * has the flood and the last 20 thefts, the band from 100 us all 40 thefts and 20 others at
 * random. The 100 ms period must come from the band with all 40, carry the band's edges, and be
 * listed once; what each search covered is said. */
static void test_period_within_band(void **state)
{
        json_t *w = window_reply(), *mixed = json_array(), *theft_band = json_array();
        json_t *short_band = json_array(), *bands, *entry = json_object(), *p;
        long long prev = 0, t, flood_from = 3000000000LL + 100000;
        size_t i, found = 0;
        json_int_t events = 0;

        (void)state;
        /* The mixed list: from flood_from, a wake-up every 200 us to 5 s, and the thefts at 3 s,
         * 3.1 s, ... among them (each 100 us after a wake-up). */
        for (t = flood_from; t < 5000000000LL; t += 200000) {
                long long theft = 1000000000LL + ((t - 1000000000LL) / 100000000LL) * 100000000LL;

                if (theft > t - 200000 && theft <= t && theft >= flood_from) {
                        json_array_append_new(mixed, json_integer(theft - prev));
                        prev = theft;
                }
                json_array_append_new(mixed, json_integer(t - prev));
                prev = t;
        }
        json_array_append_new(short_band, json_integer(flood_from));
        prev = 0;
        for (int k = 0; k < 40; k++) {
                t = 1000000000LL + k * 100000000LL;
                if (k % 2 == 1) { /* an unrelated one 37 ms after every other theft */
                        json_array_append_new(theft_band, json_integer(t - 63000000LL - prev));
                        prev = t - 63000000LL;
                }
                json_array_append_new(theft_band, json_integer(t - prev));
                prev = t;
        }
        bands = json_pack("[{sI sI sI sb sI so} {sI sI sI sb sI so}]", "min_duration_ns", 0LL,
                          "max_duration_ns", 100000LL, "dropped", 5000LL, "dropped_before_unknown",
                          false, "complete_from_ns", flood_from, "starts_ns", short_band,
                          "min_duration_ns", 100000LL, "max_duration_ns", 1000000LL, "dropped", 0LL,
                          "dropped_before_unknown", false, "complete_from_ns", 0LL, "starts_ns",
                          theft_band);
        json_object_set_new(w, "event_starts_ns", mixed);
        json_object_set_new(w, "events_complete_from_ns", json_integer(flood_from));
        json_object_set_new(w, "event_bands", bands);
        assert_int_equal(window_analyses_add(w, 0, entry), 0);
        json_array_foreach(json_object_get(entry, "periods"), i, p)
        {
                json_int_t ns = json_integer_value(json_object_get(p, "period_ns"));

                if (llabs(ns - 100000000LL) <= 100000) {
                        found++;
                        events = json_integer_value(json_object_get(p, "events"));
                        assert_int_equal(json_integer_value(json_object_get(p, "band_min_ns")),
                                         100000);
                }
                /* Most interruptions first. */
                if (i > 0) {
                        assert_true(
                                json_integer_value(json_object_get(p, "events")) <=
                                json_integer_value(json_object_get(
                                        json_array_get(json_object_get(entry, "periods"), i - 1),
                                        "events")));
                }
        }
        assert_int_equal(found, 1);
        assert_true(events >= 38);
        check_searched(json_object_get(entry, "periods_searched"), flood_from);
        json_decref(entry);
        json_decref(w);
}

/* Fewer than 60 intervals: counts and rates only, no fit and no background. */
static void test_no_fit(void **state)
{
        json_t *w = window_reply(), *entry = json_object(), *c;
        size_t i;

        (void)state;
        while (json_array_size(json_object_get(w, "counts")) > 30) {
                json_array_remove(json_object_get(w, "counts"), 0);
                json_array_remove(json_object_get(w, "durations_ns"), 0);
                json_array_remove(json_object_get(w, "lost_ns"), 0);
        }
        assert_int_equal(window_analyses_add(w, 0, entry), 0);
        assert_null(json_object_get(entry, "background"));
        assert_int_equal(json_array_size(json_object_get(entry, "causes")), 2);
        json_array_foreach(json_object_get(entry, "causes"), i, c)
        {
                assert_null(json_object_get(c, "cost_ns"));
                assert_true(json_integer_value(json_object_get(c, "count")) > 0);
        }
        json_decref(entry);
        json_decref(w);
}

/* A reply that is not GetWindow's is refused, and the entry left as it was. */
static void test_bad_replies(void **state)
{
        static const char *const bad[] = {
                "{\"counts\": [[0, 1]], \"durations_ns\": [1], \"lost_ns\": [1]}",
                "{\"duration_ns\": 1, \"sources\": [\"a\"], \"counts\": [[1, 1]], "
                "\"durations_ns\": [1], \"lost_ns\": [1], \"event_starts_ns\": []}",
                "{\"duration_ns\": 1, \"sources\": [\"a\"], \"counts\": [[0]], "
                "\"durations_ns\": [1], \"lost_ns\": [1], \"event_starts_ns\": []}",
                "{\"duration_ns\": 1, \"sources\": [\"a\"], \"counts\": [[0, 1]], "
                "\"durations_ns\": [1, 2], \"lost_ns\": [1], \"event_starts_ns\": []}",
                "{\"duration_ns\": 1, \"sources\": [\"a\"], \"counts\": [[0, -1]], "
                "\"durations_ns\": [1], \"lost_ns\": [1], \"event_starts_ns\": []}",
                "{\"duration_ns\": 1, \"sources\": [], \"counts\": [], \"durations_ns\": [], "
                "\"lost_ns\": [], \"event_starts_ns\": [5, -1]}",
                "{\"duration_ns\": 1, \"sources\": [], \"counts\": [], \"durations_ns\": [], "
                "\"lost_ns\": [], \"event_starts_ns\": \"x\"}",
        };

        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *w = json_loads(bad[i], 0, NULL), *entry = json_object();

                assert_non_null(w);
                assert_int_equal(window_analyses_add(w, 0, entry), -EINVAL);
                assert_int_equal(json_object_size(entry), 0);
                json_decref(entry);
                json_decref(w);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fit_and_periods),
                cmocka_unit_test(test_period_within_band),
                cmocka_unit_test(test_no_fit),
                cmocka_unit_test(test_bad_replies),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

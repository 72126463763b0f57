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
                cmocka_unit_test(test_no_fit),
                cmocka_unit_test(test_bad_replies),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

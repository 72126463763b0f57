/* Unit tests of daemon/budget.c, the token bucket of CPU time: it starts full, lets work
 * through while anything is saved, gives the exact wait until a debt is paid back, saves no
 * more than its burst, and over a flood lets through what it earns plus its burst, within one
 * piece of work. The expected values are worked out here from the rate and the burst. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "budget.h"

#define MS 1000000ULL
#define T0 (1000 * MS)

/* 10 % of a core, 10 ms saved at most. */
#define RATE 0.1
#define BURST (10 * MS)

static void test_starts_full(void **state)
{
        Budget b;

        budget_init(&b, RATE, BURST, T0);
        assert_int_equal(budget_admit(&b, T0), 0);
        /* Just under the burst spent: something is left. */
        budget_charge(&b, T0, BURST - 1);
        assert_int_equal(budget_admit(&b, T0), 0);
        /* All of it: nothing is left, and one ns of time earns a tenth of a ns. */
        budget_charge(&b, T0, 1);
        assert_int_equal(budget_admit(&b, T0), 1);
}

static void test_debt_wait(void **state)
{
        Budget b;
        uint64_t debt = 20 * MS, wait = (uint64_t)(20 * MS / RATE) + 1;

        budget_init(&b, RATE, BURST, T0);
        budget_charge(&b, T0, BURST + debt);
        /* 20 ms owed at 10 % of a core: 200 ms, and one ns more to be above zero. */
        assert_int_equal(budget_admit(&b, T0), wait);
        /* Half way, half the wait is left. */
        assert_int_equal(budget_admit(&b, T0 + 100 * MS), wait - 100 * MS);
        /* At the debt's end nothing is saved yet; just past it, something is. */
        assert_int_equal(budget_admit(&b, T0 + 200 * MS), 1);
        assert_int_equal(budget_admit(&b, T0 + wait), 0);
}

static void test_saves_at_most_burst(void **state)
{
        Budget b;

        budget_init(&b, RATE, BURST, T0);
        budget_charge(&b, T0, BURST);
        /* An hour idle earns 6 minutes of CPU, of which the burst is kept. */
        assert_int_equal(budget_admit(&b, T0 + 3600000 * MS), 0);
        budget_charge(&b, T0 + 3600000 * MS, BURST + 1);
        /* One ns owed: 10 ns to pay back, and one more. */
        assert_int_equal(budget_admit(&b, T0 + 3600000 * MS), 11);
}

static void test_clock_backwards(void **state)
{
        Budget b;

        budget_init(&b, RATE, BURST, T0);
        budget_charge(&b, T0, BURST + MS);
        /* An earlier time earns nothing, and the wait is counted from it. */
        assert_int_equal(budget_admit(&b, T0 - 5 * MS), (uint64_t)(MS / RATE) + 1);
        assert_int_equal(budget_admit(&b, T0), (uint64_t)(MS / RATE) + 1);
}

/* A client that calls whenever it is let through and otherwise waits exactly as long as it is
 * told, each call costing 3 ms of CPU and 3 ms of time, for 10 s: the bucket lets through the
 * burst and what 10 s earn, give or take one call (a call may overdraw, and the last one may
 * end before it is paid back). */
static void test_flood(void **state)
{
        const uint64_t cost = 3 * MS, end = T0 + 10000 * MS;
        uint64_t t = T0, spent = 0, calls = 0, refusals = 0;
        double expected;
        Budget b;

        budget_init(&b, RATE, BURST, T0);
        while (t < end) {
                uint64_t wait = budget_admit(&b, t);

                if (wait == 0) {
                        budget_charge(&b, t, cost);
                        spent += cost;
                        calls++;
                        t += cost;
                } else {
                        refusals++;
                        t += wait;
                }
        }
        expected = (double)BURST + RATE * (double)(t - T0);
        assert_true((double)spent <= expected + (double)cost);
        assert_true((double)spent >= expected - (double)cost);
        /* 10 % of 10 s and 10 ms are about 337 calls of 3 ms; every wait ended in a call. */
        assert_true(calls >= 330 && calls <= 345);
        assert_true(refusals <= calls);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_starts_full),
                cmocka_unit_test(test_debt_wait),
                cmocka_unit_test(test_saves_at_most_burst),
                cmocka_unit_test(test_clock_backwards),
                cmocka_unit_test(test_flood),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

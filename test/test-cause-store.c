/* Unit tests of the store of per-interruption causes: lookup by start, conversion to ns,
 * the bound per CPU, order, reset. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "cause-store.h"

static TickConv conv;

/* A list of @n causes named c0.. with 1000 * (n - i) ticks each, and 7 ticks unexplained. */
static CauseList list_of(size_t n, unsigned flags)
{
        CauseList l = {.n = n, .unexplained_ticks = 7, .other_ticks = 3, .flags = flags};

        for (size_t i = 0; i < n; i++) {
                l.causes[i].kind = i % 2 ? CAUSE_TASK : CAUSE_VECTOR;
                snprintf(l.causes[i].name, sizeof(l.causes[i].name), "c%zu", i);
                l.causes[i].ticks = 1000 * (n - i);
        }
        return l;
}

static void test_add_find(void **state)
{
        CauseStore *s;
        CauseList l = list_of(6, CAUSES_LOST | CAUSES_CLIPPED);
        const StoredCauses *e;

        (void)state;
        l.woken_by = cause_counter_code("irq:RES");
        tickconv_init(&conv, 2000000000ULL); /* 2 GHz: a tick is 0.5 ns */
        assert_int_equal(cause_store_new(0, &s), -EINVAL);
        assert_int_equal(cause_store_new(100, &s), 0);
        assert_int_equal(cause_store_add(s, 3, 5000, &l, &conv), 0);
        l = list_of(1, 0);
        assert_int_equal(cause_store_add(s, 3, 6000, &l, &conv), 0);
        assert_int_equal(cause_store_add(s, 3, 5999, &l, &conv), -EINVAL);
        assert_int_equal(cause_store_add(s, -1, 7000, &l, &conv), -EINVAL);
        assert_int_equal(cause_store_add(s, CPU_SETSIZE, 7000, &l, &conv), -EINVAL);

        e = cause_store_find(s, 3, 5000);
        assert_non_null(e);
        assert_int_equal(e->n, STORED_CAUSES_MAX);
        assert_string_equal(e->causes[0].name, "c0");
        assert_int_equal(e->causes[0].kind, CAUSE_VECTOR);
        assert_int_equal(e->causes[0].ns, 3000);
        assert_int_equal(e->causes[1].kind, CAUSE_TASK);
        assert_int_equal(e->causes[3].ns, 1500);
        /* Causes 4 and 5 (2000 and 1000 ticks) join the list's other 3 ticks. */
        assert_int_equal(e->other_ns, (2000 + 1000 + 3) / 2);
        assert_int_equal(e->unexplained_ns, 3);
        assert_int_equal(e->flags, CAUSES_LOST | CAUSES_CLIPPED);
        assert_string_equal(cause_counter_of_code(e->woken_by), "irq:RES");
        e = cause_store_find(s, 3, 6000);
        assert_non_null(e);
        assert_int_equal(e->n, 1);
        assert_int_equal(e->woken_by, 0);
        assert_null(cause_store_find(s, 3, 5500));
        assert_null(cause_store_find(s, 2, 5000));
        assert_null(cause_store_find(s, -1, 5000));
        cause_store_free(s);
}

static void test_bound_and_reset(void **state)
{
        CauseStore *s;
        CauseList l = list_of(2, 0);
        size_t bytes;

        (void)state;
        tickconv_init(&conv, 1000000000ULL);
        assert_int_equal(cause_store_new(1000, &s), 0);
        for (uint64_t t = 1; t <= 5000; t++) {
                assert_int_equal(cause_store_add(s, 0, t * 10, &l, &conv), 0);
                assert_int_equal(cause_store_add(s, 5, t * 10, &l, &conv), 0);
        }
        /* The newest 1000 of each CPU. */
        assert_null(cause_store_find(s, 0, 40000));
        assert_non_null(cause_store_find(s, 0, 40010));
        assert_non_null(cause_store_find(s, 0, 50000));
        assert_non_null(cause_store_find(s, 5, 45000));
        bytes = cause_store_memory_bytes(s);
        /* The entries, and per possible CPU its ring and its totals by kind (~100 bytes). */
        assert_true(bytes <= sizeof(StoredCauses) * 2000 + 128 * 1024);
        cause_store_reset(s, 0);
        assert_null(cause_store_find(s, 0, 50000));
        assert_non_null(cause_store_find(s, 5, 50000));
        /* Memory stays with the store for reuse. */
        assert_int_equal(cause_store_memory_bytes(s), bytes);
        assert_int_equal(cause_store_add(s, 0, 10, &l, &conv), 0);
        assert_non_null(cause_store_find(s, 0, 10));
        cause_store_reset(s, -1);
        assert_null(cause_store_find(s, 5, 50000));
        cause_store_free(s);
}

/* An interruption longer than 4.3 s keeps the largest value a stored cause holds. */
static void test_saturates(void **state)
{
        CauseStore *s;
        CauseList l = list_of(1, 0);

        (void)state;
        tickconv_init(&conv, 1000000000ULL);
        l.causes[0].ticks = 10000000000ULL;
        assert_int_equal(cause_store_new(16, &s), 0);
        assert_int_equal(cause_store_add(s, 1, 1, &l, &conv), 0);
        assert_int_equal(cause_store_find(s, 1, 1)->causes[0].ns, UINT32_MAX);
        cause_store_free(s);
}

/* The totals by kind count every interruption added, the forgotten ones too, until a reset. */
static void test_totals(void **state)
{
        uint64_t ns[CAUSE_KIND_MAX + 1];
        CauseStore *s;
        CauseList l = list_of(1, 0);

        (void)state;
        tickconv_init(&conv, 2000000000ULL);
        l.kind_ticks[CAUSE_VECTOR] = 1000;
        l.kind_ticks[CAUSE_IRQ] = 400;
        assert_int_equal(cause_store_new(4, &s), 0);
        for (uint64_t t = 1; t <= 10; t++) {
                assert_int_equal(cause_store_add(s, 2, t, &l, &conv), 0);
        }
        cause_store_totals(s, 2, ns);
        assert_int_equal(ns[CAUSE_VECTOR], 10 * 500);
        assert_int_equal(ns[CAUSE_IRQ], 10 * 200);
        assert_int_equal(ns[CAUSE_TASK], 0);
        assert_int_equal(ns[CAUSE_KIND_MAX], 10 * 3); /* 7 ticks unexplained each, 3.5 ns */
        cause_store_totals(s, 3, ns);
        assert_int_equal(ns[CAUSE_VECTOR], 0);
        cause_store_totals(s, -1, ns);
        assert_int_equal(ns[CAUSE_KIND_MAX], 0);
        cause_store_reset(s, 2);
        cause_store_totals(s, 2, ns);
        assert_int_equal(ns[CAUSE_VECTOR], 0);
        cause_store_free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_find),
                cmocka_unit_test(test_bound_and_reset),
                cmocka_unit_test(test_saturates),
                cmocka_unit_test(test_totals),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

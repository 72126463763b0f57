/* The event ring: order, and overflow counted exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ring.h"

static void test_order(void **state)
{
        EventRing r;
        RingReader rd = { 0 };
        uint64_t s, d;

        (void)state;
        assert_int_equal(ring_init(&r, 100), 0);
        assert_int_equal(ring_capacity(&r), 128);
        assert_int_equal(ring_pop(&r, &rd, &s, &d), 0);
        for (uint64_t i = 0; i < 100; i++) {
                ring_push(&r, 1000 + i, i);
        }
        for (uint64_t i = 0; i < 100; i++) {
                assert_int_equal(ring_pop(&r, &rd, &s, &d), 1);
                assert_int_equal(s, 1000 + i);
                assert_int_equal(d, i);
        }
        assert_int_equal(ring_pop(&r, &rd, &s, &d), 0);
        assert_int_equal(rd.dropped, 0);
        ring_destroy(&r);
}

static void test_overflow_counted(void **state)
{
        EventRing r;
        RingReader rd = { 0 };
        uint64_t s, d, n = 0, first = 0;

        (void)state;
        assert_int_equal(ring_init(&r, 16), 0);
        for (uint64_t i = 0; i < 16 + 10; i++) {
                ring_push(&r, i, 1);
        }
        while (ring_pop(&r, &rd, &s, &d) == 1) {
                if (n++ == 0) {
                        first = s;
                }
        }
        /* The ten oldest are gone, and said to be. */
        assert_int_equal(rd.dropped, 10);
        assert_int_equal(n, 16);
        assert_int_equal(first, 10);
        ring_destroy(&r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order),
                cmocka_unit_test(test_overflow_counted),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

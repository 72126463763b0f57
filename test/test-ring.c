/* The event ring: order, overflow counted exactly, and a concurrent producer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>

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

#define PUSHES 5000000ULL

static void *producer(void *userdata)
{
        EventRing *r = userdata;

        for (uint64_t i = 1; i <= PUSHES; i++) {
                ring_push(r, i, i * 3);
        }
        return NULL;
}

static void test_concurrent(void **state)
{
        EventRing r;
        RingReader rd = { 0 };
        pthread_t t;
        uint64_t s, d, last = 0, got = 0;

        (void)state;
        assert_int_equal(ring_init(&r, 1024), 0);
        assert_int_equal(pthread_create(&t, NULL, producer, &r), 0);
        while (last < PUSHES) {
                if (ring_pop(&r, &rd, &s, &d) == 1) {
                        /* Never a torn or repeated entry, always in order. */
                        assert_int_equal(d, s * 3);
                        assert_true(s > last);
                        last = s;
                        got++;
                } else {
                        sched_yield();
                }
                if (got + rd.dropped == PUSHES) {
                        break;
                }
        }
        pthread_join(t, NULL);
        while (ring_pop(&r, &rd, &s, &d) == 1) {
                got++;
        }
        /* Every event is either read or counted as dropped. */
        assert_int_equal(got + rd.dropped, PUSHES);
        ring_destroy(&r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order),
                cmocka_unit_test(test_overflow_counted),
                cmocka_unit_test(test_concurrent),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

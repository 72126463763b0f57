/* The event ring with a concurrent producer: never a torn or repeated entry, and every event
 * either read or counted as dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "ring.h"

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
                cmocka_unit_test(test_concurrent),
        };

#ifdef JITTERD_TEST_EMULATED
        fprintf(stderr, "skipped: under qemu-user a spinning producer thread blocks the other "
                        "threads of the process; this test runs natively\n");
        return 77;
#endif
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The probe thread and the epoch hand-off, with the probe writing concurrently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <unistd.h>

#include "probe.h"

static int probe_cpu(void)
{
        return 1;
}

static void sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

static Probe *start_probe(CounterSource src)
{
        ProbeConfig pc = { .cpu = probe_cpu(), .threshold_ns = 10000, .preheat_ns = 20000000 };
        Probe *p;

        assert_int_equal(counter_info_init(src, 10, 2000, &pc.counter), 0);
        assert_int_equal(probe_new(&pc, &p), 0);
        assert_int_equal(probe_start(p), 0);
        for (int i = 0; i < 500 && probe_state(p) != PROBE_RUNNING; i++) {
                sleep_ms(10);
        }
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        assert_true(probe_floor_ticks(p) > 0);
        assert_true(probe_band_ticks(p) > probe_floor_ticks(p));
        return p;
}

/* Harvests @epochs intervals of @ms each and checks every slot is whole and consistent. */
static void run_handoff(CounterSource src, int epochs, long ms)
{
        Probe *p = start_probe(src);
        ProbeSlot *slot = malloc(sizeof(*slot));
        uint64_t prev_end = 0, total = 0;

        for (int k = 0; k < epochs; k++) {
                int64_t e;
                int r;

                sleep_ms(ms);
                e = probe_advance(p);
                assert_true(e > 1);
                do {
                        r = probe_harvest(p, (uint64_t)e - 1, slot);
                } while (r == -EAGAIN);
                assert_int_equal(r, 0);
                /* A slot holds exactly what its histograms and stats say. */
                assert_int_equal(histogram_total(&slot->gap_hist), slot->gap.count);
                assert_int_equal(signed_histogram_total(&slot->dd_hist), slot->dd.count);
                assert_true(slot->dd.count + 1 >= slot->gap.count);
                assert_true(slot->gap.count > 0);
                /* Slots follow each other in time without overlap. */
                assert_true(slot->start_ticks >= prev_end);
                assert_true(slot->end_ticks >= slot->start_ticks);
                prev_end = slot->end_ticks;
                total += slot->gap.count;
                /* A harvested slot cannot be harvested again. */
                assert_int_equal(probe_harvest(p, (uint64_t)e - 1, slot), -ESTALE);
        }
        assert_true(total > 1000);
        probe_free(p);
        free(slot);
}

static void test_handoff_hw(void **state)
{
        (void)state;
        run_handoff(COUNTER_HW, 40, 10);
}

static void test_handoff_clock(void **state)
{
        (void)state;
        run_handoff(COUNTER_CLOCK, 10, 10);
}

/* The owner cannot lap the probe: without harvests the epoch stops advancing. */
static void test_advance_needs_harvest(void **state)
{
        Probe *p = start_probe(COUNTER_HW);
        int64_t e = 0;
        int advanced = 0;

        (void)state;
        for (int k = 0; k < 20; k++) {
                for (int i = 0; i < 1000; i++) {
                        e = probe_advance(p);
                        if (e != -EBUSY) {
                                break;
                        }
                        /* -EBUSY here means "not yet acknowledged" or "slot not harvested". */
                        if (probe_acked_epoch(p) == probe_epoch(p)) {
                                break;
                        }
                        sleep_ms(1);
                }
                if (e > 0) {
                        advanced++;
                }
        }
        assert_int_equal(advanced, PROBE_SLOTS - 1);
        assert_int_equal(probe_advance(p), -EBUSY);
        probe_free(p);
}

/* Moved off its CPU from outside, the probe notices, stops recording and goes back. */
static void test_migration_detected(void **state)
{
        Probe *p;
        cpu_set_t other;

        (void)state;
        p = start_probe(COUNTER_HW);
        CPU_ZERO(&other);
        CPU_SET(0, &other);
        assert_int_equal(sched_setaffinity(probe_tid(p), sizeof(other), &other), 0);
        for (int i = 0; i < 300 && probe_migrations(p) == 0; i++) {
                sleep_ms(10);
        }
        assert_int_equal(probe_migrations(p), 1);
        for (int i = 0; i < 300 && probe_state(p) != PROBE_RUNNING; i++) {
                sleep_ms(10);
        }
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        assert_int_equal(sched_getcpu() >= 0, 1);
        probe_free(p);
}

static void test_bad_cpu(void **state)
{
        ProbeConfig pc = { .cpu = CPU_SETSIZE - 1, .preheat_ns = 1000000 };
        Probe *p;

        (void)state;
        assert_int_equal(counter_info_init(COUNTER_CLOCK, 10, 100, &pc.counter), 0);
        assert_int_equal(probe_new(&pc, &p), 0);
        assert_int_equal(probe_start(p), -EINVAL);
        assert_int_equal(probe_state(p), PROBE_FAILED);
        probe_free(p);
        pc.cpu = -1;
        assert_int_equal(probe_new(&pc, &p), -EINVAL);
}

int main(void)
{
#ifdef JITTERD_TEST_EMULATED
        fprintf(stderr, "skipped: under qemu-user a spinning probe thread blocks the other "
                        "threads of the process; the probe loop is tested natively\n");
        return 77;
#endif
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                fprintf(stderr, "skipped: the probe tests need CPU 1 (this machine has one CPU)\n");
                return 77;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_handoff_hw),
                cmocka_unit_test(test_handoff_clock),
                cmocka_unit_test(test_advance_needs_harvest),
                cmocka_unit_test(test_migration_detected),
                cmocka_unit_test(test_bad_cpu),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

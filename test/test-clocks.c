/* The cost of reading time: every clock is measured with sane statistics, the costs fall in
 * the order the kernel's design implies (coarse < vDSO < system call), and the resolutions are
 * those of the clocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The module itself, to reach its static clocksource readers. */
#include "../tools/jitterctl/clocks.c"
#include "util.h"

static const char *const expected_clocks[] = {
#if defined(__x86_64__)
        "rdtsc",
        "lfence+rdtsc",
#elif defined(__aarch64__)
        "isb+cntvct",
        "cntvct",
#endif
        "CLOCK_REALTIME",
        "CLOCK_REALTIME_COARSE",
        "CLOCK_MONOTONIC",
        "CLOCK_MONOTONIC_COARSE",
        "CLOCK_MONOTONIC_RAW",
        "CLOCK_BOOTTIME",
        "CLOCK_TAI",
        "CLOCK_PROCESS_CPUTIME_ID",
        "CLOCK_THREAD_CPUTIME_ID",
        "gettimeofday",
        "time",
};

static ClocksReport report;

/* The clock named @name in @r; NULL when it was not measured. */
static const ClockCost *clocks_find(const ClocksReport *r, const char *name)
{
        if (!r || !name) {
                return NULL;
        }
        for (size_t i = 0; i < r->n_clocks; i++) {
                if (strcmp(r->clocks[i].name, name) == 0) {
                        return &r->clocks[i];
                }
        }
        return NULL;
}

/* One measurement with the defaults, as "jitterctl clocks" makes it, shared by the tests that
 * only read it. */
static int setup_report(void **state)
{
        ClocksOptions o = {.cpu = -1};
        int r;

        (void)state;
        r = clocks_measure(&o, &report);
        if (r < 0) {
                fprintf(stderr, "clocks_measure: %s\n", strerror(-r));
                return -1;
        }
        return 0;
}

static const ClockCost *need(const char *name)
{
        const ClockCost *c = clocks_find(&report, name);

        if (!c) {
                fail_msg("clock %s was not measured", name);
        }
        return c;
}

static void test_every_clock_sane(void **state)
{
        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(expected_clocks); i++) {
                need(expected_clocks[i]);
        }
        assert_true(report.n_clocks >= ELEMENTSOF(expected_clocks));
        assert_true(report.n_clocks <= CLOCKS_MAX);
        /* The default number of trials, or fewer when they took too long. */
        assert_in_range(report.samples, CLOCKS_SAMPLES_MIN, CLOCKS_SAMPLES_DEFAULT);
        assert_int_equal(report.batch, CLOCKS_BATCH_DEFAULT);
        assert_true(report.counter.hz > 0);
        assert_true(isfinite(report.empty_batch_ns) && report.empty_batch_ns >= 0);
        for (size_t i = 0; i < report.n_clocks; i++) {
                const ClockCost *c = &report.clocks[i];
                /* The mean may miss [min, max] by the rounding of the sum. */
                double eps = 1e-9 * c->max_ns;

                assert_non_null(c->name);
                /* Each name once. */
                assert_ptr_equal(clocks_find(&report, c->name), c);
                assert_int_equal(c->samples, report.samples);
                if (!(c->min_ns >= 0 && c->min_ns <= c->median_ns && c->median_ns <= c->max_ns &&
                      c->min_ns - eps <= c->mean_ns && c->mean_ns <= c->max_ns + eps)) {
                        fail_msg("%s: min %.2f median %.2f mean %.2f max %.2f", c->name, c->min_ns,
                                 c->median_ns, c->mean_ns, c->max_ns);
                }
                assert_true(isfinite(c->max_ns));
                /* A sample standard deviation never exceeds the range. */
                assert_true(c->stddev_ns >= 0 && c->stddev_ns <= c->max_ns - c->min_ns + eps);
                /* No way to read time costs a millisecond per call. */
                if (c->median_ns > 1e6) {
                        fail_msg("%s: median %.0f ns per call", c->name, c->median_ns);
                }
        }
        assert_null(clocks_find(&report, "CLOCK_NONE"));
}

/* Whether the kernel's current clocksource, read from sysfs into @buf, is the CPU's own counter
 * (the TSC on x86, the generic timer on arm64), which the vDSO reads without entering the
 * kernel. */
static bool host_clocksource_is_cpu_counter(char *buf, size_t size)
{
        FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

        buf[0] = '\0';
        if (f) {
                if (!fgets(buf, (int)size, f)) {
                        buf[0] = '\0';
                }
                fclose(f);
        }
        buf[strcspn(buf, "\n")] = '\0';
#if defined(__x86_64__) || defined(__i386__)
        return strcmp(buf, "tsc") == 0;
#elif defined(__aarch64__)
        return strcmp(buf, "arch_sys_counter") == 0;
#else
        return false;
#endif
}

static void test_order_coarse_vdso_syscall(void **state)
{
        char host_cs[64];
        const ClockCost *coarse = need("CLOCK_MONOTONIC_COARSE");
        const ClockCost *mono = need("CLOCK_MONOTONIC");
        const ClockCost *cputime = need("CLOCK_PROCESS_CPUTIME_ID");

        (void)state;
        printf("MONOTONIC_COARSE %.1f ns, MONOTONIC %.1f ns, PROCESS_CPUTIME_ID %.1f ns (medians),"
               " clocksource %s\n",
               coarse->median_ns, mono->median_ns, cputime->median_ns,
               report.clocksource[0] ? report.clocksource : "unknown");
        /* A coarse clock only copies the time of the last tick; the fine one also reads the
         * counter (or enters the kernel): whatever the clocksource, it costs more. Medians and
         * minima, so that an interrupt in a few trials cannot decide. */
        if (!(coarse->median_ns < mono->median_ns && coarse->min_ns < mono->min_ns)) {
                fail_msg("MONOTONIC_COARSE (median %.1f, min %.1f ns) not cheaper than "
                         "MONOTONIC (median %.1f, min %.1f ns)",
                         coarse->median_ns, coarse->min_ns, mono->median_ns, mono->min_ns);
        }
        /* The vDSO reads the counter itself only with the CPU counter as clocksource; the
         * test reads which one the kernel uses from sysfs itself, and holds the report to it. */
        if (!host_clocksource_is_cpu_counter(host_cs, sizeof(host_cs))) {
                assert_false(report.clocksource_fast);
                print_message("skipped: vDSO < system call: clocksource \"%s\" is not the CPU "
                              "counter, so CLOCK_MONOTONIC may itself be a system call\n",
                              host_cs[0] ? host_cs : "unknown");
                skip();
        }
        assert_string_equal(report.clocksource, host_cs);
        assert_true(report.clocksource_fast);
        if (!(mono->median_ns < cputime->median_ns && mono->min_ns < cputime->min_ns)) {
                fail_msg("MONOTONIC (median %.1f, min %.1f ns) not cheaper than the "
                         "PROCESS_CPUTIME_ID system call (median %.1f, min %.1f ns)",
                         mono->median_ns, mono->min_ns, cputime->median_ns, cputime->min_ns);
        }
#if defined(SYS_clock_gettime)
        {
                const ClockCost *sys = need("syscall(CLOCK_MONOTONIC)");

                /* The same clock through the kernel: the vDSO saves at least the kernel entry
                 * and exit, which cost more than reading the counter. */
                if (!(mono->median_ns < 0.75 * sys->median_ns)) {
                        fail_msg("MONOTONIC through the vDSO (median %.1f ns) not cheaper than "
                                 "through the kernel (median %.1f ns)",
                                 mono->median_ns, sys->median_ns);
                }
        }
#endif
}

static void test_resolution(void **state)
{
        const ClockCost *mono = need("CLOCK_MONOTONIC");
        const ClockCost *coarse = need("CLOCK_MONOTONIC_COARSE");
        const ClockCost *rcoarse = need("CLOCK_REALTIME_COARSE");
        const ClockCost *tod = need("gettimeofday");

        (void)state;
        /* High-resolution timers: 1 ns. */
        assert_true(mono->resolution_ns == 1.0);
        assert_true(need("CLOCK_MONOTONIC_RAW")->resolution_ns == 1.0);
        /* A coarse clock advances once per tick: 1 ms at HZ=1000, 10 ms at HZ=100. */
        if (!(coarse->resolution_ns >= 1e6 && coarse->resolution_ns <= 1e7)) {
                fail_msg("MONOTONIC_COARSE resolution %.0f ns is not a tick",
                         coarse->resolution_ns);
        }
        assert_true(rcoarse->resolution_ns == coarse->resolution_ns);
        /* It moves within a few ticks, and by about a tick (NTP slews it by at most 500 ppm). */
        if (!isfinite(coarse->step_ns)) {
                fail_msg("MONOTONIC_COARSE was not seen to move");
        }
        if (coarse->step_ns < coarse->resolution_ns * 0.99) {
                fail_msg("MONOTONIC_COARSE stepped by %.0f ns, less than its tick %.0f ns",
                         coarse->step_ns, coarse->resolution_ns);
        }
        /* A fine clock moves between two reads by no more than a slow call plus an interrupt;
         * never by a tick. */
        assert_true(isfinite(mono->step_ns));
        if (!(mono->step_ns >= 1 && mono->step_ns < 1e6)) {
                fail_msg("MONOTONIC smallest step %.1f ns", mono->step_ns);
        }
        /* gettimeofday() counts microseconds. */
        assert_true(tod->resolution_ns == 1e3);
        if (!(isfinite(tod->step_ns) && fmod(tod->step_ns, 1e3) == 0 && tod->step_ns >= 1e3)) {
                fail_msg("gettimeofday smallest step %.1f ns", tod->step_ns);
        }
        assert_true(need("time")->resolution_ns == 1e9);
        for (size_t i = 0; i < report.n_clocks; i++) {
                const ClockCost *c = &report.clocks[i];

                if (c->counter) {
                        /* One tick of a counter between 1 MHz and 10 GHz. */
                        if (report.counter.source == COUNTER_HW &&
                            !(c->resolution_ns >= 0.1 && c->resolution_ns <= 1000)) {
                                fail_msg("%s: tick %.3f ns", c->name, c->resolution_ns);
                        }
                } else {
                        assert_true(c->resolution_ns >= 1);
                }
        }
}

static void test_clocksource_file(void **state)
{
        char dir[] = "/tmp/test-clocks-XXXXXX";
        char path[64], small[4], buf[64];
        static const struct {
                const char *content;
                int expect;
                const char *name;
        } cases[] = {
                {"tsc\n", 0, "tsc"},
                {"arch_sys_counter\n", 0, "arch_sys_counter"},
                {"kvm-clock", 0, "kvm-clock"},
                {"", -EBADMSG, NULL},
                {"\n", -EBADMSG, NULL},
                {"tsc hpet\n", -EBADMSG, NULL},
                {"tsc\nhpet\n", -EBADMSG, NULL},
                {"ts\x01c\n", -EBADMSG, NULL},
        };
        FILE *f;

        (void)state;
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/current_clocksource", dir);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                f = fopen(path, "w");
                assert_non_null(f);
                fputs(cases[i].content, f);
                assert_int_equal(fclose(f), 0);
                memset(buf, 'x', sizeof(buf));
                assert_int_equal(clocks_read_clocksource(path, buf, sizeof(buf)), cases[i].expect);
                if (cases[i].name) {
                        assert_string_equal(buf, cases[i].name);
                }
        }
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("hpet\n", f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(clocks_read_clocksource(path, small, sizeof(small)), -ENOBUFS);
        assert_int_equal(clocks_read_clocksource(path, small, 0), -EINVAL);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(clocks_read_clocksource(path, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(rmdir(dir), 0);

#if defined(__x86_64__)
        assert_true(clocks_clocksource_is_fast("tsc"));
        assert_false(clocks_clocksource_is_fast("arch_sys_counter"));
#elif defined(__aarch64__)
        assert_true(clocks_clocksource_is_fast("arch_sys_counter"));
        assert_false(clocks_clocksource_is_fast("tsc"));
#endif
        assert_false(clocks_clocksource_is_fast("kvm-clock"));
        assert_false(clocks_clocksource_is_fast("hpet"));
        assert_false(clocks_clocksource_is_fast(""));
        assert_false(clocks_clocksource_is_fast(NULL));
}

static void test_options_and_affinity(void **state)
{
        cpu_set_t before, after;
        ClocksReport rep;
        ClocksOptions o;
        int cpu = -1;

        (void)state;
        assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
        for (int i = 0; i < CPU_SETSIZE; i++) {
                if (CPU_ISSET(i, &before)) {
                        cpu = i;
                        break;
                }
        }
        assert_true(cpu >= 0);

        /* Runs where asked, and gives the thread its affinity back. */
        o = (ClocksOptions){.cpu = cpu, .samples = 20, .batch = 16};
        assert_int_equal(clocks_measure(&o, &rep), 0);
        assert_int_equal(rep.cpu, cpu);
        assert_int_equal(rep.samples, 20);
        assert_int_equal(rep.batch, 16);
        assert_int_equal(rep.clocks[0].samples, 20);
        assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
        assert_true(CPU_EQUAL(&before, &after));

        /* The default CPU is the last one allowed. */
        o = (ClocksOptions){.cpu = -1, .samples = 5};
        assert_int_equal(clocks_measure(&o, &rep), 0);
        for (int i = rep.cpu + 1; i < CPU_SETSIZE; i++) {
                assert_false(CPU_ISSET(i, &before));
        }
        assert_true(CPU_ISSET(rep.cpu, &before));

        /* Out of range or not allowed. */
        o = (ClocksOptions){.cpu = CPU_SETSIZE};
        assert_int_equal(clocks_measure(&o, &rep), -EINVAL);
        for (int i = 0; i < CPU_SETSIZE; i++) {
                if (!CPU_ISSET(i, &before)) {
                        o = (ClocksOptions){.cpu = i, .samples = 5};
                        assert_int_equal(clocks_measure(&o, &rep), -EINVAL);
                        break;
                }
        }
        o = (ClocksOptions){.cpu = -1, .samples = CLOCKS_SAMPLES_MAX + 1};
        assert_int_equal(clocks_measure(&o, &rep), -EINVAL);
        o = (ClocksOptions){.cpu = -1, .samples = 5, .batch = CLOCKS_BATCH_MAX + 1};
        assert_int_equal(clocks_measure(&o, &rep), -EINVAL);
        assert_int_equal(clocks_measure(&o, NULL), -EINVAL);
        assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
        assert_true(CPU_EQUAL(&before, &after));
}

int main(void)
{
        const struct CMUnitTest measured[] = {
                cmocka_unit_test(test_every_clock_sane),
                cmocka_unit_test(test_order_coarse_vdso_syscall),
                cmocka_unit_test(test_resolution),
        };
        const struct CMUnitTest others[] = {
                cmocka_unit_test(test_clocksource_file),
                cmocka_unit_test(test_options_and_affinity),
        };
        int failed;

        failed = cmocka_run_group_tests_name("measured", measured, setup_report, NULL);
        failed += cmocka_run_group_tests_name("clocksource and options", others, NULL, NULL);
        return failed ? 1 : 0;
}

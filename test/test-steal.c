/* The steal reader against /proc/stat files the test writes (each value known, in USER_HZ
 * ticks), and against the real one, read by the test itself before and after. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steal.h"

static char root[PATH_MAX];

static void write_stat(const char *text)
{
        char path[PATH_MAX + 16];
        FILE *f;

        snprintf(path, sizeof(path), "%s/proc", root);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/proc/stat", root);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static uint64_t ticks_ns(unsigned long long ticks)
{
        return ticks * (1000000000ULL / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* The aggregate "cpu" line is no CPU, cpu10 is not cpu1, an offline CPU has no line, a kernel
 * older than the steal column gives none, nor does a line cut short or garbled. */
static void test_fixture(void **state)
{
        const int cpus[] = {0, 1, 2, 10, 11, 12, 13};
        uint64_t ns[7];
        bool have[7];

        (void)state;
        write_stat("cpu  69363 30447 23241 115100 2899 0 1066 99999 0 0\n"
                   "cpu0 23438 30446 14203 51022 1626 0 440 1128 0 0\n"
                   "cpu1 45925 1 9038 64078 1272 0 626 1352 0 0\n"
                   "cpu10 1 2 3 4 5 6 7 77 0 0\n"
                   "cpu11 1 2 3 4 5 6 7\n"
                   "cpu12 1 2 3 4 5 6 7 x 0 0\n"
                   "cpu13\t1\t2\t3\t4\t5\t6\t7\t13\n"
                   "intr 1284094 0 0 0\n"
                   "ctxt 123\n");
        assert_int_equal(steal_read(root, cpus, 7, ns, have), 0);
        assert_true(have[0]);
        assert_int_equal(ns[0], ticks_ns(1128));
        assert_true(have[1]);
        assert_int_equal(ns[1], ticks_ns(1352));
        assert_false(have[2]);
        assert_true(have[3]);
        assert_int_equal(ns[3], ticks_ns(77));
        assert_false(have[4]);
        assert_false(have[5]);
        assert_false(have[6]); /* the name must end with a space, as the kernel writes it */
}

static void test_missing_file(void **state)
{
        const int cpus[] = {1};
        char none[PATH_MAX + 8];
        uint64_t ns[1] = {42};
        bool have[1] = {true};

        (void)state;
        snprintf(none, sizeof(none), "%s/none", root);
        assert_int_equal(steal_read(none, cpus, 1, ns, have), -ENOENT);
        assert_false(have[0]);
        assert_int_equal(ns[0], 0);
}

/* The real file: CPU 0's steal time lies between what the test reads itself before and
 * after. */
static void test_real(void **state)
{
        const int cpus[] = {0};
        unsigned long long before = 0, after = 0, v[8];
        uint64_t ns[1];
        bool have[1];

        (void)state;
        for (int pass = 0; pass < 2; pass++) {
                FILE *f = fopen("/proc/stat", "re");
                char line[512];
                bool found = false;

                assert_non_null(f);
                while (fgets(line, sizeof(line), f)) {
                        if (sscanf(line, "cpu0 %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
                                found = true;
                                break;
                        }
                }
                fclose(f);
                if (!found) {
                        print_message("skipped: /proc/stat has no steal column for cpu0\n");
                        skip();
                }
                if (pass == 0) {
                        before = v[7];
                        assert_int_equal(steal_read(NULL, cpus, 1, ns, have), 0);
                } else {
                        after = v[7];
                }
        }
        assert_true(have[0]);
        assert_true(ns[0] >= ticks_ns(before));
        assert_true(ns[0] <= ticks_ns(after));
}

static int setup(void **state)
{
        (void)state;
        snprintf(root, sizeof(root), "/tmp/test-steal-XXXXXX");
        return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
        char cmd[PATH_MAX + 16];

        (void)state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixture),
                cmocka_unit_test(test_missing_file),
                cmocka_unit_test(test_real),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}

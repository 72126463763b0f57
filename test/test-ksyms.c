/* Unit tests of kernel symbol lookup against kallsyms files written here: functions and data,
 * module symbols out of order, offsets into a function, addresses beyond any function, hidden
 * addresses, the bound on remembered addresses; and this machine's /proc/kallsyms. */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksyms-internal.h"

static char *write_file(const char *text)
{
        static char path[64];
        FILE *f;
        int fd;

        snprintf(path, sizeof(path), "/tmp/test-ksyms-XXXXXX");
        fd = mkstemp(path);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return path;
}

static const char *const FIXTURE = "ffffffff81000000 T _stext\n"
                                   "ffffffff81001000 t hrtimer_wakeup\n"
                                   "ffffffff81001100 D some_data\n"
                                   "ffffffff81002000 T tick_nohz_handler\n"
                                   "ffffffffc0002000 t nf_hook_fn\t[nf_tables]\n"
                                   "ffffffff81003000 W weak_function\n"
                                   "ffffffffc0001000 t mod_work_fn\t[mymod]\n"
                                   "ffffffff81004000 T "
                                   "a_function_with_a_very_long_name_indeed\n"
                                   "ffffffff81005000 T last_one";

static void test_names(void **state)
{
        char *path = write_file(FIXTURE);
        Ksyms *k;

        (void)state;
        assert_int_equal(ksyms_new(path, &k), 0);
        /* Nothing is known before a pass; asking queues. */
        assert_null(ksyms_lookup(k, 0xffffffff81001000ULL));
        assert_null(ksyms_lookup(k, 0xffffffff81001180ULL));
        assert_null(ksyms_lookup(k, 0xffffffffc0001010ULL));
        assert_null(ksyms_lookup(k, 0xffffffff81003000ULL));
        assert_null(ksyms_lookup(k, 0xffffffff81004000ULL));
        assert_null(ksyms_lookup(k, 0xffffffff81005000ULL));
        assert_null(ksyms_lookup(k, 0xffffffff80000000ULL));
        assert_null(ksyms_lookup(k, 0xffffffff91005000ULL));
        assert_int_equal(ksyms_resolve(k), 8);
        assert_false(ksyms_hidden(k));
        assert_string_equal(ksyms_lookup(k, 0xffffffff81001000ULL), "hrtimer_wakeup");
        /* Data symbols are not functions: the address is inside hrtimer_wakeup. */
        assert_string_equal(ksyms_lookup(k, 0xffffffff81001180ULL), "hrtimer_wakeup+0x180");
        /* A module's symbol listed after the kernel's, below a module symbol before it. */
        assert_string_equal(ksyms_lookup(k, 0xffffffffc0001010ULL), "mod_work_fn+0x10");
        assert_string_equal(ksyms_lookup(k, 0xffffffff81003000ULL), "weak_function");
        /* Cut to fit. */
        assert_string_equal(ksyms_lookup(k, 0xffffffff81004000ULL),
                            "a_function_with_a_very_long_nam");
        /* The last line has no newline. */
        assert_string_equal(ksyms_lookup(k, 0xffffffff81005000ULL), "last_one");
        /* Below every symbol, and far beyond the last: hex. */
        assert_string_equal(ksyms_lookup(k, 0xffffffff80000000ULL), "0xffffffff80000000");
        assert_string_equal(ksyms_lookup(k, 0xffffffff91005000ULL), "0xffffffff91005000");
        /* Nothing queued: no pass. */
        assert_int_equal(ksyms_resolve(k), 0);
        /* Addresses asked for later are named from what the first pass read: no other. */
        assert_null(ksyms_lookup(k, 0xffffffff81002000ULL));
        assert_null(ksyms_lookup(k, 0xffffffffc0002004ULL));
        assert_int_equal(ksyms_resolve(k), 2);
        assert_string_equal(ksyms_lookup(k, 0xffffffff81002000ULL), "tick_nohz_handler");
        assert_string_equal(ksyms_lookup(k, 0xffffffffc0002004ULL), "nf_hook_fn+0x4");
        assert_int_equal(ksyms_passes(k), 1);
        ksyms_free(k);
        unlink(path);
}

/* Of several names at one address, the first listed. */
static void test_aliases(void **state)
{
        char *path = write_file("ffffffff81000000 T _stext\n"
                                "ffffffff81001000 T first_name\n"
                                "ffffffff81001000 t second_name\n"
                                "ffffffff81002000 T next\n");
        Ksyms *k;

        (void)state;
        assert_int_equal(ksyms_new(path, &k), 0);
        assert_null(ksyms_lookup(k, 0xffffffff81001000ULL));
        assert_null(ksyms_lookup(k, 0xffffffff81001008ULL));
        assert_int_equal(ksyms_resolve(k), 2);
        assert_string_equal(ksyms_lookup(k, 0xffffffff81001000ULL), "first_name");
        assert_string_equal(ksyms_lookup(k, 0xffffffff81001008ULL), "first_name+0x8");
        ksyms_free(k);
        unlink(path);
}

static void test_hidden(void **state)
{
        char *path = write_file("0000000000000000 T _stext\n0000000000000000 t hrtimer_wakeup\n");
        Ksyms *k;

        (void)state;
        assert_int_equal(ksyms_new(path, &k), 0);
        assert_null(ksyms_lookup(k, 0xffffffff81001000ULL));
        assert_int_equal(ksyms_resolve(k), 1);
        assert_true(ksyms_hidden(k));
        assert_string_equal(ksyms_lookup(k, 0xffffffff81001000ULL), "0xffffffff81001000");
        /* Once hidden, new addresses get their hex value at once. */
        assert_string_equal(ksyms_lookup(k, 0xffffffff81002000ULL), "0xffffffff81002000");
        ksyms_free(k);
        unlink(path);
}

static void test_bounds(void **state)
{
        char *path = write_file(FIXTURE);
        unsigned named = 0;
        Ksyms *k;
        int r;

        (void)state;
        assert_int_equal(ksyms_new(path, &k), 0);
        for (uint64_t i = 0; i < KSYMS_MAX + 10; i++) {
                assert_null(ksyms_lookup(k, 0xffffffff81000000ULL + 16 * i));
        }
        /* Every remembered address at once, from one read of the file. */
        while ((r = ksyms_resolve(k)) > 0) {
                named += (unsigned)r;
        }
        assert_int_equal(r, 0);
        assert_int_equal(named, KSYMS_MAX);
        assert_int_equal(ksyms_passes(k), 1);
        assert_string_equal(ksyms_lookup(k, 0xffffffff81000010ULL), "_stext+0x10");
        /* Beyond the bound an address stays unnamed, and is not queued. */
        assert_null(ksyms_lookup(k, 0xffffffff81000000ULL + 16 * (KSYMS_MAX + 5)));
        assert_int_equal(ksyms_resolve(k), 0);
        ksyms_free(k);
        unlink(path);
        assert_int_equal(ksyms_new("/nonexistent/kallsyms", &k), -ENOENT);
}

/* This kernel's own table: the address of a function read with a plain scanf names it. Whether
 * the addresses are hidden from this process is seen in the file itself (every address reads
 * as zero without CAP_SYSLOG or with kptr_restrict), and the module must say the same. */
static void test_this_kernel(void **state)
{
        FILE *f = fopen("/proc/kallsyms", "r");
        unsigned long long addr = 0;
        bool found = false;
        char type, name[128];
        Ksyms *k;

        (void)state;
        if (!f) {
                print_message("skipped: this kernel's own table: cannot open /proc/kallsyms: %s\n",
                              strerror(errno));
                skip();
        }
        while (fscanf(f, "%llx %c %127s%*[^\n]", &addr, &type, name) == 3) {
                if (type == 'T' && strcmp(name, "schedule") == 0) {
                        found = true;
                        break;
                }
        }
        fclose(f);
        if (!found) {
                print_message("skipped: this kernel's own table: it has no text symbol "
                              "\"schedule\"\n");
                skip();
        }
        assert_int_equal(ksyms_new(NULL, &k), 0);
        assert_null(ksyms_lookup(k, 0xffffffff81000000ULL));
        assert_int_equal(ksyms_resolve(k), 1);
        if (addr == 0) {
                assert_true(ksyms_hidden(k));
                print_message("skipped: this kernel's own table: its addresses are hidden from "
                              "us (all zero: no CAP_SYSLOG, or kptr_restrict)\n");
                ksyms_free(k);
                skip();
        }
        assert_false(ksyms_hidden(k));
        assert_null(ksyms_lookup(k, addr));
        assert_int_equal(ksyms_resolve(k), 1);
        assert_string_equal(ksyms_lookup(k, addr), "schedule");
        assert_int_equal(ksyms_passes(k), 1);
        ksyms_free(k);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),       cmocka_unit_test(test_hidden),
                cmocka_unit_test(test_aliases),     cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_this_kernel),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

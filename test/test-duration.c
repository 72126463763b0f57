/* Unit tests of probe/duration.c: the text forms of a duration, for a reader (the unit chosen
 * for its size, with two decimals or to three significant digits) and for the configuration
 * (exact, read back by duration_parse()). */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "duration.h"
#include "util.h"

static void test_format(void **state)
{
        char buf[32];

        (void)state;
        assert_string_equal(duration_format(buf, sizeof(buf), 0), "0 ns");
        assert_string_equal(duration_format(buf, sizeof(buf), 999), "999 ns");
        assert_string_equal(duration_format(buf, sizeof(buf), 1000), "1.00 us");
        assert_string_equal(duration_format(buf, sizeof(buf), 12340), "12.34 us");
        assert_string_equal(duration_format(buf, sizeof(buf), 4560000), "4.56 ms");
        assert_string_equal(duration_format(buf, sizeof(buf), 999999999), "1000.00 ms");
        assert_string_equal(duration_format(buf, sizeof(buf), 2 * NSEC_PER_SEC), "2.00 s");
        assert_string_equal(duration_format(buf, sizeof(buf), UINT64_MAX), "18446744073.71 s");

        assert_string_equal(duration_format_signed(buf, sizeof(buf), 850), "850 ns");
        assert_string_equal(duration_format_signed(buf, sizeof(buf), -850), "-850 ns");
        assert_string_equal(duration_format_signed(buf, sizeof(buf), -999), "-999 ns");
        assert_string_equal(duration_format_signed(buf, sizeof(buf), -1000), "-1.00 us");
        assert_string_equal(duration_format_signed(buf, sizeof(buf), -12340), "-12.34 us");
        assert_string_equal(duration_format_signed(buf, sizeof(buf), -4560000), "-4.56 ms");
        assert_string_equal(duration_format_signed(buf, sizeof(buf), -3000000000), "-3.00 s");
}

static void test_format_sig3(void **state)
{
        char buf[32];

        (void)state;
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 0, true), "0 ns");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), -0.001, true), "0 ns");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 23, true), "23 ns");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 23.456, true), "23.5 ns");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 999.6, true), "1.00 us");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 12345, true), "12.3 us");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 12345, false), "12.3 µs");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), -4560000, false), "-4.56 ms");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), 1e12, false), "1000 s");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), NAN, false), "-");
        assert_string_equal(duration_format_sig3(buf, sizeof(buf), -INFINITY, true), "-");
}

static void test_format_exact(void **state)
{
        static const struct {
                uint64_t ns;
                const char *text;
        } cases[] = {
                {0, "0"},
                {1, "1ns"},
                {1500, "1500ns"},
                {250 * NSEC_PER_USEC, "250us"},
                {NSEC_PER_SEC / 2, "500ms"},
                {10 * NSEC_PER_SEC, "10s"},
                {90 * NSEC_PER_SEC, "90s"},
                {5 * NSEC_PER_MIN, "5min"},
                {NSEC_PER_DAY, "24h"},
                {36 * NSEC_PER_HOUR, "36h"},
                {2 * NSEC_PER_DAY, "2d"},
                {400 * NSEC_PER_DAY, "400d"},
        };
        char buf[32];

        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t back = 1;

                assert_string_equal(duration_format_exact(buf, sizeof(buf), cases[i].ns),
                                    cases[i].text);
                assert_int_equal(duration_parse(buf, NSEC_PER_SEC, &back), 0);
                assert_true(back == cases[i].ns);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_format_sig3),
                cmocka_unit_test(test_format_exact),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

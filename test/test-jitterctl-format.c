/* Unit tests of jitterctl's text formatting: units chosen for the value, counts, rates,
 * percentages, widths, ISO 8601 times, percentile keys and daemon error messages. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl-format-internal.h"

static void check_ns(double ns, const char *want)
{
        char buf[FORMAT_MAX];

        format_ns(buf, sizeof(buf), ns);
        if (strcmp(buf, want) != 0) {
                print_error("format_ns(%g): got \"%s\", want \"%s\"\n", ns, buf, want);
                fail();
        }
}

static void test_format_ns(void **state)
{
        format_set_ascii(true);
        check_ns(0, "0 ns");
        check_ns(-0.001, "0 ns");
        check_ns(8, "8 ns");
        check_ns(23, "23 ns");
        check_ns(23.456, "23.5 ns");
        check_ns(5.5, "5.50 ns");
        check_ns(99.7, "100 ns");
        check_ns(150, "150 ns");
        check_ns(999, "999 ns");
        /* Rounding to 1000 of a unit moves to the next unit. */
        check_ns(999.6, "1.00 us");
        check_ns(1000, "1.00 us");
        check_ns(12345, "12.3 us");
        check_ns(999999, "1.00 ms");
        check_ns(4560000, "4.56 ms");
        check_ns(-4560000, "-4.56 ms");
        check_ns(22477870, "22.5 ms");
        check_ns(2e9, "2.00 s");
        check_ns(1e12, "1000 s");
        check_ns(NAN, "-");
        check_ns(INFINITY, "-");
        format_set_ascii(false);
        check_ns(12345, "12.3 µs");
        check_ns(-2500, "-2.50 µs");
        format_set_ascii(true);
}

static void check_count(uint64_t n, const char *want)
{
        char buf[FORMAT_MAX];

        assert_string_equal(format_count(buf, sizeof(buf), n), want);
}

static void test_format_count(void **state)
{
        check_count(0, "0");
        check_count(999, "999");
        check_count(9999, "9999");
        check_count(10000, "10.0k");
        check_count(12345, "12.3k");
        check_count(999499, "999k");
        check_count(999999, "1.00M");
        check_count(45000000, "45.0M");
        check_count(263000000, "263M");
        check_count(1200000000, "1.20G");
        check_count(UINT64_MAX, "18.4E");
}

static void test_format_rate_pct(void **state)
{
        char buf[FORMAT_MAX];

        assert_string_equal(format_rate(buf, sizeof(buf), 0), "0");
        assert_string_equal(format_rate(buf, sizeof(buf), 0.5), "0.500");
        assert_string_equal(format_rate(buf, sizeof(buf), 1.0 / 60), "0.0167");
        assert_string_equal(format_rate(buf, sizeof(buf), 12.34), "12.3");
        assert_string_equal(format_rate(buf, sizeof(buf), 1234), "1234");
        assert_string_equal(format_rate(buf, sizeof(buf), 12345), "12.3k");
        assert_string_equal(format_rate(buf, sizeof(buf), 0.0001), "<0.001");
        assert_string_equal(format_rate(buf, sizeof(buf), NAN), "-");

        assert_string_equal(format_pct(buf, sizeof(buf), 0), "0");
        assert_string_equal(format_pct(buf, sizeof(buf), 0.00123), "0.00123");
        assert_string_equal(format_pct(buf, sizeof(buf), 0.5), "0.500");
        assert_string_equal(format_pct(buf, sizeof(buf), 1.5), "1.50");
        assert_string_equal(format_pct(buf, sizeof(buf), 14.7), "14.7");
        assert_string_equal(format_pct(buf, sizeof(buf), 100), "100");
        assert_string_equal(format_pct(buf, sizeof(buf), 1e-12), "0.000000000");
        assert_string_equal(format_pct(buf, sizeof(buf), NAN), "-");
}

static void test_format_uptime(void **state)
{
        char buf[FORMAT_MAX];

        assert_string_equal(format_uptime(buf, sizeof(buf), 45200000000ULL), "45.2 s");
        assert_string_equal(format_uptime(buf, sizeof(buf), 306ULL * 1000000000ULL), "5m 06s");
        assert_string_equal(format_uptime(buf, sizeof(buf), 7384ULL * 1000000000ULL), "2h 03m 04s");
        assert_string_equal(
                format_uptime(buf, sizeof(buf), (3 * 86400ULL + 4 * 3600 + 5 * 60) * 1000000000ULL),
                "3d 04h 05m");
}

static void test_width_and_padding(void **state)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        assert_int_equal(text_width("abc"), 3);
        assert_int_equal(text_width("12.3 µs"), 7);
        assert_int_equal(text_width("\033[31mred\033[0m"), 3);
        assert_int_equal(text_width(""), 0);

        f = open_memstream(&text, &size);
        assert_non_null(f);
        fput_padded(f, "µs", 4);
        fputc('|', f);
        fput_padded(f, "ab", -4);
        fputc('|', f);
        fput_padded(f, "toolong", 3);
        fclose(f);
        assert_string_equal(text, "  µs|ab  |toolong");
        free(text);
}

static void test_iso8601(void **state)
{
        struct timespec ts;
        char buf[FORMAT_MAX];

        assert_int_equal(iso8601_parse("2024-05-01T12:34:56.123456789Z", &ts), 0);
        assert_int_equal(ts.tv_sec, 1714566896);
        assert_int_equal(ts.tv_nsec, 123456789);
        assert_int_equal(iso8601_parse("2024-05-01T12:34:56Z", &ts), 0);
        assert_int_equal(ts.tv_sec, 1714566896);
        assert_int_equal(ts.tv_nsec, 0);
        assert_int_equal(iso8601_parse("2024-05-01T12:34:56.5+00:00", &ts), 0);
        assert_int_equal(ts.tv_nsec, 500000000);

        assert_int_equal(iso8601_parse(NULL, &ts), -EINVAL);
        assert_int_equal(iso8601_parse("", &ts), -EINVAL);
        assert_int_equal(iso8601_parse("garbage", &ts), -EINVAL);
        assert_int_equal(iso8601_parse("2024-13-01T12:34:56Z", &ts), -EINVAL);
        assert_int_equal(iso8601_parse("2024-05-01T25:34:56Z", &ts), -EINVAL);
        assert_int_equal(iso8601_parse("2024-05-01T12:34:56", &ts), -EINVAL);
        assert_int_equal(iso8601_parse("2024-05-01T12:34:56.Z", &ts), -EINVAL);
        assert_int_equal(iso8601_parse("2024-05-01T12:34:56+02:00", &ts), -EINVAL);

        setenv("TZ", "UTC", 1);
        tzset();
        ts = (struct timespec){.tv_sec = 1714566896, .tv_nsec = 123456789};
        assert_string_equal(format_local_time(buf, sizeof(buf), &ts, true),
                            "2024-05-01 12:34:56.123456");
        assert_string_equal(format_local_time(buf, sizeof(buf), &ts, false), "12:34:56.123456");
}

static void test_percentile_key(void **state)
{
        char key[32];

        assert_int_equal(percentile_key("99.99", key, sizeof(key)), 0);
        assert_string_equal(key, "p99.99");
        assert_int_equal(percentile_key("p50", key, sizeof(key)), 0);
        assert_string_equal(key, "p50");
        assert_int_equal(percentile_key("99.9999", key, sizeof(key)), 0);
        assert_string_equal(key, "p99.9999");
        assert_int_equal(percentile_key("99.990", key, sizeof(key)), 0);
        assert_string_equal(key, "p99.99");

        assert_int_equal(percentile_key("100", key, sizeof(key)), -EINVAL);
        assert_int_equal(percentile_key("0", key, sizeof(key)), -EINVAL);
        assert_int_equal(percentile_key("-5", key, sizeof(key)), -EINVAL);
        assert_int_equal(percentile_key("abc", key, sizeof(key)), -EINVAL);
        assert_int_equal(percentile_key("99.9x", key, sizeof(key)), -EINVAL);
        assert_int_equal(percentile_key("", key, sizeof(key)), -EINVAL);
        assert_int_equal(percentile_key("p", key, sizeof(key)), -EINVAL);
}

static void test_format_error(void **state)
{
        char buf[256];
        json_t *p;

        p = json_pack("{s:i}", "cpu", 7);
        assert_string_equal(format_error(buf, sizeof(buf), "io.jitterd.NoSuchCpu", p),
                            "no probe on CPU 7");
        json_decref(p);

        p = json_pack("{s:s}", "window", "2x");
        assert_string_equal(format_error(buf, sizeof(buf), "io.jitterd.InvalidWindow", p),
                            "invalid window \"2x\" (use 10s, 1m, 5m, 1h, 24h or all)");
        json_decref(p);

        p = json_pack("{s:s, s:s}", "parameter", "since", "value", "soon");
        assert_string_equal(format_error(buf, sizeof(buf), "io.jitterd.InvalidDuration", p),
                            "invalid duration \"soon\" for since (e.g. 500ms, 10s, 5m)");
        json_decref(p);

        /* Unknown errors keep their name and parameters, so nothing is lost. */
        p = json_pack("{s:i}", "a", 1);
        assert_string_equal(format_error(buf, sizeof(buf), "com.example.Odd", p),
                            "com.example.Odd {\"a\":1}");
        json_decref(p);
        assert_string_equal(format_error(buf, sizeof(buf), "com.example.Odd", NULL),
                            "com.example.Odd");
        /* A NoSuchCpu without its parameter is still printed, just less helpfully. */
        assert_string_equal(format_error(buf, sizeof(buf), "io.jitterd.NoSuchCpu", NULL),
                            "io.jitterd.NoSuchCpu");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_ns),         cmocka_unit_test(test_format_count),
                cmocka_unit_test(test_format_rate_pct),   cmocka_unit_test(test_format_uptime),
                cmocka_unit_test(test_width_and_padding), cmocka_unit_test(test_iso8601),
                cmocka_unit_test(test_percentile_key),    cmocka_unit_test(test_format_error),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

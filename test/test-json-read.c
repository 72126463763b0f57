/* Unit tests of probe/json/json-read.c: the readers of required members (what is missing or
 * malformed is -EBADMSG) and of optional members with a default (the parameters of a call). */

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-read.h"

static json_t *load(const char *text)
{
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);

        assert_non_null(j);
        return j;
}

static void test_required_numbers(void **state)
{
        json_t *o = json_pack("{s:I, s:i, s:f, s:s, s:n, s:i, s:f, s:f}", "big",
                              (json_int_t)1 << 40, "neg", -1, "real", 2.5, "str", "x", "null",
                              "cpu", 3, "ns", 1234.6, "huge", 1e19);
        json_int_t i = 0;
        uint64_t u = 0;
        double d = 0;

        (void)state;
        assert_int_equal(json_read_int(o, "cpu", 0, 3, &i), 0);
        assert_int_equal(i, 3);
        assert_int_equal(json_read_int(o, "cpu", 0, 2, &i), -EBADMSG);
        assert_int_equal(json_read_int(o, "cpu", 4, 9, &i), -EBADMSG);
        assert_int_equal(i, 3);
        assert_int_equal(json_read_int(o, "real", 0, 9, &i), -EBADMSG);
        assert_int_equal(json_read_int(o, "null", 0, 9, &i), -EBADMSG);

        assert_int_equal(json_read_u64(o, "big", &u), 0);
        assert_int_equal(u, 1ULL << 40);
        assert_int_equal(json_read_u64(o, "neg", &u), -EBADMSG);
        assert_int_equal(json_read_u64(o, "real", &u), -EBADMSG);
        assert_int_equal(json_read_u64(o, "missing", &u), -EBADMSG);
        assert_int_equal(json_read_u64(NULL, "big", &u), -EBADMSG);
        assert_int_equal(u, 1ULL << 40);

        assert_int_equal(json_read_number(o, "real", &d), 0);
        assert_true(d == 2.5);
        assert_int_equal(json_read_number(o, "big", &d), 0);
        assert_true(d == (double)(1ULL << 40));
        assert_int_equal(json_read_number(o, "str", &d), -EBADMSG);
        assert_int_equal(json_read_number(o, "null", &d), -EBADMSG);

        assert_int_equal(json_read_ns(o, "ns", &u), 0);
        assert_int_equal(u, 1235);
        assert_int_equal(json_read_ns(o, "cpu", &u), 0);
        assert_int_equal(u, 3);
        assert_int_equal(json_read_ns(o, "neg", &u), -EBADMSG);
        assert_int_equal(json_read_ns(o, "huge", &u), -EBADMSG);
        assert_int_equal(ns_from_number(NAN, &u), -EBADMSG);
        assert_int_equal(ns_from_number(-0.5, &u), -EBADMSG);
        assert_int_equal(ns_from_number(0.4, &u), 0);
        assert_int_equal(u, 0);
        json_decref(o);
}

static void test_required_strings(void **state)
{
        json_t *o = json_pack("{s:s, s:f, s:n, s:s#}", "str", "text", "real", 2.5, "null", "nul",
                              "a\0b", (size_t)3);
        const char *s = NULL;

        (void)state;
        assert_int_equal(json_read_string(o, "str", 4, &s), 0);
        assert_string_equal(s, "text");
        assert_int_equal(json_read_string(o, "str", 3, &s), -EBADMSG);
        assert_int_equal(json_read_string(o, "real", 9, &s), -EBADMSG);
        assert_int_equal(json_read_string(o, "null", 9, &s), -EBADMSG);
        assert_int_equal(json_read_string(o, "nul", 9, &s), -EBADMSG);
        assert_int_equal(json_read_string(o, "missing", 9, &s), -EBADMSG);

        assert_string_equal(json_read_string_or(o, "str", "-"), "text");
        assert_string_equal(json_read_string_or(o, "real", "-"), "-");
        assert_string_equal(json_read_string_or(o, "nul", "-"), "-");
        assert_string_equal(json_read_string_or(NULL, "str", "-"), "-");
        json_decref(o);
}

static void test_optional(void **state)
{
        json_t *params = load("{\"n\":5,\"big\":9007199254740993,\"s\":\"text\",\"b\":true,"
                              "\"z\":null,\"f\":1.5}");
        const char *s = NULL;
        json_int_t i = 0;

        (void)state;
        assert_int_equal(json_read_int_default(params, "n", 0, 10, 1, &i), 0);
        assert_int_equal(i, 5);
        assert_int_equal(json_read_int_default(params, "n", 6, 10, 1, &i), -ERANGE);
        assert_int_equal(json_read_int_default(params, "n", 0, 4, 1, &i), -ERANGE);
        assert_int_equal(json_read_int_default(params, "big", 0, INT64_MAX, 0, &i), 0);
        assert_true(i == 9007199254740993LL);
        assert_int_equal(json_read_int_default(params, "missing", 0, 10, 7, &i), 0);
        assert_int_equal(i, 7);
        assert_int_equal(json_read_int_default(params, "z", 0, 10, 8, &i), 0);
        assert_int_equal(i, 8);
        assert_int_equal(json_read_int_default(params, "s", 0, 10, 1, &i), -EINVAL);
        assert_int_equal(json_read_int_default(params, "f", 0, 10, 1, &i), -EINVAL);
        assert_int_equal(json_read_int_default(NULL, "n", 0, 10, 3, &i), 0);
        assert_int_equal(i, 3);

        assert_int_equal(json_read_string_default(params, "s", NULL, &s), 0);
        assert_string_equal(s, "text");
        assert_int_equal(json_read_string_default(params, "z", "dflt", &s), 0);
        assert_string_equal(s, "dflt");
        assert_int_equal(json_read_string_default(params, "n", NULL, &s), -EINVAL);
        assert_int_equal(json_read_string_default(params, "b", NULL, &s), -EINVAL);
        json_decref(params);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_required_numbers),
                cmocka_unit_test(test_required_strings),
                cmocka_unit_test(test_optional),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

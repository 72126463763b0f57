/* Unit tests of daemon/json-text.c, against jansson as the reference reader and writer: every
 * string written, whatever its bytes, parses back as JSON to what the test expects (itself for
 * valid UTF-8, U+FFFD in place of each byte that is not), and ASCII is written byte for byte as
 * jansson writes it; integers at their edges are the decimal text printf gives; times are
 * realtime_format_iso8601()'s; a document written piece by piece parses to the object built with
 * jansson; a size that cannot be allocated is reported at the end, not as a truncated text. */

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "duration.h"
#include "json-text.h"

/* Parses the text of @t as one JSON value (decoding any, even a bare string) and frees @t's
 * text. */
static json_t *parse(JsonText *t)
{
        size_t len;
        char *text = json_text_take(t, &len);
        json_error_t err;
        json_t *v;

        assert_non_null(text);
        assert_int_equal(strlen(text), len);
        v = json_loadb(text, len, JSON_DECODE_ANY, &err);
        if (!v) {
                fail_msg("not JSON: %s: %s", err.text, text);
        }
        free(text);
        return v;
}

static void check_string(const char *in, const char *want)
{
        JsonText t = {0};
        json_t *v;

        json_text_string(&t, in);
        v = parse(&t);
        assert_true(json_is_string(v));
        assert_string_equal(json_string_value(v), want);
        json_decref(v);
}

static void test_strings(void **state)
{
        char all[128];

        (void)state;
        check_string("", "");
        check_string("plain irq/24-virtio0", "plain irq/24-virtio0");
        check_string("quote \" backslash \\ slash /", "quote \" backslash \\ slash /");
        check_string("tab\tnl\ncr\rbs\bff\f", "tab\tnl\ncr\rbs\bff\f");
        check_string("\x01\x1f\x7f", "\x01\x1f\x7f");
        /* Valid UTF-8 of 2, 3 and 4 bytes passes as it is. */
        check_string("é € 😀", "é € 😀");
        /* Each byte outside valid UTF-8 becomes U+FFFD: a lone continuation byte, a lead byte
         * cut short, an overlong form, a surrogate, past U+10FFFF, 0xff. */
        check_string("a\x80z", "a\xef\xbf\xbdz");
        check_string("a\xc3", "a\xef\xbf\xbd");
        check_string("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");
        check_string("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        check_string("\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        check_string("\xff", "\xef\xbf\xbd");
        /* Every ASCII byte, written byte for byte as jansson writes it. */
        for (int c = 1; c < 128; c++) {
                all[c - 1] = (char)c;
        }
        all[127] = '\0';
        check_string(all, all);
        {
                JsonText t = {0};
                json_t *j = json_string(all);
                char *want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT), *got;
                size_t len;

                json_text_string(&t, all);
                got = json_text_take(&t, &len);
                assert_string_equal(got, want);
                free(got);
                free(want);
                json_decref(j);
        }
        /* NULL is null. */
        {
                JsonText t = {0};
                json_t *v;

                json_text_string(&t, NULL);
                v = parse(&t);
                assert_true(json_is_null(v));
                json_decref(v);
        }
}

/* Times written as realtime_format_iso8601() (strftime and snprintf) writes them, in quotes:
 * the epoch, the ends of a day, a year and a leap day, now, and the last uint64 ns (2554). */
static void test_realtime(void **state)
{
        static const uint64_t ns[] = {
                0,
                999999999ULL,
                86399ULL * 1000000000ULL + 999999999ULL,
                1704067199ULL * 1000000000ULL + 123456789ULL, /* 2023-12-31T23:59:59 */
                1709164800ULL * 1000000000ULL + 1ULL,         /* 2024-02-29T00:00:00 */
                1796415198ULL * 1000000000ULL + 900000000ULL,
                UINT64_MAX,
        };

        (void)state;
        for (size_t k = 0; k < sizeof(ns) / sizeof(*ns); k++) {
                char want[64], quoted[70], *got;
                JsonText t = {0};
                size_t len;

                realtime_format_iso8601(want, sizeof(want), ns[k]);
                snprintf(quoted, sizeof(quoted), "\"%s\"", want);
                json_text_realtime(&t, ns[k]);
                got = json_text_take(&t, &len);
                assert_string_equal(got, quoted);
                free(got);
        }
}

/* Every day from 1970 to 2554 (the leap days of 2000 and 2400, the days around the missing
 * ones of 2100, 2200 and 2300 among them), each at a time of day of its own, as
 * realtime_format_iso8601() writes it. */
static void test_realtime_days(void **state)
{
        const uint64_t last_day = UINT64_MAX / 1000000000ULL / 86400ULL;

        (void)state;
        for (uint64_t day = 0; day <= last_day; day++) {
                uint64_t ns = (day * 86400ULL + day * 7919ULL % 86400ULL) * 1000000000ULL +
                              day % 1000000000ULL;
                char want[64], quoted[70], *got;
                JsonText t = {0};
                size_t len;

                if (ns / 1000000000ULL / 86400ULL != day) {
                        continue; /* past UINT64_MAX */
                }
                realtime_format_iso8601(want, sizeof(want), ns);
                snprintf(quoted, sizeof(quoted), "\"%s\"", want);
                json_text_realtime(&t, ns);
                got = json_text_take(&t, &len);
                assert_string_equal(got, quoted);
                free(got);
        }
}

static void test_integers(void **state)
{
        static const uint64_t u[] = {0, 9, 10, 99, 1000000007, INT64_MAX, UINT64_MAX};
        static const int64_t i[] = {0, -1, -10, 42, INT64_MIN, INT64_MAX};
        char want[32];

        (void)state;
        for (size_t k = 0; k < sizeof(u) / sizeof(*u); k++) {
                JsonText t = {0};
                size_t len;
                char *text;

                json_text_u64(&t, u[k]);
                text = json_text_take(&t, &len);
                snprintf(want, sizeof(want), "%" PRIu64, u[k]);
                assert_string_equal(text, want);
                free(text);
        }
        for (size_t k = 0; k < sizeof(i) / sizeof(*i); k++) {
                JsonText t = {0};
                json_t *v;

                json_text_i64(&t, i[k]);
                v = parse(&t);
                assert_true(json_is_integer(v));
                assert_true(json_integer_value(v) == i[k]);
                json_decref(v);
        }
}

/* A document of a few thousand objects, written as GetEvents writes its reply, equals the one
 * built with jansson (which also makes the buffer grow several times). */
static void test_document(void **state)
{
        json_t *want = json_array(), *got;
        JsonText t = {0};

        (void)state;
        json_text_raw(&t, "[");
        for (int k = 0; k < 3000; k++) {
                char name[32];

                snprintf(name, sizeof(name), "cause \"%d\"", k);
                json_array_append_new(want,
                                      json_pack("{si ss sb}", "n", k, "name", name, "odd", k % 2));
                json_text_raw(&t, k ? ",{" : "{");
                json_text_string(&t, "n");
                json_text_raw(&t, ":");
                json_text_i64(&t, k);
                json_text_raw(&t, ",");
                json_text_string(&t, "name");
                json_text_raw(&t, ":");
                json_text_string(&t, name);
                json_text_raw(&t, ",\"odd\":");
                json_text_bool(&t, k % 2);
                json_text_raw(&t, "}");
        }
        json_text_raw(&t, "]");
        got = parse(&t);
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
}

/* An empty text is "", not NULL; a failed allocation makes every later call a no-op and the
 * take NULL. */
static void test_empty_and_failure(void **state)
{
        JsonText t = {0};
        size_t len = 1;
        char *text;

        (void)state;
        text = json_text_take(&t, &len);
        assert_non_null(text);
        assert_string_equal(text, "");
        assert_int_equal(len, 0);
        free(text);

        json_text_raw(&t, "{\"a\":");
        /* More than can ever be allocated: refused before any copy, as a failed realloc()
         * would be. */
        json_text_rawn(&t, "x", SIZE_MAX / 2);
        assert_true(t.failed);
        json_text_u64(&t, 1);
        json_text_raw(&t, "}");
        assert_string_equal(t.buf, "{\"a\":");
        assert_null(json_text_take(&t, &len));
        assert_int_equal(len, 0);
        assert_null(t.buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strings),  cmocka_unit_test(test_integers),
                cmocka_unit_test(test_realtime), cmocka_unit_test(test_realtime_days),
                cmocka_unit_test(test_document), cmocka_unit_test(test_empty_and_failure),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of daemon/json-text.c, against jansson as the reference reader: every string
 * written, whatever its bytes, parses back as JSON to what the test expects (itself for valid
 * UTF-8, U+FFFD in place of each byte that is not); integers at their edges are the decimal
 * text printf gives; a document written piece by piece parses to the object built with
 * jansson; an allocation failure is reported at the end, not as a truncated text. */

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
        /* Every ASCII byte. */
        for (int c = 1; c < 128; c++) {
                all[c - 1] = (char)c;
        }
        all[127] = '\0';
        check_string(all, all);
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
                json_text_key(&t, "n");
                json_text_i64(&t, k);
                json_text_raw(&t, ",");
                json_text_key(&t, "name");
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
        t.failed = true; /* as reserve() leaves it when realloc() fails */
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
                cmocka_unit_test(test_strings),
                cmocka_unit_test(test_integers),
                cmocka_unit_test(test_document),
                cmocka_unit_test(test_empty_and_failure),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of probe/varlink/json-text.c, against jansson as the reference reader and writer:
 * every string written, whatever its bytes, parses back as JSON to what the test expects (itself
 * for valid UTF-8, U+FFFD in place of each byte that is not), and ASCII is written byte for byte as
 * jansson writes it; integers at their edges are the decimal text printf gives; times are
 * realtime_format_iso8601()'s; a document written piece by piece parses to the object built with
 * jansson; a jansson tree is written byte for byte as json_dumps() writes it, whole or member by
 * member; a size that
 * cannot be allocated is reported at the end, not as a truncated text. */

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "util.h"
#include "duration.h"
#include "json-text.h"
#include "rng.h"

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
        for (size_t k = 0; k < ELEMENTSOF(ns); k++) {
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
        for (size_t k = 0; k < ELEMENTSOF(u); k++) {
                JsonText t = {0};
                size_t len;
                char *text;

                json_text_u64(&t, u[k]);
                text = json_text_take(&t, &len);
                snprintf(want, sizeof(want), "%" PRIu64, u[k]);
                assert_string_equal(text, want);
                free(text);
        }
        for (size_t k = 0; k < ELEMENTSOF(i); k++) {
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

/* A finite double: the edges (zeros, the smallest and largest, powers of ten where "%.17g"
 * turns to an exponent) or any bit pattern that is not NaN or infinite. */
static double random_real(void)
{
        static const double edges[] = {0.0,
                                       -0.0,
                                       1.0,
                                       0.1,
                                       1e-5,
                                       1e-4,
                                       1e15,
                                       1e16,
                                       1e17,
                                       1e300,
                                       2.5e-300,
                                       5e-324,
                                       1.7976931348623157e308,
                                       -123.25,
                                       100.0};
        union {
                uint64_t u;
                double d;
        } x;

        if (rng_next() % 3 == 0) {
                return edges[rng_next() % ELEMENTSOF(edges)];
        }
        do {
                x.u = rng_next();
        } while ((x.u & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL);
        return x.d;
}

/* A valid UTF-8 string of up to 12 code points: ASCII with the characters JSON escapes, and
 * code points of 2, 3 and 4 bytes (no surrogates). */
static void random_string(char *buf, size_t size)
{
        size_t n = 0, count = rng_next() % 13;

        for (size_t i = 0; i < count && n + 5 < size; i++) {
                uint32_t cp;

                switch (rng_next() % 4) {
                case 0:
                        cp = 1 + (uint32_t)(rng_next() % 0x7f);
                        break;
                case 1:
                        cp = 0x80 + (uint32_t)(rng_next() % (0x800 - 0x80));
                        break;
                case 2:
                        cp = 0x800 + (uint32_t)(rng_next() % (0x10000 - 0x800));
                        cp = cp >= 0xd800 && cp <= 0xdfff ? 'x' : cp;
                        break;
                default:
                        cp = 0x10000 + (uint32_t)(rng_next() % (0x110000 - 0x10000));
                        break;
                }
                if (cp < 0x80) {
                        buf[n++] = (char)cp;
                } else if (cp < 0x800) {
                        buf[n++] = (char)(0xc0 | cp >> 6);
                        buf[n++] = (char)(0x80 | (cp & 0x3f));
                } else if (cp < 0x10000) {
                        buf[n++] = (char)(0xe0 | cp >> 12);
                        buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
                        buf[n++] = (char)(0x80 | (cp & 0x3f));
                } else {
                        buf[n++] = (char)(0xf0 | cp >> 18);
                        buf[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
                        buf[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
                        buf[n++] = (char)(0x80 | (cp & 0x3f));
                }
        }
        buf[n] = '\0';
}

/* Puts a NUL into the string @s (room for one more byte) at a random code point boundary, as
 * jansson's strings and keys may hold one; returns its length with the NUL. */
static size_t with_nul(char *s)
{
        size_t len = strlen(s), k = rng_next() % (len + 1);

        while (k < len && (s[k] & 0xc0) == 0x80) {
                k++; /* not inside a code point */
        }
        memmove(s + k + 1, s + k, len - k + 1);
        s[k] = '\0';
        return len + 1;
}

/* A random value nested up to @depth levels: every type, empty containers too, strings and
 * keys with a NUL inside among them. */
static json_t *random_value(unsigned depth)
{
        char s[64];
        json_t *v;

        switch (rng_next() % (depth > 0 ? 8 : 6)) {
        case 0:
                random_string(s, sizeof(s));
                return rng_next() % 8 ? json_string(s) : json_stringn(s, with_nul(s));
        case 1:
                return json_integer(rng_next() % 4 == 0
                                            ? (json_int_t)(rng_next() % 2 ? INT64_MIN : INT64_MAX)
                                            : (json_int_t)rng_next() >> (rng_next() % 64));
        case 2:
                return json_real(random_real());
        case 3:
                return json_true();
        case 4:
                return json_false();
        case 5:
                return json_null();
        case 6:
                v = json_array();
                for (uint64_t i = 0, n = rng_next() % 5; i < n; i++) {
                        json_array_append_new(v, random_value(depth - 1));
                }
                return v;
        default:
                v = json_object();
                for (uint64_t i = 0, n = rng_next() % 5; i < n; i++) {
                        random_string(s, sizeof(s));
                        json_object_setn_new(v, s, rng_next() % 8 ? strlen(s) : with_nul(s),
                                             random_value(depth - 1));
                }
                return v;
        }
}

/* 3000 random trees (the edges of the reals among their numbers), written as
 * json_dumps(JSON_COMPACT) writes them, byte for byte; JSON_TEXT_DEPTH_MAX + 1 levels of arrays
 * are written, one more fails the text. */
static void test_value(void **state)
{
        json_t *deep = json_array(), *inner = deep;
        JsonText t = {0};
        char *text;
        size_t len;

        (void)state;
        for (int k = 0; k < 3000; k++) {
                json_t *v = random_value(5);
                char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY), *got;

                assert_non_null(want);
                json_text_value(&t, v);
                got = json_text_take(&t, &len);
                assert_non_null(got);
                assert_string_equal(got, want);
                assert_int_equal(len, strlen(want));
                free(got);
                free(want);
                json_decref(v);
        }
        for (int k = 1; k < JSON_TEXT_DEPTH_MAX + 1; k++) {
                json_t *next = json_array();

                json_array_append_new(inner, next);
                inner = next;
        }
        json_text_value(&t, deep);
        text = json_text_take(&t, &len);
        assert_non_null(text);
        assert_int_equal(len, 2 * (JSON_TEXT_DEPTH_MAX + 1));
        free(text);
        json_array_append_new(inner, json_array());
        json_text_value(&t, deep);
        assert_null(json_text_take(&t, &len));
        json_decref(deep);
}

/* Writes @v with the writers of members and items (json_text_key(), json_text_item()) and of
 * each kind of value, as a handler writes its reply; false, with nothing useful in @t, when a
 * key holds a NUL (json_text_key() takes C strings). */
static bool write_by_members(JsonText *t, const json_t *v)
{
        const char *key;
        size_t i, key_len;
        json_t *item;

        switch (json_typeof(v)) {
        case JSON_OBJECT:
                json_text_raw(t, "{");
                json_object_keylen_foreach((json_t *)v, key, key_len, item)
                {
                        if (strlen(key) != key_len) {
                                return false;
                        }
                        json_text_key(t, key);
                        if (!write_by_members(t, item)) {
                                return false;
                        }
                }
                json_text_raw(t, "}");
                return true;
        case JSON_ARRAY:
                json_text_raw(t, "[");
                json_array_foreach(v, i, item)
                {
                        json_text_item(t);
                        if (!write_by_members(t, item)) {
                                return false;
                        }
                }
                json_text_raw(t, "]");
                return true;
        case JSON_STRING:
                json_text_value(t, v); /* its bytes may hold a NUL */
                return true;
        case JSON_INTEGER:
                json_text_i64(t, json_integer_value(v));
                return true;
        case JSON_REAL:
                json_text_real(t, json_real_value(v));
                return true;
        case JSON_TRUE:
        case JSON_FALSE:
                json_text_bool(t, json_is_true(v));
                return true;
        default:
                json_text_raw(t, "null");
                return true;
        }
}

/* A document written member by member and item by item, its commas placed by json_text_key()
 * and json_text_item(), is what json_dumps() writes of the same tree; so is a real, and a real
 * that is not finite is null. */
static void test_members(void **state)
{
        static const double reals[] = {0.0, -0.0, 1.0, 0.1, 1e300, -2.5e-310, 123456789.125};
        JsonText t = {0};
        unsigned compared = 0;
        size_t len;
        char *got;

        (void)state;
        for (int k = 0; k < 3000; k++) {
                json_t *v = random_value(5);
                char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                bool written = write_by_members(&t, v);

                got = json_text_take(&t, &len);
                assert_non_null(want);
                assert_non_null(got);
                if (written) {
                        assert_string_equal(got, want);
                        compared++;
                }
                free(got);
                free(want);
                json_decref(v);
        }
        assert_true(compared > 1000);
        for (size_t i = 0; i < ELEMENTSOF(reals); i++) {
                json_t *v = json_real(reals[i]);
                char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

                json_text_real(&t, reals[i]);
                got = json_text_take(&t, &len);
                assert_string_equal(got, want);
                free(got);
                free(want);
                json_decref(v);
        }
        json_text_raw(&t, "[");
        json_text_item(&t);
        json_text_real(&t, NAN);
        json_text_item(&t);
        json_text_real(&t, INFINITY);
        json_text_raw(&t, "]");
        got = json_text_take(&t, &len);
        assert_string_equal(got, "[null,null]");
        free(got);
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
                cmocka_unit_test(test_document), cmocka_unit_test(test_value),
                cmocka_unit_test(test_members),  cmocka_unit_test(test_empty_and_failure),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

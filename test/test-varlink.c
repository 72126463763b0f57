/* Unit tests of probe/varlink/varlink.c: framing (split and merged reads, limits, junk), strict
 * call and reply parsing, message builders, and table-driven parameter validation. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"
#include "varlink.h"

/* Feeds a C string literal including its terminating NUL, i.e. one whole message. */
static int feed_msg(VarlinkReader *r, const char *text)
{
        return varlink_reader_feed(r, text, strlen(text) + 1);
}

static void assert_next_equals(VarlinkReader *r, const char *expected_json)
{
        json_t *msg = NULL, *expected;

        assert_int_equal(varlink_reader_next(r, &msg), 1);
        expected = json_loads(expected_json, 0, NULL);
        assert_non_null(expected);
        assert_true(json_equal(msg, expected));
        json_decref(expected);
        json_decref(msg);
}

static void assert_invalid_parameter(json_t *error, const char *name)
{
        VarlinkReply reply;

        assert_non_null(error);
        assert_int_equal(varlink_reply_parse(error, &reply), 0);
        assert_string_equal(reply.error, VARLINK_ERROR_INVALID_PARAMETER);
        assert_non_null(reply.parameters);
        assert_string_equal(json_string_value(json_object_get(reply.parameters, "parameter")),
                            name);
}

static void test_reader_byte_by_byte(void **state)
{
        static const char text[] =
                "{\"method\":\"org.example.a.Get\",\"parameters\":{\"x\":[1,2]}}";
        VarlinkReader *r;
        json_t *msg = NULL;

        assert_int_equal(varlink_reader_new(1024, &r), 0);
        for (size_t i = 0; i < sizeof(text) - 1; i++) {
                assert_int_equal(varlink_reader_feed(r, &text[i], 1), 0);
                assert_int_equal(varlink_reader_next(r, &msg), 0);
                assert_int_equal(varlink_reader_n_complete(r), 0);
        }
        assert_int_equal(varlink_reader_buffered(r), sizeof(text) - 1);
        assert_int_equal(varlink_reader_feed(r, "", 1), 0);
        assert_int_equal(varlink_reader_n_complete(r), 1);
        assert_next_equals(r, text);
        assert_int_equal(varlink_reader_next(r, &msg), 0);
        assert_int_equal(varlink_reader_buffered(r), 0);
        varlink_reader_free(r);
}

static void test_reader_many_in_one_feed(void **state)
{
        static const char stream[] = "{\"a\":1}\0{\"b\":2}\0  {\"c\" : 3}\n\0{\"d\":";
        VarlinkReader *r;
        json_t *msg = NULL;

        assert_int_equal(varlink_reader_new(1024, &r), 0);
        assert_int_equal(varlink_reader_feed(r, stream, sizeof(stream) - 1), 0);
        assert_int_equal(varlink_reader_n_complete(r), 3);
        assert_next_equals(r, "{\"a\":1}");
        assert_next_equals(r, "{\"b\":2}");
        assert_next_equals(r, "{\"c\":3}");
        assert_int_equal(varlink_reader_next(r, &msg), 0);
        /* The incomplete tail is kept and completed by the next read. */
        assert_int_equal(varlink_reader_feed(r, "4}\0{\"e\":5}", 10), 0);
        assert_next_equals(r, "{\"d\":4}");
        assert_int_equal(varlink_reader_next(r, &msg), 0);
        assert_int_equal(varlink_reader_feed(r, "", 1), 0);
        assert_next_equals(r, "{\"e\":5}");
        varlink_reader_free(r);
}

static void test_reader_split_everywhere(void **state)
{
        /* Every split of a two-message stream into two reads gives the same two messages. */
        static const char stream[] = "{\"x\":\"\xc3\xa9t\xc3\xa9\"}\0{\"y\":[true,null]}";
        const size_t len = sizeof(stream); /* includes the final terminator */

        for (size_t cut = 0; cut <= len; cut++) {
                VarlinkReader *r;

                assert_int_equal(varlink_reader_new(64, &r), 0);
                assert_int_equal(varlink_reader_feed(r, stream, cut), 0);
                assert_int_equal(varlink_reader_feed(r, stream + cut, len - cut), 0);
                assert_next_equals(r, "{\"x\":\"\xc3\xa9t\xc3\xa9\"}");
                assert_next_equals(r, "{\"y\":[true,null]}");
                varlink_reader_free(r);
        }
}

static void test_reader_oversize(void **state)
{
        VarlinkReader *r;
        json_t *msg = NULL;

        /* Exactly at the limit is fine, one byte more is not. */
        assert_int_equal(varlink_reader_new(10, &r), 0);
        assert_int_equal(feed_msg(r, "{\"ab\":123}"), 0);
        assert_next_equals(r, "{\"ab\":123}");
        assert_int_equal(feed_msg(r, "{\"ab\":1234}"), -EMSGSIZE);
        assert_int_equal(varlink_reader_next(r, &msg), -EMSGSIZE);
        assert_int_equal(feed_msg(r, "{}"), -EMSGSIZE);
        varlink_reader_free(r);

        /* An incomplete message is refused as soon as it is too long, without waiting for its
         * end: a client cannot make the server buffer more than the limit. */
        assert_int_equal(varlink_reader_new(10, &r), 0);
        assert_int_equal(varlink_reader_feed(r, "{\"abc\":", 7), 0);
        assert_int_equal(varlink_reader_feed(r, "1234", 4), -EMSGSIZE);
        assert_int_equal(varlink_reader_next(r, &msg), -EMSGSIZE);
        varlink_reader_free(r);

        /* An oversize message behind a good one in the same read. */
        assert_int_equal(varlink_reader_new(10, &r), 0);
        assert_int_equal(varlink_reader_feed(r, "{}\0{\"abcdefgh\":1}\0", 18), -EMSGSIZE);
        varlink_reader_free(r);

        assert_int_equal(varlink_reader_new(0, &r), -EINVAL);
}

static void test_reader_invalid_then_valid(void **state)
{
        static const char *const bad[] = {
                "{bad",
                "[1,2]",
                "\"string\"",
                "42",
                "",
                "{} junk",
                "{}{}",
                "{\"a\":1,\"a\":2}",
                "{\"a\":\"\xff\xfe\"}",
                "{\"a\":nan}",
                "{\"a\":123456789012345678901234567890}",
        };
        VarlinkReader *r;

        assert_int_equal(varlink_reader_new(256, &r), 0);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *msg = NULL;

                assert_int_equal(feed_msg(r, bad[i]), 0);
                assert_int_equal(feed_msg(r, "{\"ok\":true}"), 0);
                assert_int_equal(varlink_reader_next(r, &msg), -EBADMSG);
                assert_null(msg);
                assert_next_equals(r, "{\"ok\":true}");
        }
        varlink_reader_free(r);
}

static void test_reader_nul(void **state)
{
        /* A raw NUL inside a string literal ends the message there: both halves are junk and
         * the message after them is still read correctly. */
        static const char raw[] = "{\"a\":\"x\0y\"}\0{\"b\":1}";
        VarlinkReader *r;
        json_t *msg = NULL;

        assert_int_equal(varlink_reader_new(256, &r), 0);
        assert_int_equal(varlink_reader_feed(r, raw, sizeof(raw)), 0);
        assert_int_equal(varlink_reader_n_complete(r), 3);
        assert_int_equal(varlink_reader_next(r, &msg), -EBADMSG);
        assert_int_equal(varlink_reader_next(r, &msg), -EBADMSG);
        assert_next_equals(r, "{\"b\":1}");

        /* The \u0000 escape is refused (in values and in keys); other control escapes are
         * ordinary characters. */
        assert_int_equal(feed_msg(r, "{\"a\":\"x\\u0000y\"}"), 0);
        assert_int_equal(varlink_reader_next(r, &msg), -EBADMSG);
        assert_int_equal(feed_msg(r, "{\"a\\u0000b\":1}"), 0);
        assert_int_equal(varlink_reader_next(r, &msg), -EBADMSG);
        assert_int_equal(feed_msg(r, "{\"a\":\"x\\u0001y\"}"), 0);
        assert_int_equal(varlink_reader_next(r, &msg), 1);
        assert_int_equal(json_string_length(json_object_get(msg, "a")), 3);
        json_decref(msg);
        varlink_reader_free(r);
}

static void test_reader_deep_nesting(void **state)
{
        const size_t depth = 100000;
        char *text = malloc(2 * depth + 16);
        VarlinkReader *r;
        json_t *msg = NULL;
        size_t n = 0;

        assert_non_null(text);
        n += (size_t)sprintf(text, "{\"a\":");
        memset(text + n, '[', depth);
        n += depth;
        memset(text + n, ']', depth);
        n += depth;
        text[n++] = '}';
        text[n++] = '\0';

        assert_int_equal(varlink_reader_new(n, &r), 0);
        assert_int_equal(varlink_reader_feed(r, text, n), 0);
        assert_int_equal(varlink_reader_next(r, &msg), -EBADMSG);
        assert_int_equal(feed_msg(r, "{\"a\":[[[[1]]]]}"), 0);
        assert_next_equals(r, "{\"a\":[[[[1]]]]}");
        varlink_reader_free(r);
        free(text);
}

static json_t *load(const char *text)
{
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);

        assert_non_null(j);
        return j;
}

/* Takes the next message through @memo: 1 and the message, which must be a JSON object. */
static json_t *next_memo(VarlinkReader *r, VarlinkMemo *memo, const char *text)
{
        json_t *msg = NULL;

        assert_int_equal(feed_msg(r, text), 0);
        assert_int_equal(varlink_reader_next_memo(r, memo, &msg), 1);
        assert_true(json_is_object(msg));
        return msg;
}

/* A message with the bytes of one taken before is that one, shared; other bytes, even of an
 * equal JSON value, are parsed anew; a long message is not kept, nor a malformed one; the
 * least recently used of VARLINK_MEMO_ENTRIES goes first. */
static void test_reader_memo(void **state)
{
        static const char call[] = "{\"method\":\"org.example.a.Get\",\"parameters\":{}}";
        static const char spaced[] = "{\"method\": \"org.example.a.Get\",\"parameters\":{}}";
        char long_call[VARLINK_MEMO_MAX_BYTES + 64], other[64];
        VarlinkReader *r;
        VarlinkMemo *memo;
        json_t *a, *b, *c, *kept[VARLINK_MEMO_ENTRIES];

        (void)state;
        assert_int_equal(varlink_reader_new(4096, &r), 0);
        assert_int_equal(varlink_memo_new(&memo), 0);

        a = next_memo(r, memo, call);
        b = next_memo(r, memo, call);
        assert_ptr_equal(a, b);
        c = next_memo(r, memo, spaced);
        assert_ptr_not_equal(a, c);
        assert_true(json_equal(a, c));
        json_decref(b);
        json_decref(c);

        snprintf(long_call, sizeof(long_call),
                 "{\"method\":\"org.example.a.Get\",\"pad\":\"%0*d\"}", VARLINK_MEMO_MAX_BYTES, 0);
        b = next_memo(r, memo, long_call);
        c = next_memo(r, memo, long_call);
        assert_ptr_not_equal(b, c);
        json_decref(b);
        json_decref(c);

        for (int k = 0; k < 2; k++) {
                json_t *msg = NULL;

                assert_int_equal(feed_msg(r, "{\"method\":"), 0);
                assert_int_equal(varlink_reader_next_memo(r, memo, &msg), -EBADMSG);
                assert_null(msg);
        }

        /* A memo of @call and 15 others is full; @call used again is the newest, so the next
         * new message takes the place of the oldest of the others. */
        varlink_memo_free(memo);
        assert_int_equal(varlink_memo_new(&memo), 0);
        json_decref(a);
        a = next_memo(r, memo, call);
        for (int k = 0; k < VARLINK_MEMO_ENTRIES; k++) {
                snprintf(other, sizeof(other), "{\"method\":\"org.example.a.Get%d\"}", k);
                kept[k] = next_memo(r, memo, other);
                if (k == VARLINK_MEMO_ENTRIES - 2) {
                        b = next_memo(r, memo, call);
                        assert_ptr_equal(a, b);
                        json_decref(b);
                }
        }
        b = next_memo(r, memo, call);
        assert_ptr_equal(a, b);
        json_decref(b);
        b = next_memo(r, memo, "{\"method\":\"org.example.a.Get1\"}");
        assert_ptr_equal(b, kept[1]);
        json_decref(b);
        b = next_memo(r, memo, "{\"method\":\"org.example.a.Get0\"}");
        assert_ptr_not_equal(b, kept[0]);
        assert_true(json_equal(b, kept[0]));
        json_decref(b);
        for (int k = 0; k < VARLINK_MEMO_ENTRIES; k++) {
                json_decref(kept[k]);
        }
        json_decref(a);
        varlink_memo_free(memo);
        varlink_reader_free(r);
}

static void test_call_parse_valid(void **state)
{
        VarlinkCall call;
        json_t *msg, *error = NULL;

        msg = load("{\"method\":\"io.jitterd.GetStats\"}");
        assert_int_equal(varlink_call_parse(msg, &call, &error), 0);
        assert_null(error);
        assert_string_equal(call.method, "io.jitterd.GetStats");
        assert_null(call.parameters);
        assert_false(call.more);
        assert_false(call.oneway);
        assert_false(call.upgrade);
        json_decref(msg);

        msg = load("{\"method\":\"org.example-1.x2.Monitor\",\"parameters\":{\"cpus\":[1]},"
                   "\"more\":true,\"oneway\":false,\"upgrade\":null}");
        assert_int_equal(varlink_call_parse(msg, &call, &error), 0);
        assert_string_equal(call.method, "org.example-1.x2.Monitor");
        assert_true(json_is_object(call.parameters));
        assert_true(call.more);
        assert_false(call.oneway);
        assert_false(call.upgrade);
        json_decref(msg);

        msg = load("{\"parameters\":null,\"oneway\":true,\"method\":\"a.b.C\"}");
        assert_int_equal(varlink_call_parse(msg, &call, &error), 0);
        assert_null(call.parameters);
        assert_true(call.oneway);
        json_decref(msg);
}

static void test_call_parse_invalid(void **state)
{
        static const struct {
                const char *text;
                const char *parameter;
        } cases[] = {
                {"{}", "method"},
                {"{\"parameters\":{}}", "method"},
                {"{\"method\":42}", "method"},
                {"{\"method\":\"GetStats\"}", "method"},
                {"{\"method\":\"io.jitterd.getStats\"}", "method"},
                {"{\"method\":\"io.jitterd.\"}", "method"},
                {"{\"method\":\"jitterd.Get_Stats\"}", "method"},
                {"{\"method\":\"jitterd.Get Stats\"}", "method"},
                {"{\"method\":\"x.GetStats\"}", "method"},
                {"{\"method\":\".io.jitterd.GetStats\"}", "method"},
                {"{\"method\":\"io..jitterd.GetStats\"}", "method"},
                {"{\"method\":\"io.-jitterd.GetStats\"}", "method"},
                {"{\"method\":\"io.jitterd-.GetStats\"}", "method"},
                {"{\"method\":\"1o.jitterd.GetStats\"}", "method"},
                {"{\"method\":\"io.jitterd.GetStats\",\"parameters\":[]}", "parameters"},
                {"{\"method\":\"io.jitterd.GetStats\",\"parameters\":\"x\"}", "parameters"},
                {"{\"method\":\"io.jitterd.GetStats\",\"more\":1}", "more"},
                {"{\"method\":\"io.jitterd.GetStats\",\"oneway\":\"yes\"}", "oneway"},
                {"{\"method\":\"io.jitterd.GetStats\",\"upgrade\":{}}", "upgrade"},
                {"{\"method\":\"io.jitterd.GetStats\",\"id\":1}", "id"},
                {"{\"method\":\"io.jitterd.GetStats\",\"more\":true,\"oneway\":true}", "oneway"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                VarlinkCall call;
                json_t *msg = load(cases[i].text), *error = NULL;

                assert_int_equal(varlink_call_parse(msg, &call, &error), -EBADMSG);
                assert_invalid_parameter(error, cases[i].parameter);
                json_decref(error);
                json_decref(msg);
        }
}

static void test_names(void **state)
{
        assert_true(varlink_interface_name_is_valid("io.jitterd"));
        assert_true(varlink_interface_name_is_valid("org.varlink.service"));
        assert_true(varlink_interface_name_is_valid("a.b-c.d--e.1"));
        assert_false(varlink_interface_name_is_valid("io"));
        assert_false(varlink_interface_name_is_valid("io."));
        assert_false(varlink_interface_name_is_valid("io.jitterd."));
        assert_false(varlink_interface_name_is_valid("io.jitterd_x"));
        assert_false(varlink_interface_name_is_valid(""));
        assert_false(varlink_interface_name_is_valid(NULL));
        assert_true(varlink_member_name_is_valid("GetStats"));
        assert_true(varlink_member_name_is_valid("X2"));
        assert_false(varlink_member_name_is_valid("getStats"));
        assert_false(varlink_member_name_is_valid("Get-Stats"));
        assert_false(varlink_member_name_is_valid(""));
}

static void assert_serialized(json_t *msg, const char *expected)
{
        char *text = NULL;
        size_t len = 0;

        assert_non_null(msg);
        assert_int_equal(varlink_message_serialize(msg, &text, &len), 0);
        assert_int_equal(len, strlen(expected) + 1);
        assert_memory_equal(text, expected, len);
        free(text);
        json_decref(msg);
}

static void test_builders(void **state)
{
        char *text = NULL;
        size_t len = 0;
        json_t *msg;

        assert_serialized(varlink_reply_new(NULL, false), "{\"parameters\":{}}");
        assert_serialized(varlink_reply_new(json_pack("{s:i}", "a", 1), true),
                          "{\"parameters\":{\"a\":1},\"continues\":true}");
        assert_serialized(varlink_error_new("io.jitterd.NoSuchCpu", json_pack("{s:i}", "cpu", 7)),
                          "{\"error\":\"io.jitterd.NoSuchCpu\",\"parameters\":{\"cpu\":7}}");
        assert_serialized(varlink_error_invalid_parameter("window"),
                          "{\"error\":\"org.varlink.service.InvalidParameter\","
                          "\"parameters\":{\"parameter\":\"window\"}}");
        assert_serialized(varlink_call_new("io.jitterd.Monitor", NULL, true, false),
                          "{\"method\":\"io.jitterd.Monitor\",\"parameters\":{},\"more\":true}");
        assert_null(varlink_call_new("io.jitterd.Monitor", NULL, true, true));
        assert_null(varlink_reply_new(json_array(), false));

        /* A NUL inside a string is escaped, so the terminator is the only raw NUL. */
        msg = varlink_reply_new(json_pack("{s:s#}", "s", "a\0b", (size_t)3), false);
        assert_non_null(msg);
        assert_int_equal(varlink_message_serialize(msg, &text, &len), 0);
        assert_ptr_equal(memchr(text, '\0', len), text + len - 1);
        assert_non_null(strstr(text, "a\\u0000b"));
        free(text);
        json_decref(msg);

        msg = json_array();
        assert_int_equal(varlink_message_serialize(msg, &text, &len), -EINVAL);
        json_decref(msg);
}

static void test_round_trip(void **state)
{
        json_t *msg = varlink_call_new("io.jitterd.GetStats",
                                       json_pack("{s:s, s:[i,i]}", "window", "1m", "cpus", 2, 3),
                                       false, true);
        VarlinkReader *r;
        VarlinkCall call;
        json_t *got = NULL;
        char *text;
        size_t len;

        assert_non_null(msg);
        assert_int_equal(varlink_message_serialize(msg, &text, &len), 0);
        assert_int_equal(varlink_reader_new(len - 1, &r), 0);
        assert_int_equal(varlink_reader_feed(r, text, len), 0);
        assert_int_equal(varlink_reader_next(r, &got), 1);
        assert_true(json_equal(got, msg));
        assert_int_equal(varlink_call_parse(got, &call, NULL), 0);
        assert_true(call.oneway);
        assert_string_equal(json_string_value(json_object_get(call.parameters, "window")), "1m");
        json_decref(got);
        json_decref(msg);
        free(text);
        varlink_reader_free(r);
}

static void test_reply_parse(void **state)
{
        VarlinkReply reply;
        json_t *msg;

        msg = load("{\"parameters\":{\"a\":1},\"continues\":true}");
        assert_int_equal(varlink_reply_parse(msg, &reply), 0);
        assert_true(reply.continues);
        assert_null(reply.error);
        assert_int_equal(json_integer_value(json_object_get(reply.parameters, "a")), 1);
        json_decref(msg);

        msg = load("{\"error\":\"io.jitterd.NoSuchCpu\",\"upgraded\":false}");
        assert_int_equal(varlink_reply_parse(msg, &reply), 0);
        assert_string_equal(reply.error, "io.jitterd.NoSuchCpu");
        assert_null(reply.parameters);
        json_decref(msg);

        static const char *const bad[] = {
                "{\"parameters\":[]}",
                "{\"continues\":\"yes\"}",
                "{\"error\":1}",
                "{\"error\":\"\"}",
                "{\"error\":\"a.b.C\",\"continues\":true}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                msg = load(bad[i]);
                assert_int_equal(varlink_reply_parse(msg, &reply), -EBADMSG);
                json_decref(msg);
        }
}

static const VarlinkField fields[] = {
        {"cpu", JSON_INTEGER, true},    {"window", JSON_STRING, false},
        {"ratio", JSON_REAL, false},    {"verbose", JSON_TRUE, false},
        {"cpus", JSON_ARRAY, false},    {"filter", JSON_OBJECT, false},
        {"anything", JSON_NULL, false},
};
#define N_FIELDS ELEMENTSOF(fields)

static void test_params_check(void **state)
{
        static const char *const good[] = {
                "{\"cpu\":1}",
                ("{\"cpu\":1,\"window\":\"1m\",\"ratio\":0.5,\"verbose\":false,\"cpus\":[],"
                 "\"filter\":{},\"anything\":\"x\"}"),
                "{\"cpu\":1,\"ratio\":2}",
                "{\"cpu\":1,\"window\":null,\"anything\":[1]}",
        };
        static const struct {
                const char *text;
                const char *parameter;
        } bad[] = {
                {"{}", "cpu"},
                {"{\"window\":\"1m\"}", "cpu"},
                {"{\"cpu\":null}", "cpu"},
                {"{\"cpu\":\"1\"}", "cpu"},
                {"{\"cpu\":1.5}", "cpu"},
                {"{\"cpu\":1,\"window\":5}", "window"},
                {"{\"cpu\":1,\"ratio\":\"x\"}", "ratio"},
                {"{\"cpu\":1,\"verbose\":0}", "verbose"},
                {"{\"cpu\":1,\"cpus\":{}}", "cpus"},
                {"{\"cpu\":1,\"filter\":[]}", "filter"},
                {"{\"cpu\":1,\"extra\":1}", "extra"},
        };
        json_t *error = NULL, *params;

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                params = load(good[i]);
                assert_int_equal(varlink_params_check(params, fields, N_FIELDS, &error), 0);
                assert_null(error);
                json_decref(params);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                params = load(bad[i].text);
                assert_int_equal(varlink_params_check(params, fields, N_FIELDS, &error), -EINVAL);
                assert_invalid_parameter(error, bad[i].parameter);
                json_decref(error);
                json_decref(params);
        }

        /* No parameters at all: fine without required fields, refused with them. */
        assert_int_equal(varlink_params_check(NULL, fields + 1, N_FIELDS - 1, NULL), 0);
        assert_int_equal(varlink_params_check(NULL, fields, N_FIELDS, &error), -EINVAL);
        assert_invalid_parameter(error, "cpu");
        json_decref(error);
        params = load("{\"x\":1}");
        assert_int_equal(varlink_params_check(params, NULL, 0, &error), -EINVAL);
        assert_invalid_parameter(error, "x");
        json_decref(error);
        json_decref(params);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reader_byte_by_byte),
                cmocka_unit_test(test_reader_many_in_one_feed),
                cmocka_unit_test(test_reader_split_everywhere),
                cmocka_unit_test(test_reader_oversize),
                cmocka_unit_test(test_reader_invalid_then_valid),
                cmocka_unit_test(test_reader_nul),
                cmocka_unit_test(test_reader_deep_nesting),
                cmocka_unit_test(test_reader_memo),
                cmocka_unit_test(test_call_parse_valid),
                cmocka_unit_test(test_call_parse_invalid),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_builders),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_reply_parse),
                cmocka_unit_test(test_params_check),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

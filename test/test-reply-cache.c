/* Unit tests of the reply cache: a text is served only in the generation it was put in; a
 * harvest writes anew exactly the texts asked for since the cut-off and not current, and frees
 * the others; the bytes held follow what is kept. Every expected value is worked out in the
 * test from what it put and asked. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reply-cache.h"

#define S 1000000000ULL

static char *text(const char *s)
{
        char *t = strdup(s);

        assert_non_null(t);
        return t;
}

static void put(ReplyCache *c, int cpu, HistorySpan span, const char *s)
{
        reply_cache_put(c, cpu, span, text(s), strlen(s));
}

/* The text of (@cpu, @span) asked for at @now, or NULL. */
static const char *get(ReplyCache *c, int cpu, HistorySpan span, uint64_t now)
{
        size_t len = 0;
        const char *t = reply_cache_get(c, cpu, span, now, &len);

        if (t) {
                assert_int_equal(len, strlen(t));
        }
        return t;
}

static void test_generation(void **state)
{
        ReplyCache *c = NULL;

        (void)state;
        assert_int_equal(reply_cache_new(&c), 0);
        assert_null(get(c, 3, HISTORY_SPAN_1M, 1 * S));
        put(c, 3, HISTORY_SPAN_1M, "{\"cpu\":3}");
        assert_string_equal(get(c, 3, HISTORY_SPAN_1M, 1 * S), "{\"cpu\":3}");
        /* Another window and another CPU are other entries. */
        assert_null(get(c, 3, HISTORY_SPAN_24H, 1 * S));
        assert_null(get(c, 4, HISTORY_SPAN_1M, 1 * S));
        reply_cache_invalidate(c);
        assert_null(get(c, 3, HISTORY_SPAN_1M, 2 * S));
        put(c, 3, HISTORY_SPAN_1M, "{\"cpu\":3,\"n\":2}");
        assert_string_equal(get(c, 3, HISTORY_SPAN_1M, 2 * S), "{\"cpu\":3,\"n\":2}");
        /* Out of range: nothing kept, nothing served. */
        put(c, -1, HISTORY_SPAN_1M, "x");
        put(c, CPU_SETSIZE, HISTORY_SPAN_1M, "x");
        put(c, 0, HISTORY_SPAN_MAX, "x");
        assert_null(get(c, CPU_SETSIZE, HISTORY_SPAN_1M, 2 * S));
        reply_cache_put(c, 5, HISTORY_SPAN_1M, NULL, 0);
        assert_null(get(c, 5, HISTORY_SPAN_1M, 2 * S));
        reply_cache_free(c);
}

typedef struct Written {
        int cpu[16];
        HistorySpan span[16];
        size_t n;
        ReplyCache *cache;
} Written;

static void write_entry(int cpu, HistorySpan span, void *userdata)
{
        Written *w = userdata;
        char s[32];

        assert_true(w->n < 16);
        w->cpu[w->n] = cpu;
        w->span[w->n] = span;
        w->n++;
        snprintf(s, sizeof(s), "%d/%d", cpu, (int)span);
        put(w->cache, cpu, span, s);
}

static void test_refresh(void **state)
{
        ReplyCache *c = NULL;
        Written w = {.n = 0};
        char want[32];
        size_t base;

        (void)state;
        assert_int_equal(reply_cache_new(&c), 0);
        w.cache = c;
        /* Asked at 10 s: (1, 1m) and (2, all); at 50 s: (1, 24h), put then. */
        assert_null(get(c, 1, HISTORY_SPAN_1M, 10 * S));
        assert_null(get(c, 2, HISTORY_SPAN_ALL, 10 * S));
        assert_null(get(c, 1, HISTORY_SPAN_24H, 50 * S));
        put(c, 1, HISTORY_SPAN_24H, "1/24h");
        base = reply_cache_memory_bytes(c) - strlen("1/24h") - 1;

        /* A harvest at 61 s, keeping what was asked since 20 s: only (1, 24h), out of date
         * now, is written; the two asked at 10 s are dropped (they held no text). */
        reply_cache_invalidate(c);
        reply_cache_refresh(c, 20 * S, write_entry, &w);
        assert_int_equal(w.n, 1);
        assert_int_equal(w.cpu[0], 1);
        assert_int_equal(w.span[0], HISTORY_SPAN_24H);
        snprintf(want, sizeof(want), "1/%d", (int)HISTORY_SPAN_24H);
        assert_string_equal(get(c, 1, HISTORY_SPAN_24H, 61 * S), want);
        assert_int_equal(reply_cache_memory_bytes(c), base + strlen(want) + 1);

        /* Current texts are not written again. */
        w.n = 0;
        reply_cache_refresh(c, 20 * S, write_entry, &w);
        assert_int_equal(w.n, 0);

        /* Not asked since 61 s: a harvest keeping from 62 s frees it. */
        reply_cache_invalidate(c);
        reply_cache_refresh(c, 62 * S, write_entry, &w);
        assert_int_equal(w.n, 0);
        assert_int_equal(reply_cache_memory_bytes(c), base);
        assert_null(get(c, 1, HISTORY_SPAN_24H, 63 * S));
        reply_cache_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_generation),
                cmocka_unit_test(test_refresh),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

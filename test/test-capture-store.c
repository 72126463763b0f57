/* Unit tests of the capture bookkeeping: windows of ±10 ms merged when they overlap and cut
 * where a capture would grow beyond a second, never asking again for what was handed out; the
 * per-minute bounds in count and bytes; the oldest file evicted first; every capture turned
 * away counted as skipped. Every expected value is worked out by hand in the comments. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "capture-store.h"

#define MS 1000000ULL
#define S 1000000000ULL

static const CaptureLimits wide = {
        .per_minute = 100, .minute_bytes = 1 << 30, .kept_max = 100, .kept_bytes = 1 << 30};

static CaptureStore *store(const CaptureLimits *l)
{
        CaptureStore *s = NULL;

        assert_int_equal(capture_store_new(l, &s), 0);
        return s;
}

static CaptureCounts counts(const CaptureStore *s)
{
        CaptureCounts c;

        capture_store_counts(s, &c);
        return c;
}

static void test_merge_overlapping(void **state)
{
        CaptureStore *s = store(&wide);
        CaptureWindow w;

        (void)state;
        /* [90, 111] ms and [105, 127] ms overlap: one capture [90, 127] ms of both. */
        assert_int_equal(capture_store_note(s, 1, 100 * MS, 1 * MS), 0);
        assert_int_equal(capture_store_note(s, 1, 115 * MS, 2 * MS), 0);
        /* [190, 211] ms stands apart. */
        assert_int_equal(capture_store_note(s, 2, 200 * MS, 1 * MS), 0);
        assert_int_equal(capture_store_next_due(s, 127 * MS - 1, &w), 0);
        assert_int_equal(capture_store_next_due(s, 127 * MS, &w), 1);
        assert_int_equal(w.from_ns, 90 * MS);
        assert_int_equal(w.to_ns, 127 * MS);
        assert_int_equal(w.n, 2);
        assert_int_equal(w.more, 0);
        assert_int_equal(w.in[0].start_ns, 100 * MS);
        assert_int_equal(w.in[1].start_ns, 115 * MS);
        assert_int_equal(w.in[1].duration_ns, 2 * MS);
        assert_int_equal(capture_store_next_due(s, 127 * MS, &w), 0);
        /* What was handed out is not asked for again: [120, 141] ms begins at 127 ms. */
        assert_int_equal(capture_store_note(s, 1, 130 * MS, 1 * MS), 0);
        /* [95, 115] ms lies wholly before 127 ms: skipped. */
        assert_int_equal(capture_store_note(s, 1, 105 * MS, 0), -ENOSPC);
        assert_int_equal(capture_store_next_due(s, 141 * MS, &w), 1);
        assert_int_equal(w.from_ns, 127 * MS);
        assert_int_equal(w.to_ns, 141 * MS);
        assert_int_equal(w.in[0].cpu, 1);
        assert_int_equal(capture_store_next_due(s, 211 * MS, &w), 1);
        assert_int_equal(w.from_ns, 190 * MS);
        assert_int_equal(w.in[0].cpu, 2);
        assert_int_equal(counts(s).noted, 5);
        assert_int_equal(counts(s).skipped, 1);
        capture_store_free(s);
}

static void test_merge_across_cpus_out_of_order(void **state)
{
        CaptureStore *s = store(&wide);
        CaptureWindow w;

        (void)state;
        /* [90, 111] and [140, 161] ms apart; then [105, 145] ms overlaps both: all three in
         * [90, 161] ms. */
        assert_int_equal(capture_store_note(s, 1, 100 * MS, 1 * MS), 0);
        assert_int_equal(capture_store_note(s, 3, 150 * MS, 1 * MS), 0);
        assert_int_equal(capture_store_note(s, 2, 115 * MS, 20 * MS), 0);
        assert_int_equal(capture_store_next_due(s, 1 * S, &w), 1);
        assert_int_equal(w.from_ns, 90 * MS);
        assert_int_equal(w.to_ns, 161 * MS);
        assert_int_equal(w.n, 3);
        assert_int_equal(capture_store_next_due(s, 1 * S, &w), 0);
        capture_store_free(s);
}

static void test_span_bound(void **state)
{
        CaptureStore *s = store(&wide);
        CaptureWindow w;

        (void)state;
        /* Interruptions of 1 ms every 15 ms from 1 s: windows [990 + 15k, 1011 + 15k] ms, each
         * overlapping the one before. Merged up to k = 65 (to 1986 ms, a span of 996 ms);
         * k = 66 would end at 2001 ms (1011 ms): it begins at 1986 ms instead. */
        for (unsigned k = 0; k <= 66; k++) {
                assert_int_equal(capture_store_note(s, 1, 1 * S + 15 * k * MS, 1 * MS), 0);
        }
        assert_int_equal(capture_store_next_due(s, 3 * S, &w), 1);
        assert_int_equal(w.from_ns, 990 * MS);
        assert_int_equal(w.to_ns, 1986 * MS);
        assert_int_equal(w.n, CAPTURE_INTERRUPTIONS_MAX);
        assert_int_equal(w.more, 66 - CAPTURE_INTERRUPTIONS_MAX);
        assert_int_equal(capture_store_next_due(s, 3 * S, &w), 1);
        assert_int_equal(w.from_ns, 1986 * MS);
        assert_int_equal(w.to_ns, 2001 * MS);
        assert_int_equal(w.n, 1);
        assert_int_equal(w.in[0].start_ns, 1990 * MS);
        capture_store_free(s);
}

static void test_pending_bound(void **state)
{
        CaptureStore *s = store(&wide);
        CaptureWindow w;

        (void)state;
        /* Windows 1 s apart never merge: 16 wait, the 17th is skipped. */
        for (unsigned k = 0; k < CAPTURE_PENDING_MAX; k++) {
                assert_int_equal(capture_store_note(s, 1, (k + 1) * S, 1 * MS), 0);
        }
        assert_int_equal(capture_store_note(s, 1, 100 * S, 1 * MS), -ENOSPC);
        assert_int_equal(counts(s).skipped, 1);
        /* Due oldest first. */
        assert_int_equal(capture_store_next_due(s, 200 * S, &w), 1);
        assert_int_equal(w.in[0].start_ns, 1 * S);
        assert_int_equal(capture_store_next_due(s, 200 * S, &w), 1);
        assert_int_equal(w.in[0].start_ns, 2 * S);
        capture_store_free(s);
}

static void test_per_minute_count(void **state)
{
        CaptureLimits l = wide;
        CaptureStore *s;

        (void)state;
        l.per_minute = 3;
        s = store(&l);
        assert_int_equal(capture_store_admit(s, 0, 100), 0);
        assert_int_equal(capture_store_admit(s, 10 * S, 100), 0);
        assert_int_equal(capture_store_admit(s, 20 * S, 100), 0);
        /* 0, 10 and 20 s lie in (-30 s, 30 s]. */
        assert_int_equal(capture_store_admit(s, 30 * S, 100), -EBUSY);
        /* (0, 60 s] holds 10 and 20 s only. */
        assert_int_equal(capture_store_admit(s, 60 * S, 100), 0);
        /* (10 s, 70 s] holds 20 and 60 s. */
        assert_int_equal(capture_store_admit(s, 70 * S, 100), 0);
        /* (11 s, 71 s]: 20, 60, 70 s. */
        assert_int_equal(capture_store_admit(s, 71 * S, 100), -EBUSY);
        assert_int_equal(counts(s).skipped, 2);
        capture_store_free(s);
}

static void test_per_minute_bytes(void **state)
{
        CaptureLimits l = wide;
        CaptureStore *s;

        (void)state;
        l.minute_bytes = 1000;
        s = store(&l);
        assert_int_equal(capture_store_admit(s, 0, 600), 0);
        assert_int_equal(capture_store_admit(s, 1 * S, 400), 0); /* 1000: at the bound */
        assert_int_equal(capture_store_admit(s, 2 * S, 1), -EFBIG);
        /* (0, 60 s] holds 400 bytes (1 s): 600 more fit, 601 do not. */
        assert_int_equal(capture_store_admit(s, 60 * S, 601), -EFBIG);
        assert_int_equal(capture_store_admit(s, 60 * S, 600), 0);
        /* A capture larger than the bound alone never fits. */
        assert_int_equal(capture_store_admit(s, 1000 * S, 1001), -EFBIG);
        assert_int_equal(counts(s).skipped, 3);
        capture_store_free(s);
}

static void test_evict_oldest_first(void **state)
{
        CaptureLimits l = wide;
        CaptureStore *s;
        char name[CAPTURE_NAME_MAX];

        (void)state;
        l.kept_max = 3;
        l.kept_bytes = 1000;
        s = store(&l);
        assert_int_equal(capture_store_keep(s, "a", 100, false), 0);
        assert_int_equal(capture_store_keep(s, "b", 200, true), 0);
        assert_int_equal(capture_store_keep(s, "c", 300, true), 0);
        assert_int_equal(capture_store_evict(s, name), 0);
        /* A fourth file: the oldest goes. */
        assert_int_equal(capture_store_keep(s, "d", 100, true), 0);
        assert_int_equal(capture_store_evict(s, name), 1);
        assert_string_equal(name, "a");
        assert_int_equal(capture_store_evict(s, name), 0);
        /* b c d e: 200 + 300 + 100 + 500 = 1100 bytes and 4 files; without b, 900 and 3. */
        assert_int_equal(capture_store_keep(s, "e", 500, true), 0);
        assert_int_equal(capture_store_evict(s, name), 1);
        assert_string_equal(name, "b");
        assert_int_equal(capture_store_evict(s, name), 0);
        assert_int_equal(counts(s).kept, 3);
        assert_int_equal(counts(s).kept_bytes, 900);
        assert_int_equal(counts(s).evicted, 2);
        assert_int_equal(counts(s).written, 4); /* "a" was found, not written */
        assert_string_equal(capture_store_kept_name(s, 0), "c");
        assert_string_equal(capture_store_kept_name(s, 2), "e");
        assert_null(capture_store_kept_name(s, 3));
        /* c d e f: 4 files, 1100 bytes; without c (300), 3 files and 800 bytes. */
        assert_int_equal(capture_store_keep(s, "f", 200, true), 0);
        assert_int_equal(capture_store_evict(s, name), 1);
        assert_string_equal(name, "c");
        assert_int_equal(capture_store_evict(s, name), 0);
        assert_int_equal(counts(s).kept_bytes, 800);
        /* A file alone beyond kept_bytes goes too. */
        assert_int_equal(capture_store_keep(s, "g", 5000, true), 0);
        for (const char *want = "de"; *want; want++) {
                char n[2] = {*want, 0};

                assert_int_equal(capture_store_evict(s, name), 1);
                assert_string_equal(name, n);
        }
        assert_int_equal(capture_store_evict(s, name), 1);
        assert_string_equal(name, "f");
        assert_int_equal(capture_store_evict(s, name), 1);
        assert_string_equal(name, "g");
        assert_int_equal(capture_store_evict(s, name), 0);
        assert_int_equal(counts(s).kept, 0);
        assert_int_equal(counts(s).kept_bytes, 0);
        capture_store_free(s);
}

static void test_keep_without_evict(void **state)
{
        CaptureLimits l = wide;
        CaptureStore *s;

        (void)state;
        l.kept_max = 1;
        s = store(&l);
        assert_int_equal(capture_store_keep(s, "a", 1, true), 0);
        assert_int_equal(capture_store_keep(s, "b", 1, true), 0); /* the one beyond */
        assert_int_equal(capture_store_keep(s, "c", 1, true), -ENOSPC);
        assert_int_equal(capture_store_keep(s,
                                            "a-name-longer-than-the-store-keeps-for-any-"
                                            "capture-file-0123456789",
                                            1, true),
                         -EINVAL);
        capture_store_free(s);
}

static void test_new_invalid(void **state)
{
        CaptureLimits l = wide;
        CaptureStore *s = NULL;

        (void)state;
        l.per_minute = 0;
        assert_int_equal(capture_store_new(&l, &s), -EINVAL);
        assert_null(s);
        assert_null(capture_store_free(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_merge_overlapping),
                cmocka_unit_test(test_merge_across_cpus_out_of_order),
                cmocka_unit_test(test_span_bound),
                cmocka_unit_test(test_pending_bound),
                cmocka_unit_test(test_per_minute_count),
                cmocka_unit_test(test_per_minute_bytes),
                cmocka_unit_test(test_evict_oldest_first),
                cmocka_unit_test(test_keep_without_evict),
                cmocka_unit_test(test_new_invalid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

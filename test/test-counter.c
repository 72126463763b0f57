/* Counter frequency and tick/ns conversion, exact at every histogram bucket edge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>

#include "histogram-internal.h"
#include "counter.h"
#include "histogram.h"
#include "util.h"

static void test_conversion_at_bucket_edges(void **state)
{
        const uint64_t freqs[] = {1000000000ULL, 2599998160ULL, 3000000001ULL, 24000000ULL,
                                  25000000ULL,   19200000ULL,   333333333ULL,  4700000000ULL};

        (void)state;
        for (size_t f = 0; f < ELEMENTSOF(freqs); f++) {
                TickConv c;

                tickconv_init(&c, freqs[f]);
                for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                        uint64_t t = histogram_bucket_lower(i);
                        unsigned __int128 exact_num = (unsigned __int128)t * 1000000000ULL;
                        uint64_t exact = (uint64_t)(exact_num / freqs[f]);
                        uint64_t got;

                        if (t > (1ULL << 40)) {
                                break;
                        }
                        got = tickconv_to_ns(&c, t);
                        if (got + 1 < exact || got > exact + 1) {
                                fail_msg("hz %llu ticks %llu: got %llu ns, exact %llu ns",
                                         (unsigned long long)freqs[f], (unsigned long long)t,
                                         (unsigned long long)got, (unsigned long long)exact);
                        }
                        /* Also the upper edge of the bucket. */
                        t = histogram_bucket_upper(i);
                        exact = (uint64_t)((unsigned __int128)t * 1000000000ULL / freqs[f]);
                        got = tickconv_to_ns(&c, t);
                        assert_true(got + 1 >= exact && got <= exact + 1);
                }
                /* ns → ticks rounds up: a threshold is never undercut. */
                for (uint64_t ns = 1; ns < 100000000000ULL; ns = ns * 3 + 1) {
                        uint64_t t = tickconv_from_ns(&c, ns);

                        assert_true(tickconv_to_ns(&c, t) + 1 >= ns);
                        if (t > 0) {
                                assert_true(tickconv_to_ns(&c, t - 1) <= ns);
                        }
                }
        }
}

static void test_source_names(void **state)
{
        CounterSource s;

        (void)state;
        assert_int_equal(counter_source_parse("tsc", &s), 0);
        assert_int_equal(s, COUNTER_HW);
        assert_int_equal(counter_source_parse("clock", &s), 0);
        assert_int_equal(s, COUNTER_CLOCK);
        assert_int_equal(counter_source_parse("hpet", &s), -EINVAL);
        assert_string_equal(counter_source_name(COUNTER_CLOCK), "clock");
}

static void test_clock_counter(void **state)
{
        CounterInfo ci;

        (void)state;
        assert_int_equal(counter_info_init(COUNTER_CLOCK, 10, 1000, &ci), 0);
        assert_int_equal(ci.hz, 1000000000ULL);
        assert_int_equal(ci.hz_source, COUNTER_HZ_NOMINAL);
        assert_int_equal(tickconv_to_ns(&ci.conv, 123456789), 123456789);
}

/* The hardware counter's frequency, however found, must agree with CLOCK_MONOTONIC_RAW over
 * a second to a few ppm; calibration must report the precision it reached. */
static void test_hw_frequency(void **state)
{
        CounterInfo ci;
        ClockPair a, b;
        struct timespec ts = {1, 0};
        int r;

        (void)state;
        /* Every supported architecture (x86-64 with invariant TSC, aarch64) has one. */
        r = counter_info_init(COUNTER_HW, 10, 3000, &ci);
        assert_int_equal(r, 0);
        assert_true(ci.hz > 1000000);
        if (ci.hz_source == COUNTER_HZ_CALIBRATED) {
                assert_true(ci.precision_ppm >= 0 && isfinite(ci.precision_ppm));
        }
        clock_pair_sample(COUNTER_HW, &a);
        nanosleep(&ts, NULL);
        clock_pair_sample(COUNTER_HW, &b);
        /* CLOCK_MONOTONIC is NTP-slewed (up to 500 ppm); allow that plus calibration. */
        assert_true(fabs(clock_pair_drift_ppm(&a, &b, &ci.conv)) < 600);
        {
                uint64_t mono, real;

                clock_pair_map(&a, &ci.conv, b.ticks, &mono, &real);
                assert_true(llabs((long long)(mono - b.mono_ns)) < 1000000);
                assert_true(llabs((long long)(real - b.real_ns)) < 1000000);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_conversion_at_bucket_edges),
                cmocka_unit_test(test_source_names),
                cmocka_unit_test(test_clock_counter),
                cmocka_unit_test(test_hw_frequency),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

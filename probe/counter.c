#include "counter.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "util.h"

void tickconv_init(TickConv *ret, uint64_t hz)
{
        unsigned shift;

        /* The largest shift whose multiplier still fits in 64 bits gives the finest
         * rounding: the error of ns for t ticks is below t / 2^shift + 1. */
        for (shift = 63; shift > 0; shift--) {
                unsigned __int128 m = ((unsigned __int128)NSEC_PER_SEC << shift) / hz;

                if (m <= UINT64_MAX) {
                        break;
                }
        }
        ret->hz = hz;
        ret->shift = shift;
        /* Round to nearest so conversions are within ±1 ns rather than always low. */
        ret->mult = (uint64_t)((((unsigned __int128)NSEC_PER_SEC << shift) + hz / 2) / hz);
}

uint64_t tickconv_from_ns(const TickConv *c, uint64_t ns)
{
        unsigned __int128 t = ((unsigned __int128)ns * c->hz + 999999999ULL) / NSEC_PER_SEC;

        return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

const char *counter_source_name(CounterSource source)
{
        return source == COUNTER_HW ? COUNTER_HW_NAME : "clock";
}

int counter_source_parse(const char *name, CounterSource *ret)
{
        if (strcmp(name, "tsc") == 0 || strcmp(name, "cntvct") == 0 || strcmp(name, "hw") == 0) {
                *ret = COUNTER_HW;
                return 0;
        }
        if (strcmp(name, "clock") == 0) {
                *ret = COUNTER_CLOCK;
                return 0;
        }
        return -EINVAL;
}

const char *counter_hz_source_name(CounterHzSource s)
{
        switch (s) {
        case COUNTER_HZ_CPUID:
                return "cpuid";
        case COUNTER_HZ_CNTFRQ:
                return "cntfrq";
        case COUNTER_HZ_CALIBRATED:
                return "calibrated";
        case COUNTER_HZ_NOMINAL:
                return "nominal";
        }
        return "unknown";
}

/* Checks that @source is usable here. For the x86 TSC this needs an invariant TSC (CPUID
 * 0x80000007 EDX bit 8); returns -EOPNOTSUPP otherwise, and -ENODEV where there is no
 * hardware counter at all. */
static int counter_check(CounterSource source)
{
        if (source == COUNTER_CLOCK) {
                return 0;
        }
#if defined(__x86_64__)
        unsigned a, b, c, d;

        /* Unsigned compare: clang's cpuid.h declares the result int, gcc's unsigned. */
        if ((unsigned)__get_cpuid_max(0x80000000, NULL) < 0x80000007u) {
                return -EOPNOTSUPP;
        }
        __cpuid(0x80000007, a, b, c, d);
        return (d & (1u << 8)) ? 0 : -EOPNOTSUPP;
#elif defined(__aarch64__)
        return 0;
#else
        return -ENODEV;
#endif
}

bool counter_have_rdtscp(void)
{
#if defined(__x86_64__)
        unsigned a, b, c, d;

        if ((unsigned)__get_cpuid_max(0x80000000, NULL) < 0x80000001u) {
                return false;
        }
        __cpuid(0x80000001, a, b, c, d);
        return (d & (1u << 27)) != 0;
#else
        return false;
#endif
}

static uint64_t hw_exact_hz(CounterHzSource *ret_src)
{
#if defined(__x86_64__)
        unsigned a, b, c, d;

        /* Leaf 0x15: TSC/crystal ratio b/a and crystal Hz in c; c is 0 on many CPUs and
         * in most VMs, where we must calibrate. */
        if (__get_cpuid_max(0, NULL) >= 0x15) {
                __cpuid_count(0x15, 0, a, b, c, d);
                if (a != 0 && b != 0 && c != 0) {
                        *ret_src = COUNTER_HZ_CPUID;
                        return (uint64_t)c * b / a;
                }
        }
#elif defined(__aarch64__)
        uint64_t f;

        __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
        if (f != 0) {
                *ret_src = COUNTER_HZ_CNTFRQ;
                return f;
        }
#endif
        (void)ret_src;
        return 0;
}

/* Reads the counter bracketed by two CLOCK_MONOTONIC_RAW reads, keeping the tightest of a few
 * tries, so an interruption between the reads does not skew the pair. */
static void raw_pair(CounterSource source, uint64_t *ret_ticks, uint64_t *ret_ns)
{
        uint64_t best = UINT64_MAX;

        for (int i = 0; i < 16; i++) {
                uint64_t a = now_ns(CLOCK_MONOTONIC_RAW);
                uint64_t t = counter_read(source);
                uint64_t b = now_ns(CLOCK_MONOTONIC_RAW);

                if (b - a < best) {
                        best = b - a;
                        *ret_ticks = t;
                        *ret_ns = a + (b - a) / 2;
                }
        }
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

int counter_info_init(CounterSource source, double target_ppm, unsigned max_ms, CounterInfo *ret)
{
        CounterInfo info = {.source = source};
        int r;

        r = counter_check(source);
        if (r < 0) {
                return r;
        }
        if (source == COUNTER_CLOCK) {
                info.hz = 1000000000ULL;
                info.hz_source = COUNTER_HZ_NOMINAL;
        } else {
                info.hz = hw_exact_hz(&info.hz_source);
        }
        if (info.hz == 0) {
                /* Estimate over growing spans from one start point: the pair error is fixed
                 * (tens of ns), so its share shrinks with the span; stop when two successive
                 * estimates agree within the target. */
                uint64_t t0, n0, prev_hz = 0;
                unsigned waited = 0, step = 25;
                double ppm = INFINITY;

                raw_pair(source, &t0, &n0);
                while (waited < max_ms) {
                        uint64_t t1, n1, hz;

                        sleep_ms(step);
                        waited += step;
                        raw_pair(source, &t1, &n1);
                        hz = (uint64_t)(((unsigned __int128)(t1 - t0) * NSEC_PER_SEC +
                                         (n1 - n0) / 2) /
                                        (n1 - n0));
                        if (prev_hz != 0) {
                                ppm = fabs((double)hz - (double)prev_hz) / (double)hz * 1e6;
                        }
                        prev_hz = hz;
                        if (ppm <= target_ppm) {
                                break;
                        }
                        if (step < 400) {
                                step *= 2;
                        }
                }
                info.hz = prev_hz;
                info.hz_source = COUNTER_HZ_CALIBRATED;
                info.precision_ppm = ppm;
        }
        tickconv_init(&info.conv, info.hz);
        *ret = info;
        return 0;
}

void clock_pair_sample(CounterSource source, ClockPair *ret)
{
        uint64_t best = UINT64_MAX;

        for (int i = 0; i < 8; i++) {
                struct timespec a, b, rt;
                uint64_t t, an, bn;

                clock_gettime(CLOCK_MONOTONIC, &a);
                t = counter_read(source);
                clock_gettime(CLOCK_REALTIME, &rt);
                clock_gettime(CLOCK_MONOTONIC, &b);
                an = timespec_ns(&a);
                bn = timespec_ns(&b);
                if (bn - an < best) {
                        best = bn - an;
                        ret->ticks = t;
                        ret->mono_ns = an + (bn - an) / 2;
                        ret->real_ns = timespec_ns(&rt) - (bn - an) / 2;
                }
        }
}

void clock_pair_map(const ClockPair *ref, const TickConv *conv, uint64_t ticks,
                    uint64_t *ret_mono_ns, uint64_t *ret_real_ns)
{
        uint64_t mono, real;

        if (ticks >= ref->ticks) {
                uint64_t d = tickconv_to_ns(conv, ticks - ref->ticks);

                mono = ref->mono_ns + d;
                real = ref->real_ns + d;
        } else {
                uint64_t d = tickconv_to_ns(conv, ref->ticks - ticks);

                mono = ref->mono_ns > d ? ref->mono_ns - d : 0;
                real = ref->real_ns > d ? ref->real_ns - d : 0;
        }
        if (ret_mono_ns) {
                *ret_mono_ns = mono;
        }
        if (ret_real_ns) {
                *ret_real_ns = real;
        }
}

double clock_pair_drift_ppm(const ClockPair *a, const ClockPair *b, const TickConv *conv)
{
        double by_counter = (double)tickconv_to_ns(conv, b->ticks - a->ticks);
        double by_clock = (double)(b->mono_ns - a->mono_ns);

        if (by_clock <= 0) {
                return 0;
        }
        return (by_counter - by_clock) / by_clock * 1e6;
}

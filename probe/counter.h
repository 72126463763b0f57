#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "util.h"

/* The hardware counter the probes read, and the conversion of its ticks to nanoseconds.
 *
 * counter_read() is inline because the hot loop calls it once per sample; everything else
 * (frequency discovery, calibration, clock mapping) runs outside the loop. */

typedef enum CounterSource {
        COUNTER_HW,    /* rdtsc on x86-64, cntvct_el0 on aarch64 */
        COUNTER_CLOCK, /* clock_gettime(CLOCK_MONOTONIC_RAW), 1 tick = 1 ns */
} CounterSource;

/* How the counter frequency was obtained. */
typedef enum CounterHzSource {
        COUNTER_HZ_CPUID,      /* CPUID leaf 0x15: exact */
        COUNTER_HZ_CNTFRQ,     /* cntfrq_el0: exact */
        COUNTER_HZ_CALIBRATED, /* measured against CLOCK_MONOTONIC_RAW */
        COUNTER_HZ_NOMINAL,    /* the clock counter counts nanoseconds by definition */
} CounterHzSource;

/* Ticks → ns as ns = (ticks * mult) >> shift, with 128-bit intermediate. */
typedef struct TickConv {
        uint64_t hz;
        uint64_t mult;
        unsigned shift;
} TickConv;

typedef struct CounterInfo {
        CounterSource source;
        CounterHzSource hz_source;
        uint64_t hz;
        double precision_ppm; /* 0 when exact */
        TickConv conv;
} CounterInfo;

#if defined(__x86_64__)
static inline uint64_t counter_hw_read(void)
{
        uint32_t lo, hi;

        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
}

/* rdtscp also returns IA32_TSC_AUX, which Linux sets to (node << 12) | cpu. Only where
 * counter_have_rdtscp() says the instruction exists (SIGILL otherwise), and the value is the CPU
 * number only once checked against sched_getcpu(): some hypervisors execute rdtscp without
 * announcing it, and leave TSC_AUX unset. */
static inline uint64_t counter_hw_read_cpu(unsigned *ret_cpu)
{
        uint32_t lo, hi, aux;

        __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
        *ret_cpu = aux & 0xfff;
        return ((uint64_t)hi << 32) | lo;
}
#define COUNTER_HW_NAME "tsc"
#define COUNTER_HAVE_HW 1
#elif defined(__aarch64__)
static inline uint64_t counter_hw_read(void)
{
        uint64_t v;

        /* The isb keeps the read from being speculated ahead of earlier instructions. */
        __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
        return v;
}
#define COUNTER_HW_NAME "cntvct"
#define COUNTER_HAVE_HW 1
#else
#define COUNTER_HW_NAME "none"
#define COUNTER_HAVE_HW 0
#endif

/* The clock counter (COUNTER_CLOCK): CLOCK_MONOTONIC_RAW in ns, read by util.h's one clock
 * reader, which is inline too. */
static inline uint64_t counter_clock_read(void)
{
        return now_ns(CLOCK_MONOTONIC_RAW);
}

/* Reads the counter @source. */
static inline uint64_t counter_read(CounterSource source)
{
#if COUNTER_HAVE_HW
        if (source == COUNTER_HW) {
                return counter_hw_read();
        }
#endif
        return counter_clock_read();
}

/* TSC_AUX & 0xfff, read with rdtscp; UINT_MAX where there is no rdtscp. The same conditions as
 * counter_hw_read_cpu(): only where counter_have_rdtscp() says yes. */
static inline unsigned counter_read_tsc_aux(void)
{
#if defined(__x86_64__)
        unsigned cpu;

        (void)counter_hw_read_cpu(&cpu);
        return cpu;
#else
        return UINT_MAX;
#endif
}

/* Converts @ticks to nanoseconds (rounded down). */
static inline uint64_t tickconv_to_ns(const TickConv *c, uint64_t ticks)
{
        return (uint64_t)(((unsigned __int128)ticks * c->mult) >> c->shift);
}

/* Sets up @ret for a counter of @hz ticks per second. */
void tickconv_init(TickConv *ret, uint64_t hz);

/* Converts @ns to ticks (rounded up, so that a threshold in ns is never undercut). */
uint64_t tickconv_from_ns(const TickConv *c, uint64_t ns);

/* Returns the name of @source as used in config and JSON: "tsc"/"cntvct" or "clock". */
const char *counter_source_name(CounterSource source);

/* Parses "tsc" (or "cntvct", "hw") and "clock". Returns 0 or -EINVAL. */
int counter_source_parse(const char *name, CounterSource *ret);

/* Returns "cpuid", "cntfrq", "calibrated" or "nominal". */
const char *counter_hz_source_name(CounterHzSource s);

/* Whether the CPU has rdtscp (CPUID 0x80000001 EDX bit 27); false on other architectures. */
bool counter_have_rdtscp(void);

/* Finds the frequency of @source: exact from the hardware where it says, otherwise by
 * calibration against CLOCK_MONOTONIC_RAW until two successive estimates agree within
 * @target_ppm or @max_ms milliseconds have passed. Fills @ret. Returns 0, -EOPNOTSUPP for an x86
 * TSC that is not invariant (CPUID 0x80000007 EDX bit 8), or -ENODEV where there is no hardware
 * counter at all. */
int counter_info_init(CounterSource source, double target_ppm, unsigned max_ms, CounterInfo *ret);

/* A simultaneous reading of the counter and the system clocks, taken so that the counter read
 * lies between the two CLOCK_MONOTONIC reads that bracket it most tightly out of a few tries. */
typedef struct ClockPair {
        uint64_t ticks;
        uint64_t mono_ns;
        uint64_t real_ns;
} ClockPair;

/* Takes a ClockPair for @source. */
void clock_pair_sample(CounterSource source, ClockPair *ret);

/* Maps @ticks (near @ref) to CLOCK_MONOTONIC ns and CLOCK_REALTIME ns. */
void clock_pair_map(const ClockPair *ref, const TickConv *conv, uint64_t ticks,
                    uint64_t *ret_mono_ns, uint64_t *ret_real_ns);

/* Drift of the counter against CLOCK_MONOTONIC between two pairs, in ppm (positive: the
 * counter runs fast with the frequency in @conv). */
double clock_pair_drift_ppm(const ClockPair *a, const ClockPair *b, const TickConv *conv);

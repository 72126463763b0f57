#pragma once

/* The cost of every way to read time on this host: the hardware counter (rdtsc, rdtscp,
 * lfence+rdtsc; cntvct with and without isb on aarch64), each clock_gettime() clock, a forced
 * clock_gettime system call, gettimeofday() and time().
 *
 * Method: each trial times a batch of K calls of one clock with the fenced hardware counter
 * (CLOCK_MONOTONIC_RAW where there is none), subtracts the cheapest empty batch (the cost of
 * the timing itself) and divides by K. The clocks take turns within every round, so machine
 * noise (interrupts, the other SMT thread, frequency changes) falls on all of them alike.
 *
 * The measurement runs on the calling thread, pinned to one CPU for its duration; the thread's
 * previous affinity is restored afterwards. Nothing here prints. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counter.h"

/* The kernel's clocksource, as the vDSO sees it. */
#define CLOCKS_CLOCKSOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"

/* Upper bound of the number of clocks measured (the exact list depends on the architecture). */
#define CLOCKS_MAX 24

/* Calls timed per trial by default. */
#define CLOCKS_BATCH_DEFAULT 64
/* Trials per clock by default: this many, or fewer (never below CLOCKS_SAMPLES_MIN) when they
 * take longer than CLOCKS_BUDGET_NS, as where every clock is a system call. */
#define CLOCKS_SAMPLES_DEFAULT 10000
#define CLOCKS_SAMPLES_MIN 200
#define CLOCKS_BUDGET_NS 1200000000ULL

/* Limits on what a caller may ask for, so a typo cannot run for hours. */
#define CLOCKS_BATCH_MAX 4096
#define CLOCKS_SAMPLES_MAX 1000000

/* What was measured of one clock. Costs are per call, in ns; NaN where unknown. */
typedef struct ClockCost {
        const char *name; /* "rdtsc", "CLOCK_MONOTONIC", "gettimeofday", ... (static) */
        bool counter;     /* a hardware counter rather than a system clock */
        double min_ns;
        double median_ns;
        double mean_ns;
        double max_ns;
        double stddev_ns;
        /* clock_getres() for the clocks; one tick for the counters; 1 µs for gettimeofday()
         * and 1 s for time(), the units they return. NaN when unknown (a counter whose
         * frequency could not be found). */
        double resolution_ns;
        /* The smallest non-zero difference seen between consecutive reads; NaN when the
         * clock did not move within the time allowed (time() moves once a second). */
        double step_ns;
        uint64_t samples; /* trials */
} ClockCost;

typedef struct ClocksOptions {
        int cpu;          /* CPU to run on; negative: the last CPU this thread may run on */
        unsigned samples; /* trials per clock, exactly; 0: the default (see above) */
        unsigned batch;   /* calls per trial; 0: CLOCKS_BATCH_DEFAULT */
} ClocksOptions;

typedef struct ClocksReport {
        int cpu;
        unsigned samples; /* trials per clock, as made */
        unsigned batch;   /* calls per trial */
        /* The kernel's current clocksource, "" when it could not be read. */
        char clocksource[64];
        /* The clocksource lets clock_gettime() read the counter in user space (see
         * clocks_clocksource_is_fast()). */
        bool clocksource_fast;
        /* What timed the batches: the hardware counter or CLOCK_MONOTONIC_RAW. */
        CounterInfo counter;
        double empty_batch_ns; /* cost of timing an empty batch, already subtracted */
        size_t n_clocks;
        ClockCost clocks[CLOCKS_MAX]; /* in the order measured */
} ClocksReport;

/* Measures the clocks as @opts says (NULL: all defaults) and fills @ret. Returns 0; -EINVAL for
 * options out of range or a CPU this thread may not run on (offline, outside its cpuset);
 * -ENOMEM; or a negative errno from sched_setaffinity(). */
int clocks_measure(const ClocksOptions *opts, ClocksReport *ret);

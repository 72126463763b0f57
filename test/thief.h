#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Ground truth for end-to-end tests: a SCHED_FIFO thread on the probe's CPU that takes the CPU
 * away for known durations at known times, and records exactly when. */

typedef struct Theft {
        uint64_t due_ns;   /* CLOCK_MONOTONIC when its timer was due: it took the CPU no earlier */
        uint64_t start_ns; /* CLOCK_MONOTONIC when the thief started spinning */
        uint64_t end_ns;   /* CLOCK_MONOTONIC when it stopped */
        uint64_t cpu_ns;   /* the thread's CPU time in between: less than end - start when a
                            * task of higher priority, or RT throttling, took the thief's CPU */
        uint64_t gaps_ns;  /* the gaps of THIEF_GAP_NS or more between the thief's own reads of
                            * the clock while it spun: what interrupted it (interrupts, the
                            * host), as the thief itself saw it */
        int cpu_start;     /* the CPU the thief spun on when it started, and when it stopped */
        int cpu_end;
} Theft;

/* A gap between two reads of the clock by the spinning thief that is this long or longer means
 * the thief was interrupted: a read takes well under 1 us. */
#define THIEF_GAP_NS 1000

/* Pins the calling thread to @cpu at SCHED_FIFO @priority, then for each k < @n sleeps until
 * @first_ns + k * @period_ns (CLOCK_MONOTONIC) and busy-spins for @durations_ns[k], recording
 * it in @ret[k]. Returns 0, or a negative errno when it cannot pin or get SCHED_FIFO (-ENOMEM
 * without memory for the times). */
int thief_run(int cpu, int priority, uint64_t first_ns, uint64_t period_ns,
              const uint64_t *durations_ns, size_t n, Theft *ret);

/* The same with the thefts due at @due_ns[k] (CLOCK_MONOTONIC, ascending). */
int thief_run_due(int cpu, int priority, const uint64_t *due_ns, const uint64_t *durations_ns,
                  size_t n, Theft *ret);

/* The same woken by a SCHED_FIFO thread pinned to @waker_cpu, through a futex: the thief then
 * takes its CPU on the IPI of its wake-up (a reschedule, or a call-function where the two CPUs
 * share no cache), not on an interrupt of its own timer, so that what moves on @cpu with each
 * theft is that IPI and a context switch, and no local timer interrupt. Returns 0, a negative
 * errno when the thief or the waker cannot pin or get SCHED_FIFO, -ETIMEDOUT when a wake-up
 * did not come within a second of its time. */
int thief_run_woken(int cpu, int waker_cpu, int priority, const uint64_t *due_ns,
                    const uint64_t *durations_ns, size_t n, Theft *ret);

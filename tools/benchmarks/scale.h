#pragma once

/* The scale benchmark's harness: a Manager built as jitterd builds it, over N synthetic CPUs.
 * Each is a real probe (probe_new(), never started) whose slots get the intervals of a
 * recorded fixture (scale-probe.h), one more each interval; the daemon's own tick and harvest
 * run over them: the epochs advance, the attribution counters are read from generated
 * /proc/interrupts and /proc/softirqs with N columns (and a status file per probe thread),
 * the slots are harvested into the history, and the textfile (when asked for) is written. The
 * API's stats builder answers GetStats over the result. Nothing here is in the daemon. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scale-fixture.h"

typedef struct Scale Scale;

typedef struct ScaleOptions {
        size_t n_cpus;               /* synthetic CPUs 0 .. n_cpus - 1 */
        const ScaleFixture *fixture; /* what they replay; must outlive the harness */
        const char *root;            /* an empty directory for the generated /proc (and the
                                      * textfile) */
        bool textfile;               /* write the Prometheus textfile after each harvest */
        unsigned device_irqs;        /* device rows of /proc/interrupts; 0: 24 + n_cpus */
} ScaleOptions;

/* The manager's CPU time over the intervals run, in ns, summed over them. */
typedef struct ScaleCost {
        unsigned intervals;
        uint64_t tick_ns;     /* tick(): epochs and the attribution counters */
        uint64_t harvest_ns;  /* the harvest: slots into the history, events, hooks */
        uint64_t textfile_ns; /* the textfile's rendering and writing */
} ScaleCost;

/* Builds the harness. Returns 0, -EINVAL for no CPU or more than CPU_SETSIZE, -EPERM or
 * -ENOMEM when the probes' memory cannot be locked, or another negative errno. */
int scale_new(const ScaleOptions *o, Scale **ret);

/* Frees @s and what it made under its root; accepts NULL; returns NULL. */
Scale *scale_free(Scale *s);

/* Runs @n intervals of 1 s each, the first starting at CLOCK_MONOTONIC @first_start_ns, the
 * next ones 1 s apart: each CPU's slot gets the fixture's next interval (CPU c starts c
 * intervals further into the fixture, so that the CPUs differ), the /proc files their next
 * counts, then the manager ticks and harvests. Adds the manager's CPU time to @cost. Returns
 * 0 or a negative errno (a generated file that could not be written). */
int scale_run(Scale *s, unsigned n, uint64_t first_start_ns, ScaleCost *cost);

/* GetStats' "cpus" array, as the API builds it, for @cpu (-1: all of them) over @window.
 * NULL on a bad window or out of memory. */
json_t *scale_stats(Scale *s, int cpu, const char *window);

/* How much /proc/interrupts' row @row grows on CPU @cpu each interval: device rows
 * (0 .. device_irqs - 1, IRQ 24 + row) each on one CPU only, row % n_cpus, as the queues of
 * a multi-queue device are spread one per CPU; the architecture rows NMI, LOC, RES, CAL, TLB
 * (device_irqs + 0 .. 4) on every CPU. Likewise every softirq @row (HI = 0 .. RCU = 9) and the
 * probe thread's context switches (voluntary, involuntary) on every CPU. */
uint64_t scale_irq_step(const Scale *s, unsigned row, int cpu);
uint64_t scale_softirq_step(unsigned row, int cpu);
uint64_t scale_ctxsw_step(bool voluntary, int cpu);

/* Memory: the probes' (locked), the history's, and the attribution's (its table, the buffer
 * of its /proc files, each CPU's snapshot and MSR file). */
size_t scale_probe_bytes(const Scale *s);
size_t scale_history_bytes(const Scale *s);
size_t scale_attrib_bytes(const Scale *s);

#pragma once

/* For the tests of periodicity.c only: the name periodicity_find() gives a period, on its own. */

#include <stdint.h>

/* The kernel source known to recur every @period_ns (within 2 %): the scheduler tick of
 * CONFIG_HZ 1000, 300, 250 or 100, the 1 Hz residual tick of nohz_full CPUs and other 1 s
 * timers (vmstat), the clocksource watchdog (0.5 s, so 0.5 s x @online_cpus on one CPU when it
 * is known), the writeback flusher (5 s), generic 2 s and 4 s timers. NULL when none. */
const char *periodicity_source_name(uint64_t period_ns, unsigned online_cpus);

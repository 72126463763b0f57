#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "counter.h"

/* What probe.c reads of the hardware: the counter, once per sample, and the CPU number of
 * rdtscp, once per check. Inline, so that the loop specialised for a counter is the loop of
 * counter.h's read. The tests' build of the engine (probe-hooks.c) compiles probe.c again with
 * stand-ins of its own in place of these. */

/* Reads the counter @source. */
static inline uint64_t probe_hw_read(CounterSource source)
{
        return counter_read(source);
}

/* Whether rdtscp may run here. */
static inline bool probe_hw_have_rdtscp(void)
{
        return counter_have_rdtscp();
}

/* TSC_AUX & 0xfff. Only called once probe_hw_have_rdtscp() said yes. */
static inline unsigned probe_hw_tsc_aux(void)
{
        return counter_read_tsc_aux();
}

#pragma once

/* For the probe's tests only: stand-ins for the hardware, which probe-hooks.c provides by
 * building probe.c again with them. It is linked into the unit tests and into the test builds
 * of jitter-probe and jitterd (jitter-probe-test-hooks, jitterd-test-hooks), never into
 * libjitter or what is installed. */

#include <stdint.h>

#include "probe.h"

/* CPUID's answer to "has this CPU rdtscp", as a test dictates it. */
typedef enum ProbeRdtscp {
        PROBE_RDTSCP_ASK_CPUID, /* the real answer */
        PROBE_RDTSCP_ABSENT,
        PROBE_RDTSCP_PRESENT, /* the real rdtscp still runs only where CPUID has it */
} ProbeRdtscp;

/* A scripted counter, a TSC_AUX that lies, a CPU without rdtscp. Each hook runs in the probe
 * thread. */
typedef struct ProbeHooks {
        /* Replaces every counter reading, in ticks of ProbeConfig.counter.hz. */
        uint64_t (*read_counter)(void *userdata);
        /* Replaces TSC_AUX & 0xfff (what rdtscp would say the CPU is): checked at start and
         * used by the loop exactly like TSC_AUX. */
        unsigned (*tsc_aux)(void *userdata);
        ProbeRdtscp rdtscp;
        void *userdata;
} ProbeHooks;

/* The hooks of every probe started from now on: each copies them when its thread first reads
 * the hardware, which it does (choosing its CPU-number source) before it leaves
 * PROBE_STARTING, so before probe_start() returns. Their userdata must outlive those probes;
 * NULL, the default, for none. */
void probe_set_hooks(const ProbeHooks *hooks);

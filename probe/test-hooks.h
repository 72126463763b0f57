#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe-internal.h"

/* Stand-ins for hosts the tests cannot run on, for the test builds of jitter-probe and jitterd
 * (jitter-probe-test-hooks, jitterd-test-hooks; never installed, and not part of libjitter). An
 * environment variable lists them, comma-separated, each KEY=NUMBER:
 *   rdtscp=0|1          CPUID says the CPU has no rdtscp, or has it
 *   tsc-aux=V           TSC_AUX reads V (a number nobody wrote, as some hypervisors leave it)
 *   honest-reads=N      ... but only after N reads of the true CPU number
 *   lie-after-ms=N      ... and only from N ms after the first read on
 *   stall-preheat=1     the probe thread stops for good at the first check of its preheat
 *   stall-running-ms=N  ... or N ms after it began recording: a probe starved for good, which
 *                       takes no new interval and does not see a request to stop
 * The stalls read the probe's state, so they need test_hooks_bind() with one probe. */

typedef struct TestHooks {
        ProbeRdtscp rdtscp;
        bool tsc_aux_set;
        unsigned tsc_aux;
        unsigned honest_reads;
        uint64_t lie_after_ns;
        bool stall_preheat;
        bool stall_running;
        uint64_t stall_running_ns;
} TestHooks;

/* What the hooks of one probe (or of all of a program's probes) keep between calls. */
typedef struct TestHooksState {
        const TestHooks *hooks;
        /* The one probe they serve, for the stalls: set once it is made, before it starts. */
        const Probe *probe;
        _Atomic unsigned reads;
        _Atomic uint64_t first_read_ns;
        _Atomic uint64_t running_since_ns;
} TestHooksState;

/* Parses @env, which may be NULL (no hooks), into @ret. Returns 0, or -EINVAL with what is
 * wrong written to @err. */
int test_hooks_parse(const char *env, TestHooks *ret, char *err, size_t err_size);

/* Whether @t asks for a stall, which needs one probe per TestHooksState. */
bool test_hooks_stall(const TestHooks *t);

/* Makes @ret the probe hooks that @t asks for, keeping their state in @state, which must
 * outlive the probes made with them (as must @t). Leaves @ret with no hook at all when @t asks
 * for none. */
void test_hooks_bind(const TestHooks *t, TestHooksState *state, ProbeHooks *ret);

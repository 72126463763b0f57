/* The engine as the tests build it: probe.c with stand-ins for the hardware in place of
 * probe-hw.h (see probe-internal.h). Linked into the tests and the test builds of jitter-probe
 * and jitterd only, where it takes the place of libjitter's probe.c. */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "counter.h"
#include "probe-internal.h"

static _Atomic(const ProbeHooks *) next_hooks;

/* A copy of the hooks of the probe this thread runs, taken at its first read of the hardware. */
static _Thread_local ProbeHooks thread_hooks;
static _Thread_local bool thread_hooks_taken;

void probe_set_hooks(const ProbeHooks *hooks)
{
        atomic_store(&next_hooks, hooks);
        /* A probe run in this very thread (probe_thread() called directly) takes them too. */
        thread_hooks_taken = false;
}

static inline const ProbeHooks *hooks(void)
{
        if (__builtin_expect(!thread_hooks_taken, 0)) {
                const ProbeHooks *h = atomic_load(&next_hooks);

                thread_hooks = h ? *h : (ProbeHooks){.rdtscp = PROBE_RDTSCP_ASK_CPUID};
                thread_hooks_taken = true;
        }
        return &thread_hooks;
}

static inline uint64_t probe_hw_read(CounterSource source)
{
        const ProbeHooks *h = hooks();

        if (h->read_counter) {
                return h->read_counter(h->userdata);
        }
        return counter_read(source);
}

/* A test's "present" lets its own TSC_AUX stand-in be used, never the instruction on a CPU
 * without it. */
static inline bool probe_hw_have_rdtscp(void)
{
        const ProbeHooks *h = hooks();

        switch (h->rdtscp) {
        case PROBE_RDTSCP_ABSENT:
                return false;
        case PROBE_RDTSCP_PRESENT:
                return h->tsc_aux || counter_have_rdtscp();
        case PROBE_RDTSCP_ASK_CPUID:
        default:
                return counter_have_rdtscp();
        }
}

static inline unsigned probe_hw_tsc_aux(void)
{
        const ProbeHooks *h = hooks();

        if (h->tsc_aux) {
                return h->tsc_aux(h->userdata);
        }
        return counter_read_tsc_aux();
}

#define PROBE_HW_STANDINS
#include "probe.c"

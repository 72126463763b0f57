#include "test-hooks.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int test_hooks_parse(const char *env, TestHooks *ret, char *err, size_t err_size)
{
        char buf[256], *save = NULL;

        *ret = (TestHooks){.rdtscp = PROBE_RDTSCP_ASK_CPUID};
        if (!env) {
                return 0;
        }
        if (snprintf(buf, sizeof(buf), "%s", env) >= (int)sizeof(buf)) {
                snprintf(err, err_size, "too long: '%s'", env);
                return -EINVAL;
        }
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '='), *end;
                unsigned long v;

                if (!eq) {
                        snprintf(err, err_size, "'%s' is not KEY=VALUE", tok);
                        return -EINVAL;
                }
                *eq = '\0';
                errno = 0;
                v = strtoul(eq + 1, &end, 0);
                if (errno != 0 || *end != '\0' || end == eq + 1 || v > UINT_MAX) {
                        snprintf(err, err_size, "bad number for '%s'", tok);
                        return -EINVAL;
                }
                if (strcmp(tok, "rdtscp") == 0 && v <= 1) {
                        ret->rdtscp = v ? PROBE_RDTSCP_PRESENT : PROBE_RDTSCP_ABSENT;
                } else if (strcmp(tok, "tsc-aux") == 0) {
                        ret->tsc_aux_set = true;
                        ret->tsc_aux = (unsigned)v;
                } else if (strcmp(tok, "honest-reads") == 0) {
                        ret->honest_reads = (unsigned)v;
                } else if (strcmp(tok, "lie-after-ms") == 0) {
                        ret->lie_after_ns = (uint64_t)v * 1000000ULL;
                } else if (strcmp(tok, "stall-preheat") == 0 && v <= 1) {
                        ret->stall_preheat = v;
                } else if (strcmp(tok, "stall-running-ms") == 0) {
                        ret->stall_running = true;
                        ret->stall_running_ns = (uint64_t)v * 1000000ULL;
                } else {
                        snprintf(err, err_size,
                                 "unknown '%s' (rdtscp, tsc-aux, honest-reads, lie-after-ms, "
                                 "stall-preheat, stall-running-ms)",
                                 tok);
                        return -EINVAL;
                }
        }
        /* The stalls live in the TSC_AUX stand-in, which the loop reads at every check. */
        if (test_hooks_stall(ret) && ret->rdtscp == PROBE_RDTSCP_ABSENT) {
                snprintf(err, err_size, "the stalls need rdtscp: not with rdtscp=0");
                return -EINVAL;
        }
        return 0;
}

bool test_hooks_stall(const TestHooks *t)
{
        return t->stall_preheat || t->stall_running;
}

/* A probe thread starved for good: it never returns to its loop. It touches nothing, as its
 * owner may free what the hooks read once it has given up on the thread. */
static void stall_for_good(void)
{
        for (;;) {
                struct timespec ts = {1, 0};

                nanosleep(&ts, NULL);
        }
}

static void maybe_stall(TestHooksState *s, uint64_t now)
{
        const TestHooks *t = s->hooks;
        ProbeState st;
        uint64_t since = 0;

        if (!s->probe) {
                return;
        }
        st = probe_state(s->probe);
        if (t->stall_preheat && st == PROBE_PREHEATING) {
                stall_for_good();
        }
        if (t->stall_running && st == PROBE_RUNNING) {
                /* The first check that sees it recording starts the count. */
                if (atomic_compare_exchange_strong(&s->running_since_ns, &since, now)) {
                        since = now;
                }
                if (now >= since && now - since >= t->stall_running_ns) {
                        stall_for_good();
                }
        }
}

/* Runs in the probe thread, once at each check of its loop (and a few times at its start). */
static unsigned hooked_tsc_aux(void *userdata)
{
        TestHooksState *s = userdata;
        const TestHooks *t = s->hooks;
        const uint64_t now = now_ns(CLOCK_MONOTONIC);
        const unsigned n = atomic_fetch_add(&s->reads, 1);
        uint64_t first = 0;

        maybe_stall(s, now);
        /* The first read of all sets the time the lies start from. */
        if (atomic_compare_exchange_strong(&s->first_read_ns, &first, now)) {
                first = now;
        }
        if (!t->tsc_aux_set || n < t->honest_reads || now < first + t->lie_after_ns) {
                return (unsigned)sched_getcpu();
        }
        return t->tsc_aux;
}

void test_hooks_bind(const TestHooks *t, TestHooksState *state, ProbeHooks *ret)
{
        *ret = (ProbeHooks){.rdtscp = t->rdtscp};
        state->hooks = t;
        state->probe = NULL;
        atomic_store(&state->reads, 0);
        atomic_store(&state->first_read_ns, 0);
        atomic_store(&state->running_since_ns, 0);
        if (t->tsc_aux_set || test_hooks_stall(t)) {
                ret->tsc_aux = hooked_tsc_aux;
                ret->userdata = state;
                /* A stall without a choice of rdtscp still needs the TSC_AUX stand-in read. */
                if (test_hooks_stall(t) && t->rdtscp == PROBE_RDTSCP_ASK_CPUID) {
                        ret->rdtscp = PROBE_RDTSCP_PRESENT;
                }
        }
}

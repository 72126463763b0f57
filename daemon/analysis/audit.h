#pragma once

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>

/* The tuning audit: for each probed CPU, and for the machine as a whole, what in the kernel
 * command line, /proc and /sys will take that CPU away from a task that wants it 100 % of the
 * time, why it matters, and the exact fix (kernel argument, sysctl, file and value to write).
 *
 * Everything is read below a root prefix so that the audit runs against fixture trees as well
 * as the real system. The audit only reads: it never changes the system. A source that cannot
 * be read (no cpufreq in a VM, a kernel without nohz_full support) gives an "info" finding that
 * says what was missing; it is never an error of audit_run(). This module never logs.
 *
 * Check ids, in report order:
 *   per CPU:  isolcpus, nohz_full, rcu_nocbs, irq_affinity, workqueue, kthreads, smt_sibling,
 *             governor, cstates
 *   global:   rt_throttling, clocksource, timer_migration      ("cpu": null) */

typedef enum AuditSeverity {
        AUDIT_OK,
        AUDIT_INFO,
        AUDIT_WARNING,
        AUDIT_ERROR,
        _AUDIT_SEVERITY_MAX,
} AuditSeverity;

/* Default bound on the exit latency of an enabled C-state: the default interruption threshold
 * of the probes, so that a wake-up from any allowed state stays below what is counted as an
 * interruption. */
#define AUDIT_CSTATE_LATENCY_MAX_US_DEFAULT 10u

typedef struct AuditOptions {
        /* SCHED_FIFO priority the probes run at; 0 means SCHED_OTHER. RT throttling is an
         * error for FIFO probes (they are stalled by it) and a warning otherwise. */
        unsigned probe_priority;
        /* Enabled C-states with a larger exit latency are reported. */
        unsigned cstate_latency_max_us;
        /* The clocksource that gives a vDSO clock_gettime() and matches the probes' counter;
         * NULL: the architecture's ("tsc" on x86, "arch_sys_counter" on aarch64; none
         * elsewhere, which makes the check informative only). */
        const char *expected_clocksource;
} AuditOptions;

/* Fills @opt with the defaults: SCHED_OTHER probes, AUDIT_CSTATE_LATENCY_MAX_US_DEFAULT,
 * the architecture's clocksource. */
void audit_options_init(AuditOptions *opt);

/* Audits the CPUs in @cpus (non-empty) reading /proc and /sys below @root (NULL, "" or "/" for
 * the real system). @opt may be NULL for the defaults. On success stores in @ret a new object
 * {"findings": [{"check", "cpu" (integer, or null for global checks), "severity" ("ok",
 * "info", "warning", "error"), "seen", "why", "fix"}]} with one finding per check and CPU,
 * and returns 0. "fix" is non-empty for every warning and error. Returns -EINVAL for a NULL
 * or empty @cpus or a NULL @ret, -ENAMETOOLONG for an over-long @root, -ENOMEM. */
int audit_run(const char *root, const cpu_set_t *cpus, const AuditOptions *opt, json_t **ret);

/* Returns the highest severity in @findings (the "findings" array, or the report object
 * holding it); AUDIT_OK when it is empty. Returns -EINVAL when @findings is not such an array
 * or an element has no valid "severity". */
int audit_worst_severity(json_t *findings);

/* Returns the name of @severity ("ok", "info", "warning", "error"), or NULL if out of range. */
const char *audit_severity_to_string(AuditSeverity severity);

/* Parses a severity name; returns the AuditSeverity or -EINVAL. */
int audit_severity_from_string(const char *name);

/* Prints @report (as returned by audit_run) to @f as a table: severity, check, CPU ("-" for
 * global checks) and what was seen, with "why" and "fix" indented below each finding that is
 * not ok. With @color, severities are coloured with ANSI escapes. A malformed report prints
 * what can be printed and nothing else. */
void audit_print(json_t *report, FILE *f, bool color);

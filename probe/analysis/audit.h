#pragma once

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "audit-facts.h"

/* The tuning audit: for each probed CPU, and for the machine as a whole, what in the kernel
 * command line, /proc and /sys will take that CPU away from a task that wants it 100 % of the
 * time, why it matters, and the exact fix (kernel argument, sysctl, file and value to write).
 *
 * The audit judges what host_audit_gather() (probe/host/host-audit.h) read of the host, below a
 * root prefix so that fixture trees stand for a machine; it reads nothing itself and never
 * changes the system. A source that could not be read (no cpufreq in a VM, a kernel without
 * nohz_full support) gives an "info" finding that says what was missing; it is never an error
 * of audit_run(). This module never logs.
 *
 * Check ids, in report order:
 *   per CPU:  isolcpus, nohz_full, rcu_nocbs, irq_affinity, workqueue, kthreads, smt_sibling,
 *             governor, cstates
 *   global:   rt_throttling, clocksource, timer_migration, vmstat   ("cpu": null)
 *
 * The same knowledge answers for single causes of interruptions (audit_remedy()): what lets a
 * given IRQ, task, work item or timer onto a probed CPU and the exact command that moves it
 * away, worded by the same code as the findings' fixes. */

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

/* What the audit makes of one host's facts, for their probed CPUs. */
typedef struct Audit Audit;

/* Fills @opt with the defaults: SCHED_OTHER probes, AUDIT_CSTATE_LATENCY_MAX_US_DEFAULT,
 * the architecture's clocksource. */
void audit_options_init(AuditOptions *opt);

/* Audits the probed CPUs of @facts (as host_audit_gather() read them). @opt may be NULL for
 * the defaults. On success stores in @ret a new object
 * {"findings": [{"check", "cpu" (integer, or null for global checks), "severity" ("ok",
 * "info", "warning", "error"), "seen", "why", "fix"}]} with one finding per check and CPU,
 * and returns 0. "fix" is non-empty for every warning and error. Returns -EINVAL for NULL
 * @facts (or facts of no CPU) or a NULL @ret, -ENOMEM. */
int audit_run(const AuditFacts *facts, const AuditOptions *opt, json_t **ret);

/* Takes in @facts (as host_audit_gather() read them; they must outlive the object) for the
 * audit of their probed CPUs and the remedies: the kernel command line, the isolation, the
 * IRQs, the kernel threads, the workqueue mask. @opt may be NULL for the defaults. Stores the
 * new object in @ret and returns 0, or -EINVAL (NULL @facts or facts of no CPU, NULL @ret),
 * -ENOMEM. */
int audit_new(const AuditFacts *facts, const AuditOptions *opt, Audit **ret);

/* Frees *@a (NULL is fine) and sets it to NULL: for __attribute__((cleanup)). */
void audit_freep(Audit **a);

/* The housekeeping CPUs, where the fixes move things: online, neither probed nor isolated (at
 * least not probed when that leaves none). Returns 0, or -ENODATA when the online CPUs could
 * not be read. */
int audit_housekeeping(const Audit *a, cpu_set_t *ret);

/* Whether the host is a virtual machine (the CPU's hypervisor flag, /sys/hypervisor/type), as
 * facts gathered with HOST_AUDIT_REMEDIES say; false without them. */
bool audit_is_virtual(const Audit *a);

/* One cause of interruptions on the probed CPUs, as GetCauses names it. */
typedef struct AuditCause {
        /* "irq", "vector", "softirq", "task", "timer", "work", "ipi", "no_record",
         * "unexplained" or "other" */
        const char *kind;
        /* the IRQ handler's, vector's, softirq's or function's name; a task's "comm:pid" */
        const char *name;
        /* the probed CPUs it took */
        cpu_set_t cpus;
        /* A task: when the newest interruption it took part in began, and the window's start,
         * both CLOCK_BOOTTIME ns (what /proc/PID/stat's start time counts from); 0 when not
         * known. */
        uint64_t last_seen_ns;
        uint64_t window_start_ns;
        /* A work item: the kworker seen running it ("kworker/u8:2:31963"), or NULL. */
        const char *worker;
} AuditCause;

/* The remedy for @cause on @a's host. Stores in @ret a new object:
 *   "what":     the cause for people ("task python3:4242", "irq 36 virtio1-req.0", "hypervisor")
 *   "check":    the audit check whose finding the setting is (null when none is)
 *   "setting":  what lets it onto the CPU (null when not known)
 *   "when":     "now", "reboot" (kernel arguments), "host" (only the VM's host can) or "none"
 *               (no fix known)
 *   "command":  the exact command, or for "reboot" the kernel arguments (null without)
 *   "persist", "revert": how to keep the fix and how to undo it (null without)
 *   "note":     what else to know, or why no fix is known (null without)
 *   "ask_host": for "host", what to ask the host's administrator for (null otherwise)
 *   "pid", "identity": for a task, its pid and whether it is the task that was seen:
 *               "checked" (it started before the interruption), "reused" (the pid now belongs
 *               to a task started after it), "exited", or "unchecked" (it cannot be told); only
 *               a checked task gets a command that names its pid.
 * A task is read now through the facts' task readers (gathered with HOST_AUDIT_REMEDIES; without
 * them it cannot be checked); the IRQs are those of the facts. Returns 0, -EINVAL for a
 * NULL or unknown kind or name, -ENOMEM. */
int audit_remedy(Audit *a, const AuditCause *cause, json_t **ret);

/* Returns the highest severity in @findings (the "findings" array, or the report object
 * holding it); AUDIT_OK when it is empty. Returns -EINVAL when @findings is not such an array
 * or an element has no valid "severity". */
int audit_worst_severity(json_t *findings);

/* Prints @report (as returned by audit_run) to @f as a table: severity, check, CPU ("-" for
 * global checks) and what was seen, with "why" and "fix" indented below each finding that is
 * not ok. With @color, severities are coloured with ANSI escapes. A malformed report prints
 * what can be printed and nothing else. */
void audit_print(json_t *report, FILE *f, bool color);

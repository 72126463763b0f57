#pragma once

/* What the tuning audit needs of a host, read below a root prefix so that fixture trees stand
 * for a machine: the kernel command line, the isolation, the IRQs, the kernel threads, the
 * probed CPUs' topology, frequency governor and C-states, and the sysctls the audit judges.
 * The audit (probe/analysis/audit.h) is handed the facts and reads nothing. Only reads, never
 * logs; a FIFO below the root is never waited on. */

#include <sched.h>

#include "audit-facts.h"

/* Also read what only the remedies of single causes use: the watchdog's CPU mask and whether
 * the host is a virtual machine; and give the facts their readers of single tasks. */
#define HOST_AUDIT_REMEDIES (1u << 0)

/* Reads, below @root (NULL, "" or "/" for the real system), what the audit of the CPUs in
 * @cpus (non-empty) looks at, plus with @flags HOST_AUDIT_REMEDIES what the remedies do. What
 * cannot be read is recorded in the *_error fields, never an error of the call. Stores the new
 * facts in @ret and returns 0, or -EINVAL (NULL or empty @cpus, NULL @ret), -ENAMETOOLONG
 * (over-long @root), -ENOMEM. */
int host_audit_gather(const char *root, const cpu_set_t *cpus, unsigned flags, AuditFacts **ret);

/* Frees *@f (NULL is fine) and sets it to NULL: for __attribute__((cleanup)). */
void host_audit_freep(AuditFacts **f);

#pragma once

/* What the audit's files share: the host as audit_new() takes it from the facts, a growing string,
 * and the fix texts. The checks (audit.c) and the remedies for single causes (audit-remedy.c) word
 * their fixes with the same audit_fix_*() builders, so that a command is written in one place. */

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "cpulist.h"
#include "audit-facts.h"

/* isolcpus= flags. */
#define ISOL_DOMAIN (1u << 0)
#define ISOL_NOHZ (1u << 1)
#define ISOL_MANAGED_IRQ (1u << 2)

/* How many IRQs or kthreads are named in "seen" before "and N more". */
#define SEEN_NAMES_MAX 8

/* A growing string. Allocation failure is remembered and reported once, at the end. */
typedef struct StrBuf {
        char *s;
        size_t len;
        size_t cap;
        bool oom;
} StrBuf;

static inline void strbuf_done(StrBuf *sb)
{
        free(sb->s);
}
#define _cleanup_strbuf_ __attribute__((cleanup(strbuf_done)))

__attribute__((format(printf, 2, 0))) static inline void sb_vprintf(StrBuf *sb, const char *fmt,
                                                                    va_list ap)
{
        va_list again;
        int n;

        if (sb->oom) {
                return;
        }
        va_copy(again, ap);
        n = vsnprintf(NULL, 0, fmt, ap);
        if (n < 0) {
                sb->oom = true;
                va_end(again);
                return;
        }
        if (sb->len + (size_t)n + 1 > sb->cap) {
                size_t cap = (sb->len + (size_t)n + 1) * 2;
                char *s = realloc(sb->s, cap);

                if (!s) {
                        sb->oom = true;
                        va_end(again);
                        return;
                }
                sb->s = s;
                sb->cap = cap;
        }
        vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, again);
        va_end(again);
        sb->len += (size_t)n;
}

__attribute__((format(printf, 2, 3))) static inline void sb_printf(StrBuf *sb, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        sb_vprintf(sb, fmt, ap);
        va_end(ap);
}

/* sb_printf() of a sentence after what @sb holds: a space between them. */
__attribute__((format(printf, 2, 3))) static inline void sb_sentence(StrBuf *sb, const char *fmt,
                                                                     ...)
{
        va_list ap;

        if (sb->len > 0) {
                sb_printf(sb, " ");
        }
        va_start(ap, fmt);
        sb_vprintf(sb, fmt, ap);
        va_end(ap);
}

static inline const char *sb_str(const StrBuf *sb)
{
        return sb->s ? sb->s : "";
}

/* Appends @set as a CPU list ("0,3,8-11"), or @empty when it holds no CPU. */
static inline void sb_cpulist(StrBuf *sb, const cpu_set_t *set, const char *empty)
{
        /* Room for the longest list of CPU_SETSIZE CPUs ("0,2,4,...", "0-1,3-4,..."). */
        char list[CPU_SETSIZE * 5];

        if (CPU_COUNT(set) == 0) {
                sb_printf(sb, "%s", empty);
                return;
        }
        sb_printf(sb, "%s", cpulist_format(list, sizeof(list), set));
}

/* Appends @set as a hex mask the way the kernel prints and parses cpumasks: 32-bit groups,
 * most significant first, separated by commas ("3", "1,00000000"). */
static inline void sb_cpumask(StrBuf *sb, const cpu_set_t *set)
{
        int last = cpulist_last(set);

        if (last < 0) {
                sb_printf(sb, "0");
                return;
        }
        for (int group = last / 32; group >= 0; group--) {
                uint32_t word = 0;

                for (int bit = 0; bit < 32; bit++) {
                        if (group * 32 + bit < CPU_SETSIZE && CPU_ISSET(group * 32 + bit, set)) {
                                word |= UINT32_C(1) << bit;
                        }
                }
                if (group == last / 32) {
                        sb_printf(sb, "%" PRIx32, word);
                } else {
                        sb_printf(sb, ",%08" PRIx32, word);
                }
        }
}

typedef struct CmdlineList {
        bool present;    /* the parameter is on the command line */
        bool valid;      /* and its CPU list could be parsed */
        char value[256]; /* as written (possibly truncated), for "seen" */
        cpu_set_t cpus;
} CmdlineList;

typedef struct Cmdline {
        int error; /* 0, or why /proc/cmdline could not be read */
        CmdlineList isolcpus;
        unsigned isolcpus_flags;
        CmdlineList nohz_full;
        CmdlineList rcu_nocbs;
        CmdlineList irqaffinity;
        bool rcu_nocb_poll;
} Cmdline;

struct Audit {
        const AuditFacts *facts; /* what was read of the host; the caller's */
        AuditOptions opt;
        cpu_set_t cpus;
        int nr_cpu_ids; /* from .../cpu/possible; -1 when unknown */

        Cmdline cmdline;
        int online_error;
        cpu_set_t online;
        int isolated_error;
        cpu_set_t isolated;
        cpu_set_t cpuset_isolated; /* at run time, by cgroup v1 shields and v2 partitions */
        int nohz_full_error;       /* the running kernel's nohz_full mask */
        cpu_set_t nohz_full;
        int workqueue_error;
        cpu_set_t workqueue;

        bool housekeeping_known;
        cpu_set_t housekeeping;

        int irqs_error;
        const AuditIrq *irqs;
        size_t n_irqs;
        int default_affinity_error;
        cpu_set_t default_affinity;

        int kthreads_error;
        const AuditKthread *kthreads;
        size_t n_kthreads;

        json_t *findings;
};

typedef enum IrqHere {
        IRQ_ELSEWHERE,
        IRQ_MOVABLE,   /* allowed on the CPU, and user space may change that */
        IRQ_UNMOVABLE, /* managed or per-CPU, and delivered to the CPU now */
} IrqHere;

static inline IrqHere irq_here(const AuditIrq *irq, int cpu)
{
        bool effective = irq->has_effective && CPU_ISSET(cpu, &irq->effective);

        if (irq->unmovable) {
                /* It cannot be moved: only where it is delivered now matters. */
                return (irq->has_effective ? effective : CPU_ISSET(cpu, &irq->affinity))
                               ? IRQ_UNMOVABLE
                               : IRQ_ELSEWHERE;
        }
        return CPU_ISSET(cpu, &irq->affinity) || effective ? IRQ_MOVABLE : IRQ_ELSEWHERE;
}

/* The IRQs that may be delivered to @cpu and can be moved, in a new array (NULL on OOM; empty
 * arrays are allocated too) and their number in *@ret_n. */
static inline const AuditIrq **movable_irqs(const Audit *a, int cpu, size_t *ret_n)
{
        const AuditIrq **irqs = calloc(a->n_irqs + 1, sizeof(*irqs));
        size_t n = 0;

        for (size_t i = 0; irqs && i < a->n_irqs; i++) {
                if (irq_here(&a->irqs[i], cpu) == IRQ_MOVABLE) {
                        irqs[n++] = &a->irqs[i];
                }
        }
        *ret_n = n;
        return irqs;
}

typedef enum KthreadKind {
        KTHREAD_ELSEWHERE, /* not allowed on the CPU */
        KTHREAD_PER_CPU,   /* bound to just this CPU: expected, and cannot be moved */
        KTHREAD_FOLLOWER,  /* follows a mask set elsewhere: workqueue cpumask or IRQ affinity */
        KTHREAD_MOVABLE,   /* could be moved with sched_setaffinity() */
} KthreadKind;

static inline KthreadKind kthread_kind(const AuditKthread *k, int cpu)
{
        if (!CPU_ISSET(cpu, &k->allowed)) {
                return KTHREAD_ELSEWHERE;
        }
        /* An unbound kworker follows the workqueue cpumask, even one of a single CPU. */
        if (strncmp(k->comm, "kworker/u", strlen("kworker/u")) == 0) {
                return KTHREAD_FOLLOWER;
        }
        if (k->flags & PF_NO_SETAFFINITY) {
                return CPU_COUNT(&k->allowed) == 1 ? KTHREAD_PER_CPU : KTHREAD_FOLLOWER;
        }
        /* Threaded IRQ handlers take the affinity of their interrupt. */
        if (strncmp(k->comm, "irq/", 4) == 0) {
                return KTHREAD_FOLLOWER;
        }
        return KTHREAD_MOVABLE;
}

/* When a fix takes effect. */
typedef enum FixWhen {
        FIX_NONE,   /* no fix is known */
        FIX_NOW,    /* a command, effective at once, until reboot unless made to persist */
        FIX_REBOOT, /* kernel arguments: at the next boot */
        FIX_HOST,   /* only the host of this virtual machine can */
        _FIX_WHEN_MAX,
} FixWhen;

/* A fix for one setting. command and revert are exact commands (FIX_REBOOT: the kernel
 * arguments in command); setting, persist, note and ask_host are sentences. Empty when they
 * do not apply. */
typedef struct Fix {
        const char *check; /* the audit check whose finding it answers, or NULL */
        FixWhen when;
        StrBuf setting;  /* what lets the cause onto the CPU (set by audit_remedy()) */
        StrBuf command;  /* what to run, or the kernel arguments to boot with */
        StrBuf persist;  /* how to keep it across reboots */
        StrBuf revert;   /* how to undo it */
        StrBuf note;     /* what else to know, or why no fix is known */
        StrBuf ask_host; /* FIX_HOST: what to ask the host's administrator for */
} Fix;

/* "none", "now", "reboot", "host"; NULL out of range. */
const char *audit_fix_when_name(FixWhen when);

/* Frees what @f holds and empties it (check and when stay). */
void audit_fix_done(Fix *f);
#define _cleanup_fix_ __attribute__((cleanup(audit_fix_done)))

/* Whether building @f ran out of memory. */
bool audit_fix_oom(const Fix *f);

/* How nohz_full stands for a CPU, and how RCU callbacks do. */
typedef enum NohzState {
        NOHZ_ACTIVE,      /* the tick stops while one task runs */
        NOHZ_NOT_STARTED, /* requested on the command line, not running */
        NOHZ_UNSUPPORTED, /* a kernel without CONFIG_NO_HZ_FULL */
        NOHZ_OFF,         /* not requested */
        NOHZ_UNKNOWN,
} NohzState;

typedef enum RcuState {
        RCU_OFFLOADED_POLLED,
        RCU_OFFLOADED, /* rcuo kthreads woken from the CPU */
        RCU_LOCAL,     /* callbacks run on the CPU in softirq */
        RCU_UNKNOWN,
} RcuState;

NohzState audit_nohz_state(const Audit *a, int cpu);

/* Whether the scheduler keeps tasks off @cpu: isolcpus= with the domain flag, or a cpuset
 * that isolates it. */
bool audit_domain_isolated(const Audit *a, int cpu);
RcuState audit_rcu_state(const Audit *a, int cpu);

/* The fix builders: each fills @f (empty on entry) with the fix of one setting, for the
 * probed CPUs of @a and its housekeeping CPUs. */
void audit_fix_isolcpus(const Audit *a, Fix *f);
void audit_fix_nohz_full(const Audit *a, int cpu, Fix *f);
void audit_fix_rcu_nocbs(const Audit *a, int cpu, Fix *f);
void audit_fix_irqs(const Audit *a, const AuditIrq *const *irqs, size_t n, Fix *f);
void audit_fix_managed_irq(const Audit *a, Fix *f);
void audit_fix_workqueue(const Audit *a, Fix *f);
void audit_fix_kthreads(const Audit *a, const AuditKthread *const *k, size_t n, Fix *f);
void audit_fix_sysctl(const Audit *a, const char *check, const char *key, const char *value,
                      Fix *f);
void audit_fix_watchdog(const Audit *a, Fix *f);
void audit_fix_task(const Audit *a, int tid, const cpu_set_t *allowed, const char *unit, Fix *f);

/* vm.stat_interval at or above which the audit finds no fault: the real-time profiles' 10 s. */
#define AUDIT_VMSTAT_INTERVAL_S 10

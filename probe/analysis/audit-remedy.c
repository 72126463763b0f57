/* The audit's knowledge applied to one cause of interruptions: what lets a given IRQ, task,
 * work item, timer or vector onto a probed CPU, and the fix that moves it away, worded by the
 * audit's own fix builders (audit.c). Tasks are named by pid only when the pid is proven to be
 * the task that was seen (its start time against the interruption's). */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <unistd.h>

#include "audit-private.h"
#include "util.h"

/* A task's name in the trace is "comm:pid", cut to this many bytes (CAUSE_NAME_MAX - 1): a
 * name this long may be a prefix of the real one. */
#define TRACE_NAME_MAX 31

typedef struct Remedy {
        Fix fix;
        StrBuf what;
        /* tasks */
        int pid;
        const char *identity;
} Remedy;

static void remedy_done(Remedy *r)
{
        audit_fix_done(&r->fix);
        strbuf_done(&r->what);
}

/* The first probed CPU the cause took: the one its texts name. */
static int first_cpu(const AuditCause *c)
{
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (CPU_ISSET(cpu, &c->cpus)) {
                        return cpu;
                }
        }
        return -1;
}

/* The fix of a cause that any task landing on the CPU brings: isolate the CPU from the
 * scheduler, when it is not. */
static void fix_not_isolated(const Audit *a, int cpu, Fix *f)
{
        if (audit_domain_isolated(a, cpu)) {
                sb_sentence(&f->note,
                            "CPU %d is isolated from the scheduler already: what runs "
                            "here was placed here on purpose (its affinity) or is the "
                            "kernel's own work for this CPU.",
                            cpu);
                return;
        }
        sb_printf(&f->setting,
                  "CPU %d is not isolated: the scheduler places tasks on it and "
                  "balances load onto it.",
                  cpu);
        audit_fix_isolcpus(a, f);
}

/* ---- IRQs ---- */

/* Whether the IRQ's handler names (comma-separated) hold @name; a name as long as the trace
 * keeps may have been cut, and matches as a prefix. */
static bool irq_named(const AuditIrq *irq, const char *name)
{
        size_t len = strlen(name);

        for (const char *p = irq->name; *p;) {
                size_t n = strcspn(p, ",");

                if ((n == len || (len >= TRACE_NAME_MAX && n > len)) &&
                    strncmp(p, name, len) == 0) {
                        return true;
                }
                p += n + (p[n] == ',');
        }
        return false;
}

static const AuditIrq *irq_by_number(const Audit *a, unsigned number)
{
        for (size_t i = 0; i < a->n_irqs; i++) {
                if (a->irqs[i].number == number) {
                        return &a->irqs[i];
                }
        }
        return NULL;
}

/* The remedy for IRQ @irq delivered to @cpu. */
static void remedy_one_irq(const Audit *a, const AuditIrq *irq, int cpu, Remedy *r)
{
        IrqHere here = irq_here(irq, cpu);

        sb_printf(&r->fix.setting,
                  "IRQ %u (%s) may be delivered to CPU %d: its "
                  "smp_affinity_list is ",
                  irq->number, irq->name, cpu);
        sb_cpulist(&r->fix.setting, &irq->affinity, "empty");
        if (irq->has_effective) {
                sb_printf(&r->fix.setting, " (effective ");
                sb_cpulist(&r->fix.setting, &irq->effective, "none");
                sb_printf(&r->fix.setting, ")");
        }
        if (here == IRQ_UNMOVABLE) {
                sb_printf(&r->fix.setting, "; it is a managed or per-CPU interrupt, which the "
                                           "kernel places and user space cannot move.");
                audit_fix_managed_irq(a, &r->fix);
        } else if (here == IRQ_MOVABLE) {
                sb_printf(&r->fix.setting, ".");
                audit_fix_irqs(a, &irq, 1, &r->fix);
        } else {
                sb_printf(&r->fix.setting, ".");
                r->fix.check = "irq_affinity";
                sb_sentence(&r->fix.note,
                            "Its affinity keeps it off CPU %d now: it was moved "
                            "after it was seen there.",
                            cpu);
        }
}

static int remedy_irq(Audit *a, const AuditCause *c, Remedy *r)
{
        int cpu = first_cpu(c);
        const AuditIrq *found = NULL;

        for (size_t i = 0; i < a->n_irqs && !found; i++) {
                if (irq_named(&a->irqs[i], c->name)) {
                        found = &a->irqs[i];
                }
        }
        if (!found) {
                sb_printf(&r->what, "irq %s", c->name);
                r->fix.check = "irq_affinity";
                sb_sentence(&r->fix.note, "No IRQ with this handler is in /proc/irq now (the "
                                          "device or its driver is gone): no fix is known.");
                return 0;
        }
        sb_printf(&r->what, "irq %u %s", found->number, c->name);
        remedy_one_irq(a, found, cpu, r);
        return 0;
}

/* The movable IRQs allowed on @cpu, whose softirq work follows them there. */
static int fix_irqs_here(const Audit *a, int cpu, Fix *f)
{
        size_t n;
        _cleanup_free_ const AuditIrq **irqs = movable_irqs(a, cpu, &n);

        if (!irqs) {
                return -ENOMEM;
        }
        if (n == 0) {
                sb_sentence(&f->note,
                            "No movable IRQ is allowed on CPU %d: what raises it here is "
                            "a managed interrupt or this CPU's own work.",
                            cpu);
                return 0;
        }
        sb_printf(&f->setting,
                  "%zu movable IRQ%s may be delivered to CPU %d, and the softirq "
                  "work each raises runs where it was raised.",
                  n, n == 1 ? "" : "s", cpu);
        audit_fix_irqs(a, irqs, n, f);
        return 0;
}

/* ---- tasks ---- */

/* Whether task @t, at its pid now, is the task of @c: "checked" when it surely started
 * before the interruption (or before the window, when the interruption's time is not known),
 * "reused" when it surely started after it, else "unchecked". The start time is in clock
 * ticks, so the task started somewhere within [ticks, ticks + 1). */
static const char *task_identity(const AuditTask *t, const AuditCause *c)
{
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t tick_ns = hz > 0 ? NSEC_PER_SEC / (uint64_t)hz : 10000000ULL;
        uint64_t lo = t->start_ticks * tick_ns, hi = lo + tick_ns;

        if (c->last_seen_ns && lo > c->last_seen_ns) {
                return "reused";
        }
        if (c->last_seen_ns && hi <= c->last_seen_ns) {
                return "checked";
        }
        if (c->window_start_ns && hi <= c->window_start_ns) {
                return "checked";
        }
        return "unchecked";
}

static const AuditKthread *kthread_by_pid(const Audit *a, int pid)
{
        for (size_t i = 0; i < a->n_kthreads; i++) {
                if (a->kthreads[i].pid == pid) {
                        return &a->kthreads[i];
                }
        }
        return NULL;
}

/* A kernel thread: movable ones move with taskset; unbound kworkers follow the workqueue
 * cpumask, IRQ threads their interrupt; per-CPU ones cannot move. */
static void remedy_kthread(const Audit *a, const AuditKthread *k, int cpu, Remedy *r)
{
        const AuditKthread *one = k;
        unsigned irq;

        switch (kthread_kind(k, cpu)) {
        case KTHREAD_MOVABLE:
                sb_printf(&r->fix.setting, "Kernel thread %s may run on CPU %d: its affinity is ",
                          k->comm, cpu);
                sb_cpulist(&r->fix.setting, &k->allowed, "empty");
                sb_printf(&r->fix.setting, ".");
                audit_fix_kthreads(a, &one, 1, &r->fix);
                return;
        case KTHREAD_FOLLOWER:
                if (sscanf(k->comm, "irq/%u-", &irq) == 1 && irq_by_number(a, irq)) {
                        remedy_one_irq(a, irq_by_number(a, irq), cpu, r);
                        return;
                }
                sb_printf(&r->fix.setting,
                          "%s is an unbound kworker: it runs where the "
                          "workqueue cpumask (%s) lets it.",
                          k->comm, a->workqueue_error == 0 ? a->facts->workqueue : "unknown");
                audit_fix_workqueue(a, &r->fix);
                return;
        case KTHREAD_PER_CPU:
                r->fix.check = "kthreads";
                sb_printf(&r->fix.setting, "%s is a per-CPU kernel thread of CPU %d.", k->comm,
                          cpu);
                sb_sentence(&r->fix.note, "It does this CPU's own work (its work items and "
                                          "softirqs are named on their own) and cannot be moved: "
                                          "no fix is known for the thread itself.");
                return;
        case KTHREAD_ELSEWHERE:
        default:
                r->fix.check = "kthreads";
                sb_sentence(&r->fix.note, "Its affinity (");
                sb_cpulist(&r->fix.note, &k->allowed, "empty");
                sb_printf(&r->fix.note, ") keeps it off CPU %d now.", cpu);
                return;
        }
}

/* A user task that is the one seen: its affinity (or its cpuset) lets it onto the CPU. */
static void remedy_user_task(const Audit *a, const AuditTask *t, int pid, int cpu, Remedy *r)
{
        char unit[256], cpuset[1024];
        bool have_unit = a->facts->task_unit(a->facts, pid, unit, sizeof(unit));
        cpu_set_t hk, set;

        if (!t->have_allowed || !CPU_ISSET(cpu, &t->allowed)) {
                r->fix.check = "isolcpus";
                sb_sentence(&r->fix.note, "Its affinity (");
                if (t->have_allowed) {
                        sb_cpulist(&r->fix.note, &t->allowed, "empty");
                } else {
                        sb_printf(&r->fix.note, "unknown");
                }
                sb_printf(&r->fix.note, ") keeps it off CPU %d now.", cpu);
                return;
        }
        sb_printf(&r->fix.setting, "Its CPU affinity (Cpus_allowed_list ");
        sb_cpulist(&r->fix.setting, &t->allowed, "");
        sb_printf(&r->fix.setting, ") allows CPU %d%s%s.", cpu, have_unit ? "; it runs in " : "",
                  have_unit ? unit : "");
        audit_fix_task(a, pid, &t->allowed, have_unit ? unit : NULL, &r->fix);
        if (audit_housekeeping(a, &hk) == 0 &&
            a->facts->task_cpuset(a->facts, pid, cpuset, sizeof(cpuset), &set)) {
                CPU_AND(&hk, &hk, &set);
                if (CPU_COUNT(&hk) == 0) {
                        sb_sentence(&r->fix.note, "Its cpuset %s holds no housekeeping CPU (",
                                    cpuset);
                        sb_cpulist(&r->fix.note, &set, "");
                        sb_printf(&r->fix.note, "): taskset is refused (Invalid argument) until "
                                                "the task is in a cpuset that holds one.");
                }
        }
}

/* The task of @c is gone, or its pid now belongs to another: no command names the pid. */
static void remedy_task_gone(const Audit *a, const char *comm, const AuditTask *now, int cpu,
                             Remedy *r)
{
        /* The pid is not shown: it would name another task, or one that cannot be told. */
        if (strcmp(r->identity, "exited") == 0) {
                sb_printf(&r->what, "task %s (exited)", comm);
                sb_sentence(&r->fix.note, "The task has exited; no command can name it.");
        } else if (strcmp(r->identity, "reused") == 0) {
                sb_printf(&r->what, "task %s (exited, pid reused)", comm);
                sb_sentence(&r->fix.note,
                            "Its pid now belongs to %s, which started after the "
                            "interruption: the task seen has exited, and no command "
                            "names the pid.",
                            now->comm);
        } else {
                sb_printf(&r->what, "task %s (pid not checked)", comm);
                sb_sentence(&r->fix.note,
                            "Whether the task now at its pid (%s) is the one seen "
                            "cannot be told from its start time, so no command "
                            "names the pid.",
                            now->comm);
        }
        sb_sentence(&r->fix.note, "Whatever starts it again may land on CPU %d.", cpu);
        fix_not_isolated(a, cpu, &r->fix);
}

static int remedy_task(Audit *a, const AuditCause *c, Remedy *r)
{
        const char *colon = strrchr(c->name, ':');
        int cpu = first_cpu(c), pid, e;
        char comm[64], *end;
        AuditTask now = {0};
        long v;

        errno = 0;
        v = colon ? strtol(colon + 1, &end, 10) : -1;
        if (!colon || errno || *end || v <= 0 || v > INT_MAX) {
                return -EINVAL;
        }
        pid = (int)v;
        r->pid = pid;
        snprintf(comm, sizeof(comm), "%.*s", (int)(colon - c->name), c->name);
        /* A task whose /proc entry cannot be read (hidepid, a malformed stat) cannot be
         * checked. */
        e = a->facts->task_read ? a->facts->task_read(a->facts, pid, &now) : -ENODATA;
        if (e == -ENOENT) {
                r->identity = "exited";
        } else if (e < 0) {
                r->identity = "unchecked";
                snprintf(now.comm, sizeof(now.comm), "unreadable");
        } else {
                r->identity = task_identity(&now, c);
        }
        if (strcmp(r->identity, "checked") != 0) {
                r->pid = 0;
                remedy_task_gone(a, comm, &now, cpu, r);
                return 0;
        }
        sb_printf(&r->what, "task %s:%d", comm, pid);
        if (now.flags & PF_KTHREAD) {
                const AuditKthread *k = kthread_by_pid(a, pid);
                AuditKthread fresh = {.pid = pid, .flags = now.flags, .allowed = now.allowed};

                snprintf(fresh.comm, sizeof(fresh.comm), "%s", now.comm);
                remedy_kthread(a, k ? k : &fresh, cpu, r);
        } else {
                remedy_user_task(a, &now, pid, cpu, r);
        }
        return 0;
}

/* ---- named contexts: vectors, softirqs, timers, work items, IPIs ---- */

typedef int (*NamedRemedy)(Audit *a, int cpu, Remedy *r);

static int remedy_tick(Audit *a, int cpu, Remedy *r)
{
        sb_printf(&r->fix.setting, "The periodic scheduler tick runs on CPU %d", cpu);
        switch (audit_nohz_state(a, cpu)) {
        case NOHZ_ACTIVE:
                sb_printf(&r->fix.setting, " only as the 1 Hz residual tick of nohz_full.");
                break;
        case NOHZ_NOT_STARTED:
                sb_printf(&r->fix.setting, ": nohz_full is requested but did not start.");
                break;
        case NOHZ_UNSUPPORTED:
                sb_printf(&r->fix.setting, ": this kernel has no nohz_full.");
                break;
        case NOHZ_OFF:
                sb_printf(&r->fix.setting, ": it is not in nohz_full= on the kernel command line.");
                break;
        case NOHZ_UNKNOWN:
        default:
                sb_printf(&r->fix.setting, ".");
                break;
        }
        audit_fix_nohz_full(a, cpu, &r->fix);
        return 0;
}

static int remedy_timer_migration(Audit *a, int cpu, Remedy *r)
{
        long v = a->facts->timer_migration.value;

        if (a->facts->timer_migration.value_error == 0 && v != 0) {
                sb_printf(&r->fix.setting,
                          "kernel.timer_migration=%ld: the timers of idle CPUs "
                          "are expired by a busy one, and CPU %d, always busy "
                          "with its loop, takes them.",
                          v, cpu);
                audit_fix_sysctl(a, "timer_migration", "kernel.timer_migration", "0", &r->fix);
                return 0;
        }
        r->fix.check = "timer_migration";
        sb_sentence(&r->fix.note,
                    "Timers armed on CPU %d expire there (timer migration is off): "
                    "they go with what arms them; no fix is known for the softirq "
                    "itself.",
                    cpu);
        return 0;
}

static int remedy_rcu(Audit *a, int cpu, Remedy *r)
{
        static const char *const settings[] = {
                [RCU_OFFLOADED_POLLED] = "RCU callbacks are offloaded and polled; what is left is "
                                         "this CPU's part of the grace periods.",
                [RCU_OFFLOADED] = "RCU callbacks are offloaded, but CPU %d wakes its rcuo "
                                  "kthreads.",
                [RCU_LOCAL] = "RCU callbacks queued on CPU %d run on it: it is not in rcu_nocbs=.",
                [RCU_UNKNOWN] = "Whether RCU callbacks are offloaded from CPU %d is unknown.",
        };

        sb_printf(&r->fix.setting, settings[audit_rcu_state(a, cpu)], cpu);
        audit_fix_rcu_nocbs(a, cpu, &r->fix);
        return 0;
}

static int remedy_scheduler(Audit *a, int cpu, Remedy *r)
{
        fix_not_isolated(a, cpu, &r->fix);
        return 0;
}

static int remedy_device_softirq(Audit *a, int cpu, Remedy *r)
{
        return fix_irqs_here(a, cpu, &r->fix);
}

static int remedy_watchdog(Audit *a, int cpu, Remedy *r)
{
        const char *text = a->facts->watchdog_cpumask.text;

        if (a->facts->watchdog_cpumask.error < 0) {
                sb_sentence(&r->fix.note, "The soft-lockup watchdog's timer; its CPU mask "
                                          "(kernel.watchdog_cpumask) is not readable here.");
                return 0;
        }
        sb_printf(&r->fix.setting,
                  "kernel.watchdog_cpumask=%s runs the soft-lockup watchdog's "
                  "timer on CPU %d.",
                  text, cpu);
        audit_fix_watchdog(a, &r->fix);
        return 0;
}

static int remedy_rt_period(Audit *a, int cpu, Remedy *r)
{
        if (a->facts->rt_runtime.error == 0 && strcmp(a->facts->rt_runtime.text, "-1") == 0) {
                r->fix.check = "rt_throttling";
                sb_sentence(&r->fix.note, "RT throttling is off now: the timer ran before it was "
                                          "turned off; nothing is left to do.");
                return 0;
        }
        sb_printf(&r->fix.setting,
                  "RT throttling (kernel.sched_rt_runtime_us) keeps a timer "
                  "on CPU %d while real-time tasks run there.",
                  cpu);
        audit_fix_sysctl(a, "rt_throttling", "kernel.sched_rt_runtime_us", "-1", &r->fix);
        return 0;
}

static int remedy_vmstat(Audit *a, int cpu, Remedy *r)
{
        char value[16];
        long v = a->facts->stat_interval.value_error == 0 ? a->facts->stat_interval.value : 0;

        if (a->facts->stat_interval.value_error == 0 && v < AUDIT_VMSTAT_INTERVAL_S) {
                sb_printf(&r->fix.setting,
                          "vm.stat_interval=%ld: every %ld s, CPU %d folds "
                          "its memory counters in a kworker when they changed.",
                          v, v, cpu);
                snprintf(value, sizeof(value), "%d", AUDIT_VMSTAT_INTERVAL_S);
                audit_fix_sysctl(a, "vmstat", "vm.stat_interval", value, &r->fix);
                return 0;
        }
        r->fix.check = "vmstat";
        sb_sentence(&r->fix.note,
                    "vm.stat_interval is %ld s already: what is left runs when this "
                    "CPU's own work changes its memory counters; no further fix is "
                    "known.",
                    v);
        return 0;
}

/* What follows a task: it goes when the task goes. */
static int remedy_with_task(Audit *a, int cpu, Remedy *r)
{
        (void)a;
        sb_sentence(&r->fix.note,
                    "It is armed or raised for a task that runs on CPU %d, and goes "
                    "with the task (named on its own): no fix of its own.",
                    cpu);
        return 0;
}

/* Sent from other CPUs' code: nothing on this CPU's side stops it. */
static int remedy_from_elsewhere(Audit *a, int cpu, Remedy *r)
{
        (void)a;
        sb_sentence(&r->fix.note,
                    "Other CPUs send it to CPU %d for their own code (a TLB "
                    "shootdown, a function call on every CPU); no setting keeps it "
                    "off: no fix is known.",
                    cpu);
        return 0;
}

typedef struct NamedEntry {
        const char *kind;
        const char *name;
        NamedRemedy remedy;
} NamedEntry;

/* What the audit knows by name. A cause not listed has no known fix. */
static const NamedEntry named[] = {
        {"vector", "local_timer", remedy_tick},
        {"vector", "reschedule", remedy_scheduler},
        {"vector", "call_function", remedy_from_elsewhere},
        {"vector", "call_function_single", remedy_from_elsewhere},
        {"softirq", "TIMER", remedy_timer_migration},
        {"softirq", "HRTIMER", remedy_timer_migration},
        {"softirq", "RCU", remedy_rcu},
        {"softirq", "SCHED", remedy_scheduler},
        {"softirq", "NET_RX", remedy_device_softirq},
        {"softirq", "NET_TX", remedy_device_softirq},
        {"softirq", "BLOCK", remedy_device_softirq},
        {"softirq", "IRQ_POLL", remedy_device_softirq},
        {"softirq", "TASKLET", remedy_device_softirq},
        {"softirq", "HI", remedy_device_softirq},
        {"timer", "tick_nohz_handler", remedy_tick},
        {"timer", "tick_sched_timer", remedy_tick},
        {"timer", "tick_handle_periodic", remedy_tick},
        {"timer", "watchdog_timer_fn", remedy_watchdog},
        {"timer", "sched_rt_period_timer", remedy_rt_period},
        {"timer", "hrtimer_wakeup", remedy_with_task},
        {"timer", "it_real_fn", remedy_with_task},
        {"timer", "posix_timer_fn", remedy_with_task},
        {"timer", "timerfd_tmrproc", remedy_with_task},
        {"work", "vmstat_update", remedy_vmstat},
        {"work", "vmstat_shepherd", remedy_vmstat},
        {"ipi", "flush_tlb_func", remedy_from_elsewhere},
};

/* A work item the audit does not know by name: an unbound kworker ran it where the workqueue
 * cpumask allows, a bound one because it was queued for this CPU. */
static int remedy_work(Audit *a, const AuditCause *c, int cpu, Remedy *r)
{
        const char *w = c->worker;

        if (w && strncmp(w, "kworker/u", strlen("kworker/u")) == 0) {
                sb_printf(&r->fix.setting,
                          "It ran in the unbound kworker %s, which the workqueue "
                          "cpumask (%s) lets run on CPU %d.",
                          w, a->workqueue_error == 0 ? a->facts->workqueue : "unknown", cpu);
                audit_fix_workqueue(a, &r->fix);
                return 0;
        }
        r->fix.check = "workqueue";
        if (w && strncmp(w, "kworker/", strlen("kworker/")) == 0) {
                sb_printf(&r->fix.setting,
                          "It ran in %s, a kworker bound to CPU %d: it was "
                          "queued for this CPU.",
                          w, cpu);
                sb_sentence(&r->fix.note, "No setting keeps work queued for a CPU off it: no fix "
                                          "is known.");
                return 0;
        }
        sb_sentence(&r->fix.note,
                    "No fix is known for it by name. If it runs in an unbound "
                    "kworker (kworker/uN:M), the workqueue cpumask keeps it off CPU "
                    "%d; work queued for this CPU cannot be moved.",
                    cpu);
        return 0;
}

static int remedy_named(Audit *a, const AuditCause *c, Remedy *r)
{
        int cpu = first_cpu(c);

        sb_printf(&r->what, "%s %s", c->kind, c->name);
        for (size_t i = 0; i < ELEMENTSOF(named); i++) {
                if (strcmp(named[i].kind, c->kind) == 0 && strcmp(named[i].name, c->name) == 0) {
                        return named[i].remedy(a, cpu, r);
                }
        }
        if (strcmp(c->kind, "work") == 0) {
                return remedy_work(a, c, cpu, r);
        }
        sb_sentence(&r->fix.note, "No fix is known for it.");
        return 0;
}

/* Time no kernel record covers: on a virtual machine the host took the CPU. */
static int remedy_no_record(Audit *a, const AuditCause *c, Remedy *r)
{
        int cpu = first_cpu(c);

        if (audit_is_virtual(a)) {
                sb_printf(&r->what, "hypervisor");
                r->fix.when = FIX_HOST;
                sb_printf(&r->fix.setting,
                          "CPU %d is a virtual CPU: the host takes it away for "
                          "its own work, other guests or to emulate what this "
                          "guest asked for, and no record of this kernel "
                          "covers that time.",
                          cpu);
                sb_printf(&r->fix.ask_host,
                          "Ask the host for a dedicated physical CPU for this vCPU (pinned, "
                          "e.g. libvirt <vcpupin>), isolated on the host (isolcpus=, nohz_full= "
                          "and its IRQs elsewhere) with its SMT sibling idle, and for the "
                          "emulator and I/O threads on other CPUs; steal time (/proc/stat) "
                          "shows how much the host takes.");
                sb_sentence(&r->fix.note, "Nothing in this guest changes it.");
                return 0;
        }
        sb_printf(&r->what, "hardware or firmware");
        sb_printf(&r->fix.setting,
                  "No kernel record covers this time on CPU %d: the hardware "
                  "or the firmware (system management interrupts) took it.",
                  cpu);
        sb_sentence(&r->fix.note, "No fix from the operating system is known: the SMI count "
                                  "(MSR 0x34) tells whether SMIs took it, and only firmware "
                                  "settings change them.");
        return 0;
}

static int remedy_unexplained(Audit *a, const AuditCause *c, Remedy *r)
{
        (void)a;
        (void)c;
        sb_printf(&r->what, "unexplained");
        sb_sentence(&r->fix.note, "Time the trace covers but no rule explains (lost records "
                                  "included): no fix is known.");
        return 0;
}

static int remedy_other(Audit *a, const AuditCause *c, Remedy *r)
{
        (void)a;
        (void)c;
        sb_printf(&r->what, "other causes");
        sb_sentence(&r->fix.note, "Causes beyond those kept per interruption, whose names are not "
                                  "kept: no fix is known.");
        return 0;
}

typedef int (*KindRemedy)(Audit *a, const AuditCause *c, Remedy *r);

static const struct {
        const char *kind;
        KindRemedy remedy;
} kinds[] = {
        {"irq", remedy_irq},
        {"task", remedy_task},
        {"vector", remedy_named},
        {"softirq", remedy_named},
        {"timer", remedy_named},
        {"work", remedy_named},
        {"ipi", remedy_named},
        {"no_record", remedy_no_record},
        {"unexplained", remedy_unexplained},
        {"other", remedy_other},
};

/* A part of the remedy: its text, or null when it is empty. */
static json_t *text_or_null(const StrBuf *sb)
{
        return sb->len > 0 ? json_string(sb_str(sb)) : json_null();
}

static int remedy_json(const Remedy *r, json_t **ret)
{
        const Fix *f = &r->fix;
        json_t *o;

        if (audit_fix_oom(f) || r->what.oom) {
                return -ENOMEM;
        }
        o = json_pack("{s:s, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o}", "what", sb_str(&r->what),
                      "check", f->check ? json_string(f->check) : json_null(), "setting",
                      text_or_null(&f->setting), "when", audit_fix_when_name(f->when), "command",
                      text_or_null(&f->command), "persist", text_or_null(&f->persist), "revert",
                      text_or_null(&f->revert), "note", text_or_null(&f->note), "ask_host",
                      text_or_null(&f->ask_host));
        if (o && r->identity &&
            (json_object_set_new(o, "identity", json_string(r->identity)) < 0 ||
             json_object_set_new(o, "pid", r->pid > 0 ? json_integer(r->pid) : json_null()) < 0)) {
                json_decref(o);
                o = NULL;
        }
        if (!o) {
                return -ENOMEM;
        }
        *ret = o;
        return 0;
}

int audit_remedy(Audit *a, const AuditCause *cause, json_t **ret)
{
        __attribute__((cleanup(remedy_done))) Remedy r = {0};
        int e;

        if (!a || !cause || !cause->kind || !cause->name || !ret || first_cpu(cause) < 0) {
                return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                if (strcmp(kinds[i].kind, cause->kind) != 0) {
                        continue;
                }
                e = kinds[i].remedy(a, cause, &r);
                if (e < 0) {
                        return e;
                }
                /* Every fix that is run has its command, and only those. */
                assert((r.fix.when == FIX_NOW || r.fix.when == FIX_REBOOT) ==
                       (r.fix.command.len > 0 || r.fix.command.oom));
                return remedy_json(&r, ret);
        }
        return -EINVAL;
}

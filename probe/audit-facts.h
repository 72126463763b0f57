#pragma once

/* What the tuning audit knows of one host, for a set of probed CPUs: read below a root prefix
 * by host_audit_gather() (probe/host/host-audit.h), judged by the audit (probe/analysis/audit.h),
 * which reads nothing itself. Plain data, shared by the two layers.
 *
 * Each *_error field is 0 or the negative errno of the read, and what it guards is empty on
 * error. Texts are as the file holds them, trailing white space removed and unprintable bytes
 * replaced by '?': the audit parses what it judges. */

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Task flags from /proc/PID/stat (include/linux/sched.h); stable ABI for years. */
#define PF_KTHREAD 0x00200000u
#define PF_NO_SETAFFINITY 0x04000000u

#define AUDIT_CPUSETS_MAX 16
#define AUDIT_CPUSET_PATH_MAX 160

/* One IRQ of /proc/irq that can fire: it has an affinity and a handler. */
typedef struct AuditIrq {
        unsigned number;
        char name[96]; /* its handlers ("eth0-rx-0,eth0-tx-0"), else /proc/interrupts' action */
        cpu_set_t affinity;
        cpu_set_t effective;
        bool has_effective;
        bool unmovable; /* managed or per-CPU: the kernel refuses a new affinity */
} AuditIrq;

/* One kernel thread (PF_KTHREAD). */
typedef struct AuditKthread {
        int pid;
        char comm[64];
        unsigned flags;
        cpu_set_t allowed;
} AuditKthread;

/* One cpuidle state of a CPU. */
typedef struct AuditCState {
        long index; /* N of stateN */
        char name[32];
        long latency_us;
        bool disabled;
} AuditCState;

/* What is read of one probed CPU. */
typedef struct AuditCpu {
        int cpu;
        int siblings_error; /* topology/thread_siblings_list */
        cpu_set_t siblings;
        int governor_error; /* cpufreq/scaling_governor */
        char governor[64];
        int driver_error; /* cpufreq/scaling_driver */
        char driver[64];
        int cstates_error;    /* its cpuidle directory */
        AuditCState *cstates; /* sorted by index */
        size_t n_cstates;
} AuditCpu;

/* A cpuset that isolates CPUs at run time: a cgroup v1 shield or a v2 isolated partition (a
 * v2 path of "" stands for the root's cpuset.cpus.isolated). */
typedef struct AuditCpuset {
        bool v2;
        char path[AUDIT_CPUSET_PATH_MAX];
        cpu_set_t cpus;
} AuditCpuset;

/* What /proc/PID/stat and status say of a task now. */
typedef struct AuditTask {
        char comm[64];
        unsigned flags;
        uint64_t start_ticks; /* clock ticks after boot */
        int tgid;
        cpu_set_t allowed;
        bool have_allowed;
} AuditTask;

/* A sysctl of /proc/sys, and its value when it is a whole decimal number. */
typedef struct AuditSysctl {
        int error; /* of the read */
        char text[256];
        int value_error; /* 0, or -EINVAL when the text is no number */
        long value;
} AuditSysctl;

typedef struct AuditFacts AuditFacts;

struct AuditFacts {
        char root[PATH_MAX]; /* "" for the real system; never ends in '/' */
        cpu_set_t cpus;      /* the probed CPUs */

        int possible_error;
        cpu_set_t possible;
        int online_error;
        cpu_set_t online;
        int isolated_error; /* /sys/devices/system/cpu/isolated */
        cpu_set_t isolated;
        int nohz_full_error; /* the running kernel's nohz_full mask */
        cpu_set_t nohz_full;
        int cmdline_error;
        char *cmdline; /* /proc/cmdline */
        int workqueue_error;
        char workqueue[256]; /* the unbound workqueues' cpumask, as the kernel prints it */

        /* The run-time isolation (cgroup v1 shields, v2 isolated partitions). */
        int cpuset_v1_error; /* -ENOENT: no such hierarchy */
        int cpuset_v2_error;
        char cpuset_v1_mount[AUDIT_CPUSET_PATH_MAX];
        char cpuset_v2_mount[AUDIT_CPUSET_PATH_MAX];
        AuditCpuset cpusets[AUDIT_CPUSETS_MAX];
        size_t n_cpusets;
        cpu_set_t cpuset_isolated; /* every CPU isolated at run time */
        cpu_set_t shielded_v1;     /* not isolated at boot, and in a v1 shield */
        cpu_set_t partitioned_v2;  /* not isolated at boot, and in a v2 partition */

        int irqs_error;
        AuditIrq *irqs; /* sorted by number */
        size_t n_irqs;
        int default_affinity_error;
        char default_affinity[256]; /* /proc/irq/default_smp_affinity */

        int kthreads_error;
        AuditKthread *kthreads; /* sorted by pid */
        size_t n_kthreads;

        AuditCpu *cpu; /* one per probed CPU, by number */
        size_t n_cpu;
        int smt_control_error;
        char smt_control[64];
        int idle_driver_error;
        char idle_driver[64]; /* cpuidle/current_driver */

        AuditSysctl rt_runtime; /* kernel.sched_rt_runtime_us */
        AuditSysctl rt_period;  /* read only when the runtime was */
        int clocksource_error;
        char clocksource[64];
        int clocksources_error;
        char clocksources[512]; /* the available ones */
        AuditSysctl timer_migration;
        AuditSysctl stat_interval; /* vm.stat_interval */

        /* Read for the remedies only (HOST_AUDIT_REMEDIES). */
        AuditSysctl watchdog_cpumask;
        bool is_virtual; /* the CPU's hypervisor flag, or /sys/hypervisor/type */

        /* The remedy of a single task needs /proc/PID of a pid named only then: these read it
         * below the same root. task_read() returns 0, -ENOENT when the task is gone, or another
         * negative errno (-EINVAL for a malformed stat). task_unit() stores its systemd service
         * ("foo.service"; only names fit for a command) and returns whether it has one.
         * task_cpuset() stores the path of its cpuset and that cpuset's CPUs, and returns
         * whether they could be read. NULL when not gathered for remedies. */
        int (*task_read)(const AuditFacts *f, int pid, AuditTask *ret);
        bool (*task_unit)(const AuditFacts *f, int pid, char *buf, size_t size);
        bool (*task_cpuset)(const AuditFacts *f, int pid, char *path, size_t size, cpu_set_t *ret);
};

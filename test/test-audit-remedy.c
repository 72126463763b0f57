/* Unit tests of audit_remedy(): for each kind of cause, on the fixture trees of test/audit/
 * (see its README), the setting and the exact commands the tree calls for, written here from
 * the tree's files; a task's pid against its start time; and that a finding's fix and a
 * remedy's command are the same text. CPU 1 is probed: CPUs 2-3 are isolated in these trees,
 * so the housekeeping CPU is 0. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <unistd.h>

#include "audit-fixture.h"
#include "audit-internal.h"
#include "cpulist.h"
#include "host-audit.h"
#include "util.h"

typedef struct Fixture {
        char root[PATH_MAX];
        bool loaded; /* base/ is in root */
        AuditFacts *facts;
        Audit *audit;
        json_t *remedy;
} Fixture;

static int setup(void **state)
{
        Fixture *f = calloc(1, sizeof(*f));

        if (!f || fixture_tree_make(f->root) < 0) {
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;

        json_decref(f->remedy);
        audit_freep(&f->audit);
        host_audit_freep(&f->facts);
        remove_tree(f->root);
        free(f);
        return 0;
}

/* Reads the host below the fixture's root for the probed CPUs @set, as jitterctl doctor does. */
static void read_host(Fixture *f, const cpu_set_t *set)
{
        audit_freep(&f->audit);
        host_audit_freep(&f->facts);
        assert_int_equal(host_audit_gather(f->root, set, HOST_AUDIT_REMEDIES, &f->facts), 0);
        assert_int_equal(audit_new(f->facts, NULL, &f->audit), 0);
}

/* Reads the tree (base/ with @overlay over it and over those laid before: each overlay
 * changes other files) as the host of probed CPUs @cpus. */
static void host(Fixture *f, const char *overlay, const char *cpus)
{
        cpu_set_t set;

        if (!f->loaded) {
                fixture_tree_load(f->root, NULL);
                f->loaded = true;
        }
        if (overlay) {
                fixture_tree_overlay(f->root, overlay);
        }
        assert_int_equal(cpulist_parse(cpus, &set), 0);
        read_host(f, &set);
}

/* A clock tick of /proc/PID/stat's start time, in ns. */
static uint64_t tick_ns(void)
{
        return 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK);
}

/* The remedy of (@kind, @name) on CPU @cpu, the task last seen at @last_seen_ns. */
static json_t *remedy_seen(Fixture *f, const char *kind, const char *name, int cpu,
                           uint64_t last_seen_ns, uint64_t window_start_ns, const char *worker)
{
        AuditCause c = {.kind = kind,
                        .name = name,
                        .last_seen_ns = last_seen_ns,
                        .window_start_ns = window_start_ns,
                        .worker = worker};

        CPU_ZERO(&c.cpus);
        CPU_SET(cpu, &c.cpus);
        json_decref(f->remedy);
        f->remedy = NULL;
        assert_int_equal(audit_remedy(f->audit, &c, &f->remedy), 0);
        assert_non_null(f->remedy);
        return f->remedy;
}

static json_t *remedy(Fixture *f, const char *kind, const char *name, int cpu)
{
        return remedy_seen(f, kind, name, cpu, 0, 0, NULL);
}

static const char *str(json_t *r, const char *key)
{
        return json_string_value(json_object_get(r, key));
}

/* @key of @r is @want exactly (NULL: null). */
static void is(json_t *r, const char *key, const char *want)
{
        const char *got = str(r, key);

        if (want ? !got || strcmp(got, want) != 0 : got != NULL) {
                char *dump = json_dumps(r, JSON_INDENT(2));

                print_error("\"%s\" is not \"%s\":\n%s\n", key, want ? want : "(null)", dump);
                free(dump);
                fail();
        }
}

/* @key of @r contains @part. */
static void has(json_t *r, const char *key, const char *part)
{
        const char *got = str(r, key);

        if (!got || !strstr(got, part)) {
                char *dump = json_dumps(r, JSON_INDENT(2));

                print_error("\"%s\" does not contain \"%s\":\n%s\n", key, part, dump);
                free(dump);
                fail();
        }
}

/* Every remedy's invariants: a command exactly when it is run now or at boot; a note when no
 * fix is known; what to ask the host exactly when only the host can. */
static void well_formed(json_t *r)
{
        const char *when = str(r, "when");

        assert_non_null(when);
        assert_non_null(str(r, "what"));
        assert_int_equal(str(r, "command") != NULL,
                         strcmp(when, "now") == 0 || strcmp(when, "reboot") == 0);
        assert_int_equal(str(r, "ask_host") != NULL, strcmp(when, "host") == 0);
        if (strcmp(when, "none") == 0) {
                assert_non_null(str(r, "note"));
        }
}

static void reread(Fixture *f, const char *cpus)
{
        cpu_set_t set;

        assert_int_equal(cpulist_parse(cpus, &set), 0);
        read_host(f, &set);
}

/* ---- IRQs ---- */

static void test_irq(void **state)
{
        Fixture *f = *state;
        json_t *r;

        /* IRQ 36 (virtio1-req.0): smp_affinity_list 0-1, effective 1, not managed. */
        host(f, NULL, "1");
        r = remedy(f, "irq", "virtio1-req.0", 1);
        well_formed(r);
        is(r, "what", "irq 36 virtio1-req.0");
        is(r, "check", "irq_affinity");
        is(r, "when", "now");
        is(r, "command", "echo 0 > /proc/irq/36/smp_affinity_list");
        is(r, "revert", "echo 0-1 > /proc/irq/36/smp_affinity_list");
        has(r, "setting", "smp_affinity_list is 0-1 (effective 1)");
        has(r, "persist", "irqaffinity=0 ");
        has(r, "persist", "IRQBALANCE_BANNED_CPULIST=1 ");
        /* The command line has isolcpus=managed_irq,domain,2-3: CPU 1 joins them. */
        has(r, "note", "isolcpus=managed_irq,domain,1-3");

        /* Its thread, as the trace names it (comm cut to 15 bytes): the IRQ's fix. */
        r = remedy_seen(f, "task", "irq/36-virtio1-:50", 1, 100 * 1000000000ULL, 0, NULL);
        well_formed(r);
        is(r, "what", "task irq/36-virtio1-:50");
        is(r, "command", "echo 0 > /proc/irq/36/smp_affinity_list");

        /* No such handler now. */
        r = remedy(f, "irq", "eth9-rx", 1);
        well_formed(r);
        is(r, "what", "irq eth9-rx");
        is(r, "when", "none");
        has(r, "note", "No IRQ with this handler");
}

static void test_irq_managed_and_long_names(void **state)
{
        Fixture *f = *state;
        cpu_set_t set;
        json_t *r;

        /* IRQ 50 (nvme0q1) is managed (debugfs): delivered to CPU 1, it cannot be moved. */
        fixture_tree_load(f->root, NULL);
        fixture_tree_put(f->root, "proc/irq/50/effective_affinity_list", "1");
        /* A handler name longer than the trace keeps (31 bytes). */
        fixture_tree_put(f->root, "proc/irq/60/smp_affinity_list", "0-1");
        fixture_tree_put(f->root, "proc/irq/60/a-very-long-handler-name-for-queue-7/.keep", "");
        assert_int_equal(cpulist_parse("1", &set), 0);
        read_host(f, &set);

        r = remedy(f, "irq", "nvme0q1", 1);
        well_formed(r);
        is(r, "what", "irq 50 nvme0q1");
        is(r, "when", "reboot");
        is(r, "command", "isolcpus=managed_irq,domain,1-3");
        is(r, "revert",
           "grubby --update-kernel=ALL --args=\"isolcpus=managed_irq,domain,2-3\", "
           "then reboot");
        has(r, "persist", "grubby --update-kernel=ALL --args=\"isolcpus=managed_irq,domain,1-3\"");
        has(r, "setting", "managed or per-CPU");

        /* The 31 bytes the trace keeps match as a prefix; a shorter name must match whole. */
        r = remedy(f, "irq", "a-very-long-handler-name-for-qu", 1);
        is(r, "what", "irq 60 a-very-long-handler-name-for-qu");
        is(r, "command", "echo 0 > /proc/irq/60/smp_affinity_list");
        r = remedy(f, "irq", "a-very-long-handler", 1);
        is(r, "when", "none");
}

/* ---- kernel threads ---- */

static void test_kthreads(void **state)
{
        Fixture *f = *state;
        uint64_t later = 100 * 1000000000ULL; /* well after their start (23 ticks) */
        json_t *r;

        host(f, NULL, "1");
        /* kswapd0 (45): movable, allowed on 0-1. */
        r = remedy_seen(f, "task", "kswapd0:45", 1, later, 0, NULL);
        well_formed(r);
        is(r, "what", "task kswapd0:45");
        is(r, "identity", "checked");
        is(r, "check", "kthreads");
        is(r, "command", "taskset -p -c 0 45");
        is(r, "revert", "taskset -p -c 0-1 45");
        has(r, "persist", "isolcpus=domain,1-3 nohz_full=1-3");
        /* Not allowed on CPU 2: nothing to move. */
        r = remedy_seen(f, "task", "kswapd0:45", 2, later, 0, NULL);
        well_formed(r);
        is(r, "when", "none");
        has(r, "note", "Its affinity (0-1) keeps it off CPU 2 now.");

        /* An unbound kworker (40) follows the workqueue cpumask (3). */
        r = remedy_seen(f, "task", "kworker/u8:1:40", 1, later, 0, NULL);
        well_formed(r);
        is(r, "check", "workqueue");
        is(r, "command", "echo 1 > /sys/devices/virtual/workqueue/cpumask");
        is(r, "revert", "echo 3 > /sys/devices/virtual/workqueue/cpumask");
        has(r, "persist", "w /sys/devices/virtual/workqueue/cpumask - - - - 1");

        /* An unbound kworker confined to CPU 1 by a cpumask of CPU 1 alone is still one. */
        fixture_tree_put(f->root, "proc/41/stat",
                         "41 (kworker/u8:2-flush-8:0) S 2 0 0 0 -1 69238880 0 0 0 0 0 0 0 0 20 0 "
                         "1 0 23 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0");
        fixture_tree_put(f->root, "proc/41/status",
                         "Name:\tkworker/u8:2\nTgid:\t41\n"
                         "Cpus_allowed_list:\t1");
        fixture_tree_put(f->root, "sys/devices/virtual/workqueue/cpumask", "2");
        reread(f, "1");
        r = remedy_seen(f, "task", "kworker/u8:2:41", 1, later, 0, NULL);
        well_formed(r);
        is(r, "check", "workqueue");
        is(r, "command", "echo 1 > /sys/devices/virtual/workqueue/cpumask");
        is(r, "revert", "echo 2 > /sys/devices/virtual/workqueue/cpumask");

        /* ksoftirqd/2 (22) is CPU 2's own. */
        r = remedy_seen(f, "task", "ksoftirqd/2:22", 2, later, 0, NULL);
        well_formed(r);
        is(r, "when", "none");
        has(r, "setting", "per-CPU kernel thread of CPU 2");
        has(r, "note", "cannot be moved");
}

/* ---- user tasks and their pids ---- */

/* Task 4242 (python3) of trader.service, started 5000 ticks after boot, allowed on @allowed. */
static void python_task(Fixture *f, const char *allowed)
{
        char status[256];

        fixture_tree_put(f->root, "proc/4242/stat",
                         "4242 (python3) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 "
                         "5000 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0");
        snprintf(status, sizeof(status),
                 "Name:\tpython3\nTgid:\t4242\nPid:\t4242\n"
                 "Cpus_allowed_list:\t%s",
                 allowed);
        fixture_tree_put(f->root, "proc/4242/status", status);
        fixture_tree_put(f->root, "proc/4242/cgroup", "0::/system.slice/trader.service");
}

/* The pid is nowhere in what is said of the task, nor in a command. */
static void pid_not_named(json_t *r)
{
        static const char *const keys[] = {"what", "command", "revert", "persist"};

        assert_true(json_is_null(json_object_get(r, "pid")));
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                assert_null(str(r, keys[i]) ? strstr(str(r, keys[i]), "4242") : NULL);
        }
}

static void test_task(void **state)
{
        Fixture *f = *state;
        uint64_t start = 5000 * tick_ns();
        json_t *r;

        fixture_tree_load(f->root, NULL);
        python_task(f, "0-3");
        reread(f, "1");

        /* Seen two ticks after it started: the same task. */
        r = remedy_seen(f, "task", "python3:4242", 1, start + 2 * tick_ns(), 0, NULL);
        well_formed(r);
        is(r, "what", "task python3:4242");
        is(r, "identity", "checked");
        assert_int_equal(json_integer_value(json_object_get(r, "pid")), 4242);
        is(r, "when", "now");
        is(r, "command", "taskset -p -c 0 4242");
        is(r, "revert", "taskset -p -c 0-3 4242");
        has(r, "setting", "Cpus_allowed_list 0-3) allows CPU 1; it runs in trader.service");
        has(r, "persist", "[Service] CPUAffinity=0");
        has(r, "persist", "systemctl set-property trader.service AllowedCPUs=0");

        /* Seen a nanosecond before it started: the pid was reused since. */
        r = remedy_seen(f, "task", "python3:4242", 1, start - 1, 0, NULL);
        well_formed(r);
        is(r, "identity", "reused");
        is(r, "what", "task python3 (exited, pid reused)");
        pid_not_named(r);
        has(r, "note", "started after the interruption");
        /* What brings such tasks: CPU 1 is not isolated. */
        is(r, "when", "reboot");
        is(r, "command", "isolcpus=managed_irq,domain,1-3");

        /* Within the clock tick it started in: cannot be told. */
        r = remedy_seen(f, "task", "python3:4242", 1, start + tick_ns() / 2, 0, NULL);
        is(r, "identity", "unchecked");
        is(r, "what", "task python3 (pid not checked)");
        pid_not_named(r);

        /* No interruption time: it counts when the task started before the whole window. */
        r = remedy_seen(f, "task", "python3:4242", 1, 0, start + tick_ns(), NULL);
        is(r, "identity", "checked");
        r = remedy_seen(f, "task", "python3:4242", 1, 0, start, NULL);
        is(r, "identity", "unchecked");
        r = remedy_seen(f, "task", "python3:4242", 1, 0, 0, NULL);
        is(r, "identity", "unchecked");

        /* Gone. */
        r = remedy_seen(f, "task", "python3:4243", 1, start, 0, NULL);
        well_formed(r);
        is(r, "identity", "exited");
        is(r, "what", "task python3 (exited)");
        assert_true(json_is_null(json_object_get(r, "pid")));

        /* A stat that cannot be read as one: the pid cannot be checked. */
        fixture_tree_put(f->root, "proc/4244/stat", "4244 (truncated");
        r = remedy_seen(f, "task", "python3:4244", 1, start + 2 * tick_ns(), 0, NULL);
        well_formed(r);
        is(r, "identity", "unchecked");
        assert_true(json_is_null(json_object_get(r, "pid")));

        /* Reused on an isolated CPU: nothing is known to do. */
        r = remedy_seen(f, "task", "python3:4242", 2, start - 1, 0, NULL);
        well_formed(r);
        is(r, "when", "none");
        has(r, "note", "isolated from the scheduler already");
}

static void test_task_affinity(void **state)
{
        Fixture *f = *state;
        uint64_t later = 5002 * tick_ns();
        json_t *r;

        /* Moved off CPU 1 since. */
        fixture_tree_load(f->root, NULL);
        python_task(f, "0");
        reread(f, "1");
        r = remedy_seen(f, "task", "python3:4242", 1, later, 0, NULL);
        well_formed(r);
        is(r, "when", "none");
        has(r, "note", "Its affinity (0) keeps it off CPU 1 now.");

        /* Pinned to CPU 1 in a cpuset of CPU 1 alone: taskset would be refused. */
        python_task(f, "1");
        fixture_tree_put(f->root, "proc/4242/cpuset", "/rt");
        fixture_tree_put(f->root, "sys/fs/cgroup/cpuset/cpuset.cpus", "0-3");
        fixture_tree_put(f->root, "sys/fs/cgroup/cpuset/cpuset.sched_load_balance", "1");
        fixture_tree_put(f->root, "sys/fs/cgroup/cpuset/rt/cpuset.cpus", "1");
        reread(f, "1");
        r = remedy_seen(f, "task", "python3:4242", 1, later, 0, NULL);
        well_formed(r);
        is(r, "command", "taskset -p -c 0 4242");
        is(r, "revert", "taskset -p -c 1 4242");
        has(r, "note", "Its cpuset /rt holds no housekeeping CPU (1)");
        /* In the root cpuset, taskset is enough. */
        fixture_tree_put(f->root, "proc/4242/cpuset", "/");
        r = remedy_seen(f, "task", "python3:4242", 1, later, 0, NULL);
        is(r, "command", "taskset -p -c 0 4242");
        assert_true(!str(r, "note") || !strstr(str(r, "note"), "holds no housekeeping CPU"));
}

/* ---- named contexts ---- */

static void test_tick_rcu_scheduler(void **state)
{
        Fixture *f = *state;
        json_t *r;

        /* nohz_full=2-3 on the command line and running there; CPU 1 is not in it. */
        host(f, NULL, "1-2");
        r = remedy(f, "vector", "local_timer", 1);
        well_formed(r);
        is(r, "check", "nohz_full");
        is(r, "when", "reboot");
        is(r, "command", "nohz_full=1-3");
        is(r, "revert", "grubby --update-kernel=ALL --args=\"nohz_full=2-3\", then reboot");
        has(r, "setting", "not in nohz_full=");
        r = remedy(f, "timer", "tick_nohz_handler", 1);
        is(r, "command", "nohz_full=1-3");
        r = remedy(f, "vector", "local_timer", 2);
        well_formed(r);
        is(r, "when", "none");
        has(r, "note", "1 Hz residual tick");

        /* rcu_nocbs=2-3 rcu_nocb_poll. */
        r = remedy(f, "softirq", "RCU", 1);
        well_formed(r);
        is(r, "check", "rcu_nocbs");
        is(r, "command", "rcu_nocbs=1-3 rcu_nocb_poll");
        is(r, "revert",
           "grubby --update-kernel=ALL --args=\"rcu_nocbs=2-3\" "
           "--remove-args=\"rcu_nocb_poll\", then reboot");
        r = remedy(f, "softirq", "RCU", 2);
        is(r, "when", "none");

        /* Load balancing and wake-ups onto CPU 1: not isolated; CPU 2 is. */
        r = remedy(f, "softirq", "SCHED", 1);
        is(r, "check", "isolcpus");
        is(r, "command", "isolcpus=managed_irq,domain,1-3");
        r = remedy(f, "vector", "reschedule", 2);
        is(r, "when", "none");
        has(r, "note", "isolated from the scheduler already");
}

static void test_sysctls(void **state)
{
        Fixture *f = *state;
        json_t *r;

        /* base: timer_migration 0, vm.stat_interval 10, sched_rt_runtime_us -1. */
        host(f, NULL, "1");
        r = remedy(f, "softirq", "TIMER", 1);
        well_formed(r);
        is(r, "when", "none");
        is(r, "check", "timer_migration");
        r = remedy(f, "work", "vmstat_update", 1);
        well_formed(r);
        is(r, "when", "none");
        r = remedy(f, "timer", "sched_rt_period_timer", 1);
        well_formed(r);
        is(r, "when", "none");

        host(f, "timer_migration-bad", "1");
        r = remedy(f, "softirq", "TIMER", 1);
        well_formed(r);
        is(r, "check", "timer_migration");
        is(r, "command", "sysctl -w kernel.timer_migration=0");
        is(r, "revert", "sysctl -w kernel.timer_migration=1");
        has(r, "persist", "\"kernel.timer_migration = 0\" in a file of /etc/sysctl.d/");

        host(f, "vmstat-bad", "1");
        r = remedy(f, "work", "vmstat_update", 1);
        well_formed(r);
        is(r, "check", "vmstat");
        is(r, "command", "sysctl -w vm.stat_interval=10");
        is(r, "revert", "sysctl -w vm.stat_interval=1");
        has(r, "setting", "vm.stat_interval=1:");

        host(f, "rt_throttling-bad", "1");
        r = remedy(f, "timer", "sched_rt_period_timer", 1);
        is(r, "command", "sysctl -w kernel.sched_rt_runtime_us=-1");
        is(r, "revert", "sysctl -w kernel.sched_rt_runtime_us=950000");

        fixture_tree_put(f->root, "proc/sys/kernel/watchdog_cpumask", "0-3");
        reread(f, "1");
        r = remedy(f, "timer", "watchdog_timer_fn", 1);
        well_formed(r);
        is(r, "command", "sysctl -w kernel.watchdog_cpumask=0");
        is(r, "revert", "sysctl -w kernel.watchdog_cpumask=0-3");
}

static void test_work_and_irq_softirqs(void **state)
{
        Fixture *f = *state;
        json_t *r;

        host(f, NULL, "1");
        /* Work in an unbound kworker: the workqueue cpumask (3) lets it on CPU 1. */
        r = remedy_seen(f, "work", "wb_workfn", 1, 0, 0, "kworker/u8:1:40");
        well_formed(r);
        is(r, "check", "workqueue");
        is(r, "command", "echo 1 > /sys/devices/virtual/workqueue/cpumask");
        has(r, "setting", "unbound kworker kworker/u8:1:40");
        /* Queued for CPU 1 itself, or not known where it ran: no fix. */
        r = remedy_seen(f, "work", "wb_workfn", 1, 0, 0, "kworker/1:2:77");
        well_formed(r);
        is(r, "when", "none");
        has(r, "note", "No setting keeps work queued for a CPU off it");
        r = remedy(f, "work", "wb_workfn", 1);
        well_formed(r);
        is(r, "when", "none");
        has(r, "note", "No fix is known for it by name");

        /* Network receive follows the movable IRQs allowed on CPU 1: 0, 24, 36 and 41. */
        r = remedy(f, "softirq", "NET_RX", 1);
        well_formed(r);
        is(r, "command", "for i in 0 24 36 41; do echo 0 > /proc/irq/$i/smp_affinity_list; done");
        is(r, "revert",
           "echo 0-1 > /proc/irq/0/smp_affinity_list; echo 0-1 > "
           "/proc/irq/24/smp_affinity_list; echo 0-1 > "
           "/proc/irq/36/smp_affinity_list; echo 0-1 > /proc/irq/41/smp_affinity_list");
        r = remedy(f, "softirq", "NET_RX", 2);
        well_formed(r);
        is(r, "when", "none");
}

/* What no setting of this host changes: said so, never a made-up fix. */
static void test_no_fix_known(void **state)
{
        static const char *const causes[][2] = {
                {"vector", "call_function"},
                {"vector", "call_function_single"},
                {"ipi", "flush_tlb_func"},
                {"timer", "hrtimer_wakeup"},
                {"vector", "thermal_apic"},
                {"timer", "some_driver_fn"},
                {"work", "lru_add_drain_per_cpu"},
                {"unexplained", ""},
                {"other", ""},
        };
        Fixture *f = *state;

        host(f, NULL, "1");
        for (size_t i = 0; i < ELEMENTSOF(causes); i++) {
                json_t *r = remedy(f, causes[i][0], causes[i][1], 1);

                well_formed(r);
                is(r, "when", "none");
                is(r, "command", NULL);
                is(r, "setting", NULL);
        }
}

static void test_no_record(void **state)
{
        Fixture *f = *state;
        json_t *r;

        /* No hypervisor flag: hardware or firmware, and no fix from the OS. */
        host(f, NULL, "1");
        r = remedy(f, "no_record", "", 1);
        well_formed(r);
        is(r, "what", "hardware or firmware");
        is(r, "when", "none");
        has(r, "note", "SMI count");

        /* A guest: only the host can. */
        fixture_tree_put(f->root, "proc/cpuinfo",
                         "processor\t: 0\nvendor_id\t: GenuineIntel\n"
                         "flags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n\n"
                         "processor\t: 1\n");
        reread(f, "1");
        r = remedy(f, "no_record", "", 1);
        well_formed(r);
        is(r, "what", "hypervisor");
        is(r, "when", "host");
        has(r, "ask_host", "dedicated physical CPU");
        has(r, "setting", "CPU 1 is a virtual CPU");
        /* A flag that only starts with the word is not it. */
        fixture_tree_put(f->root, "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu hypervisors\n");
        reread(f, "1");
        is(remedy(f, "no_record", "", 1), "what", "hardware or firmware");
}

static void test_invalid(void **state)
{
        Fixture *f = *state;
        AuditCause c = {.kind = "task", .name = "python3"};
        json_t *r = NULL;

        host(f, NULL, "1");
        CPU_ZERO(&c.cpus);
        assert_int_equal(audit_remedy(f->audit, &c, &r), -EINVAL); /* no CPU */
        CPU_SET(1, &c.cpus);
        assert_int_equal(audit_remedy(f->audit, &c, &r), -EINVAL); /* no pid */
        c.name = "python3:0";
        assert_int_equal(audit_remedy(f->audit, &c, &r), -EINVAL);
        c.name = "python3:12x";
        assert_int_equal(audit_remedy(f->audit, &c, &r), -EINVAL);
        c.kind = "bogus";
        c.name = "x";
        assert_int_equal(audit_remedy(f->audit, &c, &r), -EINVAL);
        c.kind = NULL;
        assert_int_equal(audit_remedy(f->audit, &c, &r), -EINVAL);
        assert_null(r);
}

/* The findings' fixes and the remedies' commands are one text. */
static void test_one_source(void **state)
{
        static const struct {
                const char *overlay, *check, *kind, *name, *worker;
        } cases[] = {
                {"vmstat-bad", "vmstat", "work", "vmstat_update", NULL},
                {"timer_migration-bad", "timer_migration", "softirq", "TIMER", NULL},
                {NULL, "workqueue", "work", "wb_workfn", "kworker/u8:1:40"},
                {NULL, "rcu_nocbs", "softirq", "RCU", NULL},
                {NULL, "nohz_full", "vector", "local_timer", NULL},
                {NULL, "isolcpus", "softirq", "SCHED", NULL},
        };
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *report = NULL, *finding, *r;
                const char *fix = NULL;
                size_t j;

                host(f, cases[i].overlay, "1");
                assert_int_equal(audit_findings(f->audit, &report), 0);
                json_array_foreach(json_object_get(report, "findings"), j, finding)
                {
                        if (strcmp(str(finding, "check"), cases[i].check) == 0) {
                                fix = str(finding, "fix");
                        }
                }
                r = remedy_seen(f, cases[i].kind, cases[i].name, 1, 0, 0, cases[i].worker);
                assert_non_null(fix);
                assert_non_null(str(r, "command"));
                if (!strstr(fix, str(r, "command"))) {
                        print_error("%s: the finding's fix \"%s\" lacks \"%s\"\n", cases[i].check,
                                    fix, str(r, "command"));
                        fail();
                }
                json_decref(report);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_irq, setup, teardown),
                cmocka_unit_test_setup_teardown(test_irq_managed_and_long_names, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kthreads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_task, setup, teardown),
                cmocka_unit_test_setup_teardown(test_task_affinity, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tick_rcu_scheduler, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sysctls, setup, teardown),
                cmocka_unit_test_setup_teardown(test_work_and_irq_softirqs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_fix_known, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_one_source, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of the tuning audit, against the fixture trees in test/audit/ (see its README)
 * and, for robustness only, against this machine's own /proc and /sys. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit-fixture.h"
#include "audit-internal.h"
#include "cpulist.h"
#include "host-audit.h"
#include "util.h"

static const char *const cpu_checks[] = {
        "isolcpus", "nohz_full",   "rcu_nocbs", "irq_affinity", "workqueue",
        "kthreads", "smt_sibling", "governor",  "cstates",
};
static const char *const global_checks[] = {"rt_throttling", "clocksource", "timer_migration",
                                            "vmstat"};

#define N_CPU_CHECKS ELEMENTSOF(cpu_checks)
#define N_GLOBAL_CHECKS ELEMENTSOF(global_checks)

typedef struct Fixture {
        char root[PATH_MAX];
        json_t *report;
} Fixture;

static int fixture_setup(void **state)
{
        Fixture *f = calloc(1, sizeof(*f));

        if (!f) {
                return -1;
        }
        if (fixture_tree_make(f->root) < 0) {
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int fixture_teardown(void **state)
{
        Fixture *f = *state;

        json_decref(f->report);
        remove_tree(f->root);
        free(f);
        return 0;
}

/* Fills the fixture root with base/ and, if @overlay is given, test/audit/@overlay on top. */
static void load(Fixture *f, const char *overlay)
{
        fixture_tree_load(f->root, overlay);
}

static void put(Fixture *f, const char *rel, const char *content)
{
        fixture_tree_put(f->root, rel, content);
}

static void drop(Fixture *f, const char *rel)
{
        fixture_tree_drop(f->root, rel);
}

/* audit_run() of the facts gathered below @root for @set. */
static int audit_of(const char *root, const cpu_set_t *set, const AuditOptions *opt, json_t **ret)
{
        AuditFacts *facts = NULL;
        int r;

        r = host_audit_gather(root, set, 0, &facts);
        if (r == 0) {
                r = audit_run(facts, opt, ret);
        }
        host_audit_freep(&facts);
        return r;
}

/* Runs the audit on the fixture for the CPU list @cpus. */
static void run_opt(Fixture *f, const char *cpus, const AuditOptions *opt)
{
        cpu_set_t set;

        assert_int_equal(cpulist_parse(cpus, &set), 0);
        json_decref(f->report);
        f->report = NULL;
        assert_int_equal(audit_of(f->root, &set, opt, &f->report), 0);
        assert_non_null(f->report);
}

static void run(Fixture *f, const char *cpus)
{
        AuditOptions opt;

        /* The expected clocksource is pinned so the fixtures mean the same on every arch. */
        audit_options_init(&opt);
        opt.expected_clocksource = "tsc";
        run_opt(f, cpus, &opt);
}

/* ---- assertions ---- */

static json_t *find(json_t *report, const char *check, int cpu)
{
        json_t *findings = json_object_get(report, "findings"), *item, *found = NULL;
        size_t i;

        json_array_foreach(findings, i, item)
        {
                json_t *c = json_object_get(item, "cpu");

                if (strcmp(json_string_value(json_object_get(item, "check")), check) != 0) {
                        continue;
                }
                if ((cpu < 0 && json_is_null(c)) ||
                    (cpu >= 0 && json_is_integer(c) && json_integer_value(c) == cpu)) {
                        if (found) {
                                fail_msg("two findings for %s on CPU %d", check, cpu);
                        }
                        found = item;
                }
        }
        return found;
}

static const char *field(json_t *finding, const char *key)
{
        const char *s = json_string_value(json_object_get(finding, key));

        if (!s) {
                fail_msg("finding without a string \"%s\"", key);
        }
        return s;
}

/* Asserts the finding of @check on @cpu (-1: global) has @severity, that "seen" contains
 * @seen and "fix" contains @fix (each when not NULL), and the invariants of every finding. */
static json_t *expect(Fixture *f, const char *check, int cpu, AuditSeverity severity,
                      const char *seen, const char *fix)
{
        json_t *finding = find(f->report, check, cpu);
        _Bool ok;

        if (!finding) {
                fail_msg("no finding for %s on CPU %d", check, cpu);
        }
        char *dump = json_dumps(finding, JSON_INDENT(2));
        ok = strcmp(field(finding, "severity"), audit_severity_to_string(severity)) == 0 &&
             field(finding, "why")[0] != '\0' && (!seen || strstr(field(finding, "seen"), seen)) &&
             (!fix || strstr(field(finding, "fix"), fix)) &&
             (severity < AUDIT_WARNING || field(finding, "fix")[0] != '\0') &&
             (severity != AUDIT_OK || field(finding, "fix")[0] == '\0');
        if (!ok) {
                print_error(
                        "expected %s, seen containing \"%s\", fix containing \"%s\"; got:\n%s\n",
                        audit_severity_to_string(severity), seen ? seen : "", fix ? fix : "", dump);
                free(dump);
                fail();
        }
        free(dump);
        return finding;
}

static void expect_not(Fixture *f, const char *check, int cpu, const char *key, const char *absent)
{
        json_t *finding = find(f->report, check, cpu);

        assert_non_null(finding);
        if (strstr(field(finding, key), absent)) {
                fail_msg("%s of %s on CPU %d mentions \"%s\": %s", key, check, cpu, absent,
                         field(finding, key));
        }
}

static void expect_why(Fixture *f, const char *check, int cpu, const char *text)
{
        json_t *finding = find(f->report, check, cpu);

        assert_non_null(finding);
        if (!strstr(field(finding, "why"), text)) {
                fail_msg("why of %s on CPU %d lacks \"%s\": %s", check, cpu, text,
                         field(finding, "why"));
        }
}

/* Every check reported once per CPU (and the global ones once), and nothing else. */
static void expect_complete(json_t *report, const cpu_set_t *cpus)
{
        json_t *findings = json_object_get(report, "findings");
        size_t n = 0;

        assert_true(json_is_array(findings));
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, cpus)) {
                        continue;
                }
                for (size_t i = 0; i < N_CPU_CHECKS; i++) {
                        if (!find(report, cpu_checks[i], cpu)) {
                                fail_msg("no %s finding for CPU %d", cpu_checks[i], cpu);
                        }
                        n++;
                }
        }
        for (size_t i = 0; i < N_GLOBAL_CHECKS; i++) {
                if (!find(report, global_checks[i], -1)) {
                        fail_msg("no global %s finding", global_checks[i]);
                }
                n++;
        }
        assert_int_equal(json_array_size(findings), n);
}

/* ---- the tuned base ---- */

static void test_base_all_ok(void **state)
{
        Fixture *f = *state;
        cpu_set_t set;

        load(f, NULL);
        run(f, "2-3");
        assert_int_equal(cpulist_parse("2-3", &set), 0);
        expect_complete(f->report, &set);
        if (audit_worst_severity(f->report) != AUDIT_OK) {
                char *dump = json_dumps(f->report, JSON_INDENT(2));
                print_error("%s\n", dump);
                free(dump);
                fail_msg("the tuned base tree is not all ok");
        }
}

/* ---- per check: bad and good ---- */

static void test_isolcpus(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "isolcpus", 2, AUDIT_OK, "isolcpus=managed_irq,domain,2-3; isolated: 2-3", NULL);

        load(f, "isolcpus-bad");
        run(f, "2-3");
        expect(f, "isolcpus", 2, AUDIT_WARNING, "no isolcpus=; isolated: none",
               "isolcpus=managed_irq,domain,2-3");
        expect(f, "isolcpus", 3, AUDIT_WARNING, NULL, "cpu-partitioning");

        /* No flags means "domain": isolated, but managed interrupts are not steered away. */
        put(f, "proc/cmdline", "ro isolcpus=2-3");
        put(f, "sys/devices/system/cpu/isolated", "2-3");
        run(f, "2-3");
        expect(f, "isolcpus", 2, AUDIT_INFO, "isolcpus=2-3", "isolcpus=managed_irq,domain,2-3");

        /* Flags without "domain": the scheduler still balances onto the CPU. */
        put(f, "proc/cmdline", "ro isolcpus=nohz,managed_irq,2-3");
        put(f, "sys/devices/system/cpu/isolated", "");
        run(f, "2-3");
        expect(f, "isolcpus", 2, AUDIT_WARNING, "isolcpus=nohz,managed_irq,2-3",
               "isolcpus=managed_irq,domain,2-3");

        /* "N" is the last CPU; quoted values hold spaces. */
        put(f, "proc/cmdline", "ro dyndbg=\"file sched.c +p\" isolcpus=managed_irq,domain,2-N");
        run(f, "2-3");
        expect(f, "isolcpus", 3, AUDIT_OK, "isolcpus=managed_irq,domain,2-N", NULL);

        /* An isolated cgroup v2 cpuset partition isolates too. */
        put(f, "proc/cmdline", "ro");
        put(f, "sys/fs/cgroup/cpuset.cpus.isolated", "2-3");
        run(f, "2-3");
        expect(f, "isolcpus", 2, AUDIT_INFO,
               "no isolcpus=; isolated: none; cgroup v2 cpuset.cpus.isolated: 2-3", "managed_irq");
}

/* cpuset-v1/: the root cpuset and /rt (2-3, exclusive) without load balancing, but
 * /rt/pool (3) balances again; /system (0-1) balances; /quiet (1) does not but is not
 * exclusive. Only CPU 2 is shielded. */
static void test_isolcpus_cpuset_v1(void **state)
{
        static const char *const shield =
                "no isolcpus=; isolated: none; cgroup v1 cpuset shield /rt (exclusive, no load "
                "balancing): 2";
        Fixture *f = *state;

        load(f, "cpuset-v1");
        run(f, "1-3");
        expect(f, "isolcpus", 2, AUDIT_INFO, shield, "isolcpus=managed_irq,domain,");
        expect_why(f, "isolcpus", 2, "cgroup v1 cpuset shield");
        expect(f, "isolcpus", 3, AUDIT_WARNING, shield, "isolcpus=managed_irq,domain,");
        expect(f, "isolcpus", 1, AUDIT_WARNING, shield, NULL);

        /* Without /rt/pool CPU 3 is shielded too. */
        drop(f, "sys/fs/cgroup/cpuset/rt/pool");
        run(f, "3");
        expect(f, "isolcpus", 3, AUDIT_INFO,
               "; cgroup v1 cpuset shield /rt (exclusive, no load balancing): 2-3", NULL);

        /* Not exclusive: not a shield. */
        put(f, "sys/fs/cgroup/cpuset/rt/cpuset.cpu_exclusive", "0");
        run(f, "2");
        expect(f, "isolcpus", 2, AUDIT_WARNING, NULL, NULL);
        expect_not(f, "isolcpus", 2, "seen", "cpuset");

        /* The root balancing load makes one domain of every CPU, whatever its children say. */
        put(f, "sys/fs/cgroup/cpuset/rt/cpuset.cpu_exclusive", "1");
        put(f, "sys/fs/cgroup/cpuset/cpuset.sched_load_balance", "1");
        run(f, "2");
        expect(f, "isolcpus", 2, AUDIT_WARNING, NULL, NULL);
        expect_not(f, "isolcpus", 2, "seen", "cpuset");

        /* Mounted with noprefix, and found through the mount table, not the usual place. */
        load(f, "cpuset-v1");
        drop(f, "sys/fs/cgroup/cpuset");
        put(f, "proc/mounts", "cpuset /dev/cpu\\040set cgroup rw,noprefix,cpuset 0 0");
        put(f, "dev/cpu set/cpus", "0-3");
        put(f, "dev/cpu set/sched_load_balance", "0");
        put(f, "dev/cpu set/cpu_exclusive", "1");
        put(f, "dev/cpu set/hk/cpus", "0-2");
        put(f, "dev/cpu set/hk/sched_load_balance", "1");
        put(f, "dev/cpu set/hk/cpu_exclusive", "1");
        put(f, "dev/cpu set/iso/cpus", "3");
        put(f, "dev/cpu set/iso/sched_load_balance", "0");
        put(f, "dev/cpu set/iso/cpu_exclusive", "1");
        run(f, "3");
        expect(f, "isolcpus", 3, AUDIT_INFO,
               "; cgroup v1 cpuset shield /iso (exclusive, no load balancing): 3", NULL);
}

/* cpuset-v2/: /rt is an isolated partition of CPU 2 (the root's cpuset.cpus.isolated says
 * 2), /spare an invalid one of CPU 3, /system.slice a member. */
static void test_isolcpus_cpuset_v2(void **state)
{
        Fixture *f = *state;

        load(f, "cpuset-v2");
        run(f, "1-3");
        expect(f, "isolcpus", 2, AUDIT_INFO,
               "no isolcpus=; isolated: none; cgroup v2 isolated partition /rt: 2",
               "isolcpus=managed_irq,domain,");
        expect_why(f, "isolcpus", 2, "cgroup v2 isolated partition");
        expect(f, "isolcpus", 3, AUDIT_WARNING, NULL, NULL);
        expect_not(f, "isolcpus", 3, "seen", "/spare");
        expect_not(f, "isolcpus", 3, "seen", "cpuset.cpus.isolated");

        /* The root's list beyond every partition found (one below a cgroup the walk cannot
         * read) still counts, and says where it comes from. */
        put(f, "sys/fs/cgroup/cpuset.cpus.isolated", "2-3");
        run(f, "3");
        expect(f, "isolcpus", 3, AUDIT_INFO,
               "; cgroup v2 isolated partition /rt: 2; cgroup v2 cpuset.cpus.isolated: 3", NULL);

        /* A v2 mount without the cpuset controller isolates nothing. */
        load(f, "cpuset-v2");
        put(f, "sys/fs/cgroup/cgroup.controllers", "cpu io memory pids");
        drop(f, "sys/fs/cgroup/cpuset.cpus.effective");
        drop(f, "sys/fs/cgroup/cpuset.cpus.isolated");
        run(f, "2");
        expect(f, "isolcpus", 2, AUDIT_WARNING, "no isolcpus=; isolated: none", NULL);
        expect_not(f, "isolcpus", 2, "seen", "cgroup");
}

static void test_nohz_full(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        /* "nohz_full=0" after "--" belongs to init and is ignored. */
        expect(f, "nohz_full", 2, AUDIT_OK, "nohz_full=2-3; active: 2-3", NULL);

        load(f, "nohz_full-bad");
        run(f, "2-3");
        expect(f, "nohz_full", 2, AUDIT_WARNING, "no nohz_full=; active: none", "nohz_full=2-3");

        /* Asked for on the command line, but not running. */
        load(f, NULL);
        put(f, "sys/devices/system/cpu/nohz_full", "(null)");
        run(f, "2-3");
        expect(f, "nohz_full", 3, AUDIT_WARNING, "nohz_full=2-3; active: none",
               "CONFIG_NO_HZ_FULL");

        /* isolcpus=nohz requests it as well. */
        put(f, "proc/cmdline", "ro isolcpus=nohz,domain,managed_irq,2-3");
        run(f, "2-3");
        expect(f, "nohz_full", 3, AUDIT_WARNING, "no nohz_full=", "journalctl -k");

        /* A kernel without CONFIG_NO_HZ_FULL has no sysfs file. */
        load(f, "nohz_full-bad");
        drop(f, "sys/devices/system/cpu/nohz_full");
        run(f, "2-3");
        expect(f, "nohz_full", 2, AUDIT_WARNING, "absent", "CONFIG_NO_HZ_FULL=y");
        expect(f, "nohz_full", 2, AUDIT_WARNING, NULL, "nohz_full=2-3");
}

static void test_rcu_nocbs(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "rcu_nocbs", 2, AUDIT_OK, "rcu_nocbs=2-3; offloaded by nohz_full; rcu_nocb_poll",
               NULL);

        load(f, "rcu_nocbs-bad");
        run(f, "2-3");
        expect(f, "rcu_nocbs", 2, AUDIT_WARNING, "no rcu_nocbs=", "rcu_nocbs=2-3");

        /* Offloaded without polling. */
        put(f, "proc/cmdline", "ro rcu_nocbs=2-3");
        run(f, "2-3");
        expect(f, "rcu_nocbs", 3, AUDIT_INFO, "rcu_nocbs=2-3", "rcu_nocb_poll");

        /* nohz_full offloads by itself. */
        put(f, "proc/cmdline", "ro nohz_full=2-3 rcu_nocb_poll");
        put(f, "sys/devices/system/cpu/nohz_full", "2-3");
        run(f, "2-3");
        expect(f, "rcu_nocbs", 3, AUDIT_OK, "no rcu_nocbs=; offloaded by nohz_full", NULL);

        /* Only one CPU offloaded. */
        put(f, "proc/cmdline", "ro rcu_nocbs=3 rcu_nocb_poll");
        put(f, "sys/devices/system/cpu/nohz_full", "(null)");
        run(f, "2-3");
        expect(f, "rcu_nocbs", 2, AUDIT_WARNING, "rcu_nocbs=3", "rcu_nocbs=2-3");
        expect(f, "rcu_nocbs", 3, AUDIT_OK, NULL, NULL);
}

static void test_irq_affinity(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        /* 0, 24, 36, 41 and 50; 99 has no handler. */
        expect(f, "irq_affinity", 2, AUDIT_OK, "5 IRQs, none movable allowed on CPU 2", NULL);

        load(f, "irq_affinity-bad");
        run(f, "2-3");
        expect(f, "irq_affinity", 2, AUDIT_WARNING,
               "2 IRQs allowed on CPU 2: 36 (virtio1-req.0, effective here), 41 (virtio3-rx)",
               "for i in 36 41; do echo 0-1 > /proc/irq/$i/smp_affinity_list; done");
        expect(f, "irq_affinity", 2, AUDIT_WARNING, "default_smp_affinity includes CPU 2",
               "irqaffinity=0-1");
        expect(f, "irq_affinity", 3, AUDIT_WARNING, "41 (virtio3-rx)", NULL);
        /* Managed (50) and handler-less (99) IRQs are not offered for moving. */
        expect_not(f, "irq_affinity", 2, "fix", " 50");
        expect_not(f, "irq_affinity", 2, "fix", " 99");

        /* A managed IRQ delivered to the CPU cannot be moved: info. */
        load(f, NULL);
        put(f, "proc/irq/50/effective_affinity_list", "2");
        run(f, "2-3");
        expect(f, "irq_affinity", 2, AUDIT_INFO, "managed or per-CPU, delivered here: 50 (nvme0q1",
               "isolcpus=managed_irq");
        expect(f, "irq_affinity", 3, AUDIT_OK, NULL, NULL);

        /* Without the IRQ debugfs nothing says it is managed: it is reported as movable ... */
        drop(f, "sys/kernel/debug");
        run(f, "2-3");
        expect(f, "irq_affinity", 3, AUDIT_WARNING, "50 (nvme0q1)",
               "echo 0-1 > /proc/irq/50/smp_affinity_list");

        /* ... unless it is an ARM GIC private peripheral interrupt. */
        put(f, "sys/kernel/irq/50/chip_name", "GICv3");
        put(f, "sys/kernel/irq/50/hwirq", "27");
        run(f, "2-3");
        expect(f, "irq_affinity", 2, AUDIT_INFO, "50 (nvme0q1, effective here)", NULL);
        expect(f, "irq_affinity", 3, AUDIT_OK, NULL, NULL);

        /* Nothing there now, but new IRQs would start on the CPU. */
        load(f, NULL);
        put(f, "proc/irq/default_smp_affinity", "f");
        run(f, "2-3");
        expect(f, "irq_affinity", 2, AUDIT_INFO, "default_smp_affinity includes CPU 2",
               "echo 3 > /proc/irq/default_smp_affinity");
}

static void test_workqueue(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "workqueue", 2, AUDIT_OK, "workqueue cpumask 3 (CPUs 0-1)", NULL);

        load(f, "workqueue-bad");
        run(f, "2-3");
        expect(f, "workqueue", 2, AUDIT_WARNING, "workqueue cpumask f (CPUs 0-3)",
               "echo 3 > /sys/devices/virtual/workqueue/cpumask");

        /* Masks wider than 32 CPUs are comma-separated 32-bit groups. */
        put(f, "sys/devices/system/cpu/online", "0-39");
        put(f, "sys/devices/system/cpu/possible", "0-39");
        put(f, "sys/devices/system/cpu/isolated", "2-31");
        put(f, "sys/devices/virtual/workqueue/cpumask", "ff,ffffffff");
        run(f, "2-3");
        expect(f, "workqueue", 3, AUDIT_WARNING, "(CPUs 0-39)",
               "echo ff,00000003 > /sys/devices/virtual/workqueue/cpumask");
        put(f, "sys/devices/virtual/workqueue/cpumask", "ff,00000003");
        run(f, "2-3");
        expect(f, "workqueue", 3, AUDIT_OK, "(CPUs 0-1,32-39)", NULL);
}

static void test_kthreads(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "kthreads", 2, AUDIT_OK, "0 movable kthreads allowed here; 4 per-CPU bound here",
               NULL);
        expect(f, "kthreads", 3, AUDIT_OK, "1 per-CPU bound here", NULL);

        load(f, "kthreads-bad");
        run(f, "2-3");
        expect(f, "kthreads", 2, AUDIT_WARNING,
               "2 movable kthreads allowed here: kthreadd (2), kswapd0 (45)",
               "for p in 2 45; do taskset -p -c 0-1 $p; done");
        expect(f, "kthreads", 2, AUDIT_WARNING, "2 unbound kworkers or IRQ threads", NULL);
        /* User processes are not kernel threads, whatever their affinity or name. */
        expect_not(f, "kthreads", 2, "seen", "systemd");
        expect_not(f, "kthreads", 2, "seen", "sd-pam");

        /* Only an unbound kworker: it follows the workqueue cpumask. */
        load(f, NULL);
        put(f, "proc/40/status", "Name:\tkworker/u8:1\nCpus_allowed_list:\t0-3");
        run(f, "2-3");
        expect(f, "kthreads", 3, AUDIT_INFO, "1 unbound kworkers or IRQ threads",
               "workqueue/cpumask");
}

static void test_smt_sibling(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "smt_sibling", 2, AUDIT_OK, "no SMT sibling; SMT control: off", NULL);

        load(f, "smt_sibling-bad");
        run(f, "2-3");
        expect(f, "smt_sibling", 2, AUDIT_WARNING, "sibling 0 (not isolated: 0); SMT control: on",
               "echo off > /sys/devices/system/cpu/smt/control");
        expect(f, "smt_sibling", 3, AUDIT_WARNING, "sibling 1", "nosmt");

        /* An isolated, idle sibling is fine; a probed one shares the core. */
        load(f, NULL);
        put(f, "sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2-3");
        put(f, "sys/devices/system/cpu/cpu3/topology/thread_siblings_list", "2-3");
        run(f, "2");
        expect(f, "smt_sibling", 2, AUDIT_OK, "sibling 3 (isolated)", NULL);
        run(f, "2-3");
        expect(f, "smt_sibling", 2, AUDIT_INFO, "sibling 3 (also probed)", "one hardware thread");
}

static void test_governor(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "governor", 2, AUDIT_OK, "governor performance, driver intel_pstate", NULL);

        load(f, "governor-bad");
        run(f, "2-3");
        expect(f, "governor", 3, AUDIT_WARNING, "governor powersave",
               "echo performance > /sys/devices/system/cpu/cpu3/cpufreq/scaling_governor");

        /* No cpufreq (a VM): informative, not an error. */
        drop(f, "sys/devices/system/cpu/cpu3/cpufreq");
        run(f, "2-3");
        expect(f, "governor", 3, AUDIT_INFO, "not readable", NULL);
        expect(f, "governor", 2, AUDIT_WARNING, NULL, NULL);
}

static void test_cstates(void **state)
{
        Fixture *f = *state;
        AuditOptions opt;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "cstates", 2, AUDIT_OK, "idle driver intel_idle; enabled: POLL (0 us), C1 (2 us)",
               NULL);

        /* A tighter bound flags C1. */
        audit_options_init(&opt);
        opt.cstate_latency_max_us = 1;
        run_opt(f, "2-3", &opt);
        expect(f, "cstates", 2, AUDIT_WARNING, "above 1 us: C1 (2 us)",
               "echo 1 > /sys/devices/system/cpu/cpu2/cpuidle/state1/disable");

        load(f, "cstates-bad");
        run(f, "2-3");
        expect(f, "cstates", 3, AUDIT_WARNING, "enabled with exit latency above 10 us: C6 (133 us)",
               "echo 1 > /sys/devices/system/cpu/cpu3/cpuidle/state3/disable");
        expect(f, "cstates", 3, AUDIT_WARNING, NULL,
               "intel_idle.max_cstate=0 processor.max_cstate=1");
        expect_not(f, "cstates", 3, "fix", "state2");

        drop(f, "sys/devices/system/cpu/cpu3/cpuidle");
        run(f, "2-3");
        expect(f, "cstates", 3, AUDIT_INFO, "idle driver intel_idle", NULL);
}

static void test_rt_throttling(void **state)
{
        Fixture *f = *state;
        AuditOptions opt;

        audit_options_init(&opt);
        opt.expected_clocksource = "tsc";
        load(f, NULL);
        run(f, "2-3");
        expect(f, "rt_throttling", -1, AUDIT_OK, "sched_rt_runtime_us=-1", NULL);

        load(f, "rt_throttling-bad");
        run_opt(f, "2-3", &opt);
        expect(f, "rt_throttling", -1, AUDIT_WARNING,
               "sched_rt_runtime_us=950000 of sched_rt_period_us=1000000",
               "sysctl -w kernel.sched_rt_runtime_us=-1");

        /* SCHED_FIFO probes are stalled by it. */
        opt.probe_priority = 50;
        run_opt(f, "2-3", &opt);
        expect(f, "rt_throttling", -1, AUDIT_ERROR, "950000",
               "sysctl -w kernel.sched_rt_runtime_us=-1");
        assert_int_equal(audit_worst_severity(f->report), AUDIT_ERROR);
}

static void test_clocksource(void **state)
{
        Fixture *f = *state;
        AuditOptions opt;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "clocksource", -1, AUDIT_OK, "clocksource tsc", NULL);

        load(f, "clocksource-bad");
        run(f, "2-3");
        expect(f, "clocksource", -1, AUDIT_WARNING,
               "clocksource hpet (available: tsc hpet acpi_pm)",
               "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource");

        /* Not offered by the kernel: only a boot argument helps. */
        put(f, "sys/devices/system/clocksource/clocksource0/available_clocksource", "hpet acpi_pm");
        run(f, "2-3");
        expect(f, "clocksource", -1, AUDIT_WARNING, NULL, "clocksource=tsc tsc=reliable");
        expect_not(f, "clocksource", -1, "fix", "echo");

        /* A paravirtual clock keeps a vDSO path. */
        put(f, "sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock");
        run(f, "2-3");
        expect(f, "clocksource", -1, AUDIT_INFO, "kvm-clock", NULL);

        /* On aarch64 the architected timer is the good one. */
        audit_options_init(&opt);
        opt.expected_clocksource = "arch_sys_counter";
        put(f, "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "arch_sys_counter");
        run_opt(f, "2-3", &opt);
        expect(f, "clocksource", -1, AUDIT_OK, NULL, NULL);

        /* The default follows the build architecture. */
        load(f, NULL);
        run_opt(f, "2-3", NULL);
#if defined(__x86_64__) || defined(__i386__)
        expect(f, "clocksource", -1, AUDIT_OK, NULL, NULL);
#elif defined(__aarch64__)
        expect(f, "clocksource", -1, AUDIT_WARNING, NULL, "clocksource=arch_sys_counter");
#else
        expect(f, "clocksource", -1, AUDIT_INFO, NULL, NULL);
#endif
}

static void test_timer_migration(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "timer_migration", -1, AUDIT_OK, "timer_migration=0", NULL);

        load(f, "timer_migration-bad");
        run(f, "2-3");
        expect(f, "timer_migration", -1, AUDIT_INFO, "timer_migration=1",
               "sysctl -w kernel.timer_migration=0");
}

static void test_vmstat(void **state)
{
        Fixture *f = *state;

        load(f, NULL);
        run(f, "2-3");
        expect(f, "vmstat", -1, AUDIT_OK, "vm.stat_interval=10", NULL);

        load(f, "vmstat-bad");
        run(f, "2-3");
        expect(f, "vmstat", -1, AUDIT_INFO, "vm.stat_interval=1", "sysctl -w vm.stat_interval=10");
        expect(f, "vmstat", -1, AUDIT_INFO, NULL,
               "vm.stat_interval = 10\" in a file of /etc/sysctl.d/");

        /* Below the real-time profiles' 10 s is informative; at or above it, nothing to fix. */
        put(f, "proc/sys/vm/stat_interval", "9");
        run(f, "2");
        expect(f, "vmstat", -1, AUDIT_INFO, "vm.stat_interval=9", NULL);
        put(f, "proc/sys/vm/stat_interval", "120");
        run(f, "2");
        expect(f, "vmstat", -1, AUDIT_OK, "vm.stat_interval=120", NULL);
        drop(f, "proc/sys/vm");
        run(f, "2");
        expect(f, "vmstat", -1, AUDIT_INFO, "not readable", NULL);
}

/* ---- robustness ---- */

/* Nothing readable at all: every check still reports, as info. */
static void test_empty_root(void **state)
{
        Fixture *f = *state;
        json_t *item;
        cpu_set_t set;
        size_t i;

        run(f, "0,5");
        assert_int_equal(cpulist_parse("0,5", &set), 0);
        expect_complete(f->report, &set);
        json_array_foreach(json_object_get(f->report, "findings"), i, item)
        {
                if (strcmp(field(item, "severity"), "info") != 0 ||
                    field(item, "seen")[0] == '\0') {
                        char *dump = json_dumps(item, 0);
                        print_error("%s\n", dump);
                        free(dump);
                        fail_msg("an unreadable source must give an info finding");
                }
        }
        assert_int_equal(audit_worst_severity(f->report), AUDIT_INFO);
}

/* Garbage in every file the audit reads: no crash, and every check reports. */
static void test_garbage(void **state)
{
        Fixture *f = *state;
        cpu_set_t set;

        load(f, NULL);
        put(f, "proc/cmdline", "isolcpus=bogus nohz_full=3-1 rcu_nocbs=x,,y irqaffinity=");
        put(f, "sys/devices/system/cpu/online", "zero");
        put(f, "sys/devices/system/cpu/isolated", "2-");
        put(f, "sys/devices/system/cpu/nohz_full", "-");
        put(f, "sys/devices/virtual/workqueue/cpumask", "xyz,");
        put(f, "proc/irq/36/smp_affinity_list", "lots");
        put(f, "proc/irq/default_smp_affinity", "");
        put(f, "proc/2/stat", "2 (kthreadd");
        put(f, "proc/20/status", "Name:\tcpuhp/2");
        put(f, "proc/sys/kernel/sched_rt_runtime_us", "fast");
        put(f, "proc/sys/kernel/timer_migration", "");
        put(f, "sys/devices/system/cpu/cpu2/cpuidle/state3/latency", "long");
        put(f, "sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "\xff\xfe");
        put(f, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "perf\xc3\x28ormance");
        run(f, "2-3");
        assert_int_equal(cpulist_parse("2-3", &set), 0);
        expect_complete(f->report, &set);
        expect(f, "isolcpus", 2, AUDIT_WARNING, "isolcpus=bogus (invalid", NULL);
        expect(f, "rt_throttling", -1, AUDIT_INFO, NULL, NULL);
        expect(f, "governor", 2, AUDIT_WARNING, "perf?(ormance", NULL);
        /* the JSON must be serialisable (valid UTF-8 throughout) */
        char *dump = json_dumps(f->report, 0);
        assert_non_null(dump);
        free(dump);
}

static void test_invalid_arguments(void **state)
{
        cpu_set_t empty, one;
        json_t *report = NULL;
        char long_root[PATH_MAX + 16];

        CPU_ZERO(&empty);
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        assert_int_equal(audit_of("/", NULL, NULL, &report), -EINVAL);
        assert_int_equal(audit_of("/", &empty, NULL, &report), -EINVAL);
        assert_int_equal(audit_of("/", &one, NULL, NULL), -EINVAL);
        assert_int_equal(audit_run(NULL, NULL, &report), -EINVAL);
        memset(long_root, 'a', sizeof(long_root) - 1);
        long_root[sizeof(long_root) - 1] = '\0';
        assert_int_equal(audit_of(long_root, &one, NULL, &report), -ENAMETOOLONG);
        assert_null(report);
}

/* The first line of @path without its newline into @buf; false when it cannot be read. */
static bool read_line(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "re");
        bool ok;

        if (!f) {
                return false;
        }
        ok = fgets(buf, (int)size, f) != NULL;
        fclose(f);
        if (ok) {
                buf[strcspn(buf, "\n")] = '\0';
        }
        return ok;
}

/* The finding of @check on @cpu (-1: global) in @report says what the test read itself: "seen"
 * starts with @seen, and the severity is @severity (when not negative). */
static void expect_real(json_t *report, const char *check, int cpu, const char *seen, int severity)
{
        json_t *finding = find(report, check, cpu);

        if (!finding) {
                fail_msg("no %s finding for CPU %d", check, cpu);
        }
        if (strncmp(field(finding, "seen"), seen, strlen(seen)) != 0) {
                fail_msg("%s: seen \"%s\", but this machine has \"%s\"", check,
                         field(finding, "seen"), seen);
        }
        if (severity >= 0 && audit_severity_from_string(field(finding, "severity")) != severity) {
                fail_msg("%s: %s for \"%s\", expected %s", check, field(finding, "severity"), seen,
                         audit_severity_to_string(severity));
        }
}

/* Machine-wide checks whose value the test reads here itself: "seen" starts with @seen and
 * the value, and the severity is @if_good for the value @good, @if_other for any other (for
 * SCHED_OTHER probes, as there are no options: RT throttling is a warning, not an error). */
static const struct {
        const char *check, *path, *seen, *good;
        int if_good, if_other;
} read_here[] = {
        {"rt_throttling", "/proc/sys/kernel/sched_rt_runtime_us", "sched_rt_runtime_us=", "-1",
         AUDIT_OK, AUDIT_WARNING},
        {"timer_migration", "/proc/sys/kernel/timer_migration", "timer_migration=", "0", AUDIT_OK,
         AUDIT_INFO},
        {"clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource",
         "clocksource ", NULL, -1, -1},
};

/* The cgroup v1 cpuset shield that isolates @cpu on this machine as the test sees it itself (the
 * root cpuset without load balancing, a set below it exclusive, without load balancing and
 * holding @cpu alone, as test/cset.sh and `cset shield` make), its name into @name ("" when
 * there is none). An end-to-end test running beside this one may be shielding CPU 1. */
static void v1_shield_of(int cpu, char *name, size_t size)
{
        static const char root[] = "/sys/fs/cgroup/cpuset";
        char path[PATH_MAX], v[64], want[16];
        struct dirent *e;
        DIR *d;

        name[0] = '\0';
        snprintf(path, sizeof(path), "%s/cpuset.sched_load_balance", root);
        if (!read_line(path, v, sizeof(v)) || strcmp(v, "0") != 0 || !(d = opendir(root))) {
                return;
        }
        snprintf(want, sizeof(want), "%d", cpu);
        while ((e = readdir(d))) {
                bool shield = e->d_type == DT_DIR && e->d_name[0] != '.';

                snprintf(path, sizeof(path), "%s/%s/cpuset.cpu_exclusive", root, e->d_name);
                shield = shield && read_line(path, v, sizeof(v)) && strcmp(v, "1") == 0;
                snprintf(path, sizeof(path), "%s/%s/cpuset.sched_load_balance", root, e->d_name);
                shield = shield && read_line(path, v, sizeof(v)) && strcmp(v, "0") == 0;
                snprintf(path, sizeof(path), "%s/%s/cpuset.cpus", root, e->d_name);
                shield = shield && read_line(path, v, sizeof(v)) && strcmp(v, want) == 0;
                if (shield) {
                        snprintf(name, size, "/%s", e->d_name);
                        break;
                }
        }
        closedir(d);
}

/* audit_run() of @root for @set, with the shield of @cpu it saw into @shield: an audit during
 * which a shield was made or removed is run again, a few times. */
static json_t *audit_beside_shields(const char *root, int cpu, const cpu_set_t *set, char *shield,
                                    size_t size)
{
        char after[PATH_MAX];
        json_t *report = NULL;

        for (int attempt = 0;; attempt++) {
                v1_shield_of(cpu, shield, size);
                assert_int_equal(audit_of(root, set, NULL, &report), 0);
                v1_shield_of(cpu, after, sizeof(after));
                if (strcmp(shield, after) == 0) {
                        return report;
                }
                json_decref(report);
                if (attempt == 4) {
                        fail_msg("a cpuset shield of CPU %d came and went during each of 5 audits",
                                 cpu);
                }
        }
}

/* This machine's real /proc and /sys, through "/" and "": every check for CPU 1 (0 on a
 * single-CPU machine), the worst severity the highest of them, and what the test reads here
 * itself (RT throttling, timer migration, the clocksource, isolation) is what the audit saw. */
static void test_real_system(void **state)
{
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        int cpu = n >= 2 ? 1 : 0;
        const char *roots[] = {"/", ""};
        char v[256], want[PATH_MAX + 128], isolated[256] = "", cg_isolated[256] = "",
                                           cmdline[4096] = "", shield[PATH_MAX];

        for (size_t k = 0; k < 2; k++) {
                json_t *report = NULL, *item;
                int worst = AUDIT_OK, severity;
                cpu_set_t set;
                size_t i;

                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
                report = audit_beside_shields(roots[k], cpu, &set, shield, sizeof(shield));
                expect_complete(report, &set);
                json_array_foreach(json_object_get(report, "findings"), i, item)
                {
                        int s = audit_severity_from_string(field(item, "severity"));

                        assert_true(s >= AUDIT_OK);
                        assert_true(field(item, "seen")[0] != '\0');
                        if (s >= AUDIT_WARNING) {
                                assert_true(field(item, "fix")[0] != '\0');
                        }
                        worst = s > worst ? s : worst;
                }
                assert_int_equal(audit_worst_severity(report), worst);

                for (size_t c = 0; c < ELEMENTSOF(read_here); c++) {
                        if (!read_line(read_here[c].path, v, sizeof(v))) {
                                print_message("skipped: %s on this machine: %s not readable\n",
                                              read_here[c].check, read_here[c].path);
                                continue;
                        }
                        snprintf(want, sizeof(want), "%s%s", read_here[c].seen, v);
                        severity = read_here[c].if_other;
                        if (read_here[c].good && strcmp(v, read_here[c].good) == 0) {
                                severity = read_here[c].if_good;
                        }
                        expect_real(report, read_here[c].check, -1, want, severity);
                }
                /* Nothing isolated and no isolcpus=: the one case whose words are certain. */
                (void)read_line("/sys/devices/system/cpu/isolated", isolated, sizeof(isolated));
                (void)read_line("/proc/cmdline", cmdline, sizeof(cmdline));
                /* An empty cpuset.cpus.isolated isolates nothing, as for probe/host/isolation.c. */
                (void)read_line("/sys/fs/cgroup/cpuset.cpus.isolated", cg_isolated,
                                sizeof(cg_isolated));
                if (isolated[0] == '\0' && !strstr(cmdline, "isolcpus=") &&
                    cg_isolated[0] == '\0' && shield[0] != '\0') {
                        snprintf(want, sizeof(want),
                                 "no isolcpus=; isolated: none; cgroup v1 cpuset shield %s "
                                 "(exclusive, no load balancing): %d",
                                 shield, cpu);
                        expect_real(report, "isolcpus", cpu, want, AUDIT_INFO);
                } else if (isolated[0] == '\0' && !strstr(cmdline, "isolcpus=") &&
                           cg_isolated[0] == '\0') {
                        expect_real(report, "isolcpus", cpu, "no isolcpus=; isolated: none",
                                    AUDIT_WARNING);
                } else {
                        print_message("skipped: isolcpus on this machine: CPUs are isolated "
                                      "here, which the test does not interpret\n");
                }
                json_decref(report);
        }
}

static json_t *findings_of(const char *const *severities, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++) {
                json_array_append_new(
                        a, json_pack("{s:s, s:s}", "check", "x", "severity", severities[i]));
        }
        return a;
}

static void test_worst_severity(void **state)
{
        static const char *const mixed[] = {"ok", "warning", "info", "ok"};
        static const char *const errors[] = {"info", "error", "warning"};
        static const char *const oks[] = {"ok", "ok"};
        static const char *const bad[] = {"ok", "fatal"};
        json_t *a;

        a = findings_of(NULL, 0);
        assert_int_equal(audit_worst_severity(a), AUDIT_OK);
        json_decref(a);
        a = findings_of(oks, 2);
        assert_int_equal(audit_worst_severity(a), AUDIT_OK);
        json_decref(a);
        a = findings_of(mixed, 4);
        assert_int_equal(audit_worst_severity(a), AUDIT_WARNING);
        /* the report object holding the array works too */
        json_t *report = json_pack("{s:O}", "findings", a);
        assert_int_equal(audit_worst_severity(report), AUDIT_WARNING);
        json_decref(report);
        json_decref(a);
        a = findings_of(errors, 3);
        assert_int_equal(audit_worst_severity(a), AUDIT_ERROR);
        json_decref(a);
        a = findings_of(bad, 2);
        assert_int_equal(audit_worst_severity(a), -EINVAL);
        json_decref(a);
        a = json_array();
        json_array_append_new(a, json_pack("{s:s}", "check", "x"));
        assert_int_equal(audit_worst_severity(a), -EINVAL);
        json_decref(a);
        a = json_string("ok");
        assert_int_equal(audit_worst_severity(a), -EINVAL);
        json_decref(a);
        assert_int_equal(audit_worst_severity(NULL), -EINVAL);

        assert_string_equal(audit_severity_to_string(AUDIT_WARNING), "warning");
        assert_null(audit_severity_to_string(_AUDIT_SEVERITY_MAX));
        assert_int_equal(audit_severity_from_string("error"), AUDIT_ERROR);
        assert_int_equal(audit_severity_from_string("Error"), -EINVAL);
}

static char *print_to_string(json_t *report, bool color)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        audit_print(report, f, color);
        assert_int_equal(fclose(f), 0);
        return text;
}

static void test_print(void **state)
{
        Fixture *f = *state;
        char *text;

        load(f, "timer_migration-bad");
        put(f, "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor", "ondemand");
        run(f, "2-3");

        text = print_to_string(f->report, false);
        assert_non_null(strstr(text, "SEVERITY CHECK"));
        assert_non_null(strstr(text, "ok       isolcpus         2    isolcpus=managed_irq"));
        assert_non_null(strstr(text, "warning  governor         3    governor ondemand"));
        assert_non_null(strstr(text, "        fix: echo performance > "));
        assert_non_null(strstr(text, "info     timer_migration  -    timer_migration=1\n"
                                     "        why: "));
        /* ok findings get no why/fix lines */
        assert_null(strstr(text, "isolcpus=managed_irq,domain,2-3; isolated: 2-3\n        why"));
        assert_null(strchr(text, '\033'));
        free(text);

        text = print_to_string(f->report, true);
        assert_non_null(strstr(text, "\033[33mwarning \033[0m governor"));
        assert_non_null(strstr(text, "\033[32mok      \033[0m"));
        free(text);

        /* a malformed report prints nothing past the header, and does not crash */
        json_t *junk = json_pack("{s:[i, {s:s}]}", "findings", 3, "severity", "bogus");
        text = print_to_string(junk, false);
        assert_string_equal(text, "SEVERITY CHECK            CPU  SEEN\n");
        free(text);
        json_decref(junk);
        text = print_to_string(NULL, false);
        assert_string_equal(text, "");
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_base_all_ok, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_isolcpus, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_isolcpus_cpuset_v1, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_isolcpus_cpuset_v2, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_nohz_full, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_rcu_nocbs, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_irq_affinity, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_workqueue, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_kthreads, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_smt_sibling, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_governor, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_cstates, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_rt_throttling, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_clocksource, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_timer_migration, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_vmstat, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_empty_root, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_garbage, fixture_setup, fixture_teardown),
                cmocka_unit_test(test_invalid_arguments),
                cmocka_unit_test(test_real_system),
                cmocka_unit_test(test_worst_severity),
                cmocka_unit_test_setup_teardown(test_print, fixture_setup, fixture_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

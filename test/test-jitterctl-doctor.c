/* Unit tests of jitterctl doctor's diagnosis (jitterctl-diagnosis.c): hand-written GetCauses,
 * timeline figures, GetEvents and Audit replies against a fixture host (test/audit/base with a
 * task and a hypervisor flag), and what the diagnosis must say of them: the ranking by time,
 * shares and gains computed here from the replies, the task whose pid was reused, the cause
 * with no fix known, the hypervisor, causes merged over CPUs, malformed replies. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <unistd.h>

#include "audit-fixture.h"
#include "audit.h"
#include "cpulist.h"
#include "host-audit.h"
#include "jitterctl-diagnosis.h"
#include "util.h"

#define S 1000000000ULL
#define MS 1000000ULL

/* When task 4242 (python3) started: 5000 clock ticks after boot. */
#define START_TICKS 5000

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC the diagnosis is told: the host was suspended 7 s. */
#define SUSPENDED_NS (7 * S)

typedef struct Fixture {
        char root[PATH_MAX];
        AuditFacts *facts;
        Audit *host;
        json_t *causes, *stats, *events, *findings, *d;
} Fixture;

static uint64_t start_ns(void)
{
        return START_TICKS * (S / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* The host: base/ with task python3 (4242) of trader.service on CPUs 0-3, a hypervisor flag,
 * probing @cpus. */
static void make_host(Fixture *f, const char *cpus)
{
        cpu_set_t set;

        fixture_tree_load(f->root, NULL);
        fixture_tree_put(f->root, "proc/4242/stat",
                         "4242 (python3) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 "
                         "5000 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0");
        fixture_tree_put(f->root, "proc/4242/status",
                         "Name:\tpython3\nTgid:\t4242\nPid:\t4242\nCpus_allowed_list:\t0-3");
        fixture_tree_put(f->root, "proc/4242/cgroup", "0::/system.slice/trader.service");
        fixture_tree_put(f->root, "proc/cpuinfo",
                         "processor\t: 0\nflags\t\t: fpu tsc msr hypervisor lahf_lm\n");
        assert_int_equal(cpulist_parse(cpus, &set), 0);
        assert_int_equal(host_audit_gather(f->root, &set, HOST_AUDIT_REMEDIES, &f->facts), 0);
        assert_int_equal(audit_new(f->facts, NULL, &f->host), 0);
}

static json_t *load(const char *text)
{
        json_error_t e;
        json_t *v = json_loads(text, 0, &e);

        if (!v) {
                print_error("bad test JSON at %d: %s\n", e.position, e.text);
                fail();
        }
        return v;
}

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

        json_decref(f->causes);
        json_decref(f->stats);
        json_decref(f->events);
        json_decref(f->findings);
        json_decref(f->d);
        audit_freep(&f->host);
        host_audit_freep(&f->facts);
        remove_tree(f->root);
        free(f);
        return 0;
}

static void diagnose(Fixture *f, const char *window)
{
        DiagnosisInput in = {
                .window = window,
                .causes = f->causes,
                .stats = f->stats,
                .events = f->events,
                .findings = f->findings,
                .host = f->host,
                .boot_minus_mono_ns = (int64_t)SUSPENDED_NS,
        };

        json_decref(f->d);
        f->d = NULL;
        assert_int_equal(diagnosis_build(&in, &f->d), 0);
        assert_non_null(f->d);
}

/* The entry of (@kind, @name), or fails. */
static json_t *entry(Fixture *f, const char *kind, const char *name)
{
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(f->d, "causes"), i, e)
        {
                if (strcmp(json_string_value(json_object_get(e, "kind")), kind) == 0 &&
                    strcmp(json_string_value(json_object_get(e, "name")), name) == 0) {
                        return e;
                }
        }
        print_error("no entry %s %s\n", kind, name);
        fail();
        return NULL;
}

static const char *str(json_t *e, const char *key)
{
        return json_string_value(json_object_get(e, key));
}

static void is(json_t *e, const char *key, const char *want)
{
        const char *got = str(e, key);

        if (want ? !got || strcmp(got, want) != 0 : got != NULL) {
                char *dump = json_dumps(e, JSON_INDENT(2));

                print_error("\"%s\" is not \"%s\":\n%s\n", key, want ? want : "(null)", dump);
                free(dump);
                fail();
        }
}

static double num(json_t *e, const char *key)
{
        json_t *v = json_object_get(e, key);

        assert_true(json_is_number(v));
        return json_number_value(v);
}

static void near(double got, double want)
{
        if (fabs(got - want) > 1e-9 * fmax(1, fabs(want))) {
                print_error("%.12g is not %.12g\n", got, want);
                fail();
        }
}

/* One CPU's causes over a 60 s window, with every kind of part GetCauses has. The named
 * causes, their overhead, the time without a record, the unexplained and the other add up to
 * explained_ns; the interruptions without a trace are the rest of interruptions_ns. */
static const struct {
        const char *kind, *name;
        uint64_t ns, overhead_ns, count;
} one_cpu[] = {
        {"task", "python3:4242", 4000 * 1000, 0, 400},
        {"vector", "local_timer", 1000 * 1000, 600 * 1000, 250},
        {"irq", "virtio1-req.0", 1500 * 1000, 0, 300},
        {"task", "cron:4242", 500 * 1000, 0, 5},
        {"work", "wb_workfn", 300 * 1000, 0, 3},
        {"ipi", "flush_tlb_func", 200 * 1000, 0, 20},
};
#define OTHER_NS (100 * 1000ULL)
#define UNEXPLAINED_NS (1000 * 1000ULL)
#define NO_RECORD_NS (700 * 1000ULL)
#define UNTRACED_NS (100 * 1000ULL)
#define WINDOW_NS (60 * S)

static void one_cpu_replies(Fixture *f)
{
        uint64_t explained = OTHER_NS + UNEXPLAINED_NS + NO_RECORD_NS, mono;
        json_t *causes = json_array(), *c;
        char text[4096];

        for (size_t i = 0; i < ELEMENTSOF(one_cpu); i++) {
                c = json_pack("{s:s, s:s, s:I, s:I, s:n}", "kind", one_cpu[i].kind, "name",
                              one_cpu[i].name, "ns", (json_int_t)one_cpu[i].ns, "count",
                              (json_int_t)one_cpu[i].count, "counter");
                if (one_cpu[i].overhead_ns) {
                        json_object_set_new(c, "overhead_ns",
                                            json_integer((json_int_t)one_cpu[i].overhead_ns));
                }
                json_array_append_new(causes, c);
                explained += one_cpu[i].ns + one_cpu[i].overhead_ns;
        }
        f->causes =
                json_pack("{s:s, s:[{s:i, s:s, s:I, s:i, s:I, s:i, s:I, s:i, s:o, s:I, "
                          "s:I, s:I, s:i, s:{}}]}",
                          "trace", "recording", "cpus", "cpu", 1, "window", "1m", "since_ns",
                          (json_int_t)(1000 * S), "interruptions", 1000, "interruptions_ns",
                          (json_int_t)(explained + UNTRACED_NS), "explained", 990, "explained_ns",
                          (json_int_t)explained, "trace_lost", 0, "causes", causes, "other_ns",
                          (json_int_t)OTHER_NS, "unexplained_ns", (json_int_t)UNEXPLAINED_NS,
                          "no_record_ns", (json_int_t)NO_RECORD_NS, "no_record", 70, "woken_by");
        assert_non_null(f->causes);
        f->stats = load("{\"cpus\": [{\"cpu\": 1, \"duration_ns\": 60000000000, "
                        "\"interruptions\": {\"count\": 1200}, \"lost_ns\": 12000000, "
                        "\"cpu_available_pct\": 99.98}]}");
        /* Events on CLOCK_MONOTONIC: python3 two ticks after its start, cron (the same pid)
         * a second before python3 started, wb_workfn in an unbound kworker. */
        mono = start_ns() - SUSPENDED_NS;
        snprintf(text, sizeof(text),
                 "{\"events\": ["
                 "{\"cpu\": 1, \"start_ns\": %llu, \"duration_ns\": 30000, \"causes\": ["
                 "{\"kind\": \"task\", \"name\": \"cron:4242\", \"ns\": 20000}]},"
                 "{\"cpu\": 1, \"start_ns\": %llu, \"duration_ns\": 30000, \"causes\": ["
                 "{\"kind\": \"work\", \"name\": \"wb_workfn\", \"ns\": 20000},"
                 "{\"kind\": \"task\", \"name\": \"kworker/u8:1:40\", \"ns\": 5000}]},"
                 "{\"cpu\": 1, \"start_ns\": %llu, \"duration_ns\": 30000, \"causes\": ["
                 "{\"kind\": \"task\", \"name\": \"python3:4242\", \"ns\": 20000}]}]}",
                 (unsigned long long)(mono - S), (unsigned long long)mono,
                 (unsigned long long)(mono + 2 * (S / (uint64_t)sysconf(_SC_CLK_TCK))));
        f->events = load(text);
        f->findings = load("{\"findings\": ["
                           "{\"check\": \"isolcpus\", \"cpu\": 1, \"severity\": \"warning\", "
                           "\"seen\": \"no isolcpus=\", \"why\": \"w\", \"fix\": \"f\"},"
                           "{\"check\": \"isolcpus\", \"cpu\": 2, \"severity\": \"ok\", "
                           "\"seen\": \"other CPU\", \"why\": \"w\", \"fix\": \"\"},"
                           "{\"check\": \"nohz_full\", \"cpu\": 1, \"severity\": \"warning\", "
                           "\"seen\": \"no nohz_full=\", \"why\": \"w\", \"fix\": \"f\"},"
                           "{\"check\": \"timer_migration\", \"cpu\": null, \"severity\": "
                           "\"info\", \"seen\": \"timer_migration=1\", \"why\": \"w\", "
                           "\"fix\": \"f\"}]}");
}

/* The rank, share, gain of each entry, from the replies: its time over the interruptions'
 * time and over the window. */
static void check_figures(Fixture *f, const char *kind, const char *name, uint64_t ns,
                          json_int_t rank)
{
        json_t *e = entry(f, kind, name);
        double total = (double)json_integer_value(json_object_get(f->d, "interruptions_ns"));

        assert_int_equal(json_integer_value(json_object_get(e, "ns")), ns);
        assert_int_equal(json_integer_value(json_object_get(e, "rank")), rank);
        near(num(e, "share"), (double)ns / total);
        near(num(e, "gain_pct"), 100.0 * (double)ns / (double)WINDOW_NS);
        near(num(e, "ns_per_s"), (double)ns / 60.0);
}

static void test_ranking(void **state)
{
        Fixture *f = *state;
        json_t *causes, *e;
        double sum = 0;
        size_t i;

        make_host(f, "1");
        one_cpu_replies(f);
        diagnose(f, "1m");
        causes = json_object_get(f->d, "causes");
        /* Longest first; equal times by kind, then name. */
        check_figures(f, "task", "python3:4242", 4000 * 1000, 1);
        check_figures(f, "vector", "local_timer", 1600 * 1000, 2);
        check_figures(f, "irq", "virtio1-req.0", 1500 * 1000, 3);
        check_figures(f, "unexplained", "", UNEXPLAINED_NS, 4);
        check_figures(f, "no_record", "", NO_RECORD_NS, 5);
        check_figures(f, "task", "cron:4242", 500 * 1000, 6);
        check_figures(f, "work", "wb_workfn", 300 * 1000, 7);
        check_figures(f, "ipi", "flush_tlb_func", 200 * 1000, 8);
        check_figures(f, "other", "", OTHER_NS, 9);
        check_figures(f, "untraced", "", UNTRACED_NS, 10);
        assert_int_equal(json_array_size(causes), 10);
        /* Every nanosecond of the interruptions is in one entry. */
        json_array_foreach(causes, i, e)
        {
                sum += num(e, "share");
        }
        near(sum, 1.0);

        e = json_array_get(json_object_get(f->d, "cpus"), 0);
        assert_int_equal(json_integer_value(json_object_get(e, "kept")), 1000);
        assert_int_equal(json_integer_value(json_object_get(e, "interruptions")), 1200);
        assert_int_equal(json_integer_value(json_object_get(e, "window_ns")), WINDOW_NS);
        is(f->d, "housekeeping", "0");
        is(f->d, "window", "1m");
        is(f->d, "trace", "recording");
}

static void test_matching(void **state)
{
        Fixture *f = *state;
        json_t *e;

        make_host(f, "1");
        one_cpu_replies(f);
        diagnose(f, "1m");

        /* The task seen after it started: named, with the command, and the finding of the
         * setting on its CPU (not CPU 2's). */
        e = entry(f, "task", "python3:4242");
        is(e, "what", "task python3:4242");
        is(e, "identity", "checked");
        is(e, "command", "taskset -p -c 0 4242");
        is(e, "revert", "taskset -p -c 0-3 4242");
        is(json_object_get(e, "finding"), "severity", "warning");
        is(json_object_get(e, "finding"), "seen", "no isolcpus=");

        /* The same pid seen as cron a second before python3 started: reused, never named. */
        e = entry(f, "task", "cron:4242");
        is(e, "identity", "reused");
        is(e, "what", "task cron (exited, pid reused)");
        assert_true(json_is_null(json_object_get(e, "pid")));
        assert_null(strstr(str(e, "command"), "4242"));

        e = entry(f, "irq", "virtio1-req.0");
        is(e, "what", "irq 36 virtio1-req.0");
        is(e, "command", "echo 0 > /proc/irq/36/smp_affinity_list");
        assert_true(json_is_null(json_object_get(e, "finding"))); /* no irq_affinity finding */

        e = entry(f, "vector", "local_timer");
        is(e, "check", "nohz_full");
        is(json_object_get(e, "finding"), "seen", "no nohz_full=");

        /* The kworker that ran it, from the events: unbound, so the workqueue cpumask. */
        e = entry(f, "work", "wb_workfn");
        is(e, "command", "echo 1 > /sys/devices/virtual/workqueue/cpumask");

        /* Nothing to be done from this host: said so. */
        e = entry(f, "ipi", "flush_tlb_func");
        is(e, "when", "none");
        is(e, "command", NULL);
        assert_non_null(strstr(str(e, "note"), "no fix is known"));
        e = entry(f, "unexplained", "");
        is(e, "when", "none");
        e = entry(f, "untraced", "");
        is(e, "what", "not traced");
        is(e, "when", "none");

        /* Time without a record on a guest: the host's to fix. */
        e = entry(f, "no_record", "");
        is(e, "what", "hypervisor");
        is(e, "when", "host");
        is(e, "command", NULL);
        assert_non_null(str(e, "ask_host"));
}

/* A cause on two CPUs is one entry: its time summed, its gain over both windows. */
static void test_two_cpus(void **state)
{
        Fixture *f = *state;
        json_t *e;

        make_host(f, "1-2");
        f->causes = load("{\"trace\": \"recording\", \"cpus\": ["
                         "{\"cpu\": 1, \"since_ns\": 0, \"interruptions\": 10, "
                         "\"interruptions_ns\": 3000, \"explained\": 10, \"explained_ns\": 3000, "
                         "\"trace_lost\": 0, \"other_ns\": 0, \"unexplained_ns\": 1000, "
                         "\"causes\": [{\"kind\": \"vector\", \"name\": \"local_timer\", "
                         "\"ns\": 2000, \"count\": 10}]},"
                         "{\"cpu\": 2, \"since_ns\": 0, \"interruptions\": 10, "
                         "\"interruptions_ns\": 5000, \"explained\": 10, \"explained_ns\": 5000, "
                         "\"trace_lost\": 0, \"other_ns\": 0, \"unexplained_ns\": 0, "
                         "\"causes\": [{\"kind\": \"vector\", \"name\": \"local_timer\", "
                         "\"ns\": 5000, \"count\": 10}]}]}");
        f->stats = load("{\"cpus\": [{\"cpu\": 1, \"duration_ns\": 10000000000}, "
                        "{\"cpu\": 2, \"duration_ns\": 30000000000}]}");
        diagnose(f, "all");
        assert_int_equal(json_array_size(json_object_get(f->d, "causes")), 2);
        e = entry(f, "vector", "local_timer");
        assert_int_equal(json_integer_value(json_object_get(e, "ns")), 7000);
        assert_int_equal(json_integer_value(json_object_get(e, "count")), 20);
        assert_int_equal(json_array_size(json_object_get(e, "cpus")), 2);
        near(num(e, "share"), 7000.0 / 8000.0);
        near(num(e, "gain_pct"), 100.0 * 7000.0 / 40e9);
        /* The tick of CPU 1 (not in nohz_full=) is what the texts name. */
        is(e, "command", "nohz_full=1-3");
        /* Without events or an interruption time, a window from the start cannot vouch for a
         * task's pid: nothing here asks it to. Without the audit, no finding. */
        assert_true(json_is_null(json_object_get(e, "finding")));
}

static char *print(Fixture *f, double min_share);
static void contains(const char *text, const char *part);

/* The shares of the diagnosis add up to 1. */
static void check_sum_is_one(Fixture *f)
{
        double sum = 0;
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(f->d, "causes"), i, e)
        {
                sum += num(e, "share");
        }
        near(sum, 1.0);
}

/* A daemon that accounts for every nanosecond: traced_ns is what the parts add up to, and
 * explained leaves out the interruptions without a record; the steal time and SMI count stand
 * beside the hypervisor, the overhead beside the handler's time. */
static void test_account(void **state)
{
        Fixture *f = *state;
        json_t *e, *c;
        double sum = 0;
        char *text;
        size_t i;

        make_host(f, "1");
        /* 600 + 300 (its overhead) + 100 + 400 + 200 + 150 = 1750 traced of 2000: 250 untraced. */
        f->causes = load("{\"trace\": \"recording\", \"cpus\": [{\"cpu\": 1, \"since_ns\": 0, "
                         "\"interruptions\": 20, \"interruptions_ns\": 2000, \"traced\": 18, "
                         "\"traced_ns\": 1750, \"explained\": 15, \"explained_ns\": 1350, "
                         "\"trace_lost\": 2, \"trace_lost_ns\": 40, \"causes\": ["
                         "{\"kind\": \"vector\", \"name\": \"local_timer\", \"ns\": 600, "
                         "\"overhead_ns\": 300, \"count\": 15, \"counter\": \"irq:LOC\"},"
                         "{\"kind\": \"softirq\", \"name\": \"RCU\", \"ns\": 100, "
                         "\"overhead_ns\": 0, \"count\": 2, \"counter\": null}], "
                         "\"other_ns\": 200, \"overhead_ns\": 300, \"no_record\": 3, "
                         "\"no_record_ns\": 400, \"unexplained_ns\": 150, \"steal_ns\": 5000, "
                         "\"smi\": null, \"woken_by\": {}}]}");
        f->stats = load("{\"cpus\": [{\"cpu\": 1, \"duration_ns\": 10000000000}]}");
        diagnose(f, "10s");
        e = entry(f, "vector", "local_timer");
        assert_int_equal(json_integer_value(json_object_get(e, "ns")), 900);
        assert_int_equal(json_integer_value(json_object_get(e, "overhead_ns")), 300);
        e = entry(f, "untraced", "");
        assert_int_equal(json_integer_value(json_object_get(e, "ns")), 250);
        assert_int_equal(json_integer_value(json_object_get(e, "count")), 2);
        e = entry(f, "no_record", "");
        assert_int_equal(json_integer_value(json_object_get(e, "ns")), 400);
        assert_int_equal(json_integer_value(json_object_get(e, "count")), 3);
        is(e, "what", "hypervisor");
        is(e, "when", "host");
        assert_non_null(str(e, "ask_host"));
        assert_int_equal(json_integer_value(json_object_get(e, "steal_ns")), 5000);
        assert_true(json_is_null(json_object_get(e, "smi")));
        check_sum_is_one(f);
        json_array_foreach(json_object_get(f->d, "causes"), i, c)
        {
                sum += (double)json_integer_value(json_object_get(c, "ns"));
        }
        near(sum, 2000);
        c = json_array_get(json_object_get(f->d, "cpus"), 0);
        assert_int_equal(json_integer_value(json_object_get(c, "trace_lost_ns")), 40);
        assert_int_equal(json_integer_value(json_object_get(c, "steal_ns")), 5000);

        text = print(f, 0);
        contains(text, "       overhead:       300 ns of it the way into the kernel and out\n");
        contains(text, "       steal time:     5.00 \xc2\xb5s in the window");
        contains(text, "       the trace lost records in 2 of them: 40 ns of their time is "
                       "unexplained for it\n");
        free(text);
}

/* What the replies get wrong is left out; what is missing is said as unknown. */
static void test_malformed(void **state)
{
        Fixture *f = *state;
        DiagnosisInput in = {.window = "1m"};
        json_t *e;

        make_host(f, "1");
        f->causes = load("{\"trace\": \"recording\", \"cpus\": ["
                         "{\"cpu\": \"one\", \"interruptions_ns\": 5},"
                         "{\"cpu\": -1, \"interruptions_ns\": 5},"
                         "{\"cpu\": 1, \"interruptions\": 3, \"interruptions_ns\": 3000, "
                         "\"explained\": 3, \"explained_ns\": 3000, \"causes\": ["
                         "{\"kind\": \"task\", \"name\": \"a:1\", \"ns\": -5},"
                         "{\"kind\": \"task\", \"ns\": 50},"
                         "{\"kind\": \"softirq\", \"name\": \"TIMER\", \"ns\": 1.5},"
                         "{\"kind\": \"mystery\", \"name\": \"x\", \"ns\": 3000, \"count\": 3},"
                         "{\"kind\": \"task\", \"name\": \"nopid\", \"ns\": 0}]}]}");
        diagnose(f, "1m");
        assert_int_equal(json_array_size(json_object_get(f->d, "cpus")), 1);
        assert_int_equal(json_array_size(json_object_get(f->d, "causes")), 1);
        e = entry(f, "mystery", "x");
        is(e, "what", "mystery x");
        is(e, "when", "none");
        /* No timeline figures: no gain, the share still. */
        assert_true(json_is_null(json_object_get(e, "gain_pct")));
        near(num(e, "share"), 1.0);
        e = json_array_get(json_object_get(f->d, "cpus"), 0);
        assert_true(json_is_null(json_object_get(e, "window_ns")));

        /* No causes, no host: nothing to build on. */
        assert_int_equal(diagnosis_build(&in, &e), -EINVAL);
        in.causes = f->causes;
        assert_int_equal(diagnosis_build(&in, &e), -EINVAL);
}

static char *print(Fixture *f, double min_share)
{
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);

        assert_non_null(out);
        diagnosis_print(f->d, out, min_share, false);
        assert_int_equal(fclose(out), 0);
        return text;
}

static void contains(const char *text, const char *part)
{
        if (!strstr(text, part)) {
                print_error("no \"%s\" in:\n%s\n", part, text);
                fail();
        }
}

static void test_print(void **state)
{
        Fixture *f = *state;
        char *text;

        make_host(f, "1");
        one_cpu_replies(f);
        diagnose(f, "1m");
        text = print(f, 0);
        contains(text, "window 1m, trace recording; fixes move things to the housekeeping CPUs: 0");
        contains(text,
                 "CPU 1: 1000 interruptions took 10.0 ms of 60.0 s; 100 % of the CPU available");
        contains(text, "(causes of the newest 1000 of 1200 interruptions kept)");
        contains(text, "  1. task python3:4242  4.00 ms, 40.0 % of the interruptions' time; "
                       "removing it gives back 0.00667 % of the CPU\n");
        contains(text, "       fix (now):      taskset -p -c 0 4242\n");
        contains(text, "       undo:           taskset -p -c 0-3 4242\n");
        contains(text, "       audit:          isolcpus warning: no isolcpus=\n");
        contains(text, "       fix (at boot):  nohz_full=1-3\n");
        contains(text, "       ask the host:   Ask the host for a dedicated physical CPU");
        contains(text, "       no fix known:   Other CPUs send it");
        contains(text, "  6. task cron (exited, pid reused)");
        contains(text, "doctor changes nothing");
        free(text);

        /* Under 6 % of the time, only the sum: cron 0.5, wb_workfn 0.3, flush_tlb_func 0.2,
         * other 0.1 and the untraced 0.1 of 10 ms. */
        text = print(f, 0.06);
        contains(text, "  5. hypervisor");
        contains(text, "\n5 more causes took 12.0 % of the time (--json lists them all).\n");
        assert_null(strstr(text, "  6. "));
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_ranking, setup, teardown),
                cmocka_unit_test_setup_teardown(test_matching, setup, teardown),
                cmocka_unit_test_setup_teardown(test_two_cpus, setup, teardown),
                cmocka_unit_test_setup_teardown(test_account, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_print, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* jitter-probe: measure the jitter of one or more CPUs once, for a fixed time, and report. */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "counter.h"
#include "cpulist.h"
#include "host.h"
#include "isolation.h"
#include "duration.h"
#include "probe.h"
#include "report.h"
#include "summary-json.h"
#include "summary.h"
#include "util.h"
#ifdef JITTER_PROBE_TEST_HOOKS
#include "test-hooks.h"
#endif

#define MAX_EVENTS_KEPT 100000

typedef struct Event {
        uint64_t start_ticks;
        uint64_t duration_ticks;
} Event;

/* How long a probe may take beyond its preheat to start recording (pinning, and the
 * scheduling of a busy host), to take a new interval, and to stop. */
#define START_SLACK_NS 5000000000ULL
#define ACK_TIMEOUT_NS NSEC_PER_SEC

typedef struct Run {
        int cpu;
        Probe *probe;
        ProbeSlot total;
        RingReader reader;
        Event *events;
        size_t n_events;
        uint64_t events_dropped; /* lost in the ring, or beyond what we keep */
        uint64_t harvest_epoch;
        uint64_t duration_ns;
        uint64_t advanced_ns;         /* when the current interval was started */
        uint64_t migrations_at_start; /* before the recording */
        bool ack_late;                /* said once that the probe did not take it in time */
#ifdef JITTER_PROBE_TEST_HOOKS
        TestHooksState test; /* what JITTER_PROBE_TEST_HOOKS asks this probe to see */
        ProbeHooks hooks;
#endif
} Run;

typedef struct Options {
        cpu_set_t cpus;
        bool cpus_set;
        uint64_t duration_ns;
        uint64_t threshold_ns;
        uint64_t preheat_ns;
        int priority;
        CounterSource counter;
        bool json;
        bool quiet;
} Options;

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
        (void)sig;
        interrupted = 1;
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: jitter-probe [OPTIONS]\n"
                   "Measure how often and for how long CPUs are taken away from a busy loop.\n\n"
                   "  -c, --cpus LIST        CPUs to probe (default: the CPUs isolated at boot or\n"
                   "                         by cpusets, else the last CPU)\n"
                   "  -d, --duration DUR     how long to record (default 10s; e.g. 500ms, 5m, 2h)\n"
                   "      --threshold DUR    a gap this long is an interruption (default 10us)\n"
                   "      --preheat DUR      run this long before recording (default 1s)\n"
                   "      --priority N       run the probes SCHED_FIFO at priority N (1-99)\n"
                   "      --counter SOURCE   tsc (hardware counter, default) or clock\n"
                   "      --json             print the result as JSON\n"
                   "  -q, --quiet            no progress line\n"
                   "  -h, --help             show this help\n"
                   "  -V, --version          show the version\n");
}

static int fail_usage(const char *fmt, const char *arg)
{
        fprintf(stderr, "jitter-probe: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\nTry 'jitter-probe --help'.\n");
        return 2;
}

enum { OPT_THRESHOLD = 256, OPT_PRIORITY, OPT_COUNTER, OPT_JSON, OPT_PREHEAT };

/* Parses the value @arg of option @c into @o. Returns 0, or 2 after saying what is wrong. */
static int parse_value(int c, const char *arg, Options *o)
{
        char *end;
        long v;

        switch (c) {
        case 'c':
                if (cpulist_parse(arg, &o->cpus) < 0 || CPU_COUNT(&o->cpus) == 0) {
                        return fail_usage("invalid CPU list '%s' (use e.g. 3, 2-5 or 1,3)", arg);
                }
                o->cpus_set = true;
                return 0;
        case 'd':
                if (duration_parse(arg, NSEC_PER_SEC, &o->duration_ns) < 0 ||
                    o->duration_ns < 1000000ULL) {
                        return fail_usage("invalid duration '%s' (use e.g. 500ms, 10s, 5m, 2h; at "
                                          "least 1ms)",
                                          arg);
                }
                return 0;
        case OPT_THRESHOLD:
                if (duration_parse(arg, 1000ULL, &o->threshold_ns) < 0 || o->threshold_ns < 100 ||
                    o->threshold_ns > NSEC_PER_SEC) {
                        return fail_usage("invalid threshold '%s' (use e.g. 5us, 20us, 1ms; "
                                          "between 100ns and 1s)",
                                          arg);
                }
                return 0;
        case OPT_PREHEAT:
                if (duration_parse(arg, NSEC_PER_SEC, &o->preheat_ns) < 0 ||
                    o->preheat_ns > 60 * NSEC_PER_SEC) {
                        return fail_usage("invalid preheat '%s' (use e.g. 500ms, 1s; at most 60s)",
                                          arg);
                }
                return 0;
        case OPT_PRIORITY:
                errno = 0;
                v = strtol(arg, &end, 10);
                if (errno != 0 || *end != '\0' || end == arg || v < 0 || v > 99) {
                        return fail_usage("invalid priority '%s' (0 for SCHED_OTHER, 1-99 for "
                                          "SCHED_FIFO)",
                                          arg);
                }
                o->priority = (int)v;
                return 0;
        case OPT_COUNTER:
                if (counter_source_parse(arg, &o->counter) < 0) {
                        return fail_usage("invalid counter '%s' (use tsc or clock)", arg);
                }
                return 0;
        default:
                fprintf(stderr, "Try 'jitter-probe --help'.\n");
                return 2;
        }
}

static int parse_args(int argc, char **argv, Options *o)
{
        static const struct option longopts[] = {
                {"cpus", required_argument, NULL, 'c'},
                {"duration", required_argument, NULL, 'd'},
                {"threshold", required_argument, NULL, OPT_THRESHOLD},
                {"preheat", required_argument, NULL, OPT_PREHEAT},
                {"priority", required_argument, NULL, OPT_PRIORITY},
                {"counter", required_argument, NULL, OPT_COUNTER},
                {"json", no_argument, NULL, OPT_JSON},
                {"quiet", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        int c, r;

        *o = (Options){
                .duration_ns = 10 * NSEC_PER_SEC,
                .threshold_ns = 10000,
                .preheat_ns = NSEC_PER_SEC,
                .counter = COUNTER_HW,
        };
        while ((c = getopt_long(argc, argv, "c:d:qhV", longopts, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        o->json = true;
                        break;
                case 'q':
                        o->quiet = true;
                        break;
                case 'h':
                        usage(stdout);
                        exit(0);
                case 'V':
                        printf("jitter-probe %s\n", JITTERD_VERSION);
                        exit(0);
                default:
                        r = parse_value(c, optarg, o);
                        if (r != 0) {
                                return r;
                        }
                }
        }
        if (optind < argc) {
                return fail_usage("unexpected argument '%s'", argv[optind]);
        }
        return 0;
}

/* Picks and checks the CPUs: every one must exist, be online and be in our allowed set. */
static int choose_cpus(Options *o)
{
        cpu_set_t allowed;
        char buf[256];

        if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
                fprintf(stderr, "jitter-probe: cannot read the allowed CPUs: %s\n",
                        strerror(errno));
                return 1;
        }
        if (!o->cpus_set) {
                cpu_set_t isolated;
                Isolation iso;

                /* isolcpus= and the cpusets that isolate CPUs at run time alike. */
                CPU_ZERO(&isolated);
                if (isolation_read(NULL, &iso) == 0) {
                        isolation_cpus(&iso, &isolated);
                }
                CPU_AND(&o->cpus, &isolated, &allowed);
                if (CPU_COUNT(&o->cpus) == 0) {
                        CPU_ZERO(&o->cpus);
                        CPU_SET(cpulist_last(&allowed), &o->cpus);
                }
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, &o->cpus)) {
                        continue;
                }
                if (!host_cpu_online(cpu)) {
                        fprintf(stderr,
                                "jitter-probe: CPU %d is offline or does not exist (online CPUs: "
                                "see /sys/devices/system/cpu/online)\n",
                                cpu);
                        return 1;
                }
                if (!CPU_ISSET(cpu, &allowed)) {
                        fprintf(stderr,
                                "jitter-probe: CPU %d is not in this process's allowed CPUs (%s); "
                                "run it outside the cpuset/taskset that excludes it\n",
                                cpu, cpulist_format(buf, sizeof(buf), &allowed));
                        return 1;
                }
        }
        return 0;
}

#ifdef JITTER_PROBE_TEST_HOOKS
/* The test build (jitter-probe-test-hooks, never installed) reads JITTER_PROBE_TEST_HOOKS,
 * which stands in for the hardware of hosts the tests cannot run on (see test-hooks.h).
 * Returns 0, or 2 after saying what is wrong. */
static int parse_test_hooks(TestHooks *ret)
{
        char err[160];

        if (test_hooks_parse(getenv("JITTER_PROBE_TEST_HOOKS"), ret, err, sizeof(err)) < 0) {
                return fail_usage("JITTER_PROBE_TEST_HOOKS: %s", err);
        }
        return 0;
}
#endif

static void explain_start_error(int cpu, int r, const Options *o)
{
        if (r == -EPERM && o->priority > 0) {
                fprintf(stderr,
                        "jitter-probe: cannot run CPU %d's probe SCHED_FIFO: it needs "
                        "CAP_SYS_NICE or RLIMIT_RTPRIO >= %d (run as root, 'setcap "
                        "cap_sys_nice+ep jitter-probe', or raise 'ulimit -r'), or drop "
                        "--priority\n",
                        cpu, o->priority);
        } else if (r == -EINVAL) {
                fprintf(stderr,
                        "jitter-probe: cannot pin a probe to CPU %d: %s (offline or "
                        "outside the allowed set?)\n",
                        cpu, strerror(-r));
        } else {
                fprintf(stderr, "jitter-probe: cannot start the probe on CPU %d: %s\n", cpu,
                        strerror(-r));
        }
}

static void drain_events(Run *run)
{
        uint64_t start, dur;

        while (ring_pop(probe_ring(run->probe), &run->reader, &start, &dur) == 1) {
                if (run->n_events < MAX_EVENTS_KEPT) {
                        run->events[run->n_events++] = (Event){start, dur};
                } else {
                        run->events_dropped++;
                }
        }
}

/* Folds every interval the probe has moved on from (all of them once it has stopped) into the
 * run's total. */
static void harvest(Run *run)
{
        ProbeSlot slot;

        while (run->harvest_epoch < probe_epoch(run->probe)) {
                int r = probe_harvest(run->probe, run->harvest_epoch, &slot);

                if (r == -EAGAIN) {
                        break;
                }
                if (r == 0) {
                        slot_merge(&run->total, &slot);
                }
                run->harvest_epoch++;
        }
}

/* Starts a new interval once the probe has taken the last one. The probe takes it within
 * PROBE_CHECK_EVERY samples (microseconds) unless something keeps it off the CPU; after
 * ACK_TIMEOUT_NS that is said, once. Nothing is lost: the interval is harvested when taken. */
static void advance(Run *run)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC);

        if (probe_advance(run->probe) > 0) {
                run->advanced_ns = now;
                run->ack_late = false;
        } else if (!run->ack_late && now - run->advanced_ns > ACK_TIMEOUT_NS &&
                   probe_acked_epoch(run->probe) != probe_epoch(run->probe)) {
                fprintf(stderr,
                        "jitter-probe: warning: the probe on CPU %d has not taken a new "
                        "interval for %.1f s (it is %s); its samples are counted once it does\n",
                        run->cpu, (double)(now - run->advanced_ns) / 1e9,
                        probe_state_name(probe_state(run->probe)));
                run->ack_late = true;
        }
}

/* Starts the run's first interval and drops what was recorded before: waits, at most
 * ACK_TIMEOUT_NS, for the probe to take it. Returns 0, or 1 after saying why not. */
static int start_fresh(Run *run)
{
        uint64_t start = now_ns(CLOCK_MONOTONIC);
        int64_t e = probe_advance(run->probe);

        while (e > 0 && probe_acked_epoch(run->probe) < (uint64_t)e &&
               now_ns(CLOCK_MONOTONIC) - start < ACK_TIMEOUT_NS) {
                struct timespec ts = {0, 50000};

                nanosleep(&ts, NULL);
        }
        if (e < 0 || probe_acked_epoch(run->probe) < (uint64_t)e) {
                fprintf(stderr,
                        "jitter-probe: the probe on CPU %d did not take a new interval within "
                        "%.1f s (it is %s; starved by a higher-priority task on that CPU?)\n",
                        run->cpu, (double)ACK_TIMEOUT_NS / 1e9,
                        probe_state_name(probe_state(run->probe)));
                return 1;
        }
        run->advanced_ns = now_ns(CLOCK_MONOTONIC);
        run->migrations_at_start = probe_migrations(run->probe);
        harvest(run);
        slot_clear(&run->total);
        return 0;
}

/* Says why the probe of @run failed or stopped, if it did before it was told to. */
static bool report_failed(const Run *run, bool told_to_stop)
{
        ProbeState s = probe_state(run->probe);

        if (s == PROBE_FAILED) {
                fprintf(stderr, "jitter-probe: %s\n", probe_failure(run->probe));
                return true;
        }
        if (s == PROBE_STOPPED && !told_to_stop) {
                fprintf(stderr, "jitter-probe: the probe on CPU %d stopped\n", run->cpu);
                return true;
        }
        return false;
}

/* Waits until every probe records, at most their preheat and START_SLACK_NS. Returns 0, or 1
 * after saying which probe did not and where it was stuck. */
static int wait_running(Run *runs, size_t n, const Options *o)
{
        const uint64_t limit = o->preheat_ns + START_SLACK_NS, start = now_ns(CLOCK_MONOTONIC);
        char d[32];

        for (;;) {
                bool all = true;

                for (size_t i = 0; i < n; i++) {
                        if (report_failed(&runs[i], false)) {
                                return 1;
                        }
                        all = all && probe_state(runs[i].probe) == PROBE_RUNNING;
                }
                if (all || interrupted) {
                        return 0;
                }
                if (now_ns(CLOCK_MONOTONIC) - start > limit) {
                        break;
                }
                usleep(10000);
        }
        duration_format(d, sizeof(d), limit);
        for (size_t i = 0; i < n; i++) {
                ProbeState s = probe_state(runs[i].probe);

                if (s == PROBE_MIGRATED) {
                        fprintf(stderr,
                                "jitter-probe: the probe on CPU %d is still migrated after %s: it "
                                "is on CPU %d and cannot go back (CPU offline, or taken out of "
                                "the cpuset?)\n",
                                runs[i].cpu, d, probe_migrated_to(runs[i].probe));
                } else if (s != PROBE_RUNNING) {
                        fprintf(stderr,
                                "jitter-probe: the probe on CPU %d is still %s after %s (starved "
                                "by a higher-priority task on that CPU?)\n",
                                runs[i].cpu, probe_state_name(s), d);
                }
        }
        return 1;
}

/* Stops every probe, in parallel, each within PROBE_STOP_TIMEOUT_NS of the request. Returns 0,
 * or 1 after naming the probes that did not stop. */
static int stop_all(Run *runs, size_t n)
{
        int ret = 0;

        for (size_t i = 0; i < n; i++) {
                probe_request_stop(runs[i].probe);
        }
        for (size_t i = 0; i < n; i++) {
                if (probe_stop(runs[i].probe) < 0) {
                        fprintf(stderr,
                                "jitter-probe: the probe on CPU %d did not stop within %.0f s "
                                "(it is %s; starved by a higher-priority task on that CPU?)\n",
                                runs[i].cpu, (double)PROBE_STOP_TIMEOUT_NS / 1e9,
                                probe_state_name(probe_state(runs[i].probe)));
                        ret = 1;
                }
        }
        return ret;
}

static void progress(const Run *runs, size_t n, const CounterInfo *ci, uint64_t elapsed,
                     uint64_t total)
{
        uint64_t samples = 0, worst = 0;
        char w[32];

        for (size_t i = 0; i < n; i++) {
                samples += runs[i].total.gap.count;
                if (runs[i].total.gap.count && runs[i].total.gap.max > worst) {
                        worst = runs[i].total.gap.max;
                }
        }
        fprintf(stderr, "\r\033[K%6.1f / %.1f s  %'14" PRIu64 " samples  worst gap %s",
                (double)elapsed / 1e9, (double)total / 1e9, samples,
                duration_format(w, sizeof(w), tickconv_to_ns(&ci->conv, worst)));
        fflush(stderr);
}

static json_t *run_to_json(const Run *run, const CounterInfo *ci, const ClockPair *ref)
{
        SlotSummary s;
        json_t *o, *events;

        slot_summarize(&run->total, &ci->conv, run->duration_ns, &s);
        o = slot_summary_to_json(&s);
        events = json_array();
        for (size_t i = 0; i < run->n_events; i++) {
                uint64_t mono, real;
                char when[64];

                clock_pair_map(ref, &ci->conv, run->events[i].start_ticks, &mono, &real);
                json_array_append_new(
                        events,
                        json_pack("{sI ss sI}", "start_ns", (json_int_t)mono, "realtime",
                                  realtime_format_iso8601(when, sizeof(when), real), "duration_ns",
                                  (json_int_t)tickconv_to_ns(&ci->conv,
                                                             run->events[i].duration_ticks)));
        }
        json_object_set_new(o, "cpu", json_integer(run->cpu));
        json_object_set_new(o, "histogram",
                            histogram_to_json(&run->total.gap_hist, &ci->conv, HIST_SUB_BITS));
        json_object_set_new(
                o, "diffdiff_histogram",
                signed_histogram_to_json(&run->total.dd_hist, &ci->conv, HIST_SUB_BITS));
        json_object_set_new(o, "events", events);
        json_object_set_new(o, "events_dropped", json_integer((json_int_t)run->events_dropped));
        json_object_set_new(
                o, "floor_ns",
                json_integer((json_int_t)tickconv_to_ns(&ci->conv, probe_floor_ticks(run->probe))));
        json_object_set_new(o, "cpu_number_source",
                            json_string(probe_cpu_source_name(probe_cpu_source(run->probe))));
        json_object_set_new(o, "migrations",
                            json_integer((json_int_t)probe_migrations(run->probe)));
        return o;
}

static void print_text(const Run *run, const CounterInfo *ci, const Options *o,
                       const ReportSanity *sanity, bool color)
{
        SlotSummary s;
        ReportBucket *b;
        int n;

        slot_summarize(&run->total, &ci->conv, run->duration_ns, &s);
        printf("CPU %d: %.3f s, %" PRIu64 " samples (%.2f M/s), loop floor %" PRIu64 " ns\n\n",
               run->cpu, (double)s.duration_ns / 1e9, s.samples,
               s.duration_ns ? (double)s.samples * 1e3 / (double)s.duration_ns : 0.0,
               tickconv_to_ns(&ci->conv, probe_floor_ticks(run->probe)));
#if defined(__x86_64__)
        /* Worth knowing on x86-64, where the CPU number is TSC_AUX when it can be: that this
         * host's TSC_AUX is not the CPU number, or that the CPU (as CPUID says) has no rdtscp. */
        if (probe_cpu_source(run->probe) != PROBE_CPU_SOURCE_TSC_AUX) {
                printf("note: %s\n\n", probe_cpu_source_note(run->probe));
        }
#endif
        report_statistics(stdout, &s, o->threshold_ns);
        if (run->events_dropped) {
                printf("  EVENTS DROPPED: %" PRIu64 " (not all interruptions listed)\n",
                       run->events_dropped);
        }
        printf("\nHISTOGRAM OF GAPS\n-----------------\n");
        n = report_buckets_from_histogram(&run->total.gap_hist, &ci->conv, &b);
        if (n >= 0) {
                report_bars(stdout, b, (size_t)n, color);
                free(b);
        }
        putchar('\n');
        report_sanity(stdout, sanity);
        putchar('\n');
}

/* One run of jitter-probe, from the options to the report. */
typedef struct Session {
        Options o;
        CounterInfo ci;
        Run *runs;
        size_t n; /* probes made; runs[n] may hold the events of one that could not be */
        ClockPair start_pair, end_pair;
        ReportSanity sanity;
        uint64_t start_real, start_mono;
#ifdef JITTER_PROBE_TEST_HOOKS
        TestHooks test;
#endif
} Session;

/* Finds the counter's frequency and locks the process in RAM. Returns 0, or 1 after saying
 * why the counter cannot be used. */
static int setup_counter(Session *s)
{
        int r = counter_info_init(s->o.counter, 10.0, 2000, &s->ci);

        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "jitter-probe: this CPU has no invariant TSC (CPUID 0x80000007 "
                                "EDX bit 8), so TSC gaps are not time; use --counter clock\n");
                return 1;
        } else if (r < 0) {
                fprintf(stderr,
                        "jitter-probe: no usable hardware counter here (%s); use "
                        "--counter clock\n",
                        strerror(-r));
                return 1;
        }
        /* Lock everything so no page fault lands in the measurement. */
        if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
                fprintf(stderr,
                        "jitter-probe: warning: mlockall failed (%s): page faults may "
                        "show as gaps; grant CAP_IPC_LOCK or raise RLIMIT_MEMLOCK "
                        "('ulimit -l unlimited')\n",
                        strerror(errno));
        }
        return 0;
}

/* Makes and starts the probe of one CPU in s->runs[s->n]. Returns 0, or 1 after saying why
 * not. */
static int start_probe(Session *s, int cpu)
{
        const Options *o = &s->o;
        ProbeConfig pc = {
                .cpu = cpu,
                .priority = o->priority,
                .counter = s->ci,
                .threshold_ns = o->threshold_ns,
                .preheat_ns = o->preheat_ns,
                .ring_capacity = 8192,
        };
        Run *run = &s->runs[s->n];
        int r;

        run->cpu = cpu;
        run->harvest_epoch = 1;
        slot_clear(&run->total);
#ifdef JITTER_PROBE_TEST_HOOKS
        test_hooks_bind(&s->test, &run->test, &run->hooks);
#endif
        run->events = calloc(MAX_EVENTS_KEPT, sizeof(Event));
        r = run->events ? probe_new(&pc, &run->probe) : -ENOMEM;
        if (r == -EPERM || (r == -ENOMEM && run->events)) {
                fprintf(stderr, "jitter-probe: cannot lock the probe's memory in RAM: "
                                "grant CAP_IPC_LOCK or raise RLIMIT_MEMLOCK ('ulimit -l "
                                "unlimited', LimitMEMLOCK= in a unit)\n");
                return 1;
        } else if (r < 0) {
                fprintf(stderr, "jitter-probe: cannot set up the probe: %s\n", strerror(-r));
                return 1;
        }
        s->n++;
#ifdef JITTER_PROBE_TEST_HOOKS
        run->test.probe = run->probe;
        probe_set_hooks(&run->hooks);
#endif
        r = probe_start(run->probe);
#ifdef JITTER_PROBE_TEST_HOOKS
        probe_set_hooks(NULL); /* the probe has its copy */
#endif
        if (r < 0 && *probe_failure(run->probe)) {
                fprintf(stderr, "jitter-probe: %s\n", probe_failure(run->probe));
                return 1;
        } else if (r < 0) {
                explain_start_error(cpu, r, o);
                return 1;
        }
        return 0;
}

/* Waits for every probe to finish preheating, then starts each on a fresh slot: everything
 * recorded from here on is the run. Returns 0, or 1 after saying which probe did not. */
static int begin_recording(Session *s)
{
        if (wait_running(s->runs, s->n, &s->o) != 0) {
                return 1;
        }
        for (size_t i = 0; i < s->n; i++) {
                Run *run = &s->runs[i];

                if (start_fresh(run) != 0) {
                        return 1;
                }
                drain_events(run);
                run->n_events = 0;
                run->events_dropped = 0;
                run->reader.dropped = 0;
        }
        clock_pair_sample(s->o.counter, &s->start_pair);
        s->start_real = now_ns(CLOCK_REALTIME);
        s->start_mono = now_ns(CLOCK_MONOTONIC);
        /* Said once: what a log or a test times the rest by (calibration and preheat vary). */
        if (!s->o.quiet) {
                char cpus[256], d[32];

                fprintf(stderr, "jitter-probe: recording CPU %s for %s\n",
                        cpulist_format(cpus, sizeof(cpus), &s->o.cpus),
                        duration_format(d, sizeof(d), s->o.duration_ns));
        }
        return 0;
}

/* Records for the duration asked (or until a signal): every 100 ms reads the events and the
 * intervals the probes moved on from, and starts a new interval about once a second. Returns
 * 0, or 1 after saying which probe failed. */
static int record(Session *s)
{
        const bool live = !s->o.quiet && isatty(STDERR_FILENO);
        uint64_t elapsed = 0;

        while (!interrupted && elapsed < s->o.duration_ns) {
                uint64_t left = s->o.duration_ns - elapsed;
                uint64_t nap = left < 100000000ULL ? left : 100000000ULL;
                struct timespec ts = {(time_t)(nap / NSEC_PER_SEC), (long)(nap % NSEC_PER_SEC)};

                nanosleep(&ts, NULL);
                elapsed = now_ns(CLOCK_MONOTONIC) - s->start_mono;
                for (size_t i = 0; i < s->n; i++) {
                        if (report_failed(&s->runs[i], false)) {
                                return 1;
                        }
                        drain_events(&s->runs[i]);
                        harvest(&s->runs[i]);
                        if ((elapsed / NSEC_PER_SEC) != ((elapsed - nap) / NSEC_PER_SEC)) {
                                advance(&s->runs[i]);
                        }
                }
                if (live) {
                        progress(s->runs, s->n, &s->ci, elapsed, s->o.duration_ns);
                }
        }
        if (live) {
                fprintf(stderr, "\r\033[K");
        }
        return 0;
}

/* Stops the probes and takes in what they recorded last: stopped, a probe writes nothing more,
 * so its last interval is harvested without waiting. Returns 0, or 1 after saying which probe
 * did not stop or had failed. */
static int finish_recording(Session *s)
{
        if (stop_all(s->runs, s->n) != 0) {
                return 1;
        }
        clock_pair_sample(s->o.counter, &s->end_pair);
        s->sanity.realtime_ns = (double)(now_ns(CLOCK_REALTIME) - s->start_real);
        s->sanity.counter_ns =
                (double)tickconv_to_ns(&s->ci.conv, s->end_pair.ticks - s->start_pair.ticks);
        for (size_t i = 0; i < s->n; i++) {
                Run *run = &s->runs[i];
                uint64_t moved;

                if (report_failed(run, true)) {
                        return 1;
                }
                probe_advance(run->probe);
                harvest(run);
                drain_events(run);
                run->events_dropped += run->reader.dropped;
                run->duration_ns =
                        run->total.end_ticks > run->total.start_ticks
                                ? tickconv_to_ns(&s->ci.conv,
                                                 run->total.end_ticks - run->total.start_ticks)
                                : 0;
                moved = probe_migrations(run->probe) - run->migrations_at_start;
                if (moved > 0) {
                        fprintf(stderr,
                                "jitter-probe: warning: the probe on CPU %d was moved off it "
                                "%" PRIu64
                                " time(s) while recording; it recorded nothing while away\n",
                                run->cpu, moved);
                }
        }
        return 0;
}

static void print_json(const Session *s)
{
        const CounterInfo *ci = &s->ci;
        const ReportSanity *sanity = &s->sanity;
        json_t *cpus = json_array();
        json_t *root =
                json_pack("{s{ss sI ss sf} so s{sf sf sf}}", "counter", "source",
                          counter_source_name(ci->source), "hz", (json_int_t)ci->hz, "hz_source",
                          counter_hz_source_name(ci->hz_source), "precision_ppm", ci->precision_ppm,
                          "cpus", cpus, "sanity", "realtime_elapsed_ns", sanity->realtime_ns,
                          "counter_elapsed_ns", sanity->counter_ns, "drift_ppm",
                          sanity->realtime_ns > 0 ? (sanity->counter_ns - sanity->realtime_ns) /
                                                            sanity->realtime_ns * 1e6
                                                  : 0.0);

        json_object_set_new(root, "threshold_ns", json_integer((json_int_t)s->o.threshold_ns));
        /* The recording window, so events can be matched to what else happened. */
        json_object_set_new(root, "start_ns", json_integer((json_int_t)s->start_pair.mono_ns));
        json_object_set_new(root, "end_ns", json_integer((json_int_t)s->end_pair.mono_ns));
        for (size_t i = 0; i < s->n; i++) {
                json_array_append_new(cpus, run_to_json(&s->runs[i], ci, &s->start_pair));
        }
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(root);
}

static void print_report(const Session *s)
{
        const CounterInfo *ci = &s->ci;
        bool color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");

        if (s->o.json) {
                print_json(s);
                return;
        }
        printf("counter: %s, %.6f MHz (%s", counter_source_name(ci->source), (double)ci->hz / 1e6,
               counter_hz_source_name(ci->hz_source));
        if (ci->hz_source == COUNTER_HZ_CALIBRATED) {
                printf(", precision %.2f ppm", ci->precision_ppm);
        }
        printf(")\n\n");
        for (size_t i = 0; i < s->n; i++) {
                print_text(&s->runs[i], ci, &s->o, &s->sanity, color);
        }
}

/* Stops (if still running) and frees every probe and what the session holds. */
static void session_free(Session *s)
{
        if (!s->runs) {
                return;
        }
        for (size_t i = 0; i < s->n; i++) {
                probe_free(s->runs[i].probe);
                free(s->runs[i].events);
        }
        if (s->n < (size_t)CPU_COUNT(&s->o.cpus)) {
                free(s->runs[s->n].events);
        }
        free(s->runs);
}

/* Exit status: 0 done, 1 a failure (said on stderr), 2 bad usage. */
int main(int argc, char **argv)
{
        Session s = {0};
        int r, ret = 1;

        r = parse_args(argc, argv, &s.o);
        if (r != 0) {
                return r;
        }
#ifdef JITTER_PROBE_TEST_HOOKS
        if (parse_test_hooks(&s.test) != 0) {
                return 2;
        }
#endif
        if (choose_cpus(&s.o) != 0 || setup_counter(&s) != 0) {
                return 1;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        s.runs = calloc(CPU_COUNT(&s.o.cpus), sizeof(Run));
        if (!s.runs) {
                fprintf(stderr, "jitter-probe: out of memory\n");
                return 1;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (CPU_ISSET(cpu, &s.o.cpus) && start_probe(&s, cpu) != 0) {
                        goto out;
                }
        }
        if (begin_recording(&s) != 0 || record(&s) != 0 || finish_recording(&s) != 0) {
                goto out;
        }
        print_report(&s);
        ret = 0;
out:
        session_free(&s);
        return ret;
}

/* jitter-probe: measure the jitter of one or more CPUs once, for a fixed time, and report. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "counter.h"
#include "cpulist.h"
#include "isolation.h"
#include "duration.h"
#include "probe.h"
#include "report.h"
#include "summary-json.h"
#include "summary.h"

#define MAX_EVENTS_KEPT 100000

typedef struct Event {
        uint64_t start_ticks;
        uint64_t duration_ticks;
} Event;

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

static int parse_args(int argc, char **argv, Options *o)
{
        enum { OPT_THRESHOLD = 256, OPT_PRIORITY, OPT_COUNTER, OPT_JSON, OPT_PREHEAT };
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
        int c;

        *o = (Options){
                .duration_ns = 10ULL * 1000000000ULL,
                .threshold_ns = 10000,
                .preheat_ns = 1000000000ULL,
                .counter = COUNTER_HW,
        };
        while ((c = getopt_long(argc, argv, "c:d:qhV", longopts, NULL)) >= 0) {
                char *end;
                long v;

                switch (c) {
                case 'c':
                        if (cpulist_parse(optarg, &o->cpus) < 0 || CPU_COUNT(&o->cpus) == 0) {
                                return fail_usage("invalid CPU list '%s' (use e.g. 3, 2-5 or 1,3)",
                                                  optarg);
                        }
                        o->cpus_set = true;
                        break;
                case 'd':
                        if (duration_parse(optarg, 1000000000ULL, &o->duration_ns) < 0 ||
                            o->duration_ns < 1000000ULL) {
                                return fail_usage("invalid duration '%s' (use e.g. 500ms, 10s, 5m, "
                                                  "2h; at least 1ms)",
                                                  optarg);
                        }
                        break;
                case OPT_THRESHOLD:
                        if (duration_parse(optarg, 1000ULL, &o->threshold_ns) < 0 ||
                            o->threshold_ns < 100 || o->threshold_ns > 1000000000ULL) {
                                return fail_usage(
                                        "invalid threshold '%s' (use e.g. 5us, 20us, 1ms; "
                                        "between 100ns and 1s)",
                                        optarg);
                        }
                        break;
                case OPT_PREHEAT:
                        if (duration_parse(optarg, 1000000000ULL, &o->preheat_ns) < 0 ||
                            o->preheat_ns > 60ULL * 1000000000ULL) {
                                return fail_usage("invalid preheat '%s' (use e.g. 500ms, 1s; at "
                                                  "most 60s)",
                                                  optarg);
                        }
                        break;
                case OPT_PRIORITY:
                        errno = 0;
                        v = strtol(optarg, &end, 10);
                        if (errno != 0 || *end != '\0' || end == optarg || v < 0 || v > 99) {
                                return fail_usage("invalid priority '%s' (0 for SCHED_OTHER, 1-99 "
                                                  "for SCHED_FIFO)",
                                                  optarg);
                        }
                        o->priority = (int)v;
                        break;
                case OPT_COUNTER:
                        if (counter_source_parse(optarg, &o->counter) < 0) {
                                return fail_usage("invalid counter '%s' (use tsc or clock)",
                                                  optarg);
                        }
                        break;
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
                        fprintf(stderr, "Try 'jitter-probe --help'.\n");
                        return 2;
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
                if (!cpulist_cpu_online(cpu)) {
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

/* Moves the probe to a new epoch and folds every finished one into the run's total. */
static void harvest(Run *run)
{
        ProbeSlot slot;
        int64_t e = probe_advance(run->probe);

        /* The probe acknowledges within PROBE_CHECK_EVERY samples (microseconds). */
        for (int i = 0; e > 0 && i < 2000 && probe_acked_epoch(run->probe) < (uint64_t)e; i++) {
                struct timespec ts = {0, 50000};

                nanosleep(&ts, NULL);
        }
        while (run->harvest_epoch < probe_acked_epoch(run->probe)) {
                if (probe_harvest(run->probe, run->harvest_epoch, &slot) == 0) {
                        probe_slot_merge(&run->total, &slot);
                }
                run->harvest_epoch++;
        }
}

static uint64_t now_ns(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
        json_object_set_new(o, "histogram", histogram_to_json(&run->total.gap_hist, &ci->conv));
        json_object_set_new(o, "diffdiff_histogram",
                            signed_histogram_to_json(&run->total.dd_hist, &ci->conv));
        json_object_set_new(o, "events", events);
        json_object_set_new(o, "events_dropped", json_integer((json_int_t)run->events_dropped));
        json_object_set_new(
                o, "floor_ns",
                json_integer((json_int_t)tickconv_to_ns(&ci->conv, probe_floor_ticks(run->probe))));
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

int main(int argc, char **argv)
{
        Options o;
        CounterInfo ci;
        ClockPair start_pair, end_pair;
        ReportSanity sanity;
        Run *runs;
        size_t n = 0;
        uint64_t start_real, start_mono, elapsed = 0;
        bool live, color;
        int r, ret = 0;

        r = parse_args(argc, argv, &o);
        if (r != 0) {
                return r;
        }
        if (choose_cpus(&o) != 0) {
                return 1;
        }
        r = counter_info_init(o.counter, 10.0, 2000, &ci);
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
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);

        runs = calloc(CPU_COUNT(&o.cpus), sizeof(Run));
        if (!runs) {
                fprintf(stderr, "jitter-probe: out of memory\n");
                return 1;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                ProbeConfig pc = {
                        .cpu = cpu,
                        .priority = o.priority,
                        .counter = ci,
                        .threshold_ns = o.threshold_ns,
                        .preheat_ns = o.preheat_ns,
                        .ring_capacity = 8192,
                };
                Run *run = &runs[n];

                if (!CPU_ISSET(cpu, &o.cpus)) {
                        continue;
                }
                run->cpu = cpu;
                run->harvest_epoch = 1;
                probe_slot_clear(&run->total);
                run->events = calloc(MAX_EVENTS_KEPT, sizeof(Event));
                r = run->events ? probe_new(&pc, &run->probe) : -ENOMEM;
                if (r == -EPERM || (r == -ENOMEM && run->events)) {
                        fprintf(stderr, "jitter-probe: cannot lock the probe's memory in RAM: "
                                        "grant CAP_IPC_LOCK or raise RLIMIT_MEMLOCK ('ulimit -l "
                                        "unlimited', LimitMEMLOCK= in a unit)\n");
                        ret = 1;
                        goto out;
                } else if (r < 0) {
                        fprintf(stderr, "jitter-probe: cannot set up the probe: %s\n",
                                strerror(-r));
                        ret = 1;
                        goto out;
                }
                n++;
                r = probe_start(run->probe);
                if (r < 0) {
                        explain_start_error(cpu, r, &o);
                        ret = 1;
                        goto out;
                }
        }

        /* Wait for every probe to finish preheating, then record. */
        for (;;) {
                bool all = true;

                for (size_t i = 0; i < n; i++) {
                        ProbeState s = probe_state(runs[i].probe);

                        if (s == PROBE_FAILED || s == PROBE_STOPPED) {
                                fprintf(stderr, "jitter-probe: the probe on CPU %d stopped\n",
                                        runs[i].cpu);
                                ret = 1;
                                goto out;
                        }
                        all = all && s == PROBE_RUNNING;
                }
                if (all || interrupted) {
                        break;
                }
                usleep(10000);
        }
        /* Everything recorded from here on is the run: start every probe on a fresh slot. */
        for (size_t i = 0; i < n; i++) {
                harvest(&runs[i]);
                probe_slot_clear(&runs[i].total);
                drain_events(&runs[i]);
                runs[i].n_events = 0;
                runs[i].events_dropped = 0;
                runs[i].reader.dropped = 0;
        }
        clock_pair_sample(o.counter, &start_pair);
        start_real = now_ns(CLOCK_REALTIME);
        start_mono = now_ns(CLOCK_MONOTONIC);
        live = !o.quiet && isatty(STDERR_FILENO);
        color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");

        while (!interrupted && elapsed < o.duration_ns) {
                uint64_t left = o.duration_ns - elapsed;
                uint64_t nap = left < 100000000ULL ? left : 100000000ULL;
                struct timespec ts = {(time_t)(nap / 1000000000ULL), (long)(nap % 1000000000ULL)};

                nanosleep(&ts, NULL);
                elapsed = now_ns(CLOCK_MONOTONIC) - start_mono;
                for (size_t i = 0; i < n; i++) {
                        drain_events(&runs[i]);
                        /* Harvest about once a second, and at the end. */
                        if (elapsed >= o.duration_ns ||
                            (elapsed / 1000000000ULL) != ((elapsed - nap) / 1000000000ULL)) {
                                harvest(&runs[i]);
                        }
                }
                if (live) {
                        progress(runs, n, &ci, elapsed, o.duration_ns);
                }
        }
        for (size_t i = 0; i < n; i++) {
                harvest(&runs[i]);
        }
        clock_pair_sample(o.counter, &end_pair);
        sanity.realtime_ns = (double)(now_ns(CLOCK_REALTIME) - start_real);
        sanity.counter_ns = (double)tickconv_to_ns(&ci.conv, end_pair.ticks - start_pair.ticks);
        for (size_t i = 0; i < n; i++) {
                probe_stop(runs[i].probe);
                drain_events(&runs[i]);
                runs[i].events_dropped += runs[i].reader.dropped;
                runs[i].duration_ns =
                        runs[i].total.end_ticks > runs[i].total.start_ticks
                                ? tickconv_to_ns(&ci.conv, runs[i].total.end_ticks -
                                                                   runs[i].total.start_ticks)
                                : 0;
        }
        if (live) {
                fprintf(stderr, "\r\033[K");
        }

        if (o.json) {
                json_t *cpus = json_array();
                json_t *root = json_pack(
                        "{s{ss sI ss sf} so s{sf sf sf}}", "counter", "source",
                        counter_source_name(ci.source), "hz", (json_int_t)ci.hz, "hz_source",
                        counter_hz_source_name(ci.hz_source), "precision_ppm", ci.precision_ppm,
                        "cpus", cpus, "sanity", "realtime_elapsed_ns", sanity.realtime_ns,
                        "counter_elapsed_ns", sanity.counter_ns, "drift_ppm",
                        sanity.realtime_ns > 0 ? (sanity.counter_ns - sanity.realtime_ns) /
                                                         sanity.realtime_ns * 1e6
                                               : 0.0);

                json_object_set_new(root, "threshold_ns", json_integer((json_int_t)o.threshold_ns));
                /* The recording window, so events can be matched to what else happened. */
                json_object_set_new(root, "start_ns", json_integer((json_int_t)start_pair.mono_ns));
                json_object_set_new(root, "end_ns", json_integer((json_int_t)end_pair.mono_ns));
                for (size_t i = 0; i < n; i++) {
                        json_array_append_new(cpus, run_to_json(&runs[i], &ci, &start_pair));
                }
                json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
                putchar('\n');
                json_decref(root);
        } else {
                printf("counter: %s, %.6f MHz (%s", counter_source_name(ci.source),
                       (double)ci.hz / 1e6, counter_hz_source_name(ci.hz_source));
                if (ci.hz_source == COUNTER_HZ_CALIBRATED) {
                        printf(", precision %.2f ppm", ci.precision_ppm);
                }
                printf(")\n\n");
                for (size_t i = 0; i < n; i++) {
                        print_text(&runs[i], &ci, &o, &sanity, color);
                }
        }
out:
        for (size_t i = 0; i < n; i++) {
                probe_free(runs[i].probe);
                free(runs[i].events);
        }
        if (n < (size_t)CPU_COUNT(&o.cpus) && runs[n].events) {
                free(runs[n].events);
        }
        free(runs);
        return ret;
}

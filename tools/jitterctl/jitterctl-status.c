/* jitterctl status, stats, events and check: the commands that print what one call says. */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "jitterctl-format.h"
#include "summary-json.h"
#include "jitterctl.h"
#include "util.h"

/* How many causes "stats" lists per CPU. */
#define STATS_CAUSES_MAX 5

/* ---- status ---- */

static const char *state_color(const Ctl *ctl, const char *state)
{
        if (strcmp(state, "running") == 0) {
                return ctl_color(ctl, CTL_GREEN);
        }
        if (strcmp(state, "starting") == 0 || strcmp(state, "preheating") == 0 ||
            strcmp(state, "stopped") == 0) {
                return ctl_color(ctl, CTL_YELLOW);
        }
        return ctl_color(ctl, CTL_RED);
}

static void print_counter(json_t *counter)
{
        double precision = 0, drift = NAN;
        uint64_t hz = 0;

        json_get_u64(counter, "hz", &hz);
        json_get_double(counter, "precision_ppm", &precision);
        json_get_double(counter, "drift_ppm", &drift);
        printf("counter:  %s at ", json_get_string(counter, "source", "?"));
        if (hz >= 1000000000ULL) {
                printf("%.6f GHz", (double)hz / 1e9);
        } else {
                printf("%.6f MHz", (double)hz / 1e6);
        }
        printf(" (%s), precision %.3g ppm, drift %+.3f ppm\n",
               json_get_string(counter, "hz_source", "?"), precision, drift);
}

static void print_config(json_t *config, uint64_t history_bytes)
{
        char interval[FORMAT_MAX], threshold[FORMAT_MAX];
        uint64_t v;

        if (!json_is_object(config)) {
                return;
        }
        format_ns(interval, sizeof(interval),
                  json_get_u64(config, "interval_ns", &v) ? (double)v : NAN);
        format_ns(threshold, sizeof(threshold),
                  json_get_u64(config, "threshold_ns", &v) ? (double)v : NAN);
        printf("config:   CPUs %s, interval %s, threshold %s, history %.1f KiB\n",
               json_get_string(config, "cpus", "?"), interval, threshold,
               (double)history_bytes / 1024);
}

/* The trace kept around long interruptions ([trace] keep_above), when it is. */
static void print_captures(json_t *c)
{
        uint64_t above = 0, kept = 0, bytes = 0, written = 0, skipped = 0;
        char d[FORMAT_MAX];

        if (!json_get_u64(c, "keep_above_ns", &above)) {
                return;
        }
        json_get_u64(c, "kept", &kept);
        json_get_u64(c, "kept_bytes", &bytes);
        json_get_u64(c, "written", &written);
        json_get_u64(c, "skipped", &skipped);
        printf("          captures above %s: %llu kept (%llu KiB), %llu written and %llu "
               "skipped since start\n",
               format_ns(d, sizeof(d), (double)above), (unsigned long long)kept,
               (unsigned long long)(bytes + 1023) / 1024, (unsigned long long)written,
               (unsigned long long)skipped);
}

/* The daemon's own cost: its CPU beyond the probes against its budget, the calls it served
 * and refused. Nothing from a daemon that does not report it. */
static void print_self(json_t *self, uint64_t uptime_ns)
{
        uint64_t cpu_ns = 0, calls = 0, refused = 0, n;
        double budget =
                json_real_value(json_object_get(json_object_get(self, "budget"), "cpu_ratio"));
        json_t *m;
        size_t i;

        if (!json_is_object(self) || !json_get_u64(self, "cpu_ns", &cpu_ns)) {
                return;
        }
        json_array_foreach(json_object_get(self, "methods"), i, m)
        {
                if (json_get_u64(m, "calls", &n)) {
                        calls += n;
                }
                if (json_get_u64(m, "refused", &n)) {
                        refused += n;
                }
        }
        printf("self:     CPU %.2f s beyond the probes, %.2f %% of a core on average (budget "
               "%.0f %%); %llu calls, %llu refused as busy\n",
               (double)cpu_ns / 1e9, uptime_ns ? 100.0 * (double)cpu_ns / (double)uptime_ns : 0.0,
               100.0 * budget, (unsigned long long)calls, (unsigned long long)refused);
}

/* The trace recorder: off, recording (clock, what the kernel lacks, losses), or why not. */
static void print_trace(json_t *trace)
{
        const char *state = json_get_string(trace, "state", NULL);
        const char *missing = json_get_string(trace, "missing", NULL);
        const char *reason = json_get_string(trace, "reason", NULL);
        uint64_t losses = 0;

        if (!state) {
                return;
        }
        if (strcmp(state, "recording") != 0) {
                printf("trace:    %s%s%s\n", state, reason ? ": " : "", reason ? reason : "");
                return;
        }
        json_get_u64(trace, "losses", &losses);
        printf("trace:    recording in %s, clock %s", json_get_string(trace, "instance", "?"),
               json_get_string(trace, "clock", "?"));
        if (missing) {
                printf(", this kernel lacks %s", missing);
        }
        if (losses) {
                printf(", %llu losses", (unsigned long long)losses);
        }
        fputc('\n', stdout);
        if (reason) {
                printf("          %s\n", reason);
        }
        print_captures(json_object_get(trace, "captures"));
}

/* How the probe's CPU is isolated: "isolcpus=", "v1 shield SET", "v2 partition SET", "none". */
static void print_isolation(json_t *probe)
{
        const char *kind = json_get_string(probe, "isolation", "?");
        const char *set = json_get_string(probe, "isolation_cpuset", "");

        if (strcmp(kind, "boot") == 0) {
                printf("  isolcpus=");
        } else if (strcmp(kind, "cpuset-v1") == 0) {
                printf("  v1 shield %s", set);
        } else if (strcmp(kind, "cpuset-v2") == 0) {
                printf("  v2 partition %s", set);
        } else {
                printf("  %s", kind);
        }
}

/* Long because it prints the daemon, counter and probe sections one after another. */
int cmd_status(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                CTL_COMMON_OPTIONS,
                {},
        };
        json_t *reply = NULL, *probes, *probe;
        char uptime[FORMAT_MAX], since[FORMAT_MAX];
        uint64_t uptime_ns = 0, history_bytes = 0;
        struct timespec start;
        size_t i;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                r = ctl_parse_common(ctl, cmd, c);
                if (r != CTL_CONTINUE) {
                        return r;
                }
        }
        if (optind < argc) {
                return ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
        }
        if (ctl_call(ctl, "GetStatus", NULL, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (ctl->json) {
                r = ctl_print_json(reply);
                json_decref(reply);
                return r;
        }

        json_get_u64(reply, "uptime_ns", &uptime_ns);
        json_get_u64(reply, "history_bytes", &history_bytes);
        if (iso8601_parse(json_get_string(reply, "start_realtime", NULL), &start) == 0) {
                format_local_time(since, sizeof(since), &start, true);
                /* Whole seconds are enough for a start time. */
                since[strcspn(since, ".")] = '\0';
        } else {
                snprintf(since, sizeof(since), "?");
        }
        printf("%sjitterd %s%s, up %s (since %s)\n", ctl_color(ctl, CTL_BOLD),
               json_get_string(reply, "version", "?"), ctl_color(ctl, CTL_RESET),
               format_uptime(uptime, sizeof(uptime), uptime_ns), since);
        print_counter(json_object_get(reply, "counter"));
        print_config(json_object_get(reply, "config"), history_bytes);
        print_trace(json_object_get(reply, "trace"));
        print_self(json_object_get(reply, "self"), uptime_ns);

        probes = json_object_get(reply, "probes");
        printf("\n%s CPU  %-10s  %-13s", ctl_color(ctl, CTL_BOLD), "STATE", "POLICY");
        fput_padded(stdout, "SAMPLES", 9);
        fput_padded(stdout, "FLOOR", 10);
        fput_padded(stdout, "WORST 1m", 10);
        printf("  ISOLATION%s\n", ctl_color(ctl, CTL_RESET));
        json_array_foreach(probes, i, probe)
        {
                const char *state = json_get_string(probe, "state", "?");
                const char *reason = json_get_string(probe, "reason", NULL);
                const char *failure = json_get_string(probe, "failure", NULL);
                char policy[48], samples[FORMAT_MAX], floor_ns[FORMAT_MAX], worst[FORMAT_MAX];
                uint64_t cpu = 0, prio = 0, n = 0, v;
                json_t *migrated = json_object_get(probe, "migrated_to");

                json_get_u64(probe, "cpu", &cpu);
                json_get_u64(probe, "priority", &prio);
                json_get_u64(probe, "samples", &n);
                if (strcmp(json_get_string(probe, "policy", ""), "SCHED_FIFO") == 0) {
                        snprintf(policy, sizeof(policy), "SCHED_FIFO %llu",
                                 (unsigned long long)prio);
                } else {
                        snprintf(policy, sizeof(policy), "%s",
                                 json_get_string(probe, "policy", "?"));
                }
                format_count(samples, sizeof(samples), n);
                format_ns(floor_ns, sizeof(floor_ns),
                          json_get_u64(probe, "floor_ns", &v) ? (double)v : NAN);
                format_ns(worst, sizeof(worst),
                          json_get_u64(probe, "worst_gap_1m_ns", &v) ? (double)v : NAN);
                printf("%4llu  %s%-10s%s  %-13s", (unsigned long long)cpu, state_color(ctl, state),
                       state, ctl_color(ctl, CTL_RESET), policy);
                fput_padded(stdout, samples, 9);
                fput_padded(stdout, floor_ns, 10);
                fput_padded(stdout, worst, 10);
                print_isolation(probe);
                if (json_is_integer(migrated)) {
                        printf("  (on CPU %lld)", (long long)json_integer_value(migrated));
                }
                fputc('\n', stdout);
                /* A failure is the probe's own account of why it stopped measuring. */
                if (failure) {
                        printf("      %sfailed:%s %s\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET), failure);
                } else if (reason) {
                        printf("      %s\n", reason);
                }
        }
        if (json_array_size(probes) == 0) {
                printf("  (no probes)\n");
        }
        json_decref(reply);
        return CTL_EXIT_OK;
}

/* ---- stats ---- */

/* {"window": W?, "cpus": [...]?}; steals @cpus. */
static json_t *window_params(const char *window, json_t *cpus)
{
        json_t *p = json_object();

        if (!p) {
                json_decref(cpus);
                return NULL;
        }
        if (window) {
                json_object_set_new(p, "window", json_string(window));
        }
        if (cpus) {
                json_object_set_new(p, "cpus", cpus);
        }
        return p;
}

static void print_ns_cell(double ns, int width)
{
        char buf[FORMAT_MAX];

        fput_padded(stdout, format_ns(buf, sizeof(buf), ns), width);
}

/* Orders causes by the share of time lost they explain, then by rate. */
static int cause_cmp(const void *x, const void *y)
{
        json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
        double ea = -1, eb = -1, ra = 0, rb = 0;

        json_get_double(a, "explains", &ea);
        json_get_double(b, "explains", &eb);
        if (ea != eb) {
                return ea < eb ? 1 : -1;
        }
        json_get_double(a, "per_second", &ra);
        json_get_double(b, "per_second", &rb);
        return (ra < rb) - (ra > rb);
}

/* The fit's background (time lost with no counter), as a row of the causes; NULL: none. */
static void print_background(json_t *background)
{
        char share[FORMAT_MAX];
        double explains = 0;

        if (!background) {
                return;
        }
        json_get_double(background, "explains", &explains);
        printf("  %-22s %11s   %-16s  explains %s %%\n", "(no counter)", "", "background",
               format_pct(share, sizeof(share), explains * 100));
}

static void print_causes(Ctl *ctl, const CpuStats *stats)
{
        json_t *sorted[STATS_CAUSES_MAX * 8];
        uint64_t cpu = stats->cpu;
        size_t i, n = 0;
        json_t *e;

        json_array_foreach(stats->causes, i, e)
        {
                uint64_t count = 0;

                if (json_get_u64(e, "count", &count) && count > 0 && n < ELEMENTSOF(sorted)) {
                        sorted[n++] = e;
                }
        }
        qsort(sorted, n, sizeof(sorted[0]), cause_cmp);
        if (n > 0) {
                char lost_text[FORMAT_MAX];

                printf("\n%sCPU %llu causes%s (time lost %s):\n", ctl_color(ctl, CTL_BOLD),
                       (unsigned long long)cpu, ctl_color(ctl, CTL_RESET),
                       format_ns(lost_text, sizeof(lost_text), (double)stats->summary.lost_ns));
        }
        for (i = 0; i < n && i < STATS_CAUSES_MAX; i++) {
                char rate[FORMAT_MAX], cost[FORMAT_MAX], each[FORMAT_MAX + 8] = "",
                                                                           share[FORMAT_MAX];
                double per_s = 0, cost_ns, explains;
                bool have_explains = json_get_double(sorted[i], "explains", &explains);

                json_get_double(sorted[i], "per_second", &per_s);
                format_rate(rate, sizeof(rate), per_s);
                printf("  %-22s %9s/s", json_get_string(sorted[i], "source", "?"), rate);
                if (json_get_double(sorted[i], "cost_ns", &cost_ns)) {
                        snprintf(each, sizeof(each), "~%s each",
                                 format_ns(cost, sizeof(cost), cost_ns));
                }
                if (have_explains) {
                        printf("   ");
                        fput_padded(stdout, each, -16);
                        printf("  explains %s %%",
                               format_pct(share, sizeof(share), explains * 100));
                } else if (each[0]) {
                        printf("   %s", each);
                }
                fputc('\n', stdout);
        }
        if (n > 0) {
                print_background(stats->background);
        }
        if (json_array_size(stats->periods) > 0) {
                /* Set off from the table above when no causes came between. */
                printf("%s%sCPU %llu periods:%s\n", n > 0 ? "" : "\n", ctl_color(ctl, CTL_BOLD),
                       (unsigned long long)cpu, ctl_color(ctl, CTL_RESET));
        }
        json_array_foreach(stats->periods, i, e)
        {
                char period[FORMAT_MAX], share[FORMAT_MAX];
                uint64_t period_ns = 0, events = 0;
                double frac = 0;
                const char *source = json_get_string(e, "source", NULL);

                json_get_u64(e, "period_ns", &period_ns);
                json_get_u64(e, "events", &events);
                json_get_double(e, "share", &frac);
                printf("  every %s: %llu interruptions (%s %%)%s%s\n",
                       format_ns(period, sizeof(period), (double)period_ns),
                       (unsigned long long)events, format_pct(share, sizeof(share), frac * 100),
                       source ? ", likely " : "", source ? source : "");
        }
        if (stats->stalls > 0) {
                printf("%sCPU %llu: the probe made no progress in %llu intervals%s\n",
                       ctl_color(ctl, CTL_RED), (unsigned long long)cpu,
                       (unsigned long long)stats->stalls, ctl_color(ctl, CTL_RESET));
        }
}

/* Long because it parses the command's options and prints each CPU's table rows in order. */
int cmd_stats(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                {"window", required_argument, NULL, 'w'},
                {"cpu", required_argument, NULL, 'c'},
                {"diffdiff", no_argument, NULL, 'd'},
                CTL_COMMON_OPTIONS,
                {},
        };
        static const char *const columns[] = {"mean_ns", "min_ns", "max_ns", "p99", "p99.99"};
        const char *window = NULL, *kind = "gap";
        json_t *cpus = NULL, *reply = NULL, *list, *s;
        char duration[FORMAT_MAX];
        CpuStats st;
        size_t i;
        int c, r;

        while ((c = getopt_long(argc, argv, "w:c:dh", options, NULL)) >= 0) {
                switch (c) {
                case 'd':
                        kind = "diffdiff";
                        break;
                default:
                        r = ctl_parse_option(ctl, cmd, c, &window, &cpus);
                        if (r != CTL_CONTINUE) {
                                json_decref(cpus);
                                return r;
                        }
                }
        }
        if (optind < argc) {
                json_decref(cpus);
                return ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
        }
        if (ctl_get_stats(ctl, window_params(window, cpus), true, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (ctl->json) {
                r = ctl_print_json(reply);
                json_decref(reply);
                return r;
        }
        list = json_object_get(reply, "cpus");
        /* What the reply lacks shows as "-" (or 0): the table is printed whatever it holds. */
        (void)cpu_stats_read(json_array_get(list, 0), &st);
        if (!st.window) {
                st.window = window ? window : "1m";
        }
        printf("window %s (%s), %s\n", st.window,
               format_ns(duration, sizeof(duration), (double)st.summary.duration_ns),
               strcmp(kind, "gap") == 0 ? "gap between counter reads"
                                        : "difference of consecutive gaps");
        printf("%s CPU        Avg        Min        Max   Samples        p99     p99.99     "
               "Int/s   Lost %%%s\n",
               ctl_color(ctl, CTL_BOLD), ctl_color(ctl, CTL_RESET));
        json_array_foreach(list, i, s)
        {
                const ValueSummary *values;
                const SlotSummary *sum = &st.summary;
                char text[FORMAT_MAX];

                (void)cpu_stats_read(s, &st);
                values = strcmp(kind, "gap") == 0 ? &sum->gap : &sum->dd;
                printf("%4llu", (unsigned long long)st.cpu);
                for (size_t k = 0; k < 3; k++) {
                        print_ns_cell(sum->samples ? value_summary_get(values, columns[k]) : NAN,
                                      11);
                }
                fput_padded(stdout, format_count(text, sizeof(text), sum->samples), 10);
                for (size_t k = 3; k < 5; k++) {
                        print_ns_cell(sum->samples ? value_summary_get(values, columns[k]) : NAN,
                                      11);
                }
                fput_padded(stdout, format_rate(text, sizeof(text), sum->events_per_s), 10);
                fput_padded(stdout,
                            format_pct(text, sizeof(text),
                                       sum->duration_ns ? 100.0 * (double)sum->lost_ns /
                                                                  (double)sum->duration_ns
                                                        : NAN),
                            9);
                fputc('\n', stdout);
        }
        if (json_array_size(list) == 0) {
                printf("  (no probes)\n");
        }
        json_array_foreach(list, i, s)
        {
                (void)cpu_stats_read(s, &st);
                print_causes(ctl, &st);
        }
        json_decref(reply);
        return CTL_EXIT_OK;
}

/* ---- events ---- */

#define CAUSE_TEXT_MAX 96

/* The main cause of @e with the entry and exit charged to it ("task thief:4242 812us + 4.1us
 * in/out"), "(no record: hardware, firmware or hypervisor)" when no trace record lies inside
 * it, "(unexplained)" when the records name nothing; "" when the trace gave none. */
static const char *main_cause(json_t *e, char *buf, size_t size)
{
        json_t *causes = json_object_get(e, "causes"), *c = json_array_get(causes, 0);
        bool lost = json_is_true(json_object_get(e, "trace_lost"));
        char ns[FORMAT_MAX], in_out[FORMAT_MAX + 16] = "";
        uint64_t v = 0, overhead = 0;

        if (!json_is_array(causes)) {
                buf[0] = 0;
                return buf;
        }
        if (!c) {
                snprintf(buf, size, "%s%s",
                         json_get_u64(e, "no_record_ns", &v) && v > 0
                                 ? "(no record: hardware, firmware or hypervisor)"
                                 : "(unexplained)",
                         lost ? ", records lost" : "");
                return buf;
        }
        json_get_u64(c, "ns", &v);
        if (json_get_u64(c, "overhead_ns", &overhead) && overhead > 0) {
                snprintf(in_out, sizeof(in_out), " + %s in/out",
                         format_ns(ns, sizeof(ns), (double)overhead));
        }
        snprintf(buf, size, "%s %s %s%s%s", json_get_string(c, "kind", "?"),
                 json_get_string(c, "name", "?"), format_ns(ns, sizeof(ns), (double)v), in_out,
                 lost ? ", records lost" : "");
        return buf;
}

/* Long because it parses the command's options and prints its table, one column after another. */
int cmd_events(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                {"cpu", required_argument, NULL, 'c'},
                {"since", required_argument, NULL, 's'},
                {"min", required_argument, NULL, 'm'},
                {"limit", required_argument, NULL, 'n'},
                {"records", no_argument, NULL, 'r'},
                CTL_COMMON_OPTIONS,
                {},
        };
        const char *since = NULL, *min = NULL;
        json_t *cpus = NULL, *params, *reply = NULL, *events, *e;
        unsigned long long limit = 0;
        bool have_limit = false, traced = false, records = false;
        uint64_t ns, min_ns = 0;
        size_t i;
        int c, r;

        while ((c = getopt_long(argc, argv, "c:s:m:n:rh", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                case 'm':
                        if (duration_parse(optarg, 1000000000ULL, &ns) < 0) {
                                json_decref(cpus);
                                return ctl_usage_error(cmd, "invalid duration \"%s\" (e.g. %s)",
                                                       optarg, c == 's' ? "10m" : "50us");
                        }
                        *(c == 's' ? &since : &min) = optarg;
                        min_ns = c == 'm' ? ns : min_ns;
                        break;
                case 'r':
                        records = true;
                        break;
                case 'n':
                        if (ctl_parse_uint(optarg, INT32_MAX, &limit) < 0 || limit == 0) {
                                json_decref(cpus);
                                return ctl_usage_error(cmd, "invalid limit \"%s\"", optarg);
                        }
                        have_limit = true;
                        break;
                default:
                        r = ctl_parse_option(ctl, cmd, c, NULL, &cpus);
                        if (r != CTL_CONTINUE) {
                                json_decref(cpus);
                                return r;
                        }
                }
        }
        if (optind < argc) {
                json_decref(cpus);
                return ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
        }
        params = json_object();
        if (!params) {
                json_decref(cpus);
                return ctl_fail("out of memory");
        }
        if (cpus) {
                json_object_set_new(params, "cpus", cpus);
        }
        if (since) {
                json_object_set_new(params, "since", json_string(since));
        }
        if (min && !records) {
                json_object_set_new(params, "min_duration", json_string(min));
        }
        if (have_limit) {
                /* GetCaptures answers at most 100 captures. */
                json_object_set_new(
                        params, "limit",
                        json_integer((json_int_t)(records && limit > 100 ? 100 : limit)));
        }
        if (records) {
                return jitterctl_event_records(ctl, params, min_ns);
        }
        if (ctl_call(ctl, "GetEvents", params, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        events = json_object_get(reply, "events");
        if (ctl->json) {
                r = ctl_print_json(json_is_array(events) ? events : reply);
                json_decref(reply);
                return r;
        }
        if (json_array_size(events) == 0) {
                printf("(no interruptions recorded%s)\n", since || min ? " that match" : "");
                json_decref(reply);
                return CTL_EXIT_OK;
        }
        json_array_foreach(events, i, e)
        {
                traced |= json_is_array(json_object_get(e, "causes"));
        }
        printf("%sTIME                        CPU    DURATION%s%s\n", ctl_color(ctl, CTL_BOLD),
               traced ? "  MAIN CAUSE" : "", ctl_color(ctl, CTL_RESET));
        json_array_foreach(events, i, e)
        {
                char when[FORMAT_MAX], dur[FORMAT_MAX], cause[CAUSE_TEXT_MAX];
                struct timespec ts;
                uint64_t cpu = 0, d = 0;

                json_get_u64(e, "cpu", &cpu);
                json_get_u64(e, "duration_ns", &d);
                if (iso8601_parse(json_get_string(e, "realtime", NULL), &ts) == 0) {
                        format_local_time(when, sizeof(when), &ts, true);
                } else {
                        snprintf(when, sizeof(when), "%s", json_get_string(e, "realtime", "?"));
                }
                printf("%-26s %4llu", when, (unsigned long long)cpu);
                fput_padded(stdout, format_ns(dur, sizeof(dur), (double)d), 12);
                if (traced) {
                        printf("  %s", main_cause(e, cause, sizeof(cause)));
                }
                fputc('\n', stdout);
        }
        json_decref(reply);
        return CTL_EXIT_OK;
}

/* ---- check ---- */

/* What `check` was asked: the bound, the percentile (empty: the max gap), window and CPUs. */
typedef struct CheckArgs {
        const char *window;
        json_t *cpus;
        char key[32];
        uint64_t bound_ns;
} CheckArgs;

/* Parses the options of `check` into @a. Returns CTL_CONTINUE, or the exit status after saying
 * what is wrong. */
static int check_parse(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv, CheckArgs *a)
{
        static const struct option options[] = {
                {"max", required_argument, NULL, 'M'},
                {"percentile", required_argument, NULL, 'p'},
                {"window", required_argument, NULL, 'w'},
                {"cpu", required_argument, NULL, 'c'},
                CTL_COMMON_OPTIONS,
                {},
        };
        bool have_bound = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "M:p:w:c:h", options, NULL)) >= 0) {
                switch (c) {
                case 'M':
                        if (duration_parse(optarg, 1000ULL, &a->bound_ns) < 0) {
                                json_decref(a->cpus);
                                return ctl_usage_error(cmd, "invalid duration \"%s\" (e.g. 20us)",
                                                       optarg);
                        }
                        have_bound = true;
                        break;
                case 'p':
                        if (percentile_key(optarg, a->key, sizeof(a->key)) < 0) {
                                json_decref(a->cpus);
                                return ctl_usage_error(
                                        cmd, "invalid percentile \"%s\" (e.g. 99.99)", optarg);
                        }
                        break;
                default:
                        r = ctl_parse_option(ctl, cmd, c, &a->window, &a->cpus);
                        if (r != CTL_CONTINUE) {
                                json_decref(a->cpus);
                                return r;
                        }
                }
        }
        if (optind < argc || !have_bound) {
                json_decref(a->cpus);
                return optind < argc
                               ? ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind])
                               : ctl_usage_error(cmd, "--max is required");
        }
        return CTL_CONTINUE;
}

/* The worst value within the bound so far, and on which CPU. */
typedef struct CheckWorst {
        double value;
        uint64_t cpu;
} CheckWorst;

/* Checks one CpuStats @s against the bound: adds it to @out_cpus (JSON) or prints why it
 * fails. Returns true when it fails. */
static bool check_cpu(Ctl *ctl, const CheckArgs *a, json_t *s, const char *metric,
                      const char *bound_text, json_t *out_cpus, CheckWorst *worst)
{
        const char *problem = NULL;
        char value_text[FORMAT_MAX];
        uint64_t cpu;
        double v = NAN;
        CpuStats st;

        (void)cpu_stats_read(s, &st);
        cpu = st.cpu;
        if (st.summary.samples == 0) {
                problem = "no samples in the window";
        } else if (isnan(v = value_summary_get(&st.summary.gap, a->key[0] ? a->key : "max_ns"))) {
                problem = "the daemon did not report this value";
        } else if (v > (double)a->bound_ns) {
                problem = "above the bound";
        }
        if (!problem && v > worst->value) {
                worst->value = v;
                worst->cpu = cpu;
        }
        if (out_cpus) {
                json_array_append_new(out_cpus,
                                      json_pack("{s:I, s:o, s:b}", "cpu", (json_int_t)cpu,
                                                "value_ns", isnan(v) ? json_null() : json_real(v),
                                                "ok", problem == NULL));
        }
        if (!problem) {
                return false;
        }
        if (!ctl->json) {
                format_ns(value_text, sizeof(value_text), v);
                if (isnan(v)) {
                        printf("%sFAIL%s: CPU %llu: %s\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET), (unsigned long long)cpu, problem);
                } else {
                        printf("%sFAIL%s: CPU %llu: %s %s > %s\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET), (unsigned long long)cpu, metric,
                               value_text, bound_text);
                }
        }
        return true;
}

int cmd_check(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        CheckArgs a = {0};
        json_t *reply = NULL, *list, *s, *out = NULL, *out_cpus = NULL;
        char metric[48], bound_text[FORMAT_MAX];
        CheckWorst worst = {.value = -1};
        unsigned failures = 0;
        size_t i;
        int r;

        r = check_parse(ctl, cmd, argc, argv, &a);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (ctl_get_stats(ctl, window_params(a.window, a.cpus), false, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (a.key[0]) {
                snprintf(metric, sizeof(metric), "%s gap", a.key);
        } else {
                snprintf(metric, sizeof(metric), "max gap");
        }
        format_ns(bound_text, sizeof(bound_text), (double)a.bound_ns);
        if (ctl->json) {
                out = json_pack("{s:s, s:I, s:o}", "metric", a.key[0] ? a.key : "max", "max_ns",
                                (json_int_t)a.bound_ns, "cpus", out_cpus = json_array());
                if (!out) {
                        json_decref(reply);
                        return ctl_fail("out of memory");
                }
        }
        list = json_object_get(reply, "cpus");
        json_array_foreach(list, i, s)
        {
                failures += check_cpu(ctl, &a, s, metric, bound_text, out_cpus, &worst);
        }
        if (json_array_size(list) == 0) {
                failures++;
                if (!ctl->json) {
                        printf("%sFAIL%s: no CPUs are probed\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET));
                }
        }
        if (out) {
                json_object_set_new(out, "ok", json_boolean(failures == 0));
                r = ctl_print_json(out);
                json_decref(out);
                if (r != CTL_EXIT_OK) {
                        json_decref(reply);
                        return r;
                }
        } else if (failures == 0) {
                char worst_text[FORMAT_MAX];
                CpuStats first;

                (void)cpu_stats_read(json_array_get(list, 0), &first);
                if (!first.window) {
                        first.window = a.window ? a.window : "1m";
                }
                printf("%sOK%s: %s within %s on every CPU (worst %s on CPU %llu, window %s)\n",
                       ctl_color(ctl, CTL_GREEN), ctl_color(ctl, CTL_RESET), metric, bound_text,
                       format_ns(worst_text, sizeof(worst_text), worst.value),
                       (unsigned long long)worst.cpu, first.window);
        }
        json_decref(reply);
        return failures == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

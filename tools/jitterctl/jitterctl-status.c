/* jitterctl status: what GetStatus says of the daemon (version, uptime, counter, configuration,
 * trace recorder, its own cost) and of each probe. */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"

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

        json_read_u64(counter, "hz", &hz);
        json_read_number(counter, "precision_ppm", &precision);
        json_read_number(counter, "drift_ppm", &drift);
        printf("counter:  %s at ", json_read_string_or(counter, "source", "?"));
        if (hz >= 1000000000ULL) {
                printf("%.6f GHz", (double)hz / 1e9);
        } else {
                printf("%.6f MHz", (double)hz / 1e6);
        }
        printf(" (%s), precision %.3g ppm, drift %+.3f ppm\n",
               json_read_string_or(counter, "hz_source", "?"), precision, drift);
}

static void print_config(json_t *config, uint64_t history_bytes)
{
        char interval[FORMAT_MAX], threshold[FORMAT_MAX];
        uint64_t v;

        if (!json_is_object(config)) {
                return;
        }
        format_ns(interval, sizeof(interval),
                  json_read_u64(config, "interval_ns", &v) == 0 ? (double)v : NAN);
        format_ns(threshold, sizeof(threshold),
                  json_read_u64(config, "threshold_ns", &v) == 0 ? (double)v : NAN);
        printf("config:   CPUs %s, interval %s, threshold %s, history %.1f KiB",
               json_read_string_or(config, "cpus", "?"), interval, threshold,
               (double)history_bytes / 1024);
        if (json_read_u64(config, "loop_priority", &v) == 0 && v > 0) {
                printf(", event loop SCHED_FIFO %llu", (unsigned long long)v);
        }
        printf("\n");
}

/* The trace kept around long interruptions ([trace] keep_above), when it is. */
static void print_captures(json_t *c)
{
        uint64_t above = 0, kept = 0, bytes = 0, written = 0, skipped = 0;
        char d[FORMAT_MAX];

        if (json_read_u64(c, "keep_above_ns", &above) < 0) {
                return;
        }
        json_read_u64(c, "kept", &kept);
        json_read_u64(c, "kept_bytes", &bytes);
        json_read_u64(c, "written", &written);
        json_read_u64(c, "skipped", &skipped);
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

        if (!json_is_object(self) || json_read_u64(self, "cpu_ns", &cpu_ns) < 0) {
                return;
        }
        json_array_foreach(json_object_get(self, "methods"), i, m)
        {
                if (json_read_u64(m, "calls", &n) == 0) {
                        calls += n;
                }
                if (json_read_u64(m, "refused", &n) == 0) {
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
        const char *state = json_read_string_or(trace, "state", NULL);
        const char *missing = json_read_string_or(trace, "missing", NULL);
        const char *reason = json_read_string_or(trace, "reason", NULL);
        uint64_t losses = 0;

        if (!state) {
                return;
        }
        if (strcmp(state, "recording") != 0) {
                printf("trace:    %s%s%s\n", state, reason ? ": " : "", reason ? reason : "");
                return;
        }
        json_read_u64(trace, "losses", &losses);
        printf("trace:    recording in %s, clock %s", json_read_string_or(trace, "instance", "?"),
               json_read_string_or(trace, "clock", "?"));
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
        const char *kind = json_read_string_or(probe, "isolation", "?");
        const char *set = json_read_string_or(probe, "isolation_cpuset", "");

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

/* The first sections: the daemon's version and uptime, its counter, config, trace and itself. */
static void print_daemon(Ctl *ctl, json_t *reply)
{
        char uptime[FORMAT_MAX], since[FORMAT_MAX];
        uint64_t uptime_ns = 0, history_bytes = 0;
        struct timespec start;

        json_read_u64(reply, "uptime_ns", &uptime_ns);
        json_read_u64(reply, "history_bytes", &history_bytes);
        if (iso8601_parse(json_read_string_or(reply, "start_realtime", NULL), &start) == 0) {
                format_local_time(since, sizeof(since), &start, true);
                /* Whole seconds are enough for a start time. */
                since[strcspn(since, ".")] = '\0';
        } else {
                snprintf(since, sizeof(since), "?");
        }
        printf("%sjitterd %s%s, up %s (since %s)\n", ctl_color(ctl, CTL_BOLD),
               json_read_string_or(reply, "version", "?"), ctl_color(ctl, CTL_RESET),
               format_uptime(uptime, sizeof(uptime), uptime_ns), since);
        print_counter(json_object_get(reply, "counter"));
        print_config(json_object_get(reply, "config"), history_bytes);
        print_trace(json_object_get(reply, "trace"));
        print_self(json_object_get(reply, "self"), uptime_ns);
}

/* One probe's row of the table, and the line that says why it failed or stopped. */
static void print_probe(Ctl *ctl, json_t *probe)
{
        const char *state = json_read_string_or(probe, "state", "?");
        const char *reason = json_read_string_or(probe, "reason", NULL);
        const char *failure = json_read_string_or(probe, "failure", NULL);
        char policy[48], samples[FORMAT_MAX], floor_ns[FORMAT_MAX], worst[FORMAT_MAX];
        uint64_t cpu = 0, prio = 0, n = 0, v;
        json_t *migrated = json_object_get(probe, "migrated_to");

        json_read_u64(probe, "cpu", &cpu);
        json_read_u64(probe, "priority", &prio);
        json_read_u64(probe, "samples", &n);
        if (strcmp(json_read_string_or(probe, "policy", ""), "SCHED_FIFO") == 0) {
                snprintf(policy, sizeof(policy), "SCHED_FIFO %llu", (unsigned long long)prio);
        } else {
                snprintf(policy, sizeof(policy), "%s", json_read_string_or(probe, "policy", "?"));
        }
        format_count(samples, sizeof(samples), n);
        format_ns(floor_ns, sizeof(floor_ns),
                  json_read_u64(probe, "floor_ns", &v) == 0 ? (double)v : NAN);
        format_ns(worst, sizeof(worst),
                  json_read_u64(probe, "worst_gap_1m_ns", &v) == 0 ? (double)v : NAN);
        printf("%4llu  %s%-10s%s  %-13s", (unsigned long long)cpu, state_color(ctl, state), state,
               ctl_color(ctl, CTL_RESET), policy);
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
                printf("      %sfailed:%s %s\n", ctl_color(ctl, CTL_RED), ctl_color(ctl, CTL_RESET),
                       failure);
        } else if (reason) {
                printf("      %s\n", reason);
        }
}

int cmd_status(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const CtlOptions options = {.short_options = ""};
        json_t *reply = NULL, *probes, *probe;
        size_t i;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (ctl_call(ctl, "GetStatus", NULL, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (ctl->json) {
                r = ctl_print_json(reply);
                json_decref(reply);
                return r;
        }

        print_daemon(ctl, reply);
        probes = json_object_get(reply, "probes");
        printf("\n%s CPU  %-10s  %-13s", ctl_color(ctl, CTL_BOLD), "STATE", "POLICY");
        fput_padded(stdout, "SAMPLES", 9);
        fput_padded(stdout, "FLOOR", 10);
        fput_padded(stdout, "WORST 1m", 10);
        printf("  ISOLATION%s\n", ctl_color(ctl, CTL_RESET));
        json_array_foreach(probes, i, probe)
        {
                print_probe(ctl, probe);
        }
        if (json_array_size(probes) == 0) {
                printf("  (no probes)\n");
        }
        json_decref(reply);
        return CTL_EXIT_OK;
}

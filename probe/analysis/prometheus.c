/* The Prometheus exposition (prometheus.h): a pure function of the daemon's replies. */

#include "prometheus.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-read.h"
#include "summary-json.h"
#include "summary.h"
#include "util.h"

/* A label value or an attribution source name longer than this is not something the daemon
 * sends: the reply is refused rather than exported. */
#define LABEL_VALUE_MAX 256

/* The le boundaries of jitter_gap_seconds, spelled as Go's strconv 'g' format would, so the
 * series match what other exporters write for the same boundaries. */
static const struct {
        uint64_t ns;
        const char *text;
} gap_le[] = {
        {100ULL, "1e-07"},     {200ULL, "2e-07"},     {500ULL, "5e-07"},     {1000ULL, "1e-06"},
        {2000ULL, "2e-06"},    {5000ULL, "5e-06"},    {10000ULL, "1e-05"},   {20000ULL, "2e-05"},
        {50000ULL, "5e-05"},   {100000ULL, "0.0001"}, {200000ULL, "0.0002"}, {500000ULL, "0.0005"},
        {1000000ULL, "0.001"}, {2000000ULL, "0.002"}, {5000000ULL, "0.005"}, {10000000ULL, "0.01"},
        {20000000ULL, "0.02"}, {50000000ULL, "0.05"}, {100000000ULL, "0.1"}, {200000000ULL, "0.2"},
        {500000000ULL, "0.5"}, {1000000000ULL, "1"},
};
#define GAP_LE_COUNT ELEMENTSOF(gap_le)

/* The probe states of the io.jitterd interface: a bounded enum, one series each. */
static const char *const probe_states[] = {
        "starting", "preheating", "running", "stalled", "migrated", "offline", "failed", "stopped",
};

typedef struct Family {
        const char *name;
        const char *type;
        const char *help;
} Family;

static const Family fam_build_info = {"jitter_build_info", "gauge",
                                      "Version of jitterd, as a label; the value is always 1."};
static const Family fam_uptime = {"jitter_uptime_seconds", "gauge", "Time since jitterd started."};
/* "counter" would read as the metric type (promtool's lint says so): the counter's
 * frequency is that of its ticks. */
static const Family fam_tick_frequency = {
        "jitter_tick_frequency_hertz", "gauge",
        "Frequency of the counter the probes read (source), and how it was found (hz_source)."};
static const Family fam_tick_drift = {
        "jitter_tick_drift_ppm", "gauge",
        "Drift of the counter against CLOCK_MONOTONIC over the last interval, in ppm."};
static const Family fam_threshold = {"jitter_interruption_threshold_seconds", "gauge",
                                     "Gaps at least this long are counted as interruptions."};
static const Family fam_history_bytes = {"jitter_history_bytes", "gauge",
                                         "Memory used by the rolling history."};
static const Family fam_probe_up = {"jitter_probe_up", "gauge",
                                    "1 when the probe of the CPU is running and measuring."};
static const Family fam_probe_state = {"jitter_probe_state", "gauge",
                                       "State of the probe of the CPU: 1 for the current one."};
static const Family fam_probe_floor = {
        "jitter_probe_floor_seconds", "gauge",
        "The probe loop's own period on the CPU: its shortest usual gap."};
static const Family fam_samples = {"jitter_samples_total", "counter",
                                   "Gaps measured on the CPU since start or the last reset."};
static const Family fam_interruptions = {"jitter_interruptions_total", "counter",
                                         "Gaps at or above the interruption threshold."};
static const Family fam_time_lost = {
        "jitter_time_lost_seconds_total", "counter",
        "Time the CPU was taken away from the probe (sum of gaps above the floor's noise band)."};
static const Family fam_stalls = {"jitter_stalls_total", "counter",
                                  "Intervals in which the probe made no progress at all."};
static const Family fam_gap = {
        "jitter_gap_seconds", "histogram",
        "Gaps between consecutive counter reads of the probe; le is exact to the nearest "
        "histogram bucket edge at or below it (within 3 %)."};
static const Family fam_gap_max = {
        "jitter_gap_max_seconds", "gauge",
        "Longest gap over the newest interval (window=\"interval\") or the last minute."};
static const Family fam_available = {
        "jitter_cpu_available_ratio", "gauge",
        "Share of the time the CPU was available to the probe over the window."};
static const Family fam_interrupts = {"jitter_interrupts_total", "counter",
                                      "Interrupts on the CPU by source (/proc/interrupts)."};
static const Family fam_softirqs = {"jitter_softirqs_total", "counter",
                                    "Softirqs on the CPU by source (/proc/softirqs)."};
static const Family fam_ctxsw = {"jitter_context_switches_total", "counter",
                                 "Context switches of the probe thread, by kind."};
static const Family fam_smi = {"jitter_smi_total", "counter",
                               "System management interrupts seen on the CPU."};

static const Family fam_cause_lost = {
        "jitter_cause_lost_seconds_total", "counter",
        "Time of the interruptions the kernel trace explained, by cause kind; overhead is the "
        "entry and exit charged to the causes, no_record the interruptions no trace record "
        "lies in (hardware, firmware, hypervisor), unexplained what no rule accounts for."};

/* The daemon's own cost, from GetStatus' "self". */
static const Family fam_self_cpu = {
        "jitter_daemon_cpu_seconds_total", "counter",
        "CPU time of jitterd's threads other than its probes (those running now)."};
static const Family fam_self_budget = {
        "jitter_daemon_cpu_budget_ratio", "gauge",
        "CPU budget of jitterd beyond its probes, in cores; serving clients is held within it."};
static const Family fam_self_calls = {"jitter_daemon_requests_total", "counter",
                                      "Varlink calls received, by method, refused ones included."};
static const Family fam_self_refused = {
        "jitter_daemon_request_refusals_total", "counter",
        "Varlink calls refused with io.jitterd.Busy because the clients' CPU budget was spent."};
static const Family fam_self_call_cpu = {
        "jitter_daemon_request_cpu_seconds_total", "counter",
        "CPU time jitterd spent on the Varlink calls of each method, refusals included."};
static const Family fam_self_duration = {
        "jitter_daemon_request_duration_seconds", "histogram",
        "Time from receiving a Varlink call that was let through to its (first) answer."};

/* The bounds of a histogram of "self" at most, and its methods at most. */
#define SELF_BOUNDS_MAX 16
#define SELF_METHODS_MAX 64

/* The kinds of jitter_cause_lost_seconds_total, in GetStatus' trace.cpus[].lost_ns. */
static const char *const cause_kinds[] = {"irq",  "vector", "softirq",  "task",      "timer",
                                          "work", "ipi",    "overhead", "no_record", "unexplained"};
#define CAUSE_KINDS ELEMENTSOF(cause_kinds)

typedef struct Label {
        const char *name;
        const char *value;
} Label;

typedef struct Writer {
        FILE *f;
        const Family *current; /* the family whose HELP and TYPE lines came last */
} Writer;

/* Label values escape backslash, double quote and line feed (the exposition format's rule). */
static void write_label_value(FILE *f, const char *s)
{
        for (; *s; s++) {
                if (*s == '\\') {
                        fputs("\\\\", f);
                } else if (*s == '"') {
                        fputs("\\\"", f);
                } else if (*s == '\n') {
                        fputs("\\n", f);
                } else {
                        fputc(*s, f);
                }
        }
}

/* Writes one sample. The HELP and TYPE lines of a family come before its first sample only,
 * so a family without samples (no SMI counter on this machine) is left out entirely; the
 * callers write the samples of one family together, as the format requires. */
static void put_sample(Writer *w, const Family *fam, const char *suffix, const Label *labels,
                       size_t n_labels, const char *value)
{
        if (w->current != fam) {
                fprintf(w->f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
                        fam->type);
                w->current = fam;
        }
        fprintf(w->f, "%s%s", fam->name, suffix);
        if (n_labels > 0) {
                fputc('{', w->f);
                for (size_t i = 0; i < n_labels; i++) {
                        fprintf(w->f, "%s%s=\"", i ? "," : "", labels[i].name);
                        write_label_value(w->f, labels[i].value);
                        fputc('"', w->f);
                }
                fputc('}', w->f);
        }
        fprintf(w->f, " %s\n", value);
}

/* Number formatting: integers as integers, seconds from whole ns as exact decimals. */
#define VALUE_MAX 64

static const char *value_u64(char *buf, uint64_t v)
{
        snprintf(buf, VALUE_MAX, "%" PRIu64, v);
        return buf;
}

static const char *value_seconds(char *buf, uint64_t ns)
{
        size_t len;

        if (ns % NSEC_PER_SEC == 0) {
                return value_u64(buf, ns / NSEC_PER_SEC);
        }
        snprintf(buf, VALUE_MAX, "%" PRIu64 ".%09" PRIu64, ns / NSEC_PER_SEC, ns % NSEC_PER_SEC);
        len = strlen(buf);
        while (buf[len - 1] == '0') {
                buf[--len] = '\0';
        }
        return buf;
}

static const char *value_double(char *buf, double v)
{
        snprintf(buf, VALUE_MAX, "%.15g", v);
        return buf;
}

/* --- reading the replies: every member is checked, a bad one refuses the whole input --- */

/* The parsed input: one entry per CPU of each array. */
typedef struct ProbeEntry {
        char cpu[16];
        const char *state;
        uint64_t floor_ns;
} ProbeEntry;

/* The counters of a GetStats entry, each one family with the cpu label. */
static const struct {
        unsigned have; /* its CPU_STATS_* bit */
        size_t offset; /* of its uint64_t in CpuStats */
        const Family *fam;
        bool seconds; /* it is in ns */
} counters[] = {
        {CPU_STATS_SAMPLES, offsetof(CpuStats, summary.samples), &fam_samples, false},
        {CPU_STATS_EVENTS, offsetof(CpuStats, summary.events), &fam_interruptions, false},
        {CPU_STATS_LOST, offsetof(CpuStats, summary.lost_ns), &fam_time_lost, true},
        {CPU_STATS_STALLS, offsetof(CpuStats, stalls), &fam_stalls, false},
};
#define COUNTERS ELEMENTSOF(counters)

/* The attribution maps of a GetStats entry ({"LOC": 12, ...}), each one family with the cpu
 * label and a label for the map's keys. */
static const struct {
        size_t offset; /* of its json_t * in CpuStats */
        const Family *fam;
        const char *label;
} source_maps[] = {
        {offsetof(CpuStats, interrupts), &fam_interrupts, "source"},
        {offsetof(CpuStats, softirqs), &fam_softirqs, "source"},
        {offsetof(CpuStats, ctxsw), &fam_ctxsw, "kind"},
};
#define SOURCE_MAPS ELEMENTSOF(source_maps)

typedef struct Totals {
        int cpu;
        char cpu_label[16];
        uint64_t counters[COUNTERS];
        json_t *source_maps[SOURCE_MAPS]; /* borrowed, checked */
        uint64_t smi;
        bool have_smi;
        double mean_ns; /* of the gaps */
} Totals;

typedef struct Recent {
        char cpu[16];
        uint64_t samples, stalls, duration_ns, max_gap_ns;
        double available_pct;
} Recent;

typedef struct Interval {
        char cpu[16];
        uint64_t max_gap_ns;
} Interval;

typedef struct Gaps {
        char cpu[16];
        uint64_t cumulative[GAP_LE_COUNT + 1]; /* the last is +Inf, all gaps */
        uint64_t sum_ns;
} Gaps;

typedef struct CauseLost {
        char cpu[16];
        uint64_t ns[CAUSE_KINDS];
} CauseLost;

typedef struct SelfMethod {
        const char *method;
        uint64_t calls, refused, cpu_ns, answered, duration_sum_ns;
        uint64_t counts[SELF_BOUNDS_MAX]; /* cumulative */
} SelfMethod;

typedef struct SelfCost {
        bool have; /* an older daemon reports none */
        uint64_t cpu_ns;
        double budget_ratio;
        uint64_t bounds_ns[SELF_BOUNDS_MAX];
        size_t n_bounds;
        SelfMethod *methods;
        size_t n_methods;
} SelfCost;

typedef struct Input {
        const char *version, *source, *hz_source;
        uint64_t uptime_ns, hz, threshold_ns, interval_ns, history_bytes;
        double drift_ppm;
        ProbeEntry *probes;
        size_t n_probes;
        Totals *totals;
        size_t n_totals;
        Recent *recent;
        size_t n_recent;
        Interval *intervals;
        size_t n_intervals;
        Gaps *gaps;
        size_t n_gaps;
        CauseLost *cause_lost; /* while the trace records */
        size_t n_cause_lost;
        SelfCost self;
} Input;

static void input_done(Input *in)
{
        free(in->probes);
        free(in->totals);
        free(in->recent);
        free(in->intervals);
        free(in->gaps);
        free(in->cause_lost);
        free(in->self.methods);
}

/* Checks that @arr is an array of objects each with a valid "cpu" that no other has (the
 * series of one CPU must not appear twice), and allocates @n_ret entries of @size for them. */
static int parse_cpu_array(json_t *arr, size_t size, void **ret, size_t *n_ret)
{
        cpu_set_t seen;
        json_t *o;
        size_t i;

        if (!json_is_array(arr) || json_array_size(arr) > CPU_SETSIZE) {
                return -EBADMSG;
        }
        CPU_ZERO(&seen);
        json_array_foreach(arr, i, o)
        {
                json_int_t cpu;
                int r = json_read_int(o, "cpu", 0, CPU_SETSIZE - 1, &cpu);

                if (r < 0) {
                        return r;
                }
                if (CPU_ISSET((int)cpu, &seen)) {
                        return -EBADMSG;
                }
                CPU_SET((int)cpu, &seen);
        }
        *ret = calloc(json_array_size(arr) + 1, size);
        if (!*ret) {
                return -ENOMEM;
        }
        *n_ret = json_array_size(arr);
        return 0;
}

static void cpu_label(json_t *o, char label[static 16])
{
        snprintf(label, 16, "%d", (int)json_integer_value(json_object_get(o, "cpu")));
}

static int parse_status(Input *in, json_t *status)
{
        json_t *counter = json_object_get(status, "counter");
        json_t *config = json_object_get(status, "config");
        json_t *probes = json_object_get(status, "probes"), *o;
        size_t i;
        int r;

        if ((r = json_read_string(status, "version", LABEL_VALUE_MAX, &in->version)) < 0 ||
            (r = json_read_u64(status, "uptime_ns", &in->uptime_ns)) < 0 ||
            (r = json_read_u64(status, "history_bytes", &in->history_bytes)) < 0 ||
            (r = json_read_string(counter, "source", LABEL_VALUE_MAX, &in->source)) < 0 ||
            (r = json_read_string(counter, "hz_source", LABEL_VALUE_MAX, &in->hz_source)) < 0 ||
            (r = json_read_u64(counter, "hz", &in->hz)) < 0 ||
            (r = json_read_number(counter, "drift_ppm", &in->drift_ppm)) < 0 ||
            (r = json_read_u64(config, "threshold_ns", &in->threshold_ns)) < 0 ||
            (r = json_read_u64(config, "interval_ns", &in->interval_ns)) < 0 ||
            (r = parse_cpu_array(probes, sizeof(ProbeEntry), (void **)&in->probes, &in->n_probes)) <
                    0) {
                return r;
        }
        json_array_foreach(probes, i, o)
        {
                ProbeEntry *p = &in->probes[i];

                cpu_label(o, p->cpu);
                if ((r = json_read_string(o, "state", LABEL_VALUE_MAX, &p->state)) < 0 ||
                    (r = json_read_ns(o, "floor_ns", &p->floor_ns)) < 0) {
                        return r;
                }
        }
        return 0;
}

/* GetStatus' trace.cpus, when the trace records: each CPU's lost_ns by kind, every kind
 * present and no other. */
static int parse_cause_lost(Input *in, json_t *status)
{
        json_t *arr = json_object_get(json_object_get(status, "trace"), "cpus"), *o;
        size_t i;
        int r;

        if (!arr || json_is_null(arr)) {
                return 0;
        }
        r = parse_cpu_array(arr, sizeof(CauseLost), (void **)&in->cause_lost, &in->n_cause_lost);
        if (r < 0) {
                return r;
        }
        json_array_foreach(arr, i, o)
        {
                json_t *kinds = json_object_get(o, "lost_ns");

                cpu_label(o, in->cause_lost[i].cpu);
                if (!json_is_object(kinds) || json_object_size(kinds) != CAUSE_KINDS) {
                        return -EBADMSG;
                }
                for (size_t k = 0; k < CAUSE_KINDS; k++) {
                        if ((r = json_read_u64(kinds, cause_kinds[k], &in->cause_lost[i].ns[k])) <
                            0) {
                                return r;
                        }
                }
        }
        return 0;
}

/* Reads the array @arr of at most @max non-negative integers into @ret, ascending when
 * @ascending, and their number into *@n_ret. */
static int read_u64_array(json_t *arr, size_t max, bool ascending, uint64_t *ret, size_t *n_ret)
{
        json_t *v;
        size_t i;

        if (!json_is_array(arr) || json_array_size(arr) > max) {
                return -EBADMSG;
        }
        json_array_foreach(arr, i, v)
        {
                if (!json_is_integer(v) || json_integer_value(v) < 0) {
                        return -EBADMSG;
                }
                ret[i] = (uint64_t)json_integer_value(v);
                if (ascending && i > 0 && ret[i] <= ret[i - 1]) {
                        return -EBADMSG;
                }
        }
        *n_ret = json_array_size(arr);
        return 0;
}

static int parse_self_method(SelfCost *sc, json_t *o, SelfMethod *m)
{
        size_t n;
        int r;

        if ((r = json_read_string(o, "method", LABEL_VALUE_MAX, &m->method)) < 0 ||
            (r = json_read_u64(o, "calls", &m->calls)) < 0 ||
            (r = json_read_u64(o, "refused", &m->refused)) < 0 ||
            (r = json_read_u64(o, "cpu_ns", &m->cpu_ns)) < 0 ||
            (r = json_read_u64(o, "answered", &m->answered)) < 0 ||
            (r = json_read_u64(o, "duration_sum_ns", &m->duration_sum_ns)) < 0 ||
            (r = read_u64_array(json_object_get(o, "duration_counts"), SELF_BOUNDS_MAX, false,
                                m->counts, &n)) < 0) {
                return r;
        }
        /* Cumulative, one per bound, and none above the count of all. */
        if (n != sc->n_bounds || (n > 0 && m->counts[n - 1] > m->answered)) {
                return -EBADMSG;
        }
        for (size_t k = 1; k < n; k++) {
                if (m->counts[k] < m->counts[k - 1]) {
                        return -EBADMSG;
                }
        }
        for (SelfMethod *o2 = sc->methods; o2 < m; o2++) {
                if (strcmp(o2->method, m->method) == 0) {
                        return -EBADMSG;
                }
        }
        return 0;
}

/* GetStatus' "self", when the daemon reports it. */
static int parse_self(Input *in, json_t *status)
{
        json_t *self = json_object_get(status, "self"), *methods, *o;
        SelfCost *sc = &in->self;
        size_t i;
        int r;

        if (!self) {
                return 0;
        }
        methods = json_object_get(self, "methods");
        if ((r = json_read_u64(self, "cpu_ns", &sc->cpu_ns)) < 0 ||
            (r = json_read_number(json_object_get(self, "budget"), "cpu_ratio",
                                  &sc->budget_ratio)) < 0 ||
            (r = read_u64_array(json_object_get(self, "duration_bounds_ns"), SELF_BOUNDS_MAX, true,
                                sc->bounds_ns, &sc->n_bounds)) < 0) {
                return r;
        }
        if (!json_is_array(methods) || json_array_size(methods) > SELF_METHODS_MAX ||
            !isfinite(sc->budget_ratio) || sc->budget_ratio < 0) {
                return -EBADMSG;
        }
        sc->methods = calloc(json_array_size(methods) + 1, sizeof(SelfMethod));
        if (!sc->methods) {
                return -ENOMEM;
        }
        json_array_foreach(methods, i, o)
        {
                if ((r = parse_self_method(sc, o, &sc->methods[i])) < 0) {
                        return r;
                }
        }
        sc->n_methods = json_array_size(methods);
        sc->have = true;
        return 0;
}

/* Checks an attribution map ({"LOC": 12, ...}) of a GetStats entry. */
static int check_sources(json_t *map)
{
        const char *name;
        json_t *v;

        if (!json_is_object(map)) {
                return -EBADMSG;
        }
        json_object_foreach(map, name, v)
        {
                if (name[0] == '\0' || strlen(name) > LABEL_VALUE_MAX || !json_is_integer(v) ||
                    json_integer_value(v) < 0) {
                        return -EBADMSG;
                }
        }
        return 0;
}

/* Reads one GetStats entry into @ret: well-formed, with every member of @need. */
static int read_cpu_stats(json_t *o, unsigned need, CpuStats *ret)
{
        if (cpu_stats_read(o, ret) < 0 || (ret->have & need) != need) {
                return -EBADMSG;
        }
        return 0;
}

static int parse_totals(Input *in, json_t *stats)
{
        json_t *o;
        size_t i;
        int r;

        r = parse_cpu_array(stats, sizeof(Totals), (void **)&in->totals, &in->n_totals);
        if (r < 0) {
                return r;
        }
        json_array_foreach(stats, i, o)
        {
                Totals *t = &in->totals[i];
                unsigned need = 0;
                CpuStats s;

                for (size_t k = 0; k < COUNTERS; k++) {
                        need |= counters[k].have;
                }
                if ((r = read_cpu_stats(o, need, &s)) < 0) {
                        return r;
                }
                t->cpu = (int)s.cpu;
                cpu_label(o, t->cpu_label);
                for (size_t k = 0; k < COUNTERS; k++) {
                        t->counters[k] = *(const uint64_t *)((const char *)&s + counters[k].offset);
                }
                for (size_t k = 0; k < SOURCE_MAPS; k++) {
                        t->source_maps[k] =
                                *(json_t *const *)((const char *)&s + source_maps[k].offset);
                        if ((r = check_sources(t->source_maps[k])) < 0) {
                                return r;
                        }
                }
                t->mean_ns = s.summary.gap.mean_ns;
                /* NaN (missing) fails this too. */
                if (!(t->mean_ns >= 0)) {
                        return -EBADMSG;
                }
                t->have_smi = s.have & CPU_STATS_SMI;
                t->smi = s.smi;
        }
        return 0;
}

static int parse_recent(Input *in, json_t *stats_1m, json_t *intervals_last)
{
        json_t *o;
        size_t i;
        int r;

        r = parse_cpu_array(stats_1m, sizeof(Recent), (void **)&in->recent, &in->n_recent);
        if (r < 0) {
                return r;
        }
        json_array_foreach(stats_1m, i, o)
        {
                Recent *t = &in->recent[i];
                CpuStats s;

                cpu_label(o, t->cpu);
                r = read_cpu_stats(o, CPU_STATS_SAMPLES | CPU_STATS_STALLS | CPU_STATS_DURATION,
                                   &s);
                if (r < 0 || (r = ns_from_number(s.summary.gap.max_ns, &t->max_gap_ns)) < 0) {
                        return r;
                }
                t->samples = s.summary.samples;
                t->stalls = s.stalls;
                t->duration_ns = s.summary.duration_ns;
                t->available_pct = s.summary.cpu_available_pct;
                /* NaN (missing) fails this too. */
                if (!(t->available_pct >= 0 && t->available_pct <= 100)) {
                        return -EBADMSG;
                }
        }
        r = parse_cpu_array(intervals_last, sizeof(Interval), (void **)&in->intervals,
                            &in->n_intervals);
        if (r < 0) {
                return r;
        }
        json_array_foreach(intervals_last, i, o)
        {
                cpu_label(o, in->intervals[i].cpu);
                if ((r = json_read_ns(o, "max_gap_ns", &in->intervals[i].max_gap_ns)) < 0) {
                        return r;
                }
        }
        return 0;
}

/* Sums the buckets of one GetHistogram reply into the le boundaries: a bucket counts in every
 * le at or above its (inclusive) upper edge, so cumulative[i] is the number of gaps in buckets
 * whose upper edge is at most gap_le[i]. */
static int parse_gaps(Gaps *g, json_t *hist)
{
        json_t *kind = json_object_get(hist, "kind");
        ReportBucket *b = NULL;
        int n, r = 0;

        if (kind && (!json_is_string(kind) || strcmp(json_string_value(kind), "gap") != 0)) {
                return -EBADMSG;
        }
        n = buckets_from_json(json_object_get(hist, "buckets"), &b);
        if (n < 0) {
                return n == -ENOMEM ? n : -EBADMSG;
        }
        for (int i = 0; i < n && r == 0; i++) {
                size_t le = 0;

                /* Gaps are never negative: a bucket below 0 is not a gap histogram's. */
                if (b[i].lower_ns < 0) {
                        r = -EBADMSG;
                        continue;
                }
                while (le < GAP_LE_COUNT && gap_le[le].ns < (uint64_t)b[i].upper_ns) {
                        le++;
                }
                if (__builtin_add_overflow(g->cumulative[le], b[i].count, &g->cumulative[le])) {
                        r = -EBADMSG;
                }
        }
        free(b);
        for (size_t le = 1; le <= GAP_LE_COUNT && r == 0; le++) {
                if (__builtin_add_overflow(g->cumulative[le], g->cumulative[le - 1],
                                           &g->cumulative[le])) {
                        r = -EBADMSG;
                }
        }
        return r;
}

static int parse_histograms(Input *in, json_t *histograms)
{
        json_t *o;
        size_t i;
        int r;

        r = parse_cpu_array(histograms, sizeof(Gaps), (void **)&in->gaps, &in->n_gaps);
        if (r < 0) {
                return r;
        }
        json_array_foreach(histograms, i, o)
        {
                Gaps *g = &in->gaps[i];
                int cpu = (int)json_integer_value(json_object_get(o, "cpu"));
                const Totals *t = NULL;
                double sum_ns;

                cpu_label(o, g->cpu);
                if ((r = parse_gaps(g, o)) < 0) {
                        return r;
                }
                /* The sum comes from the statistics: without them there is no _sum. */
                for (size_t k = 0; k < in->n_totals; k++) {
                        if (in->totals[k].cpu == cpu) {
                                t = &in->totals[k];
                        }
                }
                if (!t) {
                        return -EBADMSG;
                }
                /* The sum of the gaps is their mean times their count; the mean is exact to
                 * the double's precision, far below a ns over any realistic uptime. */
                sum_ns = t->mean_ns * (double)g->cumulative[GAP_LE_COUNT];
                if (!(sum_ns < 9.2e18)) {
                        return -EBADMSG;
                }
                g->sum_ns = (uint64_t)llround(sum_ns);
        }
        return 0;
}

/* --- the families ---------------------------------------------------------------------- */

static void render_status(Writer *w, const Input *in)
{
        char v[VALUE_MAX];

        put_sample(w, &fam_build_info, "", (Label[]){{"version", in->version}}, 1, "1");
        put_sample(w, &fam_uptime, "", NULL, 0, value_seconds(v, in->uptime_ns));
        put_sample(w, &fam_tick_frequency, "",
                   (Label[]){{"source", in->source}, {"hz_source", in->hz_source}}, 2,
                   value_u64(v, in->hz));
        put_sample(w, &fam_tick_drift, "", NULL, 0, value_double(v, in->drift_ppm));
        put_sample(w, &fam_threshold, "", NULL, 0, value_seconds(v, in->threshold_ns));
        put_sample(w, &fam_history_bytes, "", NULL, 0, value_u64(v, in->history_bytes));
        for (size_t i = 0; i < in->n_probes; i++) {
                put_sample(w, &fam_probe_up, "", (Label[]){{"cpu", in->probes[i].cpu}}, 1,
                           strcmp(in->probes[i].state, "running") == 0 ? "1" : "0");
        }
        for (size_t i = 0; i < in->n_probes; i++) {
                for (size_t s = 0; s < ELEMENTSOF(probe_states); s++) {
                        put_sample(
                                w, &fam_probe_state, "",
                                (Label[]){{"cpu", in->probes[i].cpu}, {"state", probe_states[s]}},
                                2, strcmp(in->probes[i].state, probe_states[s]) == 0 ? "1" : "0");
                }
        }
        for (size_t i = 0; i < in->n_probes; i++) {
                /* 0 until the probe has measured its floor. */
                if (in->probes[i].floor_ns > 0) {
                        put_sample(w, &fam_probe_floor, "", (Label[]){{"cpu", in->probes[i].cpu}},
                                   1, value_seconds(v, in->probes[i].floor_ns));
                }
        }
}

/* The counters and attribution counts, from the "all" window. */
static void render_totals(Writer *w, const Input *in)
{
        char v[VALUE_MAX];

        for (size_t k = 0; k < COUNTERS; k++) {
                for (size_t i = 0; i < in->n_totals; i++) {
                        uint64_t x = in->totals[i].counters[k];

                        put_sample(w, counters[k].fam, "",
                                   (Label[]){{"cpu", in->totals[i].cpu_label}}, 1,
                                   counters[k].seconds ? value_seconds(v, x) : value_u64(v, x));
                }
        }
        for (size_t k = 0; k < SOURCE_MAPS; k++) {
                for (size_t i = 0; i < in->n_totals; i++) {
                        const char *name;
                        json_t *count;

                        json_object_foreach(in->totals[i].source_maps[k], name, count)
                        {
                                put_sample(w, source_maps[k].fam, "",
                                           (Label[]){{"cpu", in->totals[i].cpu_label},
                                                     {source_maps[k].label, name}},
                                           2, value_u64(v, (uint64_t)json_integer_value(count)));
                        }
                }
        }
        for (size_t i = 0; i < in->n_totals; i++) {
                if (in->totals[i].have_smi) {
                        put_sample(w, &fam_smi, "", (Label[]){{"cpu", in->totals[i].cpu_label}}, 1,
                                   value_u64(v, in->totals[i].smi));
                }
        }
}

/* One family per method and counter of "self", in the order of the families. */
static void render_self_counters(Writer *w, const SelfCost *sc)
{
        static const struct {
                const Family *fam;
                size_t offset;
                bool seconds;
        } per_method[] = {
                {&fam_self_calls, offsetof(SelfMethod, calls), false},
                {&fam_self_refused, offsetof(SelfMethod, refused), false},
                {&fam_self_call_cpu, offsetof(SelfMethod, cpu_ns), true},
        };
        char v[VALUE_MAX];

        for (size_t k = 0; k < ELEMENTSOF(per_method); k++) {
                for (size_t i = 0; i < sc->n_methods; i++) {
                        uint64_t x = *(const uint64_t *)((const char *)&sc->methods[i] +
                                                         per_method[k].offset);

                        put_sample(w, per_method[k].fam, "",
                                   (Label[]){{"method", sc->methods[i].method}}, 1,
                                   per_method[k].seconds ? value_seconds(v, x) : value_u64(v, x));
                }
        }
}

static void render_self(Writer *w, const Input *in)
{
        const SelfCost *sc = &in->self;
        char v[VALUE_MAX], le[VALUE_MAX];

        if (!sc->have) {
                return;
        }
        put_sample(w, &fam_self_cpu, "", NULL, 0, value_seconds(v, sc->cpu_ns));
        put_sample(w, &fam_self_budget, "", NULL, 0, value_double(v, sc->budget_ratio));
        render_self_counters(w, sc);
        for (size_t i = 0; i < sc->n_methods; i++) {
                const SelfMethod *m = &sc->methods[i];

                for (size_t k = 0; k < sc->n_bounds; k++) {
                        put_sample(
                                w, &fam_self_duration, "_bucket",
                                (Label[]){{"method", m->method},
                                          {"le", value_double(le, (double)sc->bounds_ns[k] / 1e9)}},
                                2, value_u64(v, m->counts[k]));
                }
                put_sample(w, &fam_self_duration, "_bucket",
                           (Label[]){{"method", m->method}, {"le", "+Inf"}}, 2,
                           value_u64(v, m->answered));
                put_sample(w, &fam_self_duration, "_sum", (Label[]){{"method", m->method}}, 1,
                           value_seconds(v, m->duration_sum_ns));
                put_sample(w, &fam_self_duration, "_count", (Label[]){{"method", m->method}}, 1,
                           value_u64(v, m->answered));
        }
}

static void render_cause_lost(Writer *w, const Input *in)
{
        char v[VALUE_MAX];

        for (size_t i = 0; i < in->n_cause_lost; i++) {
                for (size_t k = 0; k < CAUSE_KINDS; k++) {
                        put_sample(
                                w, &fam_cause_lost, "",
                                (Label[]){{"cpu", in->cause_lost[i].cpu}, {"kind", cause_kinds[k]}},
                                2, value_seconds(v, in->cause_lost[i].ns[k]));
                }
        }
}

static void render_gaps(Writer *w, const Input *in)
{
        char v[VALUE_MAX];

        for (size_t i = 0; i < in->n_gaps; i++) {
                const Gaps *g = &in->gaps[i];

                for (size_t le = 0; le < GAP_LE_COUNT; le++) {
                        put_sample(w, &fam_gap, "_bucket",
                                   (Label[]){{"cpu", g->cpu}, {"le", gap_le[le].text}}, 2,
                                   value_u64(v, g->cumulative[le]));
                }
                put_sample(w, &fam_gap, "_bucket", (Label[]){{"cpu", g->cpu}, {"le", "+Inf"}}, 2,
                           value_u64(v, g->cumulative[GAP_LE_COUNT]));
                put_sample(w, &fam_gap, "_sum", (Label[]){{"cpu", g->cpu}}, 1,
                           value_seconds(v, g->sum_ns));
                put_sample(w, &fam_gap, "_count", (Label[]){{"cpu", g->cpu}}, 1,
                           value_u64(v, g->cumulative[GAP_LE_COUNT]));
        }
}

/* The worst gaps of the newest interval and of the last minute, and the CPU available over
 * the last minute. A minute with a stalled interval had a gap at least an interval long, though
 * the probe could not time it. */
static void render_recent(Writer *w, const Input *in)
{
        char v[VALUE_MAX];

        for (size_t i = 0; i < in->n_intervals; i++) {
                put_sample(w, &fam_gap_max, "",
                           (Label[]){{"cpu", in->intervals[i].cpu}, {"window", "interval"}}, 2,
                           value_seconds(v, in->intervals[i].max_gap_ns));
        }
        for (size_t i = 0; i < in->n_recent; i++) {
                const Recent *t = &in->recent[i];
                uint64_t max_ns = t->max_gap_ns;

                if (t->stalls > 0 && max_ns < in->interval_ns) {
                        max_ns = in->interval_ns;
                }
                /* No samples and no stall: nothing was measured, there is no worst gap. */
                if (t->samples > 0 || t->stalls > 0) {
                        put_sample(w, &fam_gap_max, "",
                                   (Label[]){{"cpu", t->cpu}, {"window", "1m"}}, 2,
                                   value_seconds(v, max_ns));
                }
        }
        for (size_t i = 0; i < in->n_recent; i++) {
                if (in->recent[i].duration_ns > 0) {
                        put_sample(w, &fam_available, "",
                                   (Label[]){{"cpu", in->recent[i].cpu}, {"window", "1m"}}, 2,
                                   value_double(v, in->recent[i].available_pct / 100.0));
                }
        }
}

int prometheus_render(FILE *f, json_t *status, json_t *stats_all, json_t *stats_1m,
                      json_t *intervals_last, json_t *histograms_all)
{
        Input in = {0};
        char *buf = NULL;
        size_t size = 0;
        Writer w = {0};
        int r;

        /* Everything is read and checked before the first line is written. */
        if ((r = parse_status(&in, status)) < 0 || (r = parse_cause_lost(&in, status)) < 0 ||
            (r = parse_self(&in, status)) < 0 || (r = parse_totals(&in, stats_all)) < 0 ||
            (r = parse_recent(&in, stats_1m, intervals_last)) < 0 ||
            (r = parse_histograms(&in, histograms_all)) < 0) {
                input_done(&in);
                return r;
        }
        w.f = open_memstream(&buf, &size);
        if (!w.f) {
                input_done(&in);
                return -ENOMEM;
        }
        render_status(&w, &in);
        render_totals(&w, &in);
        render_cause_lost(&w, &in);
        render_gaps(&w, &in);
        render_recent(&w, &in);
        render_self(&w, &in);
        input_done(&in);
        r = ferror(w.f) ? -ENOMEM : 0;
        if (fclose(w.f) != 0 && r >= 0) {
                r = -ENOMEM;
        }
        /* Written in one go, so that @f gets the whole exposition or an error. */
        if (r >= 0 && size > 0 && fwrite(buf, 1, size, f) != size) {
                r = -EIO;
        }
        free(buf);
        return r;
}

const char *prometheus_interval_window(uint64_t interval_ns)
{
        if (interval_ns <= 10 * NSEC_PER_SEC / 3) {
                return "10s";
        }
        if (interval_ns <= 20 * NSEC_PER_SEC) {
                return "1m";
        }
        return "5m";
}

#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "summary.h"

/* JSON forms of the summaries, shared by jitter-probe, the daemon and jitterctl, where
 * {stats} = {"count", "min_ns", "max_ns", "mean_ns", "stddev_ns", "median_ns",
 *            "percentiles": {"p90": ns, ...}}. Each returns a new reference, or NULL on OOM. */

/* {"samples", "duration_ns", "gap": {stats}, "diffdiff": {stats}, "interruptions": {"count",
 * "per_second"}, "lost_ns", "cpu_available_pct"} */
json_t *slot_summary_to_json(const SlotSummary *s);

/* [{"lower_ns", "upper_ns", "count"}] for every non-empty bucket, in ns, at resolution
 * @sub_bits (histogram_foreach()): HIST_SUB_BITS for the probe's, a history window's
 * hist_sub_bits for its histograms, whose coarse buckets' counts went into the highest fine
 * bucket of each. */
json_t *histogram_to_json(const Histogram *h, const TickConv *conv, unsigned sub_bits);
json_t *signed_histogram_to_json(const SignedHistogram *h, const TickConv *conv, unsigned sub_bits);

/* {"cpu", "state", "samples", "max_gap_ns", "p99_ns", "interruptions", "lost_ns",
 * "cpu_available_pct"}: one CPU's interval as Monitor sends it (IntervalCpu), from its
 * summary @s. Returns a new reference, or NULL on OOM. */
json_t *interval_cpu_to_json(int cpu, const char *state, const SlotSummary *s);

/* --- reading them back: the one reader of these forms (jitterctl, the Prometheus renderer),
 * member by member with json-read.h. --- */

/* Value @key of @v: "min_ns", "max_ns", "mean_ns", "stddev_ns", "median_ns" or a percentile
 * ("p99.99"; "p50" is the median). NaN when @v does not have it or @key names none of these. */
double value_summary_get(const ValueSummary *v, const char *key);

/* Fills @ret from a slot summary object (jitter-probe's "cpus" entries, one element of
 * GetStats' "cpus"). Returns 0 or -EINVAL. */
int slot_summary_from_json(json_t *cpu_stats, SlotSummary *ret);

/* Reads a GetHistogram "buckets" array ([{"lower_ns", "upper_ns", "count"}]; the edges are
 * signed for the diffdiff kind) into a newly allocated array (free() it), sorted by lower_ns.
 * Empty buckets are dropped. Returns the number of buckets, -EINVAL when an element is
 * malformed (missing field, upper below lower, negative count), or -ENOMEM. */
int buckets_from_json(json_t *array, ReportBucket **ret);

/* --- the typed readers of the objects that carry these forms ---------------------------------
 * cpu_stats_read() and interval_cpu_read() fill every member of their struct that the object
 * holds with the right type, and set its bit in "have" for the integers; a member that is
 * missing (or null, or malformed) stays 0, NaN for a number, NULL for a string or an object.
 * They return 0, or -EBADMSG when @o is not an object or a member is there but malformed.
 * What a caller needs differs: a command that prints what it has shows the rest as 0 or "-",
 * the Prometheus renderer refuses a reply without what it exports. */

enum {
        CPU_STATS_CPU = 1u << 0,
        CPU_STATS_SAMPLES = 1u << 1,
        CPU_STATS_DURATION = 1u << 2,
        CPU_STATS_EVENTS = 1u << 3, /* interruptions.count */
        CPU_STATS_LOST = 1u << 4,
        CPU_STATS_STALLS = 1u << 5,
        CPU_STATS_SMI = 1u << 6, /* null where the CPU has no SMI counter */
        CPU_STATS_GAP_COUNT = 1u << 7,
        CPU_STATS_DD_COUNT = 1u << 8,
};

/* One element of GetStats' "cpus" (CpuStats in io.jitterd.varlink; jitter-probe's "cpus"
 * entries share its summary members). Strings and JSON members are borrowed from the object. */
typedef struct CpuStats {
        unsigned have; /* CPU_STATS_* */
        uint64_t cpu;
        const char *window;
        SlotSummary summary; /* samples, duration, gap, diffdiff, interruptions, lost, available */
        uint64_t stalls;
        uint64_t smi;
        json_t *interrupts, *softirqs, *ctxsw; /* {"LOC": 12, ...} */
        json_t *causes, *periods;              /* arrays of Cause and Period */
        json_t *background;                    /* a Background object, NULL without a fit */
} CpuStats;

int cpu_stats_read(json_t *o, CpuStats *ret);

enum {
        INTERVAL_CPU_CPU = 1u << 0,
        INTERVAL_CPU_SAMPLES = 1u << 1,
        INTERVAL_CPU_MAX_GAP = 1u << 2,
        INTERVAL_CPU_EVENTS = 1u << 3,
        INTERVAL_CPU_LOST = 1u << 4,
};

/* One element of a Monitor reply's "cpus" (IntervalCpu, interval_cpu_to_json()). */
typedef struct IntervalCpu {
        unsigned have; /* INTERVAL_CPU_* */
        uint64_t cpu;
        const char *state;
        uint64_t samples;
        uint64_t max_gap_ns;
        double p99_ns;
        uint64_t events;
        uint64_t lost_ns;
        double cpu_available_pct;
        json_t *interrupts; /* {"LOC": 12, ...} */
} IntervalCpu;

int interval_cpu_read(json_t *o, IntervalCpu *ret);

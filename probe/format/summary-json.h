#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "summary.h"

/* JSON forms of the summaries, shared by jitter-probe, the daemon and jitterctl:
 * {stats} = {"count", "min_ns", "max_ns", "mean_ns", "stddev_ns", "median_ns",
 *            "percentiles": {"p90": ns, ...}}. Each returns a new reference, or NULL on OOM. */
json_t *value_summary_to_json(const ValueSummary *v);

/* {"samples", "duration_ns", "gap": {stats}, "diffdiff": {stats}, "interruptions": {"count",
 * "per_second"}, "lost_ns", "cpu_available_pct"} */
json_t *slot_summary_to_json(const SlotSummary *s);

/* [{"lower_ns", "upper_ns", "count"}] for every non-empty bucket, in ns. */
json_t *histogram_to_json(const Histogram *h, const TickConv *conv);
json_t *signed_histogram_to_json(const SignedHistogram *h, const TickConv *conv);

/* --- reading them back: the one reader of these forms (jitterctl, the Prometheus renderer) ---
 * Each json_read_*() reads member @key of object @o (NULL or not an object: missing) and
 * returns 0, or -EBADMSG when it is missing or not what is asked for. */

/* An integer in [@min, @max]. */
int json_read_int(json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *ret);

/* A non-negative integer. */
int json_read_u64(json_t *o, const char *key, uint64_t *ret);

/* A finite number, integer or real (whole ns values are sent as integers). */
int json_read_number(json_t *o, const char *key, double *ret);

/* A non-negative whole number of ns, integer or real, rounded; below 2^63 ns (292 years). */
int json_read_ns(json_t *o, const char *key, uint64_t *ret);

/* A string of at most @max_len bytes without a NUL inside (borrowed). */
int json_read_string(json_t *o, const char *key, size_t max_len, const char **ret);

/* Reads percentile @key ("p99.99"; "p50" falls back to "median_ns") of @values, a {stats}
 * object. Returns false when it is not there. */
bool values_percentile(json_t *values, const char *key, double *ret);

/* Fills @ret from @values, a {stats} object. The variance is the square of the standard
 * deviation; percentiles missing from the map are NaN. Returns 0, or -EINVAL when a required
 * field is missing or not a number. */
int value_summary_from_json(json_t *values, ValueSummary *ret);

/* Fills @ret from a slot summary object (jitter-probe's "cpus" entries, one element of
 * GetStats' "cpus"). Returns 0 or -EINVAL. */
int slot_summary_from_json(json_t *cpu_stats, SlotSummary *ret);

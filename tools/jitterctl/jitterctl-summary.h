#pragma once

/* The daemon's JSON statistics (a CpuStats of GetStats) read back into the SlotSummary that
 * probe/format/report.h prints, so that `jitterctl report` and jitter-probe write the same report. */

#include <jansson.h>

#include "summary.h"

/* Fills @ret from @values, a "gap" or "diffdiff" object ({"count", "min_ns", "max_ns",
 * "mean_ns", "stddev_ns", "median_ns", "percentiles": {"p90": ns, ...}}). The variance is the
 * square of the standard deviation; percentiles missing from the map are NaN. Returns 0, or
 * -EINVAL when a required field is missing or not a number. */
int value_summary_from_json(json_t *values, ValueSummary *ret);

/* Fills @ret from one element of GetStats' "cpus". Returns 0 or -EINVAL. */
int slot_summary_from_json(json_t *cpu_stats, SlotSummary *ret);

/* Reads percentile @key ("p99.99"; "p50" falls back to "median_ns") of @values. Returns false
 * when the daemon did not report it. */
bool values_percentile(json_t *values, const char *key, double *ret);

/* Collects the per-interval worst gaps (ns) of a GetTimeline "points" array into a newly
 * allocated array (free() it), from the intervals that had samples. Where the timeline mixes
 * resolutions (fine recent intervals, coarse older ones), only the intervals of the most
 * frequent length are taken, since a 1 min worst gap and a 1 s one are not the same quantity;
 * that length is stored in @ret_interval_ns (0 when there are no samples). Returns the number
 * of values, -EINVAL for a malformed array, or -ENOMEM. */
int timeline_worst_gaps(json_t *points, double **ret, uint64_t *ret_interval_ns);

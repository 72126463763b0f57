#pragma once

#include <jansson.h>

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

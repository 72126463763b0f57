#pragma once

/* What jitterctl reads of the daemon's replies beyond the summaries: those (a CpuStats of
 * GetStats read back into the SlotSummary that probe/format/report.h prints, so that
 * `jitterctl report` and jitter-probe write the same report) are read by summary-json.h. */

#include <jansson.h>

#include "summary-json.h"
#include "summary.h"

/* Collects the per-interval worst gaps (ns) of a GetTimeline "points" array into a newly
 * allocated array (free() it), from the intervals that had samples. Where the timeline mixes
 * resolutions (fine recent intervals, coarse older ones), only the intervals of the most
 * frequent length are taken, since a 1 min worst gap and a 1 s one are not the same quantity;
 * that length is stored in @ret_interval_ns (0 when there are no samples). Returns the number
 * of values, -EINVAL for a malformed array, or -ENOMEM. */
int timeline_worst_gaps(json_t *points, double **ret, uint64_t *ret_interval_ns);

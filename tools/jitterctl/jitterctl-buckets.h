#pragma once

/* Histogram buckets as the daemon sends them (GetHistogram, read by buckets_from_json() of
 * summary-json.h), made readable: joined into rows by report_buckets_join() (report.h), and
 * located by quantile for the percentile markers. */

#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "summary-json.h"

/* Index of the bucket holding quantile @q (0 < q <= 1) of the counts: the first whose cumulative
 * count reaches ceil(q * total). Returns -1 when there are no counts. */
long buckets_quantile_index(const ReportBucket *b, size_t n, double q);

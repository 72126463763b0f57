#pragma once

/* Histogram buckets as the daemon sends them (GetHistogram), made readable: joined into rows
 * by report_buckets_join() (report.h), and located by quantile for the percentile markers. */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Reads a GetHistogram "buckets" array ([{"lower_ns", "upper_ns", "count"}]) into a newly
 * allocated array (free() it), sorted by lower_ns. Empty buckets are dropped. Returns the number
 * of buckets, -EINVAL when an element is malformed (missing field, upper below lower, negative
 * count), or -ENOMEM. */
int buckets_from_json(json_t *array, ReportBucket **ret);

/* Sum of the counts of @n buckets. */
uint64_t buckets_total(const ReportBucket *b, size_t n);

/* Index of the bucket holding quantile @q (0 < q <= 1) of the counts: the first whose cumulative
 * count reaches ceil(q * total). Returns -1 when there are no counts. */
long buckets_quantile_index(const ReportBucket *b, size_t n, double q);

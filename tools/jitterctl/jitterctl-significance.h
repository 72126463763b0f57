#pragma once

/* Whether two sets of per-interval samples (e.g. the worst gap of each interval before and
 * after a tuning change, as a timeline has them) differ: the Mann–Whitney U test, which assumes
 * nothing about the shape of the distributions, and the plain summary an operator reports
 * beside it. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n, min, max, mean and sample standard deviation of a set of values. */
typedef struct SampleSummary {
        size_t n;
        double min;
        double max;
        double mean;
        double stddev; /* with n - 1; 0 for fewer than two values */
} SampleSummary;

/* The result of a two-sided Mann–Whitney U test of samples A and B. */
typedef struct MannWhitney {
        size_t n_a;
        size_t n_b;
        double u_a; /* pairs (a, b) with a > b, ties counting one half */
        double u;   /* min(u_a, n_a * n_b - u_a), the statistic tables list */
        double z;   /* normal approximation with tie and continuity correction; > 0: A larger */
        double p;   /* two-sided */
} MannWhitney;

/* The significance level at which jitterctl calls a difference significant. */
#define MANN_WHITNEY_ALPHA 0.01

/* Summarises @n values (@n may be 0: everything is then 0). */
void sample_summarize(const double *values, size_t n, SampleSummary *ret);

/* Runs the Mann–Whitney U test on @a (@n_a values) and @b (@n_b values), which are not
 * modified. When all values are equal, z = 0 and p = 1. Returns 0, -EINVAL when a sample is
 * empty or holds NaN, or -ENOMEM. */
int mann_whitney(const double *a, size_t n_a, const double *b, size_t n_b, MannWhitney *ret);

/* Whether two interval lengths (ns) are the same resolution: within 10 % of each other
 * (harvests are never exactly on time). */
bool intervals_same_resolution(uint64_t a, uint64_t b);

/* Collects the per-interval worst gaps (ns) of a GetTimeline "points" array into a newly
 * allocated array (free() it), from the intervals that had samples. Where the timeline mixes
 * resolutions (fine recent intervals, coarse older ones), only the intervals of the most
 * frequent length are taken, since a 1 min worst gap and a 1 s one are not the same quantity;
 * that length is stored in @ret_interval_ns (0 when there are no samples). Returns the number
 * of values, -EINVAL for a malformed array, or -ENOMEM. */
int timeline_worst_gaps(json_t *points, double **ret, uint64_t *ret_interval_ns);

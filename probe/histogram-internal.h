#pragma once

/* For the tests only: what they check a histogram with, beyond what the engine and the
 * daemon use (histogram.h). */

#include <stdint.h>

#include "histogram.h"

/* Highest value counted in bucket @index (inclusive). */
uint64_t histogram_bucket_upper(unsigned index);

/* Zeroes @h. */
void histogram_clear(Histogram *h);

/* Adds @count occurrences of @v. */
void histogram_add_n(Histogram *h, uint64_t v, uint64_t count);

/* Total number of values counted. */
uint64_t histogram_total(const Histogram *h);

/* Removes the counts of @src from @dst (for sliding windows: total minus what fell out).
 * Returns 0, or -ERANGE (leaving @dst unchanged) when @src is not contained in @dst. */
int histogram_subtract(Histogram *dst, const Histogram *src);

/* Number of values >= @v, counting whole buckets: exact when @v is a bucket's lower edge,
 * otherwise it includes the bucket that holds @v. */
uint64_t histogram_count_at_or_above(const Histogram *h, uint64_t v);

/* Signed histogram counterparts. */
void signed_histogram_clear(SignedHistogram *h);
uint64_t signed_histogram_total(const SignedHistogram *h);
int signed_histogram_subtract(SignedHistogram *dst, const SignedHistogram *src);

/* Value at quantile @q, as a signed number: the edge of its bucket towards +infinity, as for
 * the unsigned histogram, so the reported value is never below the true one. */
int64_t signed_histogram_quantile(const SignedHistogram *h, double q);

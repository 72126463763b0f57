#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Log-linear (HDR-style) histogram of unsigned 64-bit values.
 *
 * Values below 2 * HIST_SUB are counted exactly; above, every power of two is split into
 * HIST_SUB equal sub-buckets, so a bucket is at most 1/HIST_SUB (3.125 %) of its lower bound
 * wide. The whole 64-bit range is covered, so nothing is ever clamped. The index is a
 * count-leading-zeros and a shift: no division, no float, cheap enough for the hot loop, which
 * is why the struct and histogram_index() are in the header. */

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB) /* 1920 */

typedef struct Histogram {
        uint64_t counts[HIST_BUCKETS];
} Histogram;

/* Signed variant (diff-of-diff): magnitudes of negative values and of non-negative values in
 * two halves, so the sign is kept and both tails have the same resolution. */
typedef struct SignedHistogram {
        Histogram neg; /* counts |v| for v < 0 */
        Histogram pos; /* counts v for v >= 0 */
} SignedHistogram;

static inline unsigned histogram_index(uint64_t v)
{
        unsigned msb, shift;

        if (v < 2 * HIST_SUB) {
                return (unsigned)v;
        }
        msb = 63u - (unsigned)__builtin_clzll(v);
        shift = msb - HIST_SUB_BITS;
        /* (v >> shift) lies in [HIST_SUB, 2 * HIST_SUB): the sub-bucket plus HIST_SUB. */
        return (shift << HIST_SUB_BITS) + (unsigned)(v >> shift);
}

static inline void histogram_add(Histogram *h, uint64_t v)
{
        h->counts[histogram_index(v)]++;
}

static inline void signed_histogram_add(SignedHistogram *h, int64_t v)
{
        if (v < 0) {
                histogram_add(&h->neg, -(uint64_t)v);
        } else {
                histogram_add(&h->pos, (uint64_t)v);
        }
}

/* Lowest value counted in bucket @index. */
uint64_t histogram_bucket_lower(unsigned index);

/* Adds every count of @src into @dst. */
void histogram_merge(Histogram *dst, const Histogram *src);

/* Value at quantile @q (0..1): the upper edge of the bucket that holds the ceil(q * total)-th
 * smallest value, so the true value is never above it by more than the bucket width. Returns 0
 * for an empty histogram. */
uint64_t histogram_quantile(const Histogram *h, double q);

/* histogram_quantile() of each of the @n quantiles @q into @ret, in one pass over the buckets:
 * @q must be in increasing order (asserted). Zeros for an empty histogram. */
void histogram_quantiles(const Histogram *h, const double *q, size_t n, uint64_t *ret);

/* Calls @fn for every non-empty bucket in increasing order; stops early when @fn returns
 * non-zero and returns that value. The buckets are those of resolution @sub_bits (0 to
 * HIST_SUB_BITS sub-buckets per power of two, log2): HIST_SUB_BITS gives each bucket as it is;
 * a coarser one sums the counts of the buckets that each coarser bucket spans and gives its
 * edges, for a histogram that holds counts kept at that resolution (the rolling history's). */
int histogram_foreach(const Histogram *h, unsigned sub_bits,
                      int (*fn)(uint64_t lower, uint64_t upper, uint64_t count, void *userdata),
                      void *userdata);

/* Adds every count of @src into @dst. */
void signed_histogram_merge(SignedHistogram *dst, const SignedHistogram *src);

/* signed_histogram_quantile() of each of the @n quantiles @q (in increasing order, asserted)
 * into @ret, in one pass. Zeros for an empty histogram. */
void signed_histogram_quantiles(const SignedHistogram *h, const double *q, size_t n, int64_t *ret);

/* Calls @fn for every non-empty bucket from the most negative to the most positive, at
 * resolution @sub_bits as histogram_foreach(); lower and upper are signed values (lower <=
 * upper). */
int signed_histogram_foreach(const SignedHistogram *h, unsigned sub_bits,
                             int (*fn)(int64_t lower, int64_t upper, uint64_t count,
                                       void *userdata),
                             void *userdata);

#include "histogram.h"

#include <errno.h>
#include <math.h>
#include <string.h>

uint64_t histogram_bucket_lower(unsigned index)
{
        unsigned shift;

        if (index < 2 * HIST_SUB) {
                return index;
        }
        shift = (index >> HIST_SUB_BITS) - 1;
        return (uint64_t)(HIST_SUB + (index & (HIST_SUB - 1))) << shift;
}

uint64_t histogram_bucket_upper(unsigned index)
{
        if (index + 1 >= HIST_BUCKETS) {
                return UINT64_MAX;
        }
        return histogram_bucket_lower(index + 1) - 1;
}

void histogram_clear(Histogram *h)
{
        memset(h, 0, sizeof(*h));
}

void histogram_add_n(Histogram *h, uint64_t v, uint64_t count)
{
        h->counts[histogram_index(v)] += count;
}

uint64_t histogram_total(const Histogram *h)
{
        uint64_t n = 0;

        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                n += h->counts[i];
        }
        return n;
}

void histogram_merge(Histogram *dst, const Histogram *src)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                dst->counts[i] += src->counts[i];
        }
}

int histogram_subtract(Histogram *dst, const Histogram *src)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (src->counts[i] > dst->counts[i]) {
                        return -ERANGE;
                }
        }
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                dst->counts[i] -= src->counts[i];
        }
        return 0;
}

/* 1-based rank of the value at quantile @q among @total values. */
static uint64_t quantile_rank(uint64_t total, double q)
{
        double r;

        if (q <= 0) {
                return 1;
        }
        if (q >= 1) {
                return total;
        }
        r = ceil(q * (double)total);
        if (r < 1) {
                return 1;
        }
        return r > (double)total ? total : (uint64_t)r;
}

uint64_t histogram_quantile(const Histogram *h, double q)
{
        uint64_t total = histogram_total(h), rank, seen = 0;

        if (total == 0) {
                return 0;
        }
        rank = quantile_rank(total, q);
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                seen += h->counts[i];
                if (seen >= rank) {
                        return histogram_bucket_upper(i);
                }
        }
        return UINT64_MAX;
}

uint64_t histogram_count_at_or_above(const Histogram *h, uint64_t v)
{
        uint64_t n = 0;

        for (unsigned i = histogram_index(v); i < HIST_BUCKETS; i++) {
                n += h->counts[i];
        }
        return n;
}

int histogram_foreach(const Histogram *h,
                      int (*fn)(uint64_t lower, uint64_t upper, uint64_t count, void *userdata),
                      void *userdata)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (h->counts[i] != 0) {
                        int r = fn(histogram_bucket_lower(i), histogram_bucket_upper(i),
                                   h->counts[i], userdata);
                        if (r != 0) {
                                return r;
                        }
                }
        }
        return 0;
}

void signed_histogram_clear(SignedHistogram *h)
{
        memset(h, 0, sizeof(*h));
}

uint64_t signed_histogram_total(const SignedHistogram *h)
{
        return histogram_total(&h->neg) + histogram_total(&h->pos);
}

void signed_histogram_merge(SignedHistogram *dst, const SignedHistogram *src)
{
        histogram_merge(&dst->neg, &src->neg);
        histogram_merge(&dst->pos, &src->pos);
}

int signed_histogram_subtract(SignedHistogram *dst, const SignedHistogram *src)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (src->neg.counts[i] > dst->neg.counts[i] ||
                    src->pos.counts[i] > dst->pos.counts[i]) {
                        return -ERANGE;
                }
        }
        histogram_subtract(&dst->neg, &src->neg);
        histogram_subtract(&dst->pos, &src->pos);
        return 0;
}

/* Converts a magnitude to a negative int64, saturating at INT64_MIN. */
static int64_t negate(uint64_t m)
{
        return m >= (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
}

static int64_t to_signed(uint64_t v)
{
        return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

int64_t signed_histogram_quantile(const SignedHistogram *h, double q)
{
        uint64_t total = signed_histogram_total(h), rank, seen = 0;

        if (total == 0) {
                return 0;
        }
        rank = quantile_rank(total, q);
        /* Negative buckets from the largest magnitude down, then the non-negative ones up. */
        for (unsigned i = HIST_BUCKETS; i-- > 0;) {
                seen += h->neg.counts[i];
                if (seen >= rank) {
                        return negate(histogram_bucket_lower(i));
                }
        }
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                seen += h->pos.counts[i];
                if (seen >= rank) {
                        return to_signed(histogram_bucket_upper(i));
                }
        }
        return INT64_MAX;
}

int signed_histogram_foreach(const SignedHistogram *h,
                             int (*fn)(int64_t lower, int64_t upper, uint64_t count,
                                       void *userdata),
                             void *userdata)
{
        for (unsigned i = HIST_BUCKETS; i-- > 0;) {
                if (h->neg.counts[i] != 0) {
                        int r = fn(negate(histogram_bucket_upper(i)),
                                   negate(histogram_bucket_lower(i)), h->neg.counts[i], userdata);
                        if (r != 0) {
                                return r;
                        }
                }
        }
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (h->pos.counts[i] != 0) {
                        int r = fn(to_signed(histogram_bucket_lower(i)),
                                   to_signed(histogram_bucket_upper(i)), h->pos.counts[i],
                                   userdata);
                        if (r != 0) {
                                return r;
                        }
                }
        }
        return 0;
}

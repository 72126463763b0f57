#include "histogram.h"
#include "histogram-internal.h"

#include <assert.h>
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

/* A walk over a histogram's buckets in increasing order, finding @n quantiles @q at once: the
 * counts seen so far, the next quantile to find (@k) and its rank. */
typedef struct RankWalk {
        const double *q;
        size_t n, k;
        uint64_t total, seen, rank;
} RankWalk;

static RankWalk rank_walk(uint64_t total, const double *q, size_t n)
{
        return (RankWalk){.q = q,
                          .n = n,
                          .total = total,
                          .rank = total && n ? quantile_rank(total, q[0]) : 0};
}

/* Whether the walk still looks for a quantile (none in an empty histogram). */
static bool rank_walk_on(const RankWalk *w)
{
        return w->k < w->n && w->total > 0;
}

/* After a bucket's counts were added to w->seen: whether it holds quantile w->k, which is then
 * taken (the next one's rank worked out; a quantile must not come before the one asked
 * before it, since they are found in order). Called again for each it holds. */
static bool rank_walk_found(RankWalk *w)
{
        if (w->k >= w->n || w->seen < w->rank) {
                return false;
        }
        w->k++;
        if (w->k < w->n) {
                assert(w->q[w->k] >= w->q[w->k - 1]);
                w->rank = quantile_rank(w->total, w->q[w->k]);
        }
        return true;
}

void histogram_quantiles(const Histogram *h, const double *q, size_t n, uint64_t *ret)
{
        RankWalk w = rank_walk(histogram_total(h), q, n);

        for (unsigned i = 0; i < HIST_BUCKETS && rank_walk_on(&w); i++) {
                w.seen += h->counts[i];
                while (rank_walk_found(&w)) {
                        ret[w.k - 1] = histogram_bucket_upper(i);
                }
        }
        for (; w.k < n; w.k++) {
                ret[w.k] = w.total == 0 ? 0 : UINT64_MAX;
        }
}

uint64_t histogram_quantile(const Histogram *h, double q)
{
        uint64_t v;

        histogram_quantiles(h, &q, 1, &v);
        return v;
}

uint64_t histogram_count_at_or_above(const Histogram *h, uint64_t v)
{
        uint64_t n = 0;

        for (unsigned i = histogram_index(v); i < HIST_BUCKETS; i++) {
                n += h->counts[i];
        }
        return n;
}

/* A bucket at a resolution coarser than the probe's: its edges and the counts of the probe's
 * buckets it spans. */
typedef struct Folded {
        uint64_t lower, upper, count;
} Folded;

/* The edges of the bucket of resolution @sub_bits that holds @v: values below 2 << @sub_bits
 * exact, above them each power of two split in 1 << @sub_bits equal parts. */
static void folded_edges(uint64_t v, unsigned sub_bits, Folded *ret)
{
        unsigned shift;

        if (v < (2ull << sub_bits)) {
                ret->lower = ret->upper = v;
                return;
        }
        shift = 63u - (unsigned)__builtin_clzll(v) - sub_bits;
        ret->lower = v >> shift << shift;
        ret->upper = ret->lower + ((1ull << shift) - 1);
}

/* The next non-empty bucket of resolution @sub_bits upwards from bucket *@next of @h; *@next
 * moves past it. Returns false when there is none. */
static bool folded_next(const Histogram *h, unsigned sub_bits, unsigned *next, Folded *ret)
{
        unsigned i = *next;

        while (i < HIST_BUCKETS && h->counts[i] == 0) {
                i++;
        }
        if (i == HIST_BUCKETS) {
                *next = i;
                return false;
        }
        folded_edges(histogram_bucket_lower(i), sub_bits, ret);
        ret->count = 0;
        for (; i < HIST_BUCKETS && histogram_bucket_lower(i) <= ret->upper; i++) {
                ret->count += h->counts[i];
        }
        *next = i;
        return true;
}

/* The same downwards from bucket *@end - 1. */
static bool folded_prev(const Histogram *h, unsigned sub_bits, unsigned *end, Folded *ret)
{
        unsigned i = *end;

        while (i > 0 && h->counts[i - 1] == 0) {
                i--;
        }
        if (i == 0) {
                *end = 0;
                return false;
        }
        folded_edges(histogram_bucket_lower(i - 1), sub_bits, ret);
        ret->count = 0;
        for (; i > 0 && histogram_bucket_lower(i - 1) >= ret->lower; i--) {
                ret->count += h->counts[i - 1];
        }
        *end = i;
        return true;
}

int histogram_foreach(const Histogram *h, unsigned sub_bits,
                      int (*fn)(uint64_t lower, uint64_t upper, uint64_t count, void *userdata),
                      void *userdata)
{
        unsigned next = 0;
        Folded b;

        assert(sub_bits <= HIST_SUB_BITS);
        while (folded_next(h, sub_bits, &next, &b)) {
                int r = fn(b.lower, b.upper, b.count, userdata);

                if (r != 0) {
                        return r;
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

void signed_histogram_quantiles(const SignedHistogram *h, const double *q, size_t n, int64_t *ret)
{
        RankWalk w = rank_walk(signed_histogram_total(h), q, n);

        /* Negative buckets from the largest magnitude down, then the non-negative ones up. */
        for (unsigned i = HIST_BUCKETS; i-- > 0 && rank_walk_on(&w);) {
                w.seen += h->neg.counts[i];
                while (rank_walk_found(&w)) {
                        ret[w.k - 1] = negate(histogram_bucket_lower(i));
                }
        }
        for (unsigned i = 0; i < HIST_BUCKETS && rank_walk_on(&w); i++) {
                w.seen += h->pos.counts[i];
                while (rank_walk_found(&w)) {
                        ret[w.k - 1] = to_signed(histogram_bucket_upper(i));
                }
        }
        for (; w.k < n; w.k++) {
                ret[w.k] = w.total == 0 ? 0 : INT64_MAX;
        }
}

int64_t signed_histogram_quantile(const SignedHistogram *h, double q)
{
        int64_t v;

        signed_histogram_quantiles(h, &q, 1, &v);
        return v;
}

int signed_histogram_foreach(const SignedHistogram *h, unsigned sub_bits,
                             int (*fn)(int64_t lower, int64_t upper, uint64_t count,
                                       void *userdata),
                             void *userdata)
{
        unsigned end = HIST_BUCKETS, next = 0;
        Folded b;

        assert(sub_bits <= HIST_SUB_BITS);
        /* A negative bucket's edge nearer zero is its magnitude's lower one. */
        while (folded_prev(&h->neg, sub_bits, &end, &b)) {
                int r = fn(negate(b.upper), negate(b.lower), b.count, userdata);

                if (r != 0) {
                        return r;
                }
        }
        while (folded_next(&h->pos, sub_bits, &next, &b)) {
                int r = fn(to_signed(b.lower), to_signed(b.upper), b.count, userdata);

                if (r != 0) {
                        return r;
                }
        }
        return 0;
}

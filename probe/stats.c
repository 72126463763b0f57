#include "stats.h"

#include <stdbool.h>

void stats_init(Stats *s)
{
        *s = (Stats){.min = UINT64_MAX};
}

void signed_stats_init(SignedStats *s)
{
        *s = (SignedStats){.min = INT64_MAX, .max = INT64_MIN};
}

void stats_merge(Stats *dst, const Stats *src)
{
        dst->count += src->count;
        dst->sum += src->sum;
        dst->sumsq += src->sumsq;
        if (src->min < dst->min) {
                dst->min = src->min;
        }
        if (src->max > dst->max) {
                dst->max = src->max;
        }
}

void signed_stats_merge(SignedStats *dst, const SignedStats *src)
{
        dst->count += src->count;
        dst->sum += src->sum;
        dst->sumsq += src->sumsq;
        if (src->min < dst->min) {
                dst->min = src->min;
        }
        if (src->max > dst->max) {
                dst->max = src->max;
        }
}

double stats_mean(const Stats *s)
{
        return s->count ? (double)((long double)s->sum / (long double)s->count) : 0.0;
}

double signed_stats_mean(const SignedStats *s)
{
        return s->count ? (double)((long double)s->sum / (long double)s->count) : 0.0;
}

typedef struct U256 {
        unsigned __int128 hi, lo;
} U256;

static U256 mul_128(unsigned __int128 a, unsigned __int128 b)
{
        const unsigned __int128 mask = ((unsigned __int128)1 << 64) - 1;
        unsigned __int128 a0 = a & mask, a1 = a >> 64, b0 = b & mask, b1 = b >> 64;
        unsigned __int128 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
        unsigned __int128 mid = (p00 >> 64) + (p01 & mask) + (p10 & mask);
        U256 r;

        r.lo = (p00 & mask) | (mid << 64);
        r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        return r;
}

static bool u256_less(U256 a, U256 b)
{
        return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

static U256 u256_sub(U256 a, U256 b)
{
        U256 r = {a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo};

        return r;
}

static long double u256_to_ld(U256 a)
{
        return (long double)a.hi * 0x1p128L + (long double)a.lo;
}

/* (n·q − s²) / n² with s = |Σx|, exact until the last step. */
static double variance(uint64_t n, unsigned __int128 s, unsigned __int128 q)
{
        U256 nq, ss, num;

        if (n < 2) {
                return 0.0;
        }
        nq = mul_128(n, q);
        ss = mul_128(s, s);
        /* n·Σx² ≥ (Σx)² by Cauchy-Schwarz; the guard only protects against corrupt input. */
        if (u256_less(nq, ss)) {
                return 0.0;
        }
        num = u256_sub(nq, ss);
        return (double)(u256_to_ld(num) / ((long double)n * (long double)n));
}

double stats_variance(const Stats *s)
{
        return variance(s->count, s->sum, s->sumsq);
}

double signed_stats_variance(const SignedStats *s)
{
        unsigned __int128 abs_sum =
                s->sum < 0 ? -(unsigned __int128)s->sum : (unsigned __int128)s->sum;

        return variance(s->count, abs_sum, s->sumsq);
}

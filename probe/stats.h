#pragma once

#include <stdint.h>

/* Running statistics by exact integer accumulation: count, min, max, sum and sum of squares
 * in 128 bits, so the mean and variance do not drift however many samples are added
 * (10^12 samples of 2^40 ticks still fit). The add functions are inline for the hot loop. */

typedef struct Stats {
        uint64_t count;
        uint64_t min;
        uint64_t max;
        unsigned __int128 sum;
        unsigned __int128 sumsq;
} Stats;

/* Signed counterpart for the diff-of-diff. */
typedef struct SignedStats {
        uint64_t count;
        int64_t min;
        int64_t max;
        __int128 sum;
        unsigned __int128 sumsq;
} SignedStats;

static inline void stats_add(Stats *s, uint64_t v)
{
        s->count++;
        s->sum += v;
        s->sumsq += (unsigned __int128)v * v;
        if (v < s->min) {
                s->min = v;
        }
        if (v > s->max) {
                s->max = v;
        }
}

static inline void signed_stats_add(SignedStats *s, int64_t v)
{
        uint64_t m = v < 0 ? -(uint64_t)v : (uint64_t)v;

        s->count++;
        s->sum += v;
        s->sumsq += (unsigned __int128)m * m;
        if (v < s->min) {
                s->min = v;
        }
        if (v > s->max) {
                s->max = v;
        }
}

/* Empties @s (min starts at the largest value so the first sample sets it). */
void stats_init(Stats *s);
void signed_stats_init(SignedStats *s);

/* Adds @src into @dst. */
void stats_merge(Stats *dst, const Stats *src);
void signed_stats_merge(SignedStats *dst, const SignedStats *src);

/* Mean, or 0 for no samples. */
double stats_mean(const Stats *s);
double signed_stats_mean(const SignedStats *s);

/* Population variance (n·Σx² − (Σx)²) / n², computed exactly in 256-bit integers before the
 * one final conversion to floating point. 0 for fewer than two samples. */
double stats_variance(const Stats *s);
double signed_stats_variance(const SignedStats *s);

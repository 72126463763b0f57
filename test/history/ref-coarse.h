#pragma once

/* The buckets of history.h's coarse resolution (8 sub-buckets per power of two), computed
 * without the history's code, for the tests' own references: where a window kept at that
 * resolution holds the count of a value, and of a fine bucket. */

#include <stdint.h>

#include "../ref-bucket.h"

/* Values below 16 are their own bucket; above, dropping low bits until 4 are left gives the
 * coarse bucket, and its count is kept in the fine bucket of its highest value (so quantiles
 * are never below the truth). At the very top the next coarse bucket's start wraps to 0: the
 * highest value is then UINT64_MAX, as the unsigned subtraction gives. */
static inline unsigned ref_coarse_bucket(uint64_t v)
{
        unsigned dropped = 0;

        while ((v >> dropped) >= 16) {
                dropped++;
        }
        if (dropped == 0) {
                return ref_bucket(v);
        }
        return ref_bucket((((v >> dropped) + 1) << dropped) - 1);
}

/* The lowest value of fine bucket @b: below 64 the value itself, above a 6-bit number
 * (32 to 63) shifted left by the bits dropped. */
static inline uint64_t ref_bucket_lower(unsigned b)
{
        if (b < 64) {
                return b;
        }
        return (uint64_t)(32 + b % 32) << (b / 32 - 1);
}

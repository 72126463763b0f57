#pragma once

/* What the benchmark clients share: the order of latencies. */

#include <stdint.h>

/* qsort() comparison of two uint64_t. */
static inline int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

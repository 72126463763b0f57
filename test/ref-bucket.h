#pragma once

/* The histogram bucket of a value as probe/histogram.h defines it, computed without the
 * engine's code, for the tests' own references. */

#include <stdint.h>

/* Values below 64 have one each; above, every power of two is cut into 32 equal parts, so the
 * bucket is the count of low bits dropped until 6 bits are left, times 32, plus what is left. */
static inline unsigned ref_bucket(uint64_t v)
{
        unsigned dropped = 0;

        while ((v >> dropped) >= 64) {
                dropped++;
        }
        return dropped * 32 + (unsigned)(v >> dropped);
}

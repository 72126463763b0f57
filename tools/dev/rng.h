#pragma once

/* Deterministic pseudo-random numbers (xorshift64*) for the tests and benchmarks, so that a
 * failure or a figure reproduces. Each file that includes this has a state of its own. */

#include <math.h>
#include <stdint.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* Restarts the sequence from @seed (0 is not a valid state: taken as 1). */
static inline void rng_seed(uint64_t seed)
{
        rng_state = seed ? seed : 1;
}

static inline uint64_t rng_next(void)
{
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, 1). */
static inline double rng_uniform(void)
{
        return (double)(rng_next() >> 11) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline double rng_normal(void)
{
        double u = rng_uniform(), v = rng_uniform();

        return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

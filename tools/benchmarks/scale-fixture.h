#pragma once

/* Recorded probe intervals for the scale benchmark (tools/bench --scale): what a real probe's
 * loop left in its slot each interval, before the harvest folded the pair table into the
 * histograms and completed the squares and extremes, with the interruptions it pushed to its
 * ring. Synthetic CPUs replay them, so that the harvest, the history and the API work on the
 * shape of real data. Stored as text (scale-fixture.c says the format), sparse: only the
 * buckets and pair cells that hold counts. This module never logs. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

/* One non-zero count: of histogram bucket or pair cell @index. */
typedef struct ScaleCount {
        uint32_t index;
        uint64_t count;
} ScaleCount;

/* One interruption: its start after the interval's start, and its length, in ticks. */
typedef struct ScaleEvent {
        uint64_t offset_ticks;
        uint64_t duration_ticks;
} ScaleEvent;

/* One interval as the loop leaves it. Its statistics hold what the loop keeps: count and sum
 * of every sample, squares and extremes only of the values beyond the exact buckets. */
typedef struct ScaleInterval {
        uint64_t duration_ticks;
        uint64_t lost_ticks;
        uint64_t events;
        Stats gap;
        SignedStats dd;
        ScaleCount *gap_hist, *dd_neg, *dd_pos, *pairs;
        size_t n_gap_hist, n_dd_neg, n_dd_pos, n_pairs;
        ScaleEvent *ring;
        size_t n_ring;
} ScaleInterval;

typedef struct ScaleFixture {
        uint64_t hz;          /* the counter's frequency: every value is in its ticks */
        uint64_t floor_ticks; /* the loop's period and noise band, as the probe found them */
        uint64_t band_ticks;
        char origin[256]; /* where and when it was recorded (the CPU model), for humans */
        ScaleInterval *intervals;
        size_t n_intervals;
} ScaleFixture;

/* Reads a fixture from @f into a new one. Returns 0, -EBADMSG for text that is not a fixture
 * (or a count out of range), -ENOMEM. */
int scale_fixture_read(FILE *f, ScaleFixture **ret);

/* Writes @x to @f. Returns 0 or -EIO. */
int scale_fixture_write(const ScaleFixture *x, FILE *f);

/* Appends a copy of @iv to @x. Returns 0 or -ENOMEM. */
int scale_fixture_add(ScaleFixture *x, const ScaleInterval *iv);

/* Creates an empty fixture. Returns 0 or -ENOMEM. */
int scale_fixture_new(ScaleFixture **ret);

/* Frees @x; accepts NULL; returns NULL. */
ScaleFixture *scale_fixture_free(ScaleFixture *x);

/* Frees what @iv points to (not @iv itself) and empties it. */
void scale_interval_clear(ScaleInterval *iv);

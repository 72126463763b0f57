#pragma once

#include <stdint.h>

#include "histogram.h"
#include "stats.h"

/* What one interval recorded. Also the unit the daemon's history is built from. Its size is a
 * whole number of cache lines (probe-private.h asserts it), so that the probe's slots, which start
 * on a line, share none: the owner clears one while the probe fills the next. The type keeps the
 * alignment of its members, so copies may live anywhere (malloc'd, in other structs). */
typedef struct ProbeSlot {
        uint64_t start_ticks; /* counter at the first sample of the slot */
        uint64_t end_ticks;   /* counter at the last sample */
        uint64_t lost_ticks;  /* Σ (gap − floor) over gaps at or above the noise band */
        uint64_t events;      /* gaps at or above the event threshold */
        uint64_t line_pad[4]; /* always zero: makes the header one cache line */
        Stats gap;
        SignedStats dd;
        Histogram gap_hist;
        SignedHistogram dd_hist;
} ProbeSlot;

/* Empties @s. */
void slot_clear(ProbeSlot *s);

/* Adds @src into @dst (for building intervals into windows). The time span grows to cover
 * both. */
void slot_merge(ProbeSlot *dst, const ProbeSlot *src);

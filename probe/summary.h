#pragma once

#include <stddef.h>
#include <stdint.h>

#include "counter.h"
#include "slot.h"

/* The numbers an operator reads, in nanoseconds, computed from a ProbeSlot (one interval or a
 * merge of many). Shared by jitter-probe, the daemon and jitterctl so they all agree. */

#define SUMMARY_PERCENTILES 6
/* The names of the percentiles a summary holds, "p90" ... "p99999" (0.9 ... 0.99999). */
extern const char *const summary_percentile_names[SUMMARY_PERCENTILES];

typedef struct ValueSummary {
        uint64_t count;
        double min_ns;
        double max_ns;
        double mean_ns;
        double stddev_ns;
        double variance_ns2;
        double median_ns;
        double pct_ns[SUMMARY_PERCENTILES];
} ValueSummary;

typedef struct SlotSummary {
        uint64_t samples;
        uint64_t duration_ns;
        uint64_t events;
        double events_per_s;
        uint64_t lost_ns;
        double cpu_available_pct;
        ValueSummary gap;
        ValueSummary dd;
} SlotSummary;

/* Summarises @s, whose ticks convert to ns with @conv. @duration_ns is the time the slot
 * covers (0: take it from the slot's start and end ticks). */
void slot_summarize(const ProbeSlot *s, const TickConv *conv, uint64_t duration_ns,
                    SlotSummary *ret);

/* Signed ticks to ns. */
double tickconv_signed_to_ns(const TickConv *conv, int64_t ticks);

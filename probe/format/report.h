#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "summary.h"

/* The text report in the classic form (DIFF and DIFFDIFF sections, interruptions, a log-scale
 * bar chart, the counter-vs-clock check), written by jitter-probe and by `jitterctl report`. */

typedef struct ReportBucket {
        int64_t lower_ns;
        int64_t upper_ns;
        uint64_t count;
} ReportBucket;

/* Elapsed time of the run by the counter and by CLOCK_REALTIME ("rollover sanity check"). */
typedef struct ReportSanity {
        double counter_ns;
        double realtime_ns;
} ReportSanity;

/* Writes the DIFF and DIFFDIFF statistics and the interruption summary for one CPU.
 * @threshold_ns names the event threshold in the heading. */
void report_statistics(FILE *f, const SlotSummary *s, uint64_t threshold_ns);

/* Writes @n buckets as a horizontal bar chart, bar length on a log scale of the count. */
void report_bars(FILE *f, const ReportBucket *b, size_t n, bool color);

/* Writes the counter-vs-clock elapsed time check. */
void report_sanity(FILE *f, const ReportSanity *s);

/* The one rule for the rows of a bar chart: joins neighbouring buckets (sorted, in ns) of the
 * same sign into rows whose larger edge is at most 25 % above the smaller one (in magnitude), in
 * place. Returns the new number of rows. */
size_t report_buckets_join(ReportBucket *b, size_t n);

/* Collects the non-empty buckets of @h in ns into a newly allocated array (free() it), joined
 * into rows by report_buckets_join(). Returns the number of rows, or -ENOMEM. */
int report_buckets_from_histogram(const Histogram *h, const TickConv *conv, ReportBucket **ret);

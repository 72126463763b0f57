#pragma once

/* A self-contained SVG picture of one or more CPUs: the gap histogram on log-log axes and the
 * worst gap of each interval over time (log y). No scripts and no external references, so the
 * file can be mailed, attached to a ticket or opened in any browser as it is. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* One interval of the timeline. */
typedef struct PlotPoint {
        uint64_t start_ns; /* CLOCK_MONOTONIC */
        uint64_t duration_ns;
        uint64_t max_gap_ns; /* 0: no samples in the interval (not drawn) */
        bool stalled;
} PlotPoint;

/* What is drawn for one CPU. */
typedef struct PlotSeries {
        int cpu;
        const ReportBucket *buckets; /* gap histogram in ns, ascending */
        size_t n_buckets;
        const PlotPoint *points; /* ascending start */
        size_t n_points;
} PlotSeries;

/* Writes the SVG document for @n series (one row of two panels each) to @f, headed by @title
 * (any text: it is escaped). Returns 0, -EINVAL for no series, or -EIO when writing failed. */
int svg_plot_write(FILE *f, const char *title, const PlotSeries *series, size_t n);

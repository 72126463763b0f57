#pragma once

/* What each noise source costs: a least-squares fit of the time lost per interval against the
 * counts per interval of the attribution sources (interrupts, softirqs, context switches, SMIs),
 *
 *     lost_ns[i] ~= sum_j cost_ns[j] * count[i][j]
 *
 * with every cost >= 0 (non-negative least squares, Lawson-Hanson), without an intercept: no
 * event, no time lost. At most FIT_MAX_SOURCES sources enter the fit: those that moved in the
 * most intervals, then the largest counts. Sources that always move together (LOC and
 * softirq:TIMER) cannot be told apart; the fit then gives the cost to one of them.
 *
 * Pure math: no I/O, never logs. */

#include <stddef.h>
#include <stdint.h>

#include "attrib.h"

#define FIT_MAX_SOURCES 16

/* Fewer intervals than this give no fit: too few to separate 16 sources from noise. */
#define FIT_MIN_INTERVALS 60

typedef struct Fit Fit;

/* One source's part in the fit. */
typedef struct FitSource {
        uint16_t id;    /* as given to fit_add() */
        uint64_t count; /* occurrences over all intervals */
        double cost_ns; /* time lost per occurrence, >= 0 */
        double share;   /* cost_ns * count / lost time over all intervals, clamped to 0..1 */
        /* The standard error of share: how far the fit may be off, from the scatter of the
         * intervals around it (residual variance) and how well this source's counts can be
         * told from the others' (the diagonal of the inverse normal matrix of the sources
         * with a cost, and this one). INFINITY when its counts are a combination of the
         * others': the fit cannot tell it apart at all. */
        double share_stderr;
} FitSource;

typedef struct FitResult {
        size_t intervals;
        double lost_ns;   /* over all intervals */
        double explained; /* sum of the shares, clamped to 0..1 */
        /* 1 - residual / variance of lost_ns around its mean, clamped to 0..1; 1 when lost_ns
         * is constant and fitted exactly, 0 when it is constant and not. */
        double r2;
        size_t n;                           /* sources that entered the fit */
        FitSource sources[FIT_MAX_SOURCES]; /* by share, largest first; cost 0 ones last */
} FitResult;

/* Creates an empty fit that accepts up to @max_intervals intervals (at least
 * FIT_MIN_INTERVALS). Returns 0, -EINVAL, -ENOMEM. */
int fit_new(size_t max_intervals, Fit **ret);

/* Frees @f; accepts NULL; returns NULL. */
Fit *fit_free(Fit *f);

/* Adds one interval: @lost_ns of time lost, and the @n counts @items of the sources that moved
 * (an AttribDelta's items; ids below ATTRIB_MAX_SOURCES, each at most once). Returns 0,
 * -EINVAL for a negative or non-finite @lost_ns, an id out of range or given twice, -ENOSPC
 * once @max_intervals were added, -ENOMEM. */
int fit_add(Fit *f, double lost_ns, const AttribCount *items, size_t n);

/* Number of intervals added. */
size_t fit_intervals(const Fit *f);

/* Forgets all intervals. */
void fit_clear(Fit *f);

/* Fits the intervals added so far into @ret. Returns 0, -EAGAIN with fewer than
 * FIT_MIN_INTERVALS intervals, -EINVAL for NULL arguments. With no time lost or no source that
 * moved, the result has every cost 0 (and r2 as defined above). */
int fit_solve(const Fit *f, FitResult *ret);

#pragma once

/* What each noise source costs: a least-squares fit of the time lost per interval against the
 * counts per interval of the attribution sources (interrupts, softirqs, context switches, SMIs),
 *
 *     lost_ns[i] ~= sum_j cost_ns[j] * count[i][j] + background_ns_per_s * length_s[i]
 *
 * with every cost >= 0 (non-negative least squares, Lawson-Hanson). The background is the time
 * lost that no counter moves with (the host taking the vCPU, gaps below the interruption
 * threshold): without it, it would be charged to whichever counter is as steady as it (the
 * tick's). At most FIT_MAX_SOURCES sources enter the fit: those that moved in the most
 * intervals, then the largest counts. Sources that always move together (LOC and
 * softirq:TIMER) cannot be told apart; the fit then gives the cost to one of them, and says so
 * (share_stderr, group).
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
        /* The sources whose counts move together (a correlation over the intervals of at least
         * FIT_GROUP_CORRELATION, directly or through others, of what the intervals' lengths
         * leave of the counts: a longer interval holds more of everything) make a group, named
         * by the id of its source that moved in the most intervals: the fit can only share
         * their time out among them as chance has it, while their sum it knows to
         * group_share_stderr (the standard error of the group's total share; INFINITY when one
         * of its sources is a combination of sources outside it). A source alone is its own
         * group. */
        uint16_t group;
        double group_share_stderr;
} FitSource;

/* Sources whose counts correlate at least this much are one group. */
#define FIT_GROUP_CORRELATION 0.7

typedef struct FitResult {
        size_t intervals;
        double lost_ns;   /* over all intervals */
        double explained; /* sum of the shares, clamped to 0..1 */
        /* 1 - residual / variance of lost_ns around its mean, clamped to 0..1; 1 when lost_ns
         * is constant and fitted exactly, 0 when it is constant and not. */
        double r2;
        /* The background: ns lost per second of interval, its share of the time lost and that
         * share's standard error (INFINITY: a steady source, the tick's, cannot be told from
         * it). */
        double background_ns_per_s;
        double background_share;
        double background_share_stderr;
        size_t n;                           /* sources that entered the fit */
        FitSource sources[FIT_MAX_SOURCES]; /* by share, largest first; cost 0 ones last */
} FitResult;

/* Creates an empty fit that accepts up to @max_intervals intervals (at least
 * FIT_MIN_INTERVALS). Returns 0, -EINVAL, -ENOMEM. */
int fit_new(size_t max_intervals, Fit **ret);

/* Frees @f; accepts NULL; returns NULL. */
Fit *fit_free(Fit *f);

/* Adds one interval of @duration_ns: @lost_ns of time lost, and the @n counts @items of the
 * sources that moved (an AttribDelta's items; ids below ATTRIB_MAX_SOURCES, each at most once).
 * Returns 0, -EINVAL for a negative or non-finite @lost_ns, a @duration_ns not above 0, an id
 * out of range or given twice, -ENOSPC once @max_intervals were added, -ENOMEM. */
int fit_add(Fit *f, double lost_ns, double duration_ns, const AttribCount *items, size_t n);

/* Fits the intervals added so far into @ret. Returns 0, -EAGAIN with fewer than
 * FIT_MIN_INTERVALS intervals, -EINVAL for NULL arguments. With no time lost or no source that
 * moved, the result has every cost 0 (and r2 as defined above). */
int fit_solve(const Fit *f, FitResult *ret);

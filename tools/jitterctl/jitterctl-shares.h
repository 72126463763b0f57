#pragma once

/* The comparison of jitterctl explain: exact shares of the trace causes against the
 * least-squares estimate, per row of counters, with a verdict per row and whether the estimate
 * is a cross-check there; and the estimate alone, for a window without trace. Pure: no I/O. */

#include <jansson.h>

/* The band: EXPLAIN_AGREE_ABS of the time lost, or EXPLAIN_AGREE_REL of the larger share if
 * that is more. The two shares agree when they differ by at most the band and the fit knows
 * its share that well (EXPLAIN_STDERRS standard errors within the band); they disagree when
 * they differ by more than the band and EXPLAIN_STDERRS standard errors besides; otherwise
 * the fit cannot tell. */
#define EXPLAIN_AGREE_ABS 0.05
#define EXPLAIN_AGREE_REL 0.25
#define EXPLAIN_STDERRS 2.0

/* The least-squares share of a row is shown beside the exact one, as a cross-check, only where
 * the fit knows it to within less than this (one standard error, a share of the time lost):
 * 5 points, the narrowest band two shares agree within (EXPLAIN_AGREE_ABS). An estimate whose
 * error spans the whole band cannot tell a share that agrees from one that is off by the band,
 * and beside an exact share it adds nothing. Without the trace the estimate is all there is,
 * and every row is shown. */
#define EXPLAIN_CROSS_CHECK_STDERR 0.05

/* The trace must explain at least this share of the window's interruptions (by time) for its
 * shares to be compared. */
#define EXPLAIN_COVERAGE_MIN 0.9

/* A counter whose interrupts let tasks or work items in for at least this share of the time
 * lost (a fraction of the band: less cannot move a comparison across it), in at least
 * EXPLAIN_WOKEN_FRACTION of its occurrences (its count moves with the switches), is in one
 * row with the probe's involuntary switches. */
#define EXPLAIN_WOKEN_MIN (EXPLAIN_AGREE_ABS / 5)
#define EXPLAIN_WOKEN_FRACTION 0.5

/* The counter every task and work item is counted for: the probe's involuntary switch. */
#define SWITCH_COUNTER "ctxsw:involuntary"

/* The comparison of one CPU: @causes its GetCauses entry, @stats its GetStats entry. An object
 * with the window's figures, "exact" (each cause with its share), "compare" (per row:
 * "source", "exact_share", "ls_share", "ls_stderr", "verdict", and "cross_check": whether
 * ls_stderr is known and under EXPLAIN_CROSS_CHECK_STDERR), "coverage", "fit" and the fit's
 * "background" (with its own "cross_check"); NULL when out of memory. */
json_t *shares_compare_cpu(json_t *causes, json_t *stats);

/* The least-squares estimate of one CPU alone, for a window without trace: @stats its GetStats
 * entry. An object with "cpu", "window", "lost_ns", "interruptions", "fit", "estimate" (per
 * row of counters, as the comparison has them, the largest share first: "source", "ls_share",
 * "ls_stderr") and the fit's "background"; NULL when out of memory. */
json_t *shares_estimate_cpu(json_t *stats);

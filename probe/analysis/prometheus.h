#pragma once

/* The Prometheus text exposition of what jitterd measures, shared by the daemon (the
 * node_exporter textfile it rewrites every interval, daemon/textfile.h)
 * and `jitterctl export`, so that both print the same metrics from the same Varlink replies.
 *
 * Every metric is prefixed jitter_, in base units (seconds, bytes, Hz), counters end in
 * _total, and the only per-host label besides bounded enums is cpu. The gap histogram
 * jitter_gap_seconds has fixed le boundaries from 100 ns to 1 s in 1-2-5 steps; a source
 * bucket [lower_ns, upper_ns] (upper inclusive) is counted in every le >= upper_ns, so the
 * count at each le is exact for the nearest bucket edge at or below it, which the log-linear
 * histogram keeps within 3 % of the boundary. Counters are taken from the "all" window, which
 * restarts at Reset: Prometheus sees that as a counter reset. */

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* Writes the exposition to @f from the daemon's replies (all borrowed):
 * @status is a GetStatus reply; @stats_all and @stats_1m are the "cpus" arrays of GetStats
 * over the windows "all" and "1m"; @intervals_last is an array with, for each CPU that has one,
 * the newest point of GetTimeline over prometheus_interval_window() with a "cpu" member added
 * (its "max_gap_ns" becomes jitter_gap_max_seconds{window="interval"}); @histograms_all is an
 * array of GetHistogram replies (window "all", kind "gap"), one per CPU.
 * The input is validated first: nothing is written unless all of it is well-formed. Returns 0,
 * -EBADMSG for a missing or malformed member (or a CPU listed twice, or a histogram whose CPU
 * has no "all" statistics), -ENOMEM, or -EIO when @f cannot be written. */
int prometheus_render(FILE *f, json_t *status, json_t *stats_all, json_t *stats_1m,
                      json_t *intervals_last, json_t *histograms_all);

/* The named window that holds the newest interval whatever the interval length: the shortest
 * of "10s", "1m" and "5m" that is at least three intervals of @interval_ns long. */
const char *prometheus_interval_window(uint64_t interval_ns);

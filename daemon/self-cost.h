#pragma once

/* What the daemon costs beyond its probes, for GetStatus' "self" and the Prometheus
 * exposition: the CPU time of its threads other than the probe threads, and per method the
 * calls, refusals, CPU time and answer durations the Varlink server counted (all bounded: one
 * entry per registered method). */

#include <jansson.h>

#include "manager.h"

/* The "self" object of GetStatus for @m: {"cpu_ns", "threads", "budget",
 * "duration_bounds_ns", "methods": [{"method", "calls", "refused", "cpu_ns", "answered",
 * "duration_sum_ns", "duration_counts"}]} (duration_counts cumulative, one per bound). NULL
 * on OOM. */
json_t *self_cost_to_json(Manager *m);

/* The CPU time in ns of the calling process' live threads whose ids are not among the @n in
 * @skip_tids, and how many threads that was in *@ret_threads. Returns 0 or a negative errno
 * (/proc unreadable). */
int self_cost_cpu_ns(const int *skip_tids, size_t n, uint64_t *ret_ns, unsigned *ret_threads);

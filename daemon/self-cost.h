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

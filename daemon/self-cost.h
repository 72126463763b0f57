#pragma once

/* What the daemon costs beyond its probes, for GetStatus' "self" and the Prometheus
 * exposition: the CPU time of its threads other than the probe threads. (The server counts
 * its calls itself: varlink_server_foreach_stats().) */

#include <stdint.h>

#include "manager.h"

/* The CPU time in ns of this process' live threads other than @m's probe threads, and how
 * many threads that was in *@ret_threads. Returns 0 or a negative errno (/proc unreadable). */
int self_cost_read(const Manager *m, uint64_t *ret_ns, unsigned *ret_threads);

#pragma once

/* The analyses of a window that jitterctl works out itself, from the raw data GetWindow gives:
 * "causes" (each attribution source with what a least-squares fit of time lost per interval
 * says it costs, fit.h), "background" (the fit's time lost with no counter) and "periods" (at
 * which interruptions repeat, periodicity.h). jitterd does not search for them: a client
 * polling GetStats would make it pay for a search every interval.
 *
 * Pure: no I/O, never prints. */

#include <jansson.h>

/* Adds "causes", "background" (with a fit: windows of at least FIT_MIN_INTERVALS intervals)
 * and "periods" to @entry, a CPU's GetStats entry (whose "interrupts", "softirqs", "ctxsw" and
 * "smi" give each source's count over the window), from @window, that CPU's GetWindow reply.
 * @online_cpus helps name the clocksource watchdog's period (0: unknown). Returns 0, -EINVAL
 * for a reply that is not GetWindow's (nothing added), -ENOMEM. */
int window_analyses_add(json_t *window, unsigned online_cpus, json_t *entry);

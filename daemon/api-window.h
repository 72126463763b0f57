#pragma once

/* GetWindow's reply: the raw data of one CPU's window that the causes (the least-squares fit,
 * fit.h) and the periods (periodicity.h) are worked out from, by the client that wants them.
 * The daemon runs neither: it copies what the history holds, in a compact form.
 *
 * Per interval (the history's fine and coarse ones, as GetTimeline has them; stalled ones are
 * left out, as the fit leaves them out): its length, its time lost, and the counters that moved
 * in it, as pairs of an index into "sources" and a count. Per interruption: its start, the
 * first one's in ns, every other one as the ns since the previous one: the newest of all bands
 * together ("event_starts_ns"), and per duration band the newest of that band ("event_bands"),
 * each list with from when it holds every interruption of the window.
 *
 * Bounded: at most API_WINDOW_INTERVALS_MAX intervals, the newest, in at most
 * API_WINDOW_INTERVAL_BYTES of JSON, what is left out counted in the reply; and at most
 * API_WINDOW_EVENTS_MAX starts, half of them for the list of all bands and half shared by the
 * bands. With the events' part (at most 21 bytes an event) a reply stays below 3.5 MiB, inside
 * the 4 MiB a connection may have queued. Never logs. */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "history.h"
#include "manager.h"

#define API_WINDOW_INTERVALS_MAX 16384
#define API_WINDOW_INTERVAL_BYTES (1024 * 1024)
#define API_WINDOW_EVENTS_MAX 100000
#define API_WINDOW_MIXED_EVENTS_MAX (API_WINDOW_EVENTS_MAX / 2)
#define API_WINDOW_BAND_EVENTS_MAX (API_WINDOW_EVENTS_MAX / 2 / HISTORY_BANDS)

/* The GetWindow reply for @cpu over [@from_ns, @to_ns] (@all: since start or the last reset),
 * named @window. NULL when out of memory. */
json_t *api_window_to_json(const Manager *m, int cpu, const char *window, uint64_t from_ns,
                           uint64_t to_ns, bool all);

#pragma once

/* The CPU budget of serving clients, which no client and no number of clients can break.
 *
 * Every call's CPU time on the server's thread (reading and parsing it, the handler, a reply
 * sent at once) is charged, as measured, to one of two token buckets (budget.h):
 *   - the light bucket, for the calls that must stay answerable under a flood of the others:
 *     GetStatus, Monitor (its start; its replies are sent per interval, not per call) and
 *     org.varlink.service;
 *   - the heavy bucket, for every other call (GetStats, GetWindow, GetHistogram, GetEvents,
 *     GetCauses, GetCaptures, GetTimeline, Audit, Reset, and calls to no method).
 * While a bucket is in debt, its calls are refused with io.jitterd.Busy {retry_after_ms}, the
 * time until it has something saved again and ADMISSION_MIN_RETRY_MS more, and the refused
 * client's connection runs no further call until then: it stays open, and whatever it sends
 * meanwhile is answered afterwards. So a client that ignores the delay is refused at most once
 * per delay per connection, and refusing costs little. Both buckets together earn
 * ADMISSION_SERVE_RATIO of a core; the rest of ADMISSION_CPU_RATIO is the daemon's own work
 * (harvests, the textfile), which is not refused. */

#include <stddef.h>

#include "varlink-server.h"

/* The daemon's CPU budget beyond its probes, in cores, as jitter_daemon_cpu_budget_ratio
 * exports it and the JitterdOverBudget alert compares against. */
#define ADMISSION_CPU_RATIO 0.10
/* What the buckets earn, in CPU ns per ns, and the most each saves. */
#define ADMISSION_HEAVY_RATIO 0.07
#define ADMISSION_HEAVY_BURST_NS 500000000ULL
#define ADMISSION_LIGHT_RATIO 0.015
#define ADMISSION_LIGHT_BURST_NS 30000000ULL
#define ADMISSION_SERVE_RATIO (ADMISSION_HEAVY_RATIO + ADMISSION_LIGHT_RATIO)
/* A retry delay is the time until the bucket is out of debt plus ADMISSION_MIN_RETRY_MS, so a
 * connection is refused at most once per 20 ms (a refusal costs tens of microseconds), and at
 * most an hour. */
#define ADMISSION_MIN_RETRY_MS 20
#define ADMISSION_MAX_RETRY_MS 3600000

typedef struct Admission Admission;

/* Creates the budget, full, and sets it as @s's gate. Returns 0 or -ENOMEM. */
int admission_new(VarlinkServer *s, Admission **ret);

/* Removes the gate from the server it was set on and frees @a; before varlink_server_free().
 * Accepts NULL; returns NULL. */
Admission *admission_free(Admission *a);

/* The methods of the light bucket, fully qualified; their number in *@ret_n. */
const char *const *admission_light_methods(size_t *ret_n);

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
 * per delay per connection, and refusing costs little.
 *
 * The budget is [server] cpu_budget_percent of a core (10 by default). The heavy bucket earns
 * ADMISSION_HEAVY_SHARE_PERCENT of it and the light one ADMISSION_LIGHT_SHARE_PERCENT; the rest is
 * the daemon's own work (harvests, the textfile), which is not refused. What a harvest does only
 * because clients asked (writing the GetStats entries they asked for) is charged to the heavy
 * bucket, so that asking for more entries cannot grow the harvest past the budget either. */

#include <stddef.h>
#include <stdint.h>

#include "varlink-server.h"

/* What the buckets earn, in percent of the budget, and the most each saves per percent of
 * budget: at the default 10 %, 7 % of a core and 0.5 s of CPU for the heavy bucket, 1.5 % and
 * 30 ms for the light one. */
#define ADMISSION_HEAVY_SHARE_PERCENT 70
#define ADMISSION_HEAVY_BURST_NS_PER_PERCENT 50000000ULL
#define ADMISSION_LIGHT_SHARE_PERCENT 15
#define ADMISSION_LIGHT_BURST_NS_PER_PERCENT 3000000ULL
/* A retry delay is the time until the bucket is out of debt plus ADMISSION_MIN_RETRY_MS, so a
 * connection is refused at most once per 20 ms (a refusal costs tens of microseconds), and at
 * most an hour. */
#define ADMISSION_MIN_RETRY_MS 20
#define ADMISSION_MAX_RETRY_MS 3600000

typedef struct Admission Admission;

/* The budget in numbers, as GetStatus reports it. */
typedef struct AdmissionLimits {
        double cpu_ratio;                /* the daemon's budget beyond its probes, in cores, as
                                          * jitter_daemon_cpu_budget_ratio exports it and the JitterdOverBudget
                                          * alert compares against */
        double heavy_ratio, light_ratio; /* what the buckets earn, CPU ns per ns */
        uint64_t heavy_burst_ns, light_burst_ns; /* the most each saves */
} AdmissionLimits;

/* Creates the budget, @percent of a core (1..100), full, and sets it as @s's gate. Returns 0,
 * -EINVAL or -ENOMEM. */
int admission_new(VarlinkServer *s, unsigned percent, Admission **ret);

/* The budget's numbers. */
void admission_limits(const Admission *a, AdmissionLimits *ret);

/* Charges @cpu_ns of work done for the clients outside their calls to the heavy bucket. */
void admission_charge_heavy(Admission *a, uint64_t cpu_ns);

/* Removes the gate from the server it was set on and frees @a; before varlink_server_free().
 * Accepts NULL; returns NULL. */
Admission *admission_free(Admission *a);

/* The methods of the light bucket, fully qualified; their number in *@ret_n. */
const char *const *admission_light_methods(size_t *ret_n);

#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counter.h"
#include "histogram.h"
#include "ring.h"
#include "stats.h"

/* One probe: a thread pinned to one CPU that does nothing but read the counter, and records
 * every gap and diff-of-diff into the slot of the current epoch.
 *
 * Hand-off: the owner (the daemon or jitter-probe) calls probe_advance() once per interval;
 * the probe notices the new epoch within PROBE_CHECK_EVERY samples, moves to the next slot and
 * acknowledges; then the owner may read the old slot with probe_harvest(), which also clears
 * it for reuse. The probe never waits for the owner, and never writes a cache line the owner
 * writes. */

#define PROBE_SLOTS 4u
#define PROBE_CHECK_EVERY 1024u /* samples between looks at the epoch word and the CPU number */

/* What one interval recorded. Also the unit the daemon's history is built from. */
typedef struct ProbeSlot {
        uint64_t start_ticks; /* counter at the first sample of the slot */
        uint64_t end_ticks;   /* counter at the last sample */
        uint64_t lost_ticks;  /* Σ (gap − floor) over gaps at or above the noise band */
        uint64_t events;      /* gaps at or above the event threshold */
        Stats gap;
        SignedStats dd;
        Histogram gap_hist;
        SignedHistogram dd_hist;
} ProbeSlot;

typedef enum ProbeState {
        PROBE_STARTING,
        PROBE_PREHEATING,
        PROBE_RUNNING,
        PROBE_MIGRATED, /* found itself off its CPU: records nothing until re-pinned */
        PROBE_STOPPED,
        PROBE_FAILED, /* could not pin or set its scheduling policy; see probe_error() */
} ProbeState;

typedef struct ProbeConfig {
        int cpu;
        int priority; /* 0: SCHED_OTHER; 1..99: SCHED_FIFO at that priority */
        CounterInfo counter;
        uint64_t threshold_ns; /* a gap this long is an event (interruption) */
        uint64_t preheat_ns;   /* run this long before recording */
        size_t ring_capacity;  /* events buffered between two reads of the ring */
        /* Run in the probe thread once it is pinned and has its policy, before preheat: the
         * daemon drops the thread's capabilities and blocks its signals there. May be NULL. */
        void (*thread_init)(void *userdata);
        void *thread_init_userdata;
} ProbeConfig;

typedef struct Probe Probe;

/* Allocates a probe, touches and mlock()s all its memory. Returns 0, -ENOMEM, or the errno of
 * mlock() (-EPERM/-ENOMEM: RLIMIT_MEMLOCK too small without CAP_IPC_LOCK). */
int probe_new(const ProbeConfig *cfg, Probe **ret);

/* Starts the probe thread and waits until it is pinned and has its scheduling policy (then it
 * preheats). Returns 0, or the negative errno of what failed: -EINVAL for a CPU that is offline
 * or not allowed, -EPERM for SCHED_FIFO without CAP_SYS_NICE or RLIMIT_RTPRIO. */
int probe_start(Probe *p);

/* Asks the thread to stop and joins it. Safe to call twice. */
void probe_stop(Probe *p);

/* Asks the thread to stop and waits at most @timeout_ns for it. Returns 0, or -ETIMEDOUT when
 * it did not stop in time (starved by a higher-priority task on its CPU): probe_free() then
 * leaves the probe's memory alone, as the thread may still touch it; the process should exit. */
int probe_stop_timeout(Probe *p, uint64_t timeout_ns);

/* Stops the probe if needed and frees it; accepts NULL. */
void probe_free(Probe *p);

/* The configuration the probe was made with. */
const ProbeConfig *probe_config(const Probe *p);

ProbeState probe_state(const Probe *p);

/* Returns "starting", "preheating", "running", "migrated", "stopped" or "failed". */
const char *probe_state_name(ProbeState s);

/* The negative errno that made the probe fail, or 0. */
int probe_error(const Probe *p);

#define PROBE_FAILURE_MAX 192

/* Why the probe failed, in one line that names the CPU and the cause (what was tried, what was
 * seen), for logs and the API; "" while it has not failed. Written once by the probe thread
 * before it sets PROBE_FAILED, so it is stable once probe_state() returns PROBE_FAILED. */
const char *probe_failure(const Probe *p);

/* The CPU the probe last found itself on when it reported PROBE_MIGRATED, or -1. */
int probe_migrated_to(const Probe *p);

/* How many times the probe found itself off its CPU. */
uint64_t probe_migrations(const Probe *p);

/* Kernel thread id of the probe thread (for /proc/<pid>/task/<tid>), or 0 before start. */
int probe_tid(const Probe *p);

/* The loop's own period measured during preheat (median gap), and the noise band: gaps at or
 * above it count toward time lost. In ticks; 0 until preheat is over. */
uint64_t probe_floor_ticks(const Probe *p);
uint64_t probe_band_ticks(const Probe *p);

/* The epoch the owner last set (starts at 1). */
uint64_t probe_epoch(const Probe *p);

/* The newest epoch the probe has acknowledged. */
uint64_t probe_acked_epoch(const Probe *p);

/* Owner: starts a new epoch. Returns the new epoch, or -EBUSY when the probe has not yet
 * acknowledged the current one or the slot it would move to is still unharvested. */
int64_t probe_advance(Probe *p);

/* Owner: copies the slot of @epoch (older than the current epoch) into @ret and clears it.
 * Returns 0, -EAGAIN while the probe has not yet acknowledged a newer epoch, -ESTALE when the
 * slot was already harvested or its epoch is too old to still be held. */
int probe_harvest(Probe *p, uint64_t epoch, ProbeSlot *ret);

/* Owner: the probe's event ring, to read with ring_pop(). */
EventRing *probe_ring(Probe *p);

/* Empties @s. */
void probe_slot_clear(ProbeSlot *s);

/* Adds @src into @dst (for building intervals into windows). The time span grows to cover
 * both. */
void probe_slot_merge(ProbeSlot *dst, const ProbeSlot *src);

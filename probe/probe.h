#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counter.h"
#include "ring.h"
#include "slot.h"

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

typedef enum ProbeState {
        PROBE_STARTING,
        PROBE_PREHEATING,
        PROBE_RUNNING,
        PROBE_MIGRATED, /* found itself off its CPU: records nothing until re-pinned */
        PROBE_STOPPED,
        PROBE_FAILED, /* could not run on its CPU; see probe_failure() and probe_error() */
} ProbeState;

/* Where the loop learns which CPU it runs on, every PROBE_CHECK_EVERY samples. */
typedef enum ProbeCpuSource {
        PROBE_CPU_SOURCE_NONE,    /* not chosen yet (before the thread is pinned) */
        PROBE_CPU_SOURCE_TSC_AUX, /* rdtscp's TSC_AUX, checked against sched_getcpu() */
        PROBE_CPU_SOURCE_GETCPU,  /* sched_getcpu(): the rseq area, no syscall */
} ProbeCpuSource;

typedef struct ProbeConfig {
        int cpu;
        int priority; /* 0: SCHED_OTHER; 1..99: SCHED_FIFO at that priority */
        CounterInfo counter;
        uint64_t threshold_ns; /* a gap this long is an event (interruption); > 0 */
        uint64_t preheat_ns;   /* run this long before recording */
        size_t ring_capacity;  /* events buffered between two reads of the ring */
        /* Run in the probe thread once it is pinned and has its policy, before preheat: the
         * daemon drops the thread's capabilities and blocks its signals there. May be NULL. */
        void (*thread_init)(void *userdata);
        void *thread_init_userdata;
} ProbeConfig;

typedef struct Probe Probe;

/* Allocates a probe, touches and mlock()s all its memory. Returns 0, -EINVAL for a CPU out of
 * range, a priority above 99, a zero counter frequency or a zero threshold, -ENOMEM, or the
 * errno of mlock() (-EPERM/-ENOMEM: RLIMIT_MEMLOCK too small without CAP_IPC_LOCK). */
int probe_new(const ProbeConfig *cfg, Probe **ret);

/* Starts the probe thread and waits, at most 5 s, until it is pinned and has its scheduling
 * policy (then it preheats). Returns 0, or the negative errno of what failed, with the reason in
 * probe_failure(): -EINVAL for a CPU that is offline or not allowed, -EPERM for SCHED_FIFO
 * without CAP_SYS_NICE or RLIMIT_RTPRIO, that of a failure in the first moments (-EIO, -EBUSY:
 * see PROBE_FALSE_MIGRATIONS_MAX), or -ETIMEDOUT (probe_failure() is "" then). */
int probe_start(Probe *p);

/* How long probe_stop() waits for the thread. A running probe sees the request within
 * PROBE_CHECK_EVERY samples, a migrated one within 100 ms. */
#define PROBE_STOP_TIMEOUT_NS 2000000000ULL

/* Asks the thread to stop and waits at most PROBE_STOP_TIMEOUT_NS for it, as
 * probe_stop_timeout(). Safe to call twice. */
int probe_stop(Probe *p);

/* Asks the thread to stop and waits at most @timeout_ns for it. Returns 0, or -ETIMEDOUT when
 * it did not stop in time (starved by a higher-priority task on its CPU): probe_free() then
 * leaves the probe's memory alone, as the thread may still touch it; the process should exit. */
int probe_stop_timeout(Probe *p, uint64_t timeout_ns);

/* Asks the thread to stop and returns at once; probe_stop() then waits for it. Callable from
 * any thread, also from a hook in the probe thread. Lets an owner stop many probes in the time
 * of one. */
void probe_request_stop(Probe *p);

/* Stops the probe if needed and frees it; accepts NULL. */
void probe_free(Probe *p);

ProbeState probe_state(const Probe *p);

/* Returns "starting", "preheating", "running", "migrated", "stopped" or "failed". */
const char *probe_state_name(ProbeState s);

/* The negative errno that made the probe fail, or 0: that of pinning or of the scheduling
 * policy, -EIO when its CPU number said it was elsewhere while the kernel did not, -EBUSY when
 * something kept moving it (see PROBE_FALSE_MIGRATIONS_MAX). */
int probe_error(const Probe *p);

#define PROBE_FAILURE_MAX 192

/* Why the probe failed, in one line that names the CPU and the cause (what was tried, what was
 * seen), for logs and the API; "" while it has not failed. Written once by the probe thread
 * before it sets PROBE_FAILED, so it is stable once probe_state() returns PROBE_FAILED. */
const char *probe_failure(const Probe *p);

/* A probe fails rather than re-pinning for ever when it finds itself off its CPU this many
 * times although it could pin itself back at once every time: its CPU number lies (a TSC_AUX
 * the host rewrote), or something keeps moving it. Only a run without one that is longer than
 * PROBE_FALSE_MIGRATION_WINDOW_NS + its preheat + the probe's age at the last one (from its
 * first preheat, by its own counter; at most PROBE_FALSE_MIGRATION_AGE_MAX_NS) forgives them:
 * that window grows with the probe, so no pace up to one an hour outruns it (a source that lies
 * every minute fails the probe by its fourth lie), while a rare affinity reset (a daily tuning
 * job) is forgotten by a probe that ran clean for an hour since, however old it is. Migrations
 * it must wait out (CPU offline, cpuset) do not count. */
#define PROBE_FALSE_MIGRATIONS_MAX 3u
#define PROBE_FALSE_MIGRATION_WINDOW_NS 10000000000ULL
#define PROBE_FALSE_MIGRATION_AGE_MAX_NS 3600000000000ULL

/* Where the loop reads its CPU number; PROBE_CPU_SOURCE_NONE until the probe left
 * PROBE_STARTING. */
ProbeCpuSource probe_cpu_source(const Probe *p);

/* Returns "tsc_aux", "getcpu" or "none". */
const char *probe_cpu_source_name(ProbeCpuSource s);

#define PROBE_NOTE_MAX 160

/* Why the CPU number comes from where it does, in one line naming the CPU (e.g. what TSC_AUX
 * read when it was not trusted); "" before the probe left PROBE_STARTING. */
const char *probe_cpu_source_note(const Probe *p);

/* The CPU the probe last found itself on when it reported PROBE_MIGRATED, or -1. */
int probe_migrated_to(const Probe *p);

/* How many times the probe found itself off its CPU. */
uint64_t probe_migrations(const Probe *p);

/* Kernel thread id of the probe thread (for /proc/<pid>/task/<tid>), or 0 before start. */
int probe_tid(const Probe *p);

/* The loop's own period measured during preheat (median gap), and the noise band: gaps at or
 * above it count toward time lost. In ticks; 0 until preheat is over. Events do not depend on
 * the band: every gap at or above the threshold is one, however few ticks that is. */
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
 * slot was already harvested or its epoch is too old to still be held. Once probe_stop() has
 * returned 0 no acknowledgement is needed: advance, then harvest the last slot at once. */
int probe_harvest(Probe *p, uint64_t epoch, ProbeSlot *ret);

/* Owner: the probe's event ring, to read with ring_pop(). */
EventRing *probe_ring(Probe *p);

/* Bytes of memory @p holds, all of it locked: the probe with its slots and pair tables, and
 * its event ring. */
size_t probe_memory_bytes(const Probe *p);

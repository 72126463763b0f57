#pragma once

/* The Manager's own state, shared by the three files of the manager (manager.c,
 * manager-trace.c and manager-capture.c) and by the white-box tests that build a Manager by
 * hand. Everything else goes through manager.h. */

#include "manager.h"

#include <jansson.h>
#include <sched.h>
#include <systemd/sd-event.h>

#include "admission.h"
#include "capture-store.h"
#include "cause-store.h"
#include "host-files.h"
#include "host-msr.h"
#include "ksyms.h"
#include "notify.h"
#include "trace.h"
#include "varlink-server.h"

#define MANAGER_HOOKS_MAX 4

/* Per probed CPU. */
struct ProbeCtl {
        Manager *manager;
        int cpu;
        Probe *probe;
        uint64_t harvest_epoch;  /* next epoch to harvest */
        uint64_t epoch_start_ns; /* CLOCK_MONOTONIC when the current epoch began */
        uint64_t advanced_epoch; /* the epoch set at the last tick */
        unsigned missed;         /* ticks in a row the probe did not acknowledge */
        bool stalled;
        bool stall_pending; /* the next interval harvested ends a stall */
        bool offline;
        bool migrated; /* off its CPU while that CPU is online: warned once */
        bool failed;   /* its failure was logged */
        RingReader reader;
        AttribSnapshot *attrib_snap;
        HostMsr smi_msr; /* the SMI count of the CPU, kept open once it opened */
        /* What the attribution counters did in each epoch, by epoch modulo PROBE_SLOTS:
         * sampled at the tick that ends it, so that an epoch harvested late, together with the
         * next one (its probe was taken away when the epoch changed), keeps its own counts. */
        AttribDelta epoch_attrib[PROBE_SLOTS];
        uint64_t samples_total; /* since start, for status */
        /* The last harvested interval, for Monitor and the textfile. */
        uint64_t last_start_ns;
        uint64_t last_duration_ns;
        ProbeSlot last;
        AttribDelta last_attrib;
        /* The counters over every interval the last harvest took: several when the manager
         * fell behind, so that the counts noted once a harvest (the SMIs beside the trace's
         * account) miss none. */
        AttribDelta harvested_attrib;
        bool have_last;
};

struct Manager {
        Config config;
        const char *config_path;
        const char *dropin_dir;
        Overrides overrides;

        sd_event *event;
        sd_event_source *tick_source;
        sd_event_source *harvest_source;
        sd_event_source *drain_source; /* manager_drain_start() */
        sd_event_source *ready_source;
        sd_event_source *checkpoint_source;
        bool loop_fifo; /* the event loop runs SCHED_FIFO: manager_yield() */
        Notifier *notifier;
        VarlinkServer *server;
        Admission *admission; /* the clients' CPU budget, the server's gate */
        char socket_path[108];

        CounterInfo counter;
        ClockPair clock_ref;
        bool have_clock_ref;
        double drift_ppm;

        ProbeCtl *probes;
        size_t n_probes;
        cpu_set_t cpus;
        /* The CPUs this process may use, as at start, before the manager moved off the probed
         * ones: what a reload may probe. */
        cpu_set_t allowed;
        bool have_allowed;

        History *history;
        AttribTable *attrib;
        /* The attribution's /proc files, read each tick (kept open on the live system). */
        HostFiles *attrib_files;

        uint64_t start_mono_ns;
        uint64_t start_real_ns;
        bool ready;
        uint64_t ready_deadline_usec; /* CLOCK_MONOTONIC: every probe runs by then, or we exit */
        bool stopping;                /* STOPPING=1 was sent */
        bool stopped;                 /* manager_run() stopped the probes and checkpointed */
        bool checkpoint_failing;      /* an error was logged; log again only once it recovers */
        gid_t admin_gid;
        bool have_admin_gid;

        /* Trace causes (manager-trace.c): the recorder while [trace] enabled and tracing
         * works, the causes of the interruptions the history keeps, and why tracing is off
         * although enabled. */
        TraceRecorder *trace;
        CauseStore *cause_store;
        Ksyms *ksyms;
        char trace_reason[TRACE_REASON_MAX];
        bool trace_read_failing;
        /* Reads the trace between harvests when it records much (manager-trace.c): woken by
         * a CPU's buffer watermark (one source per recorded CPU; then the timer ends the
         * pause after such a read), or timed where the kernel has no watermark. */
        sd_event_source *trace_read_source;
        sd_event_source **trace_watch_sources;
        size_t n_trace_watch_sources;
        /* CLOCK_MONOTONIC just before the last read that succeeded: the records up to it
         * are in the recorder's window. */
        uint64_t trace_read_ns;
        /* The trace captures while [trace] keep_above is set and recording
         * (manager-capture.c); a failed write was logged. */
        CaptureStore *captures;
        bool capture_failing;

        /* Called at each harvest, in the order they were added (main.c adds the API's
         * Monitor and the textfile). */
        ManagerHooks hooks[MANAGER_HOOKS_MAX];
        size_t n_hooks;
};

/* --- trace causes (manager-trace.c) --- */

/* Forgets the stored causes of @cpu (-1: all), as manager_reset() does with the history. */
void manager_trace_reset(Manager *m, int cpu);

/* With [trace] enabled, starts recording the probed CPUs; when that is not possible, logs why
 * once and keeps the reason for GetStatus. Call while the daemon still has its privileges
 * (kallsyms is opened then, for function names). */
void manager_trace_start(Manager *m);

/* Stops recording (and removes the tracing instance); accepts a manager that does not. */
void manager_trace_stop(Manager *m);

/* Reads what the kernel recorded since the last call (each interval); logs a failure once.
 * Reads again before the next interval when the recorder asks for it (at least every
 * TRACE_READ_PERIOD_MAX_NS, sooner as its kernel buffers need), and takes the probes'
 * interruptions then (manager_drain_events()). */
void manager_trace_read(Manager *m);

/* After each harvest: writes the trace captures that are due; while recording, notes each
 * probed CPU's steal time and the SMIs of the interval it handed over, at the interval's end,
 * for GetCauses to show beside the interruptions with no record. */
void manager_trace_harvested(Manager *m);

/* Takes the interruptions @p's probe reported since the last call into the history, with
 * their trace causes when recording (at each harvest, and between harvests after a read of a
 * busy trace, while the recorder's window still holds their records). */
void manager_drain_events(Manager *m, ProbeCtl *p);

/* Called before each piece of the daemon's own work (the tick, a slice of the drain, the
 * harvest, a read of the trace, a checkpoint): a SCHED_FIFO loop lets a task of its own
 * priority run first, such as the client it just answered on the same CPU, which would
 * otherwise wait for the CPU until the loop blocks, the whole tick or harvest later. A
 * SCHED_OTHER loop needs none: the scheduler lets a task just woken run before it. */
static inline void manager_yield(const Manager *m)
{
        if (m->loop_fifo) {
                (void)sched_yield();
        }
}

/* Drains the probes' interruptions in slices of MANAGER_DRAIN_SLICE_NS, each a dispatch of
 * its own at a priority below the clients' (manager.c): started at each tick and after each
 * read of the trace between harvests, so that the harvest finds little left. A call waits for
 * a slice, and the reading of the trace up to the end of the interruption being explained
 * when the slice's time runs out (the reads between harvests keep that below a quarter of a
 * CPU's trace buffer). The captures due are written once the probes' rings are empty. */
#define MANAGER_DRAIN_SLICE_NS 200000ULL
void manager_drain_start(Manager *m);

/* --- trace captures (manager-capture.c) --- */

/* With [trace] keep_above set and the recorder running, starts keeping captures in
 * state_dir/captures, taking those of earlier runs within the bounds; logs once when it
 * cannot. */
void manager_capture_start(Manager *m);

/* Stops taking captures; those written stay. Accepts a manager that takes none. */
void manager_capture_stop(Manager *m);

/* Asks for the records around an interruption of @cpu, when it is longer than keep_above. */
void manager_capture_note(Manager *m, int cpu, uint64_t start_ns, uint64_t duration_ns);

/* Writes the captures whose end the last trace read reached (after every read). */
void manager_capture_flush(Manager *m);

#pragma once

/* The Manager owns the event loop, the probes, the history and the Varlink server: every
 * interval it moves the probes to a new epoch, harvests the finished one into the history with
 * its attribution counters and interruptions, tells systemd and the Monitor clients, and
 * checkpoints the history now and then. It runs on housekeeping CPUs only. */

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <systemd/sd-event.h>

#include "attrib.h"
#include "cause-store.h"
#include "config.h"
#include "counter.h"
#include "history.h"
#include "ksyms.h"
#include "notify.h"
#include "probe.h"
#include "trace.h"
#include "varlink-server.h"

typedef struct Manager Manager;

/* Per probed CPU. */
typedef struct ProbeCtl {
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
        uint64_t samples_total; /* since start, for status */
        /* The last harvested interval, for Monitor and the textfile. */
        uint64_t last_start_ns;
        uint64_t last_duration_ns;
        ProbeSlot last;
        AttribDelta last_attrib;
        bool have_last;
} ProbeCtl;

/* Command-line values that override the config file, kept to re-apply on reload. */
typedef struct Overrides {
        const char *cpus;
        const char *socket;
        const char *state_dir;
        const char *interval;
        const char *threshold;
        const char *prometheus_textfile;
} Overrides;

struct Manager {
        Config config;
        const char *config_path;
        const char *dropin_dir;
        Overrides overrides;

        sd_event *event;
        sd_event_source *tick_source;
        sd_event_source *harvest_source;
        sd_event_source *ready_source;
        sd_event_source *checkpoint_source;
        Notifier *notifier;
        VarlinkServer *server;
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

        uint64_t start_mono_ns;
        uint64_t start_real_ns;
        bool ready;
        uint64_t ready_deadline_usec; /* CLOCK_MONOTONIC: every probe runs by then, or we exit */
        bool stopping;                /* STOPPING=1 was sent */
        bool stopped;                 /* manager_run() stopped the probes and checkpointed */
        bool checkpoint_failing;      /* an error was logged; log again only once it recovers */
        bool export_failing;
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

        /* Monitor calls waiting for the next interval. */
        struct MonitorClient *monitors;

        /* Bumped at every harvest: analyses of a window (fit, periods) computed for one
         * generation are reused until the next, so repeated GetStats calls stay cheap. */
        uint64_t generation;
        struct AnalysisCache {
                uint64_t generation;
                int cpu;
                char window[8];
                json_t *causes;
                json_t *periods;
        } analysis_cache[16];
        unsigned analysis_next;
};

/* Creates the manager for @config: checks privileges, resolves the CPUs, sets up the event
 * loop, signals, the Varlink server (socket-activated or bound) and the history (restored from
 * the state directory). Logs what fails. Returns 0 or a negative errno. */
int manager_new(const Config *config, const char *config_path, const char *dropin_dir,
                const Overrides *overrides, Manager **ret);

/* Starts the probes and runs the event loop until SIGTERM/SIGINT, then checkpoints and stops
 * the probes. Returns the exit status: 0, or 1 when the probes did not all run within the
 * preheat and READY_GRACE_USEC (at start or after a reload), or one did not stop within
 * PROBE_STOP_TIMEOUT_NS. */
int manager_run(Manager *m);

/* Stops the probes, writes a last checkpoint and frees everything. Accepts NULL. */
Manager *manager_free(Manager *m);

/* Monotonic and realtime now, in ns. */
uint64_t manager_now_ns(clockid_t clock);

/* Registers the io.jitterd interface on @m's server (api.c). */
int manager_add_api(Manager *m);

/* The replies of GetStatus, of GetStats for @cpus over @window (the "cpus" array; the causes
 * and periods only with @analyses: they cost milliseconds per CPU over long windows, too much
 * for the textfile each interval, which does not use them), and of GetHistogram (api.c), also
 * used for the Prometheus textfile. NULL on OOM or a bad window. */
json_t *api_status(Manager *m);
json_t *api_stats(Manager *m, const cpu_set_t *cpus, const char *window, bool analyses);
json_t *api_histogram(Manager *m, int cpu, const char *window, const char *kind);

/* Adds the attribution counters of @d to @o as GetStats has them: "interrupts", "softirqs"
 * and "ctxsw" maps keyed by source without its prefix, and "smi". Returns 0 or -ENOMEM. */
int api_attrib_to_json(Manager *m, const AttribDelta *d, json_t *o);

/* Sends the interval that was just harvested to Monitor clients (api.c). */
void manager_notify_monitors(Manager *m);

/* Frees the Monitor bookkeeping (api.c). */
void manager_free_monitors(Manager *m);

/* Parses a window name ("10s", "1m", "5m", "1h", "24h", "all") into a time range ending now.
 * Returns 0 or -EINVAL. */
int manager_window(const Manager *m, const char *window, uint64_t *ret_from_ns, uint64_t *ret_to_ns,
                   bool *ret_all);

/* The state of @p for humans and the API: "running", "stalled", "offline", ... */
const char *manager_probe_state(const ProbeCtl *p);

/* Why @p failed, one line naming its CPU (probe_failure(), or its errno when the probe gave no
 * text), into @buf; NULL when it has not failed. */
const char *manager_probe_failure(const ProbeCtl *p, char *buf, size_t size);

/* How long after the probes start READY=1 may wait beyond their preheat, and how long a probe
 * thread is given to stop. Past either, jitterd logs why and exits with status 1. */
#define READY_GRACE_USEC (5 * 1000000ULL)
#define PROBE_STOP_TIMEOUT_NS (2 * 1000000000ULL)

/* Writes the Prometheus textfile if configured (export.c). Returns 0 or a negative errno. */
int manager_export_textfile(Manager *m);

/* --- trace causes (manager-trace.c) --- */

/* With [trace] enabled, starts recording the probed CPUs; when that is not possible, logs why
 * once and keeps the reason for GetStatus. Call while the daemon still has its privileges
 * (kallsyms is opened then, for function names). */
void manager_trace_start(Manager *m);

/* Stops recording (and removes the tracing instance); accepts a manager that does not. */
void manager_trace_stop(Manager *m);

/* Reads what the kernel recorded since the last call (each interval); logs a failure once. */
void manager_trace_read(Manager *m);

/* Explains the interruption of @p that began at @start_ticks (@start_ns) and stores its
 * causes for GetEvents. Does nothing when not recording. */
void manager_trace_explain(Manager *m, const ProbeCtl *p, uint64_t start_ticks,
                           uint64_t duration_ticks, uint64_t start_ns);

/* Forgets the stored causes of @cpu (-1: all), as Reset does with the history. */
void manager_trace_reset(Manager *m, int cpu);

/* GetStatus' "trace" object: state ("off", "recording", "unavailable"), reason, clock... */
json_t *manager_trace_status(Manager *m);

/* Adds the causes of @ev to its GetEvents object @o ("causes", "unexplained_ns", "other_ns",
 * "trace_lost") when they are known. Returns 0 or -ENOMEM. */
int manager_trace_event_to_json(Manager *m, const HistoryEvent *ev, json_t *o);

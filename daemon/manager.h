#pragma once

/* The Manager owns the event loop, the probes, the history and the Varlink server: every
 * interval it moves the probes to a new epoch, harvests the finished one into the history with
 * its attribution counters and interruptions, tells systemd, calls the harvest hooks (the API's
 * Monitor, the textfile: it knows nothing else of them), and checkpoints the history now and
 * then. It runs on housekeeping CPUs only. Its state is opaque: manager-private.h is for the
 * manager's own files and white-box tests; everything else uses the accessors below. */

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "admission.h"
#include "attrib.h"
#include "capture-store.h"
#include "cause-store.h"
#include "config.h"
#include "counter.h"
#include "history.h"
#include "probe.h"
#include "trace.h"
#include "varlink-server.h"

typedef struct Manager Manager;

typedef struct ProbeCtl ProbeCtl;

/* Command-line values that override the config file, kept to re-apply on reload. */
typedef struct Overrides {
        const char *cpus;
        const char *socket;
        const char *state_dir;
        const char *interval;
        const char *threshold;
        const char *prometheus_textfile;
} Overrides;

/* What the API and the textfile see of a probed CPU (manager_probe_info()). The pointers live
 * until the next harvest. */
typedef struct ProbeInfo {
        int cpu;
        const Probe *probe;
        const char *state; /* "running", "stalled", "offline", ... */
        bool failed;
        char failure[PROBE_FAILURE_MAX + 64]; /* why, one line naming the CPU, when failed */
        bool offline;
        bool stalled;
        uint64_t samples_total;
        /* The last harvested interval, when have_last. */
        bool have_last;
        const ProbeSlot *last;
        const AttribDelta *last_attrib;
        uint64_t last_start_ns;
        uint64_t last_duration_ns;
} ProbeInfo;

/* One interval of one probe, as it is harvested (ManagerHooks' interval). The pointers are
 * valid during the call only. A probe that hands over late gives two or more at one harvest. */
typedef struct ManagerInterval {
        int cpu;
        const char *state; /* as in ProbeInfo */
        const ProbeSlot *slot;
        const AttribDelta *attrib;
        uint64_t start_ns;      /* CLOCK_MONOTONIC */
        uint64_t start_real_ns; /* CLOCK_REALTIME */
        uint64_t duration_ns;
} ManagerInterval;

/* What a reader of the harvests (the API's Monitor, the textfile) is called with, each with
 * @userdata: @interval for every interval harvested, then @harvest after every harvest, and
 * @ready at each READY=1; any may be NULL. */
typedef struct ManagerHooks {
        void (*interval)(Manager *m, const ManagerInterval *iv, void *userdata);
        void (*harvest)(Manager *m, void *userdata);
        /* READY=1 was sent: every probe runs on its CPU, after a start or a reload. */
        void (*ready)(Manager *m, void *userdata);
        void *userdata;
} ManagerHooks;

/* Loads @path and the drop-ins of @dropin and applies @o on top. Logs what is wrong. Returns 0
 * or a negative errno. */
int manager_load_config(const char *path, const char *dropin, const Overrides *o, Config *ret);

/* Creates the manager for @config: checks privileges, resolves the CPUs, sets up the event
 * loop, signals, the Varlink server (socket-activated or bound) and the history (restored from
 * the state directory). Logs what fails. Returns 0 and the manager in *@ret, or a negative
 * errno and nothing: what was built is freed. */
int manager_new(const Config *config, const char *config_path, const char *dropin_dir,
                const Overrides *overrides, Manager **ret);

/* Starts the probes and runs the event loop until SIGTERM/SIGINT, then checkpoints and stops
 * the probes. Returns the exit status: 0, or 1 when the probes did not all run within the
 * preheat and READY_GRACE_USEC (at start or after a reload), or one did not stop within
 * PROBE_STOP_TIMEOUT_NS. */
int manager_run(Manager *m);

/* Stops the probes, writes a last checkpoint and frees everything. Accepts NULL. */
Manager *manager_free(Manager *m);

static inline void manager_freep(Manager **m)
{
        manager_free(*m);
}
#define _cleanup_manager_ __attribute__((cleanup(manager_freep)))

/* Adds @hooks to those called at each harvest and READY=1, in the order they were added.
 * Returns 0 or -ENOSPC. */
int manager_add_hooks(Manager *m, const ManagerHooks *hooks);

/* Serves interface @name on the manager's server: @methods (@n of them) are called with
 * @userdata. Returns 0 or a negative errno (varlink_server_add_interface()). */
int manager_add_interface(Manager *m, const char *name, const char *description_text,
                          const VarlinkMethod *methods, size_t n, void *userdata);

/* What manager_reload() made of the configuration files. */
typedef enum ManagerReload {
        MANAGER_RELOAD_APPLIED,     /* in effect */
        MANAGER_RELOAD_KEPT,        /* they have errors: the running configuration stays */
        MANAGER_RELOAD_ROLLED_BACK, /* the new probes could not start: the previous ones run
                                     * again ([trace] and [export] are in effect) */
} ManagerReload;

/* Reloads the configuration, as SIGHUP does: RELOADING=1, then READY=1 (ManagerHooks' ready)
 * once every probe runs. Returns a ManagerReload (with MANAGER_RELOAD_KEPT, the messages of
 * the files in @diag when it is not NULL, which the caller clears), or a negative errno after
 * ending the loop with status 1: a probe did not stop, or none could start again. */
int manager_reload(Manager *m, ConfigDiag *diag);

/* Forgets the history and the stored causes of @cpu (-1: of every CPU). */
void manager_reset(Manager *m, int cpu);

/* --- what the API and the textfile read; valid until the next harvest --- */

const Config *manager_config(const Manager *m);
const CounterInfo *manager_counter(const Manager *m);
const TickConv *manager_tickconv(const Manager *m);
/* Drift of the counter against CLOCK_MONOTONIC over the last interval, in ppm. */
double manager_drift_ppm(const Manager *m);
const History *manager_history(const Manager *m);
const AttribTable *manager_attrib(const Manager *m);
/* The server, for its counts; NULL in a Manager built without one. */
const VarlinkServer *manager_server(const Manager *m);
/* The path the server listens on, or "(socket-activated)". */
/* The clients' CPU budget (admission.h); all zero without a server. */
void manager_admission_limits(const Manager *m, AdmissionLimits *ret);
/* Charges @cpu_ns of work done for the clients outside their calls (at a harvest) to their
 * budget. */
void manager_charge_clients(Manager *m, uint64_t cpu_ns);
const char *manager_socket_path(const Manager *m);
/* CLOCK_MONOTONIC and CLOCK_REALTIME when the daemon started, in ns. */
uint64_t manager_start_mono_ns(const Manager *m);
uint64_t manager_start_real_ns(const Manager *m);
/* The group whose members may Reset; false when there is none. */
bool manager_admin_gid(const Manager *m, gid_t *ret);

/* The probed CPUs: manager_cpus() as a set, and probe @i (0 <= @i < manager_n_probes()). */
const cpu_set_t *manager_cpus(const Manager *m);
size_t manager_n_probes(const Manager *m);
int manager_probe_cpu(const Manager *m, size_t i);
void manager_probe_info(const Manager *m, size_t i, ProbeInfo *ret);

/* How long after the probes start READY=1 may wait beyond their preheat; a probe thread is
 * given PROBE_STOP_TIMEOUT_NS (probe.h) to stop. Past either, jitterd logs why and exits with
 * status 1. */
#define READY_GRACE_USEC (5 * 1000000ULL)

/* --- trace causes (manager-trace.c) --- */

/* The trace's state: "off", "recording" or "unavailable". */
const char *manager_trace_state(const Manager *m);

/* Room for what the recorder leaves out, in words (ManagerTraceStatus' reason). */
#define MANAGER_TRACE_SHORTFALL_MAX 1280

/* What GetStatus shows of the trace (manager_trace_status()). The pointers live until the next
 * harvest. */
typedef struct ManagerTraceStatus {
        const char *state; /* manager_trace_state() */
        /* Unavailable: why. Recording: what is not as it should be (a read that fails, the
         * events left out at start and what they cost); "" when nothing is. */
        char reason[TRACE_REASON_MAX + MANAGER_TRACE_SHORTFALL_MAX];
        /* While recording: the recorder's instance, clock and events, what starts a read
         * ("watermark" or "timer"), the events left out ("" for none), its counts, and the
         * memory it and the cause store use. */
        const char *instance, *clock, *events, *read_trigger;
        const char *missing, *refused, *unnamed;
        TraceStats stats;
        uint64_t memory_bytes, kernel_bytes;
} ManagerTraceStatus;

void manager_trace_status(const Manager *m, ManagerTraceStatus *ret);

/* The causes of the interruptions, for GetEvents and the totals of GetStatus; NULL when the
 * trace is not recording and none are stored. */
const CauseStore *manager_cause_store(const Manager *m);

/* GetCauses' sums for @cpu over window @span: those of the interruptions that began at or
 * after @since_ns, from the store, or only their count and time from the history when there is
 * no store (the (kind, name) sums are then cause_store_window_foreach() of
 * manager_cause_store() on the same @span). Returns 0, -EINVAL when the store does not sum
 * @span, -ENOMEM. */
int manager_trace_window(Manager *m, int cpu, HistorySpan span, uint64_t since_ns,
                         CauseWindow *ret);

/* GetStatus' trace "captures": the counts of the capture store; false when no capture is
 * kept. */
bool manager_capture_counts(const Manager *m, CaptureCounts *ret);

/* The trace captures kept (manager-capture.c), oldest first, of interruptions on @cpus whose
 * window began at or after @since_real_ns (CLOCK_REALTIME), their records those of @cpus: an
 * array of the capture files as they were written, each with its "file" name, the newest
 * @limit at most and at most 8 MiB of files; *@ret_truncated says whether more were left out.
 * NULL without memory. */
json_t *manager_captures(Manager *m, const cpu_set_t *cpus, uint64_t since_real_ns, size_t limit,
                         bool *ret_truncated);

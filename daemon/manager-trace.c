/* The manager's side of the trace causes: the recorder's life, its reads (each interval, and
 * between harvests as its buffers need), the interruptions the probes report taken into the
 * history with their causes into the store, and what the API reads of them. The matching
 * itself is in causes.c, the recording in trace.c. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cpulist.h"
#include "log.h"
#include "manager-private.h"
#include "privileges.h"
#include "steal.h"
#include "util.h"

/* Room for what the recorder leaves out: its missing, refused and unnamed lists, and words. */
#define SHORTFALL_MAX MANAGER_TRACE_SHORTFALL_MAX

/* What the recorder leaves out and what that costs, in one line: "this kernel lacks workqueue;
 * cannot enable sched:sched_switch (Permission denied): ...; not named: task, work causes";
 * "" when it records every kind of event it wants. */
static const char *trace_shortfall(const TraceRecorder *t, char *buf, size_t size)
{
        const char *missing = trace_recorder_missing(t), *refused = trace_recorder_refused(t),
                   *unnamed = trace_recorder_unnamed(t);

        snprintf(buf, size, "%s%s%s%s%s%s%s%s", missing[0] ? "this kernel lacks " : "", missing,
                 missing[0] && refused[0] ? "; " : "", refused[0] ? "cannot enable " : "", refused,
                 (missing[0] || refused[0]) && unnamed[0] ? "; " : "",
                 unnamed[0] ? "not named: " : "", unnamed[0] ? unnamed : "");
        if (unnamed[0]) {
                size_t len = strlen(buf);

                snprintf(buf + len, size - len, " causes");
        }
        return buf;
}

/* The daemon may turn tracing on at a reload (root, or CAP_DAC_OVERRIDE granted, which it then
 * keeps), and sees kernel addresses now. */
static bool trace_possible_later(void)
{
        return privileges_have(CAP_SYSLOG) && (geteuid() == 0 || privileges_have(CAP_DAC_OVERRIDE));
}

void manager_trace_harvested(Manager *m)
{
        int cpus[CPU_SETSIZE];
        uint64_t steal[CPU_SETSIZE];
        bool have[CPU_SETSIZE];
        int smi = attrib_table_find(m->attrib, "smi");

        manager_capture_flush(m);
        if (!m->trace || !m->cause_store) {
                return;
        }
        for (size_t i = 0; i < m->n_probes; i++) {
                cpus[i] = m->probes[i].cpu;
        }
        (void)steal_read(m->config.audit_root, cpus, m->n_probes, steal, have);
        for (size_t i = 0; i < m->n_probes; i++) {
                const ProbeCtl *p = &m->probes[i];

                if (!p->have_last) {
                        continue;
                }
                (void)cause_store_note_host(
                        m->cause_store, p->cpu, p->last_start_ns + p->last_duration_ns,
                        have[i] ? steal[i] : UINT64_MAX,
                        smi >= 0 ? attrib_delta_get(&p->harvested_attrib, (unsigned)smi)
                                 : UINT64_MAX);
        }
}

static void unwatch(Manager *m)
{
        for (size_t i = 0; i < m->n_trace_watch_sources; i++) {
                sd_event_source_disable_unref(m->trace_watch_sources[i]);
        }
        free(m->trace_watch_sources);
        m->trace_watch_sources = NULL;
        m->n_trace_watch_sources = 0;
}

/* A read between harvests; the interruptions are then drained in slices (manager_drain_start()),
 * while the recorder's window still holds their records. */
static void read_between_harvests(Manager *m)
{
        manager_yield(m);
        manager_trace_read(m);
        manager_drain_start(m); /* which writes the captures due once it ends */
}

static int on_trace_read(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void)s;
        (void)usec;
        read_between_harvests(userdata);
        return 0;
}

static void set_watching(Manager *m, int enabled)
{
        for (size_t i = 0; i < m->n_trace_watch_sources; i++) {
                (void)sd_event_source_set_enabled(m->trace_watch_sources[i], enabled);
        }
}

/* Arms the timed read @period_ns from now. */
static int arm_read(Manager *m, uint64_t period_ns)
{
        int r = 0;

        if (!m->trace_read_source) {
                r = sd_event_add_time(m->event, &m->trace_read_source, CLOCK_MONOTONIC, UINT64_MAX,
                                      1000, on_trace_read, m);
        }
        if (r >= 0) {
                r = sd_event_source_set_time(m->trace_read_source,
                                             (now_ns(CLOCK_MONOTONIC) + period_ns) / 1000);
        }
        if (r >= 0) {
                r = sd_event_source_set_enabled(m->trace_read_source, SD_EVENT_ONESHOT);
        }
        return r;
}

/* A CPU's buffer reached the watermark. The watch sleeps for TRACE_READ_PERIOD_MIN_NS after the
 * read, so that a CPU that fills a quarter of its buffer faster loses records rather than the
 * loop spinning; the timed read at its end wakes it again. */
static int on_trace_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Manager *m = userdata;

        (void)s;
        (void)fd;
        (void)revents;
        if (m->trace) {
                trace_recorder_woken(m->trace);
        }
        read_between_harvests(m);
        if (m->n_trace_watch_sources == 0) {
                return 0;
        }
        set_watching(m, SD_EVENT_OFF);
        if (arm_read(m, TRACE_READ_PERIOD_MIN_NS) < 0) {
                /* Without the timer, the watch wakes again at once and reads at the harvest. */
                set_watching(m, SD_EVENT_ON);
        }
        return 0;
}

/* Adds a watch source per recorded CPU. Where one cannot be added, the recorder's reads are
 * timed instead. */
static void watch(Manager *m)
{
        size_t n = trace_recorder_n_cpus(m->trace);
        int r = -ENOMEM;

        if (!trace_recorder_watching(m->trace)) {
                return;
        }
        m->trace_watch_sources = calloc(n, sizeof(*m->trace_watch_sources));
        for (size_t i = 0; m->trace_watch_sources && i < n; i++) {
                r = sd_event_add_io(m->event, &m->trace_watch_sources[i],
                                    trace_recorder_watch_fd(m->trace, i), EPOLLIN, on_trace_watch,
                                    m);
                if (r < 0) {
                        break;
                }
                m->n_trace_watch_sources = i + 1;
        }
        if (r < 0) {
                log_notice("cannot wait for the trace buffers' watermark (%s); reading the trace "
                           "at least every %llu ms instead",
                           strerror(-r), TRACE_READ_PERIOD_MAX_NS / 1000000ULL);
                unwatch(m);
                trace_recorder_unwatch(m->trace);
        }
}

/* The next read before the harvest's: woken by the watermark, or timed when the recorder asks
 * for one sooner (within TRACE_READ_PERIOD_MAX_NS it always does). */
static void plan_trace_read(Manager *m)
{
        uint64_t period = trace_recorder_read_period_ns(m->trace);
        int r;

        if (m->n_trace_watch_sources > 0 && !trace_recorder_watching(m->trace)) {
                log_notice("the kernel does not wake the trace reader at its buffers' watermark "
                           "(too late, or at the first record); reading the trace at least "
                           "every %llu ms instead",
                           TRACE_READ_PERIOD_MAX_NS / 1000000ULL);
                unwatch(m);
                trace_recorder_unwatch(m->trace);
        }
        if (m->n_trace_watch_sources > 0) {
                set_watching(m, SD_EVENT_ON);
        }
        if (period >= m->config.history_interval_ns) {
                if (m->trace_read_source) {
                        (void)sd_event_source_set_enabled(m->trace_read_source, SD_EVENT_OFF);
                }
                return;
        }
        r = arm_read(m, period);
        if (r < 0) {
                /* Read once an interval then; a busy CPU may lose records. */
                log_warning("cannot read the trace between intervals: %s", strerror(-r));
                m->trace_read_source = sd_event_source_disable_unref(m->trace_read_source);
        }
}

void manager_trace_start(Manager *m)
{
        int cpus[CPU_SETSIZE];
        bool dac;
        char list[256], shortfall[SHORTFALL_MAX];
        TraceOptions o;
        int r;

        m->trace_reason[0] = 0;
        /* Opened once, while the daemon may still see kernel addresses (CAP_SYSLOG), and
         * kept for recorders started after a reload: also with tracing off, when the daemon
         * keeps what a reload needs to turn it on (root, or CAP_DAC_OVERRIDE granted). */
        if (!m->ksyms && (m->config.trace_enabled || trace_possible_later()) &&
            ksyms_new(NULL, &m->ksyms) < 0) {
                m->ksyms = NULL;
        }
        if (!m->config.trace_enabled || m->trace || m->n_probes == 0) {
                return;
        }
        for (size_t i = 0; i < m->n_probes; i++) {
                cpus[i] = m->probes[i].cpu;
        }
        o = (TraceOptions){
                .cpus = cpus,
                .n_cpus = m->n_probes,
                .counter = m->counter.source,
                .counter_hz = m->counter.hz,
                .ksyms = m->ksyms,
        };
        privileges_dac(true);
        dac = geteuid() == 0 || privileges_have(CAP_DAC_OVERRIDE);
        r = trace_recorder_new(&o, &m->trace, m->trace_reason, sizeof(m->trace_reason));
        privileges_dac(false);
        if (r < 0) {
                m->trace = NULL;
                if ((r == -EACCES || r == -EPERM) && !dac) {
                        size_t len = strlen(m->trace_reason);

                        /* A reload cannot help: capabilities come with the start. */
                        snprintf(m->trace_reason + len, sizeof(m->trace_reason) - len,
                                 "; a running jitterd gains no capability: grant it (the "
                                 "jitterd-trace.conf drop-in) and restart jitterd");
                }
                log_warning("trace causes are off: %s", m->trace_reason);
                return;
        }
        /* The store comes with the first recorder that starts, and stays: a host that cannot
         * trace spends nothing on it. */
        if (!m->cause_store && (r = cause_store_new(m->config.history_events_per_cpu,
                                                    HISTORY_SPAN_MAX, &m->cause_store)) < 0) {
                m->cause_store = NULL;
                snprintf(m->trace_reason, sizeof(m->trace_reason), "%s", strerror(-r));
                log_warning("trace causes are off: %s", m->trace_reason);
                privileges_dac(true);
                m->trace = trace_recorder_free(m->trace);
                privileges_dac(false);
                return;
        }
        m->trace_read_failing = false;
        m->trace_read_ns = 0;
        manager_capture_start(m);
        watch(m);
        log_info("recording trace events of CPU %s in %s (clock %s)",
                 cpulist_format(list, sizeof(list), &m->cpus), trace_recorder_dir(m->trace),
                 trace_recorder_clock(m->trace));
        if (trace_shortfall(m->trace, shortfall, sizeof(shortfall))[0]) {
                log_warning("trace events left out: %s", shortfall);
        }
}

void manager_trace_stop(Manager *m)
{
        manager_capture_stop(m);
        unwatch(m);
        privileges_dac(true);
        m->trace = trace_recorder_free(m->trace);
        privileges_dac(false);
        m->trace_read_source = sd_event_source_disable_unref(m->trace_read_source);
}

void manager_trace_read(Manager *m)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        int r;

        if (!m->trace) {
                return;
        }
        r = trace_recorder_read(m->trace);
        if (r >= 0) {
                m->trace_read_ns = now;
        }
        plan_trace_read(m);
        if (r < 0 && !m->trace_read_failing) {
                log_warning("%s; trace causes are missing until it recovers",
                            trace_recorder_reason(m->trace));
                m->trace_read_failing = true;
        } else if (r >= 0 && m->trace_read_failing) {
                log_notice("the trace can be read again");
                m->trace_read_failing = false;
        }
}

/* Explains the interruption of @p that began at @start_ticks (@start_ns) and stores it with its
 * causes for GetEvents and GetCauses; without them when the trace does not see it. Does nothing
 * without a store (the trace never started). */
static void trace_explain(Manager *m, const ProbeCtl *p, uint64_t start_ticks,
                          uint64_t duration_ticks, uint64_t start_ns, uint64_t duration_ns)
{
        CauseList l;
        bool seen;

        if (!m->cause_store) {
                return;
        }
        seen = m->trace && trace_recorder_explain(m->trace, p->cpu, probe_tid(p->probe),
                                                  start_ticks, duration_ticks, &l) == 0;
        (void)cause_store_add(m->cause_store, p->cpu, start_ns, duration_ns, seen ? &l : NULL,
                              &m->counter.conv);
}

/* Takes @p's interruptions as manager_drain_events() does, until CLOCK_MONOTONIC reaches
 * @deadline_ns (looked at every few interruptions). Returns whether the ring was emptied. */
static bool drain_events_until(Manager *m, ProbeCtl *p, uint64_t deadline_ns)
{
        for (unsigned n = 1;; n++) {
                HistoryEvent ev = {.cpu = p->cpu};
                uint64_t start, dur;

                /* The clock is looked at every eighth interruption: explaining one takes a
                 * few microseconds. */
                if (n % 8 == 0 && now_ns(CLOCK_MONOTONIC) >= deadline_ns) {
                        return false;
                }
                if (ring_pop(probe_ring(p->probe), &p->reader, &start, &dur) != 1) {
                        return true;
                }
                clock_pair_map(&m->clock_ref, &m->counter.conv, start, &ev.start_ns,
                               &ev.start_real_ns);
                ev.duration_ns = tickconv_to_ns(&m->counter.conv, dur);
                (void)history_add_event(m->history, &ev);
                trace_explain(m, p, start, dur, ev.start_ns, ev.duration_ns);
                manager_capture_note(m, p->cpu, ev.start_ns, ev.duration_ns);
        }
}

void manager_drain_events(Manager *m, ProbeCtl *p)
{
        (void)drain_events_until(m, p, UINT64_MAX);
}

static int on_drain(sd_event_source *s, void *userdata)
{
        Manager *m = userdata;
        uint64_t deadline;
        bool done = true;

        manager_yield(m);
        deadline = now_ns(CLOCK_MONOTONIC) + MANAGER_DRAIN_SLICE_NS;

        for (size_t i = 0; i < m->n_probes && done; i++) {
                done = drain_events_until(m, &m->probes[i], deadline);
        }
        /* Not re-armed, the rest waits for the harvest, which drains it all. */
        if (!done && sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0) {
                log_warning("cannot arm the drain of the probes' interruptions: the harvest "
                            "takes them");
        } else if (done) {
                /* The captures of the interruptions just noted, while the recorder's window
                 * still holds their records. */
                manager_capture_flush(m);
        }
        return 0;
}

void manager_drain_start(Manager *m)
{
        int r = 0;

        if (!m->drain_source) {
                r = sd_event_add_defer(m->event, &m->drain_source, on_drain, m);
                if (r >= 0) {
                        r = sd_event_source_set_priority(m->drain_source,
                                                         SD_EVENT_PRIORITY_NORMAL + 1);
                }
        }
        if (r >= 0) {
                r = sd_event_source_set_enabled(m->drain_source, SD_EVENT_ONESHOT);
        }
        if (r < 0) {
                /* The harvest drains what is left, whole. */
                m->drain_source = sd_event_source_disable_unref(m->drain_source);
        }
}

void manager_trace_reset(Manager *m, int cpu)
{
        if (m->cause_store) {
                cause_store_reset(m->cause_store, cpu);
        }
}

const char *manager_trace_state(const Manager *m)
{
        return !m->config.trace_enabled ? "off" : m->trace ? "recording" : "unavailable";
}

void manager_trace_status(const Manager *m, ManagerTraceStatus *ret)
{
        char shortfall[SHORTFALL_MAX];

        *ret = (ManagerTraceStatus){.state = manager_trace_state(m)};
        if (!m->config.trace_enabled) {
                return;
        }
        if (!m->trace) {
                snprintf(ret->reason, sizeof(ret->reason), "%s",
                         m->trace_reason[0] ? m->trace_reason : "not started");
                return;
        }
        trace_recorder_stats(m->trace, &ret->stats);
        ret->instance = trace_recorder_dir(m->trace);
        ret->clock = trace_recorder_clock(m->trace);
        ret->events = trace_recorder_events(m->trace);
        ret->read_trigger = m->n_trace_watch_sources > 0 ? "watermark" : "timer";
        ret->memory_bytes = trace_recorder_memory_bytes(m->trace) +
                            (m->cause_store ? cause_store_memory_bytes(m->cause_store) : 0);
        ret->kernel_bytes = trace_recorder_kernel_bytes(m->trace);
        ret->missing = trace_recorder_missing(m->trace);
        ret->refused = trace_recorder_refused(m->trace);
        ret->unnamed = trace_recorder_unnamed(m->trace);
        /* While recording, the reason says what is not as it should be: a read that fails, and
         * the events left out at start with what they cost. */
        trace_shortfall(m->trace, shortfall, sizeof(shortfall));
        snprintf(ret->reason, sizeof(ret->reason), "%s%s%s",
                 m->trace_read_failing ? trace_recorder_reason(m->trace) : "",
                 m->trace_read_failing && shortfall[0] ? "; " : "", shortfall);
}

const CauseStore *manager_cause_store(const Manager *m)
{
        return m->cause_store;
}

/* The interruptions of @cpu since @since_ns that the history keeps, counted and summed into
 * @ret (its other sums left zero): what GetCauses has to show when the trace never started and
 * there is no store. */
static int count_history_events(Manager *m, int cpu, uint64_t since_ns, CauseWindow *ret)
{
        size_t max = m->config.history_events_per_cpu, n;
        _cleanup_free_ HistoryEvent *ev = calloc(max ? max : 1, sizeof(*ev));
        cpu_set_t set;

        if (!ev) {
                return -ENOMEM;
        }
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        n = history_events(m->history, &set, since_ns, 0, ev, max);
        *ret = (CauseWindow){.interruptions = n};
        for (size_t i = 0; i < n; i++) {
                ret->interruptions_ns += ev[i].duration_ns;
        }
        return 0;
}

int manager_trace_window(Manager *m, int cpu, HistorySpan span, uint64_t since_ns, CauseWindow *ret)
{
        const CauseWindow *s;

        if (!m->cause_store) {
                return count_history_events(m, cpu, since_ns, ret);
        }
        s = cause_store_window(m->cause_store, cpu, (unsigned)span, since_ns);
        if (!s) {
                return -EINVAL;
        }
        *ret = *s;
        return 0;
}

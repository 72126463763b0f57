/* The manager's side of the trace causes: the recorder's life, its reads (each interval, and
 * between harvests as its buffers need), the interruptions the probes report taken into the
 * history with their causes into the store, and what GetStatus, GetEvents and GetCauses show
 * of them. The matching itself is in causes.c, the recording in trace.c. */

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

/* Room for what the recorder leaves out: its missing, refused and unnamed lists, and words. */
#define SHORTFALL_MAX 1280

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
        uint64_t deadline = now_ns(CLOCK_MONOTONIC) + MANAGER_DRAIN_SLICE_NS;
        bool done = true;

        for (size_t i = 0; i < m->n_probes && done; i++) {
                done = drain_events_until(m, &m->probes[i], deadline);
        }
        if (!done) {
                (void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        } else {
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

static json_t *manager_trace_kind_totals(Manager *m);

json_t *manager_trace_status(Manager *m)
{
        char shortfall[SHORTFALL_MAX];
        TraceStats st;
        json_t *o;

        if (!m->config.trace_enabled) {
                return json_pack("{ss}", "state", "off");
        }
        if (!m->trace) {
                return json_pack("{ss ss}", "state", "unavailable", "reason",
                                 m->trace_reason[0] ? m->trace_reason : "not started");
        }
        trace_recorder_stats(m->trace, &st);
        o = json_pack("{ss ss ss ss sI sI ss sI sI sI sI}", "state", "recording", "instance",
                      trace_recorder_dir(m->trace), "clock", trace_recorder_clock(m->trace),
                      "events", trace_recorder_events(m->trace), "records", (json_int_t)st.records,
                      "reads", (json_int_t)st.reads, "read_trigger",
                      m->n_trace_watch_sources > 0 ? "watermark" : "timer", "losses",
                      (json_int_t)st.losses, "lost_events", (json_int_t)st.lost_events,
                      "memory_bytes",
                      (json_int_t)(trace_recorder_memory_bytes(m->trace) +
                                   (m->cause_store ? cause_store_memory_bytes(m->cause_store) : 0)),
                      "kernel_bytes", (json_int_t)trace_recorder_kernel_bytes(m->trace));
        if (o && trace_recorder_missing(m->trace)[0]) {
                json_object_set_new(o, "missing", json_string(trace_recorder_missing(m->trace)));
        }
        if (o && trace_recorder_refused(m->trace)[0]) {
                json_object_set_new(o, "refused", json_string(trace_recorder_refused(m->trace)));
        }
        if (o && trace_recorder_unnamed(m->trace)[0]) {
                json_object_set_new(o, "unnamed", json_string(trace_recorder_unnamed(m->trace)));
        }
        /* While recording, the reason says what is not as it should be: a read that fails, and
         * the events left out at start with what they cost. */
        trace_shortfall(m->trace, shortfall, sizeof(shortfall));
        if (o && (m->trace_read_failing || shortfall[0])) {
                char reason[TRACE_REASON_MAX + SHORTFALL_MAX];

                snprintf(reason, sizeof(reason), "%s%s%s",
                         m->trace_read_failing ? trace_recorder_reason(m->trace) : "",
                         m->trace_read_failing && shortfall[0] ? "; " : "", shortfall);
                json_object_set_new(o, "reason", json_string(reason));
        }
        if (o) {
                json_object_set_new(o, "cpus", manager_trace_kind_totals(m));
                json_object_set_new(o, "captures", manager_capture_status(m));
        }
        return o;
}

void manager_trace_event_to_text(Manager *m, const HistoryEvent *ev, uint32_t *pos, JsonText *t)
{
        const StoredCauses *c =
                m->cause_store ? cause_store_find_next(m->cause_store, ev->cpu, ev->start_ns, pos)
                               : NULL;

        if (!c || c->flags & CAUSES_UNTRACED) {
                return;
        }
        json_text_raw(t, ",\"causes\":[");
        for (size_t i = 0; i < c->n; i++) {
                uint8_t kind = 0;
                const char *name =
                        cause_store_name(m->cause_store, ev->cpu, c->causes[i].name, &kind);

                json_text_raw(t, i ? ",{\"kind\":" : "{\"kind\":");
                json_text_string(t, cause_kind_name(kind));
                json_text_raw(t, ",\"name\":");
                json_text_string(t, name);
                json_text_raw(t, ",\"ns\":");
                json_text_u64(t, c->causes[i].ns);
                json_text_raw(t, ",\"overhead_ns\":");
                json_text_u64(t, c->causes[i].overhead_ns);
                json_text_raw(t, "}");
        }
        json_text_raw(t, "],\"unexplained_ns\":");
        json_text_u64(t, c->unexplained_ns);
        json_text_raw(t, ",\"other_ns\":");
        json_text_u64(t, c->other_ns);
        json_text_raw(t, ",\"trace_lost\":");
        json_text_bool(t, c->flags & CAUSES_LOST);
        json_text_raw(t, ",\"overhead_ns\":");
        json_text_u64(t, c->overhead_ns);
        json_text_raw(t, ",\"no_record_ns\":");
        json_text_u64(t, c->no_record_ns);
}

/* The causes of a window shown, largest first; the time of any beyond goes to other_ns. */
#define WINDOW_CAUSES_MAX 256

typedef struct WindowCause {
        uint8_t kind;
        const char *name;
        CauseSum sum;
} WindowCause;

typedef struct WindowCauses {
        WindowCause *items;
        size_t n, alloc;
        bool failed;
} WindowCauses;

static void collect_cause(uint8_t kind, const char *name, const CauseSum *sum, void *userdata)
{
        WindowCauses *w = userdata;

        if (w->n == w->alloc) {
                size_t alloc = w->alloc ? 2 * w->alloc : 64;
                WindowCause *items = realloc(w->items, alloc * sizeof(*items));

                if (!items) {
                        w->failed = true;
                        return;
                }
                w->items = items;
                w->alloc = alloc;
        }
        w->items[w->n++] = (WindowCause){.kind = kind, .name = name, .sum = *sum};
}

static int cmp_window_cause(const void *a, const void *b)
{
        const WindowCause *x = a, *y = b;
        uint64_t tx = x->sum.ns + x->sum.overhead_ns, ty = y->sum.ns + y->sum.overhead_ns;

        if (tx != ty) {
                return tx < ty ? 1 : -1;
        }
        if (x->kind != y->kind) {
                return x->kind < y->kind ? -1 : 1;
        }
        return strcmp(x->name, y->name);
}

/* GetCauses' "causes" of window @window of @cpu: the largest WINDOW_CAUSES_MAX, the time of the
 * others added to *@other_ns. NULL when out of memory. */
static json_t *window_causes_to_json(Manager *m, int cpu, unsigned window, uint64_t *other_ns)
{
        WindowCauses w = {0};
        json_t *arr = json_array();

        cause_store_window_foreach(m->cause_store, cpu, window, collect_cause, &w);
        if (w.n > 1) {
                qsort(w.items, w.n, sizeof(*w.items), cmp_window_cause);
        }
        for (size_t i = 0; arr && !w.failed && i < w.n; i++) {
                const WindowCause *c = &w.items[i];
                char buf[CAUSE_NAME_MAX + 8];
                const char *counter;

                if (i >= WINDOW_CAUSES_MAX) {
                        *other_ns += c->sum.ns + c->sum.overhead_ns;
                        continue;
                }
                counter = cause_counter(c->kind, c->name, buf, sizeof(buf));
                if (json_array_append_new(
                            arr, json_pack("{ss ss sI sI sI so}", "kind", cause_kind_name(c->kind),
                                           "name", c->name, "ns", (json_int_t)c->sum.ns,
                                           "overhead_ns", (json_int_t)c->sum.overhead_ns, "count",
                                           (json_int_t)c->sum.count, "counter",
                                           counter ? json_string(counter) : json_null())) < 0) {
                        w.failed = true;
                }
        }
        free(w.items);
        if (w.failed) {
                json_decref(arr);
                return NULL;
        }
        return arr;
}

/* GetCauses' "woken_by" of @s: {"irq:RES": {"ns", "count"}, ...}. */
static json_t *woken_to_json(const CauseWindow *s)
{
        json_t *o = json_object();

        for (unsigned code = 1; o && code < CAUSE_COUNTER_CODES; code++) {
                const char *counter = cause_counter_of_code((uint8_t)code);

                if (counter && s->woken_count[code] > 0 &&
                    json_object_set_new(o, counter,
                                        json_pack("{sI sI}", "ns", (json_int_t)s->woken_ns[code],
                                                  "count", (json_int_t)s->woken_count[code])) < 0) {
                        json_decref(o);
                        o = NULL;
                }
        }
        return o;
}

static json_t *json_or_null(bool have, uint64_t v)
{
        return have ? json_integer((json_int_t)v) : json_null();
}

/* The interruptions of @cpu since @since_ns that the history keeps, counted and summed into
 * @ret (its other sums left zero): what GetCauses has to show when the trace never started and
 * there is no store. */
static int count_history_events(Manager *m, int cpu, uint64_t since_ns, CauseWindow *ret)
{
        size_t max = m->config.history_events_per_cpu, n;
        HistoryEvent *ev = calloc(max ? max : 1, sizeof(*ev));
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
        free(ev);
        return 0;
}

json_t *manager_trace_window_causes(Manager *m, int cpu, const char *window, uint64_t since_ns)
{
        HostSpan h = {0};
        CauseWindow none;
        const CauseWindow *s = NULL;
        HistorySpan span;
        uint64_t other_ns = 0;
        bool have_host;
        json_t *causes, *o;

        if (history_span_from_name(window, &span) < 0) {
                return NULL;
        }
        if (m->cause_store) {
                s = cause_store_window(m->cause_store, cpu, (unsigned)span, since_ns);
        } else if (count_history_events(m, cpu, since_ns, &none) == 0) {
                s = &none;
        }
        causes = !s               ? NULL
                 : m->cause_store ? window_causes_to_json(m, cpu, (unsigned)span, &other_ns)
                                  : json_array();
        if (!causes) {
                return NULL;
        }
        other_ns += s->other_ns;
        have_host = m->cause_store && cause_store_host(m->cause_store, cpu, since_ns, &h) == 0;
        o = json_pack(
                "{si ss sI sI sI sI sI sI so sI sI so* sI sI sI sI sI sI so so so so}", "cpu", cpu,
                "window", window, "since_ns", (json_int_t)since_ns, "interruptions",
                (json_int_t)s->interruptions, "interruptions_ns", (json_int_t)s->interruptions_ns,
                "explained", (json_int_t)s->explained, "explained_ns", (json_int_t)s->explained_ns,
                "trace_lost", (json_int_t)s->trace_lost, "causes", causes, "other_ns",
                (json_int_t)other_ns, "unexplained_ns", (json_int_t)s->unexplained_ns, "woken_by",
                woken_to_json(s), "traced", (json_int_t)s->traced, "traced_ns",
                (json_int_t)s->traced_ns, "overhead_ns", (json_int_t)s->overhead_ns, "no_record",
                (json_int_t)s->no_record, "no_record_ns", (json_int_t)s->no_record_ns,
                "trace_lost_ns", (json_int_t)s->trace_lost_ns, "steal_ns",
                json_or_null(have_host && h.have_steal, h.steal_ns), "smi",
                json_or_null(have_host && h.have_smi, h.smi), "host_from_ns",
                json_or_null(have_host, h.from_ns), "host_to_ns", json_or_null(have_host, h.to_ns));
        return o;
}

/* GetStatus' "trace"."cpus": per probed CPU, the time of all interruptions explained since
 * start or Reset by cause kind, and unexplained ({"cpu", "lost_ns": {"irq": ...}}); counters
 * for Prometheus. NULL when out of memory. */
static json_t *manager_trace_kind_totals(Manager *m)
{
        json_t *arr = json_array();

        for (size_t i = 0; arr && m->cause_store && i < m->n_probes; i++) {
                uint64_t ns[CAUSE_TOTALS];
                json_t *kinds = json_object();

                cause_store_totals(m->cause_store, m->probes[i].cpu, ns);
                for (unsigned k = 0; kinds && k < CAUSE_TOTALS; k++) {
                        json_object_set_new(kinds, cause_total_name(k),
                                            json_integer((json_int_t)ns[k]));
                }
                if (!kinds ||
                    json_array_append_new(arr, json_pack("{si so}", "cpu", m->probes[i].cpu,
                                                         "lost_ns", kinds)) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}

/* The manager's side of the trace causes: the recorder's life, its read each interval, the
 * causes of each interruption into the store, and what GetStatus and GetEvents show of them.
 * The matching itself is in causes.c, the recording in trace.c. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpulist.h"
#include "log.h"
#include "manager.h"

void manager_trace_start(Manager *m)
{
        int cpus[CPU_SETSIZE];
        char list[256];
        TraceOptions o;
        int r;

        m->trace_reason[0] = 0;
        if (!m->config.trace_enabled || m->trace || m->n_probes == 0) {
                return;
        }
        if (!m->cause_store) {
                r = cause_store_new(m->config.history_events_per_cpu, &m->cause_store);
                if (r < 0) {
                        snprintf(m->trace_reason, sizeof(m->trace_reason), "%s", strerror(-r));
                        log_warning("trace causes are off: %s", m->trace_reason);
                        return;
                }
        }
        /* Opened once, while the daemon may still see kernel addresses (CAP_SYSLOG), and
         * kept for recorders started after a reload. */
        if (!m->ksyms && ksyms_new(NULL, &m->ksyms) < 0) {
                m->ksyms = NULL;
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
        r = trace_recorder_new(&o, &m->trace, m->trace_reason, sizeof(m->trace_reason));
        if (r < 0) {
                m->trace = NULL;
                log_warning("trace causes are off: %s", m->trace_reason);
                return;
        }
        m->trace_read_failing = false;
        log_info("recording trace events of CPU %s in %s (clock %s%s%s)",
                 cpulist_format(list, sizeof(list), &m->cpus), trace_recorder_dir(m->trace),
                 trace_recorder_clock(m->trace),
                 trace_recorder_missing(m->trace)[0] ? "; this kernel lacks " : "",
                 trace_recorder_missing(m->trace));
}

void manager_trace_stop(Manager *m)
{
        m->trace = trace_recorder_free(m->trace);
}

void manager_trace_read(Manager *m)
{
        int r;

        if (!m->trace) {
                return;
        }
        r = trace_recorder_read(m->trace);
        if (r < 0 && !m->trace_read_failing) {
                log_warning("%s; trace causes are missing until it recovers",
                            trace_recorder_reason(m->trace));
                m->trace_read_failing = true;
        } else if (r >= 0 && m->trace_read_failing) {
                log_notice("the trace can be read again");
                m->trace_read_failing = false;
        }
}

void manager_trace_explain(Manager *m, const ProbeCtl *p, uint64_t start_ticks,
                           uint64_t duration_ticks, uint64_t start_ns)
{
        CauseList l;

        if (!m->trace || !m->cause_store ||
            trace_recorder_explain(m->trace, p->cpu, probe_tid(p->probe), start_ticks,
                                   duration_ticks, &l) < 0) {
                return;
        }
        (void)cause_store_add(m->cause_store, p->cpu, start_ns, &l, &m->counter.conv);
}

void manager_trace_reset(Manager *m, int cpu)
{
        if (m->cause_store) {
                cause_store_reset(m->cause_store, cpu);
        }
}

json_t *manager_trace_status(Manager *m)
{
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
        o = json_pack("{ss ss ss ss sI sI sI sI sI}", "state", "recording", "instance",
                      trace_recorder_dir(m->trace), "clock", trace_recorder_clock(m->trace),
                      "events", trace_recorder_events(m->trace), "records", (json_int_t)st.records,
                      "losses", (json_int_t)st.losses, "lost_events", (json_int_t)st.lost_events,
                      "memory_bytes",
                      (json_int_t)(trace_recorder_memory_bytes(m->trace) +
                                   (m->cause_store ? cause_store_memory_bytes(m->cause_store) : 0)),
                      "kernel_bytes", (json_int_t)trace_recorder_kernel_bytes(m->trace));
        if (o && trace_recorder_missing(m->trace)[0]) {
                json_object_set_new(o, "missing", json_string(trace_recorder_missing(m->trace)));
        }
        if (o && m->trace_read_failing) {
                json_object_set_new(o, "reason", json_string(trace_recorder_reason(m->trace)));
        }
        return o;
}

int manager_trace_event_to_json(Manager *m, const HistoryEvent *ev, json_t *o)
{
        const StoredCauses *c =
                m->cause_store ? cause_store_find(m->cause_store, ev->cpu, ev->start_ns) : NULL;
        json_t *arr;

        if (!c) {
                return 0;
        }
        arr = json_array();
        if (!arr) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n; i++) {
                json_array_append_new(arr, json_pack("{ss ss sI}", "kind",
                                                     cause_kind_name(c->causes[i].kind), "name",
                                                     c->causes[i].name, "ns",
                                                     (json_int_t)c->causes[i].ns));
        }
        if (json_object_set_new(o, "causes", arr) < 0 ||
            json_object_set_new(o, "unexplained_ns", json_integer(c->unexplained_ns)) < 0 ||
            json_object_set_new(o, "other_ns", json_integer(c->other_ns)) < 0 ||
            json_object_set_new(o, "trace_lost", json_boolean(c->flags & CAUSES_LOST)) < 0) {
                return -ENOMEM;
        }
        return 0;
}

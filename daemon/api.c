/* The io.jitterd Varlink interface: one handler per method, dispatched from a table. */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "api-internal.h"

#include "admission.h"
#include "audit.h"
#include "host-audit.h"
#include "interface.h"
#include "cpulist.h"
#include "isolation.h"
#include "duration.h"
#include "history.h"
#include "json-read.h"
#include "json-text.h"
#include "log.h"
#include "manager.h"
#include "reply-cache.h"
#include "self-cost.h"
#include "summary-json.h"
#include "summary.h"
#include "util.h"
#include "api-window.h"

#define EVENTS_LIMIT_DEFAULT 1000
#define EVENTS_LIMIT_MAX 10000
/* What GetEvents reserves per event written: one with two causes takes about 350 bytes. */
#define EVENT_TEXT_BYTES 384

/* The isolation GetStatus shows is read anew about once per interval, at least this far apart;
 * at the harvest, while GetStatus was called within ISOLATION_WATCH_NS (or two such ages). */
#define ISOLATION_MAX_AGE_MIN_NS NSEC_PER_SEC
#define ISOLATION_WATCH_NS 60000000000ULL

/* At most this many intervals of one probe wait for the Monitor clients between two harvests
 * (normally one; two after a probe that handed over late; older ones are only in the history). */
#define MONITOR_PENDING 4

/* One harvested interval of one probe, as Monitor tells it. */
typedef struct MonitorInterval {
        uint64_t start_ns;
        uint64_t start_real_ns;
        uint64_t duration_ns;
        json_t *cpu; /* the IntervalCpu object */
} MonitorInterval;

/* The intervals of one probed CPU harvested since the Monitor clients were last told. */
typedef struct MonitorQueue {
        int cpu;
        size_t n;
        MonitorInterval pending[MONITOR_PENDING];
} MonitorQueue;

typedef struct MonitorClient {
        VarlinkCallCtx *call;
        cpu_set_t cpus;
        struct MonitorClient *next;
} MonitorClient;

struct Api {
        Manager *manager;

        /* Monitor calls waiting for the next interval. */
        MonitorClient *monitors;
        MonitorQueue *queues;
        size_t n_queues;

        /* How the CPUs are isolated, as GetStatus shows it: read at the harvest, about once
         * per interval (at least 0.9 s apart), while GetStatus is called (a read walks every
         * cpuset directory: not in a call, whose answer would wait for it); by GetStatus
         * itself only when that reading is missing or two intervals old. */
        IsolationCache isolation;
        uint64_t status_asked_ns; /* the last GetStatus, CLOCK_MONOTONIC; 0: never */

        /* GetStats' entries of the standard windows, written at the harvest for those asked
         * for lately, so that a call copies them; and the window they are written from. */
        ReplyCache *stats_cache;
        HistoryWindow *scratch;
};

int api_window(const char *window, uint64_t *ret_from_ns, uint64_t *ret_to_ns, bool *ret_all)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC), span_ns;
        HistorySpan span;

        *ret_to_ns = now;
        *ret_all = false;
        if (history_span_from_name(window, &span) < 0) {
                return -EINVAL;
        }
        if (span == HISTORY_SPAN_ALL) {
                *ret_from_ns = 0;
                *ret_to_ns = UINT64_MAX;
                *ret_all = true;
                return 0;
        }
        span_ns = history_span_ns(span);
        *ret_from_ns = now > span_ns ? now - span_ns : 0;
        return 0;
}

/* Whether a running sum that ends at @to_ns is current: its CPU's newest interval ended within
 * the last two intervals. */
static bool window_is_current(const Manager *m, uint64_t to_ns)
{
        return to_ns + 2 * manager_config(m)->history_interval_ns >= now_ns(CLOCK_MONOTONIC);
}

/* Fills @w with the window @window (a name api_window() knows) of @cpu: the running sum the
 * history keeps current at each harvest for that standard window (a copy, whatever the
 * window's length), while the CPU's newest interval ended within the last two intervals. A CPU
 * whose probe has stopped recording has no current sum (its windows would end in the past), and
 * gets the intervals within the window up to now, merged; so does one that has none yet. A CPU
 * the history has never seen gets an empty window. GetWindow and GetTimeline, which list the
 * intervals, take those within the span up to now: their first may differ from these windows'
 * by an interval (a coarse period for 1h and 24h). */
static void read_window(const Manager *m, int cpu, const char *window, HistoryWindow *w)
{
        const History *h = manager_history(m);
        uint64_t from, to;
        HistorySpan span;
        bool all;

        if (history_span_from_name(window, &span) == 0 && history_window(h, cpu, span, w) == 0 &&
            (span == HISTORY_SPAN_ALL || window_is_current(m, w->to_ns))) {
                return;
        }
        if (api_window(window, &from, &to, &all) < 0 ||
            history_query(h, cpu, from, to, all, w) < 0) {
                memset(w, 0, sizeof(*w));
                slot_clear(&w->slot);
                w->hist_sub_bits = HIST_SUB_BITS;
        }
}

static bool find_probe(const Manager *m, json_int_t cpu)
{
        for (size_t i = 0; i < manager_n_probes(m); i++) {
                if (manager_probe_cpu(m, i) == cpu) {
                        return true;
                }
        }
        return false;
}

static int error_no_such_cpu(VarlinkCallCtx *call, json_int_t cpu)
{
        return varlink_call_error(call, "io.jitterd.NoSuchCpu", json_pack("{sI}", "cpu", cpu));
}

/* Reads the optional "cpus" array into @ret (default: every probed CPU). Answers the call and
 * returns -EINVAL for a CPU that is not probed or a malformed entry. */
static int get_cpus(const Manager *m, VarlinkCallCtx *call, json_t *params, cpu_set_t *ret)
{
        json_t *arr = json_object_get(params, "cpus"), *v;
        size_t i;

        if (!arr || json_is_null(arr)) {
                *ret = *manager_cpus(m);
                return 0;
        }
        CPU_ZERO(ret);
        json_array_foreach(arr, i, v)
        {
                json_int_t cpu;

                if (!json_is_integer(v)) {
                        varlink_call_error_invalid_parameter(call, "cpus");
                        return -EINVAL;
                }
                cpu = json_integer_value(v);
                if (!find_probe(m, cpu)) {
                        error_no_such_cpu(call, cpu);
                        return -EINVAL;
                }
                CPU_SET((int)cpu, ret);
        }
        return 0;
}

/* Reads the optional "window" (default @def). Answers the call and returns -EINVAL when bad. */
static int get_window(const Manager *m, VarlinkCallCtx *call, json_t *params, const char *def,
                      const char **ret_name, uint64_t *from, uint64_t *to, bool *all)
{
        const char *w = def;

        if (json_read_string_default(params, "window", def, &w) < 0) {
                varlink_call_error_invalid_parameter(call, "window");
                return -EINVAL;
        }
        if (api_window(w, from, to, all) < 0) {
                varlink_call_error(call, "io.jitterd.InvalidWindow",
                                   json_pack("{ss}", "window", w));
                return -EINVAL;
        }
        *ret_name = w;
        return 0;
}

/* Adds the attribution counters of @d to @o as GetStats has them: "interrupts", "softirqs"
 * and "ctxsw" maps keyed by the source's name without its prefix, and "smi". */
static int api_attrib_to_json(const Manager *m, const AttribDelta *d, json_t *o)
{
        static const struct {
                const char *prefix;
                const char *key;
        } maps[] = {
                {"irq:", "interrupts"},
                {"softirq:", "softirqs"},
                {"ctxsw:", "ctxsw"},
        };
        json_t *obj[3];

        for (size_t k = 0; k < 3; k++) {
                obj[k] = json_object();
                if (json_object_set_new(o, maps[k].key, obj[k]) < 0) {
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < d->n; i++) {
                const char *name = attrib_table_name(manager_attrib(m), d->items[i].id);
                json_t *count = json_integer((json_int_t)d->items[i].count);
                json_t *into = NULL;
                const char *key = NULL;

                for (size_t k = 0; name && k < 3; k++) {
                        if (strncmp(name, maps[k].prefix, strlen(maps[k].prefix)) == 0) {
                                into = obj[k];
                                key = name + strlen(maps[k].prefix);
                        }
                }
                if (name && strcmp(name, "smi") == 0) {
                        into = o;
                        key = name;
                }
                if (!into) {
                        json_decref(count);
                } else if (json_object_set_new(into, key, count) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* One CPU's GetStats entry: the window's summary and its counters, all reads. */
static json_t *api_cpu_stats(const Manager *m, int cpu, const char *window, const HistoryWindow *w)
{
        SlotSummary s;
        json_t *o;

        slot_summarize(&w->slot, manager_tickconv(m), w->duration_ns, &s);
        /* A stall needs no extra count: the interval that ends it holds its gap, which is an
         * interruption like any other. */
        o = slot_summary_to_json(&s);
        json_object_set_new(o, "cpu", json_integer(cpu));
        json_object_set_new(o, "window", json_string(window));
        json_object_set_new(o, "from_ns", json_integer((json_int_t)w->from_ns));
        json_object_set_new(o, "to_ns", json_integer((json_int_t)w->to_ns));
        json_object_set_new(o, "stalls", json_integer((json_int_t)w->stalls));
        (void)api_attrib_to_json(m, &w->attrib, o);
        return o;
}

static json_t *stats_array(const Manager *m, const cpu_set_t *cpus, const char *window)
{
        uint64_t from, to;
        bool all;
        _cleanup_free_ HistoryWindow *w = NULL;
        json_t *arr;

        if (api_window(window, &from, &to, &all) < 0) {
                return NULL;
        }
        w = malloc(sizeof(*w));
        if (!w) {
                return NULL;
        }
        arr = json_array();
        if (!arr) {
                return NULL;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, cpus)) {
                        continue;
                }
                read_window(m, cpu, window, w);
                json_array_append_new(arr, api_cpu_stats(m, cpu, window, w));
        }
        return arr;
}

/* The parameters of GetCauses: "cpus" (default every probed CPU) and "window"
 * (default "1m"), its name in @ret_window and its start in @ret_from. Returns 0, or -1 after
 * replying with the error. */
static int get_cpus_window(const Manager *m, VarlinkCallCtx *call, json_t *params,
                           cpu_set_t *ret_cpus, const char **ret_window, uint64_t *ret_from)
{
        static const VarlinkField fields[] = {
                {"cpus", JSON_ARRAY, false},
                {"window", JSON_STRING, false},
        };
        uint64_t to;
        bool all;

        if (varlink_call_check_params(call, params, fields, 2) < 0 ||
            get_cpus(m, call, params, ret_cpus) < 0 ||
            get_window(m, call, params, "1m", ret_window, ret_from, &to, &all) < 0) {
                return -1;
        }
        return 0;
}

/* Writes @cpu's GetStats entry over @window into @t. */
static void write_stats_entry(Api *a, int cpu, const char *window, JsonText *t)
{
        json_t *o;

        read_window(a->manager, cpu, window, a->scratch);
        o = api_cpu_stats(a->manager, cpu, window, a->scratch);
        if (!o) {
                t->failed = true;
                return;
        }
        json_text_value(t, o);
        json_decref(o);
}

/* Writes the cached entry of @cpu over the standard window @span anew. */
static void cache_stats_entry(Api *a, int cpu, HistorySpan span)
{
        JsonText t = {0};
        size_t len = 0;
        char *text;

        write_stats_entry(a, cpu, history_span_name(span), &t);
        text = json_text_take(&t, &len);
        reply_cache_put(a->stats_cache, cpu, span, text, len);
}

static void refresh_stats_entry(int cpu, HistorySpan span, void *userdata)
{
        Api *a = userdata;

        if (find_probe(a->manager, cpu)) {
                cache_stats_entry(a, cpu, span);
        }
}

/* Appends @cpu's GetStats entry over @window to @t: for a standard window, the text the
 * harvest wrote (written now when it did not), else the entry written for this call. */
static void append_stats_entry(Api *a, int cpu, const char *window, uint64_t now, JsonText *t)
{
        HistorySpan span;
        const char *text = NULL;
        size_t len = 0;

        if (history_span_from_name(window, &span) == 0) {
                text = reply_cache_get(a->stats_cache, cpu, span, now, &len);
                if (!text) {
                        cache_stats_entry(a, cpu, span);
                        text = reply_cache_get(a->stats_cache, cpu, span, now, &len);
                }
        }
        if (text) {
                json_text_rawn(t, text, len);
        } else {
                write_stats_entry(a, cpu, window, t);
        }
}

/* GetStats used to carry "causes", "background" and "periods", searched for in the daemon.
 * They are worked out by the client now (from GetWindow), and a client that still reads them
 * must not take their absence for "none": a call that does not say it expects none
 * ("without_analyses": true) is answered io.jitterd.AnalysesMoved. */
static int method_get_stats(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpus", JSON_ARRAY, false},
                {"window", JSON_STRING, false},
                {"without_analyses", JSON_TRUE, false},
        };
        Api *a = userdata;
        Manager *m = a->manager;
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        const char *window, *sep = "";
        uint64_t from, to;
        JsonText t = {0};
        cpu_set_t cpus;
        size_t len = 0;
        bool all;
        char *text;

        if (varlink_call_check_params(call, params, fields, 3) < 0 ||
            get_cpus(m, call, params, &cpus) < 0 ||
            get_window(m, call, params, "1m", &window, &from, &to, &all) < 0) {
                return 0;
        }
        if (!json_is_true(json_object_get(params, "without_analyses"))) {
                return varlink_call_error(
                        call, "io.jitterd.AnalysesMoved",
                        json_pack("{ss}", "reason",
                                  "GetStats no longer carries causes, background or periods: "
                                  "the client works them out from GetWindow (a jitterctl as "
                                  "new as jitterd does); pass without_analyses: true to get "
                                  "GetStats without them"));
        }
        json_text_raw(&t, VARLINK_REPLY_TEXT_HEAD "{\"cpus\":[");
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (CPU_ISSET(cpu, &cpus)) {
                        json_text_raw(&t, sep);
                        append_stats_entry(a, cpu, window, now, &t);
                        sep = ",";
                }
        }
        json_text_raw(&t, "]}" VARLINK_REPLY_TEXT_TAIL);
        text = json_text_take(&t, &len);
        return varlink_call_reply_text(call, text, len);
}

/* The raw data of one CPU's window, for the client's own causes and periods (api-window.h). */
static int method_get_window(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpu", JSON_INTEGER, true},
                {"window", JSON_STRING, false},
        };
        Api *a = userdata;
        Manager *m = a->manager;
        const char *window;
        uint64_t from, to;
        bool all;
        json_int_t cpu;
        json_t *o;

        if (varlink_call_check_params(call, params, fields, 2) < 0) {
                return 0;
        }
        cpu = json_integer_value(json_object_get(params, "cpu"));
        if (!find_probe(m, cpu)) {
                return error_no_such_cpu(call, cpu);
        }
        if (get_window(m, call, params, "1m", &window, &from, &to, &all) < 0) {
                return 0;
        }
        o = api_window_to_json(m, (int)cpu, window, from, to, all);
        if (!o) {
                return -ENOMEM;
        }
        return varlink_call_reply(call, o);
}

json_t *api_histogram(const Manager *m, int cpu, const char *window, const char *kind)
{
        uint64_t from, to;
        bool all;
        _cleanup_free_ HistoryWindow *w = NULL;
        json_t *buckets, *reply;
        double min_ns = 0, max_ns = 0;

        if (api_window(window, &from, &to, &all) < 0) {
                return NULL;
        }
        w = malloc(sizeof(*w));
        if (!w) {
                return NULL;
        }
        read_window(m, cpu, window, w);
        if (strcmp(kind, "gap") == 0) {
                buckets =
                        histogram_to_json(&w->slot.gap_hist, manager_tickconv(m), w->hist_sub_bits);
                if (w->slot.gap.count) {
                        min_ns = (double)tickconv_to_ns(manager_tickconv(m), w->slot.gap.min);
                        max_ns = (double)tickconv_to_ns(manager_tickconv(m), w->slot.gap.max);
                }
        } else {
                buckets = signed_histogram_to_json(&w->slot.dd_hist, manager_tickconv(m),
                                                   w->hist_sub_bits);
                if (w->slot.dd.count) {
                        min_ns = tickconv_signed_to_ns(manager_tickconv(m), w->slot.dd.min);
                        max_ns = tickconv_signed_to_ns(manager_tickconv(m), w->slot.dd.max);
                }
        }
        reply = json_pack(
                "{sI ss ss sI sf sf so}", "cpu", cpu, "window", window, "kind", kind, "total",
                (json_int_t)(strcmp(kind, "gap") == 0 ? w->slot.gap.count : w->slot.dd.count),
                "min_ns", min_ns, "max_ns", max_ns, "buckets", buckets);
        return reply;
}

static int method_get_histogram(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpu", JSON_INTEGER, true},
                {"window", JSON_STRING, false},
                {"kind", JSON_STRING, false},
        };
        Api *a = userdata;
        Manager *m = a->manager;
        const char *window, *kind = "gap";
        uint64_t from, to;
        bool all;
        json_int_t cpu;
        json_t *reply;

        if (varlink_call_check_params(call, params, fields, 3) < 0) {
                return 0;
        }
        cpu = json_integer_value(json_object_get(params, "cpu"));
        if (!find_probe(m, cpu)) {
                return error_no_such_cpu(call, cpu);
        }
        if (json_read_string_default(params, "kind", "gap", &kind) < 0 ||
            (strcmp(kind, "gap") != 0 && strcmp(kind, "diffdiff") != 0)) {
                return varlink_call_error_invalid_parameter(call, "kind");
        }
        if (get_window(m, call, params, "1m", &window, &from, &to, &all) < 0) {
                return 0;
        }
        (void)from;
        (void)to;
        (void)all;
        reply = api_histogram(m, (int)cpu, window, kind);
        if (!reply) {
                return -ENOMEM;
        }
        return varlink_call_reply(call, reply);
}

/* Parses an optional duration parameter; answers the call on error. */
static int get_duration(VarlinkCallCtx *call, json_t *params, const char *name, uint64_t def,
                        uint64_t *ret)
{
        const char *text;

        if (json_read_string_default(params, name, NULL, &text) < 0) {
                varlink_call_error_invalid_parameter(call, name);
                return -EINVAL;
        }
        if (!text) {
                *ret = def;
                return 0;
        }
        if (duration_parse(text, NSEC_PER_SEC, ret) < 0) {
                varlink_call_error(call, "io.jitterd.InvalidDuration",
                                   json_pack("{ss ss}", "parameter", name, "value", text));
                return -EINVAL;
        }
        return 0;
}

/* Adds the causes of @ev to its GetEvents object being written in @t (",\"causes\":[...]",
 * "unexplained_ns", "other_ns", "trace_lost", "overhead_ns", "no_record_ns") when they are
 * known; nothing otherwise. @pos (UINT32_MAX at first) is where the previous event of the same
 * CPU was looked up: events of a CPU in time order are found by walking on from there. */
static void event_causes_to_text(const CauseStore *store, const HistoryEvent *ev, uint32_t *pos,
                                 JsonText *t)
{
        const StoredCauses *c =
                store ? cause_store_find_next(store, ev->cpu, ev->start_ns, pos) : NULL;

        if (!c || c->flags & CAUSES_UNTRACED) {
                return;
        }
        json_text_raw(t, ",\"causes\":[");
        for (size_t i = 0; i < c->n; i++) {
                uint8_t kind = 0;
                const char *name = cause_store_name(store, ev->cpu, c->causes[i].name, &kind);

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

static int method_get_events(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpus", JSON_ARRAY, false},
                {"since", JSON_STRING, false},
                {"min_duration", JSON_STRING, false},
                {"limit", JSON_INTEGER, false},
        };
        Api *a = userdata;
        Manager *m = a->manager;
        const CauseStore *store = manager_cause_store(m);
        uint64_t since = 0, min = 0, now = now_ns(CLOCK_MONOTONIC);
        JsonText t = {0};
        json_int_t limit;
        cpu_set_t cpus;
        _cleanup_free_ HistoryEvent *ev = NULL;
        _cleanup_free_ uint32_t *pos = NULL;
        size_t n, len;
        char *text;

        if (varlink_call_check_params(call, params, fields, 4) < 0 ||
            get_cpus(m, call, params, &cpus) < 0 ||
            get_duration(call, params, "since", 0, &since) < 0 ||
            get_duration(call, params, "min_duration", 0, &min) < 0) {
                return 0;
        }
        if (json_read_int_default(params, "limit", 1, EVENTS_LIMIT_MAX, EVENTS_LIMIT_DEFAULT,
                                  &limit) < 0) {
                return varlink_call_error_invalid_parameter(call, "limit");
        }
        ev = calloc((size_t)limit, sizeof(*ev));
        pos = malloc(CPU_SETSIZE * sizeof(*pos));
        if (!ev || !pos) {
                return -ENOMEM;
        }
        memset(pos, 0xff, CPU_SETSIZE * sizeof(*pos)); /* UINT32_MAX: no lookup yet */
        n = history_events(manager_history(m), &cpus, since && since < now ? now - since : 0, min,
                           ev, (size_t)limit);
        /* Written as text, in the reply's envelope: built as a tree of jansson objects, a
         * thousand events cost two to three times the CPU (1.6 ms against 0.6 ms, the causes
         * included). */
        (void)json_text_reserve(&t, 64 + n * EVENT_TEXT_BYTES);
        json_text_raw(&t, VARLINK_REPLY_TEXT_HEAD "{\"events\":[");
        for (size_t i = 0; i < n; i++) {
                json_text_raw(&t, i ? ",{\"cpu\":" : "{\"cpu\":");
                json_text_i64(&t, ev[i].cpu);
                json_text_raw(&t, ",\"start_ns\":");
                json_text_u64(&t, ev[i].start_ns);
                json_text_raw(&t, ",\"realtime\":");
                json_text_realtime(&t, ev[i].start_real_ns);
                json_text_raw(&t, ",\"duration_ns\":");
                json_text_u64(&t, ev[i].duration_ns);
                event_causes_to_text(store, &ev[i], &pos[ev[i].cpu], &t);
                json_text_raw(&t, "}");
        }
        json_text_raw(&t, "]}" VARLINK_REPLY_TEXT_TAIL);
        text = json_text_take(&t, &len);
        return varlink_call_reply_text(call, text, len);
}

static int method_get_captures(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpus", JSON_ARRAY, false},
                {"since", JSON_STRING, false},
                {"limit", JSON_INTEGER, false},
        };
        Api *a = userdata;
        Manager *m = a->manager;
        uint64_t since = 0, now = now_ns(CLOCK_REALTIME);
        json_int_t limit;
        cpu_set_t cpus;
        json_t *reply, *captures;
        bool truncated;

        if (varlink_call_check_params(call, params, fields, 3) < 0 ||
            get_cpus(m, call, params, &cpus) < 0 ||
            get_duration(call, params, "since", 0, &since) < 0) {
                return 0;
        }
        if (json_read_int_default(params, "limit", 1, 100, 10, &limit) < 0) {
                return varlink_call_error_invalid_parameter(call, "limit");
        }
        captures = manager_captures(m, &cpus, since && since < now ? now - since : 0, (size_t)limit,
                                    &truncated);
        if (!captures) {
                return -ENOMEM;
        }
        reply = json_pack("{so sb}", "captures", captures, "truncated", truncated);
        return reply ? varlink_call_reply(call, reply) : -ENOMEM;
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

/* GetCauses' "causes" of window @span of @cpu in @store: the largest WINDOW_CAUSES_MAX, the
 * time of the others added to *@other_ns. NULL when out of memory. */
static json_t *window_causes_to_json(const CauseStore *store, int cpu, HistorySpan span,
                                     uint64_t *other_ns)
{
        WindowCauses w = {0};
        json_t *arr = json_array();

        cause_store_window_foreach(store, cpu, (unsigned)span, collect_cause, &w);
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

/* GetCauses' entry for @cpu: the stored causes of its interruptions that began at or after
 * @since_ns, summed by (kind, name), longest first, with the interruptions' count and time,
 * how many of them have causes, and their other and unexplained time. NULL when out of
 * memory. */
static json_t *window_causes(Manager *m, int cpu, const char *window, uint64_t since_ns)
{
        const CauseStore *store = manager_cause_store(m);
        HostSpan h = {0};
        CauseWindow s;
        HistorySpan span;
        uint64_t other_ns = 0;
        bool have_host;
        json_t *causes;

        if (history_span_from_name(window, &span) < 0 ||
            manager_trace_window(m, cpu, span, since_ns, &s) < 0) {
                return NULL;
        }
        causes = store ? window_causes_to_json(store, cpu, span, &other_ns) : json_array();
        if (!causes) {
                return NULL;
        }
        other_ns += s.other_ns;
        have_host = store && cause_store_host(store, cpu, since_ns, &h) == 0;
        return json_pack(
                "{si ss sI sI sI sI sI sI so sI sI so* sI sI sI sI sI sI so so so so}", "cpu", cpu,
                "window", window, "since_ns", (json_int_t)since_ns, "interruptions",
                (json_int_t)s.interruptions, "interruptions_ns", (json_int_t)s.interruptions_ns,
                "explained", (json_int_t)s.explained, "explained_ns", (json_int_t)s.explained_ns,
                "trace_lost", (json_int_t)s.trace_lost, "causes", causes, "other_ns",
                (json_int_t)other_ns, "unexplained_ns", (json_int_t)s.unexplained_ns, "woken_by",
                woken_to_json(&s), "traced", (json_int_t)s.traced, "traced_ns",
                (json_int_t)s.traced_ns, "overhead_ns", (json_int_t)s.overhead_ns, "no_record",
                (json_int_t)s.no_record, "no_record_ns", (json_int_t)s.no_record_ns,
                "trace_lost_ns", (json_int_t)s.trace_lost_ns, "steal_ns",
                json_or_null(have_host && h.have_steal, h.steal_ns), "smi",
                json_or_null(have_host && h.have_smi, h.smi), "host_from_ns",
                json_or_null(have_host, h.from_ns), "host_to_ns", json_or_null(have_host, h.to_ns));
}

static int method_get_causes(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        Api *a = userdata;
        Manager *m = a->manager;
        const char *window;
        uint64_t from;
        cpu_set_t cpus;
        json_t *arr;

        if (get_cpus_window(m, call, params, &cpus, &window, &from) < 0) {
                return 0;
        }
        arr = json_array();
        for (int cpu = 0; arr && cpu < CPU_SETSIZE; cpu++) {
                if (CPU_ISSET(cpu, &cpus) &&
                    json_array_append_new(arr, window_causes(m, cpu, window, from)) < 0) {
                        json_decref(arr);
                        arr = NULL;
                }
        }
        if (!arr) {
                return -ENOMEM;
        }
        return varlink_call_reply(
                call, json_pack("{ss so}", "trace", manager_trace_state(m), "cpus", arr));
}

typedef struct TimelineCtx {
        Manager *m;
        json_t *points;
} TimelineCtx;

static int add_point(const HistoryPoint *pt, void *userdata)
{
        TimelineCtx *c = userdata;
        const TickConv *conv = manager_tickconv(c->m);

        return json_array_append_new(
                c->points, json_pack("{sI sI sI sI sI sI sb}", "start_ns", (json_int_t)pt->start_ns,
                                     "duration_ns", (json_int_t)pt->duration_ns, "samples",
                                     (json_int_t)pt->samples, "max_gap_ns",
                                     (json_int_t)tickconv_to_ns(conv, pt->max_gap_ticks),
                                     "interruptions", (json_int_t)pt->events, "lost_ns",
                                     (json_int_t)tickconv_to_ns(conv, pt->lost_ticks), "stalled",
                                     pt->stalled));
}

static int method_get_timeline(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpu", JSON_INTEGER, true},
                {"window", JSON_STRING, false},
        };
        Api *a = userdata;
        Manager *m = a->manager;
        const char *window;
        uint64_t from, to;
        bool all;
        json_int_t cpu;
        TimelineCtx c = {.m = m};

        if (varlink_call_check_params(call, params, fields, 2) < 0) {
                return 0;
        }
        cpu = json_integer_value(json_object_get(params, "cpu"));
        if (!find_probe(m, cpu)) {
                return error_no_such_cpu(call, cpu);
        }
        if (get_window(m, call, params, "1h", &window, &from, &to, &all) < 0) {
                return 0;
        }
        c.points = json_array();
        if (!c.points) {
                return -ENOMEM;
        }
        history_foreach_point(manager_history(m), (int)cpu, from, to, add_point, &c);
        return varlink_call_reply(
                call, json_pack("{sI ss so}", "cpu", cpu, "window", window, "points", c.points));
}

/* Adds to @o why probe @p is not measuring, when it is not. */
static void add_probe_reason(const ProbeInfo *p, json_t *o)
{
        int to = probe_migrated_to(p->probe);

        if (to >= 0 && probe_state(p->probe) == PROBE_MIGRATED) {
                json_object_set_new(o, "migrated_to", json_integer(to));
        }
        if (p->failed) {
                json_object_set_new(o, "failure", json_string(p->failure));
                json_object_set_new(o, "reason", json_string(p->failure));
        } else if (p->offline) {
                json_object_set_new(o, "reason", json_string("the CPU is offline"));
        } else if (probe_state(p->probe) == PROBE_MIGRATED) {
                json_object_set_new(o, "reason",
                                    json_string("the probe was moved off its CPU (cpuset "
                                                "or affinity change?) and cannot go back"));
        } else if (p->stalled) {
                json_object_set_new(o, "reason",
                                    json_string("no progress for 2 intervals or more"));
        }
}

/* The worst gap of @cpu's window 1m in ns, as GetStats has it (read_window()): the running
 * sum's, without copying its histograms, while it is current; else from the window merged
 * into *@scratch (allocated here the first time, NULL when that fails: 0). */
static uint64_t worst_gap_1m_ns(const Manager *m, int cpu, HistoryWindow **scratch)
{
        uint64_t max, to;

        if (history_window_max_gap(manager_history(m), cpu, HISTORY_SPAN_1M, &max, &to) == 0 &&
            window_is_current(m, to)) {
                return tickconv_to_ns(manager_tickconv(m), max);
        }
        if (!*scratch && !(*scratch = malloc(sizeof(**scratch)))) {
                return 0;
        }
        read_window(m, cpu, "1m", *scratch);
        return (*scratch)->slot.gap.count > 0
                       ? tickconv_to_ns(manager_tickconv(m), (*scratch)->slot.gap.max)
                       : 0;
}

/* GetStatus' entry for probe @i, with its CPU's isolation as @iso has it (none: left out);
 * @scratch as worst_gap_1m_ns() has it. NULL when out of memory. */
static json_t *probe_status(const Manager *m, size_t i, const Isolation *iso,
                            HistoryWindow **scratch)
{
        ProbeInfo pi, *p = &pi;
        const IsolationSet *set;
        uint64_t worst;
        json_t *o;

        manager_probe_info(m, i, p);
        worst = worst_gap_1m_ns(m, p->cpu, scratch);
        o = json_pack("{si ss ss si sI sI sI}", "cpu", p->cpu, "state", p->state, "policy",
                      manager_config(m)->probe_priority ? "SCHED_FIFO" : "SCHED_OTHER", "priority",
                      (int)manager_config(m)->probe_priority, "samples",
                      (json_int_t)p->samples_total, "floor_ns",
                      (json_int_t)tickconv_to_ns(manager_tickconv(m), probe_floor_ticks(p->probe)),
                      "worst_gap_1m_ns", (json_int_t)worst);
        if (!o) {
                return NULL;
        }
        if (iso) {
                json_object_set_new(
                        o, "isolation",
                        json_string(isolation_kind_to_string(isolation_of(iso, p->cpu, &set))));
                if (set) {
                        json_object_set_new(o, "isolation_cpuset", json_string(set->path));
                }
        }
        add_probe_reason(p, o);
        return o;
}

/* The budget as GetStatus reports it in "self": {"cpu_ratio", "heavy": {"ratio", "burst_ns"},
 * "light": {"ratio", "burst_ns", "methods"}, "min_retry_ms"}. NULL on OOM. */
static json_t *budget_to_json(const Manager *m)
{
        size_t n;
        const char *const *light = admission_light_methods(&n);
        json_t *names = json_array();
        AdmissionLimits l;

        manager_admission_limits(m, &l);
        for (size_t i = 0; names && i < n; i++) {
                json_array_append_new(names, json_string(light[i]));
        }
        return json_pack("{sf s{sf sI} s{sf sI so*} si}", "cpu_ratio", l.cpu_ratio, "heavy",
                         "ratio", l.heavy_ratio, "burst_ns", (json_int_t)l.heavy_burst_ns, "light",
                         "ratio", l.light_ratio, "burst_ns", (json_int_t)l.light_burst_ns,
                         "methods", names, "min_retry_ms", ADMISSION_MIN_RETRY_MS);
}

static void add_method(const char *interface, const char *method, const VarlinkMethodStats *st,
                       void *userdata)
{
        json_t *arr = userdata;
        json_t *counts = json_array();
        uint64_t cum = 0;
        char name[256];

        for (size_t k = 0; counts && k < VARLINK_DURATION_BUCKETS; k++) {
                cum += st->duration_counts[k];
                json_array_append_new(counts, json_integer((json_int_t)cum));
        }
        /* Joined by hand: snprintf() was a tenth of GetStatus. */
        if (interface && strlen(interface) + 1 + strlen(method) < sizeof(name)) {
                size_t len = strlen(interface);

                memcpy(name, interface, len);
                name[len] = '.';
                memcpy(name + len + 1, method, strlen(method) + 1);
        } else if (interface) {
                snprintf(name, sizeof(name), "%s.%s", interface, method);
        } else {
                memcpy(name, "other", sizeof("other"));
        }
        json_array_append_new(
                arr,
                json_pack("{ss sI sI sI sI sI so*}", "method", name, "calls", (json_int_t)st->calls,
                          "refused", (json_int_t)st->refused, "cpu_ns", (json_int_t)st->cpu_ns,
                          "answered", (json_int_t)st->answered, "duration_sum_ns",
                          (json_int_t)st->duration_sum_ns, "duration_counts", counts));
}

/* The "self" object of GetStatus for @m: {"cpu_ns", "threads", "budget",
 * "duration_bounds_ns", "methods": [{"method", "calls", "refused", "cpu_ns", "answered",
 * "duration_sum_ns", "duration_counts"}]} (duration_counts cumulative, one per bound). NULL
 * on OOM. */
static json_t *self_cost_to_json(const Manager *m)
{
        uint64_t cpu_ns = 0;
        unsigned threads = 0;
        json_t *bounds = json_array(), *methods = json_array();

        (void)self_cost_read(m, &cpu_ns, &threads);
        for (size_t k = 0; bounds && k < VARLINK_DURATION_BUCKETS; k++) {
                json_array_append_new(bounds,
                                      json_integer((json_int_t)varlink_duration_bounds_ns[k]));
        }
        /* A Manager built without a server (the tests') has served nothing. */
        if (methods && manager_server(m)) {
                varlink_server_foreach_stats(manager_server(m), add_method, methods);
        }
        return json_pack("{sI si so* so* so*}", "cpu_ns", (json_int_t)cpu_ns, "threads",
                         (int)threads, "budget", budget_to_json(m), "duration_bounds_ns", bounds,
                         "methods", methods);
}

/* GetStatus' "trace"."cpus": per probed CPU, the time of all interruptions explained since
 * start or Reset by cause kind, and unexplained ({"cpu", "lost_ns": {"irq": ...}}); counters
 * for Prometheus. NULL when out of memory. */
static json_t *trace_kind_totals(const Manager *m)
{
        const CauseStore *store = manager_cause_store(m);
        json_t *arr = json_array();

        for (size_t i = 0; arr && store && i < manager_n_probes(m); i++) {
                int cpu = manager_probe_cpu(m, i);
                uint64_t ns[CAUSE_TOTALS];
                json_t *kinds = json_object();

                cause_store_totals(store, cpu, ns);
                for (unsigned k = 0; kinds && k < CAUSE_TOTALS; k++) {
                        json_object_set_new(kinds, cause_total_name(k),
                                            json_integer((json_int_t)ns[k]));
                }
                if (!kinds || json_array_append_new(arr, json_pack("{si so}", "cpu", cpu, "lost_ns",
                                                                   kinds)) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}

/* GetStatus' trace "captures": keep_above_ns, kept, kept_bytes, written, skipped, evicted,
 * interruptions (those noted); null when no capture is kept. */
static json_t *capture_status(const Manager *m)
{
        CaptureCounts c;

        if (!manager_capture_counts(m, &c)) {
                return json_null();
        }
        return json_pack("{sI sI sI sI sI sI sI}", "keep_above_ns",
                         (json_int_t)manager_config(m)->trace_keep_above_ns, "kept",
                         (json_int_t)c.kept, "kept_bytes", (json_int_t)c.kept_bytes, "written",
                         (json_int_t)c.written, "skipped", (json_int_t)c.skipped, "evicted",
                         (json_int_t)c.evicted, "interruptions", (json_int_t)c.noted);
}

/* Sets @key of @o to @value when @value is not "". */
static void set_nonempty(json_t *o, const char *key, const char *value)
{
        if (value[0]) {
                json_object_set_new(o, key, json_string(value));
        }
}

/* GetStatus' "trace" object: state ("off", "recording", "unavailable"), reason, clock... NULL
 * when out of memory. */
static json_t *trace_status(const Manager *m)
{
        ManagerTraceStatus st;
        json_t *o;

        manager_trace_status(m, &st);
        if (strcmp(st.state, "off") == 0) {
                return json_pack("{ss}", "state", st.state);
        }
        if (strcmp(st.state, "unavailable") == 0) {
                return json_pack("{ss ss}", "state", st.state, "reason", st.reason);
        }
        o = json_pack("{ss ss ss ss sI sI ss sI sI sI sI}", "state", st.state, "instance",
                      st.instance, "clock", st.clock, "events", st.events, "records",
                      (json_int_t)st.stats.records, "reads", (json_int_t)st.stats.reads,
                      "read_trigger", st.read_trigger, "losses", (json_int_t)st.stats.losses,
                      "lost_events", (json_int_t)st.stats.lost_events, "memory_bytes",
                      (json_int_t)st.memory_bytes, "kernel_bytes", (json_int_t)st.kernel_bytes);
        if (o) {
                set_nonempty(o, "missing", st.missing);
                set_nonempty(o, "refused", st.refused);
                set_nonempty(o, "unnamed", st.unnamed);
                set_nonempty(o, "reason", st.reason);
                json_object_set_new(o, "cpus", trace_kind_totals(m));
                json_object_set_new(o, "captures", capture_status(m));
        }
        return o;
}

json_t *api_status(const Manager *m, const Isolation *iso)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        json_t *probes = json_array(), *cfg;
        char cpus[256], when[64];
        _cleanup_free_ HistoryWindow *w = NULL;

        if (!probes) {
                return NULL;
        }
        for (size_t i = 0; i < manager_n_probes(m); i++) {
                json_array_append_new(probes, probe_status(m, i, iso, &w));
        }
        cfg = json_pack(
                "{ss si si sI sI sI sI sI si sI ss ss}", "cpus",
                cpulist_format(cpus, sizeof(cpus), manager_cpus(m)), "priority",
                (int)manager_config(m)->probe_priority, "loop_priority",
                (int)manager_config(m)->server_loop_priority, "threshold_ns",
                (json_int_t)manager_config(m)->probe_threshold_ns, "preheat_ns",
                (json_int_t)manager_config(m)->probe_preheat_ns, "interval_ns",
                (json_int_t)manager_config(m)->history_interval_ns, "fine_retention_ns",
                (json_int_t)manager_config(m)->history_fine_retention_ns, "coarse_retention_ns",
                (json_int_t)manager_config(m)->history_coarse_retention_ns, "events_per_cpu",
                (int)manager_config(m)->history_events_per_cpu, "checkpoint_ns",
                (json_int_t)manager_config(m)->history_checkpoint_ns, "state_dir",
                manager_config(m)->history_state_dir, "socket", manager_socket_path(m));
        if (manager_config(m)->export_prometheus_textfile[0]) {
                json_object_set_new(cfg, "prometheus_textfile",
                                    json_string(manager_config(m)->export_prometheus_textfile));
        }
        realtime_format_iso8601(when, sizeof(when), manager_start_real_ns(m));
        return json_pack("{ss sI ss s{ss sI ss sf sf} so so sI so* so}", "version", JITTERD_VERSION,
                         "uptime_ns", (json_int_t)(now - manager_start_mono_ns(m)),
                         "start_realtime", when, "counter", "source",
                         counter_source_name(manager_counter(m)->source), "hz",
                         (json_int_t)manager_counter(m)->hz, "hz_source",
                         counter_hz_source_name(manager_counter(m)->hz_source), "precision_ppm",
                         manager_counter(m)->precision_ppm, "drift_ppm", manager_drift_ppm(m),
                         "probes", probes, "config", cfg, "history_bytes",
                         (json_int_t)history_memory_bytes(manager_history(m)), "self",
                         self_cost_to_json(m), "trace", trace_status(m));
}

/* How old a reading of the isolation may be: an interval, at least ISOLATION_MAX_AGE_MIN_NS (a
 * walk of thousands of cgroups takes tens of ms). */
static uint64_t isolation_max_age_ns(const Manager *m)
{
        uint64_t age = manager_config(m)->history_interval_ns;

        return age < ISOLATION_MAX_AGE_MIN_NS ? ISOLATION_MAX_AGE_MIN_NS : age;
}

static int method_get_status(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{NULL, 0, false}};
        Api *a = userdata;
        Manager *m = a->manager;
        json_t *reply;

        if (varlink_call_check_params(call, params, fields, 0) < 0) {
                return 0;
        }
        /* Cpusets change while the daemon runs, seldom: a reading of the last harvest is
         * fresh enough. A reload changes nothing of it: it is the host's, not the
         * configuration's. */
        a->status_asked_ns = now_ns(CLOCK_MONOTONIC);
        reply = api_status(m, isolation_cache_get(&a->isolation, NULL, a->status_asked_ns,
                                                  2 * isolation_max_age_ns(m)));
        if (!reply || json_object_set_new(reply, "reply_cache_bytes",
                                          json_integer((json_int_t)reply_cache_memory_bytes(
                                                  a->stats_cache))) < 0) {
                json_decref(reply);
                return -ENOMEM;
        }
        return varlink_call_reply(call, reply);
}

static void monitor_closed(VarlinkCallCtx *call, void *userdata)
{
        Api *a = userdata;

        for (MonitorClient **c = &a->monitors; *c; c = &(*c)->next) {
                if ((*c)->call == call) {
                        MonitorClient *dead = *c;

                        *c = dead->next;
                        varlink_call_unref(dead->call);
                        free(dead);
                        return;
                }
        }
}

static int method_monitor(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{"cpus", JSON_ARRAY, false}};
        Api *a = userdata;
        Manager *m = a->manager;
        MonitorClient *c;
        cpu_set_t cpus;

        if (varlink_call_check_params(call, params, fields, 1) < 0 ||
            get_cpus(m, call, params, &cpus) < 0) {
                return 0;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                return -ENOMEM;
        }
        c->call = varlink_call_ref(call);
        c->cpus = cpus;
        c->next = a->monitors;
        a->monitors = c;
        varlink_call_set_close_callback(call, monitor_closed, a);
        return 0;
}

void api_monitor_interval(Api *a, const ManagerInterval *iv)
{
        Manager *m = a->manager;
        MonitorQueue *q = NULL;
        SlotSummary s = {0};
        json_t *o;

        if (!a->monitors) {
                return;
        }
        for (size_t i = 0; i < a->n_queues && !q; i++) {
                q = a->queues[i].cpu == iv->cpu ? &a->queues[i] : NULL;
        }
        if (!q) {
                MonitorQueue *grown = realloc(a->queues, (a->n_queues + 1) * sizeof(*grown));

                if (!grown) {
                        return;
                }
                a->queues = grown;
                q = &a->queues[a->n_queues++];
                *q = (MonitorQueue){.cpu = iv->cpu};
        }
        if (q->n == MONITOR_PENDING) {
                json_decref(q->pending[0].cpu);
                memmove(q->pending, q->pending + 1, (MONITOR_PENDING - 1) * sizeof(*q->pending));
                q->n--;
        }
        slot_summarize(iv->slot, manager_tickconv(m), iv->duration_ns, &s);
        o = interval_cpu_to_json(iv->cpu, iv->state, &s);
        if (!o) {
                return;
        }
        (void)api_attrib_to_json(m, iv->attrib, o);
        json_object_del(o, "smi");
        q->pending[q->n++] = (MonitorInterval){
                .start_ns = iv->start_ns,
                .start_real_ns = iv->start_real_ns,
                .duration_ns = iv->duration_ns,
                .cpu = o,
        };
}

static void on_interval(Manager *m, const ManagerInterval *iv, void *userdata)
{
        (void)m;
        api_monitor_interval(userdata, iv);
}

/* One client: a reply per interval its CPUs handed over since the last harvest, oldest first.
 * The probes' intervals end at the same tick, so those that start within half an interval of
 * the oldest one left are the same interval and share a reply; a probe that handed over late
 * has its interval in a reply of its own at the next harvest. */
static void notify_monitor(Api *a, MonitorClient *c, size_t *next)
{
        uint64_t same = manager_config(a->manager)->history_interval_ns / 2;
        char when[64];

        memset(next, 0, a->n_queues * sizeof(*next));
        for (;;) {
                const MonitorInterval *first = NULL;
                json_t *cpus;

                for (size_t i = 0; i < a->n_queues; i++) {
                        const MonitorQueue *q = &a->queues[i];

                        if (CPU_ISSET(q->cpu, &c->cpus) && next[i] < q->n &&
                            (!first || q->pending[next[i]].start_ns < first->start_ns)) {
                                first = &q->pending[next[i]];
                        }
                }
                if (!first) {
                        return;
                }
                cpus = json_array();
                for (size_t i = 0; i < a->n_queues; i++) {
                        const MonitorQueue *q = &a->queues[i];
                        const MonitorInterval *mi = &q->pending[next[i]];

                        if (CPU_ISSET(q->cpu, &c->cpus) && next[i] < q->n &&
                            mi->start_ns < first->start_ns + same) {
                                json_array_append(cpus, mi->cpu);
                                next[i]++;
                        }
                }
                (void)varlink_call_reply_continue(
                        c->call,
                        json_pack("{sI ss sI so}", "start_ns", (json_int_t)first->start_ns,
                                  "realtime",
                                  realtime_format_iso8601(when, sizeof(when), first->start_real_ns),
                                  "duration_ns", (json_int_t)first->duration_ns, "cpus", cpus));
        }
}

/* Drops every interval kept for the Monitor clients. */
static void forget_intervals(Api *a)
{
        for (size_t i = 0; i < a->n_queues; i++) {
                for (size_t k = 0; k < a->queues[i].n; k++) {
                        json_decref(a->queues[i].pending[k].cpu);
                }
                a->queues[i].n = 0;
        }
}

/* Sends the Monitor clients the intervals harvested since the last call, and only those: a
 * probe that handed over nothing (late, stalled, failed) is in no reply until it does. */
static void notify_monitors(Api *a)
{
        size_t *next = a->monitors && a->n_queues ? calloc(a->n_queues, sizeof(*next)) : NULL;

        if (next) {
                for (MonitorClient *c = a->monitors; c; c = c->next) {
                        notify_monitor(a, c, next);
                }
        }
        free(next);
        forget_intervals(a);
}

static void free_monitors(Api *a)
{
        while (a->monitors) {
                MonitorClient *c = a->monitors;

                a->monitors = c->next;
                varlink_call_set_close_callback(c->call, NULL, NULL);
                varlink_call_reply(c->call, NULL);
                varlink_call_unref(c->call);
                free(c);
        }
}

static int method_audit(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{NULL, 0, false}};
        Api *a = userdata;
        Manager *m = a->manager;
        __attribute__((cleanup(host_audit_freep))) AuditFacts *facts = NULL;
        AuditOptions opt;
        json_t *report;
        int r;

        if (varlink_call_check_params(call, params, fields, 0) < 0) {
                return 0;
        }
        audit_options_init(&opt);
        opt.probe_priority = manager_config(m)->probe_priority;
        r = host_audit_gather(manager_config(m)->audit_root, manager_cpus(m), 0, &facts);
        r = r < 0 ? r : audit_run(facts, &opt, &report);
        if (r < 0) {
                return r;
        }
        return varlink_call_reply(call, report);
}

/* Root, or a member of the admin group (primary or supplementary, read from the peer's
 * /proc/PID/status since SO_PEERCRED carries only the primary group). */
static bool peer_is_admin(const Manager *m, VarlinkCallCtx *call)
{
        uid_t uid;
        gid_t gid, admin_gid;
        pid_t pid;
        char path[64], line[4096];
        bool ok = false;
        FILE *f;

        varlink_call_peer(call, &uid, &gid, &pid);
        if (uid == 0) {
                return true;
        }
        if (!manager_admin_gid(m, &admin_gid)) {
                return false;
        }
        if (gid == admin_gid) {
                return true;
        }
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f) {
                return false;
        }
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "Groups:", 7) == 0) {
                        char *p = line + 7, *end;

                        for (;;) {
                                unsigned long g = strtoul(p, &end, 10);

                                if (end == p) {
                                        break;
                                }
                                ok = ok || g == admin_gid;
                                p = end;
                        }
                }
        }
        fclose(f);
        return ok;
}

static int method_reset(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{"cpus", JSON_ARRAY, false}};
        Api *a = userdata;
        Manager *m = a->manager;
        cpu_set_t cpus;
        uid_t uid;

        if (varlink_call_check_params(call, params, fields, 1) < 0) {
                return 0;
        }
        if (!peer_is_admin(m, call)) {
                return varlink_call_error(call, "org.varlink.service.PermissionDenied", NULL);
        }
        if (get_cpus(m, call, params, &cpus) < 0) {
                return 0;
        }
        varlink_call_peer(call, &uid, NULL, NULL);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (CPU_ISSET(cpu, &cpus)) {
                        manager_reset(m, cpu);
                }
        }
        reply_cache_invalidate(a->stats_cache);
        log_notice("history reset by uid %u", (unsigned)uid);
        return varlink_call_reply(call, NULL);
}

json_t *api_stats(const Manager *m, const cpu_set_t *cpus, const char *window)
{
        return stats_array(m, cpus, window);
}

void api_interval(Api *a)
{
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        uint64_t keep = 2 * manager_config(a->manager)->history_interval_ns;
        uint64_t cpu_start_ns;

        notify_monitors(a);
        reply_cache_invalidate(a->stats_cache);
        /* Written only because clients asked for them: the clients pay. */
        cpu_start_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
        reply_cache_refresh(a->stats_cache, now > keep ? now - keep : 0, refresh_stats_entry, a);
        manager_charge_clients(a->manager, now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start_ns);
        /* A tenth off the age, so that a harvest an interval after the last one reads again;
         * watched as long as a call would still find the reading young enough. */
        if (a->status_asked_ns &&
            (now - a->status_asked_ns < ISOLATION_WATCH_NS ||
             now - a->status_asked_ns < 2 * isolation_max_age_ns(a->manager))) {
                (void)isolation_cache_get(&a->isolation, NULL, now,
                                          isolation_max_age_ns(a->manager) / 10 * 9);
        }
}

size_t api_n_monitors(const Api *a)
{
        size_t n = 0;

        for (const MonitorClient *c = a->monitors; c; c = c->next) {
                n++;
        }
        return n;
}

static void on_harvest(Manager *m, void *userdata)
{
        api_interval(userdata);
}

int api_new(Manager *m, Api **ret)
{
        static const VarlinkMethod methods[] = {
                {"GetStatus", method_get_status, 0},
                {"GetStats", method_get_stats, 0},
                {"GetWindow", method_get_window, 0},
                {"GetHistogram", method_get_histogram, 0},
                {"GetEvents", method_get_events, 0},
                {"GetCauses", method_get_causes, 0},
                {"GetCaptures", method_get_captures, 0},
                {"GetTimeline", method_get_timeline, 0},
                {"Monitor", method_monitor, VARLINK_METHOD_REQUIRES_MORE},
                {"Audit", method_audit, 0},
                {"Reset", method_reset, 0},
        };
        _cleanup_api_ Api *a = calloc(1, sizeof(*a));
        int r;

        if (!a) {
                return -ENOMEM;
        }
        a->manager = m;
        a->scratch = malloc(sizeof(*a->scratch));
        if (!a->scratch) {
                return -ENOMEM;
        }
        r = reply_cache_new(&a->stats_cache);
        if (r < 0) {
                return r;
        }
        /* The description is config/io.jitterd.varlink, compiled in (interface.c). */
        r = manager_add_interface(m, "io.jitterd", jitterd_interface_description, methods,
                                  ELEMENTSOF(methods), a);
        if (r < 0) {
                return r;
        }
        r = manager_add_hooks(m, &(ManagerHooks){
                                         .interval = on_interval,
                                         .harvest = on_harvest,
                                         .userdata = a,
                                 });
        if (r < 0) {
                return r;
        }
        *ret = a;
        a = NULL;
        return 0;
}

Api *api_free(Api *a)
{
        if (!a) {
                return NULL;
        }
        free_monitors(a);
        forget_intervals(a);
        free(a->queues);
        reply_cache_free(a->stats_cache);
        free(a->scratch);
        free(a);
        return NULL;
}

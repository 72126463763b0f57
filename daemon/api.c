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

/* A Reload call, answered at the READY=1 that ends the reload. */
typedef struct ReloadClient {
        VarlinkCallCtx *call;
        ManagerReload result;
        json_t *errors; /* MANAGER_RELOAD_KEPT: the files' errors */
        struct ReloadClient *next;
} ReloadClient;

struct Api {
        Manager *manager;

        /* Monitor calls waiting for the next interval; Reload calls waiting for READY=1 (at
         * most one a connection, as every call). */
        MonitorClient *monitors;
        ReloadClient *reloads;
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

/* Ends the reply written as text in @t with @close (what closes its parameters) and the
 * envelope's tail, and sends it. */
static int reply_text(VarlinkCallCtx *call, JsonText *t, const char *close)
{
        size_t len = 0;
        char *text;

        json_text_raw(t, close);
        json_text_raw(t, VARLINK_REPLY_TEXT_TAIL);
        text = json_text_take(t, &len);
        return varlink_call_reply_text(call, text, len);
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
        bool all;

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
        return reply_text(call, &t, "]}");
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
        size_t n;

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
        return reply_text(call, &t, "]}");
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

/* Writes GetCauses' "causes" of window @span of @cpu in @store: the largest WINDOW_CAUSES_MAX,
 * the time of the others added to *@other_ns. Returns 0 or -ENOMEM. */
static int window_causes_list_text(const CauseStore *store, int cpu, HistorySpan span,
                                   uint64_t *other_ns, JsonText *t)
{
        WindowCauses w = {0};

        cause_store_window_foreach(store, cpu, (unsigned)span, collect_cause, &w);
        if (w.failed) {
                free(w.items);
                return -ENOMEM;
        }
        if (w.n > 1) {
                qsort(w.items, w.n, sizeof(*w.items), cmp_window_cause);
        }
        json_text_raw(t, "[");
        for (size_t i = 0; i < w.n; i++) {
                const WindowCause *c = &w.items[i];
                char buf[CAUSE_NAME_MAX + 8];
                const char *counter;

                if (i >= WINDOW_CAUSES_MAX) {
                        *other_ns += c->sum.ns + c->sum.overhead_ns;
                        continue;
                }
                counter = cause_counter(c->kind, c->name, buf, sizeof(buf));
                json_text_item(t);
                json_text_raw(t, "{");
                json_text_key_string(t, "kind", cause_kind_name(c->kind));
                json_text_key_string(t, "name", c->name);
                json_text_key_u64(t, "ns", c->sum.ns);
                json_text_key_u64(t, "overhead_ns", c->sum.overhead_ns);
                json_text_key_u64(t, "count", c->sum.count);
                json_text_key_string(t, "counter", counter); /* NULL: null */
                json_text_raw(t, "}");
        }
        json_text_raw(t, "]");
        free(w.items);
        return 0;
}

/* Writes GetCauses' "woken_by" of @s: {"irq:RES": {"ns", "count"}, ...}. */
static void woken_text(const CauseWindow *s, JsonText *t)
{
        json_text_raw(t, "{");
        for (unsigned code = 1; code < CAUSE_COUNTER_CODES; code++) {
                const char *counter = cause_counter_of_code((uint8_t)code);

                if (counter && s->woken_count[code] > 0) {
                        json_text_key(t, counter);
                        json_text_raw(t, "{");
                        json_text_key_u64(t, "ns", s->woken_ns[code]);
                        json_text_key_u64(t, "count", s->woken_count[code]);
                        json_text_raw(t, "}");
                }
        }
        json_text_raw(t, "}");
}

/* Writes member @key of the object being written: @v, or null when there is none. */
static void key_u64_or_null(JsonText *t, const char *key, bool have, uint64_t v)
{
        json_text_key(t, key);
        if (have) {
                json_text_u64(t, v);
        } else {
                json_text_raw(t, "null");
        }
}

/* Writes GetCauses' entry for @cpu: the stored causes of its interruptions that began at or
 * after @since_ns, summed by (kind, name), longest first, with the interruptions' count and
 * time, how many of them have causes, and their other and unexplained time. Written as text,
 * as GetStatus is. Returns 0 or a negative errno. */
static int window_causes_text(Manager *m, int cpu, const char *window, uint64_t since_ns,
                              JsonText *t)
{
        const CauseStore *store = manager_cause_store(m);
        HostSpan h = {0};
        CauseWindow s;
        HistorySpan span;
        uint64_t other_ns = 0;
        bool have_host;
        int r;

        if (history_span_from_name(window, &span) < 0) {
                return -EINVAL;
        }
        r = manager_trace_window(m, cpu, span, since_ns, &s);
        if (r < 0) {
                return r;
        }
        json_text_raw(t, "{");
        json_text_key_i64(t, "cpu", cpu);
        json_text_key_string(t, "window", window);
        json_text_key_u64(t, "since_ns", since_ns);
        json_text_key_u64(t, "interruptions", s.interruptions);
        json_text_key_u64(t, "interruptions_ns", s.interruptions_ns);
        json_text_key_u64(t, "explained", s.explained);
        json_text_key_u64(t, "explained_ns", s.explained_ns);
        json_text_key_u64(t, "trace_lost", s.trace_lost);
        json_text_key(t, "causes");
        if (!store) {
                json_text_raw(t, "[]");
        } else if (window_causes_list_text(store, cpu, span, &other_ns, t) < 0) {
                return -ENOMEM;
        }
        json_text_key_u64(t, "other_ns", other_ns + s.other_ns);
        json_text_key_u64(t, "unexplained_ns", s.unexplained_ns);
        json_text_key(t, "woken_by");
        woken_text(&s, t);
        json_text_key_u64(t, "traced", s.traced);
        json_text_key_u64(t, "traced_ns", s.traced_ns);
        json_text_key_u64(t, "overhead_ns", s.overhead_ns);
        json_text_key_u64(t, "no_record", s.no_record);
        json_text_key_u64(t, "no_record_ns", s.no_record_ns);
        json_text_key_u64(t, "trace_lost_ns", s.trace_lost_ns);
        have_host = store && cause_store_host(store, cpu, since_ns, &h) == 0;
        key_u64_or_null(t, "steal_ns", have_host && h.have_steal, h.steal_ns);
        key_u64_or_null(t, "smi", have_host && h.have_smi, h.smi);
        key_u64_or_null(t, "host_from_ns", have_host, h.from_ns);
        key_u64_or_null(t, "host_to_ns", have_host, h.to_ns);
        json_text_raw(t, "}");
        return 0;
}

static int method_get_causes(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        Api *a = userdata;
        Manager *m = a->manager;
        const char *window;
        uint64_t from;
        cpu_set_t cpus;
        JsonText t = {0};
        size_t len = 0;

        if (get_cpus_window(m, call, params, &cpus, &window, &from) < 0) {
                return 0;
        }
        json_text_raw(&t, VARLINK_REPLY_TEXT_HEAD "{");
        json_text_key_string(&t, "trace", manager_trace_state(m));
        json_text_key(&t, "cpus");
        json_text_raw(&t, "[");
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, &cpus)) {
                        continue;
                }
                json_text_item(&t);
                if (window_causes_text(m, cpu, window, from, &t) < 0) {
                        free(json_text_take(&t, &len));
                        return -ENOMEM;
                }
        }
        return reply_text(call, &t, "]}");
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

/* Writes the members of probe @p's GetStatus object that say why it is not measuring, when it
 * is not. */
static void probe_reason_text(const ProbeInfo *p, JsonText *t)
{
        int to = probe_migrated_to(p->probe);
        const char *reason = NULL;

        if (to >= 0 && probe_state(p->probe) == PROBE_MIGRATED) {
                json_text_key_i64(t, "migrated_to", to);
        }
        if (p->failed) {
                json_text_key_string(t, "failure", p->failure);
                reason = p->failure;
        } else if (p->offline) {
                reason = "the CPU is offline";
        } else if (probe_state(p->probe) == PROBE_MIGRATED) {
                reason = "the probe was moved off its CPU (cpuset or affinity change?) and cannot "
                         "go back";
        } else if (p->stalled) {
                reason = "no progress for 2 intervals or more";
        }
        if (reason) {
                json_text_key_string(t, "reason", reason);
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

/* Writes GetStatus' object for probe @i, with its CPU's isolation as @iso has it (none: left
 * out); @scratch as worst_gap_1m_ns() has it. */
static void probe_status_text(const Manager *m, size_t i, const Isolation *iso,
                              HistoryWindow **scratch, JsonText *t)
{
        const Config *cfg = manager_config(m);
        ProbeInfo pi, *p = &pi;
        const IsolationSet *set;

        manager_probe_info(m, i, p);
        json_text_raw(t, "{");
        json_text_key_i64(t, "cpu", p->cpu);
        json_text_key_string(t, "state", p->state);
        json_text_key_string(t, "policy", cfg->probe_priority ? "SCHED_FIFO" : "SCHED_OTHER");
        json_text_key_i64(t, "priority", cfg->probe_priority);
        json_text_key_u64(t, "samples", p->samples_total);
        json_text_key_u64(t, "floor_ns",
                          tickconv_to_ns(manager_tickconv(m), probe_floor_ticks(p->probe)));
        json_text_key_u64(t, "worst_gap_1m_ns", worst_gap_1m_ns(m, p->cpu, scratch));
        if (iso) {
                json_text_key_string(t, "isolation",
                                     isolation_kind_to_string(isolation_of(iso, p->cpu, &set)));
                if (set) {
                        json_text_key_string(t, "isolation_cpuset", set->path);
                }
        }
        probe_reason_text(p, t);
        json_text_raw(t, "}");
}

/* Writes member @key of the budget, a bucket: {"ratio", "burst_ns", left open for more. */
static void bucket_text_open(JsonText *t, const char *key, double ratio, uint64_t burst_ns)
{
        json_text_key(t, key);
        json_text_raw(t, "{");
        json_text_key(t, "ratio");
        json_text_real(t, ratio);
        json_text_key_u64(t, "burst_ns", burst_ns);
}

/* Writes the budget as GetStatus reports it in "self": {"cpu_ratio", "heavy": {"ratio",
 * "burst_ns"}, "light": {"ratio", "burst_ns", "methods"}, "min_retry_ms"}. */
static void budget_text(const Manager *m, JsonText *t)
{
        size_t n;
        const char *const *light = admission_light_methods(&n);
        AdmissionLimits l;

        manager_admission_limits(m, &l);
        json_text_raw(t, "{");
        json_text_key(t, "cpu_ratio");
        json_text_real(t, l.cpu_ratio);
        bucket_text_open(t, "heavy", l.heavy_ratio, l.heavy_burst_ns);
        json_text_raw(t, "}");
        bucket_text_open(t, "light", l.light_ratio, l.light_burst_ns);
        json_text_key(t, "methods");
        json_text_raw(t, "[");
        for (size_t i = 0; i < n; i++) {
                json_text_item(t);
                json_text_string(t, light[i]);
        }
        json_text_raw(t, "]}");
        json_text_key_i64(t, "min_retry_ms", ADMISSION_MIN_RETRY_MS);
        json_text_raw(t, "}");
}

static void method_text(const char *interface, const char *method, const VarlinkMethodStats *st,
                        void *userdata)
{
        JsonText *t = userdata;
        uint64_t cum = 0;

        json_text_item(t);
        json_text_raw(t, "{");
        json_text_key(t, "method");
        if (interface) {
                /* Registered names: letters, digits, '-' and dots, nothing to escape. */
                json_text_raw(t, "\"");
                json_text_raw(t, interface);
                json_text_raw(t, ".");
                json_text_raw(t, method);
                json_text_raw(t, "\"");
        } else {
                json_text_string(t, "other");
        }
        json_text_key_u64(t, "calls", st->calls);
        json_text_key_u64(t, "refused", st->refused);
        json_text_key_u64(t, "cpu_ns", st->cpu_ns);
        json_text_key_u64(t, "answered", st->answered);
        json_text_key_u64(t, "duration_sum_ns", st->duration_sum_ns);
        json_text_key(t, "duration_counts");
        json_text_raw(t, "[");
        for (size_t k = 0; k < VARLINK_DURATION_BUCKETS; k++) {
                cum += st->duration_counts[k];
                json_text_item(t);
                json_text_u64(t, cum);
        }
        json_text_raw(t, "]}");
}

/* Writes the "self" object of GetStatus for @m: {"cpu_ns", "threads", "budget",
 * "duration_bounds_ns", "methods": [{"method", "calls", "refused", "cpu_ns", "answered",
 * "duration_sum_ns", "duration_counts"}]} (duration_counts cumulative, one per bound). */
static void self_cost_text(const Manager *m, JsonText *t)
{
        uint64_t cpu_ns = 0;
        unsigned threads = 0;

        (void)self_cost_read(m, &cpu_ns, &threads);
        json_text_raw(t, "{");
        json_text_key_u64(t, "cpu_ns", cpu_ns);
        json_text_key_u64(t, "threads", threads);
        json_text_key(t, "budget");
        budget_text(m, t);
        json_text_key(t, "duration_bounds_ns");
        json_text_raw(t, "[");
        for (size_t k = 0; k < VARLINK_DURATION_BUCKETS; k++) {
                json_text_item(t);
                json_text_u64(t, varlink_duration_bounds_ns[k]);
        }
        json_text_raw(t, "]");
        json_text_key(t, "methods");
        json_text_raw(t, "[");
        /* A Manager built without a server (the tests') has served nothing. */
        if (manager_server(m)) {
                varlink_server_foreach_stats(manager_server(m), method_text, t);
        }
        json_text_raw(t, "]}");
}

/* Writes GetStatus' "trace"."cpus": per probed CPU, the time of all interruptions explained
 * since start or Reset by cause kind, and unexplained ({"cpu", "lost_ns": {"irq": ...}});
 * counters for Prometheus. */
static void trace_kind_totals_text(const Manager *m, JsonText *t)
{
        const CauseStore *store = manager_cause_store(m);

        json_text_raw(t, "[");
        for (size_t i = 0; store && i < manager_n_probes(m); i++) {
                int cpu = manager_probe_cpu(m, i);
                uint64_t ns[CAUSE_TOTALS];

                cause_store_totals(store, cpu, ns);
                json_text_item(t);
                json_text_raw(t, "{");
                json_text_key_i64(t, "cpu", cpu);
                json_text_key(t, "lost_ns");
                json_text_raw(t, "{");
                for (unsigned k = 0; k < CAUSE_TOTALS; k++) {
                        json_text_key_u64(t, cause_total_name(k), ns[k]);
                }
                json_text_raw(t, "}}");
        }
        json_text_raw(t, "]");
}

/* Writes GetStatus' trace "captures": keep_above_ns, kept, kept_bytes, written, skipped,
 * evicted, interruptions (those noted); null when no capture is kept. */
static void capture_status_text(const Manager *m, JsonText *t)
{
        CaptureCounts c;

        if (!manager_capture_counts(m, &c)) {
                json_text_raw(t, "null");
                return;
        }
        json_text_raw(t, "{");
        json_text_key_u64(t, "keep_above_ns", manager_config(m)->trace_keep_above_ns);
        json_text_key_u64(t, "kept", c.kept);
        json_text_key_u64(t, "kept_bytes", c.kept_bytes);
        json_text_key_u64(t, "written", c.written);
        json_text_key_u64(t, "skipped", c.skipped);
        json_text_key_u64(t, "evicted", c.evicted);
        json_text_key_u64(t, "interruptions", c.noted);
        json_text_raw(t, "}");
}

/* Writes member @key of the object being written, a string, when @value is not "". */
static void key_nonempty(JsonText *t, const char *key, const char *value)
{
        if (value[0]) {
                json_text_key_string(t, key, value);
        }
}

/* Writes GetStatus' "trace" object: state ("off", "recording", "unavailable"), reason,
 * clock... */
static void trace_status_text(const Manager *m, JsonText *t)
{
        ManagerTraceStatus st;

        manager_trace_status(m, &st);
        json_text_raw(t, "{");
        json_text_key_string(t, "state", st.state);
        if (strcmp(st.state, "off") == 0) {
                json_text_raw(t, "}");
                return;
        }
        if (strcmp(st.state, "unavailable") == 0) {
                json_text_key_string(t, "reason", st.reason);
                json_text_raw(t, "}");
                return;
        }
        json_text_key_string(t, "instance", st.instance);
        json_text_key_string(t, "clock", st.clock);
        json_text_key_string(t, "events", st.events);
        json_text_key_u64(t, "records", st.stats.records);
        json_text_key_u64(t, "reads", st.stats.reads);
        json_text_key_string(t, "read_trigger", st.read_trigger);
        json_text_key_u64(t, "losses", st.stats.losses);
        json_text_key_u64(t, "lost_events", st.stats.lost_events);
        json_text_key_u64(t, "memory_bytes", st.memory_bytes);
        json_text_key_u64(t, "kernel_bytes", st.kernel_bytes);
        key_nonempty(t, "missing", st.missing);
        key_nonempty(t, "refused", st.refused);
        key_nonempty(t, "unnamed", st.unnamed);
        key_nonempty(t, "reason", st.reason);
        json_text_key(t, "cpus");
        trace_kind_totals_text(m, t);
        json_text_key(t, "captures");
        capture_status_text(m, t);
        json_text_raw(t, "}");
}

/* Writes GetStatus' "config". */
static void config_text(const Manager *m, JsonText *t)
{
        const Config *cfg = manager_config(m);
        char cpus[256];

        json_text_raw(t, "{");
        json_text_key_string(t, "cpus", cpulist_format(cpus, sizeof(cpus), manager_cpus(m)));
        json_text_key_i64(t, "priority", cfg->probe_priority);
        json_text_key_i64(t, "loop_priority", cfg->server_loop_priority);
        json_text_key_u64(t, "threshold_ns", cfg->probe_threshold_ns);
        json_text_key_u64(t, "preheat_ns", cfg->probe_preheat_ns);
        json_text_key_u64(t, "interval_ns", cfg->history_interval_ns);
        json_text_key_u64(t, "fine_retention_ns", cfg->history_fine_retention_ns);
        json_text_key_u64(t, "coarse_retention_ns", cfg->history_coarse_retention_ns);
        json_text_key_i64(t, "events_per_cpu", cfg->history_events_per_cpu);
        json_text_key_u64(t, "checkpoint_ns", cfg->history_checkpoint_ns);
        json_text_key_string(t, "state_dir", cfg->history_state_dir);
        json_text_key_string(t, "socket", manager_socket_path(m));
        if (cfg->export_prometheus_textfile[0]) {
                json_text_key_string(t, "prometheus_textfile", cfg->export_prometheus_textfile);
        }
        json_text_raw(t, "}");
}

/* Writes the members of GetStatus' reply (without its braces), with the isolation as @iso has
 * it (NULL: left out). Written as text, not built as a tree of jansson objects: a client that
 * polls it pays a third of the CPU. */
static void status_members_text(const Manager *m, const Isolation *iso, JsonText *t)
{
        const CounterInfo *counter = manager_counter(m);
        _cleanup_free_ HistoryWindow *w = NULL;

        json_text_key_string(t, "version", JITTERD_VERSION);
        json_text_key_u64(t, "uptime_ns", now_ns(CLOCK_MONOTONIC) - manager_start_mono_ns(m));
        json_text_key(t, "start_realtime");
        json_text_realtime(t, manager_start_real_ns(m));
        json_text_key(t, "counter");
        json_text_raw(t, "{");
        json_text_key_string(t, "source", counter_source_name(counter->source));
        json_text_key_u64(t, "hz", counter->hz);
        json_text_key_string(t, "hz_source", counter_hz_source_name(counter->hz_source));
        json_text_key(t, "precision_ppm");
        json_text_real(t, counter->precision_ppm);
        json_text_key(t, "drift_ppm");
        json_text_real(t, manager_drift_ppm(m));
        json_text_raw(t, "}");
        json_text_key(t, "probes");
        json_text_raw(t, "[");
        for (size_t i = 0; i < manager_n_probes(m); i++) {
                json_text_item(t);
                probe_status_text(m, i, iso, &w, t);
        }
        json_text_raw(t, "]");
        json_text_key(t, "config");
        config_text(m, t);
        json_text_key_u64(t, "history_bytes", history_memory_bytes(manager_history(m)));
        json_text_key(t, "self");
        self_cost_text(m, t);
        json_text_key(t, "trace");
        trace_status_text(m, t);
}

json_t *api_status(const Manager *m, const Isolation *iso)
{
        JsonText t = {0};
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        json_text_raw(&t, "{");
        status_members_text(m, iso, &t);
        json_text_raw(&t, "}");
        text = json_text_take(&t, &len);
        return text ? json_loadb(text, len, 0, NULL) : NULL;
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
        const Isolation *iso;
        JsonText t = {0};

        if (varlink_call_check_params(call, params, fields, 0) < 0) {
                return 0;
        }
        /* Cpusets change while the daemon runs, seldom: a reading of the last harvest is
         * fresh enough. A reload changes nothing of it: it is the host's, not the
         * configuration's. */
        a->status_asked_ns = now_ns(CLOCK_MONOTONIC);
        iso = isolation_cache_get(&a->isolation, NULL, a->status_asked_ns,
                                  2 * isolation_max_age_ns(m));
        json_text_raw(&t, VARLINK_REPLY_TEXT_HEAD "{");
        status_members_text(m, iso, &t);
        json_text_key_u64(&t, "reply_cache_bytes", reply_cache_memory_bytes(a->stats_cache));
        return reply_text(call, &t, "}");
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

/* Root, the daemon's own user (which may signal it anyway: systemd's ExecReload= runs as it),
 * or a member of the admin group (primary or supplementary, read from the peer's
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
        if (uid == 0 || uid == geteuid()) {
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

#define RELOAD_ROLLED_BACK                                                                         \
        "the probes of the new [probe] could not start (the daemon's log says why); the "          \
        "previous ones run again, and [trace] and [export] are in effect"

static void reload_closed(VarlinkCallCtx *call, void *userdata)
{
        Api *a = userdata;

        for (ReloadClient **c = &a->reloads; *c; c = &(*c)->next) {
                if ((*c)->call == call) {
                        ReloadClient *dead = *c;

                        *c = dead->next;
                        varlink_call_unref(dead->call);
                        json_decref(dead->errors);
                        free(dead);
                        return;
                }
        }
}

/* A reload the daemon stops in is never over: its callers see the connection close. */
static void free_reloads(Api *a)
{
        while (a->reloads) {
                VarlinkCallCtx *call = a->reloads->call;

                varlink_call_set_close_callback(call, NULL, NULL);
                reload_closed(call, a);
        }
}

/* The errors of @diag, as Reload's InvalidConfiguration names them. */
static json_t *config_errors(const ConfigDiag *diag)
{
        json_t *errors = json_array();

        for (size_t i = 0; errors && i < diag->n_messages; i++) {
                if (diag->messages[i].severity == CONFIG_SEVERITY_ERROR) {
                        json_array_append_new(errors, json_string(diag->messages[i].text));
                }
        }
        if (errors && json_array_size(errors) == 0) {
                json_array_append_new(errors, json_string("the options jitterd was started with "
                                                          "contradict the configuration (its log "
                                                          "says how)"));
        }
        return errors;
}

/* Reloads the configuration as SIGHUP does, and answers once the reload is over, at the
 * READY=1 that ends it (api_ready()): with nothing when every probe runs with the new
 * configuration, InvalidConfiguration when the files have errors and the running
 * configuration stays, ReloadRolledBack when the new probes could not start and the previous
 * ones run again. Where no probe can run again the daemon ends (manager_reload()), and so does
 * this call, unanswered. */
static int method_reload(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{NULL, 0, false}};
        Api *a = userdata;
        Manager *m = a->manager;
        ConfigDiag diag = {0};
        ReloadClient *c;
        uid_t uid;
        int r;

        if (varlink_call_check_params(call, params, fields, 0) < 0) {
                return 0;
        }
        if (!peer_is_admin(m, call)) {
                return varlink_call_error(call, "org.varlink.service.PermissionDenied", NULL);
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                return -ENOMEM;
        }
        varlink_call_peer(call, &uid, NULL, NULL);
        log_info("reload asked by uid %u", (unsigned)uid);
        r = manager_reload(m, &diag);
        c->result = r < 0 ? MANAGER_RELOAD_APPLIED : (ManagerReload)r;
        if (c->result == MANAGER_RELOAD_KEPT) {
                c->errors = config_errors(&diag);
        }
        config_diag_clear(&diag);
        c->call = varlink_call_ref(call);
        c->next = a->reloads;
        a->reloads = c;
        varlink_call_set_close_callback(call, reload_closed, a);
        return 0;
}

void api_ready(Api *a)
{
        while (a->reloads) {
                ReloadClient *c = a->reloads;

                a->reloads = c->next;
                varlink_call_set_close_callback(c->call, NULL, NULL);
                if (c->result == MANAGER_RELOAD_KEPT) {
                        /* Stolen, even where the pack fails. */
                        varlink_call_error(c->call, "io.jitterd.InvalidConfiguration",
                                           json_pack("{so}", "errors", c->errors));
                } else if (c->result == MANAGER_RELOAD_ROLLED_BACK) {
                        varlink_call_error(c->call, "io.jitterd.ReloadRolledBack",
                                           json_pack("{ss}", "reason", RELOAD_ROLLED_BACK));
                } else {
                        varlink_call_reply(c->call, NULL);
                }
                varlink_call_unref(c->call);
                free(c);
        }
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

size_t api_n_reloads(const Api *a)
{
        size_t n = 0;

        for (const ReloadClient *c = a->reloads; c; c = c->next) {
                n++;
        }
        return n;
}

static void on_ready(Manager *m, void *userdata)
{
        api_ready(userdata);
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
                {"Reload", method_reload, 0},
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
                                         .ready = on_ready,
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
        free_reloads(a);
        forget_intervals(a);
        free(a->queues);
        reply_cache_free(a->stats_cache);
        free(a->scratch);
        free(a);
        return NULL;
}

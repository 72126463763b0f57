/* The io.jitterd Varlink interface: one handler per method, dispatched from a table. */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "fit.h"
#include "periodicity.h"
#include "interface.h"
#include "cpulist.h"
#include "isolation.h"
#include "duration.h"
#include "log.h"
#include "manager.h"
#include "summary-json.h"
#include "summary.h"

#define EVENTS_LIMIT_DEFAULT 1000
#define EVENTS_LIMIT_MAX 10000

typedef struct MonitorClient {
        VarlinkCallCtx *call;
        cpu_set_t cpus;
        struct MonitorClient *next;
} MonitorClient;

static const struct {
        const char *name;
        uint64_t ns;
} windows[] = {
        {"10s", 10ULL * 1000000000ULL},    {"1m", 60ULL * 1000000000ULL},
        {"5m", 300ULL * 1000000000ULL},    {"1h", 3600ULL * 1000000000ULL},
        {"24h", 86400ULL * 1000000000ULL},
};

int manager_window(const Manager *m, const char *window, uint64_t *ret_from_ns, uint64_t *ret_to_ns,
                   bool *ret_all)
{
        uint64_t now = manager_now_ns(CLOCK_MONOTONIC);

        *ret_to_ns = now;
        *ret_all = false;
        if (strcmp(window, "all") == 0) {
                *ret_from_ns = 0;
                *ret_to_ns = UINT64_MAX;
                *ret_all = true;
                return 0;
        }
        for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
                if (strcmp(window, windows[i].name) == 0) {
                        *ret_from_ns = now > windows[i].ns ? now - windows[i].ns : 0;
                        return 0;
                }
        }
        return -EINVAL;
}

static ProbeCtl *find_probe(Manager *m, json_int_t cpu)
{
        for (size_t i = 0; i < m->n_probes; i++) {
                if (m->probes[i].cpu == cpu) {
                        return &m->probes[i];
                }
        }
        return NULL;
}

static int error_no_such_cpu(VarlinkCallCtx *call, json_int_t cpu)
{
        return varlink_call_error(call, "io.jitterd.NoSuchCpu", json_pack("{sI}", "cpu", cpu));
}

/* Reads the optional "cpus" array into @ret (default: every probed CPU). Answers the call and
 * returns -EINVAL for a CPU that is not probed or a malformed entry. */
static int get_cpus(Manager *m, VarlinkCallCtx *call, json_t *params, cpu_set_t *ret)
{
        json_t *arr = json_object_get(params, "cpus"), *v;
        size_t i;

        if (!arr || json_is_null(arr)) {
                *ret = m->cpus;
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
static int get_window(Manager *m, VarlinkCallCtx *call, json_t *params, const char *def,
                      const char **ret_name, uint64_t *from, uint64_t *to, bool *all)
{
        const char *w = def;

        if (varlink_get_string(params, "window", def, &w) < 0) {
                varlink_call_error_invalid_parameter(call, "window");
                return -EINVAL;
        }
        if (manager_window(m, w, from, to, all) < 0) {
                varlink_call_error(call, "io.jitterd.InvalidWindow",
                                   json_pack("{ss}", "window", w));
                return -EINVAL;
        }
        *ret_name = w;
        return 0;
}

/* Adds the attribution counters of @d to @o as GetStats has them: "interrupts", "softirqs"
 * and "ctxsw" maps keyed by the source's name without its prefix, and "smi". */
int api_attrib_to_json(Manager *m, const AttribDelta *d, json_t *o)
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
                const char *name = attrib_table_name(m->attrib, d->items[i].id);
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

typedef struct FitCtx {
        Fit *fit;
        const TickConv *conv;
} FitCtx;

static int add_fit_point(const HistoryPoint *pt, void *userdata)
{
        FitCtx *c = userdata;

        if (!pt->stalled && pt->attrib) {
                (void)fit_add(c->fit, (double)tickconv_to_ns(c->conv, pt->lost_ticks),
                              pt->attrib->items, pt->attrib->n);
        }
        return 0;
}

/* Every attribution source that moved in the window, with its rate, and over windows of at
 * least FIT_MIN_INTERVALS intervals what a least-squares fit of time lost per interval
 * against the counts per interval says each occurrence costs. Largest explained share first,
 * then by count. */
static json_t *causes_to_json(Manager *m, int cpu, const HistoryWindow *w)
{
        json_t *arr = json_array();
        FitResult *res = NULL;
        Fit *fit = NULL;
        bool *used;

        if (!arr) {
                return NULL;
        }
        if (w->intervals >= FIT_MIN_INTERVALS && fit_new(w->intervals + 16, &fit) == 0) {
                FitCtx c = {fit, &m->counter.conv};

                history_foreach_point(m->history, cpu, w->from_ns, w->to_ns, add_fit_point, &c);
                res = malloc(sizeof(*res));
                if (res && fit_solve(fit, res) < 0) {
                        free(res);
                        res = NULL;
                }
                fit_free(fit);
        }
        used = calloc(w->attrib.n + 1, sizeof(bool));
        if (res && used) {
                for (size_t k = 0; k < res->n; k++) {
                        const char *name = attrib_table_name(m->attrib, res->sources[k].id);
                        uint64_t count = attrib_delta_get(&w->attrib, res->sources[k].id);

                        if (!name) {
                                continue;
                        }
                        json_array_append_new(
                                arr, json_pack("{ss sI sf sf sf}", "source", name, "count",
                                               (json_int_t)count, "per_second",
                                               w->duration_ns ? (double)count * 1e9 /
                                                                        (double)w->duration_ns
                                                              : 0.0,
                                               "cost_ns", res->sources[k].cost_ns, "explains",
                                               res->sources[k].share));
                        for (size_t i = 0; i < w->attrib.n; i++) {
                                if (w->attrib.items[i].id == res->sources[k].id) {
                                        used[i] = true;
                                }
                        }
                }
        }
        /* Sources without a fit, most frequent first. */
        for (;;) {
                size_t best = SIZE_MAX;

                for (size_t i = 0; used && i < w->attrib.n; i++) {
                        if (!used[i] && (best == SIZE_MAX ||
                                         w->attrib.items[i].count > w->attrib.items[best].count)) {
                                best = i;
                        }
                }
                if (best == SIZE_MAX) {
                        break;
                }
                used[best] = true;
                {
                        const char *name = attrib_table_name(m->attrib, w->attrib.items[best].id);
                        uint64_t count = w->attrib.items[best].count;

                        if (name && count > 0) {
                                json_array_append_new(
                                        arr,
                                        json_pack("{ss sI sf}", "source", name, "count",
                                                  (json_int_t)count, "per_second",
                                                  w->duration_ns ? (double)count * 1e9 /
                                                                           (double)w->duration_ns
                                                                 : 0.0));
                        }
                }
        }
        free(used);
        free(res);
        return arr;
}

/* Periods at which the window's interruptions repeat, from their start times. */
static json_t *periods_to_json(Manager *m, int cpu, const HistoryWindow *w)
{
        size_t max = m->config.history_events_per_cpu, n;
        HistoryEvent *ev = calloc(max ? max : 1, sizeof(*ev));
        uint64_t *starts = calloc(max ? max : 1, sizeof(uint64_t));
        json_t *arr = json_array();
        PeriodicityOptions opt;
        PeriodicityResult res;
        cpu_set_t one;

        if (!ev || !starts || !arr) {
                free(ev);
                free(starts);
                return arr;
        }
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        n = history_events(m->history, &one, w->from_ns, 0, ev, max);
        for (size_t i = 0; i < n; i++) {
                starts[i] = ev[i].start_ns;
        }
        periodicity_options_init(&opt);
        /* A period is reported from 3 % of the interruptions that no shorter period explains:
         * a real CPU carries hundreds of unrelated ones per second, among which a theft every
         * 137 ms is a few per cent. Chance periods are kept out by the analysis' own tests
         * against chance, not by this share. */
        opt.min_share = 0.03;
        opt.online_cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
        if (n > 0 && periodicity_find(starts, n, &opt, &res) == 0) {
                for (size_t k = 0; k < res.n; k++) {
                        json_t *o = json_pack("{sI sI sf}", "period_ns",
                                              (json_int_t)res.periods[k].period_ns, "events",
                                              (json_int_t)res.periods[k].events, "share",
                                              res.periods[k].share);

                        if (res.periods[k].source) {
                                json_object_set_new(o, "source",
                                                    json_string(res.periods[k].source));
                        }
                        json_array_append_new(arr, o);
                }
        }
        free(ev);
        free(starts);
        return arr;
}

/* Adds "causes" and "periods" to @o, from the cache when this window of this CPU was analysed
 * since the last harvest. */
static void analysis_to_json(Manager *m, int cpu, const char *window, const HistoryWindow *w,
                             json_t *o)
{
        const size_t n = sizeof(m->analysis_cache) / sizeof(m->analysis_cache[0]);
        struct AnalysisCache *c;

        for (size_t i = 0; i < n; i++) {
                c = &m->analysis_cache[i];
                if (c->causes && c->generation == m->generation && c->cpu == cpu &&
                    strcmp(c->window, window) == 0) {
                        json_object_set(o, "causes", c->causes);
                        json_object_set(o, "periods", c->periods);
                        return;
                }
        }
        c = &m->analysis_cache[m->analysis_next++ % n];
        json_decref(c->causes);
        json_decref(c->periods);
        c->causes = causes_to_json(m, cpu, w);
        c->periods = periods_to_json(m, cpu, w);
        c->generation = m->generation;
        c->cpu = cpu;
        snprintf(c->window, sizeof(c->window), "%s", window);
        json_object_set(o, "causes", c->causes);
        json_object_set(o, "periods", c->periods);
}

static json_t *api_cpu_stats(Manager *m, int cpu, const char *window, const HistoryWindow *w,
                             bool analyses)
{
        SlotSummary s;
        json_t *o;

        slot_summarize(&w->slot, &m->counter.conv, w->duration_ns, &s);
        /* A stall needs no extra count: the interval that ends it holds its gap, which is an
         * interruption like any other. */
        o = slot_summary_to_json(&s);
        json_object_set_new(o, "cpu", json_integer(cpu));
        json_object_set_new(o, "window", json_string(window));
        json_object_set_new(o, "from_ns", json_integer((json_int_t)w->from_ns));
        json_object_set_new(o, "to_ns", json_integer((json_int_t)w->to_ns));
        json_object_set_new(o, "stalls", json_integer((json_int_t)w->stalls));
        (void)api_attrib_to_json(m, &w->attrib, o);
        if (analyses) {
                analysis_to_json(m, cpu, window, w, o);
        }
        return o;
}

json_t *api_stats(Manager *m, const cpu_set_t *cpus, const char *window, bool analyses)
{
        uint64_t from, to;
        bool all;
        HistoryWindow *w;
        json_t *arr;

        if (manager_window(m, window, &from, &to, &all) < 0) {
                return NULL;
        }
        w = malloc(sizeof(*w));
        arr = json_array();
        if (!w || !arr) {
                free(w);
                json_decref(arr);
                return NULL;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, cpus)) {
                        continue;
                }
                if (history_query(m->history, cpu, from, to, all, w) < 0) {
                        memset(w, 0, sizeof(*w));
                        probe_slot_clear(&w->slot);
                }
                json_array_append_new(arr, api_cpu_stats(m, cpu, window, w, analyses));
        }
        free(w);
        return arr;
}

static int method_get_stats(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpus", JSON_ARRAY, false},
                {"window", JSON_STRING, false},
        };
        Manager *m = userdata;
        const char *window;
        uint64_t from, to;
        bool all;
        cpu_set_t cpus;
        json_t *arr;

        if (varlink_call_check_params(call, params, fields, 2) < 0 ||
            get_cpus(m, call, params, &cpus) < 0 ||
            get_window(m, call, params, "1m", &window, &from, &to, &all) < 0) {
                return 0;
        }
        (void)from;
        (void)to;
        (void)all;
        arr = api_stats(m, &cpus, window, true);
        if (!arr) {
                return -ENOMEM;
        }
        return varlink_call_reply(call, json_pack("{so}", "cpus", arr));
}

json_t *api_histogram(Manager *m, int cpu, const char *window, const char *kind)
{
        uint64_t from, to;
        bool all;
        HistoryWindow *w;
        json_t *buckets, *reply;
        double min_ns = 0, max_ns = 0;

        if (manager_window(m, window, &from, &to, &all) < 0) {
                return NULL;
        }
        w = malloc(sizeof(*w));
        if (!w) {
                return NULL;
        }
        if (history_query(m->history, (int)cpu, from, to, all, w) < 0) {
                memset(w, 0, sizeof(*w));
                probe_slot_clear(&w->slot);
        }
        if (strcmp(kind, "gap") == 0) {
                buckets = histogram_to_json(&w->slot.gap_hist, &m->counter.conv);
                if (w->slot.gap.count) {
                        min_ns = (double)tickconv_to_ns(&m->counter.conv, w->slot.gap.min);
                        max_ns = (double)tickconv_to_ns(&m->counter.conv, w->slot.gap.max);
                }
        } else {
                buckets = signed_histogram_to_json(&w->slot.dd_hist, &m->counter.conv);
                if (w->slot.dd.count) {
                        min_ns = tickconv_signed_to_ns(&m->counter.conv, w->slot.dd.min);
                        max_ns = tickconv_signed_to_ns(&m->counter.conv, w->slot.dd.max);
                }
        }
        reply = json_pack(
                "{sI ss ss sI sf sf so}", "cpu", cpu, "window", window, "kind", kind, "total",
                (json_int_t)(strcmp(kind, "gap") == 0 ? w->slot.gap.count : w->slot.dd.count),
                "min_ns", min_ns, "max_ns", max_ns, "buckets", buckets);
        free(w);
        return reply;
}

static int method_get_histogram(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpu", JSON_INTEGER, true},
                {"window", JSON_STRING, false},
                {"kind", JSON_STRING, false},
        };
        Manager *m = userdata;
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
        if (varlink_get_string(params, "kind", "gap", &kind) < 0 ||
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

        if (varlink_get_string(params, name, NULL, &text) < 0) {
                varlink_call_error_invalid_parameter(call, name);
                return -EINVAL;
        }
        if (!text) {
                *ret = def;
                return 0;
        }
        if (duration_parse(text, 1000000000ULL, ret) < 0) {
                varlink_call_error(call, "io.jitterd.InvalidDuration",
                                   json_pack("{ss ss}", "parameter", name, "value", text));
                return -EINVAL;
        }
        return 0;
}

static int method_get_events(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"cpus", JSON_ARRAY, false},
                {"since", JSON_STRING, false},
                {"min_duration", JSON_STRING, false},
                {"limit", JSON_INTEGER, false},
        };
        Manager *m = userdata;
        uint64_t since = 0, min = 0, now = manager_now_ns(CLOCK_MONOTONIC);
        json_int_t limit;
        cpu_set_t cpus;
        HistoryEvent *ev;
        json_t *arr;
        size_t n;

        if (varlink_call_check_params(call, params, fields, 4) < 0 ||
            get_cpus(m, call, params, &cpus) < 0 ||
            get_duration(call, params, "since", 0, &since) < 0 ||
            get_duration(call, params, "min_duration", 0, &min) < 0) {
                return 0;
        }
        if (varlink_get_int(params, "limit", 1, EVENTS_LIMIT_MAX, EVENTS_LIMIT_DEFAULT, &limit) <
            0) {
                return varlink_call_error_invalid_parameter(call, "limit");
        }
        ev = calloc((size_t)limit, sizeof(*ev));
        arr = json_array();
        if (!ev || !arr) {
                free(ev);
                json_decref(arr);
                return -ENOMEM;
        }
        n = history_events(m->history, &cpus, since && since < now ? now - since : 0, min, ev,
                           (size_t)limit);
        for (size_t i = 0; i < n; i++) {
                char when[64];
                json_t *o;

                realtime_format_iso8601(when, sizeof(when), ev[i].start_real_ns);
                o = json_pack("{si sI ss sI}", "cpu", ev[i].cpu, "start_ns",
                              (json_int_t)ev[i].start_ns, "realtime", when, "duration_ns",
                              (json_int_t)ev[i].duration_ns);
                if (!o || manager_trace_event_to_json(m, &ev[i], o) < 0) {
                        json_decref(o);
                        o = NULL;
                }
                if (json_array_append_new(arr, o) < 0) {
                        free(ev);
                        json_decref(arr);
                        return -ENOMEM;
                }
        }
        free(ev);
        return varlink_call_reply(call, json_pack("{so}", "events", arr));
}

typedef struct TimelineCtx {
        Manager *m;
        json_t *points;
} TimelineCtx;

static int add_point(const HistoryPoint *pt, void *userdata)
{
        TimelineCtx *c = userdata;
        const TickConv *conv = &c->m->counter.conv;

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
        Manager *m = userdata;
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
        history_foreach_point(m->history, (int)cpu, from, to, add_point, &c);
        return varlink_call_reply(
                call, json_pack("{sI ss so}", "cpu", cpu, "window", window, "points", c.points));
}

json_t *api_status(Manager *m)
{
        uint64_t now = manager_now_ns(CLOCK_MONOTONIC);
        json_t *probes = json_array(), *cfg;
        char cpus[256], when[64];
        HistoryWindow *w = malloc(sizeof(*w));
        Isolation *iso = malloc(sizeof(*iso));

        if (!w || !probes || !iso) {
                free(w);
                free(iso);
                json_decref(probes);
                return NULL;
        }
        /* Read at every call: cpusets change while the daemon runs. */
        (void)isolation_read(NULL, iso);
        for (size_t i = 0; i < m->n_probes; i++) {
                const IsolationSet *set;
                ProbeCtl *p = &m->probes[i];
                char why[PROBE_FAILURE_MAX + 64];
                uint64_t worst = 0;
                json_t *o;
                int to;

                if (history_query(m->history, p->cpu, now - 60ULL * 1000000000ULL, now, false, w) ==
                            0 &&
                    w->slot.gap.count > 0) {
                        worst = tickconv_to_ns(&m->counter.conv, w->slot.gap.max);
                }
                o = json_pack(
                        "{si ss ss si sI sI sI}", "cpu", p->cpu, "state", manager_probe_state(p),
                        "policy", m->config.probe_priority ? "SCHED_FIFO" : "SCHED_OTHER",
                        "priority", (int)m->config.probe_priority, "samples",
                        (json_int_t)p->samples_total, "floor_ns",
                        (json_int_t)tickconv_to_ns(&m->counter.conv, probe_floor_ticks(p->probe)),
                        "worst_gap_1m_ns", (json_int_t)worst);
                json_object_set_new(
                        o, "isolation",
                        json_string(isolation_kind_to_string(isolation_of(iso, p->cpu, &set))));
                if (set) {
                        json_object_set_new(o, "isolation_cpuset", json_string(set->path));
                }
                to = probe_migrated_to(p->probe);
                if (to >= 0 && probe_state(p->probe) == PROBE_MIGRATED) {
                        json_object_set_new(o, "migrated_to", json_integer(to));
                }
                if (manager_probe_failure(p, why, sizeof(why))) {
                        json_object_set_new(o, "failure", json_string(why));
                        json_object_set_new(o, "reason", json_string(why));
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
                json_array_append_new(probes, o);
        }
        free(iso);
        free(w);
        cfg = json_pack("{ss si sI sI sI sI sI si sI ss ss}", "cpus",
                        cpulist_format(cpus, sizeof(cpus), &m->cpus), "priority",
                        (int)m->config.probe_priority, "threshold_ns",
                        (json_int_t)m->config.probe_threshold_ns, "preheat_ns",
                        (json_int_t)m->config.probe_preheat_ns, "interval_ns",
                        (json_int_t)m->config.history_interval_ns, "fine_retention_ns",
                        (json_int_t)m->config.history_fine_retention_ns, "coarse_retention_ns",
                        (json_int_t)m->config.history_coarse_retention_ns, "events_per_cpu",
                        (int)m->config.history_events_per_cpu, "checkpoint_ns",
                        (json_int_t)m->config.history_checkpoint_ns, "state_dir",
                        m->config.history_state_dir, "socket", m->socket_path);
        if (m->config.export_prometheus_textfile[0]) {
                json_object_set_new(cfg, "prometheus_textfile",
                                    json_string(m->config.export_prometheus_textfile));
        }
        realtime_format_iso8601(when, sizeof(when), m->start_real_ns);
        return json_pack(
                "{ss sI ss s{ss sI ss sf sf} so so sI}", "version", JITTERD_VERSION, "uptime_ns",
                (json_int_t)(now - m->start_mono_ns), "start_realtime", when, "counter", "source",
                counter_source_name(m->counter.source), "hz", (json_int_t)m->counter.hz,
                "hz_source", counter_hz_source_name(m->counter.hz_source), "precision_ppm",
                m->counter.precision_ppm, "drift_ppm", m->drift_ppm, "probes", probes, "config",
                cfg, "history_bytes", (json_int_t)history_memory_bytes(m->history));
}

static int method_get_status(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{NULL, 0, false}};
        Manager *m = userdata;
        json_t *reply;

        if (varlink_call_check_params(call, params, fields, 0) < 0) {
                return 0;
        }
        reply = api_status(m);
        if (!reply || json_object_set_new(reply, "trace", manager_trace_status(m)) < 0) {
                json_decref(reply);
                return -ENOMEM;
        }
        return varlink_call_reply(call, reply);
}

static void monitor_closed(VarlinkCallCtx *call, void *userdata)
{
        Manager *m = userdata;

        for (MonitorClient **c = &m->monitors; *c; c = &(*c)->next) {
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
        Manager *m = userdata;
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
        c->next = m->monitors;
        m->monitors = c;
        varlink_call_set_close_callback(call, monitor_closed, m);
        return 0;
}

void manager_notify_monitors(Manager *m)
{
        char when[64];

        if (!m->monitors) {
                return;
        }
        for (MonitorClient *c = m->monitors; c; c = c->next) {
                json_t *cpus = json_array();
                uint64_t start = 0, dur = 0;

                for (size_t i = 0; i < m->n_probes; i++) {
                        ProbeCtl *p = &m->probes[i];
                        SlotSummary s = {0};
                        json_t *o;

                        if (!CPU_ISSET(p->cpu, &c->cpus)) {
                                continue;
                        }
                        if (p->have_last) {
                                slot_summarize(&p->last, &m->counter.conv, p->last_duration_ns, &s);
                                start = p->last_start_ns;
                                dur = p->last_duration_ns;
                        }
                        o = json_pack("{si ss sI sI sf sI sI sf}", "cpu", p->cpu, "state",
                                      manager_probe_state(p), "samples", (json_int_t)s.samples,
                                      "max_gap_ns", (json_int_t)s.gap.max_ns, "p99_ns",
                                      s.gap.pct_ns[1], "interruptions", (json_int_t)s.events,
                                      "lost_ns", (json_int_t)s.lost_ns, "cpu_available_pct",
                                      s.cpu_available_pct);
                        (void)api_attrib_to_json(
                                m, p->have_last ? &p->last_attrib : &(AttribDelta){0}, o);
                        json_object_del(o, "softirqs");
                        json_object_del(o, "ctxsw");
                        json_object_del(o, "smi");
                        json_array_append_new(cpus, o);
                }
                clock_pair_map(&m->clock_ref, &m->counter.conv, m->clock_ref.ticks, NULL, NULL);
                (void)varlink_call_reply_continue(
                        c->call,
                        json_pack("{sI ss sI so}", "start_ns", (json_int_t)start, "realtime",
                                  realtime_format_iso8601(when, sizeof(when),
                                                          manager_now_ns(CLOCK_REALTIME) - dur),
                                  "duration_ns", (json_int_t)dur, "cpus", cpus));
        }
}

void manager_free_monitors(Manager *m)
{
        while (m->monitors) {
                MonitorClient *c = m->monitors;

                m->monitors = c->next;
                varlink_call_set_close_callback(c->call, NULL, NULL);
                varlink_call_reply(c->call, NULL);
                varlink_call_unref(c->call);
                free(c);
        }
}

static int method_audit(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{NULL, 0, false}};
        Manager *m = userdata;
        AuditOptions opt;
        json_t *report;
        int r;

        if (varlink_call_check_params(call, params, fields, 0) < 0) {
                return 0;
        }
        audit_options_init(&opt);
        opt.probe_priority = m->config.probe_priority;
        r = audit_run(m->config.audit_root, &m->cpus, &opt, &report);
        if (r < 0) {
                return r;
        }
        return varlink_call_reply(call, report);
}

/* Root, or a member of the admin group (primary or supplementary, read from the peer's
 * /proc/PID/status since SO_PEERCRED carries only the primary group). */
static bool peer_is_admin(Manager *m, VarlinkCallCtx *call)
{
        uid_t uid;
        gid_t gid;
        pid_t pid;
        char path[64], line[4096];
        bool ok = false;
        FILE *f;

        varlink_call_peer(call, &uid, &gid, &pid);
        if (uid == 0) {
                return true;
        }
        if (!m->have_admin_gid) {
                return false;
        }
        if (gid == m->admin_gid) {
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
                                ok = ok || g == m->admin_gid;
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
        Manager *m = userdata;
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
                        history_reset(m->history, cpu);
                        manager_trace_reset(m, cpu);
                }
        }
        log_notice("history reset by uid %u", (unsigned)uid);
        return varlink_call_reply(call, NULL);
}

int manager_add_api(Manager *m)
{
        static const VarlinkMethod methods[] = {
                {"GetStatus", method_get_status, 0},
                {"GetStats", method_get_stats, 0},
                {"GetHistogram", method_get_histogram, 0},
                {"GetEvents", method_get_events, 0},
                {"GetTimeline", method_get_timeline, 0},
                {"Monitor", method_monitor, VARLINK_METHOD_REQUIRES_MORE},
                {"Audit", method_audit, 0},
                {"Reset", method_reset, 0},
        };
        /* The description is config/io.jitterd.varlink, compiled in (interface.c). */
        return varlink_server_add_interface(m->server, "io.jitterd", jitterd_interface_description,
                                            methods, sizeof(methods) / sizeof(methods[0]));
}

/* The analyses of a window for GetStats: causes on the loop, periods on the worker. */

#include "analyses.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit.h"
#include "log.h"
#include "periodicity.h"
#include "util.h"
#include "worker.h"

/* Windows analysed and kept until the next harvest, per CPU the host has (at least 16): one
 * GetStats over every CPU must not push its own first entries out. */
#define CACHE_PER_CPU 4
#define CACHE_MIN 16

/* One CPU's window, analysed for one generation; periods NULL while they are worked out. */
typedef struct CacheEntry {
        uint64_t generation;
        int cpu;
        char window[8];
        json_t *causes;
        json_t *background; /* NULL without a fit */
        json_t *periods;
} CacheEntry;

/* The periodicity of one CPU's window, for the worker: its inputs copied, its result. */
typedef struct PeriodsJob {
        uint64_t generation;
        int cpu;
        char window[8];
        uint64_t *starts;
        size_t n;
        unsigned online_cpus;
        int r;
        PeriodicityResult res;
        uint64_t cpu_ns;         /* the worker's CPU time for it, charged to GetStats */
        struct PeriodsJob *next; /* in the backlog */
} PeriodsJob;

/* A GetStats call waiting for the periods of some of its CPUs. */
typedef struct Pending {
        VarlinkCallCtx *call;
        json_t *cpus; /* the reply's entries */
        uint64_t generation;
        char window[8];
        unsigned missing;
        struct Pending *next;
} Pending;

struct Analyses {
        Manager *manager;
        Worker *worker;
        uint64_t generation;
        CacheEntry *cache;
        size_t cache_size;
        size_t cache_next;
        Pending *pending;
        int last_error; /* of the last periodicity that failed, logged once */
        /* Jobs for when the worker's queue has room again, oldest first; at most
         * cache_size of them. */
        PeriodsJob *backlog, **backlog_tail;
        size_t n_backlog;
};

typedef struct FitCtx {
        Fit *fit;
        const TickConv *conv;
} FitCtx;

static int add_fit_point(const HistoryPoint *pt, void *userdata)
{
        FitCtx *c = userdata;

        if (!pt->stalled && pt->attrib) {
                (void)fit_add(c->fit, (double)tickconv_to_ns(c->conv, pt->lost_ticks),
                              (double)pt->duration_ns, pt->attrib->items, pt->attrib->n);
        }
        return 0;
}

/* One source of the fit in GetStats' causes: its count and rate over @w, its cost and share,
 * the share's standard error (null where the fit cannot tell the source apart from others
 * that move with it), its @group (the source that names the group of sources whose counts
 * move with its own) and the standard error of the group's total share. */
static json_t *fit_source_to_json(const char *name, uint64_t count, const HistoryWindow *w,
                                  const FitSource *src, const char *group)
{
        return json_pack("{ss sI sf sf sf so ss so}", "source", name, "count", (json_int_t)count,
                         "per_second",
                         w->duration_ns ? (double)count * 1e9 / (double)w->duration_ns : 0.0,
                         "cost_ns", src->cost_ns, "explains", src->share, "explains_stderr",
                         isfinite(src->share_stderr) ? json_real(src->share_stderr) : json_null(),
                         "group", group ? group : name, "group_explains_stderr",
                         isfinite(src->group_share_stderr) ? json_real(src->group_share_stderr)
                                                           : json_null());
}

/* The least-squares fit over the intervals of @cpu's window @w, or NULL (fewer than
 * FIT_MIN_INTERVALS, out of memory); free() it. */
static FitResult *fit_window(Manager *m, int cpu, const HistoryWindow *w)
{
        FitResult *res = NULL;
        Fit *fit = NULL;

        if (w->intervals >= FIT_MIN_INTERVALS && fit_new(w->intervals + 16, &fit) == 0) {
                FitCtx c = {fit, manager_tickconv(m)};

                history_foreach_point(manager_history(m), cpu, w->from_ns, w->to_ns, add_fit_point,
                                      &c);
                res = malloc(sizeof(*res));
                if (res && fit_solve(fit, res) < 0) {
                        free(res);
                        res = NULL;
                }
                fit_free(fit);
        }
        return res;
}

/* Every attribution source that moved in the window, with its rate, and over windows of at
 * least FIT_MIN_INTERVALS intervals what a least-squares fit of time lost per interval
 * against the counts per interval says each occurrence costs. Largest explained share first,
 * then by count. The fit's background (time lost with no counter) in *@ret_background, NULL
 * without a fit. */
static json_t *causes_to_json(Manager *m, int cpu, const HistoryWindow *w, json_t **ret_background)
{
        json_t *arr = json_array();
        FitResult *res;
        bool *used;

        *ret_background = NULL;
        if (!arr) {
                return NULL;
        }
        res = fit_window(m, cpu, w);
        if (res) {
                *ret_background = json_pack("{sf sf so}", "ns_per_second", res->background_ns_per_s,
                                            "explains", res->background_share, "explains_stderr",
                                            isfinite(res->background_share_stderr)
                                                    ? json_real(res->background_share_stderr)
                                                    : json_null());
        }
        used = calloc(w->attrib.n + 1, sizeof(bool));
        if (res && used) {
                for (size_t k = 0; k < res->n; k++) {
                        const char *name = attrib_table_name(manager_attrib(m), res->sources[k].id);
                        uint64_t count = attrib_delta_get(&w->attrib, res->sources[k].id);

                        if (!name) {
                                continue;
                        }
                        json_array_append_new(
                                arr, fit_source_to_json(name, count, w, &res->sources[k],
                                                        attrib_table_name(manager_attrib(m),
                                                                          res->sources[k].group)));
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
                        const char *name =
                                attrib_table_name(manager_attrib(m), w->attrib.items[best].id);
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

/* The inputs of the periodicity of @cpu over @w: the start times of the events the history
 * keeps from it. NULL when out of memory. */
static PeriodsJob *periods_job_new(Analyses *x, int cpu, const char *window, const HistoryWindow *w)
{
        Manager *m = x->manager;
        size_t max = manager_config(m)->history_events_per_cpu;
        HistoryEvent *ev = calloc(max ? max : 1, sizeof(*ev));
        PeriodsJob *j = calloc(1, sizeof(*j));
        cpu_set_t one;

        if (j) {
                j->starts = calloc(max ? max : 1, sizeof(uint64_t));
        }
        if (!ev || !j || !j->starts) {
                free(ev);
                if (j) {
                        free(j->starts);
                }
                free(j);
                return NULL;
        }
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        j->n = history_events(manager_history(m), &one, w->from_ns, 0, ev, max);
        for (size_t i = 0; i < j->n; i++) {
                j->starts[i] = ev[i].start_ns;
        }
        free(ev);
        j->generation = x->generation;
        j->cpu = cpu;
        snprintf(j->window, sizeof(j->window), "%s", window);
        j->online_cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
        return j;
}

static void periods_job_free(void *job)
{
        PeriodsJob *j = job;

        free(j->starts);
        free(j);
}

/* The worker's part: the analysis itself, on copied inputs only. */
static void periods_job_run(void *job)
{
        PeriodsJob *j = job;
        PeriodicityOptions opt;
        uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

        periodicity_options_init(&opt);
        /* A period is reported from 3 % of the interruptions that no shorter period explains,
         * or when it recurs on half its periods over the window: a real CPU carries hundreds of
         * unrelated interruptions per second, among which a theft every 137 ms is 1 % or less.
         * Chance periods are kept out by the analysis' own tests against chance, not by these
         * thresholds. */
        opt.min_share = 0.03;
        opt.min_fill = 0.5;
        opt.online_cpus = j->online_cpus;
        j->r = j->n > 0 ? periodicity_find(j->starts, j->n, &opt, &j->res) : -ENODATA;
        j->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
}

/* Periods at which the window's interruptions repeat, as GetStats has them. */
static json_t *periods_to_json(const PeriodsJob *j)
{
        json_t *arr = json_array();

        for (size_t k = 0; arr && j->r == 0 && k < j->res.n; k++) {
                const PeriodicityPeriod *p = &j->res.periods[k];
                json_t *o = json_pack("{sI sI sf}", "period_ns", (json_int_t)p->period_ns, "events",
                                      (json_int_t)p->events, "share", p->share);

                if (o && p->source) {
                        json_object_set_new(o, "source", json_string(p->source));
                }
                json_array_append_new(arr, o);
        }
        return arr;
}

static CacheEntry *cache_find(Analyses *x, uint64_t generation, int cpu, const char *window)
{
        for (size_t i = 0; i < x->cache_size; i++) {
                CacheEntry *c = &x->cache[i];

                if (c->causes && c->generation == generation && c->cpu == cpu &&
                    strcmp(c->window, window) == 0) {
                        return c;
                }
        }
        return NULL;
}

/* Completes the entries of @p that wait for @periods of @cpu; answers it once none waits. */
static bool pending_fill(Pending *p, int cpu, json_t *periods)
{
        json_t *o;
        size_t i;

        json_array_foreach(p->cpus, i, o)
        {
                if (json_integer_value(json_object_get(o, "cpu")) == cpu &&
                    !json_object_get(o, "periods")) {
                        json_object_set(o, "periods", periods);
                        p->missing--;
                }
        }
        if (p->missing > 0) {
                return false;
        }
        varlink_call_set_close_callback(p->call, NULL, NULL);
        (void)varlink_call_reply(p->call, json_pack("{sO}", "cpus", p->cpus));
        return true;
}

static void pending_free(Pending *p)
{
        varlink_call_unref(p->call);
        json_decref(p->cpus);
        free(p);
}

/* Hands the worker what it has room for, oldest first. */
static void submit_backlog(Analyses *x)
{
        while (x->backlog && worker_submit(x->worker, periods_job_run, x->backlog) == 0) {
                x->backlog = x->backlog->next;
                x->n_backlog--;
                if (!x->backlog) {
                        x->backlog_tail = &x->backlog;
                }
        }
}

/* True when a GetStats call waits for the periods @j works out. */
static bool job_awaited(const Analyses *x, const PeriodsJob *j)
{
        for (const Pending *p = x->pending; p; p = p->next) {
                json_t *o;
                size_t i;

                if (p->generation != j->generation || strcmp(p->window, j->window) != 0) {
                        continue;
                }
                json_array_foreach(p->cpus, i, o)
                {
                        if (json_integer_value(json_object_get(o, "cpu")) == j->cpu &&
                            !json_object_get(o, "periods")) {
                                return true;
                        }
                }
        }
        return false;
}

/* Drops the jobs of the backlog that no call waits for any more (their callers hung up), and
 * forgets their windows, which a later call then analyses anew. */
static void drop_unawaited(Analyses *x)
{
        x->backlog_tail = &x->backlog;
        for (PeriodsJob **jp = &x->backlog; *jp;) {
                PeriodsJob *j = *jp;
                CacheEntry *c;

                if (job_awaited(x, j)) {
                        x->backlog_tail = &j->next;
                        jp = &j->next;
                        continue;
                }
                c = cache_find(x, j->generation, j->cpu, j->window);
                if (c && !c->periods) {
                        json_decref(c->causes);
                        json_decref(c->background);
                        c->causes = c->background = NULL;
                }
                *jp = j->next;
                x->n_backlog--;
                periods_job_free(j);
        }
}

/* To the worker, or to the backlog while its queue is full. */
static void submit(Analyses *x, PeriodsJob *j)
{
        x->n_backlog++;
        j->next = NULL;
        *x->backlog_tail = j;
        x->backlog_tail = &j->next;
        submit_backlog(x);
}

/* On the loop, once the worker has analysed a window: into the cache, and to every call that
 * waits for it. */
static void on_periods_done(void *job, void *userdata)
{
        Analyses *x = userdata;
        PeriodsJob *j = job;
        CacheEntry *c = cache_find(x, j->generation, j->cpu, j->window);
        json_t *periods = periods_to_json(j);

        /* The clients' CPU budget covers the worker's part of their answers too. */
        varlink_server_charge(manager_server(x->manager), "io.jitterd.GetStats", j->cpu_ns);
        /* No periods then, rather than a wrong list; said once per cause. */
        if (j->r < 0 && j->r != -ENODATA && j->r != x->last_error) {
                log_warning("cannot look for periods in the interruptions of CPU %d: %s", j->cpu,
                            strerror(-j->r));
        }
        if (j->r != -ENODATA) {
                x->last_error = j->r < 0 ? j->r : 0;
        }

        if (c && !c->periods) {
                c->periods = json_incref(periods);
        }
        for (Pending **p = &x->pending; *p;) {
                if ((*p)->generation == j->generation && strcmp((*p)->window, j->window) == 0 &&
                    pending_fill(*p, j->cpu, periods)) {
                        Pending *done = *p;

                        *p = done->next;
                        pending_free(done);
                } else {
                        p = &(*p)->next;
                }
        }
        json_decref(periods);
        periods_job_free(j);
        submit_backlog(x);
}

static void pending_closed(VarlinkCallCtx *call, void *userdata)
{
        Analyses *x = userdata;

        for (Pending **p = &x->pending; *p; p = &(*p)->next) {
                if ((*p)->call == call) {
                        Pending *dead = *p;

                        *p = dead->next;
                        pending_free(dead);
                        drop_unawaited(x);
                        return;
                }
        }
}

int analyses_new(Manager *m, bool threaded, Analyses **ret)
{
        Analyses *x = calloc(1, sizeof(*x));
        int r;

        if (!x) {
                return -ENOMEM;
        }
        x->manager = m;
        x->backlog_tail = &x->backlog;
        x->cache_size = CACHE_PER_CPU * (size_t)sysconf(_SC_NPROCESSORS_CONF);
        if (x->cache_size < CACHE_MIN) {
                x->cache_size = CACHE_MIN;
        }
        x->cache = calloc(x->cache_size, sizeof(*x->cache));
        r = x->cache ? worker_new(manager_event(m), threaded, on_periods_done, x, &x->worker)
                     : -ENOMEM;
        if (r < 0) {
                free(x->cache);
                free(x);
                return r;
        }
        *ret = x;
        return 0;
}

Analyses *analyses_free(Analyses *x)
{
        if (!x) {
                return NULL;
        }
        x->worker = worker_free(x->worker, periods_job_free);
        while (x->backlog) {
                PeriodsJob *j = x->backlog;

                x->backlog = j->next;
                periods_job_free(j);
        }
        while (x->pending) {
                Pending *p = x->pending;

                x->pending = p->next;
                varlink_call_set_close_callback(p->call, NULL, NULL);
                pending_free(p);
        }
        for (size_t i = 0; i < x->cache_size; i++) {
                json_decref(x->cache[i].causes);
                json_decref(x->cache[i].background);
                json_decref(x->cache[i].periods);
        }
        free(x->cache);
        free(x);
        return NULL;
}

void analyses_next_generation(Analyses *x)
{
        x->generation++;
}

bool analyses_add(Analyses *x, int cpu, const char *window, const HistoryWindow *w, json_t *o)
{
        CacheEntry *c = cache_find(x, x->generation, cpu, window);
        PeriodsJob *j;

        if (!c) {
                c = &x->cache[x->cache_next++ % x->cache_size];
                json_decref(c->causes);
                json_decref(c->background);
                json_decref(c->periods);
                *c = (CacheEntry){.generation = x->generation, .cpu = cpu};
                snprintf(c->window, sizeof(c->window), "%s", window);
                c->causes = causes_to_json(x->manager, cpu, w, &c->background);
                /* A full backlog is as much as the callers can wait for (the jobs of callers
                 * that hung up are dropped): no periods then, as when out of memory. */
                j = x->n_backlog < x->cache_size ? periods_job_new(x, cpu, window, w) : NULL;
                if (j) {
                        submit(x, j);
                } else {
                        /* out of memory: no periods rather than none ever */
                        c->periods = json_array();
                }
        }
        json_object_set(o, "causes", c->causes);
        if (c->background) {
                json_object_set(o, "background", c->background);
        }
        if (!c->periods) {
                return true;
        }
        json_object_set(o, "periods", c->periods);
        return false;
}

int analyses_reply_later(Analyses *x, VarlinkCallCtx *call, json_t *cpus, const char *window,
                         unsigned missing)
{
        Pending *p = calloc(1, sizeof(*p));

        if (!p) {
                return -ENOMEM;
        }
        p->call = varlink_call_ref(call);
        p->cpus = cpus;
        p->generation = x->generation;
        snprintf(p->window, sizeof(p->window), "%s", window);
        p->missing = missing;
        p->next = x->pending;
        x->pending = p;
        varlink_call_set_close_callback(call, pending_closed, x);
        return 0;
}

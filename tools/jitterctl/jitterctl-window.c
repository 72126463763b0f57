/* Causes, background and periods of a window, from GetWindow's raw data. */

#include "jitterctl-window.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "fit.h"
#include "periodicity.h"
#include "util.h"

/* A source's count over the window, as the GetStats entry @entry has it (its maps hold every
 * source that moved), or -1 when the entry does not name it. */
static json_int_t entry_count(json_t *entry, const char *name)
{
        static const struct {
                const char *prefix;
                const char *key;
        } maps[] = {
                {"irq:", "interrupts"},
                {"softirq:", "softirqs"},
                {"ctxsw:", "ctxsw"},
        };
        json_t *v = NULL;

        if (strcmp(name, "smi") == 0) {
                v = json_object_get(entry, "smi");
        }
        for (size_t k = 0; k < ELEMENTSOF(maps); k++) {
                if (strncmp(name, maps[k].prefix, strlen(maps[k].prefix)) == 0) {
                        v = json_object_get(json_object_get(entry, maps[k].key),
                                            name + strlen(maps[k].prefix));
                }
        }
        return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Checks the intervals' part of @w and sums each source's counts into @sums (one per source).
 * Returns 0 or -EINVAL. */
static int check_intervals(json_t *w, uint64_t *sums)
{
        json_t *sources = json_object_get(w, "sources"), *counts = json_object_get(w, "counts");
        json_t *dur = json_object_get(w, "durations_ns"), *lost = json_object_get(w, "lost_ns");
        size_t n = json_array_size(counts), i;
        json_t *row;

        if (!json_is_array(sources) || !json_is_array(counts) || !json_is_array(dur) ||
            !json_is_array(lost) || json_array_size(dur) != n || json_array_size(lost) != n ||
            json_array_size(sources) > ATTRIB_MAX_SOURCES) {
                return -EINVAL;
        }
        for (i = 0; i < json_array_size(sources); i++) {
                if (!json_is_string(json_array_get(sources, i))) {
                        return -EINVAL;
                }
        }
        json_array_foreach(counts, i, row)
        {
                /* No more pairs than sources: the fit takes a row into a table of one item
                 * per source. */
                if (!json_is_array(row) || json_array_size(row) % 2 != 0 ||
                    json_array_size(row) / 2 > json_array_size(sources) ||
                    json_integer_value(json_array_get(dur, i)) <= 0 ||
                    json_integer_value(json_array_get(lost, i)) < 0) {
                        return -EINVAL;
                }
                for (size_t k = 0; k < json_array_size(row); k += 2) {
                        json_int_t id = json_integer_value(json_array_get(row, k));
                        json_int_t count = json_integer_value(json_array_get(row, k + 1));

                        if (!json_is_integer(json_array_get(row, k)) || id < 0 ||
                            (size_t)id >= json_array_size(sources) || count < 0) {
                                return -EINVAL;
                        }
                        sums[id] += (uint64_t)count;
                }
        }
        return 0;
}

/* The least-squares fit over the intervals of @w (checked), or NULL (fewer than
 * FIT_MIN_INTERVALS, out of memory); free() it. */
static FitResult *fit_window(json_t *w)
{
        json_t *counts = json_object_get(w, "counts"), *row;
        json_t *dur = json_object_get(w, "durations_ns"), *lost = json_object_get(w, "lost_ns");
        _cleanup_free_ AttribCount *items = NULL;
        FitResult *res = NULL;
        Fit *fit = NULL;
        size_t i;

        if (json_array_size(counts) < FIT_MIN_INTERVALS ||
            fit_new(json_array_size(counts) + 16, &fit) < 0) {
                return NULL;
        }
        items = calloc(ATTRIB_MAX_SOURCES, sizeof(*items));
        json_array_foreach(counts, i, row)
        {
                size_t n = 0;

                for (size_t k = 0; items && k < json_array_size(row); k += 2) {
                        items[n].id = (uint16_t)json_integer_value(json_array_get(row, k));
                        items[n].count = (uint64_t)json_integer_value(json_array_get(row, k + 1));
                        n++;
                }
                if (items) {
                        /* A row naming a source twice is left out, as the daemon's data never
                         * has one. */
                        (void)fit_add(fit, (double)json_integer_value(json_array_get(lost, i)),
                                      (double)json_integer_value(json_array_get(dur, i)), items, n);
                }
        }
        res = items ? malloc(sizeof(*res)) : NULL;
        if (res && fit_solve(fit, res) < 0) {
                free(res);
                res = NULL;
        }
        fit_free(fit);
        return res;
}

static double per_second(json_int_t count, double duration_ns)
{
        return duration_ns > 0 ? (double)count * 1e9 / duration_ns : 0.0;
}

static json_t *stderr_json(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

/* The causes: the fit's sources, largest share first, then every other source that moved,
 * most frequent first; as GetStats had them. */
static json_t *causes_json(json_t *w, json_t *entry, const uint64_t *sums, const FitResult *res)
{
        json_t *sources = json_object_get(w, "sources");
        size_t n = json_array_size(sources);
        double duration_ns = (double)json_integer_value(json_object_get(w, "duration_ns"));
        _cleanup_free_ bool *used = calloc(n + 1, sizeof(bool));
        json_t *arr = json_array();

        if (!arr || !used) {
                json_decref(arr);
                return NULL;
        }
        for (size_t k = 0; res && k < res->n; k++) {
                const FitSource *src = &res->sources[k];
                const char *name = json_string_value(json_array_get(sources, src->id));
                const char *group = json_string_value(json_array_get(sources, src->group));
                json_int_t count = entry_count(entry, name);

                count = count >= 0 ? count : (json_int_t)sums[src->id];
                used[src->id] = true;
                json_array_append_new(
                        arr,
                        json_pack("{ss sI sf sf sf so ss so}", "source", name, "count", count,
                                  "per_second", per_second(count, duration_ns), "cost_ns",
                                  src->cost_ns, "explains", src->share, "explains_stderr",
                                  stderr_json(src->share_stderr), "group", group ? group : name,
                                  "group_explains_stderr", stderr_json(src->group_share_stderr)));
        }
        for (;;) {
                size_t best = SIZE_MAX;
                json_int_t best_count = 0;

                for (size_t i = 0; i < n; i++) {
                        json_int_t c =
                                entry_count(entry, json_string_value(json_array_get(sources, i)));

                        c = c >= 0 ? c : (json_int_t)sums[i];
                        if (!used[i] && (best == SIZE_MAX || c > best_count)) {
                                best = i;
                                best_count = c;
                        }
                }
                if (best == SIZE_MAX) {
                        break;
                }
                used[best] = true;
                if (best_count > 0) {
                        json_array_append_new(
                                arr, json_pack("{ss sI sf}", "source",
                                               json_string_value(json_array_get(sources, best)),
                                               "count", best_count, "per_second",
                                               per_second(best_count, duration_ns)));
                }
        }
        return arr;
}

/* Decodes the delta-encoded starts @deltas into @ret (sorted ascending, as encoded); -EINVAL
 * for a bad list, -ENOMEM. */
static int decode_starts(json_t *deltas, uint64_t **ret, size_t *ret_n)
{
        size_t n = json_array_size(deltas), i;
        _cleanup_free_ uint64_t *starts = calloc(n ? n : 1, sizeof(uint64_t));
        uint64_t t = 0;
        json_t *d;

        if (!json_is_array(deltas)) {
                return -EINVAL;
        }
        if (!starts) {
                return -ENOMEM;
        }
        json_array_foreach(deltas, i, d)
        {
                json_int_t v = json_integer_value(d);

                if (!json_is_integer(d) || v < 0 || (uint64_t)v > UINT64_MAX - t) {
                        return -EINVAL;
                }
                t += (uint64_t)v;
                starts[i] = t;
        }
        *ret = starts;
        starts = NULL;
        *ret_n = n;
        return 0;
}

/* Two periods this close (relative) are one: the search's own tolerance is finer. */
#define PERIOD_SAME_REL 0.001

/* The periods among @n starts into @arr, each with @band (the duration band searched, or NULL
 * for all of them together) when given; a period that @arr already holds within
 * PERIOD_SAME_REL is kept once, from the search that put more interruptions on it. */
static void search_periods(const uint64_t *starts, size_t n, unsigned online_cpus, json_t *band,
                           json_t *arr)
{
        PeriodicityOptions opt;
        PeriodicityResult res;

        periodicity_options_init(&opt);
        /* A period is reported from 3 % of the interruptions that no shorter period explains,
         * or when it recurs on half its periods over the window: a real CPU carries hundreds of
         * unrelated interruptions per second, among which a theft every 137 ms is 1 % or less.
         * Chance periods are kept out by the analysis' own tests against chance, not by these
         * thresholds. */
        opt.min_share = 0.03;
        opt.min_fill = 0.5;
        opt.online_cpus = online_cpus;
        if (n == 0 || periodicity_find(starts, n, &opt, &res) < 0) {
                return;
        }
        for (size_t k = 0; k < res.n; k++) {
                const PeriodicityPeriod *p = &res.periods[k];
                json_t *o = json_pack("{sI sI sf}", "period_ns", (json_int_t)p->period_ns, "events",
                                      (json_int_t)p->events, "share", p->share);
                json_t *q;
                size_t i, same = SIZE_MAX;

                if (!o) {
                        continue;
                }
                if (p->source) {
                        json_object_set_new(o, "source", json_string(p->source));
                }
                if (band) {
                        json_object_set(o, "band_min_ns", json_object_get(band, "min_duration_ns"));
                        json_object_set(o, "band_max_ns", json_object_get(band, "max_duration_ns"));
                }
                json_array_foreach(arr, i, q)
                {
                        double other = (double)json_integer_value(json_object_get(q, "period_ns"));

                        if (fabs((double)p->period_ns - other) <= PERIOD_SAME_REL * other) {
                                same = i;
                                break;
                        }
                }
                if (same == SIZE_MAX) {
                        json_array_append_new(arr, o);
                } else if ((json_int_t)p->events > json_integer_value(json_object_get(
                                                           json_array_get(arr, same), "events"))) {
                        json_array_set_new(arr, same, o);
                } else {
                        json_decref(o);
                }
        }
}

/* Most interruptions first. */
static int by_events(const void *a, const void *b)
{
        json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "events"));
        json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "events"));

        return (x < y) - (x > y);
}

/* The periods of the interruptions of @w: searched among the newest of all bands together and
 * within each duration band (a periodic theft beside a flood of shorter interruptions is a few
 * of the newest of all, and all of its own band), most interruptions first; into @ret_searched
 * what each list covered: from when it holds every interruption of the window, to the window's
 * end, how many it had, what its band dropped and whether it was searched. NULL for a bad
 * list. */
static json_t *periods_json(json_t *w, unsigned online_cpus, json_t **ret_searched)
{
        json_t *arr = json_array(), *searched = json_array(), *band, *sorted;
        _cleanup_free_ uint64_t *starts = NULL;
        _cleanup_free_ json_t **items = NULL;
        json_int_t all_from;
        size_t n, i;

        if (!arr || !searched ||
            decode_starts(json_object_get(w, "event_starts_ns"), &starts, &n) < 0) {
                goto fail;
        }
        search_periods(starts, n, online_cpus, NULL, arr);
        json_array_append_new(searched,
                              json_pack("{ss sO? sO? sI}", "bands", "all", "from_ns",
                                        json_object_get(w, "events_complete_from_ns"), "to_ns",
                                        json_object_get(w, "to_ns"), "events", (json_int_t)n));
        /* A band is searched on its own only where it holds more of the window than the list
         * of all bands, which holds every interruption of every band from its own start on: a
         * search of less of the same would find nothing new, and each one costs as much again. */
        all_from = json_integer_value(json_object_get(w, "events_complete_from_ns"));
        json_array_foreach(json_object_get(w, "event_bands"), i, band)
        {
                bool own = json_integer_value(json_object_get(band, "complete_from_ns")) < all_from;

                free(starts);
                starts = NULL;
                if (decode_starts(json_object_get(band, "starts_ns"), &starts, &n) < 0) {
                        goto fail;
                }
                if (own) {
                        search_periods(starts, n, online_cpus, band, arr);
                }
                json_array_append_new(
                        searched,
                        json_pack("{sO? sO? sO? sO? sI sO? sb}", "min_duration_ns",
                                  json_object_get(band, "min_duration_ns"), "max_duration_ns",
                                  json_object_get(band, "max_duration_ns"), "from_ns",
                                  json_object_get(band, "complete_from_ns"), "to_ns",
                                  json_object_get(w, "to_ns"), "events", (json_int_t)n, "dropped",
                                  json_object_get(band, "dropped"), "searched", own));
        }
        n = json_array_size(arr);
        items = calloc(n ? n : 1, sizeof(*items));
        sorted = json_array();
        if (!items || !sorted) {
                json_decref(sorted);
                goto fail;
        }
        json_array_foreach(arr, i, band)
        {
                items[i] = band;
        }
        qsort(items, n, sizeof(*items), by_events);
        for (i = 0; i < n; i++) {
                json_array_append(sorted, items[i]);
        }
        json_decref(arr);
        *ret_searched = searched;
        return sorted;
fail:
        json_decref(arr);
        json_decref(searched);
        return NULL;
}

int window_analyses_add(json_t *window, unsigned online_cpus, json_t *entry)
{
        size_t n = json_array_size(json_object_get(window, "sources"));
        _cleanup_free_ uint64_t *sums = calloc(n + 1, sizeof(uint64_t));
        _cleanup_free_ FitResult *res = NULL;
        json_t *causes, *periods, *searched = NULL;

        if (!sums) {
                return -ENOMEM;
        }
        if (!json_is_object(window) || !json_is_object(entry) ||
            !json_is_integer(json_object_get(window, "duration_ns")) ||
            check_intervals(window, sums) < 0) {
                return -EINVAL;
        }
        periods = periods_json(window, online_cpus, &searched);
        if (!periods) {
                return -EINVAL;
        }
        res = fit_window(window);
        causes = causes_json(window, entry, sums, res);
        if (!causes) {
                json_decref(periods);
                json_decref(searched);
                return -ENOMEM;
        }
        json_object_set_new(entry, "causes", causes);
        json_object_set_new(entry, "periods", periods);
        json_object_set_new(entry, "periods_searched", searched);
        /* What the fit worked on: the window's intervals that GetWindow sent, and those it left
         * out (the oldest, beyond its bound) or the fit leaves out (stalled ones). */
        json_object_set_new(
                entry, "causes_searched",
                json_pack("{sI sO? sO?}", "intervals",
                          (json_int_t)json_array_size(json_object_get(window, "counts")),
                          "intervals_dropped", json_object_get(window, "intervals_dropped"),
                          "intervals_stalled", json_object_get(window, "intervals_stalled")));
        if (res) {
                json_object_set_new(entry, "background",
                                    json_pack("{sf sf so}", "ns_per_second",
                                              res->background_ns_per_s, "explains",
                                              res->background_share, "explains_stderr",
                                              stderr_json(res->background_share_stderr)));
        }
        return 0;
}

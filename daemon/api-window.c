/* GetWindow: a window's intervals and interruptions, copied from the history in a compact form. */

#include "api-window.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "history.h"
#include "util.h"

/* No source has this index: it has none yet. */
#define NO_INDEX UINT16_MAX

typedef struct IntervalsCtx {
        const Manager *m;
        size_t skip;   /* the oldest points left out (beyond API_WINDOW_INTERVALS_MAX) */
        size_t seen;   /* points seen so far */
        size_t points; /* every point, in the first pass */
        uint64_t stalled;
        json_t *durations, *lost, *counts, *sources;
        uint16_t *index; /* attrib id -> index in sources */
        uint32_t *bytes; /* each row's JSON, roughly */
} IntervalsCtx;

/* The bytes of @v in JSON with its comma. */
static uint32_t int_bytes(uint64_t v)
{
        uint32_t n = 2;

        while (v >= 10) {
                v /= 10;
                n++;
        }
        return n;
}

static int count_point(const HistoryPoint *pt, void *userdata)
{
        IntervalsCtx *c = userdata;

        (void)pt;
        c->points++;
        return 0;
}

/* The index of attribution source @id in the reply's "sources", added there when new. */
static int source_index(IntervalsCtx *c, uint16_t id)
{
        const char *name;

        if (id >= ATTRIB_MAX_SOURCES) {
                return -EINVAL;
        }
        if (c->index[id] == NO_INDEX) {
                name = attrib_table_name(manager_attrib(c->m), id);
                if (!name) {
                        return -ENOENT;
                }
                if (json_array_append_new(c->sources, json_string(name)) < 0) {
                        return -ENOMEM;
                }
                c->index[id] = (uint16_t)(json_array_size(c->sources) - 1);
        }
        return c->index[id];
}

static int add_interval(const HistoryPoint *pt, void *userdata)
{
        IntervalsCtx *c = userdata;
        const TickConv *conv = manager_tickconv(c->m);
        uint64_t lost_ns;
        uint32_t bytes;
        json_t *row;

        if (c->seen++ < c->skip) {
                return 0;
        }
        if (pt->stalled || !pt->attrib) {
                c->stalled++;
                return 0;
        }
        lost_ns = tickconv_to_ns(conv, pt->lost_ticks);
        row = json_array();
        if (!row || json_array_append_new(c->counts, row) < 0) {
                return -ENOMEM;
        }
        bytes = int_bytes(pt->duration_ns) + int_bytes(lost_ns) + 3;
        for (size_t i = 0; i < pt->attrib->n; i++) {
                int k = source_index(c, pt->attrib->items[i].id);

                if (k == -ENOMEM) {
                        return k;
                }
                if (k < 0 || pt->attrib->items[i].count == 0) {
                        continue;
                }
                if (json_array_append_new(row, json_integer(k)) < 0 ||
                    json_array_append_new(
                            row, json_integer((json_int_t)pt->attrib->items[i].count)) < 0) {
                        return -ENOMEM;
                }
                bytes += int_bytes((uint64_t)k) + int_bytes(pt->attrib->items[i].count);
        }
        c->bytes[json_array_size(c->counts) - 1] = bytes;
        if (json_array_append_new(c->durations, json_integer((json_int_t)pt->duration_ns)) < 0 ||
            json_array_append_new(c->lost, json_integer((json_int_t)lost_ns)) < 0) {
                return -ENOMEM;
        }
        return 0;
}

/* Drops the oldest @n rows of @a. */
static int drop_oldest(json_t **a, size_t n)
{
        json_t *kept = json_array();

        for (size_t i = n; kept && i < json_array_size(*a); i++) {
                if (json_array_append(kept, json_array_get(*a, i)) < 0) {
                        json_decref(kept);
                        kept = NULL;
                }
        }
        if (!kept) {
                return -ENOMEM;
        }
        json_decref(*a);
        *a = kept;
        return 0;
}

/* The intervals' part of the reply into @o: the newest API_WINDOW_INTERVALS_MAX, then the
 * newest that fit API_WINDOW_INTERVAL_BYTES. */
static int add_intervals(const Manager *m, int cpu, const HistoryWindow *w, json_t *o)
{
        _cleanup_free_ uint16_t *index = malloc(ATTRIB_MAX_SOURCES * sizeof(uint16_t));
        _cleanup_free_ uint32_t *bytes = calloc(API_WINDOW_INTERVALS_MAX, sizeof(uint32_t));
        IntervalsCtx c = {.m = m, .index = index, .bytes = bytes};
        size_t n, keep = 0;
        uint64_t total = 0;
        int r;

        if (!index || !bytes) {
                return -ENOMEM;
        }
        memset(index, 0xff, ATTRIB_MAX_SOURCES * sizeof(uint16_t));
        (void)history_foreach_point(manager_history(m), cpu, w->from_ns, w->to_ns, count_point, &c);
        c.skip = c.points > API_WINDOW_INTERVALS_MAX ? c.points - API_WINDOW_INTERVALS_MAX : 0;
        c.durations = json_array();
        c.lost = json_array();
        c.counts = json_array();
        c.sources = json_array();
        r = c.durations && c.lost && c.counts && c.sources
                    ? history_foreach_point(manager_history(m), cpu, w->from_ns, w->to_ns,
                                            add_interval, &c)
                    : -ENOMEM;
        if (r == -ENOENT) {
                r = 0;
        }
        n = json_array_size(c.counts);
        while (r >= 0 && keep < n && total + bytes[n - 1 - keep] <= API_WINDOW_INTERVAL_BYTES) {
                total += bytes[n - 1 - keep];
                keep++;
        }
        if (r >= 0 && keep < n) {
                r = drop_oldest(&c.durations, n - keep);
                r = r < 0 ? r : drop_oldest(&c.lost, n - keep);
                r = r < 0 ? r : drop_oldest(&c.counts, n - keep);
        }
        if (r >= 0) {
                r = json_object_set_new(o, "intervals_dropped",
                                        json_integer((json_int_t)(c.skip + n - keep))) |
                    json_object_set_new(o, "intervals_stalled",
                                        json_integer((json_int_t)c.stalled)) |
                    json_object_set(o, "sources", c.sources) |
                    json_object_set(o, "durations_ns", c.durations) |
                    json_object_set(o, "lost_ns", c.lost) | json_object_set(o, "counts", c.counts);
                r = r < 0 ? -ENOMEM : 0;
        }
        json_decref(c.durations);
        json_decref(c.lost);
        json_decref(c.counts);
        json_decref(c.sources);
        return r;
}

/* @n events' starts, delta-encoded (the first in ns, each other the ns since the one before);
 * NULL when out of memory. */
static json_t *starts_json(const HistoryEvent *ev, size_t n)
{
        json_t *starts = json_array();
        uint64_t prev = 0;

        for (size_t i = 0; starts && i < n; i++) {
                if (json_array_append_new(starts,
                                          json_integer((json_int_t)(ev[i].start_ns - prev))) < 0) {
                        json_decref(starts);
                        return NULL;
                }
                prev = ev[i].start_ns;
        }
        return starts;
}

/* From when a list of @n starts @ev (of at most @max, the newest) holds every interruption of
 * @nb bands since @from_ns: a band that forgot events holds every one from its oldest on, and
 * a list cut at @max leaves out those older than its first. */
static uint64_t complete_from(uint64_t from_ns, const HistoryBand *bands, size_t nb,
                              const HistoryEvent *ev, size_t n, size_t max)
{
        for (size_t b = 0; b < nb; b++) {
                if ((bands[b].dropped > 0 || bands[b].dropped_before_unknown) &&
                    bands[b].oldest_ns > from_ns) {
                        from_ns = bands[b].oldest_ns;
                }
        }
        if (n == max && n > 0 && ev[0].start_ns > from_ns) {
                from_ns = ev[0].start_ns;
        }
        return from_ns;
}

/* The bands' part into @o from @bands (NULL: the history has none for @cpu): per duration band
 * its edges, what it dropped since start or the last reset, and the starts of its newest
 * events since the window's start (at most API_WINDOW_BAND_EVENTS_MAX), with from when the
 * band holds every one of its events: a search within one band (a periodic theft beside a
 * flood of short interruptions) covers the span its band kept, not only the newest events of
 * all bands. */
static int add_bands(const Manager *m, int cpu, const HistoryWindow *w, const HistoryBand *bands,
                     json_t *o)
{
        size_t max = manager_config(m)->history_events_per_cpu;
        _cleanup_free_ HistoryEvent *ev = NULL;
        json_t *arr = json_array();

        if (max > API_WINDOW_BAND_EVENTS_MAX) {
                max = API_WINDOW_BAND_EVENTS_MAX;
        }
        ev = calloc(max ? max : 1, sizeof(*ev));
        if (!ev || !arr || json_object_set_new(o, "event_bands", arr) < 0) {
                return -ENOMEM;
        }
        for (unsigned b = 0; bands && b < HISTORY_BANDS; b++) {
                size_t n = history_band_events(manager_history(m), cpu, b, w->from_ns, ev, max);
                json_t *band;

                band = json_pack("{sI so sI sb sI so}", "min_duration_ns",
                                 (json_int_t)bands[b].min_duration_ns, "max_duration_ns",
                                 bands[b].max_duration_ns == UINT64_MAX
                                         ? json_null()
                                         : json_integer((json_int_t)bands[b].max_duration_ns),
                                 "dropped", (json_int_t)bands[b].dropped, "dropped_before_unknown",
                                 bands[b].dropped_before_unknown, "complete_from_ns",
                                 (json_int_t)complete_from(w->from_ns, &bands[b], 1, ev, n, max),
                                 "starts_ns", starts_json(ev, n));
                if (!band || json_array_append_new(arr, band) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* The events' part into @o: the starts of the newest interruptions since the window's start
 * (events_per_cpu of them, at most API_WINDOW_MIXED_EVENTS_MAX), delta-encoded, and from when
 * the history holds every one of them (@bands as add_bands() has them). */
static int add_events(const Manager *m, int cpu, const HistoryWindow *w, const HistoryBand *bands,
                      json_t *o)
{
        size_t max = manager_config(m)->history_events_per_cpu;
        _cleanup_free_ HistoryEvent *ev = NULL;
        json_t *starts;
        cpu_set_t one;
        size_t n;

        if (max > API_WINDOW_MIXED_EVENTS_MAX) {
                max = API_WINDOW_MIXED_EVENTS_MAX;
        }
        ev = calloc(max ? max : 1, sizeof(*ev));
        if (!ev) {
                return -ENOMEM;
        }
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        n = history_events(manager_history(m), &one, w->from_ns, 0, ev, max);
        starts = starts_json(ev, n);
        if (!starts) {
                return -ENOMEM;
        }
        if (json_object_set_new(o, "event_starts_ns", starts) < 0 ||
            json_object_set_new(o, "events_complete_from_ns",
                                json_integer((json_int_t)complete_from(w->from_ns, bands,
                                                                       bands ? HISTORY_BANDS : 0,
                                                                       ev, n, max))) < 0) {
                return -ENOMEM;
        }
        return 0;
}

json_t *api_window_to_json(const Manager *m, int cpu, const char *window, uint64_t from_ns,
                           uint64_t to_ns, bool all)
{
        _cleanup_free_ HistoryWindow *w = malloc(sizeof(*w));
        HistoryBand bands[HISTORY_BANDS];
        const HistoryBand *have = NULL;
        json_t *o;

        if (!w) {
                return NULL;
        }
        if (history_query(manager_history(m), cpu, from_ns, to_ns, all, w) < 0) {
                memset(w, 0, sizeof(*w));
        }
        o = json_pack("{sI ss sI sI sI sI}", "cpu", (json_int_t)cpu, "window", window, "from_ns",
                      (json_int_t)w->from_ns, "to_ns", (json_int_t)w->to_ns, "duration_ns",
                      (json_int_t)w->duration_ns, "interruptions", (json_int_t)w->slot.events);
        if (history_event_bands(manager_history(m), cpu, bands) == 0) {
                have = bands;
        }
        if (!o || add_intervals(m, cpu, w, o) < 0 || add_events(m, cpu, w, have, o) < 0 ||
            add_bands(m, cpu, w, have, o) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

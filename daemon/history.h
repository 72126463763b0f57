#pragma once

/* Rolling history of the probes: per CPU, every harvested interval at fine resolution for the
 * recent past (default 1 s for 10 min), merged into coarse intervals (default 1 min for 24 h)
 * for longer, and totals since start or the last reset; plus the last N interruptions.
 *
 * Intervals are stored sparse (only non-empty buckets and moved attribution counters, varint
 * encoded), so the memory per CPU stays bounded by the retention; history_memory_bytes() says
 * how much. Windows are answered by merging interval histograms. All times are CLOCK_MONOTONIC
 * ns; histogram values stay in counter ticks (convert with the daemon's TickConv). */

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attrib.h"
#include "probe.h"

typedef struct History History;

/* The coarse resolution the daemon keeps beyond the fine retention: one entry per minute (or
 * per 60 intervals when an interval does not divide a minute). Not a configuration key. */
#define HISTORY_COARSE_INTERVAL_NS (60ULL * 1000000000ULL)

typedef struct HistoryOptions {
        uint64_t interval_ns;         /* the fine resolution, e.g. 1 s */
        uint64_t fine_retention_ns;   /* e.g. 10 min */
        uint64_t coarse_interval_ns;  /* e.g. 1 min; a multiple of interval_ns */
        uint64_t coarse_retention_ns; /* e.g. 24 h */
        unsigned events_per_cpu;      /* the last N interruptions kept per CPU */
} HistoryOptions;

/* One interruption. */
typedef struct HistoryEvent {
        int cpu;
        uint64_t start_ns;      /* CLOCK_MONOTONIC */
        uint64_t start_real_ns; /* CLOCK_REALTIME */
        uint64_t duration_ns;
} HistoryEvent;

/* A window: everything recorded for one CPU between two times, merged. */
typedef struct HistoryWindow {
        uint64_t from_ns;     /* start of the oldest interval merged */
        uint64_t to_ns;       /* end of the newest interval merged */
        uint64_t duration_ns; /* sum of the merged intervals' durations */
        unsigned intervals;   /* how many fine or coarse intervals were merged */
        uint64_t stalls;      /* intervals in which the probe made no progress */
        ProbeSlot slot;       /* merged statistics and histograms, in ticks */
        AttribDelta attrib;   /* summed attribution counters */
} HistoryWindow;

/* One interval as stored, for per-interval analysis (worst gaps over time, fits). */
typedef struct HistoryPoint {
        uint64_t start_ns;
        uint64_t duration_ns;
        uint64_t samples;
        uint64_t max_gap_ticks;
        uint64_t lost_ticks;
        uint64_t events;
        bool stalled;              /* the probe made no progress in (part of) it */
        const AttribDelta *attrib; /* valid only during the callback; sorted by id */
        bool coarse;               /* a coarse interval: the merge of several fine ones */
        uint64_t stalls;           /* how many of the merged fine intervals were stalled */
} HistoryPoint;

/* Creates an empty history. The fine intervals kept are fine_retention_ns / interval_ns, but
 * never fewer than one coarse period's worth (so the period being filled is always complete);
 * the coarse ones coarse_retention_ns / coarse_interval_ns. Returns 0, -EINVAL for
 * inconsistent options (coarse_interval_ns not a multiple of interval_ns, a retention shorter
 * than its interval, more than 2^20 intervals or 2^22 events per CPU), -ENOMEM. */
int history_new(const HistoryOptions *opt, History **ret);

/* Frees @h; accepts NULL; returns NULL. */
History *history_free(History *h);

/* Records one harvested interval of @cpu that covered [@start_ns, @start_ns + @duration_ns).
 * @stalled marks an interval in which the probe made no progress (its whole duration then
 * counts as one interruption). @attrib may be NULL. Intervals of one CPU must come in time
 * order: each one belongs to the coarse period (a multiple of coarse_interval_ns) in which it
 * starts, and the period is merged into a coarse interval when an interval of a later period
 * comes. Returns 0, -EINVAL for a zero duration, a CPU outside 0..CPU_SETSIZE-1, a source id
 * of ATTRIB_MAX_SOURCES or more, or a start before the previous interval's start (nothing is
 * recorded then), -ENOMEM. */
int history_add_interval(History *h, int cpu, uint64_t start_ns, uint64_t duration_ns,
                         const ProbeSlot *slot, bool stalled, const AttribDelta *attrib);

/* Records an interruption; events of one CPU come in time order. The oldest beyond
 * events_per_cpu is forgotten. Returns 0, -EINVAL for a CPU outside 0..CPU_SETSIZE-1, or
 * -ENOMEM. */
int history_add_event(History *h, const HistoryEvent *ev);

/* Merges every interval of @cpu that lies wholly within [@from_ns, @to_ns] into @ret, using
 * fine intervals where they are kept and coarse ones before that; no interval is counted
 * twice. The merge is exact: statistics, every histogram bucket, attribution (sorted by id).
 * With @all = true, from and to are ignored and @ret gets the totals since start or the last
 * reset (which outlive the retention). Returns 0, -EINVAL when from_ns > to_ns, or -ENOENT
 * for a CPU the history has never seen. */
int history_query(History *h, int cpu, uint64_t from_ns, uint64_t to_ns, bool all,
                  HistoryWindow *ret);

/* The standard windows GetStats and the textfile ask for. */
typedef enum HistorySpan {
        HISTORY_SPAN_10S,
        HISTORY_SPAN_1M,
        HISTORY_SPAN_5M,
        HISTORY_SPAN_1H,
        HISTORY_SPAN_24H,
        HISTORY_SPAN_ALL, /* since start or the last reset */
        HISTORY_SPAN_MAX,
} HistorySpan;

/* The name of @span ("10s", "1m", "5m", "1h", "24h", "all"), and the span of a name (-EINVAL
 * for an unknown one). */
const char *history_span_name(HistorySpan span);
int history_span_from_name(const char *name, HistorySpan *ret);

/* The standard window @span of @cpu, ending at the newest interval recorded, into @ret: what
 * history_query() gives for it. Returns 0, -EINVAL for a span out of range, or -ENOENT for a
 * CPU the history has never seen. */
int history_window(History *h, int cpu, HistorySpan span, HistoryWindow *ret);

/* Calls @fn for every interval that history_query() would merge for [@from_ns, @to_ns], oldest
 * first: coarse intervals for the part beyond fine retention, then fine ones. Stops when @fn
 * returns non-zero and returns that; otherwise returns 0, -ENOENT for a CPU the history has
 * never seen, -EINVAL, -ENOMEM. */
int history_foreach_point(History *h, int cpu, uint64_t from_ns, uint64_t to_ns,
                          int (*fn)(const HistoryPoint *pt, void *userdata), void *userdata);

/* Copies up to @max events of the CPUs in @cpus (NULL: all) that started at or after
 * @since_ns and lasted at least @min_duration_ns into @ret, newest last (the newest @max when
 * there are more). Returns the number copied. */
size_t history_events(History *h, const cpu_set_t *cpus, uint64_t since_ns,
                      uint64_t min_duration_ns, HistoryEvent *ret, size_t max);

/* Forgets everything of @cpu (-1: every CPU): intervals, totals and events. The CPU stays
 * known (queries give empty windows). */
void history_reset(History *h, int cpu);

/* The CPUs the history holds data for. */
void history_cpus(History *h, cpu_set_t *ret);

/* Bytes of memory the history uses now (structures and encoded intervals). */
size_t history_memory_bytes(const History *h);

/* Writes the whole history to @f in a versioned binary format with a CRC-32, including the
 * attribution source names from @t, @hz (the counter frequency the ticks are in) and the boot
 * id (CLOCK_MONOTONIC restarts at boot). Returns 0, -EINVAL when @t lacks a name for a source
 * the history holds, -ENOMEM, or the negative errno of a failed write (-ENOSPC, -EIO...). */
int history_save(const History *h, const AttribTable *t, uint64_t hz, FILE *f);

/* Replaces the contents of @h with what @f holds (source ids remapped into @t, which gains the
 * names it lacks; intervals and events beyond this history's retention are dropped, oldest
 * first). Returns 0, -EBADMSG for a corrupt, truncated or foreign file, -ESTALE when it was
 * written with a counter frequency more than 100 ppm from @hz (ticks would mean something
 * else) or in another boot (its times would), or another negative errno (-ENOSPC: @t is
 * full). On any error @h is unchanged. */
int history_load(History *h, AttribTable *t, uint64_t hz, FILE *f);

#pragma once

/* Rolling history of the probes: per CPU, every harvested interval at fine resolution for the
 * recent past (default 1 s for 10 min), merged into coarse intervals (default 1 min for 24 h)
 * for longer, and totals since start or the last reset; plus the interruptions, kept by
 * duration band.
 *
 * A query is a read. The standard windows (history_window(): 10s, 1m, 5m, 1h, 24h, all) are
 * running sums kept current at each history_add_interval(): the new interval is added, those
 * that fall out are subtracted (histogram counts and 128-bit sums subtract exactly, modulo
 * 2^64 and 2^128 as they add), and the minima and maxima come from monotonic queues of the
 * intervals' own extremes. A standard window costs the same for 10 s and for 24 h, and so does
 * a harvest: its cost grows with the buckets an interval fills, never with a window's length.
 * Arbitrary ranges (history_query()) are still merged interval by interval.
 *
 * Which intervals a standard window holds, with E = the newest interval's start +
 * interval_ns and S = the window's span:
 * - a span no longer than fine_retention_ns (10s, 1m, 5m at the defaults): the fine intervals
 *   kept whose start is at or after E - S;
 * - a longer span (1h, 24h): the coarse intervals kept whose start (that of their first fine
 *   interval) is at or after E - S, plus every fine interval of the coarse period being
 *   filled. Its edge moves a coarse period (a minute) at a time;
 * - all: everything since start or the last reset (the totals; they outlive the retention).
 *
 * Resolution. Count, sum, sum of squares, minimum and maximum of the gaps and of the
 * diff-of-diff, the events, the time lost and the attribution stay exact in every window and
 * every stored interval. The histograms do not everywhere: coarse intervals, and fine
 * intervals once they are older than the longest window kept at fine resolution (5 min at the
 * defaults), keep HISTORY_COARSE_SUB_BITS: 8 sub-buckets per power of two (each at most
 * 12.5 % of its lower edge wide; values below 16 ticks exact) instead of the probe's 32
 * (3.125 %; below 64 ticks exact). So the windows 10s, 1m, 5m and all have the probe's full
 * resolution, 1h and 24h the coarse one; HistoryWindow.hist_sub_bits says which. A coarse
 * bucket's count is kept in the highest fine bucket it spans, so quantiles (the upper edge of
 * a bucket) are never below the true value; histogram_foreach() at hist_sub_bits (as
 * GetHistogram reads them) gives the coarse buckets with their own edges, the counts of a
 * window's fine-resolution intervals folded into them.
 *
 * Memory per CPU is bounded by the retention and flat once it is full: the queues and the
 * running sums are allocated with the CPU (a sum's histograms hold the range of buckets it has
 * seen, grown when an interval reaches past it, never shrunk), intervals are stored sparse
 * (only non-empty buckets and moved attribution counters, varint encoded) and freed as they
 * leave, and each band of interruptions stops growing at its cap. history_memory_bytes() says
 * how much, history_event_bytes() how much of it the interruptions take.
 *
 * Interruptions are kept per CPU in HISTORY_BANDS bands of their duration (below 100 us,
 * 100 us to 1 ms, 1 to 10 ms, 10 ms and more), each holding its newest events_per_cpu, so rare
 * long interruptions stay for the whole retention while frequent short ones roll. Every event
 * that is forgotten is counted (history_event_bands()).
 *
 * All times are CLOCK_MONOTONIC ns; histogram values stay in counter ticks (convert with the
 * daemon's TickConv). Not thread-safe; never logs. */

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

/* Sub-buckets per power of two (as a power of two) of the histograms of coarse intervals, and
 * of fine intervals older than the longest window kept at fine resolution. */
#define HISTORY_COARSE_SUB_BITS 3

/* The version of the checkpoint history_save() writes; history_load() also reads the older
 * ones from HISTORY_CHECKPOINT_VERSION_MIN on. */
#define HISTORY_CHECKPOINT_VERSION 2u
#define HISTORY_CHECKPOINT_VERSION_MIN 1u

typedef struct HistoryOptions {
        uint64_t interval_ns;         /* the fine resolution, e.g. 1 s */
        uint64_t fine_retention_ns;   /* e.g. 10 min */
        uint64_t coarse_interval_ns;  /* e.g. 1 min; a multiple of interval_ns */
        uint64_t coarse_retention_ns; /* e.g. 24 h */
        unsigned events_per_cpu;      /* interruptions kept per CPU in each duration band */
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
        uint64_t from_ns;       /* start of the oldest interval merged */
        uint64_t to_ns;         /* the latest end of the intervals merged */
        uint64_t duration_ns;   /* sum of the merged intervals' durations */
        unsigned intervals;     /* how many fine or coarse intervals were merged */
        uint64_t stalls;        /* intervals in which the probe made no progress */
        unsigned hist_sub_bits; /* resolution of slot's histograms: HIST_SUB_BITS, or
                                 * HISTORY_COARSE_SUB_BITS where coarse buckets went in */
        ProbeSlot slot;         /* merged statistics and histograms, in ticks */
        AttribDelta attrib;     /* summed attribution counters, sorted by id */
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
 * than its interval, more than 2^20 intervals or 2^22 events per CPU and band), -ENOMEM. */
int history_new(const HistoryOptions *opt, History **ret);

/* Frees @h; accepts NULL; returns NULL. */
History *history_free(History *h);

/* Records one harvested interval of @cpu that covered [@start_ns, @start_ns + @duration_ns),
 * and brings the standard windows of @cpu up to it. @stalled marks an interval in which the
 * probe made no progress (its whole duration then counts as one interruption). @attrib may be
 * NULL. Intervals of one CPU must come in time order: each one belongs to the coarse period (a
 * multiple of coarse_interval_ns) in which it starts, and the period is merged into a coarse
 * interval when an interval of a later period comes. A CPU that skipped intervals simply has
 * fewer in its windows. Returns 0, -EINVAL for a zero duration, a CPU outside
 * 0..CPU_SETSIZE-1, a source id of ATTRIB_MAX_SOURCES or more, or a start before the previous
 * interval's start (nothing is recorded then), -ENOMEM (nothing is recorded either). */
int history_add_interval(History *h, int cpu, uint64_t start_ns, uint64_t duration_ns,
                         const ProbeSlot *slot, bool stalled, const AttribDelta *attrib);

/* The duration bands of the interruptions: [0, 100 us), [100 us, 1 ms), [1 ms, 10 ms),
 * [10 ms, ...). Fixed by design (a change is a new checkpoint version). */
#define HISTORY_BANDS 4

/* Records an interruption in the band of its duration; events of one CPU come in time order.
 * When the band holds events_per_cpu already, its oldest is forgotten and counted as dropped.
 * Returns 0, -EINVAL for a CPU outside 0..CPU_SETSIZE-1, or -ENOMEM when the band could not
 * grow and held nothing to replace (the event is counted as dropped). */
int history_add_event(History *h, const HistoryEvent *ev);

/* What one band of one CPU holds: which events an analysis of them rests on. */
typedef struct HistoryBand {
        uint64_t min_duration_ns; /* the band's lower edge, inclusive */
        uint64_t max_duration_ns; /* its upper edge, exclusive; UINT64_MAX for the last */
        uint64_t capacity;        /* events_per_cpu */
        uint64_t kept;
        uint64_t oldest_ns; /* start of the oldest event kept; 0 when none is */
        uint64_t newest_ns; /* start of the newest event kept; 0 when none is */
        /* Events forgotten to make room, exactly, since start or the last reset (a checkpoint
         * carries the count over a restart). */
        uint64_t dropped;
        /* The history was restored from a version-1 checkpoint, which kept no count: events
         * before oldest_ns may have been dropped without being counted. Cleared by a reset. */
        bool dropped_before_unknown;
} HistoryBand;

/* Fills @ret with the bands of @cpu, shortest first. Returns 0, -EINVAL, or -ENOENT for a CPU
 * the history has never seen. */
int history_event_bands(const History *h, int cpu, HistoryBand ret[HISTORY_BANDS]);

/* Merges every interval of @cpu that lies wholly within [@from_ns, @to_ns] into @ret, using
 * fine intervals where they are kept and coarse ones before that; no interval is counted
 * twice. The merge is exact (statistics, attribution sorted by id), and so is every histogram
 * bucket at the resolution the intervals were kept at (ret->hist_sub_bits). With @all = true,
 * from and to are ignored and @ret gets the totals since start or the last reset (which
 * outlive the retention). Its cost grows with the number of intervals merged: for the
 * standard windows use history_window(). Returns 0, -EINVAL when from_ns > to_ns, or -ENOENT
 * for a CPU the history has never seen. */
int history_query(const History *h, int cpu, uint64_t from_ns, uint64_t to_ns, bool all,
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

/* The length of @span in ns: 0 for HISTORY_SPAN_ALL, which has none, or a span out of range. */
uint64_t history_span_ns(HistorySpan span);

/* The standard window @span of @cpu, ending at the newest interval recorded, into @ret: the
 * intervals this header's "Which intervals a standard window holds" names, at the resolution
 * it names. A copy of a running sum: no merge, no allocation, the same cost for every span.
 * Returns 0, -EINVAL for a span out of range, or -ENOENT for a CPU the history has never
 * seen. */
int history_window(const History *h, int cpu, HistorySpan span, HistoryWindow *ret);

/* Of history_window()'s window, only the worst gap (ticks, 0 when none) in *@ret_max_ticks and
 * the window's end in *@ret_to_ns: what GetStatus shows, without the copy of its histograms.
 * Returns as history_window() does. */
int history_window_max_gap(const History *h, int cpu, HistorySpan span, uint64_t *ret_max_ticks,
                           uint64_t *ret_to_ns);

/* Calls @fn for every interval that history_query() would merge for [@from_ns, @to_ns], oldest
 * first: coarse intervals for the part beyond fine retention, then fine ones. Stops when @fn
 * returns non-zero and returns that; otherwise returns 0, -ENOENT for a CPU the history has
 * never seen, -EINVAL, -ENOMEM. */
int history_foreach_point(const History *h, int cpu, uint64_t from_ns, uint64_t to_ns,
                          int (*fn)(const HistoryPoint *pt, void *userdata), void *userdata);

/* Copies up to @max events of the CPUs in @cpus (NULL: all) that started at or after
 * @since_ns and lasted at least @min_duration_ns into @ret, newest last across CPUs and bands
 * (the newest @max when there are more). Which span of each band they come from, and what it
 * dropped, is history_event_bands(). Returns the number copied. */
size_t history_events(const History *h, const cpu_set_t *cpus, uint64_t since_ns,
                      uint64_t min_duration_ns, HistoryEvent *ret, size_t max);

/* Copies up to @max events of band @band of @cpu that started at or after @since_ns into
 * @ret, newest last (the newest @max when there are more): what a search within one band (a
 * periodic theft beside a flood of short interruptions) works on. Returns the number copied:
 * 0 for a CPU the history has never seen or a band out of range. */
size_t history_band_events(const History *h, int cpu, unsigned band, uint64_t since_ns,
                           HistoryEvent *ret, size_t max);

/* Forgets everything of @cpu (-1: every CPU): intervals, windows, totals, events and their
 * drop counts. The CPU stays known (queries give empty windows). */
void history_reset(History *h, int cpu);

/* Bytes of memory the history uses now: structures, running sums, encoded intervals and
 * events. */
size_t history_memory_bytes(const History *h);

/* The part of history_memory_bytes() that holds interruptions (bounded apart: at most
 * HISTORY_BANDS × events_per_cpu of them per CPU). */
size_t history_event_bytes(const History *h);

/* Writes the whole history to @f in the binary format of HISTORY_CHECKPOINT_VERSION with a
 * CRC-32, including the attribution source names from @t, @hz (the counter frequency the
 * ticks are in) and the boot id (CLOCK_MONOTONIC restarts at boot). Returns 0, -EINVAL when
 * @t lacks a name for a source the history holds, -ENOMEM, or the negative errno of a failed
 * write (-ENOSPC, -EIO...). */
int history_save(const History *h, const AttribTable *t, uint64_t hz, FILE *f);

/* The format version of the checkpoint @f starts with, into @ret, without reading further
 * than its header (the caller rewinds). Returns 0, or -EBADMSG when @f is no checkpoint. */
int history_checkpoint_version(FILE *f, uint32_t *ret);

/* Replaces the contents of @h with what @f holds (source ids remapped into @t, which gains the
 * names it lacks; intervals and events beyond this history's retention are dropped, oldest
 * first, and counted). A version-1 checkpoint is migrated: its coarse intervals are folded to
 * the coarse resolution and its events sorted into bands. Returns 0, -EPROTONOSUPPORT for a
 * version this code does not read (history_checkpoint_version() says which), -EBADMSG for a
 * corrupt, truncated or foreign file, -ESTALE when it was written with a counter frequency
 * more than 100 ppm from @hz (ticks would mean something else) or in another boot (its times
 * would), or another negative errno (-ENOSPC: @t is full). On any error @h is unchanged; @f
 * is only read. */
int history_load(History *h, AttribTable *t, uint64_t hz, FILE *f);

#pragma once

/* Periodic noise: from the start times of a window's interruptions, the periods that explain a
 * real share of them (a scheduler tick, a 1 Hz residual tick, a watchdog) or that recur steadily
 * however many unrelated interruptions are mixed in (a 137 ms theft among a 1 ms tick and
 * hundreds of other interruptions a second), and the kernel source a period is known to come
 * from.
 *
 * How: candidate periods are the peaks of two log-binned histograms (0.5 % and 0.1 % wide bins) of
 * the differences between each event and its next few events, above the local background of that
 * histogram; a peak ranks as high as the highest of its multiples, so that a period is looked at
 * whenever its multiples stand out. When those show nothing more, the peaks of a third histogram
 * (0.01 % bins) are judged: of evenly spaced triples of events, whose background is far lower
 * than that of differences, so that a source with few events among many stands out. Each
 * candidate is centred on where its differences (for a triple's peak: those that a third event
 * continues) are densest and given a tolerance from how tightly they cluster (a few us for a
 * kernel timer, at most 1 % of the period), then checked by following events along its lattice:
 * an event is "on" the period when it is part of a chain of events, each within the tolerance of
 * a multiple of the period after the previous one, with at least two links to the very next
 * multiple, and lies within two links of such a link (missed events are bridged, as far as the
 * noise allows without chance links). Candidates are taken shortest first; one is kept when its
 * events are a share of those left or fill its lattice (options), when clearly more events are on
 * it than on nearby periods that mean nothing (the chance level for this noise), when it does not
 * mostly bridge missed events, when it is not made of the events of a shorter period P/k (then
 * P/k is what is judged and reported), and when its events do not fill one residue class of its
 * lattice far more than the others, along its chains or over the whole window (two sources, one
 * at k times the period, or a source at k times the period whose chains a few chance events
 * between its points link: one class holding 20 events or more, on half its points, and the
 * others three times emptier). A kept period's events are those of one lattice (fitted to its
 * longest chain), at most one per point; they are taken out before the next candidate is looked
 * at, and when they are on half its points the events within three tolerances of its points too
 * (the same source, early or late), so its multiples, and lattices that would bridge over its
 * events, find nothing left to explain, while chance chains at other phases stay. A period
 * kept already is kept again once (a second source at another phase) when its one lattice holds
 * min_share of all the events analysed (a kept period with fewer events than the candidate does
 * not ask that share: a chance one; it still counts towards the once); a small multiple of a kept
 * period is reported only when it has an event on half its points.
 *
 * About 0.05 to 0.6 s of CPU for 10000 events in heavy noise, and 2.5 MB of scratch memory
 * besides what max_events takes.
 *
 * Pure computation: no I/O, never logs. Work is bounded by max_events. */

#include <stddef.h>
#include <stdint.h>

#define PERIODICITY_MAX_PERIODS 8

/* Largest max_events accepted: about 32 bytes of scratch memory per event. */
#define PERIODICITY_EVENTS_LIMIT 1000000

typedef struct PeriodicityOptions {
        double min_share;       /* report periods with at least this share of events (0.10) */
        double min_fill;        /* ... or with an event on at least this share of their periods
                                 * over the window (at least 10 of them), however many other
                                 * events there are (0: the share only) */
        size_t min_events;      /* ... and at least this many events on them (5) */
        size_t max_events;      /* analyse at most the newest this many events (20000; at
                                 * most PERIODICITY_EVENTS_LIMIT) */
        uint64_t min_period_ns; /* shortest period looked for (100 us) */
        uint64_t max_period_ns; /* longest period looked for (60 s) */
        /* Online CPUs, to recognise the clocksource watchdog, which visits the CPUs in turn
         * (0: unknown, only its 0.5 s interval is recognised). */
        unsigned online_cpus;
} PeriodicityOptions;

typedef struct PeriodicityPeriod {
        uint64_t period_ns;
        uint64_t tolerance_ns; /* how far from the lattice an event may lie and count */
        size_t events;         /* events on the period: at most one per point of its lattice */
        double share;          /* events / analysed events */
        const char *source;    /* a kernel source known to have this period, or NULL */
} PeriodicityPeriod;

typedef struct PeriodicityResult {
        size_t analysed;  /* events analysed: the newest max_events */
        uint64_t span_ns; /* from the first to the last analysed event */
        size_t n;
        PeriodicityPeriod periods[PERIODICITY_MAX_PERIODS]; /* largest share first */
} PeriodicityResult;

/* Fills @opt with the defaults given above. */
void periodicity_options_init(PeriodicityOptions *opt);

/* Finds the periods among the @n event start times @start_ns (CLOCK_MONOTONIC ns, sorted
 * ascending; the newest opt->max_events are used) and stores them in @ret (n = 0: none). @opt
 * may be NULL for the defaults. Returns 0, -EINVAL for unsorted times or invalid options,
 * -ENOMEM. */
int periodicity_find(const uint64_t *start_ns, size_t n, const PeriodicityOptions *opt,
                     PeriodicityResult *ret);

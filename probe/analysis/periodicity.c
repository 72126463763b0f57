#include "periodicity.h"
#include "periodicity-internal.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Relative widths of the bins of the two histograms of differences: a source with a jitter of
 * up to about 1 % of its period stands out in the coarse one; a precise timer stands out far
 * better in the fine one, where a bin holds a fifth of the background (a 137 ms theft among
 * 100 unrelated interruptions a second). */
#define BIN_WIDTH 0.005
#define FINE_BIN_WIDTH 0.001
/* A peak is the sum of 3 bins against the median of the bins around it (±BG_BINS). */
#define PEAK_BINS 1
#define BG_BINS 30
#define BG_GAP 3
/* How many standard deviations of the background a peak must stand above it. */
#define PEAK_SIGMA 4.0
#define CANDIDATES_MAX 64
/* Longest run of missed events a chain bridges. */
#define SKIP_MAX 8
/* Chance of an unrelated event landing within the tolerance of the lattice, summed over the
 * multiples tried: kept low so that noise does not form chains. */
#define CHANCE_LINK_MAX 0.05
/* An event counts on a chain only this many links from a link to the very next multiple. */
#define BRIDGE_MAX 2
/* A chain needs this many events, linked to the very next multiple, before its events count as
 * periodic. */
#define CHAIN_MIN 3
/* Tolerance bounds: at least TOL_MIN_NS (the jitter of a kernel timer and of our view of it),
 * at most TOL_MAX_REL of the period or TOL_ABS_NS, whichever is larger. */
#define TOL_MIN_NS 2000.0
#define TOL_MAX_REL 0.01
#define TOL_ABS_NS 10000.0
/* Events in phase that a period reported for how it fills its lattice needs at least: among the
 * many periods tried, a chain of a few events at a long period is found by chance (a 22 s
 * period in 2 minutes of noise at 10 a second). */
#define FILL_EVENTS_MIN 10
/* Width of the bins in which a candidate's tolerance is looked for, where its range allows. */
#define DEV_BIN_NS 1000.0
/* Differences collected to refine one candidate. */
#define DIFFS_MAX 65536
/* Periods that mean nothing, to measure chance: not close to simple ratios of the candidate. */
static const double null_ratios[] = {0.9413, 0.9689, 1.0317, 1.0571};
/* Periods kept before the PERIODICITY_MAX_PERIODS with the most events are reported: room for
 * the chance periods a noisy host's ticks leave, judged first being shorter, besides the real
 * ones. */
#define KEPT_MAX (4 * PERIODICITY_MAX_PERIODS)
/* Largest k for which P/k is tried as the fundamental of a candidate P. */
#define FUNDAMENTAL_MAX 8
/* A multiple of a kept period must have an event on this share of its points (judge_candidate()),
 * and a kept period as many for its stragglers to go with it (keep_first()). */
#define MULTIPLE_MIN_FILL 0.5
/* Events this many tolerances from a kept lattice's points go with it (straggler()). */
#define STRAGGLER_TOLS 3
/* Events the one full residue class of a lattice must hold for the lattice to be taken as 1/k of
 * the period (lattice_one_class()). */
#define CLASS_EVENTS_MIN 20
/* Evenly spaced triples: events i < j < k with t_k - t_j equal to t_j - t_i within
 * TRIPLE_TOL_NS + 2^-TRIPLE_TOL_SHIFT (0.012 %) of it, looked for among the events on each side of
 * j, as many as TRIPLE_WORK pairs for all events allow (from TRIPLE_REACH_MIN to TRIPLE_REACH_MAX),
 * and counted by their spacing in bins TRIPLE_BIN_WIDTH wide. */
#define TRIPLE_TOL_NS 2000
#define TRIPLE_TOL_SHIFT 13
#define TRIPLE_WORK 4000000
#define TRIPLE_REACH_MIN 256
#define TRIPLE_REACH_MAX 1024
#define TRIPLE_BIN_WIDTH 0.0001
/* Peaks of the triples' histogram judged besides those of the differences. */
#define TRIPLE_CANDIDATES_MAX 16

void periodicity_options_init(PeriodicityOptions *opt)
{
        *opt = (PeriodicityOptions){
                .min_share = 0.10,
                .min_fill = 0,
                .min_events = 5,
                .max_events = 20000,
                .min_period_ns = 100000,
                .max_period_ns = UINT64_C(60000000000),
                .online_cpus = 0,
        };
}

typedef struct Known {
        double period_ns;
        const char *name;
} Known;

static const Known known_sources[] = {
        {1e6, "scheduler tick (CONFIG_HZ=1000)"},
        {1e7 / 3, "scheduler tick (CONFIG_HZ=300)"},
        {4e6, "scheduler tick (CONFIG_HZ=250)"},
        {1e7, "scheduler tick (CONFIG_HZ=100)"},
        {5e8, "clocksource watchdog (WATCHDOG_INTERVAL = HZ/2 = 0.5 s)"},
        {1e9, "1 Hz residual tick (nohz_full), vmstat_update (vm.stat_interval = 1 s) or "
              "another 1 s timer"},
        {2e9, "a 2 s timer"},
        {4e9, "a 4 s timer"},
        {5e9, "writeback flusher (vm.dirty_writeback_centisecs = 500)"},
};

static bool within(double a, double b, double rel)
{
        return fabs(a - b) <= rel * b;
}

const char *periodicity_source_name(uint64_t period_ns, unsigned online_cpus)
{
        double p = (double)period_ns;

        for (size_t i = 0; i < ELEMENTSOF(known_sources); i++) {
                if (within(p, known_sources[i].period_ns, 0.02)) {
                        return known_sources[i].name;
                }
        }
        /* The watchdog timer moves to the next online CPU each time it fires. */
        if (online_cpus > 1 && within(p, 5e8 * online_cpus, 0.02)) {
                return "clocksource watchdog (every 0.5 s, visiting each online CPU in turn)";
        }
        return NULL;
}

typedef struct Candidate {
        double lo, hi; /* differences that make the peak */
        double excess;
        double rank;  /* the largest excess among the peak and its multiples */
        bool triples; /* a peak of the triples' histogram */
} Candidate;

/* A log-binned histogram of differences between events. */
typedef struct Hist {
        double log_width; /* log(1 + relative bin width) */
        size_t nbins;
        uint32_t *count;
} Hist;

/* Scratch space of one analysis. */
typedef struct Work {
        const uint64_t *t; /* the events not yet explained by a kept period */
        size_t n;
        size_t analysed;    /* all events */
        double rate_per_ns; /* of the events left */
        double span_ns;     /* of all events */
        size_t neighbours;  /* the k next events compared */
        size_t reach;       /* the events on each side looked at for triples */
        bool fill;          /* periods may be reported for how they fill their lattice */
        double min_period;
        double log_min;
        Hist hist[2]; /* coarse and fine */
        Hist triples; /* evenly spaced triples, by their spacing */
        double *diffs;
        int32_t *succ;
        uint8_t *mult;
        uint32_t *dep;
        uint32_t *len;
        uint8_t *on; /* of the candidate being evaluated */
        /* The lattice in_phase() fitted last: period, the time of its index 0, and the times of
         * its first and last events. */
        double lat_period, lat_t0, lat_first, lat_last;
        uint8_t *fwd;
        uint8_t *on_cand; /* a copy, while its fundamental is looked for */
        uint64_t *rest;   /* storage behind t once events were taken out */
        Candidate *peaks; /* every peak of the histogram */
        size_t npeaks;    /* room in peaks */
} Work;

typedef struct Eval {
        size_t on;
        size_t links;
        size_t links_first; /* links to the very next period, no event missed */
        size_t in_phase;    /* points of the longest chain's lattice with an event (in_phase()) */
        double period;      /* refined: median link length per period */
} Eval;

/* The median of @v (reordered), by quickselect: evaluating a candidate must stay linear. */
static double median(double *v, size_t n)
{
        size_t lo = 0, hi = n - 1, k = n / 2;

        assert(n > 0);
        while (lo < hi) {
                double pivot = v[lo + (hi - lo) / 2];
                size_t i = lo, j = hi;

                while (i <= j) {
                        while (v[i] < pivot) {
                                i++;
                        }
                        while (v[j] > pivot) {
                                j--;
                        }
                        if (i <= j) {
                                double x = v[i];

                                v[i] = v[j];
                                v[j] = x;
                                i++;
                                if (j == 0) {
                                        break;
                                }
                                j--;
                        }
                }
                if (k <= j) {
                        hi = j;
                } else if (k >= i) {
                        lo = i;
                } else {
                        break;
                }
        }
        return v[k];
}

static double bin_lower(const Work *w, const Hist *h, size_t b)
{
        return w->min_period * exp((double)b * h->log_width);
}

static void build_histograms(Work *w, double max_period)
{
        for (size_t k = 0; k < 2; k++) {
                memset(w->hist[k].count, 0, w->hist[k].nbins * sizeof(*w->hist[k].count));
        }
        for (size_t i = 0; i < w->n; i++) {
                for (size_t k = 1; k <= w->neighbours && i + k < w->n; k++) {
                        double d = (double)(w->t[i + k] - w->t[i]), l;

                        if (d < w->min_period) {
                                continue;
                        }
                        if (d >= max_period) {
                                break;
                        }
                        l = log(d) - w->log_min;
                        for (size_t h = 0; h < 2; h++) {
                                size_t b = (size_t)(l / w->hist[h].log_width);

                                if (b < w->hist[h].nbins) {
                                        w->hist[h].count[b]++;
                                }
                        }
                }
        }
}

/* Counts in w->triples the evenly spaced triples of events by their spacing. A source with few
 * events among many unrelated ones stands out far better here than among the differences: the
 * background of a difference of 137 ms is every pair of unrelated events that far apart, that
 * of a triple only the pairs that a third event happens to continue within a few us. Each event
 * j is the middle of at most one triple per event before it (the nearest after), so the work is
 * linear in the events: their differences to the w->reach events before j are walked
 * upwards together with those to the events after j. */
static void build_triples(Work *w, double max_period)
{
        const uint64_t *t = w->t, min_ns = (uint64_t)w->min_period, max_ns = (uint64_t)max_period;
        Hist *h = &w->triples;

        memset(h->count, 0, h->nbins * sizeof(*h->count));
        for (size_t j = 1; j + 1 < w->n; j++) {
                size_t k = j + 1, k_end = j + w->reach < w->n ? j + w->reach + 1 : w->n;
                size_t i_end = j > w->reach ? j - w->reach : 0;

                for (size_t i = j; i-- > i_end;) {
                        uint64_t before = t[j] - t[i], target = t[j] + before, off;
                        size_t b;

                        if (before < min_ns) {
                                continue;
                        }
                        if (before >= max_ns) {
                                break;
                        }
                        /* k: the first event after j at least as far from j as i is; the
                         * nearest of it and the one before it continues the spacing best */
                        while (k < k_end && t[k] < target) {
                                k++;
                        }
                        off = k < k_end ? t[k] - target : UINT64_MAX;
                        if (k > j + 1 && target - t[k - 1] < off) {
                                off = target - t[k - 1];
                        }
                        if (off > TRIPLE_TOL_NS + (before >> TRIPLE_TOL_SHIFT)) {
                                if (k == k_end) {
                                        break;
                                }
                                continue;
                        }
                        b = (size_t)((log((double)before) - w->log_min) / h->log_width);
                        if (b < h->nbins) {
                                h->count[b]++;
                        }
                }
        }
}

static double window_sum(const Hist *h, size_t b)
{
        double s = 0;

        for (size_t i = b >= PEAK_BINS ? b - PEAK_BINS : 0; i <= b + PEAK_BINS && i < h->nbins;
             i++) {
                s += h->count[i];
        }
        return s;
}

/* Median of the windowed sums around @b, away from the peak itself. */
static double background(const Hist *h, size_t b)
{
        double v[2 * BG_BINS];
        size_t k = 0;

        for (size_t d = BG_GAP; d <= BG_BINS; d++) {
                if (b >= d) {
                        v[k++] = window_sum(h, b - d);
                }
                if (b + d < h->nbins) {
                        v[k++] = window_sum(h, b + d);
                }
        }
        if (k == 0) {
                return 0;
        }
        qsort(v, k, sizeof(v[0]), cmp_double);
        return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static int cmp_candidate(const void *a, const void *b)
{
        const Candidate *x = a, *y = b;

        if (x->rank != y->rank) {
                return x->rank < y->rank ? 1 : -1;
        }
        return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether peak @m lies at 2 to FUNDAMENTAL_MAX times peak @f. */
static bool is_multiple(const Candidate *f, const Candidate *m)
{
        double fc = (f->lo + f->hi) / 2, mc = (m->lo + m->hi) / 2, k = round(mc / fc);

        return k >= 2 && k <= FUNDAMENTAL_MAX &&
               fabs(mc - k * fc) <= (m->hi - m->lo) / 2 + k * (f->hi - f->lo) / 2;
}

static int cmp_candidate_period(const void *a, const void *b)
{
        const Candidate *x = a, *y = b;

        return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Appends to @all (from @n) the peaks of @h that stand out of their background. Returns the
 * new count. */
static size_t histogram_peaks(const Work *w, const Hist *h, size_t min_events, Candidate *all,
                              size_t n)
{
        for (size_t b = 0; b < h->nbins; b++) {
                double s = window_sum(h, b), bg;
                bool peak = s > 0;

                for (size_t d = 1; d <= 2 && peak; d++) {
                        /* a local maximum; on a plateau the first bin */
                        if ((b >= d && window_sum(h, b - d) >= s) ||
                            (b + d < h->nbins && window_sum(h, b + d) > s)) {
                                peak = false;
                        }
                }
                /* (the excess asked for below needs at least min_events) */
                if (!peak || s < (double)min_events) {
                        continue;
                }
                bg = background(h, b);
                if (s - bg < (double)min_events || s - bg < PEAK_SIGMA * sqrt(bg + 1)) {
                        continue;
                }
                /* Local maxima are at least 3 bins apart: w->peaks has room for all. */
                assert(n < w->npeaks);
                all[n++] = (Candidate){
                        .lo = bin_lower(w, h, b >= PEAK_BINS ? b - PEAK_BINS : 0),
                        .hi = bin_lower(w, h, b + PEAK_BINS + 1),
                        .excess = s - bg,
                        .rank = s - bg,
                };
        }
        return n;
}

/* Ranks the @n peaks in @all (ascending periods) and keeps the @max strongest, where a peak
 * counts as strong as the strongest of its multiples. Returns how many are kept. */
static size_t strongest_peaks(Candidate *all, size_t n, size_t max)
{
        for (size_t i = 0; i < n; i++) {
                for (size_t j = i + 1; j < n; j++) {
                        if (all[j].excess > all[i].rank && is_multiple(&all[i], &all[j])) {
                                all[i].rank = all[j].excess;
                        }
                }
        }
        qsort(all, n, sizeof(all[0]), cmp_candidate);
        return n < max ? n : max;
}

/* The peaks of the histograms of differences that stand out of their background, at most
 * @max: the strongest, where a peak counts as strong as the strongest of its multiples. A
 * strictly periodic source puts a peak at each multiple of its period, and the peaks at a few
 * periods are often higher than the one at the period itself (other events fall on them too,
 * and a bin is wider there); ranked by its own height the fundamental would be left out while
 * its multiples are judged. */
static size_t find_candidates(const Work *w, size_t min_events, Candidate *ret, size_t max)
{
        Candidate *all = w->peaks;
        size_t n = 0;

        for (size_t h = 0; h < 2; h++) {
                n = histogram_peaks(w, &w->hist[h], min_events, all, n);
        }
        /* Ascending periods: a peak's multiples come after it. */
        qsort(all, n, sizeof(all[0]), cmp_candidate_period);
        n = strongest_peaks(all, n, max);
        memcpy(ret, all, n * sizeof(*ret));
        return n;
}

/* The same for the histogram of triples (build_triples()). */
static size_t find_triple_candidates(const Work *w, size_t min_events, Candidate *ret, size_t max)
{
        Candidate *all = w->peaks;
        size_t n = histogram_peaks(w, &w->triples, min_events, all, 0);

        for (size_t i = 0; i < n; i++) {
                all[i].triples = true;
        }
        qsort(all, n, sizeof(all[0]), cmp_candidate_period);
        n = strongest_peaks(all, n, max);
        memcpy(ret, all, n * sizeof(*ret));
        return n;
}

/* The first of the events [a, b) at or after @t_ns (b when none). */
static size_t first_at(const Work *w, size_t a, size_t b, double t_ns)
{
        while (a < b) {
                size_t mid = a + (b - a) / 2;

                if ((double)w->t[mid] < t_ns) {
                        a = mid + 1;
                } else {
                        b = mid;
                }
        }
        return a;
}

/* The differences within [lo, hi) of each event to its next events (as far as the histograms
 * look, the triples' too); at most DIFFS_MAX. With @continued, only those that a third event
 * continues at the same spacing (within the triples' tolerance): a candidate that only the
 * triples show is refined among them, where unrelated pairs are a few per cent of what they
 * are among all the differences. */
static size_t collect_diffs(const Work *w, double lo, double hi, bool continued)
{
        size_t k = 0, reach = w->neighbours > w->reach ? w->neighbours : w->reach;

        for (size_t i = 0, a = 1; i < w->n && k < DIFFS_MAX; i++) {
                size_t end = i + reach + 1 < w->n ? i + reach + 1 : w->n;

                /* a: the first event at least lo after event i, which only moves on */
                a = a > i + 1 ? a : i + 1;
                while (a < w->n && (double)w->t[a] < (double)w->t[i] + lo) {
                        a++;
                }
                for (size_t j = a; j < end && k < DIFFS_MAX; j++) {
                        double d = (double)(w->t[j] - w->t[i]);

                        if (d >= hi) {
                                break;
                        }
                        if (continued) {
                                double tol = TRIPLE_TOL_NS + ldexp(d, -TRIPLE_TOL_SHIFT);
                                size_t j_end = j + reach + 1 < w->n ? j + reach + 1 : w->n;
                                size_t m = first_at(w, j + 1, j_end, (double)w->t[j] + d - tol);

                                if (m == j_end || (double)w->t[m] > (double)w->t[j] + d + tol) {
                                        continue;
                                }
                        }
                        w->diffs[k++] = d;
                }
        }
        return k;
}

static double tol_max(double period)
{
        double rel = TOL_MAX_REL * period;

        return rel > TOL_ABS_NS ? rel : TOL_ABS_NS;
}

/* Where a candidate's differences are densest: the middle of the three adjacent fine bins of
 * its window that hold most, then the median of the differences there. The median of the whole
 * window is pulled towards its middle by the background. */
static double densest_period(const Work *w, const Candidate *c)
{
        enum { MODE_BINS = 64 };
        uint32_t fine[MODE_BINS] = {0};
        double width = (c->hi - c->lo) / MODE_BINS, period = (c->lo + c->hi) / 2;
        size_t best = 0, best_sum = 0, k = collect_diffs(w, c->lo, c->hi, c->triples);

        if (k == 0) {
                return period;
        }
        for (size_t i = 0; i < k; i++) {
                size_t b = (size_t)((w->diffs[i] - c->lo) / width);

                fine[b < MODE_BINS ? b : MODE_BINS - 1]++;
        }
        for (size_t b = 1; b + 1 < MODE_BINS; b++) {
                size_t sum = fine[b - 1] + fine[b] + fine[b + 1];

                if (sum > best_sum) {
                        best_sum = sum;
                        best = b;
                }
        }
        period = c->lo + ((double)best + 0.5) * width;
        k = collect_diffs(w, period - 1.5 * width, period + 1.5 * width, c->triples);
        return k > 0 ? median(w->diffs, k) : period;
}

/* How a candidate's differences stand out around a period, above the flat background. */
typedef struct Standout {
        double half;   /* the half-width where they stand out most */
        double snr;    /* by how many sigma they do there */
        double excess; /* and by how many differences */
} Standout;

/* Where the differences around @period stand out most above the flat background: the outer
 * half of the range tells how dense the background is. For a precise timer a few us, even
 * when the background outnumbers it. */
static Standout stand_out(const Work *w, const Candidate *c, double period)
{
        enum { DEV_BINS_MIN = 200, DEV_BINS = 2048 };
        uint32_t dev[DEV_BINS] = {0};
        double tmax = tol_max(period), bg, cum = 0, bin_ns;
        size_t outer = 0, nb = (size_t)ceil(tmax / DEV_BIN_NS), k;
        Standout s = {.half = tmax};

        /* Bins of DEV_BIN_NS, or fewer when the range is wide: a precise timer among much
         * noise stands out only within a few us, which coarser bins would miss (a 137 ms
         * theft's 1 % range of 1.4 ms has bins of 7 us in 200). */
        nb = nb < DEV_BINS_MIN ? DEV_BINS_MIN : nb > DEV_BINS ? DEV_BINS : nb;
        bin_ns = tmax / (double)nb;
        k = collect_diffs(w, period - tmax, period + tmax, c->triples);
        for (size_t i = 0; i < k; i++) {
                size_t b = (size_t)(fabs(w->diffs[i] - period) / bin_ns);

                dev[b < nb ? b : nb - 1]++;
        }
        for (size_t b = nb / 2; b < nb; b++) {
                outer += dev[b];
        }
        bg = (double)outer / (double)(nb - nb / 2); /* per bin */
        for (size_t b = 0; b < nb / 2; b++) {
                double excess, snr;

                cum += dev[b];
                excess = cum - bg * (double)(b + 1);
                snr = excess / sqrt(bg * (double)(b + 1) + 1);
                if (snr > s.snr) {
                        s.snr = snr;
                        s.excess = excess;
                        s.half = (double)(b + 1) * bin_ns;
                }
        }
        return s;
}

/* The period and tolerance a candidate's differences point to: where they are densest,
 * re-centred on what stands out (stand_out()), and twice the half-width in which they stand
 * out most. False when nothing stands out. */
static bool refine(const Work *w, const Candidate *c, size_t min_events, double *ret_period,
                   double *ret_tol)
{
        enum { ROUNDS = 3 };
        double period = densest_period(w, c), tol;
        Standout s = {0};

        for (unsigned round = 0; round < ROUNDS; round++) {
                size_t k;

                s = stand_out(w, c, period);
                if (round + 1 == ROUNDS || s.snr < PEAK_SIGMA) {
                        break;
                }
                /* Centre on what stands out: the median of the whole peak window is pulled
                 * towards the window's middle by the background. */
                k = collect_diffs(w, period - s.half, period + s.half, c->triples);
                if (k == 0) {
                        break;
                }
                period = median(w->diffs, k);
        }
        tol = 2 * s.half;
        if (tol < TOL_MIN_NS) {
                tol = TOL_MIN_NS;
        }
        *ret_period = period;
        *ret_tol = tol < tol_max(period) ? tol : tol_max(period);
        /* Among the events left, do the differences cluster around the period at all? */
        return s.excess >= (double)min_events && s.snr >= PEAK_SIGMA;
}

/* How far the link from event @i to its successor lies from the lattice. */
static double link_error(const Work *w, size_t i, double period)
{
        return fabs((double)(w->t[w->succ[i]] - w->t[i]) - w->mult[i] * period);
}

/* How often in_phase() fits its lattice again to the events it takes in. */
#define LATTICE_PASSES_MAX 16

/* A least-squares line through (lattice index, time) points. */
typedef struct Fit {
        double n, k, t, kk, kt;
} Fit;

static void fit_add(Fit *f, double k, double t)
{
        f->n++;
        f->k += k;
        f->t += t;
        f->kk += k * k;
        f->kt += k * t;
}

/* The period and the time of index 0 of the line through @f (@period when one point). */
static void fit_line(const Fit *f, double period, double *ret_period, double *ret_t0)
{
        double k = f->k / f->n, t = f->t / f->n, var = f->kk / f->n - k * k;

        *ret_period = var > 0 ? (f->kt / f->n - k * t) / var : period;
        *ret_t0 = t - *ret_period * k;
}

/* Fits the line of a lattice (period *@p, index 0 at *@t0, times from event @head) to every
 * event marked in w->on within twice @tol of it, again while that takes in more: a line fitted
 * to a chain of a few hundred points is a few ns per period off, enough over thousands of
 * periods to leave the far events of the same source out of the tolerance. False when no event
 * is near the line. */
static bool fit_lattice(const Work *w, size_t head, double tol, double *p, double *t0)
{
        Fit all = {0};

        for (unsigned pass = 0; pass < LATTICE_PASSES_MAX; pass++) {
                Fit next = {0};

                for (size_t i = 0; i < w->n; i++) {
                        double t = (double)w->t[i] - (double)w->t[head];
                        double ki = round((t - *t0) / *p);

                        if (w->on[i] && fabs(t - *t0 - ki * *p) <= 2 * tol) {
                                fit_add(&next, ki, t);
                        }
                }
                if (next.n <= all.n) {
                        break;
                }
                all = next;
                fit_line(&all, *p, p, t0);
        }
        return all.n > 0;
}

/* How many points of one lattice hold an event marked in w->on (by evaluate()): the lattice of
 * the longest chain, fitted to its events and then to every event within twice the tolerance
 * of it. Chains that a few late or missing events broke count together, chance chains at other
 * phases do not, and a burst of events at one point is one arrival. With @mark, w->on keeps
 * only the event nearest to each of those points. @ret_period (unless NULL) gets the period of
 * the lattice, as fitted: more precise than the links' median over thousands of periods. Times
 * are taken from the chain's first event, to keep their precision. w->len is scratch. It also
 * leaves the lattice in w->lat_* (straggler()). */
static size_t in_phase(Work *w, double period, double tol, bool mark, double *ret_period)
{
        size_t head = w->n, longest = 0, count = 0, best = w->n;
        double p, t0, k = 0, point = 0, best_dev = 0;
        Fit chain = {0};

        /* w->len: the events on the chain from each event on */
        for (size_t i = w->n; i-- > 0;) {
                w->len[i] = !w->on[i]                              ? 0
                            : w->succ[i] >= 0 && w->on[w->succ[i]] ? 1 + w->len[w->succ[i]]
                                                                   : 1;
                if (w->len[i] > longest) {
                        longest = w->len[i];
                        head = i;
                }
        }
        if (head == w->n) {
                return 0;
        }
        for (int32_t j = (int32_t)head;; j = w->succ[j]) {
                fit_add(&chain, k, (double)w->t[j] - (double)w->t[head]);
                if (w->succ[j] < 0 || !w->on[w->succ[j]]) {
                        break;
                }
                k += w->mult[j];
        }
        fit_line(&chain, period, &p, &t0);
        if (!fit_lattice(w, head, tol, &p, &t0)) {
                return 0;
        }
        if (ret_period) {
                *ret_period = p;
        }
        w->lat_period = p;
        w->lat_t0 = (double)w->t[head] + t0;
        w->lat_first = INFINITY;
        w->lat_last = -INFINITY;
        /* One event per point, the nearest: a burst of events at one point is one arrival.
         * In phase, events are in the order of their points. */
        for (size_t i = 0; i < w->n; i++) {
                double t = (double)w->t[i] - (double)w->t[head], ki, dev;
                bool on = w->on[i];

                if (mark) {
                        w->on[i] = 0;
                }
                ki = round((t - t0) / p);
                dev = fabs(t - t0 - ki * p);
                if (!on || dev > 2 * tol) {
                        continue;
                }
                w->lat_first = fmin(w->lat_first, (double)w->t[i]);
                w->lat_last = fmax(w->lat_last, (double)w->t[i]);
                if (best < w->n && ki == point) {
                        if (dev < best_dev) {
                                best = i;
                                best_dev = dev;
                        }
                        continue;
                }
                if (best < w->n) {
                        count++;
                        if (mark) {
                                w->on[best] = 1;
                        }
                }
                best = i;
                best_dev = dev;
                point = ki;
        }
        if (best < w->n) {
                count++;
                if (mark) {
                        w->on[best] = 1;
                }
        }
        return count;
}

/* Links every event to the event nearest to one of the next @skip multiples of @period after
 * it (the first multiple that has one within the tolerance, which widens with the multiple):
 * w->succ and w->mult. */
static void link_events(Work *w, double period, double tol, unsigned skip)
{
        size_t ptr[SKIP_MAX + 1] = {0};

        for (size_t i = 0; i < w->n; i++) {
                double ti = (double)w->t[i];

                w->succ[i] = -1;
                w->mult[i] = 0;
                for (unsigned m = 1; m <= skip; m++) {
                        double target = ti + m * period, tm = tol * (1 + (m - 1) / 4.0);
                        size_t p = ptr[m] > i + 1 ? ptr[m] : i + 1, best = w->n;

                        while (p < w->n && (double)w->t[p] < target - tm) {
                                p++;
                        }
                        ptr[m] = p;
                        for (; p < w->n && (double)w->t[p] <= target + tm; p++) {
                                if (best == w->n || fabs((double)w->t[p] - target) <
                                                            fabs((double)w->t[best] - target)) {
                                        best = p;
                                }
                        }
                        if (best < w->n) {
                                w->succ[i] = (int32_t)best;
                                w->mult[i] = (uint8_t)m;
                                break;
                        }
                }
        }
}

/* One event per lattice point: where several events link to the same one (a burst of events,
 * or an event and its echo), only the link nearest to the lattice stays, so that a burst does
 * not put all its events on a chance period. w->len holds the best predecessor + 1 meanwhile. */
static void keep_nearest_links(Work *w, double period)
{
        for (size_t i = 0; i < w->n; i++) {
                w->len[i] = 0;
        }
        for (size_t i = 0; i < w->n; i++) {
                int32_t j = w->succ[i];
                uint32_t k = w->len[j >= 0 ? j : 0];

                if (j < 0) {
                        continue;
                }
                if (k == 0 || link_error(w, k - 1, period) > link_error(w, i, period)) {
                        w->len[j] = (uint32_t)i + 1;
                }
        }
        for (size_t i = 0; i < w->n; i++) {
                if (w->succ[i] >= 0 && w->len[w->succ[i]] != i + 1) {
                        w->succ[i] = -1;
                        w->mult[i] = 0;
                }
        }
}

/* A chain counts when at least CHAIN_MIN - 1 of its links go to the very next multiple: a
 * chain of two links, one of which bridges, is how events that follow another source at fixed
 * offsets (a theft, 2.48 ms later, 10 ms later) fall on a lattice that divides those offsets
 * (2.5 ms). Sets w->dep to how many such links come before an event on its chain (each event
 * has one predecessor at most now), w->len to how many from it on. */
static void count_next_links(Work *w)
{
        for (size_t i = 0; i < w->n; i++) {
                w->dep[i] = 0;
        }
        for (size_t i = 0; i < w->n; i++) {
                if (w->succ[i] >= 0) {
                        w->dep[w->succ[i]] = w->dep[i] + (w->mult[i] == 1);
                }
        }
        for (size_t i = w->n; i-- > 0;) {
                w->len[i] = w->succ[i] >= 0 ? (w->mult[i] == 1) + w->len[w->succ[i]] : 0;
        }
}

/* Bridging a missed event is what a real source needs now and then, not all along: a chain of
 * 20 ms links is the lattice of 20 ms, not of 4 ms (a 10 ms theft bridges to itself every
 * 20 ms, five periods of a 4 ms tick), even when a chance event somewhere links one of its
 * events to the very next multiple. So an event counts only within BRIDGE_MAX links of a link
 * to the very next multiple: sets w->on to how many links back the nearest such link is, w->fwd
 * to how many links ahead (255: none). */
static void count_bridges(Work *w)
{
        for (size_t i = 0; i < w->n; i++) {
                w->on[i] = UINT8_MAX;
        }
        for (size_t i = 0; i < w->n; i++) {
                if (w->succ[i] >= 0) {
                        w->on[w->succ[i]] = w->mult[i] == 1        ? 0
                                            : w->on[i] < UINT8_MAX ? (uint8_t)(w->on[i] + 1)
                                                                   : UINT8_MAX;
                }
        }
        for (size_t i = w->n; i-- > 0;) {
                uint8_t next = w->succ[i] >= 0 ? w->fwd[w->succ[i]] : UINT8_MAX;

                w->fwd[i] = w->succ[i] < 0     ? UINT8_MAX
                            : w->mult[i] == 1  ? 0
                            : next < UINT8_MAX ? (uint8_t)(next + 1)
                                               : UINT8_MAX;
        }
}

/* Follows the lattice of @period: links every event to its successor on it (link_events(),
 * one per point), and marks in w->on the events on chains with at least CHAIN_MIN - 1 links to
 * the very next multiple, within BRIDGE_MAX links of one. */
static Eval evaluate(Work *w, double period, double tol, unsigned skip)
{
        Eval e = {.period = period};
        double *lengths = w->diffs;
        size_t nl = 0;

        link_events(w, period, tol, skip);
        keep_nearest_links(w, period);
        count_next_links(w);
        count_bridges(w);
        for (size_t i = 0; i < w->n; i++) {
                w->on[i] = (w->on[i] <= BRIDGE_MAX || w->fwd[i] <= BRIDGE_MAX) &&
                           w->dep[i] + w->len[i] >= CHAIN_MIN - 1;
                if (!w->on[i]) {
                        continue;
                }
                e.on++;
                if (w->succ[i] >= 0) {
                        e.links++;
                        e.links_first += w->mult[i] == 1;
                        if (nl < DIFFS_MAX) {
                                lengths[nl++] = (double)(w->t[w->succ[i]] - w->t[i]) / w->mult[i];
                        }
                }
        }
        if (nl > 0) {
                e.period = median(lengths, nl);
        }
        e.in_phase = w->fill ? in_phase(w, period, tol, false, NULL) : 0;
        return e;
}

/* How many multiples may be bridged before chance links become likely in this much noise. */
static unsigned skip_for(const Work *w, double tol)
{
        double per_multiple = w->rate_per_ns * 2 * tol;
        double s = per_multiple > 0 ? CHANCE_LINK_MAX / per_multiple : SKIP_MAX;

        return s >= SKIP_MAX ? SKIP_MAX : s < 1 ? 1 : (unsigned)s;
}

static int cmp_period(const void *a, const void *b)
{
        const PeriodicityPeriod *x = a, *y = b;

        if (x->events != y->events) {
                return x->events < y->events ? 1 : -1;
        }
        return x->period_ns < y->period_ns ? -1 : x->period_ns > y->period_ns;
}

static void work_free(Work *w)
{
        free(w->hist[0].count);
        free(w->hist[1].count);
        free(w->triples.count);
        free(w->diffs);
        free(w->succ);
        free(w->mult);
        free(w->dep);
        free(w->len);
        free(w->on);
        free(w->fwd);
        free(w->on_cand);
        free(w->rest);
        free(w->peaks);
}

/* Whether the events marked in w->on (by evaluate()) fill one residue class modulo @k of
 * their lattice far more than the others: numbering each chain's lattice points from its first
 * event, the points of the class densest in events are, over all chains, more than three times
 * as full as those of the other classes together. The events of a real period fill every class
 * alike, or all but a few that it misses now and then (every fourth 137 ms theft that meets the
 * 4 ms tick and comes late). w->fwd is scratch. */
static bool one_class(Work *w, unsigned k)
{
        double dense_events = 0, dense_points = 0, other_events = 0, other_points = 0;

        for (size_t i = 0; i < w->n; i++) {
                w->fwd[i] = 0;
        }
        for (size_t i = 0; i < w->n; i++) {
                if (w->on[i] && w->succ[i] >= 0 && w->on[w->succ[i]]) {
                        w->fwd[w->succ[i]] = 1; /* not the first of its chain */
                }
        }
        for (size_t i = 0; i < w->n; i++) {
                double events[FUNDAMENTAL_MAX] = {0}, points[FUNDAMENTAL_MAX] = {0};
                double chain_events = 0, chain_points = 0;
                size_t point = 0, dense = 0;

                if (!w->on[i] || w->fwd[i]) {
                        continue;
                }
                for (int32_t j = (int32_t)i;; j = w->succ[j]) {
                        events[point % k]++;
                        if (w->succ[j] < 0 || !w->on[w->succ[j]]) {
                                break;
                        }
                        point += w->mult[j];
                }
                /* Class 0 has a point in every chain (its first event). */
                for (unsigned c = 0; c < k && c <= point; c++) {
                        points[c] = (double)((point - c) / k + 1);
                        chain_events += events[c];
                        chain_points += points[c];
                        if (events[c] * points[dense] > events[dense] * points[c]) {
                                dense = c;
                        }
                }
                dense_events += events[dense];
                dense_points += points[dense];
                other_events += chain_events - events[dense];
                other_points += chain_points - points[dense];
        }
        return other_points > 0 && other_events * 3 * dense_points < dense_events * other_points;
}

/* Whether the events left fill one class of the points of the lattice in_phase() fitted last
 * (w->lat_t0, w->lat_period), numbered from the window's first point modulo some k from 2 to
 * FUNDAMENTAL_MAX, and leave the other classes together three times emptier: the lattice is 1/k
 * of a source's own, whose events are on MULTIPLE_MIN_FILL of its points or more, and at least
 * CLASS_EVENTS_MIN of them (a weak source that fills its classes unevenly by chance is not
 * turned away). Counted over the whole window, with every event within twice the tolerance
 * @tol of a point, one per point, not only the chained ones: the chains of a 47 ms theft on a
 * 23.5 ms lattice are linked by the few unrelated events that lie halfway between two thefts by
 * chance, and one_class(), which sees only the chains, finds their classes alike. A source of
 * its own fills every class alike, or all but a few that it misses now and then. */
static bool lattice_one_class(const Work *w, double tol)
{
        uint32_t hits[FUNDAMENTAL_MAX + 1][FUNDAMENTAL_MAX] = {{0}};
        double first, points, last = 0;
        bool counted = false;

        if (w->n == 0) {
                return false;
        }
        first = round(((double)w->t[0] - w->lat_t0) / w->lat_period);
        points = round(((double)w->t[w->n - 1] - w->lat_t0) / w->lat_period) - first + 1;
        for (size_t i = 0; i < w->n; i++) {
                double t = (double)w->t[i], ki = round((t - w->lat_t0) / w->lat_period);

                if ((counted && ki == last) || fabs(t - w->lat_t0 - ki * w->lat_period) > 2 * tol) {
                        continue;
                }
                counted = true;
                last = ki;
                for (unsigned k = 2; k <= FUNDAMENTAL_MAX; k++) {
                        hits[k][(uint64_t)(ki - first) % k]++;
                }
        }
        for (unsigned k = 2; k <= FUNDAMENTAL_MAX && points > k; k++) {
                double dense_hits = 0, dense_points = 1, all = 0;

                for (unsigned c = 0; c < k; c++) {
                        double n = floor((points - 1 - c) / k) + 1;

                        all += hits[k][c];
                        if (hits[k][c] * dense_points > dense_hits * n) {
                                dense_hits = hits[k][c];
                                dense_points = n;
                        }
                }
                if (dense_hits >= CLASS_EVENTS_MIN &&
                    dense_hits >= MULTIPLE_MIN_FILL * dense_points &&
                    (all - dense_hits) * 3 * dense_points < dense_hits * (points - dense_points)) {
                        return true;
                }
        }
        return false;
}

/* Whether @events on @period put an event on MULTIPLE_MIN_FILL of its points over the window, as
 * a source of its own does (a tick). */
static bool fills_lattice(const Work *w, size_t events, double period)
{
        return (double)events * period >= MULTIPLE_MIN_FILL * w->span_ns;
}

/* The reasons to report the events that @e found on @period, when there are at least
 * opt->min_events: they are opt->min_share of the events that no period kept so far explains
 * (a 20 Hz theft is 4 % of the events next to a visible 250 Hz tick, and a third of what the
 * tick leaves), or, however many other events there are, one lattice holds an event on
 * opt->min_fill of its points over the window (a 137 ms theft is 1 % of what a 1 ms tick leaves
 * on a noisy VM, and at almost every one of its points). The lattice is that of one chain
 * (in_phase()): chance chains are short, and a few of them at unrelated phases would fill a
 * long period's few points. */
enum { BY_SHARE = 1, BY_FILL = 2 };

static unsigned relevance(const Work *w, const PeriodicityOptions *opt, double period,
                          const Eval *e)
{
        unsigned why = 0;

        if (e->on < opt->min_events) {
                return 0;
        }
        if ((double)e->on >= opt->min_share * (double)w->n) {
                why |= BY_SHARE;
        }
        if (opt->min_fill > 0 && e->in_phase >= FILL_EVENTS_MIN &&
            (double)e->in_phase * period >= opt->min_fill * w->span_ns) {
                why |= BY_FILL;
        }
        return why;
}

/* Whether @on events are clearly more than @null by chance: three times as many, and
 * opt->min_events more. */
static bool beyond_chance(const PeriodicityOptions *opt, size_t on, size_t null)
{
        return on >= 3 * null && on - null >= opt->min_events;
}

/* Is this a multiple of a shorter period its events are on? A period too weak to be reported
 * gains chance events on a multiple's wider tolerance and must not be reported as that
 * multiple. Largest k first: the fundamental. Moves @period, @tol, @skip and @e to the
 * fundamental found, if any; leaves w->on_cand and w->on with the events of what it keeps. */
static void prefer_fundamental(Work *w, double *period, double *tol, unsigned *skip, Eval *e)
{
        memcpy(w->on_cand, w->on, w->n);
        for (unsigned k = FUNDAMENTAL_MAX; k >= 2; k--) {
                double sub = *period / k, sub_tol = *tol < tol_max(sub) ? *tol : tol_max(sub);
                size_t common = 0;
                Eval f;

                if (sub < w->min_period) {
                        continue;
                }
                f = evaluate(w, sub, sub_tol, skip_for(w, sub_tol));
                for (size_t i = 0; i < w->n; i++) {
                        common += w->on[i] && w->on_cand[i];
                }
                if (f.links_first * 2 >= f.links && common * 5 >= e->on * 4) {
                        *period = f.period;
                        *tol = sub_tol;
                        *skip = skip_for(w, *tol);
                        *e = evaluate(w, *period, *tol, *skip);
                        memcpy(w->on_cand, w->on, w->n);
                        break;
                }
        }
        memcpy(w->on, w->on_cand, w->n);
}

/* Two sources on one lattice: a 1 ms theft and a 4 ms tick half a millisecond after it put
 * events on every point of a 500 us lattice, but the points between the theft's hold one event
 * in four. The theft's period is judged on its own. Evaluates @period again into @e first: the
 * links of the sub-periods tried are replaced by the period's own. */
static bool two_sources(Work *w, double period, double tol, unsigned skip, Eval *e)
{
        *e = evaluate(w, period, tol, skip);
        for (unsigned k = 2; k <= FUNDAMENTAL_MAX; k++) {
                if (one_class(w, k)) {
                        return true;
                }
        }
        return (w->fill ? e->in_phase : in_phase(w, period, tol, false, NULL)) > 0 &&
               lattice_one_class(w, tol);
}

/* Clearly more than chance: at least three times as many events as on any of the periods
 * nearby that mean nothing (in a burst of interruptions a few hundred us apart, any lattice
 * finds chains). A period reported for how it fills its lattice is compared by the events on
 * that one lattice: in heavy noise every lattice holds chance chains at many phases, as many as
 * a 137 ms theft has events. Leaves w->on as w->on_cand. */
static bool beyond_null(Work *w, const PeriodicityOptions *opt, double period, double tol,
                        unsigned skip, const Eval *e)
{
        size_t null_on = 0, null_phase = 0;
        unsigned why;

        for (size_t k = 0; k < ELEMENTSOF(null_ratios); k++) {
                Eval z = evaluate(w, period * null_ratios[k], tol, skip);

                null_on = z.on > null_on ? z.on : null_on;
                null_phase = z.in_phase > null_phase ? z.in_phase : null_phase;
        }
        memcpy(w->on, w->on_cand, w->n);
        why = relevance(w, opt, period, e);
        return ((why & BY_SHARE) && beyond_chance(opt, e->on, null_on)) ||
               ((why & BY_FILL) && beyond_chance(opt, e->in_phase, null_phase));
}

/* A period already kept is kept again only as a second source of its own, at another phase,
 * whose one lattice holds a share of all the events analysed (a host's 1 ms tick next to a
 * 1 ms theft), and once: turned away, it would leave its events to the multiples of the
 * period, one after another; kept for a few chance events, or again and again, it would fill
 * the list. A kept period with fewer events than this one does not ask a share of it: it was a
 * chance one, as a 136 ms chain of a noisy host's ticks is next to a 137 ms theft, and must not
 * stand in the way of the source. True when @period with @events is to be turned away. */
static bool kept_already(const Work *w, const PeriodicityOptions *opt,
                         const PeriodicityPeriod *kept, size_t nkept, double period, size_t events)
{
        unsigned near = 0; /* periods kept within 1 % of this one */
        unsigned same = 0; /* those of them with at least as many events */

        for (size_t k = 0; k < nkept; k++) {
                double kp = (double)kept[k].period_ns;

                if (fabs(period - kp) <= 0.01 * kp) {
                        near++;
                        same += kept[k].events >= events;
                }
        }
        return near > 1 || (same && (opt->min_share <= 0 || events < opt->min_events ||
                                     (double)events < opt->min_share * (double)w->analysed));
}

/* A small multiple of a kept period (2 to FUNDAMENTAL_MAX times it, within the tolerance) is
 * reported only when it recurs on half its points over the window, as a tick of its own does
 * (a 4 ms one next to a 1 ms theft): short of that, its events are the stragglers of the kept
 * source, which its jitter put off its lattice, and chance chains of them make 2, 3, 4, 8 ms
 * "periods" of a dozen events each. True when @period is such a multiple. */
static bool stragglers_multiple(const Work *w, const PeriodicityPeriod *kept, size_t nkept,
                                double period, double tol, size_t events)
{
        for (size_t k = 0; k < nkept; k++) {
                double m = round(period / (double)kept[k].period_ns);

                if (m >= 2 && m <= FUNDAMENTAL_MAX &&
                    fabs(period - m * (double)kept[k].period_ns) <= tol &&
                    !fills_lattice(w, events, period)) {
                        return true;
                }
        }
        return false;
}

/* Judges one candidate among the events left in @w: true when it is a period to report,
 * with its period, tolerance and events in @ret and its events marked in w->on. Each test
 * against chance is one step, in the order they are applied. */
static bool judge_candidate(Work *w, const Candidate *cand, const PeriodicityOptions *opt,
                            const PeriodicityPeriod *kept, size_t nkept, PeriodicityPeriod *ret)
{
        double period, tol;
        unsigned skip;
        size_t events;
        Eval e;

        if (!refine(w, cand, opt->min_events, &period, &tol)) {
                return false;
        }
        skip = skip_for(w, tol);
        e = evaluate(w, period, tol, skip);
        if (e.period != period && fabs(e.period - period) < tol) {
                period = e.period;
                e = evaluate(w, period, tol, skip);
        }
        /* A fundamental has about the events of its multiples, minus chance ones. */
        if (!relevance(w, opt, period, &e)) {
                return false;
        }
        prefer_fundamental(w, &period, &tol, &skip, &e);
        if (!relevance(w, opt, period, &e)) {
                return false;
        }
        /* Mostly bridging missed events: the period is a fraction of the real one. */
        if (e.links_first * 4 < e.links) {
                return false;
        }
        if (two_sources(w, period, tol, skip, &e) || !beyond_null(w, opt, period, tol, skip, &e)) {
                return false;
        }
        /* Only the one lattice's events are the period's, one per point: the chance chains at
         * other phases stay for other periods (counted here, they made a period hold more
         * events than its lattice has points). */
        evaluate(w, period, tol, skip);
        events = in_phase(w, period, tol, true, &period);
        if (kept_already(w, opt, kept, nkept, period, events) ||
            stragglers_multiple(w, kept, nkept, period, tol, events)) {
                return false;
        }
        *ret = (PeriodicityPeriod){
                .period_ns = (uint64_t)llround(period),
                .tolerance_ns = (uint64_t)llround(tol),
                .events = events,
        };
        return true;
}

/* Makes the @n events @t those that are analysed. */
static void set_events(Work *w, const uint64_t *t, size_t n)
{
        size_t reach = n > 0 ? TRIPLE_WORK / n : TRIPLE_REACH_MAX;

        w->t = t;
        w->n = n;
        w->rate_per_ns = n > 1 ? (double)(n - 1) / w->span_ns : 0;
        w->reach = reach < TRIPLE_REACH_MIN   ? TRIPLE_REACH_MIN
                   : reach > TRIPLE_REACH_MAX ? TRIPLE_REACH_MAX
                                              : reach;
}

/* Whether an event at @t, not on the lattice just kept, lies within STRAGGLER_TOLS times its
 * tolerance @tol of one of its points, from a period before its first event to a period after
 * its last: the same source, jittered off its lattice (a host's tick that came early or late),
 * taken out with it. Left, such stragglers make chance chains on the period's multiples (2, 3,
 * 12, 16 ms "periods" of a 1 ms tick), which take the places of real periods. */
static bool straggler(const Work *w, double t, double tol)
{
        double k = round((t - w->lat_t0) / w->lat_period);

        return t >= w->lat_first - w->lat_period && t <= w->lat_last + w->lat_period &&
               fabs(t - w->lat_t0 - k * w->lat_period) <= STRAGGLER_TOLS * tol;
}

/* Judges the @ncand candidates shortest first and keeps the first that is a period: appends it
 * to @found (*@nkept of them so far) and takes its events out of @w. Returns whether one was
 * kept. */
static bool keep_first(Work *w, Candidate *cand, size_t ncand, const PeriodicityOptions *opt,
                       PeriodicityPeriod *found, size_t *nkept)
{
        /* Shortest first, so that a fundamental is kept (and its events taken out) before its
         * multiples are looked at. */
        qsort(cand, ncand, sizeof(cand[0]), cmp_candidate_period);
        for (size_t c = 0; c < ncand; c++) {
                PeriodicityPeriod *p = &found[*nkept];
                size_t m = 0;
                bool dense;

                if (!judge_candidate(w, &cand[c], opt, found, *nkept, p)) {
                        continue;
                }
                p->source = periodicity_source_name(p->period_ns, opt->online_cpus);
                (*nkept)++;
                /* Its events are explained: later candidates (its multiples, or periods whose
                 * lattice would bridge over its events) see only the others. A lattice that
                 * fills its points is a source's own (a tick's), and its stragglers go with it;
                 * a sparse one may be chance, and around its points lie other sources' events
                 * (a 47 ms theft sits on a 1 ms lattice). */
                dense = fills_lattice(w, p->events, (double)p->period_ns);
                for (size_t i = 0; i < w->n; i++) {
                        if (!w->on[i] &&
                            !(dense && straggler(w, (double)w->t[i], (double)p->tolerance_ns))) {
                                w->rest[m++] = w->t[i];
                        }
                }
                set_events(w, w->rest, m);
                return true;
        }
        return false;
}

static bool valid_input(const uint64_t *start_ns, size_t n, const PeriodicityOptions *opt,
                        const PeriodicityResult *ret)
{
        if (!ret || (n > 0 && !start_ns) || !(opt->min_share >= 0 && opt->min_share <= 1) ||
            !(opt->min_fill >= 0 && opt->min_fill <= 1) || opt->max_events < 3 ||
            opt->max_events > PERIODICITY_EVENTS_LIMIT || opt->min_period_ns == 0 ||
            opt->max_period_ns <= opt->min_period_ns) {
                return false;
        }
        for (size_t i = 1; i < n; i++) {
                if (start_ns[i] < start_ns[i - 1]) {
                        return false;
                }
        }
        return true;
}

/* Sets up @w for the @n events @t over @span_ns. Returns the longest period to look for. */
static double work_init(Work *w, const PeriodicityOptions *opt, const uint64_t *t, size_t n,
                        uint64_t span_ns)
{
        double max_period;

        w->span_ns = (double)span_ns;
        w->analysed = n;
        w->fill = opt->min_fill > 0;
        set_events(w, t, n);
        /* A period with share s has about 1/s - 1 other events between two of its own; look
         * far enough to step over them. */
        w->neighbours = opt->min_share > 0 ? (size_t)ceil(4 / opt->min_share) + 8 : 64;
        if (w->neighbours > 64) {
                w->neighbours = 64;
        }
        w->min_period = (double)opt->min_period_ns;
        w->log_min = log(w->min_period);
        /* A period must repeat at least CHAIN_MIN - 1 times within the window. */
        max_period = (double)opt->max_period_ns;
        if (max_period > (double)span_ns / (CHAIN_MIN - 1)) {
                max_period = (double)span_ns / (CHAIN_MIN - 1);
        }
        return max_period;
}

/* Allocates the histograms up to @max_period and the buffers of @w's n events. Returns 0 or
 * -ENOMEM; work_free() frees what it allocated either way. */
static int work_alloc(Work *w, double max_period)
{
        const size_t n = w->n;

        w->npeaks = 0;
        for (size_t h = 0; h < 2; h++) {
                Hist *hist = &w->hist[h];

                hist->log_width = log1p(h == 0 ? BIN_WIDTH : FINE_BIN_WIDTH);
                hist->nbins = (size_t)ceil(log(max_period / w->min_period) / hist->log_width) + 1;
                hist->count = calloc(hist->nbins, sizeof(*hist->count));
                w->npeaks += hist->nbins / 3 + 1;
        }
        w->triples.log_width = log1p(TRIPLE_BIN_WIDTH);
        w->triples.nbins = (size_t)ceil(log(max_period / w->min_period) / w->triples.log_width) + 1;
        w->triples.count = calloc(w->triples.nbins, sizeof(*w->triples.count));
        if (w->triples.nbins / 3 + 1 > w->npeaks) {
                w->npeaks = w->triples.nbins / 3 + 1;
        }
        w->diffs = calloc(DIFFS_MAX, sizeof(*w->diffs));
        w->succ = calloc(n, sizeof(*w->succ));
        w->mult = calloc(n, sizeof(*w->mult));
        w->dep = calloc(n, sizeof(*w->dep));
        w->len = calloc(n, sizeof(*w->len));
        w->on = calloc(n, sizeof(*w->on));
        w->fwd = calloc(n, sizeof(*w->fwd));
        w->on_cand = calloc(n, sizeof(*w->on_cand));
        w->rest = calloc(n, sizeof(*w->rest));
        w->peaks = calloc(w->npeaks, sizeof(*w->peaks));
        if (!w->peaks || !w->hist[0].count || !w->hist[1].count || !w->triples.count || !w->diffs ||
            !w->succ || !w->mult || !w->dep || !w->len || !w->on || !w->fwd || !w->on_cand ||
            !w->rest) {
                return -ENOMEM;
        }
        return 0;
}

/* Finds the periods among the events of @w, into @found. Returns how many. Each time a period
 * is kept and its events taken out, the differences are counted again among the events left:
 * they are fewer, so that their next few events reach further (a 137 ms theft next to a visible
 * 250 Hz tick), and peaks that the kept period's events buried stand out. The triples, which
 * cost more, are counted only when the differences show nothing more to keep: by then the
 * strong sources are out. */
static size_t find_periods(Work *w, const PeriodicityOptions *opt, double max_period,
                           PeriodicityPeriod *found)
{
        Candidate cand[CANDIDATES_MAX > TRIPLE_CANDIDATES_MAX ? CANDIDATES_MAX
                                                              : TRIPLE_CANDIDATES_MAX];
        size_t nkept = 0;

        while (nkept < KEPT_MAX && w->n >= CHAIN_MIN) {
                size_t ncand;

                build_histograms(w, max_period);
                ncand = find_candidates(w, opt->min_events, cand, CANDIDATES_MAX);
                if (keep_first(w, cand, ncand, opt, found, &nkept)) {
                        continue;
                }
                build_triples(w, max_period);
                ncand = find_triple_candidates(w, opt->min_events, cand, TRIPLE_CANDIDATES_MAX);
                if (!keep_first(w, cand, ncand, opt, found, &nkept)) {
                        break;
                }
        }
        return nkept;
}

int periodicity_find(const uint64_t *start_ns, size_t n, const PeriodicityOptions *opt,
                     PeriodicityResult *ret)
{
        PeriodicityOptions defaults;
        PeriodicityPeriod found[KEPT_MAX];
        double max_period;
        size_t nkept;
        Work w = {0};
        int r;

        if (!opt) {
                periodicity_options_init(&defaults);
                opt = &defaults;
        }
        if (!valid_input(start_ns, n, opt, ret)) {
                return -EINVAL;
        }
        memset(ret, 0, sizeof(*ret));
        if (n > opt->max_events) {
                start_ns += n - opt->max_events;
                n = opt->max_events;
        }
        ret->analysed = n;
        ret->span_ns = n > 0 ? start_ns[n - 1] - start_ns[0] : 0;
        if (n < CHAIN_MIN || ret->span_ns == 0) {
                return 0;
        }
        max_period = work_init(&w, opt, start_ns, n, ret->span_ns);
        if (max_period <= w.min_period) {
                return 0;
        }
        r = work_alloc(&w, max_period);
        if (r == 0) {
                nkept = find_periods(&w, opt, max_period, found);
                for (size_t k = 0; k < nkept; k++) {
                        found[k].share = (double)found[k].events / (double)n;
                }
                /* The periods with the most events: shorter ones were judged first, and weak
                 * ones among them must not take the place of a longer period that explains
                 * more. */
                qsort(found, nkept, sizeof(found[0]), cmp_period);
                ret->n = nkept < PERIODICITY_MAX_PERIODS ? nkept : PERIODICITY_MAX_PERIODS;
                memcpy(ret->periods, found, ret->n * sizeof(found[0]));
        }
        work_free(&w);
        return r;
}

#include "summary.h"

#include <math.h>
#include <string.h>

static const double summary_percentiles[SUMMARY_PERCENTILES] = {0.9,    0.99,    0.999,
                                                                0.9999, 0.99999, 0.999999};
const char *const summary_percentile_names[SUMMARY_PERCENTILES] = {"p90",    "p99",     "p99.9",
                                                                   "p99.99", "p99.999", "p99.9999"};

double tickconv_signed_to_ns(const TickConv *conv, int64_t ticks)
{
        if (ticks < 0) {
                return -(double)tickconv_to_ns(conv, -(uint64_t)ticks);
        }
        return (double)tickconv_to_ns(conv, (uint64_t)ticks);
}

/* Histogram percentiles are bucket edges; the true extremes are known exactly, so never
 * report a percentile outside them. */
static uint64_t clamp_u(uint64_t v, uint64_t lo, uint64_t hi)
{
        return v < lo ? lo : v > hi ? hi : v;
}

static int64_t clamp_s(int64_t v, int64_t lo, int64_t hi)
{
        return v < lo ? lo : v > hi ? hi : v;
}

/* The median, then summary_percentiles, into @q: found in one pass over a histogram. */
static void median_and_percentiles(double q[SUMMARY_PERCENTILES + 1])
{
        q[0] = 0.5;
        memcpy(q + 1, summary_percentiles, sizeof(summary_percentiles));
}

static void summarize_gap(const ProbeSlot *s, const TickConv *conv, ValueSummary *ret)
{
        double ns_per_tick = 1e9 / (double)conv->hz;
        uint64_t v[SUMMARY_PERCENTILES + 1];
        double q[SUMMARY_PERCENTILES + 1];

        *ret = (ValueSummary){.count = s->gap.count};
        if (s->gap.count == 0) {
                return;
        }
        ret->min_ns = (double)tickconv_to_ns(conv, s->gap.min);
        ret->max_ns = (double)tickconv_to_ns(conv, s->gap.max);
        ret->mean_ns = stats_mean(&s->gap) * ns_per_tick;
        ret->variance_ns2 = stats_variance(&s->gap) * ns_per_tick * ns_per_tick;
        ret->stddev_ns = sqrt(ret->variance_ns2);
        median_and_percentiles(q);
        histogram_quantiles(&s->gap_hist, q, SUMMARY_PERCENTILES + 1, v);
        ret->median_ns = (double)tickconv_to_ns(conv, clamp_u(v[0], s->gap.min, s->gap.max));
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                ret->pct_ns[i] =
                        (double)tickconv_to_ns(conv, clamp_u(v[i + 1], s->gap.min, s->gap.max));
        }
}

static void summarize_dd(const ProbeSlot *s, const TickConv *conv, ValueSummary *ret)
{
        double ns_per_tick = 1e9 / (double)conv->hz;
        int64_t v[SUMMARY_PERCENTILES + 1];
        double q[SUMMARY_PERCENTILES + 1];

        *ret = (ValueSummary){.count = s->dd.count};
        if (s->dd.count == 0) {
                return;
        }
        ret->min_ns = tickconv_signed_to_ns(conv, s->dd.min);
        ret->max_ns = tickconv_signed_to_ns(conv, s->dd.max);
        ret->mean_ns = signed_stats_mean(&s->dd) * ns_per_tick;
        ret->variance_ns2 = signed_stats_variance(&s->dd) * ns_per_tick * ns_per_tick;
        ret->stddev_ns = sqrt(ret->variance_ns2);
        median_and_percentiles(q);
        signed_histogram_quantiles(&s->dd_hist, q, SUMMARY_PERCENTILES + 1, v);
        ret->median_ns = tickconv_signed_to_ns(conv, clamp_s(v[0], s->dd.min, s->dd.max));
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                ret->pct_ns[i] =
                        tickconv_signed_to_ns(conv, clamp_s(v[i + 1], s->dd.min, s->dd.max));
        }
}

void slot_summarize(const ProbeSlot *s, const TickConv *conv, uint64_t duration_ns,
                    SlotSummary *ret)
{
        *ret = (SlotSummary){
                .samples = s->gap.count,
                .events = s->events,
                .lost_ns = tickconv_to_ns(conv, s->lost_ticks),
        };
        if (duration_ns == 0 && s->end_ticks > s->start_ticks) {
                duration_ns = tickconv_to_ns(conv, s->end_ticks - s->start_ticks);
        }
        ret->duration_ns = duration_ns;
        if (duration_ns > 0) {
                ret->events_per_s = (double)s->events * 1e9 / (double)duration_ns;
                ret->cpu_available_pct = 100.0 * (1.0 - (double)ret->lost_ns / (double)duration_ns);
                if (ret->cpu_available_pct < 0) {
                        ret->cpu_available_pct = 0;
                }
        }
        summarize_gap(s, conv, &ret->gap);
        summarize_dd(s, conv, &ret->dd);
}

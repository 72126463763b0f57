#include "summary-json.h"
#include "summary-json-internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json-read.h"
#include "util.h"

/* JSON numbers for ns values: integers where the value is whole, which it is for everything
 * but mean and stddev. */
static json_t *ns_value(double ns)
{
        if (ns == floor(ns) && fabs(ns) < 9e15) {
                return json_integer((json_int_t)ns);
        }
        return json_real(ns);
}

/* The {stats} of summary-json.h for @v: a new reference, or NULL on OOM. */
static json_t *value_summary_to_json(const ValueSummary *v)
{
        json_t *pct = json_object();

        if (!pct) {
                return NULL;
        }
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                json_object_set_new(pct, summary_percentile_names[i], ns_value(v->pct_ns[i]));
        }
        return json_pack("{sI so so sf sf so so}", "count", (json_int_t)v->count, "min_ns",
                         ns_value(v->min_ns), "max_ns", ns_value(v->max_ns), "mean_ns", v->mean_ns,
                         "stddev_ns", v->stddev_ns, "median_ns", ns_value(v->median_ns),
                         "percentiles", pct);
}

json_t *slot_summary_to_json(const SlotSummary *s)
{
        return json_pack("{sI sI so so s{sI sf} sI sf}", "samples", (json_int_t)s->samples,
                         "duration_ns", (json_int_t)s->duration_ns, "gap",
                         value_summary_to_json(&s->gap), "diffdiff", value_summary_to_json(&s->dd),
                         "interruptions", "count", (json_int_t)s->events, "per_second",
                         s->events_per_s, "lost_ns", (json_int_t)s->lost_ns, "cpu_available_pct",
                         s->cpu_available_pct);
}

static int add_bucket(uint64_t lower, uint64_t upper, uint64_t count, void *userdata)
{
        void **ctx = userdata;
        json_t *arr = ctx[0];
        const TickConv *conv = ctx[1];

        return json_array_append_new(
                arr, json_pack("{sI sI sI}", "lower_ns", (json_int_t)tickconv_to_ns(conv, lower),
                               "upper_ns", (json_int_t)tickconv_to_ns(conv, upper), "count",
                               (json_int_t)count));
}

static int add_signed_bucket(int64_t lower, int64_t upper, uint64_t count, void *userdata)
{
        void **ctx = userdata;
        json_t *arr = ctx[0];
        const TickConv *conv = ctx[1];

        return json_array_append_new(arr, json_pack("{sI sI sI}", "lower_ns",
                                                    (json_int_t)tickconv_signed_to_ns(conv, lower),
                                                    "upper_ns",
                                                    (json_int_t)tickconv_signed_to_ns(conv, upper),
                                                    "count", (json_int_t)count));
}

json_t *histogram_to_json(const Histogram *h, const TickConv *conv, unsigned sub_bits)
{
        json_t *arr = json_array();
        void *ctx[2] = {arr, (void *)conv};

        if (arr && histogram_foreach(h, sub_bits, add_bucket, ctx) != 0) {
                json_decref(arr);
                return NULL;
        }
        return arr;
}

json_t *signed_histogram_to_json(const SignedHistogram *h, const TickConv *conv, unsigned sub_bits)
{
        json_t *arr = json_array();
        void *ctx[2] = {arr, (void *)conv};

        if (arr && signed_histogram_foreach(h, sub_bits, add_signed_bucket, ctx) != 0) {
                json_decref(arr);
                return NULL;
        }
        return arr;
}

json_t *interval_cpu_to_json(int cpu, const char *state, const SlotSummary *s)
{
        return json_pack("{si ss sI sI sf sI sI sf}", "cpu", cpu, "state", state, "samples",
                         (json_int_t)s->samples, "max_gap_ns", (json_int_t)s->gap.max_ns, "p99_ns",
                         s->gap.pct_ns[1], "interruptions", (json_int_t)s->events, "lost_ns",
                         (json_int_t)s->lost_ns, "cpu_available_pct", s->cpu_available_pct);
}

/* --- reading ------------------------------------------------------------------------------ */

/* The member readers of the typed readers: a member that is missing or null leaves the value
 * as it is (0, NaN, NULL) and is no error; one that is there but malformed is. Each returns
 * false for a malformed member. */

static bool missing(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        return !v || json_is_null(v);
}

static bool member_u64(json_t *o, const char *key, uint64_t *ret, unsigned *have, unsigned bit)
{
        if (missing(o, key)) {
                return true;
        }
        if (json_read_u64(o, key, ret) < 0) {
                return false;
        }
        *have |= bit;
        return true;
}

static bool member_number(json_t *o, const char *key, double *ret)
{
        *ret = NAN;
        return missing(o, key) || json_read_number(o, key, ret) == 0;
}

static bool member_string(json_t *o, const char *key, const char **ret)
{
        *ret = NULL;
        return missing(o, key) || json_read_string(o, key, SIZE_MAX, ret) == 0;
}

/* Member @key of @o if it is of @type (JSON_OBJECT, JSON_ARRAY), borrowed. */
static bool member_json(json_t *o, const char *key, json_type type, json_t **ret)
{
        json_t *v = json_object_get(o, key);

        *ret = NULL;
        if (missing(o, key)) {
                return true;
        }
        if (json_typeof(v) != type) {
                return false;
        }
        *ret = v;
        return true;
}

/* A {stats} object; @bit of @have says its count was there. */
static bool values_read(json_t *values, ValueSummary *ret, unsigned *have, unsigned bit)
{
        json_t *pct = json_object_get(values, "percentiles");
        bool ok = !values || json_is_null(values) || json_is_object(values);

        *ret = (ValueSummary){0};
        ok &= member_u64(values, "count", &ret->count, have, bit);
        ok &= member_number(values, "min_ns", &ret->min_ns);
        ok &= member_number(values, "max_ns", &ret->max_ns);
        ok &= member_number(values, "mean_ns", &ret->mean_ns);
        ok &= member_number(values, "stddev_ns", &ret->stddev_ns);
        ok &= member_number(values, "median_ns", &ret->median_ns);
        ret->variance_ns2 = ret->stddev_ns * ret->stddev_ns;
        ok &= !pct || json_is_null(pct) || json_is_object(pct);
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                ok &= member_number(pct, summary_percentile_names[i], &ret->pct_ns[i]);
        }
        return ok;
}

/* All of a {stats} object but its percentiles, which a summary may lack. */
static bool values_complete(const ValueSummary *v, unsigned have, unsigned bit)
{
        return (have & bit) && !isnan(v->min_ns) && !isnan(v->max_ns) && !isnan(v->mean_ns) &&
               !isnan(v->stddev_ns) && !isnan(v->median_ns);
}

double value_summary_get(const ValueSummary *v, const char *key)
{
        static const struct {
                const char *key;
                size_t offset;
        } fields[] = {
                {"min_ns", offsetof(ValueSummary, min_ns)},
                {"max_ns", offsetof(ValueSummary, max_ns)},
                {"mean_ns", offsetof(ValueSummary, mean_ns)},
                {"stddev_ns", offsetof(ValueSummary, stddev_ns)},
                {"median_ns", offsetof(ValueSummary, median_ns)},
                {"p50", offsetof(ValueSummary, median_ns)},
        };

        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                if (strcmp(key, fields[i].key) == 0) {
                        return *(const double *)((const char *)v + fields[i].offset);
                }
        }
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                if (strcmp(key, summary_percentile_names[i]) == 0) {
                        return v->pct_ns[i];
                }
        }
        return NAN;
}

bool values_percentile(json_t *values, const char *key, double *ret)
{
        ValueSummary v;
        unsigned have = 0;
        double x;

        (void)values_read(values, &v, &have, 1);
        x = key[0] == 'p' ? value_summary_get(&v, key) : NAN;
        if (isnan(x)) {
                return false;
        }
        *ret = x;
        return true;
}

int cpu_stats_read(json_t *o, CpuStats *ret)
{
        SlotSummary *s = &ret->summary;
        json_t *irq = json_object_get(o, "interruptions");
        bool ok = json_is_object(o);

        *ret = (CpuStats){0};
        ok &= member_u64(o, "cpu", &ret->cpu, &ret->have, CPU_STATS_CPU);
        ok &= member_string(o, "window", &ret->window);
        ok &= member_u64(o, "samples", &s->samples, &ret->have, CPU_STATS_SAMPLES);
        ok &= member_u64(o, "duration_ns", &s->duration_ns, &ret->have, CPU_STATS_DURATION);
        ok &= values_read(json_object_get(o, "gap"), &s->gap, &ret->have, CPU_STATS_GAP_COUNT);
        ok &= values_read(json_object_get(o, "diffdiff"), &s->dd, &ret->have, CPU_STATS_DD_COUNT);
        ok &= !irq || json_is_null(irq) || json_is_object(irq);
        ok &= member_u64(irq, "count", &s->events, &ret->have, CPU_STATS_EVENTS);
        ok &= member_number(irq, "per_second", &s->events_per_s);
        ok &= member_u64(o, "lost_ns", &s->lost_ns, &ret->have, CPU_STATS_LOST);
        ok &= member_number(o, "cpu_available_pct", &s->cpu_available_pct);
        ok &= member_u64(o, "stalls", &ret->stalls, &ret->have, CPU_STATS_STALLS);
        ok &= member_u64(o, "smi", &ret->smi, &ret->have, CPU_STATS_SMI);
        ok &= member_json(o, "interrupts", JSON_OBJECT, &ret->interrupts);
        ok &= member_json(o, "softirqs", JSON_OBJECT, &ret->softirqs);
        ok &= member_json(o, "ctxsw", JSON_OBJECT, &ret->ctxsw);
        ok &= member_json(o, "causes", JSON_ARRAY, &ret->causes);
        ok &= member_json(o, "background", JSON_OBJECT, &ret->background);
        ok &= member_json(o, "periods", JSON_ARRAY, &ret->periods);
        return ok ? 0 : -EBADMSG;
}

int slot_summary_from_json(json_t *cpu_stats, SlotSummary *ret)
{
        const unsigned need =
                CPU_STATS_SAMPLES | CPU_STATS_DURATION | CPU_STATS_EVENTS | CPU_STATS_LOST;
        CpuStats s;

        if (cpu_stats_read(cpu_stats, &s) < 0 || (s.have & need) != need ||
            isnan(s.summary.events_per_s) || isnan(s.summary.cpu_available_pct) ||
            !values_complete(&s.summary.gap, s.have, CPU_STATS_GAP_COUNT) ||
            !values_complete(&s.summary.dd, s.have, CPU_STATS_DD_COUNT)) {
                return -EINVAL;
        }
        *ret = s.summary;
        return 0;
}

int interval_cpu_read(json_t *o, IntervalCpu *ret)
{
        bool ok = json_is_object(o);

        *ret = (IntervalCpu){0};
        ok &= member_u64(o, "cpu", &ret->cpu, &ret->have, INTERVAL_CPU_CPU);
        ok &= member_string(o, "state", &ret->state);
        ok &= member_u64(o, "samples", &ret->samples, &ret->have, INTERVAL_CPU_SAMPLES);
        ok &= member_u64(o, "max_gap_ns", &ret->max_gap_ns, &ret->have, INTERVAL_CPU_MAX_GAP);
        ok &= member_number(o, "p99_ns", &ret->p99_ns);
        ok &= member_u64(o, "interruptions", &ret->events, &ret->have, INTERVAL_CPU_EVENTS);
        ok &= member_u64(o, "lost_ns", &ret->lost_ns, &ret->have, INTERVAL_CPU_LOST);
        ok &= member_number(o, "cpu_available_pct", &ret->cpu_available_pct);
        ok &= member_json(o, "interrupts", JSON_OBJECT, &ret->interrupts);
        return ok ? 0 : -EBADMSG;
}

static int bucket_cmp(const void *x, const void *y)
{
        const ReportBucket *a = x, *b = y;

        return (a->lower_ns > b->lower_ns) - (a->lower_ns < b->lower_ns);
}

int buckets_from_json(json_t *array, ReportBucket **ret)
{
        ReportBucket *b;
        size_t n = 0, i;
        json_t *e;

        if (!json_is_array(array)) {
                return -EINVAL;
        }
        b = calloc(json_array_size(array) + 1, sizeof(*b));
        if (!b) {
                return -ENOMEM;
        }
        json_array_foreach(array, i, e)
        {
                json_t *lo = json_object_get(e, "lower_ns");
                json_t *hi = json_object_get(e, "upper_ns");
                json_t *count = json_object_get(e, "count");

                if (!json_is_integer(lo) || !json_is_integer(hi) || !json_is_integer(count) ||
                    json_integer_value(hi) < json_integer_value(lo) ||
                    json_integer_value(count) < 0) {
                        free(b);
                        return -EINVAL;
                }
                if (json_integer_value(count) == 0) {
                        continue;
                }
                b[n++] = (ReportBucket){
                        .lower_ns = json_integer_value(lo),
                        .upper_ns = json_integer_value(hi),
                        .count = (uint64_t)json_integer_value(count),
                };
        }
        qsort(b, n, sizeof(*b), bucket_cmp);
        *ret = b;
        return (int)n;
}

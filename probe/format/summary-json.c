#include "summary-json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* JSON numbers for ns values: integers where the value is whole, which it is for everything
 * but mean and stddev. */
static json_t *ns_value(double ns)
{
        if (ns == floor(ns) && fabs(ns) < 9e15) {
                return json_integer((json_int_t)ns);
        }
        return json_real(ns);
}

json_t *value_summary_to_json(const ValueSummary *v)
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

json_t *histogram_to_json(const Histogram *h, const TickConv *conv)
{
        json_t *arr = json_array();
        void *ctx[2] = {arr, (void *)conv};

        if (arr && histogram_foreach(h, add_bucket, ctx) != 0) {
                json_decref(arr);
                return NULL;
        }
        return arr;
}

json_t *signed_histogram_to_json(const SignedHistogram *h, const TickConv *conv)
{
        json_t *arr = json_array();
        void *ctx[2] = {arr, (void *)conv};

        if (arr && signed_histogram_foreach(h, add_signed_bucket, ctx) != 0) {
                json_decref(arr);
                return NULL;
        }
        return arr;
}

/* --- reading ------------------------------------------------------------------------------ */

int json_read_int(json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *ret)
{
        json_t *v = json_object_get(o, key);
        json_int_t x;

        if (!json_is_integer(v)) {
                return -EBADMSG;
        }
        x = json_integer_value(v);
        if (x < min || x > max) {
                return -EBADMSG;
        }
        *ret = x;
        return 0;
}

int json_read_u64(json_t *o, const char *key, uint64_t *ret)
{
        json_int_t x;
        int r = json_read_int(o, key, 0, INT64_MAX, &x);

        if (r < 0) {
                return r;
        }
        *ret = (uint64_t)x;
        return 0;
}

int json_read_number(json_t *o, const char *key, double *ret)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_number(v) || !isfinite(json_number_value(v))) {
                return -EBADMSG;
        }
        *ret = json_number_value(v);
        return 0;
}

int json_read_ns(json_t *o, const char *key, uint64_t *ret)
{
        double v;
        int r = json_read_number(o, key, &v);

        if (r < 0) {
                return r;
        }
        /* 2^63 ns is 292 years: anything above is not a duration that was measured. */
        if (v < 0 || v >= 9.2e18) {
                return -EBADMSG;
        }
        *ret = (uint64_t)llround(v);
        return 0;
}

int json_read_string(json_t *o, const char *key, size_t max_len, const char **ret)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_string(v) || json_string_length(v) > max_len ||
            strlen(json_string_value(v)) != json_string_length(v)) {
                return -EBADMSG;
        }
        *ret = json_string_value(v);
        return 0;
}

bool values_percentile(json_t *values, const char *key, double *ret)
{
        if (json_read_number(json_object_get(values, "percentiles"), key, ret) == 0) {
                return true;
        }
        if (strcmp(key, "p50") == 0) {
                return json_read_number(values, "median_ns", ret) == 0;
        }
        return false;
}

int value_summary_from_json(json_t *values, ValueSummary *ret)
{
        *ret = (ValueSummary){0};
        if (json_read_u64(values, "count", &ret->count) < 0 ||
            json_read_number(values, "min_ns", &ret->min_ns) < 0 ||
            json_read_number(values, "max_ns", &ret->max_ns) < 0 ||
            json_read_number(values, "mean_ns", &ret->mean_ns) < 0 ||
            json_read_number(values, "stddev_ns", &ret->stddev_ns) < 0 ||
            json_read_number(values, "median_ns", &ret->median_ns) < 0) {
                return -EINVAL;
        }
        ret->variance_ns2 = ret->stddev_ns * ret->stddev_ns;
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                if (!values_percentile(values, summary_percentile_names[i], &ret->pct_ns[i])) {
                        ret->pct_ns[i] = NAN;
                }
        }
        return 0;
}

int slot_summary_from_json(json_t *cpu_stats, SlotSummary *ret)
{
        json_t *irq = json_object_get(cpu_stats, "interruptions");

        *ret = (SlotSummary){0};
        if (json_read_u64(cpu_stats, "samples", &ret->samples) < 0 ||
            json_read_u64(cpu_stats, "duration_ns", &ret->duration_ns) < 0 ||
            json_read_u64(irq, "count", &ret->events) < 0 ||
            json_read_number(irq, "per_second", &ret->events_per_s) < 0 ||
            json_read_u64(cpu_stats, "lost_ns", &ret->lost_ns) < 0 ||
            json_read_number(cpu_stats, "cpu_available_pct", &ret->cpu_available_pct) < 0) {
                return -EINVAL;
        }
        if (value_summary_from_json(json_object_get(cpu_stats, "gap"), &ret->gap) < 0 ||
            value_summary_from_json(json_object_get(cpu_stats, "diffdiff"), &ret->dd) < 0) {
                return -EINVAL;
        }
        return 0;
}

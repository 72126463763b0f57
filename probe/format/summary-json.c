#include "summary-json.h"

#include <math.h>

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

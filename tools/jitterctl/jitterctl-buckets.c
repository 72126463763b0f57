#include "jitterctl-buckets.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

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

uint64_t buckets_total(const ReportBucket *b, size_t n)
{
        uint64_t total = 0;

        for (size_t i = 0; i < n; i++) {
                total += b[i].count;
        }
        return total;
}

long buckets_quantile_index(const ReportBucket *b, size_t n, double q)
{
        uint64_t total = buckets_total(b, n), target, sum = 0;
        double t;

        if (total == 0) {
                return -1;
        }
        /* ceil(), but 0.07 * 100 must give 7 although it is 7.000000000000001 in binary. */
        t = q * (double)total;
        target = (uint64_t)t;
        if ((double)target < t * (1 - 1e-12)) {
                target++;
        }
        if (target < 1) {
                target = 1;
        }
        for (size_t i = 0; i < n; i++) {
                sum += b[i].count;
                if (sum >= target) {
                        return (long)i;
                }
        }
        return (long)n - 1;
}

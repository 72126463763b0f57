#include "jitterctl-summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"

static int u64_cmp(const void *x, const void *y)
{
        uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

        return (a > b) - (a < b);
}

/* Two interval lengths are the same resolution when within 10 % of each other (harvests are
 * never exactly on time). */
static bool same_resolution(uint64_t a, uint64_t b)
{
        return (a > b ? a - b : b - a) * 10 <= (a > b ? b : a);
}

int timeline_worst_gaps(json_t *points, double **ret, uint64_t *ret_interval_ns)
{
        size_t n = json_array_size(points), m = 0, i, best_start = 0, best_len = 0;
        uint64_t *durations, lo, hi;
        double *values;
        json_t *p;

        if (!json_is_array(points)) {
                return -EINVAL;
        }
        durations = calloc(n + 1, sizeof(*durations));
        values = calloc(n + 1, sizeof(*values));
        if (!durations || !values) {
                free(durations);
                free(values);
                return -ENOMEM;
        }
        json_array_foreach(points, i, p)
        {
                uint64_t samples, gap, duration;

                if (!json_get_u64(p, "samples", &samples) || !json_get_u64(p, "max_gap_ns", &gap) ||
                    !json_get_u64(p, "duration_ns", &duration)) {
                        free(durations);
                        free(values);
                        return -EINVAL;
                }
                if (samples > 0 && duration > 0) {
                        durations[m++] = duration;
                }
        }
        /* The largest cluster of similar lengths: around each length in turn, those of the
         * same resolution on either side (an interval that a late harvest made longer makes
         * the next one shorter by as much). */
        qsort(durations, m, sizeof(*durations), u64_cmp);
        for (i = 0; i < m; i++) {
                size_t j = i, k = i;

                while (j > 0 && same_resolution(durations[i], durations[j - 1])) {
                        j--;
                }
                while (k < m && same_resolution(durations[i], durations[k])) {
                        k++;
                }
                if (k - j > best_len) {
                        best_start = j;
                        best_len = k - j;
                }
        }
        *ret_interval_ns = 0;
        if (best_len == 0) {
                free(durations);
                *ret = values;
                return 0;
        }
        lo = durations[best_start];
        hi = durations[best_start + best_len - 1];
        *ret_interval_ns = durations[best_start + best_len / 2];
        free(durations);
        m = 0;
        json_array_foreach(points, i, p)
        {
                uint64_t samples = 0, gap = 0, duration = 0;

                json_get_u64(p, "samples", &samples);
                json_get_u64(p, "max_gap_ns", &gap);
                json_get_u64(p, "duration_ns", &duration);
                if (samples > 0 && duration >= lo && duration <= hi) {
                        values[m++] = (double)gap;
                }
        }
        *ret = values;
        return (int)m;
}

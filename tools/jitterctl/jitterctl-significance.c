#include "jitterctl-significance.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "jitterctl-format.h"
#include "json-read.h"
#include "util.h"

void sample_summarize(const double *values, size_t n, SampleSummary *ret)
{
        double mean = 0, m2 = 0;

        *ret = (SampleSummary){.n = n};
        if (n == 0) {
                return;
        }
        ret->min = ret->max = values[0];
        /* Welford's update: no cancellation for large values with a small spread. */
        for (size_t i = 0; i < n; i++) {
                double d = values[i] - mean;

                mean += d / (double)(i + 1);
                m2 += d * (values[i] - mean);
                if (values[i] < ret->min) {
                        ret->min = values[i];
                }
                if (values[i] > ret->max) {
                        ret->max = values[i];
                }
        }
        ret->mean = mean;
        ret->stddev = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0;
}

typedef struct Ranked {
        double value;
        int group; /* 0: A, 1: B */
} Ranked;

static int ranked_cmp(const void *x, const void *y)
{
        const Ranked *a = x, *b = y;

        return (a->value > b->value) - (a->value < b->value);
}

int mann_whitney(const double *a, size_t n_a, const double *b, size_t n_b, MannWhitney *ret)
{
        size_t n = n_a + n_b;
        double rank_sum_a = 0, tie_term = 0, mean, sigma, d;
        Ranked *r;

        if (n_a == 0 || n_b == 0) {
                return -EINVAL;
        }
        r = calloc(n, sizeof(*r));
        if (!r) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                r[i].value = i < n_a ? a[i] : b[i - n_a];
                r[i].group = i < n_a ? 0 : 1;
                if (isnan(r[i].value)) {
                        free(r);
                        return -EINVAL;
                }
        }
        qsort(r, n, sizeof(*r), ranked_cmp);
        /* Tied values share the mean of the ranks they span. */
        for (size_t i = 0; i < n;) {
                size_t j = i;
                double t, rank;

                while (j < n && r[j].value == r[i].value) {
                        j++;
                }
                t = (double)(j - i);
                rank = ((double)i + 1 + (double)j) / 2;
                for (size_t k = i; k < j; k++) {
                        if (r[k].group == 0) {
                                rank_sum_a += rank;
                        }
                }
                tie_term += t * t * t - t;
                i = j;
        }
        free(r);

        *ret = (MannWhitney){.n_a = n_a, .n_b = n_b};
        ret->u_a = rank_sum_a - (double)n_a * ((double)n_a + 1) / 2;
        ret->u = fmin(ret->u_a, (double)n_a * (double)n_b - ret->u_a);
        mean = (double)n_a * (double)n_b / 2;
        sigma = n > 1 ? sqrt((double)n_a * (double)n_b / 12 *
                             (((double)n + 1) - tie_term / ((double)n * ((double)n - 1))))
                      : 0;
        d = ret->u_a - mean;
        if (sigma <= 0 || fabs(d) <= 0.5) {
                /* All values equal, or a difference smaller than the continuity correction. */
                ret->z = 0;
                ret->p = 1;
                return 0;
        }
        ret->z = (d - copysign(0.5, d)) / sigma;
        ret->p = erfc(fabs(ret->z) / sqrt(2));
        if (ret->p > 1) {
                ret->p = 1;
        }
        return 0;
}

bool intervals_same_resolution(uint64_t a, uint64_t b)
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

                if (json_read_u64(p, "samples", &samples) < 0 ||
                    json_read_u64(p, "max_gap_ns", &gap) < 0 ||
                    json_read_u64(p, "duration_ns", &duration) < 0) {
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
        qsort(durations, m, sizeof(*durations), cmp_u64);
        for (i = 0; i < m; i++) {
                size_t j = i, k = i;

                while (j > 0 && intervals_same_resolution(durations[i], durations[j - 1])) {
                        j--;
                }
                while (k < m && intervals_same_resolution(durations[i], durations[k])) {
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

                json_read_u64(p, "samples", &samples);
                json_read_u64(p, "max_gap_ns", &gap);
                json_read_u64(p, "duration_ns", &duration);
                if (samples > 0 && duration >= lo && duration <= hi) {
                        values[m++] = (double)gap;
                }
        }
        *ret = values;
        return (int)m;
}

#include "jitterctl-significance.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

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

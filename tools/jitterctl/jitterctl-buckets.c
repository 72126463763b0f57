#include "jitterctl-buckets.h"
#include "jitterctl-buckets-internal.h"

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

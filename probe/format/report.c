#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "duration.h"

#define US(ns) ((ns) / 1000.0)

static void section(FILE *f, const char *name, const ValueSummary *v)
{
        fprintf(f, " %8s SAMPLE COUNT: %llu\n", name, (unsigned long long)v->count);
        fprintf(f, " %8s MIN (usec):    %14.4f\n", name, US(v->min_ns));
        fprintf(f, " %8s MAX (usec):    %14.4f\n", name, US(v->max_ns));
        fprintf(f, " %8s MEAN (usec):   %14.4f\n", name, US(v->mean_ns));
        fprintf(f, " %8s MEDIAN (usec): %14.4f\n", name, US(v->median_ns));
        fprintf(f, " %8s STDDEV (usec): %14.4f\n", name, US(v->stddev_ns));
        fprintf(f, " %8s VAR (usec^2):  %14.6f\n", name, v->variance_ns2 / 1e6);
        for (int i = 0; i < SUMMARY_PERCENTILES; i++) {
                char label[32];

                snprintf(label, sizeof(label), "%s (usec):", summary_percentile_names[i]);
                fprintf(f, " %8s %-17s %11.4f\n", name, label, US(v->pct_ns[i]));
        }
}

void report_statistics(FILE *f, const SlotSummary *s, uint64_t threshold_ns)
{
        fprintf(f, "STATISTICS\n----------\n");
        section(f, "DIFF", &s->gap);
        fputc('\n', f);
        section(f, "DIFFDIFF", &s->dd);
        fprintf(f, "\nINTERRUPTIONS (gap >= %.3f usec)\n-------------\n", US((double)threshold_ns));
        fprintf(f, "          COUNT: %llu\n", (unsigned long long)s->events);
        fprintf(f, "     PER SECOND: %.3f\n", s->events_per_s);
        fprintf(f, "TIME LOST (usec): %.3f (%.5f %%)\n", US((double)s->lost_ns),
                s->duration_ns ? 100.0 * (double)s->lost_ns / (double)s->duration_ns : 0.0);
        fprintf(f, "  CPU AVAILABLE: %.5f %%\n", s->cpu_available_pct);
}

void report_bars(FILE *f, const ReportBucket *b, size_t n, bool color)
{
        const int width = 40;
        uint64_t max = 0;

        for (size_t i = 0; i < n; i++) {
                if (b[i].count > max) {
                        max = b[i].count;
                }
        }
        for (size_t i = 0; i < n; i++) {
                char lo[32], hi[32];
                int len =
                        (int)lround(log10((double)b[i].count + 1) / log10((double)max + 1) * width);

                duration_format_signed(lo, sizeof(lo), b[i].lower_ns);
                duration_format_signed(hi, sizeof(hi), b[i].upper_ns);
                if (len < 1) {
                        len = 1;
                }
                fprintf(f, "  %10s .. %-10s %12llu %s", lo, hi, (unsigned long long)b[i].count,
                        color ? "\033[36m" : "");
                for (int j = 0; j < len; j++) {
                        fputc('#', f);
                }
                fprintf(f, "%s\n", color ? "\033[0m" : "");
        }
}

void report_sanity(FILE *f, const ReportSanity *s)
{
        double diff = s->counter_ns - s->realtime_ns;

        fprintf(f, "COUNTER ROLLOVER SANITY CHECK\n-----------------------------\n");
        fprintf(f, "  CLOCK_REALTIME ELAPSED TIME (usec): %.3f\n", US(s->realtime_ns));
        fprintf(f, "         COUNTER ELAPSED TIME (usec): %.3f\n", US(s->counter_ns));
        fprintf(f, "          DIFF OF ELAPSED TIMES (usec): %.3f (%.3f ppm)\n", US(diff),
                s->realtime_ns > 0 ? diff / s->realtime_ns * 1e6 : 0.0);
}

static bool same_sign(int64_t a, int64_t b)
{
        return (a >= 0 && b >= 0) || (a <= 0 && b <= 0);
}

size_t report_buckets_join(ReportBucket *b, size_t n)
{
        size_t out = 0;

        for (size_t i = 0; i < n; i++) {
                if (out > 0) {
                        ReportBucket *row = &b[out - 1];
                        int64_t lo = row->lower_ns, hi = b[i].upper_ns;
                        double small = fmin(fabs((double)lo), fabs((double)hi));
                        double large = fmax(fabs((double)lo), fabs((double)hi));

                        /* Rows of at most ~25 % relative width read better than the ~3 % buckets
                         * of the histogram. */
                        if (same_sign(lo, hi) && small > 0 && large * 4 <= small * 5) {
                                row->upper_ns = hi;
                                row->count += b[i].count;
                                continue;
                        }
                }
                b[out++] = b[i];
        }
        return out;
}

typedef struct Collect {
        ReportBucket *b;
        size_t n;
        const TickConv *conv;
} Collect;

static int collect(uint64_t lower, uint64_t upper, uint64_t count, void *userdata)
{
        Collect *c = userdata;

        c->b[c->n++] = (ReportBucket){
                .lower_ns = (int64_t)tickconv_to_ns(c->conv, lower),
                .upper_ns = (int64_t)tickconv_to_ns(c->conv, upper),
                .count = count,
        };
        return 0;
}

int report_buckets_from_histogram(const Histogram *h, const TickConv *conv, ReportBucket **ret)
{
        Collect c = {.conv = conv};

        c.b = calloc(HIST_BUCKETS, sizeof(ReportBucket));
        if (!c.b) {
                return -ENOMEM;
        }
        histogram_foreach(h, HIST_SUB_BITS, collect, &c);
        *ret = c.b;
        return (int)report_buckets_join(c.b, c.n);
}

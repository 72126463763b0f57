/* jitterctl hist: one CPU's histogram (GetHistogram) as a log-scale bar chart, with the
 * percentiles marked. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-buckets.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "report.h"
#include "summary-json.h"
#include "util.h"

#define BAR_WIDTH 40

/* The percentiles "hist" marks beside the rows they fall in. */
static const struct {
        double q;
        const char *name;
} markers[] = {
        {0.5, "p50"},
        {0.99, "p99"},
        {0.9999, "p99.99"},
};

#define N_MARKERS ELEMENTSOF(markers)

static void print_rows(const Ctl *ctl, const ReportBucket *b, size_t n)
{
        long marker_row[N_MARKERS];
        uint64_t max = 0;

        for (size_t k = 0; k < N_MARKERS; k++) {
                marker_row[k] = buckets_quantile_index(b, n, markers[k].q);
        }
        for (size_t i = 0; i < n; i++) {
                max = b[i].count > max ? b[i].count : max;
        }
        for (size_t i = 0; i < n; i++) {
                char lo[FORMAT_MAX], hi[FORMAT_MAX];
                int len = (int)lround(log10((double)b[i].count + 1) / log10((double)max + 1) *
                                      BAR_WIDTH);
                bool first = true;

                format_ns(lo, sizeof(lo), (double)b[i].lower_ns);
                format_ns(hi, sizeof(hi), (double)b[i].upper_ns);
                fput_padded(stdout, lo, 11);
                /* A bucket narrower than a nanosecond has one value in ns. */
                printf(b[i].lower_ns == b[i].upper_ns ? "    " : " .. ");
                fput_padded(stdout, b[i].lower_ns == b[i].upper_ns ? "" : hi, -10);
                printf(" %12llu %s", (unsigned long long)b[i].count, ctl_color(ctl, CTL_CYAN));
                for (int j = 0; j < (len < 1 ? 1 : len); j++) {
                        fputc('#', stdout);
                }
                printf("%s", ctl_color(ctl, CTL_RESET));
                for (size_t k = 0; k < N_MARKERS; k++) {
                        if (marker_row[k] != (long)i) {
                                continue;
                        }
                        printf("%s%*s%s%s", first ? "" : ",", first ? BAR_WIDTH + 1 - len : 0, "",
                               ctl_color(ctl, CTL_YELLOW), markers[k].name);
                        printf("%s", ctl_color(ctl, CTL_RESET));
                        first = false;
                }
                fputc('\n', stdout);
        }
}

int cmd_hist(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        const char *window = NULL, *kind = "gap";
        const CtlOptions options = {
                .short_options = "d",
                .long_options = ctl_diffdiff_option,
                .parse = ctl_parse_diffdiff,
                .userdata = &kind,
                .window = &window,
                .takes_args = true,
        };
        unsigned long long cpu;
        json_t *reply = NULL;
        ReportBucket *b = NULL;
        char min[FORMAT_MAX], max[FORMAT_MAX];
        uint64_t total = 0;
        double v;
        int r, n;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (argc - optind != 1) {
                return ctl_usage_error(cmd, "expected one CPU number");
        }
        if (ctl_parse_uint(argv[optind], INT32_MAX, &cpu) < 0) {
                return ctl_usage_error(cmd, "invalid CPU \"%s\"", argv[optind]);
        }
        if (ctl_call(ctl, "GetHistogram", ctl_histogram_params(cpu, window, kind), &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (ctl->json) {
                r = ctl_print_json(reply);
                json_decref(reply);
                return r;
        }
        n = buckets_from_json(json_object_get(reply, "buckets"), &b);
        if (n < 0) {
                json_decref(reply);
                return ctl_fail("malformed histogram from jitterd: %s", strerror(-n));
        }
        n = (int)report_buckets_join(b, (size_t)n);
        json_read_u64(reply, "total", &total);
        format_ns(min, sizeof(min), json_read_number(reply, "min_ns", &v) == 0 ? v : NAN);
        format_ns(max, sizeof(max), json_read_number(reply, "max_ns", &v) == 0 ? v : NAN);
        printf("CPU %llu, window %s, %s: %llu samples, min %s, max %s\n", cpu,
               json_read_string_or(reply, "window", window ? window : "1m"),
               strcmp(kind, "gap") == 0 ? "gaps" : "difference of consecutive gaps",
               (unsigned long long)total, min, max);
        if (n == 0) {
                printf("  (no samples)\n");
        } else {
                print_rows(ctl, b, (size_t)n);
        }
        free(b);
        json_decref(reply);
        return CTL_EXIT_OK;
}

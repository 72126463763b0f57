/* jitterctl report: the classic DIFF/DIFFDIFF text report, the one jitter-probe writes
 * (report.h), from the daemon's statistics and histograms. */

#include <errno.h>
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

/* The classic "rollover sanity check": the time the window covers by CLOCK_MONOTONIC against
 * the same time by the counter (the sum of every gap the probe measured). A counter whose
 * frequency is wrong, or which is not converted right across wraps and interval boundaries,
 * shows as a difference far above the counter's stated precision. */
static void report_counter_check(const SlotSummary *s, json_t *counter, uint64_t intervals)
{
        double clock_ns = (double)s->duration_ns;
        double counter_ns = s->gap.mean_ns * (double)s->gap.count;
        double diff = counter_ns - clock_ns, ppm = clock_ns > 0 ? diff / clock_ns * 1e6 : 0;
        double drift = NAN, precision = 0;
        /* CLOCK_MONOTONIC is slewed by NTP by up to 500 ppm, the counter is not: a difference
         * within twice that is the clock's doing; a wrong counter frequency or a lost wrap is
         * far larger. */
        double tolerance_ppm = 1000;

        json_read_number(counter, "drift_ppm", &drift);
        json_read_number(counter, "precision_ppm", &precision);
        if (precision > 0) {
                tolerance_ppm += precision;
        }
        printf("COUNTER ROLLOVER SANITY CHECK\n-----------------------------\n");
        printf("  CLOCK_MONOTONIC ELAPSED TIME (usec): %.3f\n", clock_ns / 1e3);
        printf("     COUNTER ELAPSED TIME (usec):      %.3f\n", counter_ns / 1e3);
        printf("      DIFF OF ELAPSED TIMES (usec):    %.3f (%+.3f ppm)\n", diff / 1e3, ppm);
        printf("  COUNTER DRIFT, LAST INTERVAL (ppm):  %+.3f (%s, %s)\n", drift,
               json_read_string_or(counter, "source", "?"),
               json_read_string_or(counter, "hz_source", "?"));
        if (s->gap.count == 0 || clock_ns <= 0) {
                printf("[NO SAMPLES: NOTHING TO CHECK]\n");
        } else if (fabs(ppm) <= tolerance_ppm) {
                printf("[DIFF OF %.3f usec WITHIN %.0f ppm OVER %llu INTERVALS, SO GOOD CONFIDENCE "
                       "THE COUNTER IS CONVERTED PROPERLY]\n",
                       diff / 1e3, tolerance_ppm, (unsigned long long)intervals);
        } else {
                printf("[DIFF OF %.3f usec EXCEEDS %.0f ppm: THE COUNTER FREQUENCY OR ITS "
                       "CONVERSION IS SUSPECT]\n",
                       diff / 1e3, tolerance_ppm);
        }
}

static int report_cpu(Ctl *ctl, json_t *stats, json_t *status, const char *window)
{
        json_t *config = json_object_get(status, "config");
        json_t *hist = NULL;
        ReportBucket *b = NULL;
        SlotSummary s;
        char duration[FORMAT_MAX];
        uint64_t cpu = 0, threshold_ns = 0, interval_ns = 0, intervals = 0;
        int n;

        json_read_u64(stats, "cpu", &cpu);
        if (slot_summary_from_json(stats, &s) < 0) {
                return ctl_fail("malformed statistics for CPU %llu from jitterd",
                                (unsigned long long)cpu);
        }
        json_read_u64(config, "threshold_ns", &threshold_ns);
        json_read_u64(config, "interval_ns", &interval_ns);
        if (interval_ns > 0) {
                intervals = (s.duration_ns + interval_ns / 2) / interval_ns;
        }
        printf("%sCPU %llu, window %s (%s)%s\n\n", ctl_color(ctl, CTL_BOLD),
               (unsigned long long)cpu, json_read_string_or(stats, "window", window),
               format_uptime(duration, sizeof(duration), s.duration_ns), ctl_color(ctl, CTL_RESET));
        report_statistics(stdout, &s, threshold_ns);

        if (ctl_call(ctl, "GetHistogram", ctl_histogram_params(cpu, window, "gap"), &hist) < 0) {
                return CTL_EXIT_FAILURE;
        }
        n = buckets_from_json(json_object_get(hist, "buckets"), &b);
        json_decref(hist);
        if (n < 0) {
                return ctl_fail("malformed histogram from jitterd: %s", strerror(-n));
        }
        n = (int)report_buckets_join(b, (size_t)n);
        printf("\nHISTOGRAM (gap)\n---------------\n");
        if (n > 0) {
                report_bars(stdout, b, (size_t)n, ctl->color);
        } else {
                printf("  (no samples)\n");
        }
        free(b);
        fputc('\n', stdout);
        report_counter_check(&s, json_object_get(status, "counter"), intervals);
        return CTL_EXIT_OK;
}

int cmd_report(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        const char *window = "all";
        json_t *cpus = NULL, *status = NULL, *reply = NULL, *params, *list, *s;
        const CtlOptions options = {.short_options = "", .window = &window, .cpus = &cpus};
        size_t i;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        params = json_pack("{s:s}", "window", window);
        if (params && cpus) {
                json_object_set_new(params, "cpus", cpus);
        } else {
                json_decref(cpus);
        }
        if (ctl_call(ctl, "GetStatus", NULL, &status) < 0) {
                json_decref(params);
                return CTL_EXIT_FAILURE;
        }
        if (ctl_get_stats(ctl, params, false, &reply) < 0) {
                json_decref(status);
                return CTL_EXIT_FAILURE;
        }
        if (ctl->json) {
                json_t *out = json_pack("{s:O, s:O}", "status", status, "stats", reply);

                r = out ? ctl_print_json(out) : ctl_fail("out of memory");
                json_decref(out);
                json_decref(status);
                json_decref(reply);
                return r;
        }
        printf("jitterd %s report, counter %s\n\n", json_read_string_or(status, "version", "?"),
               json_read_string_or(json_object_get(status, "counter"), "source", "?"));
        r = CTL_EXIT_OK;
        list = json_object_get(reply, "cpus");
        json_array_foreach(list, i, s)
        {
                if (i > 0) {
                        printf("\n\n");
                }
                r = report_cpu(ctl, s, status, window);
                if (r != CTL_EXIT_OK) {
                        break;
                }
        }
        if (json_array_size(list) == 0) {
                printf("(no probes)\n");
        }
        json_decref(status);
        json_decref(reply);
        return r;
}

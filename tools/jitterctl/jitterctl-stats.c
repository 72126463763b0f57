/* jitterctl stats: the statistics of each CPU over a window (GetStats), with the causes and
 * periods jitterctl works out from GetWindow. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "summary-json.h"
#include "util.h"

/* How many causes "stats" lists per CPU. */
#define STATS_CAUSES_MAX 5

static void print_ns_cell(double ns, int width)
{
        char buf[FORMAT_MAX];

        fput_padded(stdout, format_ns(buf, sizeof(buf), ns), width);
}

/* Orders causes by the share of time lost they explain, then by rate. */
static int cause_cmp(const void *x, const void *y)
{
        json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
        double ea = -1, eb = -1, ra = 0, rb = 0;

        json_read_number(a, "explains", &ea);
        json_read_number(b, "explains", &eb);
        if (ea != eb) {
                return ea < eb ? 1 : -1;
        }
        json_read_number(a, "per_second", &ra);
        json_read_number(b, "per_second", &rb);
        return (ra < rb) - (ra > rb);
}

/* The fit's background (time lost with no counter), as a row of the causes; NULL: none. */
static void print_background(json_t *background)
{
        char share[FORMAT_MAX];
        double explains = 0;

        if (!background) {
                return;
        }
        json_read_number(background, "explains", &explains);
        printf("  %-22s %11s   %-16s  explains %s %%\n", "(no counter)", "", "background",
               format_pct(share, sizeof(share), explains * 100));
}

static void print_causes(Ctl *ctl, const CpuStats *stats)
{
        json_t *sorted[STATS_CAUSES_MAX * 8];
        uint64_t cpu = stats->cpu;
        size_t i, n = 0;
        json_t *e;

        json_array_foreach(stats->causes, i, e)
        {
                uint64_t count = 0;

                if (json_read_u64(e, "count", &count) == 0 && count > 0 && n < ELEMENTSOF(sorted)) {
                        sorted[n++] = e;
                }
        }
        qsort(sorted, n, sizeof(sorted[0]), cause_cmp);
        if (n > 0) {
                char lost_text[FORMAT_MAX];

                printf("\n%sCPU %llu causes%s (time lost %s):\n", ctl_color(ctl, CTL_BOLD),
                       (unsigned long long)cpu, ctl_color(ctl, CTL_RESET),
                       format_ns(lost_text, sizeof(lost_text), (double)stats->summary.lost_ns));
        }
        for (i = 0; i < n && i < STATS_CAUSES_MAX; i++) {
                char rate[FORMAT_MAX], cost[FORMAT_MAX], each[FORMAT_MAX + 8] = "",
                                                                           share[FORMAT_MAX];
                double per_s = 0, cost_ns, explains;
                bool have_explains = json_read_number(sorted[i], "explains", &explains) == 0;

                json_read_number(sorted[i], "per_second", &per_s);
                format_rate(rate, sizeof(rate), per_s);
                printf("  %-22s %9s/s", json_read_string_or(sorted[i], "source", "?"), rate);
                if (json_read_number(sorted[i], "cost_ns", &cost_ns) == 0) {
                        snprintf(each, sizeof(each), "~%s each",
                                 format_ns(cost, sizeof(cost), cost_ns));
                }
                if (have_explains) {
                        printf("   ");
                        fput_padded(stdout, each, -16);
                        printf("  explains %s %%",
                               format_pct(share, sizeof(share), explains * 100));
                } else if (each[0]) {
                        printf("   %s", each);
                }
                fputc('\n', stdout);
        }
        if (n > 0) {
                print_background(stats->background);
        }
        if (json_array_size(stats->periods) > 0) {
                /* Set off from the table above when no causes came between. */
                printf("%s%sCPU %llu periods:%s\n", n > 0 ? "" : "\n", ctl_color(ctl, CTL_BOLD),
                       (unsigned long long)cpu, ctl_color(ctl, CTL_RESET));
        }
        json_array_foreach(stats->periods, i, e)
        {
                char period[FORMAT_MAX], share[FORMAT_MAX];
                uint64_t period_ns = 0, events = 0;
                double frac = 0;
                const char *source = json_read_string_or(e, "source", NULL);

                json_read_u64(e, "period_ns", &period_ns);
                json_read_u64(e, "events", &events);
                json_read_number(e, "share", &frac);
                printf("  every %s: %llu interruptions (%s %%)%s%s\n",
                       format_ns(period, sizeof(period), (double)period_ns),
                       (unsigned long long)events, format_pct(share, sizeof(share), frac * 100),
                       source ? ", likely " : "", source ? source : "");
        }
        if (stats->stalls > 0) {
                printf("%sCPU %llu: the probe made no progress in %llu intervals%s\n",
                       ctl_color(ctl, CTL_RED), (unsigned long long)cpu,
                       (unsigned long long)stats->stalls, ctl_color(ctl, CTL_RESET));
        }
}

/* Prints the row of @st: the CPU, the statistics of the gaps or (@kind "diffdiff") of their
 * differences, the samples, the rate of interruptions and the share of time lost. */
static void print_row(const CpuStats *st, const char *kind)
{
        static const char *const columns[] = {"mean_ns", "min_ns", "max_ns", "p99", "p99.99"};
        const SlotSummary *sum = &st->summary;
        const ValueSummary *values = strcmp(kind, "gap") == 0 ? &sum->gap : &sum->dd;
        char text[FORMAT_MAX];

        printf("%4llu", (unsigned long long)st->cpu);
        for (size_t k = 0; k < 3; k++) {
                print_ns_cell(sum->samples ? value_summary_get(values, columns[k]) : NAN, 11);
        }
        fput_padded(stdout, format_count(text, sizeof(text), sum->samples), 10);
        for (size_t k = 3; k < 5; k++) {
                print_ns_cell(sum->samples ? value_summary_get(values, columns[k]) : NAN, 11);
        }
        fput_padded(stdout, format_rate(text, sizeof(text), sum->events_per_s), 10);
        fput_padded(stdout,
                    format_pct(text, sizeof(text),
                               sum->duration_ns
                                       ? 100.0 * (double)sum->lost_ns / (double)sum->duration_ns
                                       : NAN),
                    9);
        fputc('\n', stdout);
}

/* Prints the table of GetStats' @list over @window (NULL: the default), then each CPU's causes
 * and periods. */
static void print_stats(Ctl *ctl, json_t *list, const char *window, const char *kind)
{
        char duration[FORMAT_MAX];
        CpuStats st;
        json_t *s;
        size_t i;

        /* What the reply lacks shows as "-" (or 0): the table is printed whatever it holds. */
        (void)cpu_stats_read(json_array_get(list, 0), &st);
        if (!st.window) {
                st.window = window ? window : "1m";
        }
        printf("window %s (%s), %s\n", st.window,
               format_ns(duration, sizeof(duration), (double)st.summary.duration_ns),
               strcmp(kind, "gap") == 0 ? "gap between counter reads"
                                        : "difference of consecutive gaps");
        printf("%s CPU        Avg        Min        Max   Samples        p99     p99.99     "
               "Int/s   Lost %%%s\n",
               ctl_color(ctl, CTL_BOLD), ctl_color(ctl, CTL_RESET));
        json_array_foreach(list, i, s)
        {
                (void)cpu_stats_read(s, &st);
                print_row(&st, kind);
        }
        if (json_array_size(list) == 0) {
                printf("  (no probes)\n");
        }
        json_array_foreach(list, i, s)
        {
                (void)cpu_stats_read(s, &st);
                print_causes(ctl, &st);
        }
}

int cmd_stats(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        const char *window = NULL, *kind = "gap";
        json_t *cpus = NULL, *reply = NULL;
        const CtlOptions options = {
                .short_options = "d",
                .long_options = ctl_diffdiff_option,
                .parse = ctl_parse_diffdiff,
                .userdata = &kind,
                .window = &window,
                .cpus = &cpus,
        };
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (ctl_get_stats(ctl, ctl_window_params(window, cpus), true, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (ctl->json) {
                r = ctl_print_json(reply);
        } else {
                print_stats(ctl, json_object_get(reply, "cpus"), window, kind);
                r = CTL_EXIT_OK;
        }
        json_decref(reply);
        return r;
}

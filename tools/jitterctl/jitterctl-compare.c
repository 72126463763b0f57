/* jitterctl compare: two snapshots (before and after a tuning change) compared, with a test of
 * whether the per-interval worst gaps really differ. It works without a daemon. */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl-significance.h"
#include "jitterctl.h"
#include "json-read.h"
#include "summary-json.h"
#include "util.h"

/* The rows of the comparison: a value of the gaps (value_summary_get()), or the rate of
 * interruptions. */
static const struct {
        const char *label;
        const char *json_name;
        const char *gap_key; /* NULL: interruptions per second */
        bool is_time;
} rows[] = {
        {"avg", "avg_ns", "mean_ns", true},
        {"p99", "p99_ns", "p99", true},
        {"p99.99", "p99.99_ns", "p99.99", true},
        {"max", "max_ns", "max_ns", true},
        {"interruptions/s", "interruptions_per_s", NULL, false},
};

#define N_ROWS ELEMENTSOF(rows)

static double row_value(const CpuStats *stats, size_t row)
{
        if (!rows[row].gap_key) {
                return stats->summary.events_per_s;
        }
        return value_summary_get(&stats->summary.gap, rows[row].gap_key);
}

static void row_text(char *buf, size_t size, size_t row, double v)
{
        if (rows[row].is_time) {
                format_ns(buf, size, v);
        } else {
                format_rate(buf, size, v);
        }
}

static json_t *summary_json(const SampleSummary *s)
{
        return json_pack("{s:I, s:f, s:f, s:f, s:f}", "n", (json_int_t)s->n, "min_ns", s->min,
                         "max_ns", s->max, "mean_ns", s->mean, "stddev_ns", s->stddev);
}

static void print_summary_row(const char *label, double a, double b, bool time)
{
        char ta[FORMAT_MAX], tb[FORMAT_MAX];

        if (time) {
                format_ns(ta, sizeof(ta), a);
                format_ns(tb, sizeof(tb), b);
        } else {
                snprintf(ta, sizeof(ta), "%.0f", a);
                snprintf(tb, sizeof(tb), "%.0f", b);
        }
        printf("    %-16s", label);
        fput_padded(stdout, ta, 12);
        fput_padded(stdout, tb, 12);
        fputc('\n', stdout);
}

/* The table of rows of one CPU: added to @out as a new entry (*@ret_entry) when @out is not
 * NULL, or printed. Returns 0 or -ENOMEM. */
static int compare_rows(const Ctl *ctl, json_int_t cpu, json_t *stats_before, json_t *stats_after,
                        json_t *out, json_t **ret_entry)
{
        json_t *entry = NULL, *jb = NULL, *ja = NULL, *jc = NULL;
        CpuStats sb, sa;

        /* A value a snapshot lacks compares as "-" (null). */
        (void)cpu_stats_read(stats_before, &sb);
        (void)cpu_stats_read(stats_after, &sa);

        if (out) {
                entry = json_pack("{s:I, s:{}, s:{}, s:{}}", "cpu", cpu, "before", "after",
                                  "change_pct");
                if (!entry || json_array_append_new(out, entry) < 0) {
                        return -ENOMEM;
                }
                jb = json_object_get(entry, "before");
                ja = json_object_get(entry, "after");
                jc = json_object_get(entry, "change_pct");
        } else {
                char head[32];

                snprintf(head, sizeof(head), "CPU %lld", (long long)cpu);
                printf("%s%-20s", ctl_color(ctl, CTL_BOLD), head);
                fput_padded(stdout, "before", 12);
                fput_padded(stdout, "after", 12);
                fput_padded(stdout, "change", 9);
                printf("%s\n", ctl_color(ctl, CTL_RESET));
        }
        for (size_t row = 0; row < N_ROWS; row++) {
                double b = row_value(&sb, row), a = row_value(&sa, row);
                double change = b != 0 ? (b - a) / b * 100 : NAN;

                if (out) {
                        json_object_set_new(jb, rows[row].json_name,
                                            isnan(b) ? json_null() : json_real(b));
                        json_object_set_new(ja, rows[row].json_name,
                                            isnan(a) ? json_null() : json_real(a));
                        json_object_set_new(jc, rows[row].json_name,
                                            isfinite(change) ? json_real(change) : json_null());
                } else {
                        char tb[FORMAT_MAX], ta[FORMAT_MAX], tc[FORMAT_MAX];

                        row_text(tb, sizeof(tb), row, b);
                        row_text(ta, sizeof(ta), row, a);
                        if (isfinite(change)) {
                                snprintf(tc, sizeof(tc), "%+.1f %%", change);
                        } else {
                                snprintf(tc, sizeof(tc), "-");
                        }
                        printf("  %-18s", rows[row].label);
                        fput_padded(stdout, tb, 12);
                        fput_padded(stdout, ta, 12);
                        fput_padded(stdout, tc, 9);
                        fputc('\n', stdout);
                }
        }
        *ret_entry = entry;
        return 0;
}

/* The worst gaps per interval before and after (of intervals @ib and @ia long), their
 * summaries, and the Mann-Whitney test between them when both have some. */
typedef struct CompareGaps {
        double *xb, *xa;
        uint64_t ib, ia;
        SampleSummary sum_b, sum_a;
        MannWhitney mw;
        bool have_test;
} CompareGaps;

/* Fills @g from the timelines of two snapshots of one CPU (free() xb and xa afterwards).
 * Returns 0 or -ENOMEM. */
static int compare_gaps(json_t *before, json_t *after, CompareGaps *g)
{
        int nb, na, r;

        nb = timeline_worst_gaps(json_object_get(json_object_get(before, "timeline"), "points"),
                                 &g->xb, &g->ib);
        na = timeline_worst_gaps(json_object_get(json_object_get(after, "timeline"), "points"),
                                 &g->xa, &g->ia);
        if (nb == -ENOMEM || na == -ENOMEM) {
                return -ENOMEM;
        }
        sample_summarize(g->xb, nb > 0 ? (size_t)nb : 0, &g->sum_b);
        sample_summarize(g->xa, na > 0 ? (size_t)na : 0, &g->sum_a);
        if (nb > 0 && na > 0) {
                r = mann_whitney(g->xb, (size_t)nb, g->xa, (size_t)na, &g->mw);
                if (r == -ENOMEM) {
                        return r;
                }
                g->have_test = r == 0;
        }
        return 0;
}

static void compare_gaps_json(json_t *entry, const CompareGaps *g)
{
        json_t *samples = json_pack("{s:I, s:I, s:o, s:o}", "before_interval_ns", (json_int_t)g->ib,
                                    "after_interval_ns", (json_int_t)g->ia, "before",
                                    summary_json(&g->sum_b), "after", summary_json(&g->sum_a));

        json_object_set_new(entry, "interval_worst_gaps", samples);
        if (g->have_test) {
                json_object_set_new(entry, "mann_whitney",
                                    json_pack("{s:f, s:f, s:f, s:f, s:f, s:b}", "u", g->mw.u,
                                              "u_before", g->mw.u_a, "z", g->mw.z, "p", g->mw.p,
                                              "alpha", MANN_WHITNEY_ALPHA, "significant",
                                              g->mw.p < MANN_WHITNEY_ALPHA));
        } else {
                json_object_set_new(entry, "mann_whitney", json_null());
        }
}

static void compare_gaps_print(const Ctl *ctl, const CompareGaps *g)
{
        const SampleSummary *sb = &g->sum_b, *sa = &g->sum_a;
        uint64_t ib = g->ib, ia = g->ia;
        bool same = intervals_same_resolution(ib, ia);

        {
                char len_b[FORMAT_MAX], len_a[FORMAT_MAX];

                format_ns(len_b, sizeof(len_b), (double)ib);
                format_ns(len_a, sizeof(len_a), (double)ia);
                printf("  worst gap per interval (%s intervals%s%s%s):\n", len_b,
                       same ? "" : " before, ", same ? "" : len_a, same ? "" : " after");
        }
        print_summary_row("n", (double)sb->n, (double)sa->n, false);
        print_summary_row("min", sb->n ? sb->min : NAN, sa->n ? sa->min : NAN, true);
        print_summary_row("max", sb->n ? sb->max : NAN, sa->n ? sa->max : NAN, true);
        print_summary_row("mean", sb->n ? sb->mean : NAN, sa->n ? sa->mean : NAN, true);
        print_summary_row("std. dev.", sb->n > 1 ? sb->stddev : NAN, sa->n > 1 ? sa->stddev : NAN,
                          true);
        if (ib > 0 && ia > 0 && !same) {
                printf("  %swarning%s: the intervals differ in length, so their worst gaps are "
                       "not the same quantity\n",
                       ctl_color(ctl, CTL_YELLOW), ctl_color(ctl, CTL_RESET));
        }
        if (g->have_test) {
                const MannWhitney *mw = &g->mw;
                bool significant = mw->p < MANN_WHITNEY_ALPHA;
                const char *color = !significant ? "" : mw->z > 0 ? CTL_GREEN : CTL_RED;

                printf("  Mann-Whitney U = %.1f, z = %.3f, p = %.3g: %s%s%s (p %s %.2g)%s\n", mw->u,
                       mw->z, mw->p, ctl_color(ctl, color),
                       significant ? "significant" : "not significant", ctl_color(ctl, CTL_RESET),
                       significant ? "<" : ">=", MANN_WHITNEY_ALPHA,
                       !significant ? ""
                       : mw->z > 0  ? ", after is lower"
                                    : ", after is higher");
        } else {
                printf("  Mann-Whitney U: not enough intervals with samples to test\n");
        }
}

/* Compares one CPU; adds its JSON to @out (when not NULL) or prints it. Returns 0 or -ENOMEM. */
static int compare_cpu(const Ctl *ctl, json_int_t cpu, json_t *before, json_t *after, json_t *out)
{
        CompareGaps g = {0};
        json_t *entry = NULL;
        int r;

        r = compare_rows(ctl, cpu, json_object_get(before, "stats"),
                         json_object_get(after, "stats"), out, &entry);
        if (r < 0) {
                return r;
        }
        r = compare_gaps(before, after, &g);
        if (r == 0 && out) {
                compare_gaps_json(entry, &g);
        } else if (r == 0) {
                compare_gaps_print(ctl, &g);
        }
        free(g.xb);
        free(g.xa);
        return r;
}

/* Compares each CPU of @before that @after has too, printing the others as "only in" @names[0]
 * or @names[1] (text) or leaving them out (JSON: into @out). Returns how many CPUs were
 * compared, or -ENOMEM. */
static int compare_cpus(Ctl *ctl, json_t *before, json_t *after, char *const names[2], json_t *out)
{
        unsigned compared = 0;
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(before, "cpus"), i, e)
        {
                json_t *c_after;
                json_int_t cpu;

                if (!json_is_integer(json_object_get(e, "cpu"))) {
                        continue;
                }
                cpu = json_integer_value(json_object_get(e, "cpu"));
                c_after = json_cpu_entry(after, cpu);
                if (!c_after) {
                        if (!out) {
                                printf("\nCPU %lld: only in %s\n", (long long)cpu, names[0]);
                        }
                        continue;
                }
                if (!out) {
                        fputc('\n', stdout);
                }
                if (compare_cpu(ctl, cpu, e, c_after, out) < 0) {
                        return -ENOMEM;
                }
                compared++;
        }
        json_array_foreach(json_object_get(after, "cpus"), i, e)
        {
                json_t *cpu = json_object_get(e, "cpu");

                if (!out && json_is_integer(cpu) &&
                    !json_cpu_entry(before, json_integer_value(cpu))) {
                        printf("\nCPU %lld: only in %s\n", (long long)json_integer_value(cpu),
                               names[1]);
                }
        }
        return (int)compared;
}

int cmd_compare(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const CtlOptions options = {.short_options = "", .takes_args = true};
        json_t *before = NULL, *after = NULL, *out = NULL;
        char **names;
        int r, compared;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (argc - optind != 2) {
                return ctl_usage_error(cmd, "expected two snapshot files");
        }
        names = argv + optind;
        before = snapshot_load(names[0]);
        after = before ? snapshot_load(names[1]) : NULL;
        if (!before || !after) {
                json_decref(before);
                return CTL_EXIT_FAILURE;
        }
        r = CTL_EXIT_OK;
        if (ctl->json) {
                out = json_array();
                if (!out) {
                        r = ctl_fail("out of memory");
                        goto out;
                }
        } else {
                printf("before: %s (%s)\nafter:  %s (%s)\n"
                       "change = (before - after) / before: positive is better\n",
                       names[0], json_read_string_or(before, "created", "?"), names[1],
                       json_read_string_or(after, "created", "?"));
        }
        compared = compare_cpus(ctl, before, after, names, out);
        if (compared < 0) {
                r = ctl_fail("out of memory");
                goto out;
        }
        if (out) {
                json_t *doc = json_pack("{s:O}", "cpus", out);

                r = doc ? ctl_print_json(doc) : ctl_fail("out of memory");
                json_decref(doc);
        }
        if (r == CTL_EXIT_OK && compared == 0) {
                r = ctl_fail("the snapshots have no CPU in common");
        }
out:
        json_decref(out);
        json_decref(before);
        json_decref(after);
        return r;
}

/* jitterctl explain: the share of the time lost per exact cause, from the trace causes of a
 * window's interruptions (GetCauses), then the least-squares estimate of the attribution
 * (GetStats' causes) as a cross-check where it knows a row well enough, and where the two
 * disagree; with the trace off, the least-squares estimate in full. Text or JSON. The
 * comparison itself is jitterctl-shares.c's. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-shares.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "util.h"

/* A share of 0..1 as "12.5 %". */
static char *share_text(char *buf, size_t size, double share)
{
        char num[24];

        snprintf(buf, size, "%s %%", format_pct(num, sizeof(num), 100.0 * share));
        return buf;
}

/* Why @row disagrees: the fit gave it more than the trace (time that rides on its count), or
 * less, and then the counters shown as a cross-check that got more than the trace gives them
 * are named. */
static void print_why(json_t *rows, json_t *row, double exact, double ls)
{
        const char *sep = "";
        json_t *r;
        size_t i;

        if (ls > exact) {
                printf("the fit charges it with time that moves with its count (what its "
                       "interrupts wake or start)\n");
                return;
        }
        printf("the fit gives this time to counters that move with it");
        json_array_foreach(rows, i, r)
        {
                double e = json_number_value(json_object_get(r, "exact_share")), l;

                if (r != row && json_is_true(json_object_get(r, "cross_check")) &&
                    json_read_number(r, "ls_share", &l) == 0 && l - e > EXPLAIN_AGREE_ABS) {
                        printf("%s%s", *sep ? sep : ": ", json_read_string_or(r, "source", "?"));
                        sep = ", ";
                }
        }
        printf("\n");
}

/* What the comparison of one CPU says, over the rows shown as a cross-check. */
typedef struct CompareCounts {
        size_t shown, agree, uncertain, disagree;
        size_t hidden;     /* rows with a share the fit knows too little of */
        size_t trace_only; /* rows the fit has no counter of */
        bool background_hidden;
} CompareCounts;

/* The width of the first column: the longest of @rows' names (those shown as a cross-check
 * with @cross_check_only), 22 at least. */
static int source_width(json_t *rows, bool cross_check_only)
{
        int width = 22;
        json_t *c;
        size_t i;

        json_array_foreach(rows, i, c)
        {
                int len = (int)strlen(json_read_string_or(c, "source", "?"));

                if (!cross_check_only || json_is_true(json_object_get(c, "cross_check"))) {
                        width = len > width ? len : width;
                }
        }
        return width;
}

/* The fit's background as a row of a table @width wide, with an empty EXACT column when
 * @exact_column. */
static void print_background(json_t *background, int width, bool exact_column)
{
        char b[32], d[32];
        double ls = 0, se;

        json_read_number(background, "explains", &ls);
        share_text(b, sizeof(b), ls);
        if (json_read_number(background, "explains_stderr", &se) < 0) {
                snprintf(d, sizeof(d), "?");
        } else {
                share_text(d, sizeof(d), se);
        }
        if (exact_column) {
                printf("  %-*s %8s %14s %10s  (no counter moves with it)\n", width, "background",
                       "-", b, d);
        } else {
                printf("  %-*s %14s %10s  (no counter moves with it)\n", width, "background", b, d);
        }
}

static void print_compare_header(int width)
{
        printf("  %-*s %8s %14s %10s\n", width, "COUNTER", "EXACT", "LEAST SQUARES", "+-");
}

/* The rows of @rows the fit knows to within EXPLAIN_CROSS_CHECK_STDERR, with the background if
 * it knows that as well, and how many rows are left out and why; counts them into @n. */
static void print_cross_check(json_t *rows, json_t *background, CompareCounts *n)
{
        char a[32], b[32], d[32];
        int width = source_width(rows, true);
        json_t *c;
        size_t i;

        n->background_hidden =
                background && !json_is_true(json_object_get(background, "cross_check"));
        json_array_foreach(rows, i, c)
        {
                double ls, se;

                if (!json_is_true(json_object_get(c, "cross_check"))) {
                        if (json_read_number(c, "ls_share", &ls) == 0) {
                                n->hidden++;
                        } else {
                                n->trace_only++;
                        }
                        continue;
                }
                if (n->shown++ == 0) {
                        print_compare_header(width);
                }
                json_read_number(c, "ls_share", &ls);
                json_read_number(c, "ls_stderr", &se);
                printf("  %-*s %8s %14s %10s  %s\n", width, json_read_string_or(c, "source", "?"),
                       share_text(a, sizeof(a),
                                  json_number_value(json_object_get(c, "exact_share"))),
                       share_text(b, sizeof(b), ls), share_text(d, sizeof(d), se),
                       json_read_string_or(c, "verdict", "?"));
        }
        if (background && !n->background_hidden) {
                if (n->shown == 0) {
                        print_compare_header(width);
                }
                print_background(background, width, true);
        }
        if (n->hidden > 0 || n->background_hidden) {
                char what[64] = "the background";

                if (n->hidden > 0) {
                        snprintf(what, sizeof(what), "%zu row%s%s", n->hidden,
                                 n->hidden == 1 ? "" : "s",
                                 n->background_hidden ? " and the background" : "");
                }
                printf("  least squares: %s not shown: the fit knows %s to no better than %g "
                       "points (one standard error)\n",
                       what, n->hidden + n->background_hidden == 1 ? "it" : "them",
                       100.0 * EXPLAIN_CROSS_CHECK_STDERR);
        }
        if (n->trace_only > 0) {
                printf("  least squares: %zu row%s not shown: no counter of the fit moves with "
                       "%s\n",
                       n->trace_only, n->trace_only == 1 ? "" : "s",
                       n->trace_only == 1 ? "it" : "them");
        }
}

/* Why each row shown that is uncertain or disagrees is so; counts the verdicts of the rows
 * shown into @n. */
static void print_verdicts(json_t *rows, CompareCounts *n)
{
        char a[32], b[32];
        json_t *c;
        size_t i;

        json_array_foreach(rows, i, c)
        {
                const char *verdict = json_read_string_or(c, "verdict", "");
                double se;

                if (!json_is_true(json_object_get(c, "cross_check"))) {
                        continue;
                }
                if (strcmp(verdict, "agree") == 0) {
                        n->agree++;
                } else if (strcmp(verdict, "uncertain") == 0 &&
                           json_read_number(c, "ls_stderr", &se) == 0) {
                        n->uncertain++;
                        printf("  uncertain: %s: the fit knows its share only to within %s "
                               "(one standard error): too little to tell\n",
                               json_read_string_or(c, "source", "?"), share_text(a, sizeof(a), se));
                }
        }
        json_array_foreach(rows, i, c)
        {
                double ls, e = json_number_value(json_object_get(c, "exact_share"));

                if (!json_is_true(json_object_get(c, "cross_check")) ||
                    strcmp(json_read_string_or(c, "verdict", ""), "disagree") != 0 ||
                    json_read_number(c, "ls_share", &ls) < 0) {
                        continue;
                }
                n->disagree++;
                printf("  disagree: %s, exact %s, least squares %s: ",
                       json_read_string_or(c, "source", "?"), share_text(a, sizeof(a), e),
                       share_text(b, sizeof(b), ls));
                print_why(rows, c, e, ls);
        }
}

/* One line of the account: @what, its share of the time lost @lost, its time and @extra. */
static void print_part(const char *what, uint64_t ns, uint64_t lost, const char *extra)
{
        char a[32], b[32];

        printf("  %-36s %8s %10s%s%s\n", what,
               share_text(a, sizeof(a), lost ? (double)ns / (double)lost : 0),
               format_ns(b, sizeof(b), (double)ns), extra[0] ? "  " : "", extra);
}

/* The exact causes: each one's own time and the entry and exit charged to it. */
static void print_exact(json_t *o)
{
        char a[32], b[32], d[32], e[32];
        json_t *c;
        size_t i;

        printf("  %-36s %8s %10s %10s %7s\n", "EXACT CAUSE", "SHARE", "TIME", "+IN/OUT", "COUNT");
        json_array_foreach(json_object_get(o, "exact"), i, c)
        {
                char name[64];
                uint64_t ns = 0, overhead = 0, count = 0;

                json_read_u64(c, "ns", &ns);
                json_read_u64(c, "overhead_ns", &overhead);
                json_read_u64(c, "count", &count);
                snprintf(name, sizeof(name), "%s %s", json_read_string_or(c, "kind", "?"),
                         json_read_string_or(c, "name", "?"));
                printf("  %-36s %8s %10s %10s %7s\n", name,
                       share_text(a, sizeof(a), json_number_value(json_object_get(c, "share"))),
                       format_ns(b, sizeof(b), (double)ns),
                       format_ns(e, sizeof(e), (double)overhead),
                       format_count(d, sizeof(d), count));
        }
}

/* The rest of the account: the causes not listed, the entry and exit charged to the causes,
 * the interruptions no record lies in beside the steal time and SMIs, what no rule covers (and
 * what of it lost records), and what lies below the threshold. */
static void print_account(json_t *o, uint64_t lost)
{
        uint64_t ev_ns = 0, other = 0, overhead = 0, no_record = 0, no_record_ns = 0,
                 unexplained = 0, lost_n = 0, lost_ns = 0, steal = 0, smi = 0;
        char extra[160], a[32], b[32], d[32];

        json_read_u64(o, "interruptions_ns", &ev_ns);
        json_read_u64(o, "other_ns", &other);
        json_read_u64(o, "overhead_ns", &overhead);
        json_read_u64(o, "no_record", &no_record);
        json_read_u64(o, "no_record_ns", &no_record_ns);
        json_read_u64(o, "unexplained_ns", &unexplained);
        json_read_u64(o, "trace_lost", &lost_n);
        json_read_u64(o, "trace_lost_ns", &lost_ns);
        if (other) {
                print_part("other causes", other, lost, "");
        }
        print_part("entry and exit (+IN/OUT above)", overhead, lost, "");
        snprintf(extra, sizeof(extra), "%s interruptions; steal %s, SMIs %s",
                 format_count(a, sizeof(a), no_record),
                 json_read_u64(o, "steal_ns", &steal) == 0 ? format_ns(b, sizeof(b), (double)steal)
                                                           : "unknown",
                 json_read_u64(o, "smi", &smi) == 0 ? format_count(d, sizeof(d), smi) : "unknown");
        print_part("no record (hw, firmware, hypervisor)", no_record_ns, lost, extra);
        extra[0] = 0;
        if (lost_n) {
                snprintf(extra, sizeof(extra), "records lost in %s interruptions: %s of it",
                         format_count(a, sizeof(a), lost_n),
                         format_ns(b, sizeof(b), (double)lost_ns));
        }
        print_part("unexplained (no rule covers it)", unexplained, lost, extra);
        if (lost > ev_ns) {
                print_part("below the threshold, not traced", lost - ev_ns, lost, "");
        }
}

/* The exact causes of one CPU's window, the account, and the least-squares estimate as a
 * cross-check where it can tell. */
static void print_cpu(json_t *o)
{
        uint64_t lost = 0, ev = 0, n = 0;
        char a[32], b[32], d[32], cov[32];
        CompareCounts counts = {};
        json_t *rows = json_object_get(o, "compare");

        json_read_u64(o, "lost_ns", &lost);
        json_read_u64(o, "interruptions", &ev);
        json_read_u64(o, "traced", &n);
        printf("CPU %d, window %s: time lost %s, %s interruptions, %s traced (%s)\n",
               (int)json_integer_value(json_object_get(o, "cpu")),
               json_read_string_or(o, "window", "?"), format_ns(a, sizeof(a), (double)lost),
               format_count(b, sizeof(b), ev), format_count(d, sizeof(d), n),
               share_text(cov, sizeof(cov), json_number_value(json_object_get(o, "coverage"))));
        print_exact(o);
        print_account(o, lost);
        if (!json_is_true(json_object_get(o, "fit"))) {
                printf("  no least-squares estimate: the window has fewer than 60 intervals\n");
                return;
        }
        print_cross_check(rows, json_object_get(o, "background"), &counts);
        print_verdicts(rows, &counts);
        if (counts.shown == 0 || counts.disagree > 0) {
                return;
        }
        if (json_number_value(json_object_get(o, "coverage")) < EXPLAIN_COVERAGE_MIN) {
                printf("  not compared: the trace saw less than 90 %% of the interruptions' "
                       "time\n");
        } else if (counts.agree == counts.shown) {
                printf("  exact shares and least squares agree on every row shown\n");
        } else if (counts.agree > 0) {
                printf("  exact shares and least squares agree on the rows shown wherever the "
                       "fit can tell\n");
        } else {
                printf("  the least-squares estimate is too uncertain here to compare\n");
        }
}

/* Without the trace: one CPU's least-squares estimate (shares_estimate_cpu()), every row. */
static void print_estimate(json_t *o)
{
        uint64_t lost = 0, ev = 0;
        char a[32], b[32], d[32];
        json_t *rows = json_object_get(o, "estimate"), *c;
        json_t *background = json_object_get(o, "background");
        int width = source_width(rows, false);
        size_t i;

        json_read_u64(o, "lost_ns", &lost);
        json_read_u64(o, "interruptions", &ev);
        printf("CPU %d, window %s: time lost %s, %s interruptions\n",
               (int)json_integer_value(json_object_get(o, "cpu")),
               json_read_string_or(o, "window", "?"), format_ns(a, sizeof(a), (double)lost),
               format_count(b, sizeof(b), ev));
        if (!json_is_true(json_object_get(o, "fit"))) {
                printf("  no least-squares estimate: the window has fewer than 60 intervals\n");
                return;
        }
        printf("  %-*s %14s %10s\n", width, "COUNTER", "LEAST SQUARES", "+-");
        json_array_foreach(rows, i, c)
        {
                double ls = 0, se;

                json_read_number(c, "ls_share", &ls);
                printf("  %-*s %14s %10s%s\n", width, json_read_string_or(c, "source", "?"),
                       share_text(a, sizeof(a), ls),
                       json_read_number(c, "ls_stderr", &se) == 0 ? share_text(d, sizeof(d), se)
                                                                  : "?",
                       json_read_number(c, "ls_stderr", &se) == 0
                               ? ""
                               : "  (the fit cannot tell it from counters that move with it)");
        }
        if (background) {
                print_background(background, width, false);
        }
}

/* Adds to the comparison @out of one CPU what GetCauses' entry @causes has beside the causes'
 * own time: each exact cause's entry and exit (in the order of the causes), and the window's
 * overhead, no_record, unexplained and lost parts with the steal time and SMI count. */
static void add_account(json_t *out, json_t *causes)
{
        static const char *const keys[] = {
                "traced",       "traced_ns",    "overhead_ns",   "no_record",
                "no_record_ns", "trace_lost",   "trace_lost_ns", "steal_ns",
                "smi",          "host_from_ns", "host_to_ns",
        };
        json_t *c;
        size_t i;

        for (size_t k = 0; out && k < ELEMENTSOF(keys); k++) {
                json_t *v = json_object_get(causes, keys[k]);

                if (v) {
                        json_object_set(out, keys[k], v);
                }
        }
        json_array_foreach(json_object_get(causes, "causes"), i, c)
        {
                json_t *e = json_array_get(json_object_get(out, "exact"), i);
                json_t *v = json_object_get(c, "overhead_ns");

                if (e && v) {
                        json_object_set(e, "overhead_ns", v);
                }
        }
}

/* The comparison of each CPU of GetCauses' reply @causes with its entry in GetStats' @stats,
 * into @ret (a new array). Returns the exit status, after saying why on failure. */
static int compare(json_t *causes, json_t *stats, json_t **ret)
{
        json_t *out = json_array(), *o;
        size_t i;

        json_array_foreach(json_object_get(causes, "cpus"), i, o)
        {
                json_t *s = json_array_get(json_object_get(stats, "cpus"), i);

                if (!s || !json_equal(json_object_get(s, "cpu"), json_object_get(o, "cpu"))) {
                        json_decref(out);
                        return ctl_fail("GetStats and GetCauses list different CPUs");
                }
                if (json_array_append_new(out, shares_compare_cpu(o, s)) < 0) {
                        json_decref(out);
                        return ctl_fail("out of memory");
                }
                add_account(json_array_get(out, json_array_size(out) - 1), o);
        }
        *ret = out;
        return CTL_EXIT_OK;
}

/* Without the trace: the least-squares estimate of each CPU of GetStats' @stats, into @ret (a
 * new array). Returns the exit status, after saying why on failure. */
static int estimate(json_t *stats, json_t **ret)
{
        json_t *out = json_array(), *s;
        size_t i;

        json_array_foreach(json_object_get(stats, "cpus"), i, s)
        {
                if (json_array_append_new(out, shares_estimate_cpu(s)) < 0) {
                        json_decref(out);
                        return ctl_fail("out of memory");
                }
        }
        *ret = out;
        return CTL_EXIT_OK;
}

int cmd_explain(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        const char *window = "1m";
        json_t *cpus = NULL, *causes = NULL, *stats = NULL, *out = NULL, *o;
        const CtlOptions options = {.short_options = "", .window = &window, .cpus = &cpus};
        const char *trace;
        int r;
        size_t i;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        r = CTL_EXIT_FAILURE;
        if (ctl_call(ctl, "GetCauses",
                     cpus ? json_pack("{ss sO}", "window", window, "cpus", cpus)
                          : json_pack("{ss}", "window", window),
                     &causes) < 0 ||
            ctl_get_stats(ctl,
                          cpus ? json_pack("{ss sO}", "window", window, "cpus", cpus)
                               : json_pack("{ss}", "window", window),
                          true, &stats) < 0) {
                goto out;
        }
        trace = json_read_string_or(causes, "trace", "off");
        r = strcmp(trace, "recording") == 0 ? compare(causes, stats, &out) : estimate(stats, &out);
        if (r != CTL_EXIT_OK) {
                goto out;
        }
        if (ctl->json) {
                json_t *doc = json_pack("{ss sO}", "trace", trace, "cpus", out);

                r = doc ? ctl_print_json(doc) : ctl_fail("out of memory");
                json_decref(doc);
                goto out;
        }
        if (strcmp(trace, "recording") != 0) {
                printf("the trace is %s%s: these are statistical estimates (least squares, +- one "
                       "standard error); [trace] enabled = yes in jitterd.conf gives the exact "
                       "shares\n",
                       trace, strcmp(trace, "off") == 0 ? "" : " (jitterctl status says why)");
        }
        json_array_foreach(out, i, o)
        {
                if (i > 0 || strcmp(trace, "recording") != 0) {
                        printf("\n");
                }
                if (strcmp(trace, "recording") == 0) {
                        print_cpu(o);
                } else {
                        print_estimate(o);
                }
        }
        r = fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
out:
        json_decref(cpus);
        json_decref(causes);
        json_decref(stats);
        json_decref(out);
        return r;
}

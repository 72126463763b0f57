/* jitterctl explain: the share of the time lost per exact cause, from the trace causes of a
 * window's interruptions (GetCauses), next to the least-squares estimate of the attribution
 * (GetStats' causes), and where the two disagree: the tables and the reasons, in text or JSON.
 * The comparison itself is jitterctl-compare.c's. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-compare.h"
#include "jitterctl-format.h"
#include "jitterctl.h"

/* A share of 0..1 as "12.5 %". */
static char *share_text(char *buf, size_t size, double share)
{
        char num[24];

        snprintf(buf, size, "%s %%", format_pct(num, sizeof(num), 100.0 * share));
        return buf;
}

/* Why @row disagrees: the fit gave it more than the trace (time that rides on its count), or
 * less, and then the counters that got more than the trace gives them are named. */
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

                if (r != row && json_get_double(r, "ls_share", &l) && l - e > EXPLAIN_AGREE_ABS) {
                        printf("%s%s", *sep ? sep : ": ", json_get_string(r, "source", "?"));
                        sep = ", ";
                }
        }
        printf("\n");
}

/* The comparison table of @rows, then why each uncertain or disagreeing row is so; counts
 * those into @disagree and @uncertain. */
static void print_compare(json_t *rows, json_t *background, size_t *disagree, size_t *uncertain)
{
        char a[32], b[32], d[32];
        json_t *c;
        size_t i;
        int width = 22; /* the longest row's name */

        json_array_foreach(rows, i, c)
        {
                int len = (int)strlen(json_get_string(c, "source", "?"));

                width = len > width ? len : width;
        }
        printf("  %-*s %8s %14s %10s\n", width, "COUNTER", "EXACT", "LEAST SQUARES", "+-");
        json_array_foreach(rows, i, c)
        {
                double ls, se;
                bool have_ls = json_get_double(c, "ls_share", &ls);
                bool have_se = json_get_double(c, "ls_stderr", &se);

                printf("  %-*s %8s %14s %10s  %s\n", width, json_get_string(c, "source", "?"),
                       share_text(a, sizeof(a),
                                  json_number_value(json_object_get(c, "exact_share"))),
                       have_ls ? share_text(b, sizeof(b), ls) : "-",
                       have_se   ? share_text(d, sizeof(d), se)
                       : have_ls ? "?"
                                 : "-",
                       json_get_string(c, "verdict", "?"));
        }
        if (background) {
                double ls = 0, se;

                json_get_double(background, "explains", &ls);
                printf("  %-*s %8s %14s %10s  (no counter moves with it)\n", width, "background",
                       "-", share_text(b, sizeof(b), ls),
                       json_get_double(background, "explains_stderr", &se)
                               ? share_text(d, sizeof(d), se)
                               : "?");
        }
        json_array_foreach(rows, i, c)
        {
                double se;

                if (strcmp(json_get_string(c, "verdict", ""), "uncertain") != 0) {
                        continue;
                }
                (*uncertain)++;
                if (json_get_double(c, "ls_stderr", &se)) {
                        printf("  uncertain: %s: the fit knows its share only to within %s "
                               "(one standard error): too little to tell\n",
                               json_get_string(c, "source", "?"), share_text(a, sizeof(a), se));
                } else {
                        printf("  uncertain: %s: the fit cannot tell it from counters that move "
                               "with it\n",
                               json_get_string(c, "source", "?"));
                }
        }
        json_array_foreach(rows, i, c)
        {
                double ls, e = json_number_value(json_object_get(c, "exact_share"));

                if (strcmp(json_get_string(c, "verdict", ""), "disagree") != 0 ||
                    !json_get_double(c, "ls_share", &ls)) {
                        continue;
                }
                (*disagree)++;
                printf("  disagree: %s, exact %s, least squares %s: ",
                       json_get_string(c, "source", "?"), share_text(a, sizeof(a), e),
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

                json_get_u64(c, "ns", &ns);
                json_get_u64(c, "overhead_ns", &overhead);
                json_get_u64(c, "count", &count);
                snprintf(name, sizeof(name), "%s %s", json_get_string(c, "kind", "?"),
                         json_get_string(c, "name", "?"));
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

        json_get_u64(o, "interruptions_ns", &ev_ns);
        json_get_u64(o, "other_ns", &other);
        json_get_u64(o, "overhead_ns", &overhead);
        json_get_u64(o, "no_record", &no_record);
        json_get_u64(o, "no_record_ns", &no_record_ns);
        json_get_u64(o, "unexplained_ns", &unexplained);
        json_get_u64(o, "trace_lost", &lost_n);
        json_get_u64(o, "trace_lost_ns", &lost_ns);
        if (other) {
                print_part("other causes", other, lost, "");
        }
        print_part("entry and exit (+IN/OUT above)", overhead, lost, "");
        snprintf(extra, sizeof(extra), "%s interruptions; steal %s, SMIs %s",
                 format_count(a, sizeof(a), no_record),
                 json_get_u64(o, "steal_ns", &steal) ? format_ns(b, sizeof(b), (double)steal)
                                                     : "unknown",
                 json_get_u64(o, "smi", &smi) ? format_count(d, sizeof(d), smi) : "unknown");
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

static void print_cpu(json_t *o)
{
        uint64_t lost = 0, ev = 0, n = 0;
        char a[32], b[32], d[32], cov[32];
        size_t disagree = 0, uncertain = 0;

        json_get_u64(o, "lost_ns", &lost);
        json_get_u64(o, "interruptions", &ev);
        json_get_u64(o, "traced", &n);
        printf("CPU %d, window %s: time lost %s, %s interruptions, %s traced (%s)\n",
               (int)json_integer_value(json_object_get(o, "cpu")),
               json_get_string(o, "window", "?"), format_ns(a, sizeof(a), (double)lost),
               format_count(b, sizeof(b), ev), format_count(d, sizeof(d), n),
               share_text(cov, sizeof(cov), json_number_value(json_object_get(o, "coverage"))));
        print_exact(o);
        print_account(o, lost);
        print_compare(json_object_get(o, "compare"), json_object_get(o, "background"), &disagree,
                      &uncertain);
        if (!json_is_true(json_object_get(o, "fit"))) {
                printf("  no least-squares estimate: the window has fewer than 60 intervals\n");
        } else if (disagree == 0 && uncertain == 0) {
                printf("  exact shares and least squares agree\n");
        } else if (disagree == 0 && uncertain < json_array_size(json_object_get(o, "compare"))) {
                printf("  exact shares and least squares agree wherever the fit can tell\n");
        } else if (disagree == 0) {
                printf("  the least-squares estimate is too uncertain here to compare\n");
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

        for (size_t k = 0; out && k < sizeof(keys) / sizeof(keys[0]); k++) {
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

int jitterctl_explain(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                {"window", required_argument, NULL, 'w'},
                {"cpu", required_argument, NULL, 'c'},
                CTL_COMMON_OPTIONS,
                {},
        };
        const char *window = "1m";
        json_t *cpus = NULL, *causes = NULL, *stats = NULL, *out = NULL, *o;
        int c, r = CTL_EXIT_FAILURE;
        size_t i;

        while ((c = getopt_long(argc, argv, "w:c:h", options, NULL)) >= 0) {
                r = ctl_parse_option(ctl, cmd, c, &window, &cpus);
                if (r != CTL_CONTINUE) {
                        json_decref(cpus);
                        return r;
                }
        }
        r = CTL_EXIT_FAILURE;
        if (optind < argc) {
                json_decref(cpus);
                return ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
        }
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
        if (strcmp(json_get_string(causes, "trace", "off"), "recording") != 0) {
                r = ctl_fail("the trace is %s: jitterctl status says why ([trace] enabled = yes "
                             "records it)",
                             json_get_string(causes, "trace", "off"));
                goto out;
        }
        out = json_array();
        json_array_foreach(json_object_get(causes, "cpus"), i, o)
        {
                json_t *s = json_array_get(json_object_get(stats, "cpus"), i);

                if (!s || !json_equal(json_object_get(s, "cpu"), json_object_get(o, "cpu"))) {
                        r = ctl_fail("GetStats and GetCauses list different CPUs");
                        goto out;
                }
                json_array_append_new(out, explain_compare_cpu(o, s));
                add_account(json_array_get(out, json_array_size(out) - 1), o);
        }
        if (ctl->json) {
                json_t *doc = json_pack("{sO}", "cpus", out);

                r = doc ? ctl_print_json(doc) : ctl_fail("out of memory");
                json_decref(doc);
                goto out;
        }
        json_array_foreach(out, i, o)
        {
                if (i > 0) {
                        printf("\n");
                }
                print_cpu(o);
        }
        r = fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
out:
        json_decref(cpus);
        json_decref(causes);
        json_decref(stats);
        json_decref(out);
        return r;
}

/* jitterctl explain: the share of the time lost per exact cause, from the trace causes of a
 * window's interruptions (GetCauses), next to the least-squares estimate of the attribution
 * (GetStats' causes), and where the two disagree.
 *
 * The two speak of different things: the trace names what ran (a vector, a softirq, a task),
 * the fit names counters (/proc/interrupts rows, softirqs, the probe's context switches). Each
 * exact cause is mapped to the counter that moves when it runs (explain_source()), and the
 * comparison is made per counter: the exact share is the time of the causes mapped to it over
 * the window's time lost, the least-squares share is its "explains", known to within its
 * standard error ("explains_stderr"; none where the fit cannot tell the counter from others
 * that move with it). */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl.h"
#include "summary-json.h"

/* The band: EXPLAIN_AGREE_ABS of the time lost, or EXPLAIN_AGREE_REL of the larger share if
 * that is more. The two shares agree when they differ by at most the band and the fit knows
 * its share that well (EXPLAIN_STDERRS standard errors within the band); they disagree when
 * they differ by more than the band and EXPLAIN_STDERRS standard errors besides; otherwise
 * the fit cannot tell. */
#define EXPLAIN_AGREE_ABS 0.05
#define EXPLAIN_AGREE_REL 0.25
#define EXPLAIN_STDERRS 2.0

/* The trace must explain at least this share of the window's interruptions (by time) for its
 * shares to be compared. */
#define EXPLAIN_COVERAGE_MIN 0.9

static const struct {
        const char *vector;
        const char *source;
} vector_sources[] = {
        {"local_timer", "irq:LOC"},      {"reschedule", "irq:RES"},
        {"call_function", "irq:CAL"},    {"call_function_single", "irq:CAL"},
        {"irq_work", "irq:IWI"},         {"thermal_apic", "irq:TRM"},
        {"threshold_apic", "irq:THR"},   {"deferred_error_apic", "irq:DFR"},
        {"spurious_apic", "irq:SPU"},    {"error_apic", "irq:ERR"},
        {"x86_platform_ipi", "irq:PLT"},
};

/* The attribution source that counts the exact cause (@kind, @name) into @buf, or NULL when no
 * counter does. Device IRQs are one group, "irq:device": the trace names the handler, the
 * counters the IRQ number. A timer callback runs in the local timer interrupt; a task or a
 * work item (in a kworker) takes the CPU with an involuntary context switch of the probe. */
static const char *explain_source(const char *kind, const char *name, char *buf, size_t size)
{
        if (strcmp(kind, "vector") == 0) {
                for (size_t i = 0; i < sizeof(vector_sources) / sizeof(vector_sources[0]); i++) {
                        if (strcmp(name, vector_sources[i].vector) == 0) {
                                return vector_sources[i].source;
                        }
                }
                return NULL;
        }
        if (strcmp(kind, "timer") == 0) {
                return "irq:LOC";
        }
        if (strcmp(kind, "ipi") == 0) {
                return strncmp(name, "flush_tlb", 9) == 0 ? "irq:TLB" : "irq:CAL";
        }
        if (strcmp(kind, "softirq") == 0) {
                snprintf(buf, size, "softirq:%s", name);
                return buf;
        }
        if (strcmp(kind, "task") == 0 || strcmp(kind, "work") == 0) {
                return "ctxsw:involuntary";
        }
        if (strcmp(kind, "irq") == 0) {
                return "irq:device";
        }
        return NULL;
}

/* The group of an attribution source: itself, or "irq:device" for a numbered IRQ. */
static const char *source_group(const char *source)
{
        const char *p = source + 4;

        if (strncmp(source, "irq:", 4) != 0 || !*p) {
                return source;
        }
        for (; *p; p++) {
                if (*p < '0' || *p > '9') {
                        return source;
                }
        }
        return "irq:device";
}

/* "agree", "disagree" or "uncertain" for an exact share @exact and a least-squares share @ls
 * with standard error @ls_stderr (INFINITY: unknown). */
static const char *explain_verdict(double exact, double ls, double ls_stderr)
{
        double d = fabs(exact - ls), larger = exact > ls ? exact : ls;
        double band = EXPLAIN_AGREE_ABS > EXPLAIN_AGREE_REL * larger ? EXPLAIN_AGREE_ABS
                                                                     : EXPLAIN_AGREE_REL * larger;

        if (d <= band && EXPLAIN_STDERRS * ls_stderr <= band) {
                return "agree";
        }
        return d > band + EXPLAIN_STDERRS * ls_stderr ? "disagree" : "uncertain";
}

/* Finds or adds the row of @source in the comparison array @rows. */
static json_t *row_of(json_t *rows, const char *source)
{
        json_t *r;
        size_t i;

        json_array_foreach(rows, i, r)
        {
                if (strcmp(json_string_value(json_object_get(r, "source")), source) == 0) {
                        return r;
                }
        }
        r = json_pack("{ss sf sn sn}", "source", source, "exact_share", 0.0, "ls_share",
                      "ls_stderr");
        json_array_append_new(rows, r);
        return r;
}

static void add_share(json_t *row, const char *key, double share)
{
        json_t *v = json_object_get(row, key);

        json_object_set_new(row, key,
                            json_real((json_is_number(v) ? json_number_value(v) : 0.0) + share));
}

/* Adds to @rows the least-squares shares of the GetStats entry @stats, with their variances
 * ("ls_variance", "ls_unknown" where a counter has no standard error). Returns whether it has a
 * fit. */
/* The row each counter of the fit is compared in, from the GetStats entry @stats: counters the
 * fit groups (their counts move together) share one row, named by all of them ("ctxsw:
 * involuntary + softirq:TIMER"), since only their total can be told; numbered IRQs are
 * "irq:device". An object from counter to row name. */
static json_t *row_names(json_t *stats)
{
        json_t *members = json_object(), *names = json_object(), *c, *list;
        const char *group;
        size_t i;

        json_array_foreach(json_object_get(stats, "causes"), i, c)
        {
                const char *source = source_group(json_get_string(c, "source", "?"));

                group = json_get_string(c, "group", source);
                list = json_object_get(members, group);
                if (!list) {
                        list = json_array();
                        json_object_set_new(members, group, list);
                }
                if (!json_is_string(json_object_get(names, source))) {
                        json_array_append_new(list, json_string(source));
                        json_object_set_new(names, source, json_string(group));
                }
        }
        json_object_foreach(members, group, list)
        {
                char name[256] = "";
                size_t len = 0;

                json_array_foreach(list, i, c)
                {
                        len += (size_t)snprintf(name + len,
                                                len < sizeof(name) ? sizeof(name) - len : 0, "%s%s",
                                                i ? " + " : "", json_string_value(c));
                }
                json_array_foreach(list, i, c)
                {
                        json_object_set_new(names, json_string_value(c), json_string(name));
                }
        }
        json_decref(members);
        return names;
}

/* The row of counter @source. */
static json_t *row_for(json_t *rows, json_t *names, const char *source)
{
        const char *name = json_string_value(json_object_get(names, source));

        return row_of(rows, name ? name : source);
}

/* Adds to @rows the least-squares shares of the GetStats entry @stats, with their variances
 * ("ls_variance", "ls_unknown" where a counter has no standard error). Returns whether it has a
 * fit. */
static bool add_ls_shares(json_t *rows, json_t *names, json_t *stats)
{
        bool fit = false;
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(stats, "causes"), i, c)
        {
                const char *source = source_group(json_get_string(c, "source", "?"));
                double ls, se;
                json_t *row;

                if (!json_get_double(c, "explains", &ls)) {
                        continue;
                }
                fit = true;
                row = row_for(rows, names, source);
                add_share(row, "ls_share", ls);
                /* A row of the fit's group: the group's error, once. Otherwise its counters'
                 * errors added as independent (in quadrature). Unknown when one of them is. */
                if (strcmp(json_get_string(c, "group", source), source) != 0 ||
                    strchr(json_get_string(row, "source", ""), '+')) {
                        if (!json_get_double(c, "group_explains_stderr", &se)) {
                                json_object_set_new(row, "ls_unknown", json_true());
                        } else if (!json_object_get(row, "ls_variance")) {
                                add_share(row, "ls_variance", se * se);
                        }
                } else if (json_get_double(c, "explains_stderr", &se)) {
                        add_share(row, "ls_variance", se * se);
                } else {
                        json_object_set_new(row, "ls_unknown", json_true());
                }
        }
        return fit;
}

/* Sets each row's "ls_stderr" (from its variance) and "verdict". */
static void set_verdicts(json_t *rows, bool fit, double coverage)
{
        json_t *r;
        size_t i;

        json_array_foreach(rows, i, r)
        {
                double e = json_number_value(json_object_get(r, "exact_share")), ls, var = 0;
                const char *verdict;

                json_get_double(r, "ls_variance", &var);
                if (json_is_true(json_object_get(r, "ls_unknown"))) {
                        var = INFINITY;
                }
                json_object_del(r, "ls_variance");
                json_object_del(r, "ls_unknown");
                if (json_get_double(r, "ls_share", &ls)) {
                        json_object_set_new(r, "ls_stderr",
                                            isfinite(var) ? json_real(sqrt(var)) : json_null());
                }
                if (!json_get_double(r, "ls_share", &ls)) {
                        verdict = fit ? "trace only" : "no fit";
                } else if (coverage < EXPLAIN_COVERAGE_MIN) {
                        verdict = "no trace";
                } else {
                        verdict = explain_verdict(e, ls, isfinite(var) ? sqrt(var) : INFINITY);
                }
                json_object_set_new(r, "verdict", json_string(verdict));
        }
}

/* The comparison of one CPU: @causes its GetCauses entry, @stats its GetStats entry. */
static json_t *explain_cpu(json_t *causes, json_t *stats)
{
        uint64_t lost = 0, ev = 0, ev_ns = 0, explained_ns = 0, unexplained = 0, other = 0;
        json_t *exact = json_array(), *rows = json_array(), *names = row_names(stats), *c, *out;
        double coverage;
        bool fit;
        size_t i;

        {
                CpuStats st;

                /* members it lacks stay 0 */
                (void)cpu_stats_read(stats, &st);
                lost = st.summary.lost_ns;
                ev = st.summary.events;
        }
        json_get_u64(causes, "interruptions_ns", &ev_ns);
        json_get_u64(causes, "explained_ns", &explained_ns);
        json_get_u64(causes, "unexplained_ns", &unexplained);
        json_get_u64(causes, "other_ns", &other);
        /* The history keeps the newest events_per_cpu interruptions: fewer than the window
         * counted leave part of it without causes. */
        coverage = ev_ns ? (double)explained_ns / (double)ev_ns : 0.0;
        {
                uint64_t kept = 0;

                json_get_u64(causes, "interruptions", &kept);
                if (ev > kept && ev > 0) {
                        coverage *= (double)kept / (double)ev;
                }
        }
        json_array_foreach(json_object_get(causes, "causes"), i, c)
        {
                const char *kind = json_get_string(c, "kind", "?");
                const char *name = json_get_string(c, "name", "?");
                char buf[64];
                const char *source = explain_source(kind, name, buf, sizeof(buf));
                uint64_t ns = 0;
                double share;

                json_get_u64(c, "ns", &ns);
                share = lost ? (double)ns / (double)lost : 0.0;
                json_array_append_new(exact,
                                      json_pack("{ss ss sI sO sf}", "kind", kind, "name", name,
                                                "ns", (json_int_t)ns, "count",
                                                json_object_get(c, "count"), "share", share));
                add_share(row_for(rows, names, source ? source : "(no counter)"), "exact_share",
                          share);
        }
        fit = add_ls_shares(rows, names, stats);
        json_decref(names);
        set_verdicts(rows, fit, coverage);
        out = json_pack("{sO sO sI sI sI sI sI sI sf sb so so}", "cpu",
                        json_object_get(causes, "cpu"), "window", json_object_get(causes, "window"),
                        "lost_ns", (json_int_t)lost, "interruptions", (json_int_t)ev,
                        "interruptions_ns", (json_int_t)ev_ns, "explained_ns",
                        (json_int_t)explained_ns, "unexplained_ns", (json_int_t)unexplained,
                        "other_ns", (json_int_t)other, "coverage", coverage, "fit", fit, "exact",
                        exact, "compare", rows);
        if (out) {
                json_object_set(out, "explained", json_object_get(causes, "explained"));
                if (json_object_get(stats, "background")) {
                        json_object_set(out, "background", json_object_get(stats, "background"));
                }
        }
        return out;
}

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

        printf("  %-22s %8s %14s %10s\n", "COUNTER", "EXACT", "LEAST SQUARES", "+-");
        json_array_foreach(rows, i, c)
        {
                double ls, se;
                bool have_ls = json_get_double(c, "ls_share", &ls);
                bool have_se = json_get_double(c, "ls_stderr", &se);

                printf("  %-22s %8s %14s %10s  %s\n", json_get_string(c, "source", "?"),
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
                printf("  %-22s %8s %14s %10s  (no counter moves with it)\n", "background", "-",
                       share_text(b, sizeof(b), ls),
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

static void print_cpu(json_t *o)
{
        uint64_t lost = 0, ev_ns = 0, unexplained = 0, other = 0, explained_ns = 0, ev = 0, n = 0;
        char a[32], b[32], d[32], cov[32];
        json_t *c;
        size_t i, disagree = 0, uncertain = 0;

        json_get_u64(o, "lost_ns", &lost);
        json_get_u64(o, "interruptions", &ev);
        json_get_u64(o, "explained", &n);
        json_get_u64(o, "interruptions_ns", &ev_ns);
        json_get_u64(o, "explained_ns", &explained_ns);
        json_get_u64(o, "unexplained_ns", &unexplained);
        json_get_u64(o, "other_ns", &other);
        printf("CPU %d, window %s: time lost %s, %s interruptions, %s with trace causes (%s)\n",
               (int)json_integer_value(json_object_get(o, "cpu")),
               json_get_string(o, "window", "?"), format_ns(a, sizeof(a), (double)lost),
               format_count(b, sizeof(b), ev), format_count(d, sizeof(d), n),
               share_text(cov, sizeof(cov), json_number_value(json_object_get(o, "coverage"))));
        printf("  %-36s %8s %10s %7s\n", "EXACT CAUSE", "SHARE", "TIME", "COUNT");
        json_array_foreach(json_object_get(o, "exact"), i, c)
        {
                char name[64];
                uint64_t ns = 0, count = 0;

                json_get_u64(c, "ns", &ns);
                json_get_u64(c, "count", &count);
                snprintf(name, sizeof(name), "%s %s", json_get_string(c, "kind", "?"),
                         json_get_string(c, "name", "?"));
                printf("  %-36s %8s %10s %7s\n", name,
                       share_text(a, sizeof(a), json_number_value(json_object_get(c, "share"))),
                       format_ns(b, sizeof(b), (double)ns), format_count(d, sizeof(d), count));
        }
        if (other) {
                printf("  %-36s %8s %10s\n", "other causes",
                       share_text(a, sizeof(a), lost ? (double)other / (double)lost : 0),
                       format_ns(b, sizeof(b), (double)other));
        }
        printf("  %-36s %8s %10s\n", "unexplained (kernel entry and exit)",
               share_text(a, sizeof(a), lost ? (double)unexplained / (double)lost : 0),
               format_ns(b, sizeof(b), (double)unexplained));
        if (lost > ev_ns) {
                printf("  %-36s %8s %10s\n", "below the threshold, not traced",
                       share_text(a, sizeof(a), (double)(lost - ev_ns) / (double)lost),
                       format_ns(b, sizeof(b), (double)(lost - ev_ns)));
        }
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
            ctl_call(ctl, "GetStats",
                     cpus ? json_pack("{ss sO}", "window", window, "cpus", cpus)
                          : json_pack("{ss}", "window", window),
                     &stats) < 0) {
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
                json_array_append_new(out, explain_cpu(o, s));
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

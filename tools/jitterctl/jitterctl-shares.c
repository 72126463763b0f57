/* The comparison of jitterctl explain, with no I/O: the exact shares of a window's trace causes
 * (GetCauses) per row of counters, next to the least-squares estimate of the attribution
 * (GetStats' causes), and a verdict per row.
 *
 * The two speak of different things: the trace names what ran (a vector, a softirq, a task),
 * the fit names counters (/proc/interrupts rows, softirqs, the probe's context switches). Each
 * exact cause is counted for the counter that moves when it runs (GetCauses' "counter"), and
 * the comparison is made per row of counters (row_names()): the exact share is the time of the
 * causes counted for the row's counters over the window's time lost, the least-squares share
 * the sum of their "explains", known to within the standard errors of the fit's groups in the
 * row ("group_explains_stderr"; none where the fit cannot tell a counter from others that move
 * with it). Where the fit knows a row to no better than EXPLAIN_CROSS_CHECK_STDERR, its share is
 * no cross-check of the exact one ("cross_check": false). Without the trace, the rows are the
 * fit's alone (shares_estimate_cpu()). */

#include "jitterctl-shares.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "json-read.h"
#include "summary-json.h"
#include "util.h"

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

/* The root of @counter in the union-find @parent (counter to counter). */
static const char *root_of(json_t *parent, const char *counter)
{
        const char *up;

        while ((up = json_string_value(json_object_get(parent, counter))) &&
               strcmp(up, counter) != 0) {
                counter = up;
        }
        return counter;
}

/* Puts counters @a and @b in one row of @parent (each counter is a key of it). */
static void join(json_t *parent, const char *a, const char *b)
{
        const char *names[] = {a, b};
        char *ra, *rb;

        for (size_t i = 0; i < 2; i++) {
                if (!json_object_get(parent, names[i])) {
                        json_object_set_new(parent, names[i], json_string(names[i]));
                }
        }
        ra = strdup(root_of(parent, a));
        rb = strdup(root_of(parent, b));
        if (ra && rb && strcmp(ra, rb) != 0) {
                json_object_set_new(parent, rb, json_string(ra));
        }
        free(ra);
        free(rb);
}

/* The occurrences of @counter in the window, from the GetStats entry @stats (numbered IRQs
 * summed for "irq:device"); 0 when the fit has none. */
static uint64_t counter_count(json_t *stats, const char *counter)
{
        uint64_t sum = 0, n;
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(stats, "causes"), i, c)
        {
                if (strcmp(source_group(json_read_string_or(c, "source", "?")), counter) == 0 &&
                    json_read_u64(c, "count", &n) == 0) {
                        sum += n;
                }
        }
        return sum;
}

/* The row each counter is compared in: one per counter, but counters the fit groups (their
 * counts move together) share one, since only their total can be told, and so do the
 * probe's involuntary switches and the counter of an interrupt that lets tasks in with
 * EXPLAIN_WOKEN_MIN of the time lost @lost_ns, at EXPLAIN_WOKEN_FRACTION of its occurrences
 * in the fit or more (GetCauses' "woken_by" of @causes): the switch and its wake-up then move
 * together, and the fit may give the task's time to either. A row is named by all its
 * counters in alphabetical order ("ctxsw:involuntary + irq:RES"); numbered IRQs are
 * "irq:device". An object from counter to row name. */
static json_t *row_names(json_t *stats, json_t *causes, uint64_t lost_ns)
{
        json_t *parent = json_object(), *names = json_object(), *c, *v;
        const char *counter, **sorted;
        size_t i, n;

        json_array_foreach(json_object_get(stats, "causes"), i, c)
        {
                const char *source = source_group(json_read_string_or(c, "source", "?"));

                join(parent, source, source_group(json_read_string_or(c, "group", source)));
        }
        json_object_foreach(json_object_get(causes, "woken_by"), counter, v)
        {
                uint64_t ns = 0, count = 0, occurrences = counter_count(stats, counter);

                json_read_u64(v, "ns", &ns);
                json_read_u64(v, "count", &count);
                if (lost_ns > 0 && occurrences > 0 &&
                    (double)ns >= EXPLAIN_WOKEN_MIN * (double)lost_ns &&
                    (double)count >= EXPLAIN_WOKEN_FRACTION * (double)occurrences) {
                        join(parent, SWITCH_COUNTER, counter);
                }
        }
        n = json_object_size(parent);
        sorted = calloc(n ? n : 1, sizeof(*sorted));
        i = 0;
        json_object_foreach(parent, counter, v)
        {
                if (sorted) {
                        sorted[i++] = counter;
                }
        }
        if (sorted) {
                qsort(sorted, n, sizeof(*sorted), cmp_strings);
        }
        for (i = 0; sorted && i < n; i++) {
                const char *root = root_of(parent, sorted[i]);
                json_t *name = json_object_get(names, root);
                char buf[256];

                /* The root's entry holds the growing name until every member is in. */
                snprintf(buf, sizeof(buf), "%s%s%s", name ? json_string_value(name) : "",
                         name ? " + " : "", sorted[i]);
                json_object_set_new(names, root, json_string(buf));
        }
        for (i = 0; sorted && i < n; i++) {
                json_object_set(names, sorted[i],
                                json_object_get(names, root_of(parent, sorted[i])));
        }
        free(sorted);
        json_decref(parent);
        return names;
}

/* The row of counter @source. */
static json_t *row_for(json_t *rows, json_t *names, const char *source)
{
        const char *name = json_string_value(json_object_get(names, source));

        return row_of(rows, name ? name : source);
}

/* Adds to @rows (in the row of @names of each counter) the least-squares shares of the
 * GetStats entry @stats, and the variance of each of the fit's groups in a row, once
 * ("ls_variance"; "ls_groups" the groups counted, "ls_unknown" when a group has no standard
 * error). Returns whether it has a fit. */
static bool add_ls_shares(json_t *rows, json_t *names, json_t *stats)
{
        bool fit = false;
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(stats, "causes"), i, c)
        {
                const char *source = source_group(json_read_string_or(c, "source", "?"));
                const char *group = json_read_string_or(c, "group", source);
                double ls, se;
                json_t *row, *seen;

                if (json_read_number(c, "explains", &ls) < 0) {
                        continue;
                }
                fit = true;
                row = row_for(rows, names, source);
                add_share(row, "ls_share", ls);
                /* Each of the fit's groups in the row adds the error of its total once (a
                 * counter alone is a group of one); the groups' errors add as independent, in
                 * quadrature. Unknown when one of them is. */
                seen = json_object_get(row, "ls_groups");
                if (!seen) {
                        seen = json_object();
                        json_object_set_new(row, "ls_groups", seen);
                }
                if (json_object_get(seen, group)) {
                        continue;
                }
                json_object_set_new(seen, group, json_true());
                if (json_read_number(c, "group_explains_stderr", &se) == 0) {
                        add_share(row, "ls_variance", se * se);
                } else {
                        json_object_set_new(row, "ls_unknown", json_true());
                }
        }
        return fit;
}

/* Whether a least-squares share known to within @ls_stderr (INFINITY: unknown) is a
 * cross-check of the exact one. */
static bool is_cross_check(double ls_stderr)
{
        return ls_stderr < EXPLAIN_CROSS_CHECK_STDERR;
}

/* Sets the "ls_stderr" of each row with a least-squares share, from its variance (null where a
 * group in it has no standard error), and drops the working members of add_ls_shares(). */
static void set_stderrs(json_t *rows)
{
        json_t *r;
        size_t i;

        json_array_foreach(rows, i, r)
        {
                double var = 0;

                json_read_number(r, "ls_variance", &var);
                if (json_is_true(json_object_get(r, "ls_unknown"))) {
                        var = INFINITY;
                }
                json_object_del(r, "ls_variance");
                json_object_del(r, "ls_unknown");
                json_object_del(r, "ls_groups");
                if (json_is_number(json_object_get(r, "ls_share"))) {
                        json_object_set_new(r, "ls_stderr",
                                            isfinite(var) ? json_real(sqrt(var)) : json_null());
                }
        }
}

/* Sets each row's "verdict" and "cross_check". */
static void set_verdicts(json_t *rows, bool fit, double coverage)
{
        json_t *r;
        size_t i;

        json_array_foreach(rows, i, r)
        {
                double e = json_number_value(json_object_get(r, "exact_share")), ls, se = INFINITY;
                const char *verdict;

                json_read_number(r, "ls_stderr", &se);
                if (json_read_number(r, "ls_share", &ls) < 0) {
                        verdict = fit ? "trace only" : "no fit";
                        se = INFINITY;
                } else if (coverage < EXPLAIN_COVERAGE_MIN) {
                        verdict = "no trace";
                } else {
                        verdict = explain_verdict(e, ls, se);
                }
                json_object_set_new(r, "verdict", json_string(verdict));
                json_object_set_new(r, "cross_check", json_boolean(is_cross_check(se)));
        }
}

/* A copy of the fit's background in the GetStats entry @stats with its "cross_check", or NULL
 * when it has none. */
static json_t *background_of(json_t *stats)
{
        json_t *b = json_copy(json_object_get(stats, "background"));
        double se = INFINITY;

        if (b) {
                json_read_number(b, "explains_stderr", &se);
                json_object_set_new(b, "cross_check", json_boolean(is_cross_check(se)));
        }
        return b;
}

json_t *shares_compare_cpu(json_t *causes, json_t *stats)
{
        uint64_t lost = 0, ev = 0, ev_ns = 0, explained_ns = 0, unexplained = 0, other = 0;
        json_t *exact = json_array(), *rows = json_array(), *names, *c, *out;
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
        names = row_names(stats, causes, lost);
        json_read_u64(causes, "interruptions_ns", &ev_ns);
        /* The time the trace saw, the interruptions with no record in it included (a daemon
         * before the account says only explained_ns, which was that). */
        if (json_read_u64(causes, "traced_ns", &explained_ns) < 0) {
                json_read_u64(causes, "explained_ns", &explained_ns);
        }
        json_read_u64(causes, "unexplained_ns", &unexplained);
        json_read_u64(causes, "other_ns", &other);
        /* The history keeps the newest events_per_cpu interruptions: fewer than the window
         * counted leave part of it without causes. */
        coverage = ev_ns ? (double)explained_ns / (double)ev_ns : 0.0;
        {
                uint64_t kept = 0;

                json_read_u64(causes, "interruptions", &kept);
                if (ev > kept && ev > 0) {
                        coverage *= (double)kept / (double)ev;
                }
        }
        json_array_foreach(json_object_get(causes, "causes"), i, c)
        {
                const char *kind = json_read_string_or(c, "kind", "?");
                const char *name = json_read_string_or(c, "name", "?");
                const char *source = json_read_string_or(c, "counter", NULL);
                uint64_t ns = 0;
                double share;

                json_read_u64(c, "ns", &ns);
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
        set_stderrs(rows);
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
                        json_object_set_new(out, "background", background_of(stats));
                }
        }
        return out;
}

/* Larger least-squares share first. */
static int cmp_ls_share(const void *a, const void *b)
{
        double x = json_number_value(json_object_get(*(json_t *const *)a, "ls_share"));
        double y = json_number_value(json_object_get(*(json_t *const *)b, "ls_share"));

        return (x < y) - (x > y);
}

json_t *shares_estimate_cpu(json_t *stats)
{
        json_t *rows = json_array(), *names = row_names(stats, NULL, 0), *sorted = json_array();
        json_t **order = NULL, *out = NULL, *r;
        bool fit = false;
        size_t i, n = 0;
        CpuStats st;

        if (!rows || !names || !sorted) {
                goto out;
        }
        /* members it lacks stay 0 */
        (void)cpu_stats_read(stats, &st);
        fit = add_ls_shares(rows, names, stats);
        set_stderrs(rows);
        order = calloc(json_array_size(rows) + 1, sizeof(*order));
        if (!order) {
                goto out;
        }
        json_array_foreach(rows, i, r)
        {
                json_object_del(r, "exact_share");
                order[n++] = r;
        }
        qsort(order, n, sizeof(*order), cmp_ls_share);
        for (i = 0; i < n; i++) {
                json_array_append(sorted, order[i]);
        }
        out = json_pack("{sO? sO? sI sI sb sO}", "cpu", json_object_get(stats, "cpu"), "window",
                        json_object_get(stats, "window"), "lost_ns", (json_int_t)st.summary.lost_ns,
                        "interruptions", (json_int_t)st.summary.events, "fit", fit, "estimate",
                        sorted);
        if (out && json_object_get(stats, "background")) {
                json_object_set(out, "background", json_object_get(stats, "background"));
        }
out:
        free(order);
        json_decref(rows);
        json_decref(names);
        json_decref(sorted);
        return out;
}

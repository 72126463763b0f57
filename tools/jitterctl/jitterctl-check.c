/* jitterctl check: whether every CPU is within a bound (the max gap, or a percentile of the
 * gaps, over a window), as the exit status. */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "summary-json.h"

/* What `check` was asked: the bound, the percentile (empty: the max gap), window and CPUs. */
typedef struct CheckArgs {
        const char *window;
        json_t *cpus;
        char key[32];
        uint64_t bound_ns;
        bool have_bound;
} CheckArgs;

/* --max and --percentile. */
static int check_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        CheckArgs *a = userdata;

        (void)ctl;
        if (c == 'M') {
                if (duration_parse(optarg, 1000ULL, &a->bound_ns) < 0) {
                        return ctl_usage_error(cmd, "invalid duration \"%s\" (e.g. 20us)", optarg);
                }
                a->have_bound = true;
        } else if (percentile_key(optarg, a->key, sizeof(a->key)) < 0) {
                return ctl_usage_error(cmd, "invalid percentile \"%s\" (e.g. 99.99)", optarg);
        }
        return CTL_CONTINUE;
}

/* Parses the options of `check` into @a. Returns CTL_CONTINUE, or the exit status after saying
 * what is wrong. */
static int check_parse(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv, CheckArgs *a)
{
        static const struct option own[] = {
                {"max", required_argument, NULL, 'M'},
                {"percentile", required_argument, NULL, 'p'},
                {},
        };
        const CtlOptions options = {
                .short_options = "M:p:",
                .long_options = own,
                .parse = check_option,
                .userdata = a,
                .window = &a->window,
                .cpus = &a->cpus,
        };
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (!a->have_bound) {
                json_decref(a->cpus);
                return ctl_usage_error(cmd, "--max is required");
        }
        return CTL_CONTINUE;
}

/* The worst value within the bound so far, and on which CPU. */
typedef struct CheckWorst {
        double value;
        uint64_t cpu;
} CheckWorst;

/* Checks one CpuStats @s against the bound: adds it to @out_cpus (JSON) or prints why it
 * fails. Returns true when it fails. */
static bool check_cpu(Ctl *ctl, const CheckArgs *a, json_t *s, const char *metric,
                      const char *bound_text, json_t *out_cpus, CheckWorst *worst)
{
        const char *problem = NULL;
        char value_text[FORMAT_MAX];
        uint64_t cpu;
        double v = NAN;
        CpuStats st;

        (void)cpu_stats_read(s, &st);
        cpu = st.cpu;
        if (st.summary.samples == 0) {
                problem = "no samples in the window";
        } else if (isnan(v = value_summary_get(&st.summary.gap, a->key[0] ? a->key : "max_ns"))) {
                problem = "the daemon did not report this value";
        } else if (v > (double)a->bound_ns) {
                problem = "above the bound";
        }
        if (!problem && v > worst->value) {
                worst->value = v;
                worst->cpu = cpu;
        }
        if (out_cpus) {
                json_array_append_new(out_cpus,
                                      json_pack("{s:I, s:o, s:b}", "cpu", (json_int_t)cpu,
                                                "value_ns", isnan(v) ? json_null() : json_real(v),
                                                "ok", problem == NULL));
        }
        if (!problem) {
                return false;
        }
        if (!ctl->json) {
                format_ns(value_text, sizeof(value_text), v);
                if (isnan(v)) {
                        printf("%sFAIL%s: CPU %llu: %s\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET), (unsigned long long)cpu, problem);
                } else {
                        printf("%sFAIL%s: CPU %llu: %s %s > %s\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET), (unsigned long long)cpu, metric,
                               value_text, bound_text);
                }
        }
        return true;
}

int cmd_check(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        CheckArgs a = {0};
        json_t *reply = NULL, *list, *s, *out = NULL, *out_cpus = NULL;
        char metric[48], bound_text[FORMAT_MAX];
        CheckWorst worst = {.value = -1};
        unsigned failures = 0;
        size_t i;
        int r;

        r = check_parse(ctl, cmd, argc, argv, &a);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (ctl_get_stats(ctl, ctl_window_params(a.window, a.cpus), false, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (a.key[0]) {
                snprintf(metric, sizeof(metric), "%s gap", a.key);
        } else {
                snprintf(metric, sizeof(metric), "max gap");
        }
        format_ns(bound_text, sizeof(bound_text), (double)a.bound_ns);
        if (ctl->json) {
                out = json_pack("{s:s, s:I, s:o}", "metric", a.key[0] ? a.key : "max", "max_ns",
                                (json_int_t)a.bound_ns, "cpus", out_cpus = json_array());
                if (!out) {
                        json_decref(reply);
                        return ctl_fail("out of memory");
                }
        }
        list = json_object_get(reply, "cpus");
        json_array_foreach(list, i, s)
        {
                failures += check_cpu(ctl, &a, s, metric, bound_text, out_cpus, &worst);
        }
        if (json_array_size(list) == 0) {
                failures++;
                if (!ctl->json) {
                        printf("%sFAIL%s: no CPUs are probed\n", ctl_color(ctl, CTL_RED),
                               ctl_color(ctl, CTL_RESET));
                }
        }
        if (out) {
                json_object_set_new(out, "ok", json_boolean(failures == 0));
                r = ctl_print_json(out);
                json_decref(out);
                if (r != CTL_EXIT_OK) {
                        json_decref(reply);
                        return r;
                }
        } else if (failures == 0) {
                char worst_text[FORMAT_MAX];
                CpuStats first;

                (void)cpu_stats_read(json_array_get(list, 0), &first);
                if (!first.window) {
                        first.window = a.window ? a.window : "1m";
                }
                printf("%sOK%s: %s within %s on every CPU (worst %s on CPU %llu, window %s)\n",
                       ctl_color(ctl, CTL_GREEN), ctl_color(ctl, CTL_RESET), metric, bound_text,
                       format_ns(worst_text, sizeof(worst_text), worst.value),
                       (unsigned long long)worst.cpu, first.window);
        }
        json_decref(reply);
        return failures == 0 ? CTL_EXIT_OK : CTL_EXIT_FAILURE;
}

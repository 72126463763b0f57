/* jitterctl clocks: what every way to read time costs on this host, measured locally (no
 * daemon), as a table or JSON. The measurement is clocks.c; this file is its
 * options and its output. */

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "clocks.h"
#include "jitterctl.h"

static void clocks_usage(FILE *f)
{
        fprintf(f,
                "Usage: jitterctl clocks [--json] [--cpu N] [--samples N]\n\n"
                "Measures, on this host and without the daemon, the cost per call of every way\n"
                "to read time: the hardware counter, each clock_gettime() clock, a forced\n"
                "clock_gettime() system call, gettimeofday() and time().\n\n"
                "Options:\n"
                "  -c, --cpu N        run on CPU N (default: the last CPU this process may use)\n"
                "  -n, --samples N    trials per clock, each timing %d calls (default %d,\n"
                "                     fewer when they would take more than %.1f s)\n"
                "      --json         print JSON instead of text\n"
                "  -h, --help         this help\n",
                CLOCKS_BATCH_DEFAULT, CLOCKS_SAMPLES_DEFAULT, CLOCKS_BUDGET_NS / 1e9);
}

/* The warning an operator needs about the clocksource, or NULL when there is none. */
static const char *clocksource_warning(const ClocksReport *rep, char *buf, size_t size)
{
#if defined(__aarch64__)
        const char *fast = "arch_sys_counter";
#else
        const char *fast = "tsc";
#endif

        if (rep->clocksource_fast) {
                return NULL;
        }
        if (rep->clocksource[0] == '\0') {
                snprintf(buf, size,
                         "cannot read the kernel's clocksource (%s): whether clock_gettime() "
                         "stays out of the kernel is unknown",
                         CLOCKS_CLOCKSOURCE_PATH);
                return buf;
        }
        snprintf(buf, size,
                 "the kernel's clocksource is \"%s\", not \"%s\": clock_gettime() and "
                 "gettimeofday() may fall back to a system call (compare with "
                 "syscall(CLOCK_MONOTONIC)); where the %s is reliable, boot with "
                 "clocksource=%s",
                 rep->clocksource, fast, fast, fast);
        return buf;
}

/* A number rounded to 0.001 ns, or null when unknown. */
static json_t *json_ns(double ns)
{
        if (!isfinite(ns)) {
                return json_null();
        }
        return json_real(round(ns * 1000.0) / 1000.0);
}

static json_t *clocks_to_json(const ClocksReport *rep, const char *warning)
{
        json_t *root, *list, *counter;

        list = json_array();
        counter = json_pack("{s:s, s:I, s:s}", "source", counter_source_name(rep->counter.source),
                            "hz", (json_int_t)rep->counter.hz, "hz_source",
                            counter_hz_source_name(rep->counter.hz_source));
        root = json_pack("{s:o, s:i, s:o, s:i, s:i, s:o}", "clocksource",
                         rep->clocksource[0] ? json_string(rep->clocksource) : json_null(), "cpu",
                         rep->cpu, "counter", counter, "batch", (int)rep->batch, "samples",
                         (int)rep->samples, "empty_batch_ns", json_ns(rep->empty_batch_ns));
        if (!root || !list) {
                json_decref(root);
                json_decref(list);
                return NULL;
        }
        if (warning && json_object_set_new(root, "warning", json_string(warning)) < 0) {
                goto fail;
        }
        for (size_t i = 0; i < rep->n_clocks; i++) {
                const ClockCost *c = &rep->clocks[i];
                json_t *o = json_pack(
                        "{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "clock", c->name, "min_ns",
                        json_ns(c->min_ns), "median_ns", json_ns(c->median_ns), "mean_ns",
                        json_ns(c->mean_ns), "max_ns", json_ns(c->max_ns), "stddev_ns",
                        json_ns(c->stddev_ns), "resolution_ns", json_ns(c->resolution_ns),
                        "step_ns", json_ns(c->step_ns), "samples", (json_int_t)c->samples);

                if (json_array_append_new(list, o) < 0) {
                        goto fail;
                }
        }
        if (json_object_set_new(root, "clocks", list) < 0) {
                json_decref(root);
                return NULL;
        }
        return root;
fail:
        json_decref(list);
        json_decref(root);
        return NULL;
}

/* Resolution and step: whole ns when large, two decimals for a counter tick, "-" unknown. */
static char *fmt_res(char *buf, size_t size, double ns)
{
        if (!isfinite(ns)) {
                snprintf(buf, size, "-");
        } else if (ns >= 100 || ns == floor(ns)) {
                snprintf(buf, size, "%.0f", ns);
        } else {
                snprintf(buf, size, "%.2f", ns);
        }
        return buf;
}

static void print_rule(size_t width)
{
        for (size_t i = 0; i < width; i++) {
                putchar('-');
        }
        putchar('\n');
}

static int clocks_print_text(const ClocksReport *rep, const char *warning)
{
        char header[160], res[32], step[32], hz[32];
        int width;

        if (rep->counter.source == COUNTER_HW) {
                snprintf(hz, sizeof(hz), "%.3f MHz", (double)rep->counter.hz / 1e6);
        } else {
                snprintf(hz, sizeof(hz), "ns");
        }
        printf("Cost per call on CPU %d: %u trials of %u calls each, timed with %s (%s, %s)\n\n",
               rep->cpu, rep->samples, rep->batch,
               rep->counter.source == COUNTER_HW ? COUNTER_HW_NAME : "CLOCK_MONOTONIC_RAW", hz,
               counter_hz_source_name(rep->counter.hz_source));
        width = snprintf(header, sizeof(header), "%-24s %9s %10s %9s %10s %10s %10s %10s %8s",
                         "Clock", "Min[ns]", "Median[ns]", "Mean[ns]", "Max[ns]", "StdDev[ns]",
                         "Res[ns]", "Step[ns]", "Samples");
        printf("%s\n", header);
        print_rule((size_t)width);
        for (size_t i = 0; i < rep->n_clocks; i++) {
                const ClockCost *c = &rep->clocks[i];

                printf("%-24s %9.1f %10.1f %9.1f %10.1f %10.1f %10s %10s %8llu\n", c->name,
                       c->min_ns, c->median_ns, c->mean_ns, c->max_ns, c->stddev_ns,
                       fmt_res(res, sizeof(res), c->resolution_ns),
                       fmt_res(step, sizeof(step), c->step_ns), (unsigned long long)c->samples);
        }
        print_rule((size_t)width);
        printf("Clocksource: %s\n", rep->clocksource[0] ? rep->clocksource : "unknown");
        if (warning) {
                printf("Warning: %s\n", warning);
        }
        if (fflush(stdout) != 0) {
                return ctl_fail("cannot write to standard output: %s", strerror(errno));
        }
        return CTL_EXIT_OK;
}

/* --cpu N, --samples N and --help, whose text says more than the command table's. */
static int clocks_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        ClocksOptions *opts = userdata;
        unsigned long long v;

        (void)ctl;
        switch (c) {
        case 'c':
                if (ctl_parse_uint(optarg, CPU_SETSIZE - 1, &v) < 0) {
                        return ctl_usage_error(cmd, "invalid CPU \"%s\" (a CPU number)", optarg);
                }
                opts->cpu = (int)v;
                return CTL_CONTINUE;
        case 'n':
                if (ctl_parse_uint(optarg, CLOCKS_SAMPLES_MAX, &v) < 0 || v == 0) {
                        return ctl_usage_error(cmd, "invalid number of samples \"%s\" (1 to %d)",
                                               optarg, CLOCKS_SAMPLES_MAX);
                }
                opts->samples = (unsigned)v;
                return CTL_CONTINUE;
        default:
                clocks_usage(stdout);
                return CTL_EXIT_OK;
        }
}

int cmd_clocks(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        /* --socket and --no-color are accepted like every command's, though no daemon is asked
         * and nothing is coloured. */
        static const struct option own[] = {
                {"cpu", required_argument, NULL, 'c'},
                {"samples", required_argument, NULL, 'n'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        ClocksOptions opts = {.cpu = -1};
        const CtlOptions options = {
                .short_options = "+c:n:h",
                .long_options = own,
                .parse = clocks_option,
                .userdata = &opts,
        };
        ClocksReport rep;
        char warnbuf[512];
        const char *warning;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }

        r = clocks_measure(&opts, &rep);
        if (r == -EINVAL && opts.cpu >= 0) {
                return ctl_fail("cannot run on CPU %d: it is offline or outside the CPUs this "
                                "process may use (cpuset, taskset)",
                                opts.cpu);
        }
        if (r < 0) {
                return ctl_fail("cannot measure the clocks: %s", strerror(-r));
        }
        warning = clocksource_warning(&rep, warnbuf, sizeof(warnbuf));
        if (ctl->json) {
                json_t *root = clocks_to_json(&rep, warning);

                if (!root) {
                        return ctl_fail("out of memory");
                }
                r = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
                json_decref(root);
                if (r < 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
                        return ctl_fail("cannot write to standard output: %s", strerror(errno));
                }
                return CTL_EXIT_OK;
        }
        return clocks_print_text(&rep, warning);
}

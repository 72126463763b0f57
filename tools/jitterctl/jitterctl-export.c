/* jitterctl export: the daemon's measurements in the Prometheus text format, the same
 * exposition the daemon writes to its node_exporter textfile (probe/analysis/prometheus.h
 * renders both). */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prometheus.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "varlink-client.h"

/* Calls io.jitterd.@method with @params (stolen). Returns 0 and the reply in @ret, or prints
 * why not and returns a negative errno. */
static int export_call(Ctl *ctl, const char *method, json_t *params, json_t **ret)
{
        char full[64], why[128], *error = NULL;
        json_t *reply = NULL;
        int r;

        snprintf(full, sizeof(full), "io.jitterd.%s", method);
        r = varlink_client_call(ctl->client, full, params, &reply, &error);
        json_decref(params);
        if (r < 0) {
                fprintf(stderr, "jitterctl export: %s failed: %s\n", full,
                        ctl_call_strerror(ctl, r, why, sizeof(why)));
                return r;
        }
        if (error) {
                char msg[512];

                /* As every other command says a daemon's error (MethodNotFound: an older
                 * jitterd). */
                fprintf(stderr, "jitterctl: %s\n", format_error(msg, sizeof(msg), error, reply));
                free(error);
                json_decref(reply);
                return -EREMOTEIO;
        }
        *ret = reply;
        return 0;
}

/* The "cpus" array of GetStats over @window, as a new reference. */
static int export_stats(Ctl *ctl, const char *window, json_t **ret)
{
        json_t *reply, *cpus;
        int r = export_call(ctl, "GetStats",
                            json_pack("{ss sb}", "window", window, "without_analyses", true),
                            &reply);

        if (r < 0) {
                return r;
        }
        cpus = json_object_get(reply, "cpus");
        *ret = json_incref(cpus);
        json_decref(reply);
        return cpus ? 0 : -EBADMSG;
}

/* For each probed CPU its GetHistogram reply (window "all", kind "gap"), and the newest point
 * of its timeline over @window with "cpu" added, as the daemon's textfile has them. */
static int export_per_cpu(Ctl *ctl, json_t *probes, const char *window, json_t *histograms,
                          json_t *intervals)
{
        json_t *p;
        size_t i;

        json_array_foreach(probes, i, p)
        {
                json_t *cpu = json_object_get(p, "cpu"), *hist, *timeline, *points, *last;
                int r;

                if (!json_is_integer(cpu)) {
                        return -EBADMSG;
                }
                r = export_call(ctl, "GetHistogram",
                                json_pack("{sO ss ss}", "cpu", cpu, "window", "all", "kind", "gap"),
                                &hist);
                if (r < 0) {
                        return r;
                }
                if (json_array_append_new(histograms, hist) < 0) {
                        return -ENOMEM;
                }
                r = export_call(ctl, "GetTimeline",
                                json_pack("{sO ss}", "cpu", cpu, "window", window), &timeline);
                if (r < 0) {
                        return r;
                }
                points = json_object_get(timeline, "points");
                last = json_is_array(points) && json_array_size(points) > 0
                               ? json_array_get(points, json_array_size(points) - 1)
                               : NULL;
                if (json_is_object(last)) {
                        last = json_deep_copy(last);
                        if (!last || json_object_set(last, "cpu", cpu) < 0 ||
                            json_array_append_new(intervals, last) < 0) {
                                json_decref(timeline);
                                return -ENOMEM;
                        }
                }
                json_decref(timeline);
        }
        return 0;
}

static void export_usage(FILE *f)
{
        fputs("Usage: jitterctl export [--format prometheus] [--socket PATH] [--timeout DUR]\n\n"
              "The Prometheus exposition the daemon writes as its textfile.\n\n"
              "Options:\n"
              "  -f, --format F     the format: prometheus (the default and only one)\n"
              "      --socket PATH  the daemon's socket (default: " SYSTEM_SOCKET " for root,\n"
              "                     else $XDG_RUNTIME_DIR/jitterd/io.jitterd)\n"
              "      --timeout DUR  give up on a daemon that does not answer within DUR\n"
              "                     (default 10s)\n"
              "  -h, --help         this help\n",
              f);
}

/* --format (prometheus only), and of the common options those that make sense for an
 * exposition: --socket, --timeout and --help. */
static int export_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        (void)userdata;
        switch (c) {
        case 'f':
                if (strcmp(optarg, "prometheus") != 0) {
                        return ctl_usage_error(
                                cmd, "unknown format \"%s\" (the format is prometheus)", optarg);
                }
                return CTL_CONTINUE;
        case CTL_OPT_SOCKET:
                ctl->socket_path = optarg;
                return CTL_CONTINUE;
        case CTL_OPT_TIMEOUT:
                return ctl_parse_timeout(ctl, optarg) < 0 ? CTL_EXIT_USAGE : CTL_CONTINUE;
        case 'h':
                export_usage(stdout);
                return CTL_EXIT_OK;
        default:
                export_usage(stderr);
                return CTL_EXIT_USAGE;
        }
}

/* What the exposition is rendered from, each a reply (or part of one) of the daemon. */
typedef struct Exposition {
        json_t *status, *stats_all, *stats_1m, *histograms, *intervals;
} Exposition;

static void exposition_done(Exposition *e)
{
        json_decref(e->status);
        json_decref(e->stats_all);
        json_decref(e->stats_1m);
        json_decref(e->histograms);
        json_decref(e->intervals);
}

/* Asks the daemon for what @e holds. Returns 0, or a negative errno after saying why not. */
static int exposition_collect(Ctl *ctl, Exposition *e)
{
        json_int_t interval_ns;
        int r;

        r = export_call(ctl, "GetStatus", NULL, &e->status);
        if (r < 0) {
                return r;
        }
        interval_ns = json_integer_value(
                json_object_get(json_object_get(e->status, "config"), "interval_ns"));
        r = export_stats(ctl, "all", &e->stats_all);
        if (r >= 0) {
                r = export_stats(ctl, "1m", &e->stats_1m);
        }
        if (r >= 0) {
                r = export_per_cpu(
                        ctl, json_object_get(e->status, "probes"),
                        prometheus_interval_window(interval_ns > 0 ? (uint64_t)interval_ns : 0),
                        e->histograms, e->intervals);
        }
        if (r == -EBADMSG || r == -ENOMEM) {
                fprintf(stderr, "jitterctl export: %s\n",
                        r == -ENOMEM ? "out of memory" : "unexpected reply from jitterd");
        }
        return r;
}

/* Renders @e to stdout. Returns 0, or a negative errno after saying why not. */
static int exposition_print(const Exposition *e)
{
        int r;

        r = prometheus_render(stdout, e->status, e->stats_all, e->stats_1m, e->intervals,
                              e->histograms);
        if (r == 0 && fflush(stdout) != 0) {
                r = -errno;
        }
        if (r < 0) {
                fprintf(stderr, "jitterctl export: %s%s\n",
                        r == -EBADMSG ? "unexpected reply from jitterd (a member is missing or "
                                        "malformed, or the CPUs changed between the calls)"
                                      : "cannot write to standard output: ",
                        r == -EBADMSG ? "" : strerror(-r));
        }
        return r;
}

/* Runs "jitterctl export [--format prometheus]": reads the options (--socket may follow the
 * command, as with the other commands; --json and --no-color do not apply to an exposition),
 * connects to the daemon and prints the exposition to stdout. @argv[0] is the command's name.
 * Returns the exit status: CTL_EXIT_OK, CTL_EXIT_FAILURE when the daemon cannot be asked or its
 * replies are malformed, CTL_EXIT_USAGE. */
int cmd_export(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"format", required_argument, NULL, 'f'},
                {"socket", required_argument, NULL, CTL_OPT_SOCKET},
                {"timeout", required_argument, NULL, CTL_OPT_TIMEOUT},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        static const CtlOptions options = {
                .short_options = "+f:h",
                .long_options = own,
                .parse = export_option,
                .only_own = true,
        };
        Exposition e = {0};
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (ctl_connect(ctl) < 0) {
                return CTL_EXIT_FAILURE;
        }
        e.histograms = json_array();
        e.intervals = json_array();
        if (!e.histograms || !e.intervals) {
                fputs("jitterctl export: out of memory\n", stderr);
                exposition_done(&e);
                return CTL_EXIT_FAILURE;
        }
        r = exposition_collect(ctl, &e);
        if (r >= 0) {
                r = exposition_print(&e);
        }
        exposition_done(&e);
        return r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

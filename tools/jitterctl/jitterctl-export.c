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

/* Runs "jitterctl export [--format prometheus]": reads the options (--socket may follow the
 * command, as with the other commands; --json and --no-color do not apply to an exposition),
 * connects to the daemon and prints the exposition to stdout. @argv[0] is the command's name.
 * Returns the exit status: CTL_EXIT_OK, CTL_EXIT_FAILURE when the daemon cannot be asked or its
 * replies are malformed, CTL_EXIT_USAGE. */
/* Long because it parses the options, makes the four calls the exposition needs and renders them
 */
int cmd_export(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                {"format", required_argument, NULL, 'f'},
                {"socket", required_argument, NULL, CTL_OPT_SOCKET},
                {"timeout", required_argument, NULL, CTL_OPT_TIMEOUT},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        json_t *status = NULL, *stats_all = NULL, *stats_1m = NULL;
        json_t *histograms = json_array(), *intervals = json_array();
        json_int_t interval_ns;
        int opt, r, ret = CTL_EXIT_FAILURE;

        optind = 0;
        while ((opt = getopt_long(argc, argv, "+f:h", options, NULL)) >= 0) {
                switch (opt) {
                case 'f':
                        if (strcmp(optarg, "prometheus") != 0) {
                                ret = ctl_usage_error(cmd,
                                                      "unknown format \"%s\" (the format "
                                                      "is prometheus)",
                                                      optarg);
                                goto out;
                        }
                        break;
                case CTL_OPT_SOCKET:
                        ctl->socket_path = optarg;
                        break;
                case CTL_OPT_TIMEOUT:
                        if (ctl_parse_common(ctl, cmd, opt) != CTL_CONTINUE) {
                                ret = CTL_EXIT_USAGE;
                                goto out;
                        }
                        break;
                case 'h':
                        export_usage(stdout);
                        ret = CTL_EXIT_OK;
                        goto out;
                default:
                        export_usage(stderr);
                        ret = CTL_EXIT_USAGE;
                        goto out;
                }
        }
        if (optind < argc) {
                ret = ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
                goto out;
        }
        if (ctl_connect(ctl) < 0) {
                goto out;
        }
        if (!histograms || !intervals) {
                fputs("jitterctl export: out of memory\n", stderr);
                goto out;
        }

        r = export_call(ctl, "GetStatus", NULL, &status);
        if (r < 0) {
                goto out;
        }
        interval_ns = json_integer_value(
                json_object_get(json_object_get(status, "config"), "interval_ns"));
        r = export_stats(ctl, "all", &stats_all);
        if (r >= 0) {
                r = export_stats(ctl, "1m", &stats_1m);
        }
        if (r >= 0) {
                r = export_per_cpu(
                        ctl, json_object_get(status, "probes"),
                        prometheus_interval_window(interval_ns > 0 ? (uint64_t)interval_ns : 0),
                        histograms, intervals);
        }
        if (r == -EBADMSG || r == -ENOMEM) {
                fprintf(stderr, "jitterctl export: %s\n",
                        r == -ENOMEM ? "out of memory" : "unexpected reply from jitterd");
        }
        if (r < 0) {
                goto out;
        }
        r = prometheus_render(stdout, status, stats_all, stats_1m, intervals, histograms);
        if (r == 0 && fflush(stdout) != 0) {
                r = -errno;
        }
        if (r < 0) {
                fprintf(stderr, "jitterctl export: %s%s\n",
                        r == -EBADMSG ? "unexpected reply from jitterd (a member is missing or "
                                        "malformed, or the CPUs changed between the calls)"
                                      : "cannot write to standard output: ",
                        r == -EBADMSG ? "" : strerror(-r));
                goto out;
        }
        ret = CTL_EXIT_OK;
out:
        json_decref(status);
        json_decref(stats_all);
        json_decref(stats_1m);
        json_decref(histograms);
        json_decref(intervals);
        return ret;
}

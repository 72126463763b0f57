/* jitterctl plot: the gap histogram and the timeline of worst gaps as a self-contained SVG, from
 * the daemon or from a snapshot file. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jitterctl-buckets.h"
#include "jitterctl-format.h"
#include "jitterctl-svg.h"
#include "jitterctl.h"
#include "json-read.h"

/* What one CPU's series was built from, kept so that it can be freed. */
typedef struct PlotData {
        PlotSeries *series;
        ReportBucket **buckets;
        PlotPoint **points;
        size_t n;
} PlotData;

static void plot_data_done(PlotData *d)
{
        for (size_t i = 0; i < d->n; i++) {
                free(d->buckets[i]);
                free(d->points[i]);
        }
        free(d->series);
        free(d->buckets);
        free(d->points);
}

/* Adds one CPU from a GetHistogram reply and a GetTimeline reply. Returns 0, -EINVAL for a
 * malformed reply, or -ENOMEM. */
static int plot_data_add(PlotData *d, int cpu, json_t *histogram, json_t *timeline)
{
        json_t *points = json_object_get(timeline, "points"), *p;
        ReportBucket *b = NULL;
        PlotPoint *pts;
        size_t i, m = 0;
        int n;

        n = buckets_from_json(json_object_get(histogram, "buckets"), &b);
        if (n < 0) {
                return n;
        }
        pts = calloc(json_array_size(points) + 1, sizeof(*pts));
        if (!pts) {
                free(b);
                return -ENOMEM;
        }
        json_array_foreach(points, i, p)
        {
                PlotPoint *pt = &pts[m];

                if (json_read_u64(p, "start_ns", &pt->start_ns) < 0 ||
                    json_read_u64(p, "duration_ns", &pt->duration_ns) < 0 ||
                    json_read_u64(p, "max_gap_ns", &pt->max_gap_ns) < 0) {
                        free(b);
                        free(pts);
                        return -EINVAL;
                }
                pt->stalled = json_is_true(json_object_get(p, "stalled"));
                /* Points must ascend for the line; the daemon sends them in order, but a
                 * hand-edited snapshot might not. */
                if (m > 0 && pt->start_ns < pts[m - 1].start_ns) {
                        continue;
                }
                m++;
        }
        {
                PlotSeries *s = reallocarray(d->series, d->n + 1, sizeof(*s));
                ReportBucket **bb;
                PlotPoint **pp;

                if (s) {
                        d->series = s;
                }
                bb = s ? reallocarray(d->buckets, d->n + 1, sizeof(*bb)) : NULL;
                if (bb) {
                        d->buckets = bb;
                }
                pp = bb ? reallocarray(d->points, d->n + 1, sizeof(*pp)) : NULL;
                if (!pp) {
                        free(b);
                        free(pts);
                        return -ENOMEM;
                }
                d->points = pp;
        }
        d->buckets[d->n] = b;
        d->points[d->n] = pts;
        d->series[d->n] = (PlotSeries){
                .cpu = cpu,
                .buckets = b,
                .n_buckets = (size_t)n,
                .points = pts,
                .n_points = m,
        };
        d->n++;
        return 0;
}

static bool cpu_selected(json_t *cpus, json_int_t cpu)
{
        json_t *c;
        size_t i;

        if (!cpus) {
                return true;
        }
        json_array_foreach(cpus, i, c)
        {
                if (json_integer_value(c) == cpu) {
                        return true;
                }
        }
        return false;
}

static int plot_from_snapshot(const char *path, json_t *cpus, PlotData *d, char *title,
                              size_t title_size)
{
        json_error_t e;
        json_t *doc = json_load_file(path, 0, &e), *c;
        size_t i;
        int r = 0;

        if (!doc) {
                ctl_fail("cannot read %s: %s", path, e.text);
                return -EIO;
        }
        if (strcmp(json_read_string_or(doc, "format", ""), "jitterd-snapshot") != 0) {
                json_decref(doc);
                ctl_fail("%s is not a jitterctl snapshot", path);
                return -EINVAL;
        }
        json_array_foreach(json_object_get(doc, "cpus"), i, c)
        {
                json_t *cpu = json_object_get(c, "cpu");

                if (!json_is_integer(cpu) || !cpu_selected(cpus, json_integer_value(cpu))) {
                        continue;
                }
                r = plot_data_add(d, (int)json_integer_value(cpu), json_object_get(c, "histogram"),
                                  json_object_get(c, "timeline"));
                if (r < 0) {
                        ctl_fail("%s: CPU %lld: %s", path, (long long)json_integer_value(cpu),
                                 r == -ENOMEM ? "out of memory"
                                              : "malformed histogram or timeline");
                        break;
                }
        }
        snprintf(title, title_size, "jitterd snapshot %s, %s", path,
                 json_read_string_or(doc, "created", "?"));
        json_decref(doc);
        return r;
}

static int plot_from_daemon(Ctl *ctl, const char *window, json_t *cpus, PlotData *d, char *title,
                            size_t title_size)
{
        json_t *params = json_pack("{s:s}", "window", window), *stats = NULL, *s;
        char host[256] = "?";
        size_t i;
        int r = 0;

        if (params && cpus) {
                json_object_set(params, "cpus", cpus);
        }
        if (ctl_get_stats(ctl, params, false, &stats) < 0) {
                return -EIO;
        }
        json_array_foreach(json_object_get(stats, "cpus"), i, s)
        {
                json_t *hist = NULL, *timeline = NULL;
                json_int_t cpu = json_integer_value(json_object_get(s, "cpu"));
                char *error = NULL;

                if (ctl_call(ctl, "GetHistogram",
                             json_pack("{s:I, s:s, s:s}", "cpu", cpu, "window", window, "kind",
                                       "gap"),
                             &hist) < 0) {
                        r = -EIO;
                        break;
                }
                r = ctl_call_full(ctl, "GetTimeline",
                                  json_pack("{s:I, s:s}", "cpu", cpu, "window", window), &timeline,
                                  &error, NULL, strcmp(window, "all") == 0);
                /* Timelines may stop at the coarse retention: "all" then means "24h". */
                if (r == -EREMOTEIO && strcmp(window, "all") == 0 &&
                    strcmp(error, "io.jitterd.InvalidWindow") == 0) {
                        r = ctl_call(ctl, "GetTimeline",
                                     json_pack("{s:I, s:s}", "cpu", cpu, "window", "24h"),
                                     &timeline);
                } else if (r == -EREMOTEIO && strcmp(window, "all") == 0) {
                        fprintf(stderr, "jitterctl: GetTimeline failed: %s\n", error);
                }
                free(error);
                if (r < 0) {
                        json_decref(hist);
                        r = -EIO;
                        break;
                }
                r = plot_data_add(d, (int)cpu, hist, timeline);
                json_decref(hist);
                json_decref(timeline);
                if (r < 0) {
                        ctl_fail("CPU %lld: %s", (long long)cpu,
                                 r == -ENOMEM ? "out of memory" : "malformed reply from jitterd");
                        break;
                }
        }
        gethostname(host, sizeof(host) - 1);
        snprintf(title, title_size, "jitterd on %s, window %s", host,
                 json_read_string_or(json_array_get(json_object_get(stats, "cpus"), 0), "window",
                                     window));
        json_decref(stats);
        return r;
}

/* The files of `plot`: the SVG to write and the snapshot to read (NULL: ask the daemon). */
typedef struct PlotFiles {
        const char *svg, *snapshot;
} PlotFiles;

static int plot_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        PlotFiles *files = userdata;

        (void)ctl, (void)cmd;
        *(c == 'o' ? &files->svg : &files->snapshot) = optarg;
        return CTL_CONTINUE;
}

int cmd_plot(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"svg", required_argument, NULL, 'o'},
                {"snapshot", required_argument, NULL, 'S'},
                {},
        };
        const char *window = "all";
        PlotFiles files = {0};
        json_t *cpus = NULL;
        const CtlOptions options = {
                .short_options = "o:S:",
                .long_options = own,
                .parse = plot_option,
                .userdata = &files,
                .window = &window,
                .cpus = &cpus,
        };
        const char *svg, *snapshot;
        PlotData d = {0};
        char title[512];
        FILE *f;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        svg = files.svg;
        snapshot = files.snapshot;
        if (!svg) {
                json_decref(cpus);
                return ctl_usage_error(cmd, "--svg FILE is required");
        }
        if (snapshot) {
                r = plot_from_snapshot(snapshot, cpus, &d, title, sizeof(title));
        } else {
                r = plot_from_daemon(ctl, window, cpus, &d, title, sizeof(title));
        }
        json_decref(cpus);
        if (r < 0) {
                plot_data_done(&d);
                return CTL_EXIT_FAILURE;
        }
        if (d.n == 0) {
                plot_data_done(&d);
                return ctl_fail("no CPU to plot");
        }
        f = strcmp(svg, "-") == 0 ? stdout : fopen(svg, "we");
        if (!f) {
                plot_data_done(&d);
                return ctl_fail("cannot create %s: %s", svg, strerror(errno));
        }
        r = svg_plot_write(f, title, d.series, d.n);
        if (f != stdout && fclose(f) != 0) {
                r = -EIO;
        }
        plot_data_done(&d);
        if (r < 0) {
                return ctl_fail("cannot write %s: %s", svg, strerror(-r));
        }
        return CTL_EXIT_OK;
}

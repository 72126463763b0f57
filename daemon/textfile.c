/* The daemon's node_exporter textfile: the Prometheus exposition of its own replies, written
 * anew after every harvest. */

#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "atomic-file.h"
#include "log.h"
#include "prometheus.h"
#include "util.h"

struct Textfile {
        Manager *manager;
        bool failing;               /* an error was logged; log again only once it recovers */
        uint64_t written_ns;        /* CLOCK_MONOTONIC of the last write; 0: none yet */
        char path[CONFIG_PATH_MAX]; /* where it was last written */
};

typedef struct NewestPoint {
        HistoryPoint point;
        bool found;
} NewestPoint;

static int keep_newest(const HistoryPoint *pt, void *userdata)
{
        NewestPoint *n = userdata;

        /* Points come oldest first. The attribution pointer dies with the callback. */
        n->point = *pt;
        n->point.attrib = NULL;
        n->found = true;
        return 0;
}

/* The newest interval of each CPU, as GetTimeline shows it (a stalled interval's worst gap is
 * the whole interval), so that jitterctl export gets the same from the daemon's replies. */
static json_t *export_intervals_last(const Manager *m)
{
        const char *window = prometheus_interval_window(manager_config(m)->history_interval_ns);
        json_t *arr = json_array();
        uint64_t from, to;
        bool all;

        if (!arr || api_window(window, &from, &to, &all) < 0) {
                return arr;
        }
        for (size_t i = 0; i < manager_n_probes(m); i++) {
                NewestPoint n = {.found = false};
                const HistoryPoint *pt = &n.point;
                uint64_t max_gap_ns;

                (void)history_foreach_point(manager_history(m), manager_probe_cpu(m, i), from, to,
                                            keep_newest, &n);
                if (!n.found) {
                        continue;
                }
                max_gap_ns = pt->stalled ? pt->duration_ns
                                         : tickconv_to_ns(manager_tickconv(m), pt->max_gap_ticks);
                if (json_array_append_new(
                            arr, json_pack("{si sI sI sI sb}", "cpu", manager_probe_cpu(m, i),
                                           "start_ns", (json_int_t)pt->start_ns, "duration_ns",
                                           (json_int_t)pt->duration_ns, "max_gap_ns",
                                           (json_int_t)max_gap_ns, "stalled", pt->stalled)) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}

/* The "cpus" array of GetStats over @window for the probed CPUs, without the analyses. */
static json_t *export_stats(const Manager *m, const char *window)
{
        cpu_set_t cpus;

        CPU_ZERO(&cpus);
        for (size_t i = 0; i < manager_n_probes(m); i++) {
                CPU_SET(manager_probe_cpu(m, i), &cpus);
        }
        return api_stats(m, &cpus, window);
}

static int export_render(const Manager *m, FILE *f)
{
        /* Without the isolation: the exposition has none, and reading it walks every cpuset
         * directory. */
        json_auto_t *status = api_status(m, NULL);
        json_auto_t *stats_all = export_stats(m, "all");
        json_auto_t *stats_1m = export_stats(m, "1m");
        json_auto_t *intervals = export_intervals_last(m);
        json_auto_t *histograms = json_array();

        if (!status || !stats_all || !stats_1m || !intervals || !histograms) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < manager_n_probes(m); i++) {
                if (json_array_append_new(histograms, api_histogram(m, manager_probe_cpu(m, i),
                                                                    "all", "gap")) < 0) {
                        return -ENOMEM;
                }
        }
        return prometheus_render(f, status, stats_all, stats_1m, intervals, histograms);
}

static int write_exposition(FILE *f, void *userdata)
{
        return export_render(userdata, f);
}

/* Replaces @path atomically: node_exporter reads the file at any moment and must see either
 * the previous or the new content. The temporary file sits in the same directory under a name
 * that does not end in .prom, which the textfile collector would otherwise read half-written;
 * it is readable by the node_exporter's user whatever our umask is. Neither the file nor the
 * directory is synced: node_exporter reads the newest, the next is an interval away, and the
 * loop must not wait for the disk each interval. */
static int export_write_atomic(Manager *m, const char *path)
{
        char tmp[CONFIG_PATH_MAX + 16], dir[CONFIG_PATH_MAX], base[CONFIG_PATH_MAX];
        _cleanup_close_ int dfd = -1;
        const char *name;

        snprintf(dir, sizeof(dir), "%s", path);
        snprintf(base, sizeof(base), "%s", path);
        name = basename(base);
        if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= sizeof(tmp)) {
                return -ENAMETOOLONG;
        }
        dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                return -errno;
        }
        return atomic_file_write(dfd, tmp, name, 0644, ATOMIC_SYNC_NONE, write_exposition, m);
}

int textfile_write(Textfile *t)
{
        Manager *m = t->manager;
        const char *path = manager_config(m)->export_prometheus_textfile;
        int r;

        if (!path[0]) {
                return 0;
        }
        r = export_write_atomic(m, path);
        /* Logged once per episode: the file is rewritten every prometheus_textfile_interval,
         * and measuring goes on whether or not it can be. */
        if (r < 0 && !t->failing) {
                log_error("cannot write the Prometheus textfile %s: %s", path, strerror(-r));
                t->failing = true;
        } else if (r >= 0 && t->failing) {
                log_notice("writing the Prometheus textfile %s again", path);
                t->failing = false;
        }
        return r;
}

/* Whether the harvest at @now_ns writes the textfile: the first one does, and the first one
 * after a reload that changed the path, then one each prometheus_textfile_interval. Half an
 * interval of slack keeps the writes from slipping a whole interval when the harvests come a
 * little early. */
static bool textfile_due(const Textfile *t, const char *path, uint64_t now_ns)
{
        const Config *c = manager_config(t->manager);

        return t->written_ns == 0 || strcmp(path, t->path) != 0 ||
               now_ns + c->history_interval_ns / 2 >=
                       t->written_ns + c->export_prometheus_textfile_interval_ns;
}

static void on_harvest(Manager *m, void *userdata)
{
        Textfile *t = userdata;
        const char *path = manager_config(m)->export_prometheus_textfile;
        uint64_t now = now_ns(CLOCK_MONOTONIC);

        if (!path[0] || !textfile_due(t, path, now)) {
                return;
        }
        t->written_ns = now;
        snprintf(t->path, sizeof(t->path), "%s", path);
        (void)textfile_write(t);
}

int textfile_new(Manager *m, Textfile **ret)
{
        _cleanup_free_ Textfile *t = calloc(1, sizeof(*t));
        int r;

        if (!t) {
                return -ENOMEM;
        }
        t->manager = m;
        r = manager_add_hooks(m, &(ManagerHooks){.harvest = on_harvest, .userdata = t});
        if (r < 0) {
                return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

Textfile *textfile_free(Textfile *t)
{
        free(t);
        return NULL;
}

/* jitterctl snapshot: everything the daemon knows, saved as one JSON document, and the reader of
 * such a document (for compare). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "summary-json.h"
#include "util.h"

#define SNAPSHOT_FORMAT "jitterd-snapshot"
#define SNAPSHOT_VERSION 1

static json_t *now_iso8601(void)
{
        struct timespec ts;
        struct tm tm;
        char buf[64];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%09ldZ", ts.tv_nsec);
        return json_string(buf);
}

/* GetTimeline for the longest window the daemon has: "all", or "24h" where "all" is not
 * offered for timelines. */
static int get_timeline(Ctl *ctl, json_int_t cpu, json_t **ret)
{
        json_t *error_params = NULL;
        char *error = NULL;
        char msg[256];
        int r;

        r = ctl_call_full(ctl, "GetTimeline", json_pack("{s:I, s:s}", "cpu", cpu, "window", "all"),
                          ret, &error, &error_params, true);
        if (r == -EREMOTEIO && strcmp(error, "io.jitterd.InvalidWindow") == 0) {
                r = ctl_call(ctl, "GetTimeline",
                             json_pack("{s:I, s:s}", "cpu", cpu, "window", "24h"), ret);
        } else if (r == -EREMOTEIO) {
                fprintf(stderr, "jitterctl: %s\n",
                        format_error(msg, sizeof(msg), error, error_params));
        }
        free(error);
        json_decref(error_params);
        return r;
}

static int snapshot_build(Ctl *ctl, json_t **ret)
{
        json_t *doc, *status = NULL, *stats = NULL, *cpus, *s;
        size_t i;

        if (ctl_call(ctl, "GetStatus", NULL, &status) < 0) {
                return -EIO;
        }
        if (ctl_get_stats(ctl, json_pack("{s:s}", "window", "all"), false, &stats) < 0) {
                json_decref(status);
                return -EIO;
        }
        doc = json_pack("{s:s, s:i, s:o, s:s, s:O, s:[]}", "format", SNAPSHOT_FORMAT, "version",
                        SNAPSHOT_VERSION, "created", now_iso8601(), "socket", ctl->socket_path,
                        "status", status, "cpus");
        json_decref(status);
        if (!doc) {
                json_decref(stats);
                return -ENOMEM;
        }
        cpus = json_object_get(doc, "cpus");
        json_array_foreach(json_object_get(stats, "cpus"), i, s)
        {
                json_t *gap = NULL, *dd = NULL, *timeline = NULL, *entry;
                json_int_t cpu;
                CpuStats st;

                (void)cpu_stats_read(s, &st);
                if (!(st.have & CPU_STATS_CPU)) {
                        continue;
                }
                cpu = (json_int_t)st.cpu;
                if (ctl_call(ctl, "GetHistogram",
                             json_pack("{s:I, s:s, s:s}", "cpu", cpu, "window", "all", "kind",
                                       "gap"),
                             &gap) < 0 ||
                    ctl_call(ctl, "GetHistogram",
                             json_pack("{s:I, s:s, s:s}", "cpu", cpu, "window", "all", "kind",
                                       "diffdiff"),
                             &dd) < 0 ||
                    get_timeline(ctl, cpu, &timeline) < 0) {
                        json_decref(gap);
                        json_decref(dd);
                        json_decref(stats);
                        json_decref(doc);
                        return -EIO;
                }
                entry = json_pack("{s:I, s:O, s:o, s:o, s:o}", "cpu", cpu, "stats", s, "histogram",
                                  gap, "diffdiff_histogram", dd, "timeline", timeline);
                if (!entry || json_array_append_new(cpus, entry) < 0) {
                        json_decref(stats);
                        json_decref(doc);
                        return -ENOMEM;
                }
        }
        json_decref(stats);
        *ret = doc;
        return 0;
}

/* --output FILE (-o): into @userdata, a const char *. */
static int snapshot_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        (void)ctl, (void)cmd, (void)c;
        *(const char **)userdata = optarg;
        return CTL_CONTINUE;
}

int cmd_snapshot(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"output", required_argument, NULL, 'o'},
                {},
        };
        const char *output = NULL;
        const CtlOptions options = {
                .short_options = "o:",
                .long_options = own,
                .parse = snapshot_option,
                .userdata = &output,
        };
        json_t *doc = NULL;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        r = snapshot_build(ctl, &doc);
        if (r == -ENOMEM) {
                return ctl_fail("out of memory");
        }
        if (r < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (output && strcmp(output, "-") != 0) {
                r = json_dump_file(doc, output, JSON_INDENT(1));
                json_decref(doc);
                if (r < 0) {
                        return ctl_fail("cannot write %s: %s", output, strerror(errno));
                }
                return CTL_EXIT_OK;
        }
        r = ctl_print_json(doc);
        json_decref(doc);
        return r;
}

json_t *snapshot_load(const char *path)
{
        json_error_t e;
        json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
        json_int_t version;

        if (!doc) {
                if (e.line > 0) {
                        ctl_fail("cannot read %s: %s (line %d)", path, e.text, e.line);
                } else {
                        ctl_fail("cannot read %s: %s", path, e.text);
                }
                return NULL;
        }
        if (!json_is_object(doc) ||
            strcmp(json_read_string_or(doc, "format", ""), SNAPSHOT_FORMAT) != 0 ||
            !json_is_array(json_object_get(doc, "cpus"))) {
                ctl_fail("%s is not a jitterctl snapshot", path);
                json_decref(doc);
                return NULL;
        }
        version = json_integer_value(json_object_get(doc, "version"));
        if (version < 1 || version > SNAPSHOT_VERSION) {
                ctl_fail("%s is a snapshot of format version %lld; this jitterctl reads up to %d",
                         path, (long long)version, SNAPSHOT_VERSION);
                json_decref(doc);
                return NULL;
        }
        return doc;
}

/* jitterctl events: the recorded interruptions (GetEvents), each with its main cause when the
 * trace gave one; with --records, the trace kept around the long ones (GetCaptures), as a
 * timeline per interruption, each record's time relative to the interruption's start. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "util.h"

/* The records of a capture within this of an interruption are shown with it, as the daemon
 * keeps them (CAPTURE_MARGIN_NS). */
#define MARGIN_NS 10000000LL

/* "+1.25ms", "-9.80ms", "+0ns". */
static const char *format_offset(char *buf, size_t size, int64_t ns)
{
        char v[FORMAT_MAX];

        snprintf(buf, size, "%s%s", ns < 0 ? "-" : "+",
                 format_ns(v, sizeof(v), (double)(ns < 0 ? -ns : ns)));
        return buf;
}

/* One interruption @in of capture @cap: a heading, then the capture's records from MARGIN_NS
 * before its start to MARGIN_NS after its end. */
static void print_interruption(const Ctl *ctl, json_t *cap, json_t *in)
{
        uint64_t cpu = 0, start = 0, dur = 0, from = 0, to = 0, dropped = 0;
        char d[FORMAT_MAX], off[FORMAT_MAX + 2];
        json_t *rec;
        size_t i, shown = 0;

        json_read_u64(in, "cpu", &cpu);
        json_read_u64(in, "start_ns", &start);
        json_read_u64(in, "duration_ns", &dur);
        json_read_u64(cap, "from_ns", &from);
        json_read_u64(cap, "to_ns", &to);
        json_read_u64(cap, "records_dropped", &dropped);
        printf("%sCPU %" PRIu64 " interrupted for %s, capture %s (%s%s)%s\n",
               ctl_color(ctl, CTL_BOLD), cpu, format_ns(d, sizeof(d), (double)dur),
               json_read_string_or(cap, "realtime", "?"),
               format_offset(off, sizeof(off), (int64_t)(from - start)),
               json_is_false(json_object_get(cap, "complete")) ? ", incomplete" : "",
               ctl_color(ctl, CTL_RESET));
        printf("  %10s  %4s  %-12s  %-34s  %10s\n", "OFFSET", "CPU", "KIND", "NAME", "DURATION");
        json_array_foreach(json_object_get(cap, "records"), i, rec)
        {
                uint64_t ns = 0, rcpu = 0, rd = 0;
                int64_t rel;

                json_read_u64(rec, "ns", &ns);
                rel = (int64_t)(ns - start);
                if (rel < -MARGIN_NS || rel > (int64_t)dur + MARGIN_NS) {
                        continue;
                }
                json_read_u64(rec, "cpu", &rcpu);
                /* Padded by width, not bytes: "µs" is two bytes and one column. */
                fputs("  ", stdout);
                fput_padded(stdout, format_offset(off, sizeof(off), rel), 10);
                printf("  %4" PRIu64 "  %-12s  %-34s  ", rcpu,
                       json_read_string_or(rec, "kind", "?"),
                       json_read_string_or(rec, "name", "?"));
                fput_padded(stdout,
                            json_read_u64(rec, "duration_ns", &rd) == 0
                                    ? format_ns(d, sizeof(d), (double)rd)
                                    : "-",
                            10);
                fputc('\n', stdout);
                shown++;
        }
        if (shown == 0) {
                printf("  (no trace record within 10 ms of it)\n");
        }
        if (dropped) {
                printf("  (%" PRIu64 " records of the capture farthest from its interruptions "
                       "were not kept)\n",
                       dropped);
        }
        fputc('\n', stdout);
}

/* `events --records`: calls GetCaptures with @params (taken) and prints the trace kept around
 * each interruption at least @min_ns long, as a timeline. Returns the exit status. */
static int event_records(Ctl *ctl, json_t *params, uint64_t min_ns)
{
        json_t *reply = NULL, *captures, *cap, *in;
        size_t i, j, n = 0;
        uint64_t more = 0;

        if (ctl_call(ctl, "GetCaptures", params, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        captures = json_object_get(reply, "captures");
        if (ctl->json) {
                int r = ctl_print_json(reply);

                json_decref(reply);
                return r;
        }
        json_array_foreach(captures, i, cap)
        {
                json_array_foreach(json_object_get(cap, "interruptions"), j, in)
                {
                        uint64_t dur = 0;

                        if (json_read_u64(in, "duration_ns", &dur) == 0 && dur >= min_ns) {
                                print_interruption(ctl, cap, in);
                                n++;
                        }
                }
                if (json_read_u64(cap, "more_interruptions", &more) == 0 && more > 0) {
                        printf("(%" PRIu64 " more interruptions in the capture %s)\n\n", more,
                               json_read_string_or(cap, "file", "?"));
                }
        }
        if (n == 0) {
                printf("(no trace captures kept%s; see [trace] keep_above in jitterd.conf(5))\n",
                       json_array_size(captures) ? " that match" : "");
        }
        if (json_is_true(json_object_get(reply, "truncated"))) {
                printf("(older captures left out: use --since or --limit)\n");
        }
        json_decref(reply);
        return CTL_EXIT_OK;
}

#define CAUSE_TEXT_MAX 96

/* The main cause of @e with the entry and exit charged to it ("task thief:4242 812us + 4.1us
 * in/out"), "(no record: hardware, firmware or hypervisor)" when no trace record lies inside
 * it, "(unexplained)" when the records name nothing; "" when the trace gave none. */
static const char *main_cause(json_t *e, char *buf, size_t size)
{
        json_t *causes = json_object_get(e, "causes"), *c = json_array_get(causes, 0);
        bool lost = json_is_true(json_object_get(e, "trace_lost"));
        char ns[FORMAT_MAX], in_out[FORMAT_MAX + 16] = "";
        uint64_t v = 0, overhead = 0;

        if (!json_is_array(causes)) {
                buf[0] = 0;
                return buf;
        }
        if (!c) {
                snprintf(buf, size, "%s%s",
                         json_read_u64(e, "no_record_ns", &v) == 0 && v > 0
                                 ? "(no record: hardware, firmware or hypervisor)"
                                 : "(unexplained)",
                         lost ? ", records lost" : "");
                return buf;
        }
        json_read_u64(c, "ns", &v);
        if (json_read_u64(c, "overhead_ns", &overhead) == 0 && overhead > 0) {
                snprintf(in_out, sizeof(in_out), " + %s in/out",
                         format_ns(ns, sizeof(ns), (double)overhead));
        }
        snprintf(buf, size, "%s %s %s%s%s", json_read_string_or(c, "kind", "?"),
                 json_read_string_or(c, "name", "?"), format_ns(ns, sizeof(ns), (double)v), in_out,
                 lost ? ", records lost" : "");
        return buf;
}

/* What `events` was asked, besides the CPUs. */
typedef struct EventsArgs {
        const char *since, *min;
        uint64_t min_ns;
        unsigned long long limit; /* 0: the daemon's default */
        bool records;
} EventsArgs;

static int events_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        EventsArgs *a = userdata;
        uint64_t ns;

        (void)ctl;
        switch (c) {
        case 's':
        case 'm':
                if (duration_parse(optarg, NSEC_PER_SEC, &ns) < 0) {
                        return ctl_usage_error(cmd, "invalid duration \"%s\" (e.g. %s)", optarg,
                                               c == 's' ? "10m" : "50us");
                }
                *(c == 's' ? &a->since : &a->min) = optarg;
                a->min_ns = c == 'm' ? ns : a->min_ns;
                break;
        case 'r':
                a->records = true;
                break;
        case 'n':
                if (ctl_parse_uint(optarg, INT32_MAX, &a->limit) < 0 || a->limit == 0) {
                        return ctl_usage_error(cmd, "invalid limit \"%s\"", optarg);
                }
                break;
        }
        return CTL_CONTINUE;
}

/* The parameters of GetEvents, or of GetCaptures with --records, for @a and @cpus (stolen).
 * NULL when out of memory. */
static json_t *events_params(const EventsArgs *a, json_t *cpus)
{
        json_t *params = ctl_window_params(NULL, cpus);

        if (!params) {
                return NULL;
        }
        if (a->since) {
                json_object_set_new(params, "since", json_string(a->since));
        }
        if (a->min && !a->records) {
                json_object_set_new(params, "min_duration", json_string(a->min));
        }
        if (a->limit > 0) {
                /* GetCaptures answers at most 100 captures. */
                json_object_set_new(
                        params, "limit",
                        json_integer((json_int_t)(a->records && a->limit > 100 ? 100 : a->limit)));
        }
        return params;
}

/* Prints the table of @events (an array of GetEvents' events, not empty): time, CPU, duration
 * and, when the daemon traced them, the main cause. */
static void events_print(const Ctl *ctl, json_t *events)
{
        bool traced = false;
        json_t *e;
        size_t i;

        json_array_foreach(events, i, e)
        {
                traced |= json_is_array(json_object_get(e, "causes"));
        }
        printf("%sTIME                        CPU    DURATION%s%s\n", ctl_color(ctl, CTL_BOLD),
               traced ? "  MAIN CAUSE" : "", ctl_color(ctl, CTL_RESET));
        json_array_foreach(events, i, e)
        {
                char when[FORMAT_MAX], dur[FORMAT_MAX], cause[CAUSE_TEXT_MAX];
                struct timespec ts;
                uint64_t cpu = 0, d = 0;

                json_read_u64(e, "cpu", &cpu);
                json_read_u64(e, "duration_ns", &d);
                if (iso8601_parse(json_read_string_or(e, "realtime", NULL), &ts) == 0) {
                        format_local_time(when, sizeof(when), &ts, true);
                } else {
                        snprintf(when, sizeof(when), "%s", json_read_string_or(e, "realtime", "?"));
                }
                printf("%-26s %4llu", when, (unsigned long long)cpu);
                fput_padded(stdout, format_ns(dur, sizeof(dur), (double)d), 12);
                if (traced) {
                        printf("  %s", main_cause(e, cause, sizeof(cause)));
                }
                fputc('\n', stdout);
        }
}

int cmd_events(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"since", required_argument, NULL, 's'},
                {"min", required_argument, NULL, 'm'},
                {"limit", required_argument, NULL, 'n'},
                {"records", no_argument, NULL, 'r'},
                {},
        };
        EventsArgs a = {0};
        json_t *cpus = NULL, *params, *reply = NULL, *events;
        const CtlOptions options = {
                .short_options = "s:m:n:r",
                .long_options = own,
                .parse = events_option,
                .userdata = &a,
                .cpus = &cpus,
        };
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        params = events_params(&a, cpus);
        if (!params) {
                return ctl_fail("out of memory");
        }
        if (a.records) {
                return event_records(ctl, params, a.min_ns);
        }
        if (ctl_call(ctl, "GetEvents", params, &reply) < 0) {
                return CTL_EXIT_FAILURE;
        }
        events = json_object_get(reply, "events");
        if (ctl->json) {
                r = ctl_print_json(json_is_array(events) ? events : reply);
        } else if (json_array_size(events) == 0) {
                printf("(no interruptions recorded%s)\n", a.since || a.min ? " that match" : "");
                r = CTL_EXIT_OK;
        } else {
                events_print(ctl, events);
                r = CTL_EXIT_OK;
        }
        json_decref(reply);
        return r;
}

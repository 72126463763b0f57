/* `jitterctl events --records`: the trace kept around the long interruptions (GetCaptures), as
 * a timeline per interruption, each record's time relative to the interruption's start. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl.h"

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

        json_get_u64(in, "cpu", &cpu);
        json_get_u64(in, "start_ns", &start);
        json_get_u64(in, "duration_ns", &dur);
        json_get_u64(cap, "from_ns", &from);
        json_get_u64(cap, "to_ns", &to);
        json_get_u64(cap, "records_dropped", &dropped);
        printf("%sCPU %" PRIu64 " interrupted for %s, capture %s (%s%s)%s\n",
               ctl_color(ctl, CTL_BOLD), cpu, format_ns(d, sizeof(d), (double)dur),
               json_get_string(cap, "realtime", "?"),
               format_offset(off, sizeof(off), (int64_t)(from - start)),
               json_is_false(json_object_get(cap, "complete")) ? ", incomplete" : "",
               ctl_color(ctl, CTL_RESET));
        printf("  %10s  %4s  %-12s  %-34s  %10s\n", "OFFSET", "CPU", "KIND", "NAME", "DURATION");
        json_array_foreach(json_object_get(cap, "records"), i, rec)
        {
                uint64_t ns = 0, rcpu = 0, rd = 0;
                int64_t rel;

                json_get_u64(rec, "ns", &ns);
                rel = (int64_t)(ns - start);
                if (rel < -MARGIN_NS || rel > (int64_t)dur + MARGIN_NS) {
                        continue;
                }
                json_get_u64(rec, "cpu", &rcpu);
                /* Padded by width, not bytes: "µs" is two bytes and one column. */
                fputs("  ", stdout);
                fput_padded(stdout, format_offset(off, sizeof(off), rel), 10);
                printf("  %4" PRIu64 "  %-12s  %-34s  ", rcpu, json_get_string(rec, "kind", "?"),
                       json_get_string(rec, "name", "?"));
                fput_padded(stdout,
                            json_get_u64(rec, "duration_ns", &rd)
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

int jitterctl_event_records(Ctl *ctl, json_t *params, uint64_t min_ns)
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

                        if (json_get_u64(in, "duration_ns", &dur) && dur >= min_ns) {
                                print_interruption(ctl, cap, in);
                                n++;
                        }
                }
                if (json_get_u64(cap, "more_interruptions", &more) && more > 0) {
                        printf("(%" PRIu64 " more interruptions in the capture %s)\n\n", more,
                               json_get_string(cap, "file", "?"));
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

/* jitterctl doctor: what took the probed CPUs in a window, ranked by the time it took, each
 * with the setting that let it onto the CPU and the exact command that moves it away, from
 * the audit's knowledge of this host (jitterctl-diagnosis.c). It changes nothing. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cpulist.h"
#include "host-audit.h"
#include "jitterctl-diagnosis.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "util.h"

/* The most events GetEvents gives: the newest, to date the tasks and find the kworkers. */
#define DOCTOR_EVENTS_MAX 10000

/* Causes under this share of the time are summed on one line of the text (--all lists them). */
#define DOCTOR_MIN_SHARE 0.001

typedef struct Replies {
        json_t *status, *causes, *stats, *events, *audit;
} Replies;

static void replies_done(Replies *r)
{
        json_decref(r->status);
        json_decref(r->causes);
        json_decref(r->stats);
        json_decref(r->events);
        json_decref(r->audit);
}

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC: the time the host was suspended, which /proc/PID/stat's
 * start times count and the daemon's event times do not. */
static int64_t boot_minus_mono_ns(void)
{
        return (int64_t)now_ns(CLOCK_BOOTTIME) - (int64_t)now_ns(CLOCK_MONOTONIC);
}

/* The daemon's probed CPUs, from GetStatus. */
static int probed_cpus(json_t *status, cpu_set_t *ret)
{
        const char *list =
                json_string_value(json_object_get(json_object_get(status, "config"), "cpus"));

        if (!list || cpulist_parse(list, ret) < 0 || CPU_COUNT(ret) == 0) {
                return -EBADMSG;
        }
        return 0;
}

/* The window's figures of one CPU, summed from its timeline (GetTimeline runs none of the
 * analyses GetStats does): {"cpu", "duration_ns", "interruptions": {"count"}, "lost_ns",
 * "cpu_available_pct"}, as GetStats has them. */
static int cpu_figures(Ctl *ctl, json_int_t cpu, const char *window, json_t **ret)
{
        json_auto_t *timeline = NULL;
        uint64_t duration = 0, count = 0, lost = 0, v;
        json_t *p;
        size_t i;

        if (ctl_call(ctl, "GetTimeline", json_pack("{s:I, s:s}", "cpu", cpu, "window", window),
                     &timeline) < 0) {
                return -EIO;
        }
        json_array_foreach(json_object_get(timeline, "points"), i, p)
        {
                duration += json_read_u64(p, "duration_ns", &v) == 0 ? v : 0;
                count += json_read_u64(p, "interruptions", &v) == 0 ? v : 0;
                lost += json_read_u64(p, "lost_ns", &v) == 0 ? v : 0;
        }
        *ret = json_pack("{s:I, s:I, s:{s:I}, s:I, s:o}", "cpu", cpu, "duration_ns",
                         (json_int_t)duration, "interruptions", "count", (json_int_t)count,
                         "lost_ns", (json_int_t)lost, "cpu_available_pct",
                         duration ? json_real(100.0 * (1.0 - (double)lost / (double)duration))
                                  : json_null());
        return *ret ? 0 : -ENOMEM;
}

/* The window's figures of every CPU of GetCauses' reply, into r->stats. */
static int window_figures(Ctl *ctl, const char *window, Replies *r)
{
        json_t *c, *fig;
        size_t i;
        int e;

        r->stats = json_pack("{s:[]}", "cpus");
        if (!r->stats) {
                return -ENOMEM;
        }
        json_array_foreach(json_object_get(r->causes, "cpus"), i, c)
        {
                json_t *cpu = json_object_get(c, "cpu");

                if (!json_is_integer(cpu)) {
                        continue;
                }
                e = cpu_figures(ctl, json_integer_value(cpu), window, &fig);
                if (e < 0) {
                        return e;
                }
                if (json_array_append_new(json_object_get(r->stats, "cpus"), fig) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* The calls: GetStatus, GetCauses over the window and the timelines of its CPUs, the newest
 * events of the window and the audit. Each failure is printed. */
static int call_all(Ctl *ctl, const char *window, json_t *cpus, Replies *r)
{
        json_t *events = json_pack("{s:I}", "limit", (json_int_t)DOCTOR_EVENTS_MAX);
        int e;

        if (!events) {
                return -ENOMEM;
        }
        if (cpus) {
                json_object_set(events, "cpus", cpus);
        }
        if (strcmp(window, "all") != 0) {
                json_object_set_new(events, "since", json_string(window));
        }
        if (ctl_call(ctl, "GetStatus", NULL, &r->status) < 0 ||
            ctl_call(ctl, "GetCauses",
                     cpus ? json_pack("{s:s, s:O}", "window", window, "cpus", cpus)
                          : json_pack("{s:s}", "window", window),
                     &r->causes) < 0) {
                json_decref(events);
                return -EIO;
        }
        e = window_figures(ctl, window, r);
        if (e < 0) {
                json_decref(events);
                return e;
        }
        if (ctl_call(ctl, "GetEvents", events, &r->events) < 0 ||
            ctl_call(ctl, "Audit", NULL, &r->audit) < 0) {
                return -EIO;
        }
        return 0;
}

/* --all (-a): every cause, into @userdata, the smallest share listed. */
static int doctor_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        (void)ctl, (void)cmd, (void)c;
        *(double *)userdata = 0;
        return CTL_CONTINUE;
}

int cmd_doctor(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"cpus", required_argument, NULL, 'c'},
                {"all", no_argument, NULL, 'a'},
                {},
        };
        const char *window = "1m";
        json_t *cpus = NULL, *d = NULL;
        double min_share = DOCTOR_MIN_SHARE;
        const CtlOptions options = {
                .short_options = "a",
                .long_options = own,
                .parse = doctor_option,
                .userdata = &min_share,
                .window = &window,
                .cpus = &cpus,
        };
        __attribute__((cleanup(replies_done))) Replies r = {0};
        __attribute__((cleanup(host_audit_freep))) AuditFacts *facts = NULL;
        __attribute__((cleanup(audit_freep))) Audit *host = NULL;
        cpu_set_t probed;
        int e;

        e = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (e != CTL_CONTINUE) {
                return e;
        }
        e = call_all(ctl, window, cpus, &r);
        json_decref(cpus);
        if (e < 0) {
                return e == -ENOMEM ? ctl_fail("out of memory") : CTL_EXIT_FAILURE;
        }
        if (probed_cpus(r.status, &probed) < 0) {
                return ctl_fail("the daemon's status names no probed CPUs");
        }
        /* The housekeeping CPUs and the host's settings, read here: jitterd runs on this
         * host (its socket is local). */
        e = host_audit_gather(NULL, &probed, HOST_AUDIT_REMEDIES, &facts);
        e = e < 0 ? e : audit_new(facts, NULL, &host);
        if (e < 0) {
                return ctl_fail("cannot read this host's settings: %s", strerror(-e));
        }
        DiagnosisInput in = {
                .window = window,
                .causes = r.causes,
                .stats = r.stats,
                .events = r.events,
                .findings = r.audit,
                .host = host,
                .boot_minus_mono_ns = boot_minus_mono_ns(),
        };
        e = diagnosis_build(&in, &d);
        if (e < 0) {
                return ctl_fail("cannot make the diagnosis: %s", strerror(-e));
        }
        if (strcmp(json_read_string_or(r.causes, "trace", ""), "recording") != 0) {
                fprintf(stderr,
                        "jitterctl: the daemon's trace is %s: without it no cause is "
                        "named ([trace] enabled = yes in jitterd.conf)\n",
                        json_read_string_or(r.causes, "trace", "unknown"));
        }
        if (ctl->json) {
                e = ctl_print_json(d);
        } else {
                diagnosis_print(d, stdout, min_share, ctl->color);
                e = CTL_EXIT_OK;
        }
        json_decref(d);
        return e;
}

/* GetStats with the analyses jitterd leaves to its clients: each CPU's causes, background and
 * periods, worked out here from GetWindow, at low priority and away from the probed CPUs. */

#include "jitterctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cpulist.h"
#include "host.h"
#include "jitterctl-format.h"
#include "jitterctl-window.h"
#include "json-read.h"

/* Takes the CPUs of the cpulist file @path (absent or empty: none) out of @set. */
static void remove_cpulist_file(const char *path, cpu_set_t *set)
{
        cpu_set_t listed;

        if (host_read_cpulist(NULL, path, &listed) == 0) {
                for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                        if (CPU_ISSET(cpu, &listed)) {
                                CPU_CLR(cpu, set);
                        }
                }
        }
}

/* Moves this process to the daemon's housekeeping CPUs (those it may run on, neither probed,
 * as GetStatus has the probes, nor isolated, at boot or as nohz_full) and lowers its priority
 * to nice 10, or 19 where a probe shares the scheduler with them (a probe on a CPU that is not
 * isolated): the searches take a third of a second a CPU, and must not become the noise they
 * measure. Once per process. Returns 0, or -ESRCH when no CPU is left: the analyses are then
 * not worked out, which a note on stderr says. */
static int lower_priority(Ctl *ctl)
{
        static bool done;
        json_t *status = NULL, *p;
        cpu_set_t set;
        int nice_to = 10, cur;
        size_t i;

        if (done) {
                return 0;
        }
        if (ctl_call(ctl, "GetStatus", NULL, &status) < 0) {
                return -EREMOTEIO;
        }
        if (sched_getaffinity(0, sizeof(set), &set) < 0) {
                CPU_ZERO(&set);
        }
        json_array_foreach(json_object_get(status, "probes"), i, p)
        {
                json_int_t cpu = json_integer_value(json_object_get(p, "cpu"));

                if (cpu >= 0 && cpu < CPU_SETSIZE) {
                        CPU_CLR((int)cpu, &set);
                }
                if (strcmp(json_read_string_or(p, "isolation", "none"), "none") == 0) {
                        nice_to = 19;
                }
        }
        json_decref(status);
        remove_cpulist_file("/sys/devices/system/cpu/isolated", &set);
        remove_cpulist_file("/sys/devices/system/cpu/nohz_full", &set);
        if (CPU_COUNT(&set) == 0 || sched_setaffinity(0, sizeof(set), &set) < 0) {
                fprintf(stderr, "jitterctl: no causes or periods: every CPU jitterctl may run on "
                                "is probed or isolated, and they are not worked out there\n");
                return -ESRCH;
        }
        errno = 0;
        cur = getpriority(PRIO_PROCESS, 0);
        if (errno == 0 && cur < nice_to) {
                (void)setpriority(PRIO_PROCESS, 0, nice_to);
        }
        done = true;
        return 0;
}

int ctl_get_stats(Ctl *ctl, json_t *params, bool analyses, json_t **ret)
{
        const char *window = json_read_string_or(params, "window", "1m");
        unsigned online = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
        json_t *reply = NULL, *error_params = NULL, *e;
        char win[16], msg[512], *error = NULL;
        size_t i;
        int r;

        snprintf(win, sizeof(win), "%s", window);
        if (!params) {
                params = json_object();
        }
        if (json_object_set_new(params, "without_analyses", json_true()) < 0) {
                json_decref(params);
                return -ENOMEM;
        }
        r = ctl_call_full(ctl, "GetStats", params, &reply, &error, &error_params, true);
        if (r == -EREMOTEIO) {
                /* A jitterd older than this interface refuses the parameter. */
                if (strcmp(error, "org.varlink.service.InvalidParameter") == 0 &&
                    strcmp(json_read_string_or(error_params, "parameter", ""),
                           "without_analyses") == 0) {
                        ctl_fail("GetStats does not take without_analyses (is jitterd older "
                                 "than jitterctl?)");
                } else {
                        ctl_fail("%s", format_error(msg, sizeof(msg), error, error_params));
                }
                free(error);
                json_decref(error_params);
                return r;
        }
        if (r < 0 || !analyses) {
                *ret = reply;
                return r;
        }
        r = lower_priority(ctl);
        if (r == -ESRCH) {
                *ret = reply;
                return 0;
        }
        json_array_foreach(json_object_get(reply, "cpus"), i, e)
        {
                json_t *w = NULL;

                if (r < 0) {
                        break;
                }
                r = ctl_call(ctl, "GetWindow",
                             json_pack("{sO ss}", "cpu", json_object_get(e, "cpu"), "window", win),
                             &w);
                if (r == 0 && (r = window_analyses_add(w, online, e)) < 0) {
                        ctl_fail("cannot work out the causes and periods of CPU %lld: %s",
                                 (long long)json_integer_value(json_object_get(e, "cpu")),
                                 r == -EINVAL ? "GetWindow's reply is not valid" : strerror(-r));
                }
                json_decref(w);
        }
        if (r < 0) {
                json_decref(reply);
                return r;
        }
        *ret = reply;
        return 0;
}

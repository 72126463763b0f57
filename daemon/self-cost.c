/* The daemon's own cost: its threads' CPU time beyond the probes. */

#include "self-cost.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "util.h"

/* The CPU clock of thread @tid of this process, as pthread_getcpuclockid() makes it from a
 * pthread_t: the kernel's encoding of a per-thread scheduler clock. */
static clockid_t thread_clock(int tid)
{
        return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static bool is_skipped(int tid, const int *skip, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (skip[i] == tid) {
                        return true;
                }
        }
        return false;
}

/* The CPU time in ns of the calling process' live threads whose ids are not among the @n in
 * @skip_tids, and how many threads that was in *@ret_threads. Returns 0 or a negative errno
 * (/proc unreadable). */
static int self_cost_cpu_ns(const int *skip_tids, size_t n, uint64_t *ret_ns, unsigned *ret_threads)
{
        /* Opened once and read again from the start each time: an open and a 32 KiB buffer
         * per GetStatus cost more than the read (a fifth of the call). The loop thread alone
         * calls this. /proc/self is the process that opened it: opened again in a child. */
        static DIR *d;
        static pid_t opened_by;
        struct dirent *de;
        uint64_t sum = 0;
        unsigned threads = 0;

        if (d && opened_by != getpid()) {
                closedir(d);
                d = NULL;
        }
        if (!d) {
                d = opendir("/proc/self/task");
                if (!d) {
                        return -errno;
                }
                opened_by = getpid();
        }
        rewinddir(d);
        /* A thread that ended took its time along: only live threads are counted, as a reader
         * of /proc/PID/task/ sees them too. */
        while ((de = readdir(d))) {
                char *end;
                long tid = strtol(de->d_name, &end, 10);
                struct timespec ts;

                if (de->d_name[0] == '.' || *end != '\0' || tid <= 0 || tid > INT32_MAX ||
                    is_skipped((int)tid, skip_tids, n)) {
                        continue;
                }
                if (clock_gettime(thread_clock((int)tid), &ts) < 0) {
                        continue; /* it ended meanwhile */
                }
                sum += timespec_ns(&ts);
                threads++;
        }
        *ret_ns = sum;
        *ret_threads = threads;
        return 0;
}

int self_cost_read(const Manager *m, uint64_t *ret_ns, unsigned *ret_threads)
{
        int tids[CPU_SETSIZE];
        size_t n = 0;

        for (size_t i = 0; i < manager_n_probes(m) && n < CPU_SETSIZE; i++) {
                ProbeInfo info;

                manager_probe_info(m, i, &info);
                if (info.probe && probe_tid(info.probe) > 0) {
                        tids[n++] = probe_tid(info.probe);
                }
        }
        return self_cost_cpu_ns(tids, n, ret_ns, ret_threads);
}

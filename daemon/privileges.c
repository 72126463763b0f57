#include "privileges.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>

static bool has_flag(int cap, cap_flag_t flag)
{
        cap_t caps = cap_get_proc();
        cap_flag_value_t v = CAP_CLEAR;

        if (!caps) {
                return false;
        }
        cap_get_flag(caps, (cap_value_t)cap, flag, &v);
        cap_free(caps);
        return v == CAP_SET;
}

bool privileges_have(int cap)
{
        return has_flag(cap, CAP_EFFECTIVE);
}

static bool privileges_permitted(int cap)
{
        return has_flag(cap, CAP_PERMITTED);
}

/* Checks that SCHED_FIFO at @priority is allowed, for @what, set by @key in [@section]. */
static int check_fifo(unsigned priority, const char *what, const char *section, const char *key,
                      char **ret_error)
{
        struct rlimit rl = {0};

        if (priority == 0 || privileges_have(CAP_SYS_NICE)) {
                return 0;
        }
        if (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur >= priority) {
                return 0;
        }
        if (asprintf(ret_error,
                     "SCHED_FIFO priority %u for %s needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %u "
                     "(now %llu): run as root, add AmbientCapabilities=CAP_SYS_NICE or "
                     "LimitRTPRIO=%u to the unit, or set %s = 0 in [%s]",
                     priority, what, priority, (unsigned long long)rl.rlim_cur, priority, key,
                     section) < 0) {
                *ret_error = NULL;
        }
        return -EPERM;
}

int privileges_check(unsigned priority, unsigned loop_priority, char **ret_error)
{
        struct rlimit rl;
        int r;

        r = check_fifo(priority, "the probes", "probe", "priority", ret_error);
        if (r < 0) {
                return r;
        }
        r = check_fifo(loop_priority, "the event loop", "server", "loop_priority", ret_error);
        if (r < 0) {
                return r;
        }
        if (!privileges_have(CAP_IPC_LOCK)) {
                if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur != RLIM_INFINITY) {
                        if (asprintf(ret_error,
                                     "locking memory (mlockall) needs CAP_IPC_LOCK or an unlimited "
                                     "RLIMIT_MEMLOCK (now %llu bytes): run as root, add "
                                     "AmbientCapabilities=CAP_IPC_LOCK or LimitMEMLOCK=infinity to "
                                     "the unit, or 'ulimit -l unlimited'",
                                     (unsigned long long)rl.rlim_cur) < 0) {
                                *ret_error = NULL;
                        }
                        return -EPERM;
                }
        }
        return 0;
}

int privileges_lock_memory(void)
{
        struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};

        /* Best effort: with the limit lifted, memory allocated after the capability is gone is
         * still locked instead of failing. */
        if (privileges_have(CAP_IPC_LOCK)) {
                (void)setrlimit(RLIMIT_MEMLOCK, &rl);
        }
        if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
                return -errno;
        }
        /* Memory once taken stays: handing it back (munmap of a large block, trimming the
         * heap) makes the kernel flush the TLB of every CPU that runs a thread of this
         * process, and that interrupt lands on the probes. Large blocks come from the heap
         * instead of their own mappings, and the heap is never trimmed. One heap for every
         * thread: another thread's arena would be a heap of its own,
         * given back when emptied. (An allocator other than glibc's, a sanitizer's, ignores
         * this.) */
        (void)mallopt(M_MMAP_MAX, 0);
        (void)mallopt(M_TRIM_THRESHOLD, -1);
        (void)mallopt(M_ARENA_MAX, 1);
        return 0;
}

int privileges_drop(bool keep_nice, bool keep_dac)
{
        cap_t caps = cap_init();
        cap_value_t nice = CAP_SYS_NICE, dac = CAP_DAC_OVERRIDE;
        struct rlimit rl;
        int r = 0;

        if (!caps) {
                return -ENOMEM;
        }
        /* Keep CAP_IPC_LOCK only if the memory lock limit could not be lifted, since future
         * allocations would then fail without it. */
        if (keep_nice) {
                cap_set_flag(caps, CAP_PERMITTED, 1, &nice, CAP_SET);
                cap_set_flag(caps, CAP_EFFECTIVE, 1, &nice, CAP_SET);
        }
        if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            privileges_have(CAP_IPC_LOCK)) {
                cap_value_t lock = CAP_IPC_LOCK;

                cap_set_flag(caps, CAP_PERMITTED, 1, &lock, CAP_SET);
                cap_set_flag(caps, CAP_EFFECTIVE, 1, &lock, CAP_SET);
        }
        /* Permitted only: a tracefs instance belongs to root, and a daemon of another user
         * needs the capability to remove it at stop and to make it at a reload, also one that
         * turns tracing on. */
        if (keep_dac && privileges_permitted(CAP_DAC_OVERRIDE)) {
                cap_set_flag(caps, CAP_PERMITTED, 1, &dac, CAP_SET);
        }
        if (cap_set_proc(caps) < 0) {
                r = -errno;
        }
        cap_free(caps);
        return r;
}

void privileges_dac(bool on)
{
        cap_t caps;
        cap_value_t dac = CAP_DAC_OVERRIDE;

        if (!privileges_permitted(CAP_DAC_OVERRIDE)) {
                return;
        }
        caps = cap_get_proc();
        if (caps) {
                cap_set_flag(caps, CAP_EFFECTIVE, 1, &dac, on ? CAP_SET : CAP_CLEAR);
                (void)cap_set_proc(caps);
                cap_free(caps);
        }
}

void privileges_thread_init(void *userdata)
{
        sigset_t all;
        cap_t none = cap_init();

        (void)userdata;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        if (none) {
                /* Pinning and the scheduling policy are set; nothing more is needed. */
                (void)cap_set_proc(none);
                cap_free(none);
        }
}

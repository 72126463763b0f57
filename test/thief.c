#include "thief.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

static uint64_t thread_cpu_ns(void)
{
        return now_ns(CLOCK_THREAD_CPUTIME_ID);
}

int thief_run(int cpu, int priority, uint64_t first_ns, uint64_t period_ns,
              const uint64_t *durations_ns, size_t n, Theft *ret)
{
        struct sched_param sp = {.sched_priority = priority};
        cpu_set_t set;
        int r;

        /* SCHED_FIFO first: a thread that reaches a CPU where a SCHED_FIFO probe spins as
         * SCHED_OTHER waits there until the scheduler lends the CPU to its class (up to a
         * second: RT throttling, the fair server). */
        r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (r != 0) {
                return -r;
        }
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                return -errno;
        }
        for (size_t k = 0; k < n; k++) {
                uint64_t at = first_ns + k * period_ns, now;
                struct timespec ts = {(time_t)(at / 1000000000ULL), (long)(at % 1000000000ULL)};

                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
                }
                ret[k].due_ns = at;
                ret[k].gaps_ns = 0;
                ret[k].cpu_ns = thread_cpu_ns();
                ret[k].start_ns = now = now_ns(CLOCK_MONOTONIC);
                while (now - ret[k].start_ns < durations_ns[k]) {
                        uint64_t prev = now;

                        now = now_ns(CLOCK_MONOTONIC);
                        if (now - prev >= THIEF_GAP_NS) {
                                ret[k].gaps_ns += now - prev;
                        }
                }
                ret[k].end_ns = now;
                ret[k].cpu_ns = thread_cpu_ns() - ret[k].cpu_ns;
        }
        sp.sched_priority = 0;
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
        return 0;
}

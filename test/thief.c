#include "thief.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t thread_cpu_ns(void)
{
        return now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Pins the calling thread to @cpu at SCHED_FIFO @priority. Returns 0 or a negative errno. */
static int pin_fifo(int cpu, int priority)
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
        return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

static void unpin_fifo(void)
{
        struct sched_param sp = {.sched_priority = 0};

        pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

static void sleep_until(uint64_t at)
{
        struct timespec ts = {(time_t)(at / 1000000000ULL), (long)(at % 1000000000ULL)};

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
}

/* Spins for @duration_ns from now, recording the theft due at @due_ns in @t. */
static void steal(uint64_t due_ns, uint64_t duration_ns, Theft *t)
{
        uint64_t now;

        t->due_ns = due_ns;
        t->gaps_ns = 0;
        t->cpu_ns = thread_cpu_ns();
        t->cpu_start = sched_getcpu();
        t->start_ns = now = now_ns(CLOCK_MONOTONIC);
        while (now - t->start_ns < duration_ns) {
                uint64_t prev = now;

                now = now_ns(CLOCK_MONOTONIC);
                if (now - prev >= THIEF_GAP_NS) {
                        t->gaps_ns += now - prev;
                }
        }
        t->end_ns = now;
        t->cpu_end = sched_getcpu();
        t->cpu_ns = thread_cpu_ns() - t->cpu_ns;
}

int thief_run_due(int cpu, int priority, const uint64_t *due_ns, const uint64_t *durations_ns,
                  size_t n, Theft *ret)
{
        int r = pin_fifo(cpu, priority);

        if (r < 0) {
                return r;
        }
        for (size_t k = 0; k < n; k++) {
                sleep_until(due_ns[k]);
                steal(due_ns[k], durations_ns[k], &ret[k]);
        }
        unpin_fifo();
        return 0;
}

int thief_run(int cpu, int priority, uint64_t first_ns, uint64_t period_ns,
              const uint64_t *durations_ns, size_t n, Theft *ret)
{
        uint64_t *due = calloc(n ? n : 1, sizeof(*due));
        int r;

        if (!due) {
                return -ENOMEM;
        }
        for (size_t k = 0; k < n; k++) {
                due[k] = first_ns + k * period_ns;
        }
        r = thief_run_due(cpu, priority, due, durations_ns, n, ret);
        free(due);
        return r;
}

/* The waker's word while it could not take its CPU or class: the thief then stops. */
#define WAKER_FAILED UINT32_MAX

typedef struct Waker {
        int cpu, priority;
        const uint64_t *due_ns;
        size_t n;
        _Atomic uint32_t woken; /* thefts woken so far, or WAKER_FAILED: the futex */
        _Atomic bool stop;      /* the thief gave up: the waker ends at its next look */
        int r;                  /* why the waker failed, before WAKER_FAILED is stored */
} Waker;

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *timeout)
{
        return syscall(SYS_futex, (uint32_t *)addr, op | FUTEX_PRIVATE_FLAG, val, timeout, NULL, 0);
}

/* Sleeps until @at, looking at @w's stop every 50 ms. Returns false when it was set. */
static bool waker_sleep(Waker *w, uint64_t at)
{
        for (;;) {
                uint64_t now = now_ns(CLOCK_MONOTONIC);

                if (atomic_load(&w->stop)) {
                        return false;
                }
                if (now >= at) {
                        return true;
                }
                sleep_until(at - now > 50000000ULL ? now + 50000000ULL : at);
        }
}

static void *waker_main(void *arg)
{
        Waker *w = arg;
        int r = pin_fifo(w->cpu, w->priority);

        if (r < 0) {
                w->r = r;
                atomic_store(&w->woken, WAKER_FAILED);
                futex(&w->woken, FUTEX_WAKE, 1, NULL);
                return NULL;
        }
        for (size_t k = 0; k < w->n && waker_sleep(w, w->due_ns[k]); k++) {
                atomic_store(&w->woken, (uint32_t)(k + 1));
                futex(&w->woken, FUTEX_WAKE, 1, NULL);
        }
        return NULL;
}

/* Waits until @w has woken @k thefts, at most a second past @due_ns. Returns 0, -ETIMEDOUT,
 * or why the waker failed. */
static int wait_woken(Waker *w, size_t k, uint64_t due_ns)
{
        uint64_t limit = due_ns + 1000000000ULL;

        for (;;) {
                uint32_t seen = atomic_load(&w->woken);
                uint64_t now = now_ns(CLOCK_MONOTONIC), left;
                struct timespec ts;

                if (seen == WAKER_FAILED) {
                        return w->r;
                }
                if (seen >= k) {
                        return 0;
                }
                if (now >= limit) {
                        return -ETIMEDOUT;
                }
                left = limit - now;
                ts.tv_sec = (time_t)(left / 1000000000ULL);
                ts.tv_nsec = (long)(left % 1000000000ULL);
                futex(&w->woken, FUTEX_WAIT, seen, &ts);
        }
}

int thief_run_woken(int cpu, int waker_cpu, int priority, const uint64_t *due_ns,
                    const uint64_t *durations_ns, size_t n, Theft *ret)
{
        Waker w = {.cpu = waker_cpu, .priority = priority, .due_ns = due_ns, .n = n};
        pthread_attr_t attr;
        cpu_set_t set;
        pthread_t waker;
        int r;

        /* The waker starts on its own CPU, never on @cpu. */
        CPU_ZERO(&set);
        CPU_SET(waker_cpu, &set);
        r = -pthread_attr_init(&attr);
        if (r == 0) {
                r = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
                r = r < 0 ? r : -pthread_create(&waker, &attr, waker_main, &w);
                pthread_attr_destroy(&attr);
        }
        if (r < 0) {
                return r;
        }
        r = pin_fifo(cpu, priority);
        for (size_t k = 0; k < n && r == 0; k++) {
                r = wait_woken(&w, k + 1, due_ns[k]);
                if (r == 0) {
                        steal(due_ns[k], durations_ns[k], &ret[k]);
                }
        }
        atomic_store(&w.stop, true);
        pthread_join(waker, NULL);
        unpin_fifo();
        /* Off @cpu before the process exits: its teardown (TLB shootdowns, RCU callbacks, the
         * last switches) is not part of what was stolen. */
        (void)sched_setaffinity(0, sizeof(set), &set);
        return r;
}

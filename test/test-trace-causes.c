/* Causes against ground truth, on this kernel: a probe on CPU 1 (the engine, in this process)
 * with the trace recorder, and sources of interruption whose identity and timing the test
 * knows:
 * - a SCHED_FIFO thief with a known comm and tid that steals known durations: its thefts must
 *   be named as that task, with the task's time within 5 % of the theft. The theft is what the
 *   thief recorded of itself: it spun from start to end, lost the gaps it saw in its own reads
 *   of the clock to what interrupted it (nested: not the task's time, unless the host took the
 *   CPU, which the trace cannot see), and took the CPU no earlier than its timer was due. So the
 *   task's own time lies between end - start - gaps and end - due, each widened by 5 %;
 * - a SCHED_FIFO thread sleeping in a 1 ms clock_nanosleep loop: its wake-ups must name the
 *   timer interrupt or the hrtimer that woke it, and the switch to it;
 * - IPIs sent from CPU 0: a futex wake of a thread on CPU 1 (reschedule, or call-function
 *   with the scheduler's wake-up function), and membarrier(), which interrupts every CPU that
 *   runs a thread of this process (call-function).
 * The probe's interruptions are explained as the daemon explains them: the trace is read every
 * 100 ms and each interruption taken from the ring is matched against the trace of its CPU. A part
 * that misses its criteria (another task's burst of milliseconds on CPU 1 can hide a theft or
 * a wake-up, and prints as such) runs again, at most three times in all. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "counter.h"
#include "probe.h"
#include "need-cpu1.h"
#include "thief.h"
#include "trace.h"
#include "tracefs-mount.h"

#define CPU 1
#define MAX_EVENTS 40000
/* Reading a pair of clocks on a VM: the least error of an event's start mapped to
 * CLOCK_MONOTONIC, to which the drift the run measures adds (Explained.slack_ns). */
#define PAIR_SLACK_NS 2000

typedef struct Explained {
        uint64_t start_ns; /* CLOCK_MONOTONIC */
        uint64_t duration_ns;
        uint64_t slack_ns; /* how far start_ns may be off CLOCK_MONOTONIC, as the run measured */
        CauseList causes;
} Explained;

typedef struct Run {
        Probe *probe;
        TraceRecorder *trace;
        RingReader reader;
        Explained *ev;
        size_t n;
        size_t overflow;
        size_t lost;
        /* The account over the interruptions explained: their time, and its parts. */
        uint64_t total_ticks, overhead_ticks, no_record_ticks, unexplained_ticks;
        size_t no_record;
        ClockPair last_pair; /* of the previous collection, for the drift */
        uint64_t max_slack_ns;
} Run;

static CounterInfo counter;
static char instance[64];
/* The run of the test, stopped by the teardown when the test failed before stopping it:
 * its probe would go on spinning. */
static Run *active;

static uint64_t ticks_ns(uint64_t ticks)
{
        return tickconv_to_ns(&counter.conv, ticks);
}

static void pin(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void run_start(Run *run, uint64_t threshold_ns)
{
        int cpus[] = {CPU};
        char reason[TRACE_REASON_MAX] = "";
        ProbeConfig cfg = {
                .cpu = CPU,
                .priority = 0,
                .counter = counter,
                .threshold_ns = threshold_ns,
                .preheat_ns = 200000000,
                .ring_capacity = 1 << 16,
        };
        TraceOptions o = {
                .instance = instance,
                .cpus = cpus,
                .n_cpus = 1,
                .counter = counter.source,
                .counter_hz = counter.hz,
        };
        uint64_t deadline;

        *run = (Run){0};
        active = run;
        run->ev = calloc(MAX_EVENTS, sizeof(Explained));
        assert_non_null(run->ev);
        pin(0);
        if (trace_recorder_new(&o, &run->trace, reason, sizeof(reason)) < 0) {
                fail_msg("cannot record: %s", reason);
        }
        /* The probe's start is bounded from here: the recorder's creation, with libtracefs
         * reading every event format and /proc/kallsyms, takes seconds in a sanitizer build. */
        deadline = now_ns(CLOCK_MONOTONIC) + 5000000000ULL;
        assert_int_equal(probe_new(&cfg, &run->probe), 0);
        assert_int_equal(probe_start(run->probe), 0);
        while (probe_state(run->probe) != PROBE_RUNNING) {
                assert_true(now_ns(CLOCK_MONOTONIC) < deadline);
                assert_int_not_equal(probe_state(run->probe), PROBE_FAILED);
                usleep(10000);
        }
        clock_pair_sample(counter.source, &run->last_pair);
}

/* Adds the account of @l to @run's: its parts add up to the interruption, and where no record
 * was lost every tick is a cause's own time or overhead, or the whole is no_record (no rule
 * leaves anything unexplained on this kernel's records). */
static void account(Run *run, const CauseList *l)
{
        uint64_t sum = l->other_ticks + l->no_record_ticks + l->unexplained_ticks;

        for (size_t i = 0; i < l->n; i++) {
                sum += l->causes[i].ticks + l->causes[i].overhead_ticks;
        }
        assert_int_equal(sum, l->total_ticks);
        if (!(l->flags & CAUSES_LOST)) {
                assert_int_equal(l->unexplained_ticks, 0);
                assert_true(l->no_record_ticks == 0 || l->no_record_ticks == l->total_ticks);
        }
        run->total_ticks += l->total_ticks;
        run->overhead_ticks += l->overhead_ticks;
        run->no_record_ticks += l->no_record_ticks;
        run->unexplained_ticks += l->unexplained_ticks;
        run->no_record += l->no_record_ticks > 0;
}

/* Reads the trace and explains what the ring holds, as the daemon does each interval. Each
 * event's start is mapped with the pair taken now: it is off CLOCK_MONOTONIC (which NTP slews,
 * while the counter's frequency was calibrated against CLOCK_MONOTONIC_RAW) by the drift
 * between the two clocks over the event's age, which this collection and the one before
 * measure, twice over for a drift that changes between them. */
static void run_collect(Run *run)
{
        uint64_t start, dur;
        ClockPair pair;
        double drift_ppm;

        (void)trace_recorder_read(run->trace);
        clock_pair_sample(counter.source, &pair);
        drift_ppm = fabs(clock_pair_drift_ppm(&run->last_pair, &pair, &counter.conv));
        run->last_pair = pair;
        while (ring_pop(probe_ring(run->probe), &run->reader, &start, &dur) == 1) {
                Explained *e;

                if (run->n == MAX_EVENTS) {
                        run->overflow++;
                        continue;
                }
                e = &run->ev[run->n++];
                clock_pair_map(&pair, &counter.conv, start, &e->start_ns, NULL);
                e->duration_ns = ticks_ns(dur);
                e->slack_ns =
                        PAIR_SLACK_NS +
                        (uint64_t)(2 * drift_ppm * 1e-6 *
                                   (double)(pair.mono_ns > e->start_ns ? pair.mono_ns - e->start_ns
                                                                       : 0));
                run->max_slack_ns =
                        e->slack_ns > run->max_slack_ns ? e->slack_ns : run->max_slack_ns;
                assert_int_equal(trace_recorder_explain(run->trace, CPU, probe_tid(run->probe),
                                                        start, dur, &e->causes),
                                 0);
                run->lost += (e->causes.flags & CAUSES_LOST) != 0;
                account(run, &e->causes);
        }
}

/* Collects every 100 ms until @done is set (and once more after). */
static void run_until(Run *run, atomic_bool *done)
{
        uint64_t deadline = now_ns(CLOCK_MONOTONIC) + 30000000000ULL;

        while (!atomic_load(done)) {
                assert_true(now_ns(CLOCK_MONOTONIC) < deadline);
                usleep(100000);
                run_collect(run);
        }
        usleep(20000);
        run_collect(run);
}

static void run_stop(Run *run)
{
        TraceStats st;

        active = NULL;
        if (!run->trace || !run->probe) {
                probe_free(run->probe);
                trace_recorder_free(run->trace);
                free(run->ev);
                return;
        }
        trace_recorder_stats(run->trace, &st);
        printf("  %zu interruptions explained (%zu with records lost, %zu beyond the test's "
               "store); trace: %" PRIu64 " records, %" PRIu64 " losses, %" PRIu64
               " reads, longest %.1f ms; clock slack up to %" PRIu64 " ns\n",
               run->n, run->lost, run->overflow, st.records, st.losses, st.reads,
               (double)st.max_read_ns / 1e6, run->max_slack_ns);
        printf("  account: %.2f ms, entry and exit %.2f ms, no record %zu (%.2f ms), unexplained "
               "%.3f ms\n",
               (double)ticks_ns(run->total_ticks) / 1e6,
               (double)ticks_ns(run->overhead_ticks) / 1e6, run->no_record,
               (double)ticks_ns(run->no_record_ticks) / 1e6,
               (double)ticks_ns(run->unexplained_ticks) / 1e6);
        probe_free(run->probe);
        trace_recorder_free(run->trace);
        free(run->ev);
}

/* The interruption that covers [@from_ns, @to_ns], or NULL. */
static int teardown(void **state)
{
        (void)state;
        if (active) {
                run_stop(active);
        }
        return 0;
}

static const Explained *covering(const Run *run, uint64_t from_ns, uint64_t to_ns)
{
        for (size_t i = 0; i < run->n; i++) {
                const Explained *e = &run->ev[i];

                if (e->start_ns <= from_ns + e->slack_ns &&
                    e->start_ns + e->duration_ns + e->slack_ns >= to_ns) {
                        return e;
                }
        }
        return NULL;
}

static const Cause *cause(const Explained *e, CauseKind kind, const char *name)
{
        for (size_t i = 0; i < e->causes.n; i++) {
                const Cause *c = &e->causes.causes[i];

                if (c->kind == kind && (!name || strcmp(c->name, name) == 0)) {
                        return c;
                }
        }
        return NULL;
}

static void print_causes(const char *what, const Explained *e)
{
        printf("  %s: %" PRIu64 " ns:", what, e->duration_ns);
        for (size_t i = 0; i < e->causes.n; i++) {
                printf(" %s %s %" PRIu64, cause_kind_name(e->causes.causes[i].kind),
                       e->causes.causes[i].name, ticks_ns(e->causes.causes[i].ticks));
        }
        printf(", unexplained %" PRIu64 " ns, flags %#x\n", ticks_ns(e->causes.unexplained_ticks),
               e->causes.flags);
}

static int gettid_(void)
{
        return (int)syscall(SYS_gettid);
}

/* A part that this host's own noise spoiled (another task's burst over the thefts or the
 * wake-ups, as the causes it printed show) runs again, up to ATTEMPTS times in all, then fails.
 * @attempt returns whether the part's criteria held; a fault of the code under test that no
 * noise explains fails the test from inside it. */
#define ATTEMPTS 3

static void run_attempts(const char *part, bool (*attempt)(void))
{
        for (int a = 1; a <= ATTEMPTS; a++) {
                if (attempt()) {
                        return;
                }
                printf("%s: attempt %d of %d missed its criteria%s\n", part, a, ATTEMPTS,
                       a < ATTEMPTS ? ", run again" : "");
        }
        fail_msg("%s: missed its criteria in %d attempts in a row", part, ATTEMPTS);
}

/* --- a SCHED_FIFO thief -------------------------------------------------------------------- */

#define THEFTS 24

typedef struct Thief {
        uint64_t first_ns;
        uint64_t durations[THEFTS];
        Theft thefts[THEFTS];
        int tid;
        int result;
        atomic_bool done;
} Thief;

static void *thief_thread(void *arg)
{
        Thief *th = arg;

        prctl(PR_SET_NAME, "jt-thief");
        th->tid = gettid_();
        th->result =
                thief_run(CPU, 50, th->first_ns, 100000000ULL, th->durations, THEFTS, th->thefts);
        atomic_store(&th->done, true);
        return NULL;
}

/* How far the task's own time @task_ns lies outside what the thief recorded of theft @t, as a
 * share of the nearer bound (0 inside): at least the time it spun less the gaps it saw in its
 * own reads of the clock, at most from when its timer was due to when it stopped. */
static double theft_error(const Theft *t, uint64_t task_ns)
{
        double lo = (double)(t->end_ns - t->start_ns - t->gaps_ns);
        double hi = (double)(t->end_ns - t->due_ns);

        if ((double)task_ns < lo) {
                return (lo - (double)task_ns) / lo;
        }
        if ((double)task_ns > hi) {
                return ((double)task_ns - hi) / hi;
        }
        return 0;
}

static bool thief_attempt(void)
{
        static Thief th; /* shared with threads that outlive a failed test */
        static Run run;  /* outlives a failed test, for the teardown */
        pthread_t thr;
        char name[CAUSE_NAME_MAX];
        int named = 0, inside = 0;
        double worst = 0;

        memset(&th, 0, sizeof(th));
        run_start(&run, 10000);
        for (int k = 0; k < THEFTS; k++) {
                th.durations[k] = 1500000 + (uint64_t)(k % 8) * 200000; /* 1.5 .. 2.9 ms */
        }
        th.first_ns = now_ns(CLOCK_MONOTONIC) + 300000000ULL;
        assert_int_equal(pthread_create(&thr, NULL, thief_thread, &th), 0);
        run_until(&run, &th.done);
        pthread_join(thr, NULL);
        assert_int_equal(th.result, 0);
        snprintf(name, sizeof(name), "jt-thief:%d", th.tid);
        for (int k = 0; k < THEFTS; k++) {
                uint64_t len = th.thefts[k].end_ns - th.thefts[k].start_ns;
                const Explained *e = covering(&run, th.thefts[k].start_ns, th.thefts[k].end_ns);
                const Cause *c = e ? cause(e, CAUSE_TASK, name) : NULL;
                double err;

                if (!e) {
                        fail_msg("theft %d (%" PRIu64 " us on CPU %d to %d) is not covered by an "
                                 "interruption",
                                 k, len / 1000, th.thefts[k].cpu_start, th.thefts[k].cpu_end);
                }
                inside++;
                if (!c) {
                        printf("  theft %d: %" PRIu64 " us spun on CPU %d to %d, %" PRIu64
                               " us of it on the thief's own clock\n",
                               k, len / 1000, th.thefts[k].cpu_start, th.thefts[k].cpu_end,
                               th.thefts[k].cpu_ns / 1000);
                        print_causes("not named", e);
                        continue;
                }
                err = theft_error(&th.thefts[k], ticks_ns(c->ticks));
                if (err > worst) {
                        worst = err;
                }
                if (err > 0.05) {
                        printf("  theft %d: %" PRIu64 " us spun, %" PRIu64
                               " us of it lost to gaps, %" PRIu64 " us after its timer was due\n",
                               k, len / 1000, th.thefts[k].gaps_ns / 1000,
                               (th.thefts[k].start_ns - th.thefts[k].due_ns) / 1000);
                        print_causes("off by more than 5 %", e);
                        continue;
                }
                named++;
                if (k == 0) {
                        print_causes("first theft", e);
                }
        }
        printf("thief %s: %d of %d thefts named with the task's time within 5 %% (worst %.2f "
               "%%)\n",
               name, named, inside, worst * 100);
        run_stop(&run);
        return named * 100 >= inside * 95;
}

static void test_thief_named(void **state)
{
        (void)state;
        run_attempts("thief", thief_attempt);
}

/* --- a 1 ms sleeper ------------------------------------------------------------------------ */

#define WAKEUPS 500

typedef struct Sleeper {
        uint64_t woke_ns[WAKEUPS];
        int tid;
        int result;
        atomic_bool done;
} Sleeper;

static void *sleeper_thread(void *arg)
{
        Sleeper *s = arg;
        struct sched_param sp = {.sched_priority = 50};
        struct timespec ms = {0, 1000000};

        prctl(PR_SET_NAME, "jt-sleeper");
        s->tid = gettid_();
        pin(CPU);
        s->result = -pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        for (int k = 0; s->result == 0 && k < WAKEUPS; k++) {
                while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ms, NULL) == EINTR) {
                }
                s->woke_ns[k] = now_ns(CLOCK_MONOTONIC);
        }
        sp.sched_priority = 0;
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
        atomic_store(&s->done, true);
        return NULL;
}

static bool sleeper_attempt(void)
{
        static Sleeper s; /* shared with threads that outlive a failed test */
        static Run run;   /* outlives a failed test, for the teardown */
        pthread_t thr;
        char name[CAUSE_NAME_MAX];
        int covered = 0, named = 0, by_hrtimer = 0, by_vector = 0;

        memset(&s, 0, sizeof(s));
        run_start(&run, 2000);
        usleep(200000);
        assert_int_equal(pthread_create(&thr, NULL, sleeper_thread, &s), 0);
        run_until(&run, &s.done);
        pthread_join(thr, NULL);
        assert_int_equal(s.result, 0);
        snprintf(name, sizeof(name), "jt-sleeper:%d", s.tid);
        for (int k = 0; k < WAKEUPS; k++) {
                const Explained *e = covering(&run, s.woke_ns[k], s.woke_ns[k]);
                bool hr, vec;

                if (!e) {
                        continue;
                }
                covered++;
                hr = cause(e, CAUSE_TIMER, "hrtimer_wakeup") != NULL;
                vec = cause(e, CAUSE_VECTOR, "local_timer") != NULL;
                by_hrtimer += hr;
                by_vector += vec;
                if (cause(e, CAUSE_TASK, name) && (hr || vec)) {
                        named++;
                } else if (covered - named <= 3) {
                        print_causes("not named", e);
                }
        }
        printf("sleeper %s: %d wake-ups, %d seen as interruptions, %d named with the switch to "
               "it and its wake-up (hrtimer_wakeup in %d, local_timer in %d)\n",
               name, WAKEUPS, covered, named, by_hrtimer, by_vector);
        run_stop(&run);
        return covered * 100 >= WAKEUPS * 95 && named * 100 >= covered * 95;
}

static void test_sleeper_wakeups_named(void **state)
{
        (void)state;
        run_attempts("sleeper", sleeper_attempt);
}

/* --- IPIs from CPU 0 ----------------------------------------------------------------------- */

#define IPIS 300

typedef struct Waker {
        _Atomic uint32_t word;
        uint64_t woke_ns[IPIS];
        int tid;
        int result;
        atomic_bool done;
} Waker;

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
        return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

/* On CPU 1: waits for the word to change, notes when it woke, IPIS times. */
static void *waiter_thread(void *arg)
{
        Waker *w = arg;
        struct sched_param sp = {.sched_priority = 50};

        w->tid = gettid_();
        pin(CPU);
        w->result = -pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        for (uint32_t k = 0; w->result == 0 && k < IPIS; k++) {
                while (atomic_load(&w->word) == k) {
                        futex(&w->word, FUTEX_WAIT_PRIVATE, k);
                }
                w->woke_ns[k] = now_ns(CLOCK_MONOTONIC);
        }
        sp.sched_priority = 0;
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
        atomic_store(&w->done, true);
        return NULL;
}

/* On CPU 0: wakes the waiter every 2 ms. */
static void *waker_thread(void *arg)
{
        Waker *w = arg;

        pin(0);
        usleep(100000);
        for (uint32_t k = 0; k < IPIS && !atomic_load(&w->done); k++) {
                atomic_store(&w->word, k + 1);
                futex(&w->word, FUTEX_WAKE_PRIVATE, 1);
                usleep(2000);
        }
        return NULL;
}

static bool futex_attempt(void)
{
        static Waker w; /* shared with threads that outlive a failed test */
        static Run run; /* outlives a failed test, for the teardown */
        pthread_t a, b;
        int covered = 0, named = 0, res = 0, cfs = 0;

        memset(&w, 0, sizeof(w));
        run_start(&run, 2000);
        assert_int_equal(pthread_create(&a, NULL, waiter_thread, &w), 0);
        assert_int_equal(pthread_create(&b, NULL, waker_thread, &w), 0);
        run_until(&run, &w.done);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        assert_int_equal(w.result, 0);
        for (int k = 0; k < IPIS; k++) {
                const Explained *e = covering(&run, w.woke_ns[k], w.woke_ns[k]);
                bool r, c;

                if (!e) {
                        continue;
                }
                covered++;
                r = cause(e, CAUSE_VECTOR, "reschedule") != NULL;
                c = cause(e, CAUSE_VECTOR, "call_function_single") != NULL;
                res += r;
                cfs += c;
                if (r || c) {
                        named++;
                } else if (covered - named <= 3) {
                        print_causes("not named", e);
                }
        }
        printf("futex wake from CPU 0: %d wake-ups seen as interruptions of %d, %d name the "
               "IPI (reschedule %d, call_function_single %d)\n",
               covered, IPIS, named, res, cfs);
        run_stop(&run);
        return covered * 100 >= IPIS * 95 && named * 100 >= covered * 95;
}

static void test_futex_wake_ipi_named(void **state)
{
        (void)state;
        run_attempts("futex wake", futex_attempt);
}

typedef struct Barrier {
        uint64_t from_ns[IPIS], to_ns[IPIS];
        int result;
        atomic_bool done;
} Barrier;

static void *membarrier_thread(void *arg)
{
        Barrier *b = arg;

        pin(0);
        b->result = (int)syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
        usleep(100000);
        for (int k = 0; b->result == 0 && k < IPIS; k++) {
                b->from_ns[k] = now_ns(CLOCK_MONOTONIC);
                b->result = (int)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
                b->to_ns[k] = now_ns(CLOCK_MONOTONIC);
                usleep(2000);
        }
        atomic_store(&b->done, true);
        return NULL;
}

static bool membarrier_attempt(void)
{
        static Barrier b; /* shared with threads that outlive a failed test */
        static Run run;   /* outlives a failed test, for the teardown */
        pthread_t thr;
        int seen = 0, named = 0, cf = 0, cfs = 0, ipi_mb = 0;

        memset(&b, 0, sizeof(b));
        run_start(&run, 1000);
        assert_int_equal(pthread_create(&thr, NULL, membarrier_thread, &b), 0);
        run_until(&run, &b.done);
        pthread_join(thr, NULL);
        if (b.result != 0) {
                run_stop(&run);
                print_message("skipped: membarrier IPIs: this kernel does not offer "
                              "MEMBARRIER_CMD_PRIVATE_EXPEDITED\n");
                skip();
        }
        for (int k = 0; k < IPIS; k++) {
                const Explained *hit = NULL;

                for (size_t i = 0; i < run.n && !hit; i++) {
                        const Explained *e = &run.ev[i];

                        if (e->start_ns + e->duration_ns + e->slack_ns >= b.from_ns[k] &&
                            e->start_ns <= b.to_ns[k] + e->slack_ns &&
                            (cause(e, CAUSE_VECTOR, "call_function") ||
                             cause(e, CAUSE_VECTOR, "call_function_single") ||
                             cause(e, CAUSE_IPI, NULL))) {
                                hit = e;
                        }
                }
                if (!hit) {
                        continue;
                }
                seen++;
                cf += cause(hit, CAUSE_VECTOR, "call_function") != NULL;
                cfs += cause(hit, CAUSE_VECTOR, "call_function_single") != NULL;
                ipi_mb += cause(hit, CAUSE_IPI, "ipi_mb") != NULL;
                named += cause(hit, CAUSE_VECTOR, "call_function") ||
                         cause(hit, CAUSE_VECTOR, "call_function_single");
                if (seen == 1) {
                        print_causes("first", hit);
                }
        }
        printf("membarrier from CPU 0: %d calls, %d with a call-function interruption on CPU 1 "
               "(call_function %d, call_function_single %d, ipi_mb named %d)\n",
               IPIS, seen, cf, cfs, ipi_mb);
        run_stop(&run);
        return named * 100 >= IPIS * 80;
}

static void test_membarrier_ipi_named(void **state)
{
        (void)state;
        run_attempts("membarrier", membarrier_attempt);
}

int main(void)
{
        int r;

        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_thief_named, teardown),
                cmocka_unit_test_teardown(test_sleeper_wakeups_named, teardown),
                cmocka_unit_test_teardown(test_futex_wake_ipi_named, teardown),
                cmocka_unit_test_teardown(test_membarrier_ipi_named, teardown),
        };

        r = need_cpu1();
        if (r != 0) {
                return r;
        }
        if (!tracefs_usable()) {
                return 77;
        }
        if (counter_info_init(COUNTER_HW, 1.0, 500, &counter) < 0) {
                fprintf(stderr, "skipped: no usable hardware counter\n");
                return 77;
        }
        snprintf(instance, sizeof(instance), "jitterd-test-%d", (int)getpid());
        return cmocka_run_group_tests(tests, NULL, NULL);
}

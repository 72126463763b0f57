/* The probe thread and the epoch hand-off, with the probe writing concurrently. Built twice:
 * test-probe runs libjitter's probe loop as it ships; test-probe-hooks (PROBE_TEST_HOOKS) runs
 * the loop built with stand-ins for the hardware (probe/probe-hooks.c), for a TSC_AUX that lies,
 * a CPU without rdtscp and a scripted counter, and the tests of the shipped loop again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <unistd.h>

#include "histogram-internal.h"
#include "probe-internal.h"
#include "probe-private.h"
#include "need-cpu1.h"
#include "thief.h"

static int probe_cpu(void)
{
        return 1;
}

/* The configuration @p was made with. */
static const ProbeConfig *config_of(const Probe *p)
{
        return &p->fixed.cfg;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

        nanosleep(&ts, NULL);
}

static Probe *start_probe_hooked(CounterSource src, const ProbeHooks *hooks)
{
        ProbeConfig pc = {.cpu = probe_cpu(), .threshold_ns = 10000, .preheat_ns = 20000000};
        Probe *p;

        assert_int_equal(counter_info_init(src, 10, 2000, &pc.counter), 0);
        assert_int_equal(probe_new(&pc, &p), 0);
#ifdef PROBE_TEST_HOOKS
        probe_set_hooks(hooks);
#else
        assert_null(hooks);
#endif
        assert_int_equal(probe_start(p), 0);
#ifdef PROBE_TEST_HOOKS
        probe_set_hooks(NULL);
#endif
        for (int i = 0; i < 500 && probe_state(p) != PROBE_RUNNING; i++) {
                sleep_ms(10);
        }
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        assert_true(probe_floor_ticks(p) > 0);
        assert_true(probe_band_ticks(p) > probe_floor_ticks(p));
        return p;
}

static Probe *start_probe(CounterSource src)
{
        return start_probe_hooked(src, NULL);
}

/* Harvests @epochs intervals of @ms each and checks every slot is whole and consistent. */
static void run_handoff(CounterSource src, int epochs, long ms)
{
        Probe *p = start_probe(src);
        ProbeSlot *slot = malloc(sizeof(*slot));
        uint64_t prev_end = 0, total = 0;

        for (int k = 0; k < epochs; k++) {
                int64_t e;
                int r;

                sleep_ms(ms);
                e = probe_advance(p);
                assert_true(e > 1);
                do {
                        r = probe_harvest(p, (uint64_t)e - 1, slot);
                } while (r == -EAGAIN);
                assert_int_equal(r, 0);
                /* A slot holds exactly what its histograms and stats say. */
                assert_int_equal(histogram_total(&slot->gap_hist), slot->gap.count);
                assert_int_equal(signed_histogram_total(&slot->dd_hist), slot->dd.count);
                assert_true(slot->dd.count + 1 >= slot->gap.count);
                assert_true(slot->gap.count > 0);
                /* Slots follow each other in time without overlap. */
                assert_true(slot->start_ticks >= prev_end);
                assert_true(slot->end_ticks >= slot->start_ticks);
                prev_end = slot->end_ticks;
                total += slot->gap.count;
                /* A harvested slot cannot be harvested again. */
                assert_int_equal(probe_harvest(p, (uint64_t)e - 1, slot), -ESTALE);
        }
        assert_true(total > 1000);
        probe_free(p);
        free(slot);
}

static void test_handoff_hw(void **state)
{
        (void)state;
        run_handoff(COUNTER_HW, 40, 10);
}

static void test_handoff_clock(void **state)
{
        (void)state;
        run_handoff(COUNTER_CLOCK, 10, 10);
}

/* The owner cannot lap the probe: without harvests the epoch stops advancing. */
static void test_advance_needs_harvest(void **state)
{
        Probe *p = start_probe(COUNTER_HW);
        int64_t e = 0;
        int advanced = 0;

        (void)state;
        for (int k = 0; k < 20; k++) {
                for (int i = 0; i < 1000; i++) {
                        e = probe_advance(p);
                        if (e != -EBUSY) {
                                break;
                        }
                        /* -EBUSY here means "not yet acknowledged" or "slot not harvested". */
                        if (probe_acked_epoch(p) == probe_epoch(p)) {
                                break;
                        }
                        sleep_ms(1);
                }
                if (e > 0) {
                        advanced++;
                }
        }
        assert_int_equal(advanced, PROBE_SLOTS - 1);
        assert_int_equal(probe_advance(p), -EBUSY);
        probe_free(p);
}

/* Starts a new interval and harvests the one before, waiting at most 1 s for the probe to
 * acknowledge it. */
static void next_interval(Probe *p, ProbeSlot *ret)
{
        int64_t e = probe_advance(p);
        int r = -EAGAIN;

        assert_true(e > 1);
        for (int i = 0; i < 1000 && r == -EAGAIN; i++) {
                r = probe_harvest(p, (uint64_t)e - 1, ret);
                if (r == -EAGAIN) {
                        sleep_ms(1);
                }
        }
        assert_int_equal(r, 0);
}

/* The processor field (39th) of /proc/self/task/TID/stat: where the kernel last ran @tid. */
static int kernel_cpu_of(int tid)
{
        char path[64], buf[1024], *s;
        int cpu = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        /* Fields from the 3rd on follow the ")" that ends the thread's name. */
        s = strrchr(buf, ')');
        assert_non_null(s);
        s += 2;
        for (int field = 3; field < 39 && s; field++) {
                s = strchr(s, ' ');
                s = s ? s + 1 : NULL;
        }
        assert_non_null(s);
        assert_int_equal(sscanf(s, "%d", &cpu), 1);
        return cpu;
}

/* Moves the probe thread to CPU 0 from outside; the probe must notice, stop recording and go
 * back to its CPU, pinned to it alone, and record there again. */
static void check_moved_and_back(Probe *p)
{
        const ProbeConfig *pc = config_of(p);
        ProbeSlot *slot = malloc(sizeof(*slot));
        cpu_set_t other, now;
        ClockPair a, b;
        uint64_t t0, t1, start_ns, end_ns, slack;

        assert_non_null(slot);
        CPU_ZERO(&other);
        CPU_SET(0, &other);
        assert_int_equal(sched_setaffinity(probe_tid(p), sizeof(other), &other), 0);
        for (int i = 0; i < 300 && probe_migrations(p) == 0; i++) {
                sleep_ms(10);
        }
        assert_int_equal(probe_migrations(p), 1);
        for (int i = 0; i < 300 && probe_state(p) != PROBE_RUNNING; i++) {
                sleep_ms(10);
        }
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        assert_int_equal(probe_migrated_to(p), -1);
        /* Back means pinned to its CPU alone, and running there, as the kernel sees it. */
        assert_int_equal(sched_getaffinity(probe_tid(p), sizeof(now), &now), 0);
        assert_int_equal(CPU_COUNT(&now), 1);
        assert_true(CPU_ISSET(probe_cpu(), &now));
        assert_int_equal(kernel_cpu_of(probe_tid(p)), probe_cpu());
        /* And recording: an interval wholly after the return starts once this thread asked
         * for it and before the probe acknowledged it (t0), and ends at the check that saw the
         * next request (after t1), within the time the harvests took. */
        clock_pair_sample(pc->counter.source, &a);
        next_interval(p, slot);
        t0 = now_ns(CLOCK_MONOTONIC);
        sleep_ms(20);
        t1 = now_ns(CLOCK_MONOTONIC);
        next_interval(p, slot);
        clock_pair_sample(pc->counter.source, &b);
        clock_pair_map(&a, &pc->counter.conv, slot->start_ticks, &start_ns, NULL);
        clock_pair_map(&a, &pc->counter.conv, slot->end_ticks, &end_ns, NULL);
        /* The mapping is good to a few us plus the drift the two pairs measured. */
        slack = 2000 + (uint64_t)(fabs(clock_pair_drift_ppm(&a, &b, &pc->counter.conv)) * 1e-6 *
                                  (double)(b.mono_ns - a.mono_ns));
        printf("  back on CPU %d: %llu samples, interval from %+.1f us to %+.1f us of the "
               "requests (slack %.1f us)\n",
               probe_cpu(), (unsigned long long)slot->gap.count,
               ((double)start_ns - (double)t0) / 1e3, ((double)end_ns - (double)t1) / 1e3,
               slack / 1e3);
        assert_true(slot->gap.count > 0);
        assert_true(slot->gap.sum == slot->end_ticks - slot->start_ticks);
        assert_true(start_ns + slack >= a.mono_ns && start_ns <= t0 + slack);
        assert_true(end_ns + slack >= t1 && end_ns <= b.mono_ns + slack);
        assert_int_equal(probe_migrations(p), 1);
        free(slot);
}

static void test_migration_detected(void **state)
{
        Probe *p;

        (void)state;
        p = start_probe(COUNTER_HW);
        check_moved_and_back(p);
        probe_free(p);
}

static void test_bad_cpu(void **state)
{
        ProbeConfig pc = {.cpu = CPU_SETSIZE - 1, .threshold_ns = 10000, .preheat_ns = 1000000};
        Probe *p;
        char want[64];

        (void)state;
        assert_int_equal(counter_info_init(COUNTER_CLOCK, 10, 100, &pc.counter), 0);
        assert_int_equal(probe_new(&pc, &p), 0);
        assert_int_equal(probe_start(p), -EINVAL);
        assert_int_equal(probe_state(p), PROBE_FAILED);
        snprintf(want, sizeof(want), "CPU %d: cannot pin", CPU_SETSIZE - 1);
        assert_non_null(strstr(probe_failure(p), want));
        probe_free(p);
        pc.cpu = -1;
        assert_int_equal(probe_new(&pc, &p), -EINVAL);
        pc.cpu = probe_cpu();
        pc.threshold_ns = 0;
        assert_int_equal(probe_new(&pc, &p), -EINVAL);
}

/* --- The CPU number: a TSC_AUX that lies, a CPU without rdtscp ------------------------------- */

#ifdef PROBE_TEST_HOOKS
/* A stand-in for TSC_AUX: the true CPU until told to lie, then @value. */
typedef struct FakeTscAux {
        _Atomic unsigned value;
        _Atomic int lying;
        _Atomic unsigned reads;
} FakeTscAux;

static unsigned fake_tsc_aux(void *userdata)
{
        FakeTscAux *f = userdata;

        atomic_fetch_add(&f->reads, 1);
        return atomic_load(&f->lying) ? atomic_load(&f->value) : (unsigned)sched_getcpu();
}

#endif

#define THEFTS 6

typedef struct ThiefJob {
        uint64_t first_ns;
        uint64_t durations[THEFTS];
        Theft thefts[THEFTS];
        int r;
        _Atomic int done;
} ThiefJob;

static void *thief_thread(void *userdata)
{
        ThiefJob *j = userdata;

        j->r = thief_run(probe_cpu(), 50, j->first_ns, 30000000ULL, j->durations, THEFTS,
                         j->thefts);
        atomic_store(&j->done, 1);
        return NULL;
}

#define MAX_EVENTS 100000

typedef struct Recording {
        ProbeSlot total;
        uint64_t (*events)[2]; /* start and duration, ticks */
        size_t n_events;
        uint64_t wall_ns;   /* from the first interval's start to the stop request */
        uint64_t ack_ns;    /* how late the test saw that first interval start */
        uint64_t stop_ns;   /* how long probe_stop() took */
        uint64_t wake_ns;   /* the worst overshoot of a 1 ms sleep here, just before */
        ClockPair ref, end; /* counter against CLOCK_MONOTONIC around the thefts */
        ThiefJob job;
} Recording;

static void drain(Probe *p, RingReader *rd, Recording *rec)
{
        uint64_t s, d;

        while (ring_pop(probe_ring(p), rd, &s, &d) == 1) {
                if (rec->n_events < MAX_EVENTS) {
                        rec->events[rec->n_events][0] = s;
                        rec->events[rec->n_events][1] = d;
                        rec->n_events++;
                }
        }
}

/* Harvests every interval the probe has moved on from, from *@next on, into @total. */
static void harvest_ready(Probe *p, uint64_t *next, ProbeSlot *tmp, ProbeSlot *total)
{
        while (*next < probe_epoch(p) && probe_harvest(p, *next, tmp) == 0) {
                if (total) {
                        slot_merge(total, tmp);
                }
                (*next)++;
        }
}

static uint64_t wake_overshoot_ns(void)
{
        uint64_t worst = 0;

        for (int i = 0; i < 10; i++) {
                uint64_t t = now_ns(CLOCK_MONOTONIC), d;

                sleep_ms(1);
                d = now_ns(CLOCK_MONOTONIC) - t - 1000000ULL;
                worst = d > worst ? d : worst;
        }
        return worst;
}

/* Records with @p from a fresh interval on while a SCHED_FIFO thief on its CPU takes THEFTS
 * known durations, harvesting every 10 ms; then stops the probe (timing it) and harvests the
 * rest, which a stopped probe allows without an acknowledgement. */
static void record_with_thief(Probe *p, Recording *rec)
{
        ProbeSlot *tmp = malloc(sizeof(*tmp));
        RingReader rd = {0};
        uint64_t next = 1, t_adv, t0, t_stop;
        pthread_t t;
        int64_t e;

        assert_non_null(tmp);
        memset(rec, 0, sizeof(*rec));
        rec->events = calloc(MAX_EVENTS, sizeof(*rec->events));
        assert_non_null(rec->events);
        slot_clear(&rec->total);
        t_adv = now_ns(CLOCK_MONOTONIC);
        e = probe_advance(p);
        assert_true(e > 1);
        while (probe_acked_epoch(p) < (uint64_t)e &&
               now_ns(CLOCK_MONOTONIC) - t_adv < 1000000000ULL) {
        }
        t0 = now_ns(CLOCK_MONOTONIC);
        assert_true(probe_acked_epoch(p) >= (uint64_t)e);
        rec->ack_ns = t0 - t_adv;
        harvest_ready(p, &next, tmp, NULL);
        assert_int_equal(next, (uint64_t)e);
        drain(p, &rd, rec);
        rec->n_events = 0;

        clock_pair_sample(config_of(p)->counter.source, &rec->ref);
        rec->job.first_ns = now_ns(CLOCK_MONOTONIC) + 20000000ULL;
        for (int k = 0; k < THEFTS; k++) {
                rec->job.durations[k] = 200000ULL + (uint64_t)k * 100000ULL; /* 200..700 us */
        }
        assert_int_equal(pthread_create(&t, NULL, thief_thread, &rec->job), 0);
        while (!atomic_load(&rec->job.done)) {
                sleep_ms(10);
                drain(p, &rd, rec);
                harvest_ready(p, &next, tmp, &rec->total);
                (void)probe_advance(p);
        }
        pthread_join(t, NULL);
        clock_pair_sample(config_of(p)->counter.source, &rec->end);
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        rec->wake_ns = wake_overshoot_ns();

        t_stop = now_ns(CLOCK_MONOTONIC);
        assert_int_equal(probe_stop(p), 0);
        rec->stop_ns = now_ns(CLOCK_MONOTONIC) - t_stop;
        rec->wall_ns = t_stop - t0;
        assert_int_equal(probe_state(p), PROBE_STOPPED);
        assert_true(probe_advance(p) > 0);
        harvest_ready(p, &next, tmp, &rec->total);
        assert_int_equal(next, probe_epoch(p));
        drain(p, &rd, rec);
        free(tmp);
}

/* The most the counter's calibrated rate and CLOCK_MONOTONIC may disagree: NTP slews the
 * clock by up to 500 ppm, and the calibration adds its own error. */
#define DRIFT_MAX_PPM 1000

/* What must hold of a recording: unbroken, as long as the test's own clock says, every theft
 * found as an event that covers it, and a stop in the time one check of the loop takes. */
static void check_recording(Probe *p, const Recording *rec)
{
        const TickConv *conv = &config_of(p)->counter.conv;
        const ProbeSlot *t = &rec->total;
        uint64_t span_ns = tickconv_to_ns(conv, t->end_ticks - t->start_ticks);
        uint64_t max_gap_ns = tickconv_to_ns(conv, t->gap.max);
        uint64_t floor_ns = tickconv_to_ns(conv, probe_floor_ticks(p));
        double drift = fabs(clock_pair_drift_ppm(&rec->ref, &rec->end, conv));
        uint64_t stop_bound, span_slack;

        if (rec->job.r < 0) {
                fail_msg("the thief cannot run SCHED_FIFO on CPU %d: %s", probe_cpu(),
                         strerror(-rec->job.r));
        }
        /* Never back to preheat: the intervals follow each other without a hole. */
        assert_int_equal(probe_migrations(p), 0);
        assert_true(t->gap.sum == t->end_ticks - t->start_ticks);
        assert_true(t->gap.count > 0);
        assert_int_equal(histogram_total(&t->gap_hist), t->gap.count);
        /* It recorded the whole time the test waited: from the first interval's start to the
         * check that saw the stop (at most stop_ns after it was asked, and at most one
         * interruption before). The first interval starts at most ack_ns before the test saw
         * the request taken, or one interruption more: the probe takes the sample it starts
         * the interval with before it looks for the request, and may lose the CPU in between.
         * The span is in the counter's ticks and the wait in CLOCK_MONOTONIC, which NTP may
         * slew: the two agree to the pair's error and the drift measured between them over the
         * recording. */
        if (drift > DRIFT_MAX_PPM) {
                fail_msg("the counter and CLOCK_MONOTONIC disagree by %.1f ppm over the "
                         "recording, more than NTP's slew and a calibration can (%d ppm)",
                         drift, DRIFT_MAX_PPM);
        }
        span_slack = 2000 + (uint64_t)(drift * 1e-6 * (double)rec->wall_ns);
        if (span_ns + max_gap_ns + rec->stop_ns + span_slack < rec->wall_ns ||
            span_ns > rec->wall_ns + rec->stop_ns + rec->ack_ns + max_gap_ns + span_slack) {
                fail_msg("recorded %llu ns of %llu ns (ack %llu ns, stop %llu ns, worst gap %llu "
                         "ns, counter against the clock %.1f ppm)",
                         (unsigned long long)span_ns, (unsigned long long)rec->wall_ns,
                         (unsigned long long)rec->ack_ns, (unsigned long long)rec->stop_ns,
                         (unsigned long long)max_gap_ns, drift);
        }
        /* Each theft is an event that covers it; the mapping to CLOCK_MONOTONIC is good to the
         * pair's error plus the drift measured over the thefts. */
        for (int k = 0; k < THEFTS; k++) {
                const Theft *th = &rec->job.thefts[k];
                uint64_t slack =
                        2000 + (uint64_t)(drift * 1e-6 * (double)(th->end_ns - rec->ref.mono_ns));
                bool found = false;

                for (size_t i = 0; i < rec->n_events && !found; i++) {
                        uint64_t s, d = tickconv_to_ns(conv, rec->events[i][1]);

                        clock_pair_map(&rec->ref, conv, rec->events[i][0], &s, NULL);
                        found = s <= th->start_ns + slack && s + d + slack >= th->end_ns &&
                                d + slack >= th->end_ns - th->start_ns;
                }
                if (!found) {
                        fail_msg("theft %d (%llu us) not covered by any of %zu events", k,
                                 (unsigned long long)(th->end_ns - th->start_ns) / 1000,
                                 rec->n_events);
                }
        }
        assert_true(t->events >= THEFTS);
        /* The loop looks at the stop word every PROBE_CHECK_EVERY samples: it stops within one
         * such block, which an interruption as long as the worst seen may stretch, plus a
         * wake-up of this thread; twice that, as either may happen twice. */
        stop_bound = 2 * (PROBE_CHECK_EVERY * floor_ns + max_gap_ns + rec->wake_ns);
        printf("  recorded %.1f ms of %.1f ms, %llu samples, stop took %.1f us (bound %.1f us)\n",
               span_ns / 1e6, rec->wall_ns / 1e6, (unsigned long long)t->gap.count,
               rec->stop_ns / 1e3, stop_bound / 1e3);
        assert_true(rec->stop_ns <= stop_bound);
}

/* The loop as it ships, against a SCHED_FIFO thief on its CPU: every theft an event that
 * covers it, the recording unbroken, the stop in time. */
static void test_records_thefts(void **state)
{
        Recording *rec = malloc(sizeof(*rec));
        Probe *p;

        (void)state;
        assert_non_null(rec);
        p = start_probe(COUNTER_HW);
        record_with_thief(p, rec);
        check_recording(p, rec);
        probe_free(p);
        free(rec->events);
        free(rec);
}

#ifdef PROBE_TEST_HOOKS
/* TSC_AUX that holds what no one wrote (as on a host whose CPUID lacks rdtscp while the
 * instruction runs): the probe must not trust it, and records as well as with sched_getcpu(). */
static void test_tsc_aux_garbage_still_records(void **state)
{
        FakeTscAux fake = {.value = 0x85, .lying = 1};
        ProbeHooks hooks = {
                .tsc_aux = fake_tsc_aux, .rdtscp = PROBE_RDTSCP_PRESENT, .userdata = &fake};
        Recording *rec = malloc(sizeof(*rec));
        Probe *p;
        unsigned reads;

        (void)state;
        p = start_probe_hooked(COUNTER_HW, &hooks);
        assert_int_equal(probe_cpu_source(p), PROBE_CPU_SOURCE_GETCPU);
        assert_non_null(strstr(probe_cpu_source_note(p), "TSC_AUX read 133 (0x85)"));
        assert_non_null(strstr(probe_cpu_source_note(p), "CPU 1"));
        /* Read once at start, never again. */
        reads = atomic_load(&fake.reads);
        assert_true(reads >= 1);
        record_with_thief(p, rec);
        assert_int_equal(atomic_load(&fake.reads), reads);
        check_recording(p, rec);
        probe_free(p);
        free(rec->events);
        free(rec);
}

/* A CPU without rdtscp: sched_getcpu() tells the CPU, the probe records, and it still notices
 * a real migration and goes back. */
static void test_without_rdtscp(void **state)
{
        FakeTscAux fake = {0};
        ProbeHooks hooks = {
                .tsc_aux = fake_tsc_aux, .rdtscp = PROBE_RDTSCP_ABSENT, .userdata = &fake};
        Recording *rec = malloc(sizeof(*rec));
        Probe *p;

        (void)state;
        p = start_probe_hooked(COUNTER_HW, &hooks);
        assert_int_equal(probe_cpu_source(p), PROBE_CPU_SOURCE_GETCPU);
        assert_non_null(strstr(probe_cpu_source_note(p), "no rdtscp"));
        record_with_thief(p, rec);
        check_recording(p, rec);
        /* No TSC_AUX was ever read, real or not. */
        assert_int_equal(atomic_load(&fake.reads), 0);
        probe_free(p);

        p = start_probe_hooked(COUNTER_HW, &hooks);
        check_moved_and_back(p);
        assert_int_equal(atomic_load(&fake.reads), 0);
        probe_free(p);
        free(rec->events);
        free(rec);
}

#endif

/* Waits, at most @bound_ns, for @p to fail; returns how long it took. */
static uint64_t wait_failed(Probe *p, uint64_t bound_ns)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);

        while (probe_state(p) != PROBE_FAILED && now_ns(CLOCK_MONOTONIC) - t0 < bound_ns) {
                sleep_ms(1);
        }
        return now_ns(CLOCK_MONOTONIC) - t0;
}

/* Each false migration costs a check of the loop, a re-pin and a preheat. */
static uint64_t false_migration_bound_ns(const Probe *p)
{
        return PROBE_FALSE_MIGRATIONS_MAX * (config_of(p)->preheat_ns + 100000000ULL);
}

#ifdef PROBE_TEST_HOOKS
/* TSC_AUX right at start, wrong later (a host that rewrites it): the probe goes back to its CPU,
 * finds the same again, and fails within a bound, saying what it saw. */
static void test_tsc_aux_lies_after_pinning(void **state)
{
        FakeTscAux fake = {.value = 0};
        ProbeHooks hooks = {
                .tsc_aux = fake_tsc_aux, .rdtscp = PROBE_RDTSCP_PRESENT, .userdata = &fake};
        uint64_t took, bound;
        Probe *p;

        (void)state;
        p = start_probe_hooked(COUNTER_HW, &hooks);
        assert_int_equal(probe_cpu_source(p), PROBE_CPU_SOURCE_TSC_AUX);
        sleep_ms(50);
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        assert_int_equal(probe_migrations(p), 0);
        atomic_store(&fake.lying, 1);
        bound = false_migration_bound_ns(p);
        took = wait_failed(p, bound);
        printf("  failed after %.1f ms (bound %.1f ms): %s\n", took / 1e6, bound / 1e6,
               probe_failure(p));
        assert_int_equal(probe_state(p), PROBE_FAILED);
        assert_int_equal(probe_error(p), -EIO);
        assert_int_equal(probe_migrations(p), PROBE_FALSE_MIGRATIONS_MAX);
        assert_non_null(strstr(probe_failure(p), "CPU 1: TSC_AUX"));
        assert_non_null(strstr(probe_failure(p), "said CPU 0 while sched_getcpu() said 1"));
        assert_int_equal(probe_stop(p), 0);
        probe_free(p);
}

#endif

/* Something moves the probe off its CPU again and again while it could go back: it fails
 * rather than re-pin for ever. */
static void test_moved_again_and_again(void **state)
{
        cpu_set_t other;
        uint64_t took, bound, t0;
        Probe *p;

        (void)state;
        p = start_probe(COUNTER_HW);
        bound = false_migration_bound_ns(p);
        CPU_ZERO(&other);
        CPU_SET(0, &other);
        t0 = now_ns(CLOCK_MONOTONIC);
        for (unsigned k = 0; k < PROBE_FALSE_MIGRATIONS_MAX; k++) {
                /* Each time it is back on its CPU, move it again. */
                for (int i = 0; i < 500 && probe_state(p) != PROBE_RUNNING; i++) {
                        sleep_ms(1);
                }
                assert_int_equal(probe_state(p), PROBE_RUNNING);
                assert_int_equal(sched_setaffinity(probe_tid(p), sizeof(other), &other), 0);
                for (int i = 0; i < 500 && probe_migrations(p) == k; i++) {
                        sleep_ms(1);
                }
                assert_int_equal(probe_migrations(p), k + 1);
        }
        wait_failed(p, bound);
        took = now_ns(CLOCK_MONOTONIC) - t0;
        printf("  failed after %.1f ms: %s\n", took / 1e6, probe_failure(p));
        assert_int_equal(probe_state(p), PROBE_FAILED);
        assert_int_equal(probe_error(p), -EBUSY);
        assert_non_null(strstr(probe_failure(p), "CPU 1: the probe was moved off it 3 times"));
        assert_non_null(strstr(probe_failure(p), "last to CPU 0"));
        probe_free(p);
}

#ifdef PROBE_TEST_HOOKS
/* --- False migrations at any pace: the probe's own clock, scripted ------------------------ */

#define LIAR_HZ 1000000000ULL /* the scripted counter's ticks are nanoseconds */
#define LIAR_STEP_NS 10000ULL /* each reading 10 us later: a check of the loop is 10.24 ms */
#define LIAR_PREHEAT_NS 20000000ULL
#define LIAR_MAX_LIES 8

/* A counter that the probe thread alone advances, by LIAR_STEP_NS a reading, and a TSC_AUX
 * that says CPU 0 once at each of the times in @lies (counter values, ascending) and the truth
 * otherwise: a CPU-number source that lies at a pace set in the probe's own time, whatever the
 * pace of this machine, so that lies minutes apart take milliseconds. */
typedef struct Liar {
        _Atomic uint64_t t;
        uint64_t lies[LIAR_MAX_LIES];
        size_t n_lies;
        _Atomic size_t told;
        uint64_t told_at[LIAR_MAX_LIES]; /* the counter when each lie was told */
} Liar;

/* With it, the scripted counter leaps to 2 s before the next lie: days of a probe's life in a
 * moment (the leap is one long gap, which only the CPU number's checks care about here). */
static bool liar_leaps;

static uint64_t liar_read(void *userdata)
{
        Liar *l = userdata;
        uint64_t t = atomic_load_explicit(&l->t, memory_order_relaxed) + LIAR_STEP_NS;
        size_t k = atomic_load(&l->told);

        if (liar_leaps && k < l->n_lies && t + 2000000000ULL < l->lies[k]) {
                t = l->lies[k] - 2000000000ULL;
        }

        atomic_store_explicit(&l->t, t, memory_order_relaxed);
        return t;
}

/* The loop reads the CPU number right after the counter, so the lie is told at the counter's
 * last reading: the time the probe itself sees it at. */
static unsigned liar_tsc_aux(void *userdata)
{
        Liar *l = userdata;
        size_t k = atomic_load(&l->told);
        uint64_t t = atomic_load_explicit(&l->t, memory_order_relaxed);

        if (k < l->n_lies && t >= l->lies[k]) {
                l->told_at[k] = t;
                atomic_store(&l->told, k + 1);
                return 0;
        }
        return (unsigned)sched_getcpu();
}

#define LIAR_START 1000000000000ULL /* where the counter starts: any value */

/* @s seconds in ticks of the scripted counter. */
static uint64_t liar_ticks(double s)
{
        return (uint64_t)(s * 1e9);
}

/* Runs a probe whose CPU number lies at @lies_s (seconds of its counter from its start, at
 * most LIAR_MAX_LIES) until it failed or, at most 20 s here, until it has told every lie and
 * runs 1 s of its counter past the last. Returns the probe, still to be freed. */
static Probe *run_liar(Liar *l, const double *lies_s, size_t n)
{
        ProbeHooks hooks = {.read_counter = liar_read,
                            .tsc_aux = liar_tsc_aux,
                            .rdtscp = PROBE_RDTSCP_PRESENT,
                            .userdata = l};
        /* No gap of the script is an event: only the CPU number matters here. */
        ProbeConfig pc = {
                .cpu = probe_cpu(), .threshold_ns = 1000000000ULL, .preheat_ns = LIAR_PREHEAT_NS};
        uint64_t t0 = now_ns(CLOCK_MONOTONIC), end;
        Probe *p;

        assert_true(n <= LIAR_MAX_LIES);
        memset(l, 0, sizeof(*l));
        atomic_store(&l->t, LIAR_START);
        for (size_t k = 0; k < n; k++) {
                l->lies[k] = LIAR_START + liar_ticks(lies_s[k]);
        }
        l->n_lies = n;
        end = l->lies[n - 1] + liar_ticks(1);
        pc.counter.source = COUNTER_HW;
        pc.counter.hz = LIAR_HZ;
        tickconv_init(&pc.counter.conv, LIAR_HZ);
        assert_int_equal(probe_new(&pc, &p), 0);
        probe_set_hooks(&hooks);
        assert_int_equal(probe_start(p), 0);
        probe_set_hooks(NULL);
        while (probe_state(p) != PROBE_FAILED && atomic_load(&l->t) < end &&
               now_ns(CLOCK_MONOTONIC) - t0 < 20000000000ULL) {
                sleep_ms(1);
        }
        printf("  lies at");
        for (size_t k = 0; k < n; k++) {
                printf(" %gs", lies_s[k]);
        }
        printf(": %zu told, %llu migrations, %s after %.0f ms here and %.1f s of its counter%s%s\n",
               atomic_load(&l->told), (unsigned long long)probe_migrations(p),
               probe_state_name(probe_state(p)), (now_ns(CLOCK_MONOTONIC) - t0) / 1e6,
               (double)(atomic_load(&l->t) - LIAR_START) / 1e9,
               probe_state(p) == PROBE_FAILED ? ": " : "", probe_failure(p));
        return p;
}

/* The probe failed at lie @at (1-based) of @l, saying so: what TSC_AUX said, and over what
 * time of its counter, from the first lie it still counted (@first, 1-based) to that one. */
static void check_failed_at(Probe *p, const Liar *l, size_t at, size_t first)
{
        const char *msg = probe_failure(p), *in;
        double span_ms, want_ms = (double)(l->told_at[at - 1] - l->told_at[first - 1]) / 1e6;

        assert_int_equal(probe_state(p), PROBE_FAILED);
        assert_int_equal(probe_error(p), -EIO);
        assert_int_equal(atomic_load(&l->told), at);
        assert_int_equal(probe_migrations(p), at);
        assert_non_null(strstr(msg, "CPU 1: TSC_AUX (rdtscp) said CPU 0 while sched_getcpu() "
                                    "said 1, 3 times in "));
        in = strstr(msg, "3 times in ");
        assert_int_equal(sscanf(in, "3 times in %lf ms", &span_ms), 1);
        if (fabs(span_ms - want_ms) > 1) {
                fail_msg("the message says %.0f ms between the lies, the lies were %.3f ms apart",
                         span_ms, want_ms);
        }
}

/* A probe whose CPU number lies at @lies_s fails at lie @at, counting from lie @first. */
static void expect_liar_fails(const double *lies_s, size_t n, size_t at, size_t first)
{
        Liar *l = malloc(sizeof(*l));
        Probe *p;

        assert_non_null(l);
        p = run_liar(l, lies_s, n);
        check_failed_at(p, l, at, first);
        probe_free(p);
        free(l);
}

/* A source that lies every 11 s, or every minute, fails the probe at its third lie: no pace
 * outruns the count, however slow. */
static void test_slow_liar(void **state)
{
        static const double every_11s[] = {11, 22, 33, 44, 55};
        static const double every_60s[] = {60, 120, 180, 240};

        (void)state;
        expect_liar_fails(every_11s, 5, 3, 1);
        expect_liar_fails(every_60s, 4, 3, 1);
}

/* A lie at the very start, then one every 11 s: the start's lie is forgiven, as 11 s is longer
 * than the probe had lived then (plus its preheat and 10 s), but the steady ones are not, and
 * fail the probe at its fourth lie. */
static void test_liar_after_early_lie(void **state)
{
        static const double lies[] = {0.05, 11, 22, 33, 44};

        (void)state;
        expect_liar_fails(lies, 5, 4, 2);
}

/* The probe told every lie of @lies_s (@n of them, with the counter leaping between them when
 * @leaps) forgave them all: it still records after the last. */
static void expect_liar_forgiven(const double *lies_s, size_t n, bool leaps)
{
        Liar *l = malloc(sizeof(*l));
        Probe *p;

        assert_non_null(l);
        liar_leaps = leaps;
        p = run_liar(l, lies_s, n);
        liar_leaps = false;
        assert_int_equal(atomic_load(&l->told), n);
        assert_int_equal(probe_migrations(p), n);
        assert_true(atomic_load(&l->t) >= l->lies[n - 1] + liar_ticks(1));
        assert_int_equal(probe_state(p), PROBE_RUNNING);
        assert_int_equal(probe_stop(p), 0);
        probe_free(p);
        free(l);
}

/* Rare ones are forgiven: two lies, then each one after a run without one longer than the
 * probe's age at the last (plus its preheat and 10 s); the probe still records after them all. */
static void test_rare_false_migrations_forgiven(void **state)
{
        static const double lies[] = {1, 2, 100, 300};

        (void)state;
        expect_liar_forgiven(lies, 4, false);
}

/* An old probe is not failed by rare resets: lies a day apart, the last ones when the probe
 * is days old, are each forgiven after an hour without one (without that cap, the third and
 * fourth would fall within the probe's age and fail it at the fifth). */
static void test_daily_false_migrations_forgiven(void **state)
{
        static const double lies[] = {1, 2, 86400, 2 * 86400, 3 * 86400};

        (void)state;
        expect_liar_forgiven(lies, 5, true);
}

#endif

int main(void)
{
#ifdef JITTERD_TEST_EMULATED
        fprintf(stderr, "skipped: under qemu-user a spinning probe thread blocks the other "
                        "threads of the process; the probe loop is tested natively\n");
        return 77;
#endif
        int r = need_cpu1();

        if (r != 0) {
                return r;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_handoff_hw),
                cmocka_unit_test(test_handoff_clock),
                cmocka_unit_test(test_advance_needs_harvest),
                cmocka_unit_test(test_migration_detected),
                cmocka_unit_test(test_bad_cpu),
                cmocka_unit_test(test_moved_again_and_again),
                cmocka_unit_test(test_records_thefts),
#ifdef PROBE_TEST_HOOKS
                cmocka_unit_test(test_tsc_aux_garbage_still_records),
                cmocka_unit_test(test_without_rdtscp),
                cmocka_unit_test(test_tsc_aux_lies_after_pinning),
                cmocka_unit_test(test_slow_liar),
                cmocka_unit_test(test_liar_after_early_lie),
                cmocka_unit_test(test_rare_false_migrations_forgiven),
                cmocka_unit_test(test_daily_false_migrations_forgiven),
#endif
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

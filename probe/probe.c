#include "probe-private.h"
#include "util.h"
/* The hardware the loop reads. The tests' build of the engine, probe-hooks.c, includes this
 * file with stand-ins of its own. */
#ifndef PROBE_HW_STANDINS
#include "probe-hw.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

const char *probe_state_name(ProbeState s)
{
        static const char *const names[] = {
                [PROBE_STARTING] = "starting", [PROBE_PREHEATING] = "preheating",
                [PROBE_RUNNING] = "running",   [PROBE_MIGRATED] = "migrated",
                [PROBE_STOPPED] = "stopped",   [PROBE_FAILED] = "failed",
        };

        return (unsigned)s < ELEMENTSOF(names) ? names[s] : "unknown";
}

int probe_new(const ProbeConfig *cfg, Probe **ret)
{
        Probe *p;
        int r;

        if (cfg->cpu < 0 || cfg->cpu >= CPU_SETSIZE || cfg->priority < 0 || cfg->priority > 99 ||
            cfg->counter.hz == 0 || cfg->threshold_ns == 0) {
                return -EINVAL;
        }
        if (posix_memalign((void **)&p, 64, sizeof(*p)) != 0) {
                return -ENOMEM;
        }
        /* memset touches every page, so the loop never takes a page fault. */
        memset(p, 0, sizeof(*p));
        p->fixed.cfg = *cfg;
        /* Rounded up, so at least one tick: a threshold is never undercut. */
        p->own.threshold_ticks = tickconv_from_ns(&cfg->counter.conv, cfg->threshold_ns);
        atomic_store(&p->ctl.epoch, 1);
        atomic_store(&p->status.migrated_to, -1);
        slot_clear(&p->preheat);
        for (unsigned i = 0; i < PROBE_SLOTS; i++) {
                slot_clear(&p->slots[i]);
        }
        r = ring_init(&p->ring, cfg->ring_capacity ? cfg->ring_capacity : 4096);
        if (r < 0) {
                free(p);
                return r;
        }
        memset(p->ring.entries, 0, ring_capacity(&p->ring) * sizeof(RingEntry));
        if (mlock(p, sizeof(*p)) < 0 ||
            mlock(p->ring.entries, ring_capacity(&p->ring) * sizeof(RingEntry)) < 0) {
                r = -errno;
                ring_destroy(&p->ring);
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

static void set_state(Probe *p, ProbeState s)
{
        atomic_store_explicit(&p->status.state, s, memory_order_release);
}

/* Ends the probe thread's work with @error; the message is published by the release store of
 * the state, so an owner that sees PROBE_FAILED reads it whole. */
static void set_failed(Probe *p, int error, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void set_failed(Probe *p, int error, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(p->status.failure, sizeof(p->status.failure), fmt, ap);
        va_end(ap);
        atomic_store(&p->status.error, error);
        set_state(p, PROBE_FAILED);
}

static void sleep_ns(long ns)
{
        struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};

        nanosleep(&ts, NULL);
}

/* Which CPU are we on, from the source choose_cpu_source() picked. Once per
 * PROBE_CHECK_EVERY samples, so a branch and a call cost nothing that shows. */
static int current_cpu(const Probe *p)
{
        if (p->own.cpu_source == PROBE_CPU_SOURCE_TSC_AUX) {
                return (int)probe_hw_tsc_aux();
        }
        return sched_getcpu();
}

#define TSC_AUX_CHECKS 8

/* Chooses where the loop reads its CPU number. TSC_AUX needs no memory access, but it is our
 * CPU number only where Linux wrote it: a hypervisor may run rdtscp without announcing it in
 * CPUID and leave TSC_AUX as it was (0x56 on CPU 0 and 0x85 on CPU 1 on one host), and a probe
 * that trusted it would think it had migrated at every check, and re-pin and preheat for ever.
 * So TSC_AUX only where CPUID has rdtscp and it reads our CPU, as sched_getcpu() does, every
 * time out of a few; otherwise sched_getcpu(), which glibc reads from the rseq area without a
 * syscall. Runs pinned, before preheat. */
static void choose_cpu_source(Probe *p)
{
        const int cpu = p->fixed.cfg.cpu;
        char *note = p->status.cpu_note;
        const size_t n = sizeof(p->status.cpu_note);

        p->own.cpu_source = PROBE_CPU_SOURCE_GETCPU;
        if (!probe_hw_have_rdtscp()) {
                snprintf(note, n,
                         "CPU %d: sched_getcpu(); the CPU has no rdtscp (CPUID 0x80000001 EDX "
                         "bit 27)",
                         cpu);
        } else {
                for (int i = 0; i < TSC_AUX_CHECKS; i++) {
                        unsigned aux = probe_hw_tsc_aux();
                        int kernel = sched_getcpu();

                        if (aux != (unsigned)cpu || kernel != cpu) {
                                snprintf(note, n,
                                         "CPU %d: sched_getcpu(); TSC_AUX read %u (%#x) where "
                                         "the kernel said CPU %d, so it is not the CPU number",
                                         cpu, aux, aux, kernel);
                                goto done;
                        }
                }
                p->own.cpu_source = PROBE_CPU_SOURCE_TSC_AUX;
                snprintf(note, n, "CPU %d: TSC_AUX (rdtscp), which read %d as sched_getcpu() did",
                         cpu, cpu);
        }
done:
        atomic_store(&p->status.cpu_source, p->own.cpu_source);
}

enum loop_exit { LOOP_DEADLINE, LOOP_STOP, LOOP_MIGRATED };

/* Moves the (previous gap, gap) pair counts into @s's histograms and clears them. */
static void fold_pairs(ProbeSlot *s, uint64_t *pairs)
{
        for (uint64_t prev = 0; prev < HIST_EXACT; prev++) {
                for (uint64_t gap = 0; gap < HIST_EXACT; gap++) {
                        uint64_t c = pairs[(prev << HIST_EXACT_BITS) + gap];

                        if (c == 0) {
                                continue;
                        }
                        s->gap_hist.counts[gap] += c;
                        if (gap < prev) {
                                s->dd_hist.neg.counts[prev - gap] += c;
                        } else {
                                s->dd_hist.pos.counts[gap - prev] += c;
                        }
                }
        }
        memset(pairs, 0, PAIR_TABLE * sizeof(uint64_t));
}

/* Completes the statistics of a slot the probe filled: adds what the exact buckets hold to the
 * squares and extremes the loop kept for large values. Done once, by the owner, on its copy. */
static void slot_finalize(ProbeSlot *s)
{
        for (uint64_t v = 0; v < HIST_EXACT; v++) {
                uint64_t c = s->gap_hist.counts[v], n = s->dd_hist.neg.counts[v],
                         q = s->dd_hist.pos.counts[v];

                if (c != 0) {
                        s->gap.sumsq += (unsigned __int128)c * v * v;
                        s->gap.min = v < s->gap.min ? v : s->gap.min;
                        s->gap.max = v > s->gap.max ? v : s->gap.max;
                }
                if (n != 0) {
                        s->dd.sumsq += (unsigned __int128)n * v * v;
                        s->dd.min = -(int64_t)v < s->dd.min ? -(int64_t)v : s->dd.min;
                        s->dd.max = -(int64_t)v > s->dd.max ? -(int64_t)v : s->dd.max;
                }
                if (q != 0) {
                        s->dd.sumsq += (unsigned __int128)q * v * v;
                        s->dd.min = (int64_t)v < s->dd.min ? (int64_t)v : s->dd.min;
                        s->dd.max = (int64_t)v > s->dd.max ? (int64_t)v : s->dd.max;
                }
        }
}

/* The slow half of a sample: a gap, or a previous gap, too large for the pair table (a few in
 * a thousand on a busy machine, almost none on a quiet core), interruptions and time lost.
 * Squares and extremes are kept here only for values beyond the exact buckets; slot_finalize()
 * adds the rest from the histograms. Every gap at or above the band or the threshold comes
 * here, however few ticks that is: the loop's fast path ends below both (see set_floor()). */
static inline __attribute__((always_inline)) void record_slow(Probe *p, ProbeSlot *slot,
                                                              uint64_t now, uint64_t gap,
                                                              uint64_t prev_gap, uint64_t band,
                                                              uint64_t floor, uint64_t threshold)
{
        const int64_t dd = (int64_t)(gap - prev_gap);
        const uint64_t mag = dd < 0 ? -(uint64_t)dd : (uint64_t)dd;

        if (gap >= HIST_EXACT) {
                slot->gap_hist.counts[histogram_index(gap)]++;
                slot->gap.sumsq += (unsigned __int128)gap * gap;
                slot->gap.min = gap < slot->gap.min ? gap : slot->gap.min;
                slot->gap.max = gap > slot->gap.max ? gap : slot->gap.max;
        } else {
                slot->gap_hist.counts[gap]++;
        }
        if (gap >= band) {
                slot->lost_ticks += gap - floor;
        }
        if (gap >= threshold) {
                slot->events++;
                ring_push(&p->ring, now - gap, gap);
        }
        if (mag >= HIST_EXACT) {
                (dd < 0 ? &slot->dd_hist.neg : &slot->dd_hist.pos)->counts[histogram_index(mag)]++;
                slot->dd.sumsq += (unsigned __int128)mag * mag;
                slot->dd.min = dd < slot->dd.min ? dd : slot->dd.min;
                slot->dd.max = dd > slot->dd.max ? dd : slot->dd.max;
        } else {
                (dd < 0 ? slot->dd_hist.neg.counts : slot->dd_hist.pos.counts)[mag]++;
        }
}

/* The hot loop. Per sample: one counter read, one subtraction, one compare that sends the rare
 * large values to record_slow(), and one increment in the pair table, which records the gap
 * and the diff-of-diff at once. It never sleeps and makes no syscall: any time the CPU is
 * taken away shows up as a longer gap, which is what we measure. Counts and sums need no
 * per-sample work: every PROBE_CHECK_EVERY samples the count grows by that much, the gaps add
 * up to the counter's advance and the diff-of-diffs to the change of the gap. That is also
 * when it looks at the epoch word and the CPU number. The function is always inlined with
 * constant @src and @preheat, so each combination gets its own specialisation.
 *
 * What one sample costs (x86-64, gcc 12 -O2, objdump of the rdtsc recording loop): the rdtsc
 * and 18 instructions: six register moves (two take rdtsc's edx:eax, four carry values to the
 * next sample; renamed away), shl + or to join the halves, sub for the gap, or + cmp + branch
 * against the fast path's bound, shl + lea for the next cell and a lea of its address for the
 * checks, the increment (one add to memory: load, add, store), and sub + branch of the countdown.
 * The only chain from one sample to the next is rdtsc -> sub -> or/cmp, so the loop runs as
 * fast as rdtsc lets it. The increment is one sample late on purpose: it goes to the previous
 * sample's cell, whose address is known long before. Incrementing the cell of the gap just
 * read cost a third of the rate on AMD EPYC (Zen 4, under KVM): there an rdtsc behaves as if it
 * waits for the address of every older store, which put rdtsc -> sub -> shl/add -> store
 * address on the path of every sample (64 M samples/s against 101 M for the bare loop; a store
 * at a fixed address, or a load at the gap's address, did not slow it). One sample late it runs
 * at 99 M/s. On Intel, where rdtsc does not wait for older stores (the earlier loop reached
 * 0.90x the bare one there), it is the same instructions with their inputs ready earlier, so it
 * cannot be slower. Consecutive samples often hit the same cell, so an increment reads what the
 * one before stored (store-to-load forwarding, ~5 cycles): a chain of its own, far shorter
 * than an rdtsc (~25-40 cycles), and off the samples' path. Counting runs of an unchanged pair
 * in a register instead was slower here (86 M/s): the gaps alternate between 26 and 52 ticks,
 * so runs are short and the branch that ends them is mispredicted. */
static inline __attribute__((always_inline)) enum loop_exit
probe_loop(Probe *p, const CounterSource src, const bool preheat, uint64_t deadline_ticks)
{
        const uint64_t band = preheat ? UINT64_MAX : atomic_load(&p->status.band_ticks);
        const uint64_t floor = atomic_load(&p->status.floor_ticks);
        const uint64_t threshold = preheat ? UINT64_MAX : p->own.threshold_ticks;
        const uint64_t fast_below = preheat ? HIST_EXACT : p->own.fast_below;
        const int cpu = p->fixed.cfg.cpu;
        uint64_t epoch = atomic_load_explicit(&p->ctl.epoch, memory_order_acquire);
        ProbeSlot *slot = preheat ? &p->preheat : &p->slots[epoch % PROBE_SLOTS];
        uint64_t *pairs = preheat ? p->preheat_pairs : p->pairs[epoch % PROBE_SLOTS];
        uint64_t prev, prev_gap, chunk_prev, chunk_prev_gap, cell = PAIR_SINK;
        unsigned countdown = PROBE_CHECK_EVERY;

        atomic_store_explicit(&p->status.acked_epoch, epoch, memory_order_release);
        /* Two reads first, so the first recorded gap already has a predecessor. */
        chunk_prev = probe_hw_read(src);
        prev = probe_hw_read(src);
        chunk_prev_gap = prev_gap = prev - chunk_prev;
        chunk_prev = prev;
        if (slot->start_ticks == 0) {
                slot->start_ticks = prev;
        }
        for (;;) {
                const uint64_t now = probe_hw_read(src);
                const uint64_t gap = now - prev;

                prev = now;
                /* The previous sample's increment (the sink's after the slow path). */
                pairs[cell]++;
                cell = PAIR_SINK;
                if (likely((gap | prev_gap) < fast_below)) {
                        cell = (prev_gap << HIST_EXACT_BITS) + gap;
                } else {
                        record_slow(p, slot, now, gap, prev_gap, band, floor, threshold);
                }
                prev_gap = gap;
                if (unlikely(--countdown == 0)) {
                        uint64_t e;
                        int c;

                        countdown = PROBE_CHECK_EVERY;
                        slot->gap.count += PROBE_CHECK_EVERY;
                        slot->gap.sum += now - chunk_prev;
                        slot->dd.count += PROBE_CHECK_EVERY;
                        slot->dd.sum += (__int128)gap - (__int128)chunk_prev_gap;
                        slot->end_ticks = now;
                        chunk_prev = now;
                        chunk_prev_gap = gap;
                        c = current_cpu(p);
                        if (unlikely(c != cpu)) {
                                pairs[cell]++;
                                p->own.seen_cpu = c;
                                p->own.seen_ticks = now;
                                return LOOP_MIGRATED;
                        }
                        if (atomic_load_explicit(&p->ctl.stop, memory_order_relaxed)) {
                                pairs[cell]++;
                                return LOOP_STOP;
                        }
                        if (preheat && now >= deadline_ticks) {
                                pairs[cell]++;
                                return LOOP_DEADLINE;
                        }
                        e = atomic_load_explicit(&p->ctl.epoch, memory_order_acquire);
                        if (e != epoch) {
                                /* The old slot is whole before the probe says it moved on. */
                                pairs[cell]++;
                                cell = PAIR_SINK;
                                epoch = e;
                                if (!preheat) {
                                        slot = &p->slots[epoch % PROBE_SLOTS];
                                        pairs = p->pairs[epoch % PROBE_SLOTS];
                                        slot->start_ticks = now;
                                }
                                atomic_store_explicit(&p->status.acked_epoch, epoch,
                                                      memory_order_release);
                        }
                }
        }
}

static enum loop_exit run_preheat(Probe *p, uint64_t deadline)
{
        return p->fixed.cfg.counter.source == COUNTER_HW
                       ? probe_loop(p, COUNTER_HW, true, deadline)
                       : probe_loop(p, COUNTER_CLOCK, true, deadline);
}

static enum loop_exit run_record(Probe *p)
{
        return p->fixed.cfg.counter.source == COUNTER_HW ? probe_loop(p, COUNTER_HW, false, 0)
                                                         : probe_loop(p, COUNTER_CLOCK, false, 0);
}

static uint64_t counter_now(const Probe *p)
{
        return probe_hw_read(p->fixed.cfg.counter.source);
}

/* Sets the loop's floor from what preheat saw. Gaps at or above floor + max(floor, 100 ns)
 * count as time lost: far enough above the loop's own period that cache and branch effects
 * stay out, low enough to catch every real interruption. The pair table then takes only gaps
 * below both the band and the threshold (rounded down to a power of two, so one compare checks
 * a gap and its predecessor): on a slow counter (cntvct at 25 MHz: 64 ticks are 2.56 us) the
 * loop still sees every interruption and every lost tick, and on a fast one the bound stays at
 * the end of the exact buckets. */
static void set_floor(Probe *p)
{
        const TickConv *conv = &p->fixed.cfg.counter.conv;
        uint64_t floor, band, fast = HIST_EXACT, min_band = tickconv_from_ns(conv, 100);

        fold_pairs(&p->preheat, p->preheat_pairs);
        slot_finalize(&p->preheat);
        floor = histogram_quantile(&p->preheat.gap_hist, 0.5);
        if (floor > p->preheat.gap.max) {
                floor = p->preheat.gap.max;
        }
        band = floor + (floor > min_band ? floor : min_band);
        while (fast > 1 && (fast > band || fast > p->own.threshold_ticks)) {
                fast >>= 1;
        }
        p->own.fast_below = fast;
        atomic_store(&p->status.floor_ticks, floor);
        atomic_store(&p->status.band_ticks, band);
}

/* Acknowledges epochs while not recording, so the owner's harvest goes on (with empty slots). */
static void ack_epoch(Probe *p)
{
        uint64_t e = atomic_load_explicit(&p->ctl.epoch, memory_order_acquire);

        if (e != atomic_load_explicit(&p->status.acked_epoch, memory_order_relaxed)) {
                atomic_store_explicit(&p->status.acked_epoch, e, memory_order_release);
        }
}

static int pin_self(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                return -errno;
        }
        return sched_getcpu() == cpu ? 0 : -EAGAIN;
}

/* Off our CPU (hotplug, cpuset change): record nothing, do not spin where we landed, and try
 * to go back every 100 ms until we can or are told to stop. Returns 1 when the first try took
 * us back, 0 when a later one did, -1 when told to stop. */
static int wait_for_cpu(Probe *p, int kernel_cpu)
{
        set_state(p, PROBE_MIGRATED);
        atomic_fetch_add(&p->status.migrations, 1);
        atomic_store(&p->status.migrated_to, kernel_cpu);
        for (int tries = 0;; tries++) {
                ack_epoch(p);
                if (atomic_load(&p->ctl.stop)) {
                        return -1;
                }
                if (pin_self(p->fixed.cfg.cpu) == 0) {
                        atomic_store(&p->status.migrated_to, -1);
                        return tries == 0;
                }
                atomic_store(&p->status.migrated_to, sched_getcpu());
                sleep_ns(100000000L);
        }
}

/* Counts a migration that pinning undid at once: the CPU number said we were elsewhere and
 * either the kernel disagreed (the number lies) or something moved us and let us come back.
 * Either may happen once; repeated, re-pinning and preheating again would go on for ever, so
 * the probe fails saying what it saw. A run without one forgives the count only when it is
 * longer than the probe had lived at the last one, up to an hour (plus its preheat and
 * PROBE_FALSE_MIGRATION_WINDOW_NS): a forgiving window that grows with the probe's age cannot
 * be outrun by a source that lies at any steady pace up to one an hour, which fails the probe by
 * its fourth lie, while an affinity reset once in a long while is not held against a probe
 * that ran clean for an hour since. Time is the probe's own counter, read at the check that saw
 * the number. Returns true when it failed. */
static bool false_migration(Probe *p, int kernel_cpu)
{
        const TickConv *conv = &p->fixed.cfg.counter.conv;
        const uint64_t t = p->own.seen_ticks, last = p->own.false_last_ticks;
        const int cpu = p->fixed.cfg.cpu;
        uint64_t forgive_ns;
        unsigned n;
        double span;

        if (p->own.false_migrations > 0) {
                uint64_t age_ns = tickconv_to_ns(conv, last - p->own.start_ticks);

                forgive_ns = (age_ns < PROBE_FALSE_MIGRATION_AGE_MAX_NS
                                      ? age_ns
                                      : PROBE_FALSE_MIGRATION_AGE_MAX_NS) +
                             p->fixed.cfg.preheat_ns + PROBE_FALSE_MIGRATION_WINDOW_NS;
                if (tickconv_to_ns(conv, t - last) > forgive_ns) {
                        p->own.false_migrations = 0;
                }
        }
        if (p->own.false_migrations == 0) {
                p->own.false_first_ticks = t;
        }
        n = ++p->own.false_migrations;
        p->own.false_last_ticks = t;
        if (n < PROBE_FALSE_MIGRATIONS_MAX) {
                return false;
        }
        span = (double)tickconv_to_ns(conv, t - p->own.false_first_ticks) / 1e6;
        if (kernel_cpu == cpu) {
                set_failed(p, -EIO,
                           "CPU %d: %s said CPU %d while sched_getcpu() said %d, %u times in "
                           "%.0f ms although the probe never left; its CPU number cannot be "
                           "trusted",
                           cpu,
                           p->own.cpu_source == PROBE_CPU_SOURCE_TSC_AUX ? "TSC_AUX (rdtscp)"
                                                                         : "sched_getcpu()",
                           p->own.seen_cpu, kernel_cpu, n, span);
        } else {
                set_failed(p, -EBUSY,
                           "CPU %d: the probe was moved off it %u times in %.0f ms (last to CPU "
                           "%d) and could pin itself back at once each time; something keeps "
                           "changing its affinity",
                           cpu, n, span, kernel_cpu);
        }
        return true;
}

static void *probe_thread(void *userdata)
{
        Probe *p = userdata;
        uint64_t deadline;
        int r;

        atomic_store(&p->status.tid, (int)syscall(SYS_gettid));
        r = pin_self(p->fixed.cfg.cpu);
        if (r < 0) {
                set_failed(p, r, "CPU %d: cannot pin the probe thread to it: %s", p->fixed.cfg.cpu,
                           strerror(-r));
                return NULL;
        }
        if (p->fixed.cfg.priority > 0) {
                struct sched_param sp = {.sched_priority = p->fixed.cfg.priority};

                r = -pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
                if (r < 0) {
                        set_failed(p, r,
                                   "CPU %d: cannot run the probe SCHED_FIFO at priority %d: %s",
                                   p->fixed.cfg.cpu, p->fixed.cfg.priority, strerror(-r));
                        return NULL;
                }
        }
        if (p->fixed.cfg.thread_init) {
                p->fixed.cfg.thread_init(p->fixed.cfg.thread_init_userdata);
        }
        choose_cpu_source(p);

        for (;;) {
                int kernel_cpu;

                set_state(p, PROBE_PREHEATING);
                slot_clear(&p->preheat);
                memset(p->preheat_pairs, 0, sizeof(p->preheat_pairs));
                deadline = counter_now(p);
                if (!p->own.started) {
                        p->own.start_ticks = deadline;
                        p->own.started = true;
                }
                deadline += tickconv_from_ns(&p->fixed.cfg.counter.conv, p->fixed.cfg.preheat_ns);
                r = run_preheat(p, deadline);
                if (r == LOOP_DEADLINE) {
                        /* Once: the floor of a probe that went back to its CPU stays. */
                        if (!p->own.floor_set) {
                                set_floor(p);
                                p->own.floor_set = true;
                        }
                        set_state(p, PROBE_RUNNING);
                        r = run_record(p);
                }
                if (r == LOOP_STOP) {
                        break;
                }
                kernel_cpu = sched_getcpu();
                r = wait_for_cpu(p, kernel_cpu);
                if (r < 0) {
                        break;
                }
                if (r == 1 && false_migration(p, kernel_cpu)) {
                        return NULL;
                }
        }
        set_state(p, PROBE_STOPPED);
        return NULL;
}

int probe_start(Probe *p)
{
        struct sched_param other = {.sched_priority = 0};
        pthread_attr_t attr;
        int r;

        if (p->owner.thread_started) {
                return -EALREADY;
        }
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        /* SCHED_OTHER, whatever the caller's policy (jitterd's event loop may be SCHED_FIFO):
         * the thread sets SCHED_FIFO itself when its configuration asks for it. */
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        pthread_attr_setschedparam(&attr, &other);
        r = pthread_create(&p->owner.thread, &attr, probe_thread, p);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                return -r;
        }
        p->owner.thread_started = true;
        /* Wait until it runs on its CPU (or could not); at most 5 s. */
        for (uint64_t end = now_ns(CLOCK_MONOTONIC) + 5000000000ULL;
             now_ns(CLOCK_MONOTONIC) < end;) {
                ProbeState s = probe_state(p);

                if (s == PROBE_FAILED) {
                        r = probe_error(p);
                        probe_stop(p);
                        return r;
                }
                if (s != PROBE_STARTING) {
                        return 0;
                }
                sleep_ns(1000000L);
        }
        probe_stop(p);
        return -ETIMEDOUT;
}

void probe_request_stop(Probe *p)
{
        atomic_store(&p->ctl.stop, 1);
}

int probe_stop(Probe *p)
{
        return probe_stop_timeout(p, PROBE_STOP_TIMEOUT_NS);
}

int probe_stop_timeout(Probe *p, uint64_t timeout_ns)
{
        struct timespec ts;
        uint64_t t;
        int r;

        if (!p->owner.thread_started) {
                return 0;
        }
        probe_request_stop(p);
        t = now_ns(CLOCK_REALTIME) + timeout_ns;
        ts.tv_sec = (time_t)(t / NSEC_PER_SEC);
        ts.tv_nsec = (long)(t % NSEC_PER_SEC);
        /* EINTR is not among its errors, but a signal may still end the wait early. */
        do {
                r = pthread_timedjoin_np(p->owner.thread, NULL, &ts);
        } while (r == EINTR);
        if (r != 0) {
                p->owner.abandoned = true;
                return -ETIMEDOUT;
        }
        p->owner.thread_started = false;
        p->owner.abandoned = false;
        return 0;
}

void probe_free(Probe *p)
{
        if (!p) {
                return;
        }
        /* A thread that would not stop still uses the memory. */
        if (p->owner.abandoned || probe_stop(p) < 0) {
                return;
        }
        munlock(p->ring.entries, ring_capacity(&p->ring) * sizeof(RingEntry));
        ring_destroy(&p->ring);
        munlock(p, sizeof(*p));
        free(p);
}

ProbeState probe_state(const Probe *p)
{
        return atomic_load_explicit(&((Probe *)p)->status.state, memory_order_acquire);
}

int probe_error(const Probe *p)
{
        return atomic_load(&((Probe *)p)->status.error);
}

const char *probe_failure(const Probe *p)
{
        return probe_state(p) == PROBE_FAILED ? p->status.failure : "";
}

ProbeCpuSource probe_cpu_source(const Probe *p)
{
        /* The state's release store publishes the note with the source. */
        if (probe_state(p) == PROBE_STARTING) {
                return PROBE_CPU_SOURCE_NONE;
        }
        return atomic_load(&((Probe *)p)->status.cpu_source);
}

const char *probe_cpu_source_name(ProbeCpuSource s)
{
        switch (s) {
        case PROBE_CPU_SOURCE_TSC_AUX:
                return "tsc_aux";
        case PROBE_CPU_SOURCE_GETCPU:
                return "getcpu";
        case PROBE_CPU_SOURCE_NONE:
        default:
                return "none";
        }
}

const char *probe_cpu_source_note(const Probe *p)
{
        return probe_cpu_source(p) == PROBE_CPU_SOURCE_NONE ? "" : p->status.cpu_note;
}

int probe_migrated_to(const Probe *p)
{
        return atomic_load(&((Probe *)p)->status.migrated_to);
}

uint64_t probe_migrations(const Probe *p)
{
        return atomic_load(&((Probe *)p)->status.migrations);
}

int probe_tid(const Probe *p)
{
        return atomic_load(&((Probe *)p)->status.tid);
}

uint64_t probe_floor_ticks(const Probe *p)
{
        return atomic_load(&((Probe *)p)->status.floor_ticks);
}

uint64_t probe_band_ticks(const Probe *p)
{
        return atomic_load(&((Probe *)p)->status.band_ticks);
}

uint64_t probe_epoch(const Probe *p)
{
        return atomic_load(&((Probe *)p)->ctl.epoch);
}

uint64_t probe_acked_epoch(const Probe *p)
{
        return atomic_load_explicit(&((Probe *)p)->status.acked_epoch, memory_order_acquire);
}

int64_t probe_advance(Probe *p)
{
        uint64_t e = atomic_load(&p->ctl.epoch);

        /* A probe whose thread has ended writes nothing more: no acknowledgement to wait for. */
        if (probe_acked_epoch(p) != e && p->owner.thread_started) {
                return -EBUSY;
        }
        /* The next slot must have been harvested, or the probe would add to old data. */
        if (e + 1 - p->owner.harvested_epoch > PROBE_SLOTS) {
                return -EBUSY;
        }
        atomic_store_explicit(&p->ctl.epoch, e + 1, memory_order_release);
        return (int64_t)(e + 1);
}

int probe_harvest(Probe *p, uint64_t epoch, ProbeSlot *ret)
{
        ProbeSlot *s;

        if (epoch <= p->owner.harvested_epoch) {
                return -ESTALE;
        }
        if (epoch >= probe_epoch(p) || (probe_acked_epoch(p) <= epoch && p->owner.thread_started)) {
                return -EAGAIN;
        }
        s = &p->slots[epoch % PROBE_SLOTS];
        /* Slots of skipped epochs (owner harvested out of order) are simply dropped. */
        *ret = *s;
        slot_clear(s);
        fold_pairs(ret, p->pairs[epoch % PROBE_SLOTS]);
        slot_finalize(ret);
        p->owner.harvested_epoch = epoch;
        return 0;
}

EventRing *probe_ring(Probe *p)
{
        return &p->ring;
}

size_t probe_memory_bytes(const Probe *p)
{
        return sizeof(*p) + ring_capacity(&p->ring) * sizeof(RingEntry);
}

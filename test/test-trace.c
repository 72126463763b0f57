/* The trace recorder against this kernel: its instance (CPU mask, clock, nothing left behind,
 * the global buffer untouched), trace timestamps against rdtsc read around trace_marker
 * writes (x86-tsc directly, mono_raw mapped as on arm64), lost events and a full window, and
 * events this kernel lacks or refuses (left out, the rest recorded, the cost said), the
 * reasons given when tracing is not possible: no tracefs at the root, a non-root user
 * without capabilities, the privileges that do suffice. Skips when tracefs cannot be used. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counter.h"
#include "trace.h"
#include "need-cpu1.h"
#include "tracefs-mount.h"

#define CPU 1
#define MARKS 200

static CounterInfo counter;
static char instance[64];

static void options(TraceOptions *o, const int *cpus)
{
        *o = (TraceOptions){
                .instance = instance,
                .cpus = cpus,
                .n_cpus = 1,
                .counter = COUNTER_HW,
                .counter_hz = counter.hz,
        };
}

/* The recorder of the running test, freed by the teardown when the test failed before it
 * could free it (its instance would stay behind). */
static TraceRecorder *current;

static TraceRecorder *new_recorder(TraceOptions *o)
{
        char reason[TRACE_REASON_MAX] = "";
        int r = trace_recorder_new(o, &current, reason, sizeof(reason));

        if (r < 0) {
                fail_msg("cannot record: %s", reason);
        }
        return current;
}

static void drop(TraceRecorder *t)
{
        assert_ptr_equal(t, current);
        current = trace_recorder_free(t);
}

static int teardown(void **state)
{
        (void)state;
        current = trace_recorder_free(current);
        return 0;
}

static void pin(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

static char *read_text(const char *path)
{
        static char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f) {
                return NULL;
        }
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return buf;
}

/* The instance's trace_marker, open for writing. */
static int open_marker(TraceRecorder *t)
{
        char path[4200];
        int fd;

        snprintf(path, sizeof(path), "%s/trace_marker", trace_recorder_dir(t));
        fd = open(path, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static const TraceRecord *find_mark(TraceRecorder *t, const char *text)
{
        size_t n;
        const TraceRecord *w = trace_recorder_records(t, CPU, &n);

        for (size_t i = 0; i < n; i++) {
                if (w[i].phase == TRACE_MARK && strncmp(w[i].name, text, strlen(text)) == 0 &&
                    (w[i].name[strlen(text)] == 0 || w[i].name[strlen(text)] == '\n')) {
                        return &w[i];
                }
        }
        return NULL;
}

/* Writes MARKS markers from CPU 1, each between two counter reads, and returns the worst
 * distance in ticks of a marker's timestamp outside its bracket, over the brackets that are
 * tight (the write was not interrupted: under 5 us), of which there must be half. */
static uint64_t marks_outside(TraceRecorder *t, uint64_t *ret_bracket)
{
        char text[32];
        uint64_t before[MARKS], after[MARKS], worst = 0, widest = 0, tight = counter.hz / 200000;
        int fd, n_tight = 0;

        fd = open_marker(t);
        pin(CPU);
        for (int k = 0; k < MARKS; k++) {
                int len = snprintf(text, sizeof(text), "mark %d", k);

                before[k] = counter_hw_read();
                assert_int_equal(write(fd, text, (size_t)len), len);
                after[k] = counter_hw_read();
                usleep(200);
        }
        close(fd);
        assert_true(trace_recorder_read(t) >= MARKS);
        for (int k = 0; k < MARKS; k++) {
                const TraceRecord *r;

                snprintf(text, sizeof(text), "mark %d", k);
                r = find_mark(t, text);
                if (!r) {
                        fail_msg("marker %d was not recorded", k);
                }
                if (after[k] - before[k] > tight) {
                        continue;
                }
                n_tight++;
                if (r->ticks < before[k] && before[k] - r->ticks > worst) {
                        worst = before[k] - r->ticks;
                }
                if (r->ticks > after[k] && r->ticks - after[k] > worst) {
                        worst = r->ticks - after[k];
                }
                if (after[k] - before[k] > widest) {
                        widest = after[k] - before[k];
                }
        }
        assert_true(n_tight >= MARKS / 2);
        *ret_bracket = widest;
        return worst;
}

static void test_instance(void **state)
{
        int cpus[] = {CPU};
        char path[4200], global_before[64], *s;
        TraceOptions o;
        TraceRecorder *t;

        (void)state;
        s = read_text(TEST_TRACEFS "/events/sched/sched_switch/enable");
        assert_non_null(s);
        snprintf(global_before, sizeof(global_before), "%.60s", s);
        options(&o, cpus);
        t = new_recorder(&o);
        snprintf(path, sizeof(path), TEST_TRACEFS "/instances/%s", instance);
        assert_string_equal(trace_recorder_dir(t), path);
        assert_string_equal(trace_recorder_clock(t), "x86-tsc");
        snprintf(path, sizeof(path), "%s/trace_clock", trace_recorder_dir(t));
        assert_non_null(strstr(read_text(path), "[x86-tsc]"));
        /* Only CPU 1: mask 2. */
        snprintf(path, sizeof(path), "%s/tracing_cpumask", trace_recorder_dir(t));
        s = read_text(path);
        assert_non_null(s);
        assert_int_equal(strtoull(s + strspn(s, "0,"), NULL, 16), 2);
        snprintf(path, sizeof(path), "%s/options/overwrite", trace_recorder_dir(t));
        assert_int_equal(atoi(read_text(path)), 1);
        snprintf(path, sizeof(path), "%s/events/sched/sched_switch/enable", trace_recorder_dir(t));
        assert_int_equal(atoi(read_text(path)), 1);
        /* This kernel has them all (the test's premise). */
        assert_non_null(strstr(trace_recorder_events(t), "irq_vectors:local_timer_entry"));
        assert_non_null(strstr(trace_recorder_events(t), "irq:irq_handler_entry"));
        assert_non_null(strstr(trace_recorder_events(t), "timer:hrtimer_expire_entry"));
        assert_string_equal(trace_recorder_missing(t), "");
        assert_string_equal(trace_recorder_refused(t), "");
        assert_string_equal(trace_recorder_unnamed(t), "");
        assert_string_equal(read_text(TEST_TRACEFS "/events/sched/sched_switch/enable"),
                            global_before);
        assert_true(trace_recorder_kernel_bytes(t) == TRACE_BUFFER_KB_DEFAULT * 1024u);
        assert_true(trace_recorder_memory_bytes(t) >= TRACE_WINDOW_DEFAULT * sizeof(TraceRecord));
        snprintf(path, sizeof(path), "%s", trace_recorder_dir(t));
        drop(t);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(errno, ENOENT);
}

/* x86-tsc timestamps are rdtsc values: each marker lies between the reads around it. */
static void test_tsc_clock(void **state)
{
        int cpus[] = {CPU};
        uint64_t bracket, worst;
        TraceOptions o;
        TraceRecorder *t;

        (void)state;
        options(&o, cpus);
        t = new_recorder(&o);
        worst = marks_outside(t, &bracket);
        printf("x86-tsc: markers outside their rdtsc bracket by at most %" PRIu64
               " ticks (widest tight bracket %" PRIu64 " ticks)\n",
               worst, bracket);
        assert_int_equal(worst, 0);
        drop(t);
}

/* mono_raw mapped with a counter pair, as on arm64: within the 2 us the analysis allows. */
static void test_mapped_clock(void **state)
{
        int cpus[] = {CPU};
        uint64_t bracket, worst;
        TraceOptions o;
        TraceRecorder *t;

        (void)state;
        options(&o, cpus);
        o.clock = "mono_raw";
        t = new_recorder(&o);
        assert_string_equal(trace_recorder_clock(t), "mono_raw");
        worst = marks_outside(t, &bracket);
        printf("mono_raw: markers outside their rdtsc bracket by at most %" PRIu64
               " ticks (%.0f ns)\n",
               worst, (double)worst * 1e9 / (double)counter.hz);
        assert_true(worst <= counter.hz / 500000);
        drop(t);
}

/* Only the probed CPUs are recorded. */
static void test_other_cpu_not_recorded(void **state)
{
        int cpus[] = {CPU};
        TraceOptions o;
        TraceRecorder *t;
        int fd;

        (void)state;
        options(&o, cpus);
        t = new_recorder(&o);
        fd = open_marker(t);
        pin(0);
        /* The kernel may refuse the write on a CPU the instance does not record. */
        (void)!write(fd, "from cpu 0", 10);
        pin(CPU);
        assert_int_equal(write(fd, "from cpu 1", 10), 10);
        close(fd);
        (void)trace_recorder_read(t);
        assert_non_null(find_mark(t, "from cpu 1"));
        assert_null(find_mark(t, "from cpu 0"));
        drop(t);
}

#define SPAN_MARKS 100

/* What the window holds of the numbered markers "n00".."n99", for a failure's message. */
static void explain_kept(TraceRecorder *t, uint64_t start, const TraceStats *st)
{
        size_t n, kept = 0;
        const TraceRecord *w = trace_recorder_records(t, CPU, &n);
        char first[CAUSE_NAME_MAX] = "none";
        int64_t first_at = 0;

        for (size_t i = 0; i < n; i++) {
                if (w[i].phase == TRACE_MARK && w[i].name[0] == 'n' && kept++ == 0) {
                        snprintf(first, sizeof(first), "%.3s", w[i].name);
                        first_at = (int64_t)(w[i].ticks - start);
                }
        }
        print_message("window: %zu records, %zu of the %d markers, the oldest %s at %+" PRId64
                      " ticks from the span's start, the oldest record at %+" PRId64 "; %" PRIu64
                      " records, %" PRIu64 " evicted, %" PRIu64 " losses, %" PRIu64
                      " sub-buffers, %" PRIu64 " reads\n",
                      n, kept, SPAN_MARKS, first, first_at, n ? (int64_t)(w[0].ticks - start) : 0,
                      st->records, st->evicted, st->losses, st->subbuffers, st->reads);
}

/* A tiny kernel buffer overwritten before it is read: the loss is counted, and an
 * interruption over it is marked. A small window that drops records: the same for what it
 * no longer holds. */
static void test_losses(void **state)
{
        int cpus[] = {CPU};
        TraceOptions o;
        TraceRecorder *t;
        TraceStats st;
        CauseList l;
        uint64_t t0, t1, t2;
        int fd;

        (void)state;
        options(&o, cpus);
        o.buffer_kb = 8;
        o.window_records = 64;
        t = new_recorder(&o);
        fd = open_marker(t);
        pin(CPU);
        t0 = counter_hw_read();
        for (int k = 0; k < 2000; k++) {
                assert_int_equal(write(fd, "a marker long enough to fill pages quickly", 42), 42);
        }
        t1 = counter_hw_read();
        (void)trace_recorder_read(t);
        trace_recorder_stats(t, &st);
        assert_true(st.losses >= 1);
        assert_int_equal(trace_recorder_explain(t, CPU, getpid(), t0, t1 - t0, &l), 0);
        assert_true(l.flags & CAUSES_LOST);
        /* Now the buffer keeps up, but the window holds 64 records: it cannot hold the 100
         * numbered markers written over the span, so the span is incomplete. */
        for (int k = 0; k < SPAN_MARKS; k++) {
                char text[8];
                int n = snprintf(text, sizeof(text), "n%02d", k);

                assert_int_equal(write(fd, text, (size_t)n), n);
                if (k % 10 == 9) {
                        (void)trace_recorder_read(t);
                }
        }
        t2 = counter_hw_read();
        close(fd);
        (void)trace_recorder_read(t);
        trace_recorder_stats(t, &st);
        assert_true(st.evicted > 0);
        assert_int_equal(trace_recorder_explain(t, CPU, getpid(), t1, t2 - t1, &l), 0);
        if (!(l.flags & CAUSES_LOST)) {
                explain_kept(t, t1, &st);
                fail_msg("a span the window cannot hold whole is called complete");
        }
        /* After the last read, a span with nothing in it is complete. */
        t1 = counter_hw_read();
        usleep(1000);
        t2 = counter_hw_read();
        assert_int_equal(trace_recorder_explain(t, CPU, getpid(), t1, t2 - t1, &l), 0);
        assert_false(l.flags & CAUSES_LOST);
        assert_int_equal(trace_recorder_explain(t, 0, getpid(), t1, t2 - t1, &l), -ENOENT);
        drop(t);
}

static uint64_t bounded(uint64_t period_ns)
{
        return period_ns < TRACE_READ_PERIOD_MIN_NS   ? TRACE_READ_PERIOD_MIN_NS
               : period_ns > TRACE_READ_PERIOD_MAX_NS ? TRACE_READ_PERIOD_MAX_NS
                                                      : period_ns;
}

/* The next read asked for after one that read @pages sub-buffers, begun between @lo_ns and
 * @hi_ns after the one before (as the test timed the calls): the time a quarter of the kernel
 * buffer (@quarter sub-buffers) takes at that rate, within the minimum and the maximum. */
static void check_period(TraceRecorder *t, unsigned pages, unsigned quarter, uint64_t lo_ns,
                         uint64_t hi_ns)
{
        uint64_t got = trace_recorder_read_period_ns(t);
        uint64_t lo = bounded(lo_ns * quarter / (pages ? pages : 1));
        uint64_t hi = bounded(hi_ns * quarter / (pages ? pages : 1));

        printf("  %u sub-buffers in %.1f to %.1f ms: next read in %.1f ms (%.1f to %.1f ms by "
               "the test)\n",
               pages, (double)lo_ns / 1e6, (double)hi_ns / 1e6, (double)got / 1e6, (double)lo / 1e6,
               (double)hi / 1e6);
        assert_true(got >= TRACE_READ_PERIOD_MIN_NS && got <= TRACE_READ_PERIOD_MAX_NS);
        if (pages == 0) {
                assert_int_equal(got, TRACE_READ_PERIOD_MAX_NS);
                return;
        }
        assert_true(got >= lo);
        assert_true(got <= hi);
}

/* How soon to read again: the longest period before a first read; after a read 100 ms after
 * the one before, on the CPU as it is and then after about half a kernel buffer of markers, in
 * the time a quarter of the buffer takes at the rate the test counts (sub-buffers read, the
 * reads timed), within the bounds: with the markers, sooner than the time between the reads. */
static void test_read_period(void **state)
{
        int cpus[] = {CPU};
        TraceOptions o;
        TraceRecorder *t;
        TraceStats st0, st1;
        uint64_t t0, t1, t2, t3;
        unsigned quarter;
        char text[256];
        int fd;

        (void)state;
        options(&o, cpus);
        o.buffer_kb = 64;
        quarter = o.buffer_kb / 4 / 4; /* 4 KiB sub-buffers */
        t = new_recorder(&o);
        /* The timed reads, as where the kernel has no watermark. */
        trace_recorder_unwatch(t);
        assert_false(trace_recorder_watching(t));
        assert_int_equal(trace_recorder_watch_fd(t, 0), -1);
        assert_int_equal(trace_recorder_read_period_ns(t), TRACE_READ_PERIOD_MAX_NS);
        t0 = now_ns(CLOCK_MONOTONIC);
        (void)trace_recorder_read(t);
        t1 = now_ns(CLOCK_MONOTONIC);
        trace_recorder_stats(t, &st0);
        usleep(100000);
        t2 = now_ns(CLOCK_MONOTONIC);
        (void)trace_recorder_read(t);
        t3 = now_ns(CLOCK_MONOTONIC);
        trace_recorder_stats(t, &st1);
        check_period(t, (unsigned)(st1.subbuffers - st0.subbuffers), quarter, t2 - t1, t3 - t0);

        fd = open_marker(t);
        pin(CPU);
        memset(text, 'x', sizeof(text));
        for (int k = 0; k < 100; k++) {
                assert_int_equal(write(fd, text, sizeof(text)), (ssize_t)sizeof(text));
        }
        close(fd);
        pin(0);
        usleep(100000);
        t0 = t2;
        t1 = t3;
        t2 = now_ns(CLOCK_MONOTONIC);
        (void)trace_recorder_read(t);
        t3 = now_ns(CLOCK_MONOTONIC);
        trace_recorder_stats(t, &st0);
        assert_true(st0.subbuffers - st1.subbuffers > quarter);
        check_period(t, (unsigned)(st0.subbuffers - st1.subbuffers), quarter, t2 - t1, t3 - t0);
        /* More than a quarter since the read before: sooner than that came. */
        assert_true(trace_recorder_read_period_ns(t) < t3 - t0);
        drop(t);
}

/* Writes trace markers of 256 bytes on CPU until @bytes are in its buffer. */
static void fill(TraceRecorder *t, size_t bytes)
{
        char text[256];
        int fd = open_marker(t);

        memset(text, 'x', sizeof(text));
        pin(CPU);
        for (size_t n = 0; n < bytes; n += sizeof(text)) {
                assert_int_equal(write(fd, text, sizeof(text)), (ssize_t)sizeof(text));
        }
        pin(0);
        close(fd);
}

/* Whether @fd polls readable within @ms. */
static bool readable(int fd, int ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};

        return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The daemon's default: a quarter is 16 sub-buffers, far from the one or two that a few markers
 * and the host's own records fill between two reads (with 64 KiB, a quarter was 4, and two were
 * already half of it). */
#define WATCHED_BUFFER (256 * 1024)

/* A recorder of CPU with a buffer of WATCHED_BUFFER bytes whose reads the watermark wakes; skips
 * the test on a kernel that does not take it. */
static TraceRecorder *new_watched_recorder(void)
{
        int cpus[] = {CPU};
        TraceOptions o;
        TraceRecorder *t;

        options(&o, cpus);
        o.buffer_kb = WATCHED_BUFFER / 1024;
        t = new_recorder(&o);
        if (!trace_recorder_watching(t)) {
                drop(t);
                print_message("skipped: this kernel does not take the trace buffer's watermark "
                              "(buffer_percent): the daemon's reads are timed\n");
                skip();
        }
        return t;
}

/* The watermark, as this kernel keeps it: the watch descriptor is not readable while the
 * buffer holds less than TRACE_WATERMARK_PERCENT, becomes readable once markers fill more, and
 * is quiet again after a read. */
static void test_watermark(void **state)
{
        size_t buffer = WATCHED_BUFFER;
        TraceRecorder *t = new_watched_recorder();
        int fd;

        (void)state;
        fd = trace_recorder_watch_fd(t, 0);
        assert_true(fd >= 0);
        assert_int_equal(trace_recorder_read_period_ns(t), UINT64_MAX);
        (void)trace_recorder_read(t);
        /* A tenth of the buffer: below the watermark (what CPU 1 makes meanwhile is far less
         * on this VM: about 30 KB a second with the tick). */
        fill(t, buffer / 10);
        assert_false(readable(fd, 0));
        fill(t, buffer * TRACE_WATERMARK_PERCENT / 100);
        assert_true(readable(fd, 1000));
        (void)trace_recorder_read(t);
        assert_false(readable(fd, 0));
        assert_true(trace_recorder_watching(t));
        drop(t);
}

/* How the recorder judges the kernel's wake-ups, on this kernel, whose watermark works
 * (test_watermark):
 * - a reader that is late while the kernel did wake (its descriptor readable) is not taken for
 *   a kernel that does not wake: three reads in a row, each long after the one before, that
 *   find the buffer nine tenths full, keep the watching;
 * - three reads in a row said to be woken while the buffer holds a sub-buffer or two, as a
 *   kernel whose poll() ignores the watermark (before 6.1) would wake them, end it: the
 *   descriptors are no longer given out (they stay open until trace_recorder_unwatch()), and
 *   the reads are timed again. */
static void test_watermark_judged(void **state)
{
        size_t buffer = WATCHED_BUFFER;
        TraceRecorder *t = new_watched_recorder();

        (void)state;
        (void)trace_recorder_read(t);
        for (int k = 0; k < 3; k++) {
                usleep(50000); /* beyond 4 * TRACE_READ_PERIOD_MIN_NS */
                fill(t, buffer * 9 / 10);
                assert_true(readable(trace_recorder_watch_fd(t, 0), 1000));
                (void)trace_recorder_read(t);
                assert_true(trace_recorder_watching(t));
        }
        for (int k = 0; k < 3; k++) {
                assert_true(trace_recorder_watching(t));
                fill(t, 512);
                trace_recorder_woken(t);
                (void)trace_recorder_read(t);
        }
        assert_false(trace_recorder_watching(t));
        assert_int_equal(trace_recorder_watch_fd(t, 0), -1);
        assert_true(trace_recorder_read_period_ns(t) <= TRACE_READ_PERIOD_MAX_NS);
        trace_recorder_unwatch(t);
        drop(t);
}

/* The enable switch of @event ("sched/sched_switch") in the instance @dir: 1, 0, or -1. */
static int enabled(const char *dir, const char *event)
{
        char path[4200];
        const char *s;

        if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/enable", dir, event) >=
            sizeof(path)) {
                return -1;
        }
        s = read_text(path);
        return s ? atoi(s) : -1;
}

/* Events this kernel lacks are left out, the rest recorded: the missing kinds and what they
 * cost are said, and an entry whose exit is missing is not enabled alone. */
static void test_missing_event(void **state)
{
        static const char *const absent[] = {"sched:sched_switch",
                                             "workqueue:workqueue_execute_end", NULL};
        int cpus[] = {CPU};
        size_t n, timers = 0, switches = 0;
        const TraceRecord *w;
        TraceOptions o;
        TraceRecorder *t;

        (void)state;
        options(&o, cpus);
        o.absent = absent;
        t = new_recorder(&o);
        printf("events: %s\nmissing: %s; not named: %s\n", trace_recorder_events(t),
               trace_recorder_missing(t), trace_recorder_unnamed(t));
        assert_string_equal(trace_recorder_missing(t), "sched, workqueue");
        assert_string_equal(trace_recorder_unnamed(t), "task, work");
        assert_string_equal(trace_recorder_refused(t), "");
        assert_null(strstr(trace_recorder_events(t), "sched:"));
        assert_null(strstr(trace_recorder_events(t), "workqueue:"));
        assert_non_null(strstr(trace_recorder_events(t), "timer:hrtimer_expire_entry"));
        assert_int_equal(enabled(trace_recorder_dir(t), "sched/sched_switch"), 0);
        assert_int_equal(enabled(trace_recorder_dir(t), "workqueue/workqueue_execute_start"), 0);
        assert_int_equal(enabled(trace_recorder_dir(t), "timer/hrtimer_expire_entry"), 1);
        /* What is left records: the wake-ups of sleeps on CPU 1 are hrtimer expiries there. */
        pin(CPU);
        for (int k = 0; k < 5; k++) {
                usleep(1000);
        }
        (void)trace_recorder_read(t);
        w = trace_recorder_records(t, CPU, &n);
        for (size_t i = 0; i < n; i++) {
                timers += w[i].kind == CAUSE_TIMER && w[i].phase == TRACE_ENTRY;
                switches += w[i].phase == TRACE_SWITCH;
        }
        printf("%zu records, %zu hrtimer expiries, %zu switches\n", n, timers, switches);
        assert_true(timers >= 5);
        assert_int_equal(switches, 0);
        drop(t);
}

typedef enum Privilege {
        AS_NOBODY,               /* uid 65534, no capability */
        AS_NOBODY_DAC_OVERRIDE,  /* uid 65534 with CAP_DAC_OVERRIDE only */
        AS_ROOT_NO_CAPABILITIES, /* uid 0 with every capability dropped (modes bind it) */
} Privilege;

/* Creates a recorder in a child with @p, and returns the child's exit code: what @check says
 * of the recorder (NULL when refused, with @reason), or 3 when @p cannot be taken. */
static int record_as(Privilege p, int (*check)(TraceRecorder *t, const char *reason))
{
        int cpus[] = {CPU}, status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                char reason[TRACE_REASON_MAX] = "";
                TraceOptions o;
                TraceRecorder *t = NULL;
                cap_t caps = cap_init();
                cap_value_t dac = CAP_DAC_OVERRIDE;
                int rc;

                if (p != AS_ROOT_NO_CAPABILITIES) {
                        if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setgroups(0, NULL) < 0 ||
                            setresgid(65534, 65534, 65534) < 0 ||
                            setresuid(65534, 65534, 65534) < 0) {
                                _exit(3);
                        }
                }
                if (p == AS_NOBODY_DAC_OVERRIDE) {
                        cap_set_flag(caps, CAP_EFFECTIVE, 1, &dac, CAP_SET);
                        cap_set_flag(caps, CAP_PERMITTED, 1, &dac, CAP_SET);
                }
                if (!caps || cap_set_proc(caps) < 0) {
                        _exit(3);
                }
                cap_free(caps);
                options(&o, cpus);
                if (trace_recorder_new(&o, &t, reason, sizeof(reason)) < 0) {
                        t = NULL;
                }
                rc = check(t, reason);
                fflush(stdout);
                trace_recorder_free(t);
                _exit(rc);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* Makes @file of the instance @dir read-only; false when this kernel keeps no mode there. */
static bool make_read_only(const char *dir, const char *file)
{
        char path[4200];
        struct stat st;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path)) {
                return false;
        }
        return chmod(path, 0400) == 0 && stat(path, &st) == 0 && (st.st_mode & 0777) == 0400;
}

/* A recorder in the instance of test_refused_event() as expected: 0 when the refused events are
 * left out, the rest recorded and both said; else what differed. */
static int check_refusals(TraceRecorder *t, const char *reason)
{
        const char *refused, *events;

        if (!t) {
                printf("cannot record: %s\n", reason);
                return 4;
        }
        refused = trace_recorder_refused(t);
        events = trace_recorder_events(t);
        printf("refused: %s\nnot named: %s\n", refused, trace_recorder_unnamed(t));
        if (!strstr(refused, "sched:sched_switch (Permission denied)") ||
            !strstr(refused, "irq_vectors:reschedule_exit (Permission denied)") ||
            !strstr(refused, "CAP_DAC_OVERRIDE")) {
                return 5;
        }
        if (strcmp(trace_recorder_unnamed(t), "task, vector reschedule") != 0 ||
            trace_recorder_missing(t)[0]) {
                return 6;
        }
        if (strstr(events, "sched:sched_switch") || strstr(events, "irq_vectors:reschedule_") ||
            !strstr(events, "irq_vectors:local_timer_entry") ||
            !strstr(events, "irq:irq_handler_entry")) {
                return 7;
        }
        /* The entry of a refused exit is not left on. */
        return enabled(trace_recorder_dir(t), "irq_vectors/reschedule_entry") == 0 ? 0 : 8;
}

/* Events the kernel refuses to enable are left out, the rest recorded. The refusal is the
 * kernel's: the instance is made beforehand with two enable switches read-only, and the
 * recorder runs as root without capabilities, which their mode then binds. */
static void test_refused_event(void **state)
{
        char dir[4200];
        int rc;

        (void)state;
        snprintf(dir, sizeof(dir), TEST_TRACEFS "/instances/%s", instance);
        assert_int_equal(mkdir(dir, 0750), 0);
        if (!make_read_only(dir, "events/sched/sched_switch/enable") ||
            !make_read_only(dir, "events/irq_vectors/reschedule_exit/enable")) {
                rmdir(dir);
                print_message("skipped: this kernel keeps no mode on the event files of an "
                              "instance\n");
                skip();
        }
        rc = record_as(AS_ROOT_NO_CAPABILITIES, check_refusals);
        if (access(dir, F_OK) == 0) {
                rmdir(dir);
                fail_msg("the instance is left behind");
        }
        assert_int_equal(rc, 0);
}

static void test_reason_no_tracefs(void **state)
{
        int cpus[] = {CPU};
        char reason[TRACE_REASON_MAX] = "";
        TraceOptions o;
        TraceRecorder *t = NULL;

        (void)state;
        options(&o, cpus);
        o.root = "/nonexistent/tracing";
        assert_int_equal(trace_recorder_new(&o, &t, reason, sizeof(reason)), -ENOENT);
        assert_null(t);
        printf("reason: %s\n", reason);
        assert_non_null(strstr(reason, "not mounted at /nonexistent/tracing"));
        assert_non_null(strstr(reason, "mount -t tracefs nodev /nonexistent/tracing"));
        /* A directory that is not tracefs. */
        o.root = "/tmp";
        assert_int_equal(trace_recorder_new(&o, &t, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "not mounted at /tmp"));
}

/* A recorder with a refusal as expected: 0 when refused with a reason that says why and what
 * grants it, 1 when refused without, 2 when it records. */
static int check_refused(TraceRecorder *t, const char *reason)
{
        if (t) {
                return 2;
        }
        printf("refused: %s\n", reason);
        return strstr(reason, "Permission denied") && strstr(reason, "CAP_DAC_OVERRIDE") ? 0 : 1;
}

/* A recorder as expected: 0 when it records, 1 when refused (printed). */
static int check_records(TraceRecorder *t, const char *reason)
{
        if (!t) {
                printf("cannot record: %s\n", reason);
        }
        return t ? 0 : 1;
}

static void test_privileges(void **state)
{
        (void)state;
        /* Refused, and the reason says why and what grants it. */
        assert_int_equal(record_as(AS_NOBODY, check_refused), 0);
        /* What the reason says suffices, does. */
        assert_int_equal(record_as(AS_NOBODY_DAC_OVERRIDE, check_records), 0);
        assert_int_equal(record_as(AS_ROOT_NO_CAPABILITIES, check_records), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_instance, teardown),
                cmocka_unit_test_teardown(test_tsc_clock, teardown),
                cmocka_unit_test_teardown(test_mapped_clock, teardown),
                cmocka_unit_test_teardown(test_other_cpu_not_recorded, teardown),
                cmocka_unit_test_teardown(test_losses, teardown),
                cmocka_unit_test_teardown(test_read_period, teardown),
                cmocka_unit_test_teardown(test_watermark, teardown),
                cmocka_unit_test_teardown(test_watermark_judged, teardown),
                cmocka_unit_test_teardown(test_missing_event, teardown),
                cmocka_unit_test(test_refused_event),
                cmocka_unit_test(test_privileges),
        };
        const struct CMUnitTest always[] = {
                cmocka_unit_test(test_reason_no_tracefs),
        };
        bool have_tsc;
        int r;

        snprintf(instance, sizeof(instance), "jitterd-test-%d", (int)getpid());
        have_tsc = counter_info_init(COUNTER_HW, 1.0, 500, &counter) == 0;
        if (!have_tsc) {
                counter.hz = 1000000000;
        }
        r = cmocka_run_group_tests_name("no tracefs", always, NULL, NULL);
        if (r != 0) {
                return r;
        }
        r = need_cpu1();
        if (r != 0) {
                return r;
        }
        if (!tracefs_usable()) {
                return 77;
        }
#if !defined(__x86_64__)
        fprintf(stderr, "skipped: the clock checks read the TSC\n");
        return 77;
#endif
        if (!have_tsc) {
                fprintf(stderr, "skipped: no usable TSC\n");
                return 77;
        }
        return cmocka_run_group_tests_name("tracefs", tests, NULL, NULL);
}

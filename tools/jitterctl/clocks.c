#include "clocks.h"
#include "host.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* How long the search for a clock's smallest step may take: a few ticks of a coarse clock at
 * HZ=250, so a full run stays well under the 1-2 s an operator expects. */
#define STEP_BUDGET_NS 25000000ULL
/* Reads after which the step search may stop once the clock has moved a few times. */
#define STEP_MIN_READS 1000
#define STEP_MIN_CHANGES 3

/* Rounds run and thrown away first: they fault in the vDSO data page and warm the caches and
 * branch predictors, which the first calls of a fresh process would otherwise be charged. */
#define WARMUP_ROUNDS 20

/* Keeps @v alive without costing more than a register. */
#define CONSUME(v) __asm__ __volatile__("" : : "r"(v))

/* Reads the timing counter, fenced so that the calls being timed cannot move across it. */
static inline uint64_t stamp(bool hw)
{
#if defined(__x86_64__)
        if (hw) {
                uint32_t lo, hi;

                __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
                return ((uint64_t)hi << 32) | lo;
        }
#elif defined(__aarch64__)
        if (hw) {
                uint64_t v;

                __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
                return v;
        }
#endif
        (void)hw;
        return counter_clock_read();
}

/* Each way to read time is a read function (its value: ticks for a counter, ns otherwise) and
 * a batch function that times @k reads of it inline, so that no indirect call is charged to
 * the clock. */
#define CLOCKS_DEFINE(id, expr)                                                                    \
        static inline uint64_t read_##id(void)                                                     \
        {                                                                                          \
                return (expr);                                                                     \
        }                                                                                          \
        static uint64_t batch_##id(bool hw, unsigned k)                                            \
        {                                                                                          \
                uint64_t t0 = stamp(hw);                                                           \
                for (unsigned i = 0; i < k; i++) {                                                 \
                        CONSUME(read_##id());                                                      \
                }                                                                                  \
                return stamp(hw) - t0;                                                             \
        }                                                                                          \
        static uint64_t read_fn_##id(void)                                                         \
        {                                                                                          \
                return read_##id();                                                                \
        }

#if defined(__x86_64__)
static inline uint64_t rdtscp_read(void)
{
        unsigned cpu;

        return counter_hw_read_cpu(&cpu);
}

static inline uint64_t lfence_rdtsc_read(void)
{
        uint32_t lo, hi;

        __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
}

CLOCKS_DEFINE(rdtsc, counter_hw_read())
CLOCKS_DEFINE(rdtscp, rdtscp_read())
CLOCKS_DEFINE(lfence_rdtsc, lfence_rdtsc_read())
#elif defined(__aarch64__)
static inline uint64_t cntvct_bare_read(void)
{
        uint64_t v;

        __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
        return v;
}

CLOCKS_DEFINE(cntvct_isb, counter_hw_read())
CLOCKS_DEFINE(cntvct, cntvct_bare_read())
#endif

CLOCKS_DEFINE(realtime, now_ns(CLOCK_REALTIME))
CLOCKS_DEFINE(realtime_coarse, now_ns(CLOCK_REALTIME_COARSE))
CLOCKS_DEFINE(monotonic, now_ns(CLOCK_MONOTONIC))
CLOCKS_DEFINE(monotonic_coarse, now_ns(CLOCK_MONOTONIC_COARSE))
CLOCKS_DEFINE(monotonic_raw, now_ns(CLOCK_MONOTONIC_RAW))
CLOCKS_DEFINE(boottime, now_ns(CLOCK_BOOTTIME))
CLOCKS_DEFINE(tai, now_ns(CLOCK_TAI))
CLOCKS_DEFINE(process_cputime, now_ns(CLOCK_PROCESS_CPUTIME_ID))
CLOCKS_DEFINE(thread_cputime, now_ns(CLOCK_THREAD_CPUTIME_ID))

static inline uint64_t gettimeofday_ns(void)
{
        struct timeval tv;

        gettimeofday(&tv, NULL);
        return (uint64_t)tv.tv_sec * NSEC_PER_SEC + (uint64_t)tv.tv_usec * 1000ULL;
}

CLOCKS_DEFINE(gettimeofday, gettimeofday_ns())
CLOCKS_DEFINE(time, (uint64_t)time(NULL) * NSEC_PER_SEC)

#if defined(SYS_clock_gettime)
/* The same clock as CLOCK_MONOTONIC, but always through the kernel: what every clock_gettime()
 * costs when the clocksource cannot be read from user space. */
static inline uint64_t syscall_monotonic_ns(void)
{
        struct timespec ts;

        syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
        return timespec_ns(&ts);
}

CLOCKS_DEFINE(syscall_monotonic, syscall_monotonic_ns())
#endif

/* The cost of the timing itself. */
static uint64_t batch_empty(bool hw, unsigned k)
{
        uint64_t t0 = stamp(hw);

        for (unsigned i = 0; i < k; i++) {
                __asm__ __volatile__("" : : : "memory");
        }
        return stamp(hw) - t0;
}

typedef enum ClockKind {
        KIND_COUNTER, /* value in ticks, resolution one tick */
        KIND_CLOCK,   /* a clockid_t: resolution from clock_getres() */
        KIND_UNIT,    /* resolution is the unit the call returns */
} ClockKind;

typedef struct ClockDef {
        const char *name;
        ClockKind kind;
        clockid_t id;   /* KIND_CLOCK */
        double unit_ns; /* KIND_UNIT */
        bool needs_rdtscp;
        uint64_t (*batch)(bool hw, unsigned k);
        uint64_t (*read)(void);
} ClockDef;

#define CLOCK_ROW(n, i, fn)                                                                        \
        {                                                                                          \
                n, KIND_CLOCK, i, 0, false, batch_##fn, read_fn_##fn                               \
        }

static const ClockDef clock_defs[] = {
#if defined(__x86_64__)
        {"rdtsc", KIND_COUNTER, 0, 0, false, batch_rdtsc, read_fn_rdtsc},
        {"rdtscp", KIND_COUNTER, 0, 0, true, batch_rdtscp, read_fn_rdtscp},
        {"lfence+rdtsc", KIND_COUNTER, 0, 0, false, batch_lfence_rdtsc, read_fn_lfence_rdtsc},
#elif defined(__aarch64__)
        {"isb+cntvct", KIND_COUNTER, 0, 0, false, batch_cntvct_isb, read_fn_cntvct_isb},
        {"cntvct", KIND_COUNTER, 0, 0, false, batch_cntvct, read_fn_cntvct},
#endif
        CLOCK_ROW("CLOCK_REALTIME", CLOCK_REALTIME, realtime),
        CLOCK_ROW("CLOCK_REALTIME_COARSE", CLOCK_REALTIME_COARSE, realtime_coarse),
        CLOCK_ROW("CLOCK_MONOTONIC", CLOCK_MONOTONIC, monotonic),
        CLOCK_ROW("CLOCK_MONOTONIC_COARSE", CLOCK_MONOTONIC_COARSE, monotonic_coarse),
        CLOCK_ROW("CLOCK_MONOTONIC_RAW", CLOCK_MONOTONIC_RAW, monotonic_raw),
        CLOCK_ROW("CLOCK_BOOTTIME", CLOCK_BOOTTIME, boottime),
        CLOCK_ROW("CLOCK_TAI", CLOCK_TAI, tai),
        /* The CPU-time clocks are never served by the vDSO. */
        CLOCK_ROW("CLOCK_PROCESS_CPUTIME_ID", CLOCK_PROCESS_CPUTIME_ID, process_cputime),
        CLOCK_ROW("CLOCK_THREAD_CPUTIME_ID", CLOCK_THREAD_CPUTIME_ID, thread_cputime),
        {"gettimeofday", KIND_UNIT, 0, 1e3, false, batch_gettimeofday, read_fn_gettimeofday},
        {"time", KIND_UNIT, 0, 1e9, false, batch_time, read_fn_time},
#if defined(SYS_clock_gettime)
        CLOCK_ROW("syscall(CLOCK_MONOTONIC)", CLOCK_MONOTONIC, syscall_monotonic),
#endif
};

#define N_CLOCK_DEFS ELEMENTSOF(clock_defs)

_Static_assert(N_CLOCK_DEFS <= CLOCKS_MAX, "CLOCKS_MAX too small");

/* Whether this host can run @def: rdtscp needs its CPUID bit, and a clock id the kernel does
 * not know is left out rather than timed failing. */
static bool clock_def_usable(const ClockDef *def)
{
        struct timespec ts;

        if (def->needs_rdtscp && !counter_have_rdtscp()) {
                return false;
        }
        if (def->kind == KIND_CLOCK && clock_gettime(def->id, &ts) < 0) {
                return false;
        }
        return true;
}

static double clock_def_resolution_ns(const ClockDef *def, const CounterInfo *counter,
                                      bool counter_hz_known)
{
        struct timespec ts;

        switch (def->kind) {
        case KIND_COUNTER:
                return counter_hz_known ? 1e9 / (double)counter->hz : NAN;
        case KIND_CLOCK:
                if (clock_getres(def->id, &ts) < 0) {
                        return NAN;
                }
                return (double)timespec_ns(&ts);
        case KIND_UNIT:
                return def->unit_ns;
        }
        return NAN;
}

/* The smallest forward step between consecutive reads of @def, in its own units (ticks or ns);
 * 0 when it did not move within the budget. */
static uint64_t clock_def_min_step(const ClockDef *def)
{
        uint64_t start = now_ns(CLOCK_MONOTONIC_RAW);
        uint64_t prev = def->read(), best = 0;
        unsigned changes = 0;

        for (unsigned n = 1;; n++) {
                uint64_t v = def->read();

                /* A wall clock may be set back; only forward steps say what its grain is. */
                if (v > prev) {
                        changes++;
                        if (best == 0 || v - prev < best) {
                                best = v - prev;
                        }
                }
                prev = v;
                if (n >= STEP_MIN_READS && changes >= STEP_MIN_CHANGES) {
                        break;
                }
                if (n % 64 == 0 && now_ns(CLOCK_MONOTONIC_RAW) - start > STEP_BUDGET_NS) {
                        break;
                }
        }
        return best;
}

/* Fills the statistics of @c from @n per-call costs in @v (sorted in place). */
static void cost_stats(ClockCost *c, double *v, size_t n)
{
        double sum = 0, sq = 0, mean;

        qsort(v, n, sizeof(*v), cmp_double);
        for (size_t i = 0; i < n; i++) {
                sum += v[i];
        }
        mean = sum / (double)n;
        for (size_t i = 0; i < n; i++) {
                sq += (v[i] - mean) * (v[i] - mean);
        }
        c->samples = n;
        c->min_ns = v[0];
        c->max_ns = v[n - 1];
        c->median_ns = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        c->mean_ns = mean;
        c->stddev_ns = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
}

static bool name_char_ok(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
}

/* Reads a clocksource name from @path (normally CLOCKS_CLOCKSOURCE_PATH) into @buf, without
 * the newline. Returns 0; -EBADMSG when the file does not hold one plausible name; -ENOBUFS
 * when it does not fit; or the negative errno of opening or reading it. */
static int clocks_read_clocksource(const char *path, char *buf, size_t size)
{
        char text[128];
        size_t len;
        int r;

        if (!path || !buf || size == 0) {
                return -EINVAL;
        }
        r = host_read_text(path, text, sizeof(text));
        if (r < 0) {
                return r;
        }
        len = strlen(text);
        /* One name: anything else is not what sysfs writes. */
        if (len == 0 || strchr(text, '\n')) {
                return -EBADMSG;
        }
        for (size_t i = 0; i < len; i++) {
                if (!name_char_ok(text[i])) {
                        return -EBADMSG;
                }
        }
        if (len >= size) {
                return -ENOBUFS;
        }
        memcpy(buf, text, len);
        buf[len] = '\0';
        return 0;
}

/* Returns true when clocksource @name is the architecture's counter that the vDSO reads
 * directly: "tsc" on x86, "arch_sys_counter" on arm64. With any other clocksource
 * clock_gettime() of the fine clocks may fall back to a system call. */
static bool clocks_clocksource_is_fast(const char *name)
{
        if (!name) {
                return false;
        }
#if defined(__x86_64__) || defined(__i386__)
        return strcmp(name, "tsc") == 0;
#elif defined(__aarch64__)
        return strcmp(name, "arch_sys_counter") == 0;
#else
        return false;
#endif
}

static int last_allowed_cpu(const cpu_set_t *set)
{
        for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) {
                if (CPU_ISSET(cpu, set)) {
                        return cpu;
                }
        }
        return -1;
}

/* Times the batches: @n_rows clocks (plus the empty batch, row @n_rows) for up to @samples kept
 * rounds, into @ticks[row * samples + round]. With @budget_ns, stops once that much time has
 * passed and at least CLOCKS_SAMPLES_MIN rounds are kept. Returns the number of rounds kept. */
static unsigned run_rounds(const ClockDef **defs, size_t n_rows, bool hw, unsigned batch,
                           unsigned samples, uint64_t budget_ns, uint64_t *ticks)
{
        uint64_t start = now_ns(CLOCK_MONOTONIC_RAW);
        size_t n_all = n_rows + 1;
        unsigned round;

        for (round = 0; round < WARMUP_ROUNDS + samples; round++) {
                if (budget_ns > 0 && round >= WARMUP_ROUNDS + CLOCKS_SAMPLES_MIN &&
                    now_ns(CLOCK_MONOTONIC_RAW) - start > budget_ns) {
                        break;
                }
                /* Start each round at another clock, so none always follows the same one. */
                for (size_t j = 0; j < n_all; j++) {
                        size_t row = (round + j) % n_all;
                        uint64_t t = row == n_rows ? batch_empty(hw, batch)
                                                   : defs[row]->batch(hw, batch);

                        if (round >= WARMUP_ROUNDS) {
                                ticks[row * samples + (round - WARMUP_ROUNDS)] = t;
                        }
                }
        }
        return round - WARMUP_ROUNDS;
}

/* @opts with the defaults filled in, into @o, and how long to measure (0: o->samples rounds
 * whatever they take). Returns 0 or -EINVAL. */
static int clocks_options(const ClocksOptions *opts, ClocksOptions *o, uint64_t *ret_budget_ns)
{
        *o = opts ? *opts : (ClocksOptions){.cpu = -1};
        *ret_budget_ns = 0;
        if (o->samples == 0) {
                o->samples = CLOCKS_SAMPLES_DEFAULT;
                *ret_budget_ns = CLOCKS_BUDGET_NS;
        }
        if (o->batch == 0) {
                o->batch = CLOCKS_BATCH_DEFAULT;
        }
        if (o->samples > CLOCKS_SAMPLES_MAX || o->batch > CLOCKS_BATCH_MAX) {
                return -EINVAL;
        }
        return 0;
}

/* The cost of each clock from the @kept batch times of @ticks (one row of o->samples per
 * clock, then the empty batch's row): the empty batch's shortest time is subtracted. */
static void clocks_costs(const ClockDef *const *defs, size_t n_rows, const ClocksOptions *o,
                         const uint64_t *ticks, unsigned kept, double ns_per_tick, bool hz_known,
                         double *costs, ClocksReport *ret)
{
        uint64_t empty_min = UINT64_MAX;

        for (unsigned s = 0; s < kept; s++) {
                uint64_t t = ticks[n_rows * o->samples + s];

                if (t < empty_min) {
                        empty_min = t;
                }
        }
        ret->empty_batch_ns = (double)empty_min * ns_per_tick;
        for (size_t i = 0; i < n_rows; i++) {
                ClockCost *c = &ret->clocks[i];

                for (unsigned s = 0; s < kept; s++) {
                        uint64_t t = ticks[i * o->samples + s];

                        costs[s] = t > empty_min ? (double)(t - empty_min) * ns_per_tick /
                                                           (double)o->batch
                                                 : 0.0;
                }
                cost_stats(c, costs, kept);
                c->name = defs[i]->name;
                c->counter = defs[i]->kind == KIND_COUNTER;
                c->resolution_ns = clock_def_resolution_ns(defs[i], &ret->counter, hz_known);
        }
}

/* Chooses the CPU of the measurement into @o->cpu (without one, the last this process may use)
 * and puts the process's affinity in @ret_old. Returns 0 or a negative errno: -EINVAL when the
 * CPU may not be used. */
static int clocks_cpu(ClocksOptions *o, cpu_set_t *ret_old)
{
        if (sched_getaffinity(0, sizeof(*ret_old), ret_old) < 0) {
                return -errno;
        }
        if (o->cpu < 0) {
                o->cpu = last_allowed_cpu(ret_old);
        }
        if (o->cpu < 0 || o->cpu >= CPU_SETSIZE || !CPU_ISSET(o->cpu, ret_old)) {
                return -EINVAL;
        }
        return 0;
}

/* Reads the clocksource into @ret and sets up its counter, the one that times the batches: the
 * hardware counter where it runs at a known constant rate (then *@ret_hw is true); otherwise
 * CLOCK_MONOTONIC_RAW, and the counters' tick is unknown. Returns 0 or a negative errno. */
static int clocks_counter(ClocksReport *ret, bool *ret_hw)
{
        if (clocks_read_clocksource(CLOCKS_CLOCKSOURCE_PATH, ret->clocksource,
                                    sizeof(ret->clocksource)) < 0) {
                ret->clocksource[0] = '\0';
        }
        ret->clocksource_fast = clocks_clocksource_is_fast(ret->clocksource);
        *ret_hw = counter_info_init(COUNTER_HW, 100.0, 1000, &ret->counter) == 0;
        if (!*ret_hw) {
                return counter_info_init(COUNTER_CLOCK, 100.0, 1000, &ret->counter);
        }
        return 0;
}

/* Runs the rounds pinned to @o->cpu, and measures each clock's smallest step there (in ns, NaN
 * when unknown) into @ret; then gives the process back the affinity @old_set. Returns how many
 * samples per clock are kept, or a negative errno. */
static int run_pinned(const ClockDef **defs, size_t n_rows, bool hw, const ClocksOptions *o,
                      uint64_t budget_ns, const cpu_set_t *old_set, uint64_t *ticks,
                      ClocksReport *ret)
{
        cpu_set_t pin;
        unsigned kept;

        CPU_ZERO(&pin);
        CPU_SET(o->cpu, &pin);
        if (sched_setaffinity(0, sizeof(pin), &pin) < 0) {
                return -errno;
        }
        kept = run_rounds(defs, n_rows, hw, o->batch, o->samples, budget_ns, ticks);
        for (size_t i = 0; i < n_rows; i++) {
                uint64_t step = clock_def_min_step(defs[i]);
                ClockCost *c = &ret->clocks[i];

                c->step_ns = step == 0 ? NAN
                             : defs[i]->kind == KIND_COUNTER
                                     ? (hw ? (double)step * 1e9 / (double)ret->counter.hz : NAN)
                                     : (double)step;
        }
        if (sched_setaffinity(0, sizeof(*old_set), old_set) < 0) {
                return -errno;
        }
        return (int)kept;
}

int clocks_measure(const ClocksOptions *opts, ClocksReport *ret)
{
        ClocksOptions o;
        const ClockDef *defs[N_CLOCK_DEFS];
        cpu_set_t old_set;
        uint64_t *ticks = NULL;
        double *costs = NULL;
        uint64_t budget_ns;
        size_t n_rows = 0;
        bool hw;
        int r;

        if (!ret) {
                return -EINVAL;
        }
        r = clocks_options(opts, &o, &budget_ns);
        if (r < 0) {
                return r;
        }
        r = clocks_cpu(&o, &old_set);
        if (r < 0) {
                return r;
        }
        *ret = (ClocksReport){.cpu = o.cpu, .batch = o.batch};
        r = clocks_counter(ret, &hw);
        if (r < 0) {
                return r;
        }
        for (size_t i = 0; i < N_CLOCK_DEFS; i++) {
                if (clock_def_usable(&clock_defs[i])) {
                        defs[n_rows++] = &clock_defs[i];
                }
        }

        ticks = calloc((n_rows + 1) * (size_t)o.samples, sizeof(*ticks));
        costs = calloc(o.samples, sizeof(*costs));
        if (!ticks || !costs) {
                r = -ENOMEM;
                goto out;
        }
        r = run_pinned(defs, n_rows, hw, &o, budget_ns, &old_set, ticks, ret);
        if (r < 0) {
                goto out;
        }
        /* The counter's tick is known where the hardware counter timed the batches. */
        clocks_costs(defs, n_rows, &o, ticks, (unsigned)r, 1e9 / (double)ret->counter.hz, hw, costs,
                     ret);
        ret->n_clocks = n_rows;
        ret->samples = (unsigned)r;
        r = 0;
out:
        free(ticks);
        free(costs);
        return r;
}

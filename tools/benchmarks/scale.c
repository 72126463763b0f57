/* The scale benchmark's harness (scale.h). The manager's module is included to reach its
 * static tick and harvest, as its white-box tests do; the program that links this file gets
 * the manager from here, not from jitterd-core. */

#include "../../daemon/manager.c"

#include "scale.h"

#include <sys/stat.h>

#include "api.h"
#include "scale-probe.h"
#include "textfile.h"
#include "util.h"
/* Synthetic probe threads' ids: the attribution reads /proc/PID/task/TID/status below the root. */
#define TID_BASE 100000

static const char *const ARCH_IRQS[] = {"NMI", "LOC", "RES", "CAL", "TLB"};
static const char *const ARCH_DESCRIPTIONS[] = {"Non-maskable interrupts", "Local timer interrupts",
                                                "Rescheduling interrupts",
                                                "Function call interrupts", "TLB shootdowns"};
#define N_ARCH_IRQS ELEMENTSOF(ARCH_IRQS)
static const char *const SOFTIRQS[] = {"HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
                                       "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU"};
#define N_SOFTIRQS ELEMENTSOF(SOFTIRQS)

struct Scale {
        Manager *m;
        Textfile *textfile;
        const ScaleFixture *fixture;
        char root[200]; /* short enough for every path below it */
        unsigned device_irqs;
        uint64_t k; /* intervals run */
};

uint64_t scale_irq_step(const Scale *s, unsigned row, int cpu)
{
        if (row < s->device_irqs && row % s->m->n_probes != (size_t)cpu) {
                return 0;
        }
        return 1 + ((uint64_t)row * 31 + (uint64_t)cpu * 7) % 13;
}

uint64_t scale_softirq_step(unsigned row, int cpu)
{
        return 2 + ((uint64_t)row * 17 + (uint64_t)cpu * 5) % 11;
}

uint64_t scale_ctxsw_step(bool voluntary, int cpu)
{
        return voluntary ? 3 + (uint64_t)cpu % 4 : 1 + (uint64_t)cpu % 2;
}

/* --- the generated /proc ------------------------------------------------------------------ */

static int write_interrupts(Scale *s, const char *path)
{
        const size_t n = s->m->n_probes;
        FILE *f = fopen(path, "we");

        if (!f) {
                return -errno;
        }
        fputs("     ", f);
        for (size_t c = 0; c < n; c++) {
                fprintf(f, "      CPU%-2zu", c);
        }
        fputc('\n', f);
        for (unsigned r = 0; r < s->device_irqs + N_ARCH_IRQS; r++) {
                bool dev = r < s->device_irqs;

                if (dev) {
                        fprintf(f, "%4u:", 24 + r);
                } else {
                        fprintf(f, "%4s:", ARCH_IRQS[r - s->device_irqs]);
                }
                for (size_t c = 0; c < n; c++) {
                        fprintf(f, " %10" PRIu64, s->k * scale_irq_step(s, r, (int)c));
                }
                if (dev) {
                        fprintf(f, "  PCI-MSIX-0000:00:%02x.0 %u-edge      nvme0q%u\n", r % 32, r,
                                r);
                } else {
                        fprintf(f, "   %s\n", ARCH_DESCRIPTIONS[r - s->device_irqs]);
                }
        }
        return fclose(f) == 0 ? 0 : -EIO;
}

static int write_softirqs(Scale *s, const char *path)
{
        const size_t n = s->m->n_probes;
        FILE *f = fopen(path, "we");

        if (!f) {
                return -errno;
        }
        fputs("          ", f);
        for (size_t c = 0; c < n; c++) {
                fprintf(f, " CPU%-7zu", c);
        }
        fputc('\n', f);
        for (unsigned r = 0; r < N_SOFTIRQS; r++) {
                fprintf(f, "%12s:", SOFTIRQS[r]);
                for (size_t c = 0; c < n; c++) {
                        fprintf(f, " %10" PRIu64, s->k * scale_softirq_step(r, (int)c));
                }
                fputc('\n', f);
        }
        return fclose(f) == 0 ? 0 : -EIO;
}

static int write_status(Scale *s, int cpu)
{
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/proc/%d/task/%d/status", s->root, (int)getpid(),
                 TID_BASE + cpu);
        f = fopen(path, "we");
        if (!f) {
                return -errno;
        }
        fprintf(f,
                "Name:\tjitterd\nvoluntary_ctxt_switches:\t%" PRIu64
                "\nnonvoluntary_ctxt_switches:\t%" PRIu64 "\n",
                s->k * scale_ctxsw_step(true, cpu), s->k * scale_ctxsw_step(false, cpu));
        return fclose(f) == 0 ? 0 : -EIO;
}

/* The counters as they read after s->k intervals. */
static int write_proc(Scale *s)
{
        char path[PATH_MAX];
        int r;

        snprintf(path, sizeof(path), "%s/proc/interrupts", s->root);
        r = write_interrupts(s, path);
        if (r < 0) {
                return r;
        }
        snprintf(path, sizeof(path), "%s/proc/softirqs", s->root);
        r = write_softirqs(s, path);
        for (size_t c = 0; r == 0 && c < s->m->n_probes; c++) {
                r = write_status(s, (int)c);
        }
        return r;
}

static int make_dirs(Scale *s)
{
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/proc", s->root);
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                return -errno;
        }
        snprintf(path, sizeof(path), "%s/proc/%d", s->root, (int)getpid());
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                return -errno;
        }
        snprintf(path, sizeof(path), "%s/proc/%d/task", s->root, (int)getpid());
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                return -errno;
        }
        for (size_t c = 0; c < s->m->n_probes; c++) {
                snprintf(path, sizeof(path), "%s/proc/%d/task/%d", s->root, (int)getpid(),
                         TID_BASE + (int)c);
                if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                        return -errno;
                }
        }
        return 0;
}

/* --- the manager --------------------------------------------------------------------------- */

static int make_manager(Scale *s, const ScaleOptions *o)
{
        Manager *m = calloc(1, sizeof(*m));
        HistoryOptions ho;
        int r;

        if (!m) {
                return -ENOMEM;
        }
        s->m = m;
        config_init_defaults(&m->config);
        snprintf(m->config.audit_root, sizeof(m->config.audit_root), "%s", s->root);
        if (o->textfile) {
                snprintf(m->config.export_prometheus_textfile,
                         sizeof(m->config.export_prometheus_textfile), "%s/jitterd.prom", s->root);
        }
        m->counter = (CounterInfo){
                .source = COUNTER_HAVE_HW ? COUNTER_HW : COUNTER_CLOCK,
                .hz_source = COUNTER_HZ_CALIBRATED,
                .hz = o->fixture->hz,
        };
        tickconv_init(&m->counter.conv, o->fixture->hz);
        m->start_mono_ns = now_ns(CLOCK_MONOTONIC);
        m->start_real_ns = now_ns(CLOCK_REALTIME);
        m->ready = true;
        ho = (HistoryOptions){
                .interval_ns = m->config.history_interval_ns,
                .fine_retention_ns = m->config.history_fine_retention_ns,
                .coarse_interval_ns = HISTORY_COARSE_INTERVAL_NS,
                .coarse_retention_ns = m->config.history_coarse_retention_ns,
                .events_per_cpu = m->config.history_events_per_cpu,
        };
        r = history_new(&ho, &m->history);
        if (r < 0) {
                return r;
        }
        r = attrib_table_new(&m->attrib);
        if (r < 0) {
                return r;
        }
        r = host_files_new(ATTRIB_FILE_MAX, &m->attrib_files);
        if (r < 0) {
                return r;
        }
        return sd_event_new(&m->event);
}

static int make_probes(Scale *s, size_t n)
{
        Manager *m = s->m;

        m->probes = calloc(n, sizeof(ProbeCtl));
        if (!m->probes) {
                return -ENOMEM;
        }
        CPU_ZERO(&m->cpus);
        for (size_t c = 0; c < n; c++) {
                ProbeCtl *p = &m->probes[c];
                ProbeConfig pc = {
                        .cpu = (int)c,
                        .counter = m->counter,
                        .threshold_ns = m->config.probe_threshold_ns,
                        .preheat_ns = m->config.probe_preheat_ns,
                        .ring_capacity = 8192,
                };
                int r;

                m->n_probes = c + 1;
                p->manager = m;
                p->cpu = (int)c;
                p->harvest_epoch = 1;
                p->advanced_epoch = 1;
                CPU_SET((int)c, &m->cpus);
                r = attrib_snapshot_new(&p->attrib_snap);
                if (r == 0) {
                        r = probe_new(&pc, &p->probe);
                }
                if (r < 0) {
                        return r;
                }
                scale_probe_run(p->probe, s->fixture, TID_BASE + (int)c);
        }
        return 0;
}

int scale_new(const ScaleOptions *o, Scale **ret)
{
        Scale *s;
        int r;

        if (o->n_cpus == 0 || o->n_cpus > CPU_SETSIZE || !o->fixture ||
            o->fixture->n_intervals == 0 || strlen(o->root) >= sizeof(s->root)) {
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                return -ENOMEM;
        }
        s->fixture = o->fixture;
        s->device_irqs = o->device_irqs ? o->device_irqs : 24 + (unsigned)o->n_cpus;
        snprintf(s->root, sizeof(s->root), "%s", o->root);
        r = make_manager(s, o);
        if (r == 0) {
                r = make_probes(s, o->n_cpus);
        }
        if (r == 0 && o->textfile) {
                r = textfile_new(s->m, &s->textfile);
                /* Run by scale_run(), after the harvest, to be timed apart. */
                s->m->n_hooks = 0;
        }
        if (r == 0) {
                r = make_dirs(s);
        }
        if (r < 0) {
                scale_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* Removes what the harness made below its root. */
static void remove_files(Scale *s)
{
        char path[PATH_MAX];
        const int pid = (int)getpid();

        snprintf(path, sizeof(path), "%s/proc/interrupts", s->root);
        unlink(path);
        snprintf(path, sizeof(path), "%s/proc/softirqs", s->root);
        unlink(path);
        for (size_t c = 0; s->m && c < s->m->n_probes; c++) {
                snprintf(path, sizeof(path), "%s/proc/%d/task/%d/status", s->root, pid,
                         TID_BASE + (int)c);
                unlink(path);
                snprintf(path, sizeof(path), "%s/proc/%d/task/%d", s->root, pid, TID_BASE + (int)c);
                rmdir(path);
        }
        snprintf(path, sizeof(path), "%s/proc/%d/task", s->root, pid);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/proc/%d", s->root, pid);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/proc", s->root);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/jitterd.prom", s->root);
        unlink(path);
}

Scale *scale_free(Scale *s)
{
        if (!s) {
                return NULL;
        }
        remove_files(s);
        if (s->m) {
                Manager *m = s->m;

                (void)probes_stop(m);
                history_free(m->history);
                attrib_table_free(m->attrib);
                host_files_free(m->attrib_files);
                sd_event_unref(m->event);
                free(m);
        }
        textfile_free(s->textfile);
        free(s);
        return NULL;
}

static uint64_t thread_ns(void)
{
        return now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* One interval: what the probes would have recorded, the counters they would have moved, then
 * the manager's tick and harvest, timed. */
static int run_one(Scale *s, uint64_t start_ns, ScaleCost *cost)
{
        Manager *m = s->m;
        const ScaleFixture *x = s->fixture;
        uint64_t t0, t1, t2, t3;
        ClockPair ref;
        int r;

        /* The slots' start in ticks, on the time axis the harvest maps them with. */
        clock_pair_sample(m->counter.source, &ref);
        for (size_t c = 0; c < m->n_probes; c++) {
                const ScaleInterval *iv = &x->intervals[(s->k + c) % x->n_intervals];
                uint64_t ago = ref.mono_ns > start_ns ? ref.mono_ns - start_ns : 0;
                uint64_t ticks = ref.ticks - tickconv_from_ns(&m->counter.conv, ago);

                scale_probe_fill(m->probes[c].probe, iv, ticks);
        }
        s->k++;
        r = write_proc(s);
        if (r < 0) {
                return r;
        }
        t0 = thread_ns();
        tick(m);
        t1 = thread_ns();
        for (size_t c = 0; c < m->n_probes; c++) {
                scale_probe_ack(m->probes[c].probe);
        }
        t2 = thread_ns();
        (void)on_harvest(NULL, 0, m);
        t3 = thread_ns();
        cost->tick_ns += t1 - t0;
        cost->harvest_ns += t3 - t2;
        if (s->textfile) {
                t0 = thread_ns();
                r = textfile_write(s->textfile);
                cost->textfile_ns += thread_ns() - t0;
        }
        cost->intervals++;
        return r;
}

int scale_run(Scale *s, unsigned n, uint64_t first_start_ns, ScaleCost *cost)
{
        for (unsigned i = 0; i < n; i++) {
                int r = run_one(s, first_start_ns + i * NSEC_PER_SEC, cost);

                if (r < 0) {
                        return r;
                }
        }
        return 0;
}

json_t *scale_stats(Scale *s, int cpu, const char *window)
{
        cpu_set_t cpus;

        if (cpu >= 0) {
                CPU_ZERO(&cpus);
                CPU_SET(cpu, &cpus);
        } else {
                cpus = s->m->cpus;
        }
        return api_stats(s->m, &cpus, window);
}

size_t scale_probe_bytes(const Scale *s)
{
        size_t n = 0;

        for (size_t c = 0; c < s->m->n_probes; c++) {
                n += probe_memory_bytes(s->m->probes[c].probe);
        }
        /* The SMI count's MSR file goes with the attribution (scale_attrib_bytes()). */
        return n + s->m->n_probes * (sizeof(ProbeCtl) - sizeof(HostMsr));
}

size_t scale_history_bytes(const Scale *s)
{
        return history_memory_bytes(s->m->history);
}

size_t scale_attrib_bytes(const Scale *s)
{
        return attrib_table_memory_bytes(s->m->attrib) +
               host_files_memory_bytes(s->m->attrib_files) +
               s->m->n_probes * (attrib_snapshot_memory_bytes() + sizeof(HostMsr));
}

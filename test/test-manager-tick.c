/* Unit tests of the manager's tick (daemon/manager.c): with four probes, each tick reads
 * /proc/interrupts and /proc/softirqs once, not once per probe, and still gives every probe the
 * counts of its own column. The files are those of the 4-CPU fixture in test/attrib/ (CPU2
 * offline, so absent from /proc/interrupts), copied under a private root (the configurable
 * audit root) that inotify watches: the kernel counts the opens, not the code under test. The
 * probes are made but never started (their epoch moves without a thread), so no CPU is
 * spun. The module is included to reach its static functions; the log is kept in memory
 * (log-capture.h). */

#include "../daemon/manager.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/inotify.h>

#include <cmocka.h>

#include "log-capture.h"

#define FIXTURES TEST_SOURCE_DIR "/attrib"
#define N_PROBES 4

typedef struct Fixture {
        Manager *m;
        char root[64];
        char interrupts[128];
        char softirqs[128];
        int inotify;
        int watch_irq;
        int watch_softirq;
} Fixture;

/* Copies @src over @dst (same inode, so the watch stays). */
static void copy_file(const char *src, const char *dst)
{
        char buf[4096];
        FILE *in = fopen(src, "re"), *out = fopen(dst, "we");
        size_t n;

        assert_non_null(in);
        assert_non_null(out);
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
                assert_int_equal(fwrite(buf, 1, n, out), n);
        }
        fclose(in);
        assert_int_equal(fclose(out), 0);
}

/* Puts the fixture @name's counters under the root. */
static void use_fixture(Fixture *f, const char *name)
{
        char src[PATH_MAX];

        snprintf(src, sizeof(src), "%s/%s/proc/interrupts", FIXTURES, name);
        copy_file(src, f->interrupts);
        snprintf(src, sizeof(src), "%s/%s/proc/softirqs", FIXTURES, name);
        copy_file(src, f->softirqs);
}

/* How many times each watched file was opened since the last call. */
static void count_opens(Fixture *f, unsigned *ret_irq, unsigned *ret_softirq)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n;

        *ret_irq = *ret_softirq = 0;
        while ((n = read(f->inotify, buf, sizeof(buf))) > 0) {
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)p;

                        if (ev->mask & IN_OPEN) {
                                *ret_irq += ev->wd == f->watch_irq;
                                *ret_softirq += ev->wd == f->watch_softirq;
                        }
                        p += sizeof(*ev) + ev->len;
                }
        }
        assert_true(n < 0 && errno == EAGAIN);
}

static void make_probes(Manager *m)
{
        m->probes = calloc(N_PROBES, sizeof(ProbeCtl));
        assert_non_null(m->probes);
        m->n_probes = N_PROBES;
        for (int cpu = 0; cpu < N_PROBES; cpu++) {
                ProbeCtl *p = &m->probes[cpu];
                ProbeConfig pc = {.cpu = cpu,
                                  .counter = m->counter,
                                  .threshold_ns = 10000,
                                  .preheat_ns = 1000000,
                                  .ring_capacity = 64};
                int r;

                p->manager = m;
                p->cpu = cpu;
                p->harvest_epoch = 1;
                p->advanced_epoch = 1;
                assert_int_equal(attrib_snapshot_new(&p->attrib_snap), 0);
                r = probe_new(&pc, &p->probe);
                if (r == -EPERM || r == -ENOMEM) {
                        fprintf(stderr, "skipped: cannot lock a probe's memory here: %s\n",
                                strerror(-r));
                        exit(77);
                }
                assert_int_equal(r, 0);
        }
}

static int setup(void **state)
{
        Fixture *f = calloc(1, sizeof(*f));
        Manager *m = calloc(1, sizeof(*m));
        char dir[96];

        assert_non_null(f);
        assert_non_null(m);
        f->m = m;
        config_init_defaults(&m->config);
        assert_int_equal(counter_info_init(COUNTER_CLOCK, 10.0, 200, &m->counter), 0);
        assert_int_equal(attrib_table_new(&m->attrib), 0);
        assert_int_equal(host_files_new(ATTRIB_FILE_MAX, &m->attrib_files), 0);
        snprintf(f->root, sizeof(f->root), "/tmp/jitterd-tick.XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(dir, sizeof(dir), "%s/proc", f->root);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(f->interrupts, sizeof(f->interrupts), "%s/interrupts", dir);
        snprintf(f->softirqs, sizeof(f->softirqs), "%s/softirqs", dir);
        snprintf(m->config.audit_root, sizeof(m->config.audit_root), "%s", f->root);
        use_fixture(f, "four-a");
        f->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        assert_true(f->inotify >= 0);
        f->watch_irq = inotify_add_watch(f->inotify, f->interrupts, IN_OPEN);
        f->watch_softirq = inotify_add_watch(f->inotify, f->softirqs, IN_OPEN);
        assert_true(f->watch_irq >= 0 && f->watch_softirq >= 0);
        make_probes(m);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;

        (void)probes_stop(m);
        attrib_table_free(m->attrib);
        host_files_free(m->attrib_files);
        close(f->inotify);
        unlink(f->interrupts);
        unlink(f->softirqs);
        rmdir(strcat(f->root, "/proc"));
        *strrchr(f->root, '/') = '\0';
        rmdir(f->root);
        free(m);
        free(f);
        return 0;
}

/* The counts of the epoch that @p's last tick ended. */
static const AttribDelta *ended(const ProbeCtl *p)
{
        return &p->epoch_attrib[(p->advanced_epoch - 1) % PROBE_SLOTS];
}

static uint64_t count_of(Manager *m, const AttribDelta *d, const char *name)
{
        int id = attrib_table_find(m->attrib, name);

        return id < 0 ? 0 : attrib_delta_get(d, (unsigned)id);
}

static void test_one_read_per_tick(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;
        unsigned irq, softirq;

        count_opens(f, &irq, &softirq); /* the fixture's copy */
        tick(m);
        count_opens(f, &irq, &softirq);
        assert_int_equal(irq, 1);
        assert_int_equal(softirq, 1);
        for (size_t i = 0; i < N_PROBES; i++) {
                assert_int_equal(m->probes[i].advanced_epoch, 2);
                assert_int_equal(ended(&m->probes[i])->n, 0); /* nothing to take a delta from */
        }

        use_fixture(f, "four-b");
        count_opens(f, &irq, &softirq);
        tick(m);
        count_opens(f, &irq, &softirq);
        assert_int_equal(irq, 1);
        assert_int_equal(softirq, 1);
        for (size_t i = 0; i < N_PROBES; i++) {
                assert_int_equal(m->probes[i].advanced_epoch, 3);
        }
}

/* Each probe still gets its own column: the differences between the two fixtures' texts. */
static void test_own_columns(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;
        const AttribDelta *d[N_PROBES];

        tick(m);
        use_fixture(f, "four-b");
        tick(m);
        for (size_t i = 0; i < N_PROBES; i++) {
                d[i] = ended(&m->probes[i]);
        }
        /* CPU0: LOC 1000 -> 1100, irq 31 10 -> 11, TIMER 100 -> 101 */
        assert_int_equal(count_of(m, d[0], "irq:LOC"), 100);
        assert_int_equal(count_of(m, d[0], "irq:31"), 1);
        assert_int_equal(count_of(m, d[0], "softirq:TIMER"), 1);
        assert_int_equal(d[0]->n, 3);
        /* CPU1: LOC +200, irq 31 +2, TIMER +2 */
        assert_int_equal(count_of(m, d[1], "irq:LOC"), 200);
        assert_int_equal(count_of(m, d[1], "irq:31"), 2);
        assert_int_equal(count_of(m, d[1], "softirq:TIMER"), 2);
        assert_int_equal(d[1]->n, 3);
        /* CPU2: offline, no interrupt column; softirqs TIMER +3, RCU +7 */
        assert_int_equal(count_of(m, d[2], "softirq:TIMER"), 3);
        assert_int_equal(count_of(m, d[2], "softirq:RCU"), 7);
        assert_int_equal(d[2]->n, 2);
        /* CPU3: the third interrupt column, the fourth softirq one */
        assert_int_equal(count_of(m, d[3], "irq:LOC"), 300);
        assert_int_equal(count_of(m, d[3], "irq:RES"), 1);
        assert_int_equal(count_of(m, d[3], "irq:30"), 30);
        assert_int_equal(count_of(m, d[3], "irq:31"), 3);
        assert_int_equal(count_of(m, d[3], "softirq:TIMER"), 4);
        assert_int_equal(count_of(m, d[3], "softirq:NET_RX"), 5);
        assert_int_equal(d[3]->n, 6);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_one_read_per_tick, setup, teardown),
                cmocka_unit_test_setup_teardown(test_own_columns, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

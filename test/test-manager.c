/* Unit tests of daemon/manager.c with a probe that really failed: a SCHED_FIFO probe started
 * without CAP_SYS_NICE and RLIMIT_RTPRIO, whose thread ends with PROBE_FAILED and the probe's
 * own reason. The tick logs that reason once, however many ticks see it; GetStatus shows it as
 * "failure" (and "reason"); READY=1 is not sent and the loop ends with status 1 as soon as a
 * probe failed, each CPU's state logged; stopping a failed probe takes no time. Also a FIFO in
 * place of the checkpoint, which must not hold the start, and checkpoints of another version:
 * the previous one migrated, an unknown one refused by name and set aside. And the windows
 * GetStats reads: the running sums while intervals come, the intervals up to now once they
 * stop. The module is
 * included to reach its static functions; the log is kept in memory (log-capture.h). */

#include "../daemon/manager.c"

#include "api.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "log-capture.h"

/* This process may no longer make a thread SCHED_FIFO: neither the capability nor the rlimit. */
static void drop_realtime(void)
{
        struct rlimit rl = {0, 0};
        cap_value_t nice = CAP_SYS_NICE;
        cap_t caps = cap_get_proc();

        assert_non_null(caps);
        assert_int_equal(cap_set_flag(caps, CAP_EFFECTIVE, 1, &nice, CAP_CLEAR), 0);
        assert_int_equal(cap_set_proc(caps), 0);
        cap_free(caps);
        assert_int_equal(setrlimit(RLIMIT_RTPRIO, &rl), 0);
}

typedef struct Fixture {
        Manager *m;
} Fixture;

/* A manager with one probe on CPU 0 whose start failed. */
static int setup(void **state)
{
        HistoryOptions ho = {
                .interval_ns = 1000000000ULL,
                .fine_retention_ns = 60ULL * 1000000000ULL,
                .coarse_interval_ns = 60ULL * 1000000000ULL,
                .coarse_retention_ns = 3600ULL * 1000000000ULL,
                .events_per_cpu = 16,
        };
        Fixture *f = calloc(1, sizeof(*f));
        Manager *m = calloc(1, sizeof(*m));
        ProbeConfig pc = {.cpu = 0,
                          .priority = 10,
                          .threshold_ns = 10000,
                          .preheat_ns = 1000000,
                          .ring_capacity = 64};
        ProbeCtl *p;
        int r;

        assert_non_null(f);
        assert_non_null(m);
        f->m = m;
        config_init_defaults(&m->config);
        assert_int_equal(counter_info_init(COUNTER_CLOCK, 10.0, 200, &m->counter), 0);
        assert_int_equal(history_new(&ho, &m->history), 0);
        assert_int_equal(attrib_table_new(&m->attrib), 0);
        assert_int_equal(sd_event_new(&m->event), 0);
        CPU_ZERO(&m->cpus);
        CPU_SET(0, &m->cpus);
        m->probes = calloc(1, sizeof(ProbeCtl));
        assert_non_null(m->probes);
        m->n_probes = 1;
        p = &m->probes[0];
        p->manager = m;
        p->cpu = 0;
        p->harvest_epoch = 1;
        p->advanced_epoch = 1;
        pc.counter = m->counter;
        r = probe_new(&pc, &p->probe);
        if (r == -EPERM || r == -ENOMEM) {
                /* mlock() of the probe's memory needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK. */
                fprintf(stderr, "skipped: cannot lock a probe's memory here: %s\n", strerror(-r));
                exit(77);
        }
        assert_int_equal(r, 0);
        assert_int_equal(probe_start(p->probe), -EPERM);
        assert_int_equal(probe_state(p->probe), PROBE_FAILED);
        log_clear();
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;

        (void)probes_stop(m);
        history_free(m->history);
        attrib_table_free(m->attrib);
        sd_event_unref(m->event);
        free(m);
        free(f);
        return 0;
}

/* The probe's reason, from the probe itself: what everything else must show. */
static const char *truth(Manager *m)
{
        const char *t = probe_failure(m->probes[0].probe);

        assert_true(strlen(t) > 0);
        assert_non_null(strstr(t, "CPU 0"));
        return t;
}

static void test_tick_logs_once(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;
        char expected[PROBE_FAILURE_MAX + 32];

        for (int i = 0; i < 5; i++) {
                tick(m);
        }
        snprintf(expected, sizeof(expected), "probe failed: %s", truth(m));
        assert_int_equal(count_substr(log_text, expected), 1);
        assert_int_equal(count_substr(log_text, "probe failed"), 1);
        assert_false(m->probes[0].stalled);
        assert_string_equal(manager_probe_state(&m->probes[0]), "failed");
}

static void test_status_shows_failure(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;
        json_t *st, *probe;

        st = api_status(m, NULL);
        assert_non_null(st);
        probe = json_array_get(json_object_get(st, "probes"), 0);
        assert_non_null(probe);
        assert_string_equal(json_string_value(json_object_get(probe, "state")), "failed");
        assert_string_equal(json_string_value(json_object_get(probe, "failure")), truth(m));
        assert_string_equal(json_string_value(json_object_get(probe, "reason")), truth(m));
        json_decref(st);
}

static void test_not_ready(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;
        uint64_t now = now_ns(CLOCK_MONOTONIC) / 1000;
        int code = 0;

        assert_int_equal(sd_event_add_time(m->event, &m->ready_source, CLOCK_MONOTONIC, now, 0,
                                           on_ready_poll, m),
                         0);
        /* Long before the deadline: a failed probe ends the wait at once. */
        m->ready_deadline_usec = now + 3600ULL * 1000000ULL;
        on_ready_poll(m->ready_source, now, m);
        assert_false(m->ready);
        assert_int_equal(sd_event_get_exit_code(m->event, &code), 0);
        assert_int_equal(code, 1);
        assert_non_null(strstr(log_text, "cannot get ready: a probe failed"));
        assert_non_null(strstr(log_text, truth(m)));
        m->ready_source = sd_event_source_unref(m->ready_source);
}

static void test_stop_is_immediate(void **state)
{
        Fixture *f = *state;
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);

        assert_int_equal(probes_stop(f->m), 0);
        assert_true(now_ns(CLOCK_MONOTONIC) - t0 < PROBE_STOP_TIMEOUT_NS / 2);
        assert_int_equal(f->m->n_probes, 0);
        assert_null(strstr(log_text, "did not stop"));
}

/* A FIFO in place of the checkpoint: the start does not wait for a writer; the history starts
 * empty, with a warning. SIGALRM ends the test if the load blocks. */
static void test_checkpoint_fifo(void **state)
{
        Fixture *f = *state;
        Manager *m = f->m;
        char dir[64], fifo[128];

        snprintf(dir, sizeof(dir), "/tmp/test-manager.XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(m->config.history_state_dir, sizeof(m->config.history_state_dir), "%s", dir);
        snprintf(fifo, sizeof(fifo), "%s/%s", dir, STATE_FILE);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        alarm(10);
        checkpoint_load(m);
        alarm(0);
        assert_non_null(strstr(log_text, "cannot read the checkpoint"));
        assert_non_null(strstr(log_text, "starting with an empty history"));
        assert_int_equal(unlink(fifo), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* A state directory of its own with @data as its checkpoint; its path into @dir. */
static void state_with(Manager *m, char *dir, size_t size_dir, const void *data, size_t size)
{
        char path[160];
        FILE *f;

        snprintf(dir, size_dir, "/tmp/test-manager.XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(m->config.history_state_dir, sizeof(m->config.history_state_dir), "%s", dir);
        snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

/* How many files of @dir start with @prefix; removes them all (and @dir) when @clean. */
static unsigned files_like(const char *dir, const char *prefix, bool clean)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        unsigned n = 0;
        char path[400];

        assert_non_null(d);
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.') {
                        continue;
                }
                n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
                if (clean) {
                        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                        assert_int_equal(unlink(path), 0);
                }
        }
        closedir(d);
        if (clean) {
                assert_int_equal(rmdir(dir), 0);
        }
        return n;
}

/* A checkpoint of a version this daemon does not read: refused with both versions named, and
 * kept (set aside), not deleted. */
static void test_checkpoint_other_version(void **state)
{
        Fixture *f = *state;
        uint8_t data[64] = "JTRDHIST";
        char dir[64];

        data[8] = 3;
        state_with(f->m, dir, sizeof(dir), data, sizeof(data));
        checkpoint_load(f->m);
        assert_non_null(strstr(log_text, "is version 3, which this jitterd cannot read (it reads "
                                         "versions 1 to 2)"));
        assert_int_equal(files_like(dir, STATE_FILE ".version-", false), 1);
        assert_int_equal(files_like(dir, STATE_FILE, true), 1);
}

/* The previous version's checkpoint (test/history/checkpoint-v1.state, of another boot: its
 * boot id made unknown) is migrated, said with both versions, and its history is there. */
static void test_checkpoint_version1(void **state)
{
        Fixture *f = *state;
        HistoryWindow *w = malloc(sizeof(*w));
        uint8_t *data = malloc(65536);
        char dir[64], path[256];
        uint32_t crc = 0xffffffffu;
        size_t size;
        FILE *in;

        snprintf(path, sizeof(path), "%s/history/checkpoint-v1.state", TEST_SOURCE_DIR);
        in = fopen(path, "re");
        assert_non_null(in);
        size = fread(data, 1, 65536, in);
        fclose(in);
        assert_true(size > 40 && size < 65536);
        memset(data + 20, 0, 16);
        for (size_t i = 0; i < size - 4; i++) {
                crc ^= data[i];
                for (unsigned k = 0; k < 8; k++) {
                        crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
                }
        }
        crc = ~crc;
        for (unsigned i = 0; i < 4; i++) {
                data[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        }
        f->m->counter.hz = 2445406083ULL; /* the counter it was written with */
        state_with(f->m, dir, sizeof(dir), data, size);
        checkpoint_load(f->m);
        assert_non_null(strstr(log_text, "migrated from checkpoint version 1 to 2"));
        assert_int_equal(history_query(f->m->history, 1, 0, 0, true, w), 0);
        assert_int_equal(w->slot.gap.count, 9516162048ULL); /* what that daemon answered */
        assert_int_equal(files_like(dir, STATE_FILE, true), 1);
        free(data);
        free(w);
}

/* The edges of the coarse bucket that holds magnitude @v, from history.h's definition: below 16
 * ticks exact, above them each power of two split in 8 (HISTORY_COARSE_SUB_BITS = 3). */
static void coarse_edges(uint64_t v, uint64_t *lower, uint64_t *upper)
{
        unsigned dropped = 0;

        while ((v >> dropped) >= 16) {
                dropped++;
        }
        *lower = v >> dropped << dropped;
        *upper = *lower + (1ull << dropped) - 1;
}

#define EDGE_INTERVALS 180

/* Checks GetHistogram's @buckets against the values @v (each recorded EDGE_INTERVALS times, no
 * two in one coarse bucket): ascending buckets that do not overlap, each value in the one
 * bucket whose edges are its coarse bucket's, that bucket counting it and nothing else. */
static void assert_coarse_buckets(json_t *reply, const int64_t *v, size_t n)
{
        json_t *buckets = json_object_get(reply, "buckets"), *b;
        size_t i;

        assert_int_equal(json_integer_value(json_object_get(reply, "total")), EDGE_INTERVALS * n);
        json_array_foreach(buckets, i, b)
        {
                json_int_t lower = json_integer_value(json_object_get(b, "lower_ns"));
                json_int_t upper = json_integer_value(json_object_get(b, "upper_ns"));
                json_int_t count = json_integer_value(json_object_get(b, "count"));
                uint64_t lo, hi;
                size_t k;

                assert_true(lower <= upper);
                if (i > 0) {
                        assert_true(json_integer_value(json_object_get(
                                            json_array_get(buckets, i - 1), "upper_ns")) < lower);
                }
                for (k = 0; k < n && (v[k] < lower || v[k] > upper); k++) {
                }
                assert_true(k < n);
                coarse_edges(v[k] < 0 ? -(uint64_t)v[k] : (uint64_t)v[k], &lo, &hi);
                if (v[k] < 0) {
                        assert_int_equal(lower, -(json_int_t)hi);
                        assert_int_equal(upper, -(json_int_t)lo);
                } else {
                        assert_int_equal(lower, lo);
                        assert_int_equal(upper, hi);
                }
                assert_int_equal(count, EDGE_INTERVALS);
        }
        assert_int_equal(json_array_size(buckets), n);
}

/* GetHistogram of a window kept at the coarse resolution (1h: here intervals older than a
 * minute are kept with 8 sub-buckets per power of two, the newest minute at the probe's 32)
 * gives every bucket the edges of its coarse bucket, for the gaps and for the diff-of-diff on
 * both sides of zero. The counter is CLOCK_MONOTONIC's, so a tick is a ns. */
static void test_histogram_coarse_edges(void **state)
{
        static const int64_t gaps[] = {7, 100, 1000, 1100, 5000, 40000, 123456789};
        static const int64_t dds[] = {-123456, -1000, -7, 0, 7, 1100, 70000};
        Fixture *f = *state;
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        const uint64_t s = 1000000000ULL;
        json_t *reply;

        if (now < (EDGE_INTERVALS + 10) * s) {
                skip(); /* the intervals must lie in the last hour, after the boot */
        }
        assert_int_equal(tickconv_to_ns(manager_tickconv(f->m), 123456789), 123456789);
        for (unsigned i = 0; i < EDGE_INTERVALS; i++) {
                ProbeSlot *slot = malloc(sizeof(*slot));

                assert_non_null(slot);
                slot_clear(slot);
                for (size_t k = 0; k < ELEMENTSOF(gaps); k++) {
                        stats_add(&slot->gap, (uint64_t)gaps[k]);
                        histogram_add(&slot->gap_hist, (uint64_t)gaps[k]);
                        signed_stats_add(&slot->dd, dds[k]);
                        signed_histogram_add(&slot->dd_hist, dds[k]);
                }
                assert_int_equal(history_add_interval(f->m->history, 0,
                                                      now - (EDGE_INTERVALS + 5 - i) * s, s, slot,
                                                      false, NULL),
                                 0);
                free(slot);
        }
        reply = api_histogram(f->m, 0, "1h", "gap");
        assert_non_null(reply);
        assert_coarse_buckets(reply, gaps, ELEMENTSOF(gaps));
        json_decref(reply);
        reply = api_histogram(f->m, 0, "1h", "diffdiff");
        assert_non_null(reply);
        assert_coarse_buckets(reply, dds, ELEMENTSOF(dds));
        json_decref(reply);
}

/* Adds to CPU 0 @n intervals of 1 s, the last ending @end_ns, interval i (from 0) holding
 * i + 1 gaps of 1000 + i ticks. */
static void add_counted(Manager *m, unsigned n, uint64_t end_ns)
{
        ProbeSlot *slot = malloc(sizeof(*slot));

        assert_non_null(slot);
        for (unsigned i = 0; i < n; i++) {
                slot_clear(slot);
                for (unsigned k = 0; k <= i; k++) {
                        stats_add(&slot->gap, 1000 + i);
                        histogram_add(&slot->gap_hist, 1000 + i);
                }
                assert_int_equal(history_add_interval(m->history, 0,
                                                      end_ns - (uint64_t)(n - i) * 1000000000ULL,
                                                      1000000000ULL, slot, false, NULL),
                                 0);
        }
        free(slot);
}

/* The samples and the max gap GetStats gives for CPU 0 over @window. */
static void stats_of(Manager *m, const char *window, json_int_t *samples, double *max_ns)
{
        cpu_set_t cpus;
        json_t *arr, *o;

        CPU_ZERO(&cpus);
        CPU_SET(0, &cpus);
        arr = api_stats(m, &cpus, window);
        assert_non_null(arr);
        o = json_array_get(arr, 0);
        *samples = json_integer_value(json_object_get(o, "samples"));
        *max_ns = json_number_value(json_object_get(json_object_get(o, "gap"), "max_ns"));
        json_decref(arr);
}

/* GetStats of a CPU whose intervals come up to now reads the running sums: 10s holds the 10
 * newest intervals, 1m and all every one of the 30 (the test sums what each holds itself).
 * Once no interval has come for 20 s, a window ends now, not at the last interval: 10s is
 * empty, 1m still holds all 30, and all keeps them. */
static void test_windows_current_and_stopped(void **state)
{
        Fixture *f = *state;
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        json_int_t samples;
        double max_ns;

        if (now < 60ULL * 1000000000ULL) {
                skip(); /* the intervals must lie after the boot */
        }
        /* Interval i has i + 1 samples: the newest 10 (i = 20..29) have 21 + ... + 30 = 255,
         * all 30 have 465. */
        add_counted(f->m, 30, now);
        stats_of(f->m, "10s", &samples, &max_ns);
        assert_int_equal(samples, 255);
        assert_true(max_ns == 1029.0);
        stats_of(f->m, "1m", &samples, &max_ns);
        assert_int_equal(samples, 465);
        stats_of(f->m, "all", &samples, &max_ns);
        assert_int_equal(samples, 465);
        history_reset(f->m->history, 0);
        add_counted(f->m, 30, now - 20ULL * 1000000000ULL);
        stats_of(f->m, "10s", &samples, &max_ns);
        assert_int_equal(samples, 0);
        stats_of(f->m, "1m", &samples, &max_ns);
        assert_int_equal(samples, 465);
        assert_true(max_ns == 1029.0);
        stats_of(f->m, "all", &samples, &max_ns);
        assert_int_equal(samples, 465);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_tick_logs_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_shows_failure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_ready, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_is_immediate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_fifo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_other_version, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_version1, setup, teardown),
                cmocka_unit_test_setup_teardown(test_histogram_coarse_edges, setup, teardown),
                cmocka_unit_test_setup_teardown(test_windows_current_and_stopped, setup, teardown),
        };

        drop_realtime();
        return cmocka_run_group_tests(tests, NULL, NULL);
}

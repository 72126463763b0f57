/* Unit tests of the isolation reading's cost, against fixture trees the test makes: one read
 * visits at most ISOLATION_WALK_DIRS_MAX directories of a hierarchy (counted against the
 * directories the test made), and a cached reading is read anew at most once per max age,
 * however often it is asked for, while a change of the cpusets shows at the first call after
 * that age. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "isolation.h"
#include "util.h"

typedef struct Fixture {
        char root[64];
        char cpuset[PATH_MAX]; /* ROOT/sys/fs/cgroup/cpuset */
} Fixture;

/* @dir/@name into @buf (PATH_MAX bytes). */
static void join(char *buf, const char *dir, const char *name)
{
        int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

        assert_true(n > 0 && n < PATH_MAX);
}

static void put(const char *dir, const char *name, const char *text)
{
        char p[PATH_MAX];
        FILE *f;

        join(p, dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *dir, const char *name)
{
        char p[PATH_MAX];

        join(p, dir, name);
        if (mkdir(p, 0755) < 0) {
                fail_msg("mkdir %s: %s", p, strerror(errno));
        }
}

/* A v1 cpuset of @cpus at @dir/@name. */
static void make_cpuset(const char *dir, const char *name, const char *cpus, const char *lb,
                        const char *exclusive)
{
        char p[PATH_MAX];

        make_dir(dir, name);
        join(p, dir, name);
        put(p, "cpuset.cpus", cpus);
        put(p, "cpuset.sched_load_balance", lb);
        put(p, "cpuset.cpu_exclusive", exclusive);
}

/* An empty host: no /proc/mounts (the usual places are looked at), a v1 cpuset hierarchy whose
 * root covers CPUs 0-3 without load balancing, no v2 one. */
static int setup(void **state)
{
        Fixture *f = calloc(1, sizeof(*f));
        char p[PATH_MAX];

        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/jitterd-isolation.XXXXXX");
        assert_non_null(mkdtemp(f->root));
        join(p, f->root, "sys");
        assert_int_equal(mkdir(p, 0755), 0);
        make_dir(p, "fs");
        join(p, f->root, "sys/fs");
        make_dir(p, "cgroup");
        join(p, f->root, "sys/fs/cgroup");
        make_cpuset(p, "cpuset", "0-3", "0", "1");
        join(f->cpuset, p, "cpuset");
        *state = f;
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        Fixture *f = *state;

        nftw(f->root, remove_one, 64, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static double seconds_since(const struct timespec *t0)
{
        struct timespec t1;

        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A read counts the directories it visits: the root and the three cpusets made here. */
static void test_read_counts_dirs(void **state)
{
        Fixture *f = *state;
        const IsolationSet *set;
        Isolation iso;

        make_cpuset(f->cpuset, "system", "0", "1", "0");
        make_cpuset(f->cpuset, "rt", "2-3", "0", "1");
        make_cpuset(f->cpuset, "user", "0", "1", "0");
        assert_int_equal(isolation_read(f->root, &iso), 0);
        assert_int_equal(iso.v1_error, 0);
        assert_int_equal(iso.v2_error, -ENOENT);
        assert_int_equal(iso.dirs, 4);
        assert_int_equal(isolation_of(&iso, 2, &set), ISOLATION_CPUSET_V1);
        assert_non_null(set);
        assert_string_equal(set->path, "/rt");
        assert_int_equal(isolation_of(&iso, 0, NULL), ISOLATION_NONE);
}

/* A hierarchy of more directories than the bound: the read visits the bound, no more. */
static void test_read_is_bounded(void **state)
{
        Fixture *f = *state;
        const unsigned made = ISOLATION_WALK_DIRS_MAX + 1000;
        struct timespec t0;
        char name[32];
        Isolation iso;

        for (unsigned i = 0; i < made; i++) {
                snprintf(name, sizeof(name), "c%u", i);
                make_dir(f->cpuset, name);
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(isolation_read(f->root, &iso), 0);
        print_message("one read of a hierarchy of %u cpusets: %u directories visited in %.1f ms\n",
                      made + 1, iso.dirs, seconds_since(&t0) * 1e3);
        assert_int_equal(iso.dirs, ISOLATION_WALK_DIRS_MAX);
}

/* Asked for every millisecond for a minute with a max age of one second: 60 reads, each of a
 * reading no older than the max age, and a change of the cpusets seen at the first call a max
 * age after the reading that missed it. */
static void test_cache_reads_once_per_age(void **state)
{
        Fixture *f = *state;
        const uint64_t age = NSEC_PER_SEC, t0 = 5000 * NSEC_PER_SEC, step = NSEC_PER_SEC / 1000;
        char rt[PATH_MAX];
        IsolationCache c = {0};
        const Isolation *iso;
        uint64_t t, last_read = 0, calls = 0;
        struct timespec w0;

        make_cpuset(f->cpuset, "rt", "2", "0", "1");
        join(rt, f->cpuset, "rt");
        clock_gettime(CLOCK_MONOTONIC, &w0);
        for (t = t0; t < t0 + 60 * NSEC_PER_SEC; t += step, calls++) {
                unsigned long before = c.reads;

                iso = isolation_cache_get(&c, f->root, t, age);
                assert_non_null(iso);
                if (c.reads != before) {
                        /* Read anew exactly when the kept one reached the max age. */
                        assert_true(before == 0 || t - last_read == age);
                        last_read = t;
                }
                assert_true(t - last_read < age);
                assert_int_equal(isolation_of(iso, 2, NULL), ISOLATION_CPUSET_V1);
        }
        print_message("%" PRIu64 " calls over 60 s: %lu reads, %.1f ms in all\n", calls, c.reads,
                      seconds_since(&w0) * 1e3);
        assert_int_equal(c.reads, 60);

        /* The shield goes: the kept reading still says it until it is a max age old. */
        put(rt, "cpuset.sched_load_balance", "1");
        t = last_read + age - 1;
        assert_int_equal(isolation_of(isolation_cache_get(&c, f->root, t, age), 2, NULL),
                         ISOLATION_CPUSET_V1);
        assert_int_equal(c.reads, 60);
        t = last_read + age;
        assert_int_equal(isolation_of(isolation_cache_get(&c, f->root, t, age), 2, NULL),
                         ISOLATION_NONE);
        assert_int_equal(c.reads, 61);

        /* Forgotten, or a clock that went back: read at the next call. */
        put(rt, "cpuset.sched_load_balance", "0");
        c.valid = false; /* forget the kept reading */
        assert_int_equal(isolation_of(isolation_cache_get(&c, f->root, t, age), 2, NULL),
                         ISOLATION_CPUSET_V1);
        assert_int_equal(c.reads, 62);
        assert_non_null(isolation_cache_get(&c, f->root, t - 1, age));
        assert_int_equal(c.reads, 63);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_read_counts_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_is_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_reads_once_per_age, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

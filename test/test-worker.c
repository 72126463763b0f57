/* Unit tests of the worker: jobs run off the loop, in order, and their completions come back
 * on it; the loop goes on while a long job runs; the thread runs where its creator ran; a full
 * queue is refused; jobs not handed back are dropped at the end; without a thread, jobs run at
 * submission. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "worker.h"

typedef struct Job {
        int id;
        unsigned sleep_ms;
        pthread_t ran_on;   /* the thread that ran it */
        int cpu;            /* the CPU it ran on */
        cpu_set_t affinity; /* of the thread that ran it */
        uint64_t done_ns;   /* when it finished, CLOCK_MONOTONIC */
} Job;

typedef struct Loop {
        sd_event *e;
        int order[64];
        size_t n_done;
        uint64_t done_ns[64];
        pthread_t done_on[64];
        size_t dropped;
} Loop;

static void job_run(void *job)
{
        Job *j = job;
        struct timespec ts = {0, (long)j->sleep_ms * 1000000L};

        j->ran_on = pthread_self();
        j->cpu = sched_getcpu();
        pthread_getaffinity_np(pthread_self(), sizeof(j->affinity), &j->affinity);
        nanosleep(&ts, NULL);
        j->done_ns = now_ns(CLOCK_MONOTONIC);
}

static void job_done(void *job, void *userdata)
{
        Loop *l = userdata;
        Job *j = job;

        l->order[l->n_done] = j->id;
        l->done_on[l->n_done] = pthread_self();
        l->done_ns[l->n_done++] = now_ns(CLOCK_MONOTONIC);
}

static void job_drop(void *job)
{
        (void)job;
}

/* Runs the loop until @n jobs are done, at most @max_ms. */
static void run_until(Loop *l, size_t n, unsigned max_ms)
{
        uint64_t deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)max_ms * 1000000ULL;

        while (l->n_done < n) {
                assert_true(now_ns(CLOCK_MONOTONIC) < deadline);
                assert_true(sd_event_run(l->e, 10000) >= 0);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        *(uint64_t *)userdata = now_ns(CLOCK_MONOTONIC);
        return 0;
}

static void pin(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

/* Five jobs: run on another thread, on the submitter's CPU only, completed on the loop's thread
 * in order; a timer 20 ms away fires while the first job (300 ms) still runs; a job submitted
 * after the submitter moved runs where it moved. */
static void test_off_loop(void **state)
{
        Job jobs[5] = {{.id = 0, .sleep_ms = 300}, {.id = 1}, {.id = 2}, {.id = 3}, {.id = 4}};
        Loop l = {0};
        Worker *w;
        sd_event_source *t;
        uint64_t fired = 0, start;

        (void)state;
        pin(0);
        assert_int_equal(sd_event_new(&l.e), 0);
        assert_int_equal(worker_new(l.e, true, job_done, &l, &w), 0);
        start = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < 5; i++) {
                assert_int_equal(worker_submit(w, job_run, &jobs[i]), 0);
        }
        assert_int_equal(
                sd_event_add_time_relative(l.e, &t, CLOCK_MONOTONIC, 20000, 0, on_timer, &fired),
                0);
        run_until(&l, 5, 5000);
        for (int i = 0; i < 5; i++) {
                assert_int_equal(l.order[i], i);
                assert_false(pthread_equal(jobs[i].ran_on, pthread_self()));
                assert_true(pthread_equal(l.done_on[i], pthread_self()));
                assert_int_equal(jobs[i].cpu, 0);
                assert_int_equal(CPU_COUNT(&jobs[i].affinity), 1);
                assert_true(CPU_ISSET(0, &jobs[i].affinity));
                assert_true(l.done_ns[i] >= jobs[i].done_ns);
        }
        /* the loop was free while the first job slept */
        assert_true(fired > 0);
        assert_true(fired < jobs[0].done_ns);
        assert_true(fired - start < 300000000ULL);
        /* the submitter moved (a reload re-pins the loop): the next job runs where it runs now */
        if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
                Job moved = {.id = 5};

                pin(1);
                assert_int_equal(worker_submit(w, job_run, &moved), 0);
                run_until(&l, 6, 5000);
                assert_int_equal(moved.cpu, 1);
                assert_int_equal(CPU_COUNT(&moved.affinity), 1);
                assert_true(CPU_ISSET(1, &moved.affinity));
                pin(0);
        }
        sd_event_source_unref(t);
        worker_free(w, job_drop);
        sd_event_unref(l.e);
}

/* Without a thread: each job runs at submission, on the caller's thread; its completion comes
 * from the loop. */
static void test_inline(void **state)
{
        Job jobs[2] = {{.id = 7}, {.id = 8}};
        Loop l = {0};
        Worker *w;

        (void)state;
        assert_int_equal(sd_event_new(&l.e), 0);
        assert_int_equal(worker_new(l.e, false, job_done, &l, &w), 0);
        assert_int_equal(worker_submit(w, job_run, &jobs[0]), 0);
        assert_true(jobs[0].done_ns > 0);
        assert_true(pthread_equal(jobs[0].ran_on, pthread_self()));
        assert_int_equal(l.n_done, 0);
        assert_int_equal(worker_submit(w, job_run, &jobs[1]), 0);
        run_until(&l, 2, 1000);
        assert_int_equal(l.order[0], 7);
        assert_int_equal(l.order[1], 8);
        worker_free(w, job_drop);
        sd_event_unref(l.e);
}

static size_t dropped;

static void count_drop(void *job)
{
        (void)job;
        dropped++;
}

/* The queue holds WORKER_QUEUE_MAX jobs at most (running, queued or awaiting completion); the
 * end drops those not handed back. */
static void test_full_and_drop(void **state)
{
        static Job jobs[WORKER_QUEUE_MAX + 1];
        Loop l = {0};
        Worker *w;

        (void)state;
        assert_int_equal(sd_event_new(&l.e), 0);
        assert_int_equal(worker_new(l.e, true, job_done, &l, &w), 0);
        for (int i = 0; i < WORKER_QUEUE_MAX; i++) {
                jobs[i] = (Job){.id = i, .sleep_ms = i == 0 ? 200 : 0};
                assert_int_equal(worker_submit(w, job_run, &jobs[i]), 0);
        }
        assert_int_equal(worker_submit(w, job_run, &jobs[WORKER_QUEUE_MAX]), -ENOSPC);
        /* handed back, not one job more may be queued than were completed */
        run_until(&l, 1, 5000);
        assert_int_equal(worker_submit(w, job_run, &jobs[WORKER_QUEUE_MAX]), 0);
        /* whatever is left is dropped: all but those completed, and each once */
        dropped = 0;
        worker_free(w, count_drop);
        assert_int_equal(dropped + l.n_done, WORKER_QUEUE_MAX + 1);
        sd_event_unref(l.e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_off_loop),
                cmocka_unit_test(test_inline),
                cmocka_unit_test(test_full_and_drop),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

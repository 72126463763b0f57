/* End to end against ground truth: jitter-probe on CPU 1 while a SCHED_FIFO thief on CPU 1
 * takes known durations at known times. Every theft must appear as an event that covers it
 * and is not shorter than it. The machine's own noise adds events; we only assert on ours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"
#include "need-cpu1.h"
#include "thief.h"

#define THEFTS 16
/* Clock mapping of event starts is good to well under a microsecond; allow 2. */
#define SLACK_NS 2000
#define SECOND 1000000000ULL
#define DURATION_S 4
#define PREHEAT_NS 200000000ULL
/* jitter-probe says it records once calibration (at most 2 s) and the preheat are over, or
 * exits 1 by itself at the preheat + 5 s. */
#define RECORDING_TIMEOUT_NS (2 * SECOND + PREHEAT_NS + 5 * SECOND + SECOND)
/* Once recording, it ends after its duration, the stop of its probe (PROBE_STOP_TIMEOUT_NS)
 * and its report. */
#define EXIT_TIMEOUT_NS (DURATION_S * SECOND + PROBE_STOP_TIMEOUT_NS + 2 * SECOND)
/* The thefts: one every 150 ms from 0.2 s into the recording on, done by 2.5 s. */
#define THEFT_LEAD_NS 200000000ULL
#define THEFT_PERIOD_NS 150000000ULL
#define THIEF_TIMEOUT_NS (THEFT_LEAD_NS + THEFTS * THEFT_PERIOD_NS + SECOND)

typedef struct Child {
        pid_t pid;
        char out_path[64], err_path[64];
        int out_fd, err_fd;
        sigset_t old_mask;
} Child;

/* What jitter-probe wrote to stderr so far, for messages. */
static const char *child_stderr(const Child *c, char *buf, size_t size)
{
        ssize_t n = pread(c->err_fd, buf, size - 1, 0);

        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

/* Kills jitter-probe if it still runs, and removes its files. */
static void child_end(Child *c)
{
        if (c->pid > 0) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, NULL, 0);
                c->pid = 0;
        }
        unlink(c->out_path);
        unlink(c->err_path);
        close(c->out_fd);
        close(c->err_fd);
        sigprocmask(SIG_SETMASK, &c->old_mask, NULL);
}

/* Waits at most @timeout_ns for jitter-probe to exit, woken by its SIGCHLD (blocked in every
 * thread, so that none misses it). Returns 0 with its @status, or -ETIMEDOUT. */
static int child_wait(Child *c, uint64_t timeout_ns, int *status)
{
        const uint64_t end = now_ns(CLOCK_MONOTONIC) + timeout_ns;
        sigset_t chld;

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        for (;;) {
                uint64_t now;
                struct timespec ts;

                if (waitpid(c->pid, status, WNOHANG) == c->pid) {
                        c->pid = 0;
                        return 0;
                }
                now = now_ns(CLOCK_MONOTONIC);
                if (now >= end) {
                        return -ETIMEDOUT;
                }
                ts = (struct timespec){(time_t)((end - now) / SECOND),
                                       (long)((end - now) % SECOND)};
                sigtimedwait(&chld, NULL, &ts);
        }
}

/* Waits at most @timeout_ns for jitter-probe to say that it records. Returns 0, -ECHILD when
 * it exited first, or -ETIMEDOUT. */
static int child_wait_recording(Child *c, uint64_t timeout_ns)
{
        const uint64_t end = now_ns(CLOCK_MONOTONIC) + timeout_ns;
        char buf[4096];
        int status;

        while (!strstr(child_stderr(c, buf, sizeof(buf)), "jitter-probe: recording CPU 1 for")) {
                if (child_wait(c, 10000000ULL, &status) == 0) {
                        return -ECHILD;
                }
                if (now_ns(CLOCK_MONOTONIC) >= end) {
                        return -ETIMEDOUT;
                }
        }
        return 0;
}

/* Starts jitter-probe on CPU 1 with @counter, its stdout and stderr in files of @c. */
static void child_start(Child *c, const char *counter)
{
        char duration[16];
        sigset_t chld;

        memset(c, 0, sizeof(*c));
        snprintf(c->out_path, sizeof(c->out_path), "/tmp/jitter-probe-thefts-XXXXXX");
        snprintf(c->err_path, sizeof(c->err_path), "/tmp/jitter-probe-thefts-XXXXXX");
        c->out_fd = mkstemp(c->out_path);
        c->err_fd = mkstemp(c->err_path);
        assert_true(c->out_fd >= 0 && c->err_fd >= 0);
        snprintf(duration, sizeof(duration), "%ds", DURATION_S);
        /* Blocked before the fork, so that no SIGCHLD is missed; not in jitter-probe. */
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, &c->old_mask);
        c->pid = fork();
        assert_true(c->pid >= 0);
        if (c->pid == 0) {
                sigprocmask(SIG_SETMASK, &c->old_mask, NULL);
                dup2(c->out_fd, STDOUT_FILENO);
                dup2(c->err_fd, STDERR_FILENO);
                execl(JITTER_PROBE_BIN, "jitter-probe", "--cpus", "1", "--duration", duration,
                      "--preheat", "200ms", "--counter", counter, "--json", (char *)NULL);
                _exit(127);
        }
}

typedef struct ThiefJob {
        uint64_t first_ns;
        uint64_t durations[THEFTS];
        Theft *thefts;
        int r;
} ThiefJob;

/* The thief in a thread of its own, which it pins to CPU 1 at SCHED_FIFO: this one, and the
 * jitter-probe it starts next, stay as they were. */
static void *thief_thread(void *userdata)
{
        ThiefJob *j = userdata;

        j->r = thief_run(1, 50, j->first_ns, THEFT_PERIOD_NS, j->durations, THEFTS, j->thefts);
        return NULL;
}

/* Runs the thefts from THEFT_LEAD_NS on; returns 0, or what stopped the thief, the negative
 * errno of thief_run() or -ETIMEDOUT. */
static int steal(ThiefJob *j)
{
        struct timespec end;
        pthread_t t;
        int r;

        j->first_ns = now_ns(CLOCK_MONOTONIC) + THEFT_LEAD_NS;
        r = -pthread_create(&t, NULL, thief_thread, j);
        if (r < 0) {
                return r;
        }
        clock_gettime(CLOCK_REALTIME, &end);
        end.tv_sec += (time_t)(THIEF_TIMEOUT_NS / SECOND);
        end.tv_nsec += (long)(THIEF_TIMEOUT_NS % SECOND);
        if (end.tv_nsec >= (long)SECOND) {
                end.tv_sec++;
                end.tv_nsec -= (long)SECOND;
        }
        if (pthread_timedjoin_np(t, NULL, &end) != 0) {
                return -ETIMEDOUT;
        }
        return j->r;
}

/* Runs jitter-probe on CPU 1 with @counter while a SCHED_FIFO thief takes THEFTS known times
 * on CPU 1, from just after jitter-probe said it records; returns its report. Every wait is
 * bounded, and jitter-probe never outlives a failure. */
static json_t *run_probe_with_thief(const char *counter, Theft *thefts)
{
        ThiefJob job = {.thefts = thefts};
        char buf[4096];
        json_error_t err;
        json_t *root;
        Child c;
        int r, status;

        for (int k = 0; k < THEFTS; k++) {
                job.durations[k] = 100000 + (uint64_t)(k % 8) * 100000; /* 100 .. 800 us */
        }
        child_start(&c, counter);
        r = child_wait_recording(&c, RECORDING_TIMEOUT_NS);
        if (r < 0) {
                child_stderr(&c, buf, sizeof(buf));
                child_end(&c);
                fail_msg("jitter-probe %s within %.1f s: %s",
                         r == -ECHILD ? "exited without recording" : "did not record",
                         (double)RECORDING_TIMEOUT_NS / 1e9, buf);
        }
        r = steal(&job);
        if (r < 0) {
                child_end(&c);
                fail_msg("the thief on CPU 1 (SCHED_FIFO 50): %s", strerror(-r));
        }
        if (child_wait(&c, EXIT_TIMEOUT_NS, &status) < 0) {
                child_stderr(&c, buf, sizeof(buf));
                child_end(&c);
                fail_msg("jitter-probe still ran %.1f s after the thefts: %s",
                         (double)EXIT_TIMEOUT_NS / 1e9, buf);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                child_stderr(&c, buf, sizeof(buf));
                child_end(&c);
                fail_msg("jitter-probe ended with status %#x: %s", status, buf);
        }
        root = json_load_file(c.out_path, 0, &err);
        child_end(&c);
        if (!root) {
                fail_msg("jitter-probe printed no valid JSON: %s", err.text);
        }
        return root;
}

static void check_thefts_found(const char *counter)
{
        Theft thefts[THEFTS];
        json_t *root = run_probe_with_thief(counter, thefts), *cpu, *events;
        uint64_t start = (uint64_t)json_integer_value(json_object_get(root, "start_ns"));
        uint64_t end = (uint64_t)json_integer_value(json_object_get(root, "end_ns"));
        int inside = 0;

        cpu = json_array_get(json_object_get(root, "cpus"), 0);
        assert_non_null(cpu);
        assert_int_equal(json_integer_value(json_object_get(cpu, "cpu")), 1);
        assert_int_equal(json_integer_value(json_object_get(cpu, "events_dropped")), 0);
        events = json_object_get(cpu, "events");
        assert_true(json_array_size(events) > 0);
        for (int k = 0; k < THEFTS; k++) {
                uint64_t len = thefts[k].end_ns - thefts[k].start_ns;
                bool found = false;
                size_t i;
                json_t *ev;

                if (thefts[k].start_ns < start || thefts[k].end_ns > end) {
                        continue;
                }
                inside++;
                json_array_foreach(events, i, ev)
                {
                        uint64_t s = (uint64_t)json_integer_value(json_object_get(ev, "start_ns"));
                        uint64_t d =
                                (uint64_t)json_integer_value(json_object_get(ev, "duration_ns"));

                        if (s <= thefts[k].start_ns + SLACK_NS &&
                            s + d + SLACK_NS >= thefts[k].end_ns && d >= len) {
                                found = true;
                                break;
                        }
                }
                if (!found) {
                        fail_msg("theft %d (%llu us at %llu) not covered by any of %zu events", k,
                                 (unsigned long long)len / 1000,
                                 (unsigned long long)thefts[k].start_ns, json_array_size(events));
                }
        }
        /* The thefts were timed to fall inside the recording; if they did not, the test
         * proved nothing and must say so. */
        assert_true(inside >= THEFTS - 1);
        /* Interruption count covers at least our thefts, and the stats saw the longest. */
        assert_true(json_integer_value(json_object_get(json_object_get(cpu, "interruptions"),
                                                       "count")) >= inside);
        assert_true(json_integer_value(json_object_get(json_object_get(cpu, "gap"), "max_ns")) >=
                    800000);
        json_decref(root);
}

static void test_thefts_tsc(void **state)
{
        (void)state;
        check_thefts_found("tsc");
}

static void test_thefts_clock(void **state)
{
        (void)state;
        check_thefts_found("clock");
}

int main(void)
{
        int r;

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_thefts_tsc),
                cmocka_unit_test(test_thefts_clock),
        };

        r = need_cpu1();
        if (r != 0) {
                return r;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}

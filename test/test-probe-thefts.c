/* End to end against ground truth: jitter-probe on CPU 1 while a SCHED_FIFO thief on CPU 1
 * takes known durations at known times. Every theft must appear as an event that covers it
 * and is not shorter than it. The machine's own noise adds events; we only assert on ours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "thief.h"

#define THEFTS 16
/* Clock mapping of event starts is good to well under a microsecond; allow 2. */
#define SLACK_NS 2000

static json_t *run_probe_with_thief(const char *counter, Theft *thefts)
{
        uint64_t durations[THEFTS];
        char out_path[] = "/tmp/jitter-probe-thefts-XXXXXX";
        int fd = mkstemp(out_path);
        json_error_t err;
        json_t *root;
        pid_t pid;
        int status;

        assert_true(fd >= 0);
        for (int k = 0; k < THEFTS; k++) {
                durations[k] = 100000 + (uint64_t)(k % 8) * 100000; /* 100 .. 800 us */
        }
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(fd, STDOUT_FILENO);
                execl(JITTER_PROBE_BIN, "jitter-probe", "--cpus", "1", "--duration", "6s",
                      "--preheat", "200ms", "--counter", counter, "--json", "--quiet",
                      (char *)NULL);
                _exit(127);
        }
        /* Calibration and preheat take well under 2 s; the thefts run from 2 s to 4.4 s. */
        assert_int_equal(thief_run(1, 50, now_ns(CLOCK_MONOTONIC) + 2000000000ULL, 150000000ULL,
                                   durations, THEFTS, thefts),
                         0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        root = json_load_file(out_path, 0, &err);
        unlink(out_path);
        close(fd);
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
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_thefts_tsc),
                cmocka_unit_test(test_thefts_clock),
        };

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                fprintf(stderr, "skipped: needs CPU 1 (this machine has one CPU)\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}

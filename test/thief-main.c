/* jitter-thief: steal known durations from a CPU at known times, for end-to-end tests.
 * Prints one line per theft: "START_NS END_NS" (CLOCK_MONOTONIC), with --cpu-time also the
 * thief's CPU time in between ("START_NS END_NS CPU_NS"), with --due when its timer was due
 * ("START_NS END_NS DUE_NS": the probe lost the CPU from then on). With --now it only prints
 * CLOCK_MONOTONIC, so that a script can place its own reads on the daemon's time axis.
 * --random SEED spaces the thefts at random instead of every --period (the period is then
 * their mean spacing); --waker CPU has a thread on that CPU wake the thief (a reschedule IPI)
 * instead of its own timer. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "rng.h"
#include "thief.h"

#define MAX_THEFTS 100000

/* When each of the @n thefts of @durations_ns is due, from @first_ns on: every @period_ns,
 * or when @random, spaced at random (from @seed) with that mean: the longest theft and 2 ms,
 * then an exponential wait, so that the thefts in an interval vary as a Poisson count would. */
static void plan_due(uint64_t first_ns, uint64_t period_ns, bool random, uint64_t seed,
                     const uint64_t *durations_ns, size_t n, uint64_t *ret)
{
        uint64_t gap_min = 2000000ULL;

        for (size_t k = 0; k < n; k++) {
                gap_min = durations_ns[k] + 2000000ULL > gap_min ? durations_ns[k] + 2000000ULL
                                                                 : gap_min;
        }
        rng_seed(seed);
        for (size_t k = 0; k < n; k++) {
                /* one draw per theft, the first one's unused */
                double wait = random && period_ns > gap_min
                                      ? -log(1 - rng_uniform()) * (double)(period_ns - gap_min)
                                      : 0;

                ret[k] = k > 0 && random ? ret[k - 1] + gap_min + (uint64_t)wait
                                         : first_ns + k * period_ns;
        }
}

/* Long because one case per option, then the run and its one line per theft. */
int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                {"cpu", required_argument, NULL, 'c'},
                {"priority", required_argument, NULL, 'p'},
                {"delay", required_argument, NULL, 'D'},
                {"period", required_argument, NULL, 'P'},
                {"durations", required_argument, NULL, 'd'},
                {"count", required_argument, NULL, 'n'},
                {"now", no_argument, NULL, 'N'},
                {"cpu-time", no_argument, NULL, 't'},
                {"at", required_argument, NULL, 'A'},
                {"random", required_argument, NULL, 'R'},
                {"waker", required_argument, NULL, 'W'},
                {"due", no_argument, NULL, 'U'},
                {},
        };
        static uint64_t durations[MAX_THEFTS];
        static Theft thefts[MAX_THEFTS];
        static uint64_t due[MAX_THEFTS];
        uint64_t delay = 1000000000ULL, period = 200000000ULL, at = 0, seed = 0;
        bool random = false;
        size_t n = 0, count = 0;
        int cpu = 1, priority = 50, waker = -1, c, r;
        int cpu_time = 0, print_due = 0;

        while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        cpu = atoi(optarg);
                        break;
                case 'p':
                        priority = atoi(optarg);
                        break;
                case 'D':
                        if (duration_parse(optarg, 1000000000ULL, &delay) < 0) {
                                fprintf(stderr, "jitter-thief: bad --delay %s\n", optarg);
                                return 2;
                        }
                        break;
                case 'P':
                        if (duration_parse(optarg, 1000000000ULL, &period) < 0) {
                                fprintf(stderr, "jitter-thief: bad --period %s\n", optarg);
                                return 2;
                        }
                        break;
                case 'd':
                        for (char *tok = strtok(optarg, ","); tok && n < MAX_THEFTS;
                             tok = strtok(NULL, ",")) {
                                if (duration_parse(tok, 1000ULL, &durations[n++]) < 0) {
                                        fprintf(stderr, "jitter-thief: bad duration %s\n", tok);
                                        return 2;
                                }
                        }
                        break;
                case 'n':
                        count = (size_t)atol(optarg);
                        break;
                case 'N':
                        printf("%" PRIu64 "\n", now_ns(CLOCK_MONOTONIC));
                        return 0;
                case 't':
                        cpu_time = 1;
                        break;
                case 'A':
                        at = strtoull(optarg, NULL, 10);
                        break;
                case 'R':
                        seed = strtoull(optarg, NULL, 10);
                        random = true;
                        break;
                case 'W':
                        waker = atoi(optarg);
                        break;
                case 'U':
                        print_due = 1;
                        break;
                default:
                        return 2;
                }
        }
        if (n == 0) {
                fprintf(stderr, "jitter-thief: --durations is required\n");
                return 2;
        }
        if (waker == cpu) {
                fprintf(stderr, "jitter-thief: --waker must be another CPU than --cpu\n");
                return 2;
        }
        /* --count repeats the list of durations cyclically. */
        if (count > n && count <= MAX_THEFTS) {
                for (size_t k = n; k < count; k++) {
                        durations[k] = durations[k % n];
                }
                n = count;
        }
        /* --at NS: the first theft at that CLOCK_MONOTONIC time, so that two thieves keep a
         * phase the script chose. */
        if (!at) {
                at = now_ns(CLOCK_MONOTONIC) + delay;
        }
        plan_due(at, period, random, seed, durations, n, due);
        r = waker < 0 ? thief_run_due(cpu, priority, due, durations, n, thefts)
                      : thief_run_woken(cpu, waker, priority, due, durations, n, thefts);
        if (r < 0) {
                fprintf(stderr, "jitter-thief: cannot steal CPU %d as SCHED_FIFO%s: %s\n", cpu,
                        waker < 0 ? "" : " woken from another CPU", strerror(-r));
                return 1;
        }
        for (size_t k = 0; k < n; k++) {
                if (cpu_time) {
                        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", thefts[k].start_ns,
                               thefts[k].end_ns, thefts[k].cpu_ns);
                } else if (print_due) {
                        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", thefts[k].start_ns,
                               thefts[k].end_ns, thefts[k].due_ns);
                } else {
                        printf("%" PRIu64 " %" PRIu64 "\n", thefts[k].start_ns, thefts[k].end_ns);
                }
        }
        return 0;
}

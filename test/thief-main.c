/* jitter-thief: steal known durations from a CPU at known times, for end-to-end tests.
 * Prints one line per theft: "START_NS END_NS" (CLOCK_MONOTONIC), with --cpu-time also the
 * thief's CPU time in between ("START_NS END_NS CPU_NS"). With --now it only prints
 * CLOCK_MONOTONIC, so that a script can place its own reads on the daemon's time axis. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "thief.h"

#define MAX_THEFTS 100000

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
                {},
        };
        static uint64_t durations[MAX_THEFTS];
        static Theft thefts[MAX_THEFTS];
        uint64_t delay = 1000000000ULL, period = 200000000ULL, at = 0;
        size_t n = 0, count = 0;
        int cpu = 1, priority = 50, c, r;
        int cpu_time = 0;

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
                default:
                        return 2;
                }
        }
        if (n == 0) {
                fprintf(stderr, "jitter-thief: --durations is required\n");
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
        r = thief_run(cpu, priority, at ? at : now_ns(CLOCK_MONOTONIC) + delay, period, durations,
                      n, thefts);
        if (r < 0) {
                fprintf(stderr, "jitter-thief: cannot run SCHED_FIFO on CPU %d: %s\n", cpu,
                        strerror(-r));
                return 1;
        }
        for (size_t k = 0; k < n; k++) {
                if (cpu_time) {
                        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", thefts[k].start_ns,
                               thefts[k].end_ns, thefts[k].cpu_ns);
                } else {
                        printf("%" PRIu64 " %" PRIu64 "\n", thefts[k].start_ns, thefts[k].end_ns);
                }
        }
        return 0;
}

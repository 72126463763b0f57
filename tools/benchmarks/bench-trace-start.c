/* How long the trace recorder takes to start: trace_recorder_new() for one CPU, as the daemon
 * calls it (its own kernel symbols, opened beforehand), timed over a few rounds, each followed
 * by trace_recorder_free(). Needs tracefs and the right to create an instance (root).
 *   jitter-bench-trace-start [CPU] [ROUNDS]
 * Prints "start_ms min median max" and the events recorded, or the reason it cannot trace
 * (exit status 77 then). */

#include <stdio.h>
#include <stdlib.h>

#include "counter.h"
#include "ksyms.h"
#include "trace.h"
#include "util.h"

#define ROUNDS_MAX 100

int main(int argc, char **argv)
{
        int cpu = argc > 1 ? atoi(argv[1]) : 1;
        int rounds = argc > 2 ? atoi(argv[2]) : 5;
        uint64_t ns[ROUNDS_MAX];
        char reason[TRACE_REASON_MAX];
        CounterInfo ci;
        Ksyms *ksyms = NULL;
        int r;

        if (rounds < 1 || rounds > ROUNDS_MAX || cpu < 0) {
                fprintf(stderr, "usage: jitter-bench-trace-start [CPU] [ROUNDS 1..%d]\n",
                        ROUNDS_MAX);
                return 2;
        }
        r = counter_info_init(COUNTER_HW, 10.0, 200, &ci);
        if (r < 0) {
                r = counter_info_init(COUNTER_CLOCK, 10.0, 200, &ci);
        }
        if (r < 0) {
                fprintf(stderr, "no counter\n");
                return 1;
        }
        (void)ksyms_new(NULL, &ksyms);
        for (int i = 0; i < rounds; i++) {
                TraceOptions o = {
                        .cpus = &cpu,
                        .n_cpus = 1,
                        .counter = ci.source,
                        .counter_hz = ci.hz,
                        .ksyms = ksyms,
                        .instance = "jitterd-bench",
                };
                TraceRecorder *t;
                uint64_t t0 = now_ns(CLOCK_MONOTONIC);

                r = trace_recorder_new(&o, &t, reason, sizeof(reason));
                ns[i] = now_ns(CLOCK_MONOTONIC) - t0;
                if (r < 0) {
                        printf("cannot trace: %s\n", reason);
                        ksyms_free(ksyms);
                        return 77;
                }
                if (i == 0) {
                        printf("events: %s\n", trace_recorder_events(t));
                }
                trace_recorder_free(t);
        }
        ksyms_free(ksyms);
        qsort(ns, (size_t)rounds, sizeof(ns[0]), cmp_u64);
        printf("start_ms %.1f %.1f %.1f\n", (double)ns[0] / 1e6, (double)ns[rounds / 2] / 1e6,
               (double)ns[rounds - 1] / 1e6);
        return 0;
}

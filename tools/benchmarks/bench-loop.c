/* jitter-bench-loop: the bare counter loop that tools/bench measures jitter-probe against.
 * It reads the counter and keeps the largest gap, the least a jitter loop can do, pinned to
 * one CPU for a given time, and prints "SAMPLES DURATION_NS MAX_GAP_TICKS". */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "duration.h"

int main(int argc, char **argv)
{
        uint64_t duration_ns, samples = 0, max = 0, prev, end_ticks, start_ns, end_ns;
        CounterInfo ci;
        cpu_set_t set;
        int cpu;

        if (argc != 3 || duration_parse(argv[2], 1000000000ULL, &duration_ns) < 0) {
                fprintf(stderr, "usage: jitter-bench-loop CPU DURATION\n");
                return 2;
        }
        cpu = atoi(argv[1]);
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                fprintf(stderr, "jitter-bench-loop: cannot pin to CPU %d: %s\n", cpu,
                        strerror(errno));
                return 1;
        }
        if (counter_info_init(COUNTER_HW, 10, 2000, &ci) < 0) {
                fprintf(stderr, "jitter-bench-loop: no usable hardware counter\n");
                return 1;
        }
        start_ns = counter_clock_read();
        prev = counter_hw_read();
        end_ticks = prev + tickconv_from_ns(&ci.conv, duration_ns);
        for (;;) {
                uint64_t now = counter_hw_read(), gap = now - prev;

                prev = now;
                max = gap > max ? gap : max;
                /* Counted in blocks, like the probe, so the end check costs nothing. */
                if ((++samples & 1023) == 0 && now >= end_ticks) {
                        break;
                }
        }
        end_ns = counter_clock_read();
        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", samples, end_ns - start_ns, max);
        return 0;
}

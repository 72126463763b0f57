#pragma once

/* For the tests that run a probe on CPU 1: 77 (skip) on a machine with one CPU, 1 (fail) where
 * CPU 1 exists but is offline, which a skip would hide (a test killed while it had CPU 1
 * unplugged leaves it so), and 0 where CPU 1 can be used. Says why on stderr. */

#include <stdio.h>
#include <unistd.h>

static inline int need_cpu1(void)
{
        FILE *f;
        int online = 1;

        if (sysconf(_SC_NPROCESSORS_CONF) < 2) {
                fprintf(stderr, "skipped: needs CPU 1 (this machine has one CPU)\n");
                return 77;
        }
        f = fopen("/sys/devices/system/cpu/cpu1/online", "re");
        if (f) {
                if (fscanf(f, "%d", &online) != 1) {
                        online = 1;
                }
                fclose(f);
        }
        if (!online) {
                fprintf(stderr, "CPU 1 is offline (left so by a test killed while it was "
                                "unplugged?); bring it back with: "
                                "echo 1 > /sys/devices/system/cpu/cpu1/online\n");
                return 1;
        }
        return 0;
}

#include "steal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* The column of steal in a cpuN line, counted from 1 after the name (user nice system idle
 * iowait irq softirq steal ...; proc(5)). */
#define STEAL_COLUMN 8

/* The steal column of the cpuN line @line (its end at @end), in USER_HZ ticks. */
static bool line_steal(const char *line, const char *end, unsigned long long *ret)
{
        const char *p = line;

        for (int col = 0; col <= STEAL_COLUMN; col++) {
                char *after;

                /* the name, then the columns; each number must be there */
                while (p < end && *p != ' ' && *p != '\t') {
                        p++;
                }
                while (p < end && (*p == ' ' || *p == '\t')) {
                        p++;
                }
                if (col == STEAL_COLUMN - 1) {
                        if (p >= end || *p < '0' || *p > '9') {
                                return false;
                        }
                        errno = 0;
                        *ret = strtoull(p, &after, 10);
                        return errno == 0 && after <= end;
                }
        }
        return false;
}

/* Fills the entries of @cpus whose CPU the cpuN line @line (its end at @end) is. */
static void take_line(const char *line, const char *end, const int *cpus, size_t n,
                      uint64_t *ret_ns, bool *ret_have)
{
        long hz = sysconf(_SC_CLK_TCK);
        unsigned long long ticks;
        char *after;
        long cpu;

        if (line[3] < '0' || line[3] > '9' || hz <= 0) {
                return; /* the "cpu" line of all CPUs */
        }
        cpu = strtol(line + 3, &after, 10);
        if (after >= end || *after != ' ' || !line_steal(line, end, &ticks)) {
                return;
        }
        for (size_t i = 0; i < n; i++) {
                if (cpus[i] == cpu) {
                        ret_ns[i] = (uint64_t)ticks * (NSEC_PER_SEC / (unsigned long)hz);
                        ret_have[i] = true;
                }
        }
}

int steal_read(const char *root, const int *cpus, size_t n, uint64_t *ret_ns, bool *ret_have)
{
        _cleanup_free_ char *line = NULL;
        char path[PATH_MAX];
        size_t size = 0;
        ssize_t len;
        FILE *f;

        for (size_t i = 0; i < n; i++) {
                ret_have[i] = false;
                ret_ns[i] = 0;
        }
        if ((size_t)snprintf(path, sizeof(path), "%s/proc/stat", root ? root : "") >=
            sizeof(path)) {
                return -ENAMETOOLONG;
        }
        f = fopen(path, "re");
        if (!f) {
                return -errno;
        }
        /* The cpu lines come first; the rest (the long intr line) is not read. */
        while ((len = getline(&line, &size, f)) > 0 && strncmp(line, "cpu", 3) == 0) {
                take_line(line, line + len, cpus, n, ret_ns, ret_have);
        }
        fclose(f);
        return 0;
}

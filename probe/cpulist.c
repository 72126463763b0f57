#include "cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_number(const char **p, unsigned long *ret)
{
        char *end;

        if (!isdigit((unsigned char)**p)) {
                return -EINVAL;
        }
        errno = 0;
        *ret = strtoul(*p, &end, 10);
        if (errno != 0 || *ret >= CPU_SETSIZE) {
                return -ERANGE;
        }
        *p = end;
        return 0;
}

int cpulist_parse(const char *text, cpu_set_t *ret_set)
{
        const char *p = text;
        cpu_set_t set;
        int r;

        CPU_ZERO(&set);
        if (!text) {
                return -EINVAL;
        }
        while (*p == ' ' || *p == '\t') {
                p++;
        }
        while (*p != '\0' && *p != '\n') {
                unsigned long first, last, stride = 1;

                r = parse_number(&p, &first);
                if (r < 0) {
                        return r;
                }
                last = first;
                if (*p == '-') {
                        p++;
                        r = parse_number(&p, &last);
                        if (r < 0) {
                                return r;
                        }
                        if (last < first) {
                                return -EINVAL;
                        }
                        if (*p == ':') {
                                p++;
                                r = parse_number(&p, &stride);
                                if (r < 0 || stride == 0) {
                                        return -EINVAL;
                                }
                        }
                }
                for (unsigned long cpu = first; cpu <= last; cpu += stride) {
                        CPU_SET(cpu, &set);
                }
                if (*p == ',') {
                        p++;
                        if (*p == '\0' || *p == '\n') {
                                return -EINVAL;
                        }
                } else if (*p != '\0' && *p != '\n') {
                        return -EINVAL;
                }
        }
        *ret_set = set;
        return 0;
}

char *cpulist_format(char *buf, size_t size, const cpu_set_t *set)
{
        size_t len = 0;

        if (size == 0) {
                return buf;
        }
        buf[0] = '\0';
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                int last = cpu;

                if (!CPU_ISSET(cpu, set)) {
                        continue;
                }
                while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set)) {
                        last++;
                }
                int n = last == cpu ? snprintf(buf + len, size - len, "%s%d", len ? "," : "", cpu)
                                    : snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "",
                                               cpu, last);
                if (n < 0 || (size_t)n >= size - len) {
                        break;
                }
                len += (size_t)n;
                cpu = last;
        }
        return buf;
}

int cpulist_last(const cpu_set_t *set)
{
        for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) {
                if (CPU_ISSET(cpu, set)) {
                        return cpu;
                }
        }
        return -1;
}

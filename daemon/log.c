#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int max_level = 6;

void log_set_max_level(int prio)
{
        max_level = prio;
}

void log_internal(int prio, const char *fmt, ...)
{
        char buf[2048];
        va_list ap;

        if (prio > max_level) {
                return;
        }
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        /* One write per line, so lines from different threads never interleave. */
        fprintf(stderr, "<%d>%s\n", prio, buf);
}

#pragma once

/* For unit tests of daemon modules that log: this log_internal() stands in for daemon/log.c's
 * (the test's own definition is linked, the library's is then not pulled in) and keeps every
 * line in memory, so that a test can count what was logged. Include it in one .c per test. */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char log_text[65536];
static size_t log_len;

void log_internal(int prio, const char *fmt, ...)
{
        va_list ap;
        int w;

        (void)prio;
        if (log_len >= sizeof(log_text) - 2) {
                return;
        }
        va_start(ap, fmt);
        w = vsnprintf(log_text + log_len, sizeof(log_text) - log_len - 1, fmt, ap);
        va_end(ap);
        if (w > 0) {
                log_len += (size_t)w < sizeof(log_text) - log_len - 2
                                   ? (size_t)w
                                   : sizeof(log_text) - log_len - 2;
        }
        log_text[log_len++] = '\n';
        log_text[log_len] = '\0';
}

/* Forgets what was logged so far. */
static inline void log_clear(void)
{
        log_len = 0;
        log_text[0] = '\0';
}

/* How many times @needle occurs in @text. */
static inline size_t count_substr(const char *text, const char *needle)
{
        size_t c = 0;

        for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) {
                c++;
        }
        return c;
}

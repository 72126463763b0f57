#pragma once

/* Logging to stderr with the "<N>" priority prefixes journald understands (sd-daemon(3)). */

#include <systemd/sd-daemon.h>

#define log_full(prio, ...) log_internal(prio, __VA_ARGS__)
#define log_error(...) log_internal(3, __VA_ARGS__)
#define log_warning(...) log_internal(4, __VA_ARGS__)
#define log_notice(...) log_internal(5, __VA_ARGS__)
#define log_info(...) log_internal(6, __VA_ARGS__)
#define log_debug(...) log_internal(7, __VA_ARGS__)

/* Writes one line "<prio>message" to stderr, if @prio is within the maximum level. */
void log_internal(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the highest priority written (7: debug); lower-priority messages are dropped. */
void log_set_max_level(int prio);

#pragma once

/* Text formatting for jitterctl: values with the unit chosen for their size, counts, times, and
 * readable daemon errors. Pure functions (apart from the unit spelling chosen once at start),
 * so that every command prints numbers the same way. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Large enough for any string the format_*() functions produce. */
#define FORMAT_MAX 64

/* Chooses how microseconds are spelled: "us" when @ascii, "µs" otherwise (the default). */
void format_set_ascii(bool ascii);

/* Formats a time in ns with three significant digits and the unit chosen for its size: "23 ns",
 * "850 ns", "12.3 µs", "-4.56 ms", "2.00 s" (duration_format_sig3(), with the spelling of
 * format_set_ascii()). Whole nanoseconds print without decimals. NaN or infinity print as "-".
 * Returns @buf. */
char *format_ns(char *buf, size_t size, double ns);

/* Formats a count with three significant digits and an SI suffix above 9999: "999", "9999",
 * "12.3k", "45.0M", "1.20G". Returns @buf. */
char *format_count(char *buf, size_t size, uint64_t n);

/* Formats a rate per second with three significant digits ("0.500", "12.3", "1.20k"), "0" for
 * zero. Returns @buf. */
char *format_rate(char *buf, size_t size, double per_second);

/* Formats a percentage with as many decimals as make a small value readable: "0", "0.00012",
 * "1.50", "99.9". Returns @buf. */
char *format_pct(char *buf, size_t size, double pct);

/* Formats an uptime: "45.2 s", "5m 06s", "2h 03m 04s", "3d 04h 05m". Returns @buf. */
char *format_uptime(char *buf, size_t size, uint64_t ns);

/* Writes @s to @f padded with spaces to @width columns: right-aligned for a positive @width,
 * left-aligned for a negative one. Longer text is written whole. */
void fput_padded(FILE *f, const char *s, int width);

/* Parses an ISO 8601 UTC time as the daemon writes it ("2024-05-01T12:34:56.123456789Z"; the
 * fraction is optional, "+00:00" may stand for "Z"). Returns 0, or -EINVAL. */
int iso8601_parse(const char *s, struct timespec *ret);

/* Formats @ts in the local time zone as "2024-05-01 14:34:56.123456" (with @date) or
 * "14:34:56.123456". Returns @buf. */
char *format_local_time(char *buf, size_t size, const struct timespec *ts, bool date);

/* Turns a percentile given on the command line ("99.99", "p99.99", "50") into the key of the
 * daemon's percentile maps ("p99.99"). Returns 0, or -EINVAL for anything that is not a number
 * in (0, 100). */
int percentile_key(const char *text, char *key, size_t size);

/* Describes a Varlink error reply (@error with @params, which may be NULL) for an operator:
 * "no probe on CPU 7", "invalid window \"2x\" (use 10s, 1m, 5m, 1h, 24h or all)". Returns
 * @buf. */
char *format_error(char *buf, size_t size, const char *error, json_t *params);

/* The element of @reply's "cpus" array whose "cpu" is @cpu (borrowed), or NULL. */
json_t *json_cpu_entry(json_t *reply, json_int_t cpu);

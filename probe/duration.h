#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a duration such as "500ms", "10s", "5m", "2h", "20us", "150ns" or "1.5s" into
 * nanoseconds. A bare number is taken in units of @default_unit_ns (e.g. 1000000000 for
 * seconds). Returns 0, or -EINVAL for text that is not a duration, -ERANGE for one that
 * does not fit in 64 bits. */
int duration_parse(const char *text, uint64_t default_unit_ns, uint64_t *ret_ns);

/* Formats @ns with the unit chosen for its size ("850 ns", "12.30 us", "4.56 ms", "2.00 s")
 * into @buf; returns @buf. */
char *duration_format(char *buf, size_t size, uint64_t ns);

/* The same for a signed difference of times ("-850 ns", "-12.30 us"). */
char *duration_format_signed(char *buf, size_t size, int64_t ns);

/* Formats @ns to three significant digits in the unit chosen for its size ("850 ns",
 * "12.3 µs", "4.56 ms", "1.00 s"; "us" for "µs" when @ascii), as jitterctl shows times. Whole
 * ns print without decimals, what rounds to zero as "0 ns", NaN or infinity as "-". Returns
 * @buf. */
char *duration_format_sig3(char *buf, size_t size, double ns, bool ascii);

/* Formats @ns exactly, as a whole number of the largest unit that divides it ("0", "250us",
 * "10s", "5min", "24h", "2d"), so that duration_parse() reads it back as @ns: the form of the
 * configuration's values. Returns @buf. */
char *duration_format_exact(char *buf, size_t size, uint64_t ns);

/* Formats a CLOCK_REALTIME time in ns as ISO 8601 UTC with nanoseconds
 * ("2026-11-30T07:41:02.123456789Z") into @buf; returns @buf. */
char *realtime_format_iso8601(char *buf, size_t size, uint64_t real_ns);

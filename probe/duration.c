#include "duration.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

static const struct {
        const char *suffix;
        uint64_t ns;
} units[] = {
        {"ns", 1ULL},          {"us", NSEC_PER_USEC}, {"µs", NSEC_PER_USEC},
        {"ms", NSEC_PER_MSEC}, {"s", NSEC_PER_SEC},   {"m", NSEC_PER_MIN},
        {"min", NSEC_PER_MIN}, {"h", NSEC_PER_HOUR},  {"d", NSEC_PER_DAY},
};

int duration_parse(const char *text, uint64_t default_unit_ns, uint64_t *ret_ns)
{
        const char *p = text;
        uint64_t whole = 0, frac = 0, frac_div = 1, unit = default_unit_ns;

        if (!text || !isdigit((unsigned char)*p)) {
                return -EINVAL;
        }
        for (; isdigit((unsigned char)*p); p++) {
                if (whole > (UINT64_MAX - 9) / 10) {
                        return -ERANGE;
                }
                whole = whole * 10 + (uint64_t)(*p - '0');
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p)) {
                        return -EINVAL;
                }
                /* Nine fractional digits are as fine as a nanosecond gets. */
                for (; isdigit((unsigned char)*p); p++) {
                        if (frac_div < NSEC_PER_SEC) {
                                frac = frac * 10 + (uint64_t)(*p - '0');
                                frac_div *= 10;
                        }
                }
        }
        if (*p != '\0') {
                size_t i;

                for (i = 0; i < ELEMENTSOF(units); i++) {
                        if (strcmp(p, units[i].suffix) == 0) {
                                break;
                        }
                }
                if (i == ELEMENTSOF(units)) {
                        return -EINVAL;
                }
                unit = units[i].ns;
        }
        if (unit == 0 || whole > UINT64_MAX / unit) {
                return -ERANGE;
        }
        *ret_ns = whole * unit + (uint64_t)((unsigned __int128)frac * unit / frac_div);
        return 0;
}

char *duration_format(char *buf, size_t size, uint64_t ns)
{
        if (ns < 1000ULL) {
                snprintf(buf, size, "%llu ns", (unsigned long long)ns);
        } else if (ns < 1000000ULL) {
                snprintf(buf, size, "%.2f us", (double)ns / 1e3);
        } else if (ns < 1000000000ULL) {
                snprintf(buf, size, "%.2f ms", (double)ns / 1e6);
        } else {
                snprintf(buf, size, "%.2f s", (double)ns / 1e9);
        }
        return buf;
}

char *realtime_format_iso8601(char *buf, size_t size, uint64_t real_ns)
{
        time_t sec = (time_t)(real_ns / 1000000000ULL);
        struct tm tm;
        size_t len;

        gmtime_r(&sec, &tm);
        len = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + len, size - len, ".%09lluZ", (unsigned long long)(real_ns % 1000000000ULL));
        return buf;
}

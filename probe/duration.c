#include "duration.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
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

/* @ns in the unit chosen for its magnitude. Whole ns below 1000 print as such (%.0f of a
 * whole number), the rest with two decimals. */
static char *format_scaled(char *buf, size_t size, double ns)
{
        double a = fabs(ns);

        if (a < 1e3) {
                snprintf(buf, size, "%.0f ns", ns);
        } else if (a < 1e6) {
                snprintf(buf, size, "%.2f us", ns / 1e3);
        } else if (a < 1e9) {
                snprintf(buf, size, "%.2f ms", ns / 1e6);
        } else {
                snprintf(buf, size, "%.2f s", ns / 1e9);
        }
        return buf;
}

char *duration_format(char *buf, size_t size, uint64_t ns)
{
        return format_scaled(buf, size, (double)ns);
}

char *duration_format_signed(char *buf, size_t size, int64_t ns)
{
        return format_scaled(buf, size, (double)ns);
}

char *duration_format_sig3(char *buf, size_t size, double ns, bool ascii)
{
        static const double scale[] = {1, 1e3, 1e6, 1e9};
        const char *const unit[] = {"ns", ascii ? "us" : "µs", "ms", "s"};
        double a = fabs(ns);
        int i = 0, decimals;

        if (!isfinite(ns)) {
                snprintf(buf, size, "-");
                return buf;
        }
        /* What rounds to zero is zero, not "-0.00". */
        if (a < 0.005) {
                snprintf(buf, size, "0 ns");
                return buf;
        }
        while (i < 3 && a >= scale[i + 1]) {
                i++;
        }
        /* A value that rounds up to 1000 of one unit reads better as 1.00 of the next. */
        if (i < 3 && a / scale[i] >= 999.5) {
                i++;
        }
        if (i == 0 && (a >= 99.5 || a == floor(a))) {
                decimals = 0;
        } else {
                decimals = sig3_decimals(a / scale[i]);
        }
        snprintf(buf, size, "%.*f %s", decimals, ns / scale[i], unit[i]);
        return buf;
}

char *duration_format_exact(char *buf, size_t size, uint64_t ns)
{
        static const struct {
                const char *suffix;
                uint64_t ns;
        } exact[] = {
                {"d", NSEC_PER_DAY}, {"h", NSEC_PER_HOUR},  {"min", NSEC_PER_MIN},
                {"s", NSEC_PER_SEC}, {"ms", NSEC_PER_MSEC}, {"us", NSEC_PER_USEC},
                {"ns", 1},
        };

        if (ns == 0) {
                snprintf(buf, size, "0");
                return buf;
        }
        /* Days only from two on: "24h" reads better than "1d". */
        for (size_t i = 0; i < ELEMENTSOF(exact); i++) {
                if (ns % exact[i].ns == 0 &&
                    (exact[i].ns != NSEC_PER_DAY || ns >= 2 * NSEC_PER_DAY)) {
                        snprintf(buf, size, "%llu%s", (unsigned long long)(ns / exact[i].ns),
                                 exact[i].suffix);
                        break;
                }
        }
        return buf;
}

char *realtime_format_iso8601(char *buf, size_t size, uint64_t real_ns)
{
        time_t sec = (time_t)(real_ns / NSEC_PER_SEC);
        struct tm tm;
        size_t len;

        gmtime_r(&sec, &tm);
        len = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + len, size - len, ".%09lluZ", (unsigned long long)(real_ns % NSEC_PER_SEC));
        return buf;
}

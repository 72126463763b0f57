#include "jitterctl-format.h"
#include "jitterctl-format-internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "duration.h"
#include "json-read.h"
#include "summary-json.h"
#include "util.h"

static bool ascii_units;

void format_set_ascii(bool ascii)
{
        ascii_units = ascii;
}

char *format_ns(char *buf, size_t size, double ns)
{
        return duration_format_sig3(buf, size, ns, ascii_units);
}

char *format_count(char *buf, size_t size, uint64_t n)
{
        static const char suffix[] = "kMGTPE";
        double v = (double)n;
        int i = -1;

        if (n <= 9999) {
                snprintf(buf, size, "%llu", (unsigned long long)n);
                return buf;
        }
        while (i < 5 && (v >= 999.5 || i < 0)) {
                v /= 1000.0;
                i++;
        }
        snprintf(buf, size, "%.*f%c", sig3_decimals(v), v, suffix[i]);
        return buf;
}

char *format_rate(char *buf, size_t size, double per_second)
{
        if (!isfinite(per_second) || per_second < 0) {
                snprintf(buf, size, "-");
        } else if (per_second == 0) {
                snprintf(buf, size, "0");
        } else if (per_second >= 9999.5) {
                format_count(buf, size, (uint64_t)llround(per_second));
        } else if (per_second >= 999.5) {
                snprintf(buf, size, "%.0f", per_second);
        } else if (per_second >= 0.001) {
                snprintf(buf, size, "%.*f",
                         per_second >= 1 ? sig3_decimals(per_second)
                                         : 2 - (int)floor(log10(per_second)),
                         per_second);
        } else {
                snprintf(buf, size, "<0.001");
        }
        return buf;
}

char *format_pct(char *buf, size_t size, double pct)
{
        double a = fabs(pct);
        int decimals;

        if (!isfinite(pct)) {
                snprintf(buf, size, "-");
                return buf;
        }
        if (a == 0) {
                snprintf(buf, size, "0");
                return buf;
        }
        if (a >= 99.95) {
                decimals = 0;
        } else if (a >= 1) {
                decimals = sig3_decimals(a);
        } else {
                decimals = 2 - (int)floor(log10(a));
                if (decimals > 9) {
                        decimals = 9;
                }
        }
        snprintf(buf, size, "%.*f", decimals, pct);
        return buf;
}

char *format_uptime(char *buf, size_t size, uint64_t ns)
{
        uint64_t s = ns / NSEC_PER_SEC;

        if (s < 60) {
                snprintf(buf, size, "%.1f s", (double)ns / 1e9);
        } else if (s < 3600) {
                snprintf(buf, size, "%llum %02llus", (unsigned long long)(s / 60),
                         (unsigned long long)(s % 60));
        } else if (s < 86400) {
                snprintf(buf, size, "%lluh %02llum %02llus", (unsigned long long)(s / 3600),
                         (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
        } else {
                snprintf(buf, size, "%llud %02lluh %02llum", (unsigned long long)(s / 86400),
                         (unsigned long long)(s / 3600 % 24), (unsigned long long)(s / 60 % 60));
        }
        return buf;
}

size_t text_width(const char *s)
{
        size_t w = 0;

        while (*s) {
                unsigned char c = (unsigned char)*s;

                if (c == '\033' && s[1] == '[') {
                        /* CSI: parameters, then one final byte in 0x40..0x7e. */
                        s += 2;
                        while (*s && !((unsigned char)*s >= 0x40 && (unsigned char)*s <= 0x7e)) {
                                s++;
                        }
                        if (*s) {
                                s++;
                        }
                        continue;
                }
                if ((c & 0xc0) != 0x80) {
                        w++;
                }
                s++;
        }
        return w;
}

void fput_padded(FILE *f, const char *s, int width)
{
        size_t w = text_width(s);
        size_t target = (size_t)abs(width);

        if (width < 0) {
                fputs(s, f);
        }
        for (size_t i = w; i < target; i++) {
                fputc(' ', f);
        }
        if (width >= 0) {
                fputs(s, f);
        }
}

static int parse_digits(const char **p, int n, int *ret)
{
        int v = 0;

        for (int i = 0; i < n; i++) {
                if ((*p)[i] < '0' || (*p)[i] > '9') {
                        return -EINVAL;
                }
                v = v * 10 + ((*p)[i] - '0');
        }
        *p += n;
        *ret = v;
        return 0;
}

static int expect_char(const char **p, char c)
{
        if (**p != c) {
                return -EINVAL;
        }
        (*p)++;
        return 0;
}

int iso8601_parse(const char *s, struct timespec *ret)
{
        struct tm tm = {0};
        const char *p = s;
        long nsec = 0;
        time_t t;
        int v;

        if (!s) {
                return -EINVAL;
        }
        if (parse_digits(&p, 4, &v) < 0 || expect_char(&p, '-') < 0) {
                return -EINVAL;
        }
        tm.tm_year = v - 1900;
        if (parse_digits(&p, 2, &v) < 0 || v < 1 || v > 12 || expect_char(&p, '-') < 0) {
                return -EINVAL;
        }
        tm.tm_mon = v - 1;
        if (parse_digits(&p, 2, &tm.tm_mday) < 0 || tm.tm_mday < 1 || tm.tm_mday > 31) {
                return -EINVAL;
        }
        if (*p != 'T' && *p != ' ') {
                return -EINVAL;
        }
        p++;
        if (parse_digits(&p, 2, &tm.tm_hour) < 0 || tm.tm_hour > 23 || expect_char(&p, ':') < 0 ||
            parse_digits(&p, 2, &tm.tm_min) < 0 || tm.tm_min > 59 || expect_char(&p, ':') < 0 ||
            parse_digits(&p, 2, &tm.tm_sec) < 0 || tm.tm_sec > 60) {
                return -EINVAL;
        }
        if (*p == '.' || *p == ',') {
                long scale = 100000000;

                p++;
                if (*p < '0' || *p > '9') {
                        return -EINVAL;
                }
                for (; *p >= '0' && *p <= '9'; p++) {
                        nsec += (*p - '0') * scale;
                        scale /= 10;
                }
        }
        if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0) {
                return -EINVAL;
        }
        t = timegm(&tm);
        if (t == (time_t)-1) {
                return -EINVAL;
        }
        *ret = (struct timespec){.tv_sec = t, .tv_nsec = nsec};
        return 0;
}

char *format_local_time(char *buf, size_t size, const struct timespec *ts, bool date)
{
        char base[48];
        struct tm tm;

        if (!localtime_r(&ts->tv_sec, &tm) ||
            strftime(base, sizeof(base), date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm) == 0) {
                snprintf(buf, size, "-");
                return buf;
        }
        /* A buffer too small for the microseconds gets them cut off, which is fine. */
        if (snprintf(buf, size, "%s.%06ld", base, ts->tv_nsec / 1000) < 0) {
                snprintf(buf, size, "-");
        }
        return buf;
}

int percentile_key(const char *text, char *key, size_t size)
{
        const char *p = text;
        char *end;
        double v;

        if (!text) {
                return -EINVAL;
        }
        if (*p == 'p' || *p == 'P') {
                p++;
        }
        if (*p < '0' || *p > '9') {
                return -EINVAL;
        }
        errno = 0;
        v = strtod(p, &end);
        if (errno != 0 || *end != '\0' || !(v > 0 && v < 100)) {
                return -EINVAL;
        }
        /* "%.10g" gives the daemon's spelling: "99.99", "50", "99.9999". */
        snprintf(key, size, "p%.10g", v);
        return 0;
}

char *format_error(char *buf, size_t size, const char *error, json_t *params)
{
        json_t *cpu = json_object_get(params, "cpu");
        const char *name = strrchr(error, '.') ? strrchr(error, '.') + 1 : error;

        if (strcmp(error, "io.jitterd.NoSuchCpu") == 0 && json_is_integer(cpu)) {
                snprintf(buf, size, "no probe on CPU %lld", (long long)json_integer_value(cpu));
        } else if (strcmp(error, "io.jitterd.InvalidWindow") == 0) {
                snprintf(buf, size, "invalid window \"%s\" (use 10s, 1m, 5m, 1h, 24h or all)",
                         json_read_string_or(params, "window", "?"));
        } else if (strcmp(error, "io.jitterd.InvalidDuration") == 0) {
                snprintf(buf, size, "invalid duration \"%s\" for %s (e.g. 500ms, 10s, 5m)",
                         json_read_string_or(params, "value", "?"),
                         json_read_string_or(params, "parameter", "a parameter"));
        } else if (strcmp(error, "org.varlink.service.InvalidParameter") == 0) {
                snprintf(buf, size, "the daemon refused parameter \"%s\"",
                         json_read_string_or(params, "parameter", "?"));
        } else if (strcmp(error, "org.varlink.service.MethodNotFound") == 0) {
                snprintf(buf, size, "method %s not found (is jitterd older than jitterctl?)",
                         json_read_string_or(params, "method", "?"));
        } else if (strcmp(error, "org.varlink.service.InterfaceNotFound") == 0) {
                snprintf(buf, size, "interface %s not found (is this socket jitterd's?)",
                         json_read_string_or(params, "interface", "?"));
        } else if (strcmp(error, "org.varlink.service.ExpectedMore") == 0) {
                snprintf(buf, size, "the method streams replies: call it with --more");
        } else if (strcmp(error, "io.jitterd.Busy") == 0) {
                json_t *ms = json_object_get(params, "retry_after_ms");

                snprintf(buf, size,
                         "jitterd is busy: its CPU budget for clients is spent; try again in "
                         "%lld ms",
                         json_is_integer(ms) ? (long long)json_integer_value(ms) : 1000LL);
        } else if (strcmp(error, "io.jitterd.ReloadRolledBack") == 0) {
                snprintf(buf, size, "%s", json_read_string_or(params, "reason", error));
        } else if (strcmp(name, "PermissionDenied") == 0) {
                snprintf(buf, size,
                         "permission denied (root, jitterd's own user or its admin "
                         "group only)");
        } else {
                char *text = NULL;

                if (json_is_object(params) && json_object_size(params) > 0) {
                        text = json_dumps(params, JSON_COMPACT);
                }
                snprintf(buf, size, "%s%s%s", error, text ? " " : "", text ? text : "");
                free(text);
        }
        return buf;
}

json_t *json_cpu_entry(json_t *reply, json_int_t cpu)
{
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(reply, "cpus"), i, e)
        {
                json_t *n = json_object_get(e, "cpu");

                if (json_is_integer(n) && json_integer_value(n) == cpu) {
                        return e;
                }
        }
        return NULL;
}

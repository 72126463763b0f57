/* JSON written into a growing buffer (json-text.h). */

#include "json-text.h"

#include <stdlib.h>
#include <string.h>

/* Makes room for @n more bytes and a NUL; false after a failed allocation. */
static bool reserve(JsonText *t, size_t n)
{
        size_t cap;
        char *p;

        if (t->failed) {
                return false;
        }
        if (n > SIZE_MAX / 2 - t->len) {
                t->failed = true;
                return false;
        }
        if (t->len + n + 1 <= t->cap) {
                return true;
        }
        cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1) {
                cap *= 2;
        }
        p = realloc(t->buf, cap);
        if (!p) {
                t->failed = true;
                return false;
        }
        t->buf = p;
        t->cap = cap;
        return true;
}

bool json_text_reserve(JsonText *t, size_t n)
{
        char *p;

        if (t->failed || n > SIZE_MAX / 2 - t->len) {
                return false;
        }
        if (t->len + n + 1 <= t->cap) {
                return true;
        }
        p = realloc(t->buf, t->len + n + 1);
        if (!p) {
                return false; /* a hint: the writes that follow grow the buffer as they need */
        }
        t->buf = p;
        t->cap = t->len + n + 1;
        return true;
}

void json_text_rawn(JsonText *t, const char *s, size_t n)
{
        if (!reserve(t, n)) {
                return;
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
        t->buf[t->len] = '\0';
}

void json_text_raw(JsonText *t, const char *s)
{
        json_text_rawn(t, s, strlen(s));
}

/* The length of the valid UTF-8 sequence at @s (at most @n bytes), or 0 when it is not one:
 * no overlong form, no surrogate, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
        size_t len;
        uint32_t cp;

        if (s[0] < 0x80) {
                return 1;
        } else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                len = 2;
                cp = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                len = 3;
                cp = s[0] & 0x0f;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                len = 4;
                cp = s[0] & 0x07;
        } else {
                return 0;
        }
        if (len > n) {
                return 0;
        }
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80) {
                        return 0;
                }
                cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
                return 0;
        }
        return len;
}

/* The two-character escape of the control character @c, or NULL for \u00XX. */
static const char *short_escape(unsigned char c)
{
        switch (c) {
        case '\n':
                return "\\n";
        case '\t':
                return "\\t";
        case '\r':
                return "\\r";
        case '\b':
                return "\\b";
        case '\f':
                return "\\f";
        default:
                return NULL;
        }
}

void json_text_string(JsonText *t, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        const unsigned char *p = (const unsigned char *)s;
        size_t n;

        if (!s) {
                json_text_raw(t, "null");
                return;
        }
        n = strlen(s);

        /* At most 6 bytes written per byte read (\u00XX), and the quotes. */
        if (!reserve(t, 6 * n + 2)) {
                return;
        }
        t->buf[t->len++] = '"';
        for (size_t i = 0; i < n;) {
                unsigned char c = p[i];
                size_t len;

                if (c == '"' || c == '\\') {
                        t->buf[t->len++] = '\\';
                        t->buf[t->len++] = (char)c;
                        i++;
                } else if (c < 0x20) {
                        const char *e = short_escape(c);

                        if (e) {
                                memcpy(t->buf + t->len, e, 2);
                                t->len += 2;
                        } else {
                                memcpy(t->buf + t->len, "\\u00", 4);
                                t->buf[t->len + 4] = hex[c >> 4];
                                t->buf[t->len + 5] = hex[c & 0xf];
                                t->len += 6;
                        }
                        i++;
                } else if ((len = utf8_len(p + i, n - i)) > 0) {
                        memcpy(t->buf + t->len, p + i, len);
                        t->len += len;
                        i += len;
                } else {
                        /* U+FFFD, 3 bytes: never more than the 6 reserved for this byte. */
                        memcpy(t->buf + t->len, "\xef\xbf\xbd", 3);
                        t->len += 3;
                        i++;
                }
        }
        t->buf[t->len++] = '"';
        t->buf[t->len] = '\0';
}

void json_text_u64(JsonText *t, uint64_t v)
{
        char d[20];
        size_t n = 0;

        do {
                d[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        if (!reserve(t, n)) {
                return;
        }
        while (n) {
                t->buf[t->len++] = d[--n];
        }
        t->buf[t->len] = '\0';
}

void json_text_i64(JsonText *t, int64_t v)
{
        if (v < 0) {
                json_text_rawn(t, "-", 1);
                /* -(v + 1) + 1: INT64_MIN too. */
                json_text_u64(t, (uint64_t) - (v + 1) + 1);
        } else {
                json_text_u64(t, (uint64_t)v);
        }
}

/* Writes @v (0..99) as two digits at @s. */
static void put2(char *s, int v)
{
        s[0] = (char)('0' + v / 10);
        s[1] = (char)('0' + v % 10);
}

/* The civil date (proleptic Gregorian) of day @days since 1970-01-01: H. Hinnant's
 * civil_from_days, for days from 1970 on. */
static void civil_from_days(uint64_t days, unsigned *ret_year, unsigned *ret_month,
                            unsigned *ret_day)
{
        uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
        uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
        unsigned month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);

        *ret_day = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
        *ret_month = month;
        *ret_year = (unsigned)(yoe + era * 400 + (month <= 2));
}

void json_text_realtime(JsonText *t, uint64_t real_ns)
{
        /* A uint64 of ns ends in 2554: four digits of year always do. */
        uint64_t sec = real_ns / 1000000000ULL, frac = real_ns % 1000000000ULL;
        uint64_t of_day = sec % 86400;
        char s[] = "\"0000-00-00T00:00:00.000000000Z\"";
        unsigned year, month, day;

        civil_from_days(sec / 86400, &year, &month, &day);
        put2(s + 1, (int)(year / 100));
        put2(s + 3, (int)(year % 100));
        put2(s + 6, (int)month);
        put2(s + 9, (int)day);
        put2(s + 12, (int)(of_day / 3600));
        put2(s + 15, (int)(of_day / 60 % 60));
        put2(s + 18, (int)(of_day % 60));
        for (int k = 29; k >= 21; k--, frac /= 10) {
                s[k] = (char)('0' + frac % 10);
        }
        json_text_rawn(t, s, sizeof(s) - 1);
}

void json_text_bool(JsonText *t, bool v)
{
        json_text_raw(t, v ? "true" : "false");
}

char *json_text_take(JsonText *t, size_t *ret_len)
{
        char *p = NULL;

        *ret_len = 0;
        if (reserve(t, 0)) {
                t->buf[t->len] = '\0';
                p = t->buf;
                *ret_len = t->len;
        } else {
                free(t->buf);
        }
        *t = (JsonText){0};
        return p;
}

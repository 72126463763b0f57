/* JSON written into a growing buffer (json-text.h). */

#include "json-text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reallocates the buffer of @t to @cap bytes; false, and @t as it was, when that fails. */
static bool grow_to(JsonText *t, size_t cap)
{
        char *p = realloc(t->buf, cap);

        if (!p) {
                return false;
        }
        t->buf = p;
        t->cap = cap;
        return true;
}

/* Whether @n more bytes and a NUL would fit a buffer @t may have (false after a failure). */
static bool can_hold(const JsonText *t, size_t n)
{
        return !t->failed && n <= SIZE_MAX / 2 - t->len;
}

/* Makes room for @n more bytes and a NUL; false after a failed allocation. */
static bool reserve(JsonText *t, size_t n)
{
        size_t cap;

        if (!can_hold(t, n)) {
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
        if (!grow_to(t, cap)) {
                t->failed = true;
                return false;
        }
        return true;
}

bool json_text_reserve(JsonText *t, size_t n)
{
        /* A hint: when it fails, the writes that follow grow the buffer as they need. */
        return can_hold(t, n) && (t->len + n + 1 <= t->cap || grow_to(t, t->len + n + 1));
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

/* The @n bytes at @s as a string, a NUL among them too (written \u0000), as jansson's strings
 * may hold. */
static void json_text_stringn(JsonText *t, const char *s, size_t n)
{
        static const char hex[] = "0123456789ABCDEF";
        const unsigned char *p = (const unsigned char *)s;

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

void json_text_string(JsonText *t, const char *s)
{
        if (!s) {
                json_text_raw(t, "null");
                return;
        }
        json_text_stringn(t, s, strlen(s));
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
                /* Modulo 2^64: INT64_MIN too. */
                json_text_u64(t, 0 - (uint64_t)v);
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

void json_text_key(JsonText *t, const char *key)
{
        if (t->len > 0 && t->buf[t->len - 1] != '{') {
                json_text_rawn(t, ",", 1);
        }
        json_text_string(t, key);
        json_text_rawn(t, ":", 1);
}

void json_text_key_u64(JsonText *t, const char *key, uint64_t v)
{
        json_text_key(t, key);
        json_text_u64(t, v);
}

void json_text_key_i64(JsonText *t, const char *key, int64_t v)
{
        json_text_key(t, key);
        json_text_i64(t, v);
}

void json_text_key_string(JsonText *t, const char *key, const char *v)
{
        json_text_key(t, key);
        json_text_string(t, v);
}

void json_text_item(JsonText *t)
{
        if (t->len > 0 && t->buf[t->len - 1] != '[') {
                json_text_rawn(t, ",", 1);
        }
}

/* "%.17g", ".0" added where neither a dot nor an exponent is, the exponent without '+' or
 * leading zeros. In the C locale, which the daemon and jitterctl keep for numbers (neither
 * sets LC_NUMERIC): jansson would turn a decimal comma back into a point, this does not. */
void json_text_real(JsonText *t, double v)
{
        char buf[64], *e, *digits, *end;
        int n;

        if (!isfinite(v)) {
                json_text_rawn(t, "null", 4);
                return;
        }
        n = snprintf(buf, sizeof(buf), "%.17g", v);

        if (n < 0 || (size_t)n >= sizeof(buf) - 3) {
                t->failed = true;
                return;
        }
        if (!strchr(buf, '.') && !strchr(buf, 'e')) {
                memcpy(buf + n, ".0", 3);
                n += 2;
        }
        e = strchr(buf, 'e');
        if (e) {
                digits = e + 1;
                if (*digits == '-') {
                        digits++;
                }
                /* jansson starts looking for leading zeros after the exponent's first char. */
                end = e + 2;
                while (*end == '0') {
                        end++;
                }
                if (end != digits) {
                        memmove(digits, end, (size_t)(buf + n + 1 - end));
                        n -= (int)(end - digits);
                }
        }
        json_text_rawn(t, buf, (size_t)n);
}

static void value_at(JsonText *t, const json_t *v, unsigned depth)
{
        const char *key;
        json_t *item;
        size_t i, key_len;
        bool first = true;

        if (t->failed) {
                return; /* nothing more would be kept */
        }
        if (depth > JSON_TEXT_DEPTH_MAX) {
                t->failed = true;
                return;
        }
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                json_text_rawn(t, "{", 1);
                json_object_keylen_foreach((json_t *)v, key, key_len, item)
                {
                        json_text_rawn(t, ",", first ? 0 : 1);
                        first = false;
                        json_text_stringn(t, key, key_len);
                        json_text_rawn(t, ":", 1);
                        value_at(t, item, depth + 1);
                }
                json_text_rawn(t, "}", 1);
                break;
        case JSON_ARRAY:
                json_text_rawn(t, "[", 1);
                json_array_foreach(v, i, item)
                {
                        json_text_rawn(t, ",", i ? 1 : 0);
                        value_at(t, item, depth + 1);
                }
                json_text_rawn(t, "]", 1);
                break;
        case JSON_STRING:
                json_text_stringn(t, json_string_value(v), json_string_length(v));
                break;
        case JSON_INTEGER:
                json_text_i64(t, json_integer_value(v));
                break;
        case JSON_REAL:
                json_text_real(t, json_real_value(v));
                break;
        case JSON_TRUE:
                json_text_rawn(t, "true", 4);
                break;
        case JSON_FALSE:
                json_text_rawn(t, "false", 5);
                break;
        case JSON_NULL:
                json_text_rawn(t, "null", 4);
                break;
        }
}

void json_text_value(JsonText *t, const json_t *v)
{
        if (!v) {
                t->failed = true;
                return;
        }
        value_at(t, v, 0);
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

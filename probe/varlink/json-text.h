#pragma once

/* JSON written straight into a growing buffer: the replies that cost two to three times as much
 * CPU built as a tree of jansson objects (GetEvents, GetStatus, GetCauses), and every other
 * message, from its tree, at less than json_dumps() costs. Written as
 * json_dumps(JSON_COMPACT) writes the same values: no blanks, '"', '\\' and the control
 * characters escaped (\n, \t, \r, \b, \f, else \u00XX). Unlike jansson, which refuses a
 * string that is not valid UTF-8, a byte that is not part of valid UTF-8 is written as U+FFFD,
 * so the text is always valid JSON, and a NULL string is written as null.
 *
 * A failed allocation is remembered: every later call does nothing and json_text_take()
 * returns NULL. json_text_key() and json_text_item() place the commas between members and
 * items; elsewhere the caller does (json_text_raw(t, ",")). Never logs. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JsonText {
        char *buf;
        size_t len, cap;
        bool failed;
} JsonText;

/* Makes room for @n more bytes at once, where the caller knows about how many it writes. A
 * hint: when that much cannot be had, returns false and @t is as it was (not failed). */
bool json_text_reserve(JsonText *t, size_t n);

/* Appends @s as it is (no escaping): punctuation, or JSON written elsewhere. */
void json_text_raw(JsonText *t, const char *s);
void json_text_rawn(JsonText *t, const char *s, size_t n);

/* Appends a value. */
void json_text_string(JsonText *t, const char *s);
void json_text_u64(JsonText *t, uint64_t v);
void json_text_i64(JsonText *t, int64_t v);
void json_text_bool(JsonText *t, bool v);
/* The real @v as jansson writes it; null where it is not finite (jansson has no such value). */
void json_text_real(JsonText *t, double v);

/* Appends the name of a member of the object being written, @key (escaped) and a colon, after
 * a comma unless it is the object's first (the text so far ends in '{'). */
void json_text_key(JsonText *t, const char *key);
/* json_text_key() and the value @v. */
void json_text_key_u64(JsonText *t, const char *key, uint64_t v);
void json_text_key_i64(JsonText *t, const char *key, int64_t v);
void json_text_key_string(JsonText *t, const char *key, const char *v);
/* Appends the comma before an item of the array being written unless it is the array's first
 * (the text so far ends in '['). */
void json_text_item(JsonText *t);

/* Appends the CLOCK_REALTIME time @real_ns as a string, as realtime_format_iso8601() writes it
 * ("2026-12-04T20:13:18.123456789Z"), without its gmtime_r(), strftime() and snprintf():
 * GetEvents writes a thousand. */
void json_text_realtime(JsonText *t, uint64_t real_ns);

/* Appends the jansson value @v, as json_dumps(@v, JSON_COMPACT) writes it, byte for byte (its
 * objects' keys in its order, its reals with 17 digits), without printf() for each number.
 * More than JSON_TEXT_DEPTH_MAX + 1 levels of containers fail @t, as an allocation would:
 * whatever jansson parses (at most 2048 levels, JSON_PARSER_MAX_DEPTH) and a message's
 * envelope around it can be written. */
#define JSON_TEXT_DEPTH_MAX 2048
void json_text_value(JsonText *t, const json_t *v);

/* The text written (NUL-terminated) and its length in @ret_len; the caller frees it and @t is
 * empty again. NULL when an allocation failed (@t is emptied too). */
char *json_text_take(JsonText *t, size_t *ret_len);

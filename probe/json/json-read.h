#pragma once

/* Typed readers of one member of a JSON object, for every reader of JSON in the project: the
 * stats JSON and the daemon's replies, whose members are required, and the parameters of a
 * Varlink call, which are optional with a default. Each reads member @key of object @o (NULL
 * or not an object: it has no members); a null member counts as missing. *ret is written only
 * on success. Pure: no I/O, no logging. */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* --- Required members: each returns 0, or -EBADMSG when the member is missing or not what
 * is asked for. */

/* An integer in [@min, @max]. */
int json_read_int(json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *ret);

/* A non-negative integer. */
int json_read_u64(json_t *o, const char *key, uint64_t *ret);

/* A finite number, integer or real (whole ns values are sent as integers). */
int json_read_number(json_t *o, const char *key, double *ret);

/* A non-negative whole number of ns, integer or real, rounded; below 2^63 ns (292 years). */
int json_read_ns(json_t *o, const char *key, uint64_t *ret);

/* The same rule for a number already read (NaN: missing). Returns 0 or -EBADMSG. */
int ns_from_number(double ns, uint64_t *ret);

/* A string of at most @max_len bytes without a NUL inside (borrowed). */
int json_read_string(json_t *o, const char *key, size_t max_len, const char **ret);

/* The string that json_read_string() reads with no length limit, or @fallback when there is
 * none: what a reader shows for a value it lacks. */
const char *json_read_string_or(json_t *o, const char *key, const char *fallback);

/* --- Optional members, as the parameters of a call are: a missing one gives @def. Each
 * returns 0, -EINVAL when the member is of another type, or -ERANGE when it is out of range. */

/* An integer in [@min, @max]. */
int json_read_int_default(json_t *o, const char *key, json_int_t min, json_int_t max,
                          json_int_t def, json_int_t *ret);

/* A string without a NUL inside (borrowed, valid while @o lives). */
int json_read_string_default(json_t *o, const char *key, const char *def, const char **ret);

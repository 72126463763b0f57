#include "json-read.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Member @key of @o, or NULL when @o has none or it is null. */
static json_t *member(json_t *o, const char *key)
{
        json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

        return json_is_null(v) ? NULL : v;
}

/* The checks of a member that is there: -EINVAL for another type, -ERANGE out of range. */
static int int_value(json_t *v, json_int_t min, json_int_t max, json_int_t *ret)
{
        json_int_t x;

        if (!json_is_integer(v)) {
                return -EINVAL;
        }
        x = json_integer_value(v);
        if (x < min || x > max) {
                return -ERANGE;
        }
        *ret = x;
        return 0;
}

static int string_value(json_t *v, size_t max_len, const char **ret)
{
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
                return -EINVAL;
        }
        if (json_string_length(v) > max_len) {
                return -ERANGE;
        }
        *ret = json_string_value(v);
        return 0;
}

int json_read_int(json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *ret)
{
        json_t *v = member(o, key);

        return v && int_value(v, min, max, ret) == 0 ? 0 : -EBADMSG;
}

int json_read_u64(json_t *o, const char *key, uint64_t *ret)
{
        json_int_t x;
        int r = json_read_int(o, key, 0, INT64_MAX, &x);

        if (r < 0) {
                return r;
        }
        *ret = (uint64_t)x;
        return 0;
}

int json_read_number(json_t *o, const char *key, double *ret)
{
        json_t *v = member(o, key);

        if (!json_is_number(v) || !isfinite(json_number_value(v))) {
                return -EBADMSG;
        }
        *ret = json_number_value(v);
        return 0;
}

int ns_from_number(double ns, uint64_t *ret)
{
        /* 2^63 ns is 292 years: anything above is not a duration that was measured. */
        if (!(ns >= 0 && ns < 9.2e18)) {
                return -EBADMSG;
        }
        *ret = (uint64_t)llround(ns);
        return 0;
}

int json_read_ns(json_t *o, const char *key, uint64_t *ret)
{
        double v;
        int r = json_read_number(o, key, &v);

        if (r < 0) {
                return r;
        }
        return ns_from_number(v, ret);
}

int json_read_string(json_t *o, const char *key, size_t max_len, const char **ret)
{
        json_t *v = member(o, key);

        return v && string_value(v, max_len, ret) == 0 ? 0 : -EBADMSG;
}

const char *json_read_string_or(json_t *o, const char *key, const char *fallback)
{
        const char *s;

        return json_read_string(o, key, SIZE_MAX, &s) == 0 ? s : fallback;
}

int json_read_int_default(json_t *o, const char *key, json_int_t min, json_int_t max,
                          json_int_t def, json_int_t *ret)
{
        json_t *v = member(o, key);

        if (!v) {
                *ret = def;
                return 0;
        }
        return int_value(v, min, max, ret);
}

int json_read_string_default(json_t *o, const char *key, const char *def, const char **ret)
{
        json_t *v = member(o, key);

        if (!v) {
                *ret = def;
                return 0;
        }
        return string_value(v, SIZE_MAX, ret);
}

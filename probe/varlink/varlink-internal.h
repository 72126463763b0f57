#pragma once

/* For the tests of varlink.c only: a reader of a boolean field, which no method of the API
 * takes yet. */

#include <jansson.h>
#include <stdbool.h>

/* Reads boolean field @name of @params. Absent or null gives @def. Returns 0 or -EINVAL. */
int varlink_get_bool(json_t *params, const char *name, bool def, bool *ret);

#pragma once

/* For the tests of summary-json.c only: one percentile of a {stats} object, which the readers
 * of summary-json.c take whole. */

#include <jansson.h>
#include <stdbool.h>

/* Reads percentile @key ("p99.99"; "p50" falls back to "median_ns") of @values, a {stats}
 * object. Returns false when it is not there. */
bool values_percentile(json_t *values, const char *key, double *ret);

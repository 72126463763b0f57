#pragma once

/* For the tests of config.c (test-config, fuzz-config): the key table and the steps of a load
 * that the daemon reaches only through config_load(), config_set() and config_dump(). */

#include <stddef.h>

#include "config.h"

/* Returns the key table and stores its length in @ret_n. The table is in the order the
 * sections and keys are documented and dumped. */
const ConfigKey *config_keys(size_t *ret_n);

/* Returns the table entry for @section/@name, or NULL when there is none. */
const ConfigKey *config_key_find(const char *section, const char *name);

/* Formats the value of @key in @c as it would be written in the file into @buf. Returns 0,
 * -ENOBUFS when @size is too small, or -EINVAL when the field holds what no file could have
 * set (an unknown enum value, a string without its NUL). */
int config_format_value(const Config *c, const ConfigKey *key, char *buf, size_t size);

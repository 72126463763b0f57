#pragma once

/* For the tests of jitterctl-format.c only: the width of text on a terminal, which the file's
 * padding uses. */

#include <stddef.h>

/* Number of terminal columns @s takes: UTF-8 continuation bytes and ANSI escape sequences take
 * none. */
size_t text_width(const char *s);

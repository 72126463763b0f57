#pragma once

/* For the tests of jitterctl-svg.c only: the escaping of text, which the file uses itself. */

#include <stdio.h>

/* Writes @s to @f with the five XML special characters escaped. */
void svg_escape(FILE *f, const char *s);

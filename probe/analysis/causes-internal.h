#pragma once

/* For the tests of causes.c only: the parser of a kind's name, and the code of a counter, which
 * the matching of a trace gives inside causes.c. */

#include <stdint.h>

#include "causes.h"

/* Parses a name of cause_kind_name(). Returns 0 or -EINVAL. */
int cause_kind_parse(const char *name, CauseKind *ret);

/* A code of one byte for the counters of interrupts (1..), 0 for every other @counter. */
uint8_t cause_counter_code(const char *counter);

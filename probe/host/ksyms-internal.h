#pragma once

/* For the tests of ksyms.c only: what the module knows that its users need not. */

#include <stdbool.h>

#include "ksyms.h"

/* The file shows only zero addresses (no CAP_SYSLOG when it was opened): functions get their
 * hex address as name. Known after the first ksyms_resolve() that had work. */
bool ksyms_hidden(const Ksyms *k);

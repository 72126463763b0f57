#pragma once

/* For the tests of history.c (test-history, fuzz-history-load): which CPUs a history holds,
 * which the daemon knows from its configuration. */

#include <sched.h>

#include "history.h"

/* The CPUs the history holds data for. */
void history_cpus(const History *h, cpu_set_t *ret);

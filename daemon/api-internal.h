#pragma once

/* For the tests of api.c (fuzz-varlink-dispatch): the Monitor's and Reload's hooks, called
 * without a harvest or READY=1, and how many of their calls are open. */

#include <stddef.h>

#include "api.h"

/* What the harvest hook does: every Monitor call gets the intervals kept since the last call,
 * each once. */
void api_interval(Api *a);

/* What the interval hook does: keeps @iv for the Monitor calls, when there are any, until the
 * next api_interval(). */
void api_monitor_interval(Api *a, const ManagerInterval *iv);

/* What the ready hook does: every Reload call is answered (the reload is over). */
void api_ready(Api *a);

/* How many Monitor calls are open, and how many Reload calls wait for READY=1. */
size_t api_n_monitors(const Api *a);
size_t api_n_reloads(const Api *a);

#pragma once

/* For the tests of varlink-server.c (test-varlink-server, fuzz-varlink-dispatch): what they
 * look at of the server's connections and calls, which the daemon does not need. */

#include <stdbool.h>

#include "varlink-server.h"

/* Number of open client connections. */
unsigned varlink_server_n_connections(const VarlinkServer *s);

/* True once the call's connection is closed (or being closed); replies are then discarded. */
bool varlink_call_is_closed(const VarlinkCallCtx *call);

/* True if the client asked for several replies ("more"). */
bool varlink_call_wants_more(const VarlinkCallCtx *call);

#pragma once

/* The io.jitterd Varlink interface over a Manager: one handler per method, the Monitor calls,
 * and the replies the Prometheus textfile renders too. */

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "attrib.h"
#include "isolation.h"
#include "manager.h"

typedef struct Api Api;

/* Registers io.jitterd with the Manager's server (manager_add_interface()), and a harvest hook that sends each interval to
 * the Monitor calls. Returns 0 or a negative errno. */
int api_new(Manager *m, Api **ret);

/* Ends the open Monitor calls and frees @a; before manager_free(), which frees the server.
 * Accepts NULL. */
Api *api_free(Api *a);

static inline void api_freep(Api **a)
{
        api_free(*a);
}
#define _cleanup_api_ __attribute__((cleanup(api_freep)))

/* The replies of GetStatus, with each probed CPU's isolation as @iso has it (NULL: without
 * it), of GetStats for @cpus over @window (the "cpus" array), and of GetHistogram. NULL on
 * OOM or a bad window. */
json_t *api_status(const Manager *m, const Isolation *iso);
json_t *api_stats(const Manager *m, const cpu_set_t *cpus, const char *window);
json_t *api_histogram(const Manager *m, int cpu, const char *window, const char *kind);

/* Parses a window name ("10s", "1m", "5m", "1h", "24h", "all") into a time range ending now.
 * Returns 0 or -EINVAL. */
int api_window(const char *window, uint64_t *ret_from_ns, uint64_t *ret_to_ns, bool *ret_all);

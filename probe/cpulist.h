#pragma once

#include <sched.h>
#include <stddef.h>

/* Parses a kernel-style CPU list ("1", "2-5", "0,3,8-11", "1-7:2") into @ret_set.
 * Returns 0, -EINVAL for malformed text, -ERANGE for a CPU at or above CPU_SETSIZE. */
int cpulist_parse(const char *text, cpu_set_t *ret_set);

/* Formats @set as a compact CPU list ("0,3,8-11") into @buf; returns @buf. */
char *cpulist_format(char *buf, size_t size, const cpu_set_t *set);

/* Returns the highest CPU number in @set, or -1 when it is empty. */
int cpulist_last(const cpu_set_t *set);

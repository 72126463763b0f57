#pragma once

/* Steal time per CPU: the time the hypervisor ran something else while the CPU's vCPU had work
 * (the "steal" column of the cpuN lines of /proc/stat, which the guest kernel keeps from the
 * hypervisor's steal clock, in USER_HZ ticks). It is what the kernel knows of the time it did
 * not see: shown beside the trace's no_record interruptions, which it should bound from below
 * on a VM whose host preempts the vCPU.
 *
 * This module never logs and keeps nothing between calls. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads @root/proc/stat (@root NULL or "": the real one) once and fills, for each of the @n
 * CPUs @cpus[i], @ret_ns[i] with its steal time since boot in ns and @ret_have[i] with whether
 * its line has a steal column (a CPU missing from the file, offline, has none). Returns 0, or
 * a negative errno when the file cannot be read (then every @ret_have[i] is false). */
int steal_read(const char *root, const int *cpus, size_t n, uint64_t *ret_ns, bool *ret_have);

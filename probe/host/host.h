#pragma once

/* The small readers of the host's files that every part needs: one-line /proc and /sys files
 * and CPU lists. The files of a machine are read below a root prefix so that fixture trees
 * stand for one (NULL or "" for the real system). Never logs; a FIFO below the root is never
 * waited on. The analyses are handed what these read, never a path. */

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* Reads the file @path into @buf (at most @size - 1 bytes, the rest is ignored), NUL bytes
 * turned into spaces and trailing white space removed. @buf is empty on error. Returns 0 or a
 * negative errno (-EAGAIN: a FIFO with a writer and nothing written). */
int host_read_text(const char *path, char *buf, size_t size);

/* Reads a CPU list file such as /sys/devices/system/cpu/isolated below @root. An empty file
 * and "(null)" (a mask the kernel has not allocated) give an empty set. Returns 0, a negative
 * errno of the read, or the error of cpulist_parse(). */
int host_read_cpulist(const char *root, const char *path, cpu_set_t *ret_set);

/* True if CPU @cpu exists and is online (/sys/devices/system/cpu/cpuN/online; a CPU without
 * that file, usually CPU 0, cannot go offline). */
bool host_cpu_online(int cpu);

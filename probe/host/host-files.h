#pragma once

/* Whole /proc files read again and again (/proc/interrupts, /proc/softirqs, a thread's status
 * file), each interval. On the live system the files stay open: procfs makes their content
 * anew at each read from offset 0, and opening costs more than reading (a path walk each
 * time). Below a fixture root they are opened at each read. Never logs. */

#include <stddef.h>
#include <sys/types.h>

typedef struct HostFiles HostFiles;

/* Creates a reader whose reads stop at @max_bytes. Returns 0 or -ENOMEM. */
int host_files_new(size_t max_bytes, HostFiles **ret);

/* Closes the files @f keeps open and frees it; accepts NULL; returns NULL. */
HostFiles *host_files_free(HostFiles *f);

/* Reads @path below @root (NULL or "" for the live system, where the file then stays open)
 * into a buffer of @f, NUL-terminated, at most @max_bytes, cut after the last whole line when
 * the bound was reached. *@ret_text is valid until the next call. Returns the length or a
 * negative errno (a live file that failed to read is closed). */
ssize_t host_files_read(HostFiles *f, const char *root, const char *path, const char **ret_text);

/* Bytes of memory @f holds: its buffer grows to the largest file read, at most
 * @max_bytes + 1. */
size_t host_files_memory_bytes(const HostFiles *f);

#pragma once

/* Cheap noise attribution without a tracer: per CPU and interval, how many interrupts of each
 * kind (/proc/interrupts: LOC, RES, CAL, TLB, device IRQs...), softirqs (/proc/softirqs), and
 * context switches of the probe thread happened, and where readable the SMI count (MSR 0x34).
 *
 * Sources are named ("irq:LOC", "irq:24", "softirq:TIMER", "ctxsw:voluntary",
 * "ctxsw:involuntary", "smi") and numbered in an AttribTable shared by all CPUs, so that an
 * interval stores only (id, count) pairs for the sources that moved. A device IRQ's name stays
 * its number; what the kernel calls it ("virtio0-input.0") is its description.
 *
 * Neither the table nor a snapshot is locked: one thread samples (the manager). This module
 * never logs. */

#include <stddef.h>
#include <stdint.h>

#define ATTRIB_MAX_SOURCES 1024
#define ATTRIB_NAME_MAX 64

/* /proc files are read up to this many bytes; a longer file is cut at its last whole line. */
#define ATTRIB_FILE_MAX (1024 * 1024)

typedef struct AttribTable AttribTable;

/* One counter that moved in an interval. */
typedef struct AttribCount {
        uint16_t id;
        uint64_t count;
} AttribCount;

/* The counters that moved for one CPU over one interval (or a window: counts add up). Each id
 * appears at most once; the order of items is not significant. */
typedef struct AttribDelta {
        size_t n;
        AttribCount items[ATTRIB_MAX_SOURCES];
} AttribDelta;

/* Creates an empty table. Returns 0 or -ENOMEM. */
int attrib_table_new(AttribTable **ret);

/* Frees @t; accepts NULL; returns NULL. */
AttribTable *attrib_table_free(AttribTable *t);

/* Id of @name, adding it when new. Returns the id, -EINVAL for an empty name or one of
 * ATTRIB_NAME_MAX bytes or more, or -ENOSPC when the table is full. */
int attrib_table_id(AttribTable *t, const char *name);

/* Id of @name without adding it: the id, or -ENOENT. */
int attrib_table_find(const AttribTable *t, const char *name);

/* Name of @id, or NULL. */
const char *attrib_table_name(const AttribTable *t, unsigned id);

/* Number of names in the table. */
size_t attrib_table_size(const AttribTable *t);

/* Bytes of memory @t holds, with its buffer for the /proc files (which grows to the largest
 * file read, at most ATTRIB_FILE_MAX + 1) and the descriptions. */
size_t attrib_table_memory_bytes(const AttribTable *t);

/* What was last read for one CPU, to take deltas against. */
typedef struct AttribSnapshot AttribSnapshot;

/* Creates a snapshot that has seen nothing yet. Returns 0 or -ENOMEM. */
int attrib_snapshot_new(AttribSnapshot **ret);

/* Frees @s (and the MSR file it may hold open); accepts NULL; returns NULL. */
AttribSnapshot *attrib_snapshot_free(AttribSnapshot *s);

/* Bytes of memory a snapshot holds. */
size_t attrib_snapshot_memory_bytes(void);

/* One CPU's part of attrib_sample_many(): the counters of @cpu and of the probe thread @tid of
 * process @pid (tid 0: no context switches; pid 0: the thread is looked up as /proc/TID). */
typedef struct AttribRequest {
        AttribSnapshot *snap;
        int cpu;
        int pid;
        int tid;
        AttribDelta *delta; /* filled */
} AttribRequest;

/* Reads the current counters of each of the @n requests below @root ("" or NULL for the real
 * system), reading /proc/interrupts and /proc/softirqs only once, and stores in each request's
 * delta what moved since the previous call with the same snapshot (nothing on the first call,
 * nor for a source that was absent from the previous read). A counter that went backwards (an
 * IRQ freed and requested again) counts 0. A CPU missing from the files' header (offline)
 * gives no interrupt counts. Unreadable files are skipped, not fatal; the MSR file, once
 * opened, stays open in the snapshot so that the SMI count remains readable after
 * capabilities are dropped. Sources that do not fit in the table are left out and make the
 * call return -ENOSPC, with the deltas still filled with the rest. Every request is filled even
 * when one of them fails; returns the first error: -EINVAL for a negative CPU, a snapshot given
 * twice or a missing one, -ENOMEM, -ENOSPC. */
int attrib_sample_many(AttribTable *t, const char *root, AttribRequest *reqs, size_t n);

/* Empties @d. */
void attrib_delta_clear(AttribDelta *d);

/* Makes @dst a copy of @src. */
void attrib_delta_copy(AttribDelta *dst, const AttribDelta *src);

/* Adds @src into @dst (saturating at UINT64_MAX). Items of @src with an id at or above
 * ATTRIB_MAX_SOURCES are ignored. */
void attrib_delta_add(AttribDelta *dst, const AttribDelta *src);

/* Count of @id in @d, 0 when absent. */
uint64_t attrib_delta_get(const AttribDelta *d, unsigned id);

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
 * The counters are parsed from the text the caller read: this module does no I/O. Neither the
 * table nor a snapshot is locked: one thread samples (the manager). It never logs. */

#include <stddef.h>
#include <stdint.h>

#define ATTRIB_MAX_SOURCES 1024
#define ATTRIB_NAME_MAX 64

/* The attribution's /proc files are read up to this many bytes; a longer one is cut at its
 * last whole line. */
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

/* Bytes of memory @t holds, with the descriptions and the parsers' scratch space (one row of
 * counts, one column per request). */
size_t attrib_table_memory_bytes(const AttribTable *t);

/* What was last read for one CPU, to take deltas against. */
typedef struct AttribSnapshot AttribSnapshot;

/* Creates a snapshot that has seen nothing yet. Returns 0 or -ENOMEM. */
int attrib_snapshot_new(AttribSnapshot **ret);

/* Frees @s; accepts NULL; returns NULL. */
AttribSnapshot *attrib_snapshot_free(AttribSnapshot *s);

/* Bytes of memory a snapshot holds. */
size_t attrib_snapshot_memory_bytes(void);

/* One CPU's part of a sample: the counters of @cpu and of the probe thread @tid of process @pid
 * (tid 0: no context switches; pid 0: the thread's status file is /proc/TID/status rather than
 * /proc/PID/task/TID/status). */
typedef struct AttribRequest {
        AttribSnapshot *snap;
        int cpu;
        int pid;
        int tid;
        AttribDelta *delta; /* filled */
} AttribRequest;

/* A sample of the @n requests is attrib_begin(), then the text of each file the caller could
 * read handed to its attrib_record_*() function: /proc/interrupts and /proc/softirqs once for
 * all requests, then each request's thread status file and SMI count. Each request's delta
 * then holds what moved since the previous sample with the same snapshot (nothing on the first,
 * nor for a source absent from the previous sample). A counter that went backwards (an IRQ
 * freed and requested again) counts 0. A file that could not be read is left out: its sources
 * give no counts this time. The caller reads the files (probe/host/), the files up to
 * ATTRIB_FILE_MAX bytes and cut after their last whole line. */

/* Starts a sample: clears every request's delta. Another CPU or thread than the snapshot's
 * last is no base for a delta. Returns 0, -EINVAL for a negative CPU, a snapshot given twice
 * or a missing one, or -ENOMEM (nothing started then). */
int attrib_begin(AttribTable *t, AttribRequest *reqs, size_t n);

/* Records the text of /proc/interrupts (@len bytes) for the @n requests given to
 * attrib_begin(). A CPU missing from the file's header (offline) gets no counts from it. A
 * source that does not fit in the table is left out and makes the call return -ENOSPC, the
 * rest still recorded; -ENOMEM likewise; -EINVAL for more requests than attrib_begin() had. */
int attrib_record_interrupts(AttribTable *t, const char *text, size_t len, AttribRequest *reqs,
                             size_t n);

/* The same for /proc/softirqs. */
int attrib_record_softirqs(AttribTable *t, const char *text, size_t len, AttribRequest *reqs,
                           size_t n);

/* Records the context switches in @text, the NUL-terminated status file of the thread of
 * @req. Returns 0, -ENOSPC (as above) or -EINVAL. */
int attrib_record_status(AttribTable *t, const char *text, AttribRequest *req);

/* The register that holds the SMI count: MSR_SMI_COUNT (Intel SDM vol. 4). */
#define ATTRIB_SMI_MSR 0x34

/* Records @msr_value, read from ATTRIB_SMI_MSR of @req's CPU, as its SMI count. Returns 0,
 * -ENOSPC or -EINVAL. */
int attrib_record_smi(AttribTable *t, uint64_t msr_value, AttribRequest *req);

/* Empties @d. */
void attrib_delta_clear(AttribDelta *d);

/* Makes @dst a copy of @src. */
void attrib_delta_copy(AttribDelta *dst, const AttribDelta *src);

/* Adds @src into @dst (saturating at UINT64_MAX). Items of @src with an id at or above
 * ATTRIB_MAX_SOURCES are ignored. */
void attrib_delta_add(AttribDelta *dst, const AttribDelta *src);

/* Count of @id in @d, 0 when absent. */
uint64_t attrib_delta_get(const AttribDelta *d, unsigned id);

#pragma once

/* Which trace captures to write and which to keep: the bookkeeping behind [trace] keep_above,
 * apart from the records and the files (manager-capture.c).
 *
 * Every interruption longer than keep_above asks for the trace records from
 * CAPTURE_MARGIN_NS before its start to CAPTURE_MARGIN_NS after its end. Windows that overlap
 * are merged into one capture, up to CAPTURE_SPAN_MAX_NS; a window that would make a capture
 * longer begins where the other ends, so no record is in two captures. A window is due once
 * its end has passed (the caller then has every record of it), oldest first.
 *
 * Bounds: at most CAPTURE_PENDING_MAX windows wait for their end; captures are admitted at
 * most @per_minute and @minute_bytes in any minute (by the window's start); at most
 * @kept_max files and @kept_bytes bytes are kept, the oldest removed first. Every capture that
 * a bound turns away is counted as skipped.
 *
 * Times are CLOCK_MONOTONIC ns. One thread uses a store. This module never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAPTURE_MARGIN_NS 10000000ULL     /* 10 ms each side */
#define CAPTURE_SPAN_MAX_NS 1000000000ULL /* a merged capture covers at most 1 s */
#define CAPTURE_PENDING_MAX 16u           /* windows waiting for their end */
#define CAPTURE_INTERRUPTIONS_MAX 32u     /* named per capture; the others are counted */
#define CAPTURE_MINUTE_NS 60000000000ULL  /* the span of the per-minute bounds */
#define CAPTURE_NAME_MAX 64

typedef struct CaptureInterruption {
        int cpu;
        uint64_t start_ns;
        uint64_t duration_ns;
} CaptureInterruption;

typedef struct CaptureWindow {
        uint64_t from_ns, to_ns; /* the records kept: from_ns <= t < to_ns */
        size_t n;                /* interruptions named in @in */
        size_t more;             /* interruptions merged in beyond CAPTURE_INTERRUPTIONS_MAX */
        CaptureInterruption in[CAPTURE_INTERRUPTIONS_MAX]; /* in the order they came */
} CaptureWindow;

typedef struct CaptureLimits {
        unsigned per_minute;   /* captures admitted in any minute */
        uint64_t minute_bytes; /* bytes admitted in any minute */
        unsigned kept_max;     /* files kept */
        uint64_t kept_bytes;   /* bytes kept */
} CaptureLimits;

typedef struct CaptureCounts {
        uint64_t noted;   /* interruptions noted */
        uint64_t written; /* captures admitted and kept */
        uint64_t skipped; /* captures a bound turned away, or that failed to be written */
        uint64_t evicted; /* captures removed to keep the bounds on what is kept */
        size_t kept;      /* files kept now */
        uint64_t kept_bytes;
} CaptureCounts;

typedef struct CaptureStore CaptureStore;

/* Creates a store with bounds @l (each at least 1). Returns 0, -EINVAL, -ENOMEM. */
int capture_store_new(const CaptureLimits *l, CaptureStore **ret);

/* Frees @s; accepts NULL; returns NULL. */
CaptureStore *capture_store_free(CaptureStore *s);

/* Asks for the records around the interruption of @cpu from @start_ns lasting @duration_ns:
 * merged into a waiting window it overlaps, or a window of its own. Returns 0, or -ENOSPC
 * when CAPTURE_PENDING_MAX windows wait already or the records asked for all lie in captures
 * already written (then one capture is counted as skipped). */
int capture_store_note(CaptureStore *s, int cpu, uint64_t start_ns, uint64_t duration_ns);

/* Takes the oldest waiting window that ends at or before @now_ns into @ret. Returns 1, or 0
 * when none is due. */
int capture_store_next_due(CaptureStore *s, uint64_t now_ns, CaptureWindow *ret);

/* Whether a capture of @bytes whose window starts at @from_ns is within the per-minute
 * bounds, counting the captures admitted over the minute up to @from_ns. Returns 0 and counts
 * it in the bounds, -EBUSY (count) or -EFBIG (bytes) and counts it as skipped. */
int capture_store_admit(CaptureStore *s, uint64_t from_ns, uint64_t bytes);

/* Counts a capture that could not be written as skipped. */
void capture_store_skip(CaptureStore *s);

/* Adds file @name of @bytes to those kept, as the newest; @written: a capture of this run
 * (counted), else one found at start. Call capture_store_evict() until it returns 0 after
 * each. Returns 0, -EINVAL for a name too long, -ENOSPC when the files beyond the bounds were
 * not evicted. */
int capture_store_keep(CaptureStore *s, const char *name, uint64_t bytes, bool written);

/* When the files kept exceed a bound, forgets the oldest, copies its name into @ret_name
 * (CAPTURE_NAME_MAX bytes) for the caller to remove, and returns 1; else 0. */
int capture_store_evict(CaptureStore *s, char *ret_name);

/* The names of the files kept, oldest first, valid until the store changes. */
const char *capture_store_kept_name(const CaptureStore *s, size_t i);

void capture_store_counts(const CaptureStore *s, CaptureCounts *ret);

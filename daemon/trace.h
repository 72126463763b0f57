#pragma once

/* The trace flight recorder: kernel trace events of the probed CPUs, kept for a short while so
 * that every interruption the probes report can be explained by what ran in it (causes.h).
 *
 * It records in a tracefs instance of its own (instances/jitterd, never the global buffer),
 * limited to the probed CPUs, with the events this kernel has among: IRQ handler entry/exit,
 * every x86 vector entry/exit pair (irq_vectors: local_timer, reschedule, call_function...),
 * softirq entry/exit, sched_switch, hrtimer expiry, workqueue execution, the function an IPI
 * runs (csd) and the arm64 IPI entry/exit. IPI send events are left out: they fire on the
 * sending CPU, which the instance does not record; what the probed CPU spends is in the
 * vector and the csd function.
 *
 * Time: the trace clock is chosen so that records land on the probe's time axis. With the
 * x86 TSC as counter it is x86-tsc, whose timestamps are rdtsc values, the counter itself.
 * Elsewhere (the arm64 generic timer, the clock_gettime counter) it is mono_raw:
 * CLOCK_MONOTONIC_RAW is a fixed linear function of the hardware counter, not steered by NTP,
 * so a pair of readings (counter, CLOCK_MONOTONIC_RAW) taken at each read and the counter
 * frequency map it back to ticks to well under a microsecond; for the clock_gettime counter
 * it is the counter itself. (arm64 has no trace clock that reads cntvct_el0 directly.)
 *
 * The kernel buffer is small and overwrites its oldest data. Nothing blocks on it: the caller
 * polls a descriptor per CPU that the kernel makes readable once the buffer is
 * TRACE_WATERMARK_PERCENT full, and reads at its own pace otherwise (where the kernel has no
 * watermark, at times trace_recorder_read_period_ns() gives). trace_recorder_read() drains it
 * without blocking
 * (at most the buffer's size per CPU and call) into a window of parsed records per CPU, the
 * newest window_records of them, from which trace_recorder_explain() answers. Every bound is
 * fixed at creation: kernel buffer, window, symbol cache.
 *
 * Privileges: tracefs files belong to root with mode 0640 (directories 0750, the mount point
 * 0700), so root needs no capability; another user needs CAP_DAC_OVERRIDE to create the
 * instance and enable events (the gid= mount option gives a group read access only). Function
 * names need /proc/kallsyms to show addresses (CAP_SYSLOG when it is opened, which is at
 * creation); without, they are hex addresses. Recording is switched off at the end through a
 * descriptor opened at creation, so it stops even when the instance can no longer be removed
 * (a user that dropped CAP_DAC_OVERRIDE); the next start takes such an instance over.
 *
 * One thread uses a recorder (the manager's). This module never logs: what fails is said in
 * the reason strings. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "causes.h"
#include "counter.h"

#define TRACE_REASON_MAX 512

/* Defaults: a kernel buffer of 256 KiB per probed CPU, a window of 16384 records (56 bytes
 * each). */
#define TRACE_BUFFER_KB_DEFAULT 256u
#define TRACE_WINDOW_DEFAULT 16384u

typedef struct TraceOptions {
        const char *root;     /* tracefs mount point; NULL: /sys/kernel/tracing, else where
                               * /proc/self/mounts has tracefs */
        const char *instance; /* name under instances/; NULL: "jitterd" */
        const int *cpus;      /* the probed CPUs */
        size_t n_cpus;
        CounterSource counter; /* the probes' counter: records get its ticks */
        uint64_t counter_hz;
        const char *clock;         /* NULL: the trace clock that matches @counter; or "x86-tsc",
                                    * "mono_raw", "mono" */
        unsigned buffer_kb;        /* kernel buffer per probed CPU; 0: the default */
        unsigned window_records;   /* records kept per CPU; 0: the default */
        const char *kallsyms;      /* NULL: /proc/kallsyms */
        struct Ksyms *ksyms;       /* names to use instead of opening @kallsyms: the caller's
                                    * (opened while it could see addresses), not freed here */
        const char *const *absent; /* "system:event" names to take as missing from this
                                    * kernel, NULL-terminated (tests); NULL: none */
} TraceOptions;

typedef struct TraceStats {
        uint64_t subbuffers;    /* sub-buffers read from the kernel */
        uint64_t records;       /* records parsed into the windows */
        uint64_t losses;        /* times the kernel had overwritten events before they were read */
        uint64_t lost_events;   /* how many, where the kernel counted them */
        uint64_t evicted;       /* records dropped from a full window */
        uint64_t reads;         /* calls of trace_recorder_read() */
        uint64_t read_ns;       /* time spent in them */
        uint64_t max_read_ns;   /* the longest one */
        uint64_t symbol_passes; /* reads of kallsyms */
} TraceStats;

typedef struct TraceRecorder TraceRecorder;

/* Creates the instance, sets its clock, CPU mask, buffer size and overwrite mode, enables the
 * events the kernel has, clears it and starts recording. An event that this kernel lacks or
 * refuses to enable is left out and the others are recorded (trace_recorder_missing(),
 * _refused() and _unnamed() say which and what it costs). Returns 0, or a negative errno with
 * @reason (of @reason_size bytes) saying in one line why tracing is not possible and how to
 * make it so: tracefs not mounted (and the mount command), permission refused (and what grants
 * it), the kernel locked down, no usable event or clock, none of the events enabled. Nothing
 * is left behind on failure. */
int trace_recorder_new(const TraceOptions *opt, TraceRecorder **ret, char *reason,
                       size_t reason_size);

/* Stops recording, removes the instance and frees @t; accepts NULL; returns NULL. */
TraceRecorder *trace_recorder_free(TraceRecorder *t);

/* Drains the kernel buffers of every probed CPU into the windows, without blocking, at most
 * the buffer's size per CPU. Returns the number of records added, or a negative errno when a
 * read failed (then trace_recorder_reason() says why; the windows keep what they had). */
int trace_recorder_read(TraceRecorder *t);

/* The shortest time between reads: a busier CPU loses records rather than the reader
 * spinning. */
#define TRACE_READ_PERIOD_MIN_NS 10000000ULL
/* The longest between timed reads: a CPU that begins to record much is read within it, so a
 * burst overflows the default buffer only beyond 2.5 MB/s (about 12 000 task wake-ups a
 * second). Timed reads are the fallback where the watermark does not work. */
#define TRACE_READ_PERIOD_MAX_NS 100000000ULL
/* How full a probed CPU's kernel buffer gets before its watch descriptor polls readable
 * (tracefs buffer_percent): a quiet CPU is then read only at the harvest, a busy one as soon
 * as a quarter of its buffer holds records. */
#define TRACE_WATERMARK_PERCENT 25u

/* How soon to read again, while the reads are timed: so that no probed CPU's kernel buffer
 * fills beyond a quarter, at the rate the busiest one filled between the last two reads of
 * trace_recorder_read(), between TRACE_READ_PERIOD_MIN_NS and TRACE_READ_PERIOD_MAX_NS.
 * UINT64_MAX while the watermark wakes the reader. */
uint64_t trace_recorder_read_period_ns(const TraceRecorder *t);

/* Whether the watch descriptors wake the reader. Set at creation where the kernel takes the
 * watermark; cleared, for good, by trace_recorder_unwatch(), or by a read that finds the
 * kernel's wake-ups wrong: three reads in a row that find a buffer three quarters full long
 * after the last read while no descriptor is readable (the kernel does not wake the reader),
 * or three woken reads in a row that find every buffer less than an eighth full (the kernel
 * wakes at the first record, as poll() before 6.1 does). The caller then stops polling and
 * calls trace_recorder_unwatch(); trace_recorder_read_period_ns() times the reads. */
bool trace_recorder_watching(const TraceRecorder *t);

/* The caller's next read was woken by a watch descriptor. */
void trace_recorder_woken(TraceRecorder *t);

/* The descriptor to poll for EPOLLIN for the @i-th probed CPU (0 <= @i <
 * trace_recorder_n_cpus()): readable once its buffer is TRACE_WATERMARK_PERCENT full. Only
 * polled, never read: trace_recorder_read() reads. -1 while not watching. */
int trace_recorder_watch_fd(const TraceRecorder *t, size_t i);

/* How many CPUs @t records. */
size_t trace_recorder_n_cpus(const TraceRecorder *t);

/* Closes the watch descriptors, once the caller no longer polls them (it cannot, or
 * trace_recorder_watching() turned false): the reads are timed. */
void trace_recorder_unwatch(TraceRecorder *t);

/* Explains the interruption of @cpu that began at @start_ticks and lasted @duration_ticks,
 * from the window of @cpu; @probe_pid is the probe thread's tid (-1: unknown). Reads that CPU
 * again first when the interruption ends after what was read. Sets CAUSES_LOST when records
 * of the interruption are missing (overwritten in the kernel, dropped from the window, or
 * from before recording began). Returns 0, or -ENOENT for a CPU that is not recorded. */
int trace_recorder_explain(TraceRecorder *t, int cpu, int probe_pid, uint64_t start_ticks,
                           uint64_t duration_ticks, CauseList *ret);

/* The records of @cpu's window, oldest first, valid until the next read; NULL for a CPU that
 * is not recorded. */
const TraceRecord *trace_recorder_records(const TraceRecorder *t, int cpu, size_t *ret_n);

/* The trace clock in use ("x86-tsc", "mono_raw"). */
const char *trace_recorder_clock(const TraceRecorder *t);

/* The events recorded, as "system:event" separated by spaces. */
const char *trace_recorder_events(const TraceRecorder *t);

/* Which of the wanted kinds of events this kernel lacks ("workqueue, ipi"), "" when none. */
const char *trace_recorder_missing(const TraceRecorder *t);

/* The events this kernel has that could not be enabled, each with why, and what grants them
 * when it is a matter of permission ("sched:sched_switch (Permission denied): tracing needs
 * root, or CAP_DAC_OVERRIDE..."); "" when none. */
const char *trace_recorder_refused(const TraceRecorder *t);

/* What the missing and refused events cost: the kinds of cause that no recorded event names
 * ("task, work"), then the x86 vectors not recorded when others are ("vector reschedule");
 * "" when every wanted kind is named. */
const char *trace_recorder_unnamed(const TraceRecorder *t);

/* The instance's directory (for its trace_marker, and for humans). */
const char *trace_recorder_dir(const TraceRecorder *t);

/* Why the last read failed, "" when it did not. */
const char *trace_recorder_reason(const TraceRecorder *t);

void trace_recorder_stats(const TraceRecorder *t, TraceStats *ret);

/* Bytes of memory the recorder holds in user space (windows, buffers, symbol cache), and in
 * the kernel (its ring buffers). */
size_t trace_recorder_memory_bytes(const TraceRecorder *t);
size_t trace_recorder_kernel_bytes(const TraceRecorder *t);

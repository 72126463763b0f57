#pragma once

/* The causes of one interruption, from the kernel trace records of its CPU: pure functions
 * over data, shared by the trace recorder and its tests, with no knowledge of tracefs.
 *
 * A record is one kernel trace event reduced to what matching needs: when it happened (in
 * counter ticks, the probe's unit), whether a context begins or ends there (an IRQ handler, an
 * x86 vector, a softirq, an hrtimer callback, a work item, an IPI's function) or another task
 * starts to run (sched_switch), and a name. The analysis walks the records of one CPU between
 * the interruption's start and end and gives every slice of time to the innermost context open
 * then, so each cause's time is its own, nested time subtracted: an hrtimer callback inside a
 * local timer vector counts for the timer, the rest of the vector's time for the vector. While
 * no context is open, the time belongs to the task that runs: another task (the probe was
 * switched out) is a cause.
 *
 * The account: every tick of the interruption goes to exactly one of
 * - a cause's own time (above);
 * - a cause's overhead: the time the probe spends in the kernel, or below it, with no context
 *   open: the way in before the first record (a vector's entry, on a VM mostly the exit to the
 *   hypervisor that delivers it), between records at the top level (an interrupt's exit path
 *   into the softirqs it raised, the scheduler's switch), and the way out after the last one.
 *   No record carries it, so it is charged by rule: the way in to the cause whose record comes
 *   first, every later stretch to the owner of the moment, which is the hard interrupt (IRQ,
 *   vector, IPI) that began last at the top level or, once another task was switched in, the
 *   task that ran last (the switch back and the way out are its cost);
 * - no_record: an interruption with no record at all inside it, which the kernel did not see:
 *   hardware, firmware (SMI) or the hypervisor (a vCPU preempted by the host);
 * - unexplained: the probe's time in the kernel that no rule covers: records inside that name
 *   no cause, and, when the recorder says records of the interruption were lost
 *   (CAUSES_LOST), every stretch the rules above would have charged or called no_record, as a
 *   lost record may have been anywhere in it.
 *
 * A context belongs to the task that ran when it began: on a kernel that runs softirqs and IRQ
 * threads in preemptible tasks (PREEMPT_RT) it can stay open while another task runs, and gets
 * no time until its task runs again.
 *
 * At the interruption's start the probe was running its loop in user space, so the analysis
 * starts with no context open and the probe running. Records that contradict this (an exit
 * without its entry: the entry fell before the window or was lost) are repaired as well as the
 * order allows and flagged. This module never logs and never allocates. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum CauseKind {
        CAUSE_IRQ,     /* a device IRQ handler: its name from request_irq() */
        CAUSE_VECTOR,  /* an x86 system vector: local_timer, reschedule, call_function... */
        CAUSE_SOFTIRQ, /* TIMER, RCU, NET_RX... */
        CAUSE_TASK,    /* another task ran on the CPU: "comm:pid" */
        CAUSE_TIMER,   /* an hrtimer callback: its function */
        CAUSE_WORK,    /* a workqueue item: its function */
        CAUSE_IPI,     /* the function an IPI ran (smp_call_function), or an arm64 IPI */
        CAUSE_KIND_MAX,
} CauseKind;

typedef enum TracePhase {
        TRACE_ENTRY,  /* a context of @kind begins */
        TRACE_EXIT,   /* the context of @kind and @id ends */
        TRACE_SWITCH, /* sched_switch: from now on task @pid (comm @name) runs; @id is the
                       * pid that ran before */
        TRACE_MARK,   /* a point in time with no duration (a trace_marker write) */
} TracePhase;

#define CAUSE_NAME_MAX 32

typedef struct TraceRecord {
        uint64_t ticks; /* when, in counter ticks */
        uint64_t id;    /* pairs an entry with its exit: IRQ number, vector, softirq number,
                         * hrtimer, work or csd address */
        int32_t pid;    /* TRACE_SWITCH: the task that runs next */
        uint8_t kind;   /* CauseKind; ignored for TRACE_SWITCH and TRACE_MARK */
        uint8_t phase;  /* TracePhase */
        char name[CAUSE_NAME_MAX]; /* entry: what it is; switch: the next task's comm; mark:
                                    * the text written. NUL-terminated, maybe cut short. */
} TraceRecord;

/* Causes kept per interruption; the time of the others is summed in other_ticks. */
#define CAUSES_MAX 8

/* The deepest nesting followed; deeper entries are counted to the innermost context kept. */
#define CAUSES_DEPTH_MAX 16

typedef struct Cause {
        CauseKind kind;
        char name[CAUSE_NAME_MAX]; /* for a task "comm:pid" */
        uint64_t ticks;            /* its own time within the interruption */
        uint64_t overhead_ticks;   /* the entry and exit charged to it (see above) */
        uint32_t count;            /* how many times it began (or was switched to) */
} Cause;

/* The records do not cover the whole interruption: some were overwritten in the kernel's
 * buffer, dropped from the recorder's window, or not read yet (set by the recorder). */
#define CAUSES_LOST (1u << 0)
/* A context began before the interruption or ended after it; only its part inside counts. */
#define CAUSES_CLIPPED (1u << 1)
/* An exit or a switch did not match what was open (a record is missing): the contexts it
 * skipped were closed there. */
#define CAUSES_UNMATCHED (1u << 2)
/* A context was still open at the interruption's end (its exit is missing or later). */
#define CAUSES_UNFINISHED (1u << 3)
/* Nesting deeper than CAUSES_DEPTH_MAX. */
#define CAUSES_TOO_DEEP (1u << 4)

typedef struct CauseList {
        size_t n;
        Cause causes[CAUSES_MAX]; /* longest (own time and overhead) first, each (kind, name)
                                   * once */
        uint64_t other_ticks;     /* causes beyond CAUSES_MAX: their own time and overhead */
        uint64_t overhead_ticks;  /* the overhead of every cause, those in other_ticks too */
        uint64_t no_record_ticks; /* the whole interruption when no record lies inside it */
        uint64_t unexplained_ticks;
        uint64_t total_ticks; /* the interruption: Σ causes (own and overhead) + other +
                               * no_record + unexplained */
        unsigned flags;       /* CAUSES_* */
        /* The own time of every cause by kind, those beyond CAUSES_MAX included (their
         * overhead is in overhead_ticks); only the own time of causes beyond the WORK_MAX (64)
         * distinct ones one walk follows has no kind. */
        uint64_t kind_ticks[CAUSE_KIND_MAX];
        /* When the probe was switched out: the counter (cause_counter_code()) of the hard
         * interrupt that began last before that (an IRQ or a vector, or an IPI not inside
         * one; on x86 an IPI's function runs inside its vector): what woke the task or let it
         * in (a reschedule IPI that came during the softirqs at the end of a tick, rather than
         * the tick). 0 when the probe was not switched out, or no such interrupt was seen. */
        uint8_t woken_by;
} CauseList;

/* Explains the interruption [@start_ticks, @end_ticks] of one CPU from @records of that CPU,
 * @n of them in time order, which should cover at least that range (records outside it only
 * set the scene: an entry before the start opens a context whose time counts from the start).
 * @probe_pid is the probe thread's kernel tid: a switch to it ends another task's time (-1:
 * unknown, then the task the first switch leaves is taken for the probe). @flags: CAUSES_LOST
 * when the records of the range are known to be incomplete (then no time is charged as
 * overhead or no_record; the flag is passed on to @ret), else 0.
 * Fills @ret; the causes' ticks and overhead_ticks, other_ticks, no_record_ticks and
 * unexplained_ticks add up to @end_ticks - @start_ticks. Causes with no time inside the range
 * are left out. Returns 0, or -EINVAL when @end_ticks < @start_ticks. */
int causes_analyze(const TraceRecord *records, size_t n, uint64_t start_ticks, uint64_t end_ticks,
                   int probe_pid, unsigned flags, CauseList *ret);

/* "irq", "vector", "softirq", "task", "timer", "work", "ipi"; NULL for a bad kind. */
const char *cause_kind_name(CauseKind kind);

/* The attribution counter that moves when cause (@kind, @name) runs, into @buf, or NULL when
 * none does: an x86 vector's row of /proc/interrupts ("irq:LOC" for local_timer, "irq:RES" for
 * reschedule...), "irq:LOC" for an hrtimer callback (it runs in the local timer interrupt),
 * "irq:TLB" for an IPI's flush_tlb_* function and "irq:CAL" for the others, "softirq:NAME",
 * "ctxsw:involuntary" for a task or a work item (in a kworker: either takes the CPU with an
 * involuntary switch of the probe), and "irq:device" for a device IRQ handler (the trace names
 * the handler, the counters the IRQ number). */
const char *cause_counter(CauseKind kind, const char *name, char *buf, size_t size);

/* cause_counter_code()'s codes are below this. */
#define CAUSE_COUNTER_CODES 16

/* The counter of cause_counter_code() @code, NULL for 0 or a code out of range. */
const char *cause_counter_of_code(uint8_t code);

/* Index of the first of @n records (in time order) at or after @ticks; @n when none is. */
size_t causes_lower_bound(const TraceRecord *records, size_t n, uint64_t ticks);

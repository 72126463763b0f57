#pragma once

/* The trace causes of the interruptions the history keeps, stored compactly beside it: per
 * CPU, the newest N interruptions (N = the history's events_per_cpu) with their causes, found
 * by the interruption's start; running sums of them over a few windows (GetCauses), kept
 * current as interruptions come and go, so that a window's causes are a read whatever its
 * length; and what the kernel knows of the time it did not see, to show beside the no_record
 * interruptions of any window: the CPU's steal time and SMI count at each harvest. It lives
 * only in memory: after a restart the restored interruptions have no causes.
 *
 * Each interruption's parts (the causes' own time and overhead, other, no_record, unexplained)
 * are converted to ns so that they add up to exactly the interruption's duration in ns.
 *
 * A cause's kind and name are kept once per CPU, in a table of the names its stored
 * interruptions use, at most CAUSE_STORE_NAMES_MAX of them: a cause whose name finds no room
 * counts in its interruption's other_ns.
 *
 * Bounded: at most N entries of sizeof(StoredCauses) bytes per CPU, allocated as they come,
 * the names (about 56 bytes each, and 24 per window for its sums: 200 with 6 windows) and
 * CAUSE_STORE_HOST_BYTES per CPU whose host readings are noted. One thread uses a store.
 * This module never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "causes.h"
#include "counter.h"

/* Causes kept per interruption; the time of the others is in other_ns. */
#define STORED_CAUSES_MAX 6

/* Distinct (kind, name) per CPU, and the windows a store may sum. */
#define CAUSE_STORE_NAMES_MAX 4096u
#define CAUSE_STORE_WINDOWS_MAX 8u

typedef struct StoredCause {
        uint32_t name;        /* cause_store_name() */
        uint32_t ns;          /* its own time; saturated at UINT32_MAX (4.3 s), as every ns */
        uint32_t overhead_ns; /* the entry and exit charged to it */
} StoredCause;

/* An interruption the trace did not see (its CPU not recorded): no causes, counted apart. */
#define CAUSES_UNTRACED (1u << 7)

typedef struct StoredCauses {
        uint64_t start_ns;    /* the interruption's start, CLOCK_MONOTONIC */
        uint64_t duration_ns; /* as the history has it */
        uint32_t unexplained_ns;
        uint32_t other_ns;     /* causes beyond the kept: their own time and overhead */
        uint32_t overhead_ns;  /* every cause's overhead, those in other_ns too */
        uint32_t no_record_ns; /* the whole interruption when no record lies inside it */
        uint8_t n;
        uint8_t flags;    /* CAUSES_*, CAUSES_UNTRACED */
        uint8_t woken_by; /* CauseList's */
        StoredCause causes[STORED_CAUSES_MAX];
} StoredCauses;

typedef struct CauseStore CauseStore;

/* Creates a store of at most @per_cpu entries per CPU that keeps the sums of @n_windows
 * windows (at most CAUSE_STORE_WINDOWS_MAX), numbered from 0: each holds every stored
 * interruption from the start cause_store_window() last gave it on. Returns 0, -EINVAL for 0
 * entries or too many windows, -ENOMEM. */
int cause_store_new(unsigned per_cpu, unsigned n_windows, CauseStore **ret);

/* Frees @s; accepts NULL; returns NULL. */
CauseStore *cause_store_free(CauseStore *s);

/* Stores the interruption of @cpu that began at @start_ns and lasted @duration_ns, with its
 * causes @l (in ticks of @conv; NULL: the trace did not see it, CAUSES_UNTRACED), and adds it
 * to every window's sums; interruptions of one CPU come in time order, the oldest beyond
 * per_cpu is forgotten and leaves the sums. Returns 0, -EINVAL for a CPU outside
 * 0..CPU_SETSIZE-1 or a start before the previous one's, -ENOMEM. */
int cause_store_add(CauseStore *s, int cpu, uint64_t start_ns, uint64_t duration_ns,
                    const CauseList *l, const TickConv *conv);

/* The name of a StoredCause's @name in @cpu's table, its kind in *@ret_kind; NULL for none.
 * Valid while an interruption that names it is stored. */
const char *cause_store_name(const CauseStore *s, int cpu, uint32_t name, uint8_t *ret_kind);

/* What a window sums of the stored interruptions that began at or after its start: all of
 * them, those the trace saw (traced), those with a record inside (explained), and so on, as
 * GetCauses shows them; woken_*[code] by cause_counter_code() of the interrupt that woke the
 * tasks and work items of explained ones (their own time, and in how many). */
typedef struct CauseWindow {
        uint64_t interruptions, interruptions_ns;
        uint64_t traced, traced_ns;
        uint64_t explained, explained_ns;
        uint64_t trace_lost, trace_lost_ns; /* explained ones / traced ones' unexplained time */
        uint64_t overhead_ns, other_ns, unexplained_ns;
        uint64_t no_record, no_record_ns;
        uint64_t woken_ns[CAUSE_COUNTER_CODES], woken_count[CAUSE_COUNTER_CODES];
} CauseWindow;

/* The sums of one (kind, name) in a window: its own time, overhead, and the explained
 * interruptions it appears in. */
typedef struct CauseSum {
        uint64_t ns, overhead_ns, count;
} CauseSum;

/* Window @window of @cpu from @from_ns on: the interruptions that began before @from_ns leave
 * its sums first (each once: a window's start never goes back, an earlier @from_ns leaves it
 * where it is). Costs the interruptions that leave, nothing else. NULL for a CPU outside
 * 0..CPU_SETSIZE-1 or a window the store does not sum; a CPU with none stored has zeros. */
const CauseWindow *cause_store_window(CauseStore *s, int cpu, unsigned window, uint64_t from_ns);

/* Calls @f for each (kind, name) with time in window @window of @cpu as the last
 * cause_store_window() left it, in no order. */
void cause_store_window_foreach(const CauseStore *s, int cpu, unsigned window,
                                void (*f)(uint8_t kind, const char *name, const CauseSum *sum,
                                          void *userdata),
                                void *userdata);

/* The causes of the interruption of @cpu that began at @start_ns, or NULL. For interruptions
 * asked for in time order, *@pos (UINT32_MAX at the first call) says where the previous find
 * ended, and the store is walked on from there rather than searched again; a start before the
 * previous one's is searched for. */
const StoredCauses *cause_store_find_next(const CauseStore *s, int cpu, uint64_t start_ns,
                                          uint32_t *pos);

/* The parts of cause_store_totals(): the CauseKinds' own time, then these. */
enum {
        CAUSE_TOTAL_OVERHEAD = CAUSE_KIND_MAX,
        CAUSE_TOTAL_NO_RECORD,
        CAUSE_TOTAL_UNEXPLAINED,
        CAUSE_TOTALS,
};

/* "irq" ... "ipi" (cause_kind_name()), "overhead", "no_record", "unexplained"; NULL for @part
 * CAUSE_TOTALS or beyond. */
const char *cause_total_name(unsigned part);

/* The time of every interruption stored for @cpu since the store began or was reset, by part:
 * @ret_ns[k] the own time of the causes of CauseKind k, then their overhead, no_record and
 * unexplained. Unlike the entries these totals are never forgotten, so they serve as counters.
 * Zeros for a CPU outside 0..CPU_SETSIZE-1. */
void cause_store_totals(const CauseStore *s, int cpu, uint64_t ret_ns[CAUSE_TOTALS]);

/* Readings of @cpu noted at each harvest: kept at every note for the newest
 * CAUSE_STORE_HOST_FINE, then one a minute for CAUSE_STORE_HOST_COARSE more (a day). */
#define CAUSE_STORE_HOST_FINE 1024u
#define CAUSE_STORE_HOST_COARSE 1536u
#define CAUSE_STORE_HOST_COARSE_NS 60000000000ULL
/* Bytes of the notes of one CPU, about. */
#define CAUSE_STORE_HOST_BYTES                                                                     \
        ((CAUSE_STORE_HOST_FINE + CAUSE_STORE_HOST_COARSE) * 3 * sizeof(uint64_t))

/* Notes what @cpu's host counters read at @at_ns (CLOCK_MONOTONIC, after the previous note's):
 * @steal_ns its steal time since boot, UINT64_MAX when unknown; @smi_delta the SMIs counted
 * since the previous note, UINT64_MAX when the SMI count cannot be read. Returns 0, -EINVAL
 * for a CPU outside 0..CPU_SETSIZE-1 or a time before the previous note's, -ENOMEM. */
int cause_store_note_host(CauseStore *s, int cpu, uint64_t at_ns, uint64_t steal_ns,
                          uint64_t smi_delta);

/* What the host counters of one CPU did over a span of notes. */
typedef struct HostSpan {
        uint64_t from_ns, to_ns; /* the notes it lies between, CLOCK_MONOTONIC */
        bool have_steal;
        uint64_t steal_ns;
        bool have_smi;
        uint64_t smi;
} HostSpan;

/* What @cpu's host counters did from the newest note at or before @since_ns (the oldest kept
 * when none is; never before the newest note at a reset of @cpu) to the newest note. Returns
 * 0, or -ENODATA when fewer than two notes are kept for @cpu. */
int cause_store_host(const CauseStore *s, int cpu, uint64_t since_ns, HostSpan *ret);

/* Forgets the causes of @cpu (-1: of every CPU), its windows' sums and its totals; its host
 * readings are kept, but spans begin at the newest note at most. */
void cause_store_reset(CauseStore *s, int cpu);

/* Bytes of memory the store uses now. */
size_t cause_store_memory_bytes(const CauseStore *s);

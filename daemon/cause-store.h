#pragma once

/* The trace causes of the interruptions the history keeps, stored compactly beside it: per
 * CPU, the causes of the newest N interruptions (N = the history's events_per_cpu), found by
 * the interruption's start; and what the kernel knows of the time it did not see, to show
 * beside the no_record interruptions of any window: the CPU's steal time and SMI count at each
 * harvest. It lives only in memory: after a restart the restored interruptions have no
 * causes, as their trace is gone.
 *
 * Each interruption's parts (the causes' own time and overhead, other, no_record, unexplained)
 * are converted to ns so that they add up to exactly the interruption's duration in ns.
 *
 * Bounded: at most N entries of sizeof(StoredCauses) bytes per CPU, allocated as they come,
 * and CAUSE_STORE_HOST_BYTES per CPU whose host readings are noted. One thread uses a store.
 * This module never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "causes.h"
#include "counter.h"

/* Causes kept per interruption; the time of the others is in other_ns. */
#define STORED_CAUSES_MAX 6

typedef struct StoredCause {
        uint8_t kind; /* CauseKind */
        char name[CAUSE_NAME_MAX];
        uint32_t ns;          /* its own time; saturated at UINT32_MAX (4.3 s), as every ns */
        uint32_t overhead_ns; /* the entry and exit charged to it */
} StoredCause;

typedef struct StoredCauses {
        uint64_t start_ns; /* the interruption's start, CLOCK_MONOTONIC */
        uint32_t unexplained_ns;
        uint32_t other_ns;     /* causes beyond the kept: their own time and overhead */
        uint32_t overhead_ns;  /* every cause's overhead, those in other_ns too */
        uint32_t no_record_ns; /* the whole interruption when no record lies inside it */
        uint8_t n;
        uint8_t flags;    /* CAUSES_* */
        uint8_t woken_by; /* CauseList's */
        StoredCause causes[STORED_CAUSES_MAX];
} StoredCauses;

typedef struct CauseStore CauseStore;

/* Creates a store of at most @per_cpu entries per CPU. Returns 0, -EINVAL for 0, -ENOMEM. */
int cause_store_new(unsigned per_cpu, CauseStore **ret);

/* Frees @s; accepts NULL; returns NULL. */
CauseStore *cause_store_free(CauseStore *s);

/* Stores the causes @l (in ticks of @conv) of the interruption of @cpu that began at
 * @start_ns; interruptions of one CPU come in time order, the oldest beyond per_cpu is
 * forgotten. Returns 0, -EINVAL for a CPU outside 0..CPU_SETSIZE-1 or a start before the
 * previous one's, -ENOMEM. */
int cause_store_add(CauseStore *s, int cpu, uint64_t start_ns, const CauseList *l,
                    const TickConv *conv);

/* The causes of the interruption of @cpu that began at @start_ns, or NULL. */
const StoredCauses *cause_store_find(const CauseStore *s, int cpu, uint64_t start_ns);

/* As cause_store_find(), for interruptions of @cpu asked for in time order: *@pos (UINT32_MAX
 * at the first call) says where the previous find ended, and the store is walked on from there
 * rather than searched again. A start before the previous one's is searched for. */
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

/* Forgets the causes of @cpu (-1: of every CPU), and its totals; its host readings are kept,
 * but spans begin at the newest note at most. */
void cause_store_reset(CauseStore *s, int cpu);

/* Bytes of memory the store uses now. */
size_t cause_store_memory_bytes(const CauseStore *s);

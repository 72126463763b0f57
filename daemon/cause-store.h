#pragma once

/* The trace causes of the interruptions the history keeps, stored compactly beside it: per
 * CPU, the causes of the newest N interruptions (N = the history's events_per_cpu), found by
 * the interruption's start. It lives only in memory: after a restart the restored
 * interruptions have no causes, as their trace is gone.
 *
 * Bounded: at most N entries of sizeof(StoredCauses) bytes per CPU, allocated as they come.
 * One thread uses a store. This module never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "causes.h"
#include "counter.h"

/* Causes kept per interruption; the time of the others is in other_ns. */
#define STORED_CAUSES_MAX 4

typedef struct StoredCause {
        uint8_t kind; /* CauseKind */
        char name[CAUSE_NAME_MAX];
        uint32_t ns; /* saturated at UINT32_MAX (4.3 s) */
} StoredCause;

typedef struct StoredCauses {
        uint64_t start_ns; /* the interruption's start, CLOCK_MONOTONIC */
        uint32_t unexplained_ns;
        uint32_t other_ns;
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

/* The time of every interruption stored for @cpu since the store began or was reset, by kind:
 * @ret_ns[k] for CauseKind k, @ret_ns[CAUSE_KIND_MAX] the unexplained time. Unlike the
 * entries these totals are never forgotten, so they serve as counters. Zeros for a CPU
 * outside 0..CPU_SETSIZE-1. */
void cause_store_totals(const CauseStore *s, int cpu, uint64_t ret_ns[CAUSE_KIND_MAX + 1]);

/* Forgets the causes of @cpu (-1: of every CPU), and its totals. */
void cause_store_reset(CauseStore *s, int cpu);

/* Bytes of memory the store uses now. */
size_t cause_store_memory_bytes(const CauseStore *s);

#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Single-producer event ring: the probe writes, the daemon reads, and the producer never
 * reads anything the consumer writes (no shared-written cache line in the hot loop). The
 * producer simply overwrites the oldest entry when the consumer falls behind; every entry
 * carries a sequence word, so the consumer sees exactly how many it lost and counts them. */

typedef struct RingEntry {
        _Atomic uint64_t seq;         /* 2 * index + 2 once written; odd while being written */
        _Atomic uint64_t start_ticks; /* relaxed accesses: plain moves, but race-free C */
        _Atomic uint64_t duration_ticks;
} RingEntry;

typedef struct EventRing {
        /* Written by the producer only, on its own cache line. */
        _Alignas(64) _Atomic uint64_t head;
        uint64_t mask;      /* set by ring_init(), read-only after */
        RingEntry *entries; /* likewise; the entries start and end on a line of their own */
} EventRing;

/* The ring is one cache line: the producer's head and what never changes. Nothing the consumer
 * writes can share it, nor a line of the entries (which ring_init() allocates whole lines of). */
_Static_assert(sizeof(EventRing) == 64 && _Alignof(EventRing) == 64,
               "the ring's head must have its cache line to itself");

/* What the consumer keeps, in its own memory: the producer never reads it. */
typedef struct RingReader {
        uint64_t tail;
        uint64_t dropped;
} RingReader;

/* Allocates a ring of @capacity entries (rounded up to a power of two, at least 16), on whole
 * cache lines of their own, zeroed. Returns 0 or -ENOMEM. */
int ring_init(EventRing *r, size_t capacity);

/* Frees the entries of @r. */
void ring_destroy(EventRing *r);

/* Number of entries. */
size_t ring_capacity(const EventRing *r);

/* Producer: appends an event. Never blocks, never fails. */
static inline void ring_push(EventRing *r, uint64_t start_ticks, uint64_t duration_ticks)
{
        uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
        RingEntry *e = &r->entries[h & r->mask];

        atomic_store_explicit(&e->seq, 2 * h + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&e->start_ticks, start_ticks, memory_order_relaxed);
        atomic_store_explicit(&e->duration_ticks, duration_ticks, memory_order_relaxed);
        atomic_store_explicit(&e->seq, 2 * h + 2, memory_order_release);
        atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* Consumer: takes the next event into @ret_start/@ret_duration. Returns 1 with an event, 0
 * when the ring is empty. Events overwritten before they were read are added to
 * @reader->dropped and skipped. */
int ring_pop(EventRing *r, RingReader *reader, uint64_t *ret_start, uint64_t *ret_duration);

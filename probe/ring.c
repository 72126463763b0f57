#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ring_init(EventRing *r, size_t capacity)
{
        size_t n = 16, bytes;
        void *entries;

        while (n < capacity) {
                n <<= 1;
        }
        bytes = (n * sizeof(RingEntry) + 63) & ~(size_t)63;
        memset(r, 0, sizeof(*r));
        /* Whole lines: no other allocation, which another thread may write, shares one. */
        if (posix_memalign(&entries, 64, bytes) != 0) {
                return -ENOMEM;
        }
        memset(entries, 0, bytes);
        r->entries = entries;
        r->mask = n - 1;
        return 0;
}

void ring_destroy(EventRing *r)
{
        free(r->entries);
        r->entries = NULL;
}

size_t ring_capacity(const EventRing *r)
{
        return (size_t)r->mask + 1;
}

int ring_pop(EventRing *r, RingReader *reader, uint64_t *ret_start, uint64_t *ret_duration)
{
        for (;;) {
                uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
                uint64_t t = reader->tail, s1, s2, start, dur;
                RingEntry *e;

                if (t == head) {
                        return 0;
                }
                if (head - t > r->mask + 1) {
                        /* The producer lapped us: the oldest entries are gone. */
                        reader->dropped += head - t - (r->mask + 1);
                        reader->tail = t = head - (r->mask + 1);
                }
                e = &r->entries[t & r->mask];
                s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
                start = atomic_load_explicit(&e->start_ticks, memory_order_relaxed);
                dur = atomic_load_explicit(&e->duration_ticks, memory_order_relaxed);
                atomic_thread_fence(memory_order_acquire);
                s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
                if (s1 == 2 * t + 2 && s2 == s1) {
                        reader->tail = t + 1;
                        *ret_start = start;
                        *ret_duration = dur;
                        return 1;
                }
                /* Overwritten while we read it (or being rewritten): lost. */
                reader->dropped++;
                reader->tail = t + 1;
        }
}

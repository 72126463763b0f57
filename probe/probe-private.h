#pragma once

/* The probe's layout: struct Probe and its pair table, for probe.c, which alone runs the
 * loop, and for what must fill or read a slot as the loop leaves it without running one (the
 * scale benchmark's synthetic CPUs, tools/benchmarks/scale-probe.c). Nothing in the daemon
 * or the programs includes it: they use probe.h. */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "probe.h"

/* Values below HIST_EXACT ticks have a bucket of their own, so their count per value is
 * exact and their squares, minimum and maximum can be recovered from the histogram. */
#define HIST_EXACT_BITS (HIST_SUB_BITS + 1)
#define HIST_EXACT (1u << HIST_EXACT_BITS)
#define PAIR_CELLS (HIST_EXACT * HIST_EXACT)
/* One more cell takes the loop's increment for a sample the slow path recorded, so the loop
 * needs no branch for it; padded to a whole cache line. Never folded. */
#define PAIR_SINK PAIR_CELLS
#define PAIR_TABLE (PAIR_CELLS + 8)

/* Who writes which cache line. The probe's loop writes the slot and pair table of the current
 * epoch, the event ring and the acknowledgement in status; once per PROBE_CHECK_EVERY samples
 * it reads ctl. The owner writes ctl, its own fields, and a slot and its pair table only once
 * the probe has moved on from them. So each group below starts a cache line of its own, every
 * slot and every pair-table row covers whole lines, and no store of one thread lands on a line
 * the other thread is using: the harvest's copy-and-clear of one slot never touches the next
 * one, which the probe is filling. The assertions after the struct keep it so. */
struct Probe {
        /* Written by the owner, read by the probe once every PROBE_CHECK_EVERY samples. */
        struct {
                _Alignas(64) _Atomic uint64_t epoch;
                _Atomic int stop;
        } ctl;

        /* Written by the probe, read by the owner. */
        struct {
                _Alignas(64) _Atomic uint64_t acked_epoch;
                _Atomic int state;
                _Atomic int error;
                _Atomic int migrated_to;
                _Atomic uint64_t migrations;
                _Atomic int tid;
                _Atomic uint64_t floor_ticks;
                _Atomic uint64_t band_ticks;
                _Atomic int cpu_source;
                char failure[PROBE_FAILURE_MAX]; /* complete before state = PROBE_FAILED */
                char cpu_note[PROBE_NOTE_MAX];   /* complete before state = PROBE_PREHEATING */
        } status;

        /* The probe thread's own: what the loop reads, and its count of false migrations. */
        struct {
                _Alignas(64) uint64_t threshold_ticks;
                uint64_t fast_below; /* a power of two: gaps below it take the pair table */
                bool floor_set;
                bool started; /* start_ticks is set */
                ProbeCpuSource cpu_source;
                /* What the CPU number said when the loop left its CPU, and the counter then. */
                int seen_cpu;
                uint64_t seen_ticks;
                uint64_t start_ticks; /* the counter when the probe first began to preheat */
                /* Since it last ran clean long enough; see false_migration(). */
                unsigned false_migrations;
                uint64_t false_first_ticks, false_last_ticks;
        } own;

        /* The owner's own. */
        struct {
                _Alignas(64) uint64_t harvested_epoch; /* every epoch up to this one is harvested */
                pthread_t thread;
                bool thread_started;
                bool abandoned; /* the thread did not stop in time: its memory must stay */
        } owner;

        /* Set before the thread starts, read by both, written by neither afterwards. */
        struct {
                _Alignas(64) ProbeConfig cfg;
        } fixed;

        EventRing ring; /* its head on a line of its own (ring.h) */
        _Alignas(64) ProbeSlot preheat;
        _Alignas(64) ProbeSlot slots[PROBE_SLOTS];
        /* Per slot, counts of (previous gap, gap) pairs with both below HIST_EXACT ticks:
         * one increment per sample records the gap and its diff-of-diff at once. Folded into
         * the slot's histograms when it is harvested. */
        _Alignas(64) uint64_t preheat_pairs[PAIR_TABLE];
        _Alignas(64) uint64_t pairs[PROBE_SLOTS][PAIR_TABLE];
};

#define LINE_BYTES 64
#define STARTS_LINE(member) (offsetof(struct Probe, member) % LINE_BYTES == 0)
_Static_assert(sizeof(ProbeSlot) % LINE_BYTES == 0, "a slot must cover whole cache lines");
_Static_assert(offsetof(ProbeSlot, gap) == LINE_BYTES &&
                       offsetof(ProbeSlot, gap_hist) % LINE_BYTES == 0,
               "the slot's header, statistics and histograms each start a cache line");
_Static_assert(sizeof(uint64_t[PAIR_TABLE]) % LINE_BYTES == 0,
               "a pair-table row must cover whole cache lines");
_Static_assert(STARTS_LINE(ctl) && STARTS_LINE(status) && STARTS_LINE(own) && STARTS_LINE(owner) &&
                       STARTS_LINE(fixed) && STARTS_LINE(ring),
               "each group of fields must start a cache line of its own");
_Static_assert(STARTS_LINE(preheat) && STARTS_LINE(slots) && STARTS_LINE(preheat_pairs) &&
                       STARTS_LINE(pairs),
               "slots and pair tables must start on a cache line");
_Static_assert(offsetof(struct Probe, ring) + sizeof(EventRing) <= offsetof(struct Probe, preheat),
               "the ring's head must not share a line with the preheat slot");

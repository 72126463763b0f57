#include "scale-probe.h"

#include <errno.h>
#include <stdlib.h>

#include "probe-private.h"

_Static_assert(PAIR_CELLS == 4u * HIST_SUB * HIST_SUB, "the fixture's pair cells are the loop's");

void scale_probe_run(Probe *p, const ScaleFixture *x, int tid)
{
        atomic_store(&p->status.tid, tid);
        atomic_store(&p->status.floor_ticks, x->floor_ticks);
        atomic_store(&p->status.band_ticks, x->band_ticks);
        atomic_store(&p->status.cpu_source, PROBE_CPU_SOURCE_GETCPU);
        scale_probe_ack(p);
        atomic_store(&p->status.state, PROBE_RUNNING);
}

void scale_probe_ack(Probe *p)
{
        atomic_store(&p->status.acked_epoch, atomic_load(&p->ctl.epoch));
}

static void add_counts(uint64_t *counts, const ScaleCount *c, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                counts[c[i].index] += c[i].count;
        }
}

void scale_probe_fill(Probe *p, const ScaleInterval *iv, uint64_t start_ticks)
{
        uint64_t epoch = atomic_load(&p->ctl.epoch);
        ProbeSlot *s = &p->slots[epoch % PROBE_SLOTS];

        s->start_ticks = start_ticks;
        s->end_ticks = start_ticks + iv->duration_ticks;
        s->lost_ticks = iv->lost_ticks;
        s->events = iv->events;
        s->gap = iv->gap;
        s->dd = iv->dd;
        add_counts(s->gap_hist.counts, iv->gap_hist, iv->n_gap_hist);
        add_counts(s->dd_hist.neg.counts, iv->dd_neg, iv->n_dd_neg);
        add_counts(s->dd_hist.pos.counts, iv->dd_pos, iv->n_dd_pos);
        add_counts(p->pairs[epoch % PROBE_SLOTS], iv->pairs, iv->n_pairs);
        for (size_t i = 0; i < iv->n_ring; i++) {
                ring_push(&p->ring, start_ticks + iv->ring[i].offset_ticks,
                          iv->ring[i].duration_ticks);
        }
}

/* The non-zero counts of @counts[0..@n) into a new array. */
static int sparse(const uint64_t *counts, size_t n, ScaleCount **ret, size_t *ret_n)
{
        size_t k = 0;

        *ret = NULL;
        *ret_n = 0;
        for (size_t i = 0; i < n; i++) {
                k += counts[i] != 0;
        }
        if (k == 0) {
                return 0;
        }
        *ret = calloc(k, sizeof(**ret));
        if (!*ret) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                if (counts[i] != 0) {
                        (*ret)[(*ret_n)++] = (ScaleCount){.index = (uint32_t)i, .count = counts[i]};
                }
        }
        return 0;
}

int scale_probe_capture(Probe *p, uint64_t epoch, ScaleInterval *ret, uint64_t *ret_start_ticks)
{
        const ProbeSlot *s = &p->slots[epoch % PROBE_SLOTS];
        const uint64_t *pairs = p->pairs[epoch % PROBE_SLOTS];
        int r = 0;

        if (atomic_load(&p->status.acked_epoch) <= epoch) {
                return -EAGAIN;
        }
        *ret_start_ticks = s->start_ticks;
        *ret = (ScaleInterval){
                .duration_ticks = s->end_ticks - s->start_ticks,
                .lost_ticks = s->lost_ticks,
                .events = s->events,
                .gap = s->gap,
                .dd = s->dd,
        };
        r = r ? r : sparse(s->gap_hist.counts, HIST_BUCKETS, &ret->gap_hist, &ret->n_gap_hist);
        r = r ? r : sparse(s->dd_hist.neg.counts, HIST_BUCKETS, &ret->dd_neg, &ret->n_dd_neg);
        r = r ? r : sparse(s->dd_hist.pos.counts, HIST_BUCKETS, &ret->dd_pos, &ret->n_dd_pos);
        /* The sink cell takes increments no histogram counts: left out. */
        r = r ? r : sparse(pairs, PAIR_CELLS, &ret->pairs, &ret->n_pairs);
        if (r < 0) {
                scale_interval_clear(ret);
        }
        return r;
}

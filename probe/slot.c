#include "slot.h"

#include <string.h>

void slot_clear(ProbeSlot *s)
{
        memset(s, 0, sizeof(*s));
        stats_init(&s->gap);
        signed_stats_init(&s->dd);
}

void slot_merge(ProbeSlot *dst, const ProbeSlot *src)
{
        if (src->gap.count == 0 && src->events == 0) {
                return;
        }
        if (dst->start_ticks == 0 ||
            (src->start_ticks != 0 && src->start_ticks < dst->start_ticks)) {
                dst->start_ticks = src->start_ticks;
        }
        if (src->end_ticks > dst->end_ticks) {
                dst->end_ticks = src->end_ticks;
        }
        dst->lost_ticks += src->lost_ticks;
        dst->events += src->events;
        stats_merge(&dst->gap, &src->gap);
        signed_stats_merge(&dst->dd, &src->dd);
        histogram_merge(&dst->gap_hist, &src->gap_hist);
        signed_histogram_merge(&dst->dd_hist, &src->dd_hist);
}

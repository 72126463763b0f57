#include "capture-store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct Admitted {
        uint64_t from_ns;
        uint64_t bytes;
} Admitted;

typedef struct KeptFile {
        char name[CAPTURE_NAME_MAX];
        uint64_t bytes;
} KeptFile;

struct CaptureStore {
        CaptureLimits limits;
        /* Waiting for their end, sorted by from_ns, none overlapping another. */
        CaptureWindow pending[CAPTURE_PENDING_MAX];
        size_t n_pending;
        /* The end of the newest window handed out: what lies before it is written or given
         * up, and is not asked for again. */
        uint64_t done_to_ns;
        /* The newest limits.per_minute admissions, a ring: within any minute no more are
         * admitted, so these are all the per-minute bounds need. */
        Admitted *admitted;
        size_t admitted_next, n_admitted;
        /* Oldest first; room for one beyond kept_max until it is evicted. */
        KeptFile *kept;
        size_t n_kept;
        CaptureCounts counts;
};

int capture_store_new(const CaptureLimits *l, CaptureStore **ret)
{
        CaptureStore *s;

        if (l->per_minute == 0 || l->minute_bytes == 0 || l->kept_max == 0 || l->kept_bytes == 0) {
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                return -ENOMEM;
        }
        s->limits = *l;
        s->admitted = calloc(l->per_minute, sizeof(*s->admitted));
        s->kept = calloc((size_t)l->kept_max + 1, sizeof(*s->kept));
        if (!s->admitted || !s->kept) {
                capture_store_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

CaptureStore *capture_store_free(CaptureStore *s)
{
        if (s) {
                free(s->admitted);
                free(s->kept);
                free(s);
        }
        return NULL;
}

/* Adds the interruptions of @from to @to, as many as it names. */
static void window_take(CaptureWindow *to, const CaptureWindow *from)
{
        for (size_t i = 0; i < from->n; i++) {
                if (to->n < CAPTURE_INTERRUPTIONS_MAX) {
                        to->in[to->n++] = from->in[i];
                } else {
                        to->more++;
                }
        }
        to->more += from->more;
}

static void pending_remove(CaptureStore *s, size_t i)
{
        memmove(&s->pending[i], &s->pending[i + 1], (s->n_pending - i - 1) * sizeof(s->pending[0]));
        s->n_pending--;
}

/* Inserts @w where its start keeps the pending windows sorted. */
static void pending_insert(CaptureStore *s, const CaptureWindow *w)
{
        size_t i = 0;

        while (i < s->n_pending && s->pending[i].from_ns < w->from_ns) {
                i++;
        }
        memmove(&s->pending[i + 1], &s->pending[i], (s->n_pending - i) * sizeof(s->pending[0]));
        s->pending[i] = *w;
        s->n_pending++;
}

/* The first pending window that overlaps @w, or -1. */
static ssize_t pending_overlap(const CaptureStore *s, const CaptureWindow *w)
{
        for (size_t i = 0; i < s->n_pending; i++) {
                if (s->pending[i].from_ns < w->to_ns && w->from_ns < s->pending[i].to_ns) {
                        return (ssize_t)i;
                }
        }
        return -1;
}

int capture_store_note(CaptureStore *s, int cpu, uint64_t start_ns, uint64_t duration_ns)
{
        CaptureWindow w = {
                .from_ns = start_ns > CAPTURE_MARGIN_NS ? start_ns - CAPTURE_MARGIN_NS : 0,
                .to_ns = start_ns + duration_ns + CAPTURE_MARGIN_NS,
                .n = 1,
                .in = {{.cpu = cpu, .start_ns = start_ns, .duration_ns = duration_ns}},
        };
        ssize_t i;

        s->counts.noted++;
        /* Merge with every waiting window it overlaps while the capture stays short enough;
         * beyond that it begins where the one it overlaps ends, or joins that one when it
         * ends inside it. */
        while ((i = pending_overlap(s, &w)) >= 0) {
                CaptureWindow *p = &s->pending[i];
                uint64_t from = p->from_ns < w.from_ns ? p->from_ns : w.from_ns,
                         to = p->to_ns > w.to_ns ? p->to_ns : w.to_ns;

                if (to - from <= CAPTURE_SPAN_MAX_NS) {
                        CaptureWindow merged = *p;

                        merged.from_ns = from;
                        merged.to_ns = to;
                        window_take(&merged, &w);
                        w = merged;
                        pending_remove(s, (size_t)i);
                } else if (w.to_ns <= p->to_ns) {
                        window_take(p, &w);
                        return 0;
                } else {
                        w.from_ns = p->to_ns;
                }
        }
        if (w.from_ns < s->done_to_ns) {
                w.from_ns = s->done_to_ns;
        }
        if (w.from_ns >= w.to_ns || s->n_pending == CAPTURE_PENDING_MAX) {
                s->counts.skipped++;
                return -ENOSPC;
        }
        pending_insert(s, &w);
        return 0;
}

int capture_store_next_due(CaptureStore *s, uint64_t now_ns, CaptureWindow *ret)
{
        for (size_t i = 0; i < s->n_pending; i++) {
                if (s->pending[i].to_ns <= now_ns) {
                        *ret = s->pending[i];
                        pending_remove(s, i);
                        if (ret->to_ns > s->done_to_ns) {
                                s->done_to_ns = ret->to_ns;
                        }
                        return 1;
                }
        }
        return 0;
}

int capture_store_admit(CaptureStore *s, uint64_t from_ns, uint64_t bytes)
{
        size_t count = 0;
        uint64_t sum = 0;

        for (size_t i = 0; i < s->n_admitted; i++) {
                const Admitted *a = &s->admitted[i];

                /* The minute (from_ns - 1 min, from_ns]. */
                if (a->from_ns <= from_ns && from_ns - a->from_ns < CAPTURE_MINUTE_NS) {
                        count++;
                        sum += a->bytes;
                }
        }
        if (count >= s->limits.per_minute) {
                s->counts.skipped++;
                return -EBUSY;
        }
        if (sum + bytes > s->limits.minute_bytes) {
                s->counts.skipped++;
                return -EFBIG;
        }
        s->admitted[s->admitted_next] = (Admitted){.from_ns = from_ns, .bytes = bytes};
        s->admitted_next = (s->admitted_next + 1) % s->limits.per_minute;
        if (s->n_admitted < s->limits.per_minute) {
                s->n_admitted++;
        }
        return 0;
}

void capture_store_skip(CaptureStore *s)
{
        s->counts.skipped++;
}

int capture_store_keep(CaptureStore *s, const char *name, uint64_t bytes, bool written)
{
        KeptFile *k;

        if (strlen(name) >= CAPTURE_NAME_MAX) {
                return -EINVAL;
        }
        /* The caller evicts after each file it keeps, so there is room for one more. */
        if (s->n_kept > s->limits.kept_max) {
                return -ENOSPC;
        }
        k = &s->kept[s->n_kept++];
        snprintf(k->name, sizeof(k->name), "%s", name);
        k->bytes = bytes;
        s->counts.kept_bytes += bytes;
        s->counts.written += written;
        return 0;
}

int capture_store_evict(CaptureStore *s, char *ret_name)
{
        if (s->n_kept == 0 ||
            (s->n_kept <= s->limits.kept_max && s->counts.kept_bytes <= s->limits.kept_bytes)) {
                return 0;
        }
        memcpy(ret_name, s->kept[0].name, CAPTURE_NAME_MAX);
        s->counts.kept_bytes -= s->kept[0].bytes;
        memmove(&s->kept[0], &s->kept[1], (s->n_kept - 1) * sizeof(s->kept[0]));
        s->n_kept--;
        s->counts.evicted++;
        return 1;
}

const char *capture_store_kept_name(const CaptureStore *s, size_t i)
{
        return i < s->n_kept ? s->kept[i].name : NULL;
}

void capture_store_counts(const CaptureStore *s, CaptureCounts *ret)
{
        *ret = s->counts;
        ret->kept = s->n_kept;
}

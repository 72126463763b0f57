#include "history.h"

#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep a mistaken option or a hostile checkpoint from asking for absurd memory. */
#define HISTORY_MAX_ENTRIES (1u << 20)
#define HISTORY_MAX_EVENTS (1u << 22)

/* Longest LEB128 encodings of a 64-bit and a 128-bit value. */
#define VARINT64_MAX 10
#define VARINT128_MAX 19

/* Worst case of one encoded interval: every field at its longest, every bucket non-empty and
 * every source moved. A realistic one is a few hundred bytes. */
#define BLOB_HEADER_MAX (6 * VARINT64_MAX + 2 * (3 * VARINT64_MAX + 2 * VARINT128_MAX))
#define BLOB_ATTRIB_MAX (VARINT64_MAX + ATTRIB_MAX_SOURCES * 2 * VARINT64_MAX)
#define BLOB_HIST_MAX (HIST_BUCKETS * (VARINT128_MAX + VARINT64_MAX) + 1)
#define BLOB_MAX (BLOB_HEADER_MAX + BLOB_ATTRIB_MAX + 3 * BLOB_HIST_MAX)
#define BLOB_REMAP_MAX (BLOB_MAX + BLOB_ATTRIB_MAX)

#define CHECKPOINT_MAGIC "JTRDHIST"
#define CHECKPOINT_VERSION 1u
#define BOOT_ID_SIZE 16

/* One stored interval. Times stay outside the blob so windows are selected without decoding;
 * the blob holds the rest of the ProbeSlot, its attribution and how many fine intervals and
 * stalls it holds (see blob_encode()). */
typedef struct Interval {
        uint64_t start_ns;
        uint64_t end_ns;
        uint64_t duration_ns;   /* time actually covered: the sum of the fine durations */
        uint64_t period_end_ns; /* coarse: end of its coarse period; fine: 0 */
        uint8_t *blob;
        uint32_t size;
} Interval;

typedef struct IntervalRing {
        Interval *items;
        uint32_t cap, head, n;
} IntervalRing;

/* A full (non-sparse) sum of intervals: the totals since start or reset, and the coarse
 * period being filled. */
typedef struct HistorySum {
        ProbeSlot slot;
        AttribDelta attrib;
        int16_t pos[ATTRIB_MAX_SOURCES]; /* index in attrib.items of each id, or -1 */
        uint64_t intervals;
        uint64_t stalls;
        uint64_t start_ns, end_ns, duration_ns;
        uint64_t period_end_ns; /* pending coarse period only */
} HistorySum;

typedef struct CpuHistory {
        IntervalRing fine, coarse;
        HistorySum *total;
        HistorySum *pending;
        bool have_last;
        uint64_t last_start_ns;

        /* IntervalRing of events, grown on demand up to events_per_cpu. */
        HistoryEvent *events;
        uint32_t ev_alloc, ev_head, ev_n;

        size_t blob_bytes; /* heap bytes held by the blobs of both rings */
} CpuHistory;

struct History {
        HistoryOptions opt;
        uint32_t fine_cap, coarse_cap;
        uint8_t *scratch; /* BLOB_MAX bytes to encode into */
        CpuHistory *cpus[CPU_SETSIZE];
};

/* --- varints -------------------------------------------------------------------------------- */

static inline uint8_t *put_u64(uint8_t *p, uint64_t v)
{
        while (v >= 0x80) {
                *p++ = (uint8_t)(v | 0x80);
                v >>= 7;
        }
        *p++ = (uint8_t)v;
        return p;
}

static inline uint8_t *put_u128(uint8_t *p, unsigned __int128 v)
{
        while (v >= 0x80) {
                *p++ = (uint8_t)(v | 0x80);
                v >>= 7;
        }
        *p++ = (uint8_t)v;
        return p;
}

static inline uint64_t zigzag64(int64_t v)
{
        return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag64(uint64_t u)
{
        return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

static inline unsigned __int128 zigzag128(__int128 v)
{
        return ((unsigned __int128)v << 1) ^ (unsigned __int128)(v >> 127);
}

static inline __int128 unzigzag128(unsigned __int128 u)
{
        return (__int128)((u >> 1) ^ (0 - (u & 1)));
}

/* Bounds-checked reading of a blob: any malformed input sets bad and yields zeros, so callers
 * check once at the end. */
typedef struct Reader {
        const uint8_t *p, *end;
        bool bad;
} Reader;

static inline uint64_t get_u64(Reader *r)
{
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64; shift += 7) {
                uint8_t b;

                if (r->p >= r->end) {
                        break;
                }
                b = *r->p++;
                if (shift == 63 && b > 1) {
                        break;
                }
                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        return v;
                }
        }
        r->bad = true;
        r->p = r->end;
        return 0;
}

static inline unsigned __int128 get_u128(Reader *r)
{
        unsigned __int128 v = 0;

        for (unsigned shift = 0; shift < 128; shift += 7) {
                uint8_t b;

                if (r->p >= r->end) {
                        break;
                }
                b = *r->p++;
                if (shift == 126 && b > 3) {
                        break;
                }
                v |= (unsigned __int128)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        return v;
                }
        }
        r->bad = true;
        r->p = r->end;
        return 0;
}

/* --- attribution sums ----------------------------------------------------------------------- */

static void pos_reset(int16_t *pos)
{
        memset(pos, 0xff, ATTRIB_MAX_SOURCES * sizeof(*pos));
}

/* Adds @count of source @id into @d, whose ids are indexed by @pos. Saturates like
 * attrib_delta_add(). */
static void attrib_sum(AttribDelta *d, int16_t *pos, unsigned id, uint64_t count)
{
        AttribCount *c;

        assert(id < ATTRIB_MAX_SOURCES);
        if (pos[id] < 0) {
                assert(d->n < ATTRIB_MAX_SOURCES);
                pos[id] = (int16_t)d->n;
                d->items[d->n++] = (AttribCount){.id = (uint16_t)id, .count = 0};
        }
        c = &d->items[pos[id]];
        c->count = c->count > UINT64_MAX - count ? UINT64_MAX : c->count + count;
}

static int cmp_attrib_count(const void *a, const void *b)
{
        const AttribCount *x = a, *y = b;

        return (x->id > y->id) - (x->id < y->id);
}

/* --- interval blobs ------------------------------------------------------------------------ *
 *
 * Layout, every number a LEB128 varint (signed ones zigzagged):
 *   intervals stalls lost_ticks events start_ticks (end_ticks - start_ticks mod 2^64)
 *   gap: count min max sum sumsq          dd: count min max sum sumsq
 *   attribution: n, then n × (id, count)
 *   gap_hist, dd_hist.neg, dd_hist.pos: for each non-empty bucket a token (count << 1 | skip),
 *   followed when skip is set by the number of empty buckets skipped minus one; a 0 token
 *   ends the histogram.
 * The attribution comes before the histograms so per-interval timelines never scan those. */

static uint8_t *put_hist(uint8_t *p, const Histogram *h)
{
        unsigned next = 0;

        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                uint64_t c = h->counts[i];
                unsigned skip;

                if (c == 0) {
                        continue;
                }
                skip = i != next;
                if (c < (UINT64_C(1) << 63)) {
                        p = put_u64(p, c << 1 | skip);
                } else {
                        p = put_u128(p, (unsigned __int128)c << 1 | skip);
                }
                if (skip) {
                        p = put_u64(p, i - next - 1);
                }
                next = i + 1;
        }
        *p++ = 0;
        return p;
}

/* Encodes @s and @a (which may be NULL) into @buf, which has room for BLOB_MAX bytes. Returns
 * the size. */
static size_t blob_encode(uint8_t *buf, const ProbeSlot *s, const AttribDelta *a,
                          uint64_t intervals, uint64_t stalls)
{
        uint8_t *p = buf, *count_at;
        size_t n = 0;

        p = put_u64(p, intervals);
        p = put_u64(p, stalls);
        p = put_u64(p, s->lost_ticks);
        p = put_u64(p, s->events);
        p = put_u64(p, s->start_ticks);
        p = put_u64(p, s->end_ticks - s->start_ticks);
        p = put_u64(p, s->gap.count);
        p = put_u64(p, s->gap.min);
        p = put_u64(p, s->gap.max);
        p = put_u128(p, s->gap.sum);
        p = put_u128(p, s->gap.sumsq);
        p = put_u64(p, s->dd.count);
        p = put_u64(p, zigzag64(s->dd.min));
        p = put_u64(p, zigzag64(s->dd.max));
        p = put_u128(p, zigzag128(s->dd.sum));
        p = put_u128(p, s->dd.sumsq);

        /* The number of moved sources is known only after skipping the zero ones; it fits one
         * or two bytes, so encode it as exactly two (a padded varint). */
        count_at = p;
        p += 2;
        for (size_t i = 0; a && i < a->n; i++) {
                if (a->items[i].count == 0) {
                        continue;
                }
                p = put_u64(p, a->items[i].id);
                p = put_u64(p, a->items[i].count);
                n++;
        }
        assert(n <= ATTRIB_MAX_SOURCES);
        count_at[0] = (uint8_t)((n & 0x7f) | 0x80);
        count_at[1] = (uint8_t)(n >> 7);

        p = put_hist(p, &s->gap_hist);
        p = put_hist(p, &s->dd_hist.neg);
        p = put_hist(p, &s->dd_hist.pos);
        assert((size_t)(p - buf) <= BLOB_MAX);
        return (size_t)(p - buf);
}

typedef struct BlobHeader {
        uint64_t intervals;
        uint64_t stalls;
        uint64_t lost_ticks;
        uint64_t events;
        uint64_t start_ticks;
        uint64_t end_ticks;
        Stats gap;
        SignedStats dd;
} BlobHeader;

static void blob_read_header(Reader *r, BlobHeader *b)
{
        b->intervals = get_u64(r);
        b->stalls = get_u64(r);
        b->lost_ticks = get_u64(r);
        b->events = get_u64(r);
        b->start_ticks = get_u64(r);
        b->end_ticks = b->start_ticks + get_u64(r);
        b->gap.count = get_u64(r);
        b->gap.min = get_u64(r);
        b->gap.max = get_u64(r);
        b->gap.sum = get_u128(r);
        b->gap.sumsq = get_u128(r);
        b->dd.count = get_u64(r);
        b->dd.min = unzigzag64(get_u64(r));
        b->dd.max = unzigzag64(get_u64(r));
        b->dd.sum = unzigzag128(get_u128(r));
        b->dd.sumsq = get_u128(r);
}

/* Reads the attribution; ids must be below @n_ids and are translated through @map (NULL:
 * unchanged). Adds them into @dst (indexed by @pos) unless @dst is NULL. */
static void blob_read_attrib(Reader *r, unsigned n_ids, const uint16_t *map, AttribDelta *dst,
                             int16_t *pos)
{
        uint64_t n = get_u64(r);

        if (n > ATTRIB_MAX_SOURCES) {
                r->bad = true;
                return;
        }
        for (uint64_t i = 0; i < n && !r->bad; i++) {
                uint64_t id = get_u64(r), count = get_u64(r);

                if (id >= n_ids) {
                        r->bad = true;
                        return;
                }
                if (dst && !r->bad) {
                        attrib_sum(dst, pos, map ? map[id] : (unsigned)id, count);
                }
        }
}

/* Reads one histogram, adding it into @dst unless that is NULL. */
static void blob_read_hist(Reader *r, Histogram *dst)
{
        unsigned next = 0;

        for (;;) {
                unsigned __int128 token = get_u128(r);
                unsigned __int128 count = token >> 1;
                unsigned idx = next;

                if (token == 0 || r->bad) {
                        return;
                }
                if (count > UINT64_MAX) {
                        r->bad = true;
                        return;
                }
                if (token & 1) {
                        uint64_t skip = get_u64(r);

                        if (skip >= HIST_BUCKETS) {
                                r->bad = true;
                                return;
                        }
                        idx += (unsigned)skip + 1;
                }
                if (idx >= HIST_BUCKETS) {
                        r->bad = true;
                        return;
                }
                if (dst) {
                        dst->counts[idx] += (uint64_t)count;
                }
                next = idx + 1;
        }
}

/* Adds the statistics of @b into @dst, the way probe_slot_merge() does, so that a window is
 * exactly the merge of the slots that went into it. Returns whether the histograms are to be
 * merged too. */
static bool slot_merge_header(ProbeSlot *dst, const BlobHeader *b)
{
        if (b->gap.count == 0 && b->events == 0) {
                return false;
        }
        if (dst->start_ticks == 0 || (b->start_ticks != 0 && b->start_ticks < dst->start_ticks)) {
                dst->start_ticks = b->start_ticks;
        }
        if (b->end_ticks > dst->end_ticks) {
                dst->end_ticks = b->end_ticks;
        }
        dst->lost_ticks += b->lost_ticks;
        dst->events += b->events;
        stats_merge(&dst->gap, &b->gap);
        signed_stats_merge(&dst->dd, &b->dd);
        return true;
}

/* Decodes a blob of ours (or one already checked by blob_check()) into @dst and @dst_attrib
 * (indexed by @pos), with ids through @map (NULL: unchanged). */
static void blob_merge(const uint8_t *blob, size_t size, const uint16_t *map, ProbeSlot *dst,
                       AttribDelta *dst_attrib, int16_t *pos, BlobHeader *ret_header)
{
        Reader r = {blob, blob + size, false};
        BlobHeader b;
        bool hist;

        blob_read_header(&r, &b);
        blob_read_attrib(&r, ATTRIB_MAX_SOURCES, map, dst_attrib, pos);
        hist = slot_merge_header(dst, &b);
        blob_read_hist(&r, hist ? &dst->gap_hist : NULL);
        blob_read_hist(&r, hist ? &dst->dd_hist.neg : NULL);
        blob_read_hist(&r, hist ? &dst->dd_hist.pos : NULL);
        assert(!r.bad && r.p == r.end);
        if (ret_header) {
                *ret_header = b;
        }
}

/* Whether @blob is well-formed, with attribution ids below @n_ids. */
static bool blob_check(const uint8_t *blob, size_t size, unsigned n_ids)
{
        /* Far beyond any real sum (2^40 samples of 2^50 ticks), and far enough from 2^127
         * that merging a million of them cannot overflow the signed sum. */
        const __int128 sum_max = (__int128)1 << 100;
        Reader r = {blob, blob + size, false};
        BlobHeader b;

        blob_read_header(&r, &b);
        if (b.dd.sum > sum_max || b.dd.sum < -sum_max) {
                return false;
        }
        blob_read_attrib(&r, n_ids, NULL, NULL, NULL);
        for (unsigned i = 0; i < 3; i++) {
                blob_read_hist(&r, NULL);
        }
        return !r.bad && r.p == r.end;
}

/* Re-encodes a checked blob with its attribution ids through @map into @out (BLOB_REMAP_MAX
 * bytes: the ids and counts come out canonical, which may be longer than a padded input).
 * Returns the new size. */
static size_t blob_remap(const uint8_t *blob, size_t size, const uint16_t *map, uint8_t *out)
{
        Reader r = {blob, blob + size, false};
        BlobHeader b;
        uint8_t *p = out;
        uint64_t n;
        size_t head;

        blob_read_header(&r, &b);
        head = (size_t)(r.p - blob);
        memcpy(p, blob, head);
        p += head;
        n = get_u64(&r);
        p = put_u64(p, n);
        for (uint64_t i = 0; i < n; i++) {
                uint64_t id = get_u64(&r);

                p = put_u64(p, map[id]);
                p = put_u64(p, get_u64(&r));
        }
        assert(!r.bad);
        memcpy(p, r.p, (size_t)(r.end - r.p));
        p += r.end - r.p;
        return (size_t)(p - out);
}

/* --- per-CPU storage ----------------------------------------------------------------------- */

static size_t usable(const void *p)
{
        return p ? malloc_usable_size((void *)p) : 0;
}

static inline const Interval *iring_at(const IntervalRing *r, uint32_t i)
{
        return &r->items[(r->head + i) % r->cap];
}

/* Appends @iv, taking ownership of its blob; the oldest entry goes when the ring is full. */
static void iring_push(CpuHistory *c, IntervalRing *r, const Interval *iv)
{
        Interval *slot;

        if (r->n == r->cap) {
                slot = &r->items[r->head];
                c->blob_bytes -= usable(slot->blob);
                free(slot->blob);
                r->head = (r->head + 1) % r->cap;
                r->n--;
        }
        slot = &r->items[(r->head + r->n) % r->cap];
        *slot = *iv;
        r->n++;
        c->blob_bytes += usable(iv->blob);
}

static void iring_clear(CpuHistory *c, IntervalRing *r)
{
        for (uint32_t i = 0; i < r->n; i++) {
                Interval *iv = &r->items[(r->head + i) % r->cap];

                c->blob_bytes -= usable(iv->blob);
                free(iv->blob);
        }
        r->head = r->n = 0;
}

static void sum_clear(HistorySum *s)
{
        probe_slot_clear(&s->slot);
        s->attrib.n = 0;
        pos_reset(s->pos);
        s->intervals = s->stalls = 0;
        s->start_ns = s->end_ns = s->duration_ns = s->period_end_ns = 0;
}

/* Adds the fine interval @iv into @s, from its encoding: only its non-empty buckets are
 * touched. */
static void sum_add(HistorySum *s, const Interval *iv)
{
        BlobHeader b;

        blob_merge(iv->blob, iv->size, NULL, &s->slot, &s->attrib, s->pos, &b);
        if (s->intervals == 0 || iv->start_ns < s->start_ns) {
                s->start_ns = iv->start_ns;
        }
        if (iv->end_ns > s->end_ns) {
                s->end_ns = iv->end_ns;
        }
        s->duration_ns += iv->duration_ns;
        s->intervals += b.intervals;
        s->stalls += b.stalls;
}

static CpuHistory *cpu_free(CpuHistory *c)
{
        if (!c) {
                return NULL;
        }
        iring_clear(c, &c->fine);
        iring_clear(c, &c->coarse);
        free(c->fine.items);
        free(c->coarse.items);
        free(c->total);
        free(c->pending);
        free(c->events);
        free(c);
        return NULL;
}

/* A CPU with empty rings; the sums only when @with_sums (a checkpoint being read has them
 * encoded until it is committed). */
static CpuHistory *cpu_alloc(const History *h, bool with_sums)
{
        CpuHistory *c = calloc(1, sizeof(*c));

        if (!c) {
                return NULL;
        }
        c->fine.cap = h->fine_cap;
        c->coarse.cap = h->coarse_cap;
        c->fine.items = calloc(h->fine_cap, sizeof(Interval));
        c->coarse.items = calloc(h->coarse_cap, sizeof(Interval));
        if (!c->fine.items || !c->coarse.items) {
                return cpu_free(c);
        }
        if (with_sums) {
                c->total = malloc(sizeof(HistorySum));
                c->pending = malloc(sizeof(HistorySum));
                if (!c->total || !c->pending) {
                        return cpu_free(c);
                }
                sum_clear(c->total);
                sum_clear(c->pending);
        }
        return c;
}

static void cpu_clear(CpuHistory *c)
{
        iring_clear(c, &c->fine);
        iring_clear(c, &c->coarse);
        sum_clear(c->total);
        sum_clear(c->pending);
        c->have_last = false;
        c->last_start_ns = 0;
        c->ev_head = c->ev_n = 0;
}

static size_t cpu_memory(const CpuHistory *c)
{
        return sizeof(*c) + (c->total ? 2 * sizeof(HistorySum) : 0) +
               (size_t)(c->fine.cap + c->coarse.cap) * sizeof(Interval) +
               (size_t)c->ev_alloc * sizeof(HistoryEvent) + c->blob_bytes;
}

static int cpu_get(History *h, int cpu, CpuHistory **ret)
{
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return -EINVAL;
        }
        if (!h->cpus[cpu]) {
                h->cpus[cpu] = cpu_alloc(h, true);
                if (!h->cpus[cpu]) {
                        return -ENOMEM;
                }
        }
        *ret = h->cpus[cpu];
        return 0;
}

/* Appends an event to @c's ring, growing it up to @cap. */
static int cpu_push_event(CpuHistory *c, uint32_t cap, const HistoryEvent *ev)
{
        if (cap == 0) {
                return 0;
        }
        if (c->ev_n == c->ev_alloc && c->ev_alloc < cap) {
                uint32_t n = c->ev_alloc ? c->ev_alloc * 2 : 64;
                HistoryEvent *e;

                if (n > cap) {
                        n = cap;
                }
                e = malloc((size_t)n * sizeof(*e));
                if (!e) {
                        return -ENOMEM;
                }
                for (uint32_t i = 0; i < c->ev_n; i++) {
                        e[i] = c->events[(c->ev_head + i) % c->ev_alloc];
                }
                free(c->events);
                c->events = e;
                c->ev_alloc = n;
                c->ev_head = 0;
        }
        if (c->ev_n == c->ev_alloc) {
                c->events[c->ev_head] = *ev;
                c->ev_head = (c->ev_head + 1) % c->ev_alloc;
        } else {
                c->events[(c->ev_head + c->ev_n) % c->ev_alloc] = *ev;
                c->ev_n++;
        }
        return 0;
}

static inline const HistoryEvent *cpu_event(const CpuHistory *c, uint32_t i)
{
        return &c->events[(c->ev_head + i) % c->ev_alloc];
}

/* --- public API ---------------------------------------------------------------------------- */

int history_new(const HistoryOptions *opt, History **ret)
{
        uint64_t fine_cap, coarse_cap, per_coarse;
        History *h;

        if (!opt || !ret || opt->interval_ns == 0 || opt->coarse_interval_ns < opt->interval_ns ||
            opt->coarse_interval_ns % opt->interval_ns != 0 ||
            opt->fine_retention_ns < opt->interval_ns ||
            opt->coarse_retention_ns < opt->coarse_interval_ns ||
            opt->events_per_cpu > HISTORY_MAX_EVENTS) {
                return -EINVAL;
        }
        /* The fine ring always holds the coarse period being filled, with room for intervals
         * a little shorter than nominal, so that period is never missing from a window. */
        fine_cap = opt->fine_retention_ns / opt->interval_ns;
        per_coarse = opt->coarse_interval_ns / opt->interval_ns;
        if (fine_cap < per_coarse + per_coarse / 8 + 2) {
                fine_cap = per_coarse + per_coarse / 8 + 2;
        }
        coarse_cap = opt->coarse_retention_ns / opt->coarse_interval_ns;
        if (fine_cap > HISTORY_MAX_ENTRIES || coarse_cap > HISTORY_MAX_ENTRIES) {
                return -EINVAL;
        }
        h = calloc(1, sizeof(*h));
        if (!h) {
                return -ENOMEM;
        }
        h->scratch = malloc(BLOB_MAX);
        if (!h->scratch) {
                free(h);
                return -ENOMEM;
        }
        h->opt = *opt;
        h->fine_cap = (uint32_t)fine_cap;
        h->coarse_cap = (uint32_t)coarse_cap;
        *ret = h;
        return 0;
}

History *history_free(History *h)
{
        if (!h) {
                return NULL;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                cpu_free(h->cpus[cpu]);
        }
        free(h->scratch);
        free(h);
        return NULL;
}

/* Copies the encoding in h->scratch into a new interval. */
static int interval_from_scratch(History *h, size_t size, Interval *iv)
{
        iv->blob = malloc(size);
        if (!iv->blob) {
                return -ENOMEM;
        }
        memcpy(iv->blob, h->scratch, size);
        iv->size = (uint32_t)size;
        return 0;
}

int history_add_interval(History *h, int cpu, uint64_t start_ns, uint64_t duration_ns,
                         const ProbeSlot *slot, bool stalled, const AttribDelta *attrib)
{
        Interval fine = {0}, coarse = {0};
        bool finish;
        CpuHistory *c;
        int r;

        if (!h || !slot || duration_ns == 0 || start_ns > UINT64_MAX - duration_ns) {
                return -EINVAL;
        }
        if (attrib) {
                if (attrib->n > ATTRIB_MAX_SOURCES) {
                        return -EINVAL;
                }
                for (size_t i = 0; i < attrib->n; i++) {
                        if (attrib->items[i].id >= ATTRIB_MAX_SOURCES) {
                                return -EINVAL;
                        }
                }
        }
        r = cpu_get(h, cpu, &c);
        if (r < 0) {
                return r;
        }
        if (c->have_last && start_ns < c->last_start_ns) {
                return -EINVAL;
        }

        /* Allocate everything before changing anything, so a failure leaves no trace. */
        fine.start_ns = start_ns;
        fine.duration_ns = duration_ns;
        fine.end_ns = start_ns + duration_ns;
        r = interval_from_scratch(h, blob_encode(h->scratch, slot, attrib, 1, stalled), &fine);
        if (r < 0) {
                return r;
        }
        finish = c->pending->intervals > 0 && start_ns >= c->pending->period_end_ns;
        if (finish) {
                HistorySum *p = c->pending;

                coarse.start_ns = p->start_ns;
                coarse.end_ns = p->end_ns;
                coarse.duration_ns = p->duration_ns;
                coarse.period_end_ns = p->period_end_ns;
                r = interval_from_scratch(
                        h, blob_encode(h->scratch, &p->slot, &p->attrib, p->intervals, p->stalls),
                        &coarse);
                if (r < 0) {
                        free(fine.blob);
                        return r;
                }
                iring_push(c, &c->coarse, &coarse);
                sum_clear(p);
        }
        if (c->pending->intervals == 0) {
                uint64_t period_start = start_ns - start_ns % h->opt.coarse_interval_ns;

                c->pending->period_end_ns = period_start > UINT64_MAX - h->opt.coarse_interval_ns
                                                    ? UINT64_MAX
                                                    : period_start + h->opt.coarse_interval_ns;
        }
        sum_add(c->pending, &fine);
        sum_add(c->total, &fine);
        iring_push(c, &c->fine, &fine);
        c->have_last = true;
        c->last_start_ns = start_ns;
        return 0;
}

int history_add_event(History *h, const HistoryEvent *ev)
{
        CpuHistory *c;
        int r;

        if (!h || !ev) {
                return -EINVAL;
        }
        r = cpu_get(h, ev->cpu, &c);
        if (r < 0) {
                return r;
        }
        return cpu_push_event(c, h->opt.events_per_cpu, ev);
}

typedef int (*VisitFn)(const Interval *iv, bool coarse, void *userdata);

/* Calls @fn, oldest first, for the intervals of @c that make up the window [@from_ns, @to_ns]:
 * fine intervals wherever they are kept, coarse ones for the time before. A coarse interval
 * whose period reaches into the fine intervals (the oldest of its fine intervals are gone) is
 * used when the window holds all of it, and then replaces its fine intervals. Each fine
 * interval lies in exactly one coarse period, so nothing is counted twice. */
static int cpu_visit(const CpuHistory *c, uint64_t from_ns, uint64_t to_ns, VisitFn fn,
                     void *userdata)
{
        uint64_t first_fine = c->fine.n > 0 ? iring_at(&c->fine, 0)->start_ns : UINT64_MAX;
        uint64_t split = first_fine;
        int r;

        for (uint32_t i = 0; i < c->coarse.n; i++) {
                const Interval *iv = iring_at(&c->coarse, i);
                bool inside = iv->start_ns >= from_ns && iv->end_ns <= to_ns;

                if (iv->period_end_ns <= first_fine) {
                        if (inside) {
                                r = fn(iv, true, userdata);
                                if (r != 0) {
                                        return r;
                                }
                        }
                        continue;
                }
                if (inside && iv->start_ns < first_fine) {
                        r = fn(iv, true, userdata);
                        if (r != 0) {
                                return r;
                        }
                        split = iv->period_end_ns;
                }
                break;
        }
        for (uint32_t i = 0; i < c->fine.n; i++) {
                const Interval *iv = iring_at(&c->fine, i);

                if (iv->start_ns >= split && iv->start_ns >= from_ns && iv->end_ns <= to_ns) {
                        r = fn(iv, false, userdata);
                        if (r != 0) {
                                return r;
                        }
                }
        }
        return 0;
}

typedef struct QueryCtx {
        HistoryWindow *w;
        int16_t pos[ATTRIB_MAX_SOURCES];
} QueryCtx;

static int query_visit(const Interval *iv, bool coarse, void *userdata)
{
        QueryCtx *q = userdata;
        HistoryWindow *w = q->w;
        BlobHeader b;

        blob_merge(iv->blob, iv->size, NULL, &w->slot, &w->attrib, q->pos, &b);
        if (w->intervals == 0 || iv->start_ns < w->from_ns) {
                w->from_ns = iv->start_ns;
        }
        if (iv->end_ns > w->to_ns) {
                w->to_ns = iv->end_ns;
        }
        w->duration_ns += iv->duration_ns;
        w->intervals++;
        w->stalls += b.stalls;
        return 0;
}

int history_query(History *h, int cpu, uint64_t from_ns, uint64_t to_ns, bool all,
                  HistoryWindow *ret)
{
        const CpuHistory *c;
        QueryCtx q;

        if (!h || !ret || (!all && from_ns > to_ns)) {
                return -EINVAL;
        }
        if (cpu < 0 || cpu >= CPU_SETSIZE || !h->cpus[cpu]) {
                return -ENOENT;
        }
        c = h->cpus[cpu];
        ret->from_ns = ret->to_ns = ret->duration_ns = 0;
        ret->intervals = 0;
        ret->stalls = 0;
        if (all) {
                const HistorySum *t = c->total;

                ret->slot = t->slot;
                ret->attrib.n = t->attrib.n;
                memcpy(ret->attrib.items, t->attrib.items, t->attrib.n * sizeof(AttribCount));
                ret->from_ns = t->start_ns;
                ret->to_ns = t->end_ns;
                ret->duration_ns = t->duration_ns;
                ret->intervals = (unsigned)t->intervals;
                ret->stalls = t->stalls;
        } else {
                probe_slot_clear(&ret->slot);
                ret->attrib.n = 0;
                q.w = ret;
                pos_reset(q.pos);
                (void)cpu_visit(c, from_ns, to_ns, query_visit, &q);
        }
        qsort(ret->attrib.items, ret->attrib.n, sizeof(AttribCount), cmp_attrib_count);
        return 0;
}

static const struct {
        const char *name;
        uint64_t ns; /* 0: all */
} spans[HISTORY_SPAN_MAX] = {
        [HISTORY_SPAN_10S] = {"10s", 10ULL * 1000000000ULL},
        [HISTORY_SPAN_1M] = {"1m", 60ULL * 1000000000ULL},
        [HISTORY_SPAN_5M] = {"5m", 300ULL * 1000000000ULL},
        [HISTORY_SPAN_1H] = {"1h", 3600ULL * 1000000000ULL},
        [HISTORY_SPAN_24H] = {"24h", 86400ULL * 1000000000ULL},
        [HISTORY_SPAN_ALL] = {"all", 0},
};

const char *history_span_name(HistorySpan span)
{
        return (unsigned)span < HISTORY_SPAN_MAX ? spans[span].name : NULL;
}

int history_span_from_name(const char *name, HistorySpan *ret)
{
        for (unsigned i = 0; name && i < HISTORY_SPAN_MAX; i++) {
                if (strcmp(name, spans[i].name) == 0) {
                        *ret = (HistorySpan)i;
                        return 0;
                }
        }
        return -EINVAL;
}

int history_window(History *h, int cpu, HistorySpan span, HistoryWindow *ret)
{
        const CpuHistory *c;
        uint64_t end;

        if (!h || !ret || (unsigned)span >= HISTORY_SPAN_MAX) {
                return -EINVAL;
        }
        if (cpu < 0 || cpu >= CPU_SETSIZE || !h->cpus[cpu]) {
                return -ENOENT;
        }
        if (span == HISTORY_SPAN_ALL) {
                return history_query(h, cpu, 0, UINT64_MAX, true, ret);
        }
        c = h->cpus[cpu];
        end = c->have_last ? c->last_start_ns + h->opt.interval_ns : 0;
        return history_query(h, cpu, end > spans[span].ns ? end - spans[span].ns : 0, UINT64_MAX,
                             false, ret);
}

typedef struct PointCtx {
        int (*fn)(const HistoryPoint *pt, void *userdata);
        void *userdata;
        AttribDelta attrib;
        int16_t pos[ATTRIB_MAX_SOURCES];
} PointCtx;

static int point_visit(const Interval *iv, bool coarse, void *userdata)
{
        PointCtx *pc = userdata;
        Reader r = {iv->blob, iv->blob + iv->size, false};
        HistoryPoint pt;
        BlobHeader b;

        blob_read_header(&r, &b);
        for (size_t i = 0; i < pc->attrib.n; i++) {
                pc->pos[pc->attrib.items[i].id] = -1;
        }
        pc->attrib.n = 0;
        blob_read_attrib(&r, ATTRIB_MAX_SOURCES, NULL, &pc->attrib, pc->pos);
        assert(!r.bad);
        qsort(pc->attrib.items, pc->attrib.n, sizeof(AttribCount), cmp_attrib_count);
        for (size_t i = 0; i < pc->attrib.n; i++) {
                pc->pos[pc->attrib.items[i].id] = (int16_t)i;
        }
        pt = (HistoryPoint){
                .start_ns = iv->start_ns,
                .duration_ns = iv->duration_ns,
                .samples = b.gap.count,
                .max_gap_ticks = b.gap.max,
                .lost_ticks = b.lost_ticks,
                .events = b.events,
                .stalled = b.stalls > 0,
                .attrib = &pc->attrib,
                .coarse = coarse,
                .stalls = b.stalls,
        };
        return pc->fn(&pt, pc->userdata);
}

int history_foreach_point(History *h, int cpu, uint64_t from_ns, uint64_t to_ns,
                          int (*fn)(const HistoryPoint *pt, void *userdata), void *userdata)
{
        PointCtx *pc;
        int r;

        if (!h || !fn || from_ns > to_ns) {
                return -EINVAL;
        }
        if (cpu < 0 || cpu >= CPU_SETSIZE || !h->cpus[cpu]) {
                return -ENOENT;
        }
        pc = malloc(sizeof(*pc));
        if (!pc) {
                return -ENOMEM;
        }
        pc->fn = fn;
        pc->userdata = userdata;
        pc->attrib.n = 0;
        pos_reset(pc->pos);
        r = cpu_visit(h->cpus[cpu], from_ns, to_ns, point_visit, pc);
        free(pc);
        return r;
}

static bool event_matches(const HistoryEvent *e, uint64_t since_ns, uint64_t min_duration_ns)
{
        return e->start_ns >= since_ns && e->duration_ns >= min_duration_ns;
}

size_t history_events(History *h, const cpu_set_t *cpus, uint64_t since_ns,
                      uint64_t min_duration_ns, HistoryEvent *ret, size_t max)
{
        /* Per selected CPU with events: the index of its newest event not yet taken. */
        struct {
                const CpuHistory *c;
                int64_t next;
        } cur[CPU_SETSIZE];
        size_t n = 0, n_cur = 0;

        if (!h || !ret || max == 0) {
                return 0;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                const CpuHistory *c = h->cpus[cpu];

                if (c && c->ev_n > 0 && (!cpus || CPU_ISSET(cpu, cpus))) {
                        cur[n_cur].c = c;
                        cur[n_cur].next = (int64_t)c->ev_n - 1;
                        n_cur++;
                }
        }
        /* Merge the per-CPU rings (each in time order) from the newest backwards. */
        while (n < max) {
                const HistoryEvent *best = NULL;
                size_t best_i = 0;

                for (size_t i = 0; i < n_cur; i++) {
                        while (cur[i].next >= 0 &&
                               !event_matches(cpu_event(cur[i].c, (uint32_t)cur[i].next), since_ns,
                                              min_duration_ns)) {
                                cur[i].next--;
                        }
                        if (cur[i].next >= 0) {
                                const HistoryEvent *e = cpu_event(cur[i].c, (uint32_t)cur[i].next);

                                if (!best || e->start_ns > best->start_ns) {
                                        best = e;
                                        best_i = i;
                                }
                        }
                }
                if (!best) {
                        break;
                }
                ret[n++] = *best;
                cur[best_i].next--;
        }
        for (size_t i = 0; i < n / 2; i++) {
                HistoryEvent tmp = ret[i];

                ret[i] = ret[n - 1 - i];
                ret[n - 1 - i] = tmp;
        }
        return n;
}

void history_reset(History *h, int cpu)
{
        if (!h) {
                return;
        }
        for (int i = 0; i < CPU_SETSIZE; i++) {
                if ((cpu < 0 || i == cpu) && h->cpus[i]) {
                        cpu_clear(h->cpus[i]);
                }
        }
}

void history_cpus(History *h, cpu_set_t *ret)
{
        CPU_ZERO(ret);
        for (int cpu = 0; h && cpu < CPU_SETSIZE; cpu++) {
                if (h->cpus[cpu]) {
                        CPU_SET(cpu, ret);
                }
        }
}

size_t history_memory_bytes(const History *h)
{
        size_t bytes;

        if (!h) {
                return 0;
        }
        bytes = sizeof(*h) + usable(h->scratch);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (h->cpus[cpu]) {
                        bytes += cpu_memory(h->cpus[cpu]);
                }
        }
        return bytes;
}

/* --- checkpoint ---------------------------------------------------------------------------- *
 *
 * All integers little-endian:
 *   "JTRDHIST" u32 version u64 hz u8[16] boot_id
 *   u32 n_names, n × (u8 len, name)             attribution sources, by id
 *   u32 n_cpus, per CPU:
 *     u32 cpu
 *     total, pending: u64 start end duration period_end, u32 size, blob
 *     u32 n, n × fine:   u64 start end duration, u32 size, blob
 *     u32 n, n × coarse: u64 start end duration period_end, u32 size, blob
 *     u32 n, n × event:  u64 start_ns start_real_ns duration_ns
 *   u32 CRC-32 (IEEE 802.3) of everything before it */

static void crc32_table_init(uint32_t table[256])
{
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;

                for (unsigned k = 0; k < 8; k++) {
                        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
                }
                table[i] = c;
        }
}

static uint32_t crc32_update(const uint32_t table[256], uint32_t crc, const void *data, size_t n)
{
        const uint8_t *p = data;

        crc = ~crc;
        while (n--) {
                crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
        }
        return ~crc;
}

/* The boot this CLOCK_MONOTONIC belongs to; all zeros when unknown. */
static void boot_id_read(uint8_t ret[BOOT_ID_SIZE])
{
        char text[64];
        size_t n = 0;
        FILE *f;

        memset(ret, 0, BOOT_ID_SIZE);
        f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (!f) {
                return;
        }
        if (!fgets(text, sizeof(text), f)) {
                text[0] = '\0';
        }
        fclose(f);
        for (const char *p = text; *p && *p != '\n' && n < 2 * BOOT_ID_SIZE; p++) {
                unsigned v;

                if (*p == '-') {
                        continue;
                }
                if (*p >= '0' && *p <= '9') {
                        v = (unsigned)(*p - '0');
                } else if (*p >= 'a' && *p <= 'f') {
                        v = (unsigned)(*p - 'a' + 10);
                } else {
                        break;
                }
                ret[n / 2] |= (uint8_t)(n % 2 ? v : v << 4);
                n++;
        }
        if (n != 2 * BOOT_ID_SIZE) {
                memset(ret, 0, BOOT_ID_SIZE);
        }
}

typedef struct Writer {
        FILE *f;
        uint32_t crc;
        uint32_t table[256];
        bool failed;
        int error; /* errno of the write that failed, so a full disk says so */
} Writer;

static void w_bytes(Writer *w, const void *p, size_t n)
{
        if (w->failed || n == 0) {
                return;
        }
        if (fwrite(p, 1, n, w->f) != n) {
                w->failed = true;
                w->error = errno;
                return;
        }
        w->crc = crc32_update(w->table, w->crc, p, n);
}

static void w_uint(Writer *w, uint64_t v, unsigned size)
{
        uint8_t b[8];

        for (unsigned i = 0; i < size; i++) {
                b[i] = (uint8_t)(v >> (8 * i));
        }
        w_bytes(w, b, size);
}

static void w_interval(Writer *w, const Interval *iv, bool coarse)
{
        w_uint(w, iv->start_ns, 8);
        w_uint(w, iv->end_ns, 8);
        w_uint(w, iv->duration_ns, 8);
        if (coarse) {
                w_uint(w, iv->period_end_ns, 8);
        }
        w_uint(w, iv->size, 4);
        w_bytes(w, iv->blob, iv->size);
}

static void w_sum(Writer *w, const HistorySum *s, uint8_t *scratch)
{
        Interval iv = {
                .start_ns = s->start_ns,
                .end_ns = s->end_ns,
                .duration_ns = s->duration_ns,
                .period_end_ns = s->period_end_ns,
                .blob = scratch,
        };

        iv.size = (uint32_t)blob_encode(scratch, &s->slot, &s->attrib, s->intervals, s->stalls);
        w_interval(w, &iv, true);
}

/* Long because the checkpoint is written section by section in the order history_load() reads it
 */
int history_save(const History *h, const AttribTable *t, uint64_t hz, FILE *f)
{
        uint8_t boot_id[BOOT_ID_SIZE];
        size_t n_names, n_cpus = 0;
        unsigned max_id = 0;
        bool any_id = false;
        uint8_t *scratch;
        Writer w;

        if (!h || !t || !f) {
                return -EINVAL;
        }
        /* Every id in the history must have a name, or the file could not be read back. */
        n_names = attrib_table_size(t);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                const CpuHistory *c = h->cpus[cpu];

                if (!c) {
                        continue;
                }
                n_cpus++;
                for (size_t i = 0; i < c->total->attrib.n; i++) {
                        if (c->total->attrib.items[i].id >= max_id) {
                                max_id = c->total->attrib.items[i].id;
                        }
                        any_id = true;
                }
        }
        if (n_names > ATTRIB_MAX_SOURCES || (any_id && max_id >= n_names)) {
                return -EINVAL;
        }
        for (size_t i = 0; i < n_names; i++) {
                const char *name = attrib_table_name(t, (unsigned)i);

                if (!name || name[0] == '\0' || strlen(name) >= ATTRIB_NAME_MAX) {
                        return -EINVAL;
                }
        }
        scratch = malloc(BLOB_MAX);
        if (!scratch) {
                return -ENOMEM;
        }

        w = (Writer){.f = f};
        crc32_table_init(w.table);
        boot_id_read(boot_id);
        w_bytes(&w, CHECKPOINT_MAGIC, 8);
        w_uint(&w, CHECKPOINT_VERSION, 4);
        w_uint(&w, hz, 8);
        w_bytes(&w, boot_id, BOOT_ID_SIZE);
        w_uint(&w, n_names, 4);
        for (size_t i = 0; i < n_names; i++) {
                const char *name = attrib_table_name(t, (unsigned)i);
                size_t len = strlen(name);

                w_uint(&w, len, 1);
                w_bytes(&w, name, len);
        }
        w_uint(&w, n_cpus, 4);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                const CpuHistory *c = h->cpus[cpu];

                if (!c) {
                        continue;
                }
                w_uint(&w, (uint64_t)cpu, 4);
                w_sum(&w, c->total, scratch);
                w_sum(&w, c->pending, scratch);
                w_uint(&w, c->fine.n, 4);
                for (uint32_t i = 0; i < c->fine.n; i++) {
                        w_interval(&w, iring_at(&c->fine, i), false);
                }
                w_uint(&w, c->coarse.n, 4);
                for (uint32_t i = 0; i < c->coarse.n; i++) {
                        w_interval(&w, iring_at(&c->coarse, i), true);
                }
                w_uint(&w, c->ev_n, 4);
                for (uint32_t i = 0; i < c->ev_n; i++) {
                        const HistoryEvent *e = cpu_event(c, i);

                        w_uint(&w, e->start_ns, 8);
                        w_uint(&w, e->start_real_ns, 8);
                        w_uint(&w, e->duration_ns, 8);
                }
        }
        free(scratch);
        w_uint(&w, w.crc, 4);
        if (w.failed || ferror(f)) {
                return w.error > 0 ? -w.error : -EIO;
        }
        return 0;
}

typedef struct FileReader {
        FILE *f;
        uint32_t crc;
        uint32_t table[256];
        int error; /* 0, -EBADMSG (short or malformed) or -EIO */
} FileReader;

static void r_bytes(FileReader *r, void *p, size_t n)
{
        if (r->error == 0 && fread(p, 1, n, r->f) != n) {
                r->error = ferror(r->f) ? -EIO : -EBADMSG;
        }
        if (r->error != 0) {
                memset(p, 0, n);
                return;
        }
        r->crc = crc32_update(r->table, r->crc, p, n);
}

static uint64_t r_uint(FileReader *r, unsigned size)
{
        uint8_t b[8];
        uint64_t v = 0;

        r_bytes(r, b, size);
        for (unsigned i = 0; i < size; i++) {
                v |= (uint64_t)b[i] << (8 * i);
        }
        return v;
}

static void r_fail(FileReader *r)
{
        if (r->error == 0) {
                r->error = -EBADMSG;
        }
}

/* Reads one interval with a blob no longer than BLOB_MAX that decodes with @n_ids sources. */
static void r_interval(FileReader *r, bool coarse, unsigned n_ids, Interval *iv)
{
        uint64_t size;

        *iv = (Interval){0};
        iv->start_ns = r_uint(r, 8);
        iv->end_ns = r_uint(r, 8);
        iv->duration_ns = r_uint(r, 8);
        if (coarse) {
                iv->period_end_ns = r_uint(r, 8);
        }
        size = r_uint(r, 4);
        if (r->error != 0) {
                return;
        }
        if (size == 0 || size > BLOB_MAX) {
                r_fail(r);
                return;
        }
        iv->blob = malloc(size);
        if (!iv->blob) {
                r->error = -ENOMEM;
                return;
        }
        iv->size = (uint32_t)size;
        r_bytes(r, iv->blob, size);
        if (r->error == 0 && !blob_check(iv->blob, size, n_ids)) {
                r_fail(r);
        }
        if (r->error != 0) {
                free(iv->blob);
                iv->blob = NULL;
        }
}

/* One CPU as read from a checkpoint, before it is committed. */
typedef struct LoadCpu {
        CpuHistory *c; /* rings and events; no sums yet */
        Interval total, pending;
} LoadCpu;

typedef struct Loader {
        FileReader r;
        unsigned n_names;
        char names[ATTRIB_MAX_SOURCES][ATTRIB_NAME_MAX];
        uint16_t map[ATTRIB_MAX_SOURCES];
        LoadCpu cpus[CPU_SETSIZE];
} Loader;

static void loader_free(Loader *l)
{
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                cpu_free(l->cpus[cpu].c);
                free(l->cpus[cpu].total.blob);
                free(l->cpus[cpu].pending.blob);
        }
        free(l);
}

static void load_cpu(History *h, Loader *l)
{
        FileReader *r = &l->r;
        uint64_t cpu, n;
        LoadCpu *lc;
        CpuHistory *c;

        cpu = r_uint(r, 4);
        if (r->error != 0) {
                return;
        }
        if (cpu >= CPU_SETSIZE || l->cpus[cpu].c) {
                r_fail(r);
                return;
        }
        lc = &l->cpus[cpu];
        lc->c = c = cpu_alloc(h, false);
        if (!c) {
                r->error = -ENOMEM;
                return;
        }
        r_interval(r, true, l->n_names, &lc->total);
        r_interval(r, true, l->n_names, &lc->pending);

        n = r_uint(r, 4);
        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                Interval iv;

                r_interval(r, false, l->n_names, &iv);
                if (r->error != 0) {
                        break;
                }
                if (iv.duration_ns == 0 || iv.start_ns > UINT64_MAX - iv.duration_ns ||
                    iv.end_ns != iv.start_ns + iv.duration_ns ||
                    (c->fine.n > 0 && iv.start_ns < iring_at(&c->fine, c->fine.n - 1)->start_ns)) {
                        free(iv.blob);
                        r_fail(r);
                        break;
                }
                iring_push(c, &c->fine, &iv);
        }
        n = r_uint(r, 4);
        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                const Interval *last =
                        c->coarse.n > 0 ? iring_at(&c->coarse, c->coarse.n - 1) : NULL;
                Interval iv;

                r_interval(r, true, l->n_names, &iv);
                if (r->error != 0) {
                        break;
                }
                if (iv.start_ns > iv.end_ns || iv.period_end_ns <= iv.start_ns ||
                    (last &&
                     (iv.start_ns < last->start_ns || iv.period_end_ns <= last->period_end_ns))) {
                        free(iv.blob);
                        r_fail(r);
                        break;
                }
                iring_push(c, &c->coarse, &iv);
        }
        n = r_uint(r, 4);
        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                HistoryEvent ev = {.cpu = (int)cpu};

                ev.start_ns = r_uint(r, 8);
                ev.start_real_ns = r_uint(r, 8);
                ev.duration_ns = r_uint(r, 8);
                if (r->error == 0 && cpu_push_event(c, h->opt.events_per_cpu, &ev) < 0) {
                        r->error = -ENOMEM;
                }
        }
        /* Only a reset empties the fine ring, and it also forgets the last start. */
        c->have_last = c->fine.n > 0;
        c->last_start_ns = c->have_last ? iring_at(&c->fine, c->fine.n - 1)->start_ns : 0;
}

/* Turns an encoded sum from the checkpoint into @s, with ids through @map (NULL: unchanged). */
static void sum_decode(HistorySum *s, const Interval *iv, const uint16_t *map)
{
        BlobHeader b;

        sum_clear(s);
        blob_merge(iv->blob, iv->size, map, &s->slot, &s->attrib, s->pos, &b);
        s->intervals = b.intervals;
        s->stalls = b.stalls;
        s->start_ns = iv->start_ns;
        s->end_ns = iv->end_ns;
        s->duration_ns = iv->duration_ns;
        s->period_end_ns = iv->period_end_ns;
}

static int iring_remap(CpuHistory *c, IntervalRing *ring, const uint16_t *map, uint8_t *scratch)
{
        for (uint32_t i = 0; i < ring->n; i++) {
                Interval *iv = &ring->items[(ring->head + i) % ring->cap];
                size_t size = blob_remap(iv->blob, iv->size, map, scratch);
                uint8_t *blob;

                /* Only a padded blob written by something else grows this much; it could not
                 * be saved again. */
                if (size > BLOB_MAX) {
                        return -EBADMSG;
                }
                blob = malloc(size);
                if (!blob) {
                        return -ENOMEM;
                }
                memcpy(blob, scratch, size);
                c->blob_bytes += usable(blob) - usable(iv->blob);
                free(iv->blob);
                iv->blob = blob;
                iv->size = (uint32_t)size;
        }
        return 0;
}

/* Makes the CPUs read by @l usable: source ids into @map's numbering, sums decoded. Nothing
 * of the history is touched. */
static int loader_finish(Loader *l, const uint16_t *map, uint8_t *scratch)
{
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                LoadCpu *lc = &l->cpus[cpu];
                CpuHistory *c = lc->c;
                int r;

                if (!c) {
                        continue;
                }
                if (map) {
                        r = iring_remap(c, &c->fine, map, scratch);
                        if (r < 0) {
                                return r;
                        }
                        r = iring_remap(c, &c->coarse, map, scratch);
                        if (r < 0) {
                                return r;
                        }
                }
                c->total = malloc(sizeof(HistorySum));
                c->pending = malloc(sizeof(HistorySum));
                if (!c->total || !c->pending) {
                        return -ENOMEM;
                }
                sum_decode(c->total, &lc->total, map);
                sum_decode(c->pending, &lc->pending, map);
        }
        return 0;
}

static bool hz_matches(uint64_t a, uint64_t b)
{
        uint64_t diff = a > b ? a - b : b - a;

        /* |a - b| / b <= 100 ppm, without overflow or float. */
        return (unsigned __int128)diff * 1000000u <= (unsigned __int128)b * 100u;
}

/* Long because each section of the checkpoint is checked in the order it is read; a bad one
 * refuses the whole file. */
int history_load(History *h, AttribTable *t, uint64_t hz, FILE *f)
{
        uint8_t magic[8], file_boot[BOOT_ID_SIZE], boot[BOOT_ID_SIZE], zero[BOOT_ID_SIZE] = {0};
        uint64_t version, file_hz, n, crc;
        bool identity = true;
        uint8_t *remap = NULL;
        FileReader *r;
        Loader *l;
        int ret;

        if (!h || !t || !f || hz == 0) {
                return -EINVAL;
        }
        l = calloc(1, sizeof(*l));
        if (!l) {
                return -ENOMEM;
        }
        r = &l->r;
        r->f = f;
        crc32_table_init(r->table);

        r_bytes(r, magic, sizeof(magic));
        version = r_uint(r, 4);
        if (r->error == 0 &&
            (memcmp(magic, CHECKPOINT_MAGIC, 8) != 0 || version != CHECKPOINT_VERSION)) {
                r_fail(r);
        }
        file_hz = r_uint(r, 8);
        r_bytes(r, file_boot, BOOT_ID_SIZE);
        n = r_uint(r, 4);
        if (n > ATTRIB_MAX_SOURCES) {
                r_fail(r);
        }
        l->n_names = (unsigned)n;
        for (unsigned i = 0; i < l->n_names && r->error == 0; i++) {
                uint64_t len = r_uint(r, 1);

                if (len == 0 || len >= ATTRIB_NAME_MAX) {
                        r_fail(r);
                        break;
                }
                r_bytes(r, l->names[i], len);
                l->names[i][len] = '\0';
                if (strlen(l->names[i]) != len) {
                        r_fail(r);
                }
        }
        n = r_uint(r, 4);
        if (n > CPU_SETSIZE) {
                r_fail(r);
        }
        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                load_cpu(h, l);
        }
        crc = r->crc;
        if (r->error == 0 && (r_uint(r, 4) != crc || fgetc(f) != EOF)) {
                r_fail(r);
        }
        if (r->error != 0) {
                ret = r->error;
                goto out;
        }

        /* A sound file; now whether its ticks and times mean the same here. */
        boot_id_read(boot);
        if (!hz_matches(file_hz, hz) ||
            (memcmp(file_boot, zero, BOOT_ID_SIZE) != 0 && memcmp(boot, zero, BOOT_ID_SIZE) != 0 &&
             memcmp(file_boot, boot, BOOT_ID_SIZE) != 0)) {
                ret = -ESTALE;
                goto out;
        }
        for (unsigned i = 0; i < l->n_names; i++) {
                int id = attrib_table_id(t, l->names[i]);

                if (id < 0) {
                        ret = id;
                        goto out;
                }
                l->map[i] = (uint16_t)id;
                identity = identity && id == (int)i;
        }
        if (!identity) {
                remap = malloc(BLOB_REMAP_MAX);
                if (!remap) {
                        ret = -ENOMEM;
                        goto out;
                }
        }
        ret = loader_finish(l, identity ? NULL : l->map, remap);
        if (ret < 0) {
                goto out;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                cpu_free(h->cpus[cpu]);
                h->cpus[cpu] = l->cpus[cpu].c;
                l->cpus[cpu].c = NULL;
        }
        ret = 0;
out:
        free(remap);
        loader_free(l);
        return ret;
}

#include "history.h"
#include "history-internal.h"
#include "host.h"
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep a mistaken option or a hostile checkpoint from asking for absurd memory. */
#define HISTORY_MAX_ENTRIES (1u << 20)
#define HISTORY_MAX_EVENTS (1u << 22)

/* Longest LEB128 encodings of a 64-bit and a 128-bit value. */
#define VARINT64_MAX 10
#define VARINT128_MAX 19

/* Worst case of one encoded interval: every field at its longest, every bucket non-empty and
 * every source moved. A realistic one is a few hundred bytes to a few KiB. */
#define BLOB_HEADER_MAX (6 * VARINT64_MAX + 2 * (3 * VARINT64_MAX + 2 * VARINT128_MAX))
#define BLOB_ATTRIB_MAX (VARINT64_MAX + ATTRIB_MAX_SOURCES * 2 * VARINT64_MAX)
#define BLOB_HIST_MAX (HIST_BUCKETS * (VARINT128_MAX + VARINT64_MAX) + 1)
#define BLOB_MAX (BLOB_HEADER_MAX + BLOB_ATTRIB_MAX + 3 * BLOB_HIST_MAX)
#define BLOB_REMAP_MAX (BLOB_MAX + BLOB_ATTRIB_MAX)

#define CHECKPOINT_MAGIC "JTRDHIST"
#define BOOT_ID_SIZE 16

/* --- resolutions ---------------------------------------------------------------------------- *
 *
 * A histogram is kept at the probe's resolution (HIST_SUB_BITS, HIST_BUCKETS buckets) or at
 * the coarse one (HISTORY_COARSE_SUB_BITS, COARSE_BUCKETS buckets). Every fine bucket lies in
 * exactly one coarse bucket (both split each power of two evenly, the fine one finer), so
 * folding fine counts into coarse buckets is exact at the coarse resolution. */

#define COARSE_BUCKETS ((64 - HISTORY_COARSE_SUB_BITS + 1) << HISTORY_COARSE_SUB_BITS)

typedef enum Res {
        RES_FINE,
        RES_COARSE,
} Res;

static uint16_t fine_to_coarse[HIST_BUCKETS];
static uint16_t coarse_to_fine[COARSE_BUCKETS]; /* the highest fine bucket of each */
static pthread_once_t res_once = PTHREAD_ONCE_INIT;

static unsigned coarse_index(uint64_t v)
{
        unsigned msb, shift;

        if (v < (2u << HISTORY_COARSE_SUB_BITS)) {
                return (unsigned)v;
        }
        msb = 63u - (unsigned)__builtin_clzll(v);
        shift = msb - HISTORY_COARSE_SUB_BITS;
        return (shift << HISTORY_COARSE_SUB_BITS) + (unsigned)(v >> shift);
}

static void res_tables_init(void)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                fine_to_coarse[i] = (uint16_t)coarse_index(histogram_bucket_lower(i));
                coarse_to_fine[fine_to_coarse[i]] = (uint16_t)i; /* the last one is the highest */
        }
}

static inline unsigned res_buckets(Res res)
{
        return res == RES_FINE ? HIST_BUCKETS : COARSE_BUCKETS;
}

static inline unsigned res_bits(Res res)
{
        return res == RES_FINE ? HIST_SUB_BITS : HISTORY_COARSE_SUB_BITS;
}

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

        if (r->p < r->end && *r->p < 0x80) {
                return *r->p++;
        }
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

        if (r->p < r->end && *r->p < 0x80) {
                return *r->p++;
        }
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

/* --- running sums --------------------------------------------------------------------------- *
 *
 * A Sum adds up intervals: the totals since start, the coarse period being filled, and each
 * standard window. Its histograms and attribution are dense arrays, so an interval is added or
 * taken out bucket by bucket, in time proportional to the buckets it fills. Everything adds
 * modulo 2^64 (2^128 for the sums of values and squares, as the probe's own sums do), so a
 * subtraction undoes its addition exactly. Minima, maxima and time edges are only merged,
 * never undone: they hold for the totals and the pending period; a window takes its own from
 * the queues of its ring. */

/* The buckets of one histogram a sum has held so far: lo .. lo + n - 1, both multiples of 4.
 * A real CPU fills a few hundred of its 1920 (values from its loop's period to its longest
 * interruption), so a sum holds those, grown as needed and never shrunk. */
typedef struct Range {
        uint32_t lo, n;
        uint64_t *c;
} Range;

typedef struct Sum {
        Res res;
        uint32_t coarser; /* intervals in it kept at a coarser resolution than res */
        uint64_t intervals, stalls;
        uint64_t start_ns, end_ns, duration_ns;
        uint64_t period_end_ns; /* the pending period only: where it ends */
        uint64_t start_ticks, end_ticks, lost_ticks, events;
        Stats gap;
        SignedStats dd;
        uint64_t *attrib; /* ATTRIB_MAX_SOURCES counts, by source id */
        Range hist[3];    /* gap, dd negative, dd positive, in buckets of res */
} Sum;

/* Makes @r hold buckets @lo..@hi (and what it held). Returns 0 or -ENOMEM (@r unchanged). */
static int range_reserve(Range *r, unsigned lo, unsigned hi)
{
        unsigned new_lo, new_hi;
        uint64_t *c;

        if (r->n > 0 && lo >= r->lo && hi < r->lo + r->n) {
                return 0;
        }
        new_lo = lo & ~3u;
        new_hi = (hi | 3u) + 1;
        if (r->n > 0) {
                new_lo = r->lo < new_lo ? r->lo : new_lo;
                new_hi = r->lo + r->n > new_hi ? r->lo + r->n : new_hi;
        }
        c = calloc(new_hi - new_lo, sizeof(uint64_t));
        if (!c) {
                return -ENOMEM;
        }
        if (r->n > 0) {
                memcpy(c + (r->lo - new_lo), r->c, r->n * sizeof(uint64_t));
        }
        free(r->c);
        r->c = c;
        r->lo = new_lo;
        r->n = new_hi - new_lo;
        return 0;
}

/* Empties @s, keeping its resolution and the room it has. */
static void sum_clear(Sum *s)
{
        Sum keep = *s;

        *s = (Sum){.res = keep.res, .attrib = keep.attrib};
        memcpy(s->hist, keep.hist, sizeof(s->hist));
        stats_init(&s->gap);
        signed_stats_init(&s->dd);
        memset(s->attrib, 0, ATTRIB_MAX_SOURCES * sizeof(uint64_t));
        for (unsigned k = 0; k < 3; k++) {
                if (s->hist[k].n > 0) {
                        memset(s->hist[k].c, 0, s->hist[k].n * sizeof(uint64_t));
                }
        }
}

/* An empty sum; its attribution in the same allocation, its histograms' room added as it is
 * needed (sum_free() frees it all). */
static Sum *sum_new(Res res)
{
        Sum *s = malloc(sizeof(Sum) + ATTRIB_MAX_SOURCES * sizeof(uint64_t));

        if (s) {
                *s = (Sum){.res = res, .attrib = (uint64_t *)(s + 1)};
                sum_clear(s);
        }
        return s;
}

static Sum *sum_free(Sum *s)
{
        for (unsigned k = 0; s && k < 3; k++) {
                free(s->hist[k].c);
        }
        free(s);
        return NULL;
}

/* The fields of a blob before its attribution and histograms. */
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

/* Whether an interval with header @b takes part in a merge: slot_merge() skips a slot
 * with neither samples nor events, and so does every sum here, both ways. */
static inline bool header_has_data(const BlobHeader *b)
{
        return b->gap.count != 0 || b->events != 0;
}

/* Adds (or with @subtract takes out) the header @b of an interval of @duration_ns that
 * covered [@start_ns, @end_ns). */
static void sum_apply_header(Sum *s, const BlobHeader *b, uint64_t start_ns, uint64_t end_ns,
                             uint64_t duration_ns, bool subtract)
{
        uint64_t sign = subtract ? UINT64_MAX : 1; /* -1 or +1 modulo 2^64 */
        bool data = header_has_data(b);

        if (!subtract) {
                if (s->intervals == 0 || start_ns < s->start_ns) {
                        s->start_ns = start_ns;
                }
                s->end_ns = end_ns > s->end_ns ? end_ns : s->end_ns;
        }
        s->intervals += sign * b->intervals;
        s->stalls += sign * b->stalls;
        s->duration_ns += sign * duration_ns;
        if (!data) {
                return;
        }
        if (!subtract) {
                if (s->start_ticks == 0 ||
                    (b->start_ticks != 0 && b->start_ticks < s->start_ticks)) {
                        s->start_ticks = b->start_ticks;
                }
                s->end_ticks = b->end_ticks > s->end_ticks ? b->end_ticks : s->end_ticks;
                s->gap.min = b->gap.min < s->gap.min ? b->gap.min : s->gap.min;
                s->gap.max = b->gap.max > s->gap.max ? b->gap.max : s->gap.max;
                s->dd.min = b->dd.min < s->dd.min ? b->dd.min : s->dd.min;
                s->dd.max = b->dd.max > s->dd.max ? b->dd.max : s->dd.max;
        }
        s->lost_ticks += sign * b->lost_ticks;
        s->events += sign * b->events;
        s->gap.count += sign * b->gap.count;
        s->dd.count += sign * b->dd.count;
        if (subtract) {
                s->gap.sum -= b->gap.sum;
                s->gap.sumsq -= b->gap.sumsq;
                s->dd.sum = (__int128)((unsigned __int128)s->dd.sum - (unsigned __int128)b->dd.sum);
                s->dd.sumsq -= b->dd.sumsq;
        } else {
                s->gap.sum += b->gap.sum;
                s->gap.sumsq += b->gap.sumsq;
                s->dd.sum = (__int128)((unsigned __int128)s->dd.sum + (unsigned __int128)b->dd.sum);
                s->dd.sumsq += b->dd.sumsq;
        }
}

/* Adds the whole of @src into @dst (same resolution): the pending period into a long window
 * rebuilt from a checkpoint. Returns 0 or -ENOMEM (@dst unchanged). */
static int sum_add_sum(Sum *dst, const Sum *src)
{
        BlobHeader b = {
                .intervals = src->intervals,
                .stalls = src->stalls,
                .lost_ticks = src->lost_ticks,
                .events = src->events,
                .start_ticks = src->start_ticks,
                .end_ticks = src->end_ticks,
                .gap = src->gap,
                .dd = src->dd,
        };

        assert(dst->res == src->res);
        for (unsigned k = 0; k < 3; k++) {
                const Range *r = &src->hist[k];

                if (r->n > 0 && range_reserve(&dst->hist[k], r->lo, r->lo + r->n - 1) < 0) {
                        return -ENOMEM;
                }
        }
        sum_apply_header(dst, &b, src->start_ns, src->end_ns, src->duration_ns, false);
        dst->coarser += src->coarser;
        for (unsigned i = 0; i < ATTRIB_MAX_SOURCES; i++) {
                dst->attrib[i] += src->attrib[i];
        }
        for (unsigned k = 0; k < 3; k++) {
                const Range *r = &src->hist[k];
                Range *d = &dst->hist[k];

                for (unsigned i = 0; i < r->n; i++) {
                        d->c[r->lo - d->lo + i] += r->c[i];
                }
        }
        return 0;
}

/* --- interval blobs ------------------------------------------------------------------------ *
 *
 * Layout, every number a LEB128 varint (signed ones zigzagged):
 *   intervals stalls lost_ticks events start_ticks (end_ticks - start_ticks mod 2^64)
 *   gap: count min max sum sumsq          dd: count min max sum sumsq
 *   attribution: n, then n × (id, count)
 *   gap_hist, dd_hist.neg, dd_hist.pos: for each non-empty bucket a token (count << 1 | skip),
 *   followed when skip is set by the number of empty buckets skipped minus one; a 0 token
 *   ends the histogram. Bucket numbers are those of the blob's resolution, which its owner
 *   knows (Interval.res; the totals fine, the pending period coarse).
 * The attribution comes before the histograms so per-interval timelines never scan those. */

/* Encodes the histogram whose buckets @r holds (the others are empty). */
static uint8_t *put_hist(uint8_t *p, const Range *r)
{
        const uint64_t *counts = r->c;
        unsigned next = 0;

        for (unsigned i = 0; i < r->n; i++) {
                uint64_t c = counts[i];
                unsigned skip, at = r->lo + i;

                /* Most buckets are empty: skip them four at a time (n is a multiple of 4). */
                if ((i & 3) == 0 && (c | counts[i + 1] | counts[i + 2] | counts[i + 3]) == 0) {
                        i += 3;
                        continue;
                }
                if (c == 0) {
                        continue;
                }
                skip = at != next;
                if (c < (UINT64_C(1) << 63)) {
                        p = put_u64(p, c << 1 | skip);
                } else {
                        p = put_u128(p, (unsigned __int128)c << 1 | skip);
                }
                if (skip) {
                        p = put_u64(p, at - next - 1);
                }
                next = at + 1;
        }
        *p++ = 0;
        return p;
}

static uint8_t *put_header(uint8_t *p, const BlobHeader *b)
{
        p = put_u64(p, b->intervals);
        p = put_u64(p, b->stalls);
        p = put_u64(p, b->lost_ticks);
        p = put_u64(p, b->events);
        p = put_u64(p, b->start_ticks);
        p = put_u64(p, b->end_ticks - b->start_ticks);
        p = put_u64(p, b->gap.count);
        p = put_u64(p, b->gap.min);
        p = put_u64(p, b->gap.max);
        p = put_u128(p, b->gap.sum);
        p = put_u128(p, b->gap.sumsq);
        p = put_u64(p, b->dd.count);
        p = put_u64(p, zigzag64(b->dd.min));
        p = put_u64(p, zigzag64(b->dd.max));
        p = put_u128(p, zigzag128(b->dd.sum));
        return put_u128(p, b->dd.sumsq);
}

/* Encodes @b, the attribution (from @delta, or the dense counts @dense; either may be NULL)
 * and the three histograms @hist into @buf, which has the room blob_bound() says (at most
 * BLOB_MAX bytes). Returns the size. */
static size_t blob_encode(uint8_t *buf, const BlobHeader *b, const AttribDelta *delta,
                          const uint64_t *dense, const Range hist[3])
{
        uint8_t *p = put_header(buf, b), *count_at;
        size_t n = 0;

        /* The number of moved sources is known only after skipping the zero ones; it fits one
         * or two bytes, so encode it as exactly two (a padded varint). */
        count_at = p;
        p += 2;
        for (size_t i = 0; delta && i < delta->n; i++) {
                if (delta->items[i].count != 0) {
                        p = put_u64(p, delta->items[i].id);
                        p = put_u64(p, delta->items[i].count);
                        n++;
                }
        }
        for (unsigned id = 0; dense && id < ATTRIB_MAX_SOURCES; id++) {
                if (dense[id] != 0) {
                        p = put_u64(p, id);
                        p = put_u64(p, dense[id]);
                        n++;
                }
        }
        assert(n <= ATTRIB_MAX_SOURCES);
        count_at[0] = (uint8_t)((n & 0x7f) | 0x80);
        count_at[1] = (uint8_t)(n >> 7);
        for (unsigned k = 0; k < 3; k++) {
                p = put_hist(p, &hist[k]);
        }
        assert((size_t)(p - buf) <= BLOB_MAX);
        return (size_t)(p - buf);
}

/* Encodes one harvested slot as a fine interval. */
static size_t blob_encode_slot(uint8_t *buf, const ProbeSlot *s, bool stalled,
                               const AttribDelta *attrib)
{
        const BlobHeader b = {
                .intervals = 1,
                .stalls = stalled,
                .lost_ticks = s->lost_ticks,
                .events = s->events,
                .start_ticks = s->start_ticks,
                .end_ticks = s->end_ticks,
                .gap = s->gap,
                .dd = s->dd,
        };
        const Range hist[3] = {
                {0, HIST_BUCKETS, (uint64_t *)s->gap_hist.counts},
                {0, HIST_BUCKETS, (uint64_t *)s->dd_hist.neg.counts},
                {0, HIST_BUCKETS, (uint64_t *)s->dd_hist.pos.counts},
        };

        return blob_encode(buf, &b, attrib, NULL, hist);
}

/* Encodes a sum (the totals, the pending period) at its resolution. */
static size_t blob_encode_sum(uint8_t *buf, const Sum *s)
{
        const BlobHeader b = {
                .intervals = s->intervals,
                .stalls = s->stalls,
                .lost_ticks = s->lost_ticks,
                .events = s->events,
                .start_ticks = s->start_ticks,
                .end_ticks = s->end_ticks,
                .gap = s->gap,
                .dd = s->dd,
        };
        return blob_encode(buf, &b, NULL, s->attrib, s->hist);
}

/* Non-empty buckets of @counts (@nb of them, a multiple of 4): the tokens put_hist() writes. */
static size_t hist_nonzero(const uint64_t *counts, unsigned nb)
{
        size_t n = 0;

        for (unsigned i = 0; i < nb; i += 4) {
                if ((counts[i] | counts[i + 1] | counts[i + 2] | counts[i + 3]) != 0) {
                        n += (counts[i] != 0) + (counts[i + 1] != 0) + (counts[i + 2] != 0) +
                             (counts[i + 3] != 0);
                }
        }
        return n;
}

/* The room blob_encode() needs at most for @n_attrib sources and @buckets non-empty buckets:
 * a few KiB for a real interval, where the worst case of any (BLOB_MAX) is 180 KiB. */
static size_t blob_bound(size_t n_attrib, size_t buckets)
{
        return BLOB_HEADER_MAX + 2 + n_attrib * 2 * VARINT64_MAX +
               buckets * (VARINT128_MAX + VARINT64_MAX) + 3;
}

static size_t slot_bound(const ProbeSlot *s, const AttribDelta *a)
{
        return blob_bound(a ? a->n : 0, hist_nonzero(s->gap_hist.counts, HIST_BUCKETS) +
                                                hist_nonzero(s->dd_hist.neg.counts, HIST_BUCKETS) +
                                                hist_nonzero(s->dd_hist.pos.counts, HIST_BUCKETS));
}

static size_t sum_bound(const Sum *s)
{
        size_t buckets = 0;

        for (unsigned k = 0; k < 3; k++) {
                buckets += hist_nonzero(s->hist[k].c, s->hist[k].n);
        }
        return blob_bound(hist_nonzero(s->attrib, ATTRIB_MAX_SOURCES), buckets);
}

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

/* The next non-empty bucket of a histogram being read, whose buckets are below @nb: its index
 * into @ret_idx and count into @ret_count. Returns false at the end of the histogram or on
 * malformed input (then r->bad is set). */
static bool hist_next(Reader *r, unsigned *next, unsigned nb, unsigned *ret_idx,
                      uint64_t *ret_count)
{
        unsigned __int128 token = get_u128(r);
        unsigned idx = *next;

        if (token == 0 || r->bad) {
                return false;
        }
        if ((token >> 1) > UINT64_MAX) {
                r->bad = true;
                return false;
        }
        if (token & 1) {
                uint64_t skip = get_u64(r);

                if (skip >= nb) {
                        r->bad = true;
                        return false;
                }
                idx += (unsigned)skip + 1;
        }
        if (idx >= nb) {
                r->bad = true;
                return false;
        }
        *ret_idx = idx;
        *ret_count = (uint64_t)(token >> 1);
        *next = idx + 1;
        return true;
}

/* Reads how many (id, count) pairs of attribution follow. */
static uint64_t attrib_count(Reader *r)
{
        uint64_t n = get_u64(r);

        if (n > ATTRIB_MAX_SOURCES) {
                r->bad = true;
                return 0;
        }
        return n;
}

/* --- stored intervals ---------------------------------------------------------------------- */

/* One stored interval. Times stay outside the blob so windows are selected without decoding;
 * the blob holds the rest of the ProbeSlot, its attribution and how many fine intervals and
 * stalls it holds. */
typedef struct Interval {
        uint64_t start_ns;
        uint64_t end_ns;
        uint64_t duration_ns;   /* time actually covered: the sum of the fine durations */
        uint64_t period_end_ns; /* coarse: end of its coarse period; fine: 0 */
        uint8_t *blob;
        uint32_t size;
        uint8_t res; /* Res of its histograms */
} Interval;

/* The table that maps buckets of resolution @from to @to, or NULL when they are the same. */
static const uint16_t *res_table(Res from, Res to)
{
        if (from == to) {
                return NULL;
        }
        return from == RES_FINE ? fine_to_coarse : coarse_to_fine;
}

/* Adds (or takes out) @m bucket counts @count at @idx, through @table (NULL: as they are),
 * to the histogram @r, which has room for them (interval_reserve()). */
static void hist_apply(Range *r, const unsigned *idx, const uint64_t *count, unsigned m,
                       const uint16_t *table, bool subtract)
{
        uint64_t sign = subtract ? UINT64_MAX : 1; /* -1 or +1 modulo 2^64 */

        if (m == 0) {
                return;
        }
        /* Indexes rise, and so do their mapped ones: the first and last say all are inside. */
        assert((table ? table[idx[0]] : idx[0]) >= r->lo &&
               (table ? table[idx[m - 1]] : idx[m - 1]) < r->lo + r->n);
        if (table) {
                for (unsigned i = 0; i < m; i++) {
                        r->c[table[idx[i]] - r->lo] += sign * count[i];
                }
        } else {
                for (unsigned i = 0; i < m; i++) {
                        r->c[idx[i] - r->lo] += sign * count[i];
                }
        }
}

/* Makes room in the histogram @h of each of the @n sums @sums for the buckets @lo..@hi of
 * resolution @res. Returns 0 or -ENOMEM (what room was made stays, and is harmless). */
static int sums_reserve(Sum *const *sums, unsigned n, unsigned h, Res res, unsigned lo, unsigned hi)
{
        for (unsigned k = 0; k < n; k++) {
                const uint16_t *table = res_table(res, sums[k]->res);

                if (range_reserve(&sums[k]->hist[h], table ? table[lo] : lo,
                                  table ? table[hi] : hi) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* Makes room in each of the @n sums @sums for the buckets of the interval @iv, before it is
 * added (taking it out needs none: it is there). Returns 0 or -ENOMEM. */
static int interval_reserve(const Interval *iv, Sum *const *sums, unsigned n)
{
        Reader r = {iv->blob, iv->blob + iv->size, false};
        const unsigned nb = res_buckets((Res)iv->res);
        uint64_t n_attrib, count;
        BlobHeader b;

        blob_read_header(&r, &b);
        n_attrib = attrib_count(&r);
        for (uint64_t i = 0; i < 2 * n_attrib; i++) {
                (void)get_u64(&r);
        }
        for (unsigned h = 0; h < 3; h++) {
                unsigned next = 0, idx, lo = UINT_MAX, hi = 0;

                while (hist_next(&r, &next, nb, &idx, &count)) {
                        lo = idx < lo ? idx : lo;
                        hi = idx;
                }
                if (lo != UINT_MAX && header_has_data(&b) &&
                    sums_reserve(sums, n, h, (Res)iv->res, lo, hi) < 0) {
                        return -ENOMEM;
                }
        }
        assert(!r.bad && r.p == r.end);
        return 0;
}

/* The same for a slot about to be added as a fine interval, from its arrays: the first and
 * last non-empty bucket of each histogram are found from the ends, without decoding. */
static int slot_reserve(const ProbeSlot *s, Sum *const *sums, unsigned n)
{
        const uint64_t *hist[3] = {s->gap_hist.counts, s->dd_hist.neg.counts,
                                   s->dd_hist.pos.counts};

        if (s->gap.count == 0 && s->events == 0) {
                return 0; /* no sum takes its histograms (header_has_data()) */
        }
        for (unsigned h = 0; h < 3; h++) {
                unsigned lo = 0, hi = HIST_BUCKETS;

                while (lo < HIST_BUCKETS && hist[h][lo] == 0) {
                        lo++;
                }
                while (hi > lo && hist[h][hi - 1] == 0) {
                        hi--;
                }
                if (lo < hi && sums_reserve(sums, n, h, RES_FINE, lo, hi - 1) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* Adds the interval @iv to the @n sums @sums (or takes it out of them, with @subtract), its
 * source ids through @map (NULL: unchanged): decoded once for all of them. @iv's blob is ours
 * or was checked by blob_check(); the sums have room for it (interval_reserve()). Returns its
 * header in @ret (may be NULL). */
static void interval_apply(const Interval *iv, const uint16_t *map, Sum *const *sums, unsigned n,
                           bool subtract, BlobHeader *ret)
{
        Reader r = {iv->blob, iv->blob + iv->size, false};
        const unsigned nb = res_buckets((Res)iv->res);
        unsigned idx[HIST_BUCKETS];
        uint64_t n_attrib, count[HIST_BUCKETS];
        BlobHeader b;
        bool data;

        blob_read_header(&r, &b);
        data = header_has_data(&b);
        for (unsigned k = 0; k < n; k++) {
                sum_apply_header(sums[k], &b, iv->start_ns, iv->end_ns, iv->duration_ns, subtract);
                if (iv->res != RES_FINE && sums[k]->res == RES_FINE) {
                        sums[k]->coarser += subtract ? -1u : 1u;
                }
        }
        n_attrib = attrib_count(&r);
        for (uint64_t i = 0; i < n_attrib; i++) {
                uint64_t id = get_u64(&r), c = get_u64(&r);

                assert(id < ATTRIB_MAX_SOURCES);
                id = map ? map[id] : id;
                for (unsigned k = 0; k < n; k++) {
                        sums[k]->attrib[id] += subtract ? 0 - c : c;
                }
        }
        for (unsigned h = 0; h < 3; h++) {
                unsigned next = 0, m = 0;

                /* Decoded once, then added to each sum in a loop of its own. */
                while (hist_next(&r, &next, nb, &idx[m], &count[m])) {
                        m++;
                }
                for (unsigned k = 0; data && k < n; k++) {
                        hist_apply(&sums[k]->hist[h], idx, count, m,
                                   res_table((Res)iv->res, sums[k]->res), subtract);
                }
        }
        assert(!r.bad && r.p == r.end);
        if (ret) {
                *ret = b;
        }
}

/* Whether @blob is well-formed at resolution @res, with attribution ids below @n_ids. */
static bool blob_check(const uint8_t *blob, size_t size, Res res, unsigned n_ids)
{
        /* Far beyond any real sum (2^40 samples of 2^50 ticks), and far enough from 2^127
         * that merging a million of them cannot overflow the signed sum. */
        const __int128 sum_max = (__int128)1 << 100;
        Reader r = {blob, blob + size, false};
        uint64_t n, count;
        unsigned idx;
        BlobHeader b;

        blob_read_header(&r, &b);
        if (b.dd.sum > sum_max || b.dd.sum < -sum_max) {
                return false;
        }
        n = attrib_count(&r);
        for (uint64_t i = 0; i < n && !r.bad; i++) {
                if (get_u64(&r) >= n_ids) {
                        return false;
                }
                (void)get_u64(&r);
        }
        for (unsigned h = 0; h < 3 && !r.bad; h++) {
                unsigned next = 0;

                while (hist_next(&r, &next, res_buckets(res), &idx, &count)) {
                }
        }
        return !r.bad && r.p == r.end;
}

/* Re-encodes a checked fine-resolution blob at the coarse resolution into @out (@size bytes:
 * the result is never longer): the header and attribution as they are, each histogram folded
 * bucket by bucket (fine buckets come in order, so each coarse bucket is complete when the
 * next begins). Returns the new size. */
static size_t blob_fold(const uint8_t *blob, size_t size, uint8_t *out)
{
        Reader r = {blob, blob + size, false};
        uint64_t n, count, acc[COARSE_BUCKETS];
        uint8_t *p = out;
        unsigned idx;
        BlobHeader b;

        blob_read_header(&r, &b);
        n = attrib_count(&r);
        for (uint64_t i = 0; i < 2 * n; i++) {
                (void)get_u64(&r);
        }
        memcpy(p, blob, (size_t)(r.p - blob));
        p += r.p - blob;
        for (unsigned h = 0; h < 3; h++) {
                unsigned next = 0;

                memset(acc, 0, sizeof(acc));
                while (hist_next(&r, &next, HIST_BUCKETS, &idx, &count)) {
                        acc[fine_to_coarse[idx]] += count;
                }
                p = put_hist(p, &(Range){0, COARSE_BUCKETS, acc});
        }
        assert(!r.bad && r.p == r.end && (size_t)(p - out) <= size);
        return (size_t)(p - out);
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

/* The extremes a window keeps in monotonic queues, each as a score whose maximum over the
 * window is the extreme wanted (a minimum is kept as the maximum of its complement, a signed
 * value with its sign bit flipped). */
enum {
        KEY_GAP_MIN,
        KEY_GAP_MAX,
        KEY_DD_MIN,
        KEY_DD_MAX,
        KEY_START_TICKS, /* the earliest non-zero start_ticks */
        KEY_END_TICKS,
        KEY_END_NS,
        KEYS,
};

static inline uint64_t signed_score(int64_t v)
{
        return (uint64_t)v ^ (UINT64_C(1) << 63);
}

/* The scores of @iv into @score. Returns the keys it takes part in, a bit each: the ones of
 * the samples only when a merge would take it (header_has_data()). */
static unsigned interval_scores(const Interval *iv, uint64_t score[KEYS])
{
        Reader r = {iv->blob, iv->blob + iv->size, false};
        unsigned keys = 1u << KEY_END_NS;
        BlobHeader b;

        blob_read_header(&r, &b);
        score[KEY_GAP_MIN] = ~b.gap.min;
        score[KEY_GAP_MAX] = b.gap.max;
        score[KEY_DD_MIN] = ~signed_score(b.dd.min);
        score[KEY_DD_MAX] = signed_score(b.dd.max);
        score[KEY_START_TICKS] = ~b.start_ticks;
        score[KEY_END_TICKS] = b.end_ticks;
        score[KEY_END_NS] = iv->end_ns;
        if (header_has_data(&b)) {
                keys |= 1u << KEY_GAP_MIN | 1u << KEY_GAP_MAX | 1u << KEY_DD_MIN |
                        1u << KEY_DD_MAX | 1u << KEY_END_TICKS;
                keys |= b.start_ticks != 0 ? 1u << KEY_START_TICKS : 0;
        }
        return keys;
}

/* --- rings of intervals with their queues -------------------------------------------------- *
 *
 * The fine and the coarse intervals of a CPU each live in a ring, oldest first, numbered by a
 * sequence number (uint32_t, wrapping; never more than 2^20 alive). A window is a suffix of a
 * ring: its intervals from some sequence number to the newest. For each key, the ring keeps a
 * monotonic queue of sequence numbers: the intervals whose score is above that of every later
 * one. The best score of any suffix is then the first queue entry at or after the suffix's
 * start, found by bisection; a new interval pops the entries it beats from the back, an
 * interval leaving the ring pops itself from the front: amortised constant time. */

typedef struct Queue {
        uint32_t head, n;
} Queue;

typedef struct IntervalRing {
        Interval *items;
        uint32_t *qseq; /* KEYS queues of cap entries each */
        Queue q[KEYS];
        uint32_t cap, head, n;
        uint32_t end_seq; /* the sequence number the next interval gets */
} IntervalRing;

static inline uint32_t ring_first_seq(const IntervalRing *r)
{
        return r->end_seq - r->n;
}

/* The interval of sequence number @seq, which the ring holds. */
static inline Interval *ring_seq(const IntervalRing *r, uint32_t seq)
{
        uint32_t i = seq - ring_first_seq(r);

        assert(i < r->n);
        return &r->items[(r->head + i) % r->cap];
}

static inline uint32_t *queue_at(const IntervalRing *r, unsigned key, uint32_t i)
{
        return &r->qseq[(size_t)key * r->cap + (r->q[key].head + i) % r->cap];
}

/* Appends @seq, whose score for @key is @score, dropping the entries it beats. */
static void queue_push(IntervalRing *r, unsigned key, uint32_t seq, uint64_t score)
{
        Queue *q = &r->q[key];

        while (q->n > 0) {
                uint64_t s[KEYS];

                (void)interval_scores(ring_seq(r, *queue_at(r, key, q->n - 1)), s);
                if (s[key] > score) {
                        break;
                }
                q->n--;
        }
        assert(q->n < r->cap);
        *queue_at(r, key, q->n) = seq;
        q->n++;
}

/* The best score for @key among the intervals from @first to the newest: true with it in
 * @ret, or false when none of them takes part in that key. */
static bool queue_best(const IntervalRing *r, unsigned key, uint32_t first, uint64_t *ret)
{
        const Queue *q = &r->q[key];
        uint32_t base = ring_first_seq(r), want = first - base, lo = 0, hi = q->n;
        uint64_t s[KEYS];

        /* Queue entries are in ring order: find the first one at or after @first. */
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (*queue_at(r, key, mid) - base < want) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        if (lo == q->n) {
                return false;
        }
        (void)interval_scores(ring_seq(r, *queue_at(r, key, lo)), s);
        *ret = s[key];
        return true;
}

static void ring_clear_queues(IntervalRing *r)
{
        for (unsigned k = 0; k < KEYS; k++) {
                r->q[k] = (Queue){0};
        }
}

/* Enters interval @seq, newer than any entered before, into the queues. */
static void ring_queue_seq(IntervalRing *r, uint32_t seq)
{
        uint64_t score[KEYS];
        unsigned keys = interval_scores(ring_seq(r, seq), score);

        for (unsigned k = 0; k < KEYS; k++) {
                if (keys & (1u << k)) {
                        queue_push(r, k, seq, score[k]);
                }
        }
}

/* Takes the oldest interval out of the queues, before it leaves the ring. */
static void ring_unqueue_oldest(IntervalRing *r)
{
        uint32_t seq = ring_first_seq(r);

        for (unsigned k = 0; k < KEYS; k++) {
                Queue *q = &r->q[k];

                if (q->n > 0 && *queue_at(r, k, 0) == seq) {
                        q->head = (q->head + 1) % r->cap;
                        q->n--;
                }
        }
}

/* --- per-CPU storage ----------------------------------------------------------------------- */

/* The standard windows but "all" (the totals), shortest first. */
#define WINDOWS HISTORY_SPAN_ALL

/* A standard window: the suffix of its ring from @first on (and, for a long one, the pending
 * period), summed up. */
typedef struct Window {
        bool coarse; /* a long window: coarse intervals and the pending period */
        uint32_t first;
        Sum *sum;
} Window;

/* An interruption (its CPU is the band's). */
typedef struct StoredEvent {
        uint64_t start_ns;
        uint64_t start_real_ns;
        uint64_t duration_ns;
} StoredEvent;

/* How a band stores an event, in 16 bytes: CLOCK_REALTIME as its difference to
 * CLOCK_MONOTONIC, relative to that of the band's first event (the two clocks differ by a
 * constant between clock steps, give or take the jitter of reading them), and the duration in
 * 32 bits. An event that does not fit (a clock step of over 2 s, an interruption of over 4 s)
 * turns the band to StoredEvent's 24 bytes until it is emptied. */
typedef struct CompactEvent {
        uint64_t start_ns;
        uint32_t duration_ns;
        int32_t real_delta_ns;
} CompactEvent;

/* A ring of the newest events of one duration band, grown on demand up to events_per_cpu. */
typedef struct Band {
        void *ev; /* alloc CompactEvent, or StoredEvent when wide */
        bool wide;
        uint64_t real_base_ns; /* start_real_ns - start_ns of the first event (modulo 2^64) */
        uint32_t alloc, head, n;
        uint64_t dropped;
} Band;

static const uint64_t band_lower_ns[HISTORY_BANDS] = {0, 100000, 1000000, 10000000};

typedef struct CpuHistory {
        IntervalRing fine, coarse;
        Sum *total;   /* fine resolution */
        Sum *pending; /* coarse resolution: the coarse period being filled */
        Window win[WINDOWS];
        bool have_last;
        uint64_t last_start_ns;
        Band bands[HISTORY_BANDS];
        bool dropped_before_unknown;
        size_t blob_bytes; /* heap bytes held by the blobs of both rings */
} CpuHistory;

struct History {
        HistoryOptions opt;
        uint32_t fine_cap, coarse_cap;
        bool coarse_window[WINDOWS]; /* which standard windows are long ones */
        int age_window;   /* the longest fine window: what leaves it is kept coarse; -1: none */
        uint8_t *scratch; /* to encode into, scratch_size bytes (scratch_reserve()) */
        size_t scratch_size;
        CpuHistory *cpus[CPU_SETSIZE];
};

static const struct {
        const char *name;
        uint64_t ns; /* 0: all */
} spans[HISTORY_SPAN_MAX] = {
        [HISTORY_SPAN_10S] = {"10s", 10 * NSEC_PER_SEC},
        [HISTORY_SPAN_1M] = {"1m", 60 * NSEC_PER_SEC},
        [HISTORY_SPAN_5M] = {"5m", 300 * NSEC_PER_SEC},
        [HISTORY_SPAN_1H] = {"1h", 3600 * NSEC_PER_SEC},
        [HISTORY_SPAN_24H] = {"24h", 86400 * NSEC_PER_SEC},
        [HISTORY_SPAN_ALL] = {"all", 0},
};

static size_t usable(const void *p)
{
        return p ? malloc_usable_size((void *)p) : 0;
}

static void ring_clear(CpuHistory *c, IntervalRing *r)
{
        for (uint32_t i = 0; i < r->n; i++) {
                Interval *iv = &r->items[(r->head + i) % r->cap];

                c->blob_bytes -= usable(iv->blob);
                free(iv->blob);
        }
        r->head = r->n = 0;
        ring_clear_queues(r);
}

/* Forgets @b's events and count; a band made wide is compact again. */
static void band_clear(Band *b)
{
        free(b->ev);
        *b = (Band){0};
}

static CpuHistory *cpu_free(CpuHistory *c)
{
        if (!c) {
                return NULL;
        }
        ring_clear(c, &c->fine);
        ring_clear(c, &c->coarse);
        free(c->fine.items);
        free(c->coarse.items);
        free(c->fine.qseq);
        free(c->coarse.qseq);
        sum_free(c->total);
        sum_free(c->pending);
        for (unsigned w = 0; w < WINDOWS; w++) {
                sum_free(c->win[w].sum);
        }
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                free(c->bands[b].ev);
        }
        free(c);
        return NULL;
}

static int ring_alloc(IntervalRing *r, uint32_t cap)
{
        r->cap = cap;
        r->items = calloc(cap, sizeof(Interval));
        r->qseq = calloc((size_t)KEYS * cap, sizeof(uint32_t));
        return r->items && r->qseq ? 0 : -ENOMEM;
}

/* A CPU with empty rings, sums and windows: everything it will ever need but its blobs and
 * events, so that its memory is flat from the start. */
static CpuHistory *cpu_alloc(const History *h)
{
        CpuHistory *c = calloc(1, sizeof(*c));

        if (!c) {
                return NULL;
        }
        if (ring_alloc(&c->fine, h->fine_cap) < 0 || ring_alloc(&c->coarse, h->coarse_cap) < 0) {
                return cpu_free(c);
        }
        c->total = sum_new(RES_FINE);
        c->pending = sum_new(RES_COARSE);
        if (!c->total || !c->pending) {
                return cpu_free(c);
        }
        for (unsigned w = 0; w < WINDOWS; w++) {
                c->win[w].coarse = h->coarse_window[w];
                c->win[w].sum = sum_new(c->win[w].coarse ? RES_COARSE : RES_FINE);
                if (!c->win[w].sum) {
                        return cpu_free(c);
                }
        }
        return c;
}

static void cpu_clear(CpuHistory *c)
{
        ring_clear(c, &c->fine);
        ring_clear(c, &c->coarse);
        sum_clear(c->total);
        sum_clear(c->pending);
        for (unsigned w = 0; w < WINDOWS; w++) {
                sum_clear(c->win[w].sum);
                c->win[w].first = c->win[w].coarse ? c->coarse.end_seq : c->fine.end_seq;
        }
        c->have_last = false;
        c->last_start_ns = 0;
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                band_clear(&c->bands[b]);
        }
        c->dropped_before_unknown = false;
}

static size_t ring_memory(const IntervalRing *r)
{
        return usable(r->items) + usable(r->qseq);
}

static size_t cpu_event_memory(const CpuHistory *c)
{
        size_t n = 0;

        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                n += usable(c->bands[b].ev);
        }
        return n;
}

static size_t cpu_memory(const CpuHistory *c)
{
        size_t n = usable(c) + ring_memory(&c->fine) + ring_memory(&c->coarse) + usable(c->total) +
                   usable(c->pending) + cpu_event_memory(c) + c->blob_bytes;

        for (unsigned w = 0; w < WINDOWS; w++) {
                n += usable(c->win[w].sum);
        }
        return n;
}

static int cpu_get(History *h, int cpu, CpuHistory **ret)
{
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return -EINVAL;
        }
        if (!h->cpus[cpu]) {
                h->cpus[cpu] = cpu_alloc(h);
                if (!h->cpus[cpu]) {
                        return -ENOMEM;
                }
        }
        *ret = h->cpus[cpu];
        return 0;
}

static const CpuHistory *cpu_find(const History *h, int cpu)
{
        return cpu >= 0 && cpu < CPU_SETSIZE ? h->cpus[cpu] : NULL;
}

/* --- events by band ------------------------------------------------------------------------ */

static unsigned band_of(uint64_t duration_ns)
{
        unsigned b = HISTORY_BANDS - 1;

        while (b > 0 && duration_ns < band_lower_ns[b]) {
                b--;
        }
        return b;
}

/* Event @i of @b, oldest first. */
static StoredEvent band_at(const Band *b, uint32_t i)
{
        uint32_t k = (b->head + i) % b->alloc;
        const CompactEvent *e;

        if (b->wide) {
                return ((const StoredEvent *)b->ev)[k];
        }
        e = &((const CompactEvent *)b->ev)[k];
        return (StoredEvent){
                .start_ns = e->start_ns,
                .start_real_ns =
                        e->start_ns + b->real_base_ns + (uint64_t)(int64_t)e->real_delta_ns,
                .duration_ns = e->duration_ns,
        };
}

/* @ev's CLOCK_REALTIME as its difference to that of @b's first event, all modulo 2^64 as
 * they are put back together. */
static int64_t band_real_delta(const Band *b, const StoredEvent *ev)
{
        return (int64_t)(ev->start_real_ns - ev->start_ns - b->real_base_ns);
}

/* Whether @ev can be stored compact in @b (whose real_base_ns is set). */
static bool band_fits(const Band *b, const StoredEvent *ev)
{
        int64_t delta = band_real_delta(b, ev);

        return ev->duration_ns <= UINT32_MAX && delta >= INT32_MIN && delta <= INT32_MAX;
}

/* Reallocates @b's events as @alloc of them, @wide or not, oldest first. Returns 0 or
 * -ENOMEM (then @b is unchanged). */
static int band_realloc(Band *b, uint32_t alloc, bool wide)
{
        void *ev = malloc((size_t)alloc * (wide ? sizeof(StoredEvent) : sizeof(CompactEvent)));

        if (!ev) {
                return -ENOMEM;
        }
        for (uint32_t i = 0; i < b->n; i++) {
                StoredEvent e = band_at(b, i);

                if (wide) {
                        ((StoredEvent *)ev)[i] = e;
                } else {
                        ((CompactEvent *)ev)[i] = (CompactEvent){
                                .start_ns = e.start_ns,
                                .duration_ns = (uint32_t)e.duration_ns,
                                .real_delta_ns = (int32_t)band_real_delta(b, &e),
                        };
                }
        }
        free(b->ev);
        b->ev = ev;
        b->alloc = alloc;
        b->wide = wide;
        b->head = 0;
        return 0;
}

static void band_put(Band *b, uint32_t k, const StoredEvent *ev)
{
        if (b->wide) {
                ((StoredEvent *)b->ev)[k] = *ev;
                return;
        }
        ((CompactEvent *)b->ev)[k] = (CompactEvent){
                .start_ns = ev->start_ns,
                .duration_ns = (uint32_t)ev->duration_ns,
                .real_delta_ns = (int32_t)band_real_delta(b, ev),
        };
}

/* Appends @ev to @b, growing it up to @cap; beyond, the oldest is forgotten and counted.
 * Returns 0, or -ENOMEM when there was no room and no memory (@ev is counted as dropped
 * then, and nothing else changes). */
static int band_push(Band *b, uint32_t cap, const StoredEvent *ev)
{
        if (b->n == 0 && !b->wide) {
                b->real_base_ns = ev->start_real_ns - ev->start_ns;
        }
        if (!b->wide && b->alloc > 0 && !band_fits(b, ev) && band_realloc(b, b->alloc, true) < 0) {
                b->dropped++;
                return -ENOMEM;
        }
        if (b->n == b->alloc && b->alloc < cap) {
                /* Doubling, then 1024 more at a time: a band that fills slowly (the long
                 * interruptions) wastes at most 16 KiB. */
                uint32_t n = b->alloc == 0 ? 64 : b->alloc < 1024 ? b->alloc * 2 : b->alloc + 1024;

                /* Short of memory, the band stays as large as it is: the oldest goes. */
                (void)band_realloc(b, n > cap ? cap : n, b->wide || !band_fits(b, ev));
        }
        if (b->n < b->alloc) {
                band_put(b, (b->head + b->n) % b->alloc, ev);
                b->n++;
                return 0;
        }
        b->dropped++;
        if (b->n == 0) {
                return cap == 0 ? 0 : -ENOMEM;
        }
        band_put(b, b->head, ev);
        b->head = (b->head + 1) % b->alloc;
        return 0;
}

/* Makes h->scratch hold at least @size bytes. It keeps the largest size asked for: a few KiB
 * for real intervals, so memory stays flat. */
static int scratch_reserve(History *h, size_t size)
{
        uint8_t *p;

        if (size <= h->scratch_size) {
                return 0;
        }
        p = realloc(h->scratch, size);
        if (!p) {
                return -ENOMEM;
        }
        h->scratch = p;
        h->scratch_size = size;
        return 0;
}

/* --- windows ------------------------------------------------------------------------------- */

static IntervalRing *window_ring(CpuHistory *c, const Window *w)
{
        return w->coarse ? &c->coarse : &c->fine;
}

/* Re-encodes the fine interval @iv at the coarse resolution: it has left every window kept at
 * fine resolution. Keeps it as it is when memory is short (it only costs more). */
static void interval_age(History *h, CpuHistory *c, Interval *iv)
{
        size_t size;
        uint8_t *blob;

        /* Folding never makes a blob longer: each coarse bucket takes one token at most as
         * long as the tokens of its fine buckets together. */
        if (iv->res != RES_FINE || scratch_reserve(h, iv->size) < 0) {
                return;
        }
        size = blob_fold(iv->blob, iv->size, h->scratch);
        blob = malloc(size);
        if (!blob) {
                return;
        }
        memcpy(blob, h->scratch, size);
        c->blob_bytes += usable(blob) - usable(iv->blob);
        free(iv->blob);
        iv->blob = blob;
        iv->size = (uint32_t)size;
        iv->res = RES_COARSE;
}

/* Takes the oldest interval out of window @w; @age: re-encode it coarse if @w was the last
 * window that kept it at fine resolution. */
static void window_drop_oldest(History *h, CpuHistory *c, unsigned w, bool age)
{
        Window *win = &c->win[w];
        Interval *iv = ring_seq(window_ring(c, win), win->first);

        interval_apply(iv, NULL, &win->sum, 1, true, NULL);
        win->first++;
        if (age && (int)w == h->age_window) {
                interval_age(h, c, iv);
        }
}

/* Moves every window's start up to the newest interval: E = its start + interval_ns, and a
 * window of span S keeps what starts at or after E - S. Shortest first, so that an interval
 * leaves the fine windows before the longest of them re-encodes it. */
static void windows_advance(History *h, CpuHistory *c)
{
        uint64_t e = c->last_start_ns + h->opt.interval_ns;

        if (e < c->last_start_ns) {
                e = UINT64_MAX;
        }
        for (unsigned w = 0; w < WINDOWS; w++) {
                Window *win = &c->win[w];
                IntervalRing *r = window_ring(c, win);
                uint64_t cutoff = e > spans[w].ns ? e - spans[w].ns : 0;

                while (win->first != r->end_seq && ring_seq(r, win->first)->start_ns < cutoff) {
                        window_drop_oldest(h, c, w, true);
                }
        }
}

/* Makes room for one more interval in @r: when it is full, its oldest interval leaves the
 * windows that hold it, the queues and the ring. */
static void ring_make_room(History *h, CpuHistory *c, IntervalRing *r)
{
        Interval *iv;

        if (r->n < r->cap) {
                return;
        }
        for (unsigned w = 0; w < WINDOWS; w++) {
                if (window_ring(c, &c->win[w]) == r && c->win[w].first == ring_first_seq(r)) {
                        window_drop_oldest(h, c, w, false);
                }
        }
        ring_unqueue_oldest(r);
        iv = &r->items[r->head];
        c->blob_bytes -= usable(iv->blob);
        free(iv->blob);
        r->head = (r->head + 1) % r->cap;
        r->n--;
}

/* Appends @iv to @r (which has room), taking ownership of its blob. */
static void ring_append(CpuHistory *c, IntervalRing *r, const Interval *iv)
{
        r->items[(r->head + r->n) % r->cap] = *iv;
        r->n++;
        r->end_seq++;
        c->blob_bytes += usable(iv->blob);
        ring_queue_seq(r, r->end_seq - 1);
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
        pthread_once(&res_once, res_tables_init);
        h = calloc(1, sizeof(*h));
        if (!h) {
                return -ENOMEM;
        }
        h->opt = *opt;
        h->fine_cap = (uint32_t)fine_cap;
        h->coarse_cap = (uint32_t)coarse_cap;
        /* A window fits the fine intervals when its span is within their retention. */
        h->age_window = -1;
        for (unsigned w = 0; w < WINDOWS; w++) {
                h->coarse_window[w] = spans[w].ns > opt->fine_retention_ns;
                h->age_window = h->coarse_window[w] ? h->age_window : (int)w;
        }
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

/* Copies the encoding in h->scratch into the blob of @iv. */
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

static bool attrib_valid(const AttribDelta *a)
{
        if (a && a->n > ATTRIB_MAX_SOURCES) {
                return false;
        }
        for (size_t i = 0; a && i < a->n; i++) {
                if (a->items[i].id >= ATTRIB_MAX_SOURCES) {
                        return false;
                }
        }
        return true;
}

/* Closes the pending period into the coarse interval @coarse (its blob made already). */
static void pending_close(History *h, CpuHistory *c, const Interval *coarse)
{
        ring_make_room(h, c, &c->coarse);
        ring_append(c, &c->coarse, coarse);
        sum_clear(c->pending);
}

int history_add_interval(History *h, int cpu, uint64_t start_ns, uint64_t duration_ns,
                         const ProbeSlot *slot, bool stalled, const AttribDelta *attrib)
{
        Interval fine = {.start_ns = start_ns, .duration_ns = duration_ns, .res = RES_FINE};
        Interval coarse = {.res = RES_COARSE};
        Sum *sums[2 + WINDOWS];
        CpuHistory *c;
        bool finish;
        int r;

        if (!h || !slot || duration_ns == 0 || start_ns > UINT64_MAX - duration_ns ||
            !attrib_valid(attrib)) {
                return -EINVAL;
        }
        r = cpu_get(h, cpu, &c);
        if (r < 0) {
                return r;
        }
        if (c->have_last && start_ns < c->last_start_ns) {
                return -EINVAL;
        }

        /* Allocate everything before changing anything, so a failure leaves no trace. */
        sums[0] = c->total;
        sums[1] = c->pending;
        for (unsigned w = 0; w < WINDOWS; w++) {
                sums[2 + w] = c->win[w].sum;
        }
        fine.end_ns = start_ns + duration_ns;
        r = scratch_reserve(h, slot_bound(slot, attrib));
        if (r < 0) {
                return r;
        }
        r = interval_from_scratch(h, blob_encode_slot(h->scratch, slot, stalled, attrib), &fine);
        if (r < 0) {
                return r;
        }
        r = slot_reserve(slot, sums, 2 + WINDOWS);
        if (r < 0) {
                free(fine.blob);
                return r;
        }
        finish = c->pending->intervals > 0 && start_ns >= c->pending->period_end_ns;
        if (finish) {
                coarse.start_ns = c->pending->start_ns;
                coarse.end_ns = c->pending->end_ns;
                coarse.duration_ns = c->pending->duration_ns;
                coarse.period_end_ns = c->pending->period_end_ns;
                r = scratch_reserve(h, sum_bound(c->pending));
                if (r == 0) {
                        r = interval_from_scratch(h, blob_encode_sum(h->scratch, c->pending),
                                                  &coarse);
                }
                if (r < 0) {
                        free(fine.blob);
                        return r;
                }
                /* The long windows hold the period already: it only changes where it is. */
                pending_close(h, c, &coarse);
        }
        if (c->pending->intervals == 0) {
                uint64_t period_start = start_ns - start_ns % h->opt.coarse_interval_ns;

                c->pending->period_end_ns = period_start > UINT64_MAX - h->opt.coarse_interval_ns
                                                    ? UINT64_MAX
                                                    : period_start + h->opt.coarse_interval_ns;
        }
        ring_make_room(h, c, &c->fine);
        ring_append(c, &c->fine, &fine);
        /* The new interval goes into the totals, the pending period and every window (the
         * long ones hold the pending period); then the windows let go of what is too old. */
        interval_apply(&fine, NULL, sums, 2 + WINDOWS, false, NULL);
        c->have_last = true;
        c->last_start_ns = start_ns;
        windows_advance(h, c);
        return 0;
}

int history_add_event(History *h, const HistoryEvent *ev)
{
        StoredEvent e;
        CpuHistory *c;
        int r;

        if (!h || !ev) {
                return -EINVAL;
        }
        r = cpu_get(h, ev->cpu, &c);
        if (r < 0) {
                return r;
        }
        e = (StoredEvent){ev->start_ns, ev->start_real_ns, ev->duration_ns};
        return band_push(&c->bands[band_of(ev->duration_ns)], h->opt.events_per_cpu, &e);
}

int history_event_bands(const History *h, int cpu, HistoryBand ret[HISTORY_BANDS])
{
        const CpuHistory *c;

        if (!h || !ret) {
                return -EINVAL;
        }
        c = cpu_find(h, cpu);
        if (!c) {
                return -ENOENT;
        }
        for (unsigned i = 0; i < HISTORY_BANDS; i++) {
                const Band *b = &c->bands[i];

                ret[i] = (HistoryBand){
                        .min_duration_ns = band_lower_ns[i],
                        .max_duration_ns =
                                i + 1 < HISTORY_BANDS ? band_lower_ns[i + 1] : UINT64_MAX,
                        .capacity = h->opt.events_per_cpu,
                        .kept = b->n,
                        .oldest_ns = b->n ? band_at(b, 0).start_ns : 0,
                        .newest_ns = b->n ? band_at(b, b->n - 1).start_ns : 0,
                        .dropped = b->dropped,
                        .dropped_before_unknown = c->dropped_before_unknown,
                };
        }
        return 0;
}

/* --- queries ------------------------------------------------------------------------------- */

typedef int (*VisitFn)(const Interval *iv, bool coarse, void *userdata);

/* Calls @fn, oldest first, for the intervals of @c that make up the window [@from_ns, @to_ns]:
 * fine intervals wherever they are kept, coarse ones for the time before. A coarse interval
 * whose period reaches into the fine intervals (the oldest of its fine intervals are gone) is
 * used when the window holds all of it, and then replaces its fine intervals. Each fine
 * interval lies in exactly one coarse period, so nothing is counted twice. */
static int cpu_visit(const CpuHistory *c, uint64_t from_ns, uint64_t to_ns, VisitFn fn,
                     void *userdata)
{
        uint64_t first_fine =
                c->fine.n > 0 ? ring_seq(&c->fine, ring_first_seq(&c->fine))->start_ns : UINT64_MAX;
        uint64_t split = first_fine;
        int r;

        for (uint32_t i = 0; i < c->coarse.n; i++) {
                const Interval *iv = ring_seq(&c->coarse, ring_first_seq(&c->coarse) + i);
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
                const Interval *iv = ring_seq(&c->fine, ring_first_seq(&c->fine) + i);

                if (iv->start_ns >= split && iv->start_ns >= from_ns && iv->end_ns <= to_ns) {
                        r = fn(iv, false, userdata);
                        if (r != 0) {
                                return r;
                        }
                }
        }
        return 0;
}

/* The dense attribution counts @dense as @ret's sorted list of the non-zero ones. */
static void attrib_from_dense(const uint64_t *dense, AttribDelta *ret)
{
        ret->n = 0;
        for (unsigned id = 0; id < ATTRIB_MAX_SOURCES; id++) {
                if (dense[id] != 0) {
                        ret->items[ret->n++] =
                                (AttribCount){.id = (uint16_t)id, .count = dense[id]};
                }
        }
}

/* Copies the counts of @s into @ret: statistics but minima and maxima, histograms at full
 * resolution (a coarse bucket in the highest fine bucket it spans), attribution. */
static void sum_to_window(const Sum *s, HistoryWindow *ret)
{
        ProbeSlot *slot = &ret->slot;
        Histogram *h[3] = {&slot->gap_hist, &slot->dd_hist.neg, &slot->dd_hist.pos};

        slot->lost_ticks = s->lost_ticks;
        slot->events = s->events;
        slot->gap.count = s->gap.count;
        slot->gap.sum = s->gap.sum;
        slot->gap.sumsq = s->gap.sumsq;
        slot->dd.count = s->dd.count;
        slot->dd.sum = s->dd.sum;
        slot->dd.sumsq = s->dd.sumsq;
        for (unsigned k = 0; k < 3; k++) {
                const Range *r = &s->hist[k];

                if (r->c == h[k]->counts) {
                        continue; /* a query's sum, merged in place */
                }
                memset(h[k]->counts, 0, sizeof(h[k]->counts));
                for (unsigned i = 0; i < r->n; i++) {
                        h[k]->counts[s->res == RES_FINE ? r->lo + i : coarse_to_fine[r->lo + i]] =
                                r->c[i];
                }
        }
        attrib_from_dense(s->attrib, &ret->attrib);
        ret->duration_ns = s->duration_ns;
        ret->stalls = s->stalls;
        ret->hist_sub_bits = s->coarser > 0 ? HISTORY_COARSE_SUB_BITS : res_bits(s->res);
}

/* The totals since start or reset. */
static void total_to_window(const Sum *t, HistoryWindow *ret)
{
        sum_to_window(t, ret);
        ret->slot.start_ticks = t->start_ticks;
        ret->slot.end_ticks = t->end_ticks;
        ret->slot.gap.min = t->gap.min;
        ret->slot.gap.max = t->gap.max;
        ret->slot.dd.min = t->dd.min;
        ret->slot.dd.max = t->dd.max;
        ret->from_ns = t->start_ns;
        ret->to_ns = t->end_ns;
        ret->intervals = (unsigned)t->intervals;
}

/* Window @w of @c into @ret: its sum, and its extremes from the queues of its ring (and the
 * pending period's, for a long window). */
static void window_to_window(const CpuHistory *c, const Window *w, HistoryWindow *ret)
{
        const IntervalRing *r = w->coarse ? &c->coarse : &c->fine;
        const Sum *p = w->coarse && c->pending->intervals > 0 ? c->pending : NULL;
        uint64_t score[KEYS];
        bool found[KEYS];
        ProbeSlot *s = &ret->slot;

        sum_to_window(w->sum, ret);
        for (unsigned k = 0; k < KEYS; k++) {
                found[k] = queue_best(r, k, w->first, &score[k]);
        }
        s->gap.min = found[KEY_GAP_MIN] ? ~score[KEY_GAP_MIN] : UINT64_MAX;
        s->gap.max = found[KEY_GAP_MAX] ? score[KEY_GAP_MAX] : 0;
        s->dd.min =
                found[KEY_DD_MIN] ? (int64_t)(~score[KEY_DD_MIN] ^ (UINT64_C(1) << 63)) : INT64_MAX;
        s->dd.max =
                found[KEY_DD_MAX] ? (int64_t)(score[KEY_DD_MAX] ^ (UINT64_C(1) << 63)) : INT64_MIN;
        s->start_ticks = found[KEY_START_TICKS] ? ~score[KEY_START_TICKS] : 0;
        s->end_ticks = found[KEY_END_TICKS] ? score[KEY_END_TICKS] : 0;
        ret->to_ns = found[KEY_END_NS] ? score[KEY_END_NS] : 0;
        ret->from_ns = w->first != r->end_seq ? ring_seq(r, w->first)->start_ns : 0;
        ret->intervals = r->end_seq - w->first;
        if (p) {
                s->gap.min = p->gap.min < s->gap.min ? p->gap.min : s->gap.min;
                s->gap.max = p->gap.max > s->gap.max ? p->gap.max : s->gap.max;
                s->dd.min = p->dd.min < s->dd.min ? p->dd.min : s->dd.min;
                s->dd.max = p->dd.max > s->dd.max ? p->dd.max : s->dd.max;
                if (s->start_ticks == 0 ||
                    (p->start_ticks != 0 && p->start_ticks < s->start_ticks)) {
                        s->start_ticks = p->start_ticks;
                }
                s->end_ticks = p->end_ticks > s->end_ticks ? p->end_ticks : s->end_ticks;
                ret->to_ns = p->end_ns > ret->to_ns ? p->end_ns : ret->to_ns;
                ret->from_ns = w->first != r->end_seq ? ret->from_ns : p->start_ns;
                ret->intervals += (unsigned)p->intervals;
        }
}

typedef struct QueryCtx {
        HistoryWindow *w;
        Sum *sum; /* its histograms are w->slot's */
} QueryCtx;

static int query_visit(const Interval *iv, bool coarse, void *userdata)
{
        QueryCtx *q = userdata;
        HistoryWindow *w = q->w;

        (void)coarse;
        interval_apply(iv, NULL, &q->sum, 1, false, NULL);
        if (w->intervals == 0 || iv->start_ns < w->from_ns) {
                w->from_ns = iv->start_ns;
        }
        w->to_ns = iv->end_ns > w->to_ns ? iv->end_ns : w->to_ns;
        w->intervals++;
        return 0;
}

int history_query(const History *h, int cpu, uint64_t from_ns, uint64_t to_ns, bool all,
                  HistoryWindow *ret)
{
        uint64_t attrib[ATTRIB_MAX_SOURCES] = {0};
        const CpuHistory *c;
        Sum sum;
        QueryCtx q = {.w = ret, .sum = &sum};

        if (!h || !ret || (!all && from_ns > to_ns)) {
                return -EINVAL;
        }
        c = cpu_find(h, cpu);
        if (!c) {
                return -ENOENT;
        }
        if (all) {
                total_to_window(c->total, ret);
                return 0;
        }
        /* A sum whose histograms are the reply's: merged in place, nothing allocated. */
        slot_clear(&ret->slot);
        sum = (Sum){
                .res = RES_FINE,
                .attrib = attrib,
                .hist = {{0, HIST_BUCKETS, ret->slot.gap_hist.counts},
                         {0, HIST_BUCKETS, ret->slot.dd_hist.neg.counts},
                         {0, HIST_BUCKETS, ret->slot.dd_hist.pos.counts}},
        };
        stats_init(&sum.gap);
        signed_stats_init(&sum.dd);
        ret->from_ns = ret->to_ns = 0;
        ret->intervals = 0;
        (void)cpu_visit(c, from_ns, to_ns, query_visit, &q);
        sum_to_window(&sum, ret);
        ret->slot.start_ticks = sum.start_ticks;
        ret->slot.end_ticks = sum.end_ticks;
        ret->slot.gap.min = sum.gap.min;
        ret->slot.gap.max = sum.gap.max;
        ret->slot.dd.min = sum.dd.min;
        ret->slot.dd.max = sum.dd.max;
        return 0;
}

const char *history_span_name(HistorySpan span)
{
        return (unsigned)span < HISTORY_SPAN_MAX ? spans[span].name : NULL;
}

uint64_t history_span_ns(HistorySpan span)
{
        return (unsigned)span < HISTORY_SPAN_MAX ? spans[span].ns : 0;
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

int history_window(const History *h, int cpu, HistorySpan span, HistoryWindow *ret)
{
        const CpuHistory *c;

        if (!h || !ret || (unsigned)span >= HISTORY_SPAN_MAX) {
                return -EINVAL;
        }
        c = cpu_find(h, cpu);
        if (!c) {
                return -ENOENT;
        }
        if (span == HISTORY_SPAN_ALL) {
                total_to_window(c->total, ret);
        } else {
                window_to_window(c, &c->win[span], ret);
        }
        return 0;
}

int history_window_max_gap(const History *h, int cpu, HistorySpan span, uint64_t *ret_max_ticks,
                           uint64_t *ret_to_ns)
{
        const CpuHistory *c;
        const IntervalRing *r;
        const Window *w;
        const Sum *p;
        uint64_t score;

        if (!h || (unsigned)span >= HISTORY_SPAN_MAX) {
                return -EINVAL;
        }
        c = cpu_find(h, cpu);
        if (!c) {
                return -ENOENT;
        }
        if (span == HISTORY_SPAN_ALL) {
                *ret_max_ticks = c->total->gap.count > 0 ? c->total->gap.max : 0;
                *ret_to_ns = c->total->end_ns;
                return 0;
        }
        /* As window_to_window() has them. */
        w = &c->win[span];
        r = w->coarse ? &c->coarse : &c->fine;
        p = w->coarse && c->pending->intervals > 0 ? c->pending : NULL;
        *ret_max_ticks = queue_best(r, KEY_GAP_MAX, w->first, &score) ? score : 0;
        *ret_to_ns = queue_best(r, KEY_END_NS, w->first, &score) ? score : 0;
        if (p) {
                *ret_max_ticks = p->gap.max > *ret_max_ticks ? p->gap.max : *ret_max_ticks;
                *ret_to_ns = p->end_ns > *ret_to_ns ? p->end_ns : *ret_to_ns;
        }
        return 0;
}

typedef struct PointCtx {
        int (*fn)(const HistoryPoint *pt, void *userdata);
        void *userdata;
        AttribDelta attrib;
} PointCtx;

static int cmp_attrib_count(const void *a, const void *b)
{
        const AttribCount *x = a, *y = b;

        return (x->id > y->id) - (x->id < y->id);
}

static int point_visit(const Interval *iv, bool coarse, void *userdata)
{
        PointCtx *pc = userdata;
        Reader r = {iv->blob, iv->blob + iv->size, false};
        HistoryPoint pt;
        BlobHeader b;
        uint64_t n;

        blob_read_header(&r, &b);
        /* A blob lists each source once (the ring's own, and a checked one's sum anyway). */
        n = attrib_count(&r);
        pc->attrib.n = 0;
        for (uint64_t i = 0; i < n; i++) {
                uint64_t id = get_u64(&r), count = get_u64(&r);

                pc->attrib.items[pc->attrib.n++] =
                        (AttribCount){.id = (uint16_t)id, .count = count};
        }
        assert(!r.bad);
        qsort(pc->attrib.items, pc->attrib.n, sizeof(AttribCount), cmp_attrib_count);
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

int history_foreach_point(const History *h, int cpu, uint64_t from_ns, uint64_t to_ns,
                          int (*fn)(const HistoryPoint *pt, void *userdata), void *userdata)
{
        const CpuHistory *c;
        PointCtx *pc;
        int r;

        if (!h || !fn || from_ns > to_ns) {
                return -EINVAL;
        }
        c = cpu_find(h, cpu);
        if (!c) {
                return -ENOENT;
        }
        pc = malloc(sizeof(*pc));
        if (!pc) {
                return -ENOMEM;
        }
        pc->fn = fn;
        pc->userdata = userdata;
        r = cpu_visit(c, from_ns, to_ns, point_visit, pc);
        free(pc);
        return r;
}

static bool event_matches(const StoredEvent *e, uint64_t since_ns, uint64_t min_duration_ns)
{
        return e->start_ns >= since_ns && e->duration_ns >= min_duration_ns;
}

/* Per selected CPU with events: the index of its newest event not yet taken, per band (-1:
 * none left). */
typedef struct EventCursor {
        const CpuHistory *c;
        int cpu;
        int32_t next[HISTORY_BANDS];
} EventCursor;

/* The newest matching event left under @cur (moving past those that do not match) into
 * @ret, its band into @ret_band. Returns false when none is left. */
static bool cursor_newest(EventCursor *cur, uint64_t since_ns, uint64_t min_duration_ns,
                          StoredEvent *ret, unsigned *ret_band)
{
        bool found = false;

        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                const Band *band = &cur->c->bands[b];

                for (; cur->next[b] >= 0; cur->next[b]--) {
                        StoredEvent e = band_at(band, (uint32_t)cur->next[b]);

                        if (event_matches(&e, since_ns, min_duration_ns)) {
                                if (!found || e.start_ns > ret->start_ns) {
                                        *ret = e;
                                        *ret_band = b;
                                        found = true;
                                }
                                break;
                        }
                }
        }
        return found;
}

size_t history_events(const History *h, const cpu_set_t *cpus, uint64_t since_ns,
                      uint64_t min_duration_ns, HistoryEvent *ret, size_t max)
{
        EventCursor cur[CPU_SETSIZE];
        size_t n = 0, n_cur = 0;

        if (!h || !ret || max == 0) {
                return 0;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                const CpuHistory *c = h->cpus[cpu];

                if (!c || (cpus && !CPU_ISSET(cpu, cpus))) {
                        continue;
                }
                cur[n_cur] = (EventCursor){.c = c, .cpu = cpu};
                for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                        /* A band whose events are all shorter than asked is skipped whole. */
                        bool short_band =
                                b + 1 < HISTORY_BANDS && band_lower_ns[b + 1] <= min_duration_ns;

                        cur[n_cur].next[b] = short_band ? -1 : (int32_t)c->bands[b].n - 1;
                }
                n_cur++;
        }
        /* Merge the bands (each in time order) from the newest backwards. */
        while (n < max) {
                StoredEvent best = {0}, e;
                size_t best_i = SIZE_MAX;
                unsigned best_b = 0, b = 0;

                for (size_t i = 0; i < n_cur; i++) {
                        if (cursor_newest(&cur[i], since_ns, min_duration_ns, &e, &b) &&
                            (best_i == SIZE_MAX || e.start_ns > best.start_ns)) {
                                best = e;
                                best_i = i;
                                best_b = b;
                        }
                }
                if (best_i == SIZE_MAX) {
                        break;
                }
                ret[n++] = (HistoryEvent){
                        .cpu = cur[best_i].cpu,
                        .start_ns = best.start_ns,
                        .start_real_ns = best.start_real_ns,
                        .duration_ns = best.duration_ns,
                };
                cur[best_i].next[best_b]--;
        }
        for (size_t i = 0; i < n / 2; i++) {
                HistoryEvent tmp = ret[i];

                ret[i] = ret[n - 1 - i];
                ret[n - 1 - i] = tmp;
        }
        return n;
}

size_t history_band_events(const History *h, int cpu, unsigned band, uint64_t since_ns,
                           HistoryEvent *ret, size_t max)
{
        const CpuHistory *c = h ? cpu_find(h, cpu) : NULL;
        const Band *b;
        size_t n = 0;
        uint32_t first;

        if (!c || !ret || band >= HISTORY_BANDS) {
                return 0;
        }
        b = &c->bands[band];
        /* The newest @max at or after @since_ns: count them from the newest back. */
        for (first = b->n; first > 0 && n < max && band_at(b, first - 1).start_ns >= since_ns;
             first--) {
                n++;
        }
        for (size_t i = 0; i < n; i++) {
                StoredEvent e = band_at(b, first + (uint32_t)i);

                ret[i] = (HistoryEvent){
                        .cpu = cpu,
                        .start_ns = e.start_ns,
                        .start_real_ns = e.start_real_ns,
                        .duration_ns = e.duration_ns,
                };
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

void history_cpus(const History *h, cpu_set_t *ret)
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
        bytes = usable(h) + usable(h->scratch);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (h->cpus[cpu]) {
                        bytes += cpu_memory(h->cpus[cpu]);
                }
        }
        return bytes;
}

size_t history_event_bytes(const History *h)
{
        size_t bytes = 0;

        for (int cpu = 0; h && cpu < CPU_SETSIZE; cpu++) {
                if (h->cpus[cpu]) {
                        bytes += cpu_event_memory(h->cpus[cpu]);
                }
        }
        return bytes;
}

/* --- checkpoint ---------------------------------------------------------------------------- *
 *
 * All integers little-endian. Version 2:
 *   "JTRDHIST" u32 version u64 hz u8[16] boot_id u8 coarse_sub_bits
 *   u32 n_names, n × (u8 len, name)             attribution sources, by id
 *   u32 n_cpus, per CPU:
 *     u32 cpu
 *     total (fine), pending (coarse): u64 start end duration period_end, u32 size, blob
 *     u32 n, n × fine:   u64 start end duration, u8 resolution (0 fine, 1 coarse), u32 size,
 *                        blob
 *     u32 n, n × coarse: u64 start end duration period_end, u32 size, blob (coarse)
 *     u8 flags: 1 = events before the oldest kept may have been dropped uncounted
 *     per band, shortest first: u64 dropped, u32 n, n × event: u64 start_ns start_real_ns
 *                               duration_ns, oldest first
 *   u32 CRC-32 (IEEE 802.3) of everything before it
 * Version 1 (read, and migrated): no coarse_sub_bits, every blob at fine resolution, no
 * resolution byte; in place of the flags and bands one list of the newest events of any
 * duration: u32 n, n × event. The windows are not saved: they are sums of what is. */

#define FLAG_DROPPED_BEFORE_UNKNOWN 1u

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

        memset(ret, 0, BOOT_ID_SIZE);
        if (host_read_text("/proc/sys/kernel/random/boot_id", text, sizeof(text)) < 0) {
                return;
        }
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

/* One interval: @coarse with its period's end, @fine with its resolution byte. */
static void w_interval(Writer *w, const Interval *iv, bool coarse)
{
        w_uint(w, iv->start_ns, 8);
        w_uint(w, iv->end_ns, 8);
        w_uint(w, iv->duration_ns, 8);
        if (coarse) {
                w_uint(w, iv->period_end_ns, 8);
        } else {
                w_uint(w, iv->res, 1);
        }
        w_uint(w, iv->size, 4);
        w_bytes(w, iv->blob, iv->size);
}

static void w_sum(Writer *w, const Sum *s, uint8_t *scratch)
{
        Interval iv = {
                .start_ns = s->start_ns,
                .end_ns = s->end_ns,
                .duration_ns = s->duration_ns,
                .period_end_ns = s->period_end_ns,
                .blob = scratch,
        };

        iv.size = (uint32_t)blob_encode_sum(scratch, s);
        w_interval(w, &iv, true);
}

static void w_cpu(Writer *w, int cpu, const CpuHistory *c, uint8_t *scratch)
{
        w_uint(w, (uint64_t)cpu, 4);
        w_sum(w, c->total, scratch);
        w_sum(w, c->pending, scratch);
        w_uint(w, c->fine.n, 4);
        for (uint32_t i = 0; i < c->fine.n; i++) {
                w_interval(w, ring_seq(&c->fine, ring_first_seq(&c->fine) + i), false);
        }
        w_uint(w, c->coarse.n, 4);
        for (uint32_t i = 0; i < c->coarse.n; i++) {
                w_interval(w, ring_seq(&c->coarse, ring_first_seq(&c->coarse) + i), true);
        }
        w_uint(w, c->dropped_before_unknown ? FLAG_DROPPED_BEFORE_UNKNOWN : 0, 1);
        for (unsigned b = 0; b < HISTORY_BANDS; b++) {
                const Band *band = &c->bands[b];

                w_uint(w, band->dropped, 8);
                w_uint(w, band->n, 4);
                for (uint32_t i = 0; i < band->n; i++) {
                        StoredEvent e = band_at(band, i);

                        w_uint(w, e.start_ns, 8);
                        w_uint(w, e.start_real_ns, 8);
                        w_uint(w, e.duration_ns, 8);
                }
        }
}

/* Whether @t names every source the history holds: the totals hold every id that any
 * interval since the last reset does. */
static bool names_complete(const History *h, const AttribTable *t, size_t *ret_n_cpus)
{
        size_t n_names = attrib_table_size(t);

        *ret_n_cpus = 0;
        if (n_names > ATTRIB_MAX_SOURCES) {
                return false;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                const CpuHistory *c = h->cpus[cpu];

                if (!c) {
                        continue;
                }
                (*ret_n_cpus)++;
                for (size_t id = n_names; id < ATTRIB_MAX_SOURCES; id++) {
                        if (c->total->attrib[id] != 0) {
                                return false;
                        }
                }
        }
        for (size_t i = 0; i < n_names; i++) {
                const char *name = attrib_table_name(t, (unsigned)i);

                if (!name || name[0] == '\0' || strlen(name) >= ATTRIB_NAME_MAX) {
                        return false;
                }
        }
        return true;
}

int history_save(const History *h, const AttribTable *t, uint64_t hz, FILE *f)
{
        uint8_t boot_id[BOOT_ID_SIZE];
        size_t n_names, n_cpus, bound = 1;
        uint8_t *scratch;
        Writer w;

        if (!h || !t || !f) {
                return -EINVAL;
        }
        /* Every id in the history must have a name, or the file could not be read back. */
        if (!names_complete(h, t, &n_cpus)) {
                return -EINVAL;
        }
        n_names = attrib_table_size(t);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (h->cpus[cpu]) {
                        size_t b = sum_bound(h->cpus[cpu]->total);

                        bound = b > bound ? b : bound;
                        b = sum_bound(h->cpus[cpu]->pending);
                        bound = b > bound ? b : bound;
                }
        }
        scratch = malloc(bound);
        if (!scratch) {
                return -ENOMEM;
        }
        w = (Writer){.f = f};
        crc32_table_init(w.table);
        boot_id_read(boot_id);
        w_bytes(&w, CHECKPOINT_MAGIC, 8);
        w_uint(&w, HISTORY_CHECKPOINT_VERSION, 4);
        w_uint(&w, hz, 8);
        w_bytes(&w, boot_id, BOOT_ID_SIZE);
        w_uint(&w, HISTORY_COARSE_SUB_BITS, 1);
        w_uint(&w, n_names, 4);
        for (size_t i = 0; i < n_names; i++) {
                const char *name = attrib_table_name(t, (unsigned)i);
                size_t len = strlen(name);

                w_uint(&w, len, 1);
                w_bytes(&w, name, len);
        }
        w_uint(&w, n_cpus, 4);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (h->cpus[cpu]) {
                        w_cpu(&w, cpu, h->cpus[cpu], scratch);
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

int history_checkpoint_version(FILE *f, uint32_t *ret)
{
        FileReader r = {.f = f};
        uint8_t magic[8];
        uint64_t version;

        if (!f || !ret) {
                return -EINVAL;
        }
        crc32_table_init(r.table);
        r_bytes(&r, magic, sizeof(magic));
        version = r_uint(&r, 4);
        if (r.error != 0 || memcmp(magic, CHECKPOINT_MAGIC, 8) != 0) {
                return -EBADMSG;
        }
        *ret = (uint32_t)version;
        return 0;
}

/* One CPU as read from a checkpoint, before it is committed. */
typedef struct LoadCpu {
        CpuHistory *c; /* rings and events; sums once decoded */
        Interval total, pending;
} LoadCpu;

typedef struct Loader {
        FileReader r;
        uint32_t version;
        unsigned n_names;
        char names[ATTRIB_MAX_SOURCES][ATTRIB_NAME_MAX];
        uint16_t map[ATTRIB_MAX_SOURCES];
        uint8_t *scratch; /* BLOB_REMAP_MAX bytes */
        LoadCpu cpus[CPU_SETSIZE];
} Loader;

static void loader_free(Loader *l)
{
        if (!l) {
                return;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                cpu_free(l->cpus[cpu].c);
                free(l->cpus[cpu].total.blob);
                free(l->cpus[cpu].pending.blob);
        }
        free(l->scratch);
        free(l);
}

static void loader_freep(Loader **l)
{
        loader_free(*l);
}
#define _cleanup_loader_ __attribute__((cleanup(loader_freep)))

/* Reads one interval (@coarse: with its period's end; else, from version 2 on, with its
 * resolution byte) with a blob no longer than BLOB_MAX that decodes at resolution @res (the
 * one read, for a fine interval of version 2) with the file's sources. */
static void r_interval(Loader *l, bool coarse, Res res, Interval *iv)
{
        FileReader *r = &l->r;
        uint64_t size;

        *iv = (Interval){.res = (uint8_t)res};
        iv->start_ns = r_uint(r, 8);
        iv->end_ns = r_uint(r, 8);
        iv->duration_ns = r_uint(r, 8);
        if (coarse) {
                iv->period_end_ns = r_uint(r, 8);
        } else if (l->version >= 2) {
                iv->res = (uint8_t)r_uint(r, 1);
        }
        size = r_uint(r, 4);
        if (r->error != 0) {
                return;
        }
        if (size == 0 || size > BLOB_MAX || iv->res > RES_COARSE) {
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
        if (r->error == 0 && !blob_check(iv->blob, size, (Res)iv->res, l->n_names)) {
                r_fail(r);
        }
        if (r->error != 0) {
                free(iv->blob);
                iv->blob = NULL;
        }
}

/* Appends @iv to a ring being loaded, forgetting the oldest when it is full: the queues and
 * windows are made once it is complete (cpu_rebuild()). */
static void load_push(CpuHistory *c, IntervalRing *ring, const Interval *iv)
{
        if (ring->n == ring->cap) {
                Interval *old = &ring->items[ring->head];

                c->blob_bytes -= usable(old->blob);
                free(old->blob);
                ring->head = (ring->head + 1) % ring->cap;
                ring->n--;
        }
        ring->items[(ring->head + ring->n) % ring->cap] = *iv;
        ring->n++;
        ring->end_seq++;
        c->blob_bytes += usable(iv->blob);
}

static void load_fine(Loader *l, CpuHistory *c)
{
        FileReader *r = &l->r;
        uint64_t n = r_uint(r, 4);

        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                Interval iv;

                r_interval(l, false, RES_FINE, &iv);
                if (r->error != 0) {
                        break;
                }
                if (iv.duration_ns == 0 || iv.start_ns > UINT64_MAX - iv.duration_ns ||
                    iv.end_ns != iv.start_ns + iv.duration_ns ||
                    (c->fine.n > 0 &&
                     iv.start_ns < ring_seq(&c->fine, c->fine.end_seq - 1)->start_ns)) {
                        free(iv.blob);
                        r_fail(r);
                        break;
                }
                load_push(c, &c->fine, &iv);
        }
}

/* A version-1 coarse interval kept the fine resolution: folded here. */
static int fold_in_place(Loader *l, Interval *iv)
{
        size_t size = blob_fold(iv->blob, iv->size, l->scratch);
        uint8_t *blob = malloc(size);

        if (!blob) {
                return -ENOMEM;
        }
        memcpy(blob, l->scratch, size);
        free(iv->blob);
        iv->blob = blob;
        iv->size = (uint32_t)size;
        iv->res = RES_COARSE;
        return 0;
}

static void load_coarse(Loader *l, CpuHistory *c)
{
        FileReader *r = &l->r;
        uint64_t n = r_uint(r, 4);

        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                const Interval *last =
                        c->coarse.n > 0 ? ring_seq(&c->coarse, c->coarse.end_seq - 1) : NULL;
                Interval iv;

                r_interval(l, true, l->version >= 2 ? RES_COARSE : RES_FINE, &iv);
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
                if (iv.res == RES_FINE && fold_in_place(l, &iv) < 0) {
                        free(iv.blob);
                        r->error = -ENOMEM;
                        break;
                }
                load_push(c, &c->coarse, &iv);
        }
}

static void r_event(FileReader *r, StoredEvent *e)
{
        e->start_ns = r_uint(r, 8);
        e->start_real_ns = r_uint(r, 8);
        e->duration_ns = r_uint(r, 8);
}

/* Version 1: one list of the newest events of every duration, sorted here into the bands;
 * what it dropped before was never counted. */
static void load_events_v1(History *h, Loader *l, CpuHistory *c)
{
        FileReader *r = &l->r;
        uint64_t n = r_uint(r, 4);

        for (uint64_t i = 0; i < n && r->error == 0; i++) {
                StoredEvent e;

                r_event(r, &e);
                if (r->error == 0 &&
                    band_push(&c->bands[band_of(e.duration_ns)], h->opt.events_per_cpu, &e) < 0) {
                        r->error = -ENOMEM;
                }
        }
        c->dropped_before_unknown = true;
}

/* Each band's events belong to it; those beyond this history's cap go (the first read first)
 * and are counted with the file's drops. */
static void load_events(History *h, Loader *l, CpuHistory *c)
{
        FileReader *r = &l->r;
        uint64_t flags = r_uint(r, 1);

        if (flags & ~(uint64_t)FLAG_DROPPED_BEFORE_UNKNOWN) {
                r_fail(r);
        }
        c->dropped_before_unknown = flags & FLAG_DROPPED_BEFORE_UNKNOWN;
        for (unsigned b = 0; b < HISTORY_BANDS && r->error == 0; b++) {
                Band *band = &c->bands[b];
                uint64_t dropped = r_uint(r, 8), n = r_uint(r, 4);

                /* In the order they came, which is time order but for what the mapping of
                 * counter to clock moved back between two intervals. */
                for (uint64_t i = 0; i < n && r->error == 0; i++) {
                        StoredEvent e;

                        r_event(r, &e);
                        if (r->error == 0 && band_of(e.duration_ns) != b) {
                                r_fail(r);
                        } else if (r->error == 0 &&
                                   band_push(band, h->opt.events_per_cpu, &e) < 0) {
                                r->error = -ENOMEM;
                        }
                }
                band->dropped += dropped;
        }
}

static void load_cpu(History *h, Loader *l)
{
        FileReader *r = &l->r;
        LoadCpu *lc;
        CpuHistory *c;
        uint64_t cpu;

        cpu = r_uint(r, 4);
        if (r->error != 0) {
                return;
        }
        if (cpu >= CPU_SETSIZE || l->cpus[cpu].c) {
                r_fail(r);
                return;
        }
        lc = &l->cpus[cpu];
        lc->c = c = cpu_alloc(h);
        if (!c) {
                r->error = -ENOMEM;
                return;
        }
        r_interval(l, true, RES_FINE, &lc->total);
        r_interval(l, true, l->version >= 2 ? RES_COARSE : RES_FINE, &lc->pending);
        load_fine(l, c);
        load_coarse(l, c);
        if (l->version >= 2) {
                load_events(h, l, c);
        } else {
                load_events_v1(h, l, c);
        }
        /* Only a reset empties the fine ring, and it also forgets the last start. */
        c->have_last = c->fine.n > 0;
        c->last_start_ns = c->have_last ? ring_seq(&c->fine, c->fine.end_seq - 1)->start_ns : 0;
}

static int ring_remap(CpuHistory *c, IntervalRing *ring, const uint16_t *map, uint8_t *scratch)
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

/* Makes the queues and the windows of a CPU whose rings, totals and pending period were
 * loaded: each window gets the intervals the header's rule gives it for the newest interval,
 * and fine intervals no fine window holds any more are kept coarse, as if they had been added
 * one by one. */
static int cpu_rebuild(History *h, CpuHistory *c)
{
        IntervalRing *rings[2] = {&c->fine, &c->coarse};
        uint64_t e = c->last_start_ns + h->opt.interval_ns;

        e = e < c->last_start_ns ? UINT64_MAX : e;
        for (unsigned k = 0; k < 2; k++) {
                IntervalRing *r = rings[k];

                ring_clear_queues(r);
                for (uint32_t seq = ring_first_seq(r); seq != r->end_seq; seq++) {
                        ring_queue_seq(r, seq);
                }
        }
        for (unsigned w = 0; w < WINDOWS; w++) {
                Window *win = &c->win[w];
                IntervalRing *r = window_ring(c, win);
                uint64_t cutoff = c->have_last && e > spans[w].ns ? e - spans[w].ns : 0;

                sum_clear(win->sum);
                win->first = ring_first_seq(r);
                while (win->first != r->end_seq && ring_seq(r, win->first)->start_ns < cutoff) {
                        win->first++;
                }
                for (uint32_t seq = win->first; seq != r->end_seq; seq++) {
                        if (interval_reserve(ring_seq(r, seq), &win->sum, 1) < 0) {
                                return -ENOMEM;
                        }
                        interval_apply(ring_seq(r, seq), NULL, &win->sum, 1, false, NULL);
                }
                if (win->coarse && c->pending->intervals > 0 &&
                    sum_add_sum(win->sum, c->pending) < 0) {
                        return -ENOMEM;
                }
        }
        if (h->age_window >= 0) {
                for (uint32_t seq = ring_first_seq(&c->fine); seq != c->win[h->age_window].first;
                     seq++) {
                        interval_age(h, c, ring_seq(&c->fine, seq));
                }
        }
        return 0;
}

/* Makes the CPUs read by @l usable: source ids into @map's numbering (NULL: unchanged), sums
 * decoded, windows made. Nothing of the history is touched. */
static int loader_finish(History *h, Loader *l, const uint16_t *map)
{
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                LoadCpu *lc = &l->cpus[cpu];
                CpuHistory *c = lc->c;
                int r;

                if (!c) {
                        continue;
                }
                if (map) {
                        r = ring_remap(c, &c->fine, map, l->scratch);
                        if (r < 0) {
                                return r;
                        }
                        r = ring_remap(c, &c->coarse, map, l->scratch);
                        if (r < 0) {
                                return r;
                        }
                }
                if (interval_reserve(&lc->total, &c->total, 1) < 0 ||
                    interval_reserve(&lc->pending, &c->pending, 1) < 0) {
                        return -ENOMEM;
                }
                interval_apply(&lc->total, map, &c->total, 1, false, NULL);
                /* A version-1 pending period is folded to the coarse resolution here. */
                interval_apply(&lc->pending, map, &c->pending, 1, false, NULL);
                c->pending->period_end_ns = lc->pending.period_end_ns;
                r = cpu_rebuild(h, c);
                if (r < 0) {
                        return r;
                }
        }
        return 0;
}

static bool hz_matches(uint64_t a, uint64_t b)
{
        uint64_t diff = a > b ? a - b : b - a;

        /* |a - b| / b <= 100 ppm, without overflow or float. */
        return (unsigned __int128)diff * 1000000u <= (unsigned __int128)b * 100u;
}

/* Reads the header up to the CPUs: magic, version, frequency, boot, resolution, names.
 * Returns 0, -EPROTONOSUPPORT, or leaves the error in l->r. */
static int load_header(Loader *l, uint64_t *ret_hz, uint8_t boot[BOOT_ID_SIZE])
{
        FileReader *r = &l->r;
        uint8_t magic[8];
        uint64_t n;

        r_bytes(r, magic, sizeof(magic));
        l->version = (uint32_t)r_uint(r, 4);
        if (r->error == 0 && memcmp(magic, CHECKPOINT_MAGIC, 8) != 0) {
                r_fail(r);
        }
        if (r->error == 0 && (l->version < HISTORY_CHECKPOINT_VERSION_MIN ||
                              l->version > HISTORY_CHECKPOINT_VERSION)) {
                return -EPROTONOSUPPORT;
        }
        *ret_hz = r_uint(r, 8);
        r_bytes(r, boot, BOOT_ID_SIZE);
        if (l->version >= 2 && r_uint(r, 1) != HISTORY_COARSE_SUB_BITS) {
                r_fail(r);
        }
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
        return 0;
}

/* Whether a sound file's ticks and times mean the same here: -ESTALE when not. */
static int load_check_clock(uint64_t file_hz, uint64_t hz, const uint8_t file_boot[BOOT_ID_SIZE])
{
        uint8_t boot[BOOT_ID_SIZE], zero[BOOT_ID_SIZE] = {0};

        boot_id_read(boot);
        if (!hz_matches(file_hz, hz) ||
            (memcmp(file_boot, zero, BOOT_ID_SIZE) != 0 && memcmp(boot, zero, BOOT_ID_SIZE) != 0 &&
             memcmp(file_boot, boot, BOOT_ID_SIZE) != 0)) {
                return -ESTALE;
        }
        return 0;
}

/* Each section of the checkpoint is checked in the order it is read; a bad one refuses the
 * whole file. */
/* Gives each source name of the file its id in @t, into l->map; *@ret_identity when every id
 * is the file's index. Returns 0 or a negative errno (attrib_table_id()). */
static int map_names(Loader *l, AttribTable *t, bool *ret_identity)
{
        *ret_identity = true;
        for (unsigned i = 0; i < l->n_names; i++) {
                int id = attrib_table_id(t, l->names[i]);

                if (id < 0) {
                        return id;
                }
                l->map[i] = (uint16_t)id;
                *ret_identity = *ret_identity && id == (int)i;
        }
        return 0;
}

int history_load(History *h, AttribTable *t, uint64_t hz, FILE *f)
{
        uint8_t file_boot[BOOT_ID_SIZE];
        uint64_t file_hz = 0, n, crc;
        bool identity = true;
        _cleanup_loader_ Loader *l = NULL;
        FileReader *r;
        int ret;

        if (!h || !t || !f || hz == 0) {
                return -EINVAL;
        }
        l = calloc(1, sizeof(*l));
        if (!l || !(l->scratch = malloc(BLOB_REMAP_MAX))) {
                return -ENOMEM;
        }
        r = &l->r;
        r->f = f;
        crc32_table_init(r->table);
        ret = load_header(l, &file_hz, file_boot);
        if (ret < 0) {
                return ret;
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
        ret = r->error;
        if (ret == 0) {
                ret = load_check_clock(file_hz, hz, file_boot);
        }
        if (ret == 0) {
                ret = map_names(l, t, &identity);
        }
        if (ret == 0) {
                ret = loader_finish(h, l, identity ? NULL : l->map);
        }
        if (ret == 0) {
                for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                        cpu_free(h->cpus[cpu]);
                        h->cpus[cpu] = l->cpus[cpu].c;
                        l->cpus[cpu].c = NULL;
                }
        }
        return ret;
}

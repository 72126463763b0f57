#pragma once

/* Recorded intervals of a real probe, as a compact file that the history's benchmark and its
 * day test replay to fill a history with the shape a real CPU gives (how many buckets its
 * histograms fill, how long its interruptions are), instead of a synthetic guess.
 *
 * The file holds every ProbeSlot exactly (statistics, the three histograms' non-empty
 * buckets), in ticks of the probe's counter. Layout, every number an unsigned LEB128 varint
 * (signed ones zigzagged), after the magic "JHSHAPE1":
 *   hz interval_ns threshold_ns n_intervals
 *   per interval: start (ticks after the first interval's start) (end - start) lost events
 *     gap: count min max sum sumsq   dd: count min max sum sumsq
 *     three histograms (gap, dd negative, dd positive): n, n × (index - previous index, count)
 * The interruptions themselves are not stored (at a thousand a second they would be most of
 * the file): shape_events() makes them again from the gap histogram, whose buckets at and
 * above the threshold hold them, to the bucket. Readers check every bound: a damaged file is
 * refused, never half used. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define SHAPE_MAGIC "JHSHAPE1"

typedef struct ShapeEvent {
        uint64_t offset_ticks; /* from the interval's start */
        uint64_t duration_ticks;
} ShapeEvent;

/* A shape file read into memory; intervals are decoded one at a time by shape_interval(). */
typedef struct Shape {
        uint64_t hz, interval_ns, threshold_ns;
        size_t n;
        uint8_t *data; /* the whole file */
        size_t size;
        size_t *offsets; /* where each interval starts in data */
} Shape;

typedef struct ShapeReader {
        const uint8_t *p, *end;
        bool bad;
} ShapeReader;

static inline unsigned __int128 shape_get(ShapeReader *r)
{
        unsigned __int128 v = 0;

        for (unsigned shift = 0; shift < 133; shift += 7) {
                uint8_t b;

                if (r->p >= r->end) {
                        break;
                }
                b = *r->p++;
                v |= (unsigned __int128)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        return v;
                }
        }
        r->bad = true;
        r->p = r->end;
        return 0;
}

static inline uint64_t shape_get64(ShapeReader *r)
{
        unsigned __int128 v = shape_get(r);

        if (v > UINT64_MAX) {
                r->bad = true;
                return 0;
        }
        return (uint64_t)v;
}

static inline int64_t shape_unzig64(uint64_t u)
{
        return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

static inline __int128 shape_unzig128(unsigned __int128 u)
{
        return (__int128)((u >> 1) ^ (0 - (u & 1)));
}

static inline void shape_put(FILE *f, unsigned __int128 v)
{
        while (v >= 0x80) {
                fputc((int)(v & 0x7f) | 0x80, f);
                v >>= 7;
        }
        fputc((int)v, f);
}

static inline unsigned __int128 shape_zig128(__int128 v)
{
        return ((unsigned __int128)v << 1) ^ (unsigned __int128)(v >> 127);
}

static inline void shape_put_hist(FILE *f, const Histogram *h)
{
        unsigned n = 0, prev = 0;

        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                n += h->counts[i] != 0;
        }
        shape_put(f, n);
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                if (h->counts[i] != 0) {
                        shape_put(f, i - prev);
                        shape_put(f, h->counts[i]);
                        prev = i;
                }
        }
}

/* Writes the header; then call shape_write_interval() @n times. */
static inline void shape_write_header(FILE *f, uint64_t hz, uint64_t interval_ns,
                                      uint64_t threshold_ns, size_t n)
{
        fwrite(SHAPE_MAGIC, 1, 8, f);
        shape_put(f, hz);
        shape_put(f, interval_ns);
        shape_put(f, threshold_ns);
        shape_put(f, n);
}

/* Writes one interval that started @start_ticks after the first one. */
static inline void shape_write_interval(FILE *f, uint64_t start_ticks, const ProbeSlot *s)
{
        shape_put(f, start_ticks);
        shape_put(f, s->end_ticks - s->start_ticks);
        shape_put(f, s->lost_ticks);
        shape_put(f, s->events);
        shape_put(f, s->gap.count);
        shape_put(f, s->gap.min);
        shape_put(f, s->gap.max);
        shape_put(f, s->gap.sum);
        shape_put(f, s->gap.sumsq);
        shape_put(f, s->dd.count);
        shape_put(f, shape_zig128(s->dd.min));
        shape_put(f, shape_zig128(s->dd.max));
        shape_put(f, shape_zig128(s->dd.sum));
        shape_put(f, s->dd.sumsq);
        shape_put_hist(f, &s->gap_hist);
        shape_put_hist(f, &s->dd_hist.neg);
        shape_put_hist(f, &s->dd_hist.pos);
}

static inline void shape_read_hist(ShapeReader *r, Histogram *h)
{
        uint64_t n = shape_get64(r), idx = 0;

        if (n > HIST_BUCKETS) {
                r->bad = true;
                return;
        }
        for (uint64_t k = 0; k < n && !r->bad; k++) {
                uint64_t d = shape_get64(r);

                /* Increasing indexes, each within the histogram. */
                if (d >= HIST_BUCKETS || (k > 0 && d == 0) || idx + d >= HIST_BUCKETS) {
                        r->bad = true;
                        return;
                }
                idx += d;
                if (h) {
                        h->counts[idx] = shape_get64(r);
                } else {
                        (void)shape_get64(r);
                }
        }
}

/* Decodes interval @i of @s (i < s->n) into @slot: its start_ticks is its offset from the
 * first interval's start, plus @base_ticks. Returns 0 or -EBADMSG. */
static inline int shape_interval(const Shape *s, size_t i, uint64_t base_ticks, ProbeSlot *slot)
{
        ShapeReader r = {s->data + s->offsets[i], s->data + s->size, false};

        slot_clear(slot);
        slot->start_ticks = base_ticks + shape_get64(&r);
        slot->end_ticks = slot->start_ticks + shape_get64(&r);
        slot->lost_ticks = shape_get64(&r);
        slot->events = shape_get64(&r);
        slot->gap.count = shape_get64(&r);
        slot->gap.min = shape_get64(&r);
        slot->gap.max = shape_get64(&r);
        slot->gap.sum = shape_get(&r);
        slot->gap.sumsq = shape_get(&r);
        slot->dd.count = shape_get64(&r);
        slot->dd.min = shape_unzig64(shape_get64(&r));
        slot->dd.max = shape_unzig64(shape_get64(&r));
        slot->dd.sum = shape_unzig128(shape_get(&r));
        slot->dd.sumsq = shape_get(&r);
        shape_read_hist(&r, &slot->gap_hist);
        shape_read_hist(&r, &slot->dd_hist.neg);
        shape_read_hist(&r, &slot->dd_hist.pos);
        return r.bad ? -EBADMSG : 0;
}

static inline uint64_t shape_gcd(uint64_t a, uint64_t b)
{
        while (b) {
                uint64_t t = a % b;

                a = b;
                b = t;
        }
        return a;
}

/* The interruptions of @slot, made again from its gap histogram: slot->events of them, the
 * longest first taken from the highest buckets, each as long as its bucket's lower edge but
 * never below @threshold_ticks, and spread evenly over the interval in an order that mixes
 * long and short ones (a fixed stride through them). Writes at most @max into @ev and returns
 * how many the slot has. */
static inline size_t shape_events(const ProbeSlot *slot, uint64_t threshold_ticks, ShapeEvent *ev,
                                  size_t max)
{
        uint64_t n = slot->events, span = slot->end_ticks - slot->start_ticks, k = 0, stride;

        for (unsigned i = HIST_BUCKETS; i-- > 0 && k < n;) {
                uint64_t d = histogram_bucket_lower(i);

                d = d < threshold_ticks ? threshold_ticks : d;
                for (uint64_t c = 0; c < slot->gap_hist.counts[i] && k < n; c++, k++) {
                        if (k < max) {
                                ev[k].duration_ticks = d;
                        }
                }
        }
        n = k < max ? k : max;
        /* A stride near n times the golden ratio and coprime with n visits every event once,
         * and puts neighbours (of one bucket) far apart. */
        stride = n * 5 / 8 + 1;
        while (n > 1 && shape_gcd(stride, n) != 1) {
                stride++;
        }
        for (uint64_t j = 0; j < n; j++) {
                ev[j].offset_ticks = ev[j * stride % n].duration_ticks;
        }
        for (uint64_t j = 0; j < n; j++) {
                ev[j].duration_ticks = ev[j].offset_ticks;
        }
        for (uint64_t j = 0; j < n; j++) {
                ev[j].offset_ticks = span / (n + 1) * (j + 1);
        }
        return (size_t)k;
}

/* Skips one interval; returns false when it does not parse. */
static inline bool shape_skip(ShapeReader *r)
{
        for (unsigned k = 0; k < 14; k++) {
                (void)shape_get(r);
        }
        for (unsigned k = 0; k < 3; k++) {
                shape_read_hist(r, NULL);
        }
        return !r->bad;
}

static inline void shape_free(Shape *s)
{
        free(s->data);
        free(s->offsets);
        memset(s, 0, sizeof(*s));
}

/* Reads the shape file @path into @s. Returns 0, -errno of the read, or -EBADMSG. */
static inline int shape_read(const char *path, Shape *s)
{
        FILE *f = fopen(path, "re");
        ShapeReader r;
        uint64_t n;
        long size;

        memset(s, 0, sizeof(*s));
        if (!f) {
                return -errno;
        }
        if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 8 || fseek(f, 0, SEEK_SET) < 0 ||
            !(s->data = malloc((size_t)size)) ||
            fread(s->data, 1, (size_t)size, f) != (size_t)size) {
                fclose(f);
                shape_free(s);
                return -EBADMSG;
        }
        fclose(f);
        s->size = (size_t)size;
        r = (ShapeReader){s->data + 8, s->data + s->size, false};
        s->hz = shape_get64(&r);
        s->interval_ns = shape_get64(&r);
        s->threshold_ns = shape_get64(&r);
        n = shape_get64(&r);
        if (memcmp(s->data, SHAPE_MAGIC, 8) != 0 || r.bad || s->hz == 0 || s->interval_ns == 0 ||
            n == 0 || n > s->size || !(s->offsets = calloc(n, sizeof(size_t)))) {
                shape_free(s);
                return -EBADMSG;
        }
        for (s->n = 0; s->n < n; s->n++) {
                s->offsets[s->n] = (size_t)(r.p - s->data);
                if (!shape_skip(&r)) {
                        shape_free(s);
                        return -EBADMSG;
                }
        }
        if (r.p != r.end) {
                shape_free(s);
                return -EBADMSG;
        }
        return 0;
}

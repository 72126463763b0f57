/* The scale fixture's text format, one item per line:
 *
 *   jitterd-scale-fixture 1
 *   origin TEXT
 *   hz HZ
 *   floor TICKS band TICKS
 *   then per interval:
 *   interval DURATION LOST EVENTS  GAP_COUNT GAP_SUM GAP_SUMSQ GAP_MIN GAP_MAX
 *            DD_COUNT DD_SUM DD_SUMSQ DD_MIN DD_MAX            (on one line)
 *   gap INDEX:COUNT ...        gap histogram buckets (histogram_index())
 *   neg INDEX:COUNT ...        diff-of-diff, negative side (by magnitude)
 *   pos INDEX:COUNT ...        diff-of-diff, non-negative side
 *   pairs CELL:COUNT ...       (previous gap, gap) cells: previous * 2 * HIST_SUB + gap
 *   ring DELTA:DURATION ...    interruptions in time order: each one's start after the
 *                              previous one's (the first one's: after the interval's start)
 *
 * All values are decimal (sums and squares may need 128 bits), in ticks of HZ. */

#include "scale-fixture.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "util.h"

#define MAGIC "jitterd-scale-fixture 1"
/* Cells of the probe's pair table: (previous gap, gap) both below 2 * HIST_SUB ticks. */
#define PAIR_CELLS_MAX (4u * HIST_SUB * HIST_SUB)

int scale_fixture_new(ScaleFixture **ret)
{
        ScaleFixture *x = calloc(1, sizeof(*x));

        if (!x) {
                return -ENOMEM;
        }
        *ret = x;
        return 0;
}

void scale_interval_clear(ScaleInterval *iv)
{
        free(iv->gap_hist);
        free(iv->dd_neg);
        free(iv->dd_pos);
        free(iv->pairs);
        free(iv->ring);
        memset(iv, 0, sizeof(*iv));
}

ScaleFixture *scale_fixture_free(ScaleFixture *x)
{
        if (!x) {
                return NULL;
        }
        for (size_t i = 0; i < x->n_intervals; i++) {
                scale_interval_clear(&x->intervals[i]);
        }
        free(x->intervals);
        free(x);
        return NULL;
}

static void *copy_array(const void *src, size_t n, size_t size, bool *failed)
{
        void *p;

        if (n == 0) {
                return NULL;
        }
        p = malloc(n * size);
        if (!p) {
                *failed = true;
                return NULL;
        }
        memcpy(p, src, n * size);
        return p;
}

static int event_cmp(const void *a, const void *b)
{
        const ScaleEvent *x = a, *y = b;

        return x->offset_ticks < y->offset_ticks ? -1 : x->offset_ticks > y->offset_ticks;
}

int scale_fixture_add(ScaleFixture *x, const ScaleInterval *iv)
{
        ScaleInterval *a = reallocarray(x->intervals, x->n_intervals + 1, sizeof(*a));
        ScaleInterval c = *iv;
        bool failed = false;

        if (!a) {
                return -ENOMEM;
        }
        x->intervals = a;
        c.gap_hist = copy_array(iv->gap_hist, iv->n_gap_hist, sizeof(ScaleCount), &failed);
        c.dd_neg = copy_array(iv->dd_neg, iv->n_dd_neg, sizeof(ScaleCount), &failed);
        c.dd_pos = copy_array(iv->dd_pos, iv->n_dd_pos, sizeof(ScaleCount), &failed);
        c.pairs = copy_array(iv->pairs, iv->n_pairs, sizeof(ScaleCount), &failed);
        c.ring = copy_array(iv->ring, iv->n_ring, sizeof(ScaleEvent), &failed);
        if (failed) {
                scale_interval_clear(&c);
                return -ENOMEM;
        }
        /* The ring in time order, as the probe pushes it and the format stores it. */
        qsort(c.ring, c.n_ring, sizeof(*c.ring), event_cmp);
        x->intervals[x->n_intervals++] = c;
        return 0;
}

/* --- writing ------------------------------------------------------------------------------ */

/* Writes " " @sign and @v in decimal. */
static void put_u128(FILE *f, const char *sign, unsigned __int128 v)
{
        char buf[48];
        size_t i = sizeof(buf);

        buf[--i] = 0;
        do {
                buf[--i] = (char)('0' + (int)(v % 10));
                v /= 10;
        } while (v > 0);
        fprintf(f, " %s%s", sign, buf + i);
}

static void put_i128(FILE *f, __int128 v)
{
        if (v < 0) {
                put_u128(f, "-", -(unsigned __int128)v);
        } else {
                put_u128(f, "", (unsigned __int128)v);
        }
}

static void put_counts(FILE *f, const char *key, const ScaleCount *c, size_t n)
{
        fputs(key, f);
        for (size_t i = 0; i < n; i++) {
                fprintf(f, " %u:%llu", c[i].index, (unsigned long long)c[i].count);
        }
        fputc('\n', f);
}

int scale_fixture_write(const ScaleFixture *x, FILE *f)
{
        fprintf(f, "%s\norigin %s\nhz %llu\nfloor %llu band %llu\n", MAGIC, x->origin,
                (unsigned long long)x->hz, (unsigned long long)x->floor_ticks,
                (unsigned long long)x->band_ticks);
        for (size_t i = 0; i < x->n_intervals; i++) {
                const ScaleInterval *iv = &x->intervals[i];

                fprintf(f, "interval %llu %llu %llu", (unsigned long long)iv->duration_ticks,
                        (unsigned long long)iv->lost_ticks, (unsigned long long)iv->events);
                fprintf(f, " %llu", (unsigned long long)iv->gap.count);
                put_u128(f, "", iv->gap.sum);
                put_u128(f, "", iv->gap.sumsq);
                fprintf(f, " %llu %llu %llu", (unsigned long long)iv->gap.min,
                        (unsigned long long)iv->gap.max, (unsigned long long)iv->dd.count);
                put_i128(f, iv->dd.sum);
                put_u128(f, "", iv->dd.sumsq);
                fprintf(f, " %lld %lld\n", (long long)iv->dd.min, (long long)iv->dd.max);
                put_counts(f, "gap", iv->gap_hist, iv->n_gap_hist);
                put_counts(f, "neg", iv->dd_neg, iv->n_dd_neg);
                put_counts(f, "pos", iv->dd_pos, iv->n_dd_pos);
                put_counts(f, "pairs", iv->pairs, iv->n_pairs);
                fputs("ring", f);
                for (size_t k = 0; k < iv->n_ring; k++) {
                        uint64_t prev = k > 0 ? iv->ring[k - 1].offset_ticks : 0;

                        fprintf(f, " %llu:%llu",
                                (unsigned long long)(iv->ring[k].offset_ticks - prev),
                                (unsigned long long)iv->ring[k].duration_ticks);
                }
                fputc('\n', f);
        }
        return ferror(f) || fflush(f) != 0 ? -EIO : 0;
}

/* --- reading ------------------------------------------------------------------------------ */

/* Parses an unsigned decimal at *@p (after blanks) up to @max; advances *@p. */
static bool get_u128(const char **p, unsigned __int128 max, unsigned __int128 *ret)
{
        const char *q = *p;
        unsigned __int128 v = 0;

        while (*q == ' ') {
                q++;
        }
        if (!isdigit((unsigned char)*q)) {
                return false;
        }
        for (; isdigit((unsigned char)*q); q++) {
                unsigned d = (unsigned)(*q - '0');

                if (v > (max - d) / 10) {
                        return false;
                }
                v = v * 10 + d;
        }
        *p = q;
        *ret = v;
        return true;
}

static bool get_u64(const char **p, uint64_t *ret)
{
        unsigned __int128 v;

        if (!get_u128(p, UINT64_MAX, &v)) {
                return false;
        }
        *ret = (uint64_t)v;
        return true;
}

/* A signed value of at most @max in magnitude. */
static bool get_signed(const char **p, unsigned __int128 max, __int128 *ret)
{
        unsigned __int128 v;
        bool neg;

        while (**p == ' ') {
                (*p)++;
        }
        neg = **p == '-';
        *p += neg;
        if (!get_u128(p, max, &v)) {
                return false;
        }
        *ret = neg ? -(__int128)v : (__int128)v;
        return true;
}

static bool get_i64(const char **p, int64_t *ret)
{
        __int128 v;

        if (!get_signed(p, INT64_MAX, &v)) {
                return false;
        }
        *ret = (int64_t)v;
        return true;
}

/* "interval ..." into @iv's scalars. */
static bool parse_interval(const char *p, ScaleInterval *iv)
{
        const unsigned __int128 u128_max = ~(unsigned __int128)0;
        unsigned __int128 sum, sumsq, dsumsq;
        __int128 dsum;

        if (!get_u64(&p, &iv->duration_ticks) || !get_u64(&p, &iv->lost_ticks) ||
            !get_u64(&p, &iv->events) || !get_u64(&p, &iv->gap.count) ||
            !get_u128(&p, u128_max, &sum) || !get_u128(&p, u128_max, &sumsq) ||
            !get_u64(&p, &iv->gap.min) || !get_u64(&p, &iv->gap.max) ||
            !get_u64(&p, &iv->dd.count) || !get_signed(&p, u128_max >> 1, &dsum) ||
            !get_u128(&p, u128_max, &dsumsq) || !get_i64(&p, &iv->dd.min) ||
            !get_i64(&p, &iv->dd.max)) {
                return false;
        }
        iv->gap.sum = sum;
        iv->gap.sumsq = sumsq;
        iv->dd.sum = dsum;
        iv->dd.sumsq = dsumsq;
        return *p == 0 || *p == '\n';
}

/* "A:B A:B ..." into a new array of pairs of u64; @limit bounds A. Returns the count or -1. */
static ssize_t parse_pairs(const char *p, uint64_t limit, uint64_t **ret)
{
        uint64_t *a = NULL;
        size_t n = 0, cap = 0;

        for (;;) {
                uint64_t x, y;

                while (*p == ' ') {
                        p++;
                }
                if (*p == 0 || *p == '\n') {
                        break;
                }
                if (!get_u64(&p, &x) || *p++ != ':' || !get_u64(&p, &y) || x >= limit) {
                        free(a);
                        return -1;
                }
                if (n + 2 > cap) {
                        uint64_t *b;

                        cap = cap ? 2 * cap : 64;
                        b = reallocarray(a, cap, sizeof(*a));
                        if (!b) {
                                free(a);
                                return -1;
                        }
                        a = b;
                }
                a[n++] = x;
                a[n++] = y;
        }
        *ret = a;
        return (ssize_t)(n / 2);
}

/* A "KEY A:B ..." line into @ret/@ret_n as counts of index A below @limit. */
static bool parse_counts(const char *line, const char *key, uint64_t limit, ScaleCount **ret,
                         size_t *ret_n)
{
        size_t k = strlen(key);
        uint64_t *a = NULL;
        ssize_t n;

        if (strncmp(line, key, k) != 0 || (line[k] != ' ' && line[k] != '\n' && line[k] != 0)) {
                return false;
        }
        n = parse_pairs(line + k, limit, &a);
        if (n < 0) {
                return false;
        }
        *ret = n > 0 ? calloc((size_t)n, sizeof(**ret)) : NULL;
        if (n > 0 && !*ret) {
                free(a);
                return false;
        }
        for (ssize_t i = 0; i < n; i++) {
                (*ret)[i] = (ScaleCount){.index = (uint32_t)a[2 * i], .count = a[2 * i + 1]};
        }
        *ret_n = (size_t)n;
        free(a);
        return true;
}

static bool parse_ring(const char *line, ScaleInterval *iv)
{
        uint64_t *a = NULL;
        ssize_t n;

        if (strncmp(line, "ring", 4) != 0) {
                return false;
        }
        n = parse_pairs(line + 4, UINT64_MAX, &a);
        if (n < 0) {
                return false;
        }
        iv->ring = n > 0 ? calloc((size_t)n, sizeof(*iv->ring)) : NULL;
        if (n > 0 && !iv->ring) {
                free(a);
                return false;
        }
        for (ssize_t i = 0; i < n; i++) {
                uint64_t prev = i > 0 ? iv->ring[i - 1].offset_ticks : 0;

                if (a[2 * i] > UINT64_MAX - prev) {
                        free(a);
                        return false;
                }
                iv->ring[i] = (ScaleEvent){.offset_ticks = prev + a[2 * i],
                                           .duration_ticks = a[2 * i + 1]};
        }
        iv->n_ring = (size_t)n;
        free(a);
        return true;
}

/* The five lines after "interval": the histograms, the pair cells, the ring. */
static bool read_lists(FILE *f, ScaleInterval *iv, char **line, size_t *cap)
{
        static const char *const keys[] = {"gap", "neg", "pos", "pairs"};
        ScaleCount **lists[] = {&iv->gap_hist, &iv->dd_neg, &iv->dd_pos, &iv->pairs};
        size_t *ns[] = {&iv->n_gap_hist, &iv->n_dd_neg, &iv->n_dd_pos, &iv->n_pairs};

        for (size_t i = 0; i < 4; i++) {
                if (getline(line, cap, f) < 0 ||
                    !parse_counts(*line, keys[i], i < 3 ? HIST_BUCKETS : PAIR_CELLS_MAX, lists[i],
                                  ns[i])) {
                        return false;
                }
        }
        return getline(line, cap, f) >= 0 && parse_ring(*line, iv);
}

static bool read_header(FILE *f, ScaleFixture *x, char **line, size_t *cap)
{
        unsigned long long hz, floor, band;
        ssize_t n;

        if (getline(line, cap, f) < 0 || strncmp(*line, MAGIC, strlen(MAGIC)) != 0) {
                return false;
        }
        n = getline(line, cap, f);
        if (n < 7 || strncmp(*line, "origin ", 7) != 0) {
                return false;
        }
        (*line)[strcspn(*line, "\n")] = 0;
        snprintf(x->origin, sizeof(x->origin), "%s", *line + 7);
        if (getline(line, cap, f) < 0 || sscanf(*line, "hz %llu", &hz) != 1 || hz == 0 ||
            getline(line, cap, f) < 0 ||
            sscanf(*line, "floor %llu band %llu", &floor, &band) != 2) {
                return false;
        }
        x->hz = hz;
        x->floor_ticks = floor;
        x->band_ticks = band;
        return true;
}

int scale_fixture_read(FILE *f, ScaleFixture **ret)
{
        _cleanup_free_ char *line = NULL;
        ScaleFixture *x;
        size_t cap = 0;
        int r;

        r = scale_fixture_new(&x);
        if (r < 0) {
                return r;
        }
        if (!read_header(f, x, &line, &cap)) {
                scale_fixture_free(x);
                return -EBADMSG;
        }
        while (getline(&line, &cap, f) >= 0) {
                ScaleInterval iv = {0};

                if (strncmp(line, "interval ", 9) != 0 || !parse_interval(line + 9, &iv) ||
                    !read_lists(f, &iv, &line, &cap)) {
                        scale_interval_clear(&iv);
                        scale_fixture_free(x);
                        return -EBADMSG;
                }
                r = scale_fixture_add(x, &iv);
                scale_interval_clear(&iv);
                if (r < 0) {
                        scale_fixture_free(x);
                        return r;
                }
        }
        if (x->n_intervals == 0) {
                scale_fixture_free(x);
                return -EBADMSG;
        }
        *ret = x;
        return 0;
}

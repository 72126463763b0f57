#include "attrib.h"
#include "attrib-internal.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open addressing with at most ATTRIB_MAX_SOURCES names keeps the load factor at or below 1/2. */
#define HASH_SLOTS (2 * ATTRIB_MAX_SOURCES)

/* Longest description kept; action lists of shared IRQs can be long. */
#define DESC_MAX 128

/* The SMI count is bits 31:0 of MSR_SMI_COUNT (Intel SDM vol. 4). */
#define SMI_COUNT_MASK UINT64_C(0xffffffff)

struct AttribTable {
        size_t n;
        char names[ATTRIB_MAX_SOURCES][ATTRIB_NAME_MAX];
        char *descriptions[ATTRIB_MAX_SOURCES];
        uint16_t slots[HASH_SLOTS]; /* id + 1; 0 = empty */

        /* Scratch space of the parsers, kept to avoid allocating every interval: one row of
         * counts, and the column of each request's CPU. */
        uint64_t *row;
        size_t row_cap;
        int *cols;
        size_t cols_cap;
};

struct AttribSnapshot {
        /* Call number; a source's previous value is valid when it was read in the call just
         * before (seen[id] == gen - 1), so sources that vanish and come back start over. */
        uint64_t gen;
        int cpu;
        int pid;
        int tid;
        uint64_t values[ATTRIB_MAX_SOURCES];
        uint64_t seen[ATTRIB_MAX_SOURCES];
};

/* FNV-1a: short names, no adversary (names come from the kernel). */
static uint32_t name_hash(const char *s)
{
        uint32_t h = 2166136261u;

        for (; *s; s++) {
                h = (h ^ (unsigned char)*s) * 16777619u;
        }
        return h;
}

int attrib_table_new(AttribTable **ret)
{
        AttribTable *t;

        if (!ret) {
                return -EINVAL;
        }
        t = calloc(1, sizeof(*t));
        if (!t) {
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

AttribTable *attrib_table_free(AttribTable *t)
{
        if (!t) {
                return NULL;
        }
        for (size_t i = 0; i < t->n; i++) {
                free(t->descriptions[i]);
        }
        free(t->row);
        free(t->cols);
        free(t);
        return NULL;
}

/* Slot holding @name, or the empty slot where it would go. */
static size_t table_slot(const AttribTable *t, const char *name)
{
        size_t i = name_hash(name) % HASH_SLOTS;

        while (t->slots[i] != 0 && strcmp(t->names[t->slots[i] - 1], name) != 0) {
                i = (i + 1) % HASH_SLOTS;
        }
        return i;
}

static bool name_valid(const char *name)
{
        return name && name[0] != '\0' && strnlen(name, ATTRIB_NAME_MAX) < ATTRIB_NAME_MAX;
}

int attrib_table_find(const AttribTable *t, const char *name)
{
        size_t slot;

        if (!t || !name_valid(name)) {
                return -ENOENT;
        }
        slot = table_slot(t, name);
        return t->slots[slot] != 0 ? t->slots[slot] - 1 : -ENOENT;
}

int attrib_table_id(AttribTable *t, const char *name)
{
        size_t slot;

        if (!t || !name_valid(name)) {
                return -EINVAL;
        }
        slot = table_slot(t, name);
        if (t->slots[slot] != 0) {
                return t->slots[slot] - 1;
        }
        if (t->n >= ATTRIB_MAX_SOURCES) {
                return -ENOSPC;
        }
        strcpy(t->names[t->n], name);
        t->slots[slot] = (uint16_t)(t->n + 1);
        return (int)t->n++;
}

const char *attrib_table_name(const AttribTable *t, unsigned id)
{
        if (!t || id >= t->n) {
                return NULL;
        }
        return t->names[id];
}

const char *attrib_table_description(const AttribTable *t, unsigned id)
{
        if (!t || id >= t->n) {
                return NULL;
        }
        return t->descriptions[id];
}

int attrib_table_set_description(AttribTable *t, unsigned id, const char *description)
{
        char *copy = NULL;

        if (!t || id >= t->n) {
                return -EINVAL;
        }
        if (description && description[0] != '\0') {
                if (t->descriptions[id] && strcmp(t->descriptions[id], description) == 0) {
                        return 0;
                }
                copy = strndup(description, DESC_MAX - 1);
                if (!copy) {
                        return -ENOMEM;
                }
        }
        free(t->descriptions[id]);
        t->descriptions[id] = copy;
        return 0;
}

size_t attrib_table_size(const AttribTable *t)
{
        return t ? t->n : 0;
}

size_t attrib_table_memory_bytes(const AttribTable *t)
{
        size_t n;

        if (!t) {
                return 0;
        }
        n = sizeof(*t) + t->row_cap * sizeof(*t->row) + t->cols_cap * sizeof(*t->cols);
        for (size_t i = 0; i < t->n; i++) {
                n += t->descriptions[i] ? strlen(t->descriptions[i]) + 1 : 0;
        }
        return n;
}

size_t attrib_snapshot_memory_bytes(void)
{
        return sizeof(AttribSnapshot);
}

int attrib_snapshot_new(AttribSnapshot **ret)
{
        AttribSnapshot *s;

        if (!ret) {
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                return -ENOMEM;
        }
        s->cpu = -1;
        *ret = s;
        return 0;
}

AttribSnapshot *attrib_snapshot_free(AttribSnapshot *s)
{
        if (!s) {
                return NULL;
        }
        free(s);
        return NULL;
}

void attrib_delta_clear(AttribDelta *d)
{
        if (d) {
                d->n = 0;
        }
}

void attrib_delta_copy(AttribDelta *dst, const AttribDelta *src)
{
        size_t n = src->n < ATTRIB_MAX_SOURCES ? src->n : ATTRIB_MAX_SOURCES;

        dst->n = n;
        memcpy(dst->items, src->items, n * sizeof(src->items[0]));
}

void attrib_delta_add(AttribDelta *dst, const AttribDelta *src)
{
        uint16_t pos[ATTRIB_MAX_SOURCES]; /* index + 1 in dst->items; 0 = absent */
        size_t n;

        if (!dst || !src || dst == src) {
                if (dst && dst == src) {
                        n = dst->n < ATTRIB_MAX_SOURCES ? dst->n : ATTRIB_MAX_SOURCES;
                        for (size_t i = 0; i < n; i++) {
                                uint64_t c = dst->items[i].count;

                                dst->items[i].count = c > UINT64_MAX - c ? UINT64_MAX : 2 * c;
                        }
                }
                return;
        }
        memset(pos, 0, sizeof(pos));
        if (dst->n > ATTRIB_MAX_SOURCES) {
                dst->n = ATTRIB_MAX_SOURCES;
        }
        for (size_t i = 0; i < dst->n; i++) {
                if (dst->items[i].id < ATTRIB_MAX_SOURCES) {
                        pos[dst->items[i].id] = (uint16_t)(i + 1);
                }
        }
        n = src->n < ATTRIB_MAX_SOURCES ? src->n : ATTRIB_MAX_SOURCES;
        for (size_t i = 0; i < n; i++) {
                const AttribCount *c = &src->items[i];
                AttribCount *d;

                if (c->id >= ATTRIB_MAX_SOURCES || c->count == 0) {
                        continue;
                }
                if (pos[c->id] == 0) {
                        /* Cannot overflow: dst holds distinct ids below ATTRIB_MAX_SOURCES. */
                        if (dst->n >= ATTRIB_MAX_SOURCES) {
                                continue;
                        }
                        dst->items[dst->n] = (AttribCount){.id = c->id, .count = 0};
                        pos[c->id] = (uint16_t)(++dst->n);
                }
                d = &dst->items[pos[c->id] - 1];
                d->count = d->count > UINT64_MAX - c->count ? UINT64_MAX : d->count + c->count;
        }
}

uint64_t attrib_delta_get(const AttribDelta *d, unsigned id)
{
        size_t n;

        if (!d) {
                return 0;
        }
        n = d->n < ATTRIB_MAX_SOURCES ? d->n : ATTRIB_MAX_SOURCES;
        for (size_t i = 0; i < n; i++) {
                if (d->items[i].id == id) {
                        return d->items[i].count;
                }
        }
        return 0;
}

/* Records that source @id reads @value now in @s, and appends what it moved since the
 * previous call to @delta. */
static void snap_record(AttribSnapshot *s, unsigned id, uint64_t value, AttribDelta *delta)
{
        uint64_t prev_seen = s->seen[id];

        if (prev_seen == s->gen) {
                return; /* the same name twice in one read: keep the first */
        }
        if (prev_seen != 0 && prev_seen + 1 == s->gen && value > s->values[id] &&
            delta->n < ATTRIB_MAX_SOURCES) {
                delta->items[delta->n++] =
                        (AttribCount){.id = (uint16_t)id, .count = value - s->values[id]};
        }
        s->values[id] = value;
        s->seen[id] = s->gen;
}

static const char *skip_blanks(const char *p, const char *end)
{
        while (p < end && (*p == ' ' || *p == '\t')) {
                p++;
        }
        return p;
}

/* Parses a decimal number at *@p; advances *@p past it. False when there is none or it does
 * not fit. */
static bool parse_u64(const char **p, const char *end, uint64_t *ret)
{
        const char *q = *p;
        uint64_t v = 0;

        if (q >= end || !isdigit((unsigned char)*q)) {
                return false;
        }
        for (; q < end && isdigit((unsigned char)*q); q++) {
                unsigned d = (unsigned)(*q - '0');

                if (v > (UINT64_MAX - d) / 10) {
                        return false;
                }
                v = v * 10 + d;
        }
        if (q < end && !isspace((unsigned char)*q)) {
                return false; /* "5-edge" is text, not a count */
        }
        *p = q;
        *ret = v;
        return true;
}

/* Maps the header "CPU0 CPU2 CPU3" to the column of each request's CPU (-1: not shown, the
 * CPU is offline). Returns the number of columns, or -EBADMSG for a header that is not one. */
static int parse_header(const char *line, const char *end, const AttribRequest *reqs, size_t n,
                        int *cols)
{
        const char *p = line;
        int ncols = 0;

        for (size_t i = 0; i < n; i++) {
                cols[i] = -1;
        }
        for (;;) {
                uint64_t cpu;

                while (p < end && isspace((unsigned char)*p)) {
                        p++;
                }
                if (p >= end) {
                        break;
                }
                if (end - p < 4 || strncmp(p, "CPU", 3) != 0) {
                        return -EBADMSG;
                }
                p += 3;
                if (!parse_u64(&p, end, &cpu)) {
                        return -EBADMSG;
                }
                for (size_t i = 0; i < n; i++) {
                        if ((uint64_t)reqs[i].cpu == cpu) {
                                cols[i] = ncols;
                        }
                }
                if (ncols == INT_MAX) {
                        return -EBADMSG;
                }
                ncols++;
        }
        return ncols > 0 ? ncols : -EBADMSG;
}

static bool label_valid(const char *p, size_t len)
{
        if (len == 0) {
                return false;
        }
        for (size_t i = 0; i < len; i++) {
                if (!isgraph((unsigned char)p[i])) {
                        return false;
                }
        }
        return true;
}

static bool label_numeric(const char *p, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char)p[i])) {
                        return false;
                }
        }
        return len > 0;
}

/* "12-edge", "5-fasteoi", "512000-edge": the hardware IRQ number and trigger, not a name. */
static bool token_is_hwirq(const char *p, size_t len)
{
        size_t i = 0;

        while (i < len && isdigit((unsigned char)p[i])) {
                i++;
        }
        return i > 0 && i + 1 < len && p[i] == '-';
}

/* Copies @p..@end with runs of blanks collapsed into one space into @out. */
static void collapse_blanks(const char *p, const char *end, char *out, size_t size)
{
        size_t o = 0;
        bool space = false;

        p = skip_blanks(p, end);
        for (; p < end && o + 1 < size; p++) {
                if (*p == ' ' || *p == '\t') {
                        space = true;
                        continue;
                }
                if (space && o + 2 < size) {
                        out[o++] = ' ';
                }
                space = false;
                out[o++] = *p;
        }
        out[o] = '\0';
}

/* The description of an IRQ row from the text after its counts. For a device IRQ
 * ("IO-APIC   16-fasteoi   ehci_hcd:usb1, snd_hda_intel") the action names at its end, where
 * the kernel puts them; when there are none, the whole text. For an architecture row ("Local
 * timer interrupts") the whole text. */
static void irq_description(const char *p, const char *end, bool numeric, char *out, size_t size)
{
        const char *start, *q;

        while (end > p && isspace((unsigned char)end[-1])) {
                end--;
        }
        p = skip_blanks(p, end);
        if (!numeric || p >= end) {
                collapse_blanks(p, end, out, size);
                return;
        }
        /* Walk back over the last token, then over earlier ones that end in ',' (the action
         * list "a, b, c"). */
        start = end;
        for (;;) {
                q = start;
                while (q > p && !isspace((unsigned char)q[-1])) {
                        q--;
                }
                start = q;
                q = start;
                while (q > p && isspace((unsigned char)q[-1])) {
                        q--;
                }
                if (q > p && q[-1] == ',') {
                        start = q;
                        continue;
                }
                break;
        }
        if (start == p || (memchr(start, ' ', (size_t)(end - start)) == NULL &&
                           token_is_hwirq(start, (size_t)(end - start)))) {
                collapse_blanks(p, end, out, size);
                return;
        }
        collapse_blanks(start, end, out, size);
}

/* Reads the header line of @text (up to @eol) into the column of each request's CPU, and
 * makes room for one row of counts. Returns the number of columns, 0 when there is nothing to
 * attribute (not the format we know, or none of the CPUs shown), or -ENOMEM. */
static int parse_columns(AttribTable *t, const char *text, const char *eol,
                         const AttribRequest *reqs, size_t n, int *cols)
{
        bool any = false;
        int ncols;

        ncols = parse_header(text, eol, reqs, n, cols);
        if (ncols < 0) {
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                any = any || cols[i] >= 0;
        }
        if (!any) {
                return 0;
        }
        if ((size_t)ncols > t->row_cap) {
                uint64_t *row = reallocarray(t->row, (size_t)ncols, sizeof(*row));

                if (!row) {
                        return -ENOMEM;
                }
                t->row = row;
                t->row_cap = (size_t)ncols;
        }
        return ncols;
}

/* Records one row (@p up to @eol) of /proc/interrupts (@irq true) or /proc/softirqs, of
 * @ncols columns, for every request. Returns 0, or the error of a source that does not fit in
 * the table. */
static int parse_row(AttribTable *t, const char *p, const char *eol, bool irq, int ncols,
                     AttribRequest *reqs, size_t n, const int *cols)
{
        const char *prefix = irq ? "irq:" : "softirq:";
        const char *label, *colon;
        char name[ATTRIB_NAME_MAX];
        size_t label_len;
        bool any = false;
        int nvals = 0, id, r = 0;

        label = skip_blanks(p, eol);
        colon = memchr(label, ':', (size_t)(eol - label));
        if (!colon) {
                return 0;
        }
        label_len = (size_t)(colon - label);
        if (!label_valid(label, label_len) || strlen(prefix) + label_len >= sizeof(name)) {
                return 0;
        }
        /* ERR and MIS are machine-wide counts printed once, not per CPU. */
        if (irq && label_len == 3 &&
            (strncmp(label, "ERR", 3) == 0 || strncmp(label, "MIS", 3) == 0)) {
                return 0;
        }
        p = colon + 1;
        while (nvals < ncols) {
                p = skip_blanks(p, eol);
                if (!parse_u64(&p, eol, &t->row[nvals])) {
                        break;
                }
                nvals++;
        }
        for (size_t i = 0; i < n; i++) {
                any = any || (cols[i] >= 0 && cols[i] < nvals);
        }
        if (!any) {
                return 0;
        }
        snprintf(name, sizeof(name), "%s%.*s", prefix, (int)label_len, label);
        id = attrib_table_id(t, name);
        if (id < 0) {
                return id;
        }
        if (irq) {
                char desc[DESC_MAX];

                irq_description(p, eol, label_numeric(label, label_len), desc, sizeof(desc));
                r = attrib_table_set_description(t, (unsigned)id, desc);
        }
        for (size_t i = 0; i < n; i++) {
                if (cols[i] >= 0 && cols[i] < nvals) {
                        snap_record(reqs[i].snap, (unsigned)id, t->row[cols[i]], reqs[i].delta);
                }
        }
        return r;
}

/* Parses the text of /proc/interrupts (@irq true) or /proc/softirqs, @len bytes, and records
 * every row for every request. Returns 0, -ENOSPC or -ENOMEM (after recording what fits). */
static int parse_counts(AttribTable *t, const char *text, size_t len, bool irq, AttribRequest *reqs,
                        size_t n)
{
        int *cols = t->cols;
        const char *p, *end = text + len, *eol;
        int ncols, ret = 0;

        eol = memchr(text, '\n', len);
        if (!eol) {
                return 0;
        }
        ncols = parse_columns(t, text, eol, reqs, n, cols);
        if (ncols <= 0) {
                return ncols;
        }
        for (p = eol + 1; p < end; p = eol + 1) {
                int r;

                eol = memchr(p, '\n', (size_t)(end - p));
                if (!eol) {
                        eol = end;
                }
                r = parse_row(t, p, eol, irq, ncols, reqs, n, cols);
                ret = ret ? ret : r;
        }
        return ret;
}

/* Looks for "@key:\t123" in a status file. */
static bool status_value(const char *text, const char *key, uint64_t *ret)
{
        size_t klen = strlen(key);
        const char *p = text;

        while (p && *p) {
                if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
                        const char *q = skip_blanks(p + klen + 1, p + strlen(p));
                        const char *eol = strchr(q, '\n');

                        return parse_u64(&q, eol ? eol : q + strlen(q), ret);
                }
                p = strchr(p, '\n');
                if (p) {
                        p++;
                }
        }
        return false;
}

int attrib_record_status(AttribTable *t, const char *text, AttribRequest *req)
{
        static const struct {
                const char *key;
                const char *name;
        } fields[] = {
                {"voluntary_ctxt_switches", "ctxsw:voluntary"},
                {"nonvoluntary_ctxt_switches", "ctxsw:involuntary"},
        };
        int ret = 0;

        if (!t || !text || !req || !req->snap || !req->delta) {
                return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                uint64_t v;
                int id;

                if (!status_value(text, fields[i].key, &v)) {
                        continue;
                }
                id = attrib_table_id(t, fields[i].name);
                if (id < 0) {
                        ret = ret ? ret : id;
                        continue;
                }
                snap_record(req->snap, (unsigned)id, v, req->delta);
        }
        return ret;
}

int attrib_record_smi(AttribTable *t, uint64_t msr_value, AttribRequest *req)
{
        int id;

        if (!t || !req || !req->snap || !req->delta) {
                return -EINVAL;
        }
        id = attrib_table_id(t, "smi");
        if (id < 0) {
                return id;
        }
        snap_record(req->snap, (unsigned)id, msr_value & SMI_COUNT_MASK, req->delta);
        return 0;
}

/* Checks the requests: each with a snapshot of its own, a delta and a CPU. */
static bool requests_valid(const AttribRequest *reqs, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (!reqs[i].snap || !reqs[i].delta || reqs[i].cpu < 0) {
                        return false;
                }
                for (size_t j = 0; j < i; j++) {
                        if (reqs[j].snap == reqs[i].snap) {
                                return false;
                        }
                }
        }
        return true;
}

/* Starts a new read in the snapshot of @req, and forgets what is no base for a delta. */
static void snap_begin(AttribTable *t, const AttribRequest *req)
{
        AttribSnapshot *s = req->snap;

        attrib_delta_clear(req->delta);
        s->gen++;
        /* Another CPU's or thread's counters are no base for a delta. */
        if (s->cpu != req->cpu) {
                s->gen++;
                s->cpu = req->cpu;
        }
        if (s->pid != req->pid || s->tid != req->tid) {
                int v = attrib_table_find(t, "ctxsw:voluntary");
                int iv = attrib_table_find(t, "ctxsw:involuntary");

                if (v >= 0) {
                        s->seen[v] = 0;
                }
                if (iv >= 0) {
                        s->seen[iv] = 0;
                }
                s->pid = req->pid;
                s->tid = req->tid;
        }
}

int attrib_begin(AttribTable *t, AttribRequest *reqs, size_t n)
{
        if (!t || (n > 0 && !reqs) || !requests_valid(reqs, n)) {
                return -EINVAL;
        }
        if (n > t->cols_cap) {
                int *cols = reallocarray(t->cols, n, sizeof(*cols));

                if (!cols) {
                        return -ENOMEM;
                }
                t->cols = cols;
                t->cols_cap = n;
        }
        for (size_t i = 0; i < n; i++) {
                snap_begin(t, &reqs[i]);
        }
        return 0;
}

int attrib_record_interrupts(AttribTable *t, const char *text, size_t len, AttribRequest *reqs,
                             size_t n)
{
        if (!t || !text || (n > 0 && !reqs) || n > t->cols_cap) {
                return -EINVAL;
        }
        return parse_counts(t, text, len, true, reqs, n);
}

int attrib_record_softirqs(AttribTable *t, const char *text, size_t len, AttribRequest *reqs,
                           size_t n)
{
        if (!t || !text || (n > 0 && !reqs) || n > t->cols_cap) {
                return -EINVAL;
        }
        return parse_counts(t, text, len, false, reqs, n);
}

#include "attrib.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Open addressing with at most ATTRIB_MAX_SOURCES names keeps the load factor at or below 1/2. */
#define HASH_SLOTS (2 * ATTRIB_MAX_SOURCES)

/* Longest description kept; action lists of shared IRQs can be long. */
#define DESC_MAX 128

/* The SMI counter: MSR_SMI_COUNT, bits 31:0 (Intel SDM vol. 4). */
#define MSR_SMI_COUNT 0x34
#define SMI_COUNT_MASK UINT64_C(0xffffffff)

/* Files kept open: /proc/interrupts, /proc/softirqs and a status file per probe thread. */
#define OPEN_FILES 64

struct AttribTable {
        size_t n;
        char names[ATTRIB_MAX_SOURCES][ATTRIB_NAME_MAX];
        char *descriptions[ATTRIB_MAX_SOURCES];
        uint16_t slots[HASH_SLOTS]; /* id + 1; 0 = empty */

        /* Scratch space of attrib_sample_many(), kept to avoid allocating every interval. */
        char *buf;
        size_t buf_cap;
        uint64_t *row;
        size_t row_cap;
        /* Files of the live system kept open: procfs makes their content anew at each read
         * from offset 0, and opening costs more than reading (a path walk each time). */
        struct {
                char path[64];
                int fd; /* -1: free */
        } open_files[OPEN_FILES];
        size_t next_evict;
};

/* After an MSR could not be opened, it is tried again after this many calls. */
#define MSR_RETRY_CALLS 64

enum {
        MSR_CLOSED,
        MSR_OPEN,
        MSR_UNSUPPORTED, /* opened but the read fails: the CPU has no such MSR (VMs) */
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

        int msr_state;
        int msr_fd;
        unsigned msr_retry; /* calls to go before the MSR is tried again */
        char msr_path[PATH_MAX];
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
        for (size_t i = 0; i < OPEN_FILES; i++) {
                t->open_files[i].fd = -1;
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
        for (size_t i = 0; i < OPEN_FILES; i++) {
                if (t->open_files[i].fd >= 0) {
                        close(t->open_files[i].fd);
                }
        }
        free(t->buf);
        free(t->row);
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
        n = sizeof(*t) + t->buf_cap + t->row_cap * sizeof(*t->row);
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
        s->msr_fd = -1;
        s->msr_state = MSR_CLOSED;
        *ret = s;
        return 0;
}

AttribSnapshot *attrib_snapshot_free(AttribSnapshot *s)
{
        if (!s) {
                return NULL;
        }
        if (s->msr_fd >= 0) {
                close(s->msr_fd);
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

static const char *root_or_empty(const char *root)
{
        return root ? root : "";
}

/* An open descriptor of the live system's @path, kept for the next calls (see open_files).
 * Returns it (owned by @t) or a negative errno. */
static int open_kept(AttribTable *t, const char *path)
{
        size_t slot;
        int fd;

        for (size_t i = 0; i < OPEN_FILES; i++) {
                if (t->open_files[i].fd >= 0 && strcmp(t->open_files[i].path, path) == 0) {
                        return t->open_files[i].fd;
                }
        }
        if (strlen(path) >= sizeof(t->open_files[0].path)) {
                return -ENAMETOOLONG;
        }
        /* O_NONBLOCK: a FIFO below the audit root must not hold the loop. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                return -errno;
        }
        slot = t->next_evict;
        t->next_evict = (t->next_evict + 1) % OPEN_FILES;
        if (t->open_files[slot].fd >= 0) {
                close(t->open_files[slot].fd);
        }
        t->open_files[slot].fd = fd;
        strcpy(t->open_files[slot].path, path);
        return fd;
}

/* Closes the kept descriptor @fd (a thread's status file once the thread is gone). */
static void close_kept(AttribTable *t, int fd)
{
        for (size_t i = 0; i < OPEN_FILES; i++) {
                if (t->open_files[i].fd == fd) {
                        close(fd);
                        t->open_files[i].fd = -1;
                }
        }
}

/* Reads all of @fd from offset 0 into the table's buffer, NUL-terminated, at most
 * ATTRIB_FILE_MAX bytes, cut after the last whole line when the bound was reached. Returns the
 * length or a negative errno. */
static ssize_t read_all(AttribTable *t, int fd)
{
        size_t len = 0;

        for (;;) {
                ssize_t k;

                if (len + 1 >= t->buf_cap) {
                        size_t cap = t->buf_cap ? t->buf_cap * 2 : 16384;
                        char *b;

                        if (t->buf_cap >= ATTRIB_FILE_MAX + 1) {
                                break;
                        }
                        if (cap > ATTRIB_FILE_MAX + 1) {
                                cap = ATTRIB_FILE_MAX + 1;
                        }
                        b = realloc(t->buf, cap);
                        if (!b) {
                                return -ENOMEM;
                        }
                        t->buf = b;
                        t->buf_cap = cap;
                }
                k = pread(fd, t->buf + len, t->buf_cap - 1 - len, (off_t)len);
                if (k < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        return -errno;
                }
                if (k == 0) {
                        t->buf[len] = '\0';
                        return (ssize_t)len;
                }
                len += (size_t)k;
        }
        /* Bound reached: a partial last line would give a wrong value, drop it. */
        while (len > 0 && t->buf[len - 1] != '\n') {
                len--;
        }
        t->buf[len] = '\0';
        return (ssize_t)len;
}

/* Reads @path below @root into the table's buffer (see read_all()). On the live system (@root
 * NULL or empty) the file stays open for the next call. Returns the length or a negative
 * errno. */
static ssize_t read_bounded(AttribTable *t, const char *root, const char *path)
{
        _cleanup_close_ int fd = -1;
        char full[PATH_MAX];
        ssize_t len;
        int r;

        if (!root || !root[0]) {
                int kept = open_kept(t, path);

                if (kept < 0) {
                        return kept;
                }
                len = read_all(t, kept);
                if (len < 0 && len != -ENOMEM) {
                        close_kept(t, kept);
                }
                return len;
        }
        r = snprintf(full, sizeof(full), "%s%s", root, path);
        if (r < 0 || (size_t)r >= sizeof(full)) {
                return -ENAMETOOLONG;
        }
        fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                return -errno;
        }
        return read_all(t, fd);
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

/* Parses /proc/interrupts (@irq true) or /proc/softirqs text in the table's buffer and records
 * every row for every request. Returns 0, -ENOSPC or -ENOMEM (after recording what fits). */
/* Long because it parses /proc/interrupts' header and rows, with every malformed case, in one pass
 */
static int parse_counts(AttribTable *t, size_t len, bool irq, AttribRequest *reqs, size_t n,
                        int *cols)
{
        const char *p = t->buf, *end = t->buf + len, *eol;
        const char *prefix = irq ? "irq:" : "softirq:";
        int ncols, ret = 0;
        bool any = false;

        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
                return 0;
        }
        ncols = parse_header(p, eol, reqs, n, cols);
        if (ncols < 0) {
                return 0; /* not the format we know: nothing to attribute */
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
        for (p = eol + 1; p < end; p = eol + 1) {
                char name[ATTRIB_NAME_MAX];
                const char *label, *colon;
                size_t label_len;
                int nvals = 0, id;

                eol = memchr(p, '\n', (size_t)(end - p));
                if (!eol) {
                        eol = end;
                }
                label = skip_blanks(p, eol);
                colon = memchr(label, ':', (size_t)(eol - label));
                if (!colon) {
                        continue;
                }
                label_len = (size_t)(colon - label);
                if (!label_valid(label, label_len) || strlen(prefix) + label_len >= sizeof(name)) {
                        continue;
                }
                /* ERR and MIS are machine-wide counts printed once, not per CPU. */
                if (irq && label_len == 3 &&
                    (strncmp(label, "ERR", 3) == 0 || strncmp(label, "MIS", 3) == 0)) {
                        continue;
                }
                p = colon + 1;
                while (nvals < ncols) {
                        p = skip_blanks(p, eol);
                        if (!parse_u64(&p, eol, &t->row[nvals])) {
                                break;
                        }
                        nvals++;
                }
                any = false;
                for (size_t i = 0; i < n; i++) {
                        any = any || (cols[i] >= 0 && cols[i] < nvals);
                }
                if (!any) {
                        continue;
                }
                snprintf(name, sizeof(name), "%s%.*s", prefix, (int)label_len, label);
                id = attrib_table_id(t, name);
                if (id < 0) {
                        ret = ret ? ret : id;
                        continue;
                }
                if (irq) {
                        char desc[DESC_MAX];
                        int r;

                        irq_description(p, eol, label_numeric(label, label_len), desc,
                                        sizeof(desc));
                        r = attrib_table_set_description(t, (unsigned)id, desc);
                        if (r < 0) {
                                ret = ret ? ret : r;
                        }
                }
                for (size_t i = 0; i < n; i++) {
                        if (cols[i] >= 0 && cols[i] < nvals) {
                                snap_record(reqs[i].snap, (unsigned)id, t->row[cols[i]],
                                            reqs[i].delta);
                        }
                }
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

static int sample_ctxsw(AttribTable *t, const char *root, AttribRequest *req)
{
        static const struct {
                const char *key;
                const char *name;
        } fields[] = {
                {"voluntary_ctxt_switches", "ctxsw:voluntary"},
                {"nonvoluntary_ctxt_switches", "ctxsw:involuntary"},
        };
        char path[64];
        ssize_t len;
        int ret = 0;

        if (req->tid <= 0) {
                return 0;
        }
        if (req->pid > 0) {
                snprintf(path, sizeof(path), "/proc/%d/task/%d/status", req->pid, req->tid);
        } else {
                snprintf(path, sizeof(path), "/proc/%d/status", req->tid);
        }
        len = read_bounded(t, root, path);
        if (len < 0) {
                return len == -ENOMEM ? -ENOMEM : 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                uint64_t v;
                int id;

                if (!status_value(t->buf, fields[i].key, &v)) {
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

static void msr_close(AttribSnapshot *s)
{
        if (s->msr_fd >= 0) {
                close(s->msr_fd);
        }
        s->msr_fd = -1;
        s->msr_state = MSR_CLOSED;
}

static int sample_smi(AttribTable *t, const char *root, AttribRequest *req)
{
        AttribSnapshot *s = req->snap;
        char path[PATH_MAX];
        uint64_t v;
        ssize_t k;
        int r, id;

        r = snprintf(path, sizeof(path), "%s/dev/cpu/%d/msr", root_or_empty(root), req->cpu);
        if (r < 0 || (size_t)r >= sizeof(path)) {
                return 0;
        }
        if (strcmp(path, s->msr_path) != 0) {
                msr_close(s);
                strcpy(s->msr_path, path);
                s->msr_retry = 0;
        }
        if (s->msr_state == MSR_UNSUPPORTED) {
                return 0;
        }
        if (s->msr_state == MSR_CLOSED) {
                /* Most machines have no msr module loaded, or we lack CAP_SYS_RAWIO: tried
                 * again every MSR_RETRY_CALLS calls, an open() that fails costing a path walk. */
                if (s->msr_retry > 0) {
                        s->msr_retry--;
                        return 0;
                }
                s->msr_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (s->msr_fd < 0) {
                        s->msr_retry = MSR_RETRY_CALLS - 1;
                        return 0;
                }
                s->msr_state = MSR_OPEN;
        }
        do {
                k = pread(s->msr_fd, &v, sizeof(v), MSR_SMI_COUNT);
        } while (k < 0 && errno == EINTR);
        if (k != (ssize_t)sizeof(v)) {
                /* EIO: the CPU (or hypervisor) does not implement the MSR; it will not start
                 * to. */
                msr_close(s);
                s->msr_state = MSR_UNSUPPORTED;
                return 0;
        }
        id = attrib_table_id(t, "smi");
        if (id < 0) {
                return id;
        }
        snap_record(s, (unsigned)id, v & SMI_COUNT_MASK, req->delta);
        return 0;
}

int attrib_sample_many(AttribTable *t, const char *root, AttribRequest *reqs, size_t n)
{
        _cleanup_free_ int *cols = NULL;
        int ret = 0, r;
        ssize_t len;

        if (!t || (n > 0 && !reqs)) {
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (!reqs[i].snap || !reqs[i].delta || reqs[i].cpu < 0) {
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++) {
                        if (reqs[j].snap == reqs[i].snap) {
                                return -EINVAL;
                        }
                }
        }
        if (n == 0) {
                return 0;
        }
        cols = calloc(n, sizeof(*cols));
        if (!cols) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                AttribSnapshot *s = reqs[i].snap;

                attrib_delta_clear(reqs[i].delta);
                s->gen++;
                /* Another CPU's or thread's counters are no base for a delta. */
                if (s->cpu != reqs[i].cpu) {
                        s->gen++;
                        s->cpu = reqs[i].cpu;
                }
                if (s->pid != reqs[i].pid || s->tid != reqs[i].tid) {
                        int v = attrib_table_find(t, "ctxsw:voluntary");
                        int iv = attrib_table_find(t, "ctxsw:involuntary");

                        if (v >= 0) {
                                s->seen[v] = 0;
                        }
                        if (iv >= 0) {
                                s->seen[iv] = 0;
                        }
                        s->pid = reqs[i].pid;
                        s->tid = reqs[i].tid;
                }
        }

        len = read_bounded(t, root, "/proc/interrupts");
        if (len >= 0) {
                r = parse_counts(t, (size_t)len, true, reqs, n, cols);
                ret = ret ? ret : r;
        } else if (len == -ENOMEM) {
                ret = -ENOMEM;
        }
        len = read_bounded(t, root, "/proc/softirqs");
        if (len >= 0) {
                r = parse_counts(t, (size_t)len, false, reqs, n, cols);
                ret = ret ? ret : r;
        } else if (len == -ENOMEM) {
                ret = ret ? ret : -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                r = sample_ctxsw(t, root, &reqs[i]);
                ret = ret ? ret : r;
                r = sample_smi(t, root, &reqs[i]);
                ret = ret ? ret : r;
        }
        return ret;
}

int attrib_sample(AttribTable *t, AttribSnapshot *snap, const char *root, int cpu, int pid, int tid,
                  AttribDelta *ret_delta)
{
        AttribRequest req = {
                .snap = snap,
                .cpu = cpu,
                .pid = pid,
                .tid = tid,
                .delta = ret_delta,
        };

        return attrib_sample_many(t, root, &req, 1);
}

#include "ksyms.h"
#include "ksyms-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Open addressing over twice KSYMS_MAX slots keeps probe chains short. */
#define SLOTS (2 * KSYMS_MAX)
/* A line of kallsyms: address, type, a name of at most KSYM_NAME_LEN (512) and a module. */
#define LINE_MAX_BYTES 1024
/* Farther than this above the nearest symbol, an address is not in that function (BPF
 * programs, trampolines): it keeps its hex value. */
#define FUNCTION_MAX_BYTES (1u << 20)
/* An index at least this old is read again when an address falls outside every function it
 * knows, or inside one rather than at its start (callbacks are function starts): a module
 * loaded since. At most one pass per this time, whatever is asked. */
#define REFRESH_NS (600 * NSEC_PER_SEC)

typedef enum SlotState {
        SLOT_FREE,
        SLOT_QUEUED,
        SLOT_NAMED,
} SlotState;

typedef struct Slot {
        uint64_t addr;
        uint8_t state;
        char name[KSYMS_NAME_MAX];
} Slot;

/* One function symbol: its address and where its name is in Index.names. Packed: 12 bytes,
 * for some 100 000 of them. */
typedef struct __attribute__((packed)) Entry {
        uint64_t addr;
        uint32_t name_at;
} Entry;

/* Every function symbol of one pass, sorted by address, names cut to KSYMS_NAME_MAX - 1
 * bytes. */
typedef struct Index {
        Entry *e;
        char *names;
        size_t n, cap, names_len, names_cap;
        bool nonzero; /* some address was not zero: they are shown to us */
} Index;

struct Ksyms {
        int fd;
        size_t used;
        size_t queued;
        bool hidden;
        bool have_index;
        uint64_t index_ns; /* CLOCK_MONOTONIC of the pass that made it */
        unsigned passes;
        Index index;
        Slot slots[SLOTS];
};

int ksyms_new(const char *path, Ksyms **ret)
{
        Ksyms *k = calloc(1, sizeof(*k));

        if (!k) {
                return -ENOMEM;
        }
        k->fd = open(path ? path : "/proc/kallsyms", O_RDONLY | O_CLOEXEC);
        if (k->fd < 0) {
                int r = -errno;

                free(k);
                return r;
        }
        *ret = k;
        return 0;
}

static void index_clear(Index *x)
{
        free(x->e);
        free(x->names);
        *x = (Index){0};
}

Ksyms *ksyms_free(Ksyms *k)
{
        if (k) {
                close(k->fd);
                index_clear(&k->index);
                free(k);
        }
        return NULL;
}

static Slot *slot_find(Ksyms *k, uint64_t addr, bool *ret_found)
{
        size_t i = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ULL >> 32) % SLOTS;

        for (;;) {
                Slot *s = &k->slots[i];

                if (s->state == SLOT_FREE || s->addr == addr) {
                        *ret_found = s->state != SLOT_FREE;
                        return s;
                }
                i = (i + 1) % SLOTS;
        }
}

static void name_hex(Slot *s)
{
        snprintf(s->name, sizeof(s->name), "0x%llx", (unsigned long long)s->addr);
        s->state = SLOT_NAMED;
}

const char *ksyms_lookup(Ksyms *k, uint64_t addr)
{
        bool found;
        Slot *s = slot_find(k, addr, &found);

        if (found) {
                return s->state == SLOT_NAMED ? s->name : NULL;
        }
        if (k->used == KSYMS_MAX) {
                return NULL;
        }
        s->addr = addr;
        k->used++;
        if (k->hidden) {
                name_hex(s);
                return s->name;
        }
        s->state = SLOT_QUEUED;
        k->queued++;
        return NULL;
}

bool ksyms_hidden(const Ksyms *k)
{
        return k->hidden;
}

/* --- the index ------------------------------------------------------------------------------ */

/* Parses "ffffffff81000000 T name [module]" into @ret_addr and @ret_name (its length in
 * @ret_len). Returns false for a line that is not a function. */
static bool parse_line(const char *line, uint64_t *ret_addr, const char **ret_name, size_t *ret_len)
{
        char *end;
        unsigned long long a = strtoull(line, &end, 16);
        const char *name;
        char type;

        if (end == line || *end != ' ') {
                return false;
        }
        type = end[1];
        if (type != 't' && type != 'T' && type != 'w' && type != 'W') {
                return false;
        }
        if (end[2] != ' ') {
                return false;
        }
        name = end + 3;
        *ret_addr = a;
        *ret_name = name;
        *ret_len = strcspn(name, " \t\n");
        return true;
}

static int index_add(Index *x, uint64_t addr, const char *name, size_t len)
{
        if (len > KSYMS_NAME_MAX - 1) {
                len = KSYMS_NAME_MAX - 1;
        }
        if (x->n == x->cap) {
                size_t cap = x->cap ? 2 * x->cap : 4096;
                Entry *e = reallocarray(x->e, cap, sizeof(*e));

                if (!e) {
                        return -ENOMEM;
                }
                x->e = e;
                x->cap = cap;
        }
        if (x->names_len + len + 1 > x->names_cap) {
                size_t cap = x->names_cap ? 2 * x->names_cap : 65536;
                char *b;

                if (cap > UINT32_MAX) {
                        return -ENOMEM;
                }
                b = realloc(x->names, cap);
                if (!b) {
                        return -ENOMEM;
                }
                x->names = b;
                x->names_cap = cap;
        }
        memcpy(x->names + x->names_len, name, len);
        x->names[x->names_len + len] = 0;
        x->e[x->n++] = (Entry){.addr = addr, .name_at = (uint32_t)x->names_len};
        x->names_len += len + 1;
        x->nonzero |= addr != 0;
        return 0;
}

/* A function's padding ("__pfx_name", the bytes before it that kernels built with call
 * padding name): never a function's address, and half of the text symbols of such a kernel,
 * so not kept. */
static bool padding(const char *name, size_t len)
{
        return len > 6 && strncmp(name, "__pfx_", 6) == 0;
}

/* Reads the file once into @x, every function symbol but padding. Returns 0 or a negative errno. */
static int index_read(int fd, Index *x)
{
        char buf[LINE_MAX_BYTES * 8];
        size_t have = 0;

        if (lseek(fd, 0, SEEK_SET) < 0) {
                return -errno;
        }
        for (;;) {
                ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
                char *line = buf, *nl;

                if (got < 0 && errno == EINTR) {
                        continue;
                }
                if (got < 0) {
                        return -errno;
                }
                have += (size_t)got;
                buf[have] = 0;
                while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) || got == 0) {
                        uint64_t addr;
                        const char *name;
                        size_t len;

                        if (nl) {
                                *nl = 0;
                        }
                        if (parse_line(line, &addr, &name, &len) && !padding(name, len) &&
                            index_add(x, addr, name, len) < 0) {
                                return -ENOMEM;
                        }
                        if (!nl) {
                                break;
                        }
                        line = nl + 1;
                }
                if (got == 0) {
                        return 0;
                }
                have -= (size_t)(line - buf);
                memmove(buf, line, have);
                if (have == sizeof(buf) - 1) {
                        have = 0; /* a line longer than any kallsyms line: skip it */
                }
        }
}

/* By address; of symbols at one address (aliases) the first read first: names are stored in
 * the order they are read. */
static int entry_cmp(const void *a, const void *b)
{
        const Entry *x = a, *y = b;

        if (x->addr != y->addr) {
                return x->addr < y->addr ? -1 : 1;
        }
        return x->name_at < y->name_at ? -1 : x->name_at > y->name_at;
}

/* Gives back what the doubling left over: the index stays for the daemon's life. */
static void index_shrink(Index *x)
{
        Entry *e = x->n ? reallocarray(x->e, x->n, sizeof(*e)) : NULL;
        char *b = x->names_len ? realloc(x->names, x->names_len) : NULL;

        if (e) {
                x->e = e;
                x->cap = x->n;
        }
        if (b) {
                x->names = b;
                x->names_cap = x->names_len;
        }
}

/* A new index in place of the old one. Returns 0 or a negative errno (the old one stays). */
static int index_rebuild(Ksyms *k)
{
        Index x = {0};
        int r = index_read(k->fd, &x);

        k->passes++;
        if (r < 0) {
                index_clear(&x);
                return r;
        }
        qsort(x.e, x.n, sizeof(*x.e), entry_cmp);
        index_shrink(&x);
        index_clear(&k->index);
        k->index = x;
        k->have_index = true;
        k->index_ns = now_ns(CLOCK_MONOTONIC);
        k->hidden = !x.nonzero;
        if (k->hidden) {
                index_clear(&k->index); /* every address zero: nothing to look up */
        }
        return 0;
}

/* The first of the symbols at the highest address at or below @addr, or -1. */
static ssize_t index_find(const Index *x, uint64_t addr)
{
        size_t lo = 0, hi = x->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (x->e[mid].addr <= addr) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        if (lo == 0) {
                return -1;
        }
        lo--;
        while (lo > 0 && x->e[lo - 1].addr == x->e[lo].addr) {
                lo--;
        }
        return (ssize_t)lo;
}

/* Names @s from the index: the function's name, with the offset when it is not its start;
 * its hex value when no function holds it. */
static void name_from_index(const Ksyms *k, Slot *s)
{
        ssize_t i = k->hidden ? -1 : index_find(&k->index, s->addr);
        uint64_t off;
        const char *name;
        char tail[24];
        int tl, keep;

        if (i < 0 || s->addr - k->index.e[i].addr >= FUNCTION_MAX_BYTES) {
                name_hex(s);
                return;
        }
        s->state = SLOT_NAMED;
        off = s->addr - k->index.e[i].addr;
        name = k->index.names + k->index.e[i].name_at;
        if (off == 0) {
                snprintf(s->name, sizeof(s->name), "%s", name);
                return;
        }
        tl = snprintf(tail, sizeof(tail), "+0x%llx", (unsigned long long)off);
        keep = (int)sizeof(s->name) - 1 - tl;
        snprintf(s->name, sizeof(s->name), "%.*s%s", keep > 0 ? keep : 0, name, tail);
}

/* Whether a queued address is not at the start of a function the index knows. */
static bool queued_miss(const Ksyms *k)
{
        for (size_t i = 0; i < SLOTS; i++) {
                const Slot *s = &k->slots[i];
                ssize_t j;

                if (s->state != SLOT_QUEUED) {
                        continue;
                }
                j = index_find(&k->index, s->addr);
                if (j < 0 || k->index.e[j].addr != s->addr) {
                        return true;
                }
        }
        return false;
}

int ksyms_resolve(Ksyms *k)
{
        int named = 0, r;

        if (k->queued == 0) {
                return 0;
        }
        /* The first time, or a module loaded since the last pass (rarely: see REFRESH_NS). */
        if (!k->have_index ||
            (!k->hidden && now_ns(CLOCK_MONOTONIC) - k->index_ns >= REFRESH_NS && queued_miss(k))) {
                r = index_rebuild(k);
                if (r < 0 && !k->have_index) {
                        return r;
                }
        }
        for (size_t i = 0; i < SLOTS; i++) {
                if (k->slots[i].state == SLOT_QUEUED) {
                        name_from_index(k, &k->slots[i]);
                        named++;
                }
        }
        k->queued = 0;
        return named;
}

unsigned ksyms_passes(const Ksyms *k)
{
        return k->passes;
}

size_t ksyms_memory_bytes(const Ksyms *k)
{
        if (!k) {
                return sizeof(Ksyms);
        }
        return sizeof(*k) + k->index.cap * sizeof(Entry) + k->index.names_cap;
}

#include "ksyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Open addressing over twice KSYMS_MAX slots keeps probe chains short. */
#define SLOTS (2 * KSYMS_MAX)
/* A line of kallsyms: address, type, a name of at most KSYM_NAME_LEN (512) and a module. */
#define LINE_MAX_BYTES 1024
/* Addresses named per pass: each line is compared with each of them. */
#define PASS_MAX 64
/* Farther than this above the nearest symbol, an address is not in that function (BPF
 * programs, trampolines): it keeps its hex value. */
#define FUNCTION_MAX_BYTES (1u << 20)

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

struct Ksyms {
        int fd;
        size_t used;
        size_t queued;
        bool hidden;
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

Ksyms *ksyms_free(Ksyms *k)
{
        if (k) {
                close(k->fd);
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

/* The best symbol found so far for one queued address. */
typedef struct Best {
        Slot *slot;
        uint64_t addr;
        char name[KSYMS_NAME_MAX];
} Best;

/* Parses "ffffffff81000000 T name [module]" into @ret_addr and @ret_name (cut short to fit).
 * Returns false for a line that is not a function. */
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

static void consider(Best *best, size_t n, uint64_t addr, const char *name, size_t len)
{
        for (size_t i = 0; i < n; i++) {
                if (addr <= best[i].slot->addr && (best[i].name[0] == 0 || addr > best[i].addr)) {
                        best[i].addr = addr;
                        snprintf(best[i].name, sizeof(best[i].name), "%.*s", (int)len, name);
                }
        }
}

int ksyms_resolve(Ksyms *k)
{
        Best best[PASS_MAX];
        char buf[LINE_MAX_BYTES * 8];
        size_t n = 0, have = 0;
        bool nonzero = false;
        int named = 0;

        if (k->queued == 0) {
                return 0;
        }
        for (size_t i = 0; i < SLOTS && n < PASS_MAX; i++) {
                if (k->slots[i].state == SLOT_QUEUED) {
                        best[n++] = (Best){.slot = &k->slots[i]};
                }
        }
        if (lseek(k->fd, 0, SEEK_SET) < 0) {
                return -errno;
        }
        for (;;) {
                ssize_t got = read(k->fd, buf + have, sizeof(buf) - 1 - have);
                char *line = buf, *nl;

                if (got < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
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
                        if (parse_line(line, &addr, &name, &len)) {
                                nonzero |= addr != 0;
                                consider(best, n, addr, name, len);
                        }
                        if (!nl) {
                                break;
                        }
                        line = nl + 1;
                }
                if (got == 0) {
                        break;
                }
                have -= (size_t)(line - buf);
                memmove(buf, line, have);
                if (have == sizeof(buf) - 1) {
                        have = 0; /* a line longer than any kallsyms line: skip it */
                }
        }
        k->hidden = !nonzero;
        for (size_t i = 0; i < n; i++) {
                Slot *s = best[i].slot;
                uint64_t off = s->addr - best[i].addr;

                if (k->hidden || best[i].name[0] == 0 || off >= FUNCTION_MAX_BYTES) {
                        name_hex(s);
                } else if (off == 0) {
                        snprintf(s->name, sizeof(s->name), "%s", best[i].name);
                } else {
                        char tail[24];
                        int tl = snprintf(tail, sizeof(tail), "+0x%llx", (unsigned long long)off);
                        int keep = (int)sizeof(s->name) - 1 - tl;

                        snprintf(s->name, sizeof(s->name), "%.*s%s", keep > 0 ? keep : 0,
                                 best[i].name, tail);
                }
                s->state = SLOT_NAMED;
                named++;
        }
        k->queued -= n;
        return named;
}

size_t ksyms_memory_bytes(void)
{
        return sizeof(Ksyms);
}

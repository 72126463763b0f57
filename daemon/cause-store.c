#include "cause-store.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* First allocation per CPU; doubled as entries come, up to per_cpu. */
#define INITIAL_ENTRIES 256u

typedef struct CpuCauses {
        StoredCauses *ring;
        uint32_t alloc; /* entries allocated */
        uint32_t head;  /* index of the oldest */
        uint32_t n;
        uint64_t kind_ns[CAUSE_KIND_MAX + 1]; /* cause_store_totals() */
} CpuCauses;

struct CauseStore {
        uint32_t per_cpu;
        CpuCauses cpus[CPU_SETSIZE];
};

int cause_store_new(unsigned per_cpu, CauseStore **ret)
{
        CauseStore *s;

        if (per_cpu == 0) {
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                return -ENOMEM;
        }
        s->per_cpu = per_cpu;
        *ret = s;
        return 0;
}

CauseStore *cause_store_free(CauseStore *s)
{
        if (s) {
                for (size_t i = 0; i < CPU_SETSIZE; i++) {
                        free(s->cpus[i].ring);
                }
                free(s);
        }
        return NULL;
}

static const StoredCauses *entry(const CpuCauses *c, uint32_t i)
{
        return &c->ring[(c->head + i) % c->alloc];
}

static uint32_t saturate(uint64_t ns)
{
        return ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* Makes room for one more entry, growing the ring or dropping the oldest. */
static int make_room(CauseStore *s, CpuCauses *c)
{
        uint32_t alloc;
        StoredCauses *ring;

        if (c->n < c->alloc) {
                return 0;
        }
        if (c->alloc == s->per_cpu) {
                c->head = (c->head + 1) % c->alloc;
                c->n--;
                return 0;
        }
        alloc = c->alloc ? c->alloc * 2 : INITIAL_ENTRIES;
        if (alloc > s->per_cpu) {
                alloc = s->per_cpu;
        }
        ring = malloc((size_t)alloc * sizeof(*ring));
        if (!ring) {
                return -ENOMEM;
        }
        for (uint32_t i = 0; i < c->n; i++) {
                ring[i] = *entry(c, i);
        }
        free(c->ring);
        c->ring = ring;
        c->alloc = alloc;
        c->head = 0;
        return 0;
}

int cause_store_add(CauseStore *s, int cpu, uint64_t start_ns, const CauseList *l,
                    const TickConv *conv)
{
        CpuCauses *c;
        StoredCauses *e;
        uint64_t other;
        int r;

        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return -EINVAL;
        }
        c = &s->cpus[cpu];
        if (c->n > 0 && entry(c, c->n - 1)->start_ns > start_ns) {
                return -EINVAL;
        }
        r = make_room(s, c);
        if (r < 0) {
                return r;
        }
        e = &c->ring[(c->head + c->n) % c->alloc];
        *e = (StoredCauses){
                .start_ns = start_ns,
                .unexplained_ns = saturate(tickconv_to_ns(conv, l->unexplained_ticks)),
                .flags = (uint8_t)l->flags,
                .woken_by = l->woken_by,
        };
        other = l->other_ticks;
        for (size_t i = 0; i < l->n; i++) {
                if (i < STORED_CAUSES_MAX) {
                        e->causes[i].kind = (uint8_t)l->causes[i].kind;
                        memcpy(e->causes[i].name, l->causes[i].name, CAUSE_NAME_MAX);
                        e->causes[i].name[CAUSE_NAME_MAX - 1] = 0;
                        e->causes[i].ns = saturate(tickconv_to_ns(conv, l->causes[i].ticks));
                        e->n++;
                } else {
                        other += l->causes[i].ticks;
                }
        }
        e->other_ns = saturate(tickconv_to_ns(conv, other));
        c->n++;
        for (size_t k = 0; k < CAUSE_KIND_MAX; k++) {
                c->kind_ns[k] += tickconv_to_ns(conv, l->kind_ticks[k]);
        }
        c->kind_ns[CAUSE_KIND_MAX] += tickconv_to_ns(conv, l->unexplained_ticks);
        return 0;
}

const StoredCauses *cause_store_find(const CauseStore *s, int cpu, uint64_t start_ns)
{
        const CpuCauses *c;
        uint32_t lo = 0, hi;

        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return NULL;
        }
        c = &s->cpus[cpu];
        hi = c->n;
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (entry(c, mid)->start_ns < start_ns) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        return lo < c->n && entry(c, lo)->start_ns == start_ns ? entry(c, lo) : NULL;
}

void cause_store_reset(CauseStore *s, int cpu)
{
        for (int i = 0; i < CPU_SETSIZE; i++) {
                if (cpu < 0 || cpu == i) {
                        s->cpus[i].n = 0;
                        s->cpus[i].head = 0;
                        memset(s->cpus[i].kind_ns, 0, sizeof(s->cpus[i].kind_ns));
                }
        }
}

void cause_store_totals(const CauseStore *s, int cpu, uint64_t ret_ns[CAUSE_KIND_MAX + 1])
{
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                memset(ret_ns, 0, (CAUSE_KIND_MAX + 1) * sizeof(uint64_t));
                return;
        }
        memcpy(ret_ns, s->cpus[cpu].kind_ns, (CAUSE_KIND_MAX + 1) * sizeof(uint64_t));
}

size_t cause_store_memory_bytes(const CauseStore *s)
{
        size_t bytes = sizeof(*s);

        for (size_t i = 0; i < CPU_SETSIZE; i++) {
                bytes += (size_t)s->cpus[i].alloc * sizeof(StoredCauses);
        }
        return bytes;
}

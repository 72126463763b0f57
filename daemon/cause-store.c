#include "cause-store.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* First allocation per CPU; doubled as entries come, up to per_cpu. */
#define INITIAL_ENTRIES 256u

/* One note of the host counters; UINT64_MAX: unknown. */
typedef struct HostNote {
        uint64_t at_ns;
        uint64_t steal_ns; /* since boot */
        uint64_t smi;      /* since the first note */
} HostNote;

/* Notes in a ring, oldest first from head. */
typedef struct HostRing {
        HostNote *notes;
        uint32_t cap, head, n;
} HostRing;

/* A CPU's notes, allocated with its first. */
typedef struct HostNotes {
        HostRing fine, coarse;
        HostNote last;     /* the newest note */
        uint64_t reset_ns; /* the newest note's at the last reset: spans begin there at most */
        HostNote space[CAUSE_STORE_HOST_FINE + CAUSE_STORE_HOST_COARSE];
} HostNotes;

typedef struct CpuCauses {
        StoredCauses *ring;
        uint32_t alloc; /* entries allocated */
        uint32_t head;  /* index of the oldest */
        uint32_t n;
        uint64_t kind_ns[CAUSE_TOTALS]; /* cause_store_totals() */
        HostNotes *host;
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
                        free(s->cpus[i].host);
                }
                free(s);
        }
        return NULL;
}

static const char *const total_names[CAUSE_TOTALS - CAUSE_KIND_MAX] = {
        "overhead",
        "no_record",
        "unexplained",
};

const char *cause_total_name(unsigned part)
{
        if (part < CAUSE_KIND_MAX) {
                return cause_kind_name((CauseKind)part);
        }
        return part < CAUSE_TOTALS ? total_names[part - CAUSE_KIND_MAX] : NULL;
}

static const StoredCauses *entry(const CpuCauses *c, uint32_t i)
{
        return &c->ring[(c->head + i) % c->alloc];
}

static uint32_t saturate(uint64_t ns)
{
        return ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* Consecutive parts of one interruption in ns: each the difference of the running sums
 * converted, so that they add up to exactly the ns of their sum. */
typedef struct Split {
        const TickConv *conv;
        uint64_t ticks, ns;
} Split;

static uint64_t split_next(Split *sp, uint64_t ticks)
{
        uint64_t before = sp->ns;

        sp->ticks += ticks;
        sp->ns = tickconv_to_ns(sp->conv, sp->ticks);
        return sp->ns - before;
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

/* Fills @e from @l in ns (see Split). */
static void store_entry(StoredCauses *e, uint64_t start_ns, const CauseList *l,
                        const TickConv *conv)
{
        Split sp = {conv, 0, 0};
        uint64_t other = 0;

        *e = (StoredCauses){
                .start_ns = start_ns, .flags = (uint8_t)l->flags, .woken_by = l->woken_by};
        for (size_t i = 0; i < l->n; i++) {
                if (i >= STORED_CAUSES_MAX) {
                        other += l->causes[i].ticks + l->causes[i].overhead_ticks;
                        continue;
                }
                e->causes[i].kind = (uint8_t)l->causes[i].kind;
                memcpy(e->causes[i].name, l->causes[i].name, CAUSE_NAME_MAX);
                e->causes[i].name[CAUSE_NAME_MAX - 1] = 0;
                e->causes[i].ns = saturate(split_next(&sp, l->causes[i].ticks));
                e->causes[i].overhead_ns = saturate(split_next(&sp, l->causes[i].overhead_ticks));
                e->n++;
        }
        e->other_ns = saturate(split_next(&sp, other + l->other_ticks));
        e->no_record_ns = saturate(split_next(&sp, l->no_record_ticks));
        e->unexplained_ns = saturate(split_next(&sp, l->unexplained_ticks));
        e->overhead_ns = saturate(tickconv_to_ns(conv, l->overhead_ticks));
}

/* Adds @l's parts to @c's totals (see Split). */
static void add_totals(CpuCauses *c, const CauseList *l, const TickConv *conv)
{
        Split sp = {conv, 0, 0};

        for (size_t k = 0; k < CAUSE_KIND_MAX; k++) {
                c->kind_ns[k] += split_next(&sp, l->kind_ticks[k]);
        }
        c->kind_ns[CAUSE_TOTAL_OVERHEAD] += split_next(&sp, l->overhead_ticks);
        c->kind_ns[CAUSE_TOTAL_NO_RECORD] += split_next(&sp, l->no_record_ticks);
        c->kind_ns[CAUSE_TOTAL_UNEXPLAINED] += split_next(&sp, l->unexplained_ticks);
}

int cause_store_add(CauseStore *s, int cpu, uint64_t start_ns, const CauseList *l,
                    const TickConv *conv)
{
        CpuCauses *c;
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
        store_entry(&c->ring[(c->head + c->n) % c->alloc], start_ns, l, conv);
        c->n++;
        add_totals(c, l, conv);
        return 0;
}

/* The index (from the oldest) of the first entry of @c that began at or after @start_ns. */
static uint32_t lower_bound(const CpuCauses *c, uint64_t start_ns)
{
        uint32_t lo = 0, hi = c->n;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (entry(c, mid)->start_ns < start_ns) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        return lo;
}

const StoredCauses *cause_store_find(const CauseStore *s, int cpu, uint64_t start_ns)
{
        uint32_t pos = UINT32_MAX;

        return cause_store_find_next(s, cpu, start_ns, &pos);
}

const StoredCauses *cause_store_find_next(const CauseStore *s, int cpu, uint64_t start_ns,
                                          uint32_t *pos)
{
        const CpuCauses *c;
        uint32_t i;

        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return NULL;
        }
        c = &s->cpus[cpu];
        /* Walk on from the previous find while the starts come in order; search otherwise. A
         * walk over a window's interruptions costs one step per entry in all, where a search
         * per interruption missed the cache at each of its steps. */
        i = *pos <= c->n && (*pos == 0 || entry(c, *pos - 1)->start_ns < start_ns)
                    ? *pos
                    : lower_bound(c, start_ns);
        while (i < c->n && entry(c, i)->start_ns < start_ns) {
                i++;
        }
        if (i < c->n && entry(c, i)->start_ns == start_ns) {
                *pos = i + 1;
                return entry(c, i);
        }
        *pos = i;
        return NULL;
}

void cause_store_reset(CauseStore *s, int cpu)
{
        for (int i = 0; i < CPU_SETSIZE; i++) {
                if (cpu < 0 || cpu == i) {
                        s->cpus[i].n = 0;
                        s->cpus[i].head = 0;
                        memset(s->cpus[i].kind_ns, 0, sizeof(s->cpus[i].kind_ns));
                        if (s->cpus[i].host) {
                                s->cpus[i].host->reset_ns = s->cpus[i].host->last.at_ns;
                        }
                }
        }
}

void cause_store_totals(const CauseStore *s, int cpu, uint64_t ret_ns[CAUSE_TOTALS])
{
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                memset(ret_ns, 0, CAUSE_TOTALS * sizeof(uint64_t));
                return;
        }
        memcpy(ret_ns, s->cpus[cpu].kind_ns, CAUSE_TOTALS * sizeof(uint64_t));
}

static void host_push(HostRing *r, const HostNote *note)
{
        if (r->n == r->cap) {
                r->head = (r->head + 1) % r->cap;
                r->n--;
        }
        r->notes[(r->head + r->n) % r->cap] = *note;
        r->n++;
}

static const HostNote *host_at(const HostRing *r, uint32_t i)
{
        return &r->notes[(r->head + i) % r->cap];
}

int cause_store_note_host(CauseStore *s, int cpu, uint64_t at_ns, uint64_t steal_ns,
                          uint64_t smi_delta)
{
        HostNotes *h;
        HostNote note;

        if (cpu < 0 || cpu >= CPU_SETSIZE || at_ns == 0) {
                return -EINVAL;
        }
        if (!s->cpus[cpu].host) {
                h = calloc(1, sizeof(*h));
                if (!h) {
                        return -ENOMEM;
                }
                h->fine = (HostRing){.notes = h->space, .cap = CAUSE_STORE_HOST_FINE};
                h->coarse = (HostRing){.notes = h->space + CAUSE_STORE_HOST_FINE,
                                       .cap = CAUSE_STORE_HOST_COARSE};
                s->cpus[cpu].host = h;
        }
        h = s->cpus[cpu].host;
        if (at_ns < h->last.at_ns) {
                return -EINVAL;
        }
        note = (HostNote){.at_ns = at_ns, .steal_ns = steal_ns, .smi = UINT64_MAX};
        if (smi_delta != UINT64_MAX) {
                note.smi = (h->last.smi != UINT64_MAX ? h->last.smi : 0) + smi_delta;
        }
        host_push(&h->fine, &note);
        if (h->coarse.n == 0 ||
            at_ns - host_at(&h->coarse, h->coarse.n - 1)->at_ns >= CAUSE_STORE_HOST_COARSE_NS) {
                host_push(&h->coarse, &note);
        }
        h->last = note;
        return 0;
}

/* The newest note of @r at or before @at_ns, or NULL. */
static const HostNote *host_before(const HostRing *r, uint64_t at_ns)
{
        uint32_t lo = 0, hi = r->n;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (host_at(r, mid)->at_ns <= at_ns) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        return lo > 0 ? host_at(r, lo - 1) : NULL;
}

int cause_store_host(const CauseStore *s, int cpu, uint64_t since_ns, HostSpan *ret)
{
        const HostNotes *h;
        const HostNote *from;

        *ret = (HostSpan){0};
        if (cpu < 0 || cpu >= CPU_SETSIZE || !s->cpus[cpu].host || s->cpus[cpu].host->fine.n < 2) {
                return -ENODATA;
        }
        h = s->cpus[cpu].host;
        since_ns = since_ns > h->reset_ns ? since_ns : h->reset_ns;
        /* The fine notes where they reach back far enough, else the coarse ones, else the
         * oldest of all. */
        from = host_before(&h->fine, since_ns);
        if (!from) {
                from = host_before(&h->coarse, since_ns);
        }
        if (!from) {
                from = host_at(&h->coarse, 0);
        }
        *ret = (HostSpan){
                .from_ns = from->at_ns,
                .to_ns = h->last.at_ns,
                .have_steal = from->steal_ns != UINT64_MAX && h->last.steal_ns != UINT64_MAX &&
                              h->last.steal_ns >= from->steal_ns,
                .have_smi = from->smi != UINT64_MAX && h->last.smi != UINT64_MAX,
        };
        ret->steal_ns = ret->have_steal ? h->last.steal_ns - from->steal_ns : 0;
        ret->smi = ret->have_smi ? h->last.smi - from->smi : 0;
        return 0;
}

size_t cause_store_memory_bytes(const CauseStore *s)
{
        size_t bytes = sizeof(*s);

        for (size_t i = 0; i < CPU_SETSIZE; i++) {
                bytes += (size_t)s->cpus[i].alloc * sizeof(StoredCauses);
                bytes += s->cpus[i].host ? sizeof(HostNotes) : 0;
        }
        return bytes;
}

#include "cause-store.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(CAUSES_TOO_DEEP < CAUSES_UNTRACED, "a CauseList flag takes CAUSES_UNTRACED's bit");

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

/* A (kind, name) that stored causes of one CPU use. */
typedef struct Name {
        uint32_t refs; /* stored causes that name it; 0: free */
        uint32_t hash;
        uint8_t kind;
        char name[CAUSE_NAME_MAX];
} Name;

/* The names of one CPU: an id is an index into names; slots, a table of 2 * alloc (a power of
 * two) probed linearly, hold id + 1 (0: empty). */
typedef struct Names {
        Name *names;
        uint32_t *slots;
        uint32_t *free_ids; /* ids below used that were freed, n_free of them */
        uint32_t alloc, used, n_free;
} Names;

/* First allocation of names per CPU; doubled as they come, up to CAUSE_STORE_NAMES_MAX. */
#define INITIAL_NAMES 64u

/* One window's sums: every stored interruption from sequence number tail on. */
typedef struct Window {
        uint64_t tail;
        CauseWindow sums;
        CauseSum *names; /* by name id, Names.alloc of them */
} Window;

typedef struct CpuCauses {
        StoredCauses *ring;
        uint32_t alloc; /* entries allocated */
        uint32_t head;  /* index of the oldest */
        uint32_t n;
        uint64_t first_seq; /* sequence number of the oldest: one per interruption stored */
        uint64_t kind_ns[CAUSE_TOTALS]; /* cause_store_totals() */
        Names names;
        Window *windows; /* n_windows of them, allocated with the first entry */
        HostNotes *host;
} CpuCauses;

struct CauseStore {
        uint32_t per_cpu;
        unsigned n_windows;
        size_t bytes; /* allocated for the CPUs: cause_store_memory_bytes() */
        CpuCauses cpus[CPU_SETSIZE];
};

static const CauseWindow no_window;

int cause_store_new(unsigned per_cpu, unsigned n_windows, CauseStore **ret)
{
        CauseStore *s;

        if (per_cpu == 0 || n_windows > CAUSE_STORE_WINDOWS_MAX) {
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                return -ENOMEM;
        }
        s->per_cpu = per_cpu;
        s->n_windows = n_windows;
        *ret = s;
        return 0;
}

static void windows_free(CpuCauses *c, unsigned n_windows)
{
        for (unsigned w = 0; c->windows && w < n_windows; w++) {
                free(c->windows[w].names);
        }
        free(c->windows);
        c->windows = NULL;
}

static void names_free(Names *n)
{
        free(n->names);
        free(n->slots);
        free(n->free_ids);
        *n = (Names){0};
}

CauseStore *cause_store_free(CauseStore *s)
{
        if (s) {
                for (size_t i = 0; i < CPU_SETSIZE; i++) {
                        free(s->cpus[i].ring);
                        free(s->cpus[i].host);
                        names_free(&s->cpus[i].names);
                        windows_free(&s->cpus[i], s->n_windows);
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

static const StoredCauses *entry_seq(const CpuCauses *c, uint64_t seq)
{
        return entry(c, (uint32_t)(seq - c->first_seq));
}

static uint32_t saturate(uint64_t ns)
{
        return ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* FNV-1a over the kind and the name. */
static uint32_t name_hash(uint8_t kind, const char *name)
{
        uint32_t h = 2166136261u ^ kind;

        h *= 16777619u;
        for (const char *p = name; *p; p++) {
                h = (h ^ (uint8_t)*p) * 16777619u;
        }
        return h;
}

/* Puts id @id (whose hash is set) into the slots of @n. */
static void slot_put(Names *n, uint32_t id)
{
        uint32_t mask = 2 * n->alloc - 1, i = n->names[id].hash & mask;

        while (n->slots[i]) {
                i = (i + 1) & mask;
        }
        n->slots[i] = id + 1;
}

/* Grows the names of @c (and every window's sums by name) to twice as many, up to
 * CAUSE_STORE_NAMES_MAX. Returns 0, -ENOSPC at the bound, -ENOMEM. */
static int names_grow(CpuCauses *c, unsigned n_windows, size_t *bytes)
{
        Names *n = &c->names;
        uint32_t alloc = n->alloc ? n->alloc * 2 : INITIAL_NAMES;
        Name *names;
        uint32_t *slots, *free_ids;

        if (n->alloc >= CAUSE_STORE_NAMES_MAX) {
                return -ENOSPC;
        }
        for (unsigned w = 0; w < n_windows; w++) {
                CauseSum *sums = realloc(c->windows[w].names, alloc * sizeof(*sums));

                if (!sums) {
                        return -ENOMEM;
                }
                memset(sums + n->alloc, 0, (alloc - n->alloc) * sizeof(*sums));
                c->windows[w].names = sums;
        }
        names = realloc(n->names, alloc * sizeof(*names));
        if (!names) {
                return -ENOMEM;
        }
        n->names = names;
        free_ids = realloc(n->free_ids, alloc * sizeof(*free_ids));
        if (!free_ids) {
                return -ENOMEM;
        }
        n->free_ids = free_ids;
        slots = calloc(2 * (size_t)alloc, sizeof(*slots));
        if (!slots) {
                return -ENOMEM;
        }
        free(n->slots);
        n->slots = slots;
        *bytes += (size_t)(alloc - n->alloc) *
                  (sizeof(Name) + 3 * sizeof(uint32_t) + n_windows * sizeof(CauseSum));
        n->alloc = alloc;
        for (uint32_t id = 0; id < n->used; id++) {
                if (n->names[id].refs > 0) {
                        slot_put(n, id);
                }
        }
        return 0;
}

/* The id of (@kind, @name) in @c's names, taken once more (a new one when it has none).
 * Returns the id, or a negative errno: -ENOSPC when CAUSE_STORE_NAMES_MAX are in use. */
static int64_t name_take(CpuCauses *c, unsigned n_windows, size_t *bytes, uint8_t kind,
                         const char *name)
{
        Names *n = &c->names;
        uint32_t hash = name_hash(kind, name), id;
        int r;

        for (uint32_t mask = 2 * n->alloc - 1, i = hash & mask; n->alloc && n->slots[i];
             i = (i + 1) & mask) {
                Name *e = &n->names[n->slots[i] - 1];

                if (e->hash == hash && e->kind == kind && strcmp(e->name, name) == 0) {
                        e->refs++;
                        return n->slots[i] - 1;
                }
        }
        if (n->n_free == 0 && n->used == n->alloc && (r = names_grow(c, n_windows, bytes)) < 0) {
                return r;
        }
        id = n->n_free > 0 ? n->free_ids[--n->n_free] : n->used++;
        n->names[id] = (Name){.refs = 1, .hash = hash, .kind = kind};
        snprintf(n->names[id].name, sizeof(n->names[id].name), "%s", name);
        slot_put(n, id);
        return id;
}

/* Gives id @id of @n back once; it is freed (and leaves the slots) at its last. */
static void name_drop(Names *n, uint32_t id)
{
        uint32_t mask = 2 * n->alloc - 1, i = n->names[id].hash & mask;

        if (--n->names[id].refs > 0) {
                return;
        }
        while (n->slots[i] != id + 1) {
                i = (i + 1) & mask;
        }
        /* Deletion from linear probing: each later id of the run that would no longer be
         * found past the hole moves into it. */
        n->slots[i] = 0;
        for (uint32_t j = (i + 1) & mask; n->slots[j]; j = (j + 1) & mask) {
                uint32_t home = n->names[n->slots[j] - 1].hash & mask;

                if (((j - home) & mask) >= ((j - i) & mask)) {
                        n->slots[i] = n->slots[j];
                        n->slots[j] = 0;
                        i = j;
                }
        }
        n->free_ids[n->n_free++] = id;
}

const char *cause_store_name(const CauseStore *s, int cpu, uint32_t name, uint8_t *ret_kind)
{
        const Names *n;

        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return NULL;
        }
        n = &s->cpus[cpu].names;
        if (name >= n->used || n->names[name].refs == 0) {
                return NULL;
        }
        *ret_kind = n->names[name].kind;
        return n->names[name].name;
}

static void acc(uint64_t *x, uint64_t v, bool add)
{
        *x = add ? *x + v : *x - v;
}

/* Adds @e of @c to @w, or takes it away. */
static void window_apply(const CpuCauses *c, Window *w, const StoredCauses *e, bool add)
{
        CauseWindow *s = &w->sums;
        uint64_t woken = 0;

        acc(&s->interruptions, 1, add);
        acc(&s->interruptions_ns, e->duration_ns, add);
        if (e->flags & CAUSES_UNTRACED) {
                return;
        }
        acc(&s->traced, 1, add);
        acc(&s->traced_ns, e->duration_ns, add);
        acc(&s->overhead_ns, e->overhead_ns, add);
        acc(&s->trace_lost_ns, e->flags & CAUSES_LOST ? e->unexplained_ns : 0, add);
        if (e->no_record_ns > 0) {
                acc(&s->no_record, 1, add);
                acc(&s->no_record_ns, e->no_record_ns, add);
                return;
        }
        acc(&s->explained, 1, add);
        acc(&s->explained_ns, e->duration_ns, add);
        acc(&s->trace_lost, (e->flags & CAUSES_LOST) != 0, add);
        acc(&s->other_ns, e->other_ns, add);
        acc(&s->unexplained_ns, e->unexplained_ns, add);
        for (size_t k = 0; k < e->n; k++) {
                const StoredCause *cause = &e->causes[k];
                CauseSum *sum = &w->names[cause->name];
                uint8_t kind = c->names.names[cause->name].kind;

                acc(&sum->ns, cause->ns, add);
                acc(&sum->overhead_ns, cause->overhead_ns, add);
                acc(&sum->count, 1, add);
                woken += kind == CAUSE_TASK || kind == CAUSE_WORK ? cause->ns : 0;
        }
        if (e->woken_by > 0 && e->woken_by < CAUSE_COUNTER_CODES && woken > 0) {
                acc(&s->woken_ns[e->woken_by], woken, add);
                acc(&s->woken_count[e->woken_by], 1, add);
        }
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

/* Forgets the oldest entry of @c: it leaves the windows that hold it, then gives its names
 * back. */
static void drop_oldest(CpuCauses *c, unsigned n_windows)
{
        const StoredCauses *e = entry(c, 0);

        for (unsigned w = 0; w < n_windows; w++) {
                if (c->windows[w].tail == c->first_seq) {
                        window_apply(c, &c->windows[w], e, false);
                        c->windows[w].tail++;
                }
        }
        for (size_t k = 0; k < e->n; k++) {
                name_drop(&c->names, e->causes[k].name);
        }
        c->head = (c->head + 1) % c->alloc;
        c->n--;
        c->first_seq++;
}

/* Makes room for one more entry, growing the ring or dropping the oldest. */
static int make_room(CauseStore *s, CpuCauses *c)
{
        uint32_t alloc;
        StoredCauses *ring;

        if (!c->windows && s->n_windows > 0) {
                c->windows = calloc(s->n_windows, sizeof(*c->windows));
                if (!c->windows) {
                        return -ENOMEM;
                }
                for (unsigned w = 0; w < s->n_windows; w++) {
                        c->windows[w].tail = c->first_seq;
                }
                s->bytes += s->n_windows * sizeof(*c->windows);
        }
        if (c->n < c->alloc) {
                return 0;
        }
        if (c->alloc == s->per_cpu) {
                drop_oldest(c, s->n_windows);
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
        s->bytes += (size_t)(alloc - c->alloc) * sizeof(*ring);
        c->alloc = alloc;
        c->head = 0;
        return 0;
}

/* Fills @e from @l in ns (see Split), its causes' names taken in @c. A cause whose name finds
 * no room counts in other_ns, as those beyond STORED_CAUSES_MAX do. */
static void store_entry(CauseStore *s, CpuCauses *c, StoredCauses *e, const CauseList *l,
                        const TickConv *conv)
{
        Split sp = {conv, 0, 0};
        uint64_t other = 0, spilled = 0;

        e->flags = (uint8_t)l->flags;
        e->woken_by = l->woken_by;
        for (size_t i = 0; i < l->n; i++) {
                uint64_t ns, overhead_ns;
                int64_t id;

                if (i >= STORED_CAUSES_MAX) {
                        other += l->causes[i].ticks + l->causes[i].overhead_ticks;
                        continue;
                }
                ns = split_next(&sp, l->causes[i].ticks);
                overhead_ns = split_next(&sp, l->causes[i].overhead_ticks);
                id = name_take(c, s->n_windows, &s->bytes, (uint8_t)l->causes[i].kind,
                               l->causes[i].name);
                if (id < 0) {
                        spilled += ns + overhead_ns;
                        continue;
                }
                e->causes[e->n++] = (StoredCause){
                        .name = (uint32_t)id,
                        .ns = saturate(ns),
                        .overhead_ns = saturate(overhead_ns),
                };
        }
        e->other_ns = saturate(split_next(&sp, other + l->other_ticks) + spilled);
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

int cause_store_add(CauseStore *s, int cpu, uint64_t start_ns, uint64_t duration_ns,
                    const CauseList *l, const TickConv *conv)
{
        CpuCauses *c;
        StoredCauses *e;
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
        *e = (StoredCauses){.start_ns = start_ns, .duration_ns = duration_ns};
        if (l) {
                store_entry(s, c, e, l, conv);
                add_totals(c, l, conv);
        } else {
                e->flags = CAUSES_UNTRACED;
        }
        c->n++;
        for (unsigned w = 0; w < s->n_windows; w++) {
                window_apply(c, &c->windows[w], e, true);
        }
        return 0;
}

const CauseWindow *cause_store_window(CauseStore *s, int cpu, unsigned window, uint64_t from_ns)
{
        CpuCauses *c;
        Window *w;

        if (cpu < 0 || cpu >= CPU_SETSIZE || window >= s->n_windows) {
                return NULL;
        }
        c = &s->cpus[cpu];
        if (!c->windows) {
                return &no_window;
        }
        w = &c->windows[window];
        while (w->tail < c->first_seq + c->n && entry_seq(c, w->tail)->start_ns < from_ns) {
                window_apply(c, w, entry_seq(c, w->tail), false);
                w->tail++;
        }
        return &w->sums;
}

void cause_store_window_foreach(const CauseStore *s, int cpu, unsigned window,
                                void (*f)(uint8_t kind, const char *name, const CauseSum *sum,
                                          void *userdata),
                                void *userdata)
{
        const CpuCauses *c;

        if (cpu < 0 || cpu >= CPU_SETSIZE || window >= s->n_windows || !s->cpus[cpu].windows) {
                return;
        }
        c = &s->cpus[cpu];
        for (uint32_t id = 0; id < c->names.used; id++) {
                const CauseSum *sum = &c->windows[window].names[id];

                if (c->names.names[id].refs > 0 && sum->count > 0) {
                        f(c->names.names[id].kind, c->names.names[id].name, sum, userdata);
                }
        }
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
                CpuCauses *c = &s->cpus[i];

                if (cpu >= 0 && cpu != i) {
                        continue;
                }
                c->first_seq += c->n;
                c->n = 0;
                c->head = 0;
                memset(c->kind_ns, 0, sizeof(c->kind_ns));
                /* Every name is free: the memory stays, for reuse. */
                if (c->names.alloc) {
                        memset(c->names.slots, 0, 2 * (size_t)c->names.alloc * sizeof(uint32_t));
                }
                c->names.used = c->names.n_free = 0;
                for (unsigned w = 0; c->windows && w < s->n_windows; w++) {
                        c->windows[w].tail = c->first_seq;
                        c->windows[w].sums = (CauseWindow){0};
                        if (c->windows[w].names) {
                                memset(c->windows[w].names, 0,
                                       c->names.alloc * sizeof(*c->windows[w].names));
                        }
                }
                if (c->host) {
                        c->host->reset_ns = c->host->last.at_ns;
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
                s->bytes += sizeof(*h);
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
        return sizeof(*s) + s->bytes;
}

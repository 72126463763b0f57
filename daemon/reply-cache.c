#include "reply-cache.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

typedef struct Entry {
        char *text; /* NULL: none */
        size_t len;
        uint64_t generation; /* the text is current when it is the cache's */
        uint64_t asked_ns;   /* 0: never */
} Entry;

typedef struct CpuEntries {
        Entry e[HISTORY_SPAN_MAX];
} CpuEntries;

struct ReplyCache {
        CpuEntries *cpus[CPU_SETSIZE]; /* allocated when a CPU is first asked for */
        uint64_t generation;
        size_t bytes;
};

int reply_cache_new(ReplyCache **ret)
{
        ReplyCache *c = calloc(1, sizeof(*c));

        if (!c) {
                return -ENOMEM;
        }
        c->generation = 1;
        *ret = c;
        return 0;
}

static void drop(ReplyCache *c, Entry *e)
{
        c->bytes -= e->text ? e->len + 1 : 0;
        free(e->text);
        e->text = NULL;
        e->len = 0;
}

ReplyCache *reply_cache_free(ReplyCache *c)
{
        if (!c) {
                return NULL;
        }
        for (size_t cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                for (size_t s = 0; c->cpus[cpu] && s < HISTORY_SPAN_MAX; s++) {
                        free(c->cpus[cpu]->e[s].text);
                }
                free(c->cpus[cpu]);
        }
        free(c);
        return NULL;
}

void reply_cache_invalidate(ReplyCache *c)
{
        c->generation++;
}

/* The entry of (@cpu, @span), its CPU's entries allocated at the first; NULL out of range or
 * memory. */
static Entry *entry(ReplyCache *c, int cpu, HistorySpan span)
{
        if (cpu < 0 || cpu >= CPU_SETSIZE || (unsigned)span >= HISTORY_SPAN_MAX) {
                return NULL;
        }
        if (!c->cpus[cpu]) {
                c->cpus[cpu] = calloc(1, sizeof(CpuEntries));
                c->bytes += c->cpus[cpu] ? sizeof(CpuEntries) : 0;
        }
        return c->cpus[cpu] ? &c->cpus[cpu]->e[span] : NULL;
}

const char *reply_cache_get(ReplyCache *c, int cpu, HistorySpan span, uint64_t now_ns,
                            size_t *ret_len)
{
        Entry *e = entry(c, cpu, span);

        if (!e) {
                return NULL;
        }
        e->asked_ns = now_ns;
        if (!e->text || e->generation != c->generation) {
                return NULL;
        }
        *ret_len = e->len;
        return e->text;
}

void reply_cache_put(ReplyCache *c, int cpu, HistorySpan span, char *text, size_t len)
{
        Entry *e = entry(c, cpu, span);

        if (!text) {
                return;
        }
        if (!e) {
                free(text);
                return;
        }
        drop(c, e);
        e->text = text;
        e->len = len;
        e->generation = c->generation;
        c->bytes += len + 1;
}

void reply_cache_refresh(ReplyCache *c, uint64_t since_ns,
                         void (*write)(int cpu, HistorySpan span, void *userdata), void *userdata)
{
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                for (int s = 0; c->cpus[cpu] && s < HISTORY_SPAN_MAX; s++) {
                        Entry *e = &c->cpus[cpu]->e[s];

                        if (e->asked_ns == 0 || e->asked_ns < since_ns) {
                                drop(c, e);
                        } else if (!e->text || e->generation != c->generation) {
                                write(cpu, (HistorySpan)s, userdata);
                        }
                }
        }
}

size_t reply_cache_memory_bytes(const ReplyCache *c)
{
        return c->bytes;
}

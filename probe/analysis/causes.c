#include "causes.h"
#include "causes-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Distinct causes followed while walking one interruption, before the longest CAUSES_MAX are
 * kept; the time of any beyond (rare: an interruption is a few contexts) goes to other_ticks. */
#define WORK_MAX 64

#define SLOT_OTHER (-2)
/* The probe's own time: it runs in the kernel (or below it) with no context open, which is
 * pending until a rule charges it (causes.h). As an owner: none yet. */
#define SLOT_PROBE (-3)

static const char *const kind_names[CAUSE_KIND_MAX] = {
        [CAUSE_IRQ] = "irq",   [CAUSE_VECTOR] = "vector", [CAUSE_SOFTIRQ] = "softirq",
        [CAUSE_TASK] = "task", [CAUSE_TIMER] = "timer",   [CAUSE_WORK] = "work",
        [CAUSE_IPI] = "ipi",
};

const char *cause_kind_name(CauseKind kind)
{
        if ((unsigned)kind >= CAUSE_KIND_MAX) {
                return NULL;
        }
        return kind_names[kind];
}

int cause_kind_parse(const char *name, CauseKind *ret)
{
        for (unsigned k = 0; k < CAUSE_KIND_MAX; k++) {
                if (strcmp(name, kind_names[k]) == 0) {
                        *ret = (CauseKind)k;
                        return 0;
                }
        }
        return -EINVAL;
}

static const struct {
        const char *vector;
        const char *counter;
} vector_counters[] = {
        {"local_timer", "irq:LOC"},      {"reschedule", "irq:RES"},
        {"call_function", "irq:CAL"},    {"call_function_single", "irq:CAL"},
        {"irq_work", "irq:IWI"},         {"thermal_apic", "irq:TRM"},
        {"threshold_apic", "irq:THR"},   {"deferred_error_apic", "irq:DFR"},
        {"spurious_apic", "irq:SPU"},    {"error_apic", "irq:ERR"},
        {"x86_platform_ipi", "irq:PLT"},
};

/* The counters of interrupts that cause_counter() gives, by code - 1. */
static const char *const interrupt_counters[] = {
        "irq:LOC", "irq:RES", "irq:CAL", "irq:TLB", "irq:IWI", "irq:TRM",
        "irq:THR", "irq:DFR", "irq:SPU", "irq:ERR", "irq:PLT", "irq:device",
};
_Static_assert(ELEMENTSOF(interrupt_counters) < CAUSE_COUNTER_CODES, "codes beyond the bound");

const char *cause_counter(CauseKind kind, const char *name, char *buf, size_t size)
{
        switch (kind) {
        case CAUSE_VECTOR:
                for (size_t i = 0; i < ELEMENTSOF(vector_counters); i++) {
                        if (strcmp(name, vector_counters[i].vector) == 0) {
                                return vector_counters[i].counter;
                        }
                }
                return NULL;
        case CAUSE_TIMER:
                return "irq:LOC";
        case CAUSE_IPI:
                return strncmp(name, "flush_tlb", 9) == 0 ? "irq:TLB" : "irq:CAL";
        case CAUSE_SOFTIRQ:
                snprintf(buf, size, "softirq:%s", name);
                return buf;
        case CAUSE_TASK:
        case CAUSE_WORK:
                return "ctxsw:involuntary";
        case CAUSE_IRQ:
                return "irq:device";
        default:
                return NULL;
        }
}

uint8_t cause_counter_code(const char *counter)
{
        size_t n = ELEMENTSOF(interrupt_counters);

        for (size_t i = 0; counter && i < n; i++) {
                if (strcmp(counter, interrupt_counters[i]) == 0) {
                        return (uint8_t)(i + 1);
                }
        }
        return 0;
}

const char *cause_counter_of_code(uint8_t code)
{
        return code >= 1 && code <= ELEMENTSOF(interrupt_counters) ? interrupt_counters[code - 1]
                                                                   : NULL;
}

size_t causes_lower_bound(const TraceRecord *records, size_t n, uint64_t ticks)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (records[mid].ticks < ticks) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        return lo;
}

/* A context that is open. It belongs to the task that ran when it began: on a kernel that
 * runs softirqs and IRQ threads in preemptible tasks (PREEMPT_RT) it may stay open while
 * another task runs, and then gets no time until its task runs again. */
typedef struct Frame {
        uint8_t kind;
        uint64_t id;
        int32_t owner;
        uint64_t entry_ticks;
        int slot;
        bool counted;
} Frame;

typedef struct Walk {
        uint64_t start, end, t;
        int32_t probe_pid;
        int32_t current; /* the task that runs */
        int base_slot;   /* where the current task's own time goes; SLOT_PROBE for the probe */
        bool base_counted;
        uint64_t base_acc; /* time given to base_slot since the current task began to run */
        /* The probe's time with no context open since the last charge, and where later
         * stretches of it go: the hard interrupt that began last at the top level, or the
         * task switched in last (SLOT_PROBE: no record inside the interruption yet). */
        uint64_t pending;
        int owner;
        bool lost;        /* the records are incomplete: nothing is charged by rule */
        bool seen_inside; /* a record inside the interruption */
        Frame stack[CAUSES_DEPTH_MAX];
        size_t depth;
        Cause work[WORK_MAX];
        size_t n_work;
        /* The counter of the hard interrupt (an IRQ, a vector, an IPI) that began last (0:
         * none), and whether out->woken_by is final (the probe was switched out). */
        uint8_t last_irq;
        bool woken_set;
        CauseList *out;
} Walk;

static int slot_for(Walk *w, CauseKind kind, const char *name)
{
        for (size_t i = 0; i < w->n_work; i++) {
                if (w->work[i].kind == kind && strcmp(w->work[i].name, name) == 0) {
                        return (int)i;
                }
        }
        if (w->n_work == WORK_MAX) {
                return SLOT_OTHER;
        }
        w->work[w->n_work] = (Cause){.kind = kind};
        snprintf(w->work[w->n_work].name, sizeof(w->work[w->n_work].name), "%s", name);
        return (int)w->n_work++;
}

static void give(Walk *w, int slot, uint64_t ticks, bool *counted)
{
        if (ticks == 0) {
                return;
        }
        if (slot >= 0) {
                w->work[slot].ticks += ticks;
                if (!*counted) {
                        w->work[slot].count++;
                }
        } else {
                w->out->other_ticks += ticks;
        }
        *counted = true;
}

/* Charges the probe's pending time to @slot as its overhead; SLOT_PROBE keeps it pending. */
static void charge(Walk *w, int slot)
{
        if (w->pending == 0 || slot == SLOT_PROBE) {
                return;
        }
        if (w->lost) {
                w->out->unexplained_ticks += w->pending;
        } else {
                if (slot >= 0) {
                        w->work[slot].overhead_ticks += w->pending;
                } else {
                        w->out->other_ticks += w->pending;
                }
                w->out->overhead_ticks += w->pending;
        }
        w->pending = 0;
}

/* The innermost open context of the task that runs, or NULL. */
static Frame *innermost(Walk *w)
{
        for (size_t i = w->depth; i-- > 0;) {
                if (w->stack[i].owner == w->current) {
                        return &w->stack[i];
                }
        }
        return NULL;
}

/* Gives the time from w->t to @ticks (clipped to the interruption) to what runs. */
static void advance(Walk *w, uint64_t ticks)
{
        uint64_t to = ticks < w->start ? w->start : ticks > w->end ? w->end : ticks;
        Frame *f;

        if (to <= w->t) {
                return;
        }
        f = innermost(w);
        if (f) {
                give(w, f->slot, to - w->t, &f->counted);
        } else if (w->base_slot == SLOT_PROBE) {
                w->pending += to - w->t;
        } else {
                give(w, w->base_slot, to - w->t, &w->base_counted);
                w->base_acc += to - w->t;
        }
        w->t = to;
}

static void name_of_unknown(const TraceRecord *r, char *buf, size_t size)
{
        if (r->name[0]) {
                snprintf(buf, size, "%s", r->name);
        } else if (r->kind == CAUSE_IRQ || r->kind == CAUSE_VECTOR || r->kind == CAUSE_SOFTIRQ) {
                snprintf(buf, size, "%llu", (unsigned long long)r->id);
        } else {
                snprintf(buf, size, "0x%llx", (unsigned long long)r->id);
        }
}

static bool inside(const Walk *w, const TraceRecord *r)
{
        return r->ticks >= w->start && r->ticks <= w->end;
}

/* A hard interrupt: an IRQ, a vector, or an IPI's function not inside one (@outermost). */
static bool is_hard(uint8_t kind, bool outermost)
{
        return kind == CAUSE_IRQ || kind == CAUSE_VECTOR || (kind == CAUSE_IPI && outermost);
}

/* With the probe at the top level, @slot's record inside the interruption makes it the owner
 * of the probe's time that follows when it is a hard interrupt (@hard) or nothing owns it
 * yet. */
static void take_over(Walk *w, const TraceRecord *r, int slot, bool hard)
{
        if (inside(w, r) && w->base_slot == SLOT_PROBE && !innermost(w) &&
            (hard || w->owner == SLOT_PROBE)) {
                w->owner = slot;
        }
}

/* An entry of @slot with the probe at the top level: the probe's time so far was the way in
 * to it when it is the first record, else the owner's. */
static void at_top(Walk *w, const TraceRecord *r, int slot, bool hard)
{
        if (inside(w, r) && w->base_slot == SLOT_PROBE && !innermost(w)) {
                charge(w, w->owner == SLOT_PROBE ? slot : w->owner);
                take_over(w, r, slot, hard);
        }
}

static void walk_entry(Walk *w, const TraceRecord *r)
{
        char name[CAUSE_NAME_MAX];
        bool hard;
        int slot;

        if ((unsigned)r->kind >= CAUSE_KIND_MAX || r->kind == CAUSE_TASK) {
                return;
        }
        if (w->depth == CAUSES_DEPTH_MAX) {
                w->out->flags |= CAUSES_TOO_DEEP;
                return;
        }
        name_of_unknown(r, name, sizeof(name));
        hard = is_hard(r->kind, !innermost(w));
        if (hard) {
                char buf[CAUSE_NAME_MAX + 8];

                w->last_irq = cause_counter_code(
                        cause_counter((CauseKind)r->kind, name, buf, sizeof(buf)));
        }
        slot = slot_for(w, (CauseKind)r->kind, name);
        at_top(w, r, slot, hard);
        w->stack[w->depth++] = (Frame){
                .kind = r->kind,
                .id = r->id,
                .owner = w->current,
                .entry_ticks = r->ticks,
                .slot = slot,
        };
}

static void close_frame(Walk *w, size_t i, uint64_t exit_ticks)
{
        if (w->stack[i].entry_ticks < w->start && exit_ticks > w->start) {
                w->out->flags |= CAUSES_CLIPPED;
        }
        if (exit_ticks > w->end && w->stack[i].entry_ticks < w->end) {
                w->out->flags |= CAUSES_CLIPPED;
        }
        memmove(&w->stack[i], &w->stack[i + 1], (w->depth - i - 1) * sizeof(Frame));
        w->depth--;
}

static void walk_exit(Walk *w, const TraceRecord *r)
{
        char name[CAUSE_NAME_MAX];
        bool counted = false;
        uint8_t kind;
        int slot;

        for (size_t i = w->depth; i-- > 0;) {
                Frame *f = &w->stack[i];

                if (f->owner != w->current || f->kind != r->kind || f->id != r->id) {
                        continue;
                }
                /* Contexts of this task opened inside it and still open lost their exits. */
                for (size_t j = w->depth; j-- > i + 1;) {
                        if (w->stack[j].owner == w->current) {
                                w->out->flags |= CAUSES_UNMATCHED;
                                close_frame(w, j, r->ticks);
                        }
                }
                slot = f->slot;
                kind = f->kind;
                close_frame(w, i, r->ticks);
                /* Over before the interruption: it let nobody in. */
                if (!innermost(w) && r->ticks <= w->start) {
                        w->last_irq = 0;
                }
                /* One open since before the start (clipped) owns its way out. */
                if (!innermost(w)) {
                        take_over(w, r, slot, is_hard(kind, true));
                }
                return;
        }
        if ((unsigned)r->kind >= CAUSE_KIND_MAX || r->kind == CAUSE_TASK) {
                return;
        }
        /* An exit whose entry we never saw: that context was open from before the first
         * record (or its entry was lost), so every open context of this task lost its exit,
         * and the time given to the task itself since it began to run was the context's. */
        for (size_t j = w->depth; j-- > 0;) {
                if (w->stack[j].owner == w->current) {
                        w->out->flags |= CAUSES_UNMATCHED;
                        close_frame(w, j, r->ticks);
                }
        }
        if (r->ticks <= w->start) {
                return; /* it ended before the interruption: nothing to move */
        }
        name_of_unknown(r, name, sizeof(name));
        slot = slot_for(w, (CauseKind)r->kind, name);
        if (w->base_slot == SLOT_PROBE) {
                /* The probe's time since the last charge was inside the context, which owns
                 * the way out when nothing else does. */
                give(w, slot, w->pending, &counted);
                w->pending = 0;
                take_over(w, r, slot, is_hard(r->kind, true));
        } else if (w->base_acc > 0) {
                if (w->base_slot >= 0) {
                        w->work[w->base_slot].ticks -= w->base_acc;
                } else {
                        w->out->other_ticks -= w->base_acc;
                }
                give(w, slot, w->base_acc, &counted);
                w->base_acc = 0;
        }
        w->out->flags |= CAUSES_CLIPPED;
}

static void walk_switch(Walk *w, const TraceRecord *r)
{
        char name[CAUSE_NAME_MAX];
        int slot;

        /* A vector and an IPI's function run with interrupts off and cannot be switched out:
         * one still open lost its exit. */
        for (size_t i = w->depth; i-- > 0;) {
                if (w->stack[i].owner == w->current &&
                    (w->stack[i].kind == CAUSE_VECTOR || w->stack[i].kind == CAUSE_IPI)) {
                        w->out->flags |= CAUSES_UNMATCHED;
                        close_frame(w, i, r->ticks);
                }
        }
        if (w->probe_pid < 0) {
                /* Unknown probe: it is whatever ran when the interruption began. */
                w->probe_pid = (int32_t)r->id;
                for (size_t i = 0; i < w->depth; i++) {
                        if (w->stack[i].owner < 0) {
                                w->stack[i].owner = w->probe_pid;
                        }
                }
        }
        if (!w->woken_set && r->pid != w->probe_pid && r->ticks >= w->start) {
                w->woken_set = true;
                w->out->woken_by = w->last_irq;
        }
        if (r->pid == w->probe_pid) {
                slot = SLOT_PROBE;
        } else {
                snprintf(name, sizeof(name), "%.*s:%d", (int)(sizeof(name) - 12),
                         r->name[0] ? r->name : "?", (int)r->pid);
                slot = slot_for(w, CAUSE_TASK, name);
                /* The way to it is the owner's (the first record's: its own), the switch back
                 * and the way out its own. */
                if (inside(w, r)) {
                        if (w->base_slot == SLOT_PROBE) {
                                charge(w, w->owner == SLOT_PROBE ? slot : w->owner);
                        }
                        w->owner = slot;
                }
        }
        w->current = r->pid;
        w->base_acc = 0;
        w->base_counted = false;
        w->base_slot = slot;
}

static int cmp_cause(const void *a, const void *b)
{
        const Cause *x = a, *y = b;
        uint64_t tx = x->ticks + x->overhead_ticks, ty = y->ticks + y->overhead_ticks;

        if (tx != ty) {
                return tx < ty ? 1 : -1;
        }
        if (x->kind != y->kind) {
                return x->kind < y->kind ? -1 : 1;
        }
        return strcmp(x->name, y->name);
}

/* Sorts @w's causes, keeps the longest CAUSES_MAX with time, and sums the rest. */
static void finish(Walk *w)
{
        CauseList *out = w->out;
        size_t kept = 0;

        /* Insertion sort: at most WORK_MAX entries, and no qsort needed for that. */
        for (size_t i = 1; i < w->n_work; i++) {
                Cause c = w->work[i];
                size_t j = i;

                while (j > 0 && cmp_cause(&w->work[j - 1], &c) > 0) {
                        w->work[j] = w->work[j - 1];
                        j--;
                }
                w->work[j] = c;
        }
        for (size_t i = 0; i < w->n_work; i++) {
                if (w->work[i].ticks + w->work[i].overhead_ticks == 0) {
                        continue;
                }
                out->kind_ticks[w->work[i].kind] += w->work[i].ticks;
                if (kept < CAUSES_MAX) {
                        out->causes[kept++] = w->work[i];
                } else {
                        out->other_ticks += w->work[i].ticks + w->work[i].overhead_ticks;
                }
        }
        out->n = kept;
}

/* The probe's time left at the end: the owner's way out; with no record inside at all, time
 * the kernel did not see; else (records that name no cause) unexplained. */
static void settle(Walk *w)
{
        if (w->owner != SLOT_PROBE) {
                charge(w, w->owner);
        } else if (!w->seen_inside && !w->lost) {
                w->out->no_record_ticks += w->pending;
        } else {
                w->out->unexplained_ticks += w->pending;
        }
        w->pending = 0;
}

int causes_analyze(const TraceRecord *records, size_t n, uint64_t start_ticks, uint64_t end_ticks,
                   int probe_pid, unsigned flags, CauseList *ret)
{
        Walk w = {
                .start = start_ticks,
                .end = end_ticks,
                .t = start_ticks,
                .probe_pid = probe_pid,
                .current = probe_pid,
                .base_slot = SLOT_PROBE,
                .owner = SLOT_PROBE,
                .lost = (flags & CAUSES_LOST) != 0,
                .out = ret,
        };

        if (end_ticks < start_ticks) {
                return -EINVAL;
        }
        *ret = (CauseList){.total_ticks = end_ticks - start_ticks, .flags = flags & CAUSES_LOST};
        for (size_t i = 0; i < n; i++) {
                const TraceRecord *r = &records[i];

                if (r->ticks > end_ticks && r->phase != TRACE_EXIT) {
                        break; /* an exit just after the end may still close a context */
                }
                advance(&w, r->ticks);
                w.seen_inside |= inside(&w, r);
                switch (r->phase) {
                case TRACE_ENTRY:
                        walk_entry(&w, r);
                        break;
                case TRACE_EXIT:
                        walk_exit(&w, r);
                        break;
                case TRACE_SWITCH:
                        walk_switch(&w, r);
                        break;
                default:
                        break;
                }
        }
        advance(&w, end_ticks);
        settle(&w);
        for (size_t i = 0; i < w.depth; i++) {
                if (w.stack[i].entry_ticks < end_ticks) {
                        ret->flags |= CAUSES_UNFINISHED;
                }
        }
        finish(&w);
        return 0;
}

/* Unit tests of the store of per-interruption causes: lookup by start (one at a time, and
 * walking on in time order), conversion to ns (the
 * parts of an interruption adding up to its ns), the bound per CPU, order, reset, the totals
 * by part; the host readings (steal, SMI) over windows, fine and coarse. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "causes-internal.h"
#include "cause-store.h"
#include "rng.h"

static TickConv conv;

/* A list of @n causes named c0.. with 1000 * (n - i) ticks each and 100 ticks of overhead,
 * 3 other and 7 ticks unexplained. */
static CauseList list_of(size_t n, unsigned flags)
{
        CauseList l = {.n = n, .unexplained_ticks = 7, .other_ticks = 3, .flags = flags};

        for (size_t i = 0; i < n; i++) {
                l.causes[i].kind = i % 2 ? CAUSE_TASK : CAUSE_VECTOR;
                snprintf(l.causes[i].name, sizeof(l.causes[i].name), "c%zu", i);
                l.causes[i].ticks = 1000 * (n - i);
                l.causes[i].overhead_ticks = 100;
                l.overhead_ticks += 100;
        }
        return l;
}

/* The causes of the interruption of @cpu that began at @start_ns, looked up on their own. */
static const StoredCauses *find(const CauseStore *s, int cpu, uint64_t start_ns)
{
        uint32_t pos = UINT32_MAX;

        return cause_store_find_next(s, cpu, start_ns, &pos);
}

/* The name of stored cause @c of @cpu, its kind in *@kind. */
static const char *name_of(const CauseStore *s, int cpu, const StoredCause *c, uint8_t *kind)
{
        const char *name = cause_store_name(s, cpu, c->name, kind);

        assert_non_null(name);
        return name;
}

static void test_add_find(void **state)
{
        CauseStore *s;
        CauseList l = list_of(8, CAUSES_LOST | CAUSES_CLIPPED);
        const StoredCauses *e;
        uint8_t kind;

        (void)state;
        l.woken_by = cause_counter_code("irq:RES");
        tickconv_init(&conv, 2000000000ULL); /* 2 GHz: a tick is 0.5 ns */
        assert_int_equal(cause_store_new(0, 0, &s), -EINVAL);
        assert_int_equal(cause_store_new(100, 0, &s), 0);
        assert_int_equal(cause_store_add(s, 3, 5000, 1000, &l, &conv), 0);
        l = list_of(1, 0);
        assert_int_equal(cause_store_add(s, 3, 6000, 1000, &l, &conv), 0);
        assert_int_equal(cause_store_add(s, 3, 5999, 1000, &l, &conv), -EINVAL);
        assert_int_equal(cause_store_add(s, -1, 7000, 1000, &l, &conv), -EINVAL);
        assert_int_equal(cause_store_add(s, CPU_SETSIZE, 7000, 1000, &l, &conv), -EINVAL);

        e = find(s, 3, 5000);
        assert_non_null(e);
        assert_int_equal(e->n, 6); /* the first six of eight */
        assert_string_equal(name_of(s, 3, &e->causes[0], &kind), "c0");
        assert_int_equal(kind, CAUSE_VECTOR);
        assert_int_equal(e->causes[0].ns, 4000);
        assert_int_equal(e->causes[0].overhead_ns, 50);
        name_of(s, 3, &e->causes[1], &kind);
        assert_int_equal(kind, CAUSE_TASK);
        assert_int_equal(e->causes[3].ns, 2500);
        assert_string_equal(name_of(s, 3, &e->causes[5], &kind), "c5");
        assert_int_equal(e->causes[5].ns, 1500);
        /* Causes 6 and 7 (2000 and 1000 ticks, 100 of overhead each) join the list's other 3
         * ticks: 3203 ticks after 33600 are 18401 ns after 16800 (1601.5 ns, the half carried
         * on). */
        assert_int_equal(e->other_ns, 1601);
        /* The last 7 ticks: 36810 ticks are 18405 ns in all. */
        assert_int_equal(e->unexplained_ns, 4);
        assert_int_equal(e->no_record_ns, 0);
        assert_int_equal(e->overhead_ns, 400);
        assert_int_equal(e->flags, CAUSES_LOST | CAUSES_CLIPPED);
        assert_string_equal(cause_counter_of_code(e->woken_by), "irq:RES");
        e = find(s, 3, 6000);
        assert_non_null(e);
        assert_int_equal(e->n, 1);
        assert_int_equal(e->woken_by, 0);
        assert_null(find(s, 3, 5500));
        assert_null(find(s, 2, 5000));
        assert_null(find(s, -1, 5000));
        cause_store_free(s);
}

/* cause_store_find_next() over starts asked in order, as a window's interruptions are: the
 * stored starts are found with their own causes, the others (between, before, after them) are
 * not; asking out of order still finds; the ring wrapped (the oldest forgotten) changes
 * nothing. */
static void test_find_next(void **state)
{
        CauseStore *s;
        uint32_t pos = UINT32_MAX;

        (void)state;
        tickconv_init(&conv, 1000000000ULL);
        assert_int_equal(cause_store_new(100, 0, &s), 0);
        /* Stored: 10, 20, ..., 1500 with i causes for start 10 * i (mod 7); the newest 100 kept,
         * 510 to 1500. */
        for (uint64_t i = 1; i <= 150; i++) {
                CauseList l = list_of(i % 7, 0);

                assert_int_equal(cause_store_add(s, 2, i * 10, 1000, &l, &conv), 0);
        }
        /* Every start from 0 to 1600 in steps of 5, in order. */
        for (uint64_t t = 0; t <= 1600; t += 5) {
                const StoredCauses *e = cause_store_find_next(s, 2, t, &pos);
                bool stored = t % 10 == 0 && t >= 510 && t <= 1500;

                assert_int_equal(e != NULL, stored);
                if (e) {
                        assert_int_equal(e->start_ns, t);
                        assert_int_equal(e->n, (t / 10) % 7);
                }
        }
        /* Back in time, then on again. */
        assert_null(cause_store_find_next(s, 2, 500, &pos));
        assert_int_equal(cause_store_find_next(s, 2, 520, &pos)->start_ns, 520);
        assert_int_equal(cause_store_find_next(s, 2, 1490, &pos)->start_ns, 1490);
        assert_int_equal(cause_store_find_next(s, 2, 600, &pos)->start_ns, 600);
        assert_null(cause_store_find_next(s, 3, 600, &pos));
        cause_store_free(s);
}

static void test_bound_and_reset(void **state)
{
        CauseStore *s;
        CauseList l = list_of(2, 0);
        size_t bytes;

        (void)state;
        tickconv_init(&conv, 1000000000ULL);
        assert_int_equal(cause_store_new(1000, 0, &s), 0);
        for (uint64_t t = 1; t <= 5000; t++) {
                assert_int_equal(cause_store_add(s, 0, t * 10, 1000, &l, &conv), 0);
                assert_int_equal(cause_store_add(s, 5, t * 10, 1000, &l, &conv), 0);
        }
        /* The newest 1000 of each CPU. */
        assert_null(find(s, 0, 40000));
        assert_non_null(find(s, 0, 40010));
        assert_non_null(find(s, 0, 50000));
        assert_non_null(find(s, 5, 45000));
        bytes = cause_store_memory_bytes(s);
        /* The entries, the two CPUs' first 64 names (under 4 KiB each), and per possible CPU
         * its ring, names, windows and totals by kind (under 176 bytes). */
        assert_true(bytes <= sizeof(StoredCauses) * 2000 + 2 * 4096 + CPU_SETSIZE * 176);
        cause_store_reset(s, 0);
        assert_null(find(s, 0, 50000));
        assert_non_null(find(s, 5, 50000));
        /* Memory stays with the store for reuse. */
        assert_int_equal(cause_store_memory_bytes(s), bytes);
        assert_int_equal(cause_store_add(s, 0, 10, 1000, &l, &conv), 0);
        assert_non_null(find(s, 0, 10));
        cause_store_reset(s, -1);
        assert_null(find(s, 5, 50000));
        cause_store_free(s);
}

/* An interruption longer than 4.3 s keeps the largest value a stored cause holds. */
static void test_saturates(void **state)
{
        CauseStore *s;
        CauseList l = list_of(1, 0);

        (void)state;
        tickconv_init(&conv, 1000000000ULL);
        l.causes[0].ticks = 10000000000ULL;
        assert_int_equal(cause_store_new(16, 0, &s), 0);
        assert_int_equal(cause_store_add(s, 1, 1, 1000, &l, &conv), 0);
        assert_int_equal(find(s, 1, 1)->causes[0].ns, UINT32_MAX);
        cause_store_free(s);
}

/* At 3 GHz a tick is a third of a ns: every part of an interruption rounded down on its own
 * would lose up to a ns each. They add up to the interruption's ns, each within a ns of its
 * own. */
static void test_parts_add_up(void **state)
{
        CauseStore *s;
        CauseList l = list_of(8, 0);
        const StoredCauses *e;
        uint64_t total = 0, sum = 0, no_record = 0;

        (void)state;
        tickconv_init(&conv, 3000000000ULL);
        assert_int_equal(cause_store_new(4, 0, &s), 0);
        for (size_t i = 0; i < l.n; i++) {
                l.causes[i].ticks += 1;
                l.causes[i].overhead_ticks += i;
                l.overhead_ticks += i;
                total += l.causes[i].ticks + l.causes[i].overhead_ticks;
        }
        l.no_record_ticks = 2;
        total += l.other_ticks + l.no_record_ticks + l.unexplained_ticks;
        assert_int_equal(cause_store_add(s, 0, 1, 1000, &l, &conv), 0);
        e = find(s, 0, 1);
        for (size_t i = 0; i < e->n; i++) {
                sum += e->causes[i].ns + e->causes[i].overhead_ns;
                assert_true(e->causes[i].ns + 1 >= tickconv_to_ns(&conv, l.causes[i].ticks));
                assert_true(e->causes[i].ns <= tickconv_to_ns(&conv, l.causes[i].ticks) + 1);
        }
        sum += e->other_ns + e->no_record_ns + e->unexplained_ns;
        no_record = e->no_record_ns;
        assert_int_equal(sum, tickconv_to_ns(&conv, total));
        assert_true(no_record <= 1);
        cause_store_free(s);
}

/* The totals by part count every interruption added, the forgotten ones too, until a reset. */
static void test_totals(void **state)
{
        uint64_t ns[CAUSE_TOTALS];
        CauseStore *s;
        CauseList l = list_of(1, 0);

        (void)state;
        tickconv_init(&conv, 2000000000ULL);
        l.kind_ticks[CAUSE_VECTOR] = 1000;
        l.kind_ticks[CAUSE_IRQ] = 400;
        l.overhead_ticks = 60;
        l.no_record_ticks = 0;
        assert_int_equal(cause_store_new(4, 0, &s), 0);
        for (uint64_t t = 1; t <= 10; t++) {
                assert_int_equal(cause_store_add(s, 2, t, 1000, &l, &conv), 0);
        }
        cause_store_totals(s, 2, ns);
        assert_int_equal(ns[CAUSE_VECTOR], 10 * 500);
        assert_int_equal(ns[CAUSE_IRQ], 10 * 200);
        assert_int_equal(ns[CAUSE_TASK], 0);
        assert_int_equal(ns[CAUSE_TOTAL_OVERHEAD], 10 * 30);
        assert_int_equal(ns[CAUSE_TOTAL_NO_RECORD], 0);
        /* 7 ticks unexplained each, 3.5 ns: 1467 ticks are 733 ns, 3 after the 730 before. */
        assert_int_equal(ns[CAUSE_TOTAL_UNEXPLAINED], 10 * 3);
        cause_store_totals(s, 3, ns);
        assert_int_equal(ns[CAUSE_VECTOR], 0);
        cause_store_totals(s, -1, ns);
        assert_int_equal(ns[CAUSE_TOTAL_UNEXPLAINED], 0);
        assert_string_equal(cause_total_name(CAUSE_IRQ), "irq");
        assert_string_equal(cause_total_name(CAUSE_TOTAL_OVERHEAD), "overhead");
        assert_string_equal(cause_total_name(CAUSE_TOTAL_NO_RECORD), "no_record");
        assert_string_equal(cause_total_name(CAUSE_TOTAL_UNEXPLAINED), "unexplained");
        assert_null(cause_total_name(CAUSE_TOTALS));
        cause_store_reset(s, 2);
        cause_store_totals(s, 2, ns);
        assert_int_equal(ns[CAUSE_VECTOR], 0);
        cause_store_free(s);
}

/* Host readings noted every second for 3 hours: a window's steal time and SMI count are the
 * difference of the notes that bound it, from the fine notes over the last 1024 s and the
 * coarse ones (a minute apart) before; before the oldest note, from it; an unknown reading
 * at either end gives none. */
static void test_host(void **state)
{
        const uint64_t s_ns = 1000000000ULL;
        CauseStore *s;
        HostSpan h;

        (void)state;
        assert_int_equal(cause_store_new(4, 0, &s), 0);
        assert_int_equal(cause_store_host(s, 1, 0, &h), -ENODATA);
        /* steal: 2 ms a second; one SMI every 10 s */
        for (uint64_t t = 1; t <= 3 * 3600; t++) {
                assert_int_equal(
                        cause_store_note_host(s, 1, t * s_ns, 2000000 * t, t % 10 == 0 ? 1 : 0), 0);
        }
        assert_int_equal(cause_store_note_host(s, 1, 5 * s_ns, 0, 0), -EINVAL);
        assert_int_equal(cause_store_note_host(s, -1, 5 * s_ns, 0, 0), -EINVAL);
        /* The last 10 s: fine notes. */
        assert_int_equal(cause_store_host(s, 1, (3 * 3600 - 10) * s_ns, &h), 0);
        assert_int_equal(h.from_ns, (3 * 3600 - 10) * s_ns);
        assert_int_equal(h.to_ns, 3 * 3600 * s_ns);
        assert_true(h.have_steal && h.have_smi);
        assert_int_equal(h.steal_ns, 10 * 2000000);
        assert_int_equal(h.smi, 1);
        /* Between two notes: from the one before. */
        assert_int_equal(cause_store_host(s, 1, (3 * 3600 - 10) * s_ns + 1, &h), 0);
        assert_int_equal(h.from_ns, (3 * 3600 - 10) * s_ns);
        /* An hour back: beyond the fine notes, from the coarse note at or before. */
        assert_int_equal(cause_store_host(s, 1, (2 * 3600 + 30) * s_ns, &h), 0);
        assert_int_equal(h.from_ns % (60 * s_ns), 1 * s_ns); /* noted at 1 s, 61 s... */
        assert_true(h.from_ns <= (2 * 3600 + 30) * s_ns);
        assert_true(h.from_ns > (2 * 3600 + 30 - 60) * s_ns);
        assert_int_equal(h.steal_ns, (3 * 3600 * s_ns - h.from_ns) / 500);
        /* Before everything: from the oldest note. */
        assert_int_equal(cause_store_host(s, 1, 0, &h), 0);
        assert_int_equal(h.from_ns, 1 * s_ns);
        assert_int_equal(h.smi, 3 * 3600 / 10);
        /* Unknown at the end: none. */
        assert_int_equal(cause_store_note_host(s, 1, (3 * 3600 + 1) * s_ns, UINT64_MAX, UINT64_MAX),
                         0);
        assert_int_equal(cause_store_host(s, 1, (3 * 3600 - 10) * s_ns, &h), 0);
        assert_false(h.have_steal);
        assert_false(h.have_smi);
        assert_int_equal(cause_store_host(s, 2, 0, &h), -ENODATA);
        /* After a reset: from the note at the reset on, whatever the window. */
        cause_store_reset(s, 1);
        assert_int_equal(cause_store_note_host(s, 1, (3 * 3600 + 2) * s_ns, 7, 3), 0);
        assert_int_equal(cause_store_host(s, 1, 0, &h), 0);
        assert_int_equal(h.from_ns, (3 * 3600 + 1) * s_ns);
        assert_int_equal(h.to_ns, (3 * 3600 + 2) * s_ns);
        assert_false(h.have_steal);
        assert_true(cause_store_memory_bytes(s) >= CAUSE_STORE_HOST_BYTES);
        cause_store_free(s);
}

/* What the test itself added: one interruption, in ns (ticks at 1 GHz). */
typedef struct Added {
        uint64_t start, duration;
        bool traced;
        CauseList l;
} Added;

/* A number below @n, from the tests' deterministic stream (rng.h), so a failure can be
 * replayed. */
static uint64_t rnd(uint64_t n)
{
        return rng_next() % n;
}

/* (kind, name) pairs the random interruptions draw from, at most: names repeat under 3 kinds. */
#define PAIRS_MAX 600

/* An interruption with up to 8 causes drawn from @pairs (kind, name) pairs; a tenth of them
 * unseen by the trace, a fifth with no record. */
static Added random_added(uint64_t start, unsigned pairs)
{
        Added a = {.start = start, .traced = rnd(10) != 0};
        CauseList *l = &a.l;
        bool used[PAIRS_MAX] = {false};

        if (!a.traced) {
                a.duration = 1000 + rnd(50000);
                return a;
        }
        l->n = rnd(CAUSES_MAX + 1);
        for (size_t i = 0; i < l->n; i++) {
                unsigned p;

                do {
                        p = (unsigned)rnd(pairs);
                } while (used[p]);
                used[p] = true;
                l->causes[i].kind = (CauseKind)(p % 3 == 0   ? CAUSE_TASK
                                                : p % 3 == 1 ? CAUSE_VECTOR
                                                             : CAUSE_WORK);
                snprintf(l->causes[i].name, sizeof(l->causes[i].name), "n%u", p / 3);
                l->causes[i].ticks = 1 + rnd(20000);
                l->causes[i].overhead_ticks = rnd(500);
                l->overhead_ticks += l->causes[i].overhead_ticks;
        }
        l->other_ticks = rnd(3) ? 0 : rnd(1000);
        l->no_record_ticks = rnd(5) ? 0 : 1 + rnd(9000);
        l->unexplained_ticks = rnd(700);
        l->flags = rnd(4) ? 0 : CAUSES_LOST;
        l->woken_by = (uint8_t)rnd(14);
        a.duration = l->other_ticks + l->no_record_ticks + l->unexplained_ticks;
        for (size_t i = 0; i < l->n; i++) {
                a.duration += l->causes[i].ticks + l->causes[i].overhead_ticks;
        }
        return a;
}

/* A random interruption (random_added()) at @start, stored on CPU 4 of @s. */
static Added add_random(CauseStore *s, uint64_t start, unsigned pairs)
{
        Added a = random_added(start, pairs);

        assert_int_equal(cause_store_add(s, 4, start, a.duration, a.traced ? &a.l : NULL, &conv),
                         0);
        return a;
}

/* The test's own sums of a window: every field of CauseWindow, and per (kind, name). */
typedef struct Expected {
        CauseWindow w;
        uint64_t ns[3][PAIRS_MAX / 3], overhead[3][PAIRS_MAX / 3], count[3][PAIRS_MAX / 3];
} Expected;

static unsigned kind_index(CauseKind k)
{
        return k == CAUSE_TASK ? 0 : k == CAUSE_VECTOR ? 1 : 2;
}

static void expect_add(Expected *x, const Added *a)
{
        const CauseList *l = &a->l;
        uint64_t woken = 0, other = l->other_ticks;

        x->w.interruptions++;
        x->w.interruptions_ns += a->duration;
        if (!a->traced) {
                return;
        }
        x->w.traced++;
        x->w.traced_ns += a->duration;
        x->w.overhead_ns += l->overhead_ticks;
        x->w.trace_lost_ns += l->flags & CAUSES_LOST ? l->unexplained_ticks : 0;
        if (l->no_record_ticks) {
                x->w.no_record++;
                x->w.no_record_ns += l->no_record_ticks;
                return;
        }
        x->w.explained++;
        x->w.explained_ns += a->duration;
        x->w.trace_lost += (l->flags & CAUSES_LOST) != 0;
        x->w.unexplained_ns += l->unexplained_ticks;
        for (size_t i = 0; i < l->n; i++) {
                const Cause *c = &l->causes[i];
                unsigned k = kind_index(c->kind), n = (unsigned)atoi(c->name + 1);

                if (i >= STORED_CAUSES_MAX) {
                        other += c->ticks + c->overhead_ticks;
                        continue;
                }
                x->ns[k][n] += c->ticks;
                x->overhead[k][n] += c->overhead_ticks;
                x->count[k][n]++;
                woken += c->kind == CAUSE_TASK || c->kind == CAUSE_WORK ? c->ticks : 0;
        }
        x->w.other_ns += other;
        if (l->woken_by && woken) {
                x->w.woken_ns[l->woken_by] += woken;
                x->w.woken_count[l->woken_by]++;
        }
}

static void check_cause(uint8_t kind, const char *name, const CauseSum *sum, void *userdata)
{
        Expected *x = userdata;
        unsigned k = kind_index((CauseKind)kind), n = (unsigned)atoi(name + 1);

        assert_int_equal(sum->ns, x->ns[k][n]);
        assert_int_equal(sum->overhead_ns, x->overhead[k][n]);
        assert_int_equal(sum->count, x->count[k][n]);
        x->count[k][n] = 0; /* seen: whatever is left at the end was missed */
}

/* Window @w of CPU 4 from @from on, against the sums the test works out from what it added:
 * the newest @kept of @n, those that began at @from or later. */
static void check_window(CauseStore *s, unsigned w, uint64_t from, const Added *added, size_t n,
                         size_t kept)
{
        const CauseWindow *got = cause_store_window(s, 4, w, from);
        Expected *x = calloc(1, sizeof(*x));

        assert_non_null(got);
        assert_non_null(x);
        for (size_t i = n > kept ? n - kept : 0; i < n; i++) {
                if (added[i].start >= from) {
                        expect_add(x, &added[i]);
                }
        }
        assert_memory_equal(got, &x->w, sizeof(*got));
        cause_store_window_foreach(s, 4, w, check_cause, x);
        for (unsigned k = 0; k < 3; k++) {
                for (unsigned i = 0; i < PAIRS_MAX / 3; i++) {
                        assert_int_equal(x->count[k][i], 0);
                }
        }
        free(x);
}

/* A store of @kept entries per CPU summing @windows windows, at 1 GHz (a tick is a ns), and
 * room for @total interruptions of the test's own. */
static Added *start_store(size_t total, size_t kept, unsigned windows, CauseStore **s)
{
        Added *added = calloc(total, sizeof(*added));

        assert_non_null(added);
        tickconv_init(&conv, 1000000000ULL);
        assert_int_equal(cause_store_new((unsigned)kept, windows, s), 0);
        return added;
}

/* Running sums of three windows (20 µs, 150 µs, all) over 3000 random interruptions, 500 of
 * them kept: after every 37 added, each window equals the sums the test works out from what it
 * added, as interruptions leave by age and by the bound; a window asked after a long pause
 * loses all it must at once; after a reset, nothing, and names are used anew. */
static void test_windows(void **state)
{
        const size_t total = 3000, kept = 500;
        CauseStore *s;
        Added *added = start_store(total, kept, 3, &s);
        uint64_t t = 0;

        (void)state;
        assert_null(cause_store_window(s, 4, 3, 0));
        assert_null(cause_store_window(s, -1, 0, 0));
        assert_int_equal(cause_store_window(s, 4, 0, 0)->interruptions, 0);
        for (size_t i = 0; i < total; i++) {
                t += 100 + rnd(900);
                added[i] = add_random(s, t, 60);
                if (i % 37 == 0) {
                        check_window(s, 0, t > 20000 ? t - 20000 : 0, added, i + 1, kept);
                        check_window(s, 2, 0, added, i + 1, kept);
                }
                if (i % 370 == 0) {
                        check_window(s, 1, t > 150000 ? t - 150000 : 0, added, i + 1, kept);
                }
        }
        /* An earlier start brings nothing back. */
        check_window(s, 0, t - 20000, added, total, kept);
        assert_int_equal(cause_store_window(s, 4, 0, t - 400000)->interruptions,
                         cause_store_window(s, 4, 0, t - 20000)->interruptions);
        /* Everything leaves a window past the newest. */
        assert_int_equal(cause_store_window(s, 4, 1, t + 1)->interruptions, 0);
        assert_int_equal(cause_store_window(s, 4, 1, t + 1)->explained_ns, 0);
        cause_store_reset(s, 4);
        check_window(s, 2, 0, added, 0, kept);
        for (size_t i = 0; i < 100; i++) {
                t += 500;
                added[i] = add_random(s, t, 60);
        }
        check_window(s, 2, 0, added, 100, kept);
        check_window(s, 0, t - 20000, added, 100, kept);
        cause_store_free(s);
        free(added);
}

/* Names given back and taken again all the time: 40 interruptions kept, drawn from 600 pairs.
 * Each (kind, name) is summed once, under one name, whatever the names freed before it. */
static void test_names_churn(void **state)
{
        const size_t total = 4000, kept = 40;
        CauseStore *s;
        Added *added = start_store(total, kept, 1, &s);
        uint64_t t = 0;

        (void)state;
        for (size_t i = 0; i < total; i++) {
                t += 1000;
                added[i] = add_random(s, t, PAIRS_MAX);
                if (i % 7 == 0) {
                        check_window(s, 0, 0, added, i + 1, kept);
                }
        }
        cause_store_free(s);
        free(added);
}

/* More distinct names than a CPU keeps: the causes without room count in other_ns, so a
 * window's parts still add up to its traced time; names come back as interruptions leave. */
static void count_distinct(uint8_t kind, const char *name, const CauseSum *sum, void *userdata)
{
        unsigned *n = userdata;

        (void)kind;
        (void)name;
        assert_int_equal(sum->ns + sum->overhead_ns, 110);
        (*n)++;
}

static void test_names_bound(void **state)
{
        const CauseWindow *w;
        CauseStore *s;
        uint64_t parts = 0;
        unsigned distinct = 0;

        (void)state;
        tickconv_init(&conv, 1000000000ULL);
        assert_int_equal(cause_store_new(1000, 1, &s), 0);
        for (unsigned i = 0; i < 2000; i++) {
                CauseList l = {.n = STORED_CAUSES_MAX, .unexplained_ticks = 1};

                for (size_t k = 0; k < l.n; k++) {
                        l.causes[k].kind = CAUSE_TASK;
                        snprintf(l.causes[k].name, sizeof(l.causes[k].name), "t:%zu", i * l.n + k);
                        l.causes[k].ticks = 100;
                        l.causes[k].overhead_ticks = 10;
                }
                assert_int_equal(cause_store_add(s, 4, i + 1, 6 * 110 + 1, &l, &conv), 0);
        }
        /* 1000 interruptions of 6 distinct names each are kept: 6000 names, 4096 of them
         * named (the first 4096 of the newest 1000 took the names the oldest gave back). */
        w = cause_store_window(s, 4, 0, 0);

        assert_int_equal(w->traced, 1000);
        parts = w->other_ns + w->unexplained_ns;
        assert_int_equal(w->other_ns, (6000 - CAUSE_STORE_NAMES_MAX) * 110);
        cause_store_window_foreach(s, 4, 0, count_distinct, &distinct);
        assert_int_equal(distinct, CAUSE_STORE_NAMES_MAX);
        parts += distinct * 110ULL;
        assert_int_equal(parts, w->traced_ns);
        /* The memory counts the entries and every name with its sums. */
        assert_true(cause_store_memory_bytes(s) >=
                    1000 * sizeof(StoredCauses) +
                            CAUSE_STORE_NAMES_MAX * (CAUSE_NAME_MAX + sizeof(CauseSum)));
        cause_store_free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_find),
                cmocka_unit_test(test_find_next),
                cmocka_unit_test(test_bound_and_reset),
                cmocka_unit_test(test_saturates),
                cmocka_unit_test(test_parts_add_up),
                cmocka_unit_test(test_totals),
                cmocka_unit_test(test_host),
                cmocka_unit_test(test_windows),
                cmocka_unit_test(test_names_churn),
                cmocka_unit_test(test_names_bound),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

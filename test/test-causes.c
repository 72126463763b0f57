/* Unit tests of the cause analysis with synthetic trace records whose answer is worked out by
 * hand: nesting, clipping at both ends, missing exits and entries, task switches, preempted
 * softirqs, more causes than are kept; the account of the probe's time with no context open
 * (overhead by rule, no_record, unexplained when records were lost or name nothing). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "causes-internal.h"
#include "causes.h"
#include "util.h"

#define PROBE 1000
#define THIEF 2000

static TraceRecord rec(uint64_t t, TracePhase phase, CauseKind kind, uint64_t id, const char *name)
{
        TraceRecord r = {.ticks = t, .id = id, .kind = (uint8_t)kind, .phase = (uint8_t)phase};

        snprintf(r.name, sizeof(r.name), "%s", name ? name : "");
        return r;
}

static TraceRecord in(uint64_t t, CauseKind kind, uint64_t id, const char *name)
{
        return rec(t, TRACE_ENTRY, kind, id, name);
}

static TraceRecord out(uint64_t t, CauseKind kind, uint64_t id)
{
        return rec(t, TRACE_EXIT, kind, id, NULL);
}

static TraceRecord sw(uint64_t t, int prev, int next, const char *comm)
{
        TraceRecord r = rec(t, TRACE_SWITCH, CAUSE_TASK, (uint64_t)prev, comm);

        r.pid = next;
        return r;
}

/* The cause named @name of @kind in @l, or NULL. */
static const Cause *find(const CauseList *l, CauseKind kind, const char *name)
{
        for (size_t i = 0; i < l->n; i++) {
                if (l->causes[i].kind == kind && strcmp(l->causes[i].name, name) == 0) {
                        return &l->causes[i];
                }
        }
        return NULL;
}

static const Cause *must_find(const CauseList *l, CauseKind kind, const char *name)
{
        const Cause *c = find(l, kind, name);

        if (!c) {
                fail_msg("no cause %s %s", cause_kind_name(kind), name);
        }
        return c;
}

static uint64_t ticks_of(const CauseList *l, CauseKind kind, const char *name)
{
        return must_find(l, kind, name)->ticks;
}

static uint64_t overhead_of(const CauseList *l, CauseKind kind, const char *name)
{
        return must_find(l, kind, name)->overhead_ticks;
}

/* Every tick of the interruption is somewhere, exactly once: in a cause's own time or
 * overhead, other, no_record or unexplained; the causes longest first. */
static void assert_adds_up(const CauseList *l, uint64_t total)
{
        uint64_t sum = l->other_ticks + l->no_record_ticks + l->unexplained_ticks, overhead = 0;

        for (size_t i = 0; i < l->n; i++) {
                const Cause *c = &l->causes[i];

                sum += c->ticks + c->overhead_ticks;
                overhead += c->overhead_ticks;
                assert_true(c->ticks + c->overhead_ticks > 0);
                if (i > 0) {
                        assert_true(l->causes[i - 1].ticks + l->causes[i - 1].overhead_ticks >=
                                    c->ticks + c->overhead_ticks);
                }
        }
        assert_true(l->overhead_ticks >= overhead);
        assert_int_equal(l->total_ticks, total);
        assert_int_equal(sum, total);
}

static void test_no_records(void **state)
{
        CauseList l;

        (void)state;
        /* Nothing the kernel saw: the hardware, firmware or the hypervisor. */
        assert_int_equal(causes_analyze(NULL, 0, 100, 350, PROBE, 0, &l), 0);
        assert_int_equal(l.n, 0);
        assert_int_equal(l.no_record_ticks, 250);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_int_equal(l.overhead_ticks, 0);
        assert_int_equal(l.flags, 0);
        assert_adds_up(&l, 250);
        /* Unless records were lost: then it cannot be told. */
        assert_int_equal(causes_analyze(NULL, 0, 100, 350, PROBE, CAUSES_LOST, &l), 0);
        assert_int_equal(l.no_record_ticks, 0);
        assert_int_equal(l.unexplained_ticks, 250);
        assert_int_equal(l.flags, CAUSES_LOST);
        assert_adds_up(&l, 250);
        assert_int_equal(causes_analyze(NULL, 0, 100, 99, PROBE, 0, &l), -EINVAL);
}

/* A tick: local timer vector, the tick's hrtimer inside it, then the TIMER softirq on the way
 * out; later the task switch to a thief, interrupted once by a reschedule vector, and back.
 * The probe's time with no context open: the way in and the exit path into the softirq and
 * to the switch are the vector's overhead, the switch back and the way out the thief's. */
static void test_nesting(void **state)
{
        TraceRecord r[] = {
                in(1010, CAUSE_VECTOR, 236, "local_timer"),
                in(1020, CAUSE_TIMER, 0xa0, "tick_nohz_handler"),
                out(1060, CAUSE_TIMER, 0xa0),
                out(1100, CAUSE_VECTOR, 236),
                in(1110, CAUSE_SOFTIRQ, 1, "TIMER"),
                out(1150, CAUSE_SOFTIRQ, 1),
                sw(1160, PROBE, THIEF, "thief"),
                in(1400, CAUSE_VECTOR, 253, "reschedule"),
                out(1410, CAUSE_VECTOR, 253),
                sw(1900, THIEF, PROBE, "probe"),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, ELEMENTSOF(r), 1000, 2000, PROBE, 0, &l), 0);
        assert_adds_up(&l, 1000);
        assert_int_equal(l.n, 5);
        /* The thief: 1160..1900 less the 10 of the vector inside. */
        assert_string_equal(l.causes[0].name, "thief:2000");
        assert_int_equal(l.causes[0].kind, CAUSE_TASK);
        assert_int_equal(l.causes[0].ticks, 730);
        assert_int_equal(l.causes[0].count, 1);
        /* 1900..2000: the switch back and the way out. */
        assert_int_equal(l.causes[0].overhead_ticks, 100);
        /* The vector: 1010..1100 less the 40 of its hrtimer; 1000..1010 its way in,
         * 1100..1110 and 1150..1160 its way out, into the softirq and to the switch. */
        assert_string_equal(l.causes[1].name, "local_timer");
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 50);
        assert_int_equal(overhead_of(&l, CAUSE_VECTOR, "local_timer"), 10 + 10 + 10);
        assert_int_equal(ticks_of(&l, CAUSE_TIMER, "tick_nohz_handler"), 40);
        assert_int_equal(ticks_of(&l, CAUSE_SOFTIRQ, "TIMER"), 40);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "reschedule"), 10);
        /* Nested in the thief: no overhead of its own. */
        assert_int_equal(overhead_of(&l, CAUSE_VECTOR, "reschedule"), 0);
        assert_int_equal(overhead_of(&l, CAUSE_SOFTIRQ, "TIMER"), 0);
        assert_int_equal(l.overhead_ticks, 130);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_int_equal(l.no_record_ticks, 0);
        assert_int_equal(l.other_ticks, 0);
        assert_int_equal(l.flags, 0);
        /* With records lost, the stretches no record covers are unexplained; what the
         * records name keeps its time. */
        assert_int_equal(causes_analyze(r, ELEMENTSOF(r), 1000, 2000, PROBE, CAUSES_LOST, &l), 0);
        assert_adds_up(&l, 1000);
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "thief:2000"), 730);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 50);
        assert_int_equal(l.overhead_ticks, 0);
        assert_int_equal(l.unexplained_ticks, 130);
        assert_int_equal(l.flags, CAUSES_LOST);
}

static void test_repeats_merge(void **state)
{
        TraceRecord r[] = {
                in(10, CAUSE_VECTOR, 236, "local_timer"),
                out(20, CAUSE_VECTOR, 236),
                in(30, CAUSE_VECTOR, 236, "local_timer"),
                out(45, CAUSE_VECTOR, 236),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 4, 0, 50, PROBE, 0, &l), 0);
        assert_adds_up(&l, 50);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.causes[0].ticks, 25);
        /* 0..10 its way in, 20..30 and 45..50 its way out (into itself again). */
        assert_int_equal(l.causes[0].overhead_ticks, 25);
        assert_int_equal(l.causes[0].count, 2);
}

/* An IRQ that began before the interruption and one that ends after it: only their parts
 * inside count, and the list says it clipped them. */
static void test_clipping(void **state)
{
        TraceRecord r[] = {
                in(90, CAUSE_IRQ, 24, "virtio0-input.0"),
                out(130, CAUSE_IRQ, 24),
                in(180, CAUSE_IRQ, 25, "virtio1"),
                out(260, CAUSE_IRQ, 25),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 4, 100, 200, PROBE, 0, &l), 0);
        assert_adds_up(&l, 100);
        assert_int_equal(ticks_of(&l, CAUSE_IRQ, "virtio0-input.0"), 30);
        assert_int_equal(ticks_of(&l, CAUSE_IRQ, "virtio1"), 20);
        /* 130..180: the way out of the IRQ open at the start, the owner once it ends. */
        assert_int_equal(overhead_of(&l, CAUSE_IRQ, "virtio0-input.0"), 50);
        assert_int_equal(overhead_of(&l, CAUSE_IRQ, "virtio1"), 0);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_true(l.flags & CAUSES_CLIPPED);
        assert_false(l.flags & CAUSES_UNFINISHED);

        /* Without the record after the end, the second IRQ is still open there. */
        assert_int_equal(causes_analyze(r, 3, 100, 200, PROBE, 0, &l), 0);
        assert_adds_up(&l, 100);
        assert_int_equal(ticks_of(&l, CAUSE_IRQ, "virtio1"), 20);
        assert_true(l.flags & CAUSES_UNFINISHED);

        /* Records wholly before and after the interruption change nothing: none inside. */
        assert_int_equal(causes_analyze(r, 2, 140, 170, PROBE, 0, &l), 0);
        assert_adds_up(&l, 30);
        assert_int_equal(l.n, 0);
        assert_int_equal(l.no_record_ticks, 30);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_int_equal(l.flags, 0);
}

/* Exits that were lost: a vector's exit before a switch (a vector cannot be switched out),
 * and a timer's exit inside a vector that does exit. */
static void test_missing_exits(void **state)
{
        TraceRecord a[] = {
                in(10, CAUSE_VECTOR, 236, "local_timer"),
                sw(50, PROBE, THIEF, "thief"),
                sw(200, THIEF, PROBE, "probe"),
        };
        TraceRecord b[] = {
                in(10, CAUSE_VECTOR, 236, "local_timer"),
                in(20, CAUSE_TIMER, 0xb0, "hrtimer_wakeup"),
                out(70, CAUSE_VECTOR, 236),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(a, 3, 0, 220, PROBE, 0, &l), 0);
        assert_adds_up(&l, 220);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 40);
        assert_int_equal(overhead_of(&l, CAUSE_VECTOR, "local_timer"), 10);
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "thief:2000"), 150);
        assert_int_equal(overhead_of(&l, CAUSE_TASK, "thief:2000"), 20);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_true(l.flags & CAUSES_UNMATCHED);
        assert_false(l.flags & CAUSES_UNFINISHED);

        assert_int_equal(causes_analyze(b, 3, 0, 100, PROBE, 0, &l), 0);
        assert_adds_up(&l, 100);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 10);
        assert_int_equal(overhead_of(&l, CAUSE_VECTOR, "local_timer"), 10 + 30);
        assert_int_equal(ticks_of(&l, CAUSE_TIMER, "hrtimer_wakeup"), 50);
        assert_true(l.flags & CAUSES_UNMATCHED);
}

/* Exits whose entries we never saw (they came before the window): the time the probe was
 * thought to have was theirs, innermost first; the outermost, a hard interrupt, owns the way
 * out. */
static void test_missing_entries(void **state)
{
        TraceRecord r[] = {
                rec(30, TRACE_EXIT, CAUSE_TIMER, 0xa0, "tick_nohz_handler"),
                rec(40, TRACE_EXIT, CAUSE_VECTOR, 236, "local_timer"),
                rec(45, TRACE_EXIT, CAUSE_IRQ, 11, ""),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 3, 0, 60, PROBE, 0, &l), 0);
        assert_adds_up(&l, 60);
        assert_int_equal(ticks_of(&l, CAUSE_TIMER, "tick_nohz_handler"), 30);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 10);
        /* An exit without a name is named by its id. */
        assert_int_equal(ticks_of(&l, CAUSE_IRQ, "11"), 5);
        assert_int_equal(overhead_of(&l, CAUSE_IRQ, "11"), 15);
        assert_int_equal(l.overhead_ticks, 15);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_true(l.flags & CAUSES_CLIPPED);
}

/* PREEMPT_RT: ksoftirqd's softirq is preempted by a thief and finishes when it is back. */
static void test_preempted_softirq(void **state)
{
        TraceRecord r[] = {
                sw(10, PROBE, 30, "ksoftirqd/1"), in(20, CAUSE_SOFTIRQ, 9, "RCU"),
                sw(50, 30, THIEF, "thief"),       in(60, CAUSE_VECTOR, 236, "local_timer"),
                out(70, CAUSE_VECTOR, 236),       sw(150, THIEF, 30, "ksoftirqd/1"),
                out(170, CAUSE_SOFTIRQ, 9),       sw(180, 30, PROBE, "probe"),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 8, 0, 200, PROBE, 0, &l), 0);
        assert_adds_up(&l, 200);
        assert_int_equal(ticks_of(&l, CAUSE_SOFTIRQ, "RCU"), 30 + 20);
        assert_int_equal(find(&l, CAUSE_SOFTIRQ, "RCU")->count, 1);
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "thief:2000"), 90);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 10);
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "ksoftirqd/1:30"), 10 + 10);
        assert_int_equal(find(&l, CAUSE_TASK, "ksoftirqd/1:30")->count, 2);
        /* 0..10, the switch to it as the first record, and 180..200 after it ran last. */
        assert_int_equal(overhead_of(&l, CAUSE_TASK, "ksoftirqd/1:30"), 10 + 20);
        assert_int_equal(overhead_of(&l, CAUSE_TASK, "thief:2000"), 0);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_int_equal(l.flags, 0);
}

/* Without the probe's pid, the task the first switch leaves is the probe. */
static void test_unknown_probe(void **state)
{
        TraceRecord r[] = {
                in(5, CAUSE_VECTOR, 236, "local_timer"),
                out(10, CAUSE_VECTOR, 236),
                sw(20, 77, THIEF, "thief"),
                sw(80, THIEF, 77, "probe"),
                in(85, CAUSE_VECTOR, 236, "local_timer"),
                out(90, CAUSE_VECTOR, 236),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 6, 0, 100, -1, 0, &l), 0);
        assert_adds_up(&l, 100);
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "thief:2000"), 60);
        assert_int_equal(ticks_of(&l, CAUSE_VECTOR, "local_timer"), 10);
        assert_null(find(&l, CAUSE_TASK, "probe:77"));
        /* 0..5 and 10..20 the first tick's, 80..85 the thief's (the switch back, cut short by
         * the second tick), 90..100 the second tick's. */
        assert_int_equal(overhead_of(&l, CAUSE_VECTOR, "local_timer"), 5 + 10 + 10);
        assert_int_equal(overhead_of(&l, CAUSE_TASK, "thief:2000"), 5);
        assert_int_equal(l.unexplained_ticks, 0);
}

/* More distinct causes than are kept: the longest CAUSES_MAX, the rest in other_ticks. */
static void test_many_causes(void **state)
{
        TraceRecord r[2 * 40];
        char name[16];
        uint64_t t = 0, other = 0;
        CauseList l;

        (void)state;
        for (unsigned i = 0; i < 40; i++) {
                snprintf(name, sizeof(name), "irq%u", i);
                r[2 * i] = in(t, CAUSE_IRQ, i, name);
                t += 1 + i; /* irq i lasts 1 + i ticks */
                r[2 * i + 1] = out(t, CAUSE_IRQ, i);
                if (i < 40 - CAUSES_MAX) {
                        other += 1 + i;
                }
        }
        assert_int_equal(causes_analyze(r, 80, 0, t, PROBE, 0, &l), 0);
        assert_adds_up(&l, t);
        assert_int_equal(l.n, CAUSES_MAX);
        assert_string_equal(l.causes[0].name, "irq39");
        assert_int_equal(l.causes[0].ticks, 40);
        assert_string_equal(l.causes[CAUSES_MAX - 1].name, "irq32");
        assert_int_equal(l.other_ticks, other);
        assert_int_equal(l.unexplained_ticks, 0);
        /* The kinds count every cause, those in other_ticks too. */
        assert_int_equal(l.kind_ticks[CAUSE_IRQ], t);
        assert_int_equal(l.kind_ticks[CAUSE_WORK], 0);
}

/* More distinct causes than the walk follows: the time still adds up. Work items at the top
 * level (none is a hard interrupt): the first owns every stretch between them. */
static void test_more_causes_than_followed(void **state)
{
        TraceRecord r[2 * 100];
        char name[16];
        CauseList l;

        (void)state;
        for (unsigned i = 0; i < 100; i++) {
                snprintf(name, sizeof(name), "f%u", i);
                r[2 * i] = in(10 * i, CAUSE_WORK, i, name);
                r[2 * i + 1] = out(10 * i + 5, CAUSE_WORK, i);
        }
        assert_int_equal(causes_analyze(r, 200, 0, 1000, PROBE, 0, &l), 0);
        assert_adds_up(&l, 1000);
        assert_int_equal(l.n, CAUSES_MAX);
        assert_string_equal(l.causes[0].name, "f0");
        assert_int_equal(l.causes[0].overhead_ticks, 500);
        assert_int_equal(l.overhead_ticks, 500);
        assert_int_equal(l.other_ticks, (100 - CAUSES_MAX) * 5);
        assert_int_equal(l.unexplained_ticks, 0);
        /* Only the causes beyond the 64 followed have no kind. */
        assert_int_equal(l.kind_ticks[CAUSE_WORK], 64 * 5);
}

static void test_too_deep(void **state)
{
        TraceRecord r[CAUSES_DEPTH_MAX + 2];
        CauseList l;

        (void)state;
        for (unsigned i = 0; i < CAUSES_DEPTH_MAX + 2; i++) {
                r[i] = in(10 * i, CAUSE_IRQ, i, "x");
        }
        assert_int_equal(causes_analyze(r, CAUSES_DEPTH_MAX + 2, 0, 500, PROBE, 0, &l), 0);
        assert_adds_up(&l, 500);
        assert_true(l.flags & CAUSES_TOO_DEEP);
        assert_true(l.flags & CAUSES_UNFINISHED);
        assert_int_equal(ticks_of(&l, CAUSE_IRQ, "x"), 500);
}

static void test_lower_bound_and_names(void **state)
{
        TraceRecord r[] = {in(10, CAUSE_IRQ, 1, "a"), in(20, CAUSE_IRQ, 1, "a"),
                           in(20, CAUSE_IRQ, 1, "a"), in(30, CAUSE_IRQ, 1, "a")};
        CauseKind k;

        (void)state;
        assert_int_equal(causes_lower_bound(r, 4, 0), 0);
        assert_int_equal(causes_lower_bound(r, 4, 20), 1);
        assert_int_equal(causes_lower_bound(r, 4, 21), 3);
        assert_int_equal(causes_lower_bound(r, 4, 31), 4);
        assert_int_equal(causes_lower_bound(r, 0, 31), 0);
        for (unsigned i = 0; i < CAUSE_KIND_MAX; i++) {
                assert_int_equal(cause_kind_parse(cause_kind_name((CauseKind)i), &k), 0);
                assert_int_equal(k, i);
        }
        assert_string_equal(cause_kind_name(CAUSE_VECTOR), "vector");
        assert_null(cause_kind_name(CAUSE_KIND_MAX));
        assert_int_equal(cause_kind_parse("nmi", &k), -EINVAL);
}

/* The counter of what let a task in: the hard interrupt that began last before the switch.
 * A tick, then the waker's reschedule IPI on the way out, then the switch: the IPI's counter
 * (also with the probe's pid unknown). A thief woken by its own hrtimer: the local timer's. No
 * switch: none. A tick that ended before the interruption began lets nobody in: none, though
 * its records set the scene; a device interrupt still open at the start does. */
static void test_woken_by(void **state)
{
        const TraceRecord ipi_after_tick[] = {
                in(100, CAUSE_VECTOR, 236, "local_timer"),
                in(105, CAUSE_TIMER, 0xa, "tick_nohz_handler"),
                out(110, CAUSE_TIMER, 0xa),
                out(115, CAUSE_VECTOR, 236),
                in(118, CAUSE_VECTOR, 253, "reschedule"),
                out(120, CAUSE_VECTOR, 253),
                in(121, CAUSE_SOFTIRQ, 1, "TIMER"),
                out(124, CAUSE_SOFTIRQ, 1),
                sw(125, PROBE, THIEF, "jitter-thief"),
                sw(900, THIEF, PROBE, "probe"),
        };
        const TraceRecord own_timer[] = {
                in(100, CAUSE_VECTOR, 236, "local_timer"),
                in(102, CAUSE_TIMER, 0xb, "hrtimer_wakeup"),
                out(104, CAUSE_TIMER, 0xb),
                out(106, CAUSE_VECTOR, 236),
                sw(108, PROBE, THIEF, "jitter-thief"),
                sw(900, THIEF, PROBE, "probe"),
        };
        const TraceRecord no_switch[] = {
                in(100, CAUSE_VECTOR, 253, "reschedule"),
                out(104, CAUSE_VECTOR, 253),
        };
        const TraceRecord stale_tick[] = {
                in(50, CAUSE_VECTOR, 236, "local_timer"),
                out(60, CAUSE_VECTOR, 236),
                sw(100, PROBE, THIEF, "jitter-thief"),
                sw(900, THIEF, PROBE, "probe"),
        };
        /* A device interrupt open since before the start: it took the CPU from the probe. */
        const TraceRecord open_at_start[] = {
                in(80, CAUSE_IRQ, 11, "virtio0-input.0"),
                out(120, CAUSE_IRQ, 11),
                sw(130, PROBE, THIEF, "jitter-thief"),
                sw(900, THIEF, PROBE, "probe"),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(ipi_after_tick, 10, 100, 910, PROBE, 0, &l), 0);
        assert_string_equal(cause_counter_of_code(l.woken_by), "irq:RES");
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "jitter-thief:2000"), 775);
        assert_int_equal(causes_analyze(own_timer, 6, 100, 910, PROBE, 0, &l), 0);
        assert_string_equal(cause_counter_of_code(l.woken_by), "irq:LOC");
        assert_int_equal(causes_analyze(no_switch, 2, 100, 104, PROBE, 0, &l), 0);
        assert_int_equal(l.woken_by, 0);
        assert_int_equal(causes_analyze(stale_tick, 4, 90, 910, PROBE, 0, &l), 0);
        assert_int_equal(l.woken_by, 0);
        assert_int_equal(causes_analyze(open_at_start, 4, 100, 910, PROBE, 0, &l), 0);
        assert_string_equal(cause_counter_of_code(l.woken_by), "irq:device");
        /* The probe unknown: the first switch leaves it, and the IPI still let the thief in. */
        assert_int_equal(causes_analyze(ipi_after_tick, 10, 100, 910, -1, 0, &l), 0);
        assert_string_equal(cause_counter_of_code(l.woken_by), "irq:RES");
}

/* The counters of causes, and their codes both ways: every x86 system vector the kernel
 * traces, as /proc/interrupts names its row. */
static void test_counters(void **state)
{
        static const char *const vectors[][2] = {
                {"local_timer", "irq:LOC"},      {"reschedule", "irq:RES"},
                {"call_function", "irq:CAL"},    {"call_function_single", "irq:CAL"},
                {"irq_work", "irq:IWI"},         {"thermal_apic", "irq:TRM"},
                {"threshold_apic", "irq:THR"},   {"deferred_error_apic", "irq:DFR"},
                {"spurious_apic", "irq:SPU"},    {"error_apic", "irq:ERR"},
                {"x86_platform_ipi", "irq:PLT"},
        };
        char buf[64];

        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(vectors); i++) {
                const char *c = cause_counter(CAUSE_VECTOR, vectors[i][0], buf, sizeof(buf));

                assert_non_null(c);
                assert_string_equal(c, vectors[i][1]);
                assert_true(cause_counter_code(c) > 0);
                assert_string_equal(cause_counter_of_code(cause_counter_code(c)), c);
        }
        assert_null(cause_counter(CAUSE_VECTOR, "no_such_vector", buf, sizeof(buf)));
        assert_string_equal(cause_counter(CAUSE_TIMER, "hrtimer_wakeup", buf, sizeof(buf)),
                            "irq:LOC");
        assert_string_equal(cause_counter(CAUSE_IPI, "flush_tlb_func", buf, sizeof(buf)),
                            "irq:TLB");
        assert_string_equal(cause_counter(CAUSE_IPI, "ipi_mb", buf, sizeof(buf)), "irq:CAL");
        assert_string_equal(cause_counter(CAUSE_SOFTIRQ, "NET_RX", buf, sizeof(buf)),
                            "softirq:NET_RX");
        assert_string_equal(cause_counter(CAUSE_TASK, "kworker/1:2:17", buf, sizeof(buf)),
                            "ctxsw:involuntary");
        assert_string_equal(cause_counter(CAUSE_WORK, "vmstat_update", buf, sizeof(buf)),
                            "ctxsw:involuntary");
        assert_string_equal(cause_counter(CAUSE_IRQ, "virtio0-input.0", buf, sizeof(buf)),
                            "irq:device");
        assert_string_equal(cause_counter_of_code(cause_counter_code("irq:TLB")), "irq:TLB");
        assert_string_equal(cause_counter_of_code(cause_counter_code("irq:device")), "irq:device");
        assert_int_equal(cause_counter_code("softirq:NET_RX"), 0);
        assert_int_equal(cause_counter_code("ctxsw:involuntary"), 0);
        assert_int_equal(cause_counter_code(NULL), 0);
        assert_null(cause_counter_of_code(0));
        assert_null(cause_counter_of_code(255));
}

/* The probe switched out with no interrupt recorded before (its tick's records refused, say):
 * the way to the switch is the task's, as its first record, and so is the way back. */
static void test_switch_first(void **state)
{
        TraceRecord r[] = {
                sw(30, PROBE, THIEF, "thief"),
                sw(130, THIEF, PROBE, "probe"),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 2, 0, 150, PROBE, 0, &l), 0);
        assert_adds_up(&l, 150);
        assert_int_equal(ticks_of(&l, CAUSE_TASK, "thief:2000"), 100);
        assert_int_equal(overhead_of(&l, CAUSE_TASK, "thief:2000"), 30 + 20);
        assert_int_equal(l.unexplained_ticks, 0);
        assert_int_equal(l.no_record_ticks, 0);
}

/* Records inside that name no cause (a trace_marker write, an entry of no known kind): the
 * kernel ran, so it is not no_record, and no rule charges it: unexplained. */
static void test_records_naming_nothing(void **state)
{
        TraceRecord r[] = {
                rec(40, TRACE_MARK, CAUSE_IRQ, 0, "hello"),
                rec(50, TRACE_ENTRY, CAUSE_KIND_MAX, 0, "?"),
        };
        CauseList l;

        (void)state;
        assert_int_equal(causes_analyze(r, 2, 0, 100, PROBE, 0, &l), 0);
        assert_adds_up(&l, 100);
        assert_int_equal(l.n, 0);
        assert_int_equal(l.unexplained_ticks, 100);
        assert_int_equal(l.no_record_ticks, 0);
        assert_int_equal(l.overhead_ticks, 0);
}

/* --- interruptions built at random, with their account known by construction ------------- */

typedef struct Built {
        TraceRecord r[64];
        size_t n;
        uint64_t start, end;
        /* By name: own time and overhead, as the builder laid the interruption out. */
        const char *names[16];
        uint64_t own[16], overhead[16];
        size_t n_names;
        int owner; /* index in names of what owns the probe's next stretch; -1: none yet */
        uint64_t pending;
} Built;

static uint64_t rng_state;

static uint64_t rnd(uint64_t n)
{
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (rng_state >> 33) % n;
}

static int built_name(Built *b, const char *name)
{
        for (size_t i = 0; i < b->n_names; i++) {
                if (strcmp(b->names[i], name) == 0) {
                        return (int)i;
                }
        }
        b->names[b->n_names] = name;
        return (int)b->n_names++;
}

/* The probe's stretch before a record of @name: the way in to it when first, else the
 * owner's; a hard interrupt or a task owns what follows, the first cause too. */
static void built_cause_begins(Built *b, const char *name, bool owns)
{
        int k = built_name(b, name);

        b->overhead[b->owner < 0 ? k : b->owner] += b->pending;
        b->pending = 0;
        if (owns || b->owner < 0) {
                b->owner = k;
        }
}

static void built_span(Built *b, uint64_t *t, const char *name, uint64_t ticks)
{
        b->own[built_name(b, name)] += ticks;
        *t += ticks;
}

/* A vector with maybe an hrtimer callback inside, or a softirq, or a task that runs (maybe
 * interrupted by a vector), from *@t on. */
static void built_episode(Built *b, uint64_t *t)
{
        static const char *const vectors[] = {"local_timer", "reschedule"};
        static const char *const timers[] = {"tick_nohz_handler", "hrtimer_wakeup"};
        static const char *const softirqs[] = {"TIMER", "RCU"};
        static const char *const tasks[] = {"a:3001", "b:3002"}, *const comms[] = {"a", "b"};
        unsigned v = (unsigned)rnd(2), kind = (unsigned)rnd(3);

        if (kind == 0) {
                built_cause_begins(b, vectors[v], true);
                b->r[b->n++] = in(*t, CAUSE_VECTOR, 236 + v, vectors[v]);
                built_span(b, t, vectors[v], rnd(20));
                if (rnd(2)) {
                        b->r[b->n++] = in(*t, CAUSE_TIMER, 0xa0 + v, timers[v]);
                        built_span(b, t, timers[v], 1 + rnd(30));
                        b->r[b->n++] = out(*t, CAUSE_TIMER, 0xa0 + v);
                }
                built_span(b, t, vectors[v], rnd(20));
                b->r[b->n++] = out(*t, CAUSE_VECTOR, 236 + v);
        } else if (kind == 1) {
                built_cause_begins(b, softirqs[v], false);
                b->r[b->n++] = in(*t, CAUSE_SOFTIRQ, 1 + 8 * v, softirqs[v]);
                built_span(b, t, softirqs[v], 1 + rnd(40));
                b->r[b->n++] = out(*t, CAUSE_SOFTIRQ, 1 + 8 * v);
        } else {
                built_cause_begins(b, tasks[v], true);
                b->r[b->n++] = sw(*t, PROBE, 3001 + (int)v, comms[v]);
                built_span(b, t, tasks[v], 1 + rnd(100));
                if (rnd(2)) {
                        b->r[b->n++] = in(*t, CAUSE_VECTOR, 236, "local_timer");
                        built_span(b, t, "local_timer", 1 + rnd(10));
                        b->r[b->n++] = out(*t, CAUSE_VECTOR, 236);
                        built_span(b, t, tasks[v], rnd(10));
                }
                b->r[b->n++] = sw(*t, 3001 + (int)v, PROBE, "probe");
        }
}

static void build(Built *b)
{
        uint64_t t = 1000;
        unsigned episodes = 1 + (unsigned)rnd(4);

        memset(b, 0, sizeof(*b));
        b->owner = -1;
        b->start = t;
        for (unsigned e = 0; e < episodes; e++) {
                uint64_t gap = rnd(25);

                b->pending += gap;
                t += gap;
                built_episode(b, &t);
        }
        b->pending += rnd(25);
        b->end = t + b->pending;
        b->overhead[b->owner] += b->pending;
}

/* 2000 interruptions of up to four episodes each: every cause's own time and overhead is what
 * the builder laid out, and nothing is unexplained or no_record. */
static void test_built_at_random(void **state)
{
        (void)state;
        rng_state = 42;
        for (int k = 0; k < 2000; k++) {
                Built b;
                CauseList l;

                build(&b);
                assert_int_equal(causes_analyze(b.r, b.n, b.start, b.end, PROBE, 0, &l), 0);
                assert_adds_up(&l, b.end - b.start);
                assert_int_equal(l.unexplained_ticks, 0);
                assert_int_equal(l.no_record_ticks, 0);
                assert_int_equal(l.other_ticks, 0);
                for (size_t i = 0; i < b.n_names; i++) {
                        const char *name = b.names[i];
                        const Cause *c = NULL;

                        for (size_t j = 0; j < l.n && !c; j++) {
                                c = strcmp(l.causes[j].name, name) == 0 ? &l.causes[j] : NULL;
                        }
                        if (b.own[i] + b.overhead[i] == 0) {
                                assert_null(c);
                                continue;
                        }
                        if (!c) {
                                fail_msg("case %d: no cause %s", k, name);
                        }
                        assert_int_equal(c->ticks, b.own[i]);
                        assert_int_equal(c->overhead_ticks, b.overhead[i]);
                }
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_records),
                cmocka_unit_test(test_nesting),
                cmocka_unit_test(test_repeats_merge),
                cmocka_unit_test(test_clipping),
                cmocka_unit_test(test_missing_exits),
                cmocka_unit_test(test_missing_entries),
                cmocka_unit_test(test_preempted_softirq),
                cmocka_unit_test(test_unknown_probe),
                cmocka_unit_test(test_many_causes),
                cmocka_unit_test(test_more_causes_than_followed),
                cmocka_unit_test(test_too_deep),
                cmocka_unit_test(test_lower_bound_and_names),
                cmocka_unit_test(test_woken_by),
                cmocka_unit_test(test_counters),
                cmocka_unit_test(test_switch_first),
                cmocka_unit_test(test_records_naming_nothing),
                cmocka_unit_test(test_built_at_random),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

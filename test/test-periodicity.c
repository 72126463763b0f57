/* Unit tests of period detection: periodic series with jitter mixed with Poisson noise, two
 * periods at once, pure noise, missed events, fundamentals and sources sharing a lattice,
 * windows recorded on the test VM (test/periodicity/), the kernel sources named, and the
 * bounds. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "periodicity-internal.h"
#include "periodicity.h"
#include "rng.h"
#include "util.h"

#define MS 1000000.0
#define S 1000000000.0

/* A growing, later sorted, list of event times. */
typedef struct Events {
        uint64_t *t;
        size_t n;
        size_t cap;
} Events;

static void add(Events *e, double t_ns)
{
        if (e->n == e->cap) {
                e->cap = e->cap ? 2 * e->cap : 1024;
                e->t = realloc(e->t, e->cap * sizeof(*e->t));
                assert_non_null(e->t);
        }
        e->t[e->n++] = (uint64_t)llround(t_ns);
}

static void finish(Events *e)
{
        qsort(e->t, e->n, sizeof(*e->t), cmp_u64);
}

/* Every @period_ns from @start_ns to @end_ns, each moved by up to ±@jitter_ns, kept with
 * probability @keep. Returns how many were added. */
static size_t add_periodic(Events *e, double start_ns, double end_ns, double period_ns,
                           double jitter_ns, double keep)
{
        size_t k = 0;

        for (double t = start_ns; t < end_ns; t += period_ns) {
                if (rng_uniform() < keep) {
                        add(e, t + (rng_uniform() * 2 - 1) * jitter_ns);
                        k++;
                }
        }
        return k;
}

/* Poisson events at @rate_hz. */
static size_t add_poisson(Events *e, double start_ns, double end_ns, double rate_hz)
{
        size_t k = 0;

        for (double t = start_ns - log(1 - rng_uniform()) * S / rate_hz; t < end_ns;
             t -= log(1 - rng_uniform()) * S / rate_hz) {
                add(e, t);
                k++;
        }
        return k;
}

static const PeriodicityPeriod *find_period(const PeriodicityResult *r, double period_ns,
                                            double rel)
{
        for (size_t i = 0; i < r->n; i++) {
                if (fabs((double)r->periods[i].period_ns - period_ns) <= rel * period_ns) {
                        return &r->periods[i];
                }
        }
        return NULL;
}

static void print_result(const PeriodicityResult *r)
{
        print_message("%zu events over %.3f s, %zu period(s)\n", r->analysed,
                      (double)r->span_ns / S, r->n);
        for (size_t i = 0; i < r->n; i++) {
                const PeriodicityPeriod *p = &r->periods[i];

                print_message("  %.6f ms ±%.1f us: %zu events (%.1f %%) %s\n",
                              (double)p->period_ns / MS, (double)p->tolerance_ns / 1000, p->events,
                              p->share * 100, p->source ? p->source : "");
        }
}

/* A period's events are at most one per point of its lattice over the window (rounded: its
 * events lie off by their tolerance, and the period as measured may be a few ppm off the
 * source's): more are events of other phases, which chance or another source put there. */
static void assert_sane(const PeriodicityResult *r)
{
        assert_true(r->n <= PERIODICITY_MAX_PERIODS);
        for (size_t i = 0; i < r->n; i++) {
                uint64_t points =
                        (uint64_t)llround((double)r->span_ns / (double)r->periods[i].period_ns) + 1;

                assert_true(r->periods[i].share > 0 && r->periods[i].share <= 1);
                assert_true(r->periods[i].events <= r->analysed);
                if (r->periods[i].events > points) {
                        print_result(r);
                        fail_msg("%zu events on %" PRIu64 " ns, which has %" PRIu64
                                 " points over %" PRIu64 " ns",
                                 r->periods[i].events, r->periods[i].period_ns, points, r->span_ns);
                }
                if (i > 0) {
                        assert_true(r->periods[i].events <= r->periods[i - 1].events);
                }
        }
}

/* Runs the analysis over @e with the options GetStats uses (a period from 3 % of the events
 * that no period kept before explains, or on half its periods over the window) and checks the
 * result's invariants. */
static void find_as_getstats(const Events *e, PeriodicityResult *r)
{
        PeriodicityOptions opt;

        periodicity_options_init(&opt);
        opt.min_share = 0.03;
        opt.min_fill = 0.5;
        opt.online_cpus = 2;
        assert_int_equal(periodicity_find(e->t, e->n, &opt, r), 0);
        assert_sane(r);
}

/* 50 ms with ±50 us jitter among Poisson noise at 100/s: found within 1 %, with about its
 * events. */
static void test_periodic_in_noise(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        size_t periodic;

        (void)state;
        for (uint64_t seed = 1; seed <= 5; seed++) {
                rng_seed(seed);
                e.n = 0;
                periodic = add_periodic(&e, 1 * S, 21 * S, 50 * MS, 50000, 1);
                add_poisson(&e, 1 * S, 21 * S, 100);
                finish(&e);
                assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
                assert_sane(&r);
                if (seed == 1) {
                        print_result(&r);
                }
                assert_int_equal(r.analysed, e.n);
                assert_int_equal(r.n, 1);
                p = find_period(&r, 50 * MS, 0.01);
                assert_non_null(p);
                assert_true(fabs((double)p->period_ns - 50 * MS) < 0.001 * 50 * MS);
                assert_true(p->events >= periodic * 95 / 100);
                assert_true(p->events <= periodic * 110 / 100);
                assert_null(p->source);
        }
        free(e.t);
}

/* Hundreds of noise events per second: the period is a few per cent of the events; found when
 * asked for periods with that share. */
static void test_heavy_noise(void **state)
{
        Events e = {0};
        PeriodicityOptions opt;
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        size_t periodic;

        (void)state;
        periodicity_options_init(&opt);
        opt.min_share = 0.03;
        for (uint64_t seed = 10; seed < 13; seed++) {
                rng_seed(seed);
                e.n = 0;
                periodic = add_periodic(&e, 1 * S, 31 * S, 50 * MS, 20000, 1);
                add_poisson(&e, 1 * S, 31 * S, 400);
                finish(&e);
                assert_int_equal(periodicity_find(e.t, e.n, &opt, &r), 0);
                assert_sane(&r);
                if (seed == 10) {
                        print_result(&r);
                }
                p = find_period(&r, 50 * MS, 0.01);
                assert_non_null(p);
                assert_true(p->events >= periodic * 9 / 10);
                assert_true(p->share < 0.1);
                /* the default asks for 10 %: not reported */
                assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
                assert_null(find_period(&r, 50 * MS, 0.01));
        }
        free(e.t);
}

/* 50 ms and 70 ms at once, plus noise: both, and not their multiples. */
static void test_two_periods(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *a, *b;
        size_t na, nb;

        (void)state;
        rng_seed(99);
        na = add_periodic(&e, 1 * S, 21 * S, 50 * MS, 30000, 1);
        nb = add_periodic(&e, 1 * S + 3 * MS, 21 * S, 70 * MS, 30000, 1);
        add_poisson(&e, 1 * S, 21 * S, 50);
        finish(&e);
        assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
        assert_sane(&r);
        print_result(&r);
        assert_int_equal(r.n, 2);
        a = find_period(&r, 50 * MS, 0.01);
        b = find_period(&r, 70 * MS, 0.01);
        assert_non_null(a);
        assert_non_null(b);
        assert_true(a->events >= na * 95 / 100 && a->events <= na * 110 / 100);
        assert_true(b->events >= nb * 95 / 100 && b->events <= nb * 110 / 100);
        assert_ptr_equal(&r.periods[0], a); /* more events first */
        free(e.t);
}

/* Poisson events alone: nothing periodic, not even when asked for small shares. */
static void test_pure_noise(void **state)
{
        Events e = {0};
        PeriodicityOptions opt;
        PeriodicityResult r;

        (void)state;
        periodicity_options_init(&opt);
        opt.min_share = 0.02;
        for (uint64_t seed = 100; seed < 110; seed++) {
                rng_seed(seed);
                e.n = 0;
                add_poisson(&e, 1 * S, 61 * S, seed % 2 ? 300 : 30);
                finish(&e);
                assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
                if (r.n > 0) {
                        print_result(&r);
                }
                assert_int_equal(r.n, 0);
                assert_int_equal(periodicity_find(e.t, e.n, &opt, &r), 0);
                if (r.n > 0) {
                        print_result(&r);
                }
                assert_int_equal(r.n, 0);
        }
        free(e.t);
}

/* A 250 Hz tick with a few us of jitter among noise is named for CONFIG_HZ=250; only the
 * fundamental is reported although 8 ms, 12 ms... are in the data too. */
static void test_tick_named(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;

        (void)state;
        rng_seed(250);
        add_periodic(&e, 1 * S, 11 * S, 4 * MS, 3000, 1);
        add_poisson(&e, 1 * S, 11 * S, 300);
        finish(&e);
        assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
        assert_sane(&r);
        print_result(&r);
        assert_int_equal(r.n, 1);
        p = &r.periods[0];
        assert_true(fabs((double)p->period_ns - 4 * MS) < 0.001 * 4 * MS);
        assert_non_null(p->source);
        assert_string_equal(p->source, "scheduler tick (CONFIG_HZ=250)");
        /* a precise source gets a tight tolerance, well below 1 % of the period */
        assert_true(p->tolerance_ns < 20000);
        free(e.t);
}

/* A 1 ms source among a 250 Hz and a 100 Hz tick out of its phase, and noise: 1 ms is found
 * although the histogram's peaks at 2, 3... 30 ms, where the ticks' differences add to its
 * own, stand higher than the one at 1 ms; and the 4 ms lattice, which would hold the 1 ms
 * events and the tick's, is not reported in its place. */
static void test_fundamental_below_multiples(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        size_t periodic;

        (void)state;
        for (uint64_t seed = 1; seed <= 5; seed++) {
                rng_seed(seed);
                e.n = 0;
                periodic = add_periodic(&e, 0.1 * S, 2.1 * S, 1 * MS, 1000, 1);
                add_periodic(&e, 0.0 * S + 80000, 2.4 * S, 4 * MS, 2000, 1);
                add_periodic(&e, 0.0 * S + 3 * MS + 350000, 2.4 * S, 10 * MS, 2000, 1);
                add_poisson(&e, 0, 2.4 * S, 100);
                finish(&e);
                find_as_getstats(&e, &r);
                if (seed == 1) {
                        print_result(&r);
                }
                p = find_period(&r, 1 * MS, 0.001);
                assert_non_null(p);
                assert_true(p->events >= periodic * 95 / 100);
                assert_true(p->events <= periodic * 105 / 100);
                p = find_period(&r, 4 * MS, 0.001);
                assert_non_null(p);
                assert_true(p->events <= 2.4 * S / (4 * MS) * 1.05);
                assert_non_null(find_period(&r, 10 * MS, 0.001));
        }
        free(e.t);
}

/* A 1 ms source and a 250 Hz tick half a millisecond after it: every point of a 500 us lattice
 * holds an event now and then, but those between the 1 ms ones only one in four. 1 ms and 4 ms
 * are reported, not 500 us. */
static void test_two_sources_one_lattice(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        size_t periodic, tick;

        (void)state;
        for (uint64_t seed = 1; seed <= 5; seed++) {
                rng_seed(seed);
                e.n = 0;
                periodic = add_periodic(&e, 0.1 * S, 2.1 * S, 1 * MS, 1000, 1);
                tick = add_periodic(&e, 0.1 * S + 0.5 * MS, 2.1 * S, 4 * MS, 2000, 1);
                add_poisson(&e, 0, 2.2 * S, 100);
                finish(&e);
                find_as_getstats(&e, &r);
                if (seed == 1) {
                        print_result(&r);
                }
                assert_null(find_period(&r, 0.5 * MS, 0.01));
                assert_non_null(find_period(&r, 1 * MS, 0.001));
                assert_true(find_period(&r, 1 * MS, 0.001)->events >= periodic * 95 / 100);
                assert_non_null(find_period(&r, 4 * MS, 0.001));
                assert_true(find_period(&r, 4 * MS, 0.001)->events >= tick * 90 / 100);
        }
        free(e.t);
}

/* A 50 ms source that comes with a 10 ms one (every fifth of its events is one of the 50 ms
 * source's) and brings a second event 2.48 ms after each of its own, next to a 250 Hz tick and
 * noise: 10 ms and 50 ms are reported, not a lattice that divides the offsets 2.48 ms and 10 ms
 * (2.5 ms) and holds a few events of each. */
static void test_followers(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        size_t periodic;

        (void)state;
        for (uint64_t seed = 1; seed <= 5; seed++) {
                rng_seed(seed);
                e.n = 0;
                add_periodic(&e, 0.1 * S, 4.1 * S, 10 * MS, 2000, 1);
                periodic = add_periodic(&e, 0.1 * S + 2.48 * MS, 4.1 * S, 50 * MS, 2000, 1);
                add_periodic(&e, 0.1 * S + 1.3 * MS, 4.1 * S, 4 * MS, 2000, 1);
                add_poisson(&e, 0.1 * S, 4.1 * S, 60);
                finish(&e);
                find_as_getstats(&e, &r);
                if (seed == 1) {
                        print_result(&r);
                }
                assert_non_null(find_period(&r, 10 * MS, 0.001));
                assert_non_null(find_period(&r, 50 * MS, 0.001));
                assert_true(find_period(&r, 50 * MS, 0.001)->events >= periodic * 90 / 100);
                assert_null(find_period(&r, 2.5 * MS, 0.2));
        }
        free(e.t);
}

/* A 137 ms source whose every fourth event comes too late to count (it meets another source):
 * still 137 ms, with three quarters of its events. */
static void test_regular_misses(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        size_t periodic = 0;

        (void)state;
        for (uint64_t seed = 1; seed <= 5; seed++) {
                rng_seed(seed);
                e.n = 0;
                periodic = 0;
                for (unsigned k = 0; k < 40; k++) {
                        add(&e, 0.1 * S + k * 137 * MS + (k % 4 == 3 ? 250000 : 0) +
                                        (rng_uniform() * 2 - 1) * 2000);
                        periodic += k % 4 != 3;
                }
                add_periodic(&e, 10.5 * MS, 5.6 * S, 4 * MS, 2000, 1);
                add_poisson(&e, 0, 5.6 * S, 60);
                finish(&e);
                find_as_getstats(&e, &r);
                if (seed == 1) {
                        print_result(&r);
                }
                p = find_period(&r, 137 * MS, 0.001);
                assert_non_null(p);
                assert_true(p->events >= periodic * 90 / 100);
        }
        free(e.t);
}

/* 80 thefts every 47 ms (each 0 to 3 us late), and 10 of the 79 points halfway between two of
 * them holding an unrelated event within 50 us (more than chance would put there, so that they
 * link chains at 23.5 ms), among Poisson noise at 175/s, over ten seeds: 47 ms is found within
 * 0.1 % with at least 76 of the thefts, and 23.5 ms, whose every other point holds a theft and
 * whose points between hold a few events, is not reported. */
static void test_half_period(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        bool halfway[79];

        (void)state;
        for (uint64_t seed = 1; seed <= 10; seed++) {
                rng_seed(seed);
                e.n = 0;
                memset(halfway, 0, sizeof(halfway));
                for (unsigned k = 0; k < 80; k++) {
                        add(&e, 0.1 * S + k * 47 * MS + rng_uniform() * 3000);
                }
                for (unsigned placed = 0; placed < 10;) {
                        unsigned k = (unsigned)(rng_uniform() * 79);

                        if (!halfway[k]) {
                                halfway[k] = true;
                                placed++;
                                add(&e, 0.1 * S + (k + 0.5) * 47 * MS +
                                                (rng_uniform() * 2 - 1) * 50000);
                        }
                }
                add_poisson(&e, 0, 0.15 * S + 80 * 47 * MS, 175);
                finish(&e);
                find_as_getstats(&e, &r);
                if (seed == 1) {
                        print_result(&r);
                }
                p = find_period(&r, 47 * MS, 0.001);
                if (!p || p->events < 76 || find_period(&r, 23.5 * MS, 0.01)) {
                        print_result(&r);
                        fail_msg("seed %" PRIu64 ": 47 ms with %zu of 80 thefts, 23.5 ms %s", seed,
                                 p ? p->events : 0,
                                 find_period(&r, 23.5 * MS, 0.01) ? "reported" : "not reported");
                }
        }
        free(e.t);
}

/* The jitter of a scheduler tick as a 2-CPU VM shows it (test/periodicity/: nine in ten
 * ticks within 1 us of their time, most others within 5 us, a few 30 us off). */
static double tick_jitter_ns(void)
{
        double u = rng_uniform();

        return u < 0.9 ? rng_normal() * 500 : u < 0.99 ? rng_normal() * 2000 : (u * 2 - 1) * 30000;
}

/* The wake-up of a SCHED_FIFO thread there: within a few us, one in ten up to 40 us late. */
static double wakeup_jitter_ns(void)
{
        return rng_uniform() < 0.9 ? rng_normal() * 1500 : rng_uniform() * 40000;
}

/* A noisy VM's window: a 1 ms tick with that jitter, of which 5 % of the ticks are missing
 * (merged with another interruption or below the threshold), makes @tick_share of the
 * interruptions; the rest is Poisson noise and @count events of a source every @period_ns
 * that wakes with that jitter. Returns how many events the source has. */
static size_t noisy_vm(Events *e, double tick_share, double period_ns, size_t count)
{
        double start = 0.1 * S, end = start + (double)count * period_ns, tick = 0, rate;

        e->n = 0;
        for (double t = start - 50 * MS + rng_uniform() * MS; t < end + 50 * MS; t += MS) {
                if (rng_uniform() < 0.95) {
                        add(e, t + tick_jitter_ns());
                        tick++;
                }
        }
        for (size_t k = 0; k < count; k++) {
                add(e, start + (double)k * period_ns + 300000 + wakeup_jitter_ns());
        }
        rate = (tick / tick_share - tick - (double)count) / ((end - start + 100 * MS) / S);
        add_poisson(e, start - 50 * MS, end + 50 * MS, rate);
        finish(e);
        return count;
}

/* What the end-to-end periodicity test met on a noisy VM: a 1 ms tick that makes 60 % (then
 * 48 %) of the interruptions and hundreds of other interruptions a second, among which a theft
 * every 137 ms (47 ms) is not 1 % of the events. With GetStats' options both the tick and the
 * theft are found, within 1 %, the theft with about its events; the theft is found for how it
 * fills its lattice, as its share is far below 3 %. */
static void check_among_tick(double tick_share, double period_ns, size_t count)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;

        for (uint64_t seed = 1; seed <= 5; seed++) {
                size_t n;

                rng_seed(seed);
                n = noisy_vm(&e, tick_share, period_ns, count);
                find_as_getstats(&e, &r);
                if (seed == 1) {
                        print_result(&r);
                }
                p = find_period(&r, 1 * MS, 0.01);
                assert_non_null(p);
                assert_true(p->share > tick_share * 0.9);
                assert_string_equal(p->source, "scheduler tick (CONFIG_HZ=1000)");
                p = find_period(&r, period_ns, 0.01);
                if (!p) {
                        print_result(&r);
                }
                assert_non_null(p);
                assert_true(fabs((double)p->period_ns - period_ns) < 0.0001 * period_ns);
                assert_true(p->share < 0.03);
                /* one in ten thefts comes late, up to 40 us; few chance events join */
                assert_true(p->events >= n * 8 / 10);
                assert_true(p->events <= n * 11 / 10);
        }
        free(e.t);
}

static void test_among_tick(void **state)
{
        (void)state;
        check_among_tick(0.60, 137 * MS, 40);
        check_among_tick(0.60, 47 * MS, 80);
        check_among_tick(0.48, 137 * MS, 40);
        check_among_tick(0.48, 47 * MS, 80);
}

/* Poisson noise, alone or in bursts of up to five interruptions 12-42 us apart: no period is
 * reported for how it fills its lattice (chance chains are short, a burst at a lattice point is
 * one arrival). */
static void test_noise_fills_nothing(void **state)
{
        static const double rates[] = {3, 30, 300, 1000, 3000};
        Events e = {0};
        PeriodicityResult r;

        (void)state;
        for (size_t k = 0; k < ELEMENTSOF(rates); k++) {
                for (uint64_t seed = 1; seed <= 4; seed++) {
                        double span = rates[k] < 100 ? 60 * S : 6000 / rates[k] * S;

                        rng_seed(1000 * k + seed);
                        e.n = 0;
                        for (double t = 0.1 * S; t < span;
                             t -= log(1 - rng_uniform()) * S / rates[k]) {
                                add(&e, t);
                                for (double b = t; seed % 2 == 0 && rng_uniform() < 0.5;) {
                                        b += 12000 + rng_uniform() * 30000;
                                        add(&e, b);
                                }
                        }
                        finish(&e);
                        find_as_getstats(&e, &r);
                        if (r.n > 0) {
                                print_result(&r);
                        }
                        assert_int_equal(r.n, 0);
                }
        }
        free(e.t);
}

/* Interruptions recorded on this project's test VM (test/periodicity/), each window with a
 * theft of known period among the machine's own sources: with the options GetStats uses, the
 * theft's period is reported within 0.1 % (a chance chain 1 % off, such as 136 ms next to a
 * 137 ms theft, does not count) with at least a third of its events (as e2e-periodicity asks of
 * the live daemon), and no period near @absent_ns (0: none). */
static void check_recorded(const char *name, double period_ns, size_t thefts, double absent_ns)
{
        char path[512], line[256];
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        FILE *f;

        snprintf(path, sizeof(path), "%s/periodicity/%s", TEST_SOURCE_DIR, name);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                if (line[0] != '#') {
                        add(&e, strtod(line, NULL));
                }
        }
        fclose(f);
        find_as_getstats(&e, &r);
        print_message("%s:\n", name);
        print_result(&r);
        p = find_period(&r, period_ns, 0.001);
        assert_non_null(p);
        assert_true(p->events >= thefts / 3);
        if (absent_ns > 0) {
                assert_null(find_period(&r, absent_ns, 0.05));
        }
        free(e.t);
}

static void test_recorded(void **state)
{
        (void)state;
        check_recorded("theft-1ms-tick-4ms.txt", 1 * MS, 2000, 0);
        check_recorded("theft-137ms-every-fourth-late.txt", 137 * MS, 40, 0);
        check_recorded("theft-137ms-10ms-follower.txt", 137 * MS, 40, 2.5 * MS);
        check_recorded("theft-50ms-follower-2.5ms.txt", 50 * MS, 80, 2.5 * MS);
        check_recorded("theft-50ms-follower-6ms.txt", 50 * MS, 80, 6 * MS);
        check_recorded("theft-50ms-follower-8ms.txt", 50 * MS, 80, 8 * MS);
        check_recorded("theft-137ms-two-1ms-ticks.txt", 137 * MS, 40, 2 * MS);
        check_recorded("theft-137ms-near-136ms-chance.txt", 137 * MS, 40, 0);
}

/* A 1 Hz source of which a third of the events fell below the threshold: the chain steps over
 * the missing ones, and 1 s is reported, not 2 s or 3 s. */
static void test_missed_events(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        const PeriodicityPeriod *p;
        size_t kept;

        (void)state;
        rng_seed(5);
        kept = add_periodic(&e, 0.3 * S, 120.3 * S, 1 * S, 5000, 0.66);
        add_poisson(&e, 0.1 * S, 121 * S, 2);
        finish(&e);
        assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
        assert_sane(&r);
        print_result(&r);
        assert_int_equal(r.n, 1);
        p = &r.periods[0];
        assert_true(fabs((double)p->period_ns - S) < 0.001 * S);
        assert_true(p->events >= kept * 9 / 10);
        assert_non_null(p->source);
        assert_non_null(strstr(p->source, "1 Hz"));
        free(e.t);
}

/* A 10 ms series that is 8 % of the events is below the default 10 %: neither it nor one of
 * its multiples (which gather chance events on a wider tolerance) is reported. */
static void test_weak_not_multiple(void **state)
{
        Events e = {0};
        PeriodicityOptions opt;
        PeriodicityResult r;

        (void)state;
        for (uint64_t seed = 30; seed < 34; seed++) {
                rng_seed(seed);
                e.n = 0;
                add_periodic(&e, 1 * S, 31 * S, 10 * MS, 2000, 1);
                add_poisson(&e, 1 * S, 31 * S, 1150);
                finish(&e);
                assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
                if (r.n > 0) {
                        print_result(&r);
                }
                assert_int_equal(r.n, 0);
                /* asked for 5 %, the 10 ms itself */
                periodicity_options_init(&opt);
                opt.min_share = 0.05;
                assert_int_equal(periodicity_find(e.t, e.n, &opt, &r), 0);
                if (seed == 30) {
                        print_result(&r);
                }
                assert_int_equal(r.n, 1);
                assert_non_null(find_period(&r, 10 * MS, 0.001));
        }
        free(e.t);
}

/* A strictly periodic series alone: one period, every event on it. */
static void test_pure_periodic(void **state)
{
        Events e = {0};
        PeriodicityResult r;

        (void)state;
        rng_seed(1);
        add_periodic(&e, 0, 5 * S, 10 * MS, 0, 1);
        finish(&e);
        assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
        assert_sane(&r);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.periods[0].period_ns, 10000000);
        assert_int_equal(r.periods[0].events, e.n);
        assert_true(r.periods[0].share == 1);
        assert_string_equal(r.periods[0].source, "scheduler tick (CONFIG_HZ=100)");
        free(e.t);
}

/* Only the newest max_events are analysed, and that stays fast. */
static void test_bounded(void **state)
{
        Events e = {0};
        PeriodicityResult r;
        struct timespec a, b;
        double ms;

        (void)state;
        rng_seed(77);
        add_periodic(&e, 1 * S, 60 * S, 10 * MS, 2000, 1);
        add_poisson(&e, 1 * S, 60 * S, 300);
        add_periodic(&e, 60 * S, 110 * S, 7 * MS, 2000, 1);
        add_poisson(&e, 60 * S, 110 * S, 300);
        finish(&e);
        assert_true(e.n > 40000);
        clock_gettime(CLOCK_MONOTONIC, &a);
        assert_int_equal(periodicity_find(e.t, e.n, NULL, &r), 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        print_result(&r);
        print_message("analysed in %.1f ms\n", ms);
        assert_int_equal(r.analysed, 20000);
        assert_true(r.span_ns < 50 * S);
        assert_non_null(find_period(&r, 7 * MS, 0.01));
        assert_null(find_period(&r, 10 * MS, 0.01));
        assert_true(ms < 2000);

        /* GetStats' options over 20000 events of a noisy VM, where the triples are counted */
        rng_seed(78);
        noisy_vm(&e, 0.6, 137 * MS, 100);
        assert_true(e.n > 20000);
        clock_gettime(CLOCK_MONOTONIC, &a);
        find_as_getstats(&e, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        print_result(&r);
        print_message("analysed in %.1f ms\n", ms);
        assert_int_equal(r.analysed, 20000);
        assert_non_null(find_period(&r, 1 * MS, 0.01));
        assert_non_null(find_period(&r, 137 * MS, 0.01));
        assert_true(ms < 2000);
        free(e.t);
}

static void test_refusals(void **state)
{
        uint64_t unsorted[] = {5, 3, 9};
        uint64_t few[] = {1000, 2000};
        PeriodicityOptions opt;
        PeriodicityResult r;

        (void)state;
        assert_int_equal(periodicity_find(unsorted, 3, NULL, &r), -EINVAL);
        assert_int_equal(periodicity_find(few, 2, NULL, NULL), -EINVAL);
        assert_int_equal(periodicity_find(NULL, 2, NULL, &r), -EINVAL);
        assert_int_equal(periodicity_find(NULL, 0, NULL, &r), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(periodicity_find(few, 2, NULL, &r), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(r.analysed, 2);
        periodicity_options_init(&opt);
        opt.min_share = 1.5;
        assert_int_equal(periodicity_find(few, 2, &opt, &r), -EINVAL);
        periodicity_options_init(&opt);
        opt.max_period_ns = opt.min_period_ns;
        assert_int_equal(periodicity_find(few, 2, &opt, &r), -EINVAL);
        periodicity_options_init(&opt);
        opt.max_events = PERIODICITY_EVENTS_LIMIT + 1;
        assert_int_equal(periodicity_find(few, 2, &opt, &r), -EINVAL);
}

static void test_source_names(void **state)
{
        (void)state;
        assert_string_equal(periodicity_source_name(1000000, 0), "scheduler tick (CONFIG_HZ=1000)");
        assert_string_equal(periodicity_source_name(1010000, 0), "scheduler tick (CONFIG_HZ=1000)");
        assert_string_equal(periodicity_source_name(3333333, 0), "scheduler tick (CONFIG_HZ=300)");
        assert_string_equal(periodicity_source_name(3950000, 0), "scheduler tick (CONFIG_HZ=250)");
        assert_string_equal(periodicity_source_name(10000000, 0), "scheduler tick (CONFIG_HZ=100)");
        assert_non_null(strstr(periodicity_source_name(500000000, 0), "clocksource watchdog"));
        assert_non_null(strstr(periodicity_source_name(1000000000, 2), "1 Hz residual tick"));
        assert_non_null(strstr(periodicity_source_name(1000000000, 0), "vmstat"));
        assert_string_equal(periodicity_source_name(2000000000, 0), "a 2 s timer");
        assert_string_equal(periodicity_source_name(4000000000, 0), "a 4 s timer");
        assert_non_null(strstr(periodicity_source_name(5000000000, 0), "writeback"));
        /* the watchdog seen from one of 3 CPUs */
        assert_non_null(strstr(periodicity_source_name(1500000000, 3), "clocksource watchdog"));
        assert_null(periodicity_source_name(1500000000, 0));
        assert_null(periodicity_source_name(50000000, 0));
        assert_null(periodicity_source_name(1050000, 0)); /* 5 % off */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_periodic_in_noise),
                cmocka_unit_test(test_heavy_noise),
                cmocka_unit_test(test_two_periods),
                cmocka_unit_test(test_pure_noise),
                cmocka_unit_test(test_tick_named),
                cmocka_unit_test(test_fundamental_below_multiples),
                cmocka_unit_test(test_two_sources_one_lattice),
                cmocka_unit_test(test_regular_misses),
                cmocka_unit_test(test_half_period),
                cmocka_unit_test(test_among_tick),
                cmocka_unit_test(test_noise_fills_nothing),
                cmocka_unit_test(test_followers),
                cmocka_unit_test(test_recorded),
                cmocka_unit_test(test_missed_events),
                cmocka_unit_test(test_weak_not_multiple),
                cmocka_unit_test(test_pure_periodic),
                cmocka_unit_test(test_bounded),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_source_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

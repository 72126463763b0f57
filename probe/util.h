#pragma once

/* The helpers every part of the project shares: the number of elements of an array, the units
 * of time in ns, a timespec in ns and the one reader of a clock in ns, the decimals of three
 * significant digits, the qsort() comparisons of plain values, and the one set of cleanup
 * attributes (a variable declared with one is released when it goes out of scope, on every
 * return path). Header-only, so that a library uses them without linking libjitter. */

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Durations in ns, as every time of the project is kept. */
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define NSEC_PER_MIN (UINT64_C(60) * NSEC_PER_SEC)
#define NSEC_PER_HOUR (UINT64_C(60) * NSEC_PER_MIN)
#define NSEC_PER_DAY (UINT64_C(24) * NSEC_PER_HOUR)

/* @ts in ns. */
static inline uint64_t timespec_ns(const struct timespec *ts)
{
        return (uint64_t)ts->tv_sec * NSEC_PER_SEC + (uint64_t)ts->tv_nsec;
}

/* @clock (CLOCK_MONOTONIC, CLOCK_REALTIME, ...) now, in ns. */
static inline uint64_t now_ns(clockid_t clock)
{
        struct timespec ts;

        clock_gettime(clock, &ts);
        return timespec_ns(&ts);
}

/* The decimals that print 0 <= @v < 1000 to three significant digits ("1.23", "12.3", "123"). */
static inline int sig3_decimals(double v)
{
        return v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
}

/* qsort() comparisons, ascending: of two uint64_t, of two doubles (NaN compares equal to
 * everything), and of two C strings through an array of pointers to them (strcmp() order). */
static inline int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return (x > y) - (x < y);
}

static inline int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static inline int cmp_strings(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The number of elements of the array @x. Refuses to compile when @x is a pointer (an array
 * parameter, say), where sizeof would silently give the size of the pointer. */
#define ELEMENTSOF(x)                                                                              \
        (sizeof(x) / sizeof((x)[0]) +                                                              \
         0 * sizeof(struct {                                                                       \
                 _Static_assert(!__builtin_types_compatible_p(__typeof__(x), __typeof__(&(x)[0])), \
                                "ELEMENTSOF of a pointer");                                        \
                 int unused;                                                                       \
         }))

static inline void freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

/* Hands the value of pointer @p on and leaves NULL in it, so that its _cleanup_ frees nothing. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _taken = (p);                                                        \
                (p) = NULL;                                                                        \
                _taken;                                                                            \
        })

static inline void closep(int *fd)
{
        if (*fd >= 0) {
                close(*fd);
        }
}
#define _cleanup_close_ __attribute__((cleanup(closep)))

static inline void closedirp(DIR **d)
{
        if (*d) {
                closedir(*d);
        }
}
#define _cleanup_closedir_ __attribute__((cleanup(closedirp)))

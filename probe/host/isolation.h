#pragma once

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How CPUs are isolated from the scheduler: at boot (isolcpus= with the domain flag, as
 * /sys/devices/system/cpu/isolated lists it) or at run time with cpusets, either a cgroup v1
 * shield (the root cpuset and the CPU's own exclusive cpuset with sched_load_balance = 0, and
 * no load-balanced cpuset holding the CPU: what `cset shield` and tuna make) or a cgroup v2
 * isolated partition (cpuset.cpus.partition = isolated).
 *
 * Everything is read below a root prefix so that fixture trees stand for a machine. The
 * cgroup mounts come from ROOT/proc/mounts; without that file, the usual places
 * (/sys/fs/cgroup/cpuset for v1, /sys/fs/cgroup for v2) are looked at. Only reads, never
 * writes, never logs; a FIFO below the root is never waited on. */

typedef enum IsolationKind {
        ISOLATION_NONE,
        ISOLATION_BOOT,
        ISOLATION_CPUSET_V1,
        ISOLATION_CPUSET_V2,
        _ISOLATION_KIND_MAX,
} IsolationKind;

#define ISOLATION_SETS_MAX 16
#define ISOLATION_PATH_MAX 160
/* The most directories one hierarchy's walk visits: it is the kernel's, but below a fixture
 * root it is anyone's, and a huge tree must not hold the caller. */
#define ISOLATION_WALK_DIRS_MAX 4096

/* One cpuset that isolates CPUs; @path is relative to its hierarchy's mount ("/rt"). For v2,
 * a path of "" stands for the root's cpuset.cpus.isolated when no partition was found. */
typedef struct IsolationSet {
        IsolationKind kind;
        char path[ISOLATION_PATH_MAX];
        cpu_set_t cpus;
} IsolationSet;

typedef struct Isolation {
        int boot_error; /* reading /sys/devices/system/cpu/isolated */
        cpu_set_t boot;
        /* -ENOENT: no such hierarchy mounted (or no cpuset in it). */
        int v1_error;
        char v1_mount[ISOLATION_PATH_MAX];
        int v2_error;
        char v2_mount[ISOLATION_PATH_MAX];
        cpu_set_t v1;
        cpu_set_t v2;
        IsolationSet sets[ISOLATION_SETS_MAX];
        size_t n_sets;
        unsigned dirs; /* directories visited: at most ISOLATION_WALK_DIRS_MAX per hierarchy */
} Isolation;

/* A reading kept for a while, for a caller asked for it often (GetStatus, which dashboards
 * poll): a read walks the cpuset hierarchies, thousands of directories on a host with many
 * cgroups, while what it finds changes only when someone makes or removes a cpuset. Zero it to
 * start with nothing kept. */
typedef struct IsolationCache {
        Isolation iso;
        bool valid;
        uint64_t read_ns;    /* when it was read, on the caller's clock */
        unsigned long reads; /* how many times it was read */
} IsolationCache;

/* Reads how the CPUs below @root (NULL or "" for the real system) are isolated into @ret.
 * What cannot be read is recorded in the *_error fields, never an error of the call. Returns
 * 0, or -ENAMETOOLONG for an over-long @root. */
int isolation_read(const char *root, Isolation *ret);

/* The isolation below @root, read anew only when nothing is kept, the kept reading is
 * @max_age_ns old or more at @now_ns (any monotonic clock, the same at every call), or the
 * clock went back. Never NULL; valid until the next call. */
const Isolation *isolation_cache_get(IsolationCache *c, const char *root, uint64_t now_ns,
                                     uint64_t max_age_ns);

/* How @cpu is isolated: boot first, then a v1 shield, then a v2 partition. When @ret_set is
 * given, it is set to the cpuset that isolates it (NULL for boot and none). */
IsolationKind isolation_of(const Isolation *iso, int cpu, const IsolationSet **ret_set);

/* Every CPU isolated in any way into @ret. */
void isolation_cpus(const Isolation *iso, cpu_set_t *ret);

/* The CPUs isolated at run time (v1 shields and v2 partitions) into @ret. */
void isolation_runtime_cpus(const Isolation *iso, cpu_set_t *ret);

/* "boot", "cpuset-v1", "cpuset-v2", "none"; NULL if out of range. */
const char *isolation_kind_to_string(IsolationKind kind);

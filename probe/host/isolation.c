#include "isolation.h"

#include "cpulist.h"
#include "host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How deep a walk through a cpuset hierarchy goes: a symlink loop in a fixture tree must not
 * hold the caller (ISOLATION_WALK_DIRS_MAX bounds its breadth). */
#define WALK_DEPTH_MAX 16

static const char *const kind_names[_ISOLATION_KIND_MAX] = {
        [ISOLATION_NONE] = "none",
        [ISOLATION_BOOT] = "boot",
        [ISOLATION_CPUSET_V1] = "cpuset-v1",
        [ISOLATION_CPUSET_V2] = "cpuset-v2",
};

const char *isolation_kind_to_string(IsolationKind kind)
{
        if ((unsigned)kind >= _ISOLATION_KIND_MAX) {
                return NULL;
        }
        return kind_names[kind];
}

static int join(char *buf, size_t size, const char *a, const char *b, const char *c)
{
        int n = snprintf(buf, size, "%s%s%s", a, b, c);

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The first line of @dir/@name, without its newline. */
static int read_at(const char *dir, const char *name, char *buf, size_t size)
{
        char p[4096];
        int r = join(p, sizeof(p), dir, "/", name);

        if (r < 0) {
                return r;
        }
        /* The first line; a FIFO with nothing written reads as empty. */
        r = host_read_text(p, buf, size);
        buf[strcspn(buf, "\n")] = '\0';
        return r == -EAGAIN ? 0 : r;
}

/* Reads @dir/@name as a CPU list; an empty file is an empty set. */
static int read_cpus(const char *dir, const char *name, cpu_set_t *ret)
{
        char text[8192];
        int r = read_at(dir, name, text, sizeof(text));

        return r < 0 ? r : cpulist_parse(text, ret);
}

/* Reads @dir/@name as 0 or 1; returns it or a negative errno. */
static int read_flag(const char *dir, const char *name)
{
        char text[16];
        int r = read_at(dir, name, text, sizeof(text));

        if (r < 0) {
                return r;
        }
        return strcmp(text, "0") == 0 ? 0 : strcmp(text, "1") == 0 ? 1 : -EINVAL;
}

static bool exists(const char *dir, const char *name)
{
        char p[4096];

        return join(p, sizeof(p), dir, "/", name) == 0 && access(p, F_OK) == 0;
}

/* /proc/mounts escapes blanks and backslashes as \ooo. */
static void unescape(char *s)
{
        char *w = s;

        for (const char *r = s; *r; w++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 4;
                } else {
                        *w = *r++;
                }
        }
        *w = '\0';
}

static bool has_option(const char *options, const char *want)
{
        size_t len = strlen(want);

        for (const char *p = options; p && *p;) {
                const char *end = strchr(p, ',');
                size_t n = end ? (size_t)(end - p) : strlen(p);

                if (n == len && strncmp(p, want, len) == 0) {
                        return true;
                }
                p = end ? end + 1 : NULL;
        }
        return false;
}

/* A v2 hierarchy holds cpusets when its root has their files or lists the controller. */
static bool v2_has_cpuset(const char *mount)
{
        char text[512];

        if (exists(mount, "cpuset.cpus.effective") || exists(mount, "cpuset.cpus.isolated")) {
                return true;
        }
        if (read_at(mount, "cgroup.controllers", text, sizeof(text)) < 0) {
                return false;
        }
        for (char *save = NULL, *w = strtok_r(text, " ", &save); w;
             w = strtok_r(NULL, " ", &save)) {
                if (strcmp(w, "cpuset") == 0) {
                        return true;
                }
        }
        return false;
}

/* Finds the v1 cpuset mount and the v2 mount with cpusets, as full paths below @root. */
static void find_mounts(const char *root, Isolation *iso, char *v1, char *v2, size_t size)
{
        char p[4096], line[4096];
        FILE *f = NULL;
        int fd;

        iso->v1_error = iso->v2_error = -ENOENT;
        v1[0] = v2[0] = '\0';
        if (join(p, sizeof(p), root, "/proc/mounts", "") == 0) {
                fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                f = fd >= 0 ? fdopen(fd, "re") : NULL;
                if (fd >= 0 && !f) {
                        close(fd);
                }
        }
        if (!f) {
                /* No mount table (a fixture tree, or no /proc): the usual places. */
                if (join(v1, size, root, "/sys/fs/cgroup/cpuset", "") == 0 &&
                    (exists(v1, "cpuset.cpus") || exists(v1, "cpus"))) {
                        iso->v1_error = 0;
                        snprintf(iso->v1_mount, sizeof(iso->v1_mount), "/sys/fs/cgroup/cpuset");
                }
                if (join(v2, size, root, "/sys/fs/cgroup", "") == 0 && v2_has_cpuset(v2)) {
                        iso->v2_error = 0;
                        snprintf(iso->v2_mount, sizeof(iso->v2_mount), "/sys/fs/cgroup");
                }
                return;
        }
        while (fgets(line, sizeof(line), f)) {
                char *save = NULL, *dev = strtok_r(line, " \n", &save);
                char *dir = dev ? strtok_r(NULL, " \n", &save) : NULL;
                char *type = dir ? strtok_r(NULL, " \n", &save) : NULL;
                char *options = type ? strtok_r(NULL, " \n", &save) : NULL;
                char full[4096];

                if (!options) {
                        continue;
                }
                unescape(dir);
                if (join(full, sizeof(full), root, dir, "") < 0 ||
                    strlen(dir) >= sizeof(iso->v1_mount)) {
                        continue;
                }
                if (iso->v1_error < 0 && strcmp(type, "cgroup") == 0 &&
                    has_option(options, "cpuset")) {
                        iso->v1_error = 0;
                        snprintf(iso->v1_mount, sizeof(iso->v1_mount), "%s", dir);
                        snprintf(v1, size, "%s", full);
                } else if (iso->v2_error < 0 && strcmp(type, "cgroup2") == 0 &&
                           v2_has_cpuset(full)) {
                        iso->v2_error = 0;
                        snprintf(iso->v2_mount, sizeof(iso->v2_mount), "%s", dir);
                        snprintf(v2, size, "%s", full);
                }
        }
        fclose(f);
}

typedef struct Walk {
        unsigned dirs;
        const char *prefix; /* "cpuset." unless the v1 hierarchy is mounted with noprefix */
        cpu_set_t balanced; /* v1: CPUs of the load-balanced cpusets */
        cpu_set_t found;
        IsolationSet sets[ISOLATION_SETS_MAX];
        size_t n_sets;
} Walk;

static void walk_add(Walk *w, IsolationKind kind, const char *rel, const cpu_set_t *cpus)
{
        CPU_OR(&w->found, &w->found, cpus);
        if (w->n_sets < ISOLATION_SETS_MAX && CPU_COUNT(cpus) > 0) {
                IsolationSet *s = &w->sets[w->n_sets++];

                s->kind = kind;
                snprintf(s->path, sizeof(s->path), "%s", rel[0] ? rel : "/");
                s->cpus = *cpus;
        }
}

/* Visits the cpuset @full (@rel below the mount) and, depth first, its children. */
static void walk(Walk *w, IsolationKind kind, const char *full, const char *rel, int depth)
{
        char name[64];
        struct dirent *de;
        cpu_set_t cpus;
        DIR *dir;

        if (w->dirs >= ISOLATION_WALK_DIRS_MAX) {
                return;
        }
        w->dirs++;
        if (kind == ISOLATION_CPUSET_V1) {
                int lb, excl;

                snprintf(name, sizeof(name), "%scpus", w->prefix);
                if (read_cpus(full, name, &cpus) < 0) {
                        return;
                }
                snprintf(name, sizeof(name), "%ssched_load_balance", w->prefix);
                lb = read_flag(full, name);
                snprintf(name, sizeof(name), "%scpu_exclusive", w->prefix);
                excl = read_flag(full, name);
                if (lb == 1) {
                        CPU_OR(&w->balanced, &w->balanced, &cpus);
                } else if (lb == 0 && excl == 1 && depth > 0) {
                        walk_add(w, kind, rel, &cpus);
                }
        } else if (depth > 0) {
                char text[128];

                /* Only a cgroup with the cpuset controller has this file, and only its
                 * children can have it too. */
                if (read_at(full, "cpuset.cpus.partition", text, sizeof(text)) < 0) {
                        return;
                }
                /* An invalid one reads "isolated invalid (reason)" and isolates nothing. */
                if (strcmp(text, "isolated") == 0 &&
                    read_cpus(full, "cpuset.cpus.effective", &cpus) == 0) {
                        walk_add(w, kind, rel, &cpus);
                }
        }
        if (depth >= WALK_DEPTH_MAX) {
                return;
        }
        dir = opendir(full);
        if (!dir) {
                return;
        }
        while ((de = readdir(dir))) {
                char child_full[4096], child_rel[ISOLATION_PATH_MAX];
                struct stat st;

                if (de->d_name[0] == '.') {
                        continue;
                }
                if (join(child_full, sizeof(child_full), full, "/", de->d_name) < 0 ||
                    join(child_rel, sizeof(child_rel), rel, "/", de->d_name) < 0) {
                        continue;
                }
                /* lstat: a symlink (in a fixture) is not a cpuset and may loop. */
                if (de->d_type != DT_DIR && (de->d_type != DT_UNKNOWN ||
                                             lstat(child_full, &st) < 0 || !S_ISDIR(st.st_mode))) {
                        continue;
                }
                walk(w, kind, child_full, child_rel, depth + 1);
        }
        closedir(dir);
}

/* A v1 CPU is shielded when the root cpuset does not balance load, an exclusive cpuset
 * without load balancing holds it, and no load-balanced cpuset does (the kernel builds its
 * scheduling domains from those, so the CPU is in none). */
static void read_v1(Isolation *iso, const char *mount)
{
        Walk w = {.prefix = "cpuset."};
        char name[64];
        int root_lb;

        if (!exists(mount, "cpuset.cpus") && exists(mount, "cpus")) {
                w.prefix = "";
        }
        snprintf(name, sizeof(name), "%ssched_load_balance", w.prefix);
        root_lb = read_flag(mount, name);
        if (root_lb < 0) {
                iso->v1_error = root_lb;
                return;
        }
        if (root_lb == 1) {
                /* One domain over every CPU: nothing is shielded, whatever the children say. */
                return;
        }
        walk(&w, ISOLATION_CPUSET_V1, mount, "", 0);
        iso->dirs += w.dirs;
        CPU_ZERO(&iso->v1);
        for (size_t i = 0; i < w.n_sets; i++) {
                IsolationSet *s = &w.sets[i];
                cpu_set_t not_balanced;

                CPU_XOR(&not_balanced, &s->cpus, &w.balanced);
                CPU_AND(&s->cpus, &s->cpus, &not_balanced);
                if (CPU_COUNT(&s->cpus) > 0 && iso->n_sets < ISOLATION_SETS_MAX) {
                        iso->sets[iso->n_sets++] = *s;
                }
        }
        CPU_XOR(&iso->v1, &w.found, &w.balanced);
        CPU_AND(&iso->v1, &iso->v1, &w.found);
}

/* v2: the isolated partitions below the root, and whatever the root's cpuset.cpus.isolated
 * (Linux 6.7 on) lists beyond them. */
static void read_v2(Isolation *iso, const char *mount)
{
        Walk w = {.prefix = ""};
        cpu_set_t listed;

        walk(&w, ISOLATION_CPUSET_V2, mount, "", 0);
        iso->dirs += w.dirs;
        iso->v2 = w.found;
        for (size_t i = 0; i < w.n_sets && iso->n_sets < ISOLATION_SETS_MAX; i++) {
                iso->sets[iso->n_sets++] = w.sets[i];
        }
        if (read_cpus(mount, "cpuset.cpus.isolated", &listed) == 0) {
                cpu_set_t extra;

                CPU_XOR(&extra, &listed, &w.found);
                CPU_AND(&extra, &extra, &listed);
                CPU_OR(&iso->v2, &iso->v2, &listed);
                if (CPU_COUNT(&extra) > 0 && iso->n_sets < ISOLATION_SETS_MAX) {
                        IsolationSet *s = &iso->sets[iso->n_sets++];

                        s->kind = ISOLATION_CPUSET_V2;
                        s->path[0] = '\0';
                        s->cpus = extra;
                }
        }
}

int isolation_read(const char *root, Isolation *ret)
{
        char v1[4096], v2[4096];

        if (!root || strcmp(root, "/") == 0) {
                root = "";
        }
        if (strlen(root) >= 2048) {
                return -ENAMETOOLONG;
        }
        memset(ret, 0, sizeof(*ret));
        CPU_ZERO(&ret->boot);
        CPU_ZERO(&ret->v1);
        CPU_ZERO(&ret->v2);
        ret->boot_error = host_read_cpulist(root, "/sys/devices/system/cpu/isolated", &ret->boot);
        if (ret->boot_error < 0) {
                CPU_ZERO(&ret->boot);
        }
        find_mounts(root, ret, v1, v2, sizeof(v1));
        if (ret->v1_error == 0) {
                read_v1(ret, v1);
        }
        if (ret->v2_error == 0) {
                read_v2(ret, v2);
        }
        return 0;
}

const Isolation *isolation_cache_get(IsolationCache *c, const char *root, uint64_t now_ns,
                                     uint64_t max_age_ns)
{
        if (!c->valid || now_ns < c->read_ns || now_ns - c->read_ns >= max_age_ns) {
                /* An over-long root reads as nothing isolated, as isolation_read() leaves it. */
                if (isolation_read(root, &c->iso) < 0) {
                        memset(&c->iso, 0, sizeof(c->iso));
                }
                c->valid = true;
                c->read_ns = now_ns;
                c->reads++;
        }
        return &c->iso;
}

IsolationKind isolation_of(const Isolation *iso, int cpu, const IsolationSet **ret_set)
{
        IsolationKind kind = ISOLATION_NONE;

        if (ret_set) {
                *ret_set = NULL;
        }
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
                return ISOLATION_NONE;
        }
        if (CPU_ISSET(cpu, &iso->boot)) {
                return ISOLATION_BOOT;
        }
        if (CPU_ISSET(cpu, &iso->v1)) {
                kind = ISOLATION_CPUSET_V1;
        } else if (CPU_ISSET(cpu, &iso->v2)) {
                kind = ISOLATION_CPUSET_V2;
        } else {
                return ISOLATION_NONE;
        }
        for (size_t i = 0; ret_set && i < iso->n_sets; i++) {
                if (iso->sets[i].kind == kind && CPU_ISSET(cpu, &iso->sets[i].cpus)) {
                        *ret_set = &iso->sets[i];
                        break;
                }
        }
        return kind;
}

void isolation_runtime_cpus(const Isolation *iso, cpu_set_t *ret)
{
        CPU_OR(ret, &iso->v1, &iso->v2);
}

void isolation_cpus(const Isolation *iso, cpu_set_t *ret)
{
        isolation_runtime_cpus(iso, ret);
        CPU_OR(ret, ret, &iso->boot);
}

#include "host-audit.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpulist.h"
#include "host.h"
#include "isolation.h"
#include "util.h"

/* A name from /proc/interrupts. */
typedef struct IrqName {
        unsigned number;
        char name[96];
} IrqName;

__attribute__((format(printf, 4, 0))) static int vpath(const AuditFacts *facts, char *buf,
                                                       size_t size, const char *fmt, va_list ap)
{
        int n = snprintf(buf, size, "%s", facts->root);

        if (n < 0 || (size_t)n >= size) {
                return -ENAMETOOLONG;
        }
        int m = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
        if (m < 0 || (size_t)m >= size - (size_t)n) {
                return -ENAMETOOLONG;
        }
        return 0;
}

__attribute__((format(printf, 4, 5))) static int path(const AuditFacts *facts, char *buf,
                                                      size_t size, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vpath(facts, buf, size, fmt, ap);
        va_end(ap);
        return r;
}

/* Replaces bytes that are neither printable ASCII nor line structure: names from /proc and
 * /sys end up in JSON strings, which must be valid UTF-8, and in terminal output. */
static void sanitize(char *s)
{
        for (; *s; s++) {
                if (*s == '\n' || *s == '\t') {
                        continue;
                }
                if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) {
                        *s = '?';
                }
        }
}

/* host_read_text() of root + the formatted path, made printable. */
__attribute__((format(printf, 4, 5))) static int read_text(const AuditFacts *facts, char *buf,
                                                           size_t size, const char *fmt, ...)
{
        char p[PATH_MAX];
        va_list ap;
        int r;

        buf[0] = '\0';
        va_start(ap, fmt);
        r = vpath(facts, p, sizeof(p), fmt, ap);
        va_end(ap);
        if (r < 0) {
                return r;
        }
        r = host_read_text(p, buf, size);
        sanitize(buf);
        return r;
}

/* host_read_cpulist() of the formatted path below the root. */
__attribute__((format(printf, 3, 4))) static int read_cpulist(const AuditFacts *facts,
                                                              cpu_set_t *ret, const char *fmt, ...)
{
        char p[PATH_MAX];
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vsnprintf(p, sizeof(p), fmt, ap);
        va_end(ap);
        if (r < 0 || (size_t)r >= sizeof(p)) {
                return -ENAMETOOLONG;
        }
        return host_read_cpulist(facts->root, p, ret);
}

/* Parses a whole decimal number. Returns 0 or -EINVAL. */
static int parse_long(const char *text, long *ret)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0') {
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static bool isdigits(const char *s)
{
        if (!*s) {
                return false;
        }
        for (; *s; s++) {
                if (!isdigit((unsigned char)*s)) {
                        return false;
                }
        }
        return true;
}

/* Whether the directory entry @name in @dir is a directory (d_type may be DT_UNKNOWN). */
static bool entry_is_dir(DIR *dir, const struct dirent *de)
{
        struct stat st;

        if (de->d_type != DT_UNKNOWN) {
                return de->d_type == DT_DIR;
        }
        return fstatat(dirfd(dir), de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static int irq_compare(const void *x, const void *y)
{
        const AuditIrq *a = x, *b = y;

        return a->number < b->number ? -1 : a->number > b->number;
}

/* Names of the handlers from /proc/interrupts: the last column, for IRQs whose /proc/irq/N has
 * no handler subdirectory (names that are not valid file names). */
static int interrupts_names(const AuditFacts *facts, IrqName **ret, size_t *ret_n)
{
        char p[PATH_MAX], line[4096];
        IrqName *names = NULL;
        size_t n = 0;
        FILE *f;
        int fd, r;

        *ret = NULL;
        *ret_n = 0;
        r = path(facts, p, sizeof(p), "/proc/interrupts");
        if (r < 0) {
                return r;
        }
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        f = fd < 0 ? NULL : fdopen(fd, "re");
        if (!f) {
                r = -errno;
                if (fd >= 0) {
                        close(fd);
                }
                return r;
        }
        while (fgets(line, sizeof(line), f)) {
                char *s = line, *end, *last;
                unsigned long irq;

                while (isspace((unsigned char)*s)) {
                        s++;
                }
                if (!isdigit((unsigned char)*s)) {
                        continue;
                }
                irq = strtoul(s, &end, 10);
                if (*end != ':' || irq > UINT_MAX) {
                        continue;
                }
                size_t len = strlen(end);
                while (len > 0 && isspace((unsigned char)end[len - 1])) {
                        end[--len] = '\0';
                }
                last = strrchr(end, ' ');
                if (!last || !last[1] || isdigit((unsigned char)last[1])) {
                        continue;
                }
                IrqName *grown = realloc(names, (n + 1) * sizeof(*names));
                if (!grown) {
                        free(names);
                        fclose(f);
                        return -ENOMEM;
                }
                names = grown;
                names[n].number = (unsigned)irq;
                snprintf(names[n].name, sizeof(names[n].name), "%s", last + 1);
                sanitize(names[n].name);
                n++;
        }
        fclose(f);
        *ret = names;
        *ret_n = n;
        return 0;
}

/* Whether the kernel refuses to change the affinity of @irq from user space: managed and
 * per-CPU interrupts. Only the IRQ debugfs tells for sure; without it, an ARM GIC private
 * peripheral interrupt (hwirq 16-31, e.g. the arch timer) is recognised by its number. */
static bool irq_unmovable(const AuditFacts *facts, unsigned irq)
{
        char text[8192], chip[64];
        long hwirq;

        if (read_text(facts, text, sizeof(text), "/sys/kernel/debug/irq/irqs/%u", irq) == 0) {
                return strstr(text, "IRQD_AFFINITY_MANAGED") || strstr(text, "IRQD_PER_CPU") ||
                       strstr(text, "IRQD_NO_BALANCING");
        }
        if (read_text(facts, chip, sizeof(chip), "/sys/kernel/irq/%u/chip_name", irq) == 0 &&
            strncmp(chip, "GIC", 3) == 0 &&
            read_text(facts, text, sizeof(text), "/sys/kernel/irq/%u/hwirq", irq) == 0 &&
            parse_long(text, &hwirq) == 0) {
                return hwirq >= 16 && hwirq < 32;
        }
        return false;
}

/* The names of the handlers of IRQ @number, the subdirectories of /proc/irq/N, into @name
 * ("eth0-rx-0,eth0-tx-0"; cut where @size ends, enough to recognise the device). */
static void irq_handler_names(const AuditFacts *facts, unsigned number, char *name, size_t size)
{
        _cleanup_closedir_ DIR *sub = NULL;
        char p[PATH_MAX];

        name[0] = '\0';
        if (path(facts, p, sizeof(p), "/proc/irq/%u", number) == 0) {
                sub = opendir(p);
        }
        for (struct dirent *e; sub && (e = readdir(sub));) {
                if (e->d_name[0] == '.' || !entry_is_dir(sub, e)) {
                        continue;
                }
                size_t len = strlen(name);
                int n = snprintf(name + len, size - len, "%s%s", len ? "," : "", e->d_name);
                if (n < 0 || (size_t)n >= size - len) {
                        break;
                }
        }
}

/* Reads IRQ @number: its affinity, effective affinity and name (its handlers', else the
 * action of /proc/interrupts in @names). Returns 1 when filled, 0 for an IRQ without an
 * affinity file or a handler, which cannot fire. */
static int read_irq(const AuditFacts *facts, unsigned number, const IrqName *names, size_t n_names,
                    AuditIrq *ret)
{
        char name[sizeof(((AuditIrq *)0)->name)];
        AuditIrq irq = {.number = number};

        if (read_cpulist(facts, &irq.affinity, "/proc/irq/%u/smp_affinity_list", number) < 0) {
                return 0;
        }
        irq.has_effective = read_cpulist(facts, &irq.effective,
                                         "/proc/irq/%u/effective_affinity_list", number) == 0;
        irq_handler_names(facts, number, name, sizeof(name));
        for (size_t i = 0; name[0] == '\0' && i < n_names; i++) {
                if (names[i].number == number) {
                        snprintf(name, sizeof(name), "%s", names[i].name);
                }
        }
        if (name[0] == '\0') {
                return 0;
        }
        sanitize(name);
        snprintf(irq.name, sizeof(irq.name), "%s", name);
        irq.unmovable = irq_unmovable(facts, number);
        *ret = irq;
        return 1;
}

/* Reads every IRQ of /proc/irq with its affinity and name into facts->irqs, sorted by number, and
 * the default affinity. What cannot be read is recorded in the *_error fields. Returns 0 or
 * -ENOMEM. */
static int scan_irqs(AuditFacts *facts)
{
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ IrqName *names = NULL;
        size_t n_names = 0, cap = 0;
        char p[PATH_MAX];
        struct dirent *de;
        int r;

        facts->default_affinity_error =
                read_text(facts, facts->default_affinity, sizeof(facts->default_affinity),
                          "/proc/irq/default_smp_affinity");

        r = path(facts, p, sizeof(p), "/proc/irq");
        if (r < 0) {
                facts->irqs_error = r;
                return 0;
        }
        dir = opendir(p);
        if (!dir) {
                facts->irqs_error = -errno;
                return 0;
        }
        r = interrupts_names(facts, &names, &n_names);
        if (r == -ENOMEM) {
                return r;
        }
        while ((de = readdir(dir))) {
                unsigned long number;
                AuditIrq irq;

                if (!isdigits(de->d_name)) {
                        continue;
                }
                number = strtoul(de->d_name, NULL, 10);
                if (number > UINT_MAX ||
                    read_irq(facts, (unsigned)number, names, n_names, &irq) == 0) {
                        continue;
                }
                if (facts->n_irqs == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        AuditIrq *grown = realloc(facts->irqs, ncap * sizeof(*grown));

                        if (!grown) {
                                return -ENOMEM;
                        }
                        facts->irqs = grown;
                        cap = ncap;
                }
                facts->irqs[facts->n_irqs++] = irq;
        }
        if (facts->irqs) {
                qsort(facts->irqs, facts->n_irqs, sizeof(*facts->irqs), irq_compare);
        }
        return 0;
}

/* Reads one kernel thread; returns 1 if @pid is one, 0 if not (or it went away meanwhile). */
static int read_kthread(const AuditFacts *facts, int pid, AuditKthread *ret)
{
        char stat[1024], status[8192];
        const char *open_paren, *close_paren, *line;
        unsigned long flags;
        char *end;
        size_t n;

        if (read_text(facts, stat, sizeof(stat), "/proc/%d/stat", pid) < 0) {
                return 0;
        }
        /* "pid (comm) state ppid pgrp session tty_nr tpgid flags ..."; comm may hold spaces
         * and parentheses, so it ends at the last ')'. */
        open_paren = strchr(stat, '(');
        close_paren = strrchr(stat, ')');
        if (!open_paren || !close_paren || close_paren < open_paren) {
                return 0;
        }
        const char *field = close_paren + 1;
        for (int i = 3; i < 9; i++) {
                while (*field == ' ') {
                        field++;
                }
                while (*field && *field != ' ') {
                        field++;
                }
        }
        while (*field == ' ') {
                field++;
        }
        errno = 0;
        flags = strtoul(field, &end, 10);
        if (errno != 0 || end == field || !(flags & PF_KTHREAD)) {
                return 0;
        }

        if (read_text(facts, status, sizeof(status), "/proc/%d/status", pid) < 0) {
                return 0;
        }
        line = strstr(status, "Cpus_allowed_list:");
        if (!line) {
                return 0;
        }
        line += strlen("Cpus_allowed_list:");
        char list[4096];
        n = strcspn(line, "\n");
        if (n >= sizeof(list)) {
                return 0;
        }
        memcpy(list, line, n);
        list[n] = '\0';
        if (cpulist_parse(list, &ret->allowed) < 0) {
                return 0;
        }
        n = (size_t)(close_paren - open_paren - 1);
        if (n >= sizeof(ret->comm)) {
                n = sizeof(ret->comm) - 1;
        }
        memcpy(ret->comm, open_paren + 1, n);
        ret->comm[n] = '\0';
        ret->pid = pid;
        ret->flags = (unsigned)flags;
        return 1;
}

static int kthread_compare(const void *x, const void *y)
{
        const AuditKthread *a = x, *b = y;

        return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int scan_kthreads(AuditFacts *facts)
{
        _cleanup_closedir_ DIR *dir = NULL;
        char p[PATH_MAX];
        struct dirent *de;
        size_t cap = 0;
        int r;

        r = path(facts, p, sizeof(p), "/proc");
        if (r < 0) {
                facts->kthreads_error = r;
                return 0;
        }
        dir = opendir(p);
        if (!dir) {
                facts->kthreads_error = -errno;
                return 0;
        }
        while ((de = readdir(dir))) {
                AuditKthread k = {0};
                long pid;

                if (!isdigits(de->d_name) || parse_long(de->d_name, &pid) < 0 || pid <= 0 ||
                    pid > INT_MAX) {
                        continue;
                }
                if (read_kthread(facts, (int)pid, &k) <= 0) {
                        continue;
                }
                if (facts->n_kthreads == cap) {
                        size_t ncap = cap ? cap * 2 : 128;
                        AuditKthread *grown = realloc(facts->kthreads, ncap * sizeof(*grown));

                        if (!grown) {
                                return -ENOMEM;
                        }
                        facts->kthreads = grown;
                        cap = ncap;
                }
                facts->kthreads[facts->n_kthreads++] = k;
        }
        if (facts->kthreads) {
                qsort(facts->kthreads, facts->n_kthreads, sizeof(*facts->kthreads),
                      kthread_compare);
        }
        return 0;
}

static int cstate_compare(const void *x, const void *y)
{
        const AuditCState *a = x, *b = y;

        return a->index < b->index ? -1 : a->index > b->index;
}

/* Reads the C-state of directory @entry ("state3") of @cpu. Returns 1 when filled, 0 when
 * @entry is no C-state or its name or latency cannot be read. */
static int read_cstate(const AuditFacts *facts, int cpu, const char *entry, AuditCState *ret)
{
        char text[64];
        AuditCState s = {0};
        long v;

        if (strncmp(entry, "state", 5) != 0 || !isdigits(entry + 5) ||
            parse_long(entry + 5, &s.index) < 0) {
                return 0;
        }
        if (read_text(facts, s.name, sizeof(s.name),
                      "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/name", cpu, s.index) < 0 ||
            read_text(facts, text, sizeof(text),
                      "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/latency", cpu, s.index) < 0 ||
            parse_long(text, &s.latency_us) < 0) {
                return 0;
        }
        /* "disable" appeared in 3.4; without it every state is enabled. */
        if (read_text(facts, text, sizeof(text),
                      "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/disable", cpu,
                      s.index) == 0 &&
            parse_long(text, &v) == 0) {
                s.disabled = v != 0;
        }
        *ret = s;
        return 1;
}

/* Reads the C-states of @cpu into *@ret, sorted by index. Returns 0, -ENOMEM, or the error of
 * opening its cpuidle directory. */
static int read_cstates(const AuditFacts *facts, int cpu, AuditCState **ret, size_t *ret_n)
{
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ AuditCState *states = NULL;
        char p[PATH_MAX];
        struct dirent *de;
        size_t n = 0;
        int r;

        r = path(facts, p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpuidle", cpu);
        if (r < 0) {
                return r;
        }
        dir = opendir(p);
        if (!dir) {
                return -errno;
        }
        while ((de = readdir(dir))) {
                AuditCState s;

                if (read_cstate(facts, cpu, de->d_name, &s) == 0) {
                        continue;
                }
                AuditCState *grown = realloc(states, (n + 1) * sizeof(*states));
                if (!grown) {
                        return -ENOMEM;
                }
                states = grown;
                states[n++] = s;
        }
        if (n > 0) {
                qsort(states, n, sizeof(*states), cstate_compare);
        }
        *ret = states;
        states = NULL;
        *ret_n = n;
        return 0;
}

/* Whether the host is a virtual machine (the CPU's hypervisor flag, /sys/hypervisor/type). */
static bool is_virtual(const AuditFacts *facts)
{
        _cleanup_free_ char *cpuinfo = malloc(65536);
        const char *line, *flag;
        char text[64];
        size_t n;

        if (read_text(facts, text, sizeof(text), "/sys/hypervisor/type") == 0 && text[0]) {
                return true;
        }
        /* The first processor's flags are enough: every CPU of a guest has the flag. */
        if (!cpuinfo || read_text(facts, cpuinfo, 65536, "/proc/cpuinfo") < 0) {
                return false;
        }
        line = strstr(cpuinfo, "\nflags");
        if (!line) {
                return false;
        }
        n = strcspn(line + 1, "\n");
        for (flag = strstr(line, " hypervisor"); flag && flag < line + 1 + n;
             flag = strstr(flag + 1, " hypervisor")) {
                char after = flag[strlen(" hypervisor")];

                if (after == ' ' || after == '\n' || after == '\0') {
                        return true;
                }
        }
        return false;
}

/* Reads task @pid below the root; -ENOENT when it is gone. */
static int task_read(const AuditFacts *facts, int pid, AuditTask *ret)
{
        char stat[1024], status[8192], *close_paren, *open_paren, *save = NULL;
        const char *line;
        unsigned long long v;
        int field = 3, r;

        r = read_text(facts, stat, sizeof(stat), "/proc/%d/stat", pid);
        if (r < 0) {
                return r == -ENOENT || r == -ESRCH ? -ENOENT : r;
        }
        open_paren = strchr(stat, '(');
        close_paren = strrchr(stat, ')');
        if (!open_paren || !close_paren || close_paren < open_paren) {
                return -EINVAL;
        }
        *ret = (AuditTask){.tgid = pid};
        snprintf(ret->comm, sizeof(ret->comm), "%.*s", (int)(close_paren - open_paren - 1),
                 open_paren + 1);
        /* Fields from 3 (state) on, after the comm: 9 is flags, 22 the start time. */
        for (char *t = strtok_r(close_paren + 1, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                if (field == 9 || field == 22) {
                        char *end;

                        errno = 0;
                        v = strtoull(t, &end, 10);
                        if (errno || *end) {
                                return -EINVAL;
                        }
                        if (field == 9) {
                                ret->flags = (unsigned)v;
                        } else {
                                ret->start_ticks = v;
                        }
                }
                if (field++ == 22) {
                        break;
                }
        }
        if (field <= 22) {
                return -EINVAL;
        }
        if (read_text(facts, status, sizeof(status), "/proc/%d/status", pid) == 0) {
                line = strstr(status, "\nTgid:");
                if (line) {
                        ret->tgid = atoi(line + strlen("\nTgid:"));
                }
                line = strstr(status, "\nCpus_allowed_list:");
                if (line) {
                        char list[4096];

                        line += strlen("\nCpus_allowed_list:");
                        snprintf(list, sizeof(list), "%.*s", (int)strcspn(line, "\n"), line);
                        ret->have_allowed = cpulist_parse(list, &ret->allowed) == 0;
                }
        }
        return 0;
}

/* The systemd service of task @pid ("foo.service"), from /proc/PID/cgroup, into @buf; false
 * when it is in none. */
static bool task_unit(const AuditFacts *facts, int pid, char *buf, size_t size)
{
        char text[4096];
        bool found = false;

        if (read_text(facts, text, sizeof(text), "/proc/%d/cgroup", pid) < 0) {
                return false;
        }
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !found;
             l = strtok_r(NULL, "\n", &save)) {
                /* the unified line "0::/path", or the v1 systemd one */
                if (strncmp(l, "0::", 3) != 0 && !strstr(l, ":name=systemd:")) {
                        continue;
                }
                char *unit = strrchr(l, '/');
                size_t n = unit ? strlen(unit + 1) : 0;

                if (n > 8 && n < size && strcmp(unit + 1 + n - 8, ".service") == 0) {
                        snprintf(buf, size, "%s", unit + 1);
                        found = true;
                }
        }
        for (const char *p = buf; found && *p; p++) {
                if (!isalnum((unsigned char)*p) && !strchr("-_.@:\\", *p)) {
                        found = false; /* not a name to put in a command */
                }
        }
        return found;
}

/* The CPUs of the cpuset of task @pid (its path, from /proc/PID/cpuset, into @path); false
 * when they cannot be read. */
static bool task_cpuset(const AuditFacts *facts, int pid, char *path, size_t size, cpu_set_t *ret)
{
        static const char *const v1_files[] = {"cpuset.effective_cpus", "cpuset.cpus",
                                               "effective_cpus", "cpus"};
        const char *rel;

        if (read_text(facts, path, size, "/proc/%d/cpuset", pid) < 0 || path[0] != '/') {
                return false;
        }
        rel = strcmp(path, "/") == 0 ? "" : path;
        for (size_t i = 0; facts->cpuset_v1_error == 0 && i < ELEMENTSOF(v1_files); i++) {
                if (read_cpulist(facts, ret, "%s%s/%s", facts->cpuset_v1_mount, rel, v1_files[i]) ==
                            0 &&
                    CPU_COUNT(ret) > 0) {
                        return true;
                }
        }
        return facts->cpuset_v2_error == 0 &&
               read_cpulist(facts, ret, "%s%s/cpuset.cpus.effective", facts->cpuset_v2_mount,
                            rel) == 0 &&
               CPU_COUNT(ret) > 0;
}

/* The run-time isolation, as isolation_read() finds it. */
static void read_isolation(AuditFacts *facts)
{
        Isolation iso;

        (void)isolation_read(facts->root, &iso);
        facts->cpuset_v1_error = iso.v1_error;
        facts->cpuset_v2_error = iso.v2_error;
        snprintf(facts->cpuset_v1_mount, sizeof(facts->cpuset_v1_mount), "%s", iso.v1_mount);
        snprintf(facts->cpuset_v2_mount, sizeof(facts->cpuset_v2_mount), "%s", iso.v2_mount);
        for (size_t i = 0; i < iso.n_sets && i < ELEMENTSOF(facts->cpusets); i++) {
                AuditCpuset *s = &facts->cpusets[facts->n_cpusets++];

                s->v2 = iso.sets[i].kind == ISOLATION_CPUSET_V2;
                snprintf(s->path, sizeof(s->path), "%s", iso.sets[i].path);
                s->cpus = iso.sets[i].cpus;
        }
        CPU_ZERO(&facts->cpuset_isolated);
        isolation_runtime_cpus(&iso, &facts->cpuset_isolated);
        CPU_ZERO(&facts->shielded_v1);
        CPU_ZERO(&facts->partitioned_v2);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                IsolationKind kind = isolation_of(&iso, cpu, NULL);

                if (kind == ISOLATION_CPUSET_V1) {
                        CPU_SET(cpu, &facts->shielded_v1);
                } else if (kind == ISOLATION_CPUSET_V2) {
                        CPU_SET(cpu, &facts->partitioned_v2);
                }
        }
}

/* The CPU lists, the command line and the workqueue mask. Returns 0 or -ENOMEM. */
static int read_cpus(AuditFacts *facts)
{
        facts->possible_error =
                read_cpulist(facts, &facts->possible, "/sys/devices/system/cpu/possible");
        facts->online_error = read_cpulist(facts, &facts->online, "/sys/devices/system/cpu/online");
        facts->isolated_error =
                read_cpulist(facts, &facts->isolated, "/sys/devices/system/cpu/isolated");
        read_isolation(facts);
        facts->nohz_full_error =
                read_cpulist(facts, &facts->nohz_full, "/sys/devices/system/cpu/nohz_full");
        facts->workqueue_error = read_text(facts, facts->workqueue, sizeof(facts->workqueue),
                                           "/sys/devices/virtual/workqueue/cpumask");
        /* The command line is at most a few KiB (COMMAND_LINE_SIZE). */
        facts->cmdline = malloc(65536);
        if (!facts->cmdline) {
                return -ENOMEM;
        }
        facts->cmdline_error = read_text(facts, facts->cmdline, 65536, "/proc/cmdline");
        return 0;
}

/* What is read of each probed CPU. Returns 0 or -ENOMEM. */
static int read_probed_cpus(AuditFacts *facts)
{
        facts->cpu = calloc((size_t)CPU_COUNT(&facts->cpus), sizeof(*facts->cpu));
        if (!facts->cpu) {
                return -ENOMEM;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                AuditCpu *c = &facts->cpu[facts->n_cpu];
                int r;

                if (!CPU_ISSET(cpu, &facts->cpus)) {
                        continue;
                }
                facts->n_cpu++;
                c->cpu = cpu;
                c->driver_error = -ENODATA;
                c->siblings_error = read_cpulist(
                        facts, &c->siblings,
                        "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
                c->governor_error =
                        read_text(facts, c->governor, sizeof(c->governor),
                                  "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
                if (c->governor_error == 0) {
                        c->driver_error = read_text(
                                facts, c->driver, sizeof(c->driver),
                                "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_driver", cpu);
                }
                r = read_cstates(facts, cpu, &c->cstates, &c->n_cstates);
                if (r == -ENOMEM) {
                        return r;
                }
                c->cstates_error = r;
        }
        return 0;
}

/* Reads sysctl @name ("kernel/timer_migration") into @ret. */
static void read_sysctl(const AuditFacts *facts, const char *name, AuditSysctl *ret)
{
        ret->error = read_text(facts, ret->text, sizeof(ret->text), "/proc/sys/%s", name);
        ret->value_error = ret->error < 0 ? ret->error : parse_long(ret->text, &ret->value);
}

/* The files of the machine-wide checks. */
static void read_globals(AuditFacts *facts)
{
        facts->smt_control_error = read_text(facts, facts->smt_control, sizeof(facts->smt_control),
                                             "/sys/devices/system/cpu/smt/control");
        facts->idle_driver_error = read_text(facts, facts->idle_driver, sizeof(facts->idle_driver),
                                             "/sys/devices/system/cpu/cpuidle/current_driver");
        read_sysctl(facts, "kernel/sched_rt_runtime_us", &facts->rt_runtime);
        facts->rt_period.error = facts->rt_period.value_error = -ENODATA;
        if (facts->rt_runtime.value_error == 0) {
                read_sysctl(facts, "kernel/sched_rt_period_us", &facts->rt_period);
        }
        facts->clocksource_error =
                read_text(facts, facts->clocksource, sizeof(facts->clocksource),
                          "/sys/devices/system/clocksource/clocksource0/current_clocksource");
        facts->clocksources_error = -ENODATA;
        if (facts->clocksource_error == 0) {
                facts->clocksources_error = read_text(
                        facts, facts->clocksources, sizeof(facts->clocksources),
                        "/sys/devices/system/clocksource/clocksource0/available_clocksource");
        }
        read_sysctl(facts, "kernel/timer_migration", &facts->timer_migration);
        read_sysctl(facts, "vm/stat_interval", &facts->stat_interval);
}

static void read_remedies(AuditFacts *facts)
{
        read_sysctl(facts, "kernel/watchdog_cpumask", &facts->watchdog_cpumask);
        facts->is_virtual = is_virtual(facts);
        facts->task_read = task_read;
        facts->task_unit = task_unit;
        facts->task_cpuset = task_cpuset;
}

static AuditFacts *facts_free(AuditFacts *facts)
{
        if (facts) {
                for (size_t i = 0; i < facts->n_cpu; i++) {
                        free(facts->cpu[i].cstates);
                }
                free(facts->cpu);
                free(facts->irqs);
                free(facts->kthreads);
                free(facts->cmdline);
                free(facts);
        }
        return NULL;
}

void host_audit_freep(AuditFacts **f)
{
        *f = facts_free(*f);
}

int host_audit_gather(const char *root, const cpu_set_t *cpus, unsigned flags, AuditFacts **ret)
{
        __attribute__((cleanup(host_audit_freep))) AuditFacts *facts = NULL;
        size_t len;
        int r;

        if (!cpus || CPU_COUNT(cpus) == 0 || !ret) {
                return -EINVAL;
        }
        facts = calloc(1, sizeof(*facts));
        if (!facts) {
                return -ENOMEM;
        }
        len = root ? strlen(root) : 0;
        while (len > 0 && root[len - 1] == '/') {
                len--; /* "/" and "" both mean the real system */
        }
        if (len >= sizeof(facts->root) - 256) {
                return -ENAMETOOLONG;
        }
        memcpy(facts->root, root ? root : "", len);
        facts->root[len] = '\0';
        facts->cpus = *cpus;
        r = read_cpus(facts);
        if (r < 0) {
                return r;
        }
        r = scan_irqs(facts);
        if (r < 0) {
                return r;
        }
        r = scan_kthreads(facts);
        if (r < 0) {
                return r;
        }
        r = read_probed_cpus(facts);
        if (r < 0) {
                return r;
        }
        read_globals(facts);
        facts->watchdog_cpumask.error = facts->watchdog_cpumask.value_error = -ENODATA;
        if (flags & HOST_AUDIT_REMEDIES) {
                read_remedies(facts);
        }
        *ret = facts;
        facts = NULL;
        return 0;
}

#include "audit.h"
#include "audit-internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpulist.h"
#include "host.h"
#include "isolation.h"
#include "util.h"
#include "audit-private.h"

/* Parses a kernel hex cpumask ("ff", "ffffffff,ffffffff"). */
static int cpumask_parse(const char *text, cpu_set_t *ret)
{
        const char *p = text;
        size_t groups = 1, len;
        cpu_set_t set;

        CPU_ZERO(&set);
        while (isspace((unsigned char)*p)) {
                p++;
        }
        len = strlen(p);
        while (len > 0 && isspace((unsigned char)p[len - 1])) {
                len--;
        }
        if (len == 0) {
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++) {
                if (p[i] == ',') {
                        groups++;
                }
        }
        for (size_t g = 0; g < groups; g++) {
                size_t base = (groups - 1 - g) * 32, digits = 0;
                uint32_t word = 0;

                while (len > 0 && *p != ',') {
                        int v;

                        if (!isxdigit((unsigned char)*p) || ++digits > 8) {
                                return -EINVAL;
                        }
                        v = isdigit((unsigned char)*p) ? *p - '0'
                                                       : tolower((unsigned char)*p) - 'a' + 10;
                        word = (word << 4) | (uint32_t)v;
                        p++;
                        len--;
                }
                if (digits == 0) {
                        return -EINVAL;
                }
                if (len > 0) {
                        p++; /* the comma */
                        len--;
                }
                for (size_t bit = 0; bit < 32; bit++) {
                        if (!(word & (UINT32_C(1) << bit))) {
                                continue;
                        }
                        if (base + bit >= CPU_SETSIZE) {
                                return -ERANGE;
                        }
                        CPU_SET(base + bit, &set);
                }
        }
        *ret = set;
        return 0;
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

static const char *const severity_names[_AUDIT_SEVERITY_MAX] = {
        [AUDIT_OK] = "ok",
        [AUDIT_INFO] = "info",
        [AUDIT_WARNING] = "warning",
        [AUDIT_ERROR] = "error",
};

const char *audit_severity_to_string(AuditSeverity severity)
{
        if ((unsigned)severity >= _AUDIT_SEVERITY_MAX) {
                return NULL;
        }
        return severity_names[severity];
}

int audit_severity_from_string(const char *name)
{
        if (!name) {
                return -EINVAL;
        }
        for (int i = 0; i < _AUDIT_SEVERITY_MAX; i++) {
                if (strcmp(name, severity_names[i]) == 0) {
                        return i;
                }
        }
        return -EINVAL;
}

void audit_options_init(AuditOptions *opt)
{
        *opt = (AuditOptions){
                .probe_priority = 0,
                .cstate_latency_max_us = AUDIT_CSTATE_LATENCY_MAX_US_DEFAULT,
                .expected_clocksource = NULL,
        };
}

static const char *arch_clocksource(void)
{
#if defined(__x86_64__) || defined(__i386__)
        return "tsc";
#elif defined(__aarch64__)
        return "arch_sys_counter";
#else
        return NULL;
#endif
}

__attribute__((format(printf, 4, 0))) static int vpath(const Audit *a, char *buf, size_t size,
                                                       const char *fmt, va_list ap)
{
        int n = snprintf(buf, size, "%s", a->root);

        if (n < 0 || (size_t)n >= size) {
                return -ENAMETOOLONG;
        }
        int m = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
        if (m < 0 || (size_t)m >= size - (size_t)n) {
                return -ENAMETOOLONG;
        }
        return 0;
}

__attribute__((format(printf, 4, 5))) static int path(const Audit *a, char *buf, size_t size,
                                                      const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vpath(a, buf, size, fmt, ap);
        va_end(ap);
        return r;
}

/* host_read_text() of root + the formatted path, made printable. */
__attribute__((format(printf, 4, 5))) int audit_read_text(const Audit *a, char *buf, size_t size,
                                                          const char *fmt, ...)
{
        char p[PATH_MAX];
        va_list ap;
        int r;

        buf[0] = '\0';
        va_start(ap, fmt);
        r = vpath(a, p, sizeof(p), fmt, ap);
        va_end(ap);
        if (r < 0) {
                return r;
        }
        r = host_read_text(p, buf, size);
        sanitize(buf);
        return r;
}

/* host_read_cpulist() of the formatted path below the root. */
__attribute__((format(printf, 3, 4))) int audit_read_cpulist(const Audit *a, cpu_set_t *ret,
                                                             const char *fmt, ...)
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
        return host_read_cpulist(a->root, p, ret);
}

int audit_parse_long(const char *text, long *ret)
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

/* Parses a CPU list from the kernel command line, which also accepts "all" and "N" (the last
 * possible CPU), e.g. "1-N". */
static int kernel_cpulist_parse(const Audit *a, const char *text, cpu_set_t *ret)
{
        char buf[512];
        size_t len = 0;

        if (strcmp(text, "all") == 0) {
                if (a->nr_cpu_ids <= 0) {
                        return -EINVAL;
                }
                CPU_ZERO(ret);
                for (int cpu = 0; cpu < a->nr_cpu_ids && cpu < CPU_SETSIZE; cpu++) {
                        CPU_SET(cpu, ret);
                }
                return 0;
        }
        for (const char *p = text; *p; p++) {
                bool alone = *p == 'N' && (p == text || strchr(",-", p[-1])) &&
                             (p[1] == '\0' || strchr(",-:", p[1]));
                int n;

                if (alone) {
                        if (a->nr_cpu_ids <= 0) {
                                return -EINVAL;
                        }
                        n = snprintf(buf + len, sizeof(buf) - len, "%d", a->nr_cpu_ids - 1);
                } else {
                        n = snprintf(buf + len, sizeof(buf) - len, "%c", *p);
                }
                if (n < 0 || (size_t)n >= sizeof(buf) - len) {
                        return -EINVAL;
                }
                len += (size_t)n;
        }
        buf[len] = '\0';
        return cpulist_parse(buf, ret);
}

static void cmdline_list(const Audit *a, CmdlineList *l, const char *value)
{
        l->present = true;
        snprintf(l->value, sizeof(l->value), "%s", value ? value : "");
        if (!value || value[0] == '\0') {
                /* e.g. a bare "rcu_nocbs": accepted, but names no CPU */
                CPU_ZERO(&l->cpus);
                l->valid = true;
                return;
        }
        l->valid = kernel_cpulist_parse(a, value, &l->cpus) == 0;
}

/* isolcpus=[flag,...,]cpu-list, as housekeeping_isolcpus_setup() reads it: leading words are
 * flags; unknown ones are skipped; no flag at all means "domain". */
static void cmdline_isolcpus(const Audit *a, Cmdline *c, const char *value)
{
        const char *p = value ? value : "";
        unsigned flags = 0;

        c->isolcpus.present = true;
        c->isolcpus.valid = false;
        snprintf(c->isolcpus.value, sizeof(c->isolcpus.value), "%s", p);
        while (isalpha((unsigned char)*p)) {
                const char *comma = strchr(p, ',');
                size_t n;

                if (!comma) {
                        return; /* a flag without a CPU list: the kernel rejects it */
                }
                n = (size_t)(comma - p);
                if (n == 4 && strncmp(p, "nohz", n) == 0) {
                        flags |= ISOL_NOHZ;
                } else if (n == 6 && strncmp(p, "domain", n) == 0) {
                        flags |= ISOL_DOMAIN;
                } else if (n == 11 && strncmp(p, "managed_irq", n) == 0) {
                        flags |= ISOL_MANAGED_IRQ;
                }
                p = comma + 1;
        }
        c->isolcpus_flags = flags ? flags : ISOL_DOMAIN;
        c->isolcpus.valid = kernel_cpulist_parse(a, p, &c->isolcpus.cpus) == 0;
}

/* Splits the command line as the kernel's next_arg() does (white space outside double quotes),
 * up to "--", after which arguments belong to init. The last occurrence of a parameter wins. */
static void cmdline_parse(const Audit *a, Cmdline *c, char *text)
{
        char *p = text;

        for (;;) {
                char *param, *value = NULL, *eq;
                bool quoted = false;

                while (isspace((unsigned char)*p)) {
                        p++;
                }
                if (*p == '\0') {
                        break;
                }
                param = p;
                for (; *p; p++) {
                        if (*p == '"') {
                                quoted = !quoted;
                        } else if (!quoted && isspace((unsigned char)*p)) {
                                break;
                        }
                }
                if (*p) {
                        *p++ = '\0';
                }
                if (strcmp(param, "--") == 0) {
                        break;
                }
                eq = strchr(param, '=');
                if (eq) {
                        *eq = '\0';
                        value = eq + 1;
                        size_t n = strlen(value);
                        if (n >= 2 && value[0] == '"' && value[n - 1] == '"') {
                                value[n - 1] = '\0';
                                value++;
                        }
                }
                if (strcmp(param, "isolcpus") == 0) {
                        cmdline_isolcpus(a, c, value);
                } else if (strcmp(param, "nohz_full") == 0) {
                        cmdline_list(a, &c->nohz_full, value);
                } else if (strcmp(param, "rcu_nocbs") == 0) {
                        cmdline_list(a, &c->rcu_nocbs, value);
                } else if (strcmp(param, "irqaffinity") == 0) {
                        cmdline_list(a, &c->irqaffinity, value);
                } else if (strcmp(param, "rcu_nocb_poll") == 0) {
                        c->rcu_nocb_poll = true;
                }
        }
}

static bool list_has(const CmdlineList *l, int cpu)
{
        return l->present && l->valid && CPU_ISSET(cpu, &l->cpus);
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
        const Irq *a = x, *b = y;

        return a->number < b->number ? -1 : a->number > b->number;
}

/* Names of the handlers from /proc/interrupts: the last column, for IRQs whose /proc/irq/N has
 * no handler subdirectory (names that are not valid file names). */
static int interrupts_names(const Audit *a, IrqName **ret, size_t *ret_n)
{
        char p[PATH_MAX], line[4096];
        IrqName *names = NULL;
        size_t n = 0;
        FILE *f;
        int fd, r;

        *ret = NULL;
        *ret_n = 0;
        r = path(a, p, sizeof(p), "/proc/interrupts");
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
static bool irq_unmovable(const Audit *a, unsigned irq)
{
        char text[8192], chip[64];
        long hwirq;

        if (audit_read_text(a, text, sizeof(text), "/sys/kernel/debug/irq/irqs/%u", irq) == 0) {
                return strstr(text, "IRQD_AFFINITY_MANAGED") || strstr(text, "IRQD_PER_CPU") ||
                       strstr(text, "IRQD_NO_BALANCING");
        }
        if (audit_read_text(a, chip, sizeof(chip), "/sys/kernel/irq/%u/chip_name", irq) == 0 &&
            strncmp(chip, "GIC", 3) == 0 &&
            audit_read_text(a, text, sizeof(text), "/sys/kernel/irq/%u/hwirq", irq) == 0 &&
            audit_parse_long(text, &hwirq) == 0) {
                return hwirq >= 16 && hwirq < 32;
        }
        return false;
}

/* The names of the handlers of IRQ @number, the subdirectories of /proc/irq/N, into @name
 * ("eth0-rx-0,eth0-tx-0"; cut where @size ends, enough to recognise the device). */
static void irq_handler_names(const Audit *a, unsigned number, char *name, size_t size)
{
        _cleanup_closedir_ DIR *sub = NULL;
        char p[PATH_MAX];

        name[0] = '\0';
        if (path(a, p, sizeof(p), "/proc/irq/%u", number) == 0) {
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
static int read_irq(const Audit *a, unsigned number, const IrqName *names, size_t n_names, Irq *ret)
{
        char name[sizeof(((Irq *)0)->name)];
        Irq irq = {.number = number};

        if (audit_read_cpulist(a, &irq.affinity, "/proc/irq/%u/smp_affinity_list", number) < 0) {
                return 0;
        }
        irq.has_effective = audit_read_cpulist(a, &irq.effective,
                                               "/proc/irq/%u/effective_affinity_list", number) == 0;
        irq_handler_names(a, number, name, sizeof(name));
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
        irq.unmovable = irq_unmovable(a, number);
        *ret = irq;
        return 1;
}

/* Reads every IRQ of /proc/irq with its affinity and name into a->irqs, sorted by number, and
 * the default affinity. What cannot be read is recorded in the *_error fields. Returns 0 or
 * -ENOMEM. */
static int scan_irqs(Audit *a)
{
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ IrqName *names = NULL;
        size_t n_names = 0, cap = 0;
        char p[PATH_MAX], text[256];
        struct dirent *de;
        int r;

        r = audit_read_text(a, text, sizeof(text), "/proc/irq/default_smp_affinity");
        a->default_affinity_error = r < 0 ? r : cpumask_parse(text, &a->default_affinity);

        r = path(a, p, sizeof(p), "/proc/irq");
        if (r < 0) {
                a->irqs_error = r;
                return 0;
        }
        dir = opendir(p);
        if (!dir) {
                a->irqs_error = -errno;
                return 0;
        }
        r = interrupts_names(a, &names, &n_names);
        if (r == -ENOMEM) {
                return r;
        }
        while ((de = readdir(dir))) {
                unsigned long number;
                Irq irq;

                if (!isdigits(de->d_name)) {
                        continue;
                }
                number = strtoul(de->d_name, NULL, 10);
                if (number > UINT_MAX || read_irq(a, (unsigned)number, names, n_names, &irq) == 0) {
                        continue;
                }
                if (a->n_irqs == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        Irq *grown = realloc(a->irqs, ncap * sizeof(*grown));

                        if (!grown) {
                                return -ENOMEM;
                        }
                        a->irqs = grown;
                        cap = ncap;
                }
                a->irqs[a->n_irqs++] = irq;
        }
        if (a->irqs) {
                qsort(a->irqs, a->n_irqs, sizeof(*a->irqs), irq_compare);
        }
        return 0;
}

/* Reads one kernel thread; returns 1 if @pid is one, 0 if not (or it went away meanwhile). */
static int read_kthread(const Audit *a, int pid, Kthread *ret)
{
        char stat[1024], status[8192];
        const char *open_paren, *close_paren, *line;
        unsigned long flags;
        char *end;
        size_t n;

        if (audit_read_text(a, stat, sizeof(stat), "/proc/%d/stat", pid) < 0) {
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

        if (audit_read_text(a, status, sizeof(status), "/proc/%d/status", pid) < 0) {
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
        const Kthread *a = x, *b = y;

        return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int scan_kthreads(Audit *a)
{
        _cleanup_closedir_ DIR *dir = NULL;
        char p[PATH_MAX];
        struct dirent *de;
        size_t cap = 0;
        int r;

        r = path(a, p, sizeof(p), "/proc");
        if (r < 0) {
                a->kthreads_error = r;
                return 0;
        }
        dir = opendir(p);
        if (!dir) {
                a->kthreads_error = -errno;
                return 0;
        }
        while ((de = readdir(dir))) {
                Kthread k = {0};
                long pid;

                if (!isdigits(de->d_name) || audit_parse_long(de->d_name, &pid) < 0 || pid <= 0 ||
                    pid > INT_MAX) {
                        continue;
                }
                if (read_kthread(a, (int)pid, &k) <= 0) {
                        continue;
                }
                if (a->n_kthreads == cap) {
                        size_t ncap = cap ? cap * 2 : 128;
                        Kthread *grown = realloc(a->kthreads, ncap * sizeof(*grown));

                        if (!grown) {
                                return -ENOMEM;
                        }
                        a->kthreads = grown;
                        cap = ncap;
                }
                a->kthreads[a->n_kthreads++] = k;
        }
        if (a->kthreads) {
                qsort(a->kthreads, a->n_kthreads, sizeof(*a->kthreads), kthread_compare);
        }
        return 0;
}

/* Reads everything the per-CPU checks share. Only allocation failures are errors. */
static int audit_load(Audit *a)
{
        _cleanup_free_ char *cmdline = NULL;
        cpu_set_t possible, taken;
        int r;

        if (audit_read_cpulist(a, &possible, "/sys/devices/system/cpu/possible") == 0) {
                a->nr_cpu_ids = cpulist_last(&possible) + 1;
        } else {
                a->nr_cpu_ids = -1;
        }
        a->online_error = audit_read_cpulist(a, &a->online, "/sys/devices/system/cpu/online");
        if (a->online_error < 0 && a->nr_cpu_ids > 0) {
                a->online = possible;
                a->online_error = 0;
        } else if (a->online_error == 0 && a->nr_cpu_ids < 0) {
                a->nr_cpu_ids = cpulist_last(&a->online) + 1;
        }
        a->isolated_error = audit_read_cpulist(a, &a->isolated, "/sys/devices/system/cpu/isolated");
        (void)isolation_read(a->root, &a->iso);
        CPU_ZERO(&a->cpuset_isolated);
        isolation_runtime_cpus(&a->iso, &a->cpuset_isolated);
        a->nohz_full_error =
                audit_read_cpulist(a, &a->nohz_full, "/sys/devices/system/cpu/nohz_full");

        r = audit_read_text(a, a->workqueue_text, sizeof(a->workqueue_text),
                            "/sys/devices/virtual/workqueue/cpumask");
        a->workqueue_error = r < 0 ? r : cpumask_parse(a->workqueue_text, &a->workqueue);

        /* The command line is at most a few KiB (COMMAND_LINE_SIZE). */
        cmdline = malloc(65536);
        if (!cmdline) {
                return -ENOMEM;
        }
        a->cmdline.error = audit_read_text(a, cmdline, 65536, "/proc/cmdline");
        if (a->cmdline.error == 0) {
                cmdline_parse(a, &a->cmdline, cmdline);
        }

        /* Housekeeping CPUs: online, neither probed nor isolated in any way. If that leaves
         * none, at least not probed. */
        if (a->online_error == 0) {
                taken = a->cpus;
                if (a->isolated_error == 0) {
                        CPU_OR(&taken, &taken, &a->isolated);
                }
                CPU_OR(&taken, &taken, &a->cpuset_isolated);
                if (a->nohz_full_error == 0) {
                        CPU_OR(&taken, &taken, &a->nohz_full);
                }
                if (a->cmdline.isolcpus.valid) {
                        CPU_OR(&taken, &taken, &a->cmdline.isolcpus.cpus);
                }
                if (a->cmdline.nohz_full.valid) {
                        CPU_OR(&taken, &taken, &a->cmdline.nohz_full.cpus);
                }
                CPU_XOR(&a->housekeeping, &a->online, &taken);
                CPU_AND(&a->housekeeping, &a->housekeeping, &a->online);
                if (CPU_COUNT(&a->housekeeping) == 0) {
                        CPU_XOR(&a->housekeeping, &a->online, &a->cpus);
                        CPU_AND(&a->housekeeping, &a->housekeeping, &a->online);
                }
                a->housekeeping_known = CPU_COUNT(&a->housekeeping) > 0;
        }

        r = scan_irqs(a);
        if (r < 0) {
                return r;
        }
        return scan_kthreads(a);
}

/* Appends the housekeeping CPU list, or a placeholder when it is not known. */
static void sb_housekeeping(StrBuf *sb, const Audit *a)
{
        if (a->housekeeping_known) {
                sb_cpulist(sb, &a->housekeeping, "");
        } else {
                sb_printf(sb, "<housekeeping CPUs>");
        }
}

static void sb_housekeeping_mask(StrBuf *sb, const Audit *a)
{
        if (a->housekeeping_known) {
                sb_cpumask(sb, &a->housekeeping);
        } else {
                sb_printf(sb, "<housekeeping CPU mask>");
        }
}

/* The CPU list to put in a kernel argument: what it already names plus the probed CPUs. */
static void sb_union(StrBuf *sb, const Audit *a, const CmdlineList *l)
{
        cpu_set_t set = a->cpus;

        if (l && l->present && l->valid) {
                CPU_OR(&set, &set, &l->cpus);
        }
        sb_cpulist(sb, &set, "");
}

static int finding_add(Audit *a, const char *check, int cpu, AuditSeverity severity,
                       const StrBuf *seen, const char *why, const StrBuf *fix)
{
        json_t *f;

        if (seen->oom || (fix && fix->oom)) {
                return -ENOMEM;
        }
        f = json_pack("{s:s, s:o, s:s, s:s, s:s, s:s}", "check", check, "cpu",
                      cpu >= 0 ? json_integer(cpu) : json_null(), "severity",
                      severity_names[severity], "seen", sb_str(seen), "why", why, "fix",
                      fix ? sb_str(fix) : "");
        if (!f || json_array_append_new(a->findings, f) < 0) {
                return -ENOMEM;
        }
        return 0;
}

static void sb_error(StrBuf *sb, const char *what, int error)
{
        sb_printf(sb, "%s not readable (%s)", what, strerror(-error));
}

bool audit_domain_isolated(const Audit *a, int cpu)
{
        return (a->isolated_error == 0 && CPU_ISSET(cpu, &a->isolated)) ||
               CPU_ISSET(cpu, &a->cpuset_isolated) ||
               (list_has(&a->cmdline.isolcpus, cpu) && (a->cmdline.isolcpus_flags & ISOL_DOMAIN));
}

/* ---- Fix texts ----
 * Each fix is worded once, here, and used both by the checks' findings and by audit_remedy():
 * a command (or the kernel arguments) exactly as it is to be run, how to make it last across
 * reboots and how to undo it. */

const char *audit_fix_when_name(FixWhen when)
{
        static const char *const names[_FIX_WHEN_MAX] = {
                [FIX_NONE] = "none",
                [FIX_NOW] = "now",
                [FIX_REBOOT] = "reboot",
                [FIX_HOST] = "host",
        };

        return (unsigned)when < _FIX_WHEN_MAX ? names[when] : NULL;
}

void audit_fix_done(Fix *f)
{
        StrBuf *parts[] = {&f->setting, &f->command, &f->persist,
                           &f->revert,  &f->note,    &f->ask_host};

        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                strbuf_done(parts[i]);
                *parts[i] = (StrBuf){0};
        }
}

bool audit_fix_oom(const Fix *f)
{
        return f->setting.oom || f->command.oom || f->persist.oom || f->revert.oom || f->note.oom ||
               f->ask_host.oom;
}

/* The finding's "fix" text of @f: the command with how to keep it, kernel arguments as "Boot
 * with ...", or the note alone when there is no command. */
static void audit_fix_text(const Fix *f, StrBuf *out)
{
        const char *note = sb_str(&f->note);

        switch (f->when) {
        case FIX_NOW:
                sb_printf(out, "%s.", sb_str(&f->command));
                if (f->persist.len > 0) {
                        sb_printf(out, " %s", sb_str(&f->persist));
                }
                break;
        case FIX_REBOOT:
                sb_printf(out, "Boot with %s.", sb_str(&f->command));
                break;
        case FIX_HOST:
                sb_printf(out, "%s", sb_str(&f->ask_host));
                break;
        case FIX_NONE:
        default:
                break;
        }
        if (note[0]) {
                sb_printf(out, "%s%s", out->len > 0 ? " " : "", note);
        }
}

/* Kernel arguments @f->command at the next boot: how to put them in the boot loader's
 * configuration and how to take them out again. @names are the parameters they set (one or
 * two, space-separated); @old is what the command line has for the first one now, which
 * reverting restores. */
static void fix_kernel_args(Fix *f, const char *names, const CmdlineList *old)
{
        f->when = FIX_REBOOT;
        sb_printf(&f->persist,
                  "grubby --update-kernel=ALL --args=\"%s\" (Debian: add them to "
                  "GRUB_CMDLINE_LINUX in /etc/default/grub and run update-grub), then reboot.",
                  sb_str(&f->command));
        if (old && old->present) {
                char first[64];

                snprintf(first, sizeof(first), "%.*s", (int)strcspn(names, " "), names);
                sb_printf(&f->revert, "grubby --update-kernel=ALL --args=\"%s=%s\"", first,
                          old->value);
                if (strchr(names, ' ')) {
                        sb_printf(&f->revert, " --remove-args=\"%s\"", strchr(names, ' ') + 1);
                }
        } else {
                sb_printf(&f->revert, "grubby --update-kernel=ALL --remove-args=\"%s\"", names);
        }
        sb_printf(&f->revert, ", then reboot");
}

void audit_fix_isolcpus(const Audit *a, Fix *f)
{
        f->check = "isolcpus";
        sb_printf(&f->command, "isolcpus=managed_irq,domain,");
        sb_union(&f->command, a, &a->cmdline.isolcpus);
        fix_kernel_args(f, "isolcpus", &a->cmdline.isolcpus);
        sb_sentence(&f->note, "It replaces any isolcpus= there; the tuned profile "
                              "cpu-partitioning with isolated_cores=");
        sb_union(&f->note, a, &a->cmdline.isolcpus);
        sb_printf(&f->note, " sets it too.");
}

NohzState audit_nohz_state(const Audit *a, int cpu)
{
        const Cmdline *c = &a->cmdline;
        bool requested = list_has(&c->nohz_full, cpu) ||
                         (list_has(&c->isolcpus, cpu) && (c->isolcpus_flags & ISOL_NOHZ));

        if (a->nohz_full_error == 0 && CPU_ISSET(cpu, &a->nohz_full)) {
                return NOHZ_ACTIVE;
        }
        if (a->nohz_full_error == 0 && requested) {
                return NOHZ_NOT_STARTED;
        }
        if (a->nohz_full_error == -ENOENT && c->error == 0) {
                return NOHZ_UNSUPPORTED;
        }
        if (c->error == 0 && !requested) {
                return NOHZ_OFF;
        }
        return NOHZ_UNKNOWN;
}

void audit_fix_nohz_full(const Audit *a, int cpu, Fix *f)
{
        f->check = "nohz_full";
        switch (audit_nohz_state(a, cpu)) {
        case NOHZ_ACTIVE:
                sb_sentence(&f->note,
                            "The tick already stops on CPU %d while one task runs; the "
                            "1 Hz residual tick that remains has no setting.",
                            cpu);
                break;
        case NOHZ_NOT_STARTED:
                sb_sentence(&f->note, "Check the boot log (journalctl -k | grep -i -e nohz -e "
                                      "housekeeping) for why; keep at least one CPU outside "
                                      "nohz_full= and boot a kernel with CONFIG_NO_HZ_FULL=y.");
                break;
        case NOHZ_UNSUPPORTED:
                sb_printf(&f->command, "nohz_full=");
                sb_union(&f->command, a, &a->cmdline.nohz_full);
                fix_kernel_args(f, "nohz_full", &a->cmdline.nohz_full);
                sb_sentence(&f->note, "This kernel has no CONFIG_NO_HZ_FULL: boot one built with "
                                      "CONFIG_NO_HZ_FULL=y (most distributions' kernels are).");
                break;
        case NOHZ_OFF:
                sb_printf(&f->command, "nohz_full=");
                sb_union(&f->command, a, &a->cmdline.nohz_full);
                fix_kernel_args(f, "nohz_full", &a->cmdline.nohz_full);
                sb_sentence(&f->note, "The tuned profile cpu-partitioning sets it.");
                break;
        case NOHZ_UNKNOWN:
        default:
                break;
        }
}

RcuState audit_rcu_state(const Audit *a, int cpu)
{
        const Cmdline *c = &a->cmdline;
        /* nohz_full CPUs are always RCU-offloaded (rcu_init_nohz()). */
        bool by_nohz_full = a->nohz_full_error == 0 ? CPU_ISSET(cpu, &a->nohz_full)
                                                    : list_has(&c->nohz_full, cpu);

        if (list_has(&c->rcu_nocbs, cpu) || by_nohz_full) {
                return c->rcu_nocb_poll ? RCU_OFFLOADED_POLLED : RCU_OFFLOADED;
        }
        return c->error == 0 ? RCU_LOCAL : RCU_UNKNOWN;
}

void audit_fix_rcu_nocbs(const Audit *a, int cpu, Fix *f)
{
        f->check = "rcu_nocbs";
        switch (audit_rcu_state(a, cpu)) {
        case RCU_OFFLOADED:
                sb_printf(&f->command, "rcu_nocb_poll");
                fix_kernel_args(f, "rcu_nocb_poll", NULL);
                break;
        case RCU_LOCAL:
                sb_printf(&f->command, "rcu_nocbs=");
                sb_union(&f->command, a, &a->cmdline.rcu_nocbs);
                sb_printf(&f->command, " rcu_nocb_poll");
                fix_kernel_args(f, "rcu_nocbs rcu_nocb_poll", &a->cmdline.rcu_nocbs);
                sb_sentence(&f->note, "nohz_full= implies rcu_nocbs=; keep the rcuo kthreads on "
                                      "housekeeping CPUs.");
                break;
        case RCU_OFFLOADED_POLLED:
                sb_sentence(&f->note,
                            "RCU callbacks are already offloaded and polled; what is left "
                            "is this CPU's own part of each grace period.");
                break;
        case RCU_UNKNOWN:
        default:
                break;
        }
}

/* Moves the @n IRQs @irqs to the housekeeping CPUs. */
void audit_fix_irqs(const Audit *a, const Irq *const *irqs, size_t n, Fix *f)
{
        f->check = "irq_affinity";
        f->when = FIX_NOW;
        if (n == 1) {
                sb_printf(&f->command, "echo ");
                sb_housekeeping(&f->command, a);
                sb_printf(&f->command, " > /proc/irq/%u/smp_affinity_list", irqs[0]->number);
        } else {
                sb_printf(&f->command, "for i in");
                for (size_t i = 0; i < n; i++) {
                        sb_printf(&f->command, " %u", irqs[i]->number);
                }
                sb_printf(&f->command, "; do echo ");
                sb_housekeeping(&f->command, a);
                sb_printf(&f->command, " > /proc/irq/$i/smp_affinity_list; done");
        }
        for (size_t i = 0; i < n; i++) {
                sb_printf(&f->revert, "%secho ", i > 0 ? "; " : "");
                sb_cpulist(&f->revert, &irqs[i]->affinity, "");
                sb_printf(&f->revert, " > /proc/irq/%u/smp_affinity_list", irqs[i]->number);
        }
        sb_printf(&f->persist, "Boot with irqaffinity=");
        sb_housekeeping(&f->persist, a);
        sb_printf(&f->persist, " so new interrupts start there, and stop irqbalance or set "
                               "IRQBALANCE_BANNED_CPULIST=");
        sb_union(&f->persist, a, NULL);
        sb_printf(&f->persist, " in its configuration.");
        sb_sentence(&f->note, "A managed interrupt refuses the write (Operation not permitted): "
                              "for it, boot with isolcpus=managed_irq,domain,");
        sb_union(&f->note, a, &a->cmdline.isolcpus);
        sb_printf(&f->note, ".");
}

/* Managed interrupts: only the kernel places them, at boot. */
void audit_fix_managed_irq(const Audit *a, Fix *f)
{
        f->check = "irq_affinity";
        sb_printf(&f->command, "isolcpus=managed_irq,domain,");
        sb_union(&f->command, a, &a->cmdline.isolcpus);
        fix_kernel_args(f, "isolcpus", &a->cmdline.isolcpus);
        sb_sentence(&f->note,
                    "A managed interrupt whose mask also holds a housekeeping CPU is then "
                    "delivered there; otherwise keep the device behind it idle from "
                    "this CPU.");
}

void audit_fix_workqueue(const Audit *a, Fix *f)
{
        f->check = "workqueue";
        f->when = FIX_NOW;
        sb_printf(&f->command, "echo ");
        sb_housekeeping_mask(&f->command, a);
        sb_printf(&f->command, " > /sys/devices/virtual/workqueue/cpumask");
        if (a->workqueue_error == 0) {
                sb_printf(&f->revert, "echo %s > /sys/devices/virtual/workqueue/cpumask",
                          a->workqueue_text);
        }
        sb_printf(&f->persist, "At boot, isolcpus=domain and nohz_full= remove CPUs from it on "
                               "recent kernels; or write it at each boot with the tmpfiles.d "
                               "line: w /sys/devices/virtual/workqueue/cpumask - - - - ");
        sb_housekeeping_mask(&f->persist, a);
}

/* Moves the @n kernel threads @k (movable ones) to the housekeeping CPUs. */
void audit_fix_kthreads(const Audit *a, const Kthread *const *k, size_t n, Fix *f)
{
        f->check = "kthreads";
        f->when = FIX_NOW;
        if (n == 1) {
                sb_printf(&f->command, "taskset -p -c ");
                sb_housekeeping(&f->command, a);
                sb_printf(&f->command, " %d", k[0]->pid);
        } else {
                sb_printf(&f->command, "for p in");
                for (size_t i = 0; i < n; i++) {
                        sb_printf(&f->command, " %d", k[i]->pid);
                }
                sb_printf(&f->command, "; do taskset -p -c ");
                sb_housekeeping(&f->command, a);
                sb_printf(&f->command, " $p; done");
        }
        for (size_t i = 0; i < n; i++) {
                sb_printf(&f->revert, "%staskset -p -c ", i > 0 ? "; " : "");
                sb_cpulist(&f->revert, &k[i]->allowed, "");
                sb_printf(&f->revert, " %d", k[i]->pid);
        }
        sb_printf(&f->persist, "Kernel threads started later inherit the affinity of kthreadd "
                               "(PID 2): move it too. At boot, isolcpus=domain,");
        sb_union(&f->persist, a, &a->cmdline.isolcpus);
        sb_printf(&f->persist, " nohz_full=");
        sb_union(&f->persist, a, &a->cmdline.nohz_full);
        sb_printf(&f->persist, " keeps kernel threads on housekeeping CPUs.");
}

/* The sysctl @key (e.g. "kernel.timer_migration") set to @value, now and at every boot. */
void audit_fix_sysctl(const Audit *a, const char *check, const char *key, const char *value, Fix *f)
{
        char p[128], now[256];

        f->check = check;
        f->when = FIX_NOW;
        sb_printf(&f->command, "sysctl -w %s=%s", key, value);
        sb_printf(&f->persist,
                  "Put the line \"%s = %s\" in a file of /etc/sysctl.d/ (e.g. "
                  "/etc/sysctl.d/90-jitterd.conf) to keep it.",
                  key, value);
        snprintf(p, sizeof(p), "/proc/sys/%s", key);
        for (char *s = p + strlen("/proc/sys/"); *s; s++) {
                *s = *s == '.' ? '/' : *s;
        }
        if (audit_read_text(a, now, sizeof(now), "%s", p) == 0 && now[0]) {
                sb_printf(&f->revert, "sysctl -w %s=%s", key, now);
        }
}

/* The soft-lockup watchdog's timer off the probed CPUs. */
void audit_fix_watchdog(const Audit *a, Fix *f)
{
        _cleanup_strbuf_ StrBuf hk = {0};

        sb_housekeeping(&hk, a);
        audit_fix_sysctl(a, NULL, "kernel.watchdog_cpumask", sb_str(&hk), f);
        sb_sentence(&f->note, "At boot, nohz_full= takes its CPUs out of the watchdog's mask.");
}

/* Moves the task @tid (allowed on @allowed now; of the systemd service @unit, or NULL) to the
 * housekeeping CPUs. */
void audit_fix_task(const Audit *a, int tid, const cpu_set_t *allowed, const char *unit, Fix *f)
{
        _cleanup_strbuf_ StrBuf hk = {0};

        sb_housekeeping(&hk, a);
        f->check = "isolcpus";
        f->when = FIX_NOW;
        sb_printf(&f->command, "taskset -p -c %s %d", sb_str(&hk), tid);
        sb_printf(&f->revert, "taskset -p -c ");
        sb_cpulist(&f->revert, allowed, "");
        sb_printf(&f->revert, " %d", tid);
        if (unit) {
                sb_printf(&f->persist,
                          "Set CPUAffinity=%s in a drop-in of %s (systemctl edit %s: "
                          "[Service] CPUAffinity=%s), from its next start; with the cgroup v2 "
                          "cpuset controller, systemctl set-property %s AllowedCPUs=%s does it "
                          "now and for good.",
                          sb_str(&hk), unit, unit, sb_str(&hk), unit, sb_str(&hk));
        } else {
                sb_printf(&f->persist,
                          "Start it with taskset -c %s, or set CPUAffinity=%s in "
                          "/etc/systemd/system.conf so that every service starts on housekeeping "
                          "CPUs (from the next boot).",
                          sb_str(&hk), sb_str(&hk));
        }
        if (a->iso.v1_error == 0) {
                sb_sentence(&f->note, "To move every task off at once: cset shield --cpu ");
                sb_union(&f->note, a, NULL);
                sb_printf(&f->note, " --kthread on (cgroup v1 cpusets; cset proc --move moves "
                                    "single tasks into its sets).");
        }
}

/* Appends each cpuset that isolates CPUs, saying which kind it is. */
static void sb_cpusets(StrBuf *sb, const Isolation *iso)
{
        for (size_t i = 0; i < iso->n_sets; i++) {
                const IsolationSet *s = &iso->sets[i];

                if (s->kind == ISOLATION_CPUSET_V1) {
                        sb_printf(sb,
                                  "; cgroup v1 cpuset shield %s (exclusive, no load balancing): ",
                                  s->path);
                } else if (s->path[0]) {
                        sb_printf(sb, "; cgroup v2 isolated partition %s: ", s->path);
                } else {
                        sb_printf(sb, "; cgroup v2 cpuset.cpus.isolated: ");
                }
                sb_cpulist(sb, &s->cpus, "none");
        }
}

/* Appends the finding text of @f to @out, and @f's allocation failure. */
static void fix_into(StrBuf *out, const Fix *f)
{
        audit_fix_text(f, out);
        out->oom |= audit_fix_oom(f);
}

static void isolcpus_fix(const Audit *a, StrBuf *out)
{
        _cleanup_fix_ Fix f = {0};

        audit_fix_isolcpus(a, &f);
        fix_into(out, &f);
}

static int check_isolcpus(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        const Cmdline *c = &a->cmdline;
        bool listed = list_has(&c->isolcpus, cpu);
        IsolationKind runtime;
        AuditSeverity severity;
        const char *why;

        if (c->error < 0) {
                sb_error(&seen, "/proc/cmdline", c->error);
        } else if (c->isolcpus.present) {
                sb_printf(&seen, "isolcpus=%s%s", c->isolcpus.value,
                          c->isolcpus.valid ? "" : " (invalid, ignored by the kernel)");
        } else {
                sb_printf(&seen, "no isolcpus=");
        }
        if (a->isolated_error == 0) {
                sb_printf(&seen, "; isolated: ");
                sb_cpulist(&seen, &a->isolated, "none");
        }
        sb_cpusets(&seen, &a->iso);
        runtime = isolation_of(&a->iso, cpu, NULL);

        if (c->error < 0 && a->isolated_error < 0 && a->iso.v1_error < 0 && a->iso.v2_error < 0) {
                severity = AUDIT_INFO;
                why = "Neither the kernel command line nor /sys/devices/system/cpu/isolated "
                      "could be read, so whether this CPU is isolated is unknown.";
        } else if (audit_domain_isolated(a, cpu) && listed &&
                   (c->isolcpus_flags & ISOL_MANAGED_IRQ)) {
                severity = AUDIT_OK;
                why = "The scheduler neither places nor balances tasks onto this CPU, and "
                      "managed interrupts avoid it.";
        } else if (!listed && (runtime == ISOLATION_CPUSET_V1 || runtime == ISOLATION_CPUSET_V2)) {
                severity = AUDIT_INFO;
                why = runtime == ISOLATION_CPUSET_V1
                              ? "Isolated at run time by a cgroup v1 cpuset shield: no scheduling "
                                "domain balances load onto it and only the tasks of its exclusive "
                                "cpuset (or of the root cpuset) may run there. Managed interrupts "
                                "may still be routed to it, and the isolation ends with the "
                                "cpusets or at reboot."
                              : "Isolated at run time by a cgroup v2 isolated partition: no "
                                "scheduling domain balances load onto it and only the tasks of "
                                "that partition run there. Managed interrupts may still be routed "
                                "to it, and the isolation ends with the partition or at reboot.";
                isolcpus_fix(a, &fix);
        } else if (audit_domain_isolated(a, cpu)) {
                severity = AUDIT_INFO;
                why = "Isolated from scheduling, but without the managed_irq flag the kernel may "
                      "still route managed interrupts (NVMe, multi-queue NIC and virtio queues) "
                      "to this CPU.";
                isolcpus_fix(a, &fix);
        } else if (listed) {
                severity = AUDIT_WARNING;
                why = "isolcpus= names this CPU but without the domain flag, so the scheduler "
                      "still balances tasks onto it; every such task preempts the workload.";
                isolcpus_fix(a, &fix);
        } else {
                severity = AUDIT_WARNING;
                why = "Not isolated: the scheduler may place any task on this CPU and balance "
                      "load onto it, and each such task takes the CPU from the workload for "
                      "as long as it runs.";
                isolcpus_fix(a, &fix);
        }
        return finding_add(a, "isolcpus", cpu, severity, &seen, why, &fix);
}

static int check_nohz_full(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        _cleanup_fix_ Fix f = {0};
        const Cmdline *c = &a->cmdline;
        AuditSeverity severity;
        const char *why;

        if (c->error < 0) {
                sb_error(&seen, "/proc/cmdline", c->error);
        } else if (c->nohz_full.present) {
                sb_printf(&seen, "nohz_full=%s%s", c->nohz_full.value,
                          c->nohz_full.valid ? "" : " (invalid, ignored by the kernel)");
        } else {
                sb_printf(&seen, "no nohz_full=");
        }
        if (a->nohz_full_error == 0) {
                sb_printf(&seen, "; active: ");
                sb_cpulist(&seen, &a->nohz_full, "none");
        } else if (a->nohz_full_error == -ENOENT) {
                sb_printf(&seen, "; /sys/devices/system/cpu/nohz_full absent (kernel without "
                                 "CONFIG_NO_HZ_FULL)");
        } else {
                sb_printf(&seen, "; ");
                sb_error(&seen, "/sys/devices/system/cpu/nohz_full", a->nohz_full_error);
        }

        switch (audit_nohz_state(a, cpu)) {
        case NOHZ_ACTIVE:
                return finding_add(a, "nohz_full", cpu, AUDIT_OK, &seen,
                                   "The scheduler tick stops while a single task runs on this CPU "
                                   "(a 1 Hz residual tick remains).",
                                   &fix);
        case NOHZ_NOT_STARTED:
                severity = AUDIT_WARNING;
                why = "nohz_full is requested for this CPU but the kernel did not enable it, so "
                      "the periodic tick still interrupts it every 1-4 ms.";
                break;
        case NOHZ_UNSUPPORTED:
                severity = AUDIT_WARNING;
                why = "This kernel has no full dynticks support, so the periodic tick "
                      "interrupts the CPU every 1-4 ms for a few microseconds even when one "
                      "task runs alone.";
                break;
        case NOHZ_OFF:
                severity = AUDIT_WARNING;
                why = "The periodic scheduler tick interrupts this CPU every 1-4 ms for a few "
                      "microseconds even when one task runs alone; nohz_full stops it.";
                break;
        case NOHZ_UNKNOWN:
        default:
                return finding_add(a, "nohz_full", cpu, AUDIT_INFO, &seen,
                                   "Whether the tick is stopped on this CPU could not be "
                                   "established from what is readable.",
                                   &fix);
        }
        audit_fix_nohz_full(a, cpu, &f);
        fix_into(&fix, &f);
        return finding_add(a, "nohz_full", cpu, severity, &seen, why, &fix);
}

static int check_rcu_nocbs(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        _cleanup_fix_ Fix f = {0};
        const Cmdline *c = &a->cmdline;
        RcuState state = audit_rcu_state(a, cpu);
        bool by_nohz_full = a->nohz_full_error == 0 ? CPU_ISSET(cpu, &a->nohz_full)
                                                    : list_has(&c->nohz_full, cpu);
        AuditSeverity severity;
        const char *why;

        if (c->error < 0) {
                sb_error(&seen, "/proc/cmdline", c->error);
        } else if (c->rcu_nocbs.present) {
                sb_printf(&seen, "rcu_nocbs=%s%s", c->rcu_nocbs.value,
                          c->rcu_nocbs.valid ? "" : " (invalid, ignored by the kernel)");
        } else {
                sb_printf(&seen, "no rcu_nocbs=");
        }
        if (by_nohz_full) {
                sb_printf(&seen, "; offloaded by nohz_full");
        }
        if (c->rcu_nocb_poll) {
                sb_printf(&seen, "; rcu_nocb_poll");
        }

        if (state == RCU_OFFLOADED_POLLED) {
                return finding_add(a, "rcu_nocbs", cpu, AUDIT_OK, &seen,
                                   "RCU callbacks of this CPU run in rcuo kthreads elsewhere, and "
                                   "those threads poll instead of being woken from this CPU.",
                                   &fix);
        } else if (state == RCU_OFFLOADED) {
                severity = AUDIT_INFO;
                why = "RCU callbacks are offloaded, but this CPU still wakes its rcuo kthreads "
                      "when it queues callbacks; with rcu_nocb_poll they poll instead.";
        } else if (state == RCU_LOCAL) {
                severity = AUDIT_WARNING;
                why = "RCU callbacks queued on this CPU are invoked on it in softirq context, "
                      "taking it away at unpredictable times for up to tens of microseconds.";
        } else {
                return finding_add(a, "rcu_nocbs", cpu, AUDIT_INFO, &seen,
                                   "Without the kernel command line, whether RCU callbacks are "
                                   "offloaded from this CPU is unknown.",
                                   &fix);
        }
        audit_fix_rcu_nocbs(a, cpu, &f);
        fix_into(&fix, &f);
        return finding_add(a, "rcu_nocbs", cpu, severity, &seen, why, &fix);
}

/* Appends up to SEEN_NAMES_MAX of the @n IRQs that are @kind on @cpu. */
static void sb_irqs(StrBuf *sb, const Audit *a, int cpu, IrqHere kind, size_t n)
{
        size_t shown = 0;

        for (size_t i = 0; i < a->n_irqs && shown < SEEN_NAMES_MAX; i++) {
                const Irq *irq = &a->irqs[i];

                if (irq_here(irq, cpu) != kind) {
                        continue;
                }
                sb_printf(sb, "%s%u (%s%s)", shown++ == 0 ? "" : ", ", irq->number, irq->name,
                          irq->has_effective && CPU_ISSET(cpu, &irq->effective) ? ", effective here"
                                                                                : "");
        }
        if (n > shown) {
                sb_printf(sb, " and %zu more", n - shown);
        }
}

/* The fix for the IRQs that may be delivered to @cpu and can be moved. */
static int movable_irqs_fix(const Audit *a, int cpu, StrBuf *out)
{
        _cleanup_free_ const Irq **irqs = calloc(a->n_irqs, sizeof(*irqs));
        _cleanup_fix_ Fix f = {0};
        size_t n = 0;

        if (!irqs) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < a->n_irqs; i++) {
                if (irq_here(&a->irqs[i], cpu) == IRQ_MOVABLE) {
                        irqs[n++] = &a->irqs[i];
                }
        }
        audit_fix_irqs(a, irqs, n, &f);
        fix_into(out, &f);
        return 0;
}

/* Names in @seen the IRQs of each kind (@count of them) that may be delivered to @cpu, and
 * whether the default affinity and irqaffinity= take it in. Returns whether interrupts set up
 * later would start on @cpu. */
static bool irq_affinity_seen(const Audit *a, int cpu, const size_t *count, StrBuf *seen)
{
        bool default_here = a->default_affinity_error == 0 && CPU_ISSET(cpu, &a->default_affinity);

        if (count[IRQ_MOVABLE] > 0) {
                sb_printf(seen, "%zu IRQ%s allowed on CPU %d: ", count[IRQ_MOVABLE],
                          count[IRQ_MOVABLE] == 1 ? "" : "s", cpu);
                sb_irqs(seen, a, cpu, IRQ_MOVABLE, count[IRQ_MOVABLE]);
        } else {
                sb_printf(seen, "%zu IRQs, none movable allowed on CPU %d", a->n_irqs, cpu);
        }
        if (count[IRQ_UNMOVABLE] > 0) {
                sb_printf(seen, "; managed or per-CPU, delivered here: ");
                sb_irqs(seen, a, cpu, IRQ_UNMOVABLE, count[IRQ_UNMOVABLE]);
        }
        if (default_here) {
                sb_printf(seen, "; default_smp_affinity includes CPU %d", cpu);
        }
        if (a->cmdline.irqaffinity.present) {
                sb_printf(seen, "; irqaffinity=%s", a->cmdline.irqaffinity.value);
        }
        return default_here;
}

static int check_irq_affinity(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        _cleanup_fix_ Fix f = {0};
        size_t count[IRQ_UNMOVABLE + 1] = {0};
        AuditSeverity severity;
        bool default_here;
        const char *why;
        int r;

        if (a->irqs_error < 0) {
                sb_error(&seen, "/proc/irq", a->irqs_error);
                return finding_add(a, "irq_affinity", cpu, AUDIT_INFO, &seen,
                                   "Which interrupts may be delivered to this CPU is unknown.",
                                   &fix);
        }
        for (size_t i = 0; i < a->n_irqs; i++) {
                count[irq_here(&a->irqs[i], cpu)]++;
        }
        default_here = irq_affinity_seen(a, cpu, count, &seen);

        if (count[IRQ_MOVABLE] > 0) {
                severity = AUDIT_WARNING;
                why = "Each interrupt delivered to this CPU runs its handler there (and often "
                      "softirq work after it), for microseconds to milliseconds.";
                r = movable_irqs_fix(a, cpu, &fix);
                if (r < 0) {
                        return r;
                }
        } else if (count[IRQ_UNMOVABLE] > 0) {
                severity = AUDIT_INFO;
                why = "Managed or per-CPU interrupts are delivered to this CPU; the kernel does "
                      "not let user space move them.";
                audit_fix_managed_irq(a, &f);
                fix_into(&fix, &f);
        } else if (default_here) {
                severity = AUDIT_INFO;
                why = "No interrupt may be delivered here now, but interrupts set up later "
                      "(a device or queue coming up) start with the default affinity, which "
                      "includes this CPU.";
                sb_printf(&fix, "echo ");
                sb_housekeeping_mask(&fix, a);
                sb_printf(&fix, " > /proc/irq/default_smp_affinity, and boot with irqaffinity=");
                sb_housekeeping(&fix, a);
                sb_printf(&fix, ".");
        } else {
                severity = AUDIT_OK;
                why = "No movable interrupt may be delivered to this CPU.";
        }
        return finding_add(a, "irq_affinity", cpu, severity, &seen, why, &fix);
}

static int check_workqueue(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        AuditSeverity severity;
        const char *why;

        if (a->workqueue_error < 0) {
                sb_error(&seen, "/sys/devices/virtual/workqueue/cpumask", a->workqueue_error);
                return finding_add(a, "workqueue", cpu, AUDIT_INFO, &seen,
                                   "Where unbound workqueue items may run is unknown (the file "
                                   "exists since Linux 4.2).",
                                   &fix);
        }
        sb_printf(&seen, "workqueue cpumask %s (CPUs ", a->workqueue_text);
        sb_cpulist(&seen, &a->workqueue, "none");
        sb_printf(&seen, ")");
        if (CPU_ISSET(cpu, &a->workqueue)) {
                severity = AUDIT_WARNING;
                why = "Unbound workqueue items (writeback, reclaim, crypto, ...) may be run by "
                      "kworkers on this CPU.";
                _cleanup_fix_ Fix f = {0};

                audit_fix_workqueue(a, &f);
                fix_into(&fix, &f);
        } else {
                severity = AUDIT_OK;
                why = "Unbound workqueue items are kept off this CPU.";
        }
        return finding_add(a, "workqueue", cpu, severity, &seen, why, &fix);
}

/* The fix for the kernel threads allowed on @cpu that can be moved. */
static int movable_kthreads_fix(const Audit *a, int cpu, StrBuf *out)
{
        _cleanup_free_ const Kthread **k = calloc(a->n_kthreads, sizeof(*k));
        _cleanup_fix_ Fix f = {0};
        size_t n = 0;

        if (!k) {
                return -ENOMEM;
        }
        for (size_t i = 0; i < a->n_kthreads; i++) {
                if (kthread_kind(&a->kthreads[i], cpu) == KTHREAD_MOVABLE) {
                        k[n++] = &a->kthreads[i];
                }
        }
        audit_fix_kthreads(a, k, n, &f);
        fix_into(out, &f);
        return 0;
}

static int check_kthreads(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        size_t count[KTHREAD_MOVABLE + 1] = {0}, shown = 0;
        AuditSeverity severity;
        const char *why;

        if (a->kthreads_error < 0) {
                sb_error(&seen, "/proc", a->kthreads_error);
                return finding_add(a, "kthreads", cpu, AUDIT_INFO, &seen,
                                   "Which kernel threads may run on this CPU is unknown.", &fix);
        }
        for (size_t i = 0; i < a->n_kthreads; i++) {
                count[kthread_kind(&a->kthreads[i], cpu)]++;
        }
        sb_printf(&seen, "%zu movable kthread%s allowed here", count[KTHREAD_MOVABLE],
                  count[KTHREAD_MOVABLE] == 1 ? "" : "s");
        for (size_t i = 0; i < a->n_kthreads && shown < SEEN_NAMES_MAX; i++) {
                const Kthread *k = &a->kthreads[i];

                if (kthread_kind(k, cpu) == KTHREAD_MOVABLE) {
                        sb_printf(&seen, "%s%s (%d)", shown++ == 0 ? ": " : ", ", k->comm, k->pid);
                }
        }
        if (count[KTHREAD_MOVABLE] > shown) {
                sb_printf(&seen, " and %zu more", count[KTHREAD_MOVABLE] - shown);
        }
        sb_printf(&seen, "; %zu per-CPU bound here (expected)", count[KTHREAD_PER_CPU]);
        if (count[KTHREAD_FOLLOWER] > 0) {
                sb_printf(&seen, "; %zu unbound kworkers or IRQ threads allowed here",
                          count[KTHREAD_FOLLOWER]);
        }

        if (count[KTHREAD_MOVABLE] > 0) {
                severity = AUDIT_WARNING;
                why = "Kernel threads allowed on this CPU (reclaim, compaction, RCU grace-period "
                      "and other housekeeping threads) can be scheduled on it and preempt the "
                      "workload.";
                int r = movable_kthreads_fix(a, cpu, &fix);

                if (r < 0) {
                        return r;
                }
        } else if (count[KTHREAD_FOLLOWER] > 0) {
                severity = AUDIT_INFO;
                why = "Unbound kworkers follow the workqueue cpumask and threaded IRQ handlers "
                      "follow their interrupt's affinity; they cannot be moved with taskset.";
                sb_printf(&fix, "Exclude this CPU from /sys/devices/virtual/workqueue/cpumask "
                                "and from the IRQs' smp_affinity_list (see the workqueue and "
                                "irq_affinity findings).");
        } else {
                severity = AUDIT_OK;
                why = "Only this CPU's own per-CPU kernel threads (ksoftirqd, migration, cpuhp, "
                      "bound kworkers) may run here; they are part of the kernel's work for "
                      "this CPU and cannot be moved.";
        }
        return finding_add(a, "kthreads", cpu, severity, &seen, why, &fix);
}

static int check_smt_sibling(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        cpu_set_t siblings, busy, probed;
        char control[64];
        AuditSeverity severity;
        const char *why;
        int r;

        r = audit_read_cpulist(a, &siblings,
                               "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
        if (r < 0) {
                sb_error(&seen, "topology/thread_siblings_list", r);
                return finding_add(a, "smt_sibling", cpu, AUDIT_INFO, &seen,
                                   "The SMT siblings of this CPU are unknown (is the CPU "
                                   "present and online?).",
                                   &fix);
        }
        CPU_CLR(cpu, &siblings);
        CPU_ZERO(&busy);
        CPU_ZERO(&probed);
        for (int s = 0; s < CPU_SETSIZE; s++) {
                if (!CPU_ISSET(s, &siblings)) {
                        continue;
                }
                if (CPU_ISSET(s, &a->cpus)) {
                        CPU_SET(s, &probed);
                } else if (!audit_domain_isolated(a, s)) {
                        CPU_SET(s, &busy);
                }
        }
        if (CPU_COUNT(&siblings) == 0) {
                sb_printf(&seen, "no SMT sibling");
        } else {
                sb_printf(&seen, "sibling ");
                sb_cpulist(&seen, &siblings, "");
                if (CPU_COUNT(&busy) > 0) {
                        sb_printf(&seen, " (not isolated: ");
                        sb_cpulist(&seen, &busy, "");
                        sb_printf(&seen, ")");
                } else if (CPU_COUNT(&probed) > 0) {
                        sb_printf(&seen, " (also probed)");
                } else {
                        sb_printf(&seen, " (isolated)");
                }
        }
        if (audit_read_text(a, control, sizeof(control), "/sys/devices/system/cpu/smt/control") ==
            0) {
                sb_printf(&seen, "; SMT control: %s", control);
        }

        if (CPU_COUNT(&busy) > 0) {
                severity = AUDIT_WARNING;
                why = "The sibling hardware thread shares this core's execution units, caches "
                      "and power budget: whatever runs there slows this CPU down, and its "
                      "interrupts and tasks show up here as jitter.";
                sb_printf(&fix, "Isolate the sibling too (add ");
                sb_cpulist(&fix, &busy, "");
                sb_printf(&fix, " to isolcpus= and nohz_full=, and leave it idle), or disable "
                                "SMT: boot with nosmt, or echo off > "
                                "/sys/devices/system/cpu/smt/control.");
        } else if (CPU_COUNT(&probed) > 0) {
                severity = AUDIT_INFO;
                why = "The sibling also runs a busy-looping probe: two loops share one core, "
                      "which raises the floor of both and couples their noise.";
                sb_printf(&fix, "Probe one hardware thread per core and leave its sibling "
                                "isolated and idle.");
        } else {
                severity = AUDIT_OK;
                why = "No other task shares this CPU's core.";
        }
        return finding_add(a, "smt_sibling", cpu, severity, &seen, why, &fix);
}

static int check_governor(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        char governor[64], driver[64];
        int r;

        r = audit_read_text(a, governor, sizeof(governor),
                            "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
        if (r < 0) {
                sb_error(&seen, "cpufreq/scaling_governor", r);
                return finding_add(a, "governor", cpu, AUDIT_INFO, &seen,
                                   r == -ENOENT ? "No cpufreq for this CPU: its frequency is not "
                                                  "under the kernel's control (a virtual "
                                                  "machine, or no cpufreq driver loaded)."
                                                : "The frequency governor is unknown.",
                                   &fix);
        }
        sb_printf(&seen, "governor %s", governor);
        if (audit_read_text(a, driver, sizeof(driver),
                            "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_driver", cpu) == 0) {
                sb_printf(&seen, ", driver %s", driver);
        }
        if (strcmp(governor, "performance") == 0) {
                return finding_add(a, "governor", cpu, AUDIT_OK, &seen,
                                   "The CPU runs at its highest frequency; no frequency "
                                   "transitions interrupt it.",
                                   &fix);
        }
        sb_printf(&fix,
                  "echo performance > /sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor "
                  "(or cpupower -c %d frequency-set -g performance, or the tuned profile "
                  "cpu-partitioning).",
                  cpu, cpu);
        return finding_add(a, "governor", cpu, AUDIT_WARNING, &seen,
                           "A frequency transition stalls the core for tens of microseconds, and "
                           "a lower clock stretches every interruption and the loop itself.",
                           &fix);
}

typedef struct CState {
        long index;
        char name[32];
        long latency_us;
        bool disabled;
} CState;

static int cstate_compare(const void *x, const void *y)
{
        const CState *a = x, *b = y;

        return a->index < b->index ? -1 : a->index > b->index;
}

/* Reads the C-state of directory @entry ("state3") of @cpu. Returns 1 when filled, 0 when
 * @entry is no C-state or its name or latency cannot be read. */
static int read_cstate(const Audit *a, int cpu, const char *entry, CState *ret)
{
        char text[64];
        CState s = {0};
        long v;

        if (strncmp(entry, "state", 5) != 0 || !isdigits(entry + 5) ||
            audit_parse_long(entry + 5, &s.index) < 0) {
                return 0;
        }
        if (audit_read_text(a, s.name, sizeof(s.name),
                            "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/name", cpu,
                            s.index) < 0 ||
            audit_read_text(a, text, sizeof(text),
                            "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/latency", cpu,
                            s.index) < 0 ||
            audit_parse_long(text, &s.latency_us) < 0) {
                return 0;
        }
        /* "disable" appeared in 3.4; without it every state is enabled. */
        if (audit_read_text(a, text, sizeof(text),
                            "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/disable", cpu,
                            s.index) == 0 &&
            audit_parse_long(text, &v) == 0) {
                s.disabled = v != 0;
        }
        *ret = s;
        return 1;
}

/* Reads the C-states of @cpu into *@ret, sorted by index. Returns 0, -ENOMEM, or the error of
 * opening its cpuidle directory. */
static int read_cstates(const Audit *a, int cpu, CState **ret, size_t *ret_n)
{
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ CState *states = NULL;
        char p[PATH_MAX];
        struct dirent *de;
        size_t n = 0;
        int r;

        r = path(a, p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpuidle", cpu);
        if (r < 0) {
                return r;
        }
        dir = opendir(p);
        if (!dir) {
                return -errno;
        }
        while ((de = readdir(dir))) {
                CState s;

                if (read_cstate(a, cpu, de->d_name, &s) == 0) {
                        continue;
                }
                CState *grown = realloc(states, (n + 1) * sizeof(*states));
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

/* The finding for the enabled C-states of @cpu whose exit latency is above @bound, with the
 * commands that disable them or the boot arguments that keep them off under @driver. */
static int cstates_too_deep(Audit *a, int cpu, const char *driver, const CState *states, size_t n,
                            long bound, StrBuf *seen)
{
        _cleanup_strbuf_ StrBuf fix = {0};
        bool first = true;

        sb_printf(seen, "; enabled with exit latency above %ld us: ", bound);
        for (size_t i = 0; i < n; i++) {
                if (!states[i].disabled && states[i].latency_us > bound) {
                        sb_printf(seen, "%s%s (%ld us)", first ? "" : ", ", states[i].name,
                                  states[i].latency_us);
                        first = false;
                }
        }
        for (size_t i = 0; i < n; i++) {
                if (!states[i].disabled && states[i].latency_us > bound) {
                        sb_printf(&fix,
                                  "echo 1 > /sys/devices/system/cpu/cpu%d/cpuidle/"
                                  "state%ld/disable; ",
                                  cpu, states[i].index);
                }
        }
        if (strcmp(driver, "intel_idle") == 0) {
                sb_printf(&fix, "or boot with intel_idle.max_cstate=0 "
                                "processor.max_cstate=1");
        } else if (strcmp(driver, "acpi_idle") == 0) {
                sb_printf(&fix, "or boot with processor.max_cstate=1");
        } else {
                sb_printf(&fix, "or boot with processor.max_cstate=1 "
                                "intel_idle.max_cstate=0 on x86");
        }
        sb_printf(&fix, ", or idle=poll (at the cost of power and of SMT sibling "
                        "throughput); the tuned profile cpu-partitioning limits "
                        "C-states through a PM QoS request.");
        return finding_add(a, "cstates", cpu, AUDIT_WARNING, seen,
                           "Waking from a deep C-state costs its exit latency: whenever "
                           "the workload on this CPU blocks and is woken, it loses that "
                           "time, and deep states also cool the caches.",
                           &fix);
}

static int check_cstates(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        _cleanup_free_ CState *states = NULL;
        long bound = (long)a->opt.cstate_latency_max_us;
        size_t n = 0;
        char driver[64];
        bool first = true;
        int r;

        if (audit_read_text(a, driver, sizeof(driver),
                            "/sys/devices/system/cpu/cpuidle/current_driver") < 0 ||
            driver[0] == '\0') {
                snprintf(driver, sizeof(driver), "unknown");
        }
        sb_printf(&seen, "idle driver %s", driver);

        r = read_cstates(a, cpu, &states, &n);
        if (r == -ENOMEM) {
                return r;
        }
        if (r < 0 || n == 0) {
                if (r < 0) {
                        sb_printf(&seen, "; ");
                        sb_error(&seen, "cpuidle states", r);
                } else {
                        sb_printf(&seen, "; no cpuidle states");
                }
                return finding_add(a, "cstates", cpu, AUDIT_INFO, &seen,
                                   "No cpuidle states for this CPU: the kernel idles it with "
                                   "its default idle routine, whose exit latency is unknown.",
                                   &fix);
        }
        for (size_t i = 0; i < n; i++) {
                if (!states[i].disabled && states[i].latency_us > bound) {
                        return cstates_too_deep(a, cpu, driver, states, n, bound, &seen);
                }
        }
        sb_printf(&seen, "; enabled: ");
        for (size_t i = 0; i < n; i++) {
                if (!states[i].disabled) {
                        sb_printf(&seen, "%s%s (%ld us)", first ? "" : ", ", states[i].name,
                                  states[i].latency_us);
                        first = false;
                }
        }
        if (first) {
                sb_printf(&seen, "none");
        }
        return finding_add(a, "cstates", cpu, AUDIT_OK, &seen,
                           "Every enabled idle state wakes up within the latency bound.", &fix);
}

static void sysctl_fix(const Audit *a, const char *check, const char *key, const char *value,
                       StrBuf *out)
{
        _cleanup_fix_ Fix f = {0};

        audit_fix_sysctl(a, check, key, value, &f);
        fix_into(out, &f);
}

static int check_rt_throttling(Audit *a)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        char text[64];
        long runtime = 0, period = 1000000;
        AuditSeverity severity;
        int r;

        r = audit_read_text(a, text, sizeof(text), "/proc/sys/kernel/sched_rt_runtime_us");
        if (r == 0) {
                r = audit_parse_long(text, &runtime);
        }
        if (r < 0) {
                sb_error(&seen, "/proc/sys/kernel/sched_rt_runtime_us", r);
                return finding_add(a, "rt_throttling", -1, AUDIT_INFO, &seen,
                                   "Whether real-time tasks are throttled is unknown.", &fix);
        }
        if (audit_read_text(a, text, sizeof(text), "/proc/sys/kernel/sched_rt_period_us") < 0 ||
            audit_parse_long(text, &period) < 0 || period <= 0) {
                period = 1000000;
        }
        sb_printf(&seen, "sched_rt_runtime_us=%ld", runtime);
        if (runtime < 0) {
                return finding_add(a, "rt_throttling", -1, AUDIT_OK, &seen,
                                   "Real-time tasks are not throttled.", &fix);
        }
        sb_printf(&seen, " of sched_rt_period_us=%ld", period);
        severity = a->opt.probe_priority > 0 ? AUDIT_ERROR : AUDIT_WARNING;
        sysctl_fix(a, "rt_throttling", "kernel.sched_rt_runtime_us", "-1", &fix);
        return finding_add(a, "rt_throttling", -1, severity, &seen,
                           severity == AUDIT_ERROR
                                   ? "RT throttling takes the CPU from SCHED_FIFO tasks that have "
                                     "run for sched_rt_runtime_us in a period: the SCHED_FIFO "
                                     "probes are stalled for the rest of every period (50 ms "
                                     "each second with the defaults)."
                                   : "RT throttling takes the CPU from SCHED_FIFO tasks that have "
                                     "run for sched_rt_runtime_us in a period (50 ms each second "
                                     "with the defaults); the probes run SCHED_OTHER, but a "
                                     "busy-polling SCHED_FIFO workload on these CPUs is stalled.",
                           &fix);
}

static int check_clocksource(Audit *a)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        const char *expected =
                a->opt.expected_clocksource ? a->opt.expected_clocksource : arch_clocksource();
        char current[64], available[512];
        bool can_switch = false;
        int r;

        r = audit_read_text(a, current, sizeof(current),
                            "/sys/devices/system/clocksource/clocksource0/current_clocksource");
        if (r < 0) {
                sb_error(&seen, "current_clocksource", r);
                return finding_add(a, "clocksource", -1, AUDIT_INFO, &seen,
                                   "The kernel's clocksource is unknown.", &fix);
        }
        sb_printf(&seen, "clocksource %s", current);
        if (audit_read_text(a, available, sizeof(available),
                            "/sys/devices/system/clocksource/clocksource0/available_clocksource") ==
            0) {
                sb_printf(&seen, " (available: %s)", available);
                for (char *save = NULL, *t = strtok_r(available, " ", &save); t && expected;
                     t = strtok_r(NULL, " ", &save)) {
                        if (strcmp(t, expected) == 0) {
                                can_switch = true;
                        }
                }
        }
        if (!expected) {
                return finding_add(a, "clocksource", -1, AUDIT_INFO, &seen,
                                   "There is no known-good clocksource for this architecture to "
                                   "compare with.",
                                   &fix);
        }
        if (strcmp(current, expected) == 0) {
                return finding_add(a, "clocksource", -1, AUDIT_OK, &seen,
                                   "clock_gettime() is served in user space from the same "
                                   "counter the probes read.",
                                   &fix);
        }
        if (can_switch) {
                sb_printf(&fix,
                          "echo %s > "
                          "/sys/devices/system/clocksource/clocksource0/current_clocksource; ",
                          expected);
        }
        if (strcmp(expected, "tsc") == 0) {
                sb_printf(&fix, "boot with clocksource=tsc tsc=reliable (check the boot log "
                                "for why the TSC was rejected, e.g. 'clocksource: Marking TSC "
                                "unstable').");
        } else {
                sb_printf(&fix, "boot with clocksource=%s.", expected);
        }
        /* Paravirtual clocks still have a vDSO path; only the counter differs. */
        if (strcmp(current, "kvm-clock") == 0 ||
            strcmp(current, "hyperv_clocksource_tsc_page") == 0) {
                return finding_add(a, "clocksource", -1, AUDIT_INFO, &seen,
                                   "This paravirtual clock serves clock_gettime() in user space, "
                                   "but through a slower path than the bare counter.",
                                   &fix);
        }
        return finding_add(a, "clocksource", -1, AUDIT_WARNING, &seen,
                           "With this clocksource clock_gettime() cannot be served from the vDSO "
                           "and falls back to a system call costing a microsecond or more, and "
                           "time stamps drift from the probes' counter.",
                           &fix);
}

static int check_timer_migration(Audit *a)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        char text[64];
        long v = 0;
        int r;

        r = audit_read_text(a, text, sizeof(text), "/proc/sys/kernel/timer_migration");
        if (r == 0) {
                r = audit_parse_long(text, &v);
        }
        if (r < 0) {
                sb_error(&seen, "/proc/sys/kernel/timer_migration", r);
                return finding_add(a, "timer_migration", -1, AUDIT_INFO, &seen,
                                   "Whether timers migrate between CPUs is unknown (the sysctl "
                                   "needs CONFIG_NO_HZ_COMMON).",
                                   &fix);
        }
        sb_printf(&seen, "timer_migration=%ld", v);
        if (v == 0) {
                return finding_add(a, "timer_migration", -1, AUDIT_OK, &seen,
                                   "Timers stay on the CPU that armed them.", &fix);
        }
        sysctl_fix(a, "timer_migration", "kernel.timer_migration", "0", &fix);
        return finding_add(a, "timer_migration", -1, AUDIT_INFO, &seen,
                           "Timers may be moved between CPUs, so timer expiry work can land on "
                           "a CPU that did not arm it; real-time setups usually turn this off.",
                           &fix);
}

static int check_vmstat(Audit *a)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        char text[64], value[16];
        long v = 0;
        int r;

        r = audit_read_text(a, text, sizeof(text), "/proc/sys/vm/stat_interval");
        if (r == 0) {
                r = audit_parse_long(text, &v);
        }
        if (r < 0) {
                sb_error(&seen, "/proc/sys/vm/stat_interval", r);
                return finding_add(a, "vmstat", -1, AUDIT_INFO, &seen,
                                   "How often the memory counters of each CPU are folded is "
                                   "unknown.",
                                   &fix);
        }
        sb_printf(&seen, "vm.stat_interval=%ld", v);
        if (v >= AUDIT_VMSTAT_INTERVAL_S) {
                return finding_add(a, "vmstat", -1, AUDIT_OK, &seen,
                                   "The per-CPU memory counters are folded rarely enough.", &fix);
        }
        snprintf(value, sizeof(value), "%d", AUDIT_VMSTAT_INTERVAL_S);
        sysctl_fix(a, "vmstat", "vm.stat_interval", value, &fix);
        return finding_add(a, "vmstat", -1, AUDIT_INFO, &seen,
                           "Every vm.stat_interval seconds, each CPU whose memory counters "
                           "changed runs vmstat_update from a kworker to fold them; a longer "
                           "interval does it less often, at the cost of /proc/vmstat lagging "
                           "that long.",
                           &fix);
}

static Audit *audit_free(Audit *a)
{
        if (a) {
                free(a->irqs);
                free(a->kthreads);
                json_decref(a->findings);
                free(a);
        }
        return NULL;
}

void audit_freep(Audit **a)
{
        *a = audit_free(*a);
}

int audit_new(const char *root, const cpu_set_t *cpus, const AuditOptions *opt, Audit **ret)
{
        __attribute__((cleanup(audit_freep))) Audit *a = NULL;
        size_t len;
        int r;

        if (!cpus || CPU_COUNT(cpus) == 0 || !ret) {
                return -EINVAL;
        }
        a = calloc(1, sizeof(*a));
        if (!a) {
                return -ENOMEM;
        }
        if (!root) {
                root = "";
        }
        len = strlen(root);
        while (len > 0 && root[len - 1] == '/') {
                len--; /* "/" and "" both mean the real system */
        }
        if (len >= sizeof(a->root) - 256) {
                return -ENAMETOOLONG;
        }
        memcpy(a->root, root, len);
        a->root[len] = '\0';
        if (opt) {
                a->opt = *opt;
        } else {
                audit_options_init(&a->opt);
        }
        a->cpus = *cpus;
        r = audit_load(a);
        if (r < 0) {
                return r;
        }
        *ret = a;
        a = NULL;
        return 0;
}

typedef int (*CpuCheck)(Audit *a, int cpu);
typedef int (*GlobalCheck)(Audit *a);

int audit_findings(Audit *a, json_t **ret)
{
        static const CpuCheck cpu_checks[] = {
                check_isolcpus,     check_nohz_full, check_rcu_nocbs,
                check_irq_affinity, check_workqueue, check_kthreads,
                check_smt_sibling,  check_governor,  check_cstates,
        };
        static const GlobalCheck global_checks[] = {
                check_rt_throttling,
                check_clocksource,
                check_timer_migration,
                check_vmstat,
        };
        json_t *report;
        int r;

        json_decref(a->findings);
        a->findings = json_array();
        if (!a->findings) {
                return -ENOMEM;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, &a->cpus)) {
                        continue;
                }
                for (size_t i = 0; i < ELEMENTSOF(cpu_checks); i++) {
                        r = cpu_checks[i](a, cpu);
                        if (r < 0) {
                                return r;
                        }
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(global_checks); i++) {
                r = global_checks[i](a);
                if (r < 0) {
                        return r;
                }
        }
        report = json_pack("{s:O}", "findings", a->findings);
        if (!report) {
                return -ENOMEM;
        }
        *ret = report;
        return 0;
}

int audit_run(const char *root, const cpu_set_t *cpus, const AuditOptions *opt, json_t **ret)
{
        __attribute__((cleanup(audit_freep))) Audit *a = NULL;
        int r;

        if (!ret) {
                return -EINVAL;
        }
        r = audit_new(root, cpus, opt, &a);
        if (r < 0) {
                return r;
        }
        return audit_findings(a, ret);
}

int audit_housekeeping(const Audit *a, cpu_set_t *ret)
{
        if (!a->housekeeping_known) {
                return -ENODATA;
        }
        *ret = a->housekeeping;
        return 0;
}

bool audit_is_virtual(const Audit *a)
{
        _cleanup_free_ char *cpuinfo = malloc(65536);
        const char *line, *flag;
        char text[64];
        size_t n;

        if (audit_read_text(a, text, sizeof(text), "/sys/hypervisor/type") == 0 && text[0]) {
                return true;
        }
        /* The first processor's flags are enough: every CPU of a guest has the flag. */
        if (!cpuinfo || audit_read_text(a, cpuinfo, 65536, "/proc/cpuinfo") < 0) {
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

int audit_worst_severity(json_t *findings)
{
        int worst = AUDIT_OK;
        size_t i;
        json_t *f;

        if (json_is_object(findings)) {
                findings = json_object_get(findings, "findings");
        }
        if (!json_is_array(findings)) {
                return -EINVAL;
        }
        json_array_foreach(findings, i, f)
        {
                int s = audit_severity_from_string(
                        json_string_value(json_object_get(f, "severity")));

                if (s < 0) {
                        return -EINVAL;
                }
                if (s > worst) {
                        worst = s;
                }
        }
        return worst;
}

static const char *const severity_colors[_AUDIT_SEVERITY_MAX] = {
        [AUDIT_OK] = "\033[32m",
        [AUDIT_INFO] = "\033[36m",
        [AUDIT_WARNING] = "\033[33m",
        [AUDIT_ERROR] = "\033[1;31m",
};

static void print_indented(FILE *f, const char *label, const char *text)
{
        if (!text || text[0] == '\0') {
                return;
        }
        fprintf(f, "        %-4s %s\n", label, text);
}

void audit_print(json_t *report, FILE *f, bool color)
{
        json_t *findings = json_is_object(report) ? json_object_get(report, "findings") : report;
        json_t *finding;
        size_t i;

        if (!f || !json_is_array(findings)) {
                return;
        }
        fprintf(f, "%-8s %-16s %-4s %s\n", "SEVERITY", "CHECK", "CPU", "SEEN");
        json_array_foreach(findings, i, finding)
        {
                const char *check = json_string_value(json_object_get(finding, "check"));
                const char *sev = json_string_value(json_object_get(finding, "severity"));
                const char *seen = json_string_value(json_object_get(finding, "seen"));
                json_t *cpu = json_object_get(finding, "cpu");
                int s = audit_severity_from_string(sev);
                char cpu_text[24] = "-";

                if (!check || s < 0) {
                        continue;
                }
                if (json_is_integer(cpu)) {
                        snprintf(cpu_text, sizeof(cpu_text), "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(cpu));
                }
                if (color) {
                        fprintf(f, "%s%-8s\033[0m", severity_colors[s], sev);
                } else {
                        fprintf(f, "%-8s", sev);
                }
                fprintf(f, " %-16s %-4s %s\n", check, cpu_text, seen ? seen : "");
                if (s != AUDIT_OK) {
                        print_indented(f,
                                       "why:", json_string_value(json_object_get(finding, "why")));
                        print_indented(f,
                                       "fix:", json_string_value(json_object_get(finding, "fix")));
                }
        }
}

#include "audit.h"

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
#include "isolation.h"
#include "util.h"

/* Task flags from /proc/PID/stat (include/linux/sched.h); stable ABI for years. */
#define PF_KTHREAD 0x00200000u
#define PF_NO_SETAFFINITY 0x04000000u

/* isolcpus= flags. */
#define ISOL_DOMAIN (1u << 0)
#define ISOL_NOHZ (1u << 1)
#define ISOL_MANAGED_IRQ (1u << 2)

/* How many IRQs or kthreads are named in "seen" before "and N more". */
#define SEEN_NAMES_MAX 8

/* A growing string. Allocation failure is remembered and reported once, at the end. */
typedef struct StrBuf {
        char *s;
        size_t len;
        size_t cap;
        bool oom;
} StrBuf;

static void strbuf_done(StrBuf *sb)
{
        free(sb->s);
}
#define _cleanup_strbuf_ __attribute__((cleanup(strbuf_done)))

__attribute__((format(printf, 2, 3))) static void sb_printf(StrBuf *sb, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (sb->oom) {
                return;
        }
        va_start(ap, fmt);
        n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
                sb->oom = true;
                return;
        }
        if (sb->len + (size_t)n + 1 > sb->cap) {
                size_t cap = (sb->len + (size_t)n + 1) * 2;
                char *s = realloc(sb->s, cap);

                if (!s) {
                        sb->oom = true;
                        return;
                }
                sb->s = s;
                sb->cap = cap;
        }
        va_start(ap, fmt);
        vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
        sb->len += (size_t)n;
}

static const char *sb_str(const StrBuf *sb)
{
        return sb->s ? sb->s : "";
}

/* Appends @set as a CPU list ("0,3,8-11"), or @empty when it holds no CPU. */
static void sb_cpulist(StrBuf *sb, const cpu_set_t *set, const char *empty)
{
        bool first = true;

        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                int last = cpu;

                if (!CPU_ISSET(cpu, set)) {
                        continue;
                }
                while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set)) {
                        last++;
                }
                if (last == cpu) {
                        sb_printf(sb, "%s%d", first ? "" : ",", cpu);
                } else {
                        sb_printf(sb, "%s%d-%d", first ? "" : ",", cpu, last);
                }
                first = false;
                cpu = last;
        }
        if (first) {
                sb_printf(sb, "%s", empty);
        }
}

/* Appends @set as a hex mask the way the kernel prints and parses cpumasks: 32-bit groups,
 * most significant first, separated by commas ("3", "1,00000000"). */
static void sb_cpumask(StrBuf *sb, const cpu_set_t *set)
{
        int last = cpulist_last(set);

        if (last < 0) {
                sb_printf(sb, "0");
                return;
        }
        for (int group = last / 32; group >= 0; group--) {
                uint32_t word = 0;

                for (int bit = 0; bit < 32; bit++) {
                        if (group * 32 + bit < CPU_SETSIZE && CPU_ISSET(group * 32 + bit, set)) {
                                word |= UINT32_C(1) << bit;
                        }
                }
                if (group == last / 32) {
                        sb_printf(sb, "%" PRIx32, word);
                } else {
                        sb_printf(sb, ",%08" PRIx32, word);
                }
        }
}

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

typedef struct CmdlineList {
        bool present;    /* the parameter is on the command line */
        bool valid;      /* and its CPU list could be parsed */
        char value[256]; /* as written (possibly truncated), for "seen" */
        cpu_set_t cpus;
} CmdlineList;

typedef struct Cmdline {
        int error; /* 0, or why /proc/cmdline could not be read */
        CmdlineList isolcpus;
        unsigned isolcpus_flags;
        CmdlineList nohz_full;
        CmdlineList rcu_nocbs;
        CmdlineList irqaffinity;
        bool rcu_nocb_poll;
} Cmdline;

typedef struct Irq {
        unsigned number;
        char name[96];
        cpu_set_t affinity;
        cpu_set_t effective;
        bool has_effective;
        bool unmovable; /* managed or per-CPU: the kernel refuses a new affinity */
} Irq;

typedef struct Kthread {
        int pid;
        char comm[64];
        unsigned flags;
        cpu_set_t allowed;
} Kthread;

typedef struct IrqName {
        unsigned number;
        char name[96];
} IrqName;

typedef struct Audit {
        char root[PATH_MAX];
        AuditOptions opt;
        cpu_set_t cpus;
        int nr_cpu_ids; /* from .../cpu/possible; -1 when unknown */

        Cmdline cmdline;
        int online_error;
        cpu_set_t online;
        int isolated_error;
        cpu_set_t isolated;
        /* The run-time isolation: cgroup v1 shields and v2 isolated partitions. */
        Isolation iso;
        cpu_set_t cpuset_isolated;
        int nohz_full_error; /* the running kernel's nohz_full mask */
        cpu_set_t nohz_full;
        int workqueue_error;
        char workqueue_text[256];
        cpu_set_t workqueue;

        bool housekeeping_known;
        cpu_set_t housekeeping;

        int irqs_error;
        Irq *irqs;
        size_t n_irqs;
        int default_affinity_error;
        cpu_set_t default_affinity;

        int kthreads_error;
        Kthread *kthreads;
        size_t n_kthreads;

        json_t *findings;
} Audit;

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

/* Reads the file @p into @buf (at most @size - 1 bytes, the rest is ignored), with trailing
 * white space removed and unprintable bytes replaced. Returns 0 or a negative errno. */
static int read_path(const char *p, char *buf, size_t size)
{
        size_t len = 0;
        int fd, r;

        buf[0] = '\0';
        /* O_NONBLOCK: a FIFO in a fixture tree must not hold the loop (Audit() runs there). */
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                return -errno;
        }
        while (len < size - 1) {
                ssize_t n = read(fd, buf + len, size - 1 - len);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        r = -errno;
                        close(fd);
                        return r;
                }
                if (n == 0) {
                        break;
                }
                len += (size_t)n;
        }
        close(fd);
        buf[len] = '\0';
        /* A NUL inside the text would cut it short for every string function after us. */
        for (size_t i = 0; i < len; i++) {
                if (buf[i] == '\0') {
                        buf[i] = ' ';
                }
        }
        while (len > 0 && isspace((unsigned char)buf[len - 1])) {
                buf[--len] = '\0';
        }
        sanitize(buf);
        return 0;
}

/* read_path() of root + the formatted path. */
__attribute__((format(printf, 4, 5))) static int read_text(const Audit *a, char *buf, size_t size,
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
        return read_path(p, buf, size);
}

/* Reads a CPU list file. "(null)" (an unallocated mask, e.g. nohz_full when it is not running)
 * and an empty file give an empty set. */
__attribute__((format(printf, 3, 4))) static int read_cpulist(const Audit *a, cpu_set_t *ret,
                                                              const char *fmt, ...)
{
        char p[PATH_MAX], text[8192];
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vpath(a, p, sizeof(p), fmt, ap);
        va_end(ap);
        if (r < 0) {
                return r;
        }
        r = read_path(p, text, sizeof(text));
        if (r < 0) {
                return r;
        }
        if (text[0] == '\0' || strcmp(text, "(null)") == 0) {
                CPU_ZERO(ret);
                return 0;
        }
        return cpulist_parse(text, ret);
}

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

        if (read_text(a, text, sizeof(text), "/sys/kernel/debug/irq/irqs/%u", irq) == 0) {
                return strstr(text, "IRQD_AFFINITY_MANAGED") || strstr(text, "IRQD_PER_CPU") ||
                       strstr(text, "IRQD_NO_BALANCING");
        }
        if (read_text(a, chip, sizeof(chip), "/sys/kernel/irq/%u/chip_name", irq) == 0 &&
            strncmp(chip, "GIC", 3) == 0 &&
            read_text(a, text, sizeof(text), "/sys/kernel/irq/%u/hwirq", irq) == 0 &&
            parse_long(text, &hwirq) == 0) {
                return hwirq >= 16 && hwirq < 32;
        }
        return false;
}

/* Long because each IRQ's affinity, effective affinity and action names are read and judged in one
 * pass over /proc/irq. */
static int scan_irqs(Audit *a)
{
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ IrqName *names = NULL;
        size_t n_names = 0, cap = 0;
        char p[PATH_MAX], text[256];
        struct dirent *de;
        int r;

        r = read_text(a, text, sizeof(text), "/proc/irq/default_smp_affinity");
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
                _cleanup_closedir_ DIR *sub = NULL;
                char name[sizeof(((Irq *)0)->name)] = "";
                unsigned long number;
                Irq irq = {0};

                if (!isdigits(de->d_name)) {
                        continue;
                }
                number = strtoul(de->d_name, NULL, 10);
                if (number > UINT_MAX) {
                        continue;
                }
                irq.number = (unsigned)number;
                if (read_cpulist(a, &irq.affinity, "/proc/irq/%u/smp_affinity_list", irq.number) <
                    0) {
                        continue;
                }
                irq.has_effective =
                        read_cpulist(a, &irq.effective, "/proc/irq/%u/effective_affinity_list",
                                     irq.number) == 0;

                /* The handlers' names are the subdirectories of /proc/irq/N. */
                if (path(a, p, sizeof(p), "/proc/irq/%u", irq.number) == 0) {
                        sub = opendir(p);
                }
                for (struct dirent *e; sub && (e = readdir(sub));) {
                        if (e->d_name[0] == '.' || !entry_is_dir(sub, e)) {
                                continue;
                        }
                        size_t len = strlen(name);
                        int n = snprintf(name + len, sizeof(name) - len, "%s%s", len ? "," : "",
                                         e->d_name);
                        if (n < 0 || (size_t)n >= sizeof(name) - len) {
                                break; /* enough to recognise the device */
                        }
                }
                for (size_t i = 0; name[0] == '\0' && i < n_names; i++) {
                        if (names[i].number == irq.number) {
                                snprintf(name, sizeof(name), "%s", names[i].name);
                        }
                }
                if (name[0] == '\0') {
                        continue; /* no handler: it cannot fire */
                }
                sanitize(name);
                snprintf(irq.name, sizeof(irq.name), "%s", name);
                irq.unmovable = irq_unmovable(a, irq.number);

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

        if (read_text(a, stat, sizeof(stat), "/proc/%d/stat", pid) < 0) {
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

        if (read_text(a, status, sizeof(status), "/proc/%d/status", pid) < 0) {
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

                if (!isdigits(de->d_name) || parse_long(de->d_name, &pid) < 0 || pid <= 0 ||
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

        if (read_cpulist(a, &possible, "/sys/devices/system/cpu/possible") == 0) {
                a->nr_cpu_ids = cpulist_last(&possible) + 1;
        } else {
                a->nr_cpu_ids = -1;
        }
        a->online_error = read_cpulist(a, &a->online, "/sys/devices/system/cpu/online");
        if (a->online_error < 0 && a->nr_cpu_ids > 0) {
                a->online = possible;
                a->online_error = 0;
        } else if (a->online_error == 0 && a->nr_cpu_ids < 0) {
                a->nr_cpu_ids = cpulist_last(&a->online) + 1;
        }
        a->isolated_error = read_cpulist(a, &a->isolated, "/sys/devices/system/cpu/isolated");
        (void)isolation_read(a->root, &a->iso);
        CPU_ZERO(&a->cpuset_isolated);
        isolation_runtime_cpus(&a->iso, &a->cpuset_isolated);
        a->nohz_full_error = read_cpulist(a, &a->nohz_full, "/sys/devices/system/cpu/nohz_full");

        r = read_text(a, a->workqueue_text, sizeof(a->workqueue_text),
                      "/sys/devices/virtual/workqueue/cpumask");
        a->workqueue_error = r < 0 ? r : cpumask_parse(a->workqueue_text, &a->workqueue);

        /* The command line is at most a few KiB (COMMAND_LINE_SIZE). */
        cmdline = malloc(65536);
        if (!cmdline) {
                return -ENOMEM;
        }
        a->cmdline.error = read_text(a, cmdline, 65536, "/proc/cmdline");
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

static bool domain_isolated(const Audit *a, int cpu)
{
        return (a->isolated_error == 0 && CPU_ISSET(cpu, &a->isolated)) ||
               CPU_ISSET(cpu, &a->cpuset_isolated) ||
               (list_has(&a->cmdline.isolcpus, cpu) && (a->cmdline.isolcpus_flags & ISOL_DOMAIN));
}

static void sb_isolcpus_fix(StrBuf *fix, const Audit *a)
{
        sb_printf(fix, "Boot with isolcpus=managed_irq,domain,");
        sb_union(fix, a, &a->cmdline.isolcpus);
        sb_printf(fix, " (replacing any isolcpus= there), or apply the tuned profile "
                       "cpu-partitioning with isolated_cores=");
        sb_union(fix, a, &a->cmdline.isolcpus);
        sb_printf(fix, ".");
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
        } else if (domain_isolated(a, cpu) && listed && (c->isolcpus_flags & ISOL_MANAGED_IRQ)) {
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
                sb_isolcpus_fix(&fix, a);
        } else if (domain_isolated(a, cpu)) {
                severity = AUDIT_INFO;
                why = "Isolated from scheduling, but without the managed_irq flag the kernel may "
                      "still route managed interrupts (NVMe, multi-queue NIC and virtio queues) "
                      "to this CPU.";
                sb_isolcpus_fix(&fix, a);
        } else if (listed) {
                severity = AUDIT_WARNING;
                why = "isolcpus= names this CPU but without the domain flag, so the scheduler "
                      "still balances tasks onto it; every such task preempts the workload.";
                sb_isolcpus_fix(&fix, a);
        } else {
                severity = AUDIT_WARNING;
                why = "Not isolated: the scheduler may place any task on this CPU and balance "
                      "load onto it, and each such task takes the CPU from the workload for "
                      "as long as it runs.";
                sb_isolcpus_fix(&fix, a);
        }
        return finding_add(a, "isolcpus", cpu, severity, &seen, why, &fix);
}

static int check_nohz_full(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        const Cmdline *c = &a->cmdline;
        bool requested = list_has(&c->nohz_full, cpu) ||
                         (list_has(&c->isolcpus, cpu) && (c->isolcpus_flags & ISOL_NOHZ));
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

        if (a->nohz_full_error == 0 && CPU_ISSET(cpu, &a->nohz_full)) {
                severity = AUDIT_OK;
                why = "The scheduler tick stops while a single task runs on this CPU (a 1 Hz "
                      "residual tick remains).";
        } else if (a->nohz_full_error == 0 && requested) {
                severity = AUDIT_WARNING;
                why = "nohz_full is requested for this CPU but the kernel did not enable it, so "
                      "the periodic tick still interrupts it every 1-4 ms.";
                sb_printf(&fix, "Check the boot log (journalctl -k | grep -i -e nohz -e "
                                "housekeeping) for why; keep at least one CPU outside "
                                "nohz_full= and boot a kernel with CONFIG_NO_HZ_FULL=y.");
        } else if (a->nohz_full_error == -ENOENT && c->error == 0) {
                severity = AUDIT_WARNING;
                why = "This kernel has no full dynticks support, so the periodic tick "
                      "interrupts the CPU every 1-4 ms for a few microseconds even when one "
                      "task runs alone.";
                sb_printf(&fix, "Boot a kernel built with CONFIG_NO_HZ_FULL=y (most "
                                "distributions' kernels are) with nohz_full=");
                sb_union(&fix, a, &c->nohz_full);
                sb_printf(&fix, ".");
        } else if (c->error == 0 && !requested) {
                severity = AUDIT_WARNING;
                why = "The periodic scheduler tick interrupts this CPU every 1-4 ms for a few "
                      "microseconds even when one task runs alone; nohz_full stops it.";
                sb_printf(&fix, "Boot with nohz_full=");
                sb_union(&fix, a, &c->nohz_full);
                sb_printf(&fix, " (the tuned profile cpu-partitioning sets it).");
        } else {
                severity = AUDIT_INFO;
                why = "Whether the tick is stopped on this CPU could not be established from "
                      "what is readable.";
        }
        return finding_add(a, "nohz_full", cpu, severity, &seen, why, &fix);
}

static int check_rcu_nocbs(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        const Cmdline *c = &a->cmdline;
        bool by_nohz_full, offloaded;
        AuditSeverity severity;
        const char *why;

        /* nohz_full CPUs are always RCU-offloaded (rcu_init_nohz()). */
        by_nohz_full = a->nohz_full_error == 0 ? CPU_ISSET(cpu, &a->nohz_full)
                                               : list_has(&c->nohz_full, cpu);
        offloaded = list_has(&c->rcu_nocbs, cpu) || by_nohz_full;

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

        if (offloaded && c->rcu_nocb_poll) {
                severity = AUDIT_OK;
                why = "RCU callbacks of this CPU run in rcuo kthreads elsewhere, and those "
                      "threads poll instead of being woken from this CPU.";
        } else if (offloaded) {
                severity = AUDIT_INFO;
                why = "RCU callbacks are offloaded, but this CPU still wakes its rcuo kthreads "
                      "when it queues callbacks; with rcu_nocb_poll they poll instead.";
                sb_printf(&fix, "Add rcu_nocb_poll to the kernel command line.");
        } else if (c->error == 0) {
                severity = AUDIT_WARNING;
                why = "RCU callbacks queued on this CPU are invoked on it in softirq context, "
                      "taking it away at unpredictable times for up to tens of microseconds.";
                sb_printf(&fix, "Boot with rcu_nocbs=");
                sb_union(&fix, a, &c->rcu_nocbs);
                sb_printf(&fix, " rcu_nocb_poll (nohz_full= implies rcu_nocbs=) and keep the "
                                "rcuo kthreads on housekeeping CPUs.");
        } else {
                severity = AUDIT_INFO;
                why = "Without the kernel command line, whether RCU callbacks are offloaded "
                      "from this CPU is unknown.";
        }
        return finding_add(a, "rcu_nocbs", cpu, severity, &seen, why, &fix);
}

typedef enum IrqHere {
        IRQ_ELSEWHERE,
        IRQ_MOVABLE,   /* allowed on the CPU, and user space may change that */
        IRQ_UNMOVABLE, /* managed or per-CPU, and delivered to the CPU now */
} IrqHere;

static IrqHere irq_here(const Irq *irq, int cpu)
{
        bool effective = irq->has_effective && CPU_ISSET(cpu, &irq->effective);

        if (irq->unmovable) {
                /* It cannot be moved: only where it is delivered now matters. */
                return (irq->has_effective ? effective : CPU_ISSET(cpu, &irq->affinity))
                               ? IRQ_UNMOVABLE
                               : IRQ_ELSEWHERE;
        }
        return CPU_ISSET(cpu, &irq->affinity) || effective ? IRQ_MOVABLE : IRQ_ELSEWHERE;
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

static int check_irq_affinity(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        size_t count[IRQ_UNMOVABLE + 1] = {0};
        AuditSeverity severity;
        const char *why;

        if (a->irqs_error < 0) {
                sb_error(&seen, "/proc/irq", a->irqs_error);
                return finding_add(a, "irq_affinity", cpu, AUDIT_INFO, &seen,
                                   "Which interrupts may be delivered to this CPU is unknown.",
                                   &fix);
        }
        for (size_t i = 0; i < a->n_irqs; i++) {
                count[irq_here(&a->irqs[i], cpu)]++;
        }

        if (count[IRQ_MOVABLE] > 0) {
                sb_printf(&seen, "%zu IRQ%s allowed on CPU %d: ", count[IRQ_MOVABLE],
                          count[IRQ_MOVABLE] == 1 ? "" : "s", cpu);
                sb_irqs(&seen, a, cpu, IRQ_MOVABLE, count[IRQ_MOVABLE]);
        } else {
                sb_printf(&seen, "%zu IRQs, none movable allowed on CPU %d", a->n_irqs, cpu);
        }
        if (count[IRQ_UNMOVABLE] > 0) {
                sb_printf(&seen, "; managed or per-CPU, delivered here: ");
                sb_irqs(&seen, a, cpu, IRQ_UNMOVABLE, count[IRQ_UNMOVABLE]);
        }
        bool default_here = a->default_affinity_error == 0 && CPU_ISSET(cpu, &a->default_affinity);
        if (default_here) {
                sb_printf(&seen, "; default_smp_affinity includes CPU %d", cpu);
        }
        if (a->cmdline.irqaffinity.present) {
                sb_printf(&seen, "; irqaffinity=%s", a->cmdline.irqaffinity.value);
        }

        if (count[IRQ_MOVABLE] > 0) {
                severity = AUDIT_WARNING;
                why = "Each interrupt delivered to this CPU runs its handler there (and often "
                      "softirq work after it), for microseconds to milliseconds.";
                sb_printf(&fix, "for i in");
                for (size_t i = 0; i < a->n_irqs; i++) {
                        if (irq_here(&a->irqs[i], cpu) == IRQ_MOVABLE) {
                                sb_printf(&fix, " %u", a->irqs[i].number);
                        }
                }
                sb_printf(&fix, "; do echo ");
                sb_housekeeping(&fix, a);
                sb_printf(&fix, " > /proc/irq/$i/smp_affinity_list; done. Boot with irqaffinity=");
                sb_housekeeping(&fix, a);
                sb_printf(&fix, " so new interrupts start there, and stop irqbalance or set "
                                "IRQBALANCE_BANNED_CPULIST=");
                sb_union(&fix, a, NULL);
                sb_printf(&fix, " in its configuration. Managed interrupts refuse the write "
                                "(EIO): for them use isolcpus=managed_irq.");
        } else if (count[IRQ_UNMOVABLE] > 0) {
                severity = AUDIT_INFO;
                why = "Managed or per-CPU interrupts are delivered to this CPU; the kernel does "
                      "not let user space move them.";
                sb_printf(&fix, "Boot with isolcpus=managed_irq,domain,");
                sb_union(&fix, a, &a->cmdline.isolcpus);
                sb_printf(&fix, " so managed interrupts whose mask also holds a housekeeping "
                                "CPU are delivered there; otherwise keep the devices behind "
                                "them idle from this CPU.");
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
                sb_printf(&fix, "echo ");
                sb_housekeeping_mask(&fix, a);
                sb_printf(&fix, " > /sys/devices/virtual/workqueue/cpumask (at boot, "
                                "isolcpus=domain and nohz_full= remove CPUs from it on recent "
                                "kernels).");
        } else {
                severity = AUDIT_OK;
                why = "Unbound workqueue items are kept off this CPU.";
        }
        return finding_add(a, "workqueue", cpu, severity, &seen, why, &fix);
}

typedef enum KthreadKind {
        KTHREAD_ELSEWHERE, /* not allowed on the CPU */
        KTHREAD_PER_CPU,   /* bound to just this CPU: expected, and cannot be moved */
        KTHREAD_FOLLOWER,  /* follows a mask set elsewhere: workqueue cpumask or IRQ affinity */
        KTHREAD_MOVABLE,   /* could be moved with sched_setaffinity() */
} KthreadKind;

static KthreadKind kthread_kind(const Kthread *k, int cpu)
{
        if (!CPU_ISSET(cpu, &k->allowed)) {
                return KTHREAD_ELSEWHERE;
        }
        if (k->flags & PF_NO_SETAFFINITY) {
                return CPU_COUNT(&k->allowed) == 1 ? KTHREAD_PER_CPU : KTHREAD_FOLLOWER;
        }
        /* Threaded IRQ handlers take the affinity of their interrupt. */
        if (strncmp(k->comm, "irq/", 4) == 0) {
                return KTHREAD_FOLLOWER;
        }
        return KTHREAD_MOVABLE;
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
                sb_printf(&fix, "for p in");
                for (size_t i = 0; i < a->n_kthreads; i++) {
                        if (kthread_kind(&a->kthreads[i], cpu) == KTHREAD_MOVABLE) {
                                sb_printf(&fix, " %d", a->kthreads[i].pid);
                        }
                }
                sb_printf(&fix, "; do taskset -pc ");
                sb_housekeeping(&fix, a);
                sb_printf(&fix, " $p; done (moving kthreadd, PID 2, makes new kthreads inherit "
                                "it). At boot, isolcpus=domain,");
                sb_union(&fix, a, &a->cmdline.isolcpus);
                sb_printf(&fix, " nohz_full=");
                sb_union(&fix, a, &a->cmdline.nohz_full);
                sb_printf(&fix, " keeps kernel threads on housekeeping CPUs.");
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

        r = read_cpulist(a, &siblings,
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
                } else if (!domain_isolated(a, s)) {
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
        if (read_text(a, control, sizeof(control), "/sys/devices/system/cpu/smt/control") == 0) {
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

        r = read_text(a, governor, sizeof(governor),
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
        if (read_text(a, driver, sizeof(driver),
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

/* Long because it walks every C-state of every probed CPU and words each finding where it is found
 */
static int check_cstates(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        _cleanup_closedir_ DIR *dir = NULL;
        _cleanup_free_ CState *states = NULL;
        size_t n = 0, deep = 0;
        char driver[64], p[PATH_MAX], text[64];
        long bound = (long)a->opt.cstate_latency_max_us;
        struct dirent *de;
        int r;

        if (read_text(a, driver, sizeof(driver), "/sys/devices/system/cpu/cpuidle/current_driver") <
                    0 ||
            driver[0] == '\0') {
                snprintf(driver, sizeof(driver), "unknown");
        }
        sb_printf(&seen, "idle driver %s", driver);

        r = path(a, p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpuidle", cpu);
        if (r == 0) {
                dir = opendir(p);
                r = dir ? 0 : -errno;
        }
        if (r < 0) {
                sb_printf(&seen, "; ");
                sb_error(&seen, "cpuidle states", r);
                return finding_add(a, "cstates", cpu, AUDIT_INFO, &seen,
                                   "No cpuidle states for this CPU: the kernel idles it with "
                                   "its default idle routine, whose exit latency is unknown.",
                                   &fix);
        }
        while ((de = readdir(dir))) {
                CState s = {0};
                long v;

                if (strncmp(de->d_name, "state", 5) != 0 || !isdigits(de->d_name + 5) ||
                    parse_long(de->d_name + 5, &s.index) < 0) {
                        continue;
                }
                if (read_text(a, s.name, sizeof(s.name),
                              "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/name", cpu,
                              s.index) < 0 ||
                    read_text(a, text, sizeof(text),
                              "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/latency", cpu,
                              s.index) < 0 ||
                    parse_long(text, &s.latency_us) < 0) {
                        continue;
                }
                /* "disable" appeared in 3.4; without it every state is enabled. */
                if (read_text(a, text, sizeof(text),
                              "/sys/devices/system/cpu/cpu%d/cpuidle/state%ld/disable", cpu,
                              s.index) == 0 &&
                    parse_long(text, &v) == 0) {
                        s.disabled = v != 0;
                }
                CState *grown = realloc(states, (n + 1) * sizeof(*states));
                if (!grown) {
                        return -ENOMEM;
                }
                states = grown;
                states[n++] = s;
                if (!s.disabled && s.latency_us > bound) {
                        deep++;
                }
        }
        if (n == 0) {
                sb_printf(&seen, "; no cpuidle states");
                return finding_add(a, "cstates", cpu, AUDIT_INFO, &seen,
                                   "No cpuidle states for this CPU: the kernel idles it with "
                                   "its default idle routine, whose exit latency is unknown.",
                                   &fix);
        }
        qsort(states, n, sizeof(*states), cstate_compare);

        if (deep > 0) {
                bool first = true;

                sb_printf(&seen, "; enabled with exit latency above %ld us: ", bound);
                for (size_t i = 0; i < n; i++) {
                        if (!states[i].disabled && states[i].latency_us > bound) {
                                sb_printf(&seen, "%s%s (%ld us)", first ? "" : ", ", states[i].name,
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
                return finding_add(a, "cstates", cpu, AUDIT_WARNING, &seen,
                                   "Waking from a deep C-state costs its exit latency: whenever "
                                   "the workload on this CPU blocks and is woken, it loses that "
                                   "time, and deep states also cool the caches.",
                                   &fix);
        }
        bool first = true;
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

static int check_rt_throttling(Audit *a)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        char text[64];
        long runtime = 0, period = 1000000;
        AuditSeverity severity;
        int r;

        r = read_text(a, text, sizeof(text), "/proc/sys/kernel/sched_rt_runtime_us");
        if (r == 0) {
                r = parse_long(text, &runtime);
        }
        if (r < 0) {
                sb_error(&seen, "/proc/sys/kernel/sched_rt_runtime_us", r);
                return finding_add(a, "rt_throttling", -1, AUDIT_INFO, &seen,
                                   "Whether real-time tasks are throttled is unknown.", &fix);
        }
        if (read_text(a, text, sizeof(text), "/proc/sys/kernel/sched_rt_period_us") < 0 ||
            parse_long(text, &period) < 0 || period <= 0) {
                period = 1000000;
        }
        sb_printf(&seen, "sched_rt_runtime_us=%ld", runtime);
        if (runtime < 0) {
                return finding_add(a, "rt_throttling", -1, AUDIT_OK, &seen,
                                   "Real-time tasks are not throttled.", &fix);
        }
        sb_printf(&seen, " of sched_rt_period_us=%ld", period);
        severity = a->opt.probe_priority > 0 ? AUDIT_ERROR : AUDIT_WARNING;
        sb_printf(&fix, "sysctl -w kernel.sched_rt_runtime_us=-1 (and persist it in "
                        "/etc/sysctl.d/).");
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

        r = read_text(a, current, sizeof(current),
                      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
        if (r < 0) {
                sb_error(&seen, "current_clocksource", r);
                return finding_add(a, "clocksource", -1, AUDIT_INFO, &seen,
                                   "The kernel's clocksource is unknown.", &fix);
        }
        sb_printf(&seen, "clocksource %s", current);
        if (read_text(a, available, sizeof(available),
                      "/sys/devices/system/clocksource/clocksource0/available_clocksource") == 0) {
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

        r = read_text(a, text, sizeof(text), "/proc/sys/kernel/timer_migration");
        if (r == 0) {
                r = parse_long(text, &v);
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
        sb_printf(&fix, "sysctl -w kernel.timer_migration=0 (and persist it in /etc/sysctl.d/).");
        return finding_add(a, "timer_migration", -1, AUDIT_INFO, &seen,
                           "Timers may be moved between CPUs, so timer expiry work can land on "
                           "a CPU that did not arm it; real-time setups usually turn this off.",
                           &fix);
}

static void audit_free(Audit *a)
{
        if (!a) {
                return;
        }
        free(a->irqs);
        free(a->kthreads);
        json_decref(a->findings);
        free(a);
}

static inline void audit_freep(Audit **a)
{
        audit_free(*a);
}

typedef int (*CpuCheck)(Audit *a, int cpu);
typedef int (*GlobalCheck)(Audit *a);

int audit_run(const char *root, const cpu_set_t *cpus, const AuditOptions *opt, json_t **ret)
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
        };
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
        a->findings = json_array();
        if (!a->findings) {
                return -ENOMEM;
        }

        r = audit_load(a);
        if (r < 0) {
                return r;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, cpus)) {
                        continue;
                }
                for (size_t i = 0; i < sizeof(cpu_checks) / sizeof(cpu_checks[0]); i++) {
                        r = cpu_checks[i](a, cpu);
                        if (r < 0) {
                                return r;
                        }
                }
        }
        for (size_t i = 0; i < sizeof(global_checks) / sizeof(global_checks[0]); i++) {
                r = global_checks[i](a);
                if (r < 0) {
                        return r;
                }
        }

        json_t *report = json_pack("{s:O}", "findings", a->findings);
        if (!report) {
                return -ENOMEM;
        }
        *ret = report;
        return 0;
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

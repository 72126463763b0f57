#include "audit.h"
#include "audit-internal.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
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

/* The housekeeping CPUs: online, neither probed nor isolated in any way. If that leaves none,
 * at least not probed. */
static void find_housekeeping(Audit *a)
{
        cpu_set_t taken = a->cpus;

        if (a->online_error < 0) {
                return;
        }
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

/* Takes in what the per-CPU checks share from the facts. Only allocation failures are
 * errors. */
static int audit_load(Audit *a)
{
        const AuditFacts *f = a->facts;
        _cleanup_free_ char *cmdline = NULL;

        a->nr_cpu_ids = f->possible_error == 0 ? cpulist_last(&f->possible) + 1 : -1;
        a->online_error = f->online_error;
        a->online = f->online;
        if (a->online_error < 0 && a->nr_cpu_ids > 0) {
                a->online = f->possible;
                a->online_error = 0;
        } else if (a->online_error == 0 && a->nr_cpu_ids < 0) {
                a->nr_cpu_ids = cpulist_last(&a->online) + 1;
        }
        a->isolated_error = f->isolated_error;
        a->isolated = f->isolated;
        a->cpuset_isolated = f->cpuset_isolated;
        a->nohz_full_error = f->nohz_full_error;
        a->nohz_full = f->nohz_full;
        a->workqueue_error = f->workqueue_error < 0 ? f->workqueue_error
                                                    : cpumask_parse(f->workqueue, &a->workqueue);
        a->default_affinity_error =
                f->default_affinity_error < 0
                        ? f->default_affinity_error
                        : cpumask_parse(f->default_affinity, &a->default_affinity);
        a->irqs_error = f->irqs_error;
        a->irqs = f->irqs;
        a->n_irqs = f->n_irqs;
        a->kthreads_error = f->kthreads_error;
        a->kthreads = f->kthreads;
        a->n_kthreads = f->n_kthreads;

        a->cmdline.error = f->cmdline_error;
        if (a->cmdline.error == 0) {
                /* cmdline_parse() cuts the text into its words. */
                cmdline = strdup(f->cmdline);
                if (!cmdline) {
                        return -ENOMEM;
                }
                cmdline_parse(a, &a->cmdline, cmdline);
        }
        find_housekeeping(a);
        return 0;
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
void audit_fix_irqs(const Audit *a, const AuditIrq *const *irqs, size_t n, Fix *f)
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
                          a->facts->workqueue);
        }
        sb_printf(&f->persist, "At boot, isolcpus=domain and nohz_full= remove CPUs from it on "
                               "recent kernels; or write it at each boot with the tmpfiles.d "
                               "line: w /sys/devices/virtual/workqueue/cpumask - - - - ");
        sb_housekeeping_mask(&f->persist, a);
}

/* Moves the @n kernel threads @k (movable ones) to the housekeeping CPUs. */
void audit_fix_kthreads(const Audit *a, const AuditKthread *const *k, size_t n, Fix *f)
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

/* The value of sysctl @key as the facts hold it; "" when it was not read. */
static const char *sysctl_now(const Audit *a, const char *key)
{
        const AuditFacts *f = a->facts;
        const struct {
                const char *key;
                const AuditSysctl *sysctl;
        } known[] = {
                {"kernel.timer_migration", &f->timer_migration},
                {"kernel.sched_rt_runtime_us", &f->rt_runtime},
                {"vm.stat_interval", &f->stat_interval},
                {"kernel.watchdog_cpumask", &f->watchdog_cpumask},
        };

        for (size_t i = 0; i < ELEMENTSOF(known); i++) {
                if (strcmp(key, known[i].key) == 0 && known[i].sysctl->error == 0) {
                        return known[i].sysctl->text;
                }
        }
        return "";
}

/* The sysctl @key (e.g. "kernel.timer_migration") set to @value, now and at every boot. */
void audit_fix_sysctl(const Audit *a, const char *check, const char *key, const char *value, Fix *f)
{
        const char *now = sysctl_now(a, key);

        f->check = check;
        f->when = FIX_NOW;
        sb_printf(&f->command, "sysctl -w %s=%s", key, value);
        sb_printf(&f->persist,
                  "Put the line \"%s = %s\" in a file of /etc/sysctl.d/ (e.g. "
                  "/etc/sysctl.d/90-jitterd.conf) to keep it.",
                  key, value);
        if (now[0]) {
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
        if (a->facts->cpuset_v1_error == 0) {
                sb_sentence(&f->note, "To move every task off at once: cset shield --cpu ");
                sb_union(&f->note, a, NULL);
                sb_printf(&f->note, " --kthread on (cgroup v1 cpusets; cset proc --move moves "
                                    "single tasks into its sets).");
        }
}

/* Appends each cpuset that isolates CPUs, saying which kind it is. */
static void sb_cpusets(StrBuf *sb, const AuditFacts *facts)
{
        for (size_t i = 0; i < facts->n_cpusets; i++) {
                const AuditCpuset *s = &facts->cpusets[i];

                if (!s->v2) {
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
        bool shielded, partitioned;
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
        sb_cpusets(&seen, a->facts);
        shielded = CPU_ISSET(cpu, &a->facts->shielded_v1);
        partitioned = CPU_ISSET(cpu, &a->facts->partitioned_v2);

        if (c->error < 0 && a->isolated_error < 0 && a->facts->cpuset_v1_error < 0 &&
            a->facts->cpuset_v2_error < 0) {
                severity = AUDIT_INFO;
                why = "Neither the kernel command line nor /sys/devices/system/cpu/isolated "
                      "could be read, so whether this CPU is isolated is unknown.";
        } else if (audit_domain_isolated(a, cpu) && listed &&
                   (c->isolcpus_flags & ISOL_MANAGED_IRQ)) {
                severity = AUDIT_OK;
                why = "The scheduler neither places nor balances tasks onto this CPU, and "
                      "managed interrupts avoid it.";
        } else if (!listed && (shielded || partitioned)) {
                severity = AUDIT_INFO;
                why = shielded ? "Isolated at run time by a cgroup v1 cpuset shield: no scheduling "
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
                const AuditIrq *irq = &a->irqs[i];

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
        size_t n;
        _cleanup_free_ const AuditIrq **irqs = movable_irqs(a, cpu, &n);
        _cleanup_fix_ Fix f = {0};

        if (!irqs) {
                return -ENOMEM;
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
        sb_printf(&seen, "workqueue cpumask %s (CPUs ", a->facts->workqueue);
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
        _cleanup_free_ const AuditKthread **k = calloc(a->n_kthreads, sizeof(*k));
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
                const AuditKthread *k = &a->kthreads[i];

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

/* The facts of probed CPU @cpu. */
static const AuditCpu *cpu_facts(const Audit *a, int cpu)
{
        for (size_t i = 0; i < a->facts->n_cpu; i++) {
                if (a->facts->cpu[i].cpu == cpu) {
                        return &a->facts->cpu[i];
                }
        }
        assert(false); /* the facts hold every probed CPU */
        return NULL;
}

static int check_smt_sibling(Audit *a, int cpu)
{
        _cleanup_strbuf_ StrBuf seen = {0}, fix = {0};
        const AuditCpu *facts = cpu_facts(a, cpu);
        cpu_set_t siblings = facts->siblings, busy, probed;
        AuditSeverity severity;
        const char *why;
        int r = facts->siblings_error;

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
        if (a->facts->smt_control_error == 0) {
                sb_printf(&seen, "; SMT control: %s", a->facts->smt_control);
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
        const AuditCpu *facts = cpu_facts(a, cpu);
        const char *governor = facts->governor;
        int r = facts->governor_error;

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
        if (facts->driver_error == 0) {
                sb_printf(&seen, ", driver %s", facts->driver);
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

/* The finding for the enabled C-states of @cpu whose exit latency is above @bound, with the
 * commands that disable them or the boot arguments that keep them off under @driver. */
static int cstates_too_deep(Audit *a, int cpu, const char *driver, const AuditCState *states,
                            size_t n, long bound, StrBuf *seen)
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
        const AuditCpu *facts = cpu_facts(a, cpu);
        const AuditCState *states = facts->cstates;
        long bound = (long)a->opt.cstate_latency_max_us;
        size_t n = facts->n_cstates;
        const char *driver = a->facts->idle_driver;
        bool first = true;
        int r = facts->cstates_error;

        if (a->facts->idle_driver_error < 0 || driver[0] == '\0') {
                driver = "unknown";
        }
        sb_printf(&seen, "idle driver %s", driver);

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
        const AuditFacts *f = a->facts;
        long runtime = f->rt_runtime.value, period = 1000000;
        AuditSeverity severity;
        int r = f->rt_runtime.value_error;

        if (r < 0) {
                sb_error(&seen, "/proc/sys/kernel/sched_rt_runtime_us", r);
                return finding_add(a, "rt_throttling", -1, AUDIT_INFO, &seen,
                                   "Whether real-time tasks are throttled is unknown.", &fix);
        }
        if (f->rt_period.value_error == 0 && f->rt_period.value > 0) {
                period = f->rt_period.value;
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
        const char *current = a->facts->clocksource;
        char available[sizeof(a->facts->clocksources)];
        bool can_switch = false;
        int r = a->facts->clocksource_error;

        if (r < 0) {
                sb_error(&seen, "current_clocksource", r);
                return finding_add(a, "clocksource", -1, AUDIT_INFO, &seen,
                                   "The kernel's clocksource is unknown.", &fix);
        }
        sb_printf(&seen, "clocksource %s", current);
        if (a->facts->clocksources_error == 0) {
                /* strtok_r() cuts it into the names. */
                memcpy(available, a->facts->clocksources, sizeof(available));
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
        long v = a->facts->timer_migration.value;
        int r = a->facts->timer_migration.value_error;

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
        char value[16];
        long v = a->facts->stat_interval.value;
        int r = a->facts->stat_interval.value_error;

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
                json_decref(a->findings);
                free(a);
        }
        return NULL;
}

void audit_freep(Audit **a)
{
        *a = audit_free(*a);
}

int audit_new(const AuditFacts *facts, const AuditOptions *opt, Audit **ret)
{
        __attribute__((cleanup(audit_freep))) Audit *a = NULL;
        int r;

        if (!facts || CPU_COUNT(&facts->cpus) == 0 || !ret) {
                return -EINVAL;
        }
        a = calloc(1, sizeof(*a));
        if (!a) {
                return -ENOMEM;
        }
        a->facts = facts;
        if (opt) {
                a->opt = *opt;
        } else {
                audit_options_init(&a->opt);
        }
        a->cpus = facts->cpus;
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

int audit_run(const AuditFacts *facts, const AuditOptions *opt, json_t **ret)
{
        __attribute__((cleanup(audit_freep))) Audit *a = NULL;
        int r;

        if (!ret) {
                return -EINVAL;
        }
        r = audit_new(facts, opt, &a);
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
        return a->facts->is_virtual;
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

/* jitterctl audit: the tuning audit, from the daemon (its probed CPUs) or run here against this
 * machine or a copy of its /proc and /sys. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cpulist.h"
#include "host-audit.h"
#include "host.h"
#include "jitterctl.h"

/* What `audit` was asked: a local audit (of @root, or of /, on @cpus_text) or the daemon's. */
typedef struct AuditArgs {
        const char *root, *cpus_text;
        bool local, have_priority;
        AuditOptions opt;
} AuditArgs;

static int audit_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        AuditArgs *a = userdata;
        unsigned long long priority;

        (void)ctl;
        switch (c) {
        case 'r':
                a->root = optarg;
                a->local = true;
                break;
        case 'C':
                a->cpus_text = optarg;
                a->local = true;
                break;
        case 'P':
                if (ctl_parse_uint(optarg, 99, &priority) < 0) {
                        return ctl_usage_error(cmd, "invalid priority \"%s\" (0..99)", optarg);
                }
                a->opt.probe_priority = (unsigned)priority;
                a->have_priority = true;
                break;
        }
        return CTL_CONTINUE;
}

/* Runs the audit here, as @a says, into @ret. Returns CTL_CONTINUE, or the exit status after
 * saying why not. */
static int audit_local(const CtlCommand *cmd, const AuditArgs *a, json_t **ret)
{
        __attribute__((cleanup(host_audit_freep))) AuditFacts *facts = NULL;
        cpu_set_t set;
        int r;

        if (a->cpus_text) {
                if (cpulist_parse(a->cpus_text, &set) < 0 || CPU_COUNT(&set) == 0) {
                        return ctl_usage_error(cmd, "invalid CPU list \"%s\"", a->cpus_text);
                }
        } else {
                /* Without a list, every CPU the audited system has online. */
                r = host_read_cpulist(a->root, "/sys/devices/system/cpu/online", &set);
                if (r < 0 || CPU_COUNT(&set) == 0) {
                        return ctl_fail("cannot read the online CPUs below %s: %s "
                                        "(give --cpus LIST)",
                                        a->root ? a->root : "/", strerror(r < 0 ? -r : ENOENT));
                }
        }
        r = host_audit_gather(a->root, &set, 0, &facts);
        r = r < 0 ? r : audit_run(facts, &a->opt, ret);
        if (r < 0) {
                return ctl_fail("cannot run the audit: %s", strerror(-r));
        }
        return CTL_CONTINUE;
}

int cmd_audit(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"root", required_argument, NULL, 'r'},
                {"cpus", required_argument, NULL, 'C'},
                {"priority", required_argument, NULL, 'P'},
                {},
        };
        AuditArgs a = {0};
        const CtlOptions options = {
                .short_options = "r:C:P:",
                .long_options = own,
                .parse = audit_option,
                .userdata = &a,
        };
        json_t *report = NULL;
        int r, worst;

        audit_options_init(&a.opt);
        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (a.have_priority && !a.local) {
                /* The daemon audits at its probes' own priority: ignoring the option would
                 * answer a question that was not asked. */
                return ctl_usage_error(cmd, "--priority is for a local audit (with --root or "
                                            "--cpus); the daemon audits at its probes' priority");
        }
        if (a.local) {
                r = audit_local(cmd, &a, &report);
                if (r != CTL_CONTINUE) {
                        return r;
                }
        } else if (ctl_call(ctl, "Audit", NULL, &report) < 0) {
                return CTL_EXIT_FAILURE;
        }

        worst = audit_worst_severity(report);
        if (worst < 0) {
                json_decref(report);
                return ctl_fail("malformed audit report");
        }
        if (ctl->json) {
                r = ctl_print_json(report);
        } else {
                audit_print(report, stdout, ctl->color);
                r = CTL_EXIT_OK;
        }
        json_decref(report);
        if (r != CTL_EXIT_OK) {
                return r;
        }
        return worst > AUDIT_INFO ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

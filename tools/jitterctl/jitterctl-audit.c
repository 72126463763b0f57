/* jitterctl audit: the tuning audit, from the daemon (its probed CPUs) or run here against this
 * machine or a copy of its /proc and /sys. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cpulist.h"
#include "host.h"
#include "jitterctl.h"

/* Long because it parses the options of the local and the remote audit and prints the report. */
int cmd_audit(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                {"root", required_argument, NULL, 'r'},
                {"cpus", required_argument, NULL, 'C'},
                {"priority", required_argument, NULL, 'P'},
                CTL_COMMON_OPTIONS,
                {},
        };
        const char *root = NULL, *cpus_text = NULL;
        unsigned long long priority = 0;
        bool local = false, have_priority = false;
        json_t *report = NULL;
        AuditOptions opt;
        int c, r, worst;

        audit_options_init(&opt);
        while ((c = getopt_long(argc, argv, "r:C:P:h", options, NULL)) >= 0) {
                switch (c) {
                case 'r':
                        root = optarg;
                        local = true;
                        break;
                case 'C':
                        cpus_text = optarg;
                        local = true;
                        break;
                case 'P':
                        if (ctl_parse_uint(optarg, 99, &priority) < 0) {
                                return ctl_usage_error(cmd, "invalid priority \"%s\" (0..99)",
                                                       optarg);
                        }
                        opt.probe_priority = (unsigned)priority;
                        have_priority = true;
                        break;
                default:
                        r = ctl_parse_common(ctl, cmd, c);
                        if (r != CTL_CONTINUE) {
                                return r;
                        }
                }
        }
        if (optind < argc) {
                return ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
        }
        if (have_priority && !local) {
                /* The daemon audits at its probes' own priority: ignoring the option would
                 * answer a question that was not asked. */
                return ctl_usage_error(cmd, "--priority is for a local audit (with --root or "
                                            "--cpus); the daemon audits at its probes' priority");
        }
        if (local) {
                cpu_set_t set;

                if (cpus_text) {
                        if (cpulist_parse(cpus_text, &set) < 0 || CPU_COUNT(&set) == 0) {
                                return ctl_usage_error(cmd, "invalid CPU list \"%s\"", cpus_text);
                        }
                } else {
                        /* Without a list, every CPU the audited system has online. */
                        r = host_read_cpulist(root, "/sys/devices/system/cpu/online", &set);
                        if (r < 0 || CPU_COUNT(&set) == 0) {
                                return ctl_fail("cannot read the online CPUs below %s: %s "
                                                "(give --cpus LIST)",
                                                root ? root : "/", strerror(r < 0 ? -r : ENOENT));
                        }
                }
                r = audit_run(root, &set, &opt, &report);
                if (r < 0) {
                        return ctl_fail("cannot run the audit: %s", strerror(-r));
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

/* jitterctl: the query tool of jitterd. Global options, the command table and the dispatch to
 * the command; each command lives in jitterctl-NAME.c, what they share in jitterctl-common.c. */

#include "jitterctl.h"

#include <ctype.h>
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "duration.h"
#include "jitterctl-format.h"
#include "util.h"

static const CtlCommand commands[] = {
        {"status", cmd_status, "", "daemon version, uptime, counter and probes", NULL},
        {"stats", cmd_stats, "[--window W] [--cpu LIST] [--diffdiff]",
         "statistics per CPU, top causes and periods (computed here, niced)",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -c, --cpu LIST     only these CPUs (\"1\", \"2-5,7\")\n"
         "  -d, --diffdiff     show the difference of consecutive gaps instead of gaps\n"
         "  (the causes and periods: from GetWindow, on the daemon's housekeeping CPUs at\n"
         "  nice 10, or 19 where a probe shares them)\n"},
        {"hist", cmd_hist, "CPU [--window W] [--diffdiff]",
         "histogram of one CPU as a log-scale bar chart",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -d, --diffdiff     the histogram of the difference of consecutive gaps\n"},
        {"events", cmd_events, "[--cpu LIST] [--since DUR] [--min DUR] [--limit N] [--records]",
         "recorded interruptions, newest last",
         "  -c, --cpu LIST     only these CPUs\n"
         "  -s, --since DUR    only those of the last DUR (e.g. 10m)\n"
         "  -m, --min DUR      only those at least DUR long (e.g. 50us)\n"
         "  -n, --limit N      at most the newest N (default 1000; with --records, N captures,\n"
         "                     default 10, at most 100)\n"
         "  -r, --records      the trace records kept around each interruption longer than\n"
         "                     [trace] keep_above, as a timeline from its start\n"},
        {"watch", cmd_watch, "[--cpu LIST] [--count N]",
         "live view, one refresh per interval (q or Ctrl-C quits)",
         "  -c, --cpu LIST     only these CPUs\n"
         "  -n, --count N      stop after N intervals\n"},
        {"report", cmd_report, "[--window W] [--cpu LIST]", "the classic DIFF/DIFFDIFF text report",
         "  -w, --window W     window: 10s, 1m, 5m, 1h, 24h or all (default)\n"
         "  -c, --cpu LIST     only these CPUs\n"},
        {"check", cmd_check, "--max DUR [--percentile P] [--window W] [--cpu LIST]",
         "exit 0 when every CPU is within a bound, 1 otherwise",
         "  -M, --max DUR      the bound (e.g. 20us)\n"
         "  -p, --percentile P check this percentile (e.g. 99.99) instead of the max gap\n"
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -c, --cpu LIST     only these CPUs\n"},
        {"snapshot", cmd_snapshot, "[--output FILE]",
         "everything the daemon knows, as one JSON document (for compare)",
         "  -o, --output FILE  write to FILE instead of standard output\n"},
        {"compare", cmd_compare, "BEFORE AFTER",
         "compare two snapshots, with a Mann-Whitney U test per CPU", NULL},
        {"plot", cmd_plot, "--svg FILE [--window W] [--cpu LIST] [--snapshot FILE]",
         "histogram and timeline as a self-contained SVG",
         "  -o, --svg FILE     the SVG file to write (\"-\": standard output)\n"
         "  -w, --window W     window: 10s, 1m, 5m, 1h, 24h or all (default)\n"
         "  -c, --cpu LIST     only these CPUs\n"
         "  -S, --snapshot F   plot a snapshot file instead of asking the daemon\n"},
        {"audit", cmd_audit, "[--root DIR] [--cpus LIST] [--priority N]",
         "tuning audit: exit 0 when nothing is above info",
         "  -r, --root DIR     audit locally, reading /proc and /sys below DIR\n"
         "  -C, --cpus LIST    audit locally, these CPUs (default with --root: all online)\n"
         "  -P, --priority N   local audit: the probes' SCHED_FIFO priority (0: SCHED_OTHER)\n"},
        {"explain", cmd_explain, "[--window W] [--cpu LIST]",
         "traced causes' share of time lost, least squares where it can tell (all: trace off)",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -c, --cpu LIST     only these CPUs\n"
         "  (the least-squares estimate: from GetWindow, on the daemon's housekeeping CPUs\n"
         "  at nice 10, or 19 where a probe shares them)\n"},
        {"doctor", cmd_doctor, "[--window W] [--cpus LIST] [--all]",
         "what took the CPUs, ranked, with the setting and the command that moves each away",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -c, --cpus, --cpu LIST\n"
         "                     only these CPUs\n"
         "  -a, --all          list every cause, not only those above 0.1 % of the time\n"},
        {"clocks", cmd_clocks, "[--cpu N] [--samples N]",
         "cost of every way to read time, measured locally",
         "  -c, --cpu N        measure on CPU N (default: the last allowed CPU)\n"
         "  -n, --samples N    trials per clock (default: as many as fit in about 1 s)\n"},
        {"export", cmd_export, "[--format prometheus]",
         "the Prometheus exposition the daemon writes as its textfile",
         "  -f, --format F     the format: prometheus (the default and only one)\n"},
        {"reload", cmd_reload, "",
         "read the configuration again; returns once every probe runs with it",
         "  (without --timeout it waits up to 90 s: the longest preheat and the restart)\n"},
        {"call", cmd_call, "METHOD [JSON]", "raw Varlink call, prints the reply as JSON",
         "  -m, --more         a streaming call: print every reply, one per line\n"},
};

#define N_COMMANDS ELEMENTSOF(commands)

static void usage(FILE *f)
{
        fprintf(f, "Usage: jitterctl [--socket PATH] [--json] [--timeout DUR] COMMAND [OPTIONS] "
                   "[ARGS]\n\n"
                   "Queries jitterd, which measures how often and for how long CPUs are taken\n"
                   "away from a task that wants them 100 %% of the time.\n\nCommands:\n");
        for (size_t i = 0; i < N_COMMANDS; i++) {
                fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
        }
        fprintf(f,
                "\nGlobal options (before or after the command):\n%s\n"
                "\"jitterctl COMMAND --help\" describes each command.\n",
                ctl_common_help);
}

static const CtlCommand *command_find(const char *name)
{
        for (size_t i = 0; i < N_COMMANDS; i++) {
                if (strcmp(commands[i].name, name) == 0) {
                        return &commands[i];
                }
        }
        return NULL;
}

/* Sets what the options may change to its default: ASCII output outside a UTF-8 locale, colour on
 * a terminal unless NO_COLOR says otherwise, and the socket of the daemon jitterctl's user runs
 * (its own under $XDG_RUNTIME_DIR, the system's for root). */
static void ctl_init(Ctl *ctl)
{
        static char default_socket[PATH_MAX];
        const char *runtime_dir = getenv("XDG_RUNTIME_DIR");
        const char *no_color;

        *ctl = (Ctl){.timeout_usec = CTL_TIMEOUT_USEC_DEFAULT};
        setlocale(LC_CTYPE, "");
        format_set_ascii(strcmp(nl_langinfo(CODESET), "UTF-8") != 0);
        /* NO_COLOR counts when it is set and not empty (no-color.org). */
        no_color = getenv("NO_COLOR");
        ctl->color = isatty(STDOUT_FILENO) && !(no_color && no_color[0]);
        if (geteuid() != 0 && runtime_dir && runtime_dir[0] == '/') {
                snprintf(default_socket, sizeof(default_socket), "%s/jitterd/io.jitterd",
                         runtime_dir);
                ctl->socket_path = default_socket;
        } else {
                ctl->socket_path = SYSTEM_SOCKET;
        }
}

/* Parses the global options, those before the command. Returns CTL_CONTINUE with optind at the
 * command, or the exit status after --help, --version or a wrong option. */
static int parse_global_options(Ctl *ctl, int argc, char **argv)
{
        static const struct option options[] = {
                CTL_COMMON_OPTIONS,
                {"version", no_argument, NULL, 'V'},
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "+hV", options, NULL)) >= 0) {
                switch (c) {
                case CTL_OPT_SOCKET:
                        ctl->socket_path = optarg;
                        break;
                case CTL_OPT_JSON:
                        ctl->json = true;
                        break;
                case CTL_OPT_NO_COLOR:
                        ctl->color = false;
                        break;
                case CTL_OPT_TIMEOUT:
                        if (ctl_parse_timeout(ctl, optarg) < 0) {
                                return CTL_EXIT_USAGE;
                        }
                        break;
                case 'h':
                        usage(stdout);
                        return CTL_EXIT_OK;
                case 'V':
                        printf("jitterctl %s\n", JITTERD_VERSION);
                        return CTL_EXIT_OK;
                default:
                        usage(stderr);
                        return CTL_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return CTL_EXIT_USAGE;
        }
        return CTL_CONTINUE;
}

int main(int argc, char **argv)
{
        Ctl ctl;
        const CtlCommand *cmd;
        char progname[64];
        int r;

        ctl_init(&ctl);
        r = parse_global_options(&ctl, argc, argv);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (strcmp(argv[optind], "help") == 0) {
                if (optind + 1 < argc && (cmd = command_find(argv[optind + 1]))) {
                        ctl_command_help(cmd);
                        return CTL_EXIT_OK;
                }
                usage(stdout);
                return CTL_EXIT_OK;
        }
        cmd = command_find(argv[optind]);
        if (!cmd) {
                fprintf(stderr, "jitterctl: unknown command \"%s\"\n\n", argv[optind]);
                usage(stderr);
                return CTL_EXIT_USAGE;
        }
        /* getopt's own messages then name the command: "jitterctl stats: unrecognized ...". */
        snprintf(progname, sizeof(progname), "jitterctl %s", cmd->name);
        argv[optind] = progname;
        argc -= optind;
        argv += optind;
        optind = 0;
        r = cmd->run(&ctl, cmd, argc, argv);
        varlink_client_free(ctl.client);
        if (fflush(stdout) != 0 && r == CTL_EXIT_OK) {
                return ctl_fail("cannot write to standard output: %s", strerror(errno));
        }
        return r;
}

/* jitterctl: the query tool of jitterd. Global options, the command table, the connection to
 * the daemon and the raw "call" command; the other commands live in jitterctl-*.c. */

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

static const CtlCommand commands[] = {
        {"status", cmd_status, "", "daemon version, uptime, counter and probes", NULL},
        {"stats", cmd_stats, "[--window W] [--cpu LIST] [--diffdiff]",
         "statistics per CPU, top causes and periods",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -c, --cpu LIST     only these CPUs (\"1\", \"2-5,7\")\n"
         "  -d, --diffdiff     show the difference of consecutive gaps instead of gaps\n"},
        {"hist", cmd_hist, "CPU [--window W] [--diffdiff]",
         "histogram of one CPU as a log-scale bar chart",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -d, --diffdiff     the histogram of the difference of consecutive gaps\n"},
        {"events", cmd_events, "[--cpu LIST] [--since DUR] [--min DUR] [--limit N]",
         "recorded interruptions, newest last",
         "  -c, --cpu LIST     only these CPUs\n"
         "  -s, --since DUR    only those of the last DUR (e.g. 10m)\n"
         "  -m, --min DUR      only those at least DUR long (e.g. 50us)\n"
         "  -n, --limit N      at most the newest N (default 1000)\n"},
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
        {"explain", jitterctl_explain, "[--window W] [--cpu LIST]",
         "share of the time lost per traced cause, next to the least-squares estimate",
         "  -w, --window W     window: 10s, 1m (default), 5m, 1h, 24h or all\n"
         "  -c, --cpu LIST     only these CPUs\n"},
        {"clocks", jitterctl_clocks, "[--cpu N] [--samples N]",
         "cost of every way to read time, measured locally",
         "  -c, --cpu N        measure on CPU N (default: the last allowed CPU)\n"
         "  -n, --samples N    trials per clock (default: as many as fit in about 1 s)\n"},
        {"export", jitterctl_export, "[--format prometheus]",
         "the Prometheus exposition the daemon writes as its textfile",
         "  -f, --format F     the format: prometheus (the default and only one)\n"},
        {"call", cmd_call, "METHOD [JSON]", "raw Varlink call, prints the reply as JSON",
         "  -m, --more         a streaming call: print every reply, one per line\n"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char common_help[] =
        "      --socket PATH  the daemon's socket (default: " SYSTEM_SOCKET " for root,\n"
        "                     else $XDG_RUNTIME_DIR/jitterd/io.jitterd)\n"
        "      --json         print JSON instead of text\n"
        "      --no-color     no colour even on a terminal (also: NO_COLOR set)\n"
        "      --timeout DUR  give up on a daemon that does not answer within DUR\n"
        "                     (default 10s; in a stream, for each reply)\n"
        "  -h, --help         this help\n";

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
                common_help);
}

static void command_usage(FILE *f, const CtlCommand *cmd)
{
        fprintf(f, "Usage: jitterctl %s%s%s\n", cmd->name, cmd->synopsis[0] ? " " : "",
                cmd->synopsis);
}

static void command_help(const CtlCommand *cmd)
{
        command_usage(stdout, cmd);
        printf("\n%c%s.\n\nOptions:\n%s%s", toupper((unsigned char)cmd->summary[0]),
               cmd->summary + 1, cmd->help ? cmd->help : "", common_help);
}

/* Parses a --timeout value: a positive duration ("500ms", "10s", "2m"; a bare number is in
 * seconds). Returns 0 or -EINVAL after saying why. */
static int parse_timeout(Ctl *ctl, const char *text)
{
        uint64_t ns;

        if (duration_parse(text, 1000000000ULL, &ns) < 0 || ns < 1000) {
                fprintf(stderr,
                        "jitterctl: invalid timeout \"%s\": a positive duration such as 500ms, "
                        "10s or 2m\n",
                        text);
                return -EINVAL;
        }
        ctl->timeout_usec = ns / 1000;
        if (ctl->client) {
                varlink_client_set_timeout(ctl->client, ctl->timeout_usec);
        }
        return 0;
}

int ctl_parse_common(Ctl *ctl, const CtlCommand *cmd, int c)
{
        switch (c) {
        case CTL_OPT_TIMEOUT:
                return parse_timeout(ctl, optarg) < 0 ? CTL_EXIT_USAGE : CTL_CONTINUE;
        case CTL_OPT_SOCKET:
                ctl->socket_path = optarg;
                return CTL_CONTINUE;
        case CTL_OPT_JSON:
                ctl->json = true;
                return CTL_CONTINUE;
        case CTL_OPT_NO_COLOR:
                ctl->color = false;
                return CTL_CONTINUE;
        case 'h':
                command_help(cmd);
                return CTL_EXIT_OK;
        default:
                command_usage(stderr, cmd);
                fprintf(stderr, "Try \"jitterctl %s --help\".\n", cmd->name);
                return CTL_EXIT_USAGE;
        }
}

int ctl_parse_option(Ctl *ctl, const CtlCommand *cmd, int c, const char **window, json_t **cpus)
{
        if (c == 'w' && window) {
                *window = optarg;
                return CTL_CONTINUE;
        }
        if (c == 'c' && cpus) {
                return ctl_parse_cpus(cmd, optarg, cpus) < 0 ? CTL_EXIT_USAGE : CTL_CONTINUE;
        }
        return ctl_parse_common(ctl, cmd, c);
}

int ctl_usage_error(const CtlCommand *cmd, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "jitterctl %s: ", cmd->name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        command_usage(stderr, cmd);
        return CTL_EXIT_USAGE;
}

int ctl_fail(const char *fmt, ...)
{
        va_list ap;

        fputs("jitterctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return CTL_EXIT_FAILURE;
}

const char *ctl_color(const Ctl *ctl, const char *escape)
{
        return ctl->color ? escape : "";
}

/* "10.0 s": the timeout, for messages. */
static char *timeout_text(const Ctl *ctl, char *buf, size_t size)
{
        return duration_format(buf, size, ctl->timeout_usec * 1000);
}

int ctl_connect(Ctl *ctl)
{
        char t[32];
        int r;

        if (ctl->client) {
                return 0;
        }
        r = varlink_client_connect_timeout(ctl->socket_path, ctl->timeout_usec, &ctl->client);
        if (r == -ETIMEDOUT) {
                fprintf(stderr,
                        "jitterctl: cannot connect to %s: nothing accepted the connection within "
                        "%s (the daemon is stuck or overloaded; --timeout DUR waits longer)\n",
                        ctl->socket_path, timeout_text(ctl, t, sizeof(t)));
        } else if (r < 0) {
                fprintf(stderr,
                        "jitterctl: cannot connect to %s: %s — is jitterd running? (systemctl "
                        "start jitterd.socket, or --socket PATH)\n",
                        ctl->socket_path, strerror(-r));
        }
        return r;
}

const char *ctl_call_strerror(const Ctl *ctl, int r, char *buf, size_t size)
{
        char t[32];

        switch (r) {
        case -ECONNRESET:
                return "jitterd closed the connection";
        case -ETIMEDOUT:
                snprintf(buf, size, "no reply from jitterd within %s (--timeout DUR waits longer)",
                         timeout_text(ctl, t, sizeof(t)));
                return buf;
        case -EBADMSG:
        case -EPROTO:
                return "the reply is not valid Varlink (is this socket jitterd's?)";
        case -EMSGSIZE:
                return "the reply is too large";
        default:
                return strerror(-r);
        }
}

int ctl_call_full(Ctl *ctl, const char *method, json_t *params, json_t **ret, char **ret_error,
                  json_t **ret_error_params, bool quiet_error)
{
        char full[256], msg[512], why[128];
        char *error = NULL;
        json_t *reply = NULL;
        int r;

        snprintf(full, sizeof(full), "%s%s", strchr(method, '.') ? "" : "io.jitterd.", method);
        r = ctl_connect(ctl);
        if (r < 0) {
                json_decref(params);
                return r;
        }
        r = varlink_client_call(ctl->client, full, params, &reply, &error);
        json_decref(params);
        if (r < 0) {
                fprintf(stderr, "jitterctl: %s failed: %s\n", full,
                        ctl_call_strerror(ctl, r, why, sizeof(why)));
                return r;
        }
        if (error) {
                if (!quiet_error) {
                        fprintf(stderr, "jitterctl: %s\n",
                                format_error(msg, sizeof(msg), error, reply));
                }
                if (ret_error) {
                        *ret_error = error;
                } else {
                        free(error);
                }
                if (ret_error_params) {
                        *ret_error_params = reply;
                } else {
                        json_decref(reply);
                }
                return -EREMOTEIO;
        }
        *ret = reply;
        return 0;
}

int ctl_call(Ctl *ctl, const char *method, json_t *params, json_t **ret)
{
        return ctl_call_full(ctl, method, params, ret, NULL, NULL, false);
}

int ctl_print_json(json_t *v)
{
        if (json_dumpf(v, stdout, JSON_INDENT(2)) < 0 || fputc('\n', stdout) == EOF ||
            fflush(stdout) != 0) {
                return ctl_fail("cannot write to standard output: %s", strerror(errno));
        }
        return CTL_EXIT_OK;
}

int ctl_parse_uint(const char *text, unsigned long long max, unsigned long long *ret)
{
        unsigned long long v;
        char *end;

        if (!text || text[0] < '0' || text[0] > '9') {
                return -EINVAL;
        }
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || *end != '\0' || v > max) {
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

int ctl_parse_cpus(const CtlCommand *cmd, const char *text, json_t **ret)
{
        cpu_set_t set;
        json_t *a;

        if (cpulist_parse(text, &set) < 0 || CPU_COUNT(&set) == 0) {
                ctl_usage_error(cmd, "invalid CPU list \"%s\" (e.g. 1, 2-5 or 0,3,8-11)", text);
                return -EINVAL;
        }
        a = json_array();
        if (!a) {
                ctl_fail("out of memory");
                return -ENOMEM;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (CPU_ISSET(cpu, &set) && json_array_append_new(a, json_integer(cpu)) < 0) {
                        json_decref(a);
                        ctl_fail("out of memory");
                        return -ENOMEM;
                }
        }
        json_decref(*ret);
        *ret = a;
        return 0;
}

static void print_error(const char *method, const char *error, json_t *params)
{
        char *text = json_is_object(params) && json_object_size(params) > 0
                             ? json_dumps(params, JSON_COMPACT)
                             : NULL;

        fprintf(stderr, "jitterctl: %s: %s%s%s\n", method, error, text ? " " : "",
                text ? text : "");
        free(text);
}

typedef struct CallStream {
        const char *method;
        bool failed;
} CallStream;

static int call_stream_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        CallStream *s = userdata;

        if (error_name) {
                print_error(s->method, error_name, params);
                s->failed = true;
                return 0;
        }
        /* One compact object per line, flushed, so that a pipe sees each reply as it comes. */
        if (json_dumpf(params, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF ||
            fflush(stdout) != 0) {
                fprintf(stderr, "jitterctl: cannot write to standard output: %s\n",
                        strerror(errno));
                return -EIO;
        }
        return 0;
}

int cmd_call(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option options[] = {
                {"more", no_argument, NULL, 'm'},
                CTL_COMMON_OPTIONS,
                {},
        };
        char full[256];
        json_t *params = NULL, *reply = NULL, *error_params = NULL;
        bool more = false;
        char *error = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "mh", options, NULL)) >= 0) {
                if (c == 'm') {
                        more = true;
                        continue;
                }
                r = ctl_parse_common(ctl, cmd, c);
                if (r != CTL_CONTINUE) {
                        return r;
                }
        }
        if (optind >= argc || argc - optind > 2) {
                return ctl_usage_error(cmd, "expected a method and at most one JSON object");
        }
        if (optind + 1 < argc) {
                json_error_t e;

                params = json_loads(argv[optind + 1], JSON_REJECT_DUPLICATES, &e);
                if (!params) {
                        return ctl_usage_error(cmd, "the parameters are not JSON: %s", e.text);
                }
                if (!json_is_object(params)) {
                        json_decref(params);
                        return ctl_usage_error(cmd, "the parameters must be a JSON object");
                }
        }
        snprintf(full, sizeof(full), "%s%s", strchr(argv[optind], '.') ? "" : "io.jitterd.",
                 argv[optind]);
        if (!more) {
                r = ctl_call_full(ctl, full, params, &reply, &error, &error_params, true);
                if (r == -EREMOTEIO) {
                        /* The raw interface prints the error as the daemon sent it. */
                        print_error(full, error, error_params);
                        free(error);
                        json_decref(error_params);
                        return CTL_EXIT_FAILURE;
                }
                if (r < 0) {
                        return CTL_EXIT_FAILURE;
                }
                r = ctl_print_json(reply);
                json_decref(reply);
                return r;
        }
        r = ctl_connect(ctl);
        if (r >= 0) {
                CallStream stream = {.method = full};

                char why[128];

                /* The timeout bounds the wait for each reply: a stream whose replies are further
                 * apart than that needs a longer --timeout. */
                r = varlink_client_call_more(ctl->client, full, params, call_stream_reply, &stream);
                if (r < 0 && r != -EREMOTEIO && r != -EIO) {
                        fprintf(stderr, "jitterctl: %s failed: %s\n", full,
                                ctl_call_strerror(ctl, r, why, sizeof(why)));
                }
                if (r >= 0 && stream.failed) {
                        r = -EREMOTEIO;
                }
        }
        json_decref(params);
        return r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
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

int main(int argc, char **argv)
{
        static const struct option options[] = {
                {"socket", required_argument, NULL, CTL_OPT_SOCKET},
                {"json", no_argument, NULL, CTL_OPT_JSON},
                {"no-color", no_argument, NULL, CTL_OPT_NO_COLOR},
                {"timeout", required_argument, NULL, CTL_OPT_TIMEOUT},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        static char default_socket[PATH_MAX];
        Ctl ctl = {.timeout_usec = CTL_TIMEOUT_USEC_DEFAULT};
        const CtlCommand *cmd;
        char progname[64];
        const char *runtime_dir = getenv("XDG_RUNTIME_DIR");
        const char *no_color;
        int c, r;

        setlocale(LC_CTYPE, "");
        format_set_ascii(strcmp(nl_langinfo(CODESET), "UTF-8") != 0);
        /* NO_COLOR counts when it is set and not empty (no-color.org). */
        no_color = getenv("NO_COLOR");
        ctl.color = isatty(STDOUT_FILENO) && !(no_color && no_color[0]);
        if (geteuid() != 0 && runtime_dir && runtime_dir[0] == '/') {
                snprintf(default_socket, sizeof(default_socket), "%s/jitterd/io.jitterd",
                         runtime_dir);
                ctl.socket_path = default_socket;
        } else {
                ctl.socket_path = SYSTEM_SOCKET;
        }

        while ((c = getopt_long(argc, argv, "+hV", options, NULL)) >= 0) {
                switch (c) {
                case CTL_OPT_SOCKET:
                        ctl.socket_path = optarg;
                        break;
                case CTL_OPT_JSON:
                        ctl.json = true;
                        break;
                case CTL_OPT_NO_COLOR:
                        ctl.color = false;
                        break;
                case CTL_OPT_TIMEOUT:
                        if (parse_timeout(&ctl, optarg) < 0) {
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
        if (strcmp(argv[optind], "help") == 0) {
                if (optind + 1 < argc && (cmd = command_find(argv[optind + 1]))) {
                        command_help(cmd);
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

/* What every jitterctl command shares: the common options and their help, usage errors, the
 * connection to the daemon, calls, and the parsers of CPU lists and numbers. */

#include "jitterctl.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "duration.h"
#include "util.h"
#include "jitterctl-format.h"

const char ctl_common_help[] =
        "      --socket PATH  the daemon's socket (default: " SYSTEM_SOCKET " for root,\n"
        "                     else $XDG_RUNTIME_DIR/jitterd/io.jitterd)\n"
        "      --json         print JSON instead of text\n"
        "      --no-color     no colour even on a terminal (also: NO_COLOR set)\n"
        "      --timeout DUR  give up on a daemon that does not answer within DUR\n"
        "                     (default 10s; in a stream, for each reply)\n"
        "  -h, --help         this help\n";

static void command_usage(FILE *f, const CtlCommand *cmd)
{
        fprintf(f, "Usage: jitterctl %s%s%s\n", cmd->name, cmd->synopsis[0] ? " " : "",
                cmd->synopsis);
}

void ctl_command_help(const CtlCommand *cmd)
{
        command_usage(stdout, cmd);
        printf("\n%c%s.\n\nOptions:\n%s%s", toupper((unsigned char)cmd->summary[0]),
               cmd->summary + 1, cmd->help ? cmd->help : "", ctl_common_help);
}

/* Parses a --timeout value: a positive duration ("500ms", "10s", "2m"; a bare number is in
 * seconds). Returns 0 or -EINVAL after saying why. */
int ctl_parse_timeout(Ctl *ctl, const char *text)
{
        uint64_t ns;

        if (duration_parse(text, NSEC_PER_SEC, &ns) < 0 || ns < 1000) {
                fprintf(stderr,
                        "jitterctl: invalid timeout \"%s\": a positive duration such as 500ms, "
                        "10s or 2m\n",
                        text);
                return -EINVAL;
        }
        ctl->timeout_usec = ns / 1000;
        ctl->timeout_set = true;
        if (ctl->client) {
                varlink_client_set_timeout(ctl->client, ctl->timeout_usec);
        }
        return 0;
}

/* Handles option @c (as getopt_long() returns it) if it is a common one: --socket, --json,
 * --no-color, --timeout (a bad value prints why and returns CTL_EXIT_USAGE), --help (prints the
 * command's help, returns CTL_EXIT_OK) or an unknown option (prints the usage to stderr, returns
 * CTL_EXIT_USAGE). Returns CTL_CONTINUE when the caller should go on parsing. */
static int parse_common(Ctl *ctl, const CtlCommand *cmd, int c)
{
        switch (c) {
        case CTL_OPT_TIMEOUT:
                return ctl_parse_timeout(ctl, optarg) < 0 ? CTL_EXIT_USAGE : CTL_CONTINUE;
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
                ctl_command_help(cmd);
                return CTL_EXIT_OK;
        default:
                command_usage(stderr, cmd);
                fprintf(stderr, "Try \"jitterctl %s --help\".\n", cmd->name);
                return CTL_EXIT_USAGE;
        }
}

static int parse_cpus(const CtlCommand *cmd, const char *text, json_t **ret);

/* Whether @c is one of the command's own options, which its parse function handles. */
static bool option_is_own(const CtlOptions *o, int c)
{
        if (c == '?' || c == ':') {
                return false;
        }
        if (c > 0 && c < CTL_OPT_SOCKET && strchr(o->short_options, c)) {
                return true;
        }
        for (const struct option *l = o->long_options; l && l->name; l++) {
                if (l->val == c) {
                        return true;
                }
        }
        return false;
}

/* Handles option @c: --window and --cpu where the command takes them, then the command's own
 * options, then the common ones. Returns CTL_CONTINUE or the exit status. */
static int parse_one(Ctl *ctl, const CtlCommand *cmd, const CtlOptions *o, int c)
{
        if (c == 'w' && o->window) {
                *o->window = optarg;
                return CTL_CONTINUE;
        }
        if (c == 'c' && o->cpus) {
                return parse_cpus(cmd, optarg, o->cpus) < 0 ? CTL_EXIT_USAGE : CTL_CONTINUE;
        }
        if (o->only_own || option_is_own(o, c)) {
                return o->parse(ctl, cmd, c, o->userdata);
        }
        return parse_common(ctl, cmd, c);
}

/* Appends the long options of @from (up to its {} end) to @to at *@n. */
static void options_append(struct option *to, size_t size, size_t *n, const struct option *from)
{
        for (; from && from->name; from++) {
                assert(*n + 1 < size);
                to[(*n)++] = *from;
        }
}

int ctl_parse_args(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv, const CtlOptions *o)
{
        static const struct option window_option[] = {
                {"window", required_argument, NULL, 'w'},
                {},
        };
        static const struct option cpu_option[] = {
                {"cpu", required_argument, NULL, 'c'},
                {},
        };
        static const struct option common_options[] = {
                CTL_COMMON_OPTIONS,
                {},
        };
        struct option options[32] = {0};
        char short_options[64];
        size_t n = 0;
        int c, r;

        /* --window and --cpu first, so that getopt lists an ambiguous abbreviation's
         * possibilities in the order of the help. */
        options_append(options, ELEMENTSOF(options), &n, o->window ? window_option : NULL);
        options_append(options, ELEMENTSOF(options), &n, o->cpus ? cpu_option : NULL);
        options_append(options, ELEMENTSOF(options), &n, o->long_options);
        options_append(options, ELEMENTSOF(options), &n, o->only_own ? NULL : common_options);
        snprintf(short_options, sizeof(short_options), "%s%s%s%s", o->short_options,
                 o->window ? "w:" : "", o->cpus ? "c:" : "",
                 o->only_own || strchr(o->short_options, 'h') ? "" : "h");

        while ((c = getopt_long(argc, argv, short_options, options, NULL)) >= 0) {
                r = parse_one(ctl, cmd, o, c);
                if (r != CTL_CONTINUE) {
                        goto fail;
                }
        }
        if (optind < argc && !o->takes_args) {
                r = ctl_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
                goto fail;
        }
        return CTL_CONTINUE;
fail:
        if (o->cpus) {
                json_decref(*o->cpus);
                *o->cpus = NULL;
        }
        return r;
}

const struct option ctl_diffdiff_option[] = {
        {"diffdiff", no_argument, NULL, 'd'},
        {},
};

int ctl_parse_diffdiff(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        (void)ctl, (void)cmd, (void)c;
        *(const char **)userdata = "diffdiff";
        return CTL_CONTINUE;
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

uint64_t ctl_busy_delay_usec(const Ctl *ctl, const char *error, json_t *params, unsigned retries,
                             uint64_t start_usec, uint64_t *ret_left_usec)
{
        uint64_t wait_usec, spent_usec;
        json_t *ms;

        if (!error || strcmp(error, "io.jitterd.Busy") != 0 || retries >= CTL_BUSY_RETRIES) {
                return 0;
        }
        ms = json_object_get(params, "retry_after_ms");
        if (!json_is_integer(ms) || json_integer_value(ms) <= 0 ||
            json_integer_value(ms) > (json_int_t)(ctl->timeout_usec / 1000)) {
                return 0;
        }
        wait_usec = (uint64_t)json_integer_value(ms) * 1000;
        spent_usec = now_ns(CLOCK_MONOTONIC) / 1000 - start_usec;
        /* The delay, and a millisecond at least for the call after it. */
        if (spent_usec + wait_usec + 1000 > ctl->timeout_usec) {
                return 0;
        }
        *ret_left_usec = ctl->timeout_usec - spent_usec - wait_usec;
        return wait_usec;
}

void ctl_busy_wait(const Ctl *ctl, uint64_t usec)
{
        struct pollfd p = {.fd = varlink_client_fd(ctl->client), .events = POLLIN};
        uint64_t end_usec = now_ns(CLOCK_MONOTONIC) / 1000 + usec;

        /* Nothing comes while the daemon holds the connection: what wakes the poll is the
         * connection's end, which the call after it then reports. */
        for (;;) {
                uint64_t now_usec = now_ns(CLOCK_MONOTONIC) / 1000;
                int r;

                if (now_usec >= end_usec) {
                        return;
                }
                r = poll(&p, 1, (int)((end_usec - now_usec + 999) / 1000));
                if (r != 0 && !(r < 0 && errno == EINTR)) {
                        return;
                }
        }
}

/* varlink_client_call(), calling again after the delay a Busy refusal gives, up to
 * CTL_BUSY_RETRIES times: the calls and the delays together take at most the timeout (each
 * call after the first has what is left of it). */
static int call_heeding_busy(Ctl *ctl, const char *method, json_t *params, json_t **ret_reply,
                             char **ret_error)
{
        uint64_t start_usec = now_ns(CLOCK_MONOTONIC) / 1000;
        bool shortened = false;
        int r;

        for (unsigned retries = 0;; retries++) {
                uint64_t wait_usec, left_usec;

                *ret_reply = NULL;
                *ret_error = NULL;
                r = varlink_client_call(ctl->client, method, params, ret_reply, ret_error);
                if (r < 0) {
                        break;
                }
                wait_usec = ctl_busy_delay_usec(ctl, *ret_error, *ret_reply, retries, start_usec,
                                                &left_usec);
                if (wait_usec == 0) {
                        break;
                }
                json_decref(*ret_reply);
                free(*ret_error);
                ctl_busy_wait(ctl, wait_usec);
                varlink_client_set_timeout(ctl->client, left_usec);
                shortened = true;
        }
        if (shortened) {
                varlink_client_set_timeout(ctl->client, ctl->timeout_usec);
        }
        return r;
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
        r = call_heeding_busy(ctl, full, params, &reply, &error);
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

json_t *ctl_window_params(const char *window, json_t *cpus)
{
        json_t *p = json_object();

        if (!p) {
                json_decref(cpus);
                return NULL;
        }
        if (window) {
                json_object_set_new(p, "window", json_string(window));
        }
        if (cpus) {
                json_object_set_new(p, "cpus", cpus);
        }
        return p;
}

json_t *ctl_histogram_params(unsigned long long cpu, const char *window, const char *kind)
{
        json_t *p = json_pack("{s:I, s:s}", "cpu", (json_int_t)cpu, "kind", kind);

        if (p && window) {
                json_object_set_new(p, "window", json_string(window));
        }
        return p;
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

/* Parses a CPU list option ("1", "2-5,7"). Returns 0 and a new JSON array of the CPUs, or
 * prints a usage error and returns -EINVAL. */
static int parse_cpus(const CtlCommand *cmd, const char *text, json_t **ret)
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

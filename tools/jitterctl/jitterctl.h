#pragma once

/* jitterctl: what the command files share. main() in jitterctl.c parses the global options and
 * dispatches from a table to one handler per command NAME, cmd_NAME() in jitterctl-NAME.c; what
 * they share is in jitterctl-common.c. Each handler states its own options for ctl_parse_args(),
 * which adds the common ones, and returns the exit status. */

#include <getopt.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "varlink-client.h"

/* The system daemon's socket: the default for root. */
#define SYSTEM_SOCKET "/run/jitterd/io.jitterd"

/* How long jitterctl waits to connect, to send a call and for each reply (--timeout). */
#define CTL_TIMEOUT_USEC_DEFAULT (10 * 1000000ULL)

/* Exit statuses. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILURE 1
#define CTL_EXIT_USAGE 2

/* Long-only options every command accepts (besides -h/--help). */
enum {
        CTL_OPT_SOCKET = 0x100,
        CTL_OPT_JSON,
        CTL_OPT_NO_COLOR,
        CTL_OPT_TIMEOUT,
        CTL_OPT_FIRST_PRIVATE, /* commands number their own long-only options from here */
};

/* The long options of the common options, before the command (main()) or after it. */
/* clang-format off */
#define CTL_COMMON_OPTIONS                                      \
        { "socket", required_argument, NULL, CTL_OPT_SOCKET },  \
        { "json", no_argument, NULL, CTL_OPT_JSON },            \
        { "no-color", no_argument, NULL, CTL_OPT_NO_COLOR },    \
        { "timeout", required_argument, NULL, CTL_OPT_TIMEOUT }, \
        { "help", no_argument, NULL, 'h' }
/* clang-format on */

typedef struct Ctl Ctl;

/* One command: its handler, its synopsis and its help text (options, one per line). */
typedef struct CtlCommand {
        const char *name;
        int (*run)(Ctl *ctl, const struct CtlCommand *cmd, int argc, char **argv);
        const char *synopsis; /* after "jitterctl NAME " */
        const char *summary;
        const char *help; /* option lines, or NULL */
} CtlCommand;

struct Ctl {
        const char *socket_path;
        bool json;
        bool color;            /* stdout is a terminal and NO_COLOR is unset */
        uint64_t timeout_usec; /* --timeout: every wait for the daemon */
        bool timeout_set;      /* --timeout was given */
        VarlinkClient *client;
};

/* The help of the common options, which every command's --help ends with. */
extern const char ctl_common_help[];

/* Prints the --help of @cmd: its usage, summary, options and the common ones. */
void ctl_command_help(const CtlCommand *cmd);

/* Parses a --timeout value: a positive duration ("500ms", "10s", "2m"; a bare number is in
 * seconds). Returns 0 or -EINVAL after saying why. */
int ctl_parse_timeout(Ctl *ctl, const char *text);

/* Returned by ctl_parse_args() and a command's option parser to go on. */
#define CTL_CONTINUE (-1)

/* The options of one command, besides the common ones (--socket, --json, --no-color, --timeout,
 * -h/--help), which ctl_parse_args() adds. */
typedef struct CtlOptions {
        const char *short_options;         /* its own ("M:p:"); "+" first: they end at the first
                                            * argument */
        const struct option *long_options; /* its own, ending with {}; NULL for none */
        /* Handles one of its own options, @c as getopt_long() returns it and its value in optarg:
         * returns CTL_CONTINUE, or the exit status after saying what is wrong. */
        int (*parse)(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata);
        void *userdata;
        const char **window; /* takes -w/--window: its value goes here */
        json_t **cpus;       /* takes -c/--cpu LIST: a JSON array of the CPUs goes here */
        bool takes_args;     /* arguments may follow (else one is an "unexpected argument") */
        bool only_own;       /* no common options: @parse gets every option, unknown ones too */
} CtlOptions;

/* Parses the options of @cmd (argv[0] is "jitterctl NAME") as @o says. Returns CTL_CONTINUE with
 * optind at the first argument, or the exit status after --help or after saying what is wrong
 * (then *@o->cpus is freed). */
int ctl_parse_args(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv, const CtlOptions *o);

/* -d/--diffdiff, the own option of hist and stats: the histogram kind "diffdiff" into
 * @userdata, a const char *, instead of the gaps. */
extern const struct option ctl_diffdiff_option[];
int ctl_parse_diffdiff(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata);

/* Prints "jitterctl NAME: MESSAGE" and the command's usage to stderr; returns CTL_EXIT_USAGE. */
int ctl_usage_error(const CtlCommand *cmd, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Prints "jitterctl: MESSAGE" to stderr; returns CTL_EXIT_FAILURE. */
int ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Connects to the daemon unless already connected, waiting at most the timeout. On failure
 * prints the "cannot connect ... is jitterd running?" message and returns a negative errno. */
int ctl_connect(Ctl *ctl);

/* Why a call to the daemon got no reply (@r is a negative errno of varlink_client_call*()), for
 * messages: "no reply from jitterd within 10.0 s (--timeout DUR waits longer)", ... */
const char *ctl_call_strerror(const Ctl *ctl, int r, char *buf, size_t size);

/* How often a call refused with io.jitterd.Busy is made again, after the delay the refusal
 * gives (and only while the delays add up to no more than the timeout). */
#define CTL_BUSY_RETRIES 10

/* Whether a call that got the error @error (NULL for none) with @params is to be made again:
 * returns the delay of an io.jitterd.Busy refusal (its retry_after_ms) in microseconds, and
 * puts in @ret_left_usec what is left of the timeout after it, for the call made then. Returns
 * 0 when the call is not to be made again: not a Busy, no usable delay, @retries (the times the
 * call was already made again, since @start_usec on CLOCK_MONOTONIC) reached CTL_BUSY_RETRIES,
 * or the delay and a millisecond for the call would end past the timeout. */
uint64_t ctl_busy_delay_usec(const Ctl *ctl, const char *error, json_t *params, unsigned retries,
                             uint64_t start_usec, uint64_t *ret_left_usec);

/* Waits @usec, the delay of a Busy refusal, on the daemon's connection; returns early when the
 * connection ends (the daemon closed it, or another thread shut it down). */
void ctl_busy_wait(const Ctl *ctl, uint64_t usec);

/* Calls io.jitterd.@method (or @method as given when it holds a dot) with @params (stolen, NULL
 * for none). Returns 0 and the reply parameters in @ret (a new reference), or prints why the
 * call failed (connection, protocol or daemon error; with @quiet_error a daemon error is left to
 * the caller) and returns a negative errno: -EREMOTEIO for a daemon error, whose name and
 * parameters are put in @ret_error / @ret_error_params when they are not NULL (free() and
 * json_decref() them). A call refused with io.jitterd.Busy is made again after the delay it
 * gives, CTL_BUSY_RETRIES times at most. */
int ctl_call_full(Ctl *ctl, const char *method, json_t *params, json_t **ret, char **ret_error,
                  json_t **ret_error_params, bool quiet_error);

/* ctl_call_full() for the common case: every failure is printed. */
int ctl_call(Ctl *ctl, const char *method, json_t *params, json_t **ret);

/* Calls GetStats with @params (stolen, NULL for none; "window" defaults to "1m") into @ret. With
 * @analyses, each CPU's entry gets "causes", "background" and "periods" too, worked out here
 * from GetWindow (jitterd does not search for them), pinned to the daemon's housekeeping CPUs at
 * nice 10 (19 where a probe shares them). Returns 0, or a negative errno after saying why. */
int ctl_get_stats(Ctl *ctl, json_t *params, bool analyses, json_t **ret);

/* The parameters of a call over a window: {"window": W, "cpus": [...]}, each only when given
 * (@window NULL: the daemon's default; @cpus, stolen, NULL: every CPU). NULL when out of
 * memory. */
json_t *ctl_window_params(const char *window, json_t *cpus);

/* The parameters of GetHistogram: {"cpu": @cpu, "window": @window (only when not NULL), "kind":
 * @kind}. NULL when out of memory. */
json_t *ctl_histogram_params(unsigned long long cpu, const char *window, const char *kind);

/* Prints @v as indented JSON and a newline to stdout. Returns CTL_EXIT_OK, or CTL_EXIT_FAILURE
 * if stdout could not be written. */
int ctl_print_json(json_t *v);

/* Parses a non-negative integer option value. Returns 0 or -EINVAL. */
int ctl_parse_uint(const char *text, unsigned long long max, unsigned long long *ret);

/* ANSI colour escapes, or "" when colour is off. */
const char *ctl_color(const Ctl *ctl, const char *escape);
#define CTL_RED "\033[31m"
#define CTL_GREEN "\033[32m"
#define CTL_YELLOW "\033[33m"
#define CTL_CYAN "\033[36m"
#define CTL_BOLD "\033[1m"
#define CTL_DIM "\033[2m"
#define CTL_RESET "\033[0m"

/* Reads the snapshot file @path that `jitterctl snapshot` wrote: its document, or NULL after
 * saying why not (unreadable, not JSON, not a snapshot, or a format version newer than this
 * jitterctl reads). */
json_t *snapshot_load(const char *path);

/* The command handlers, one per command NAME, each in jitterctl-NAME.c: each parses the
 * command's options and arguments (argv[0] is "jitterctl NAME") and returns the exit status. */
int cmd_status(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_stats(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_hist(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_events(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_watch(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_report(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_check(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_snapshot(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_compare(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_plot(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_audit(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_explain(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_doctor(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_clocks(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_export(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_reload(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);
int cmd_call(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv);

/* jitterctl call: a raw Varlink call to the daemon, its reply printed as JSON; with --more, a
 * streaming call, one reply per line. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl.h"

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

/* --more (-m): a streaming call, into @userdata, a bool. */
static int call_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        (void)ctl, (void)cmd, (void)c;
        *(bool *)userdata = true;
        return CTL_CONTINUE;
}

int cmd_call(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"more", no_argument, NULL, 'm'},
                {},
        };
        bool more = false;
        const CtlOptions options = {
                .short_options = "m",
                .long_options = own,
                .parse = call_option,
                .userdata = &more,
                .takes_args = true,
        };
        char full[256];
        json_t *params = NULL, *reply = NULL, *error_params = NULL;
        char *error = NULL;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
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

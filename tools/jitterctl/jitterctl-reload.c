/* jitterctl reload: has the daemon read its configuration again, and waits until the reload is
 * over: every probe runs with the new configuration, or the files have errors and the running
 * configuration stays. systemd's ExecReload= runs it, so that "systemctl reload jitterd"
 * returns once the reload is over, and fails where the configuration does. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitterctl-format.h"
#include "jitterctl.h"

/* How long a reload may take, when --timeout does not say: the longest preheat [probe] preheat
 * accepts (60 s), the 5 s jitterd gives its probes beyond it before it gives up, stopping the
 * old probes (at most 2 s), and room for the rest. */
#define RELOAD_TIMEOUT_USEC (90 * 1000000ULL)

int cmd_reload(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const CtlOptions options = {.short_options = ""};
        json_t *reply = NULL, *error_params = NULL, *e;
        char *error = NULL;
        size_t i;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        if (!ctl->timeout_set) {
                ctl->timeout_usec = RELOAD_TIMEOUT_USEC;
        }
        r = ctl_call_full(ctl, "Reload", NULL, &reply, &error, &error_params, true);
        if (r == -EREMOTEIO && strcmp(error, "io.jitterd.InvalidConfiguration") == 0) {
                fprintf(stderr, "jitterctl: the configuration has errors; jitterd keeps the "
                                "running one:\n");
                json_array_foreach(json_object_get(error_params, "errors"), i, e)
                {
                        fprintf(stderr, "  %s\n",
                                json_string_value(e) ? json_string_value(e) : "?");
                }
        } else if (r == -EREMOTEIO) {
                char msg[512];

                fprintf(stderr, "jitterctl: reload: %s\n",
                        format_error(msg, sizeof(msg), error, error_params));
        }
        free(error);
        json_decref(error_params);
        json_decref(reply);
        if (r < 0) {
                return CTL_EXIT_FAILURE;
        }
        if (!ctl->json) {
                printf("jitterd reloaded its configuration; every probe runs with it\n");
        }
        return CTL_EXIT_OK;
}

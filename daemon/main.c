/* jitterd: watches isolated CPUs continuously and answers questions about their jitter. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "manager.h"

int manager_load_config(const char *path, const char *dropin, const Overrides *o, Config *ret);

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: jitterd [OPTIONS]\n"
                "Measure continuously how often and for how long CPUs are taken away from a\n"
                "busy loop, and serve the results over Varlink.\n\n"
                "  -c, --config FILE            configuration file (default %s; drop-ins in\n"
                "                               FILE.d/*.conf)\n"
                "      --cpus LIST              CPUs to probe (default: isolated, at boot\n"
                "                               or by cpusets, and nohz_full)\n"
                "      --socket PATH            Varlink socket (default /run/jitterd/io.jitterd)\n"
                "      --state-dir DIR          where the history is checkpointed\n"
                "      --interval DUR           history resolution (default 1s)\n"
                "      --threshold DUR          a gap this long is an interruption (default 10us)\n"
                "      --prometheus-textfile PATH  write a node_exporter textfile every interval\n"
                "      --dump-config            print the effective configuration and exit\n"
                "  -v, --verbose                log debug messages\n"
                "  -h, --help                   show this help\n"
                "  -V, --version                show the version\n",
                CONFIG_MAIN_PATH);
}

int main(int argc, char **argv)
{
        enum {
                OPT_CPUS = 256,
                OPT_SOCKET,
                OPT_STATE_DIR,
                OPT_INTERVAL,
                OPT_THRESHOLD,
                OPT_PROM,
                OPT_DUMP
        };
        static const struct option longopts[] = {
                {"config", required_argument, NULL, 'c'},
                {"cpus", required_argument, NULL, OPT_CPUS},
                {"socket", required_argument, NULL, OPT_SOCKET},
                {"state-dir", required_argument, NULL, OPT_STATE_DIR},
                {"interval", required_argument, NULL, OPT_INTERVAL},
                {"threshold", required_argument, NULL, OPT_THRESHOLD},
                {"prometheus-textfile", required_argument, NULL, OPT_PROM},
                {"dump-config", no_argument, NULL, OPT_DUMP},
                {"verbose", no_argument, NULL, 'v'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        static char dropin[4096], abs_socket[4096], abs_state[4096], abs_prom[4096];
        const char *config_path = CONFIG_MAIN_PATH;
        Overrides o = {0};
        bool dump = false;
        Manager *m = NULL;
        Config c;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "c:vhV", longopts, NULL)) >= 0) {
                switch (opt) {
                case 'c':
                        config_path = optarg;
                        break;
                case OPT_CPUS:
                        o.cpus = optarg;
                        break;
                case OPT_SOCKET:
                        o.socket = optarg;
                        break;
                case OPT_STATE_DIR:
                        o.state_dir = optarg;
                        break;
                case OPT_INTERVAL:
                        o.interval = optarg;
                        break;
                case OPT_THRESHOLD:
                        o.threshold = optarg;
                        break;
                case OPT_PROM:
                        o.prometheus_textfile = optarg;
                        break;
                case OPT_DUMP:
                        dump = true;
                        break;
                case 'v':
                        log_set_max_level(7);
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("jitterd %s\n", JITTERD_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "Try 'jitterd --help'.\n");
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "jitterd: unexpected argument '%s'\nTry 'jitterd --help'.\n",
                        argv[optind]);
                return 2;
        }
        /* Paths from the command line are relative to where we were started; the config
         * wants them absolute. */
        if (o.socket && o.socket[0] != '/' && realpath(".", abs_socket)) {
                strncat(abs_socket, "/", sizeof(abs_socket) - strlen(abs_socket) - 1);
                strncat(abs_socket, o.socket, sizeof(abs_socket) - strlen(abs_socket) - 1);
                o.socket = abs_socket;
        }
        if (o.state_dir && o.state_dir[0] != '/' && realpath(".", abs_state)) {
                strncat(abs_state, "/", sizeof(abs_state) - strlen(abs_state) - 1);
                strncat(abs_state, o.state_dir, sizeof(abs_state) - strlen(abs_state) - 1);
                o.state_dir = abs_state;
        }
        if (o.prometheus_textfile && o.prometheus_textfile[0] != '/' && realpath(".", abs_prom)) {
                strncat(abs_prom, "/", sizeof(abs_prom) - strlen(abs_prom) - 1);
                strncat(abs_prom, o.prometheus_textfile, sizeof(abs_prom) - strlen(abs_prom) - 1);
                o.prometheus_textfile = abs_prom;
        }
        /* Drop-ins live next to the main file: /etc/jitterd/jitterd.conf.d/. */
        snprintf(dropin, sizeof(dropin), "%s.d", config_path);

        r = manager_load_config(config_path, dropin, &o, &c);
        if (r < 0) {
                log_error("cannot start: the configuration has errors");
                return 1;
        }
        if (dump) {
                return config_dump(&c, stdout) < 0 ? 1 : 0;
        }
        r = manager_new(&c, config_path, dropin, &o, &m);
        if (r < 0) {
                manager_free(m);
                return 1;
        }
        r = manager_run(m);
        manager_free(m);
        return r;
}

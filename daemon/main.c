/* jitterd: watches isolated CPUs continuously and answers questions about their jitter. */

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "log.h"
#include "manager.h"
#include "textfile.h"
#ifdef JITTERD_TEST_HOOKS
#include "test-hooks.h"
#endif

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
                "      --prometheus-textfile PATH  write a node_exporter textfile\n"
                "      --dump-config            print the effective configuration and exit\n"
                "  -v, --verbose                log debug messages\n"
                "  -h, --help                   show this help\n"
                "  -V, --version                show the version\n",
                CONFIG_MAIN_PATH);
}

/* What the command line asks for besides the overrides. */
typedef struct Args {
        const char *config_path;
        bool dump;
} Args;

/* Parses the command line into @o and @a. Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, Overrides *o, Args *a)
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
        int opt;

        while ((opt = getopt_long(argc, argv, "c:vhV", longopts, NULL)) >= 0) {
                switch (opt) {
                case 'c':
                        a->config_path = optarg;
                        break;
                case OPT_CPUS:
                        o->cpus = optarg;
                        break;
                case OPT_SOCKET:
                        o->socket = optarg;
                        break;
                case OPT_STATE_DIR:
                        o->state_dir = optarg;
                        break;
                case OPT_INTERVAL:
                        o->interval = optarg;
                        break;
                case OPT_THRESHOLD:
                        o->threshold = optarg;
                        break;
                case OPT_PROM:
                        o->prometheus_textfile = optarg;
                        break;
                case OPT_DUMP:
                        a->dump = true;
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
        return -1;
}

/* Paths from the command line are relative to where we were started; the config wants them
 * absolute. */
static void absolute_paths(Overrides *o)
{
        static char abs_socket[4096], abs_state[4096], abs_prom[4096];

        if (o->socket && o->socket[0] != '/' && realpath(".", abs_socket)) {
                strncat(abs_socket, "/", sizeof(abs_socket) - strlen(abs_socket) - 1);
                strncat(abs_socket, o->socket, sizeof(abs_socket) - strlen(abs_socket) - 1);
                o->socket = abs_socket;
        }
        if (o->state_dir && o->state_dir[0] != '/' && realpath(".", abs_state)) {
                strncat(abs_state, "/", sizeof(abs_state) - strlen(abs_state) - 1);
                strncat(abs_state, o->state_dir, sizeof(abs_state) - strlen(abs_state) - 1);
                o->state_dir = abs_state;
        }
        if (o->prometheus_textfile && o->prometheus_textfile[0] != '/' && realpath(".", abs_prom)) {
                strncat(abs_prom, "/", sizeof(abs_prom) - strlen(abs_prom) - 1);
                strncat(abs_prom, o->prometheus_textfile, sizeof(abs_prom) - strlen(abs_prom) - 1);
                o->prometheus_textfile = abs_prom;
        }
}

/* Creates the manager, the API and the textfile, and runs until told to stop. Returns the exit
 * status. */
static int run(const Config *c, const char *config_path, const char *dropin, const Overrides *o)
{
        /* Freed in the reverse order: the textfile and the API before the manager. */
        _cleanup_manager_ Manager *m = NULL;
        _cleanup_api_ Api *api = NULL;
        _cleanup_textfile_ Textfile *textfile = NULL;
        int r;

        r = manager_new(c, config_path, dropin, o, &m);
        if (r < 0) {
                return 1;
        }
        /* The data flows one way: the manager harvests, then the API (Monitor) and the
         * textfile read what it harvested, each from its hook. The loop only runs in
         * manager_run(), so no call is served before the interface is registered. */
        r = api_new(m, &api);
        if (r < 0) {
                log_error("cannot register the io.jitterd interface: %s", strerror(-r));
                return 1;
        }
        r = textfile_new(m, &textfile);
        if (r < 0) {
                log_error("cannot set up the Prometheus textfile: %s", strerror(-r));
                return 1;
        }
        return manager_run(m);
}

#ifdef JITTERD_TEST_HOOKS
/* The test build (jitterd-test-hooks, never installed) gives every probe it makes what
 * JITTERD_TEST_HOOKS asks for (see probe/test-hooks.h): a CPU-number source that lies, a CPU
 * without rdtscp. Returns 0, or 2 after saying what is wrong. */
static int set_test_hooks(void)
{
        static TestHooks t;
        static TestHooksState state;
        static ProbeHooks hooks;
        char err[160];

        if (test_hooks_parse(getenv("JITTERD_TEST_HOOKS"), &t, err, sizeof(err)) < 0) {
                fprintf(stderr, "jitterd: JITTERD_TEST_HOOKS: %s\n", err);
                return 2;
        }
        /* They read the state of one probe, and the daemon's probes share these hooks. */
        if (test_hooks_stall(&t)) {
                fprintf(stderr, "jitterd: JITTERD_TEST_HOOKS: the stalls are for "
                                "jitter-probe-test-hooks only\n");
                return 2;
        }
        test_hooks_bind(&t, &state, &hooks);
        probe_set_hooks(&hooks);
        return 0;
}
#endif

int main(int argc, char **argv)
{
        static char dropin[4096];
        Args a = {.config_path = CONFIG_MAIN_PATH};
        Overrides o = {0};
        Config c;
        int r;

        r = parse_args(argc, argv, &o, &a);
        if (r >= 0) {
                return r;
        }
#ifdef JITTERD_TEST_HOOKS
        if (set_test_hooks() != 0) {
                return 2;
        }
#endif
        absolute_paths(&o);
        /* Drop-ins live next to the main file: /etc/jitterd/jitterd.conf.d/. */
        snprintf(dropin, sizeof(dropin), "%s.d", a.config_path);

        r = manager_load_config(a.config_path, dropin, &o, &c);
        if (r < 0) {
                log_error("cannot start: the configuration has errors");
                return 1;
        }
        if (a.dump) {
                return config_dump(&c, stdout) < 0 ? 1 : 0;
        }
        return run(&c, a.config_path, dropin, &o);
}

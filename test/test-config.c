/* Unit tests of daemon/config.c: the key table, file loading with its diagnostics, drop-ins,
 * command-line overrides, the dump, and the shipped config/jitterd.conf. */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "config-internal.h"
#include "cpulist.h"
#include "util.h"

#define FIXTURES TEST_SOURCE_DIR "/config"
#define SHIPPED TEST_SOURCE_DIR "/../config/jitterd.conf"

/* Asserts that message @i of @diag has @severity and reads "@file:@line: @what". */
static void assert_message(const ConfigDiag *diag, size_t i, ConfigSeverity severity,
                           const char *file, unsigned line, const char *what)
{
        char *expected;

        assert_true(i < diag->n_messages);
        if (line) {
                assert_true(asprintf(&expected, "%s:%u: %s", file, line, what) > 0);
        } else {
                assert_true(asprintf(&expected, "%s: %s", file, what) > 0);
        }
        assert_string_equal(diag->messages[i].text, expected);
        assert_int_equal(diag->messages[i].severity, severity);
        free(expected);
}

static void assert_cpus(const cpu_set_t *set, const char *list)
{
        char buf[256];

        assert_string_equal(cpulist_format(buf, sizeof(buf), set), list);
}

/* A private directory for files the test writes; removed by remove_tmpdir(). */
static char tmpdir[64];

static void make_tmpdir(void)
{
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-config.XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        assert_int_equal(system(cmd), 0);
}

/* Writes @len bytes of @text (all of it if @len is SIZE_MAX) to @name in tmpdir and returns
 * its path (a static buffer). */
static const char *write_tmp(const char *name, const char *text, size_t len)
{
        static char path[128];
        FILE *f;

        if (len == SIZE_MAX) {
                len = strlen(text);
        }
        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        return path;
}

static void test_defaults(void **state)
{
        Config c;

        config_init_defaults(&c);
        assert_int_equal(CPU_COUNT(&c.probe_cpus), 0);
        assert_int_equal(c.probe_priority, 0);
        assert_int_equal(c.probe_threshold_ns, 10 * NSEC_PER_USEC);
        assert_int_equal(c.probe_preheat_ns, NSEC_PER_SEC);
        assert_int_equal(c.probe_counter, COUNTER_HW);
        assert_int_equal(c.history_interval_ns, NSEC_PER_SEC);
        assert_int_equal(c.history_fine_retention_ns, 10 * NSEC_PER_MIN);
        assert_int_equal(c.history_coarse_retention_ns, 24 * NSEC_PER_HOUR);
        assert_int_equal(c.history_events_per_cpu, 10000);
        assert_int_equal(c.history_checkpoint_ns, 60 * NSEC_PER_SEC);
        assert_string_equal(c.history_state_dir, "/var/lib/jitterd");
        assert_string_equal(c.server_socket, "");
        assert_string_equal(c.server_admin_group, "");
        assert_int_equal(c.server_max_clients, 64);
        assert_int_equal(c.server_max_message_bytes, 65536);
        assert_int_equal(c.server_idle_timeout_ns, 5 * NSEC_PER_MIN);
        assert_int_equal(c.server_cpu_budget_percent, 10);
        assert_int_equal(c.server_loop_priority, 0);
        assert_string_equal(c.export_prometheus_textfile, "");
        assert_string_equal(c.audit_root, "");
        assert_int_equal(config_check(&c, NULL), 0);
}

/* The table is what the loader trusts: each entry must be consistent with its field. */
static void test_key_table(void **state)
{
        const ConfigKey *keys;
        size_t n;

        keys = config_keys(&n);
        assert_true(n >= 18);
        for (size_t i = 0; i < n; i++) {
                const ConfigKey *k = &keys[i];
                char *error = NULL, got[128], want[128];
                Config c, defaults;

                assert_non_null(k->doc);
                assert_true(strlen(k->doc) > 20);
                assert_ptr_equal(config_key_find(k->section, k->name), k);
                for (size_t j = 0; j < i; j++) {
                        assert_false(strcmp(keys[j].name, k->name) == 0);
                }
                assert_true(k->offset + k->size <= sizeof(Config));
                switch (k->type) {
                case CONFIG_TYPE_UINT:
                        assert_int_equal(k->size, sizeof(unsigned));
                        assert_true(k->max <= UINT_MAX);
                        assert_true(k->min <= k->max);
                        break;
                case CONFIG_TYPE_DURATION:
                case CONFIG_TYPE_SIZE:
                        assert_int_equal(k->size, sizeof(uint64_t));
                        assert_true(k->min <= k->max);
                        break;
                case CONFIG_TYPE_ENUM:
                        assert_int_equal(k->size, sizeof(int));
                        assert_non_null(k->enum_names);
                        break;
                case CONFIG_TYPE_CPULIST:
                case CONFIG_TYPE_PATH:
                case CONFIG_TYPE_GROUP:
                        break;
                }
                /* The default passes its own checks, and an empty value restores it. */
                config_init_defaults(&defaults);
                config_init_defaults(&c);
                assert_int_equal(config_set(&c, k->section, k->name, k->default_value, &error), 0);
                assert_null(error);
                assert_true(config_equal(&c, &defaults, NULL));
                memset(&c, 0, sizeof(c));
                assert_int_equal(config_set(&c, k->section, k->name, "", &error), 0);
                assert_int_equal(config_format_value(&c, k, got, sizeof(got)), 0);
                assert_int_equal(config_format_value(&defaults, k, want, sizeof(want)), 0);
                assert_string_equal(got, want);
        }
        /* Sections come in blocks, so that the dump writes each header once. */
        for (size_t i = 2; i < n; i++) {
                if (strcmp(keys[i].section, keys[i - 1].section) != 0) {
                        for (size_t j = 0; j + 1 < i; j++) {
                                assert_false(strcmp(keys[j].section, keys[i].section) == 0);
                        }
                }
        }
}

static void test_good_file(void **state)
{
        ConfigDiag diag = {0};
        Config c;

        assert_int_equal(config_load(&c, FIXTURES "/good.conf", NULL, &diag), 0);
        assert_int_equal(diag.n_messages, 0);
        assert_cpus(&c.probe_cpus, "1,3-5");
        assert_int_equal(c.probe_priority, 50);
        assert_int_equal(c.probe_threshold_ns, 20 * NSEC_PER_USEC);
        assert_int_equal(c.probe_preheat_ns, 1500 * NSEC_PER_MSEC);
        assert_int_equal(c.probe_counter, COUNTER_CLOCK);
        assert_int_equal(c.history_interval_ns, 500 * NSEC_PER_MSEC);
        assert_int_equal(c.history_fine_retention_ns, 30 * NSEC_PER_MIN);
        assert_int_equal(c.history_coarse_retention_ns, 7 * 24 * NSEC_PER_HOUR);
        assert_int_equal(c.history_events_per_cpu, 4096);
        assert_int_equal(c.history_checkpoint_ns, 0);
        assert_string_equal(c.history_state_dir, "/srv/jitterd/state");
        assert_string_equal(c.server_socket, "/run/jitterd-test/io.jitterd");
        assert_string_equal(c.server_admin_group, "jitter-admins");
        assert_int_equal(c.server_max_clients, 8);
        assert_int_equal(c.server_max_message_bytes, 1024 * 1024);
        assert_int_equal(c.server_idle_timeout_ns, 90 * NSEC_PER_SEC);
        assert_int_equal(c.server_cpu_budget_percent, 4);
        assert_string_equal(c.export_prometheus_textfile, "/var/lib/node-exporter/jitterd.prom");
        assert_string_equal(c.audit_root, "/srv/fixture");
        config_diag_clear(&diag);
}

static void test_bad_values(void **state)
{
        static const struct {
                unsigned line;
                const char *what;
        } expected[] = {
                {3, "cpus: \"1-x\" is not a CPU list (use e.g. 2-5,8 or 1-7:2)"},
                {4, "priority: 100 is out of range 0..99"},
                {5, "threshold: \"10xs\" is not a duration (use e.g. 500ns, 20us, 1ms, 5min)"},
                {6, "preheat: 2min is out of range 0..1min"},
                {7, "counter: \"hpet\" is not one of tsc, clock, cntvct, hw"},
                {10, "interval: 100 is out of range 100ms..1min (a bare number means seconds)"},
                {11, "events_per_cpu: \"-5\" is not a number"},
                {12, "checkpoint: 500ms is out of range 1s..1h (or 0 to disable)"},
                {13, "state_dir: \"var/lib/jitterd\" is not an absolute path"},
                {16, "socket: \"/run/jitterd/\" names a directory, not a file"},
                {17, "admin_group: \"1wheel\" is not a valid group name"},
                {18, "max_clients: 0 is out of range 1..4096"},
                {19, "max_message: \"64x\" is not a size (use e.g. 4096, 64KiB, 1MiB)"},
                {20, "idle_timeout: 99999999999999999999999s is out of range 1s..24h"},
                {23, "prometheus_textfile: \"/var/lib/node-exporter/jitterd.txt\" is not a "
                     "file name ending in .prom"},
                {26, "root: \"../fixture\" is not an absolute path"},
                {29, "keep_above: 2s is out of range 10us..1s (or 0 to disable)"},
                {30, "keep_per_minute: 0 is out of range 1..600"},
                {31, "keep_max_size: 1KiB is out of range 1MiB..4GiB"},
                {34, "cpu_budget_percent: 101 is out of range 1..100"},
        };
        ConfigDiag diag = {0};
        Config c, before;

        /* A failed load leaves the configuration alone, whatever it was. */
        config_init_defaults(&c);
        assert_int_equal(config_set(&c, "probe", "threshold", "77us", NULL), 0);
        before = c;

        assert_int_equal(config_load(&c, FIXTURES "/bad-values.conf", NULL, &diag), -EINVAL);
        for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                assert_message(&diag, i, CONFIG_SEVERITY_ERROR, FIXTURES "/bad-values.conf",
                               expected[i].line, expected[i].what);
        }
        assert_int_equal(diag.n_messages, ELEMENTSOF(expected));
        assert_int_equal(diag.n_errors, diag.n_messages);
        assert_true(config_equal(&c, &before, NULL));
        assert_int_equal(c.probe_threshold_ns, 77 * NSEC_PER_USEC);
        config_diag_clear(&diag);
        assert_int_equal(diag.n_messages, 0);
        assert_null(diag.messages);
}

static void test_unknown_key_and_section(void **state)
{
        const char *file = FIXTURES "/unknown.conf";
        ConfigDiag diag = {0};
        Config c;

        assert_int_equal(config_load(&c, file, NULL, &diag), 0);
        assert_int_equal(diag.n_errors, 0);
        assert_int_equal(diag.n_messages, 3);
        assert_message(&diag, 0, CONFIG_SEVERITY_WARNING, file, 2,
                       "unknown key \"treshold\" in [probe], ignored (did you mean threshold?)");
        assert_message(&diag, 1, CONFIG_SEVERITY_WARNING, file, 3,
                       "unknown key \"interval\" in [probe], ignored (it belongs in [history])");
        assert_message(&diag, 2, CONFIG_SEVERITY_WARNING, file, 5,
                       "unknown section [tracing], ignored with its keys");
        /* The good lines around the unknown ones still count. */
        assert_int_equal(c.probe_priority, 5);
        assert_int_equal(c.history_interval_ns, 2 * NSEC_PER_SEC);
        assert_int_equal(c.probe_threshold_ns, 10 * NSEC_PER_USEC);
        config_diag_clear(&diag);
}

static void test_syntax_errors(void **state)
{
        const char *file = FIXTURES "/syntax.conf";
        ConfigDiag diag = {0};
        Config c;

        config_init_defaults(&c);
        assert_int_equal(config_load(&c, file, NULL, &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 5);
        assert_int_equal(diag.n_errors, 5);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, file, 2,
                       "expected \"key = value\", found \"threshold 20us\"");
        assert_message(&diag, 1, CONFIG_SEVERITY_ERROR, file, 3,
                       "unterminated section header \"[history\"");
        assert_message(&diag, 2, CONFIG_SEVERITY_ERROR, file, 5,
                       "unexpected text \"x\" after section header");
        assert_message(&diag, 3, CONFIG_SEVERITY_ERROR, file, 6, "missing key before \"=\"");
        assert_message(&diag, 4, CONFIG_SEVERITY_ERROR, file, 7, "empty section name");
        config_diag_clear(&diag);

        file = FIXTURES "/no-section.conf";
        assert_int_equal(config_load(&c, file, NULL, &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 1);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, file, 2,
                       "\"threshold\" is outside of any section (it belongs in [probe])");
        config_diag_clear(&diag);
}

static void test_duplicate_key(void **state)
{
        const char *file = FIXTURES "/duplicate.conf";
        ConfigDiag diag = {0};
        Config c;

        assert_int_equal(config_load(&c, file, NULL, &diag), 0);
        assert_int_equal(diag.n_messages, 1);
        assert_message(&diag, 0, CONFIG_SEVERITY_WARNING, file, 6,
                       "threshold is set again (before at line 2); the last value wins");
        assert_int_equal(c.probe_threshold_ns, 30 * NSEC_PER_USEC);
        assert_int_equal(c.probe_priority, 3);
        config_diag_clear(&diag);
}

static void test_dropins(void **state)
{
        ConfigDiag diag = {0};
        Config c;

        /* 10-first, 20-second, 9-last: the last sets 40us. Hidden files, backups, other
         * suffixes and the README would all be errors if they were read. */
        assert_int_equal(config_load(&c, FIXTURES "/dropin/jitterd.conf",
                                     FIXTURES "/dropin/jitterd.conf.d", &diag),
                         0);
        assert_int_equal(diag.n_messages, 0);
        assert_int_equal(c.probe_threshold_ns, 40 * NSEC_PER_USEC);
        assert_int_equal(c.probe_counter, COUNTER_CLOCK);
        assert_int_equal(c.probe_priority, 10);
        assert_int_equal(c.history_interval_ns, 2 * NSEC_PER_SEC);
        assert_int_equal(c.history_events_per_cpu, 10000);

        /* Drop-ins apply without a main file too. */
        assert_int_equal(config_load(&c, FIXTURES "/dropin/missing.conf",
                                     FIXTURES "/dropin/jitterd.conf.d", &diag),
                         0);
        assert_int_equal(diag.n_messages, 0);
        assert_int_equal(c.probe_threshold_ns, 40 * NSEC_PER_USEC);
        assert_int_equal(c.probe_priority, 0);
}

/* An error in a drop-in is reported with the drop-in's name, and refuses the whole load. */
static void test_dropin_error(void **state)
{
        ConfigDiag diag = {0};
        char dir[128];
        Config c;

        make_tmpdir();
        snprintf(dir, sizeof(dir), "%s/conf.d", tmpdir);
        assert_int_equal(mkdir(dir, 0755), 0);
        write_tmp("conf.d/50-bad.conf", "[probe]\n\nthreshold = 0\n", SIZE_MAX);
        config_init_defaults(&c);
        assert_int_equal(config_load(&c, FIXTURES "/good.conf", dir, &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 1);
        assert_string_equal(strrchr(diag.messages[0].text, '/'),
                            "/50-bad.conf:3: threshold: 0 is out of range 100ns..1s");
        assert_int_equal(c.probe_priority, 0);
        config_diag_clear(&diag);
        remove_tmpdir();
}

/* A FIFO where a file is expected (a drop-in here) is refused at once: reading it would wait
 * for a writer, and a reload with it. SIGALRM ends the test if the load blocks. */
static void test_fifo_refused(void **state)
{
        ConfigDiag diag = {0};
        char dir[128], fifo[160];
        Config c;

        make_tmpdir();
        snprintf(dir, sizeof(dir), "%s/conf.d", tmpdir);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(fifo, sizeof(fifo), "%s/50-fifo.conf", dir);
        assert_int_equal(mkfifo(fifo, 0644), 0);
        config_init_defaults(&c);
        alarm(10);
        assert_int_equal(config_load(&c, FIXTURES "/good.conf", dir, &diag), -EINVAL);
        alarm(0);
        assert_int_equal(diag.n_messages, 1);
        assert_string_equal(strrchr(diag.messages[0].text, '/'),
                            "/50-fifo.conf: is not a regular file");
        config_diag_clear(&diag);
        remove_tmpdir();
}

static void test_missing_files(void **state)
{
        ConfigDiag diag = {0};
        Config c, defaults;

        config_init_defaults(&defaults);
        c = defaults;
        assert_int_equal(config_set(&c, "probe", "priority", "9", NULL), 0);
        assert_int_equal(config_load(&c, "/nonexistent/jitterd.conf", "/nonexistent/conf.d", &diag),
                         0);
        assert_int_equal(diag.n_messages, 0);
        assert_true(config_equal(&c, &defaults, NULL));

        assert_int_equal(config_load(&c, NULL, NULL, NULL), 0);
        assert_true(config_equal(&c, &defaults, NULL));
}

static void test_unreadable(void **state)
{
        ConfigDiag diag = {0};
        Config c;

        /* Running as root, permissions cannot make a file unreadable; a directory where a
         * file belongs (and a file where a directory belongs) can. */
        assert_int_equal(config_load(&c, FIXTURES, NULL, &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 1);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, FIXTURES, 0, "is a directory, not a file");
        config_diag_clear(&diag);

        assert_int_equal(config_load(&c, NULL, FIXTURES "/good.conf", &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 1);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, FIXTURES "/good.conf", 0,
                       "cannot read drop-in directory: Not a directory");
        config_diag_clear(&diag);

        /* Without a ConfigDiag the result is the same. */
        assert_int_equal(config_load(&c, FIXTURES, NULL, NULL), -EINVAL);
}

static void test_odd_bytes(void **state)
{
        ConfigDiag diag = {0};
        const char *path;
        char *line;
        Config c;

        make_tmpdir();

        /* A byte order mark and CRLF line ends, as some editors write. */
        path = write_tmp("crlf.conf", "\xef\xbb\xbf[probe]\r\nthreshold = 20us\r\n", SIZE_MAX);
        assert_int_equal(config_load(&c, path, NULL, &diag), 0);
        assert_int_equal(diag.n_messages, 0);
        assert_int_equal(c.probe_threshold_ns, 20 * NSEC_PER_USEC);

        /* No trailing newline. */
        path = write_tmp("eof.conf", "[probe]\npriority = 7", SIZE_MAX);
        assert_int_equal(config_load(&c, path, NULL, &diag), 0);
        assert_int_equal(c.probe_priority, 7);

        path = write_tmp("nul.conf", "[probe]\npriority = 7\0junk\n", 26);
        assert_int_equal(config_load(&c, path, NULL, &diag), -EINVAL);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, path, 2, "line contains a NUL byte");
        config_diag_clear(&diag);

        /* Control characters are escaped in the message. */
        path = write_tmp("ctl.conf", "[server]\nadmin_group = a\x1b[2Jb\n", SIZE_MAX);
        assert_int_equal(config_load(&c, path, NULL, &diag), -EINVAL);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, path, 2,
                       "admin_group: \"a\\x1b[2Jb\" contains a control character");
        config_diag_clear(&diag);

        line = malloc(20000);
        assert_non_null(line);
        memcpy(line, "[audit]\nroot = /", 16);
        memset(line + 16, 'a', 20000 - 17);
        line[20000 - 1] = '\n';
        path = write_tmp("long.conf", line, 20000);
        assert_int_equal(config_load(&c, path, NULL, &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 1);
        assert_non_null(strstr(diag.messages[0].text, ":2: line is too long"));
        config_diag_clear(&diag);
        free(line);

        remove_tmpdir();
}

static void test_config_set(void **state)
{
        char *error = NULL, longpath[200];
        Config c, before;

        config_init_defaults(&c);
        assert_int_equal(config_set(&c, "probe", "cpus", " 2-3 ", &error), 0);
        assert_null(error);
        assert_cpus(&c.probe_cpus, "2-3");
        assert_int_equal(config_set(&c, "history", "interval", "250ms", &error), 0);
        assert_int_equal(c.history_interval_ns, 250 * NSEC_PER_MSEC);
        assert_int_equal(config_set(&c, "probe", "threshold", "2", &error), -EINVAL);
        assert_string_equal(error,
                            "threshold: 2 is out of range 100ns..1s (a bare number means seconds)");
        free(error);
        assert_int_equal(config_set(&c, "server", "socket", "/tmp/j.sock", &error), 0);
        assert_string_equal(c.server_socket, "/tmp/j.sock");
        assert_int_equal(config_set(&c, "history", "state_dir", "/tmp/state/", &error), 0);
        assert_string_equal(c.history_state_dir, "/tmp/state");
        assert_int_equal(config_set(&c, "export", "prometheus_textfile", "/tmp/j.prom", &error), 0);
        assert_int_equal(config_set(&c, "audit", "root", "/", &error), 0);
        assert_string_equal(c.audit_root, "");
        assert_int_equal(config_set(&c, "server", "max_message", "16MiB", &error), 0);
        assert_int_equal(c.server_max_message_bytes, 16 * 1024 * 1024);
        assert_int_equal(config_set(&c, "history", "checkpoint", "0", &error), 0);
        assert_int_equal(c.history_checkpoint_ns, 0);
        assert_int_equal(config_set(&c, "probe", "counter", "cntvct", &error), 0);
        assert_int_equal(c.probe_counter, COUNTER_HW);

        /* Failures leave @c alone and say why. */
        before = c;
        assert_int_equal(config_set(&c, "probe", "threshold", "10xs", &error), -EINVAL);
        assert_string_equal(error, "threshold: \"10xs\" is not a duration (use e.g. 500ns, "
                                   "20us, 1ms, 5min)");
        free(error);
        assert_int_equal(config_set(&c, "probe", "cpus", "5000", &error), -EINVAL);
        assert_string_equal(error, "cpus: \"5000\" names a CPU above 1023");
        free(error);
        assert_int_equal(config_set(&c, "probe", "cpus", "3-1", &error), -EINVAL);
        free(error);
        assert_int_equal(config_set(&c, "probe", "priority", "99999999999999999999", &error),
                         -EINVAL);
        assert_string_equal(error, "priority: 99999999999999999999 is out of range 0..99");
        free(error);
        assert_int_equal(config_set(&c, "server", "max_message", "1023", &error), -EINVAL);
        assert_string_equal(error, "max_message: 1023 is out of range 1KiB..16MiB");
        free(error);
        memset(longpath, 'a', sizeof(longpath));
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = '\0';
        assert_int_equal(config_set(&c, "server", "socket", longpath, &error), -EINVAL);
        assert_string_equal(error, "socket: path is too long (199 bytes, at most 107)");
        free(error);
        assert_int_equal(config_set(&c, "server", "socket", "sock", &error), -EINVAL);
        free(error);
        assert_int_equal(config_set(&c, "export", "prometheus_textfile", "/tmp/.prom", &error),
                         -EINVAL);
        assert_string_equal(error,
                            "prometheus_textfile: \"/tmp/.prom\" is not a file name ending in "
                            ".prom");
        free(error);
        assert_int_equal(config_set(&c, "probe", "bogus", "1", &error), -ENOENT);
        assert_string_equal(error, "unknown key \"bogus\" in [probe]");
        free(error);
        assert_int_equal(config_set(&c, "history", "threshold", "1ms", NULL), -ENOENT);
        assert_int_equal(config_set(&c, "probe", "priority", "x", NULL), -EINVAL);
        assert_true(config_equal(&c, &before, NULL));

        /* An empty value restores the default. */
        assert_int_equal(config_set(&c, "history", "interval", "", &error), 0);
        assert_int_equal(c.history_interval_ns, NSEC_PER_SEC);
        assert_int_equal(config_set(&c, "history", "state_dir", "  ", &error), 0);
        assert_string_equal(c.history_state_dir, "/var/lib/jitterd");
}

static void test_cross_check(void **state)
{
        const char *file = FIXTURES "/retention.conf";
        ConfigDiag diag = {0};
        char *error = NULL;
        Config c;

        /* The message names the key that was set last. */
        assert_int_equal(config_load(&c, file, NULL, &diag), -EINVAL);
        assert_int_equal(diag.n_messages, 1);
        assert_message(&diag, 0, CONFIG_SEVERITY_ERROR, file, 3,
                       "fine_retention: 3h is longer than coarse_retention (2h)");
        config_diag_clear(&diag);

        config_init_defaults(&c);
        assert_int_equal(config_set(&c, "history", "coarse_retention", "1h", NULL), 0);
        assert_int_equal(config_check(&c, &error), 0);
        assert_null(error);
        assert_int_equal(config_set(&c, "history", "fine_retention", "90min", NULL), 0);
        assert_int_equal(config_check(&c, &error), -EINVAL);
        assert_string_equal(error, "coarse_retention: 1h is shorter than fine_retention (90min)");
        free(error);
        assert_int_equal(config_set(&c, "history", "coarse_retention", "90min", NULL), 0);
        assert_int_equal(config_check(&c, &error), 0);
        assert_null(error);
}

/* config_dump() writes what config_load() reads back unchanged, without a message. */
static void assert_dump_roundtrip(const Config *c)
{
        ConfigDiag diag = {0};
        const char *path;
        char *text = NULL;
        size_t len = 0;
        Config back;
        FILE *f;

        f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(config_dump(c, f), 0);
        assert_int_equal(fclose(f), 0);
        path = write_tmp("dump.conf", text, len);
        assert_int_equal(config_load(&back, path, NULL, &diag), 0);
        assert_int_equal(diag.n_messages, 0);
        assert_true(config_equal(c, &back, NULL));
        free(text);
}

static void test_dump(void **state)
{
        Config c;
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        make_tmpdir();
        config_init_defaults(&c);
        assert_dump_roundtrip(&c);
        assert_int_equal(config_load(&c, FIXTURES "/good.conf", NULL, NULL), 0);
        assert_dump_roundtrip(&c);

        f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(config_dump(&c, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(text, "[probe]\ncpus = 1,3-5\npriority = 50\nthreshold = 20us\n"
                                     "preheat = 1500ms\ncounter = clock\n\n[history]\n"));
        assert_non_null(strstr(text, "coarse_retention = 7d\n"));
        assert_non_null(strstr(text, "max_message = 1MiB\nidle_timeout = 90s\n"));
        free(text);

        config_init_defaults(&c);
        text = NULL;
        f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(config_dump(&c, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(text, "[server]\nsocket =\nadmin_group =\nmax_clients = 64\n"));
        assert_non_null(strstr(text, "fine_retention = 10min\ncoarse_retention = 24h\n"));
        free(text);
        remove_tmpdir();
}

static void test_equal_by_section(void **state)
{
        Config a, b;

        config_init_defaults(&a);
        b = a;
        assert_true(config_equal(&a, &b, NULL));
        assert_int_equal(config_set(&b, "server", "max_clients", "5", NULL), 0);
        assert_false(config_equal(&a, &b, NULL));
        assert_false(config_equal(&a, &b, "server"));
        assert_true(config_equal(&a, &b, "probe"));
        assert_true(config_equal(&a, &b, "history"));
        assert_int_equal(config_set(&b, "probe", "cpus", "1", NULL), 0);
        assert_false(config_equal(&a, &b, "probe"));
}

/* The shipped file lists every key of the table, commented out at its default: with the
 * markers in front of the keys removed it loads without a message and gives the defaults. */
static void test_shipped_file(void **state)
{
        ConfigDiag diag = {0};
        const ConfigKey *keys;
        char *line = NULL, section[64] = "", path[128];
        unsigned *seen;
        size_t cap = 0, n;
        Config c, defaults;
        FILE *in, *out;

        make_tmpdir();
        keys = config_keys(&n);
        seen = calloc(n, sizeof(*seen));
        assert_non_null(seen);
        in = fopen(SHIPPED, "re");
        assert_non_null(in);
        snprintf(path, sizeof(path), "%s/uncommented.conf", tmpdir);
        out = fopen(path, "we");
        assert_non_null(out);
        while (getline(&line, &cap, in) > 0) {
                char key[64];
                int len = 0;

                if (sscanf(line, "[%63[^]]]", section) == 1) {
                        fputs(line, out);
                        continue;
                }
                /* "#key = value": a key shown at its default. "# text": an explanation. */
                if (sscanf(line, "#%63[a-z_] =%n", key, &len) == 1 && len > 0) {
                        const ConfigKey *k = config_key_find(section, key);

                        assert_non_null(k);
                        seen[k - keys]++;
                        fputs(line + 1, out);
                } else {
                        fputs(line, out);
                }
        }
        free(line);
        assert_int_equal(fclose(in), 0);
        assert_int_equal(fclose(out), 0);
        for (size_t i = 0; i < n; i++) {
                if (seen[i] != 1) {
                        fail_msg("[%s] %s appears %u times in %s", keys[i].section, keys[i].name,
                                 seen[i], SHIPPED);
                }
        }
        free(seen);

        config_init_defaults(&defaults);
        assert_int_equal(config_load(&c, path, NULL, &diag), 0);
        for (size_t i = 0; i < diag.n_messages; i++) {
                print_error("%s\n", diag.messages[i].text);
        }
        assert_int_equal(diag.n_messages, 0);
        assert_true(config_equal(&c, &defaults, NULL));

        /* The file as shipped must load cleanly too. */
        assert_int_equal(config_load(&c, SHIPPED, NULL, &diag), 0);
        assert_int_equal(diag.n_messages, 0);
        remove_tmpdir();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_key_table),
                cmocka_unit_test(test_good_file),
                cmocka_unit_test(test_bad_values),
                cmocka_unit_test(test_unknown_key_and_section),
                cmocka_unit_test(test_syntax_errors),
                cmocka_unit_test(test_duplicate_key),
                cmocka_unit_test(test_dropins),
                cmocka_unit_test(test_dropin_error),
                cmocka_unit_test(test_fifo_refused),
                cmocka_unit_test(test_missing_files),
                cmocka_unit_test(test_unreadable),
                cmocka_unit_test(test_odd_bytes),
                cmocka_unit_test(test_config_set),
                cmocka_unit_test(test_cross_check),
                cmocka_unit_test(test_dump),
                cmocka_unit_test(test_equal_by_section),
                cmocka_unit_test(test_shipped_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

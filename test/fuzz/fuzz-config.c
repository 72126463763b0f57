/* fuzz-config: config_load() on arbitrary file contents.
 *
 * The input is the main file; a line "#--dropin--" splits off the rest as a drop-in. Checked:
 * the result agrees with the diagnostics (success exactly when there is no error), a refused
 * configuration leaves the Config untouched, every message names the file it is about, an
 * accepted one passes config_check(), and config_dump() of it loads back without a message to
 * the same values. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config-internal.h"

#define CFG_DROPIN_MARK "\n#--dropin--\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char cfg_dir[64], cfg_main[96], cfg_dropin_dir[96], cfg_dropin[128], cfg_dump[96];

static void cfg_cleanup(void)
{
        unlink(cfg_main);
        unlink(cfg_dropin);
        unlink(cfg_dump);
        rmdir(cfg_dropin_dir);
        rmdir(cfg_dir);
}

static void cfg_setup(void)
{
        const char *tmp = getenv("TMPDIR");

        snprintf(cfg_dir, sizeof(cfg_dir), "%s/jitterd-fuzz-config.XXXXXX",
                 tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
        if (!mkdtemp(cfg_dir)) {
                perror("fuzz-config: mkdtemp");
                abort();
        }
        snprintf(cfg_main, sizeof(cfg_main), "%s/jitterd.conf", cfg_dir);
        snprintf(cfg_dropin_dir, sizeof(cfg_dropin_dir), "%s/jitterd.conf.d", cfg_dir);
        snprintf(cfg_dropin, sizeof(cfg_dropin), "%s/10-fuzz.conf", cfg_dropin_dir);
        snprintf(cfg_dump, sizeof(cfg_dump), "%s/dump.conf", cfg_dir);
        if (mkdir(cfg_dropin_dir, 0700) < 0) {
                perror("fuzz-config: mkdir");
                abort();
        }
        atexit(cfg_cleanup);
}

static void cfg_write(const char *path, const void *data, size_t size)
{
        FILE *f = fopen(path, "we");

        if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
                perror("fuzz-config: writing the input");
                abort();
        }
}

static const void *cfg_memmem(const void *hay, size_t n, const char *needle)
{
        size_t len = strlen(needle);

        for (size_t i = 0; len <= n && i <= n - len; i++) {
                if (memcmp((const char *)hay + i, needle, len) == 0) {
                        return (const char *)hay + i;
                }
        }
        return NULL;
}

/* Every message is "FILE:LINE: ..." or "FILE: ..." for one of the files loaded. */
static void cfg_check_diag(const ConfigDiag *diag)
{
        size_t errors = 0;

        for (size_t i = 0; i < diag->n_messages; i++) {
                const ConfigMessage *msg = &diag->messages[i];

                if (!msg->text || (strncmp(msg->text, cfg_main, strlen(cfg_main)) != 0 &&
                                   strncmp(msg->text, cfg_dropin, strlen(cfg_dropin)) != 0)) {
                        fprintf(stderr, "fuzz-config: message without its file: %s\n",
                                msg->text ? msg->text : "(null)");
                        abort();
                }
                if (msg->severity == CONFIG_SEVERITY_ERROR) {
                        errors++;
                }
        }
        if (errors != diag->n_errors) {
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static Config defaults, c, again;
        ConfigDiag diag = { 0 };
        const char *mark;
        size_t main_len = size;
        char *err = NULL;
        int r;

        if (!cfg_dir[0]) {
                cfg_setup();
        }
        mark = cfg_memmem(data, size, CFG_DROPIN_MARK);
        if (mark) {
                main_len = (size_t)(mark - (const char *)data) + 1;
                cfg_write(cfg_dropin, mark + strlen(CFG_DROPIN_MARK),
                          size - main_len - (strlen(CFG_DROPIN_MARK) - 1));
        } else {
                unlink(cfg_dropin);
        }
        cfg_write(cfg_main, data, main_len);

        config_init_defaults(&defaults);
        c = defaults;
        r = config_load(&c, cfg_main, cfg_dropin_dir, &diag);
        if (r != 0 && r != -EINVAL && r != -ENOMEM) {
                abort();
        }
        cfg_check_diag(&diag);
        if ((r == 0) != (diag.n_errors == 0) && r != -ENOMEM) {
                fprintf(stderr, "fuzz-config: returned %d with %zu errors\n", r, diag.n_errors);
                abort();
        }
        config_diag_clear(&diag);
        if (r < 0) {
                if (!config_equal(&c, &defaults, NULL)) {
                        fprintf(stderr, "fuzz-config: a refused file changed the config\n");
                        abort();
                }
                return 0;
        }
        if (config_check(&c, &err) < 0) {
                fprintf(stderr, "fuzz-config: accepted, but config_check says: %s\n",
                        err ? err : "?");
                abort();
        }

        /* What the daemon prints with --dump-config must load back to the same values. */
        {
                FILE *f = fopen(cfg_dump, "we");

                if (!f || config_dump(&c, f) < 0 || fclose(f) != 0) {
                        abort();
                }
        }
        config_init_defaults(&again);
        r = config_load(&again, cfg_dump, NULL, &diag);
        if (r < 0 || diag.n_messages > 0 || !config_equal(&c, &again, NULL)) {
                fprintf(stderr, "fuzz-config: the dump does not load back (%d): %s\n", r,
                        diag.n_messages ? diag.messages[0].text : "values differ");
                abort();
        }
        config_diag_clear(&diag);
        return 0;
}

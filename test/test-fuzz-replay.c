/* Replays every file of the fuzz corpora (test/fuzz/NAME/: the seeds and every input that
 * once made fuzz-NAME crash) through the fuzz targets' own entry points, without libFuzzer,
 * so that the normal and the sanitizer builds keep them as regression tests. The targets abort
 * on any failed check, which fails this test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define LLVMFuzzerTestOneInput fuzz_varlink_codec_one
#include "fuzz/fuzz-varlink-codec.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_varlink_dispatch_one
#include "fuzz/fuzz-varlink-dispatch.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_config_one
#include "fuzz/fuzz-config.c"
#undef LLVMFuzzerTestOneInput

#define LLVMFuzzerTestOneInput fuzz_history_load_one
#include "fuzz/fuzz-history-load.c"
#undef LLVMFuzzerTestOneInput

/* Runs @one on every regular file of test/fuzz/@corpus, in name order; returns how many. */
static size_t replay(const char *corpus, int (*one)(const uint8_t *, size_t))
{
        char dir[4096], path[8192];
        char **names = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;
        DIR *d;

        snprintf(dir, sizeof(dir), "%s/fuzz/%s", TEST_SOURCE_DIR, corpus);
        d = opendir(dir);
        assert_non_null(d);
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.') {
                        continue;
                }
                if (n == alloc) {
                        alloc = alloc ? 2 * alloc : 64;
                        names = realloc(names, alloc * sizeof(*names));
                        assert_non_null(names);
                }
                names[n] = strdup(de->d_name);
                assert_non_null(names[n]);
                n++;
        }
        closedir(d);
        qsort(names, n, sizeof(*names), cmp_strings);

        for (size_t i = 0; i < n; i++) {
                FILE *f;
                uint8_t *buf;
                long len;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                f = fopen(path, "rb");
                assert_non_null(f);
                assert_int_equal(fseek(f, 0, SEEK_END), 0);
                len = ftell(f);
                assert_true(len >= 0);
                rewind(f);
                buf = malloc((size_t)len + 1);
                assert_non_null(buf);
                assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
                fclose(f);
                /* Printed first: the one that aborts is the last line. */
                fprintf(stderr, "replay %s/%s (%ld bytes)\n", corpus, names[i], len);
                assert_int_equal(one(buf, (size_t)len), 0);
                free(buf);
                free(names[i]);
        }
        free(names);
        return n;
}

static void test_varlink_codec(void **state)
{
        (void)state;
        assert_true(replay("varlink-codec", fuzz_varlink_codec_one) >= 10);
}

static void test_varlink_dispatch(void **state)
{
        (void)state;
        assert_true(replay("varlink-dispatch", fuzz_varlink_dispatch_one) >= 10);
}

static void test_config(void **state)
{
        (void)state;
        assert_true(replay("config", fuzz_config_one) >= 5);
}

static void test_history_load(void **state)
{
        (void)state;
        assert_true(replay("history-load", fuzz_history_load_one) >= 3);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_varlink_codec),
                cmocka_unit_test(test_varlink_dispatch),
                cmocka_unit_test(test_config),
                cmocka_unit_test(test_history_load),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

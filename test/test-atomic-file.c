/* Unit tests of daemon/atomic-file.c: the file is replaced whole with the given mode, however it
 * is synced; a failing writer leaves the old file and no temporary; a FIFO at the temporary name
 * (with or without a reader) is refused at once rather than waited on, removed, and the next
 * write succeeds. SIGALRM ends the test if a write blocks. */

#include <errno.h>
#include <fcntl.h>
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

#include "util.h"
#include "atomic-file.h"

static char dir[64];
static int dfd = -1;

static int write_text(FILE *f, void *userdata)
{
        return fputs(userdata, f) < 0 ? -EIO : 0;
}

static int write_fails(FILE *f, void *userdata)
{
        fputs("partial", f);
        return -ENOSPC;
}

/* The content of @name in the directory, or NULL when it does not exist (free() it). */
static char *read_back(const char *name)
{
        char path[128], *text = calloc(1, 4096);
        FILE *f;

        assert_non_null(text);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "re");
        if (!f) {
                free(text);
                return NULL;
        }
        (void)!fread(text, 1, 4095, f);
        fclose(f);
        return text;
}

static bool exists(const char *name)
{
        struct stat st;

        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int setup(void **state)
{
        snprintf(dir, sizeof(dir), "/tmp/test-atomic-file.XXXXXX");
        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        return 0;
}

static int teardown(void **state)
{
        char cmd[128];

        close(dfd);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

/* Each way of syncing replaces the file whole, with its mode, and leaves no temporary. */
static void test_replaces_whole(void **state)
{
        static const AtomicSync syncs[] = {ATOMIC_SYNC_NONE, ATOMIC_SYNC_FILE,
                                           ATOMIC_SYNC_FILE_AND_DIR};

        for (size_t i = 0; i < ELEMENTSOF(syncs); i++) {
                struct stat st;
                char *text;

                assert_int_equal(
                        atomic_file_write(dfd, "f.tmp", "f", 0640, syncs[i], write_text, "one\n"),
                        0);
                assert_int_equal(
                        atomic_file_write(dfd, "f.tmp", "f", 0640, syncs[i], write_text, "two\n"),
                        0);
                text = read_back("f");
                assert_string_equal(text, "two\n");
                free(text);
                assert_int_equal(fstatat(dfd, "f", &st, 0), 0);
                assert_int_equal(st.st_mode & 07777, 0640);
                assert_false(exists("f.tmp"));
                assert_int_equal(unlinkat(dfd, "f", 0), 0);
        }
}

static void test_failure_keeps_old(void **state)
{
        char *text;

        assert_int_equal(
                atomic_file_write(dfd, "f.tmp", "f", 0600, ATOMIC_SYNC_FILE, write_text, "old\n"),
                0);
        assert_int_equal(
                atomic_file_write(dfd, "f.tmp", "f", 0600, ATOMIC_SYNC_FILE, write_fails, NULL),
                -ENOSPC);
        text = read_back("f");
        assert_string_equal(text, "old\n");
        free(text);
        assert_false(exists("f.tmp"));
}

/* A FIFO nobody reads: opening it for writing would wait for a reader. */
static void test_fifo_without_reader(void **state)
{
        char path[128], *text;

        snprintf(path, sizeof(path), "%s/f.tmp", dir);
        assert_int_equal(mkfifo(path, 0600), 0);
        alarm(10);
        assert_true(atomic_file_write(dfd, "f.tmp", "f", 0600, ATOMIC_SYNC_FILE, write_text,
                                      "x\n") < 0);
        alarm(0);
        assert_false(exists("f.tmp"));
        assert_false(exists("f"));
        assert_int_equal(
                atomic_file_write(dfd, "f.tmp", "f", 0600, ATOMIC_SYNC_FILE, write_text, "y\n"), 0);
        text = read_back("f");
        assert_string_equal(text, "y\n");
        free(text);
}

/* A FIFO with a reader: writing into it would fill it and then wait. Nothing goes into it. */
static void test_fifo_with_reader(void **state)
{
        char path[128], buf[16];
        int rfd;

        snprintf(path, sizeof(path), "%s/f.tmp", dir);
        assert_int_equal(mkfifo(path, 0600), 0);
        rfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rfd >= 0);
        alarm(10);
        assert_int_equal(
                atomic_file_write(dfd, "f.tmp", "f", 0600, ATOMIC_SYNC_FILE, write_text, "x\n"),
                -EINVAL);
        alarm(0);
        assert_true(read(rfd, buf, sizeof(buf)) <= 0);
        close(rfd);
        assert_false(exists("f.tmp"));
        assert_false(exists("f"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_replaces_whole, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failure_keeps_old, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifo_without_reader, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifo_with_reader, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

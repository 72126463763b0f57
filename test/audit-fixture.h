#pragma once

/* Fixture trees for the tests of the audit and of what builds on it: a copy of
 * test/audit/base with an overlay on top, in a temporary directory, standing for a host's
 * /proc and /sys. Static helpers for the test files that include this header; each asserts
 * with cmocka. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURES TEST_SOURCE_DIR "/audit"

static inline int copy_tree(const char *from, const char *to)
{
        DIR *dir = opendir(from);
        struct dirent *de;
        int r = 0;

        if (!dir) {
                return -errno;
        }
        if (mkdir(to, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                closedir(dir);
                return r;
        }
        while (r == 0 && (de = readdir(dir))) {
                char src[PATH_MAX], dst[PATH_MAX];
                struct stat st;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
                        continue;
                }
                if (snprintf(src, sizeof(src), "%s/%s", from, de->d_name) >= (int)sizeof(src) ||
                    snprintf(dst, sizeof(dst), "%s/%s", to, de->d_name) >= (int)sizeof(dst)) {
                        r = -ENAMETOOLONG;
                } else if (lstat(src, &st) < 0) {
                        r = -errno;
                } else if (S_ISDIR(st.st_mode)) {
                        r = copy_tree(src, dst);
                } else {
                        char buf[65536];
                        int in = open(src, O_RDONLY | O_CLOEXEC);
                        int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                        ssize_t n;

                        if (in < 0 || out < 0) {
                                r = -EIO;
                        }
                        while (r == 0 && (n = read(in, buf, sizeof(buf))) > 0) {
                                if (write(out, buf, (size_t)n) != n) {
                                        r = -EIO;
                                }
                        }
                        if (in >= 0) {
                                close(in);
                        }
                        if (out >= 0) {
                                close(out);
                        }
                }
        }
        closedir(dir);
        return r;
}

static inline int remove_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(p);
}

static inline void remove_tree(const char *root)
{
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void mkdir_parents(char *p)
{
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                mkdir(p, 0755);
                *s = '/';
        }
}

/* Makes a new empty temporary directory into @root (PATH_MAX bytes): below $TMPDIR, else in
 * /dev/shm where it can be written (a tree is a few hundred small files, copied for each case:
 * on a busy disk that takes seconds, in memory milliseconds), else in /tmp. Returns 0 or -1. */
static inline int fixture_tree_make(char *root)
{
        const char *dir = getenv("TMPDIR");

        if (!dir || !dir[0]) {
                dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        }
        snprintf(root, PATH_MAX, "%s/jitterd-audit-XXXXXX", dir);
        return mkdtemp(root) ? 0 : -1;
}

/* Lays test/audit/@overlay over what @root holds. */
static inline void fixture_tree_overlay(const char *root, const char *overlay)
{
        char p[PATH_MAX];

        snprintf(p, sizeof(p), FIXTURES "/%s", overlay);
        assert_int_equal(copy_tree(p, root), 0);
}

/* Fills @root with base/ and, if @overlay is given, test/audit/@overlay on top. */
static inline void fixture_tree_load(const char *root, const char *overlay)
{
        assert_int_equal(copy_tree(FIXTURES "/base", root), 0);
        if (overlay) {
                fixture_tree_overlay(root, overlay);
        }
}

/* Writes @content and a newline to @rel below @root, making the directories on the way. */
static inline void fixture_tree_put(const char *root, const char *rel, const char *content)
{
        char p[PATH_MAX];
        FILE *file;

        assert_true(snprintf(p, sizeof(p), "%s/%s", root, rel) < (int)sizeof(p));
        mkdir_parents(p);
        file = fopen(p, "we");
        assert_non_null(file);
        fprintf(file, "%s\n", content);
        assert_int_equal(fclose(file), 0);
}

/* Removes @rel below @root, a file or a whole tree. */
static inline void fixture_tree_drop(const char *root, const char *rel)
{
        char p[PATH_MAX];

        assert_true(snprintf(p, sizeof(p), "%s/%s", root, rel) < (int)sizeof(p));
        remove_tree(p);
}

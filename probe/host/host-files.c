#include "host-files.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Files kept open: /proc/interrupts, /proc/softirqs and a status file per probe thread. */
#define OPEN_FILES 64

struct HostFiles {
        size_t max_bytes;
        char *buf;
        size_t buf_cap;
        struct {
                char path[64];
                int fd; /* -1: free */
        } open_files[OPEN_FILES];
        size_t next_evict;
};

int host_files_new(size_t max_bytes, HostFiles **ret)
{
        HostFiles *f = calloc(1, sizeof(*f));

        if (!f) {
                return -ENOMEM;
        }
        f->max_bytes = max_bytes;
        for (size_t i = 0; i < OPEN_FILES; i++) {
                f->open_files[i].fd = -1;
        }
        *ret = f;
        return 0;
}

HostFiles *host_files_free(HostFiles *f)
{
        if (!f) {
                return NULL;
        }
        for (size_t i = 0; i < OPEN_FILES; i++) {
                if (f->open_files[i].fd >= 0) {
                        close(f->open_files[i].fd);
                }
        }
        free(f->buf);
        free(f);
        return NULL;
}

size_t host_files_memory_bytes(const HostFiles *f)
{
        return f ? sizeof(*f) + f->buf_cap : 0;
}

/* An open descriptor of the live system's @path, kept for the next calls. Returns it (owned
 * by @f) or a negative errno. */
static int open_kept(HostFiles *f, const char *path)
{
        size_t slot;
        int fd;

        for (size_t i = 0; i < OPEN_FILES; i++) {
                if (f->open_files[i].fd >= 0 && strcmp(f->open_files[i].path, path) == 0) {
                        return f->open_files[i].fd;
                }
        }
        if (strlen(path) >= sizeof(f->open_files[0].path)) {
                return -ENAMETOOLONG;
        }
        /* O_NONBLOCK: a FIFO below the audit root must not hold the loop. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                return -errno;
        }
        slot = f->next_evict;
        f->next_evict = (f->next_evict + 1) % OPEN_FILES;
        if (f->open_files[slot].fd >= 0) {
                close(f->open_files[slot].fd);
        }
        f->open_files[slot].fd = fd;
        strcpy(f->open_files[slot].path, path);
        return fd;
}

/* Closes the kept descriptor @fd (a thread's status file once the thread is gone). */
static void close_kept(HostFiles *f, int fd)
{
        for (size_t i = 0; i < OPEN_FILES; i++) {
                if (f->open_files[i].fd == fd) {
                        close(fd);
                        f->open_files[i].fd = -1;
                }
        }
}

/* Doubles the buffer, up to max_bytes + 1. Returns 1 when it grew, 0 when it is at its bound,
 * -ENOMEM. */
static int grow(HostFiles *f)
{
        size_t cap = f->buf_cap ? f->buf_cap * 2 : 16384;
        char *b;

        if (f->buf_cap >= f->max_bytes + 1) {
                return 0;
        }
        if (cap > f->max_bytes + 1) {
                cap = f->max_bytes + 1;
        }
        b = realloc(f->buf, cap);
        if (!b) {
                return -ENOMEM;
        }
        f->buf = b;
        f->buf_cap = cap;
        return 1;
}

/* Reads all of @fd from offset 0 into the buffer (see host_files_read()). Returns the length
 * or a negative errno. */
static ssize_t read_all(HostFiles *f, int fd)
{
        size_t len = 0;

        for (;;) {
                ssize_t k;

                if (len + 1 >= f->buf_cap) {
                        int r = grow(f);

                        if (r < 0) {
                                return r;
                        }
                        if (r == 0) {
                                break;
                        }
                }
                k = pread(fd, f->buf + len, f->buf_cap - 1 - len, (off_t)len);
                if (k < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        return -errno;
                }
                if (k == 0) {
                        f->buf[len] = '\0';
                        return (ssize_t)len;
                }
                len += (size_t)k;
        }
        /* Bound reached: a partial last line would give a wrong value, drop it. */
        while (len > 0 && f->buf[len - 1] != '\n') {
                len--;
        }
        f->buf[len] = '\0';
        return (ssize_t)len;
}

ssize_t host_files_read(HostFiles *f, const char *root, const char *path, const char **ret_text)
{
        _cleanup_close_ int fd = -1;
        char full[PATH_MAX];
        ssize_t len;
        int r;

        if (!root || !root[0]) {
                int kept = open_kept(f, path);

                if (kept < 0) {
                        return kept;
                }
                len = read_all(f, kept);
                if (len < 0 && len != -ENOMEM) {
                        close_kept(f, kept);
                }
                *ret_text = f->buf;
                return len;
        }
        r = snprintf(full, sizeof(full), "%s%s", root, path);
        if (r < 0 || (size_t)r >= sizeof(full)) {
                return -ENAMETOOLONG;
        }
        fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                return -errno;
        }
        len = read_all(f, fd);
        *ret_text = f->buf;
        return len;
}

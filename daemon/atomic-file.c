#include "atomic-file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Writes @tmp in @dfd with @write, flushed and, unless @sync is ATOMIC_SYNC_NONE, synced.
 * Returns 0 or a negative errno; refuses what is not a regular file at @tmp. */
static int write_tmp(int dfd, const char *tmp, mode_t mode, AtomicSync sync,
                     int (*write)(FILE *f, void *userdata), void *userdata)
{
        struct stat st = {0};
        /* O_NONBLOCK: a FIFO left at @tmp would otherwise hold the caller until something
         * reads it; it is refused (and removed by the caller), a regular file is not
         * affected. */
        _cleanup_close_ int fd = openat(
                dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);
        FILE *f;
        int r;

        if (fd < 0) {
                return -errno;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                return !S_ISREG(st.st_mode) && st.st_mode != 0 ? -EINVAL : -errno;
        }
        if (fchmod(fd, mode) < 0) {
                return -errno;
        }
        f = fdopen(fd, "we");
        if (!f) {
                return -errno;
        }
        fd = -1; /* @f owns it now */
        r = write(f, userdata);
        if (r >= 0 && fflush(f) != 0) {
                r = -errno;
        }
        if (r >= 0 && sync != ATOMIC_SYNC_NONE && fsync(fileno(f)) < 0) {
                r = -errno;
        }
        if (fclose(f) != 0 && r >= 0) {
                r = -errno;
        }
        return r;
}

int atomic_file_write(int dfd, const char *tmp, const char *name, mode_t mode, AtomicSync sync,
                      int (*write)(FILE *f, void *userdata), void *userdata)
{
        int r = write_tmp(dfd, tmp, mode, sync, write, userdata);

        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0) {
                r = -errno;
        }
        if (r < 0) {
                (void)unlinkat(dfd, tmp, 0);
                return r;
        }
        if (sync == ATOMIC_SYNC_FILE_AND_DIR) {
                (void)fsync(dfd);
        }
        return 0;
}

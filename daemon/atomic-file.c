#include "atomic-file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int atomic_file_write(int dfd, const char *tmp, const char *name, mode_t mode, AtomicSync sync,
                      int (*write)(FILE *f, void *userdata), void *userdata)
{
        struct stat st = {0};
        FILE *f;
        int fd, r;

        /* O_NONBLOCK: a FIFO left at @tmp would otherwise hold the caller until something
         * reads it; it is refused (and removed below), a regular file is not affected. */
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                    mode);
        if (fd < 0) {
                r = -errno;
                goto fail;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                r = !S_ISREG(st.st_mode) && st.st_mode != 0 ? -EINVAL : -errno;
                close(fd);
                goto fail;
        }
        if (fchmod(fd, mode) < 0) {
                r = -errno;
                close(fd);
                goto fail;
        }
        f = fdopen(fd, "we");
        if (!f) {
                r = -errno;
                close(fd);
                goto fail;
        }
        r = write(f, userdata);
        if (r >= 0 && fflush(f) != 0) {
                r = -errno;
        }
        if (r >= 0 && sync != ATOMIC_SYNC_NONE && fsync(fd) < 0) {
                r = -errno;
        }
        if (fclose(f) != 0 && r >= 0) {
                r = -errno;
        }
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0) {
                r = -errno;
        }
        if (r >= 0) {
                if (sync == ATOMIC_SYNC_FILE_AND_DIR) {
                        (void)fsync(dfd);
                }
                return 0;
        }
fail:
        (void)unlinkat(dfd, tmp, 0);
        return r;
}

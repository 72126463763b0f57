#include "host.h"

#include "cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int host_read_text(const char *path, char *buf, size_t size)
{
        size_t len = 0;
        int fd, r;

        buf[0] = '\0';
        /* O_NONBLOCK: a FIFO in a fixture tree must not hold the caller's loop. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                return -errno;
        }
        while (len < size - 1) {
                ssize_t n = read(fd, buf + len, size - 1 - len);

                if (n < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        r = -errno;
                        close(fd);
                        buf[0] = '\0';
                        return r;
                }
                if (n == 0) {
                        break;
                }
                len += (size_t)n;
        }
        close(fd);
        buf[len] = '\0';
        /* A NUL inside the text would cut it short for every string function after us. */
        for (size_t i = 0; i < len; i++) {
                if (buf[i] == '\0') {
                        buf[i] = ' ';
                }
        }
        while (len > 0 && isspace((unsigned char)buf[len - 1])) {
                buf[--len] = '\0';
        }
        return 0;
}

/* host_read_text() of @root followed by the formatted path. Returns 0, -ENAMETOOLONG, or the
 * negative errno of the read. */
__attribute__((format(printf, 4, 5))) static int read_textf(const char *root, char *buf,
                                                            size_t size, const char *fmt, ...)
{
        char path[PATH_MAX];
        va_list ap;
        int n, m;

        buf[0] = '\0';
        n = snprintf(path, sizeof(path), "%s", root ? root : "");
        if (n < 0 || (size_t)n >= sizeof(path)) {
                return -ENAMETOOLONG;
        }
        va_start(ap, fmt);
        m = vsnprintf(path + n, sizeof(path) - (size_t)n, fmt, ap);
        va_end(ap);
        if (m < 0 || (size_t)m >= sizeof(path) - (size_t)n) {
                return -ENAMETOOLONG;
        }
        return host_read_text(path, buf, size);
}

int host_read_cpulist(const char *root, const char *path, cpu_set_t *ret_set)
{
        char text[8192];
        int r;

        r = read_textf(root, text, sizeof(text), "%s", path);
        if (r < 0) {
                return r;
        }
        if (text[0] == '\0' || strcmp(text, "(null)") == 0) {
                CPU_ZERO(ret_set);
                return 0;
        }
        return cpulist_parse(text, ret_set);
}

bool host_cpu_online(int cpu)
{
        char path[128], text[16];
        int r;

        r = read_textf(NULL, text, sizeof(text), "/sys/devices/system/cpu/cpu%d/online", cpu);
        if (r < 0) {
                snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
                return access(path, F_OK) == 0;
        }
        return text[0] == '1';
}

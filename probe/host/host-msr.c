#include "host-msr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum {
        MSR_CLOSED,
        MSR_OPEN,
        MSR_UNSUPPORTED, /* opened but the read fails: the CPU has no such MSR (VMs) */
};

void host_msr_init(HostMsr *m)
{
        m->state = MSR_CLOSED;
        m->fd = -1;
        m->retry = 0;
        m->path[0] = '\0';
}

static void msr_close(HostMsr *m)
{
        /* The file descriptor counts only while open: a zeroed HostMsr is closed too. */
        if (m->state == MSR_OPEN && m->fd >= 0) {
                close(m->fd);
        }
        m->fd = -1;
        m->state = MSR_CLOSED;
}

void host_msr_done(HostMsr *m)
{
        msr_close(m);
}

int host_msr_read(HostMsr *m, const char *root, int cpu, uint32_t reg, uint64_t *ret)
{
        char path[PATH_MAX];
        uint64_t v;
        ssize_t k;
        int r;

        r = snprintf(path, sizeof(path), "%s/dev/cpu/%d/msr", root ? root : "", cpu);
        if (r < 0 || (size_t)r >= sizeof(path)) {
                return -ENAMETOOLONG;
        }
        if (strcmp(path, m->path) != 0) {
                msr_close(m);
                strcpy(m->path, path);
                m->retry = 0;
        }
        if (m->state == MSR_UNSUPPORTED) {
                return -EOPNOTSUPP;
        }
        if (m->state == MSR_CLOSED) {
                /* An open() that fails costs a path walk: not at every call. */
                if (m->retry > 0) {
                        m->retry--;
                        return -EAGAIN;
                }
                m->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (m->fd < 0) {
                        m->retry = HOST_MSR_RETRY_CALLS - 1;
                        return -EAGAIN;
                }
                m->state = MSR_OPEN;
        }
        do {
                k = pread(m->fd, &v, sizeof(v), reg);
        } while (k < 0 && errno == EINTR);
        if (k != (ssize_t)sizeof(v)) {
                /* EIO: the CPU (or hypervisor) does not implement the MSR; it will not start
                 * to. */
                msr_close(m);
                m->state = MSR_UNSUPPORTED;
                return -EOPNOTSUPP;
        }
        *ret = v;
        return 0;
}

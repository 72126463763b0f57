#pragma once

/* A model-specific register of one CPU, read through /dev/cpu/N/msr below a root. Most
 * machines have no msr module loaded, or the reader lacks CAP_SYS_RAWIO: a failed open is
 * tried again only every HOST_MSR_RETRY_CALLS calls. Once open the file stays open, so that
 * the register stays readable after capabilities are dropped. Never logs. */

#include <limits.h>
#include <stdint.h>

/* After an MSR file could not be opened, it is tried again after this many calls. */
#define HOST_MSR_RETRY_CALLS 64

typedef struct HostMsr {
        int state;
        int fd;
        unsigned retry; /* calls to go before the file is tried again */
        char path[PATH_MAX];
} HostMsr;

/* Makes @m closed, with nothing tried yet (as a zeroed HostMsr is). */
void host_msr_init(HostMsr *m);

/* Closes the file @m holds; @m is as after host_msr_init(). */
void host_msr_done(HostMsr *m);

/* Reads register @reg of CPU @cpu below @root (NULL or "" for the live system) into @ret.
 * Returns 0, -EAGAIN when the file is not open (tried again later), -EOPNOTSUPP when the CPU
 * or its hypervisor has no such register (never tried again for this path), -ENAMETOOLONG. */
int host_msr_read(HostMsr *m, const char *root, int cpu, uint32_t reg, uint64_t *ret);

#pragma once

/* For the tests that record kernel trace events: makes sure tracefs is mounted at
 * /sys/kernel/tracing, mounting it when it is not (and unmounting at exit only what was
 * mounted here), or says why it cannot be and the test exits 77. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#define TEST_TRACEFS "/sys/kernel/tracing"

static bool tracefs_mounted_here;

static void tracefs_unmount_at_exit(void)
{
        if (tracefs_mounted_here && umount(TEST_TRACEFS) < 0) {
                fprintf(stderr, "cannot unmount %s: %s\n", TEST_TRACEFS, strerror(errno));
        }
}

/* Returns true when tracefs is usable at TEST_TRACEFS; otherwise prints why to stderr. */
static inline bool tracefs_ensure_mounted(void)
{
        struct statfs sf;

        if (statfs(TEST_TRACEFS, &sf) == 0 && (uint32_t)sf.f_type == 0x74726163) {
                return true;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: tracefs is not mounted at %s and mounting needs root\n",
                        TEST_TRACEFS);
                return false;
        }
        if (mount("nodev", TEST_TRACEFS, "tracefs", 0, NULL) < 0) {
                fprintf(stderr, "skipped: cannot mount tracefs at %s: %s\n", TEST_TRACEFS,
                        strerror(errno));
                return false;
        }
        tracefs_mounted_here = true;
        atexit(tracefs_unmount_at_exit);
        return true;
}

/* Tracing instances need root here (tracefs files are root's, mode 0640). */
static inline bool tracefs_usable(void)
{
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: recording trace events needs root\n");
                return false;
        }
        return tracefs_ensure_mounted();
}

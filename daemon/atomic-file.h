#pragma once

/* Replacing a file so that a reader, or the next start after a crash, sees either the old
 * content or the new one, never a part. */

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* How far a replacement is made to last. */
typedef enum AtomicSync {
        /* Not synced: readers see the old content or the new one, but after a crash the file
         * may be empty. For a file written anew every interval, which no one needs after a
         * crash: the writer never waits for the disk. */
        ATOMIC_SYNC_NONE,
        /* The file flushed to disk before the rename (without that, a crash after the rename
         * could leave an empty file in its place). */
        ATOMIC_SYNC_FILE,
        /* And the directory synced after it, so that the rename lasts too. */
        ATOMIC_SYNC_FILE_AND_DIR,
} AtomicSync;

/* Replaces @name in the directory @dfd with what @write puts into the stream it is given:
 * written to @tmp in the same directory (a rename works only within one file system), synced
 * as @sync says, renamed over @name. The file gets @mode whatever the umask. On failure @tmp
 * is removed and @name is left as it was. Returns 0, or a negative errno: @write's own or the
 * system's. */
int atomic_file_write(int dfd, const char *tmp, const char *name, mode_t mode, AtomicSync sync,
                      int (*write)(FILE *f, void *userdata), void *userdata);

#pragma once

/* Replacing a file so that a reader, or the next start after a crash, sees either the old
 * content or the new one, never a part. */

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Replaces @name in the directory @dfd with what @write puts into the stream it is given:
 * written to @tmp in the same directory (a rename works only within one file system), flushed
 * to disk (without that, a crash after the rename could leave an empty file in its place),
 * renamed over @name and, with @sync_dir, the directory synced so that the rename lasts too.
 * The file gets @mode whatever the umask. On failure @tmp is removed and @name is left as it
 * was. Returns 0, or a negative errno: @write's own or the system's. */
int atomic_file_write(int dfd, const char *tmp, const char *name, mode_t mode, bool sync_dir,
                      int (*write)(FILE *f, void *userdata), void *userdata);

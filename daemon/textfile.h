#pragma once

/* The Prometheus textfile for node_exporter ([export] prometheus_textfile), rewritten from the
 * GetStatus, GetStats and GetHistogram replies at the first harvest and then at the first
 * harvest each [export] prometheus_textfile_interval. */

#include "manager.h"

typedef struct Textfile Textfile;

/* Adds a harvest hook to @m that writes the textfile when one is configured and it is due (the
 * path and the interval are read from the running configuration each time, so a reload takes
 * effect at once). Returns 0 or a
 * negative errno. */
int textfile_new(Manager *m, Textfile **ret);

/* Frees @t; with manager_free(), once the loop no longer runs. Accepts NULL. */
Textfile *textfile_free(Textfile *t);

static inline void textfile_freep(Textfile **t)
{
        textfile_free(*t);
}
#define _cleanup_textfile_ __attribute__((cleanup(textfile_freep)))

/* Writes the textfile if configured; a failure is logged once until writing works again.
 * Returns 0 or a negative errno. */
int textfile_write(Textfile *t);

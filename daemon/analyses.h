#pragma once

/* The analyses of a window that GetStats adds to each CPU: "causes" (the attribution sources
 * with the least-squares cost of each) and "periods" (the periodicity of the interruptions).
 *
 * Both are kept per CPU and window until the next harvest, so repeated calls cost nothing.
 * The periodicity of a minute of a noisy CPU takes a third of a second, too long for the
 * event loop: it runs on a worker thread (worker.h), and the GetStats call that needs it
 * waits, parked, while the loop goes on with the probes and the other clients. Causes are
 * computed on the loop (a fit over at most the window's intervals: milliseconds).
 *
 * Logs a periodicity that fails (out of memory), once until one succeeds again. */

#include <stdbool.h>

#include <jansson.h>

#include "history.h"
#include "manager.h"
#include "varlink-server.h"

typedef struct Analyses Analyses;

/* Creates the analyses of @m's windows, whose completions come from manager_event(@m). With
 * @threaded false the periodicity runs on the loop (see worker_new()). Returns 0 or a
 * negative errno. */
int analyses_new(Manager *m, bool threaded, Analyses **ret);

/* Frees @x; the GetStats calls it holds are ended (their connections close). Accepts NULL;
 * returns NULL. */
Analyses *analyses_free(Analyses *x);

/* Forgets what was analysed: called at each harvest, since every window moved. */
void analyses_next_generation(Analyses *x);

/* Adds "causes" (and with a fit "background") and, when known, "periods" of @cpu's window
 * @window (@w, as history_query() gave it) to the GetStats entry @o. Returns true when the periods are still to come:
 * analyses_reply_later() then completes @o. */
bool analyses_add(Analyses *x, int cpu, const char *window, const HistoryWindow *w, json_t *o);

/* Takes a reference on @call and answers it {"cpus": @cpus} once each of its @missing entries
 * that lack "periods" has them (@cpus is taken over). Returns 0 or -ENOMEM (then nothing is
 * taken). */
int analyses_reply_later(Analyses *x, VarlinkCallCtx *call, json_t *cpus, const char *window,
                         unsigned missing);

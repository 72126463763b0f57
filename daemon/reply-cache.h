#pragma once

/* The text of replies' parts that change only at a harvest, kept per (CPU, standard window):
 * GetStats' entry of a CPU for "10s" ... "all". A text is current until the next harvest
 * (reply_cache_invalidate()); the harvest writes anew those asked for since the harvest before
 * last (reply_cache_refresh()), so that a client calling at least once an interval finds them
 * written whenever it comes, and frees the others: the harvest writes no more entries than
 * clients asked for in the last two intervals, and a text is written at a call only when it
 * was not. The cache holds only the texts of what was asked for lately: at most one per
 * probed CPU and window, about 1.5 KiB each. */

#include <stddef.h>
#include <stdint.h>

#include "history.h"

typedef struct ReplyCache ReplyCache;

int reply_cache_new(ReplyCache **ret);
ReplyCache *reply_cache_free(ReplyCache *c);

/* Every text goes out of date (a harvest, a reset). */
void reply_cache_invalidate(ReplyCache *c);

/* The current text of (@cpu, @span) and its length, or NULL when there is none; notes that it
 * was asked for at @now_ns either way. */
const char *reply_cache_get(ReplyCache *c, int cpu, HistorySpan span, uint64_t now_ns,
                            size_t *ret_len);

/* Keeps @text (@len bytes, taken: freed by the cache; NULL is ignored) as the current text of
 * (@cpu, @span). */
void reply_cache_put(ReplyCache *c, int cpu, HistorySpan span, char *text, size_t len);

/* Calls @write for each (cpu, span) asked for at or after @since_ns whose text is not
 * current, so that it puts one, and frees the texts not asked for since then. */
void reply_cache_refresh(ReplyCache *c, uint64_t since_ns,
                         void (*write)(int cpu, HistorySpan span, void *userdata), void *userdata);

/* Bytes the cache holds (GetStatus' reply_cache_bytes). */
size_t reply_cache_memory_bytes(const ReplyCache *c);

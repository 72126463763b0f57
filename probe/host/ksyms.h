#pragma once

/* Names of kernel functions from /proc/kallsyms, for the hrtimer, work and IPI functions that
 * trace events carry as addresses.
 *
 * The file is opened once and kept open: the kernel decides when it is opened whether it shows
 * addresses (root with CAP_SYSLOG, or kernel.perf_event_paranoid <= 1), so names keep coming
 * after the daemon has dropped its capabilities. Reading it costs 60 to 150 ms of CPU (the
 * kernel formats every symbol: 122 000 lines on a Debian 6.x kernel), far too much to do as
 * new functions show up, so it is read once, the first time a name is needed, into an index
 * of every function symbol but the "__pfx_" padding (12 bytes and the name, cut to
 * KSYMS_NAME_MAX - 1 bytes, per function: 2.2 MiB for 64 000 functions there); later names
 * come from the index. It is read again only when an address
 * falls outside the functions it knows (a module loaded since), at most once per 10 minutes.
 * An unknown address is queued by ksyms_lookup() and named by the next ksyms_resolve(). The
 * names handed out are remembered, at most KSYMS_MAX addresses; later ones stay unnamed. This
 * module never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KSYMS_MAX 1024
#define KSYMS_NAME_MAX 32

typedef struct Ksyms Ksyms;

/* Opens @path (NULL: /proc/kallsyms). Returns 0, -ENOMEM, or the negative errno of open(). */
int ksyms_new(const char *path, Ksyms **ret);

/* Closes the file and frees @k; accepts NULL; returns NULL. */
Ksyms *ksyms_free(Ksyms *k);

/* The name of the function at @addr ("hrtimer_wakeup", "flush_tlb_func+0x10"), or NULL when
 * it is not known yet; the address is then queued for the next ksyms_resolve() (or dropped
 * when KSYMS_MAX addresses are known already). An address without a symbol gets its hex
 * value as name. */
const char *ksyms_lookup(Ksyms *k, uint64_t addr);

/* Names every queued address, from the index; reads the file into it the first time (or
 * again, see above). Returns how many were named (0 when none was queued), or the negative
 * errno of a failed first read (they stay queued). */
int ksyms_resolve(Ksyms *k);

/* How many times the file was read. */
unsigned ksyms_passes(const Ksyms *k);

/* Bytes of memory @k holds, with its index (NULL: without one). */
size_t ksyms_memory_bytes(const Ksyms *k);

#pragma once

/* Names of kernel functions from /proc/kallsyms, for the hrtimer, work and IPI functions that
 * trace events carry as addresses.
 *
 * The file is opened once and kept open: the kernel decides when it is opened whether it shows
 * addresses (root with CAP_SYSLOG, or kernel.perf_event_paranoid <= 1), so names keep coming
 * after the daemon has dropped its capabilities. Reading the whole file costs tens of
 * milliseconds, so it is not read per address: an unknown address is queued, and
 * ksyms_resolve() finds every queued one in a single pass. Bounded: at most KSYMS_MAX
 * addresses are remembered, later ones stay unnamed. This module never logs. */

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

/* Reads the file once and names the queued addresses, at most 64 of them (the others wait
 * for the next call). Returns how many were named (0 when none was queued), or the negative
 * errno of a failed read (they stay queued). */
int ksyms_resolve(Ksyms *k);

/* The file shows only zero addresses (no CAP_SYSLOG when it was opened): functions get their
 * hex address as name. Known after the first ksyms_resolve() that had work. */
bool ksyms_hidden(const Ksyms *k);

/* Bytes of memory a Ksyms holds. */
size_t ksyms_memory_bytes(void);

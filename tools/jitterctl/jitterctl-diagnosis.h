#pragma once

/* jitterctl doctor's diagnosis: the trace causes of a window's interruptions (GetCauses),
 * ranked by the time they took, each joined to the audit's knowledge of what lets it onto the
 * CPU and the fix that moves it away (audit_remedy()), and to the daemon's audit finding of
 * that setting. Pure but for audit_remedy()'s reads of the host: no calls to the daemon, no
 * output but to the FILE given. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "audit.h"

/* What the diagnosis is made of: the daemon's replies, as they came, and the host. */
typedef struct DiagnosisInput {
        const char *window; /* the window asked for ("1m", "all", ...) */
        json_t *causes;     /* GetCauses' reply: {"trace", "cpus": [...]} */
        /* The window's figures per CPU, as GetStats has them ({"cpus": [{"cpu",
         * "duration_ns", "interruptions": {"count"}, "lost_ns", "cpu_available_pct"}]}), or
         * NULL */
        json_t *stats;
        json_t *events;             /* GetEvents' reply over the window (newest last), or NULL */
        json_t *findings;           /* Audit's reply, or NULL */
        Audit *host;                /* the host the daemon runs on, read for the remedies */
        int64_t boot_minus_mono_ns; /* CLOCK_BOOTTIME - CLOCK_MONOTONIC on that host */
} DiagnosisInput;

/* Builds the diagnosis into @ret: {"window", "trace", "housekeeping" (CPU list or null),
 * "interruptions_ns" (of all the CPUs), "cpus": [{"cpu", "window_ns", "interruptions",
 * "kept", "interruptions_ns", "lost_ns", "cpu_available_pct", "trace_lost", "trace_lost_ns",
 * "steal_ns", "smi" (the last three null where the daemon does not give them)}], "causes":
 * [one per cause, longest first: {"rank", "kind", "name", "what", "cpus", "ns",
 * "overhead_ns" (the part of ns that is its entry and exit), "count", "share" (of the
 * interruptions' time), "gain_pct" (the share of the CPUs' time it would give back),
 * "ns_per_s", and audit_remedy()'s "check", "setting", "when", "command", "persist", "revert",
 * "note", "ask_host" (and for tasks "identity", "pid"), "finding" (the daemon's finding of
 * that check on that CPU: {"severity", "seen"}, or null); for the time without a kernel
 * record also "steal_ns" and "smi" of its CPUs (null where not read)}]}. A cause takes the
 * time of its own and, where GetCauses gives one, its "overhead_ns". Malformed parts of the
 * replies are left out. Returns 0, -EINVAL when @in has no causes or no host, -ENOMEM. */
int diagnosis_build(const DiagnosisInput *in, json_t **ret);

/* Prints the diagnosis @d as text to @f: a line per CPU, then each cause with at least
 * @min_share of the time (and the rest summed on one line), with its setting, fix, how to keep
 * and undo it. With @color, ANSI escapes. */
void diagnosis_print(json_t *d, FILE *f, double min_share, bool color);

#pragma once

/* What jitterd needs from the kernel, checked before anything starts, and given up as soon
 * as it is no longer needed: SCHED_FIFO for the probes and the event loop (CAP_SYS_NICE or
 * RLIMIT_RTPRIO) and mlockall (CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK). */

#include <stdbool.h>

/* Checks that SCHED_FIFO at @priority for the probes and at @loop_priority for the event loop
 * (0: not wanted) and mlockall are allowed. On failure returns -EPERM and sets @ret_error
 * (free() it) to a message naming the capability or rlimit and how to grant it. */
int privileges_check(unsigned priority, unsigned loop_priority, char **ret_error);

/* Locks all current and future memory. With CAP_IPC_LOCK it first lifts RLIMIT_MEMLOCK, so the
 * capability can be dropped afterwards without later allocations failing. Memory is never
 * handed back to the kernel afterwards (no TLB flush reaches the probes). Returns 0 or a
 * negative errno. */
int privileges_lock_memory(void);

/* Reduces the calling thread's capabilities to CAP_SYS_NICE when @keep_nice (to start SCHED_FIFO
 * probes again on reload) and to nothing otherwise. With @keep_dac, CAP_DAC_OVERRIDE stays
 * permitted but not effective, for privileges_dac() around the tracefs instance's creation and
 * removal. Returns 0 or a negative errno. */
int privileges_drop(bool keep_nice, bool keep_dac);

/* Makes CAP_DAC_OVERRIDE effective (@on) or not in the calling thread, when it is permitted;
 * does nothing otherwise. */
void privileges_dac(bool on);

/* For threads that need no privilege (the probes): drops every capability and blocks every
 * signal in the calling thread. */
void privileges_thread_init(void *userdata);

/* True if @cap is in the calling thread's effective set. */
bool privileges_have(int cap);

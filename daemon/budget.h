#pragma once

/* A token bucket of CPU time: a budget that earns @rate ns of CPU per ns of time, saves at most
 * @burst_ns, and lets work through while anything is saved. The cost of what it let through is
 * charged afterwards, as measured, so one piece of work may overdraw it: the debt is then paid
 * back before anything else gets through. Times are CLOCK_MONOTONIC ns, given by the caller, so
 * that tests choose them. Never logs.
 *
 * The struct is public so that its owner can embed it; use the functions. */

#include <stdint.h>

typedef struct Budget {
        double rate;      /* CPU ns earned per ns of time: 0.08 is 8 % of a core */
        double burst_ns;  /* most that can be saved */
        double tokens_ns; /* saved; negative while in debt */
        uint64_t last_ns; /* when the tokens were last brought up to date */
} Budget;

/* Starts @b full at @now_ns. @rate must be > 0. */
void budget_init(Budget *b, double rate, uint64_t burst_ns, uint64_t now_ns);

/* Returns 0 when something is saved at @now_ns (the work may go ahead), otherwise how many ns
 * from @now_ns until something will be (at least 1). */
uint64_t budget_admit(Budget *b, uint64_t now_ns);

/* Takes @cost_ns off at @now_ns. */
void budget_charge(Budget *b, uint64_t now_ns, uint64_t cost_ns);

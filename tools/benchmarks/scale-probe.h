#pragma once

/* What the scale benchmark does to a probe in place of its thread (probe-private.h): the
 * synthetic CPUs are probes made with probe_new() and never started, whose slots get a
 * recorded interval as the loop would have left it; and a real probe's slot is captured the
 * same way to record those intervals. The owner's side (advance, harvest) stays the real
 * one. */

#include "probe.h"
#include "scale-fixture.h"

/* Makes the unstarted probe @p look running, as its thread would once preheated: state
 * running, thread id @tid (for the attribution's status file), floor and band from @x, and
 * every epoch set so far acknowledged. */
void scale_probe_run(Probe *p, const ScaleFixture *x, int tid);

/* Writes @iv into the slot of @p's current epoch, starting at @start_ticks, as the loop would
 * have (counts added to the pair table and histograms, the statistics as the loop keeps
 * them), and pushes its interruptions to the ring. The slot must be empty (harvested). */
void scale_probe_fill(Probe *p, const ScaleInterval *iv, uint64_t start_ticks);

/* Acknowledges the epoch the owner set last, as the loop does when it sees it. */
void scale_probe_ack(Probe *p);

/* Copies the slot of @epoch of a real, running probe (which has acknowledged a newer epoch,
 * so no longer writes it) into @ret as the loop left it, before probe_harvest() folds it, and
 * its first sample's counter into @ret_start_ticks; the ring is left to the caller. @ret's arrays
 * are new (scale_interval_clear()). Returns 0, -EAGAIN while the probe has not moved on, -ENOMEM.
 */
int scale_probe_capture(Probe *p, uint64_t epoch, ScaleInterval *ret, uint64_t *ret_start_ticks);

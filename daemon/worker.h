#pragma once

/* A background worker for the event loop: jobs that take too long to run on the loop (the
 * periodicity analysis of a window takes a third of a second on a noisy CPU) run one at a
 * time on a thread of their own, and each job's completion is handed back to the loop, in
 * submission order.
 *
 * Each job runs where the thread that submitted it may run (the loop's housekeeping CPUs, as
 * they are after a reload too). The thread is started at the first submission, so that it
 * has what the loop's thread has by then (its blocked signals, the capabilities it kept), and
 * lives until worker_free(): a thread that ends gives its stack back, and unmapping
 * memory interrupts every CPU that runs a thread of the process, the probes' too. Where no
 * thread can be started, jobs run on the loop, at submission.
 *
 * A job must not touch what the loop uses meanwhile: it gets its inputs copied, and its
 * results are read in the completion callback. Never logs. */

#include <stdbool.h>

#include <systemd/sd-event.h>

typedef struct Worker Worker;

/* Runs on the worker thread (or on the loop, see above). */
typedef void (*WorkerRunFunc)(void *job);

/* Runs on the loop once @job has run. */
typedef void (*WorkerDoneFunc)(void *job, void *userdata);

/* Most jobs queued or done but not yet handed back at once. */
#define WORKER_QUEUE_MAX 64

/* Creates a worker whose completions @done(job, @userdata) are dispatched from @e. With
 * @threaded false, every job runs at submission (its completion still comes from @e): for
 * tests and fuzzing, where the order of events must not depend on a thread. Returns 0,
 * -ENOMEM, or the errno of eventfd() or sd-event. */
int worker_new(sd_event *e, bool threaded, WorkerDoneFunc done, void *userdata, Worker **ret);

/* Stops the thread after the job it runs and frees @w; every job not handed back yet (queued,
 * or done without its completion) goes to @drop (may be NULL) instead. Waits at most 5 s for
 * the job that runs; a thread still running then is left, detached, with @w and its jobs.
 * Accepts NULL; returns NULL. */
Worker *worker_free(Worker *w, void (*drop)(void *job));

/* Queues @job for @run. Returns 0, or -ENOSPC when WORKER_QUEUE_MAX jobs are queued or await
 * their completion. */
int worker_submit(Worker *w, WorkerRunFunc run, void *job);

#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* The thread's stack: the jobs keep their data on the heap. Locked in memory with the rest of
 * the daemon (mlockall), so it is kept small. */
#define WORKER_STACK_BYTES (1024 * 1024)
#define WORKER_JOIN_SECONDS 5

typedef struct Item {
        WorkerRunFunc run;
        void *job;
        cpu_set_t cpus; /* where the submitting thread ran: the job runs there too */
} Item;

/* A ring of items. */
typedef struct Ring {
        Item items[WORKER_QUEUE_MAX];
        unsigned head, n;
} Ring;

struct Worker {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;
        bool threaded;
        bool started;
        bool stop;
        Ring todo;    /* under lock */
        Ring done;    /* under lock */
        bool running; /* a job is running, under lock */
        int efd;      /* written after each job: its completion waits in done */
        sd_event_source *source;
        WorkerDoneFunc done_cb;
        void *userdata;
};

static void ring_push(Ring *r, Item it)
{
        r->items[(r->head + r->n++) % WORKER_QUEUE_MAX] = it;
}

static Item ring_pop(Ring *r)
{
        Item it = r->items[r->head];

        r->head = (r->head + 1) % WORKER_QUEUE_MAX;
        r->n--;
        return it;
}

static void signal_done(Worker *w)
{
        uint64_t one = 1;

        /* An eventfd write fails only when the counter would overflow: it is read at once. */
        (void)!write(w->efd, &one, sizeof(one));
}

static void *worker_main(void *arg)
{
        Worker *w = arg;
        cpu_set_t here;

        /* The capabilities are the loop's, which has dropped what it no longer needs by the
         * first submission: CAP_IPC_LOCK may remain, and it needs it as much (its memory is
         * locked as it grows, beyond RLIMIT_MEMLOCK where that could not be lifted). */
        CPU_ZERO(&here);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                Item it;

                while (!w->stop && w->todo.n == 0) {
                        pthread_cond_wait(&w->wake, &w->lock);
                }
                if (w->stop) {
                        break;
                }
                it = ring_pop(&w->todo);
                w->running = true;
                pthread_mutex_unlock(&w->lock);
                /* The loop's thread moves when the probed CPUs change (a reload): the worker
                 * follows, so that it never runs on a probe's CPU. */
                if (CPU_COUNT(&it.cpus) > 0 && !CPU_EQUAL(&it.cpus, &here) &&
                    sched_setaffinity(0, sizeof(it.cpus), &it.cpus) == 0) {
                        here = it.cpus;
                }
                it.run(it.job);
                pthread_mutex_lock(&w->lock);
                w->running = false;
                ring_push(&w->done, it);
                signal_done(w);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* The loop's side: hands every finished job to the completion callback, in order. */
static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Worker *w = userdata;
        Item done[WORKER_QUEUE_MAX];
        unsigned n = 0;
        uint64_t count;

        (void)!read(fd, &count, sizeof(count));
        pthread_mutex_lock(&w->lock);
        while (w->done.n > 0) {
                done[n++] = ring_pop(&w->done);
        }
        pthread_mutex_unlock(&w->lock);
        for (unsigned i = 0; i < n; i++) {
                w->done_cb(done[i].job, w->userdata);
        }
        return 0;
}

int worker_new(sd_event *e, bool threaded, WorkerDoneFunc done, void *userdata, Worker **ret)
{
        Worker *w = calloc(1, sizeof(*w));
        int r;

        if (!w) {
                return -ENOMEM;
        }
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        w->threaded = threaded;
        w->done_cb = done;
        w->userdata = userdata;
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = -errno;
                free(w);
                return r;
        }
        r = sd_event_add_io(e, &w->source, w->efd, EPOLLIN, on_done, w);
        if (r < 0) {
                close(w->efd);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

/* Starts the thread, once; false when it cannot be started (jobs then run at submission). */
static bool start_thread(Worker *w)
{
        pthread_attr_t attr;

        if (w->started) {
                return true;
        }
        if (!w->threaded || pthread_attr_init(&attr) != 0) {
                return false;
        }
        (void)pthread_attr_setstacksize(&attr, WORKER_STACK_BYTES);
        w->started = pthread_create(&w->thread, &attr, worker_main, w) == 0;
        pthread_attr_destroy(&attr);
        if (w->started) {
                (void)pthread_setname_np(w->thread, "jitterd-work");
        } else {
                w->threaded = false;
        }
        return w->started;
}

int worker_submit(Worker *w, WorkerRunFunc run, void *job)
{
        Item it = {run, job, {{0}}};

        if (sched_getaffinity(0, sizeof(it.cpus), &it.cpus) < 0) {
                CPU_ZERO(&it.cpus);
        }

        pthread_mutex_lock(&w->lock);
        if (w->todo.n + w->done.n + w->running >= WORKER_QUEUE_MAX) {
                pthread_mutex_unlock(&w->lock);
                return -ENOSPC;
        }
        pthread_mutex_unlock(&w->lock);
        if (!start_thread(w)) {
                run(job);
                pthread_mutex_lock(&w->lock);
                ring_push(&w->done, it);
                pthread_mutex_unlock(&w->lock);
                signal_done(w);
                return 0;
        }
        pthread_mutex_lock(&w->lock);
        ring_push(&w->todo, it);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

Worker *worker_free(Worker *w, void (*drop)(void *job))
{
        if (!w) {
                return NULL;
        }
        if (w->started) {
                struct timespec deadline;

                pthread_mutex_lock(&w->lock);
                w->stop = true;
                pthread_cond_broadcast(&w->wake);
                pthread_mutex_unlock(&w->lock);
                clock_gettime(CLOCK_REALTIME, &deadline);
                deadline.tv_sec += WORKER_JOIN_SECONDS;
                if (pthread_timedjoin_np(w->thread, NULL, &deadline) != 0) {
                        /* Still in its job: it keeps @w, which is left to it. */
                        pthread_detach(w->thread);
                        sd_event_source_disable_unref(w->source);
                        return NULL;
                }
        }
        sd_event_source_disable_unref(w->source);
        close(w->efd);
        while (drop && w->todo.n > 0) {
                drop(ring_pop(&w->todo).job);
        }
        while (drop && w->done.n > 0) {
                drop(ring_pop(&w->done).job);
        }
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

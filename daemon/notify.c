#include "notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sockaddr-un.h"
#include "util.h"

#define NOTIFY_MESSAGE_MAX 2048

struct Notifier {
        sd_event *event;
        int fd; /* -1: notifications are off */
        struct sockaddr_un addr;
        socklen_t addr_len;
        char name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1]; /* as $NOTIFY_SOCKET has it */

        char *pending[NOTIFY_PENDING_MAX]; /* state changes not yet delivered, oldest first */
        unsigned n_pending;
        uint64_t pending_since_usec; /* CLOCK_MONOTONIC when the oldest was kept */
        sd_event_source *retry_source;

        uint64_t watchdog_usec;
        sd_event_source *watchdog_source;

        bool failing;          /* the failure of this episode was logged */
        unsigned long dropped; /* status updates dropped in this episode */
};

/* Parses @value as sd_notify() does: an absolute path, or "@name" for an abstract socket. */
static int parse_address(Notifier *n, const char *value)
{
        int r;

        if (strlen(value) < 2 || (value[0] != '/' && value[0] != '@')) {
                return -EAFNOSUPPORT;
        }
        r = sockaddr_un_set(&n->addr, value, &n->addr_len);
        if (r < 0) {
                return r;
        }
        snprintf(n->name, sizeof(n->name), "%s", value);
        return 0;
}

static int send_now(Notifier *n, const char *text)
{
        for (;;) {
                if (sendto(n->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL,
                           (const struct sockaddr *)&n->addr, n->addr_len) >= 0) {
                        return 0;
                }
                if (errno != EINTR) {
                        return -errno;
                }
        }
}

/* The first line of @text, for messages about it. */
static const char *first_line(const char *text, char *buf, size_t size)
{
        snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
        return buf;
}

static void episode_failed(Notifier *n, int error)
{
        if (n->failing) {
                return;
        }
        n->failing = true;
        n->dropped = 0;
        log_warning("cannot send to the service manager's notification socket %s: %s%s; dropping "
                    "status updates and keeping READY=1, RELOADING=1 and STOPPING=1 until it "
                    "reads again",
                    n->name, strerror(-error),
                    error == -EAGAIN ? " (its queue is full: the reader has stopped reading)" : "");
}

static void episode_recovered(Notifier *n)
{
        if (!n->failing) {
                return;
        }
        n->failing = false;
        log_notice("notifications reach %s again (%lu status update%s dropped meanwhile)", n->name,
                   n->dropped, n->dropped == 1 ? "" : "s");
}

static void pending_pop(Notifier *n)
{
        free(n->pending[0]);
        memmove(&n->pending[0], &n->pending[1], (n->n_pending - 1) * sizeof(n->pending[0]));
        n->n_pending--;
}

/* Sends what is kept, oldest first, until one cannot be sent. */
static void flush_pending(Notifier *n)
{
        while (n->n_pending > 0) {
                int r = send_now(n, n->pending[0]);

                if (r < 0) {
                        episode_failed(n, r);
                        return;
                }
                pending_pop(n);
        }
        if (n->retry_source) {
                (void)sd_event_source_set_enabled(n->retry_source, SD_EVENT_OFF);
        }
}

static void give_up(Notifier *n)
{
        char line[128];

        while (n->n_pending > 0) {
                log_error("giving up on telling the service manager %s: %s has not read for %llu "
                          "s",
                          first_line(n->pending[0], line, sizeof(line)), n->name,
                          (unsigned long long)(NOTIFY_GIVE_UP_USEC / 1000000ULL));
                pending_pop(n);
        }
        if (n->retry_source) {
                (void)sd_event_source_set_enabled(n->retry_source, SD_EVENT_OFF);
        }
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        Notifier *n = userdata;

        flush_pending(n);
        if (n->n_pending == 0) {
                episode_recovered(n);
                return 0;
        }
        if (now_ns(CLOCK_MONOTONIC) / 1000 - n->pending_since_usec >= NOTIFY_GIVE_UP_USEC) {
                give_up(n);
                return 0;
        }
        /* Without the timer the next notification retries; nothing blocks. */
        if (sd_event_source_set_time(s, usec + NOTIFY_RETRY_USEC) < 0) {
                log_warning("cannot arm the timer that retries notifications to %s", n->name);
        }
        return 0;
}

static void arm_retry(Notifier *n)
{
        uint64_t t = now_ns(CLOCK_MONOTONIC) / 1000 + NOTIFY_RETRY_USEC;

        if (!n->event) {
                return;
        }
        if (!n->retry_source) {
                if (sd_event_add_time(n->event, &n->retry_source, CLOCK_MONOTONIC, t, 10000,
                                      on_retry, n) < 0) {
                        /* Without a timer the next notification retries; nothing blocks. */
                        n->retry_source = NULL;
                        return;
                }
        } else if (sd_event_source_get_enabled(n->retry_source, NULL) > 0) {
                return;
        } else if (sd_event_source_set_time(n->retry_source, t) < 0) {
                log_warning("cannot arm the timer that retries notifications to %s", n->name);
                return;
        }
        if (sd_event_source_set_enabled(n->retry_source, SD_EVENT_ON) < 0) {
                log_warning("cannot arm the timer that retries notifications to %s", n->name);
        }
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata)
{
        Notifier *n = userdata;

        notifier_status(n, "WATCHDOG=1");
        /* Without the next ping the service manager ends the daemon: say why first. */
        if (sd_event_source_set_time(s, usec + n->watchdog_usec / 2) < 0) {
                log_error("cannot arm the watchdog timer: the service manager will stop jitterd");
        }
        return 0;
}

static void notifier_freep(Notifier **n)
{
        notifier_free(*n);
}
#define _cleanup_notifier_ __attribute__((cleanup(notifier_freep)))

/* The socket to $NOTIFY_SOCKET @e and the watchdog timer on @event, for notifier_new(). */
static int notifier_open(Notifier *n, sd_event *event, const char *e)
{
        uint64_t wd = 0;
        int r;

        if (!e || !*e) {
                return 0;
        }
        r = parse_address(n, e);
        if (r < 0) {
                log_warning("NOTIFY_SOCKET=%s is neither an absolute path nor an abstract socket "
                            "(@NAME): %s; not notifying the service manager",
                            e, strerror(-r));
                return 0;
        }
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (n->fd < 0) {
                r = -errno;
                log_error("cannot create a socket for notifications to %s: %s", n->name,
                          strerror(-r));
                return r;
        }
        /* sd_watchdog_enabled() only reads $WATCHDOG_USEC and $WATCHDOG_PID. */
        if (event && sd_watchdog_enabled(0, &wd) > 0 && wd > 0) {
                n->watchdog_usec = wd;
                r = sd_event_add_time(event, &n->watchdog_source, CLOCK_MONOTONIC,
                                      now_ns(CLOCK_MONOTONIC) / 1000 + wd / 2, wd / 20, on_watchdog,
                                      n);
                if (r >= 0) {
                        r = sd_event_source_set_enabled(n->watchdog_source, SD_EVENT_ON);
                }
                if (r < 0) {
                        log_error("cannot set up the watchdog timer: %s", strerror(-r));
                        return r;
                }
        }
        return 0;
}

int notifier_new(sd_event *event, Notifier **ret)
{
        _cleanup_notifier_ Notifier *n = NULL;
        int r;

        n = calloc(1, sizeof(*n));
        if (!n) {
                return -ENOMEM;
        }
        n->fd = -1;
        n->event = event ? sd_event_ref(event) : NULL;
        r = notifier_open(n, event, getenv("NOTIFY_SOCKET"));
        if (r < 0) {
                return r;
        }
        *ret = n;
        n = NULL;
        return 0;
}

Notifier *notifier_free(Notifier *n)
{
        if (!n) {
                return NULL;
        }
        while (n->n_pending > 0) {
                pending_pop(n);
        }
        sd_event_source_disable_unref(n->retry_source);
        sd_event_source_disable_unref(n->watchdog_source);
        sd_event_unref(n->event);
        if (n->fd >= 0) {
                close(n->fd);
        }
        free(n);
        return NULL;
}

void notifier_state(Notifier *n, const char *fmt, ...)
{
        char text[NOTIFY_MESSAGE_MAX], line[128];
        char *copy;
        va_list ap;

        if (!n || n->fd < 0) {
                return;
        }
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        flush_pending(n);
        if (n->n_pending == 0) {
                int r = send_now(n, text);

                if (r == 0) {
                        episode_recovered(n);
                        return;
                }
                episode_failed(n, r);
        }
        if (n->n_pending == NOTIFY_PENDING_MAX) {
                log_error("dropping %s for the service manager: %u newer state changes are "
                          "waiting",
                          first_line(n->pending[0], line, sizeof(line)), NOTIFY_PENDING_MAX);
                pending_pop(n);
        }
        copy = strdup(text);
        if (!copy) {
                log_error("out of memory: cannot keep %s for the service manager",
                          first_line(text, line, sizeof(line)));
                return;
        }
        if (n->n_pending == 0) {
                n->pending_since_usec = now_ns(CLOCK_MONOTONIC) / 1000;
        }
        n->pending[n->n_pending++] = copy;
        arm_retry(n);
}

void notifier_status(Notifier *n, const char *fmt, ...)
{
        char text[NOTIFY_MESSAGE_MAX];
        va_list ap;
        int r;

        if (!n || n->fd < 0) {
                return;
        }
        flush_pending(n);
        if (n->n_pending > 0) {
                n->dropped++;
                return;
        }
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        r = send_now(n, text);
        if (r < 0) {
                episode_failed(n, r);
                n->dropped++;
                return;
        }
        episode_recovered(n);
}

int notifier_flush(Notifier *n, uint64_t timeout_usec)
{
        uint64_t deadline = now_ns(CLOCK_MONOTONIC) / 1000 + timeout_usec;

        if (!n) {
                return 0;
        }
        for (;;) {
                struct timespec ts = {.tv_nsec = 10 * 1000000L};

                flush_pending(n);
                if (n->n_pending == 0) {
                        episode_recovered(n);
                        return 0;
                }
                if (now_ns(CLOCK_MONOTONIC) / 1000 >= deadline) {
                        return -ETIMEDOUT;
                }
                nanosleep(&ts, NULL);
        }
}

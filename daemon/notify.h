#pragma once

/* Notifications to the service manager (the sd_notify(3) protocol on $NOTIFY_SOCKET) that never
 * block the event loop.
 *
 * sd_notify() sends with a blocking sendmsg(): once the reader stops reading and its queue
 * (net.unix.max_dgram_qlen datagrams) is full, it waits for as long as the reader does, and the
 * loop with it. Here every datagram is sent with MSG_DONTWAIT. What cannot be sent is handled
 * by its kind:
 * - status updates (STATUS=, WATCHDOG=1) are dropped: the next one supersedes them;
 * - state changes (READY=1, RELOADING=1, STOPPING=1) are kept, in order, and retried from the
 *   event loop every NOTIFY_RETRY_USEC until they are delivered or NOTIFY_GIVE_UP_USEC have
 *   passed. While one is kept, status updates are dropped, so that nothing overtakes it.
 * A failure is logged once per episode, and so is the recovery.
 *
 * $NOTIFY_SOCKET is a path ("/run/systemd/notify") or an abstract address ("@name"), as
 * sd_notify() accepts them. Without it, every call does nothing. WATCHDOG=1 is sent from a timer
 * of the loop at half of $WATCHDOG_USEC when sd_watchdog_enabled() says the watchdog is on. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#define NOTIFY_RETRY_USEC (100 * 1000ULL)
#ifndef NOTIFY_GIVE_UP_USEC
#define NOTIFY_GIVE_UP_USEC (60 * 1000000ULL)
#endif
#define NOTIFY_PENDING_MAX 8 /* state changes kept; the oldest goes when one more comes */

typedef struct Notifier Notifier;

/* Reads $NOTIFY_SOCKET and $WATCHDOG_USEC and sets up the socket and the timers on @event.
 * An unusable $NOTIFY_SOCKET (neither a path nor "@name") is logged and turns notifications
 * off. Returns 0 and the notifier in *@ret, or -ENOMEM or the negative errno of
 * socket()/sd_event and nothing. */
int notifier_new(sd_event *event, Notifier **ret);

/* Frees @n; accepts NULL and returns NULL. What is still kept is lost: call
 * notifier_flush() first. */
Notifier *notifier_free(Notifier *n);

/* Sends a state change (e.g. "READY=1\nSTATUS=measuring"): delivered now, or kept and retried
 * after the state changes kept before it. */
void notifier_state(Notifier *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sends a status update (e.g. "STATUS=..."), or drops it if it cannot be sent now or a state
 * change is still kept. */
void notifier_status(Notifier *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Tries for at most @timeout_usec to deliver the state changes still kept, without the event
 * loop (at exit). Returns 0 when none is left, -ETIMEDOUT otherwise. */
int notifier_flush(Notifier *n, uint64_t timeout_usec);

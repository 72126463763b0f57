/* Unit tests of daemon/notify.c: notifications reach a datagram socket bound at a path or an
 * abstract address, as systemd's does; a reader that stops reading never blocks the sender;
 * status updates are then dropped while state changes are kept and delivered in order once it
 * reads again, or given up after the bound; the watchdog timer; each episode is logged once.
 * The module is included to shorten its give-up bound for the test. */

#define NOTIFY_GIVE_UP_USEC (1000 * 1000ULL)
#include "../daemon/notify.c"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log-capture.h"

#define MAX_GOT 4096

/* The number of state changes kept, not yet delivered. */
static unsigned notifier_pending(const Notifier *n)
{
        return n ? n->n_pending : 0;
}

/* The watchdog's period in µs ($WATCHDOG_USEC), or 0 when it is off. */
static uint64_t notifier_watchdog_usec(const Notifier *n)
{
        return n ? n->watchdog_usec : 0;
}

static char sock_path[108];

/* What the reader received, in order. */
static char *got[MAX_GOT];
static size_t n_got;

/* Binds a datagram socket at @addr ("/path" or "@name") and points $NOTIFY_SOCKET at it. */
static int reader_open(const char *addr)
{
        struct sockaddr_un sa;
        socklen_t len;
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        assert_true(fd >= 0);
        assert_int_equal(sockaddr_un_set(&sa, addr, &len), 0);
        if (addr[0] != '@') {
                unlink(addr);
        }
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
        assert_int_equal(setenv("NOTIFY_SOCKET", addr, 1), 0);
        return fd;
}

/* Reads everything queued on @fd into got[]. Returns how many messages it read. */
static size_t reader_drain(int fd)
{
        char buf[4096];
        size_t n = 0;
        ssize_t len;

        while ((len = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) >= 0) {
                buf[len] = '\0';
                assert_true(n_got < MAX_GOT);
                got[n_got++] = strdup(buf);
                n++;
        }
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        return n;
}

static void got_clear(void)
{
        for (size_t i = 0; i < n_got; i++) {
                free(got[i]);
        }
        n_got = 0;
}

/* The index of the first message received that equals @text, or -1. */
static long got_find(const char *text)
{
        for (size_t i = 0; i < n_got; i++) {
                if (strcmp(got[i], text) == 0) {
                        return (long)i;
                }
        }
        return -1;
}

static size_t got_count(const char *text)
{
        size_t c = 0;

        for (size_t i = 0; i < n_got; i++) {
                c += strcmp(got[i], text) == 0;
        }
        return c;
}

/* Runs @e for @usec, draining @fd (when >= 0) as it goes. */
static void run_loop(sd_event *e, int fd, uint64_t usec)
{
        uint64_t end = now_ns(CLOCK_MONOTONIC) / 1000 + usec;

        while (now_ns(CLOCK_MONOTONIC) / 1000 < end) {
                assert_true(sd_event_run(e, 5000) >= 0);
                if (fd >= 0) {
                        reader_drain(fd);
                }
        }
}

/* Sends status updates to a reader that does not read until one is dropped: the queue is full.
 * Each call must return at once; SIGALRM ends the test if one blocks. Returns how many it
 * sent. */
static unsigned fill_queue(Notifier *n, int fd)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC) / 1000;
        unsigned i;

        alarm(10);
        for (i = 0; i < 1000; i++) {
                unsigned long before = n->dropped;
                bool was_failing = n->failing;

                notifier_status(n, "STATUS=filler %u", i);
                if (n->failing && (n->dropped > before || !was_failing)) {
                        break;
                }
        }
        alarm(0);
        assert_true(i < 1000);
        /* A thousand non-blocking sends take well under a second even on a slow machine. */
        assert_true(now_ns(CLOCK_MONOTONIC) / 1000 - t0 < 1000000);
        (void)fd;
        return i + 1;
}

/* What was logged since log_clear() (free() it). */
static char *log_release(void)
{
        char *text = strdup(log_text);

        assert_non_null(text);
        return text;
}

static int setup(void **state)
{
        snprintf(sock_path, sizeof(sock_path), "/tmp/test-notify.%d", (int)getpid());
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        return 0;
}

static int teardown(void **state)
{
        got_clear();
        unlink(sock_path);
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        return 0;
}

static void test_off_without_socket(void **state)
{
        Notifier *n = NULL;

        assert_int_equal(notifier_new(NULL, &n), 0);
        notifier_state(n, "READY=1");
        notifier_status(n, "STATUS=x");
        assert_int_equal(notifier_pending(n), 0);
        assert_int_equal(notifier_flush(n, 0), 0);
        assert_int_equal(notifier_watchdog_usec(n), 0);
        notifier_free(n);
        assert_null(notifier_free(NULL));
}

static void test_unusable_address(void **state)
{
        Notifier *n = NULL;
        char *log;

        setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
        log_clear();
        assert_int_equal(notifier_new(NULL, &n), 0);
        notifier_state(n, "READY=1");
        log = log_release();
        assert_int_equal(notifier_pending(n), 0);
        assert_non_null(strstr(log, "NOTIFY_SOCKET=vsock:2:1234 is neither"));
        free(log);
        notifier_free(n);
}

static void test_delivers_to_path(void **state)
{
        Notifier *n = NULL;
        int fd = reader_open(sock_path);

        assert_int_equal(notifier_new(NULL, &n), 0);
        notifier_state(n, "READY=1\nSTATUS=measuring");
        notifier_status(n, "STATUS=CPU %d running", 1);
        assert_int_equal(reader_drain(fd), 2);
        assert_string_equal(got[0], "READY=1\nSTATUS=measuring");
        assert_string_equal(got[1], "STATUS=CPU 1 running");
        assert_int_equal(notifier_pending(n), 0);
        notifier_free(n);
        close(fd);
}

static void test_delivers_to_abstract(void **state)
{
        char name[64];
        Notifier *n = NULL;
        int fd;

        snprintf(name, sizeof(name), "@test-notify-%d", (int)getpid());
        fd = reader_open(name);
        assert_int_equal(notifier_new(NULL, &n), 0);
        notifier_state(n, "STOPPING=1");
        assert_int_equal(reader_drain(fd), 1);
        assert_string_equal(got[0], "STOPPING=1");
        notifier_free(n);
        close(fd);
}

/* The reader stops reading: nothing blocks, status updates are dropped, the state changes are
 * kept and arrive in order once it reads again, after what it had queued and before any later
 * status update. One warning for the episode, one notice at the recovery. */
static void test_stuck_reader(void **state)
{
        sd_event *e = NULL;
        Notifier *n = NULL;
        unsigned sent;
        size_t queued;
        long reloading, ready;
        char *log;
        int fd = reader_open(sock_path);

        assert_int_equal(sd_event_new(&e), 0);
        log_clear();
        assert_int_equal(notifier_new(e, &n), 0);
        sent = fill_queue(n, fd);
        notifier_state(n, "RELOADING=1\nMONOTONIC_USEC=%llu", 42ULL);
        notifier_state(n, "READY=1");
        assert_int_equal(notifier_pending(n), 2);
        for (int i = 0; i < 20; i++) {
                notifier_status(n, "STATUS=dropped %d", i);
        }
        /* The loop goes on meanwhile: retries do not block either. */
        run_loop(e, -1, 300000);
        assert_int_equal(notifier_pending(n), 2);

        queued = reader_drain(fd);
        assert_true(queued >= 1 && queued < sent);
        assert_int_equal(got_find("READY=1"), -1);
        run_loop(e, fd, 2 * NOTIFY_RETRY_USEC + 100000);
        notifier_status(n, "STATUS=after");
        reader_drain(fd);
        log = log_release();

        assert_int_equal(notifier_pending(n), 0);
        reloading = got_find("RELOADING=1\nMONOTONIC_USEC=42");
        ready = got_find("READY=1");
        assert_true(reloading >= (long)queued);
        assert_int_equal(ready, reloading + 1);
        assert_int_equal(got_find("STATUS=after"), ready + 1);
        for (size_t i = 0; i < n_got; i++) {
                assert_null(strstr(got[i], "STATUS=dropped"));
        }
        assert_int_equal(count_substr(log, "cannot send to the service manager"), 1);
        assert_non_null(strstr(log, "queue is full"));
        assert_int_equal(count_substr(log, "notifications reach"), 1);
        free(log);
        notifier_free(n);
        sd_event_unref(e);
        close(fd);
}

/* A reader that never reads again: the kept state change is given up after the bound, with an
 * error naming it, and never sent later. */
static void test_gives_up(void **state)
{
        sd_event *e = NULL;
        Notifier *n = NULL;
        uint64_t t0;
        char *log;
        int fd = reader_open(sock_path);

        assert_int_equal(sd_event_new(&e), 0);
        log_clear();
        assert_int_equal(notifier_new(e, &n), 0);
        fill_queue(n, fd);
        t0 = now_ns(CLOCK_MONOTONIC) / 1000;
        notifier_state(n, "READY=1");
        assert_int_equal(notifier_pending(n), 1);
        while (notifier_pending(n) > 0 &&
               now_ns(CLOCK_MONOTONIC) / 1000 - t0 < 5 * NOTIFY_GIVE_UP_USEC) {
                assert_true(sd_event_run(e, 10000) >= 0);
        }
        log = log_release();
        assert_int_equal(notifier_pending(n), 0);
        assert_true(now_ns(CLOCK_MONOTONIC) / 1000 - t0 >= NOTIFY_GIVE_UP_USEC);
        assert_non_null(strstr(log, "giving up on telling the service manager READY=1"));
        run_loop(e, fd, 3 * NOTIFY_RETRY_USEC);
        assert_int_equal(got_find("READY=1"), -1);
        free(log);
        notifier_free(n);
        sd_event_unref(e);
        close(fd);
}

/* At exit, without the loop: a bounded wait for the kept state changes. */
static void test_flush(void **state)
{
        Notifier *n = NULL;
        uint64_t t0;
        char *log;
        int fd = reader_open(sock_path);

        log_clear();
        assert_int_equal(notifier_new(NULL, &n), 0);
        fill_queue(n, fd);
        notifier_state(n, "STOPPING=1");
        t0 = now_ns(CLOCK_MONOTONIC) / 1000;
        assert_int_equal(notifier_flush(n, 200000), -ETIMEDOUT);
        assert_true(now_ns(CLOCK_MONOTONIC) / 1000 - t0 >= 200000);
        assert_true(now_ns(CLOCK_MONOTONIC) / 1000 - t0 < 2000000);
        reader_drain(fd);
        assert_int_equal(got_find("STOPPING=1"), -1);
        assert_int_equal(notifier_flush(n, 1000000), 0);
        reader_drain(fd);
        log = log_release();
        assert_int_equal(got_count("STOPPING=1"), 1);
        free(log);
        notifier_free(n);
        close(fd);
}

/* WATCHDOG=1 at half the period sd_watchdog_enabled() reports, from the loop. */
static void test_watchdog(void **state)
{
        sd_event *e = NULL;
        Notifier *n = NULL;
        uint64_t t0, elapsed;
        size_t c;
        int fd = reader_open(sock_path);

        setenv("WATCHDOG_USEC", "100000", 1);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(notifier_new(e, &n), 0);
        assert_int_equal(notifier_watchdog_usec(n), 100000);
        t0 = now_ns(CLOCK_MONOTONIC) / 1000;
        run_loop(e, fd, 600000);
        elapsed = now_ns(CLOCK_MONOTONIC) / 1000 - t0;
        c = got_count("WATCHDOG=1");
        /* One every 50 ms: at least half of what the elapsed time allows, and never more. */
        assert_true(c >= elapsed / 50000 / 2);
        assert_true(c <= elapsed / 50000 + 1);
        notifier_free(n);
        sd_event_unref(e);
        close(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_off_without_socket, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unusable_address, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delivers_to_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delivers_to_abstract, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stuck_reader, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gives_up, setup, teardown),
                cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
                cmocka_unit_test_setup_teardown(test_watchdog, setup, teardown),
        };

        /* A send that blocks is the bug under test: SIGALRM's default action ends the run. */
        signal(SIGALRM, SIG_DFL);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of daemon/varlink-server.c and probe/varlink/varlink-client.c: a server on
 * sd-event with a toy interface, driven with sd_event_run() against raw sockets (to see the exact
 * bytes and to misbehave), and the blocking client against a server running in a second thread. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "json-read.h"
#include "varlink-client-internal.h"
#include "sockaddr-un.h"
#include "varlink-client.h"
#include "varlink-server-internal.h"
#include "varlink.h"
#include "util.h"

#define TOY "org.example.toy"
#define WAIT_USEC (10 * 1000000ULL) /* generous: the VM is noisy */

static const char toy_description[] = "# A toy interface for tests.\n"
                                      "interface org.example.toy\n"
                                      "method Echo(text: string, count: ?int) -> (text: string)\n"
                                      "method Big(size: int) -> (data: string)\n"
                                      "method Bump() -> ()\n"
                                      "method Delay(ms: int) -> ()\n"
                                      "method Count(n: int, interval_ms: ?int) -> (i: int)\n"
                                      "method Never() -> ()\n"
                                      "method Peer() -> (uid: int, gid: int, pid: int)\n"
                                      "method Fail() -> ()\n";

/* ---- the toy interface ---- */

typedef struct Toy {
        sd_event *event;
        unsigned bumps;
        unsigned streams_active;
        unsigned streams_closed;
        VarlinkCallCtx *never;
} Toy;

/* A call answered from a timer: Delay (one final reply) or Count (a "more" stream). */
typedef struct Stream {
        Toy *toy;
        VarlinkCallCtx *call;
        sd_event_source *timer;
        json_int_t n; /* replies in total; 0 = until the client leaves */
        json_int_t sent;
        uint64_t interval_usec;
} Stream;

static void stream_free(Stream *st)
{
        st->timer = sd_event_source_disable_unref(st->timer);
        varlink_call_unref(st->call);
        st->toy->streams_active--;
        free(st);
}

static void stream_on_close(VarlinkCallCtx *call, void *userdata)
{
        Stream *st = userdata;

        st->toy->streams_closed++;
        stream_free(st);
}

static int stream_on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Stream *st = userdata;

        st->sent++;
        if (varlink_call_wants_more(st->call) && (st->n == 0 || st->sent < st->n)) {
                if (varlink_call_reply_continue(st->call, json_pack("{s:I}", "i", st->sent)) < 0) {
                        stream_free(st);
                        return 0;
                }
                (void)sd_event_source_set_time_relative(s, st->interval_usec);
                (void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        (void)varlink_call_reply(st->call, json_pack("{s:I}", "i", st->sent));
        stream_free(st);
        return 0;
}

static int stream_start(VarlinkCallCtx *call, Toy *toy, json_int_t n, uint64_t interval_usec)
{
        Stream *st = calloc(1, sizeof(*st));

        if (!st) {
                return -ENOMEM;
        }
        st->toy = toy;
        st->n = n;
        st->interval_usec = interval_usec;
        if (sd_event_add_time_relative(toy->event, &st->timer, CLOCK_MONOTONIC, interval_usec, 1000,
                                       stream_on_timer, st) < 0) {
                free(st);
                return -ENOMEM;
        }
        st->call = varlink_call_ref(call);
        varlink_call_set_close_callback(call, stream_on_close, st);
        toy->streams_active++;
        return 0;
}

static int toy_echo(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"text", JSON_STRING, true},
                {"count", JSON_INTEGER, false},
        };
        json_int_t count;
        const char *text;
        char *out;
        size_t len;
        int r;

        if (varlink_call_check_params(call, params, fields, 2) < 0) {
                return 0;
        }
        (void)json_read_string_default(params, "text", NULL, &text);
        if (json_read_int_default(params, "count", 1, 10, 1, &count) < 0) {
                return varlink_call_error_invalid_parameter(call, "count");
        }
        len = strlen(text);
        out = calloc(len * (size_t)count + 1, 1);
        if (!out) {
                return -ENOMEM;
        }
        for (json_int_t i = 0; i < count; i++) {
                memcpy(out + (size_t)i * len, text, len);
        }
        r = varlink_call_reply(call, json_pack("{s:s}", "text", out));
        free(out);
        return r;
}

static int toy_big(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{"size", JSON_INTEGER, true}};
        json_int_t size;
        char *data;
        int r;

        if (varlink_call_check_params(call, params, fields, 1) < 0) {
                return 0;
        }
        if (json_read_int_default(params, "size", 0, 1 << 24, 0, &size) < 0) {
                return varlink_call_error_invalid_parameter(call, "size");
        }
        data = malloc((size_t)size + 1);
        if (!data) {
                return -ENOMEM;
        }
        memset(data, 'x', (size_t)size);
        data[size] = '\0';
        r = varlink_call_reply(call, json_pack("{s:s}", "data", data));
        free(data);
        return r;
}

static int toy_bump(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        Toy *toy = userdata;

        if (varlink_call_check_params(call, params, NULL, 0) < 0) {
                return 0;
        }
        toy->bumps++;
        return varlink_call_reply(call, json_pack("{s:i}", "bumps", (int)toy->bumps));
}

static int toy_delay(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {{"ms", JSON_INTEGER, true}};
        json_int_t ms;

        if (varlink_call_check_params(call, params, fields, 1) < 0) {
                return 0;
        }
        if (json_read_int_default(params, "ms", 1, 10000, 0, &ms) < 0) {
                return varlink_call_error_invalid_parameter(call, "ms");
        }
        return stream_start(call, userdata, 1, (uint64_t)ms * 1000);
}

static int toy_count(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        static const VarlinkField fields[] = {
                {"n", JSON_INTEGER, true},
                {"interval_ms", JSON_INTEGER, false},
        };
        json_int_t n, ms;

        if (varlink_call_check_params(call, params, fields, 2) < 0) {
                return 0;
        }
        if (json_read_int_default(params, "n", 0, 1000, 0, &n) < 0) {
                return varlink_call_error_invalid_parameter(call, "n");
        }
        if (json_read_int_default(params, "interval_ms", 1, 10000, 5, &ms) < 0) {
                return varlink_call_error_invalid_parameter(call, "interval_ms");
        }
        return stream_start(call, userdata, n, (uint64_t)ms * 1000);
}

static int toy_never(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        Toy *toy = userdata;

        varlink_call_unref(toy->never);
        toy->never = varlink_call_ref(call);
        return 0;
}

static int toy_peer(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        uid_t uid;
        gid_t gid;
        pid_t pid;

        assert_int_equal(varlink_call_peer(call, &uid, &gid, &pid), 0);
        return varlink_call_reply(call, json_pack("{s:I, s:I, s:I}", "uid", (json_int_t)uid, "gid",
                                                  (json_int_t)gid, "pid", (json_int_t)pid));
}

static int toy_fail(VarlinkCallCtx *call, json_t *params, void *userdata)
{
        return -EIO;
}

static const VarlinkMethod toy_methods[] = {
        {"Echo", toy_echo, 0},
        {"Big", toy_big, 0},
        {"Bump", toy_bump, 0},
        {"Delay", toy_delay, 0},
        {"Count", toy_count, VARLINK_METHOD_REQUIRES_MORE},
        {"Never", toy_never, 0},
        {"Peer", toy_peer, 0},
        {"Fail", toy_fail, 0},
};

/* ---- fixture ---- */

typedef struct Fixture {
        sd_event *event;
        VarlinkServer *server;
        Toy toy;
        char dir[64];
        char path[100]; /* fits sun_path */
} Fixture;

static int setup(void **state)
{
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-varlink-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        /* The server creates the missing "run" directory itself. */
        snprintf(f->path, sizeof(f->path), "%s/run/io.example", f->dir);
        assert_int_equal(sd_event_new(&f->event), 0);
        f->toy.event = f->event;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;
        char sub[160];

        varlink_server_free(f->server);
        f->toy.never = varlink_call_unref(f->toy.never);
        assert_int_equal(f->toy.streams_active, 0);
        /* The socket file went with the server. */
        assert_int_equal(access(f->path, F_OK), -1);
        snprintf(sub, sizeof(sub), "%s/run", f->dir);
        (void)rmdir(sub);
        assert_int_equal(rmdir(f->dir), 0);
        sd_event_unref(f->event);
        free(f);
        return 0;
}

static void start_server(Fixture *f, const VarlinkServerLimits *limits)
{
        assert_int_equal(varlink_server_new(f->event, limits, &f->server), 0);
        varlink_server_set_userdata(f->server, &f->toy);
        assert_int_equal(varlink_server_set_info(f->server, "Example", "toyd", "1.2", NULL), 0);
        assert_int_equal(varlink_server_add_interface(f->server, TOY, toy_description, toy_methods,
                                                      ELEMENTSOF(toy_methods)),
                         0);
        assert_int_equal(varlink_server_listen_path(f->server, f->path, 0660), 0);
}

/* Runs the loop until @cond holds (checked between iterations) or the wait expires. */
#define PUMP_UNTIL(f, cond)                                                                        \
        do {                                                                                       \
                uint64_t end_ = now_ns(CLOCK_MONOTONIC) / 1000 + WAIT_USEC;                        \
                while (!(cond) && now_ns(CLOCK_MONOTONIC) / 1000 < end_) {                         \
                        assert_true(sd_event_run((f)->event, 5000) >= 0);                          \
                }                                                                                  \
                assert_true(cond);                                                                 \
        } while (0)

/* ---- a raw client ---- */

typedef struct Peer {
        int fd;
        VarlinkReader *reader;
        bool eof;
} Peer;

static void peer_connect(Fixture *f, Peer *p)
{
        struct sockaddr_un sa;
        socklen_t len;

        p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(p->fd >= 0);
        assert_int_equal(sockaddr_un_set(&sa, f->path, &len), 0);
        assert_int_equal(connect(p->fd, (struct sockaddr *)&sa, len), 0);
        assert_int_equal(varlink_reader_new(64 * 1024 * 1024, &p->reader), 0);
        p->eof = false;
}

static void peer_close(Peer *p)
{
        if (p->fd >= 0) {
                close(p->fd);
        }
        p->fd = -1;
        p->reader = varlink_reader_free(p->reader);
}

static void peer_send_raw(Peer *p, const void *data, size_t len)
{
        assert_int_equal(send(p->fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Sends one message: the JSON text and its terminator. */
static void peer_send(Peer *p, const char *json)
{
        peer_send_raw(p, json, strlen(json) + 1);
}

/* Reads what is available without blocking; records end of stream. */
static void peer_poll(Peer *p)
{
        char buf[65536];

        while (!p->eof) {
                ssize_t n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);

                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        return;
                }
                if (n <= 0) {
                        /* A reset is how a close with our calls still unread looks. */
                        assert_true(n == 0 || errno == ECONNRESET);
                        p->eof = true;
                        return;
                }
                assert_int_equal(varlink_reader_feed(p->reader, buf, (size_t)n), 0);
        }
}

/* Runs the loop until a message arrives; NULL at end of stream. */
static json_t *peer_recv(Fixture *f, Peer *p)
{
        uint64_t end = now_ns(CLOCK_MONOTONIC) / 1000 + WAIT_USEC;
        json_t *msg = NULL;

        for (;;) {
                int r = varlink_reader_next(p->reader, &msg);

                assert_true(r >= 0);
                if (r > 0) {
                        return msg;
                }
                if (p->eof) {
                        return NULL;
                }
                assert_true(now_ns(CLOCK_MONOTONIC) / 1000 < end);
                assert_true(sd_event_run(f->event, 5000) >= 0);
                peer_poll(p);
        }
}

/* Asserts that the next message equals @expected_json exactly. */
static void peer_expect(Fixture *f, Peer *p, const char *expected_json)
{
        json_t *msg = peer_recv(f, p), *expected = json_loads(expected_json, 0, NULL);

        assert_non_null(expected);
        if (!msg || !json_equal(msg, expected)) {
                char *got = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

                fail_msg("expected %s, got %s", expected_json, got ? got : "end of stream");
        }
        json_decref(expected);
        json_decref(msg);
}

/* Asserts that the server closes the connection without sending anything more. */
static void peer_expect_eof(Fixture *f, Peer *p)
{
        json_t *msg = peer_recv(f, p);

        if (msg) {
                char *got = json_dumps(msg, JSON_COMPACT);

                fail_msg("expected end of stream, got %s", got);
        }
}

/* Receives messages until the server closes; returns how many arrived. */
static unsigned peer_drain(Fixture *f, Peer *p)
{
        unsigned n = 0;
        json_t *msg;

        while ((msg = peer_recv(f, p))) {
                json_decref(msg);
                n++;
        }
        return n;
}

/* ---- tests ---- */

static void test_get_info(void **state)
{
        static const char info[] = "{\"parameters\":{\"vendor\":\"Example\",\"product\":\"toyd\","
                                   "\"version\":\"1.2\",\"url\":\"\","
                                   "\"interfaces\":[\"org.varlink.service\",\"org.example.toy\"]}}";
        Fixture *f = *state;
        Peer p, q;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.varlink.service.GetInfo\"}");
        peer_expect(f, &p, info);
        /* Strict parameters apply to the built-in interface too. */
        peer_send(&p, "{\"method\":\"org.varlink.service.GetInfo\",\"parameters\":{\"x\":1}}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InvalidParameter\","
                    "\"parameters\":{\"parameter\":\"x\"}}");
        /* The same calls again, the parsed ones the server keeps, on this connection and on
         * another: the same answers. */
        peer_connect(f, &q);
        for (int i = 0; i < 2; i++) {
                peer_send(&p, "{\"method\":\"org.varlink.service.GetInfo\"}");
                peer_expect(f, &p, info);
                peer_send(&q, "{\"method\":\"org.varlink.service.GetInfo\"}");
                peer_expect(f, &q, info);
                peer_send(&q,
                          "{\"method\":\"org.varlink.service.GetInfo\",\"parameters\":{\"x\":1}}");
                peer_expect(f, &q,
                            "{\"error\":\"org.varlink.service.InvalidParameter\","
                            "\"parameters\":{\"parameter\":\"x\"}}");
        }
        peer_close(&q);
        peer_close(&p);
}

static void test_get_interface_description(void **state)
{
        Fixture *f = *state;
        json_t *msg, *expected;
        const char *text;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                      "\"parameters\":{\"interface\":\"org.example.toy\"}}");
        msg = peer_recv(f, &p);
        expected = json_pack("{s:{s:s}}", "parameters", "description", toy_description);
        assert_true(json_equal(msg, expected));
        json_decref(expected);
        json_decref(msg);

        peer_send(&p, "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                      "\"parameters\":{\"interface\":\"org.varlink.service\"}}");
        msg = peer_recv(f, &p);
        assert_non_null(msg);
        text = json_string_value(
                json_object_get(json_object_get(msg, "parameters"), "description"));
        assert_non_null(text);
        assert_non_null(strstr(text, "interface org.varlink.service\n"));
        assert_non_null(strstr(text, "method GetInterfaceDescription(interface: string)"));
        json_decref(msg);

        peer_send(&p, "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                      "\"parameters\":{\"interface\":\"org.example.nope\"}}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InterfaceNotFound\","
                    "\"parameters\":{\"interface\":\"org.example.nope\"}}");
        peer_send(&p, "{\"method\":\"org.varlink.service.GetInterfaceDescription\"}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InvalidParameter\","
                    "\"parameters\":{\"parameter\":\"interface\"}}");
        peer_close(&p);
}

static void test_unknown_method_and_interface(void **state)
{
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Nope\"}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.MethodNotFound\","
                    "\"parameters\":{\"method\":\"org.example.toy.Nope\"}}");
        peer_send(&p, "{\"method\":\"org.example.other.Echo\"}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InterfaceNotFound\","
                    "\"parameters\":{\"interface\":\"org.example.other\"}}");
        /* A prefix of a registered interface is not that interface. */
        peer_send(&p, "{\"method\":\"org.example.Echo\"}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InterfaceNotFound\","
                    "\"parameters\":{\"interface\":\"org.example\"}}");
        /* No upgradable method exists. */
        peer_send(&p, "{\"method\":\"org.example.toy.Bump\",\"upgrade\":true}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.MethodNotImplemented\","
                    "\"parameters\":{\"method\":\"org.example.toy.Bump\"}}");
        assert_int_equal(f->toy.bumps, 0);
        /* Errors for the call leave the connection usable. */
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"ok\"}}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"ok\"}}");
        peer_close(&p);
}

static void test_invalid_parameter(void **state)
{
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\"}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InvalidParameter\","
                    "\"parameters\":{\"parameter\":\"text\"}}");
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\","
                      "\"parameters\":{\"text\":\"a\",\"colour\":\"red\"}}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InvalidParameter\","
                    "\"parameters\":{\"parameter\":\"colour\"}}");
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\","
                      "\"parameters\":{\"text\":7}}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InvalidParameter\","
                    "\"parameters\":{\"parameter\":\"text\"}}");
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\","
                      "\"parameters\":{\"text\":\"a\",\"count\":11}}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.InvalidParameter\","
                    "\"parameters\":{\"parameter\":\"count\"}}");
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\","
                      "\"parameters\":{\"text\":\"ab\",\"count\":3}}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"ababab\"}}");
        peer_close(&p);
}

static void test_pipelined_in_order(void **state)
{
        static const char calls[] =
                "{\"method\":\"org.example.toy.Delay\",\"parameters\":{\"ms\":30}}\0"
                "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"a\"}}\0"
                "{\"method\":\"org.example.toy.Nope\"}\0"
                "{\"method\":\"org.example.toy.Delay\",\"parameters\":{\"ms\":1}}\0"
                "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"b\"}}";
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        /* All in one write; the slow asynchronous call first must still be answered first. */
        peer_send_raw(&p, calls, sizeof(calls));
        peer_expect(f, &p, "{\"parameters\":{\"i\":1}}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"a\"}}");
        peer_expect(f, &p,
                    "{\"error\":\"org.varlink.service.MethodNotFound\","
                    "\"parameters\":{\"method\":\"org.example.toy.Nope\"}}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":1}}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"b\"}}");

        /* Many small calls in one write, more than are buffered before reading pauses. */
        for (int i = 0; i < 100; i++) {
                char call[128];

                snprintf(call, sizeof(call),
                         "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"%d\"}}",
                         i);
                peer_send(&p, call);
        }
        for (int i = 0; i < 100; i++) {
                char reply[64];

                snprintf(reply, sizeof(reply), "{\"parameters\":{\"text\":\"%d\"}}", i);
                peer_expect(f, &p, reply);
        }
        peer_close(&p);
}

/* A call that arrives whole is answered in the turn of the loop that reads it: a client that
 * calls now and then finds the loop's code cold, and each turn more costs it a wait in epoll
 * and the loop's own work again. */
static void test_answered_in_one_turn(void **state)
{
        Fixture *f = *state;
        json_t *msg = NULL;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        /* The first call also has the connection accepted. */
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"a\"}}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"a\"}}");
        for (int i = 0; i < 3; i++) {
                peer_send(&p,
                          "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"b\"}}");
                assert_true(sd_event_run(f->event, WAIT_USEC) > 0);
                peer_poll(&p);
                assert_int_equal(varlink_reader_next(p.reader, &msg), 1);
                json_decref(msg);
        }
        peer_close(&p);
}

static void test_more_stream(void **state)
{
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        /* A call pipelined behind an open stream waits for the stream to end. */
        peer_send(&p, "{\"method\":\"org.example.toy.Count\",\"parameters\":{\"n\":4},"
                      "\"more\":true}");
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"after\"}}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":1},\"continues\":true}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":2},\"continues\":true}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":3},\"continues\":true}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":4}}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"after\"}}");
        assert_int_equal(f->toy.streams_active, 0);
        assert_int_equal(f->toy.streams_closed, 0);

        /* A streaming method called without "more". */
        peer_send(&p, "{\"method\":\"org.example.toy.Count\",\"parameters\":{\"n\":4}}");
        peer_expect(f, &p, "{\"error\":\"org.varlink.service.ExpectedMore\",\"parameters\":{}}");

        /* "more" on an ordinary method gets one ordinary reply. */
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"x\"},"
                      "\"more\":true}");
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"x\"}}");
        peer_close(&p);
}

static void test_stream_client_leaves(void **state)
{
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Count\",\"parameters\":{\"n\":0},"
                      "\"more\":true}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":1},\"continues\":true}");
        peer_expect(f, &p, "{\"parameters\":{\"i\":2},\"continues\":true}");
        assert_int_equal(f->toy.streams_active, 1);
        peer_close(&p);
        PUMP_UNTIL(f, f->toy.streams_closed == 1);
        assert_int_equal(f->toy.streams_active, 0);
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 0);
}

static void test_oneway(void **state)
{
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Bump\",\"oneway\":true}");
        peer_send(&p, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"next\"}}");
        /* The first reply on the wire belongs to the second call. */
        peer_expect(f, &p, "{\"parameters\":{\"text\":\"next\"}}");
        assert_int_equal(f->toy.bumps, 1);
        /* A oneway call that fails gets no error either. */
        peer_send(&p, "{\"method\":\"org.example.toy.Nope\",\"oneway\":true}");
        peer_send(&p, "{\"method\":\"org.example.toy.Bump\"}");
        peer_expect(f, &p, "{\"parameters\":{\"bumps\":2}}");
        peer_close(&p);

        /* Send and hang up at once: the call still runs. */
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Bump\",\"oneway\":true}");
        peer_close(&p);
        PUMP_UNTIL(f, f->toy.bumps == 3 && varlink_server_n_connections(f->server) == 0);
}

static void test_protocol_errors_close(void **state)
{
        static const struct {
                const char *message;
                const char *parameter;
        } cases[] = {
                {"{\"method\":", "message"},
                {"[\"org.example.toy.Bump\"]", "message"},
                {"{\"method\":\"org.example.toy.Bump\",\"id\":1}", "id"},
                {"{\"method\":\"org.example.toy.Bump\",\"more\":true,\"oneway\":true}", "oneway"},
                {"{\"method\":\"Bump\"}", "method"},
                {"{\"method\":\"org.example.toy.Bump\",\"parameters\":[]}", "parameters"},
        };
        Fixture *f = *state;

        start_server(f, NULL);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char expected[256];
                Peer p;

                peer_connect(f, &p);
                peer_send(&p, cases[i].message);
                /* Whatever follows a protocol violation is not run. */
                peer_send(&p, "{\"method\":\"org.example.toy.Bump\"}");
                snprintf(expected, sizeof(expected),
                         "{\"error\":\"org.varlink.service.InvalidParameter\","
                         "\"parameters\":{\"parameter\":\"%s\"}}",
                         cases[i].parameter);
                peer_expect(f, &p, expected);
                peer_expect_eof(f, &p);
                peer_close(&p);
        }
        assert_int_equal(f->toy.bumps, 0);
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 0);
}

static void test_oversize_closes(void **state)
{
        Fixture *f = *state;
        VarlinkServerLimits limits;
        size_t prefix;
        char *big;
        Peer p;

        varlink_server_limits_default(&limits);
        limits.max_message_bytes = 1024;
        start_server(f, &limits);

        big = malloc(4096);
        assert_non_null(big);

        /* Just under the limit works. */
        peer_connect(f, &p);
        snprintf(big, 4096, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"");
        prefix = strlen(big);
        memset(big + prefix, 'y', 1024 - prefix - 3);
        big[1021] = '\0';
        strcat(big, "\"}}");
        assert_int_equal(strlen(big), 1024);
        peer_send(&p, big);
        {
                json_t *msg = peer_recv(f, &p);
                const char *text;

                assert_non_null(msg);
                text = json_string_value(
                        json_object_get(json_object_get(msg, "parameters"), "text"));
                assert_non_null(text);
                assert_int_equal(strlen(text), 1024 - prefix - 3);
                json_decref(msg);
        }

        /* One byte over: closed without an answer. */
        memmove(big + 60, big + 59, strlen(big + 59) + 1);
        assert_int_equal(strlen(big), 1025);
        peer_send(&p, big);
        peer_expect_eof(f, &p);
        peer_close(&p);

        /* A message that never ends is cut off as soon as it passes the limit. */
        peer_connect(f, &p);
        memset(big, ' ', 4096);
        big[0] = '{';
        peer_send_raw(&p, big, 4096);
        peer_expect_eof(f, &p);
        peer_close(&p);
        free(big);
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 0);
}

/* Starts the server with the default limits but room for two connections only. */
static void start_server_two_connections(Fixture *f)
{
        VarlinkServerLimits limits;

        varlink_server_limits_default(&limits);
        limits.max_connections = 2;
        start_server(f, &limits);
}

static void test_max_connections(void **state)
{
        Fixture *f = *state;
        Peer a, b, c;

        start_server_two_connections(f);

        peer_connect(f, &a);
        peer_send(&a, "{\"method\":\"org.example.toy.Bump\"}");
        peer_expect(f, &a, "{\"parameters\":{\"bumps\":1}}");
        peer_connect(f, &b);
        peer_send(&b, "{\"method\":\"org.example.toy.Bump\"}");
        peer_expect(f, &b, "{\"parameters\":{\"bumps\":2}}");
        assert_int_equal(varlink_server_n_connections(f->server), 2);

        /* The third is accepted and closed at once. */
        peer_connect(f, &c);
        peer_send(&c, "{\"method\":\"org.example.toy.Bump\"}");
        peer_expect_eof(f, &c);
        peer_close(&c);
        assert_int_equal(f->toy.bumps, 2);

        /* The others are unaffected, and a freed slot can be taken again. */
        peer_send(&a, "{\"method\":\"org.example.toy.Bump\"}");
        peer_expect(f, &a, "{\"parameters\":{\"bumps\":3}}");
        peer_close(&b);
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 1);
        peer_connect(f, &c);
        peer_send(&c, "{\"method\":\"org.example.toy.Bump\"}");
        peer_expect(f, &c, "{\"parameters\":{\"bumps\":4}}");
        peer_close(&c);
        peer_close(&a);
}

/* Clients that have gone count no longer, even when the loop has not yet turned to them: with
 * every slot held by clients that hung up, a new one is answered. (In a flood of short-lived
 * clients the listener is often served before their hang-ups.) */
static void test_max_connections_gone(void **state)
{
        Fixture *f = *state;
        Peer a, b, c;

        start_server_two_connections(f);

        for (int round = 0; round < 20; round++) {
                peer_connect(f, &a);
                peer_connect(f, &b);
                PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 2);
                peer_close(&a);
                peer_close(&b);
                peer_connect(f, &c);
                peer_send(&c, "{\"method\":\"org.example.toy.Bump\"}");
                peer_expect(f, &c, "{\"parameters\":{\"bumps\":1}}");
                peer_close(&c);
                PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 0);
                f->toy.bumps = 0;
        }
}

static void test_slow_reader_dropped(void **state)
{
        static const char big_call[] =
                "{\"method\":\"org.example.toy.Big\",\"parameters\":{\"size\":16384}}";
        const unsigned n_calls = 300;
        Fixture *f = *state;
        VarlinkServerLimits limits;
        unsigned received;
        Peer slow, other;

        varlink_server_limits_default(&limits);
        limits.max_output_bytes = 64 * 1024;
        start_server(f, &limits);

        peer_connect(f, &slow);
        peer_connect(f, &other);
        /* ~5 MB of replies requested; the socket buffer plus the queue hold far less. The
         * calls are written without blocking, letting the server run whenever the socket is
         * full, until the server hangs up. */
        for (unsigned i = 0; i < n_calls; i++) {
                size_t len = strlen(big_call) + 1, off = 0;

                while (off < len) {
                        ssize_t n = send(slow.fd, big_call + off, len - off,
                                         MSG_DONTWAIT | MSG_NOSIGNAL);

                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                                assert_true(sd_event_run(f->event, 5000) >= 0);
                                continue;
                        }
                        if (n < 0) {
                                assert_true(errno == EPIPE || errno == ECONNRESET);
                                break;
                        }
                        off += (size_t)n;
                }
                if (off < len) {
                        break;
                }
        }
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 1);

        /* The loop never blocked on the slow client: the other one is served. */
        peer_send(&other, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"hi\"}}");
        peer_expect(f, &other, "{\"parameters\":{\"text\":\"hi\"}}");

        /* The slow client finds a truncated sequence of replies and then the end. */
        received = peer_drain(f, &slow);
        assert_true(received < n_calls);
        peer_close(&slow);
        peer_close(&other);
}

static void test_idle_timeout(void **state)
{
        Fixture *f = *state;
        VarlinkServerLimits limits;
        uint64_t start, elapsed;
        unsigned replies = 0;
        Peer idle, silent, stream, slow;

        varlink_server_limits_default(&limits);
        limits.idle_timeout_usec = 300000;
        start_server(f, &limits);

        peer_connect(f, &stream);
        peer_send(&stream, "{\"method\":\"org.example.toy.Count\","
                           "\"parameters\":{\"n\":0,\"interval_ms\":50},\"more\":true}");
        /* A call that takes longer than the idle timeout, with nothing sent meanwhile. */
        peer_connect(f, &slow);
        peer_send(&slow, "{\"method\":\"org.example.toy.Delay\",\"parameters\":{\"ms\":700}}");
        peer_connect(f, &silent);
        peer_connect(f, &idle);
        peer_send(&idle, "{\"method\":\"org.example.toy.Echo\",\"parameters\":{\"text\":\"x\"}}");
        peer_expect(f, &idle, "{\"parameters\":{\"text\":\"x\"}}");
        start = now_ns(CLOCK_MONOTONIC) / 1000;

        /* Closed after the timeout, not before it. */
        peer_expect_eof(f, &idle);
        elapsed = now_ns(CLOCK_MONOTONIC) / 1000 - start;
        assert_true(elapsed >= 250000);
        peer_expect_eof(f, &silent);

        /* The stream is a call in progress, not idleness: it keeps going well past the
         * timeout. */
        while (now_ns(CLOCK_MONOTONIC) / 1000 - start < 900000) {
                json_t *msg = peer_recv(f, &stream);

                assert_non_null(msg);
                assert_true(json_is_true(json_object_get(msg, "continues")));
                json_decref(msg);
                replies++;
        }
        assert_true(replies >= 3);
        peer_expect(f, &slow, "{\"parameters\":{\"i\":1}}");
        assert_int_equal(varlink_server_n_connections(f->server), 2);
        /* Once its call is answered, that connection is idle again. */
        peer_expect_eof(f, &slow);
        peer_close(&slow);
        peer_close(&idle);
        peer_close(&silent);
        peer_close(&stream);
        PUMP_UNTIL(f, f->toy.streams_active == 0);
}

static void test_peer_credentials(void **state)
{
        Fixture *f = *state;
        char expected[128];
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Peer\"}");
        snprintf(expected, sizeof(expected), "{\"parameters\":{\"uid\":%u,\"gid\":%u,\"pid\":%d}}",
                 (unsigned)getuid(), (unsigned)getgid(), (int)getpid());
        peer_expect(f, &p, expected);
        peer_close(&p);
}

static void test_handler_failures(void **state)
{
        Fixture *f = *state;
        Peer p;

        start_server(f, NULL);
        /* A handler that fails without an answer closes the connection. */
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Fail\"}");
        peer_expect_eof(f, &p);
        peer_close(&p);

        /* A call dropped by its owner without an answer would block the connection forever:
         * the connection is closed instead. */
        peer_connect(f, &p);
        peer_send(&p, "{\"method\":\"org.example.toy.Never\"}");
        PUMP_UNTIL(f, f->toy.never != NULL);
        assert_false(varlink_call_is_closed(f->toy.never));
        f->toy.never = varlink_call_unref(f->toy.never);
        peer_expect_eof(f, &p);
        peer_close(&p);
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 0);
}

/* Long because its cases share one server and run in order. */
static void test_listen(void **state)
{
        Fixture *f = *state;
        struct sockaddr_un sa;
        socklen_t sa_len;
        VarlinkServer *other;
        int fd, fds[2];
        Peer p;

        /* A socket file left behind by a dead process is replaced. */
        {
                char sub[160];

                snprintf(sub, sizeof(sub), "%s/run", f->dir);
                assert_int_equal(mkdir(sub, 0700), 0);
        }
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_int_equal(sockaddr_un_set(&sa, f->path, &sa_len), 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sa_len), 0);
        close(fd);
        start_server(f, NULL);
        {
                struct stat st;

                assert_int_equal(stat(f->path, &st), 0);
                assert_true(S_ISSOCK(st.st_mode));
                assert_int_equal(st.st_mode & 0777, 0660);
        }

        /* A live one is not taken over. */
        assert_int_equal(varlink_server_new(f->event, NULL, &other), 0);
        assert_int_equal(varlink_server_listen_path(other, f->path, 0600), -EADDRINUSE);

        /* A file that is not a socket is not removed. */
        {
                char file[160];

                snprintf(file, sizeof(file), "%s/file", f->dir);
                fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                close(fd);
                assert_int_equal(varlink_server_listen_path(other, file, 0600), -EEXIST);
                assert_int_equal(unlink(file), 0);
        }

        /* A name in the abstract namespace has no file to give a mode: only a path is taken. */
        assert_int_equal(varlink_server_listen_path(other, "@test-varlink", 0600), -EINVAL);

        /* Inherited descriptors: only listening AF_UNIX stream sockets are taken. */
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        assert_int_equal(varlink_server_listen_fd(other, fds[0]), -ENOTSOCK);
        close(fds[0]);
        close(fds[1]);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(varlink_server_listen_fd(other, fd), -EINVAL);
        close(fd);
        {
                /* A listening socket in the abstract namespace, as socket activation might
                 * pass one. */
                struct sockaddr_un abstract;
                int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                char name[64];
                socklen_t len;

                snprintf(name, sizeof(name), "@test-varlink-%d", (int)getpid());
                assert_int_equal(sockaddr_un_set(&abstract, name, &len), 0);
                assert_int_equal(bind(lfd, (struct sockaddr *)&abstract, len), 0);
                assert_int_equal(listen(lfd, 16), 0);
                assert_int_equal(varlink_server_listen_fd(other, lfd), 0);

                p.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                assert_int_equal(connect(p.fd, (struct sockaddr *)&abstract, len), 0);
                assert_int_equal(varlink_reader_new(65536, &p.reader), 0);
                p.eof = false;
                peer_send(&p, "{\"method\":\"org.varlink.service.GetInfo\"}");
                peer_expect(f, &p,
                            "{\"parameters\":{\"vendor\":\"\",\"product\":\"\",\"version\":\"\","
                            "\"url\":\"\",\"interfaces\":[\"org.varlink.service\"]}}");
                peer_close(&p);
        }
        varlink_server_free(other);

        /* The bad registrations are refused. */
        assert_int_equal(varlink_server_add_interface(f->server, TOY, "", toy_methods, 1), -EEXIST);
        assert_int_equal(varlink_server_add_interface(f->server, "toy", "", toy_methods, 1),
                         -EINVAL);
        {
                const VarlinkMethod bad[] = {{"lower", toy_bump, 0}};
                const VarlinkMethod dup[] = {{"A", toy_bump, 0}, {"A", toy_bump, 0}};

                assert_int_equal(
                        varlink_server_add_interface(f->server, "org.example.bad", "", bad, 1),
                        -EINVAL);
                assert_int_equal(
                        varlink_server_add_interface(f->server, "org.example.dup", "", dup, 2),
                        -EINVAL);
        }
}

/* ---- the client, against a server running in its own thread ---- */

typedef struct ServerThread {
        pthread_t thread;
        int stop[2];
        sd_event_source *stop_source;
} ServerThread;

static int on_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *server_thread_main(void *userdata)
{
        Fixture *f = userdata;

        (void)sd_event_loop(f->event);
        return NULL;
}

/* From here until server_thread_stop() only the thread touches the loop and the toy. */
static void server_thread_start(Fixture *f, ServerThread *t)
{
        assert_int_equal(pipe2(t->stop, O_CLOEXEC), 0);
        assert_int_equal(
                sd_event_add_io(f->event, &t->stop_source, t->stop[0], EPOLLIN, on_stop, NULL), 0);
        assert_int_equal(pthread_create(&t->thread, NULL, server_thread_main, f), 0);
}

static void server_thread_stop(ServerThread *t)
{
        assert_int_equal(write(t->stop[1], "x", 1), 1);
        assert_int_equal(pthread_join(t->thread, NULL), 0);
        t->stop_source = sd_event_source_disable_unref(t->stop_source);
        close(t->stop[0]);
        close(t->stop[1]);
}

typedef struct Collected {
        json_int_t values[16];
        bool continues[16];
        unsigned n;
        unsigned stop_after; /* 0: never stop */
        char *error;
} Collected;

static int collect(json_t *params, const char *error_name, bool continues, void *userdata)
{
        Collected *c = userdata;

        if (error_name) {
                c->error = strdup(error_name);
                return 0;
        }
        if (c->n < 16) {
                c->values[c->n] = json_integer_value(json_object_get(params, "i"));
                c->continues[c->n] = continues;
        }
        c->n++;
        if (c->stop_after > 0 && c->n >= c->stop_after) {
                return -ECANCELED;
        }
        return 0;
}

/* Long because its cases share one server and one client and run in order. */
static void test_client(void **state)
{
        Fixture *f = *state;
        VarlinkClient *c;
        ServerThread t;
        Collected got = {};
        json_t *params, *reply = NULL;
        char *error = NULL;

        start_server(f, NULL);
        server_thread_start(f, &t);

        assert_int_equal(varlink_client_connect("/nonexistent/io.example", &c), -ENOENT);
        assert_int_equal(varlink_client_connect(f->path, &c), 0);

        assert_int_equal(
                varlink_client_call(c, "org.varlink.service.GetInfo", NULL, &reply, &error), 0);
        assert_null(error);
        assert_string_equal(json_string_value(json_object_get(reply, "product")), "toyd");
        assert_int_equal(json_array_size(json_object_get(reply, "interfaces")), 2);
        json_decref(reply);

        /* Parameters are borrowed. */
        params = json_pack("{s:s, s:i}", "text", "hi", "count", 3);
        assert_int_equal(varlink_client_call(c, TOY ".Echo", params, &reply, &error), 0);
        assert_null(error);
        assert_string_equal(json_string_value(json_object_get(reply, "text")), "hihihi");
        assert_int_equal(params->refcount, 1);
        json_decref(params);
        json_decref(reply);

        /* An error reply is a reply: its name and parameters come back. */
        assert_int_equal(varlink_client_call(c, TOY ".Echo", NULL, &reply, &error), 0);
        assert_string_equal(error, VARLINK_ERROR_INVALID_PARAMETER);
        assert_string_equal(json_string_value(json_object_get(reply, "parameter")), "text");
        free(error);
        json_decref(reply);

        /* A stream: every reply reaches the callback, the last without "continues". */
        params = json_pack("{s:i}", "n", 5);
        assert_int_equal(varlink_client_call_more(c, TOY ".Count", params, collect, &got), 0);
        json_decref(params);
        assert_int_equal(got.n, 5);
        for (unsigned i = 0; i < 5; i++) {
                assert_int_equal(got.values[i], i + 1);
                assert_true(got.continues[i] == (i < 4));
        }
        assert_null(got.error);

        /* An error ends a stream too. */
        memset(&got, 0, sizeof(got));
        params = json_pack("{s:i}", "n", -1);
        assert_int_equal(varlink_client_call_more(c, TOY ".Count", params, collect, &got), 0);
        json_decref(params);
        assert_int_equal(got.n, 0);
        assert_string_equal(got.error, VARLINK_ERROR_INVALID_PARAMETER);
        free(got.error);

        /* Oneway: nothing comes back, but the call runs before the next one. */
        assert_int_equal(varlink_client_call_oneway(c, TOY ".Bump", NULL), 0);
        assert_int_equal(varlink_client_call(c, TOY ".Bump", NULL, &reply, NULL), 0);
        assert_int_equal(json_integer_value(json_object_get(reply, "bumps")), 2);
        json_decref(reply);

        /* A reply over the client's limit. */
        assert_int_equal(varlink_client_set_max_message(c, 1000), 0);
        params = json_pack("{s:i}", "size", 2000);
        assert_int_equal(varlink_client_call(c, TOY ".Big", params, &reply, &error), -EMSGSIZE);
        json_decref(params);
        assert_int_equal(varlink_client_call(c, TOY ".Bump", NULL, &reply, &error), -ENOTCONN);
        varlink_client_free(c);

        /* No answer within the timeout; the connection is then unusable. */
        assert_int_equal(varlink_client_connect(f->path, &c), 0);
        varlink_client_set_timeout(c, 200000);
        assert_int_equal(varlink_client_call(c, TOY ".Never", NULL, &reply, &error), -ETIMEDOUT);
        assert_int_equal(varlink_client_call(c, TOY ".Bump", NULL, &reply, &error), -ENOTCONN);
        varlink_client_free(c);

        /* The callback stops an endless stream. */
        assert_int_equal(varlink_client_connect(f->path, &c), 0);
        memset(&got, 0, sizeof(got));
        got.stop_after = 3;
        params = json_pack("{s:i}", "n", 0);
        assert_int_equal(varlink_client_call_more(c, TOY ".Count", params, collect, &got),
                         -ECANCELED);
        json_decref(params);
        assert_int_equal(got.n, 3);
        assert_int_equal(varlink_client_call(c, TOY ".Bump", NULL, &reply, &error), -ENOTCONN);
        varlink_client_free(c);

        server_thread_stop(&t);
}

static void test_client_server_gone(void **state)
{
        Fixture *f = *state;
        VarlinkClient *c;
        json_t *reply = NULL;
        char *error = NULL;
        Peer p;

        start_server(f, NULL);
        peer_connect(f, &p);
        PUMP_UNTIL(f, varlink_server_n_connections(f->server) == 1);
        /* The server side of the connection, closed with the server. */
        assert_int_equal(varlink_client_new_from_fd(p.fd, &c), 0);
        p.fd = -1;
        peer_close(&p);
        varlink_server_free(f->server);
        f->server = NULL;
        assert_int_equal(varlink_client_call(c, TOY ".Bump", NULL, &reply, &error), -ECONNRESET);
        varlink_client_free(c);
        /* Nothing listens any more. */
        assert_int_equal(varlink_client_connect(f->path, &c), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_get_info, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_interface_description, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unknown_method_and_interface, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid_parameter, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pipelined_in_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_answered_in_one_turn, setup, teardown),
                cmocka_unit_test_setup_teardown(test_more_stream, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stream_client_leaves, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oneway, setup, teardown),
                cmocka_unit_test_setup_teardown(test_protocol_errors_close, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversize_closes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_max_connections, setup, teardown),
                cmocka_unit_test_setup_teardown(test_max_connections_gone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slow_reader_dropped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_peer_credentials, setup, teardown),
                cmocka_unit_test_setup_teardown(test_handler_failures, setup, teardown),
                cmocka_unit_test_setup_teardown(test_listen, setup, teardown),
                cmocka_unit_test_setup_teardown(test_client, setup, teardown),
                cmocka_unit_test_setup_teardown(test_client_server_gone, setup, teardown),
        };

        if (getenv("TEST_FILTER")) {
                cmocka_set_test_filter(getenv("TEST_FILTER"));
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}

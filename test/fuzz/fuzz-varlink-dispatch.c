/* fuzz-varlink-dispatch: whole client byte streams through the real server and the real
 * io.jitterd method table.
 *
 * Once per process: a Manager without running probes (one probe on CPU 2, created but never
 * started), a history filled with intervals, attribution and periodic interruptions, the
 * audit pointed at the fixture tree of test-audit, and a VarlinkServer listening on an
 * abstract socket. Per input: a client connects, sends the bytes, half-closes, and reads
 * every reply until the server is done with it; open Monitor calls get one interval, and a
 * Reload waiting for its READY=1 gets it unless the input's length is odd; then the client
 * closes. The manager's configuration file does not exist: every key at its default, as here,
 * so that a reload restarts nothing. Checked: every byte the server sends is a well-formed
 * reply, the connection is gone afterwards and nothing of it is left (no Monitor or Reload
 * call, no connection). The history is rebuilt after an input that emptied it with Reset. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "api-internal.h"
#include "attrib.h"
#include "config.h"
#include "history.h"
#include "log.h"
#include "manager-private.h"
#include "varlink-server-internal.h"
#include "varlink.h"
#include "util.h"

#ifndef TEST_SOURCE_DIR
#error "TEST_SOURCE_DIR must name the test/ directory (for the audit fixture)"
#endif

#define DISPATCH_CPU 2
#define DISPATCH_INTERVALS 90
#define DISPATCH_EVENTS 40
#define DISPATCH_MAX_ITERATIONS 100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Manager *dispatch_manager;
static Api *dispatch_api;
/* The attribution sources of the made-up intervals, as the table numbers them. */
static unsigned dispatch_ids[4];
static uint64_t dispatch_filled_ns;
static struct sockaddr_un dispatch_addr;
static socklen_t dispatch_addr_len;

/* A probe-like interval @i: a core of 20-32 ticks, a few long gaps, attribution counts that
 * vary so that the fit of time lost against them has something to solve. */
static void dispatch_make_slot(unsigned i, ProbeSlot *s, AttribDelta *d, const unsigned *ids)
{
        int64_t prev = -1;

        slot_clear(s);
        for (unsigned j = 0; j < 64; j++) {
                uint64_t v = 20 + (j * 7 + i) % 13;

                if (j % 21 == (i % 7)) {
                        v = 5000 + 1000ULL * ((i + j) % 17);
                        s->events++;
                        s->lost_ticks += v - 20;
                }
                stats_add(&s->gap, v);
                histogram_add(&s->gap_hist, v);
                if (prev >= 0) {
                        signed_stats_add(&s->dd, (int64_t)v - prev);
                        signed_histogram_add(&s->dd_hist, (int64_t)v - prev);
                }
                prev = (int64_t)v;
        }
        s->start_ticks = 1000000ULL * i;
        s->end_ticks = s->start_ticks + 999999ULL;
        attrib_delta_clear(d);
        for (unsigned k = 0; k < 4; k++) {
                d->items[d->n].id = (uint16_t)ids[k];
                d->items[d->n].count = 1 + (i * (k + 3)) % (5 + k);
                d->n++;
        }
}

static void dispatch_fill_history(Manager *m)
{
        static const char *const sources[] = {"irq:LOC", "softirq:TIMER", "ctxsw:involuntary",
                                              "smi"};
        HistoryOptions ho = {
                .interval_ns = m->config.history_interval_ns,
                .fine_retention_ns = m->config.history_fine_retention_ns,
                .coarse_interval_ns = 60ULL * 1000000000ULL,
                .coarse_retention_ns = m->config.history_coarse_retention_ns,
                .events_per_cpu = m->config.history_events_per_cpu,
        };
        static ProbeSlot slot;
        static AttribDelta delta;
        unsigned *ids = dispatch_ids;
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        uint64_t start = now - (uint64_t)DISPATCH_INTERVALS * ho.interval_ns;

        dispatch_filled_ns = now;
        history_free(m->history);
        m->history = NULL;
        if (history_new(&ho, &m->history) < 0) {
                abort();
        }
        for (unsigned k = 0; k < 4; k++) {
                int id = attrib_table_id(m->attrib, sources[k]);

                if (id < 0) {
                        abort();
                }
                ids[k] = (unsigned)id;
        }
        for (unsigned i = 0; i < DISPATCH_INTERVALS; i++) {
                dispatch_make_slot(i, &slot, &delta, ids);
                if (history_add_interval(m->history, DISPATCH_CPU, start + i * ho.interval_ns,
                                         ho.interval_ns, &slot, i % 29 == 5, &delta) < 0) {
                        abort();
                }
        }
        /* Interruptions every 250 ms over the last 10 s: a period to find. */
        for (unsigned i = 0; i < DISPATCH_EVENTS; i++) {
                HistoryEvent ev = {
                        .cpu = DISPATCH_CPU,
                        .start_ns = now - 10000000000ULL + 250000000ULL * i,
                        .start_real_ns = 1700000000000000000ULL + 250000000ULL * i,
                        .duration_ns = 12000 + 100ULL * (i % 5),
                };

                if (history_add_event(m->history, &ev) < 0) {
                        abort();
                }
        }
        m->probes[0].last = slot;
        m->probes[0].last_attrib = delta;
        m->probes[0].last_start_ns = now - ho.interval_ns;
        m->probes[0].last_duration_ns = ho.interval_ns;
        m->probes[0].have_last = true;
}

/* Whether the history still holds everything dispatch_fill_history() put in (a Reset empties
 * it): rebuilding it for every input would cost more than the input itself. */
static bool dispatch_history_intact(Manager *m)
{
        static HistoryWindow w;

        return history_query(m->history, DISPATCH_CPU, 0, 0, true, &w) == 0 &&
               w.slot.gap.count == DISPATCH_INTERVALS * 64ULL &&
               history_events(m->history, NULL, 0, 0, &(HistoryEvent){0}, 1) == 1;
}

/* The readiness timer a reload arms: READY=1 comes from the input's end (api_ready()), as no
 * probe runs here. */
static int dispatch_ready_poll(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void)usec, (void)userdata;
        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

/* The event loop of @m, with the readiness timer a reload arms, and the server with the API,
 * listening on an abstract socket. */
static void dispatch_serve(Manager *m)
{
        VarlinkServerLimits lim;
        int fd;

        if (sd_event_new(&m->event) < 0 ||
            sd_event_add_time(m->event, &m->ready_source, CLOCK_MONOTONIC, UINT64_MAX, 0,
                              dispatch_ready_poll, m) < 0 ||
            sd_event_source_set_enabled(m->ready_source, SD_EVENT_OFF) < 0) {
                abort();
        }
        varlink_server_limits_default(&lim);
        lim.max_message_bytes = m->config.server_max_message_bytes;
        lim.max_connections = m->config.server_max_clients;
        lim.max_output_bytes = 4 * 1024 * 1024;
        if (varlink_server_new(m->event, &lim, &m->server) < 0) {
                abort();
        }
        if (varlink_server_set_info(m->server, "jitterd", "jitterd", "fuzz", NULL) < 0 ||
            api_new(m, &dispatch_api) < 0) {
                abort();
        }

        /* An abstract socket: nothing to clean up in the file system. */
        dispatch_addr.sun_family = AF_UNIX;
        snprintf(dispatch_addr.sun_path + 1, sizeof(dispatch_addr.sun_path) - 1,
                 "jitterd-fuzz-dispatch-%d", (int)getpid());
        dispatch_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                        strlen(dispatch_addr.sun_path + 1));
        snprintf(m->socket_path, sizeof(m->socket_path), "@%s", dispatch_addr.sun_path + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&dispatch_addr, dispatch_addr_len) < 0 ||
            listen(fd, 16) < 0 || varlink_server_listen_fd(m->server, fd) < 0) {
                perror("fuzz-varlink-dispatch: listening socket");
                abort();
        }
}

static Manager *dispatch_setup(void)
{
        ProbeConfig pc = {0};
        Manager *m;
        ProbeCtl *p;
        int r;

        /* Reset logs who reset the history: not of interest here. */
        log_set_max_level(2);
        m = calloc(1, sizeof(*m));
        p = calloc(1, sizeof(*p));
        if (!m || !p) {
                abort();
        }
        config_init_defaults(&m->config);
        snprintf(m->config.audit_root, sizeof(m->config.audit_root), "%s",
                 TEST_SOURCE_DIR "/audit/base");
        m->config_path = TEST_SOURCE_DIR "/fuzz/no-such-jitterd.conf";
        m->start_mono_ns = now_ns(CLOCK_MONOTONIC);
        m->start_real_ns = 1700000000000000000ULL;
        m->counter.source = COUNTER_CLOCK;
        m->counter.hz_source = COUNTER_HZ_NOMINAL;
        m->counter.hz = 1000000000ULL;
        tickconv_init(&m->counter.conv, m->counter.hz);
        CPU_ZERO(&m->cpus);
        CPU_SET(DISPATCH_CPU, &m->cpus);

        pc.cpu = DISPATCH_CPU;
        pc.counter = m->counter;
        pc.threshold_ns = 10000;
        pc.preheat_ns = 1000000;
        pc.ring_capacity = 64;
        r = probe_new(&pc, &p->probe);
        if (r < 0) {
                fprintf(stderr, "fuzz-varlink-dispatch: cannot create the (idle) probe: %s\n",
                        strerror(-r));
                abort();
        }
        p->manager = m;
        p->cpu = DISPATCH_CPU;
        m->probes = p;
        m->n_probes = 1;

        if (attrib_table_new(&m->attrib) < 0) {
                abort();
        }
        dispatch_fill_history(m);

        dispatch_serve(m);
        return m;
}

/* Runs the event loop until nothing is pending. Returns how many sources were dispatched. */
static unsigned dispatch_run(Manager *m)
{
        unsigned n = 0;

        for (; n < DISPATCH_MAX_ITERATIONS; n++) {
                int r = sd_event_run(m->event, 0);

                if (r < 0) {
                        abort();
                }
                if (r == 0) {
                        return n;
                }
        }
        /* The loop never comes to rest: a source that keeps firing. */
        abort();
}

/* Reads what the server sent into @replies and checks each message is a reply. Returns true
 * once the server has closed its end. */
static bool dispatch_read(int fd, VarlinkReader *replies)
{
        char buf[65536];

        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                json_t *msg;
                int r;

                if (n == 0) {
                        return true;
                }
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR) {
                                return false;
                        }
                        /* ECONNRESET: the server dropped us with our data unread. */
                        return true;
                }
                if (varlink_reader_feed(replies, buf, (size_t)n) < 0) {
                        abort();
                }
                while ((r = varlink_reader_next(replies, &msg)) == 1) {
                        VarlinkReply reply;

                        if (varlink_reply_parse(msg, &reply) < 0) {
                                abort();
                        }
                        json_decref(msg);
                }
                if (r < 0) {
                        /* The server sent something that is not a JSON object. */
                        abort();
                }
        }
}

/* Hands the Monitor clients an interval, as a harvest would. */
static void dispatch_monitor_interval(Manager *m)
{
        static ProbeSlot slot;
        static AttribDelta delta;
        const ManagerInterval iv = {
                .cpu = DISPATCH_CPU,
                .state = "running",
                .slot = &slot,
                .attrib = &delta,
                .start_ns = now_ns(CLOCK_MONOTONIC) - m->config.history_interval_ns,
                .start_real_ns = 1700000000000000000ULL,
                .duration_ns = m->config.history_interval_ns,
        };

        dispatch_make_slot(0, &slot, &delta, dispatch_ids);
        api_monitor_interval(dispatch_api, &iv);
}

/* Gives the calls the server holds what they wait for: an interval for the Monitor calls,
 * READY=1 for a Reload (unless @leave_reloads); and reads what that sends. */
static void dispatch_held(Manager *m, int fd, VarlinkReader *replies, bool leave_reloads)
{
        if (api_n_monitors(dispatch_api) > 0) {
                dispatch_monitor_interval(m);
                api_interval(dispatch_api);
        }
        if (!leave_reloads) {
                api_ready(dispatch_api);
        }
        (void)dispatch_run(m);
        (void)dispatch_read(fd, replies);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        VarlinkReader *replies = NULL;
        Manager *m;
        size_t off = 0;
        bool shut = false, closed = false;
        unsigned quiet = 0;
        int fd;

        if (!dispatch_manager) {
                dispatch_manager = dispatch_setup();
        }
        m = dispatch_manager;
        /* Also now and then, so that the short windows ("10s") keep their data. */
        if (!dispatch_history_intact(m) ||
            now_ns(CLOCK_MONOTONIC) - dispatch_filled_ns > 5000000000ULL) {
                dispatch_fill_history(m);
        }

        /* Replies may be as large as the output limit. */
        if (varlink_reader_new(8 * 1024 * 1024, &replies) < 0) {
                abort();
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&dispatch_addr, dispatch_addr_len) < 0) {
                abort();
        }
        for (unsigned i = 0; !closed && i < DISPATCH_MAX_ITERATIONS; i++) {
                bool moved = false;

                if (off < size) {
                        ssize_t n = send(fd, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

                        if (n > 0) {
                                off += (size_t)n;
                                moved = true;
                        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                                /* The server closed on us (a protocol error): stop sending. */
                                off = size;
                        }
                } else if (!shut) {
                        shutdown(fd, SHUT_WR);
                        shut = true;
                        moved = true;
                }
                moved = dispatch_run(m) > 0 || moved;
                closed = dispatch_read(fd, replies);
                /* Nothing moves any more: the server waits for us (an open Monitor stream, or
                 * calls queued behind it with reading paused). */
                quiet = moved ? 0 : quiet + 1;
                if (quiet >= 3) {
                        break;
                }
        }
        if (!closed) {
                dispatch_held(m, fd, replies, size % 2 == 1);
        }
        close(fd);
        for (unsigned i = 0; varlink_server_n_connections(m->server) > 0; i++) {
                if (i >= 1000) {
                        fprintf(stderr, "fuzz-varlink-dispatch: the connection outlived its "
                                        "client\n");
                        abort();
                }
                (void)dispatch_run(m);
        }
        if (api_n_monitors(dispatch_api) > 0 || api_n_reloads(dispatch_api) > 0) {
                fprintf(stderr, "fuzz-varlink-dispatch: a Monitor or Reload call outlived its "
                                "connection\n");
                abort();
        }
        varlink_reader_free(replies);
        return 0;
}

/* jitter-bench-soak: a client that keeps a daemon busy the way dashboards and an operator
 * would, for tools/bench --soak. On one connection, @RATE times per second: GetStats (window 1m),
 * GetEvents (the last minute, at most 1000), GetStatus and GetCauses (window 1m); and once a
 * second GetStats (window 24h) and GetStats (window all). Each call is timed at the socket: from
 * its first byte written to the last byte of its reply read, the parsing of the reply (done
 * afterwards, to see whether it was an error) left out. Another thread opens a connection,
 * calls Monitor, takes one reply and hangs up, over and over. A failed call (a Busy refusal
 * included) is counted, said on stderr, and the loop goes on (on a new connection when the old
 * one broke). Every minute it prints a line; at the end one line per method, "= METHOD CALLS
 * P50_US P99_US P99.9_US MAX_US", then "= Monitor REPLIES" and "= errors ERRORS"; it exits 1
 * when there were errors, after those lines.
 * With WATCH_CPUS (a CPU list: the housekeeping CPUs; those this process may not use are left
 * out), a SCHED_FIFO 99 thread on each of them asks to wake every millisecond and keeps each
 * wake-up that came STALL_MIN_NS or more late: for that long the CPU ran nothing of lower
 * priority either, this client and jitterd included. Then "~ METHOD ..." lines give the same
 * figures over the calls that no such stall, on any of those CPUs, overlapped, and
 * "= stalls WAKES LATE_1MS WORST_US STALLED_PERCENT UNKEPT" what the watchers saw (UNKEPT:
 * stalls that memory could not hold, whose calls count as not stalled).
 *   jitter-bench-soak SOCKET SECONDS [RATE [WATCH_CPUS]] */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "cpulist.h"
#include "util.h"
#include "varlink-client.h"

static const char *socket_path;
static atomic_bool done;
static atomic_ulong monitor_replies, errors;

static void sleep_ns(uint64_t ns)
{
        struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

        nanosleep(&ts, NULL);
}

static void count_error(const char *what, const char *why)
{
        fprintf(stderr, "jitter-bench-soak: %s failed: %s\n", what, why);
        atomic_fetch_add(&errors, 1);
}

static int one_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        (void)params;
        (void)continues;
        (void)userdata;
        if (error_name) {
                count_error("Monitor", error_name);
                return -ECANCELED;
        }
        atomic_fetch_add(&monitor_replies, 1);
        /* Hang up after the first reply: what a client that goes away does. */
        return -ECANCELED;
}

static void *monitor_loop(void *arg)
{
        (void)arg;
        while (!atomic_load(&done)) {
                VarlinkClient *c;
                int r = varlink_client_connect(socket_path, &c);

                if (r < 0) {
                        count_error("connecting for Monitor", strerror(-r));
                        sleep_ns(100000000ULL);
                        continue;
                }
                r = varlink_client_call_more(c, "io.jitterd.Monitor", NULL, one_reply, NULL);
                /* -ECANCELED: the hang-up after the first reply, counted by one_reply(). */
                if (r < 0 && r != -ECANCELED) {
                        count_error("Monitor", strerror(-r));
                }
                varlink_client_free(c);
        }
        return NULL;
}

/* A growing array of latencies, with the time each call began. */
typedef struct Lat {
        uint64_t *v, *at;
        size_t n, cap;
} Lat;

static int lat_add(Lat *l, uint64_t at, uint64_t ns)
{
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 4096;
                uint64_t *v = realloc(l->v, cap * sizeof(*v));
                uint64_t *a = v ? realloc(l->at, cap * sizeof(*a)) : NULL;

                if (v) {
                        l->v = v;
                }
                if (!a) {
                        return -ENOMEM;
                }
                l->at = a;
                l->cap = cap;
        }
        l->v[l->n] = ns;
        l->at[l->n++] = at;
        return 0;
}

static double lat_pct(Lat *l, double p)
{
        size_t i;

        if (l->n == 0) {
                return 0;
        }
        i = (size_t)((double)l->n * p);
        return (double)l->v[i < l->n ? i : l->n - 1] / 1e3;
}

/* The connection the timed calls use: opened by the Varlink client, then read and written raw
 * on its socket, so that the time taken is the daemon's, from the first byte of the call
 * written to the last byte of the reply read, without the parsing of the reply (done
 * afterwards, untimed, to see whether it was an error). */
typedef struct Conn {
        VarlinkClient *client;
        int fd; /* the client's socket; -1 when closed */
        char *buf;
        size_t cap;
} Conn;

/* A reply that has not come in this long is an error, and its connection is closed. */
#define CALL_TIMEOUT_SEC 10

static int conn_open(Conn *c)
{
        struct timeval tv = {.tv_sec = CALL_TIMEOUT_SEC};
        int r = varlink_client_connect(socket_path, &c->client);

        if (r < 0) {
                return r;
        }
        c->fd = varlink_client_fd(c->client);
        if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                r = -errno;
                c->client = varlink_client_free(c->client);
                c->fd = -1;
                return r;
        }
        return 0;
}

static void conn_close(Conn *c)
{
        c->client = varlink_client_free(c->client);
        c->fd = -1;
}

/* Sends @msg (its NUL included) and reads the reply up to its NUL into c->buf; when the write
 * began in @ret_at, the time from it to the NUL read in @ret_ns. Returns the reply's length,
 * or a negative errno. */
static ssize_t conn_call(Conn *c, const char *msg, size_t len, uint64_t *ret_at, uint64_t *ret_ns)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        size_t off = 0, have = 0;

        *ret_at = t0;

        while (off < len) {
                ssize_t n = send(c->fd, msg + off, len - off, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR) {
                        continue;
                }
                if (n < 0) {
                        return -errno;
                }
                off += (size_t)n;
        }
        for (;;) {
                ssize_t n;

                if (have == c->cap) {
                        size_t cap = c->cap ? c->cap * 2 : 65536;
                        char *p = realloc(c->buf, cap);

                        if (!p) {
                                return -ENOMEM;
                        }
                        c->buf = p;
                        c->cap = cap;
                }
                n = recv(c->fd, c->buf + have, c->cap - have, 0);
                if (n < 0 && errno == EINTR) {
                        continue;
                }
                if (n <= 0) {
                        return n < 0 ? -errno : -ECONNRESET;
                }
                /* One call at a time: the reply's NUL is the last byte read. */
                have += (size_t)n;
                if (c->buf[have - 1] == '\0') {
                        *ret_ns = now_ns(CLOCK_MONOTONIC) - t0;
                        return (ssize_t)have - 1;
                }
        }
}

/* One call on @c, timed; a failed one (an error reply included) is counted as an error, and a
 * connection that broke is closed (the next round opens another). */
static void timed_call(Conn *c, const char *msg, size_t len, const char *method, Lat *lat)
{
        uint64_t at = 0, ns = 0;
        ssize_t n = conn_call(c, msg, len, &at, &ns);
        json_t *reply, *error;

        if (n < 0) {
                count_error(method, strerror((int)-n));
                conn_close(c);
                return;
        }
        reply = json_loadb(c->buf, (size_t)n, 0, NULL);
        error = json_object_get(reply, "error");
        if (!reply || error) {
                count_error(method, json_is_string(error) ? json_string_value(error)
                                                          : "a reply that is not JSON");
        } else if (lat_add(lat, at, ns) < 0) {
                count_error(method, "no memory to keep its latency");
        }
        json_decref(reply);
}

/* The stall watchers. A wake-up STALL_MIN_NS late or more is a stall, kept as the time from
 * the wake-up asked for to the one that came. The CPU may have been taken up to a period
 * earlier, which the watcher, asleep, cannot see (nor a stall that ends between two wake-ups),
 * so a call is counted as stalled only when it overlaps that span. Kernel work done for this
 * client or for jitterd that holds the CPU also delays the watcher: such calls leave the second
 * table too. */
#define WATCH_PERIOD_NS 1000000ULL
#define STALL_MIN_NS 200000ULL

typedef struct Stall {
        uint64_t from, to;
} Stall;

typedef struct Watch {
        int cpu;
        pthread_t thread;
        Stall *stalls;
        size_t n, cap;
        uint64_t unkept, wakes, late_1ms, worst_ns, stalled_ns;
} Watch;

static Watch *watches;
static size_t n_watches;

static void *watch_loop(void *arg)
{
        Watch *w = arg;
        uint64_t next = now_ns(CLOCK_MONOTONIC) + WATCH_PERIOD_NS;

        while (!atomic_load(&done)) {
                struct timespec ts = {(time_t)(next / 1000000000ULL), (long)(next % 1000000000ULL)};
                uint64_t now, late;

                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
                }
                now = now_ns(CLOCK_MONOTONIC);
                late = now > next ? now - next : 0;
                w->wakes++;
                w->worst_ns = late > w->worst_ns ? late : w->worst_ns;
                w->late_1ms += late >= 1000000ULL;
                if (late >= STALL_MIN_NS) {
                        w->stalled_ns += late;
                        if (w->n == w->cap) {
                                size_t cap = w->cap ? w->cap * 2 : 4096;
                                Stall *grown = realloc(w->stalls, cap * sizeof(*grown));

                                if (grown) {
                                        w->stalls = grown;
                                        w->cap = cap;
                                }
                        }
                        if (w->n < w->cap) {
                                w->stalls[w->n++] = (Stall){next, now};
                        } else {
                                w->unkept++;
                        }
                }
                /* Wake-ups missed during a stall are not made up for. */
                next = next + WATCH_PERIOD_NS > now ? next + WATCH_PERIOD_NS
                                                    : now + WATCH_PERIOD_NS;
        }
        return NULL;
}

/* Starts @w on @cpu. Returns 0 or an errno. */
static int watch_start(Watch *w, int cpu)
{
        struct sched_param sp = {.sched_priority = 99};
        pthread_attr_t attr;
        cpu_set_t one;
        int r;

        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        w->cpu = cpu;
        r = pthread_attr_init(&attr);
        if (r != 0) {
                return r;
        }
        r = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        if (r == 0) {
                r = pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
        }
        if (r == 0) {
                r = pthread_attr_setschedparam(&attr, &sp);
        }
        if (r == 0) {
                r = pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
        }
        if (r == 0) {
                r = pthread_create(&w->thread, &attr, watch_loop, w);
        }
        pthread_attr_destroy(&attr);
        return r;
}

/* Starts a watcher on each CPU of @list that this process may use. Returns 0, or -1 after
 * saying why (SCHED_FIFO needs CAP_SYS_NICE or an RLIMIT_RTPRIO of 99); the watchers started
 * are stopped by watches_stop(). */
static int watches_start(const char *list)
{
        cpu_set_t set, allowed;

        if (cpulist_parse(list, &set) < 0 || sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
                fprintf(stderr, "jitter-bench-soak: bad CPU list \"%s\"\n", list);
                return -1;
        }
        CPU_AND(&set, &set, &allowed);
        if (CPU_COUNT(&set) == 0) {
                fprintf(stderr, "jitter-bench-soak: none of the CPUs %s is allowed here\n", list);
                return -1;
        }
        watches = calloc((size_t)CPU_COUNT(&set), sizeof(*watches));
        if (!watches) {
                return -1;
        }
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                int r;

                if (!CPU_ISSET(cpu, &set)) {
                        continue;
                }
                r = watch_start(&watches[n_watches], cpu);
                if (r != 0) {
                        fprintf(stderr,
                                "jitter-bench-soak: cannot watch CPU %d at SCHED_FIFO 99: %s%s\n",
                                cpu, strerror(r),
                                r == EPERM ? " (needs CAP_SYS_NICE, or ulimit -r 99)" : "");
                        return -1;
                }
                n_watches++;
        }
        return 0;
}

static void watches_stop(void)
{
        for (size_t i = 0; i < n_watches; i++) {
                pthread_join(watches[i].thread, NULL);
        }
}

static void watches_free(void)
{
        for (size_t i = 0; i < n_watches; i++) {
                free(watches[i].stalls);
        }
        free(watches);
        watches = NULL;
        n_watches = 0;
}

static int cmp_stall(const void *a, const void *b)
{
        return cmp_u64(&((const Stall *)a)->from, &((const Stall *)b)->from);
}

/* Every watcher's stalls in one array, in order of their start; the longest in @ret_longest. */
static Stall *stalls_merged(size_t *ret_n, uint64_t *ret_longest)
{
        size_t n = 0, k = 0;
        Stall *all;

        for (size_t i = 0; i < n_watches; i++) {
                n += watches[i].n;
        }
        all = calloc(n ? n : 1, sizeof(*all));
        *ret_longest = 0;
        for (size_t i = 0; all && i < n_watches; i++) {
                for (size_t j = 0; j < watches[i].n; j++) {
                        Stall s = watches[i].stalls[j];

                        all[k++] = s;
                        *ret_longest = s.to - s.from > *ret_longest ? s.to - s.from : *ret_longest;
                }
        }
        if (all) {
                qsort(all, n, sizeof(*all), cmp_stall);
        }
        *ret_n = n;
        return all;
}

/* Whether a stall of @s (@n, sorted, none longer than @longest) overlaps [@at, @at + @ns). */
static bool stalled(const Stall *s, size_t n, uint64_t longest, uint64_t at, uint64_t ns)
{
        size_t lo = 0, hi = n;

        /* The first stall that begins at or after the call's end. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s[mid].from < at + ns) {
                        lo = mid + 1;
                } else {
                        hi = mid;
                }
        }
        for (size_t i = lo; i-- > 0 && s[i].from + longest > at;) {
                if (s[i].to > at) {
                        return true;
                }
        }
        return false;
}

static void lat_sort(Lat *l)
{
        qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
}

/* The calls of the client: the method, its parameters (a JSON text, or NULL), and whether it is
 * one of those made once a second rather than at RATE. */
typedef struct SoakCall {
        const char *name; /* as printed */
        const char *method;
        const char *params;
        bool each_second;
        char *msg; /* the call as sent, its NUL included */
        size_t msg_len;
        Lat lat;
} SoakCall;

static SoakCall calls[] = {
        {.name = "GetStats(1m)",
         .method = "io.jitterd.GetStats",
         .params = "{\"window\": \"1m\", \"without_analyses\": true}"},
        {.name = "GetEvents(1m,1000)",
         .method = "io.jitterd.GetEvents",
         .params = "{\"since\": \"1m\", \"limit\": 1000}"},
        {.name = "GetStatus", .method = "io.jitterd.GetStatus"},
        {.name = "GetCauses(1m)",
         .method = "io.jitterd.GetCauses",
         .params = "{\"window\": \"1m\"}"},
        {.name = "GetStats(24h)",
         .method = "io.jitterd.GetStats",
         .params = "{\"window\": \"24h\", \"without_analyses\": true}",
         .each_second = true},
        {.name = "GetStats(all)",
         .method = "io.jitterd.GetStats",
         .params = "{\"window\": \"all\", \"without_analyses\": true}",
         .each_second = true},
};

/* Writes the message of each call. Returns 0, or -1 after saying what is wrong. */
static int prepare_calls(void)
{
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                json_t *params = calls[i].params ? json_loads(calls[i].params, 0, NULL) : NULL;
                json_t *call = json_pack("{ss}", "method", calls[i].method);

                if (calls[i].params &&
                    (!params || json_object_set(call, "parameters", params) < 0)) {
                        json_decref(call);
                        call = NULL;
                }
                json_decref(params);
                calls[i].msg = call ? json_dumps(call, JSON_COMPACT) : NULL;
                json_decref(call);
                if (!calls[i].msg) {
                        fprintf(stderr, "jitter-bench-soak: bad parameters %s\n", calls[i].params);
                        return -1;
                }
                calls[i].msg_len = strlen(calls[i].msg) + 1;
        }
        return 0;
}

static void print_lat(char mark, const char *name, Lat *l)
{
        lat_sort(l);
        printf("%c %s %zu %.1f %.1f %.1f %.1f\n", mark, name, l->n, lat_pct(l, 0.5),
               lat_pct(l, 0.99), lat_pct(l, 0.999), l->n ? (double)l->v[l->n - 1] / 1e3 : 0.0);
}

/* The calls of @l that no stall overlapped, into @ret. Returns 0 or -ENOMEM. */
static int lat_unstalled(const Lat *l, const Stall *s, size_t n, uint64_t longest, Lat *ret)
{
        for (size_t i = 0; i < l->n; i++) {
                if (!stalled(s, n, longest, l->at[i], l->v[i]) &&
                    lat_add(ret, l->at[i], l->v[i]) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* What the watchers saw, over @seconds: "= stalls WAKES LATE_1MS WORST_US STALLED_PERCENT
 * UNKEPT", the share of the watched CPUs' time spent in stalls. */
static void print_stalls(double seconds)
{
        uint64_t wakes = 0, late = 0, worst = 0, stalled_ns = 0, unkept = 0;

        for (size_t i = 0; i < n_watches; i++) {
                wakes += watches[i].wakes;
                late += watches[i].late_1ms;
                worst = watches[i].worst_ns > worst ? watches[i].worst_ns : worst;
                stalled_ns += watches[i].stalled_ns;
                unkept += watches[i].unkept;
        }
        printf("= stalls %" PRIu64 " %" PRIu64 " %.1f %.3f %" PRIu64 "\n", wakes, late,
               (double)worst / 1e3, 100.0 * (double)stalled_ns / 1e9 / seconds / (double)n_watches,
               unkept);
}

/* The last lines: each call's latencies (and, with watchers, over the calls no stall
 * overlapped), the stalls, the Monitor replies, the errors. */
static void print_summary(double seconds)
{
        uint64_t longest = 0;
        size_t n_stalls = 0;
        Stall *stalls = n_watches ? stalls_merged(&n_stalls, &longest) : NULL;

        if (n_watches && !stalls) {
                fprintf(stderr,
                        "jitter-bench-soak: no memory to match the stalls with the calls\n");
        }
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                Lat *l = &calls[i].lat, clean = {0};

                if (stalls && lat_unstalled(l, stalls, n_stalls, longest, &clean) == 0) {
                        print_lat('~', calls[i].name, &clean);
                } else if (stalls) {
                        fprintf(stderr,
                                "jitter-bench-soak: no memory to sort out the calls of %s "
                                "that no stall overlapped\n",
                                calls[i].name);
                }
                print_lat('=', calls[i].name, l);
                free(clean.v);
                free(clean.at);
                free(calls[i].msg);
                free(l->v);
                free(l->at);
        }
        if (n_watches) {
                print_stalls(seconds);
        }
        free(stalls);
        watches_free();
        printf("= Monitor %lu\n= errors %lu\n", atomic_load(&monitor_replies),
               atomic_load(&errors));
}

int main(int argc, char **argv)
{
        uint64_t start, end, next, period_ns, next_report, next_second;
        Conn c = {.fd = -1};
        pthread_t monitor;
        long seconds, rate = 20;
        size_t rounds;
        size_t i;

        if (argc < 3 || argc > 5 || (seconds = atol(argv[2])) <= 0 ||
            (argc > 3 && (rate = atol(argv[3])) <= 0)) {
                fprintf(stderr, "usage: jitter-bench-soak SOCKET SECONDS [RATE [WATCH_CPUS]]\n");
                return 2;
        }
        socket_path = argv[1];
        if (prepare_calls() < 0 || (argc > 4 && watches_start(argv[4]) < 0)) {
                atomic_store(&done, true);
                watches_stop();
                watches_free();
                return 1;
        }
        if (pthread_create(&monitor, NULL, monitor_loop, NULL) != 0) {
                fprintf(stderr, "jitter-bench-soak: cannot start the Monitor thread\n");
                atomic_store(&done, true);
                watches_stop();
                watches_free();
                return 1;
        }
        period_ns = 1000000000ULL / (uint64_t)rate;
        start = next = next_second = now_ns(CLOCK_MONOTONIC);
        end = start + (uint64_t)seconds * 1000000000ULL;
        next_report = start + 60000000000ULL;
        for (rounds = 0; now_ns(CLOCK_MONOTONIC) < end; rounds++) {
                bool second = false;
                uint64_t t;
                int r;

                if (c.fd < 0 && (r = conn_open(&c)) < 0) {
                        count_error("connecting", strerror(-r));
                }
                if (now_ns(CLOCK_MONOTONIC) >= next_second) {
                        second = true;
                        next_second += 1000000000ULL;
                }
                for (i = 0; i < ELEMENTSOF(calls); i++) {
                        if (c.fd >= 0 && (!calls[i].each_second || second)) {
                                timed_call(&c, calls[i].msg, calls[i].msg_len, calls[i].method,
                                           &calls[i].lat);
                        }
                }
                t = now_ns(CLOCK_MONOTONIC);
                if (t >= next_report) {
                        printf("  %3.0f min: %zu rounds, %lu Monitor replies, %lu errors\n",
                               (double)(t - start) / 60e9, rounds + 1,
                               atomic_load(&monitor_replies), atomic_load(&errors));
                        fflush(stdout);
                        next_report += 60000000000ULL;
                }
                next += period_ns;
                if (next > t) {
                        sleep_ns(next - t);
                } else {
                        next = t;
                }
        }
        atomic_store(&done, true);
        /* The Monitor thread ends with its next reply, within an interval or its timeout. */
        pthread_join(monitor, NULL);
        watches_stop();
        print_summary((double)(now_ns(CLOCK_MONOTONIC) - start) / 1e9);
        conn_close(&c);
        free(c.buf);
        return atomic_load(&errors) ? 1 : 0;
}

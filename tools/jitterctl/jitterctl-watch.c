/* jitterctl watch: a live view of every interval the daemon harvests (Monitor with "more").
 *
 * On a terminal the view is redrawn in place on the alternate screen. The blocking Varlink
 * client runs the stream on a second thread; the main thread owns the terminal and waits in
 * poll() for a new reply, a key or a signal, so that q and Ctrl-C act at once rather than at the
 * next interval. Leaving shuts the socket down, which ends the stream thread's wait. Elsewhere
 * (a pipe, a file) it prints one line per interval, or one JSON object per line with --json. */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "duration.h"
#include "jitterctl-format.h"
#include "jitterctl.h"
#include "json-read.h"
#include "summary-json.h"
#include "util.h"

#define MONITOR_METHOD "io.jitterd.Monitor"
#define TOP_INTERRUPTS 3

/* What the view remembers between intervals. */
typedef struct WatchView {
        uint64_t worst_ns[CPU_SETSIZE]; /* worst gap seen per CPU since the view started */
        unsigned long long intervals;
} WatchView;

typedef struct IrqCount {
        const char *name;
        uint64_t count;
} IrqCount;

static int irq_count_cmp(const void *x, const void *y)
{
        const IrqCount *a = x, *b = y;

        return (a->count < b->count) - (a->count > b->count);
}

/* "LOC 250, RES 3": the interrupts that moved most in the interval. */
static void top_interrupts(json_t *interrupts, char *buf, size_t size)
{
        IrqCount top[64];
        size_t n = 0, len = 0;
        const char *key;
        json_t *v;

        buf[0] = '\0';
        json_object_foreach(interrupts, key, v)
        {
                if (json_is_integer(v) && json_integer_value(v) > 0 && n < ELEMENTSOF(top)) {
                        top[n++] = (IrqCount){key, (uint64_t)json_integer_value(v)};
                }
        }
        qsort(top, n, sizeof(top[0]), irq_count_cmp);
        for (size_t i = 0; i < n && i < TOP_INTERRUPTS && len < size; i++) {
                int w = snprintf(buf + len, size - len, "%s%s %llu", i ? ", " : "", top[i].name,
                                 (unsigned long long)top[i].count);

                if (w < 0) {
                        break;
                }
                len += (size_t)w;
        }
}

static void interval_time(json_t *reply, char *buf, size_t size)
{
        struct timespec ts;

        if (iso8601_parse(json_read_string_or(reply, "realtime", NULL), &ts) == 0) {
                format_local_time(buf, size, &ts, false);
                buf[strcspn(buf, ".")] = '\0';
        } else {
                snprintf(buf, size, "?");
        }
}

static void remember_worst(WatchView *view, json_t *reply)
{
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(reply, "cpus"), i, c)
        {
                const unsigned need = INTERVAL_CPU_CPU | INTERVAL_CPU_MAX_GAP;
                IntervalCpu ic;

                (void)interval_cpu_read(c, &ic);
                if ((ic.have & need) == need && ic.cpu < CPU_SETSIZE &&
                    ic.max_gap_ns > view->worst_ns[ic.cpu]) {
                        view->worst_ns[ic.cpu] = ic.max_gap_ns;
                }
        }
        view->intervals++;
}

/* "12.3 ms", or "-" for a CPU without samples in the interval (the daemon harvested nothing
 * from its probe, which was starved or stalled): there is no gap to show, not a gap of 0. */
static char *format_gap(char *buf, size_t size, uint64_t samples, double ns)
{
        return format_ns(buf, size, samples > 0 ? ns : NAN);
}

/* One line per interval, for pipes and files. */
static void print_line(json_t *reply)
{
        char when[FORMAT_MAX];
        json_t *c;
        size_t i;

        interval_time(reply, when, sizeof(when));
        fputs(when, stdout);
        json_array_foreach(json_object_get(reply, "cpus"), i, c)
        {
                char max[FORMAT_MAX], p99[FORMAT_MAX], lost[FORMAT_MAX];
                uint64_t dur = 0;
                IntervalCpu ic;

                /* What the reply lacks shows as 0, "-" or "?". */
                (void)interval_cpu_read(c, &ic);
                json_read_u64(reply, "duration_ns", &dur);
                printf("%s cpu%llu %s max %s p99 %s int %llu lost %s %%", i ? " |" : "",
                       (unsigned long long)ic.cpu, ic.state ? ic.state : "?",
                       format_gap(max, sizeof(max), ic.samples, (double)ic.max_gap_ns),
                       format_gap(p99, sizeof(p99), ic.samples, ic.p99_ns),
                       (unsigned long long)ic.events,
                       format_pct(lost, sizeof(lost),
                                  dur ? 100.0 * (double)ic.lost_ns / (double)dur : NAN));
        }
        fputc('\n', stdout);
        fflush(stdout);
}

/* Writes the first @len bytes of @line cut to @cols columns. Escape sequences are all kept, so
 * that a colour switched on before the edge is switched off after it; a UTF-8 character is one
 * column. */
static void put_clipped(const char *line, size_t len, unsigned cols)
{
        unsigned width = 0;
        size_t i = 0;

        while (i < len) {
                size_t n = 1;

                if (line[i] == '\033' && i + 1 < len && line[i + 1] == '[') {
                        /* CSI: parameters, then one final byte in 0x40..0x7e. */
                        n = 2;
                        while (i + n < len && !((unsigned char)line[i + n] >= 0x40 &&
                                                (unsigned char)line[i + n] <= 0x7e)) {
                                n++;
                        }
                        n += i + n < len;
                        fwrite(line + i, 1, n, stdout);
                        i += n;
                        continue;
                }
                while (i + n < len && ((unsigned char)line[i + n] & 0xc0) == 0x80) {
                        n++;
                }
                if (width < cols) {
                        fwrite(line + i, 1, n, stdout);
                        width++;
                }
                i += n;
        }
}

/* Puts the lines of @frame on the screen, each at its row, cut to the terminal's width and no
 * more than its height. No newline is ever written, so the screen never scrolls: the header
 * stays on the top row however small the terminal is. */
static void blit(const char *frame, size_t size, unsigned cols, unsigned rows)
{
        const char *p = frame, *end = frame + size;
        unsigned row = 1;

        while (p < end && row <= rows) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

                printf("\033[%u;1H", row);
                put_clipped(p, len, cols);
                /* Clear what an earlier, longer frame left on this row. */
                fputs("\033[K", stdout);
                row++;
                p = nl ? nl + 1 : end;
        }
        if (row <= rows) {
                printf("\033[%u;1H\033[J", row);
        }
        fflush(stdout);
}

/* Draws one frame of the full-screen view. */
static void draw(const Ctl *ctl, const WatchView *view, json_t *reply, const char *note)
{
        char when[FORMAT_MAX] = "", interval[FORMAT_MAX] = "-";
        struct winsize ws = {0};
        unsigned cols = 80, rows = 24;
        uint64_t dur = 0;
        char *frame = NULL;
        size_t size = 0;
        json_t *c;
        size_t i;
        FILE *f;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
                cols = ws.ws_col;
                rows = ws.ws_row;
        }
        /* The frame is composed in memory, then cut to the screen by blit(). */
        f = open_memstream(&frame, &size);
        if (!f) {
                return;
        }
        if (reply) {
                interval_time(reply, when, sizeof(when));
                json_read_u64(reply, "duration_ns", &dur);
                format_ns(interval, sizeof(interval), dur > 0 ? (double)dur : NAN);
        }
        fprintf(f, "%sjitterctl watch%s  %s  %s  interval %s  (q quits)\n\n",
                ctl_color(ctl, CTL_BOLD), ctl_color(ctl, CTL_RESET), ctl->socket_path, when,
                interval);
        fprintf(f,
                "%s CPU  STATE       SAMPLES    MAX GAP        p99    INT   LOST %%  WORST SEEN  "
                "TOP INTERRUPTS%s\n",
                ctl_color(ctl, CTL_BOLD), ctl_color(ctl, CTL_RESET));
        json_array_foreach(json_object_get(reply, "cpus"), i, c)
        {
                char text[FORMAT_MAX], irqs[256];
                const char *state;
                IntervalCpu ic;

                (void)interval_cpu_read(c, &ic);
                state = ic.state ? ic.state : "?";
                fprintf(f, "%4llu  %s%-10s%s", (unsigned long long)ic.cpu,
                        ctl_color(ctl, strcmp(state, "running") == 0 ? CTL_GREEN : CTL_RED), state,
                        ctl_color(ctl, CTL_RESET));
                fput_padded(f, format_count(text, sizeof(text), ic.samples), 9);
                fput_padded(f, format_gap(text, sizeof(text), ic.samples, (double)ic.max_gap_ns),
                            11);
                fput_padded(f, format_gap(text, sizeof(text), ic.samples, ic.p99_ns), 11);
                fprintf(f, "%7llu", (unsigned long long)ic.events);
                fput_padded(f,
                            format_pct(text, sizeof(text),
                                       dur ? 100.0 * (double)ic.lost_ns / (double)dur : NAN),
                            9);
                fput_padded(f,
                            format_ns(text, sizeof(text),
                                      ic.cpu < CPU_SETSIZE && view->worst_ns[ic.cpu] > 0
                                              ? (double)view->worst_ns[ic.cpu]
                                              : NAN),
                            12);
                top_interrupts(ic.interrupts, irqs, sizeof(irqs));
                fprintf(f, "  %s\n", irqs);
        }
        if (note) {
                fprintf(f, "\n%s\n", note);
        } else {
                fprintf(f, "\n%llu intervals\n", view->intervals);
        }
        if (fclose(f) == 0) {
                blit(frame, size, cols, rows);
        }
        free(frame);
}

/* Why the stream ended, for messages: a timeout is the gap between two replies. */
static const char *stream_strerror(const Ctl *ctl, int r, char *buf, size_t size)
{
        char t[32];

        if (r != -ETIMEDOUT) {
                return ctl_call_strerror(ctl, r, buf, size);
        }
        snprintf(buf, size,
                 "no interval from jitterd for one interval and %s (--timeout DUR waits longer)",
                 duration_format(t, sizeof(t), ctl->timeout_usec * 1000));
        return buf;
}

/* ---- the Monitor call ---- */

/* A Monitor call that waits out a Busy refusal, and what it hands each reply to. */
typedef struct MonitorCall {
        Ctl *ctl;
        VarlinkReplyFunc callback;
        void *userdata;
        uint64_t interval_usec; /* the daemon's interval: each reply is awaited for it more */
        uint64_t start_usec;
        unsigned retries;
        bool replied;        /* a reply other than a refusal to wait out has come */
        uint64_t delay_usec; /* the delay of the refusal to wait out, or 0 */
        uint64_t left_usec;  /* what is left of the timeout after it */
} MonitorCall;

static int monitor_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        MonitorCall *mc = userdata;

        if (!mc->replied) {
                mc->delay_usec = ctl_busy_delay_usec(mc->ctl, error_name, params, mc->retries,
                                                     mc->start_usec, &mc->left_usec);
                if (mc->delay_usec > 0) {
                        return 0;
                }
                mc->replied = true;
                /* A call made again was given what was left of the timeout for its first
                 * reply; the later ones have all of it, as those of a first call. */
                if (mc->retries > 0) {
                        varlink_client_set_timeout(mc->ctl->client,
                                                   mc->interval_usec + mc->ctl->timeout_usec);
                }
        }
        return mc->callback(params, error_name, continues, mc->userdata);
}

/* varlink_client_call_more() of Monitor with @params, each reply awaited for one interval of
 * @interval_usec and the timeout. A Busy refusal of the call is waited out and the call made
 * again on the same connection, as ctl_call() does: CTL_BUSY_RETRIES times at most, the delays
 * within the timeout. Only a refusal before the first reply: the daemon admits a call once, as
 * it starts (daemon/admission.c), and sends a running Monitor's replies without asking the
 * budget again, so it refuses none later; an error reply that ends the stream after the first
 * one, a Busy from some other server included, goes to @callback and ends the watch, as calling
 * again would lose the intervals in between unseen. */
static int monitor_call(Ctl *ctl, json_t *params, uint64_t interval_usec, VarlinkReplyFunc callback,
                        void *userdata)
{
        MonitorCall mc = {
                .ctl = ctl,
                .callback = callback,
                .userdata = userdata,
                .interval_usec = interval_usec,
                .start_usec = now_ns(CLOCK_MONOTONIC) / 1000,
        };
        int r;

        varlink_client_set_timeout(ctl->client, interval_usec + ctl->timeout_usec);
        for (;;) {
                mc.delay_usec = 0;
                r = varlink_client_call_more(ctl->client, MONITOR_METHOD, params, monitor_reply,
                                             &mc);
                if (r < 0 || mc.delay_usec == 0) {
                        return r;
                }
                ctl_busy_wait(ctl, mc.delay_usec);
                varlink_client_set_timeout(ctl->client, interval_usec + mc.left_usec);
                mc.retries++;
        }
}

/* ---- the stream thread ---- */

typedef struct Stream {
        Ctl *ctl;
        json_t *params;
        uint64_t interval_usec;
        pthread_mutex_t lock;
        json_t *latest; /* newest reply not yet drawn */
        /* Every reply's worst gaps and count, drawn or not: the view draws only the newest
         * reply, and a slow terminal skips some, whose worst gaps it must still show. */
        WatchView *seen;
        char *error; /* the Varlink error that ended the stream */
        json_t *error_params;
        int result; /* varlink_client_call_more()'s return, once finished */
        bool finished;
        int notify; /* write end of the pipe the main thread polls */
} Stream;

static void stream_notify(Stream *s)
{
        /* A full pipe already says "look": the byte is only a wake-up. */
        (void)!write(s->notify, "x", 1);
}

static int stream_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        Stream *s = userdata;

        pthread_mutex_lock(&s->lock);
        if (error_name) {
                free(s->error);
                s->error = strdup(error_name);
                json_decref(s->error_params);
                s->error_params = json_incref(params);
        } else {
                json_decref(s->latest);
                s->latest = json_incref(params);
                remember_worst(s->seen, params);
        }
        pthread_mutex_unlock(&s->lock);
        stream_notify(s);
        return 0;
}

static void *stream_thread(void *userdata)
{
        Stream *s = userdata;
        int r;

        r = monitor_call(s->ctl, s->params, s->interval_usec, stream_reply, s);
        pthread_mutex_lock(&s->lock);
        s->result = r;
        s->finished = true;
        pthread_mutex_unlock(&s->lock);
        stream_notify(s);
        return NULL;
}

/* ---- the terminal ---- */

typedef struct Terminal {
        struct termios saved;
        bool raw;
} Terminal;

static void terminal_enter(Terminal *t)
{
        struct termios raw;

        if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
                raw = t->saved;
                /* Keys arrive one by one and unechoed; ISIG stays, so Ctrl-C is a signal. */
                raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
                raw.c_cc[VMIN] = 1;
                raw.c_cc[VTIME] = 0;
                t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        /* Alternate screen, cursor hidden. */
        fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
        fflush(stdout);
}

static void terminal_leave(Terminal *t)
{
        fputs("\033[?25h\033[?1049l", stdout);
        fflush(stdout);
        if (t->raw) {
                tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
                t->raw = false;
        }
}

/* The state of the terminal view's loop. */
typedef struct WatchLoop {
        Ctl *ctl;
        WatchView *view;
        Stream *s;
        int sfd;     /* the signalfd */
        int wake_fd; /* the read end of the pipe the stream thread writes to */
        unsigned long long count;
        json_t *last; /* the newest reply shown */
        bool quit;
} WatchLoop;

/* SIGWINCH redraws; the other signals end the view. */
static void watch_on_signals(WatchLoop *w)
{
        struct signalfd_siginfo si;

        while (read(w->sfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGWINCH) {
                        draw(w->ctl, w->view, w->last,
                             w->last ? NULL : "waiting for the next interval...");
                } else {
                        w->quit = true;
                }
        }
}

/* q, Q, Ctrl-C or the end of the input end the view. */
static void watch_on_keys(WatchLoop *w)
{
        char buf[64];
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

        if (n <= 0) {
                w->quit = true;
        }
        for (ssize_t k = 0; k < n; k++) {
                if (buf[k] == 'q' || buf[k] == 'Q' || buf[k] == 3 /* ^C */) {
                        w->quit = true;
                }
        }
}

/* Shows the newest reply the stream thread has. Returns true when the stream has finished. */
static bool watch_on_reply(WatchLoop *w)
{
        json_t *reply;
        bool finished;
        char buf[64];

        while (read(w->wake_fd, buf, sizeof(buf)) > 0) {
        }
        pthread_mutex_lock(&w->s->lock);
        reply = w->s->latest;
        w->s->latest = NULL;
        finished = w->s->finished;
        *w->view = *w->s->seen;
        pthread_mutex_unlock(&w->s->lock);
        if (reply) {
                json_decref(w->last);
                w->last = reply;
                draw(w->ctl, w->view, w->last, NULL);
                if (w->count > 0 && w->view->intervals >= w->count) {
                        w->quit = true;
                }
        }
        return finished;
}

/* Runs the view until it is quit or the stream ends. */
static void watch_loop(WatchLoop *w, const Terminal *term)
{
        while (!w->quit) {
                struct pollfd p[3] = {
                        {.fd = w->wake_fd, .events = POLLIN},
                        {.fd = w->sfd, .events = POLLIN},
                        {.fd = term->raw ? STDIN_FILENO : -1, .events = POLLIN},
                };

                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR) {
                                continue;
                        }
                        break;
                }
                if (p[1].revents & POLLIN) {
                        watch_on_signals(w);
                }
                if (p[2].revents & (POLLIN | POLLHUP)) {
                        watch_on_keys(w);
                }
                if (!(p[0].revents & POLLIN)) {
                        continue;
                }
                if (watch_on_reply(w)) {
                        break;
                }
        }
}

/* Stops the stream thread, gives the terminal back and says why the view ended, if it was not
 * quit. Returns the exit status. */
static int watch_stop(Ctl *ctl, Stream *s, pthread_t thread, Terminal *term, bool quit)
{
        bool finished;

        pthread_mutex_lock(&s->lock);
        finished = s->finished;
        pthread_mutex_unlock(&s->lock);
        /* Wakes the stream thread from its wait for the next reply. */
        if (!finished) {
                shutdown(varlink_client_fd(ctl->client), SHUT_RDWR);
        }
        pthread_join(thread, NULL);
        terminal_leave(term);
        if (s->error) {
                char msg[512];

                return ctl_fail("%s", format_error(msg, sizeof(msg), s->error, s->error_params));
        }
        if (finished && s->result < 0) {
                char why[128];

                return ctl_fail("the stream from jitterd ended: %s",
                                stream_strerror(ctl, s->result, why, sizeof(why)));
        }
        if (finished && !quit) {
                return ctl_fail("jitterd ended the stream");
        }
        return CTL_EXIT_OK;
}

static int watch_terminal(Ctl *ctl, json_t *params, uint64_t interval_usec,
                          unsigned long long count)
{
        Stream s = {.ctl = ctl, .params = params, .interval_usec = interval_usec, .notify = -1};
        WatchLoop w = {.ctl = ctl, .s = &s, .sfd = -1, .count = count};
        Terminal term = {0};
        sigset_t mask, saved_mask;
        int pipefd[2] = {-1, -1}, r = CTL_EXIT_OK;
        pthread_t thread;

        w.view = calloc(1, sizeof(*w.view));
        s.seen = calloc(1, sizeof(*s.seen));
        if (!w.view || !s.seen || pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
                free(w.view);
                free(s.seen);
                return ctl_fail("cannot set up the view: %s", strerror(errno ? errno : ENOMEM));
        }
        s.notify = pipefd[1];
        w.wake_fd = pipefd[0];
        pthread_mutex_init(&s.lock, NULL);
        /* Blocked before the thread starts, so that it inherits the mask and every one of
         * these signals reaches the main thread's signalfd. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGWINCH);
        pthread_sigmask(SIG_BLOCK, &mask, &saved_mask);
        w.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (w.sfd < 0 || pthread_create(&thread, NULL, stream_thread, &s) != 0) {
                r = ctl_fail("cannot start the view: %s", strerror(errno));
        } else {
                terminal_enter(&term);
                draw(ctl, w.view, NULL, "waiting for the next interval...");
                watch_loop(&w, &term);
                r = watch_stop(ctl, &s, thread, &term, w.quit);
        }
        pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
        if (w.sfd >= 0) {
                close(w.sfd);
        }
        close(pipefd[0]);
        close(pipefd[1]);
        pthread_mutex_destroy(&s.lock);
        json_decref(w.last);
        json_decref(s.latest);
        json_decref(s.error_params);
        free(s.error);
        free(w.view);
        free(s.seen);
        return r;
}

/* ---- lines, for pipes and files ---- */

typedef struct Lines {
        const Ctl *ctl;
        unsigned long long count, seen;
        char *error;
        json_t *error_params;
        int status;
} Lines;

static int lines_reply(json_t *params, const char *error_name, bool continues, void *userdata)
{
        Lines *l = userdata;

        if (error_name) {
                l->error = strdup(error_name);
                l->error_params = json_incref(params);
                return 0;
        }
        if (l->ctl->json) {
                if (json_dumpf(params, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF) {
                        l->status = CTL_EXIT_FAILURE;
                        return -EIO;
                }
                fflush(stdout);
        } else {
                print_line(params);
        }
        if (ferror(stdout)) {
                l->status = CTL_EXIT_FAILURE;
                return -EIO;
        }
        l->seen++;
        /* Stopping early leaves the connection unusable, which is fine: we are done with it. */
        return l->count > 0 && l->seen >= l->count ? -ECANCELED : 0;
}

static int watch_lines(Ctl *ctl, json_t *params, uint64_t interval_usec, unsigned long long count)
{
        Lines l = {.ctl = ctl, .count = count, .status = CTL_EXIT_OK};
        char msg[512];
        int r;

        r = monitor_call(ctl, params, interval_usec, lines_reply, &l);
        if (l.error) {
                ctl_fail("%s", format_error(msg, sizeof(msg), l.error, l.error_params));
                free(l.error);
                json_decref(l.error_params);
                return CTL_EXIT_FAILURE;
        }
        if (r == -ECANCELED) {
                return l.status;
        }
        if (r == -EIO) {
                return ctl_fail("cannot write to standard output");
        }
        if (r < 0) {
                char why[128];

                return ctl_fail("the stream from jitterd ended: %s",
                                stream_strerror(ctl, r, why, sizeof(why)));
        }
        return ctl_fail("jitterd ended the stream");
}

/* --count N (-n): into @userdata, an unsigned long long. */
static int watch_option(Ctl *ctl, const CtlCommand *cmd, int c, void *userdata)
{
        unsigned long long *count = userdata;

        (void)ctl, (void)c;
        if (ctl_parse_uint(optarg, UINT32_MAX, count) < 0 || *count == 0) {
                return ctl_usage_error(cmd, "invalid count \"%s\"", optarg);
        }
        return CTL_CONTINUE;
}

int cmd_watch(Ctl *ctl, const CtlCommand *cmd, int argc, char **argv)
{
        static const struct option own[] = {
                {"count", required_argument, NULL, 'n'},
                {},
        };
        unsigned long long count = 0;
        json_t *cpus = NULL, *params, *status = NULL;
        const CtlOptions options = {
                .short_options = "n:",
                .long_options = own,
                .parse = watch_option,
                .userdata = &count,
                .cpus = &cpus,
        };
        uint64_t interval_ns;
        int r;

        r = ctl_parse_args(ctl, cmd, argc, argv, &options);
        if (r != CTL_CONTINUE) {
                return r;
        }
        params = ctl_window_params(NULL, cpus);
        if (!params) {
                return ctl_fail("out of memory");
        }
        /* The daemon answers every interval; the interval is configurable. Each reply is
         * awaited for one interval and the timeout, so a daemon that stops sending is noticed,
         * whatever its interval. */
        r = ctl_call(ctl, "GetStatus", NULL, &status);
        if (r < 0) {
                json_decref(params);
                return CTL_EXIT_FAILURE;
        }
        if (json_read_u64(json_object_get(status, "config"), "interval_ns", &interval_ns) < 0) {
                interval_ns = 0;
        }
        json_decref(status);
        if (isatty(STDOUT_FILENO) && !ctl->json) {
                r = watch_terminal(ctl, params, interval_ns / 1000, count);
        } else {
                r = watch_lines(ctl, params, interval_ns / 1000, count);
        }
        json_decref(params);
        return r;
}

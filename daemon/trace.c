#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <mntent.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>
#include <tracefs.h>

#include "host.h"
#include "ksyms.h"
#include "util.h"

#define TRACEFS_MAGIC_NUMBER 0x74726163
#define DEFAULT_ROOT "/sys/kernel/tracing"
#define DEFAULT_INSTANCE "jitterd"
#define HANDLERS_MAX 64
#define LOSSES_MAX 16
#define OPEN_MAX 16
/* Bound of a tracefs file read whole: formats take a few KiB, printk_formats some 100 KiB. */
#define TRACEFS_FILE_MAX (4u << 20)
/* The kernel's smallest buffer, for the CPUs the instance does not record. */
#define UNUSED_BUFFER_KB 4u

#define PERMISSION_HINT                                                                            \
        "tracing needs root, or CAP_DAC_OVERRIDE for another user (tracefs files are root's, "     \
        "mode 0640; the gid= mount option gives a group read access only)"
#define MOUNT_HINT "mount it with: mount -t tracefs nodev " DEFAULT_ROOT

/* How the fields of an event become a record. */
typedef enum Parse {
        PARSE_IRQ_ENTRY,  /* id: irq; name: the name string */
        PARSE_ID,         /* id only: exits, whose name comes from their entry */
        PARSE_FUNCTION,   /* id; name: the kernel function at the name field */
        PARSE_LABEL,      /* id; name: fixed per event (the vector's) */
        PARSE_SOFTIRQ,    /* id: vec; name: the softirq's */
        PARSE_SWITCH,     /* id: prev_pid; pid: next_pid; name: next_comm */
        PARSE_IPI_REASON, /* arm64 ipi_entry/exit: id: the reason pointer; name: its text */
        PARSE_MARK,       /* ftrace:print: name: the text */
} Parse;

typedef struct Handler {
        int type;
        Parse parse;
        uint8_t kind;
        uint8_t phase;
        struct tep_event *event;
        struct tep_format_field *id;
        struct tep_format_field *pid;
        const char *name_field;
        struct tep_format_field *name;
        struct tep_format_field *func;
        char label[CAUSE_NAME_MAX];
} Handler;

/* Kinds of events wanted: an entry/exit pair or a single event. */
typedef struct Source {
        const char *group; /* named in the missing list when absent */
        const char *system;
        const char *entry;
        const char *exit; /* NULL: a single event */
        CauseKind kind;
        Parse entry_parse;
        const char *id_field;
        const char *name_field;
} Source;

static const Source SOURCES[] = {
        {"irq", "irq", "irq_handler_entry", "irq_handler_exit", CAUSE_IRQ, PARSE_IRQ_ENTRY, "irq",
         "name"},
        {"softirq", "irq", "softirq_entry", "softirq_exit", CAUSE_SOFTIRQ, PARSE_SOFTIRQ, "vec",
         NULL},
        {"sched", "sched", "sched_switch", NULL, CAUSE_TASK, PARSE_SWITCH, "prev_pid", "next_comm"},
        {"hrtimer", "timer", "hrtimer_expire_entry", "hrtimer_expire_exit", CAUSE_TIMER,
         PARSE_FUNCTION, "hrtimer", "function"},
        {"workqueue", "workqueue", "workqueue_execute_start", "workqueue_execute_end", CAUSE_WORK,
         PARSE_FUNCTION, "work", "function"},
        {"ipi", "csd", "csd_function_entry", "csd_function_exit", CAUSE_IPI, PARSE_FUNCTION, "csd",
         "func"},
        {"ipi", "ipi", "ipi_entry", "ipi_exit", CAUSE_IPI, PARSE_IPI_REASON, "reason", NULL},
};

static const char *const SOFTIRQ_NAMES[] = {
        "HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
        "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU",
};

typedef struct Loss {
        uint64_t from_ticks; /* the last record kept before it */
        uint64_t to_ticks;   /* the first record after it */
} Loss;

/* An entry seen without its exit yet, to name the exit (exit events carry no name). */
typedef struct Open {
        uint8_t kind;
        uint64_t id;
        char name[CAUSE_NAME_MAX];
} Open;

typedef struct TraceCpu {
        int cpu;
        struct tracefs_cpu *tcpu;
        int watch_fd; /* trace_pipe_raw, polled for the watermark (-1: none) */
        TraceRecord *win;
        size_t n;
        uint64_t complete_from; /* the window has every record from here on */
        uint64_t horizon;       /* every record before this has been read */
        unsigned pages_since;   /* sub-buffers read since the last trace_recorder_read() */
        uint64_t last_ticks;
        bool have_last;
        Loss losses[LOSSES_MAX];
        size_t n_losses;
        size_t next_loss;
        Open open[OPEN_MAX];
        size_t n_open;
} TraceCpu;

struct TraceRecorder {
        char root[PATH_MAX];
        char dir[PATH_MAX];
        struct tracefs_instance *inst;
        int on_fd; /* tracing_on, kept open: it can be switched off after privileges are gone */
        struct tep_handle *tep;
        struct kbuffer *kbuf;
        struct trace_seq seq;
        void *page;
        int page_size;
        unsigned max_pages;
        Handler handlers[HANDLERS_MAX];
        size_t n_handlers;
        TraceCpu *cpus;
        size_t n_cpus;
        size_t window;
        unsigned buffer_kb;
        uint64_t last_read_ns;   /* CLOCK_MONOTONIC of the last trace_recorder_read() */
        uint64_t read_period_ns; /* trace_recorder_read_period_ns() */
        bool watching;           /* the watch descriptors wake the reader (watermark) */
        bool woken;              /* this read was woken by a watch descriptor */
        unsigned watch_misses;   /* reads in a row that found a buffer far past it, unwoken */
        unsigned watch_early;    /* woken reads in a row that found it far from full */
        Ksyms *ksyms;            /* NULL: functions are named by address */
        bool own_ksyms;

        /* Trace clock → counter ticks. */
        char clock[16];
        bool identity;
        clockid_t clock_id;
        uint64_t hz;
        CounterSource counter;
        uint64_t ref_ticks, ref_ns;
        uint64_t slack_ticks;

        const char *const *absent; /* events taken as missing (TraceOptions.absent) */
        bool kind_recorded[CAUSE_KIND_MAX];
        int refused_errno; /* of the first event refused */
        char events[2048];
        char missing[128];
        char refused[768];
        char unnamed[256];
        char reason[TRACE_REASON_MAX];
        TraceStats stats;
};

static int failf(char *buf, size_t size, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int failf(char *buf, size_t size, int err, const char *fmt, ...)
{
        va_list ap;

        if (buf && size > 0) {
                va_start(ap, fmt);
                vsnprintf(buf, size, fmt, ap);
                va_end(ap);
        }
        return -err;
}

/* --- where tracefs is ------------------------------------------------------------------- */

static bool is_tracefs(const char *path)
{
        struct statfs sf;

        return statfs(path, &sf) == 0 && (uint32_t)sf.f_type == TRACEFS_MAGIC_NUMBER;
}

static bool kernel_has_tracefs(void)
{
        FILE *f = fopen("/proc/filesystems", "re");
        char line[128];
        bool found = false;

        if (!f) {
                return true; /* cannot tell: do not claim it is missing */
        }
        while (!found && fgets(line, sizeof(line), f)) {
                found = strstr(line, "\ttracefs") != NULL;
        }
        fclose(f);
        return found;
}

static int find_root(const TraceOptions *opt, char *ret, char *reason, size_t rsize)
{
        FILE *f;
        struct mntent *me;

        if (opt->root) {
                if (!is_tracefs(opt->root)) {
                        return failf(reason, rsize, ENOENT,
                                     "tracefs is not mounted at %s: mount it with: mount -t "
                                     "tracefs nodev %s",
                                     opt->root, opt->root);
                }
                snprintf(ret, PATH_MAX, "%s", opt->root);
                return 0;
        }
        if (is_tracefs(DEFAULT_ROOT)) {
                snprintf(ret, PATH_MAX, "%s", DEFAULT_ROOT);
                return 0;
        }
        f = setmntent("/proc/self/mounts", "re");
        while (f && (me = getmntent(f))) {
                if (strcmp(me->mnt_type, "tracefs") == 0 && is_tracefs(me->mnt_dir)) {
                        snprintf(ret, PATH_MAX, "%s", me->mnt_dir);
                        endmntent(f);
                        return 0;
                }
        }
        if (f) {
                endmntent(f);
        }
        if (!kernel_has_tracefs()) {
                return failf(reason, rsize, EOPNOTSUPP,
                             "this kernel has no tracefs (built without CONFIG_TRACING): trace "
                             "causes are off");
        }
        return failf(reason, rsize, ENOENT, "tracefs is not mounted: " MOUNT_HINT);
}

static bool locked_down(void)
{
        char buf[256];

        (void)host_read_text("/sys/kernel/security/lockdown", buf, sizeof(buf));
        return strstr(buf, "[confidentiality]") != NULL;
}

/* The reason for a failed access to @what: permission, lockdown, or the errno's text. */
static int access_failed(char *reason, size_t rsize, int err, const char *what)
{
        if ((err == EPERM || err == EACCES) && locked_down()) {
                return failf(reason, rsize, err,
                             "%s: %s: the kernel is locked down (confidentiality) and forbids "
                             "tracing",
                             what, strerror(err));
        }
        if (err == EPERM || err == EACCES) {
                return failf(reason, rsize, err, "%s: %s: " PERMISSION_HINT, what, strerror(err));
        }
        return failf(reason, rsize, err, "%s: %s", what, strerror(err));
}

/* --- setting up the instance ----------------------------------------------------------- */

static int write_file(TraceRecorder *t, const char *file, const char *value, char *reason,
                      size_t rsize)
{
        char what[PATH_MAX + 64];

        errno = 0;
        if (tracefs_instance_file_write(t->inst, file, value) < 0) {
                int err = errno ? errno : EIO;

                snprintf(what, sizeof(what), "cannot write \"%s\" to %s/%s", value, t->dir, file);
                return access_failed(reason, rsize, err, what);
        }
        return 0;
}

/* The clock named @want is offered by this kernel. */
static bool clock_offered(TraceRecorder *t, const char *want)
{
        char *list = tracefs_instance_file_read(t->inst, "trace_clock", NULL);
        bool found = false;

        for (char *tok = list ? strtok(list, " []\n") : NULL; tok && !found;
             tok = strtok(NULL, " []\n")) {
                found = strcmp(tok, want) == 0;
        }
        free(list);
        return found;
}

/* Chooses the trace clock and how it maps to counter ticks (see trace.h). */
static int choose_clock(TraceRecorder *t, const TraceOptions *opt, char *reason, size_t rsize)
{
        bool tsc = false;
        const char *want;

#if defined(__x86_64__)
        tsc = opt->counter == COUNTER_HW;
#endif
        want = opt->clock ? opt->clock : tsc ? "x86-tsc" : "mono_raw";
        if (strcmp(want, "x86-tsc") == 0) {
                if (!tsc) {
                        return failf(reason, rsize, EINVAL,
                                     "the x86-tsc trace clock matches only the TSC counter");
                }
                t->identity = true;
        } else if (strcmp(want, "mono_raw") == 0) {
                t->clock_id = CLOCK_MONOTONIC_RAW;
                t->identity = opt->counter == COUNTER_CLOCK;
        } else if (strcmp(want, "mono") == 0) {
                t->clock_id = CLOCK_MONOTONIC;
        } else {
                return failf(reason, rsize, EINVAL, "unknown trace clock \"%s\"", want);
        }
        if (!clock_offered(t, want)) {
                if (opt->clock || !tsc) {
                        return failf(reason, rsize, EOPNOTSUPP,
                                     "this kernel offers no \"%s\" trace clock", want);
                }
                /* A TSC the kernel does not trace with: map mono_raw instead. */
                want = "mono_raw";
                t->clock_id = CLOCK_MONOTONIC_RAW;
                t->identity = false;
                if (!clock_offered(t, want)) {
                        return failf(reason, rsize, EOPNOTSUPP,
                                     "this kernel offers neither the x86-tsc nor the mono_raw "
                                     "trace clock");
                }
        }
        snprintf(t->clock, sizeof(t->clock), "%s", want);
        t->hz = opt->counter_hz;
        t->counter = opt->counter;
        /* A mapped clock is good to well under a microsecond: records that far outside an
         * interruption may still belong to it. */
        t->slack_ticks = t->identity ? 0 : t->hz / 500000;
        return write_file(t, "trace_clock", want, reason, rsize);
}

/* A fresh (counter, clock) pair for the mapping: the tightest bracket of a few tries. */
static void refresh_mapping(TraceRecorder *t)
{
        uint64_t best = UINT64_MAX;

        if (t->identity) {
                return;
        }
        for (int i = 0; i < 5; i++) {
                uint64_t a = counter_read(t->counter), ns = now_ns(t->clock_id),
                         b = counter_read(t->counter);

                if (b - a < best) {
                        best = b - a;
                        t->ref_ticks = a + (b - a) / 2;
                        t->ref_ns = ns;
                }
        }
}

static uint64_t to_ticks(const TraceRecorder *t, uint64_t ts)
{
        __int128 d;

        if (t->identity) {
                return ts;
        }
        d = (__int128)((int64_t)(ts - t->ref_ns)) * (__int128)t->hz / 1000000000;
        return t->ref_ticks + (uint64_t)(int64_t)d;
}

/* The event @system:@name, when this kernel has it (and the options do not say it lacks it). */
static struct tep_event *find_event(TraceRecorder *t, const char *system, const char *name)
{
        for (const char *const *a = t->absent; a && *a; a++) {
                size_t len = strlen(system);

                if (strncmp(*a, system, len) == 0 && (*a)[len] == ':' &&
                    strcmp(*a + len + 1, name) == 0) {
                        return NULL;
                }
        }
        return tep_find_event_by_name(t->tep, system, name);
}

/* Appends @item to the list in @buf ("a, b"), once. */
static void list_add(char *buf, size_t size, const char *item)
{
        size_t len = strlen(buf), n = strlen(item);

        for (const char *p = buf; (p = strstr(p, item)); p += n) {
                if ((p == buf || p[-1] == ' ') && (p[n] == 0 || p[n] == ',')) {
                        return;
                }
        }
        snprintf(buf + len, size - len, "%s%s", len ? ", " : "", item);
}

static void add_event_name(TraceRecorder *t, const struct tep_event *ev)
{
        size_t len = strlen(t->events);

        snprintf(t->events + len, sizeof(t->events) - len, "%s%s:%s", len ? " " : "", ev->system,
                 ev->name);
}

/* A handler for @ev: how its records are parsed and what they are. */
static Handler handler_of(struct tep_event *ev, Parse parse, CauseKind kind, TracePhase phase,
                          const char *id_field, const char *name_field, const char *label)
{
        Handler h = {
                .type = ev->id,
                .parse = parse,
                .kind = (uint8_t)kind,
                .phase = (uint8_t)phase,
                .event = ev,
                .id = id_field ? tep_find_field(ev, id_field) : NULL,
                .name_field = name_field,
        };

        if (name_field) {
                h.name = tep_find_field(ev, name_field);
        }
        if (parse == PARSE_SWITCH) {
                h.pid = tep_find_field(ev, "next_pid");
        }
        if (parse == PARSE_FUNCTION && name_field) {
                h.func = tep_find_field(ev, name_field);
        }
        snprintf(h.label, sizeof(h.label), "%.*s", (int)sizeof(h.label) - 1, label ? label : "");
        return h;
}

/* Notes that @ev is not recorded, and why. */
static void note_refused(TraceRecorder *t, const struct tep_event *ev, const char *why)
{
        char item[160];

        snprintf(item, sizeof(item), "%s:%s (%s)", ev->system, ev->name, why);
        list_add(t->refused, sizeof(t->refused), item);
}

/* Writes @value to the instance's enable file of @ev: one write, where tracefs_event_enable()
 * would match regular expressions against a listing of every event system. Returns 0 or -1
 * with errno set. */
static int set_enabled(TraceRecorder *t, const struct tep_event *ev, const char *value)
{
        char file[PATH_MAX];

        snprintf(file, sizeof(file), "events/%s/%s/enable", ev->system, ev->name);
        return tracefs_instance_file_write(t->inst, file, value) < 0 ? -1 : 0;
}

/* Enables @ev. A refusal is noted, with its errno in t->refused_errno (the first one). */
static bool enable(TraceRecorder *t, const struct tep_event *ev)
{
        int err;

        errno = 0;
        if (set_enabled(t, ev, "1") == 0) {
                return true;
        }
        err = errno ? errno : EIO;
        if (!t->refused_errno) {
                t->refused_errno = err;
        }
        note_refused(t, ev, strerror(err));
        return false;
}

/* Records @in, and @out (its exit; NULL for a single event): both or neither, so that every
 * record recorded is parsed and no entry misses its exit. What cannot be enabled is noted and
 * skipped, the recorder goes on with the others. Returns whether they are recorded. */
static bool follow(TraceRecorder *t, const Handler *in, const Handler *out)
{
        size_t need = out ? 2 : 1;

        /* One slot stays for ftrace:print. */
        if (t->n_handlers + need > HANDLERS_MAX - 1) {
                note_refused(t, in->event, "more events than the recorder follows");
                return false;
        }
        if (!enable(t, in->event)) {
                return false;
        }
        if (out && !enable(t, out->event)) {
                (void)set_enabled(t, in->event, "0");
                return false;
        }
        t->handlers[t->n_handlers++] = *in;
        add_event_name(t, in->event);
        if (out) {
                t->handlers[t->n_handlers++] = *out;
                add_event_name(t, out->event);
        }
        t->kind_recorded[in->kind] = true;
        return true;
}

/* Every x86 vector that has an entry and an exit event; the names of those that could not be
 * recorded go to @unnamed (of @size bytes). Returns whether the kernel has any. */
static bool add_vectors(TraceRecorder *t, char *unnamed, size_t size)
{
        char **names = tracefs_system_events(t->root, "irq_vectors");
        bool found = false;

        for (int i = 0; names && names[i]; i++) {
                size_t len = strlen(names[i]);
                char base[64], exit_name[80], item[80];
                struct tep_event *in, *out;
                Handler hin, hout;

                if (len <= 6 || strcmp(names[i] + len - 6, "_entry") != 0 || len - 6 >= 64) {
                        continue;
                }
                snprintf(base, sizeof(base), "%.*s", (int)(len - 6), names[i]);
                snprintf(exit_name, sizeof(exit_name), "%s_exit", base);
                in = find_event(t, "irq_vectors", names[i]);
                out = find_event(t, "irq_vectors", exit_name);
                if (!in || !out) {
                        continue;
                }
                found = true;
                hin = handler_of(in, PARSE_LABEL, CAUSE_VECTOR, TRACE_ENTRY, "vector", NULL, base);
                hout = handler_of(out, PARSE_LABEL, CAUSE_VECTOR, TRACE_EXIT, "vector", NULL, base);
                if (!follow(t, &hin, &hout)) {
                        snprintf(item, sizeof(item), "vector %s", base);
                        list_add(unnamed, size, item);
                }
        }
        tracefs_list_free(names);
        return found;
}

/* What the missing and refused events cost: the kinds of cause that no recorded event names,
 * then the single vectors. */
static void note_unnamed(TraceRecorder *t, bool vectors_wanted, const char *vectors)
{
        bool wanted[CAUSE_KIND_MAX] = {false};

        for (size_t i = 0; i < ELEMENTSOF(SOURCES); i++) {
                wanted[SOURCES[i].kind] = true;
        }
        wanted[CAUSE_VECTOR] = vectors_wanted;
        for (unsigned k = 0; k < CAUSE_KIND_MAX; k++) {
                if (wanted[k] && !t->kind_recorded[k]) {
                        list_add(t->unnamed, sizeof(t->unnamed), cause_kind_name((CauseKind)k));
                }
        }
        if (t->kind_recorded[CAUSE_VECTOR] && vectors[0]) {
                list_add(t->unnamed, sizeof(t->unnamed), vectors);
        }
}

/* With the refused events, what grants them when it is a matter of permission. */
static void note_refusal_fix(TraceRecorder *t)
{
        size_t len = strlen(t->refused);
        int err = t->refused_errno;

        if (err != EPERM && err != EACCES) {
                return;
        }
        snprintf(t->refused + len, sizeof(t->refused) - len, ": %s",
                 locked_down() ? "the kernel is locked down (confidentiality) and forbids tracing"
                               : PERMISSION_HINT);
}

/* Looks for each wanted kind of event and records it, or notes it as missing or refused;
 * then sums up what is not recorded by its cost. Fails only when nothing can be recorded. */
static int setup_events(TraceRecorder *t, char *reason, size_t rsize)
{
        bool found_group[ELEMENTSOF(SOURCES)] = {false};
        bool vectors_wanted = false;
        char vectors[256] = "";
        struct tep_event *mark;
        int r;

        r = write_file(t, "events/enable", "0", reason, rsize);
        if (r < 0) {
                return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(SOURCES); i++) {
                const Source *s = &SOURCES[i];
                struct tep_event *in = find_event(t, s->system, s->entry);
                struct tep_event *out = s->exit ? find_event(t, s->system, s->exit) : NULL;
                Handler hin, hout;

                if (!in || (s->exit && !out)) {
                        continue;
                }
                found_group[i] = true;
                hin = handler_of(in, s->entry_parse, s->kind, s->exit ? TRACE_ENTRY : TRACE_SWITCH,
                                 s->id_field, s->name_field, NULL);
                if (out) {
                        hout = handler_of(out,
                                          s->entry_parse == PARSE_IPI_REASON ? PARSE_IPI_REASON
                                                                             : PARSE_ID,
                                          s->kind, TRACE_EXIT, s->id_field, NULL, NULL);
                }
                (void)follow(t, &hin, out ? &hout : NULL);
        }
        for (size_t i = 0; i < ELEMENTSOF(SOURCES); i++) {
                bool any = false;

                for (size_t j = 0; j < ELEMENTSOF(SOURCES); j++) {
                        any |= found_group[j] && strcmp(SOURCES[i].group, SOURCES[j].group) == 0;
                }
                if (!any) {
                        list_add(t->missing, sizeof(t->missing), SOURCES[i].group);
                }
        }
#if defined(__x86_64__)
        vectors_wanted = true;
        if (!add_vectors(t, vectors, sizeof(vectors))) {
                list_add(t->missing, sizeof(t->missing), "irq_vectors");
        }
#endif
        note_unnamed(t, vectors_wanted, vectors);
        note_refusal_fix(t);
        if (t->n_handlers == 0 && t->refused_errno) {
                char what[PATH_MAX + 64];

                snprintf(what, sizeof(what), "cannot enable any of the trace events in %s", t->dir);
                return access_failed(reason, rsize, t->refused_errno, what);
        }
        if (t->n_handlers == 0) {
                return failf(reason, rsize, EOPNOTSUPP,
                             "this kernel has none of the trace events that explain "
                             "interruptions (irq, sched, timer, irq_vectors...)");
        }
        /* trace_marker writes: no enable switch, always recorded (a slot is kept for it). */
        mark = find_event(t, "ftrace", "print");
        if (mark) {
                t->handlers[t->n_handlers++] =
                        handler_of(mark, PARSE_MARK, CAUSE_KIND_MAX, TRACE_MARK, NULL, "buf", NULL);
        }
        return 0;
}

/* Reads the tracefs file @path (relative to the mount point) whole into a new NUL-terminated
 * buffer in @ret, at most TRACEFS_FILE_MAX bytes (tracefs files have no size to stat). Returns
 * its length or a negative errno (-EFBIG beyond the bound). */
static ssize_t read_tracefs_file(const TraceRecorder *t, const char *path, char **ret)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        char full[PATH_MAX];
        size_t len = 0, cap = 0;

        if ((size_t)snprintf(full, sizeof(full), "%s/%s", t->root, path) >= sizeof(full)) {
                return -ENAMETOOLONG;
        }
        fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                return -errno;
        }
        for (;;) {
                ssize_t n;

                if (len + 1 >= cap) {
                        char *b;

                        if (cap >= TRACEFS_FILE_MAX) {
                                return -EFBIG;
                        }
                        cap = cap ? 2 * cap : 8192;
                        b = realloc(buf, cap);
                        if (!b) {
                                return -ENOMEM;
                        }
                        buf = b;
                }
                n = read(fd, buf + len, cap - 1 - len);
                if (n < 0 && errno == EINTR) {
                        continue;
                }
                if (n < 0) {
                        return -errno;
                }
                if (n == 0) {
                        break;
                }
                len += (size_t)n;
        }
        buf[len] = 0;
        *ret = buf;
        buf = NULL;
        return (ssize_t)len;
}

/* Adds the format of @system:@name to the recorder's tep. Returns 0, or a negative errno
 * (-ENOENT: this kernel has no such event, -EBADMSG: a format libtraceevent cannot parse). */
static int parse_format(TraceRecorder *t, const char *system, const char *name)
{
        _cleanup_free_ char *buf = NULL;
        char path[PATH_MAX];
        ssize_t len;

        snprintf(path, sizeof(path), "events/%s/%s/format", system, name);
        len = read_tracefs_file(t, path, &buf);
        if (len < 0) {
                return (int)len;
        }
        return tep_parse_event(t->tep, buf, (unsigned long)len, system) == 0 ? 0 : -EBADMSG;
}

/* Whether @name ends in @suffix. */
static bool ends_with(const char *name, const char *suffix)
{
        size_t n = strlen(name), k = strlen(suffix);

        return n > k && strcmp(name + n - k, suffix) == 0;
}

/* The formats of the events the recorder may follow (SOURCES, the x86 vectors, ftrace:print),
 * and only those: what libtracefs' tracefs_local_events_system() would add besides, every
 * other event of the same systems, /proc/kallsyms (the daemon names functions with ksyms.c),
 * saved_cmdlines, cost hundreds of milliseconds at every start. An event whose format is
 * missing is one this kernel lacks (setup_events() says so). printk_formats only where an
 * event prints a kernel string by address (arm64's ipi_entry reason). */
static int parse_formats(TraceRecorder *t)
{
        char **vectors = tracefs_system_events(t->root, "irq_vectors");
        bool strings = false;

        for (size_t i = 0; i < ELEMENTSOF(SOURCES); i++) {
                const Source *s = &SOURCES[i];

                if (parse_format(t, s->system, s->entry) == 0 &&
                    s->entry_parse == PARSE_IPI_REASON) {
                        strings = true;
                }
                if (s->exit) {
                        (void)parse_format(t, s->system, s->exit);
                }
        }
        (void)parse_format(t, "ftrace", "print");
        for (int i = 0; vectors && vectors[i]; i++) {
                if (ends_with(vectors[i], "_entry") || ends_with(vectors[i], "_exit")) {
                        (void)parse_format(t, "irq_vectors", vectors[i]);
                }
        }
        tracefs_list_free(vectors);
        if (strings) {
                _cleanup_free_ char *buf = NULL;

                if (read_tracefs_file(t, "printk_formats", &buf) >= 0) {
                        (void)tep_parse_printk_formats(t->tep, buf);
                }
        }
        return 0;
}

static int load_formats(TraceRecorder *t, char *reason, size_t rsize)
{
        _cleanup_free_ char *header = NULL;
        ssize_t len;

        t->tep = tep_alloc();
        t->kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
        if (!t->tep || !t->kbuf) {
                return failf(reason, rsize, ENOMEM, "out of memory");
        }
        /* The sub-buffer header: the size of its commit field is the kernel's long. */
        len = read_tracefs_file(t, "events/header_page", &header);
        if (len < 0) {
                return access_failed(reason, rsize, (int)-len,
                                     "cannot read the trace event formats");
        }
        if (tep_parse_header_page(t->tep, header, (unsigned long)len, (int)sizeof(long)) < 0) {
                return failf(reason, rsize, EBADMSG,
                             "cannot parse the trace sub-buffer header (events/header_page)");
        }
        tep_set_long_size(t->tep, tep_get_header_page_size(t->tep));
        return parse_formats(t);
}

static int create_instance(TraceRecorder *t, const char *name, char *reason, size_t rsize)
{
        char what[PATH_MAX + 64];

        if ((size_t)snprintf(t->dir, sizeof(t->dir), "%s/instances/%s", t->root, name) >=
            sizeof(t->dir)) {
                return failf(reason, rsize, ENAMETOOLONG, "the tracefs path is too long");
        }
        /* One left by a daemon that did not stop cleanly is taken over and reset. */
        if (mkdir(t->dir, 0750) < 0 && errno != EEXIST) {
                int err = errno;

                snprintf(what, sizeof(what), "cannot create the tracing instance %s", t->dir);
                if (err == ENOENT) {
                        return failf(reason, rsize, err,
                                     "%s: this kernel's tracefs has no instances directory", what);
                }
                return access_failed(reason, rsize, err, what);
        }
        t->inst = tracefs_instance_alloc(t->root, name);
        if (!t->inst) {
                rmdir(t->dir);
                return failf(reason, rsize, ENOMEM, "out of memory");
        }
        return 0;
}

static int set_buffers(TraceRecorder *t, char *reason, size_t rsize)
{
        char what[PATH_MAX + 64];

        /* An instance starts with a default-sized buffer on every CPU; the CPUs it does not
         * record get the smallest. */
        if (tracefs_instance_set_buffer_size(t->inst, UNUSED_BUFFER_KB, -1) < 0) {
                snprintf(what, sizeof(what), "cannot set the buffer size of %s", t->dir);
                return access_failed(reason, rsize, errno ? errno : EIO, what);
        }
        for (size_t i = 0; i < t->n_cpus; i++) {
                if (tracefs_instance_set_buffer_size(t->inst, t->buffer_kb, t->cpus[i].cpu) < 0) {
                        snprintf(what, sizeof(what), "cannot set the buffer of CPU %d in %s",
                                 t->cpus[i].cpu, t->dir);
                        return access_failed(reason, rsize, errno ? errno : EIO, what);
                }
        }
        if (tracefs_option_enable(t->inst, TRACEFS_OPTION_OVERWRITE) < 0) {
                snprintf(what, sizeof(what), "cannot set overwrite mode in %s", t->dir);
                return access_failed(reason, rsize, errno ? errno : EIO, what);
        }
        return 0;
}

static int set_cpumask(TraceRecorder *t, char *reason, size_t rsize)
{
        char list[4096] = "";
        /* room for the directory and the whole list: a shorter message is cut (and gcc's
         * -Wformat-truncation says so in the sanitizer's Debug build) */
        char what[PATH_MAX + sizeof(list) + 64];
        size_t len = 0;

        for (size_t i = 0; i < t->n_cpus && len < sizeof(list) - 16; i++) {
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "",
                                        t->cpus[i].cpu);
        }
        errno = 0;
        if (tracefs_instance_set_affinity(t->inst, list) < 0) {
                snprintf(what, sizeof(what), "cannot limit %s to CPUs %s", t->dir, list);
                return access_failed(reason, rsize, errno ? errno : EIO, what);
        }
        return 0;
}

/* A descriptor of @cpu's trace_pipe_raw that is only polled: readable once the kernel buffer
 * is buffer_percent full. -1 when it cannot be opened: then the reads are timed. */
static int open_watch(TraceRecorder *t, int cpu)
{
        char path[PATH_MAX + 64];

        snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", t->dir, cpu);
        return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

/* Sets the watermark at which a watch descriptor polls readable, and says whether it was
 * taken. A kernel without buffer_percent (before 5.1) has no watermark; one before 6.1 has it
 * but its poll() ignores it and wakes at the first record: plan_next_read() finds that out
 * from the reads it wakes. */
static bool set_watermark(TraceRecorder *t)
{
        char value[16];
        char *back;
        bool taken;

        snprintf(value, sizeof(value), "%u", TRACE_WATERMARK_PERCENT);
        if (tracefs_instance_file_write(t->inst, "buffer_percent", value) < 0) {
                return false;
        }
        back = tracefs_instance_file_read(t->inst, "buffer_percent", NULL);
        taken = back && (unsigned)strtoul(back, NULL, 10) == TRACE_WATERMARK_PERCENT;
        free(back);
        return taken;
}

static void close_watches(TraceRecorder *t)
{
        for (size_t i = 0; t->cpus && i < t->n_cpus; i++) {
                if (t->cpus[i].watch_fd >= 0) {
                        close(t->cpus[i].watch_fd);
                        t->cpus[i].watch_fd = -1;
                }
        }
        t->watching = false;
}

static int open_cpus(TraceRecorder *t, char *reason, size_t rsize)
{
        char what[PATH_MAX + 64];

        for (size_t i = 0; i < t->n_cpus; i++) {
                TraceCpu *c = &t->cpus[i];

                errno = 0;
                c->tcpu = tracefs_cpu_open(t->inst, c->cpu, true);
                if (!c->tcpu) {
                        snprintf(what, sizeof(what), "cannot open the trace of CPU %d in %s",
                                 c->cpu, t->dir);
                        return access_failed(reason, rsize, errno ? errno : EIO, what);
                }
                if (t->page_size == 0) {
                        t->page_size = tracefs_cpu_read_size(c->tcpu);
                }
                c->watch_fd = open_watch(t, c->cpu);
        }
        if (t->page_size <= 0) {
                return failf(reason, rsize, EIO, "cannot tell the trace sub-buffer size");
        }
        t->page = malloc((size_t)t->page_size);
        if (!t->page) {
                return failf(reason, rsize, ENOMEM, "out of memory");
        }
        /* Bounded work per read: the whole buffer, and a little for what is written
         * meanwhile. */
        t->max_pages = t->buffer_kb * 1024u / (unsigned)t->page_size + 4;
        t->watching = set_watermark(t);
        for (size_t i = 0; i < t->n_cpus && t->watching; i++) {
                t->watching = t->cpus[i].watch_fd >= 0;
        }
        if (!t->watching) {
                close_watches(t);
        }
        return 0;
}

static void trace_recorder_freep(TraceRecorder **t)
{
        trace_recorder_free(*t);
}
#define _cleanup_trace_recorder_ __attribute__((cleanup(trace_recorder_freep)))

/* A recorder for @opt with its CPUs' windows, nothing opened yet. Returns 0 or -ENOMEM. */
static int recorder_alloc(const TraceOptions *opt, TraceRecorder **ret)
{
        _cleanup_trace_recorder_ TraceRecorder *t = calloc(1, sizeof(*t));

        if (!t) {
                return -ENOMEM;
        }
        trace_seq_init(&t->seq);
        t->on_fd = -1;
        t->window = opt->window_records ? opt->window_records : TRACE_WINDOW_DEFAULT;
        t->buffer_kb = opt->buffer_kb ? opt->buffer_kb : TRACE_BUFFER_KB_DEFAULT;
        t->cpus = calloc(opt->n_cpus, sizeof(*t->cpus));
        if (!t->cpus) {
                return -ENOMEM;
        }
        t->n_cpus = opt->n_cpus;
        t->absent = opt->absent;
        for (size_t i = 0; i < t->n_cpus; i++) {
                t->cpus[i].watch_fd = -1;
        }
        for (size_t i = 0; i < t->n_cpus; i++) {
                t->cpus[i].cpu = opt->cpus[i];
                t->cpus[i].win = calloc(t->window, sizeof(TraceRecord));
                if (!t->cpus[i].win) {
                        return -ENOMEM;
                }
        }
        *ret = t;
        t = NULL;
        return 0;
}

/* Makes the tracing instance of @t and sets it up step by step as @opt asks (clock, events,
 * CPUs, buffers), its CPUs' buffers open and tracing off; each step says in @reason why it
 * failed. Returns 0 or a negative errno. */
static int setup_instance(TraceRecorder *t, const TraceOptions *opt, char *reason,
                          size_t reason_size)
{
        int r = find_root(opt, t->root, reason, reason_size);

        if (r == 0) {
                r = create_instance(t, opt->instance ? opt->instance : DEFAULT_INSTANCE, reason,
                                    reason_size);
        }
        if (r == 0) {
                r = write_file(t, "tracing_on", "0", reason, reason_size);
        }
        if (r == 0) {
                t->on_fd = tracefs_trace_on_get_fd(t->inst);
                if (t->on_fd < 0) {
                        r = access_failed(reason, reason_size, errno ? errno : EIO,
                                          "cannot open tracing_on");
                }
        }
        if (r == 0) {
                r = load_formats(t, reason, reason_size);
        }
        if (r == 0) {
                r = choose_clock(t, opt, reason, reason_size);
        }
        if (r == 0) {
                r = set_cpumask(t, reason, reason_size);
        }
        if (r == 0) {
                r = set_buffers(t, reason, reason_size);
        }
        if (r == 0) {
                r = setup_events(t, reason, reason_size);
        }
        if (r == 0) {
                r = write_file(t, "trace", "", reason, reason_size);
        }
        if (r == 0) {
                r = open_cpus(t, reason, reason_size);
        }
        return r;
}

int trace_recorder_new(const TraceOptions *opt, TraceRecorder **ret, char *reason,
                       size_t reason_size)
{
        _cleanup_trace_recorder_ TraceRecorder *t = NULL;
        uint64_t now;
        int r;

        if (opt->n_cpus == 0 || opt->counter_hz == 0) {
                return failf(reason, reason_size, EINVAL, "no CPU to trace");
        }
        if (recorder_alloc(opt, &t) < 0) {
                return failf(reason, reason_size, ENOMEM, "out of memory");
        }
        r = setup_instance(t, opt, reason, reason_size);
        if (r < 0) {
                return r;
        }
        if (opt->ksyms) {
                t->ksyms = opt->ksyms;
        } else if (ksyms_new(opt->kallsyms, &t->ksyms) == 0) {
                t->own_ksyms = true;
        }
        refresh_mapping(t);
        now = counter_read(t->counter);
        for (size_t i = 0; i < t->n_cpus; i++) {
                t->cpus[i].complete_from = now;
                t->cpus[i].horizon = now;
        }
        r = write_file(t, "tracing_on", "1", reason, reason_size);
        if (r < 0) {
                return r;
        }
        *ret = t;
        t = NULL;
        return 0;
}

TraceRecorder *trace_recorder_free(TraceRecorder *t)
{
        if (!t) {
                return NULL;
        }
        if (t->on_fd >= 0) {
                (void)tracefs_trace_off_fd(t->on_fd);
                close(t->on_fd);
        }
        close_watches(t);
        for (size_t i = 0; t->cpus && i < t->n_cpus; i++) {
                if (t->cpus[i].tcpu) {
                        tracefs_cpu_close(t->cpus[i].tcpu);
                }
                free(t->cpus[i].win);
        }
        free(t->cpus);
        if (t->inst) {
                /* Removing the instance frees its buffers and turns its events off. */
                (void)tracefs_instance_destroy(t->inst);
                tracefs_instance_free(t->inst);
        }
        if (t->kbuf) {
                kbuffer_free(t->kbuf);
        }
        if (t->tep) {
                tep_free(t->tep);
        }
        trace_seq_destroy(&t->seq);
        if (t->own_ksyms) {
                ksyms_free(t->ksyms);
        }
        free(t->page);
        free(t);
        return NULL;
}

/* --- reading ---------------------------------------------------------------------------- */

static uint64_t field_num(struct tep_format_field *f, const void *data)
{
        unsigned long long v = 0;

        if (f && tep_read_number_field(f, data, &v) < 0) {
                v = 0;
        }
        return v;
}

static void field_string(const Handler *h, struct tep_record *rec, char *buf, size_t size)
{
        int len = 0;
        const char *s = tep_get_field_raw(NULL, h->event, h->name_field, rec, &len, 0);

        if ((!s || len <= 0) && h->name && h->name->size == 0 && h->name->offset < rec->size) {
                /* A trailing char[] (ftrace:print's buf): the rest of the record. */
                s = (const char *)rec->data + h->name->offset;
                len = rec->size - h->name->offset;
        }
        if (!s || len <= 0) {
                buf[0] = 0;
                return;
        }
        snprintf(buf, size, "%.*s", (int)strnlen(s, (size_t)len), s);
}

static void function_name(TraceRecorder *t, uint64_t addr, char *buf, size_t size)
{
        const char *name = t->ksyms ? ksyms_lookup(t->ksyms, addr) : NULL;

        if (name) {
                snprintf(buf, size, "%s", name);
        } else {
                /* Named once kallsyms has been read (at the end of this read). */
                snprintf(buf, size, "0x%" PRIx64, addr);
        }
}

static void ipi_reason(TraceRecorder *t, struct tep_record *rec, char *buf, size_t size)
{
        size_t len;
        const char *s;

        trace_seq_reset(&t->seq);
        tep_print_event(t->tep, &t->seq, rec, "%s", TEP_PRINT_INFO);
        trace_seq_terminate(&t->seq);
        s = t->seq.buffer ? t->seq.buffer : "";
        s += strspn(s, "( ");
        len = strcspn(s, ")");
        snprintf(buf, size, "%.*s", (int)len, s);
}

static const Handler *handler_for(const TraceRecorder *t, int type)
{
        for (size_t i = 0; i < t->n_handlers; i++) {
                if (t->handlers[i].type == type) {
                        return &t->handlers[i];
                }
        }
        return NULL;
}

/* Names an exit from its entry, and keeps track of the entries without exit. */
static void track_open(TraceCpu *c, TraceRecord *r)
{
        if (r->phase == TRACE_ENTRY) {
                if (c->n_open == OPEN_MAX) {
                        memmove(&c->open[0], &c->open[1], (OPEN_MAX - 1) * sizeof(Open));
                        c->n_open--;
                }
                c->open[c->n_open] = (Open){.kind = r->kind, .id = r->id};
                memcpy(c->open[c->n_open].name, r->name, sizeof(r->name));
                c->n_open++;
                return;
        }
        if (r->phase != TRACE_EXIT) {
                return;
        }
        for (size_t i = c->n_open; i-- > 0;) {
                if (c->open[i].kind == r->kind && c->open[i].id == r->id) {
                        if (!r->name[0]) {
                                memcpy(r->name, c->open[i].name, sizeof(r->name));
                        }
                        memmove(&c->open[i], &c->open[i + 1], (c->n_open - i - 1) * sizeof(Open));
                        c->n_open--;
                        return;
                }
        }
}

static void append(TraceRecorder *t, TraceCpu *c, const TraceRecord *r)
{
        if (c->n == t->window) {
                /* Drop the older half: the window stays one array, searchable and passed to
                 * the analysis as is. */
                size_t drop = t->window / 2;

                if (c->win[drop - 1].ticks + 1 > c->complete_from) {
                        c->complete_from = c->win[drop - 1].ticks + 1;
                }
                memmove(c->win, c->win + drop, (c->n - drop) * sizeof(TraceRecord));
                c->n -= drop;
                t->stats.evicted += drop;
        }
        c->win[c->n++] = *r;
        t->stats.records++;
}

static void note_loss(TraceRecorder *t, TraceCpu *c, uint64_t first_after, int missed)
{
        Loss *l = &c->losses[c->next_loss];

        if (c->n_losses == LOSSES_MAX) {
                /* The oldest loss leaves the list: nothing before its end counts as
                 * complete. */
                if (l->to_ticks > c->complete_from) {
                        c->complete_from = l->to_ticks;
                }
        } else {
                c->n_losses++;
        }
        *l = (Loss){.from_ticks = c->have_last ? c->last_ticks : c->complete_from,
                    .to_ticks = first_after};
        c->next_loss = (c->next_loss + 1) % LOSSES_MAX;
        t->stats.losses++;
        if (missed > 0) {
                t->stats.lost_events += (uint64_t)missed;
        }
}

static void parse_record(TraceRecorder *t, TraceCpu *c, void *data, int size, unsigned long long ts)
{
        struct tep_record rec = {.ts = ts, .size = size, .data = data, .cpu = c->cpu};
        TraceRecord r = {0};
        const Handler *h = handler_for(t, tep_data_type(t->tep, &rec));
        uint64_t ticks;

        if (!h) {
                return;
        }
        ticks = to_ticks(t, ts);
        /* A mapped clock may step back by a few ticks between pairs; the window stays in
         * order. */
        if (c->have_last && ticks < c->last_ticks) {
                ticks = c->last_ticks;
        }
        r.ticks = ticks;
        r.kind = h->kind == CAUSE_KIND_MAX ? 0 : h->kind;
        r.phase = h->phase;
        r.id = field_num(h->id, data);
        switch (h->parse) {
        case PARSE_IRQ_ENTRY:
        case PARSE_MARK:
                field_string(h, &rec, r.name, sizeof(r.name));
                break;
        case PARSE_FUNCTION:
                function_name(t, field_num(h->func, data), r.name, sizeof(r.name));
                break;
        case PARSE_LABEL:
                snprintf(r.name, sizeof(r.name), "%s", h->label);
                break;
        case PARSE_SOFTIRQ:
                if (r.id < ELEMENTSOF(SOFTIRQ_NAMES)) {
                        snprintf(r.name, sizeof(r.name), "%s", SOFTIRQ_NAMES[r.id]);
                }
                break;
        case PARSE_SWITCH:
                r.pid = (int32_t)field_num(h->pid, data);
                field_string(h, &rec, r.name, sizeof(r.name));
                break;
        case PARSE_IPI_REASON:
                ipi_reason(t, &rec, r.name, sizeof(r.name));
                break;
        case PARSE_ID:
                break;
        }
        track_open(c, &r);
        append(t, c, &r);
        c->last_ticks = ticks;
        c->have_last = true;
}

/* Replaces the hex names of functions that kallsyms has named since. */
static void patch_names(TraceRecorder *t)
{
        for (size_t i = 0; i < t->n_cpus; i++) {
                TraceCpu *c = &t->cpus[i];

                for (size_t j = 0; j < c->n; j++) {
                        TraceRecord *r = &c->win[j];
                        const char *name;

                        if ((r->kind != CAUSE_TIMER && r->kind != CAUSE_WORK &&
                             r->kind != CAUSE_IPI) ||
                            r->phase == TRACE_SWITCH || r->phase == TRACE_MARK ||
                            strncmp(r->name, "0x", 2) != 0) {
                                continue;
                        }
                        name = ksyms_lookup(t->ksyms, strtoull(r->name, NULL, 16));
                        if (name) {
                                snprintf(r->name, sizeof(r->name), "%s", name);
                        }
                }
                for (size_t j = 0; j < c->n_open; j++) {
                        const char *name;

                        if (strncmp(c->open[j].name, "0x", 2) == 0 &&
                            (name = ksyms_lookup(t->ksyms, strtoull(c->open[j].name, NULL, 16)))) {
                                snprintf(c->open[j].name, sizeof(c->open[j].name), "%s", name);
                        }
                }
        }
}

/* Reads @c's kernel buffer into its window, at most @max_pages sub-buffers. Returns the records
 * added, or a negative errno. */
static int read_cpu(TraceRecorder *t, TraceCpu *c, unsigned max_pages)
{
        uint64_t horizon = counter_read(t->counter);
        uint64_t added = t->stats.records;
        unsigned pages;

        for (pages = 0; pages < max_pages; pages++) {
                unsigned long long ts;
                bool first = true;
                void *data;
                int n = tracefs_cpu_read(c->tcpu, t->page, true);

                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        break;
                }
                if (n < 0) {
                        int err = errno ? errno : EIO;

                        snprintf(t->reason, sizeof(t->reason),
                                 "cannot read the trace of CPU %d in %.300s: %s", c->cpu, t->dir,
                                 strerror(err));
                        return -err;
                }
                if (n == 0) {
                        break;
                }
                t->stats.subbuffers++;
                c->pages_since++;
                if (kbuffer_load_subbuffer(t->kbuf, t->page) < 0) {
                        continue;
                }
                while ((data = kbuffer_read_event(t->kbuf, &ts))) {
                        if (first) {
                                int missed = kbuffer_missed_events(t->kbuf);

                                if (missed != 0) {
                                        note_loss(t, c, to_ticks(t, ts), missed);
                                }
                                first = false;
                        }
                        parse_record(t, c, data, kbuffer_event_size(t->kbuf), ts);
                        kbuffer_next_event(t->kbuf, NULL);
                }
        }
        /* Stopped by the bound: what was read ends at the last record. */
        c->horizon = pages < max_pages ? horizon : c->have_last ? c->last_ticks : c->horizon;
        return (int)(t->stats.records - added);
}

/* Sub-buffers read at a time to reach the end of an interruption being explained. */
#define EXPLAIN_READ_PAGES 4u

/* Whether the kernel has made a watch descriptor readable: then it did wake the reader,
 * whatever kept the reader from reading. */
static bool watch_readable(const TraceRecorder *t)
{
        for (size_t i = 0; i < t->n_cpus; i++) {
                struct pollfd p = {.fd = t->cpus[i].watch_fd, .events = POLLIN};

                if (p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
                        return true;
                }
        }
        return false;
}

/* Whether the watermark still holds, from what this read found: the kernel's wake-ups must
 * come neither far too late nor far too early. Three reads in a row that find a buffer three
 * quarters full, long after the last read, while no descriptor is readable, mean that the
 * kernel does not wake the reader; three woken reads in a row that find every buffer less than
 * an eighth full mean that it wakes at the first record (poll() before 6.1 ignores the
 * watermark). Either ends the watching: the reads are timed again. @most: the most sub-buffers
 * one CPU filled since the last read; @quarter: the watermark in sub-buffers; @readable: a
 * descriptor was readable before this read. */
static void judge_watermark(TraceRecorder *t, unsigned most, unsigned quarter, bool long_after,
                            bool readable)
{
        bool late = long_after && most >= 3 * quarter && !readable;
        bool early = t->woken && 2 * most < quarter;

        t->watch_misses = late ? t->watch_misses + 1 : 0;
        t->watch_early = early ? t->watch_early + 1 : t->woken ? 0 : t->watch_early;
        t->woken = false;
        if (t->watch_misses >= 3 || t->watch_early >= 3) {
                /* The descriptors stay open until trace_recorder_unwatch(): the caller's event
                 * loop may still have them. */
                t->watching = false;
        }
}

/* From the sub-buffers the busiest CPU filled since the last read: how long until its kernel
 * buffer is a quarter full again at that rate, within the bounds. While the watermark wakes
 * the reader, no timed read is needed (judge_watermark() checks that it does). */
static void plan_next_read(TraceRecorder *t, uint64_t now, bool readable)
{
        unsigned most = 0, quarter = t->buffer_kb * 1024u / (unsigned)t->page_size / 4;
        double period = TRACE_READ_PERIOD_MAX_NS;
        bool long_after =
                t->last_read_ns > 0 && now > t->last_read_ns + 4 * TRACE_READ_PERIOD_MIN_NS;

        quarter = quarter ? quarter : 1;
        for (size_t i = 0; i < t->n_cpus; i++) {
                most = t->cpus[i].pages_since > most ? t->cpus[i].pages_since : most;
                t->cpus[i].pages_since = 0;
        }
        if (t->watching) {
                judge_watermark(t, most, quarter, long_after, readable);
        }
        if (most > 0 && t->last_read_ns > 0 && now > t->last_read_ns) {
                period = (double)(now - t->last_read_ns) * quarter / most;
        }
        t->read_period_ns = t->watching                         ? UINT64_MAX
                            : period < TRACE_READ_PERIOD_MIN_NS ? TRACE_READ_PERIOD_MIN_NS
                            : period > TRACE_READ_PERIOD_MAX_NS ? TRACE_READ_PERIOD_MAX_NS
                                                                : (uint64_t)period;
        t->last_read_ns = now;
}

int trace_recorder_read(TraceRecorder *t)
{
        uint64_t t0 = now_ns(CLOCK_MONOTONIC), dt;
        /* Looked at before the read, which takes the buffers below the watermark again. */
        bool readable = t->watching && watch_readable(t);
        int total = 0;

        refresh_mapping(t);
        t->reason[0] = 0;
        for (size_t i = 0; i < t->n_cpus; i++) {
                int r = read_cpu(t, &t->cpus[i], t->max_pages);

                if (r < 0) {
                        total = r;
                        break;
                }
                total += r;
        }
        if (t->ksyms && ksyms_resolve(t->ksyms) > 0) {
                patch_names(t);
        }
        plan_next_read(t, t0, readable);
        dt = now_ns(CLOCK_MONOTONIC) - t0;
        t->stats.reads++;
        t->stats.read_ns += dt;
        if (dt > t->stats.max_read_ns) {
                t->stats.max_read_ns = dt;
        }
        return total;
}

static TraceCpu *cpu_of(const TraceRecorder *t, int cpu)
{
        for (size_t i = 0; i < t->n_cpus; i++) {
                if (t->cpus[i].cpu == cpu) {
                        return &t->cpus[i];
                }
        }
        return NULL;
}

int trace_recorder_explain(TraceRecorder *t, int cpu, int probe_pid, uint64_t start_ticks,
                           uint64_t duration_ticks, CauseList *ret)
{
        TraceCpu *c = cpu_of(t, cpu);
        uint64_t end = start_ticks + duration_ticks, from, to;
        size_t i0, i1;
        bool lost;

        if (!c) {
                return -ENOENT;
        }
        /* A few sub-buffers at a time, until the interruption's end is read: interruptions come
         * in time order, so a caller that explains them a few at a time reads the trace a
         * little at a time too, never the whole backlog at once. */
        if (end > c->horizon) {
                while (end > c->horizon) {
                        uint64_t before = c->horizon;

                        if (read_cpu(t, c, EXPLAIN_READ_PAGES) < 0 || c->horizon == before) {
                                break;
                        }
                }
                if (t->ksyms && ksyms_resolve(t->ksyms) > 0) {
                        patch_names(t);
                }
        }
        from = start_ticks > t->slack_ticks ? start_ticks - t->slack_ticks : 0;
        to = end + t->slack_ticks;
        i0 = causes_lower_bound(c->win, c->n, from);
        i1 = causes_lower_bound(c->win, c->n, to + 1);
        lost = start_ticks < c->complete_from || end > c->horizon;
        for (size_t i = 0; i < c->n_losses && !lost; i++) {
                lost = c->losses[i].from_ticks < end && c->losses[i].to_ticks > start_ticks;
        }
        (void)causes_analyze(c->win + i0, i1 - i0, start_ticks, end, probe_pid,
                             lost ? CAUSES_LOST : 0, ret);
        return 0;
}

const TraceRecord *trace_recorder_records(const TraceRecorder *t, int cpu, size_t *ret_n)
{
        TraceCpu *c = cpu_of(t, cpu);

        if (!c) {
                *ret_n = 0;
                return NULL;
        }
        *ret_n = c->n;
        return c->win;
}

uint64_t trace_recorder_read_period_ns(const TraceRecorder *t)
{
        if (t->watching) {
                return UINT64_MAX;
        }
        return t->read_period_ns ? t->read_period_ns : TRACE_READ_PERIOD_MAX_NS; /* 0: not read */
}

bool trace_recorder_watching(const TraceRecorder *t)
{
        return t->watching;
}

void trace_recorder_woken(TraceRecorder *t)
{
        t->woken = true;
}

int trace_recorder_watch_fd(const TraceRecorder *t, size_t i)
{
        return t->watching && i < t->n_cpus ? t->cpus[i].watch_fd : -1;
}

void trace_recorder_unwatch(TraceRecorder *t)
{
        close_watches(t);
}

size_t trace_recorder_n_cpus(const TraceRecorder *t)
{
        return t->n_cpus;
}

const char *trace_recorder_clock(const TraceRecorder *t)
{
        return t->clock;
}

const char *trace_recorder_events(const TraceRecorder *t)
{
        return t->events;
}

const char *trace_recorder_missing(const TraceRecorder *t)
{
        return t->missing;
}

const char *trace_recorder_refused(const TraceRecorder *t)
{
        return t->refused;
}

const char *trace_recorder_unnamed(const TraceRecorder *t)
{
        return t->unnamed;
}

const char *trace_recorder_dir(const TraceRecorder *t)
{
        return t->dir;
}

const char *trace_recorder_reason(const TraceRecorder *t)
{
        return t->reason;
}

void trace_recorder_stats(const TraceRecorder *t, TraceStats *ret)
{
        *ret = t->stats;
        ret->symbol_passes = t->ksyms ? ksyms_passes(t->ksyms) : 0;
}

size_t trace_recorder_memory_bytes(const TraceRecorder *t)
{
        return sizeof(*t) + t->n_cpus * (sizeof(TraceCpu) + t->window * sizeof(TraceRecord)) +
               (size_t)t->page_size + (t->own_ksyms ? ksyms_memory_bytes(t->ksyms) : 0);
}

size_t trace_recorder_kernel_bytes(const TraceRecorder *t)
{
        return (size_t)t->n_cpus * t->buffer_kb * 1024u;
}

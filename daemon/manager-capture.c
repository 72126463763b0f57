/* The manager's trace captures ([trace] keep_above): the records from CAPTURE_MARGIN_NS before
 * to CAPTURE_MARGIN_NS after every interruption longer than keep_above, taken from the
 * recorder's window once the end has been read, and written, one JSON file per capture, to
 * state_dir/captures; GetCaptures reads them back. Which to write and keep is capture-store.c;
 * tracing never stops for it: the records are those the recorder reads anyway.
 *
 * A capture file: {"version": 1, "from_ns", "to_ns" (CLOCK_MONOTONIC of the boot it was taken
 * in), "realtime_ns", "realtime", "interruptions": [{"cpu", "start_ns", "duration_ns"}],
 * "more_interruptions", "records": [{"cpu", "ns", "kind", "name", "duration_ns"?}],
 * "records_dropped", "complete"}. Its name is capture-<realtime_ns of from_ns>.json, so that
 * names sort in time order. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic-file.h"
#include "duration.h"
#include "log.h"
#include "manager-private.h"
#include "util.h"

#define CAPTURE_DIR "captures"
#define CAPTURE_TMP ".capture.tmp"
/* Records per capture: the nearest to its interruptions are kept, the others counted. A
 * record takes at most about 150 bytes, so a file stays below about 300 KiB. */
#define CAPTURE_RECORDS_MAX 2048u
/* Files kept, whatever their size. */
#define CAPTURE_KEPT_MAX 1000u
/* Bytes written in any minute: 16 captures of the largest size. */
#define CAPTURE_MINUTE_BYTES (5ULL * 1024 * 1024)
/* A file larger than this is not read back (none is written larger). */
#define CAPTURE_FILE_BYTES_MAX (1024ULL * 1024)
/* GetCaptures reads at most this many bytes of files for one reply, which then stays within
 * the 4 MiB a connection may have unsent (the server's max_output_bytes). */
#define CAPTURE_REPLY_BYTES_MAX (3ULL * 1024 * 1024)
/* ... and reads at most this many bytes of files in all, those of other CPUs included: the
 * reading is on the event loop. */
#define CAPTURE_SCAN_BYTES_MAX (8ULL * 1024 * 1024)
/* An entry's exit is looked for this many records ahead at most. */
#define CAPTURE_EXIT_SEARCH 512u

/* One row of a capture's timeline. */
typedef struct CaptureRow {
        int cpu;
        uint64_t ns;
        uint64_t duration_ns; /* UINT64_MAX: its end is not in the window */
        const char *kind;
        char name[CAUSE_NAME_MAX + 12];
        uint64_t distance_ns; /* from the nearest interruption of the capture */
} CaptureRow;

/* Opens state_dir/captures, made (and state_dir) if missing. Returns a descriptor or a
 * negative errno. */
static int capture_dir_fd(const Manager *m)
{
        _cleanup_close_ int dfd = -1;
        int fd;

        if (mkdir(m->config.history_state_dir, 0750) < 0 && errno != EEXIST) {
                return -errno;
        }
        dfd = open(m->config.history_state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                return -errno;
        }
        if (mkdirat(dfd, CAPTURE_DIR, 0750) < 0 && errno != EEXIST) {
                return -errno;
        }
        fd = openat(dfd, CAPTURE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

static bool capture_name_valid(const char *name)
{
        size_t len = strlen(name);

        return strncmp(name, "capture-", 8) == 0 && len > 13 && len < CAPTURE_NAME_MAX &&
               strcmp(name + len - 5, ".json") == 0 && strspn(name + 8, "0123456789") == len - 13;
}

/* Removes the files beyond the store's bounds, oldest first. */
static void capture_evict(Manager *m, int dfd)
{
        char name[CAPTURE_NAME_MAX];

        while (capture_store_evict(m->captures, name) == 1) {
                if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
                        log_warning("cannot remove the capture %s/%s/%s: %m",
                                    m->config.history_state_dir, CAPTURE_DIR, name);
                }
        }
}

/* Takes the captures of earlier runs into the store, oldest first, within its bounds. */
static void capture_scan(Manager *m, int dfd)
{
        _cleanup_closedir_ DIR *d = fdopendir(dup(dfd));
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;

        while (d && (de = readdir(d))) {
                if (!capture_name_valid(de->d_name)) {
                        continue;
                }
                if (n == cap) {
                        char **bigger = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));

                        if (!bigger) {
                                break;
                        }
                        names = bigger;
                }
                if (!(names[n] = strdup(de->d_name))) {
                        break;
                }
                n++;
        }
        if (n) {
                qsort(names, n, sizeof(*names), cmp_strings);
        }
        for (size_t i = 0; i < n; i++) {
                struct stat st;

                if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
                        (void)capture_store_keep(m->captures, names[i], (uint64_t)st.st_size,
                                                 false);
                        capture_evict(m, dfd);
                }
                free(names[i]);
        }
        free(names);
}

void manager_capture_start(Manager *m)
{
        CaptureLimits l = {
                .per_minute = m->config.trace_keep_per_minute,
                .minute_bytes = CAPTURE_MINUTE_BYTES,
                .kept_max = CAPTURE_KEPT_MAX,
                .kept_bytes = m->config.trace_keep_max_bytes,
        };
        _cleanup_close_ int dfd = -1;
        int r;

        if (!m->trace || m->config.trace_keep_above_ns == 0 || m->captures) {
                return;
        }
        dfd = capture_dir_fd(m);
        r = dfd < 0 ? dfd : capture_store_new(&l, &m->captures);
        if (r < 0) {
                m->captures = NULL;
                log_warning("trace captures are off: cannot use %s/%s: %s",
                            m->config.history_state_dir, CAPTURE_DIR, strerror(-r));
                return;
        }
        capture_scan(m, dfd);
        log_info("keeping the trace around interruptions longer than %" PRIu64 " us in %s/%s",
                 m->config.trace_keep_above_ns / 1000, m->config.history_state_dir, CAPTURE_DIR);
}

void manager_capture_stop(Manager *m)
{
        m->captures = capture_store_free(m->captures);
}

void manager_capture_note(Manager *m, int cpu, uint64_t start_ns, uint64_t duration_ns)
{
        if (m->captures && duration_ns > m->config.trace_keep_above_ns) {
                (void)capture_store_note(m->captures, cpu, start_ns, duration_ns);
        }
}

static uint64_t record_ns(const Manager *m, const TraceRecord *r)
{
        uint64_t mono, real;

        clock_pair_map(&m->clock_ref, &m->counter.conv, r->ticks, &mono, &real);
        return mono;
}

/* How far @ns lies from the nearest interruption of @w. */
static uint64_t distance_ns(const CaptureWindow *w, uint64_t ns)
{
        uint64_t best = UINT64_MAX;

        for (size_t i = 0; i < w->n; i++) {
                uint64_t s = w->in[i].start_ns, e = s + w->in[i].duration_ns,
                         d = ns < s   ? s - ns
                             : ns > e ? ns - e
                                      : 0;

                best = d < best ? d : best;
        }
        return best;
}

/* Fills @row from record @i of @recs (@n of one CPU): its kind, name and, for an entry or a
 * task switch, how long until its exit or the next switch. Returns false for a record that
 * makes no row (an exit). */
static bool capture_row(const Manager *m, const TraceRecord *recs, size_t n, size_t i,
                        CaptureRow *row)
{
        const TraceRecord *r = &recs[i];

        row->duration_ns = UINT64_MAX;
        switch (r->phase) {
        case TRACE_ENTRY:
                row->kind = cause_kind_name(r->kind);
                snprintf(row->name, sizeof(row->name), "%s", r->name);
                for (size_t j = i + 1; j < n && j <= i + CAPTURE_EXIT_SEARCH; j++) {
                        if (recs[j].phase == TRACE_EXIT && recs[j].kind == r->kind &&
                            recs[j].id == r->id) {
                                row->duration_ns = record_ns(m, &recs[j]) - row->ns;
                                break;
                        }
                }
                return row->kind != NULL;
        case TRACE_SWITCH:
                row->kind = "sched_switch";
                snprintf(row->name, sizeof(row->name), "%s:%" PRId32, r->name, r->pid);
                for (size_t j = i + 1; j < n; j++) {
                        if (recs[j].phase == TRACE_SWITCH) {
                                row->duration_ns = record_ns(m, &recs[j]) - row->ns;
                                break;
                        }
                }
                return true;
        case TRACE_MARK:
                row->kind = "mark";
                snprintf(row->name, sizeof(row->name), "%s", r->name);
                return true;
        default:
                return false;
        }
}

/* Adds the rows of @cpu's records within @w to @rows (@n, room for @cap). Returns whether
 * the recorder's window reaches back to the capture's start (or holds less than it can). */
static bool capture_cpu_rows(const Manager *m, int cpu, const CaptureWindow *w, CaptureRow **rows,
                             size_t *n, size_t *cap)
{
        size_t nr = 0, first;
        const TraceRecord *recs = trace_recorder_records(m->trace, cpu, &nr);

        if (!recs || nr == 0) {
                return true;
        }
        /* Back from the newest to the first record at or after the start. */
        for (first = nr; first > 0 && record_ns(m, &recs[first - 1]) >= w->from_ns; first--) {
        }
        for (size_t i = first; i < nr; i++) {
                CaptureRow row = {.cpu = cpu, .ns = record_ns(m, &recs[i])};

                if (row.ns >= w->to_ns) {
                        break;
                }
                if (!capture_row(m, recs, nr, i, &row)) {
                        continue;
                }
                if (*n == *cap) {
                        size_t more = *cap ? 2 * *cap : 256;
                        CaptureRow *bigger = realloc(*rows, more * sizeof(**rows));

                        if (!bigger) {
                                break;
                        }
                        *rows = bigger;
                        *cap = more;
                }
                row.distance_ns = distance_ns(w, row.ns);
                (*rows)[(*n)++] = row;
        }
        return first > 0 || nr < TRACE_WINDOW_DEFAULT;
}

static int cmp_distance(const void *a, const void *b)
{
        const CaptureRow *x = a, *y = b;

        return x->distance_ns < y->distance_ns ? -1 : x->distance_ns > y->distance_ns;
}

static int cmp_time(const void *a, const void *b)
{
        const CaptureRow *x = a, *y = b;

        if (x->ns != y->ns) {
                return x->ns < y->ns ? -1 : 1;
        }
        return x->cpu - y->cpu;
}

static json_t *rows_to_json(const CaptureRow *rows, size_t n)
{
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < n; i++) {
                json_t *o =
                        json_pack("{si sI ss ss}", "cpu", rows[i].cpu, "ns", (json_int_t)rows[i].ns,
                                  "kind", rows[i].kind, "name", rows[i].name);

                if (o && rows[i].duration_ns != UINT64_MAX) {
                        json_object_set_new(o, "duration_ns",
                                            json_integer((json_int_t)rows[i].duration_ns));
                }
                if (json_array_append_new(arr, o) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}

static json_t *interruptions_to_json(const CaptureWindow *w)
{
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < w->n; i++) {
                if (json_array_append_new(arr,
                                          json_pack("{si sI sI}", "cpu", w->in[i].cpu, "start_ns",
                                                    (json_int_t)w->in[i].start_ns, "duration_ns",
                                                    (json_int_t)w->in[i].duration_ns)) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}

/* The capture of @w as a JSON object, or NULL without memory. */
static json_t *capture_json(const Manager *m, const CaptureWindow *w, uint64_t real_ns)
{
        _cleanup_free_ CaptureRow *rows = NULL;
        size_t n = 0, cap = 0, dropped = 0;
        bool complete = true;
        char when[64];

        for (size_t i = 0; i < m->n_probes; i++) {
                complete &= capture_cpu_rows(m, m->probes[i].cpu, w, &rows, &n, &cap);
        }
        if (n > CAPTURE_RECORDS_MAX) {
                qsort(rows, n, sizeof(*rows), cmp_distance);
                dropped = n - CAPTURE_RECORDS_MAX;
                n = CAPTURE_RECORDS_MAX;
        }
        if (n) {
                qsort(rows, n, sizeof(*rows), cmp_time);
        }
        realtime_format_iso8601(when, sizeof(when), real_ns);
        return json_pack("{si sI sI sI ss so sI so sI sb}", "version", 1, "from_ns",
                         (json_int_t)w->from_ns, "to_ns", (json_int_t)w->to_ns, "realtime_ns",
                         (json_int_t)real_ns, "realtime", when, "interruptions",
                         interruptions_to_json(w), "more_interruptions", (json_int_t)w->more,
                         "records", rows_to_json(rows, n), "records_dropped", (json_int_t)dropped,
                         "complete", complete);
}

static int write_text(FILE *f, void *userdata)
{
        return fputs(userdata, f) < 0 ? -EIO : 0;
}

/* Writes the capture of @w, within the store's bounds. Returns 0, -EBUSY or -EFBIG when a
 * bound skips it, or another negative errno when it cannot be written. */
static int capture_write(Manager *m, const CaptureWindow *w)
{
        uint64_t real_ns = w->from_ns + (m->clock_ref.real_ns - m->clock_ref.mono_ns);
        json_t *o = capture_json(m, w, real_ns);
        _cleanup_free_ char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        _cleanup_close_ int dfd = -1;
        char name[CAPTURE_NAME_MAX];
        size_t len;
        int r;

        json_decref(o);
        if (!text) {
                capture_store_skip(m->captures);
                return -ENOMEM;
        }
        len = strlen(text);
        r = capture_store_admit(m->captures, w->from_ns, len);
        if (r < 0) {
                return r;
        }
        snprintf(name, sizeof(name), "capture-%020" PRIu64 ".json", real_ns);
        dfd = capture_dir_fd(m);
        r = dfd < 0 ? dfd
                    : atomic_file_write(dfd, CAPTURE_TMP, name, 0640, ATOMIC_SYNC_FILE, write_text,
                                        text);
        if (r < 0) {
                capture_store_skip(m->captures);
                return r;
        }
        (void)capture_store_keep(m->captures, name, len, true);
        capture_evict(m, dfd);
        return 0;
}

void manager_capture_flush(Manager *m)
{
        CaptureWindow w;

        if (!m->captures || !m->trace) {
                return;
        }
        while (capture_store_next_due(m->captures, m->trace_read_ns, &w) == 1) {
                int r = capture_write(m, &w);

                if (r < 0 && r != -EBUSY && r != -EFBIG && !m->capture_failing) {
                        log_warning("cannot write a trace capture to %s/%s: %s (skipped and "
                                    "counted; will retry with the next)",
                                    m->config.history_state_dir, CAPTURE_DIR, strerror(-r));
                        m->capture_failing = true;
                } else if (r == 0 && m->capture_failing) {
                        log_notice("trace captures are written again");
                        m->capture_failing = false;
                }
        }
}

bool manager_capture_counts(const Manager *m, CaptureCounts *ret)
{
        if (!m->captures) {
                return false;
        }
        capture_store_counts(m->captures, ret);
        return true;
}

/* Reads capture @name of @dfd, of at most CAPTURE_FILE_BYTES_MAX bytes; its size into
 * @ret_bytes. NULL when it is gone, not a regular file, too large or not JSON. */
static json_t *capture_read(int dfd, const char *name, uint64_t *ret_bytes)
{
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        json_t *o;
        FILE *f;

        if (fd < 0) {
                return NULL;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            (uint64_t)st.st_size > CAPTURE_FILE_BYTES_MAX || !(f = fdopen(fd, "re"))) {
                close(fd);
                return NULL;
        }
        o = json_loadf(f, JSON_REJECT_DUPLICATES, NULL);
        fclose(f);
        *ret_bytes = (uint64_t)st.st_size;
        return json_is_object(o) ? o : (json_decref(o), NULL);
}

/* Whether an entry of @arr has a "cpu" in @cpus. */
static bool any_cpu_in(json_t *arr, const cpu_set_t *cpus)
{
        size_t i;
        json_t *v;

        json_array_foreach(arr, i, v)
        {
                json_int_t cpu = json_integer_value(json_object_get(v, "cpu"));

                if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET((int)cpu, cpus)) {
                        return true;
                }
        }
        return false;
}

/* Removes from @arr the entries whose "cpu" is not in @cpus. */
static void keep_cpus(json_t *arr, const cpu_set_t *cpus)
{
        for (size_t i = json_array_size(arr); i > 0; i--) {
                json_int_t cpu =
                        json_integer_value(json_object_get(json_array_get(arr, i - 1), "cpu"));

                if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET((int)cpu, cpus)) {
                        json_array_remove(arr, i - 1);
                }
        }
}

json_t *manager_captures(Manager *m, const cpu_set_t *cpus, uint64_t since_real_ns, size_t limit,
                         bool *ret_truncated)
{
        _cleanup_close_ int dfd = m->captures ? capture_dir_fd(m) : -1;
        json_t *arr = json_array();
        uint64_t total = 0, scanned = 0;
        bool truncated = false;
        CaptureCounts c = {0};

        if (!arr) {
                return NULL;
        }
        if (m->captures) {
                capture_store_counts(m->captures, &c);
        }
        /* Newest first, so that the bounds keep the latest; shown oldest first. */
        for (size_t i = c.kept; dfd >= 0 && i > 0; i--) {
                const char *name = capture_store_kept_name(m->captures, i - 1);
                uint64_t bytes = 0;
                json_t *o;

                if (strtoull(name + 8, NULL, 10) < since_real_ns) {
                        break;
                }
                if (scanned >= CAPTURE_SCAN_BYTES_MAX) {
                        truncated = true;
                        break;
                }
                o = capture_read(dfd, name, &bytes);
                scanned += bytes;
                if (!o || !any_cpu_in(json_object_get(o, "interruptions"), cpus)) {
                        json_decref(o);
                        continue;
                }
                if (json_array_size(arr) == limit || total + bytes > CAPTURE_REPLY_BYTES_MAX) {
                        json_decref(o);
                        truncated = true;
                        break;
                }
                total += bytes;
                keep_cpus(json_object_get(o, "records"), cpus);
                json_object_set_new(o, "file", json_string(name));
                if (json_array_insert_new(arr, 0, o) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        *ret_truncated = truncated;
        return arr;
}

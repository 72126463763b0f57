#include "config.h"
#include "config-internal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpulist.h"
#include "duration.h"
#include "util.h"

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)

/* A line longer than the longest path plus room for its key is not a config line. */
#define LINE_MAX_BYTES (CONFIG_PATH_MAX + 1024)

/* Values echoed in messages are cut to this many bytes: enough to recognise them. */
#define QUOTE_MAX 64

/* Flags private to this file: how a path is normalised and checked. */
#define FLAG_PATH_FILE (1u << 8)   /* names a file: a trailing '/' is an error */
#define FLAG_PATH_PREFIX (1u << 9) /* is prepended to other paths: "/" means "", no final '/' */

static const ConfigEnumName counter_names[] = {
        {"tsc", COUNTER_HW},
        {"clock", COUNTER_CLOCK},
        /* Aliases that counter_source_parse() also knows; the first name of a value is the
         * one written back. */
        {"cntvct", COUNTER_HW},
        {"hw", COUNTER_HW},
        {NULL, 0},
};

static const ConfigEnumName boolean_names[] = {
        {"no", 0}, {"yes", 1}, {"false", 0}, {"true", 1}, {"off", 0},
        {"on", 1}, {"0", 0},   {"1", 1},     {NULL, 0},
};

/* Each macro checks at compile time that the field has the C type its ConfigType implies: a
 * comparison of distinct pointer types is an error under -Werror. */
#define FIELD(field, ctype)                                                                        \
        .offset = offsetof(Config, field) + 0 * sizeof(&((Config *)0)->field == (ctype *)0),       \
        .size = sizeof(((Config *)0)->field)
#define STRING_FIELD(field)                                                                        \
        .offset = offsetof(Config, field) + 0 * sizeof(((Config *)0)->field == (char *)0),         \
        .size = sizeof(((Config *)0)->field)

#define KEY_UINT(sec, key, field, def, lo, hi, text)                                               \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_UINT, .default_value = def,       \
                .min = lo, .max = hi, FIELD(field, unsigned), .doc = text                          \
        }
#define KEY_DURATION(sec, key, field, def, lo, hi, fl, text)                                       \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_DURATION, .default_value = def,   \
                .min = lo, .max = hi, .flags = fl, FIELD(field, uint64_t), .doc = text             \
        }
#define KEY_SIZE(sec, key, field, def, lo, hi, text)                                               \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_SIZE, .default_value = def,       \
                .min = lo, .max = hi, FIELD(field, uint64_t), .doc = text                          \
        }
#define KEY_CPULIST(sec, key, field, def, text)                                                    \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_CPULIST, .default_value = def,    \
                FIELD(field, cpu_set_t), .doc = text                                               \
        }
#define KEY_ENUM(sec, key, field, ctype, names, def, text)                                         \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_ENUM, .default_value = def,       \
                FIELD(field, ctype), .enum_names = names, .doc = text                              \
        }
#define KEY_PATH(sec, key, field, def, fl, text)                                                   \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_PATH, .default_value = def,       \
                .flags = fl, STRING_FIELD(field), .doc = text                                      \
        }
#define KEY_GROUP(sec, key, field, def, text)                                                      \
        {                                                                                          \
                .section = sec, .name = key, .type = CONFIG_TYPE_GROUP, .default_value = def,      \
                STRING_FIELD(field), .doc = text                                                   \
        }

static const ConfigKey keys[] = {
        KEY_CPULIST("probe", "cpus", probe_cpus, "",
                    "CPUs to probe, as a CPU list such as 2-5,8. Empty: the CPUs the kernel "
                    "isolates (isolcpus=, nohz_full=)."),
        KEY_UINT("probe", "priority", probe_priority, "0", 0, 99,
                 "Scheduling of the probe threads: 0 for SCHED_OTHER, 1..99 for SCHED_FIFO "
                 "at that priority."),
        KEY_DURATION("probe", "threshold", probe_threshold_ns, "10us", 100, NSEC_PER_SEC, 0,
                     "A gap in the probe loop at least this long is recorded as an "
                     "interruption."),
        KEY_DURATION("probe", "preheat", probe_preheat_ns, "1s", 0, 60 * NSEC_PER_SEC, 0,
                     "How long each probe runs before it records, so that clock frequency and "
                     "caches have settled."),
        KEY_ENUM("probe", "counter", probe_counter, CounterSource, counter_names, "tsc",
                 "The counter the probes read: tsc for the hardware counter (rdtsc on x86-64, "
                 "cntvct_el0 on arm64), clock for clock_gettime(CLOCK_MONOTONIC_RAW)."),

        KEY_DURATION("history", "interval", history_interval_ns, "1s", 100 * NSEC_PER_MSEC,
                     60 * NSEC_PER_SEC, 0,
                     "Length of one measurement interval: the finest time resolution of the "
                     "history and how often statistics are published."),
        KEY_DURATION("history", "fine_retention", history_fine_retention_ns, "10min", NSEC_PER_MIN,
                     NSEC_PER_DAY, 0, "How far back the history keeps every interval."),
        KEY_DURATION("history", "coarse_retention", history_coarse_retention_ns, "24h",
                     NSEC_PER_HOUR, 30 * NSEC_PER_DAY, 0,
                     "How far back the history keeps one entry per minute; at least "
                     "fine_retention."),
        KEY_UINT("history", "events_per_cpu", history_events_per_cpu, "10000", 16, 1000000,
                 "How many of the latest interruptions are kept per CPU and duration band "
                 "(below 100 us, to 1 ms, to 10 ms, longer); older ones are dropped and "
                 "counted."),
        KEY_DURATION("history", "checkpoint", history_checkpoint_ns, "60s", NSEC_PER_SEC,
                     NSEC_PER_HOUR, CONFIG_FLAG_ZERO_DISABLES,
                     "How often the history is saved to state_dir so that it survives a "
                     "restart. 0: never saved nor loaded."),
        KEY_PATH("history", "state_dir", history_state_dir, "/var/lib/jitterd", 0,
                 "Directory of the history checkpoint."),

        KEY_PATH("server", "socket", server_socket, "", FLAG_PATH_FILE,
                 "Path of the Varlink socket. Empty: /run/jitterd/io.jitterd for the system "
                 "service, $XDG_RUNTIME_DIR/jitterd/io.jitterd otherwise."),
        KEY_GROUP("server", "admin_group", server_admin_group, "",
                  "Members of this group may reset statistics and reload, as root may. Empty: "
                  "root only."),
        KEY_UINT("server", "max_clients", server_max_clients, "64", 1, 4096,
                 "Most clients connected at once; further connections are refused."),
        KEY_SIZE("server", "max_message", server_max_message_bytes, "64KiB", KIB, 16 * MIB,
                 "Largest message a client may send; a client that sends more is "
                 "disconnected."),
        KEY_DURATION("server", "idle_timeout", server_idle_timeout_ns, "5min", NSEC_PER_SEC,
                     NSEC_PER_DAY, 0,
                     "A client that neither sends nor waits for a reply this long is "
                     "disconnected."),
        KEY_UINT("server", "cpu_budget_percent", server_cpu_budget_percent, "10", 1, 100,
                 "The daemon's CPU budget beyond its probes, in percent of a core: what "
                 "serving clients may take (85 % of it) and the daemon's own work. Calls "
                 "beyond it are refused with io.jitterd.Busy and a retry delay; the "
                 "JitterdOverBudget alert compares the daemon's CPU time against it."),
        KEY_UINT("server", "loop_priority", server_loop_priority, "0", 0, 99,
                 "Scheduling of the event loop, which harvests, reads the trace and answers "
                 "the clients: 0 for SCHED_OTHER, 1..99 for SCHED_FIFO at that priority, so "
                 "that no SCHED_OTHER task of the housekeeping CPUs delays a reply. The CPU "
                 "budget still bounds what the clients may cost."),

        KEY_PATH("export", "prometheus_textfile", export_prometheus_textfile, "", FLAG_PATH_FILE,
                 "File for node_exporter's textfile collector, rewritten every "
                 "prometheus_textfile_interval; its name must end in .prom. Empty: no export."),
        KEY_DURATION("export", "prometheus_textfile_interval",
                     export_prometheus_textfile_interval_ns, "10s", 100 * NSEC_PER_MSEC,
                     NSEC_PER_HOUR, 0,
                     "How often the textfile is rewritten, at the first harvest at or after "
                     "the time; never more often than history interval. node_exporter reads "
                     "it at each scrape: as often as the scrapes, or a little more, is enough."),

        KEY_PATH("audit", "root", audit_root, "", FLAG_PATH_PREFIX,
                 "Directory under which /proc and /sys are read for the tuning audit, to audit "
                 "a copy of another host's files. Empty: the real ones."),

        KEY_ENUM("trace", "enabled", trace_enabled, int, boolean_names, "no",
                 "Record kernel trace events of the probed CPUs (a tracefs instance of the "
                 "daemon's own) and name the causes of every interruption: yes or no."),
        KEY_DURATION("trace", "keep_above", trace_keep_above_ns, "0", 10 * NSEC_PER_USEC,
                     NSEC_PER_SEC, CONFIG_FLAG_ZERO_DISABLES,
                     "Keep the trace records from 10 ms before to 10 ms after every "
                     "interruption longer than this in state_dir/captures, for GetCaptures. "
                     "0: none kept."),
        KEY_UINT("trace", "keep_per_minute", trace_keep_per_minute, "10", 1, 600,
                 "Most captures written in any minute; those beyond are skipped and "
                 "counted."),
        KEY_SIZE("trace", "keep_max_size", trace_keep_max_bytes, "64MiB", MIB, 4 * GIB,
                 "Most bytes of captures kept in state_dir/captures (and at most 1000 files); "
                 "the oldest are removed first."),
};

#define N_KEYS ELEMENTSOF(keys)

/* Required ending of a file name, by key; only the textfile collector has one. */
static const char *path_suffix(const ConfigKey *k)
{
        return k->offset == offsetof(Config, export_prometheus_textfile) ? ".prom" : NULL;
}

const ConfigKey *config_keys(size_t *ret_n)
{
        *ret_n = N_KEYS;
        return keys;
}

const ConfigKey *config_key_find(const char *section, const char *name)
{
        for (size_t i = 0; i < N_KEYS; i++) {
                if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0) {
                        return &keys[i];
                }
        }
        return NULL;
}

static bool section_known(const char *section)
{
        for (size_t i = 0; i < N_KEYS; i++) {
                if (strcmp(keys[i].section, section) == 0) {
                        return true;
                }
        }
        return false;
}

static void *field_ptr(Config *c, const ConfigKey *k)
{
        return (char *)c + k->offset;
}

static const void *field_cptr(const Config *c, const ConfigKey *k)
{
        return (const char *)c + k->offset;
}

/* --- Messages --- */

void config_diag_clear(ConfigDiag *diag)
{
        if (!diag) {
                return;
        }
        for (size_t i = 0; i < diag->n_messages; i++) {
                free(diag->messages[i].text);
        }
        free(diag->messages);
        *diag = (ConfigDiag){0};
}

/* Stores a formatted message in *@ret_error (if not NULL) and returns -EINVAL, or -ENOMEM. */
static int fail(char **ret_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **ret_error, const char *fmt, ...)
{
        va_list ap;
        int r;

        if (!ret_error) {
                return -EINVAL;
        }
        va_start(ap, fmt);
        r = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* Writes @s into @buf (QUOTE_BUF bytes), in double quotes if @quoted, with control and
 * non-ASCII bytes escaped so that a hostile value cannot garble a terminal or the journal, and
 * cut after QUOTE_MAX bytes. */
#define QUOTE_BUF (QUOTE_MAX * 4 + 8)
static const char *escape(const char *s, char *buf, bool quoted)
{
        size_t n = 0, i;

        if (quoted) {
                buf[n++] = '"';
        }
        for (i = 0; s[i] != '\0' && i < QUOTE_MAX; i++) {
                unsigned char ch = (unsigned char)s[i];

                if (quoted && (ch == '"' || ch == '\\')) {
                        buf[n++] = '\\';
                        buf[n++] = (char)ch;
                } else if (ch < 0x20 || ch >= 0x7f) {
                        n += (size_t)snprintf(buf + n, QUOTE_BUF - n, "\\x%02x", ch);
                } else {
                        buf[n++] = (char)ch;
                }
        }
        if (s[i] != '\0') {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        if (quoted) {
                buf[n++] = '"';
        }
        buf[n] = '\0';
        return buf;
}

static const char *quote(const char *s, char *buf)
{
        return escape(s, buf, true);
}

static bool is_blank(char ch)
{
        return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

/* Trims @s in place and returns its first non-blank character. */
static char *strip(char *s)
{
        size_t n;

        while (is_blank(*s)) {
                s++;
        }
        n = strlen(s);
        while (n > 0 && is_blank(s[n - 1])) {
                s[--n] = '\0';
        }
        return s;
}

static bool is_digit(char ch)
{
        return ch >= '0' && ch <= '9';
}

static bool is_alpha(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* --- Values --- */

/* Parses a decimal number with optional trailing text, stored in @ret_end. Returns 0,
 * -EINVAL or -ERANGE. */
static int parse_decimal(const char *s, uint64_t *ret, const char **ret_end)
{
        uint64_t v = 0;

        if (!is_digit(*s)) {
                return -EINVAL;
        }
        for (; is_digit(*s); s++) {
                unsigned d = (unsigned)(*s - '0');

                if (v > (UINT64_MAX - d) / 10) {
                        return -ERANGE;
                }
                v = v * 10 + d;
        }
        *ret = v;
        *ret_end = s;
        return 0;
}

static int parse_uint(const char *s, uint64_t *ret)
{
        const char *end;
        int r;

        r = parse_decimal(s, ret, &end);
        if (r < 0) {
                return r;
        }
        return *end == '\0' ? 0 : -EINVAL;
}

/* Sizes take binary multiples only: "1K" meaning 1000 would be a surprise in a buffer limit. */
static const struct {
        const char *suffix;
        uint64_t bytes;
} size_units[] = {
        {"", 1},    {"B", 1},     {"K", KIB}, {"KiB", KIB},
        {"M", MIB}, {"MiB", MIB}, {"G", GIB}, {"GiB", GIB},
};

static int parse_size(const char *s, uint64_t *ret)
{
        const char *end;
        uint64_t v;
        int r;

        r = parse_decimal(s, &v, &end);
        if (r < 0) {
                return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(size_units); i++) {
                if (strcmp(end, size_units[i].suffix) == 0) {
                        if (v > UINT64_MAX / size_units[i].bytes) {
                                return -ERANGE;
                        }
                        *ret = v * size_units[i].bytes;
                        return 0;
                }
        }
        return -EINVAL;
}

static void format_size(uint64_t bytes, char *buf, size_t size)
{
        if (bytes != 0 && bytes % GIB == 0) {
                snprintf(buf, size, "%lluGiB", (unsigned long long)(bytes / GIB));
        } else if (bytes != 0 && bytes % MIB == 0) {
                snprintf(buf, size, "%lluMiB", (unsigned long long)(bytes / MIB));
        } else if (bytes != 0 && bytes % KIB == 0) {
                snprintf(buf, size, "%lluKiB", (unsigned long long)(bytes / KIB));
        } else {
                snprintf(buf, size, "%llu", (unsigned long long)bytes);
        }
}

static void format_number(const ConfigKey *k, uint64_t v, char *buf, size_t size)
{
        switch (k->type) {
        case CONFIG_TYPE_DURATION:
                duration_format_exact(buf, size, v);
                break;
        case CONFIG_TYPE_SIZE:
                format_size(v, buf, size);
                break;
        default:
                snprintf(buf, size, "%llu", (unsigned long long)v);
                break;
        }
}

/* @v is UINT64_MAX for a value too large to represent. */
static int check_range(const ConfigKey *k, const char *value, uint64_t v, char **ret_error)
{
        char lo[32], hi[32], q[QUOTE_BUF];
        bool bare;

        if (v == 0 && (k->flags & CONFIG_FLAG_ZERO_DISABLES)) {
                return 0;
        }
        if (v >= k->min && v <= k->max) {
                return 0;
        }
        format_number(k, k->min, lo, sizeof(lo));
        format_number(k, k->max, hi, sizeof(hi));
        bare = k->type == CONFIG_TYPE_DURATION && is_digit(value[strlen(value) - 1]) &&
               strcmp(value, "0") != 0;
        /* Unquoted: it parsed as a number, or nearly (digits too many to convert). */
        return fail(ret_error, "%s: %s is out of range %s..%s%s%s", k->name,
                    escape(value, q, false), lo, hi,
                    (k->flags & CONFIG_FLAG_ZERO_DISABLES) ? " (or 0 to disable)" : "",
                    bare ? " (a bare number means seconds)" : "");
}

static int apply_number(Config *c, const ConfigKey *k, const char *value, char **ret_error)
{
        char q[QUOTE_BUF];
        uint64_t v;
        int r;

        switch (k->type) {
        case CONFIG_TYPE_UINT:
                r = parse_uint(value, &v);
                if (r == -EINVAL) {
                        return fail(ret_error, "%s: %s is not a number", k->name, quote(value, q));
                }
                break;
        case CONFIG_TYPE_DURATION:
                r = duration_parse(value, NSEC_PER_SEC, &v);
                if (r == -EINVAL) {
                        return fail(ret_error,
                                    "%s: %s is not a duration (use e.g. 500ns, 20us, 1ms, 5min)",
                                    k->name, quote(value, q));
                }
                break;
        case CONFIG_TYPE_SIZE:
                r = parse_size(value, &v);
                if (r == -EINVAL) {
                        return fail(ret_error, "%s: %s is not a size (use e.g. 4096, 64KiB, 1MiB)",
                                    k->name, quote(value, q));
                }
                break;
        default:
                abort();
        }
        if (r == -ERANGE) {
                v = UINT64_MAX;
        }
        r = check_range(k, value, v, ret_error);
        if (r < 0) {
                return r;
        }
        if (k->type == CONFIG_TYPE_UINT) {
                *(unsigned *)field_ptr(c, k) = (unsigned)v;
        } else {
                *(uint64_t *)field_ptr(c, k) = v;
        }
        return 0;
}

static int apply_enum(Config *c, const ConfigKey *k, const char *value, char **ret_error)
{
        char q[QUOTE_BUF], list[256];
        size_t n = 0;

        for (const ConfigEnumName *e = k->enum_names; e->name; e++) {
                if (strcmp(e->name, value) == 0) {
                        *(int *)field_ptr(c, k) = e->value;
                        return 0;
                }
        }
        list[0] = '\0';
        for (const ConfigEnumName *e = k->enum_names; e->name; e++) {
                int m = snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "", e->name);

                if (m < 0 || (size_t)m >= sizeof(list) - n) {
                        break;
                }
                n += (size_t)m;
        }
        return fail(ret_error, "%s: %s is not one of %s", k->name, quote(value, q), list);
}

static int apply_path(Config *c, const ConfigKey *k, const char *value, char **ret_error)
{
        const char *suffix = path_suffix(k);
        char q[QUOTE_BUF];
        size_t len = strlen(value);

        if (len == 0) {
                /* An empty default means "not set": the daemon decides at run time. */
                memset(field_ptr(c, k), 0, k->size);
                return 0;
        }
        if (value[0] != '/') {
                return fail(ret_error, "%s: %s is not an absolute path", k->name, quote(value, q));
        }
        if ((k->flags & FLAG_PATH_FILE) && value[len - 1] == '/') {
                return fail(ret_error, "%s: %s names a directory, not a file", k->name,
                            quote(value, q));
        }
        /* "/srv/x/" and "/srv/x" are the same directory; keep one spelling so that paths can
         * be joined with "/" and compared. */
        while (len > 1 && value[len - 1] == '/') {
                len--;
        }
        /* Values are trimmed when read, so a path ending in white space could never be written
         * back as it is ("/srv/x /" would come back as "/srv/x"). */
        if (value[len - 1] == ' ' || value[len - 1] == '\t') {
                return fail(ret_error, "%s: %s ends in white space", k->name, quote(value, q));
        }
        if ((k->flags & FLAG_PATH_PREFIX) && len == 1) {
                len = 0;
        }
        if (len >= k->size) {
                return fail(ret_error, "%s: path is too long (%zu bytes, at most %zu)", k->name,
                            len, k->size - 1);
        }
        /* "/dir/.prom" has the suffix but no name before it: surely a slip. */
        if (suffix && (len - (size_t)(strrchr(value, '/') + 1 - value) <= strlen(suffix) ||
                       strcmp(value + len - strlen(suffix), suffix) != 0)) {
                return fail(ret_error, "%s: %s is not a file name ending in %s", k->name,
                            quote(value, q), suffix);
        }
        memset(field_ptr(c, k), 0, k->size);
        memcpy(field_ptr(c, k), value, len);
        return 0;
}

/* The names useradd and systemd-sysusers accept, in the relaxed form most distributions use. */
static bool group_name_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || !(is_alpha(s[0]) || s[0] == '_')) {
                return false;
        }
        for (size_t i = 1; i < n; i++) {
                char ch = s[i];

                if (is_alpha(ch) || is_digit(ch) || ch == '_' || ch == '-' || ch == '.') {
                        continue;
                }
                if (ch == '$' && i == n - 1) {
                        continue;
                }
                return false;
        }
        return true;
}

static int apply_group(Config *c, const ConfigKey *k, const char *value, char **ret_error)
{
        char q[QUOTE_BUF];
        size_t len = strlen(value);

        if (len != 0 && !group_name_valid(value)) {
                return fail(ret_error, "%s: %s is not a valid group name", k->name,
                            quote(value, q));
        }
        if (len >= k->size) {
                return fail(ret_error, "%s: group name is too long (%zu bytes, at most %zu)",
                            k->name, len, k->size - 1);
        }
        memset(field_ptr(c, k), 0, k->size);
        memcpy(field_ptr(c, k), value, len);
        return 0;
}

/* Validates @value for @k and stores it in @c; an empty value restores the default. Writes
 * nothing to @c on failure. */
static int apply_value(Config *c, const ConfigKey *k, const char *value, char **ret_error)
{
        char q[QUOTE_BUF];
        cpu_set_t set;
        int r;

        for (const char *p = value; *p; p++) {
                if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                        return fail(ret_error, "%s: %s contains a control character", k->name,
                                    quote(value, q));
                }
        }
        if (*value == '\0') {
                value = k->default_value;
        }
        switch (k->type) {
        case CONFIG_TYPE_UINT:
        case CONFIG_TYPE_DURATION:
        case CONFIG_TYPE_SIZE:
                return apply_number(c, k, value, ret_error);
        case CONFIG_TYPE_CPULIST:
                r = cpulist_parse(value, &set);
                if (r == -ERANGE) {
                        return fail(ret_error, "%s: %s names a CPU above %d", k->name,
                                    quote(value, q), CPU_SETSIZE - 1);
                }
                if (r < 0) {
                        return fail(ret_error, "%s: %s is not a CPU list (use e.g. 2-5,8 or 1-7:2)",
                                    k->name, quote(value, q));
                }
                *(cpu_set_t *)field_ptr(c, k) = set;
                return 0;
        case CONFIG_TYPE_ENUM:
                return apply_enum(c, k, value, ret_error);
        case CONFIG_TYPE_PATH:
                return apply_path(c, k, value, ret_error);
        case CONFIG_TYPE_GROUP:
                return apply_group(c, k, value, ret_error);
        }
        abort();
}

void config_init_defaults(Config *c)
{
        memset(c, 0, sizeof(*c));
        for (size_t i = 0; i < N_KEYS; i++) {
                int r = apply_value(c, &keys[i], keys[i].default_value, NULL);

                /* A default that does not pass its own key's checks is a bug in the table. */
                assert(r == 0);
                (void)r;
        }
}

int config_set(Config *c, const char *section, const char *key, const char *value, char **ret_error)
{
        const ConfigKey *k;
        char *copy;
        int r;

        if (ret_error) {
                *ret_error = NULL;
        }
        k = config_key_find(section, key);
        if (!k) {
                char q[QUOTE_BUF];
                int r2 = fail(ret_error, "unknown key %s in [%s]", quote(key, q), section);

                return r2 == -ENOMEM ? -ENOMEM : -ENOENT;
        }
        copy = strdup(value);
        if (!copy) {
                return -ENOMEM;
        }
        r = apply_value(c, k, strip(copy), ret_error);
        free(copy);
        return r;
}

/* --- Rules between keys --- */

/* Pairs of durations in one section where the first may not exceed the second. */
static const struct {
        const char *section, *shorter, *longer;
} order_rules[] = {
        {"history", "fine_retention", "coarse_retention"},
};

/* Where a key was last set: file is an index into Loader.files plus one (0: the default),
 * seq orders all assignments of one load. */
typedef struct Origin {
        size_t file;
        unsigned line;
        uint64_t seq;
} Origin;

/* Checks the rules. A broken rule is reported on the key of the two that was set last
 * according to @origins (indexed like keys[]; NULL: the longer one), which is stored in
 * @ret_key if that is not NULL: that is the line the operator has just changed. */
static int check_rules(const Config *c, const Origin *origins, const ConfigKey **ret_key,
                       char **ret_error)
{
        for (size_t i = 0; i < ELEMENTSOF(order_rules); i++) {
                const ConfigKey *a =
                        config_key_find(order_rules[i].section, order_rules[i].shorter);
                const ConfigKey *b = config_key_find(order_rules[i].section, order_rules[i].longer);
                char va[32], vb[32];
                uint64_t na, nb;

                assert(a && b && a->type == CONFIG_TYPE_DURATION &&
                       b->type == CONFIG_TYPE_DURATION);
                na = *(const uint64_t *)field_cptr(c, a);
                nb = *(const uint64_t *)field_cptr(c, b);
                if (na <= nb) {
                        continue;
                }
                duration_format_exact(va, sizeof(va), na);
                duration_format_exact(vb, sizeof(vb), nb);
                if (origins && origins[a - keys].seq > origins[b - keys].seq) {
                        if (ret_key) {
                                *ret_key = a;
                        }
                        return fail(ret_error, "%s: %s is longer than %s (%s)", a->name, va,
                                    b->name, vb);
                }
                if (ret_key) {
                        *ret_key = b;
                }
                return fail(ret_error, "%s: %s is shorter than %s (%s)", b->name, vb, a->name, va);
        }
        return 0;
}

int config_check(const Config *c, char **ret_error)
{
        if (ret_error) {
                *ret_error = NULL;
        }
        return check_rules(c, NULL, NULL, ret_error);
}

/* --- Loading files --- */

typedef struct Loader {
        Config config;
        ConfigDiag *diag;
        size_t n_errors;
        bool oom;
        char **files;
        size_t n_files;
        Origin origins[N_KEYS];
        uint64_t seq;
} Loader;

typedef enum SectionState {
        SECTION_NONE,    /* before the first header */
        SECTION_KNOWN,   /* keys are looked up in Loader.section */
        SECTION_IGNORED, /* unknown or broken header: its keys were already warned about */
} SectionState;

static void loader_add(Loader *l, ConfigSeverity severity, const char *file, unsigned line,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void loader_add(Loader *l, ConfigSeverity severity, const char *file, unsigned line,
                       const char *fmt, ...)
{
        ConfigMessage *messages;
        _cleanup_free_ char *what = NULL, *text = NULL;
        va_list ap;
        int r;

        if (severity == CONFIG_SEVERITY_ERROR) {
                l->n_errors++;
        }
        if (!l->diag) {
                return;
        }
        va_start(ap, fmt);
        r = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (r < 0) {
                what = NULL; /* undefined after a failure */
                l->oom = true;
                return;
        }
        if (!file) {
                text = TAKE_PTR(what);
        } else if ((line ? asprintf(&text, "%s:%u: %s", file, line, what)
                         : asprintf(&text, "%s: %s", file, what)) < 0) {
                text = NULL; /* undefined after a failure */
                l->oom = true;
                return;
        }
        messages = reallocarray(l->diag->messages, l->diag->n_messages + 1, sizeof(*messages));
        if (!messages) {
                l->oom = true;
                return;
        }
        l->diag->messages = messages;
        messages[l->diag->n_messages++] =
                (ConfigMessage){.severity = severity, .text = TAKE_PTR(text)};
        if (severity == CONFIG_SEVERITY_ERROR) {
                l->diag->n_errors++;
        }
}

static unsigned edit_distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        unsigned row[64];

        if (la >= ELEMENTSOF(row) || lb >= ELEMENTSOF(row)) {
                return UINT_MAX;
        }
        for (size_t j = 0; j <= lb; j++) {
                row[j] = (unsigned)j;
        }
        for (size_t i = 1; i <= la; i++) {
                unsigned diag = row[0];

                row[0] = (unsigned)i;
                for (size_t j = 1; j <= lb; j++) {
                        unsigned up = row[j];
                        unsigned best = diag + (a[i - 1] != b[j - 1]);

                        if (up + 1 < best) {
                                best = up + 1;
                        }
                        if (row[j - 1] + 1 < best) {
                                best = row[j - 1] + 1;
                        }
                        row[j] = best;
                        diag = up;
                }
        }
        return row[lb];
}

/* A hint for an unknown key: the section it belongs in, or a key of @section it is a typo of. */
static void unknown_key_hint(const char *section, const char *key, char *buf, size_t size)
{
        const ConfigKey *best = NULL;
        unsigned best_distance = 3; /* more than two edits away is no longer a typo */

        buf[0] = '\0';
        for (size_t i = 0; i < N_KEYS; i++) {
                if (strcmp(keys[i].name, key) == 0) {
                        snprintf(buf, size, " (it belongs in [%s])", keys[i].section);
                        return;
                }
        }
        for (size_t i = 0; i < N_KEYS; i++) {
                unsigned d;

                if (strcmp(keys[i].section, section) != 0) {
                        continue;
                }
                d = edit_distance(key, keys[i].name);
                if (d < best_distance) {
                        best = &keys[i];
                        best_distance = d;
                }
        }
        if (best) {
                snprintf(buf, size, " (did you mean %s?)", best->name);
        }
}

static void parse_assignment(Loader *l, size_t file, const char *path, unsigned line,
                             SectionState state, const char *section, char *text)
{
        char q[QUOTE_BUF], hint[128], *eq, *key, *value;
        _cleanup_free_ char *error = NULL;
        const ConfigKey *k;
        Origin *o;
        int r;

        eq = strchr(text, '=');
        if (!eq) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line,
                           "expected \"key = value\", found %s", quote(text, q));
                return;
        }
        *eq = '\0';
        key = strip(text);
        value = strip(eq + 1);
        if (*key == '\0') {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line, "missing key before \"=\"");
                return;
        }
        if (state == SECTION_IGNORED) {
                return;
        }
        if (state == SECTION_NONE) {
                unknown_key_hint("", key, hint, sizeof(hint));
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line, "%s is outside of any section%s",
                           quote(key, q),
                           *hint ? hint : " (start the file with a header such as [probe])");
                return;
        }
        k = config_key_find(section, key);
        if (!k) {
                unknown_key_hint(section, key, hint, sizeof(hint));
                loader_add(l, CONFIG_SEVERITY_WARNING, path, line,
                           "unknown key %s in [%s], ignored%s", quote(key, q), section, hint);
                return;
        }
        r = apply_value(&l->config, k, value, &error);
        if (r == -ENOMEM) {
                l->oom = true;
                return;
        }
        if (r < 0) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line, "%s", error);
                return;
        }
        o = &l->origins[k - keys];
        if (o->file == file) {
                loader_add(l, CONFIG_SEVERITY_WARNING, path, line,
                           "%s is set again (before at line %u); the last value wins", k->name,
                           o->line);
        }
        *o = (Origin){.file = file, .line = line, .seq = ++l->seq};
}

static void parse_line(Loader *l, size_t file, const char *path, unsigned line, char *text,
                       size_t len, SectionState *state, char *section, size_t section_size)
{
        char q[QUOTE_BUF], *s, *end, *name, *rest;

        if (len > LINE_MAX_BYTES) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line,
                           "line is too long (%zu bytes, at most %d)", len, LINE_MAX_BYTES);
                return;
        }
        if (strlen(text) != len) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line, "line contains a NUL byte");
                return;
        }
        /* Some editors start a UTF-8 file with a byte order mark. */
        if (line == 1 && strncmp(text, "\xef\xbb\xbf", 3) == 0) {
                text += 3;
        }
        s = strip(text);
        if (*s == '\0' || *s == '#' || *s == ';') {
                return;
        }
        if (*s != '[') {
                parse_assignment(l, file, path, line, *state, section, s);
                return;
        }

        /* Until a good header follows, the keys after a bad one belong nowhere. */
        *state = SECTION_IGNORED;
        end = strchr(s, ']');
        if (!end) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line, "unterminated section header %s",
                           quote(s, q));
                return;
        }
        *end = '\0';
        name = strip(s + 1);
        rest = strip(end + 1);
        if (*rest != '\0') {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line,
                           "unexpected text %s after section header", quote(rest, q));
                return;
        }
        if (*name == '\0') {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, line, "empty section name");
                return;
        }
        if (!section_known(name) || strlen(name) >= section_size) {
                loader_add(l, CONFIG_SEVERITY_WARNING, path, line,
                           "unknown section [%s], ignored with its keys", escape(name, q, false));
                return;
        }
        strcpy(section, name);
        *state = SECTION_KNOWN;
}

/* Returns the index of @path in l->files plus one, or 0 when out of memory. */
static size_t loader_add_file(Loader *l, const char *path)
{
        _cleanup_free_ char *copy = strdup(path);
        char **files;

        if (!copy) {
                return 0;
        }
        files = reallocarray(l->files, l->n_files + 1, sizeof(*files));
        if (!files) {
                return 0;
        }
        l->files = files;
        files[l->n_files++] = TAKE_PTR(copy);
        return l->n_files;
}

static void load_file(Loader *l, const char *path)
{
        SectionState state = SECTION_NONE;
        char section[32] = "", *text = NULL;
        unsigned line = 0;
        size_t cap = 0, file;
        struct stat st;
        ssize_t n;
        FILE *f;
        int fd;

        /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer, and a reload would
         * block the event loop with it. On a regular file it changes nothing. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        f = fd < 0 ? NULL : fdopen(fd, "re");
        if (!f) {
                if (errno != ENOENT) {
                        loader_add(l, CONFIG_SEVERITY_ERROR, path, 0, "cannot open: %s",
                                   strerror(errno));
                }
                if (fd >= 0) {
                        close(fd);
                }
                return;
        }
        if (fstat(fileno(f), &st) < 0) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, 0, "cannot read: %s", strerror(errno));
                fclose(f);
                return;
        }
        if (S_ISDIR(st.st_mode)) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, 0, "is a directory, not a file");
                fclose(f);
                return;
        }
        if (!S_ISREG(st.st_mode)) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, 0, "is not a regular file");
                fclose(f);
                return;
        }
        file = loader_add_file(l, path);
        if (file == 0) {
                l->oom = true;
                fclose(f);
                return;
        }
        errno = 0;
        while ((n = getline(&text, &cap, f)) >= 0) {
                parse_line(l, file, path, ++line, text, (size_t)n, &state, section,
                           sizeof(section));
                errno = 0;
        }
        if (ferror(f)) {
                loader_add(l, CONFIG_SEVERITY_ERROR, path, 0, "cannot read: %s",
                           strerror(errno ? errno : EIO));
        } else if (errno == ENOMEM) {
                l->oom = true;
        }
        free(text);
        fclose(f);
}

static int dropin_filter(const struct dirent *de)
{
        size_t n = strlen(de->d_name);

        /* Editors and package managers leave "x.conf~", ".x.conf.swp", "x.conf.dpkg-old"
         * next to the real files; only "*.conf" counts, hidden files never. */
        return de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".conf") == 0;
}

/* Plain byte order, whatever the locale: the order must not depend on who runs the daemon. */
static int dropin_compare(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

static void load_dropins(Loader *l, const char *dir)
{
        struct dirent **list;
        int n;

        n = scandir(dir, &list, dropin_filter, dropin_compare);
        if (n < 0) {
                if (errno == ENOMEM) {
                        l->oom = true;
                } else if (errno != ENOENT) {
                        loader_add(l, CONFIG_SEVERITY_ERROR, dir, 0,
                                   "cannot read drop-in directory: %s", strerror(errno));
                }
                return;
        }
        for (int i = 0; i < n; i++) {
                char *path;

                if (asprintf(&path, "%s/%s", dir, list[i]->d_name) < 0) {
                        l->oom = true;
                } else {
                        load_file(l, path);
                        free(path);
                }
                free(list[i]);
        }
        free(list);
}

int config_load(Config *c, const char *main_path, const char *dropin_dir, ConfigDiag *diag)
{
        Loader *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l) {
                return -ENOMEM;
        }
        config_init_defaults(&l->config);
        l->diag = diag;
        if (main_path) {
                load_file(l, main_path);
        }
        if (dropin_dir) {
                load_dropins(l, dropin_dir);
        }
        if (l->n_errors == 0 && !l->oom) {
                const ConfigKey *k = NULL;
                _cleanup_free_ char *error = NULL;

                r = check_rules(&l->config, l->origins, &k, &error);
                if (r == -ENOMEM) {
                        l->oom = true;
                } else if (r < 0) {
                        const Origin *o = &l->origins[k - keys];

                        loader_add(l, CONFIG_SEVERITY_ERROR, o->file ? l->files[o->file - 1] : NULL,
                                   o->line, "%s", error);
                }
        }

        r = l->oom ? -ENOMEM : l->n_errors > 0 ? -EINVAL : 0;
        if (r == 0) {
                *c = l->config;
        }
        for (size_t i = 0; i < l->n_files; i++) {
                free(l->files[i]);
        }
        free(l->files);
        free(l);
        return r;
}

/* --- Output --- */

int config_format_value(const Config *c, const ConfigKey *k, char *buf, size_t size)
{
        /* Large enough for every CPU of a cpu_set_t listed one by one, and for any path. */
        char tmp[CONFIG_PATH_MAX + 4096];
        const char *p = field_cptr(c, k);

        switch (k->type) {
        case CONFIG_TYPE_UINT:
                snprintf(tmp, sizeof(tmp), "%u", *(const unsigned *)p);
                break;
        case CONFIG_TYPE_DURATION:
        case CONFIG_TYPE_SIZE:
                format_number(k, *(const uint64_t *)p, tmp, sizeof(tmp));
                break;
        case CONFIG_TYPE_CPULIST:
                cpulist_format(tmp, sizeof(tmp), (const cpu_set_t *)p);
                break;
        case CONFIG_TYPE_ENUM: {
                const ConfigEnumName *e;

                for (e = k->enum_names; e->name; e++) {
                        if (e->value == *(const int *)p) {
                                break;
                        }
                }
                if (!e->name) {
                        return -EINVAL;
                }
                snprintf(tmp, sizeof(tmp), "%s", e->name);
                break;
        }
        case CONFIG_TYPE_PATH:
        case CONFIG_TYPE_GROUP:
                if (strnlen(p, k->size) >= k->size) {
                        return -EINVAL;
                }
                snprintf(tmp, sizeof(tmp), "%s", p);
                break;
        default:
                return -EINVAL;
        }
        if (strlen(tmp) >= size) {
                return -ENOBUFS;
        }
        strcpy(buf, tmp);
        return 0;
}

static bool value_equal(const Config *a, const Config *b, const ConfigKey *k)
{
        const void *pa = field_cptr(a, k), *pb = field_cptr(b, k);

        switch (k->type) {
        case CONFIG_TYPE_UINT:
                return *(const unsigned *)pa == *(const unsigned *)pb;
        case CONFIG_TYPE_DURATION:
        case CONFIG_TYPE_SIZE:
                return *(const uint64_t *)pa == *(const uint64_t *)pb;
        case CONFIG_TYPE_CPULIST:
                return CPU_EQUAL((const cpu_set_t *)pa, (const cpu_set_t *)pb);
        case CONFIG_TYPE_ENUM:
                return *(const int *)pa == *(const int *)pb;
        case CONFIG_TYPE_PATH:
        case CONFIG_TYPE_GROUP:
                return strncmp(pa, pb, k->size) == 0;
        }
        abort();
}

bool config_equal(const Config *a, const Config *b, const char *section)
{
        for (size_t i = 0; i < N_KEYS; i++) {
                if (section && strcmp(keys[i].section, section) != 0) {
                        continue;
                }
                if (!value_equal(a, b, &keys[i])) {
                        return false;
                }
        }
        return true;
}

int config_dump(const Config *c, FILE *f)
{
        const char *section = NULL;
        char buf[CONFIG_PATH_MAX + 4096];

        for (size_t i = 0; i < N_KEYS; i++) {
                int r = config_format_value(c, &keys[i], buf, sizeof(buf));

                if (r < 0) {
                        return r;
                }
                if (!section || strcmp(section, keys[i].section) != 0) {
                        section = keys[i].section;
                        fprintf(f, "%s[%s]\n", i > 0 ? "\n" : "", section);
                }
                fprintf(f, "%s =%s%s\n", keys[i].name, *buf ? " " : "", buf);
        }
        if (fflush(f) != 0 || ferror(f)) {
                return -EIO;
        }
        return 0;
}

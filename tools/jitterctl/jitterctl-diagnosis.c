#include "jitterctl-diagnosis.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "jitterctl-format.h"
#include "json-read.h"
#include "util.h"

/* The kinds GetCauses' totals stand for besides its named causes. */
#define KIND_UNEXPLAINED "unexplained"
#define KIND_OTHER "other"
#define KIND_NO_RECORD "no_record"
#define KIND_UNTRACED "untraced"

/* An integer of a reply that must be a count or a time: missing, negative or not an integer
 * reads as 0 and returns false. */
static bool get_u64(json_t *o, const char *key, uint64_t *ret)
{
        if (json_read_u64(o, key, ret) < 0) {
                *ret = 0;
                return false;
        }
        return true;
}

/* Copies the count or time @key of @from into @to, null when @from lacks it (a daemon
 * that does not read it). */
static int copy_u64(json_t *to, json_t *from, const char *key)
{
        uint64_t v;

        return json_object_set_new(
                to, key, get_u64(from, key, &v) ? json_integer((json_int_t)v) : json_null());
}

/* The figures of one CPU, from its GetCauses entry @c and its GetStats entry @s (or NULL). */
static json_t *cpu_summary(json_int_t cpu, json_t *c, json_t *s)
{
        uint64_t window_ns = 0, count = 0, kept, ns, lost_ns = 0, trace_lost;
        double available = -1;
        bool have_stats = s && get_u64(s, "duration_ns", &window_ns);
        json_t *o;

        get_u64(c, "interruptions", &kept);
        get_u64(c, "interruptions_ns", &ns);
        get_u64(c, "trace_lost", &trace_lost);
        if (s) {
                get_u64(json_object_get(s, "interruptions"), "count", &count);
                get_u64(s, "lost_ns", &lost_ns);
                json_read_number(s, "cpu_available_pct", &available);
        }
        o = json_pack("{s:I, s:o, s:o, s:I, s:I, s:o, s:o, s:I}", "cpu", cpu, "window_ns",
                      have_stats ? json_integer((json_int_t)window_ns) : json_null(),
                      "interruptions", s ? json_integer((json_int_t)count) : json_null(), "kept",
                      (json_int_t)kept, "interruptions_ns", (json_int_t)ns, "lost_ns",
                      s ? json_integer((json_int_t)lost_ns) : json_null(), "cpu_available_pct",
                      available >= 0 ? json_real(available) : json_null(), "trace_lost",
                      (json_int_t)trace_lost);
        /* What the daemon reads beside the time without a record, where it has them: the
         * trace's lost time, the CPU's steal time and SMI count. */
        if (o && (copy_u64(o, c, "trace_lost_ns") < 0 || copy_u64(o, c, "steal_ns") < 0 ||
                  copy_u64(o, c, "smi") < 0)) {
                json_decref(o);
                o = NULL;
        }
        return o;
}

/* Adds @ns (in @count interruptions) of cause (@kind, @name) on @cpu to @by_key, @overhead_ns
 * of it its entry and exit. */
static int entry_add(json_t *by_key, const char *kind, const char *name, json_int_t cpu,
                     uint64_t ns, uint64_t overhead_ns, uint64_t count)
{
        char key[256];
        json_t *e;

        if (ns == 0) {
                return 0;
        }
        snprintf(key, sizeof(key), "%s\x1f%s", kind, name);
        e = json_object_get(by_key, key);
        if (!e) {
                e = json_pack("{s:s, s:s, s:[], s:I, s:I, s:I}", "kind", kind, "name", name, "cpus",
                              "ns", (json_int_t)0, "overhead_ns", (json_int_t)0, "count",
                              (json_int_t)0);
                if (!e || json_object_set_new(by_key, key, e) < 0) {
                        return -ENOMEM;
                }
        }
        if (json_array_append_new(json_object_get(e, "cpus"), json_integer(cpu)) < 0 ||
            json_object_set_new(e, "ns",
                                json_integer(json_integer_value(json_object_get(e, "ns")) +
                                             (json_int_t)ns)) < 0 ||
            json_object_set_new(e, "overhead_ns",
                                json_integer(json_integer_value(json_object_get(e, "overhead_ns")) +
                                             (json_int_t)overhead_ns)) < 0 ||
            json_object_set_new(e, "count",
                                json_integer(json_integer_value(json_object_get(e, "count")) +
                                             (json_int_t)count)) < 0) {
                return -ENOMEM;
        }
        return 0;
}

/* The causes of one CPU's GetCauses entry @c into @by_key: the named ones (with their
 * overhead where given), time without a kernel record, the unexplained rest, the causes past
 * those kept per interruption, and interruptions without a trace. A daemon that accounts for
 * every nanosecond gives traced_ns, the time those parts add up to (explained_ns leaves out
 * the time without a record there); an older one gives explained_ns only, with no overhead,
 * no_record or unexplained parts of its own, and each missing part counts as none. */
static int collect_cpu(json_t *by_key, json_int_t cpu, json_t *c)
{
        uint64_t v, ns, count, traced, total;
        bool have_traced;
        json_t *cause;
        size_t i;
        int r = 0;

        json_array_foreach(json_object_get(c, "causes"), i, cause)
        {
                const char *kind = json_read_string_or(cause, "kind", NULL);
                const char *name = json_read_string_or(cause, "name", NULL);

                if (!kind || !name || !get_u64(cause, "ns", &ns)) {
                        continue;
                }
                get_u64(cause, "overhead_ns", &v);
                get_u64(cause, "count", &count);
                r = entry_add(by_key, kind, name, cpu, ns + v, v, count);
                if (r < 0) {
                        return r;
                }
        }
        if (get_u64(c, "no_record_ns", &v)) {
                get_u64(c, "no_record", &count);
                r = entry_add(by_key, KIND_NO_RECORD, "", cpu, v, 0, count);
        }
        if (r == 0 && get_u64(c, "unexplained_ns", &v)) {
                r = entry_add(by_key, KIND_UNEXPLAINED, "", cpu, v, 0, 0);
        }
        if (r == 0 && get_u64(c, "other_ns", &v)) {
                r = entry_add(by_key, KIND_OTHER, "", cpu, v, 0, 0);
        }
        have_traced = get_u64(c, "traced_ns", &traced);
        if (have_traced) {
                get_u64(c, "traced", &v);
        } else if (get_u64(c, "explained_ns", &traced)) {
                have_traced = true;
                get_u64(c, "explained", &v);
        }
        if (r == 0 && have_traced && get_u64(c, "interruptions_ns", &total) && total > traced) {
                get_u64(c, "interruptions", &count);
                r = entry_add(by_key, KIND_UNTRACED, "", cpu, total - traced, 0,
                              count > v ? count - v : 0);
        }
        return r;
}

/* What the kept events tell of the causes: for each task, the start of the newest
 * interruption it took part in (@last_seen, "comm:pid" -> CLOCK_MONOTONIC ns); for each work
 * item, the kworker seen in the newest interruption with it (@workers). */
static int event_facts(json_t *events, json_t *last_seen, json_t *workers)
{
        json_t *ev, *c;
        size_t i, j;

        json_array_foreach(json_object_get(events, "events"), i, ev)
        {
                const char *kworker = NULL;
                uint64_t start;

                if (!get_u64(ev, "start_ns", &start)) {
                        continue;
                }
                json_array_foreach(json_object_get(ev, "causes"), j, c)
                {
                        const char *name = json_read_string_or(c, "name", "");

                        if (strcmp(json_read_string_or(c, "kind", ""), "task") == 0 &&
                            strncmp(name, "kworker/", strlen("kworker/")) == 0) {
                                kworker = name;
                        }
                }
                json_array_foreach(json_object_get(ev, "causes"), j, c)
                {
                        const char *kind = json_read_string_or(c, "kind", "");
                        const char *name = json_read_string_or(c, "name", NULL);
                        uint64_t seen = 0;

                        if (!name) {
                                continue;
                        }
                        get_u64(last_seen, name, &seen);
                        if (strcmp(kind, "task") == 0 && start > seen &&
                            json_object_set_new(last_seen, name, json_integer((json_int_t)start)) <
                                    0) {
                                return -ENOMEM;
                        }
                        if (strcmp(kind, "work") == 0 && kworker &&
                            json_object_set_new(workers, name, json_string(kworker)) < 0) {
                                return -ENOMEM;
                        }
                }
        }
        return 0;
}

/* The daemon's finding of @check for @cpu (or the machine-wide one), as {"severity", "seen"}. */
static json_t *finding_for(json_t *findings, const char *check, json_int_t cpu)
{
        json_t *f;
        size_t i;

        if (!check) {
                return json_null();
        }
        json_array_foreach(json_object_get(findings, "findings"), i, f)
        {
                json_t *c = json_object_get(f, "cpu");

                if (strcmp(json_read_string_or(f, "check", ""), check) != 0 ||
                    !(json_is_null(c) || (json_is_integer(c) && json_integer_value(c) == cpu))) {
                        continue;
                }
                return json_pack("{s:s, s:s}", "severity", json_read_string_or(f, "severity", "?"),
                                 "seen", json_read_string_or(f, "seen", ""));
        }
        return json_null();
}

/* Interruptions without a trace record: not a cause the audit knows. */
static json_t *untraced_remedy(void)
{
        return json_pack("{s:s, s:n, s:n, s:s, s:n, s:n, s:n, s:s, s:n}", "what", "not traced",
                         "check", "setting", "when", "none", "command", "persist", "revert", "note",
                         "Interruptions the trace has no records for (from before it recorded, "
                         "or with their records lost): their causes are not known.",
                         "ask_host");
}

/* @ns CLOCK_MONOTONIC on the host, as CLOCK_BOOTTIME; 0 stays unknown. */
static uint64_t boottime(const DiagnosisInput *in, uint64_t ns)
{
        return ns ? (uint64_t)((int64_t)ns + in->boot_minus_mono_ns) : 0;
}

/* Joins the remedy of entry @e (its kind, name and CPUs) into it, with the daemon's finding. */
static int entry_remedy(const DiagnosisInput *in, json_t *e, json_t *last_seen, json_t *workers,
                        uint64_t window_start_ns)
{
        const char *kind = json_read_string_or(e, "kind", ""),
                   *name = json_read_string_or(e, "name", "");
        json_t *remedy = NULL, *cpu_json;
        AuditCause cause = {.kind = kind, .name = name};
        json_int_t first = -1;
        uint64_t seen = 0;
        size_t i;
        int r;

        CPU_ZERO(&cause.cpus);
        json_array_foreach(json_object_get(e, "cpus"), i, cpu_json)
        {
                json_int_t cpu = json_integer_value(cpu_json);

                if (cpu >= 0 && cpu < CPU_SETSIZE) {
                        CPU_SET((int)cpu, &cause.cpus);
                        first = first < 0 ? cpu : first;
                }
        }
        get_u64(last_seen, name, &seen);
        cause.last_seen_ns = boottime(in, seen);
        cause.window_start_ns = boottime(in, window_start_ns);
        cause.worker = json_read_string_or(workers, name, NULL);
        if (strcmp(kind, KIND_UNTRACED) == 0) {
                remedy = untraced_remedy();
                r = remedy ? 0 : -ENOMEM;
        } else {
                r = audit_remedy(in->host, &cause, &remedy);
        }
        if (r == -EINVAL) {
                /* A kind or name the audit cannot read: a cause all the same. */
                remedy = json_pack("{s:s++, s:s, s:s}", "what", kind, " ", name, "when", "none",
                                   "note", "No fix is known for it.");
                r = remedy ? 0 : -ENOMEM;
        }
        if (r < 0) {
                return r;
        }
        r = json_object_update(e, remedy) < 0 ||
                            json_object_set_new(
                                    e, "finding",
                                    finding_for(in->findings,
                                                json_read_string_or(remedy, "check", NULL),
                                                first)) < 0
                    ? -ENOMEM
                    : 0;
        json_decref(remedy);
        return r;
}

static int entry_compare(const void *x, const void *y)
{
        json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
        json_int_t na = json_integer_value(json_object_get(a, "ns"));
        json_int_t nb = json_integer_value(json_object_get(b, "ns"));
        int c;

        if (na != nb) {
                return na > nb ? -1 : 1;
        }
        c = strcmp(json_read_string_or(a, "kind", ""), json_read_string_or(b, "kind", ""));
        return c ? c
                 : strcmp(json_read_string_or(a, "name", ""), json_read_string_or(b, "name", ""));
}

/* The window's length summed over the CPUs @e took (from "cpus" of the diagnosis @d); 0 when
 * one is not known. */
static uint64_t entry_window_ns(json_t *d, json_t *e)
{
        uint64_t sum = 0, w;
        json_t *cpu;
        size_t i;

        json_array_foreach(json_object_get(e, "cpus"), i, cpu)
        {
                if (!get_u64(json_cpu_entry(d, json_integer_value(cpu)), "window_ns", &w) ||
                    w == 0) {
                        return 0;
                }
                sum += w;
        }
        return sum;
}

/* @key ("steal_ns", "smi") of the CPUs @e took (from "cpus" of the diagnosis @d), summed;
 * null when one of them does not have it. */
static json_t *entry_cpus_sum(json_t *d, json_t *e, const char *key)
{
        uint64_t sum = 0, v;
        json_t *cpu;
        size_t i;

        json_array_foreach(json_object_get(e, "cpus"), i, cpu)
        {
                if (!get_u64(json_cpu_entry(d, json_integer_value(cpu)), key, &v)) {
                        return json_null();
                }
                sum += v;
        }
        return json_integer((json_int_t)sum);
}

/* Beside the time without a kernel record, what tells who took it: the steal time the host
 * reports on those CPUs and their SMI count over the window. */
static int entry_host_figures(json_t *d, json_t *e)
{
        if (strcmp(json_read_string_or(e, "kind", ""), KIND_NO_RECORD) != 0) {
                return 0;
        }
        return json_object_set_new(e, "steal_ns", entry_cpus_sum(d, e, "steal_ns")) < 0 ||
                               json_object_set_new(e, "smi", entry_cpus_sum(d, e, "smi")) < 0
                       ? -ENOMEM
                       : 0;
}

/* Ranks the entries of @by_key into the "causes" of @d, with their shares and gains. */
static int rank_entries(json_t *d, json_t *by_key, uint64_t total_ns)
{
        _cleanup_free_ json_t **sorted = calloc(json_object_size(by_key) + 1, sizeof(*sorted));
        json_t *causes = json_object_get(d, "causes"), *e;
        const char *key;
        size_t n = 0;

        if (!sorted) {
                return -ENOMEM;
        }
        json_object_foreach(by_key, key, e)
        {
                sorted[n++] = e;
        }
        qsort(sorted, n, sizeof(*sorted), entry_compare);
        for (size_t i = 0; i < n; i++) {
                double ns = (double)json_integer_value(json_object_get(sorted[i], "ns"));
                uint64_t window_ns = entry_window_ns(d, sorted[i]);

                if (json_object_set_new(sorted[i], "rank", json_integer((json_int_t)i + 1)) < 0 ||
                    json_object_set_new(sorted[i], "share",
                                        json_real(total_ns ? ns / (double)total_ns : 0)) < 0 ||
                    json_object_set_new(sorted[i], "gain_pct",
                                        window_ns ? json_real(100.0 * ns / (double)window_ns)
                                                  : json_null()) < 0 ||
                    json_object_set_new(sorted[i], "ns_per_s",
                                        window_ns ? json_real(1e9 * ns / (double)window_ns)
                                                  : json_null()) < 0 ||
                    json_array_append(causes, sorted[i]) < 0) {
                        return -ENOMEM;
                }
        }
        return 0;
}

/* The housekeeping CPUs of the host, as a list, or null. */
static json_t *housekeeping_json(Audit *host)
{
        char buf[1024];
        cpu_set_t hk;

        if (audit_housekeeping(host, &hk) < 0) {
                return json_null();
        }
        return json_string(cpulist_format(buf, sizeof(buf), &hk));
}

/* Reads each CPU of the replies into @d's "cpus" and @by_key; the window's earliest start and
 * the interruptions' time of all CPUs into the rest. */
static int read_cpus(const DiagnosisInput *in, json_t *d, json_t *by_key, uint64_t *ret_start,
                     uint64_t *ret_total)
{
        uint64_t v;
        json_t *c;
        size_t i;

        *ret_start = *ret_total = 0;
        json_array_foreach(json_object_get(in->causes, "cpus"), i, c)
        {
                json_t *cpu = json_object_get(c, "cpu");
                json_int_t n = json_integer_value(cpu);

                if (!json_is_integer(cpu) || n < 0 || n >= CPU_SETSIZE) {
                        continue;
                }
                if (json_array_append_new(json_object_get(d, "cpus"),
                                          cpu_summary(n, c, json_cpu_entry(in->stats, n))) < 0 ||
                    collect_cpu(by_key, n, c) < 0) {
                        return -ENOMEM;
                }
                get_u64(c, "interruptions_ns", &v);
                *ret_total += v;
                if (get_u64(c, "since_ns", &v) && v > 0 && (*ret_start == 0 || v < *ret_start)) {
                        *ret_start = v;
                }
        }
        return 0;
}

int diagnosis_build(const DiagnosisInput *in, json_t **ret)
{
        json_auto_t *d = NULL, *by_key = json_object(), *last_seen = json_object(),
                    *workers = json_object();
        uint64_t total_ns, window_start_ns;
        const char *key;
        json_t *e;
        int r;

        if (!in || !json_is_array(json_object_get(in->causes, "cpus")) || !in->host || !ret) {
                return -EINVAL;
        }
        d = json_pack("{s:s, s:s, s:o, s:[], s:[]}", "window", in->window ? in->window : "",
                      "trace", json_read_string_or(in->causes, "trace", "?"), "housekeeping",
                      housekeeping_json(in->host), "cpus", "causes");
        if (!d || !by_key || !last_seen || !workers ||
            read_cpus(in, d, by_key, &window_start_ns, &total_ns) < 0 ||
            event_facts(in->events, last_seen, workers) < 0) {
                return -ENOMEM;
        }
        json_object_foreach(by_key, key, e)
        {
                r = entry_remedy(in, e, last_seen, workers, window_start_ns);
                if (r == 0) {
                        r = entry_host_figures(d, e);
                }
                if (r < 0) {
                        return r;
                }
        }
        if (json_object_set_new(d, "interruptions_ns", json_integer((json_int_t)total_ns)) < 0) {
                return -ENOMEM;
        }
        r = rank_entries(d, by_key, total_ns);
        if (r < 0) {
                return r;
        }
        *ret = d;
        d = NULL;
        return 0;
}

/* ---- text ---- */

/* Prints "label text" indented, if @key of @e holds text. */
static void print_part(FILE *f, json_t *e, const char *key, const char *label)
{
        const char *text = json_read_string_or(e, key, NULL);

        if (text && text[0]) {
                fprintf(f, "       %-15s %s\n", label, text);
        }
}

static void print_cpu(FILE *f, json_t *c)
{
        char a[FORMAT_MAX], b[FORMAT_MAX], n[FORMAT_MAX], pct[FORMAT_MAX];
        uint64_t window_ns, count, kept, ns;
        double available;

        get_u64(c, "kept", &kept);
        get_u64(c, "interruptions_ns", &ns);
        fprintf(f, "CPU %" JSON_INTEGER_FORMAT ": %s interruptions took %s",
                json_integer_value(json_object_get(c, "cpu")), format_count(n, sizeof(n), kept),
                format_ns(a, sizeof(a), (double)ns));
        if (get_u64(c, "window_ns", &window_ns)) {
                fprintf(f, " of %s", format_ns(b, sizeof(b), (double)window_ns));
        }
        if (json_read_number(c, "cpu_available_pct", &available) == 0) {
                fprintf(f, "; %s %% of the CPU available", format_pct(pct, sizeof(pct), available));
        }
        if (get_u64(c, "interruptions", &count) && count > kept) {
                fprintf(f, " (causes of the newest %s of %s interruptions kept)",
                        format_count(a, sizeof(a), kept), format_count(b, sizeof(b), count));
        }
        fputc('\n', f);
        if (get_u64(c, "trace_lost", &count) && count > 0) {
                fprintf(f, "       the trace lost records in %s of them",
                        format_count(n, sizeof(n), count));
                if (get_u64(c, "trace_lost_ns", &ns)) {
                        fprintf(f, ": %s of their time is unexplained for it",
                                format_ns(a, sizeof(a), (double)ns));
                }
                fputc('\n', f);
        }
}

/* The steal time and SMI count beside the time without a record, where they were read. */
static void print_host_figures(FILE *f, json_t *e)
{
        char t[FORMAT_MAX], n[FORMAT_MAX];
        uint64_t v;

        if (get_u64(e, "steal_ns", &v)) {
                fprintf(f, "       %-15s %s in the window, as the host reports it (/proc/stat)\n",
                        "steal time:", format_ns(t, sizeof(t), (double)v));
        }
        if (get_u64(e, "smi", &v)) {
                fprintf(f, "       %-15s %s in the window (MSR 0x34)\n",
                        "SMIs:", format_count(n, sizeof(n), v));
        }
}

static void print_entry(FILE *f, json_t *e, bool color)
{
        static const struct {
                const char *when, *label;
        } labels[] = {
                {"now", "fix (now):"},
                {"reboot", "fix (at boot):"},
        };
        const char *when = json_read_string_or(e, "when", "none");
        json_t *finding = json_object_get(e, "finding");
        char t[FORMAT_MAX], s[FORMAT_MAX], g[FORMAT_MAX];
        double share = 0, gain;
        uint64_t overhead;

        json_read_number(e, "share", &share);
        fprintf(f, "%3" JSON_INTEGER_FORMAT ". %s%s%s  %s, %s %% of the interruptions' time",
                json_integer_value(json_object_get(e, "rank")), color ? "\033[1m" : "",
                json_read_string_or(e, "what", "?"), color ? "\033[0m" : "",
                format_ns(t, sizeof(t), (double)json_integer_value(json_object_get(e, "ns"))),
                format_pct(s, sizeof(s), 100 * share));
        if (json_read_number(e, "gain_pct", &gain) == 0) {
                fprintf(f, "; removing it gives back %s %% of the CPU",
                        format_pct(g, sizeof(g), gain));
        }
        fputc('\n', f);
        if (get_u64(e, "overhead_ns", &overhead) && overhead > 0) {
                fprintf(f, "       %-15s %s of it the way into the kernel and out\n",
                        "overhead:", format_ns(t, sizeof(t), (double)overhead));
        }
        print_host_figures(f, e);
        print_part(f, e, "setting", "let in by:");
        if (json_is_object(finding)) {
                fprintf(f, "       %-15s %s %s: %s\n",
                        "audit:", json_read_string_or(e, "check", "?"),
                        json_read_string_or(finding, "severity", "?"),
                        json_read_string_or(finding, "seen", ""));
        }
        for (size_t i = 0; i < ELEMENTSOF(labels); i++) {
                if (strcmp(when, labels[i].when) == 0) {
                        print_part(f, e, "command", labels[i].label);
                }
        }
        print_part(f, e, "ask_host", "ask the host:");
        print_part(f, e, "persist", strcmp(when, "reboot") == 0 ? "how:" : "keep it:");
        print_part(f, e, "revert", "undo:");
        print_part(f, e, "note", strcmp(when, "none") == 0 ? "no fix known:" : "note:");
}

void diagnosis_print(json_t *d, FILE *f, double min_share, bool color)
{
        char p[FORMAT_MAX], n[FORMAT_MAX];
        double rest = 0, share;
        size_t i, left = 0;
        json_t *e;

        fprintf(f, "window %s, trace %s; fixes move things to the housekeeping CPUs: %s\n",
                json_read_string_or(d, "window", "?"), json_read_string_or(d, "trace", "?"),
                json_read_string_or(d, "housekeeping", "unknown"));
        json_array_foreach(json_object_get(d, "cpus"), i, e)
        {
                print_cpu(f, e);
        }
        if (json_array_size(json_object_get(d, "causes")) == 0) {
                fprintf(f, "No interruption has a cause in this window.\n");
        }
        json_array_foreach(json_object_get(d, "causes"), i, e)
        {
                if (json_read_number(e, "share", &share) < 0 || share >= min_share || i == 0) {
                        fputc('\n', f);
                        print_entry(f, e, color);
                } else {
                        rest += share;
                        left++;
                }
        }
        if (left > 0) {
                fprintf(f, "\n%s more causes took %s %% of the time (--json lists them all).\n",
                        format_count(n, sizeof(n), left), format_pct(p, sizeof(p), 100 * rest));
        }
        fprintf(f, "\ndoctor changes nothing: the commands above are for an administrator to "
                   "run.\n");
}

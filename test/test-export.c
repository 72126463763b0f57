/* Unit tests of probe/analysis/prometheus.c: the Prometheus exposition rendered from fixed Varlink
 * replies. The output is parsed back and checked against the format's rules (HELP and TYPE before
 * the samples of each family, one block per family, no duplicate series, escaped label values), the
 * naming rules (jitter_ prefix, _total counters, seconds) and the histogram's invariants
 * (cumulative buckets, +Inf == _count, _sum), and against the values the fixtures imply. */

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "prometheus.h"
#include "util.h"

/* --- fixtures: replies of a daemon probing CPUs 2 and 3 ------------------------------------ */

/* A source name with every character the format escapes. */
#define WEIRD_SOURCE "we\"ird\\irq\nname"
#define WEIRD_SOURCE_ESCAPED "we\\\"ird\\\\irq\\nname"

typedef struct Fixture {
        json_t *status, *stats_all, *stats_1m, *intervals, *histograms;
} Fixture;

static json_t *bucket(json_int_t lower, json_int_t upper, json_int_t count)
{
        return json_pack("{sI sI sI}", "lower_ns", lower, "upper_ns", upper, "count", count);
}

static json_t *stats_entry(int cpu, json_int_t samples, json_int_t duration_ns, json_int_t stalls,
                           double mean_ns, json_int_t max_ns, double available_pct)
{
        return json_pack("{si sI sI s{sI sf sI} s{sI sf} sI sf sI s{} s{} s{} s[] s[]}", "cpu", cpu,
                         "samples", samples, "duration_ns", duration_ns, "gap", "count", samples,
                         "mean_ns", mean_ns, "max_ns", max_ns, "interruptions", "count",
                         (json_int_t)4, "per_second", 0.5, "lost_ns", (json_int_t)1500,
                         "cpu_available_pct", available_pct, "stalls", stalls, "interrupts",
                         "softirqs", "ctxsw", "causes", "periods");
}

static void fixture_init(Fixture *fx)
{
        json_t *cpu2, *hist2;

        fx->status =
                json_pack("{ss sI ss s{ss sI ss sf sf} s[{si ss sI} {si ss sI}] s{sI sI} sI}",
                          "version", "1.2 \"rc\\1\"", "uptime_ns", (json_int_t)90500000000,
                          "start_realtime", "2024-01-01T00:00:00.000000000Z", "counter", "source",
                          "tsc", "hz", (json_int_t)2600000000, "hz_source", "cpuid",
                          "precision_ppm", 0.0, "drift_ppm", -0.25, "probes", "cpu", 2, "state",
                          "running", "floor_ns", (json_int_t)18, "cpu", 3, "state", "stalled",
                          "floor_ns", (json_int_t)0, "config", "threshold_ns", (json_int_t)10000,
                          "interval_ns", (json_int_t)1000000000, "history_bytes", (json_int_t)4096);

        /* The trace records CPU 2: its interruptions' time by cause kind. */
        json_object_set_new(fx->status, "trace",
                            json_pack("{ss s[{si s{sI sI sI sI sI sI sI sI sI sI}}]}", "state",
                                      "recording", "cpus", "cpu", 2, "lost_ns", "irq",
                                      (json_int_t)0, "vector", (json_int_t)2500, "softirq",
                                      (json_int_t)7, "task", (json_int_t)1500000000, "timer",
                                      (json_int_t)100, "work", (json_int_t)0, "ipi", (json_int_t)1,
                                      "overhead", (json_int_t)4200, "no_record", (json_int_t)770000,
                                      "unexplained", (json_int_t)12345));

        /* CPU 2: 1024 gaps with a mean of 1000.5 ns; CPU 3 never measured. */
        cpu2 = stats_entry(2, 1024, 90000000000, 0, 1000.5, 2060000000, 99.9);
        json_object_set_new(json_object_get(cpu2, "interrupts"), "LOC", json_integer(10));
        json_object_set_new(json_object_get(cpu2, "interrupts"), WEIRD_SOURCE, json_integer(1));
        json_object_set_new(json_object_get(cpu2, "softirqs"), "TIMER", json_integer(3));
        json_object_set_new(json_object_get(cpu2, "ctxsw"), "involuntary", json_integer(2));
        json_object_set_new(cpu2, "smi", json_integer(0));
        fx->stats_all = json_pack("[o o]", cpu2, stats_entry(3, 0, 0, 0, 0.0, 0, 100.0));

        fx->stats_1m = json_pack("[o o]", stats_entry(2, 100, 60000000000, 0, 20.0, 12345, 99.5),
                                 stats_entry(3, 0, 0, 2, 0.0, 0, 100.0));
        fx->intervals =
                json_pack("[{si sI sI sb}]", "cpu", 2, "duration_ns", (json_int_t)1000000000,
                          "max_gap_ns", (json_int_t)2500, "stalled", 0);

        /* Buckets against the le boundaries: upper == 100 ns is within le 1e-07 (inclusive);
         * [100, 103] straddles it and counts from 2e-07 on; [2.0 s, 2.06 s] only in +Inf. */
        hist2 = json_pack("{si ss ss sI sf sf s[o o o o o o]}", "cpu", 2, "window", "all", "kind",
                          "gap", "total", (json_int_t)1024, "min_ns", 18.0, "max_ns", 2.06e9,
                          "buckets", bucket(18, 18, 1000), bucket(96, 100, 10), bucket(100, 103, 5),
                          bucket(194, 200, 3), bucket(968750000, 1000000000, 4),
                          bucket(2000000000, 2060000000, 2));
        fx->histograms =
                json_pack("[o {si ss ss sI sf sf s[]}]", hist2, "cpu", 3, "window", "all", "kind",
                          "gap", "total", (json_int_t)0, "min_ns", 0.0, "max_ns", 0.0, "buckets");
        assert_non_null(fx->status);
        assert_non_null(fx->stats_all);
        assert_non_null(fx->stats_1m);
        assert_non_null(fx->intervals);
        assert_non_null(fx->histograms);
}

static void fixture_done(Fixture *fx)
{
        json_decref(fx->status);
        json_decref(fx->stats_all);
        json_decref(fx->stats_1m);
        json_decref(fx->intervals);
        json_decref(fx->histograms);
}

/* Renders @fx; returns what prometheus_render() returned, the text in @ret (free()). */
static int render(const Fixture *fx, char **ret)
{
        size_t size = 0;
        FILE *f = open_memstream(ret, &size);
        int r;

        assert_non_null(f);
        r = prometheus_render(f, fx->status, fx->stats_all, fx->stats_1m, fx->intervals,
                              fx->histograms);
        assert_int_equal(fclose(f), 0);
        return r;
}

/* --- a parser of the text exposition -------------------------------------------------------- */

typedef struct Sample {
        char name[128];
        char labels[512]; /* as written, between the braces */
        char value[64];
} Sample;

typedef struct Family {
        char name[128];
        char type[32];
        size_t first, n; /* its samples */
} Family;

typedef struct Exposition {
        Sample samples[512];
        size_t n_samples;
        Family families[64];
        size_t n_families;
} Exposition;

static bool family_has(const Family *fam, const char *name)
{
        static const char *const histogram_suffixes[] = {"_bucket", "_sum", "_count"};
        size_t len = strlen(fam->name);

        if (strcmp(fam->name, name) == 0) {
                return strcmp(fam->type, "histogram") != 0;
        }
        if (strcmp(fam->type, "histogram") != 0 || strncmp(fam->name, name, len) != 0) {
                return false;
        }
        for (size_t i = 0; i < 3; i++) {
                if (strcmp(name + len, histogram_suffixes[i]) == 0) {
                        return true;
                }
        }
        return false;
}

/* Copies @src into @dst of @size bytes; the test fails rather than cut it. */
static void copy(char *dst, size_t size, const char *src)
{
        size_t len = strlen(src);

        assert_true(len < size);
        memcpy(dst, src, len + 1);
}

/* Parses @text and checks the format's structural rules as it goes. */
static void parse(const char *text, Exposition *e)
{
        const char *line = text;
        bool help_pending = false;
        char help_name[128] = "";

        memset(e, 0, sizeof(*e));
        while (*line) {
                const char *end = strchr(line, '\n');
                char buf[1024];
                size_t len;

                assert_non_null(end); /* every line ends with a line feed */
                len = (size_t)(end - line);
                assert_true(len > 0 && len < sizeof(buf));
                memcpy(buf, line, len);
                buf[len] = '\0';
                line = end + 1;

                if (strncmp(buf, "# HELP ", 7) == 0) {
                        assert_false(help_pending);
                        assert_int_equal(sscanf(buf + 7, "%127s", help_name), 1);
                        assert_true(strlen(buf + 7) > strlen(help_name) + 1); /* has a text */
                        help_pending = true;
                } else if (strncmp(buf, "# TYPE ", 7) == 0) {
                        Family *fam = &e->families[e->n_families++];

                        assert_true(e->n_families < 64);
                        assert_int_equal(sscanf(buf + 7, "%127s %31s", fam->name, fam->type), 2);
                        /* HELP, then TYPE, of the same family; each family once. */
                        assert_true(help_pending);
                        assert_string_equal(help_name, fam->name);
                        help_pending = false;
                        for (size_t i = 0; i + 1 < e->n_families; i++) {
                                assert_string_not_equal(e->families[i].name, fam->name);
                        }
                        assert_true(strcmp(fam->type, "gauge") == 0 ||
                                    strcmp(fam->type, "counter") == 0 ||
                                    strcmp(fam->type, "histogram") == 0);
                        fam->first = e->n_samples;
                } else {
                        Sample *s = &e->samples[e->n_samples++];
                        char *brace = strchr(buf, '{'), *space;
                        Family *fam;

                        assert_true(e->n_samples < 512);
                        assert_false(buf[0] == '#');
                        assert_false(help_pending);
                        assert_true(e->n_families > 0);
                        fam = &e->families[e->n_families - 1];
                        space = strrchr(buf, ' ');
                        assert_non_null(space);
                        copy(s->value, sizeof(s->value), space + 1);
                        *space = '\0';
                        if (brace) {
                                assert_int_equal(space[-1], '}');
                                space[-1] = '\0';
                                *brace = '\0';
                                copy(s->labels, sizeof(s->labels), brace + 1);
                        }
                        copy(s->name, sizeof(s->name), buf);
                        /* The samples of a family follow its TYPE line, together. */
                        assert_true(family_has(fam, s->name));
                        fam->n++;
                }
        }
        assert_false(help_pending);
        /* No series twice. */
        for (size_t i = 0; i < e->n_samples; i++) {
                for (size_t j = i + 1; j < e->n_samples; j++) {
                        assert_false(strcmp(e->samples[i].name, e->samples[j].name) == 0 &&
                                     strcmp(e->samples[i].labels, e->samples[j].labels) == 0);
                }
        }
}

/* Copies the unescaped value of label @name of @s into @out; false when there is none. */
static bool label(const Sample *s, const char *name, char *out, size_t size)
{
        const char *p = s->labels;
        size_t len = strlen(name);

        while (*p) {
                bool match = strncmp(p, name, len) == 0 && p[len] == '=';
                size_t n = 0;

                p = strchr(p, '=');
                assert_non_null(p);
                assert_int_equal(p[1], '"');
                for (p += 2; *p != '"'; p++) {
                        char c = *p;

                        assert_int_not_equal(c, '\0');
                        assert_int_not_equal(c, '\n');
                        if (c == '\\') {
                                p++;
                                assert_true(*p == '\\' || *p == '"' || *p == 'n');
                                c = *p == 'n' ? '\n' : *p;
                        }
                        if (match && n + 1 < size) {
                                out[n++] = c;
                        }
                }
                if (match) {
                        out[n] = '\0';
                        return true;
                }
                p++;
                if (*p == ',') {
                        p++;
                }
        }
        return false;
}

/* The value of the series @name with label cpu=@cpu and, when @key is not NULL, @key=@val. */
static const char *value_of(const Exposition *e, const char *name, const char *cpu, const char *key,
                            const char *val)
{
        for (size_t i = 0; i < e->n_samples; i++) {
                const Sample *s = &e->samples[i];
                char got[256];

                if (strcmp(s->name, name) != 0) {
                        continue;
                }
                if (cpu && (!label(s, "cpu", got, sizeof(got)) || strcmp(got, cpu) != 0)) {
                        continue;
                }
                if (key && (!label(s, key, got, sizeof(got)) || strcmp(got, val) != 0)) {
                        continue;
                }
                return s->value;
        }
        return NULL;
}

static const Family *family(const Exposition *e, const char *name)
{
        for (size_t i = 0; i < e->n_families; i++) {
                if (strcmp(e->families[i].name, name) == 0) {
                        return &e->families[i];
                }
        }
        return NULL;
}

/* --- tests --------------------------------------------------------------------------------- */

/* Names, types and units: every family is jitter_*, counters end in _total and histograms
 * do not, times are in seconds, and every family has samples. Long because each family's
 * expectations are one block, in the order of the exposition. */
static void test_names_and_units(void **state)
{
        Fixture fx;
        Exposition *e = malloc(sizeof(*e));
        char *text;

        assert_non_null(e);
        fixture_init(&fx);
        assert_int_equal(render(&fx, &text), 0);
        parse(text, e);
        assert_true(e->n_families >= 15);
        for (size_t i = 0; i < e->n_families; i++) {
                const Family *fam = &e->families[i];
                size_t len = strlen(fam->name);
                bool total = len > 6 && strcmp(fam->name + len - 6, "_total") == 0;

                assert_true(strncmp(fam->name, "jitter_", 7) == 0);
                assert_true(fam->n > 0);
                assert_int_equal(total, strcmp(fam->type, "counter") == 0);
                assert_null(strstr(fam->name, "_ns"));
                assert_null(strstr(fam->name, "_us"));
                assert_null(strstr(fam->name, "_ms"));
        }
        /* The families the alert rules and the dashboard rely on. */
        assert_string_equal(family(e, "jitter_gap_seconds")->type, "histogram");
        assert_string_equal(family(e, "jitter_interruptions_total")->type, "counter");
        assert_string_equal(family(e, "jitter_time_lost_seconds_total")->type, "counter");
        assert_string_equal(family(e, "jitter_probe_up")->type, "gauge");

        /* Values in base units, exact from whole ns. */
        assert_string_equal(value_of(e, "jitter_time_lost_seconds_total", "2", NULL, NULL),
                            "0.0000015");
        assert_string_equal(value_of(e, "jitter_interruption_threshold_seconds", NULL, NULL, NULL),
                            "0.00001");
        assert_string_equal(value_of(e, "jitter_uptime_seconds", NULL, NULL, NULL), "90.5");
        assert_string_equal(value_of(e, "jitter_probe_floor_seconds", "2", NULL, NULL),
                            "0.000000018");
        assert_string_equal(value_of(e, "jitter_tick_frequency_hertz", NULL, "source", "tsc"),
                            "2600000000");
        assert_string_equal(value_of(e, "jitter_tick_drift_ppm", NULL, NULL, NULL), "-0.25");
        assert_string_equal(value_of(e, "jitter_history_bytes", NULL, NULL, NULL), "4096");
        assert_string_equal(value_of(e, "jitter_samples_total", "2", NULL, NULL), "1024");
        assert_string_equal(value_of(e, "jitter_samples_total", "3", NULL, NULL), "0");
        assert_string_equal(value_of(e, "jitter_interruptions_total", "2", NULL, NULL), "4");
        assert_string_equal(value_of(e, "jitter_interrupts_total", "2", "source", "LOC"), "10");
        assert_string_equal(value_of(e, "jitter_softirqs_total", "2", "source", "TIMER"), "3");
        assert_string_equal(
                value_of(e, "jitter_context_switches_total", "2", "kind", "involuntary"), "2");
        assert_string_equal(value_of(e, "jitter_cpu_available_ratio", "2", "window", "1m"),
                            "0.995");
        /* Time by cause kind: every kind of the traced CPU, even at 0, and none of the other. */
        assert_string_equal(family(e, "jitter_cause_lost_seconds_total")->type, "counter");
        assert_int_equal(family(e, "jitter_cause_lost_seconds_total")->n, 10);
        assert_string_equal(value_of(e, "jitter_cause_lost_seconds_total", "2", "kind", "task"),
                            "1.5");
        assert_string_equal(value_of(e, "jitter_cause_lost_seconds_total", "2", "kind", "vector"),
                            "0.0000025");
        assert_string_equal(value_of(e, "jitter_cause_lost_seconds_total", "2", "kind", "irq"),
                            "0");
        assert_string_equal(
                value_of(e, "jitter_cause_lost_seconds_total", "2", "kind", "unexplained"),
                "0.000012345");
        assert_string_equal(value_of(e, "jitter_cause_lost_seconds_total", "2", "kind", "overhead"),
                            "0.0000042");
        assert_string_equal(
                value_of(e, "jitter_cause_lost_seconds_total", "2", "kind", "no_record"),
                "0.00077");
        assert_null(value_of(e, "jitter_cause_lost_seconds_total", "3", NULL, NULL));

        /* Probe state: up for the running probe only, one state of the enum set. */
        assert_string_equal(value_of(e, "jitter_probe_up", "2", NULL, NULL), "1");
        assert_string_equal(value_of(e, "jitter_probe_up", "3", NULL, NULL), "0");
        assert_string_equal(value_of(e, "jitter_probe_state", "2", "state", "running"), "1");
        assert_string_equal(value_of(e, "jitter_probe_state", "2", "state", "stalled"), "0");
        assert_string_equal(value_of(e, "jitter_probe_state", "3", "state", "stalled"), "1");
        assert_string_equal(value_of(e, "jitter_probe_state", "3", "state", "running"), "0");
        /* A floor of 0 is "not measured yet", not a floor. */
        assert_null(value_of(e, "jitter_probe_floor_seconds", "3", NULL, NULL));

        /* Worst gaps: the newest interval, the minute, and a minute with stalls and no samples
         * whose worst gap is at least the interval (1 s). */
        assert_string_equal(value_of(e, "jitter_gap_max_seconds", "2", "window", "interval"),
                            "0.0000025");
        assert_string_equal(value_of(e, "jitter_gap_max_seconds", "2", "window", "1m"),
                            "0.000012345");
        assert_string_equal(value_of(e, "jitter_gap_max_seconds", "3", "window", "1m"), "1");
        assert_null(value_of(e, "jitter_gap_max_seconds", "3", "window", "interval"));
        /* Nothing measured in the minute: no ratio rather than a made-up one. */
        assert_null(value_of(e, "jitter_cpu_available_ratio", "3", NULL, NULL));
        free(text);
        free(e);
        fixture_done(&fx);
}

/* The histogram: cumulative buckets in le order ending with +Inf == _count, _sum the sum of the
 * gaps in seconds, and each source bucket counted from the first le at or above its upper
 * edge. */
static void test_histogram(void **state)
{
        static const struct {
                const char *le;
                const char *count;
        } expected[] = {
                {"1e-07", "1010"}, {"2e-07", "1018"}, {"5e-07", "1018"},
                {"0.5", "1018"},   {"1", "1022"},     {"+Inf", "1024"},
        };
        Fixture fx;
        Exposition *e = malloc(sizeof(*e));
        char *text;

        assert_non_null(e);
        fixture_init(&fx);
        assert_int_equal(render(&fx, &text), 0);
        parse(text, e);
        for (const char *cpu = "2"; cpu; cpu = strcmp(cpu, "2") == 0 ? "3" : NULL) {
                double prev_le = 0, prev = 0, inf = -1;
                unsigned buckets = 0;

                for (size_t i = 0; i < e->n_samples; i++) {
                        const Sample *s = &e->samples[i];
                        char got[64], le[64];
                        double v;

                        if (strcmp(s->name, "jitter_gap_seconds_bucket") != 0 ||
                            !label(s, "cpu", got, sizeof(got)) || strcmp(got, cpu) != 0) {
                                continue;
                        }
                        assert_true(label(s, "le", le, sizeof(le)));
                        assert_int_equal(inf, -1); /* +Inf is the last */
                        v = strtod(s->value, NULL);
                        assert_true(v >= prev);
                        prev = v;
                        if (strcmp(le, "+Inf") == 0) {
                                inf = v;
                        } else {
                                double b = strtod(le, NULL);

                                assert_true(b > prev_le);
                                prev_le = b;
                        }
                        buckets++;
                }
                /* 100 ns to 1 s in 1-2-5 steps, and +Inf. */
                assert_int_equal(buckets, 23);
                assert_true(prev_le == 1.0);
                assert_true(inf ==
                            strtod(value_of(e, "jitter_gap_seconds_count", cpu, NULL, NULL), NULL));
        }
        for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                assert_string_equal(
                        value_of(e, "jitter_gap_seconds_bucket", "2", "le", expected[i].le),
                        expected[i].count);
        }
        assert_string_equal(value_of(e, "jitter_gap_seconds_bucket", "2", "le", "1e-06"), "1018");
        assert_string_equal(value_of(e, "jitter_gap_seconds_count", "2", NULL, NULL), "1024");
        /* 1024 gaps of 1000.5 ns on average: 1024512 ns. */
        assert_string_equal(value_of(e, "jitter_gap_seconds_sum", "2", NULL, NULL), "0.001024512");
        assert_string_equal(value_of(e, "jitter_gap_seconds_sum", "3", NULL, NULL), "0");
        assert_string_equal(value_of(e, "jitter_gap_seconds_bucket", "3", "le", "+Inf"), "0");
        free(text);
        free(e);
        fixture_done(&fx);
}

/* Label values are escaped: backslash, double quote and line feed. */
static void test_escaping(void **state)
{
        Fixture fx;
        Exposition *e = malloc(sizeof(*e));
        char *text, got[256];

        assert_non_null(e);
        fixture_init(&fx);
        assert_int_equal(render(&fx, &text), 0);
        assert_non_null(strstr(text, "jitter_build_info{version=\"1.2 \\\"rc\\\\1\\\"\"} 1\n"));
        assert_non_null(strstr(text, "source=\"" WEIRD_SOURCE_ESCAPED "\"} 1\n"));
        parse(text, e);
        assert_string_equal(value_of(e, "jitter_interrupts_total", "2", "source", WEIRD_SOURCE),
                            "1");
        assert_true(label(&e->samples[0], "version", got, sizeof(got)));
        assert_string_equal(got, "1.2 \"rc\\1\"");
        free(text);
        free(e);
        fixture_done(&fx);
}

/* A family without samples is left out, HELP and TYPE included. */
static void test_empty_family(void **state)
{
        Fixture fx;
        char *text;

        fixture_init(&fx);
        assert_int_equal(render(&fx, &text), 0);
        assert_non_null(strstr(text, "# TYPE jitter_smi_total counter\n"));
        assert_non_null(strstr(text, "jitter_smi_total{cpu=\"2\"} 0\n"));
        assert_null(strstr(text, "jitter_smi_total{cpu=\"3\"}"));
        free(text);
        json_object_del(json_array_get(fx.stats_all, 0), "smi");
        assert_int_equal(render(&fx, &text), 0);
        assert_null(strstr(text, "jitter_smi"));
        free(text);
        fixture_done(&fx);
}

/* Applies one corruption to a fresh fixture and expects -EBADMSG with nothing written. */
static void expect_refused(void (*corrupt)(Fixture *fx))
{
        Fixture fx;
        char *text;

        fixture_init(&fx);
        corrupt(&fx);
        assert_int_equal(render(&fx, &text), -EBADMSG);
        assert_string_equal(text, "");
        free(text);
        fixture_done(&fx);
}

static void no_version(Fixture *fx)
{
        json_object_del(fx->status, "version");
}

static void no_interval(Fixture *fx)
{
        json_object_del(json_object_get(fx->status, "config"), "interval_ns");
}

static void negative_count(Fixture *fx)
{
        json_t *b =
                json_array_get(json_object_get(json_array_get(fx->histograms, 0), "buckets"), 0);

        json_object_set_new(b, "count", json_integer(-1));
}

static void overflowing_counts(Fixture *fx)
{
        json_t *buckets = json_object_get(json_array_get(fx->histograms, 0), "buckets");

        json_object_set_new(json_array_get(buckets, 0), "count", json_integer(INT64_MAX));
        json_object_set_new(json_array_get(buckets, 1), "count", json_integer(INT64_MAX));
        json_object_set_new(json_array_get(buckets, 2), "count", json_integer(INT64_MAX));
}

static void inverted_bucket(Fixture *fx)
{
        json_t *b =
                json_array_get(json_object_get(json_array_get(fx->histograms, 0), "buckets"), 1);

        json_object_set_new(b, "lower_ns", json_integer(200));
}

static void diffdiff_histogram(Fixture *fx)
{
        json_object_set_new(json_array_get(fx->histograms, 0), "kind", json_string("diffdiff"));
}

static void duplicate_cpu(Fixture *fx)
{
        json_object_set_new(json_array_get(fx->stats_1m, 1), "cpu", json_integer(2));
}

static void histogram_without_stats(Fixture *fx)
{
        json_array_remove(fx->stats_all, 1);
}

static void cpu_out_of_range(Fixture *fx)
{
        json_object_set_new(json_array_get(json_object_get(fx->status, "probes"), 0), "cpu",
                            json_integer(-1));
}

static void ratio_above_one(Fixture *fx)
{
        json_object_set_new(json_array_get(fx->stats_1m, 0), "cpu_available_pct", json_real(150.0));
}

static void source_count_not_integer(Fixture *fx)
{
        json_object_set_new(json_object_get(json_array_get(fx->stats_all, 0), "interrupts"), "LOC",
                            json_string("10"));
}

static void empty_source_name(Fixture *fx)
{
        json_object_set_new(json_object_get(json_array_get(fx->stats_all, 0), "softirqs"), "",
                            json_integer(1));
}

static void label_with_nul(Fixture *fx)
{
        json_object_set_new(fx->status, "version", json_stringn("1\0x", 3));
}

static void stats_not_array(Fixture *fx)
{
        json_decref(fx->stats_1m);
        fx->stats_1m = json_object();
}

static void interval_without_max(Fixture *fx)
{
        json_object_del(json_array_get(fx->intervals, 0), "max_gap_ns");
}

static void cause_kind_missing(Fixture *fx)
{
        json_object_del(
                json_object_get(
                        json_array_get(
                                json_object_get(json_object_get(fx->status, "trace"), "cpus"), 0),
                        "lost_ns"),
                "ipi");
}

static void cause_kind_unknown(Fixture *fx)
{
        json_t *kinds = json_object_get(
                json_array_get(json_object_get(json_object_get(fx->status, "trace"), "cpus"), 0),
                "lost_ns");

        json_object_del(kinds, "ipi");
        json_object_set_new(kinds, "bogus", json_integer(1));
}

/* A gap histogram with a bucket below 0 ns is not one: diffdiff buckets have signed edges. */
static void bucket_below_zero(Fixture *fx)
{
        json_array_append_new(json_object_get(json_array_get(fx->histograms, 0), "buckets"),
                              bucket(-5, 3, 1));
}

static void no_gap_mean(Fixture *fx)
{
        json_object_del(json_object_get(json_array_get(fx->stats_all, 0), "gap"), "mean_ns");
}

static void no_stalls_1m(Fixture *fx)
{
        json_object_del(json_array_get(fx->stats_1m, 1), "stalls");
}

static void smi_not_integer(Fixture *fx)
{
        json_object_set_new(json_array_get(fx->stats_all, 0), "smi", json_string("0"));
}

/* A member the renderer does not export is still checked: the entry is refused whole. */
static void malformed_diffdiff(Fixture *fx)
{
        json_object_set_new(json_array_get(fx->stats_all, 0), "diffdiff", json_integer(3));
}

static void test_refused(void **state)
{
        expect_refused(bucket_below_zero);
        expect_refused(no_gap_mean);
        expect_refused(no_stalls_1m);
        expect_refused(smi_not_integer);
        expect_refused(malformed_diffdiff);
        expect_refused(cause_kind_missing);
        expect_refused(cause_kind_unknown);
        expect_refused(no_version);
        expect_refused(no_interval);
        expect_refused(negative_count);
        expect_refused(overflowing_counts);
        expect_refused(inverted_bucket);
        expect_refused(diffdiff_histogram);
        expect_refused(duplicate_cpu);
        expect_refused(histogram_without_stats);
        expect_refused(cpu_out_of_range);
        expect_refused(ratio_above_one);
        expect_refused(source_count_not_integer);
        expect_refused(empty_source_name);
        expect_refused(label_with_nul);
        expect_refused(stats_not_array);
        expect_refused(interval_without_max);
}

/* NULL replies (a call that failed) are refused too. */
static void test_null_input(void **state)
{
        Fixture fx;
        char *text;
        size_t size;
        FILE *f;

        fixture_init(&fx);
        f = open_memstream(&text, &size);
        assert_non_null(f);
        assert_int_equal(
                prometheus_render(f, NULL, fx.stats_all, fx.stats_1m, fx.intervals, fx.histograms),
                -EBADMSG);
        assert_int_equal(
                prometheus_render(f, fx.status, fx.stats_all, fx.stats_1m, fx.intervals, NULL),
                -EBADMSG);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(size, 0);
        free(text);
        fixture_done(&fx);
}

/* No probes and no data: a valid exposition of the daemon-wide gauges only. */
static void test_no_cpus(void **state)
{
        Fixture fx;
        Exposition *e = malloc(sizeof(*e));
        char *text;

        assert_non_null(e);
        fixture_init(&fx);
        json_object_set_new(fx.status, "probes", json_array());
        json_object_set_new(fx.status, "trace", json_pack("{ss}", "state", "off"));
        json_array_clear(fx.stats_all);
        json_array_clear(fx.stats_1m);
        json_array_clear(fx.intervals);
        json_array_clear(fx.histograms);
        assert_int_equal(render(&fx, &text), 0);
        parse(text, e);
        assert_non_null(family(e, "jitter_build_info"));
        assert_null(family(e, "jitter_gap_seconds"));
        assert_null(strstr(text, "cpu="));
        free(text);
        free(e);
        fixture_done(&fx);
}

static void test_interval_window(void **state)
{
        assert_string_equal(prometheus_interval_window(100000000ULL), "10s");
        assert_string_equal(prometheus_interval_window(1000000000ULL), "10s");
        assert_string_equal(prometheus_interval_window(3333333333ULL), "10s");
        assert_string_equal(prometheus_interval_window(3333333334ULL), "1m");
        assert_string_equal(prometheus_interval_window(20000000000ULL), "1m");
        assert_string_equal(prometheus_interval_window(60000000000ULL), "5m");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names_and_units), cmocka_unit_test(test_histogram),
                cmocka_unit_test(test_escaping),        cmocka_unit_test(test_empty_family),
                cmocka_unit_test(test_refused),         cmocka_unit_test(test_null_input),
                cmocka_unit_test(test_no_cpus),         cmocka_unit_test(test_interval_window),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

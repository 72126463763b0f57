/* Unit tests of the SVG writer behind `jitterctl plot`: the document is well-formed XML (checked
 * here with a small tag-matching parser, and with xmllint where it is installed), self-contained
 * (no scripts, no external references), escapes what it is given, and draws what it is given. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jitterctl-svg-internal.h"
#include "jitterctl-svg.h"
#include "util.h"

/* gcc 12 takes the buffer open_memstream() hands back for a pointer to the local that received
 * it, and warns on every later use; the buffer is on the heap. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif

static char *render(const char *title, const PlotSeries *s, size_t n, int *ret)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        *ret = svg_plot_write(f, title, s, n);
        fclose(f);
        return text;
}

static size_t count(const char *hay, const char *needle)
{
        size_t n = 0;

        for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
                n++;
        }
        return n;
}

/* A minimal well-formedness check: every element closed in order, attributes quoted, only the
 * five predefined entities, no stray '<' or '&'. Returns NULL or what is wrong. */
/* Long because it is a small XML well-formedness checker, one state machine. */
static const char *xml_check(const char *s)
{
        const char *stack[64];
        size_t depth = 0;
        bool root_seen = false;

        if (strncmp(s, "<?xml ", 6) != 0) {
                return "no XML declaration";
        }
        s = strstr(s, "?>");
        if (!s) {
                return "unterminated declaration";
        }
        s += 2;
        while (*s) {
                if (*s == '&') {
                        static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;",
                                                           "&apos;"};
                        bool ok = false;

                        for (size_t i = 0; i < 5; i++) {
                                ok = ok || strncmp(s, ents[i], strlen(ents[i])) == 0;
                        }
                        if (!ok) {
                                return "bad entity";
                        }
                        s++;
                        continue;
                }
                if (*s != '<') {
                        if (depth == 0 && *s != '\n' && *s != ' ') {
                                return "text outside the root element";
                        }
                        s++;
                        continue;
                }
                if (s[1] == '/') {
                        size_t len = strcspn(s + 2, ">");

                        if (depth == 0 || strncmp(s + 2, stack[depth - 1], len) != 0 ||
                            strcspn(stack[depth - 1], " />\n") != len) {
                                return "mismatched closing tag";
                        }
                        depth--;
                        s += 2 + len + 1;
                        continue;
                }
                /* A start tag: name, then attributes with quoted values, up to > or />. */
                {
                        const char *name = s + 1;
                        const char *p = name + strcspn(name, " />\n");
                        bool self_closing = false;

                        if (p == name) {
                                return "empty tag name";
                        }
                        while (*p && *p != '>') {
                                if (*p == '"') {
                                        const char *end = strchr(p + 1, '"');

                                        if (!end || memchr(p + 1, '<', (size_t)(end - p - 1))) {
                                                return "bad attribute value";
                                        }
                                        p = end + 1;
                                        continue;
                                }
                                if (*p == '=' && p[1] != '"') {
                                        return "unquoted attribute";
                                }
                                if (*p == '/' && p[1] == '>') {
                                        self_closing = true;
                                }
                                p++;
                        }
                        if (!*p) {
                                return "unterminated tag";
                        }
                        if (depth == 0 && root_seen) {
                                return "a second root element";
                        }
                        root_seen = true;
                        if (!self_closing) {
                                if (depth == ELEMENTSOF(stack)) {
                                        return "too deep";
                                }
                                stack[depth++] = name;
                        }
                        s = p + 1;
                }
        }
        return depth == 0 && root_seen ? NULL : "unclosed elements";
}

static void assert_valid(const char *svg)
{
        const char *problem = xml_check(svg);
        char path[] = "/tmp/test-jitterctl-svg-XXXXXX";
        int fd;

        if (problem) {
                print_error("not well-formed: %s\n", problem);
                fail();
        }
        assert_null(strstr(svg, "<script"));
        assert_null(strstr(svg, "href"));
        assert_null(strstr(svg, "url("));
        assert_non_null(strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));

        /* xmllint (libxml2-utils) checks it properly where it is installed. */
        if (system("command -v xmllint >/dev/null 2>&1") != 0) {
                print_message("skipped: the check by xmllint: not installed (libxml2-utils); "
                              "checked with the built-in parser only\n");
                return;
        }
        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, svg, strlen(svg)), (ssize_t)strlen(svg));
        close(fd);
        {
                char cmd[128];
                int r;

                snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
                r = system(cmd);
                unlink(path);
                assert_int_equal(r, 0);
        }
}

static void test_checker_rejects(void **state)
{
        /* The built-in parser must itself be able to fail. */
        assert_null(xml_check("<?xml version=\"1.0\"?>\n<svg><g></g></svg>\n"));
        assert_non_null(xml_check("<svg></svg>"));
        assert_non_null(xml_check("<?xml version=\"1.0\"?><svg><g></svg></g>"));
        assert_non_null(xml_check("<?xml version=\"1.0\"?><svg><g></svg>"));
        assert_non_null(xml_check("<?xml version=\"1.0\"?><svg x=1></svg>"));
        assert_non_null(xml_check("<?xml version=\"1.0\"?><svg>a & b</svg>"));
        assert_non_null(xml_check("<?xml version=\"1.0\"?><svg/><svg/>"));
}

static void test_plot(void **state)
{
        const ReportBucket buckets[] = {
                {8, 9, 1000000000}, {9, 10, 40000000},       {2100, 2170, 300},
                {25000, 26000, 7},  {22000000, 22600000, 1},
        };
        PlotPoint points[120];
        PlotSeries series[2];
        const char *title = "jitterd on <host> & \"friends\"";
        char *svg;
        int r;

        for (size_t i = 0; i < 120; i++) {
                /* One hole in the history (the daemon was down) from interval 60 on. */
                points[i] = (PlotPoint){
                        .start_ns =
                                5000000000ULL + i * 1000000000ULL + (i >= 60 ? 30000000000ULL : 0),
                        .duration_ns = 1000000000ULL,
                        .max_gap_ns = 10000 + (i % 10) * 50000,
                        .stalled = i == 100,
                };
        }
        series[0] = (PlotSeries){
                .cpu = 2, .buckets = buckets, .n_buckets = 5, .points = points, .n_points = 120};
        series[1] = (PlotSeries){.cpu = 3};

        svg = render(title, series, 2, &r);
        assert_int_equal(r, 0);
        assert_valid(svg);
        /* Escaped in the <title> and in the heading. */
        assert_int_equal(count(svg, "jitterd on &lt;host&gt; &amp; &quot;friends&quot;"), 2);
        /* One bar per bucket, one stall marker, two stretches of line. */
        assert_int_equal(count(svg, "class=\"bar\""), 5);
        assert_int_equal(count(svg, "class=\"stall\""), 1);
        assert_int_equal(count(svg, "<polyline"), 2);
        /* The axes run from 1 ns (the smallest bucket is below 10 ns) to 1 s, in decades. */
        assert_non_null(strstr(svg, ">1 ns<"));
        assert_non_null(strstr(svg, ">10 ns<"));
        assert_non_null(strstr(svg, ">1 µs<"));
        assert_non_null(strstr(svg, ">100 ms<"));
        assert_non_null(strstr(svg, ">1 s<"));
        assert_non_null(strstr(svg, ">now<"));
        /* Counts up to 10^9: labelled as powers of ten above 1000. */
        assert_non_null(strstr(svg, ">1000<"));
        assert_non_null(strstr(svg, "10<tspan dy=\"-6\" font-size=\"9\">9</tspan>"));
        /* The CPU without data says so instead of drawing nothing. */
        assert_non_null(strstr(svg, "no samples"));
        assert_non_null(strstr(svg, "no intervals"));
        assert_int_equal(count(svg, "<g id=\"cpu"), 2);
        free(svg);

        svg = render(title, series, 0, &r);
        assert_int_equal(r, -EINVAL);
        free(svg);
}

static void test_escape(void **state)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        svg_escape(f, "a<b>&\"c'\001d");
        fclose(f);
        assert_string_equal(text, "a&lt;b&gt;&amp;&quot;c&apos;d");
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_checker_rejects),
                cmocka_unit_test(test_plot),
                cmocka_unit_test(test_escape),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

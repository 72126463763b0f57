#include "jitterctl-svg.h"
#include "jitterctl-svg-internal.h"

#include <errno.h>
#include <math.h>

#include "util.h"

/* Layout in SVG user units (pixels at 100 %). */
#define SVG_WIDTH 1000
#define SVG_HEAD 50
#define SVG_ROW 320
#define PANEL_WIDTH 480
#define MARGIN_LEFT 64
#define MARGIN_RIGHT 16
#define MARGIN_TOP 30
#define MARGIN_BOTTOM 48

/* A plot area and the decades (or seconds) its axes span. */
typedef struct Area {
        double x, y, w, h;
        double x_min, x_max; /* log10 ns for histograms, seconds for timelines */
        double y_min, y_max; /* log10 */
} Area;

static double area_x(const Area *a, double v)
{
        return a->x + (v - a->x_min) / (a->x_max - a->x_min) * a->w;
}

static double area_y(const Area *a, double v)
{
        return a->y + a->h - (v - a->y_min) / (a->y_max - a->y_min) * a->h;
}

void svg_escape(FILE *f, const char *s)
{
        for (; *s; s++) {
                switch (*s) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&apos;", f);
                        break;
                default:
                        /* Control characters are not allowed in XML 1.0 at all. */
                        if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n') {
                                fputc(*s, f);
                        }
                        break;
                }
        }
}

/* "10 ns", "100 µs", "1 s", "10 s" for the decade 10^@d ns. */
static void decade_label(char *buf, size_t size, int d)
{
        static const char *const unit[] = {"ns", "µs", "ms", "s"};
        int u = d < 0 ? 0 : d / 3 > 3 ? 3 : d / 3;

        snprintf(buf, size, "%.0f %s", pow(10, d - 3 * u), unit[u]);
}

/* Writes a count axis label 10^@d: plain up to 1000, then as a power of ten. */
static void count_label(FILE *f, double x, double y, int d)
{
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x, y);
        if (d <= 3) {
                fprintf(f, "%.0f", pow(10, d));
        } else {
                fprintf(f, "10<tspan dy=\"-6\" font-size=\"9\">%d</tspan>", d);
        }
        fputs("</text>\n", f);
}

static void frame(FILE *f, const Area *a, const char *title, const char *x_title,
                  const char *y_title)
{
        fprintf(f, "<text class=\"panel\" x=\"%.1f\" y=\"%.1f\">", a->x, a->y - 10);
        svg_escape(f, title);
        fputs("</text>\n", f);
        fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
                a->x, a->y, a->w, a->h);
        fprintf(f, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                a->x + a->w / 2, a->y + a->h + 38);
        svg_escape(f, x_title);
        fputs("</text>\n", f);
        fprintf(f,
                "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                "transform=\"rotate(-90 %.1f %.1f)\">",
                a->x - 48, a->y + a->h / 2, a->x - 48, a->y + a->h / 2);
        svg_escape(f, y_title);
        fputs("</text>\n", f);
}

static void empty_note(FILE *f, const Area *a, const char *text)
{
        fprintf(f, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                a->x + a->w / 2, a->y + a->h / 2);
        svg_escape(f, text);
        fputs("</text>\n", f);
}

/* Horizontal grid lines and labels for the decades 10^0 .. 10^y_max of a log y axis. */
static void y_decades(FILE *f, const Area *a, bool counts)
{
        for (int d = (int)ceil(a->y_min); d <= (int)floor(a->y_max); d++) {
                double y = area_y(a, d);
                char label[32];

                fprintf(f,
                        "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                        a->x, y, a->x + a->w, y);
                if (counts) {
                        count_label(f, a->x - 6, y + 4, d);
                } else {
                        decade_label(label, sizeof(label), d);
                        fprintf(f,
                                "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                                "text-anchor=\"end\">%s</text>\n",
                                a->x - 6, y + 4, label);
                }
        }
}

static void histogram_panel(FILE *f, double x0, double y0, const PlotSeries *s)
{
        Area a = {
                .x = x0 + MARGIN_LEFT,
                .y = y0 + MARGIN_TOP,
                .w = PANEL_WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
                .h = SVG_ROW - MARGIN_TOP - MARGIN_BOTTOM,
                .x_min = 1,          /* 10 ns */
                .x_max = 9,          /* 1 s */
                .y_min = log10(0.5), /* a count of 1 still gets a visible bar */
                .y_max = 1,
        };
        uint64_t max_count = 0;
        int label_step = 1;
        char title[64];

        snprintf(title, sizeof(title), "CPU %d: gaps", s->cpu);
        for (size_t i = 0; i < s->n_buckets; i++) {
                if (s->buckets[i].lower_ns > 0 &&
                    floor(log10((double)s->buckets[i].lower_ns)) < a.x_min) {
                        a.x_min = floor(log10((double)s->buckets[i].lower_ns));
                }
                if (s->buckets[i].upper_ns > 0 &&
                    ceil(log10((double)s->buckets[i].upper_ns)) > a.x_max) {
                        a.x_max = ceil(log10((double)s->buckets[i].upper_ns));
                }
                if (s->buckets[i].count > max_count) {
                        max_count = s->buckets[i].count;
                }
        }
        if (max_count > 1) {
                a.y_max = fmax(1, ceil(log10((double)max_count)));
        }
        frame(f, &a, title, "gap (log)", "count (log)");
        y_decades(f, &a, true);
        /* Every decade has its grid line, but a label only every label_step decades when
         * labels as wide as "100 ms" (about 40 px) would run into each other. */
        while (a.w * label_step / (a.x_max - a.x_min) < 42) {
                label_step++;
        }
        for (int d = (int)a.x_min; d <= (int)a.x_max; d++) {
                double x = area_x(&a, d);
                char label[32];

                decade_label(label, sizeof(label), d);
                fprintf(f,
                        "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                        x, a.y, x, a.y + a.h);
                if (d % label_step != 0) {
                        continue;
                }
                fprintf(f,
                        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        x, a.y + a.h + 16, label);
        }
        if (s->n_buckets == 0) {
                empty_note(f, &a, "no samples");
                return;
        }
        for (size_t i = 0; i < s->n_buckets; i++) {
                const ReportBucket *b = &s->buckets[i];
                double lo = b->lower_ns > 0 ? log10((double)b->lower_ns) : a.x_min;
                double hi = b->upper_ns > 0 ? log10((double)b->upper_ns) : a.x_min;
                double x1 = area_x(&a, fmax(lo, a.x_min)), x2 = area_x(&a, fmax(hi, a.x_min));
                double y = area_y(&a, log10((double)b->count));

                if (b->count == 0) {
                        continue;
                }
                fprintf(f,
                        "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                        "height=\"%.2f\"><title>%lld..%lld ns: %llu</title></rect>\n",
                        x1, y, fmax(x2 - x1, 1.0), a.y + a.h - y, (long long)b->lower_ns,
                        (long long)b->upper_ns, (unsigned long long)b->count);
        }
}

/* A tick step in seconds that gives at most 7 ticks over @span. */
static double time_step(double span)
{
        static const double steps[] = {1,     2,     5,     10,    15,     30,    60,
                                       120,   300,   600,   900,   1800,   3600,  7200,
                                       10800, 21600, 43200, 86400, 172800, 604800};

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                if (span / steps[i] <= 7) {
                        return steps[i];
                }
        }
        return ceil(span / 7 / 604800) * 604800;
}

static void time_label(char *buf, size_t size, double t, double step)
{
        if (t == 0) {
                snprintf(buf, size, "now");
        } else if (step < 60) {
                snprintf(buf, size, "%.0f s", t);
        } else if (step < 3600) {
                snprintf(buf, size, "%.0f min", t / 60);
        } else if (step < 86400) {
                snprintf(buf, size, "%g h", t / 3600);
        } else {
                snprintf(buf, size, "%g d", t / 86400);
        }
}

/* The vertical grid lines of the time axis and their labels, at round steps back from 0. */
static void time_ticks(FILE *f, const Area *a)
{
        double step = time_step(-a->x_min);

        for (double t = 0; t >= a->x_min - 1e-9; t -= step) {
                double x = area_x(a, t);
                char label[32];

                time_label(label, sizeof(label), t, step);
                fprintf(f,
                        "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                        x, a->y, x, a->y + a->h);
                fprintf(f,
                        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        x, a->y + a->h + 16, label);
        }
}

/* The worst gap of each interval of @s, at its middle, seconds before @end_ns: the line and a
 * circle where the probe stalled. */
static void timeline_series(FILE *f, const Area *a, const PlotSeries *s, uint64_t end_ns)
{
        uint64_t prev_end = 0;
        bool open = false;

        /* One polyline per stretch of consecutive intervals: a gap in the history (the daemon
         * was down) shows as a gap in the line, not as a slope. */
        for (size_t i = 0; i < s->n_points; i++) {
                const PlotPoint *p = &s->points[i];
                double t = -(double)(end_ns - p->start_ns - p->duration_ns / 2) / 1e9;

                if (p->max_gap_ns == 0) {
                        continue;
                }
                if (open && p->start_ns > prev_end + p->duration_ns / 2) {
                        fputs("\"/>\n", f);
                        open = false;
                }
                if (!open) {
                        fputs("<polyline class=\"line\" points=\"", f);
                        open = true;
                }
                fprintf(f, "%.2f,%.2f ", area_x(a, t), area_y(a, log10((double)p->max_gap_ns)));
                prev_end = p->start_ns + p->duration_ns;
        }
        if (open) {
                fputs("\"/>\n", f);
        }
        for (size_t i = 0; i < s->n_points; i++) {
                const PlotPoint *p = &s->points[i];
                double t = -(double)(end_ns - p->start_ns - p->duration_ns / 2) / 1e9;

                if (p->stalled && p->max_gap_ns > 0) {
                        fprintf(f,
                                "<circle class=\"stall\" cx=\"%.2f\" cy=\"%.2f\" r=\"3\">"
                                "<title>stalled</title></circle>\n",
                                area_x(a, t), area_y(a, log10((double)p->max_gap_ns)));
                }
        }
}

static void timeline_panel(FILE *f, double x0, double y0, const PlotSeries *s)
{
        Area a = {
                .x = x0 + MARGIN_LEFT,
                .y = y0 + MARGIN_TOP,
                .w = PANEL_WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
                .h = SVG_ROW - MARGIN_TOP - MARGIN_BOTTOM,
        };
        uint64_t end_ns = 0, min_gap = UINT64_MAX, max_gap = 0;
        char title[64];

        snprintf(title, sizeof(title), "CPU %d: worst gap per interval", s->cpu);
        for (size_t i = 0; i < s->n_points; i++) {
                const PlotPoint *p = &s->points[i];

                if (p->start_ns + p->duration_ns > end_ns) {
                        end_ns = p->start_ns + p->duration_ns;
                }
                if (p->max_gap_ns > 0) {
                        min_gap = p->max_gap_ns < min_gap ? p->max_gap_ns : min_gap;
                        max_gap = p->max_gap_ns > max_gap ? p->max_gap_ns : max_gap;
                }
        }
        if (max_gap == 0) {
                a.x_min = -60;
                a.x_max = 0;
                a.y_min = 1;
                a.y_max = 6;
                frame(f, &a, title, "time", "worst gap (log)");
                empty_note(f, &a, "no intervals");
                return;
        }
        a.x_min = -(double)(end_ns - s->points[0].start_ns) / 1e9;
        if (a.x_min > -1) {
                a.x_min = -1;
        }
        a.x_max = 0;
        a.y_min = floor(log10((double)min_gap));
        a.y_max = ceil(log10((double)max_gap));
        if (a.y_max - a.y_min < 2) {
                a.y_max = a.y_min + 2;
        }
        frame(f, &a, title, "time before the newest interval", "worst gap (log)");
        y_decades(f, &a, false);
        time_ticks(f, &a);
        timeline_series(f, &a, s, end_ns);
}

int svg_plot_write(FILE *f, const char *title, const PlotSeries *series, size_t n)
{
        double height = SVG_HEAD + (double)n * SVG_ROW + 10;

        if (n == 0) {
                return -EINVAL;
        }
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
        fprintf(f,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                "height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n",
                SVG_WIDTH, height, SVG_WIDTH, height);
        fputs("<title>", f);
        svg_escape(f, title);
        fputs("</title>\n", f);
        fputs("<style>\n"
              "text { font-family: sans-serif; fill: #222; }\n"
              ".title { font-size: 18px; font-weight: bold; }\n"
              ".panel { font-size: 13px; font-weight: bold; }\n"
              ".axis { font-size: 12px; }\n"
              ".tick { font-size: 11px; fill: #444; }\n"
              ".note { font-size: 14px; fill: #888; }\n"
              ".frame { fill: none; stroke: #444; stroke-width: 1; }\n"
              ".grid { stroke: #ddd; stroke-width: 1; }\n"
              ".bar { fill: #3b78b0; }\n"
              ".line { fill: none; stroke: #c0392b; stroke-width: 1.2; }\n"
              ".stall { fill: #000; }\n"
              "</style>\n",
              f);
        fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#fff\"/>\n",
                SVG_WIDTH, height);
        fputs("<text class=\"title\" x=\"20\" y=\"30\">", f);
        svg_escape(f, title);
        fputs("</text>\n", f);
        for (size_t i = 0; i < n; i++) {
                double y0 = SVG_HEAD + (double)i * SVG_ROW;

                fprintf(f, "<g id=\"cpu%d\">\n", series[i].cpu);
                histogram_panel(f, 10, y0, &series[i]);
                timeline_panel(f, 10 + PANEL_WIDTH, y0, &series[i]);
                fputs("</g>\n", f);
        }
        fputs("</svg>\n", f);
        if (fflush(f) != 0 || ferror(f)) {
                return -EIO;
        }
        return 0;
}

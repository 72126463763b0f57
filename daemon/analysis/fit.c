#include "fit.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A Cholesky pivot below this (columns scaled to unit norm, so relative) means the column is a
 * linear combination of those already in: the sources cannot be told apart. */
#define PIVOT_MIN 1e-10

struct Fit {
        size_t max_intervals;
        size_t n_rows;
        double *y;          /* lost ns per interval */
        size_t *row_end;    /* items of row i: [row_end[i-1], row_end[i]) */
        AttribCount *items; /* all rows' counts, concatenated */
        size_t n_items;
        size_t cap_items;
        size_t cap_rows;
        uint64_t moved[ATTRIB_MAX_SOURCES]; /* intervals in which the source moved */
        uint64_t total[ATTRIB_MAX_SOURCES]; /* occurrences, saturating */
};

int fit_new(size_t max_intervals, Fit **ret)
{
        Fit *f;

        if (!ret || max_intervals < FIT_MIN_INTERVALS) {
                return -EINVAL;
        }
        f = calloc(1, sizeof(*f));
        if (!f) {
                return -ENOMEM;
        }
        f->max_intervals = max_intervals;
        *ret = f;
        return 0;
}

Fit *fit_free(Fit *f)
{
        if (!f) {
                return NULL;
        }
        free(f->y);
        free(f->row_end);
        free(f->items);
        free(f);
        return NULL;
}

size_t fit_intervals(const Fit *f)
{
        return f ? f->n_rows : 0;
}

void fit_clear(Fit *f)
{
        if (!f) {
                return;
        }
        f->n_rows = 0;
        f->n_items = 0;
        memset(f->moved, 0, sizeof(f->moved));
        memset(f->total, 0, sizeof(f->total));
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
        size_t n = *cap ? *cap : 64;
        void *q;

        if (need <= *cap) {
                return 0;
        }
        while (n < need) {
                n *= 2;
        }
        q = reallocarray(*p, n, size);
        if (!q) {
                return -ENOMEM;
        }
        *p = q;
        *cap = n;
        return 0;
}

int fit_add(Fit *f, double lost_ns, const AttribCount *items, size_t n)
{
        bool seen[ATTRIB_MAX_SOURCES] = {false};
        size_t kept = 0, cap_rows;
        int r;

        if (!f || (n > 0 && !items) || !isfinite(lost_ns) || lost_ns < 0) {
                return -EINVAL;
        }
        if (f->n_rows >= f->max_intervals) {
                return -ENOSPC;
        }
        for (size_t i = 0; i < n; i++) {
                if (items[i].id >= ATTRIB_MAX_SOURCES || seen[items[i].id]) {
                        return -EINVAL;
                }
                seen[items[i].id] = true;
        }
        cap_rows = f->cap_rows;
        r = grow((void **)&f->y, &cap_rows, f->n_rows + 1, sizeof(*f->y));
        if (r < 0) {
                return r;
        }
        cap_rows = f->cap_rows;
        r = grow((void **)&f->row_end, &cap_rows, f->n_rows + 1, sizeof(*f->row_end));
        if (r < 0) {
                return r;
        }
        f->cap_rows = cap_rows;
        r = grow((void **)&f->items, &f->cap_items, f->n_items + n, sizeof(*f->items));
        if (r < 0) {
                return r;
        }
        for (size_t i = 0; i < n; i++) {
                uint16_t id = items[i].id;

                if (items[i].count == 0) {
                        continue;
                }
                f->items[f->n_items + kept++] = items[i];
                f->moved[id]++;
                f->total[id] = f->total[id] > UINT64_MAX - items[i].count
                                       ? UINT64_MAX
                                       : f->total[id] + items[i].count;
        }
        f->n_items += kept;
        f->y[f->n_rows] = lost_ns;
        f->row_end[f->n_rows] = f->n_items;
        f->n_rows++;
        return 0;
}

/* Solves G_PP z_P = b_P for the columns with @in set, by Cholesky; z is 0 elsewhere. False
 * when G_PP is not positive definite (dependent columns). */
static bool solve_passive(const double *g, const double *b, size_t m, const bool *in, double *z)
{
        double l[FIT_MAX_SOURCES][FIT_MAX_SOURCES], v[FIT_MAX_SOURCES];
        size_t idx[FIT_MAX_SOURCES], k = 0;

        for (size_t j = 0; j < m; j++) {
                z[j] = 0;
                if (in[j]) {
                        idx[k++] = j;
                }
        }
        for (size_t i = 0; i < k; i++) {
                for (size_t j = 0; j <= i; j++) {
                        double s = g[idx[i] * m + idx[j]];

                        for (size_t p = 0; p < j; p++) {
                                s -= l[i][p] * l[j][p];
                        }
                        if (i == j) {
                                if (!(s > PIVOT_MIN)) {
                                        return false;
                                }
                                l[i][i] = sqrt(s);
                        } else {
                                l[i][j] = s / l[j][j];
                        }
                }
        }
        for (size_t i = 0; i < k; i++) {
                double s = b[idx[i]];

                for (size_t p = 0; p < i; p++) {
                        s -= l[i][p] * v[p];
                }
                v[i] = s / l[i][i];
        }
        for (size_t i = k; i-- > 0;) {
                double s = v[i];

                for (size_t p = i + 1; p < k; p++) {
                        s -= l[p][i] * v[p];
                }
                v[i] = s / l[i][i];
        }
        for (size_t i = 0; i < k; i++) {
                z[idx[i]] = v[i];
        }
        return true;
}

/* Lawson-Hanson non-negative least squares on the normal equations G x = b (G = X'X with unit
 * diagonal, b = X'y): min |y - X x| subject to x >= 0. */
static void nnls(const double *g, const double *b, size_t m, double tol, double *x)
{
        bool in[FIT_MAX_SOURCES] = {false}, excluded[FIT_MAX_SOURCES] = {false};
        double z[FIT_MAX_SOURCES], w[FIT_MAX_SOURCES];

        for (size_t j = 0; j < m; j++) {
                x[j] = 0;
        }
        /* Each outer step adds one column; dropping columns in the inner loop strictly lowers
         * the residual, so few iterations are ever needed; the bound is for safety. */
        for (size_t outer = 0; outer < 3 * m + 3; outer++) {
                size_t t = m;

                for (size_t j = 0; j < m; j++) {
                        w[j] = b[j];
                        for (size_t k = 0; k < m; k++) {
                                w[j] -= g[j * m + k] * x[k];
                        }
                }
                for (size_t j = 0; j < m; j++) {
                        if (!in[j] && !excluded[j] && w[j] > tol && (t == m || w[j] > w[t])) {
                                t = j;
                        }
                }
                if (t == m) {
                        return;
                }
                in[t] = true;
                for (size_t inner = 0; inner < 3 * m + 3; inner++) {
                        double alpha = INFINITY;
                        size_t block = m;
                        bool feasible = true;

                        if (!solve_passive(g, b, m, in, z)) {
                                /* t depends on the columns already in: it cannot be told apart
                                 * from them, leave it out. */
                                in[t] = false;
                                excluded[t] = true;
                                break;
                        }
                        for (size_t j = 0; j < m; j++) {
                                if (in[j] && z[j] <= 0) {
                                        feasible = false;
                                        if (x[j] - z[j] > 0 && x[j] / (x[j] - z[j]) < alpha) {
                                                alpha = x[j] / (x[j] - z[j]);
                                                block = j;
                                        }
                                }
                        }
                        if (feasible) {
                                memcpy(x, z, m * sizeof(*x));
                                break;
                        }
                        if (block == m) {
                                /* z_j <= 0 with x_j = 0: step nowhere, just drop those. */
                                alpha = 0;
                        }
                        /* Move towards z until the first coefficient reaches 0 (exactly, for
                         * the blocking one), and take out of the fit every one that did. */
                        for (size_t j = 0; j < m; j++) {
                                x[j] += alpha * (z[j] - x[j]);
                                if (in[j] && (j == block || x[j] <= tol)) {
                                        in[j] = false;
                                        x[j] = 0;
                                }
                        }
                }
        }
}

static int cmp_source(const void *a, const void *b)
{
        const FitSource *x = a, *y = b;

        if (x->share != y->share) {
                return x->share < y->share ? 1 : -1;
        }
        if (x->cost_ns != y->cost_ns) {
                return x->cost_ns < y->cost_ns ? 1 : -1;
        }
        if (x->count != y->count) {
                return x->count < y->count ? 1 : -1;
        }
        return (int)x->id - (int)y->id;
}

static double clamp01(double v)
{
        return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Chooses the columns: the sources that moved in the most intervals carry the most
 * information; among equals, the larger counts. Sets @col[id] to the column of source @id (-1:
 * none) and @ids[column] to its source. Returns the number of columns. */
static size_t pick_columns(const Fit *f, int col[static ATTRIB_MAX_SOURCES],
                           uint16_t ids[static FIT_MAX_SOURCES])
{
        size_t m = 0;

        for (size_t i = 0; i < ATTRIB_MAX_SOURCES; i++) {
                col[i] = -1;
        }
        for (;;) {
                size_t best = ATTRIB_MAX_SOURCES;

                if (m >= FIT_MAX_SOURCES) {
                        break;
                }
                for (size_t id = 0; id < ATTRIB_MAX_SOURCES; id++) {
                        if (col[id] >= 0 || f->moved[id] == 0) {
                                continue;
                        }
                        if (best == ATTRIB_MAX_SOURCES || f->moved[id] > f->moved[best] ||
                            (f->moved[id] == f->moved[best] && f->total[id] > f->total[best])) {
                                best = id;
                        }
                }
                if (best == ATTRIB_MAX_SOURCES) {
                        break;
                }
                col[best] = (int)m;
                ids[m++] = (uint16_t)best;
        }
        return m;
}

/* The normal equations G x = b of the @m columns, and the sum and sum of squares of y. */
static void normal_equations(const Fit *f, const int *col, size_t m, double *g, double *b,
                             double *ret_yy, double *ret_ysum)
{
        double yy = 0, ysum = 0;
        size_t start = 0;

        for (size_t i = 0; i < f->n_rows; i++) {
                size_t end = f->row_end[i];
                double xi[FIT_MAX_SOURCES] = {0};

                for (size_t k = start; k < end; k++) {
                        int c = col[f->items[k].id];

                        if (c >= 0) {
                                xi[c] = (double)f->items[k].count;
                        }
                }
                for (size_t p = 0; p < m; p++) {
                        if (xi[p] == 0) {
                                continue;
                        }
                        b[p] += xi[p] * f->y[i];
                        for (size_t q = 0; q < m; q++) {
                                g[p * m + q] += xi[p] * xi[q];
                        }
                }
                yy += f->y[i] * f->y[i];
                ysum += f->y[i];
                start = end;
        }
        *ret_yy = yy;
        *ret_ysum = ysum;
}

/* Solves the normal equations for non-negative costs per occurrence, into @cost. On return
 * @g is the normal matrix of unit-norm columns and @scale each column's norm. */
static void solve_costs(double *g, double *b, size_t m, double yy, double *cost, double *scale)
{
        double x[FIT_MAX_SOURCES];

        /* Unit-norm columns: counts of LOC (thousands) and SMIs (a few) on one scale. */
        for (size_t p = 0; p < m; p++) {
                scale[p] = sqrt(g[p * m + p]);
        }
        for (size_t p = 0; p < m; p++) {
                b[p] /= scale[p];
                for (size_t q = 0; q < m; q++) {
                        g[p * m + q] /= scale[p] * scale[q];
                }
        }
        nnls(g, b, m, 1e-10 * sqrt(yy), x);
        for (size_t p = 0; p < m; p++) {
                cost[p] = x[p] > 0 ? x[p] / scale[p] : 0;
        }
}

/* The coefficient of determination of @cost, and the residual sum of squares in @ret_rss. The
 * residual comes from the data, not from the normal equations, which lose it to cancellation
 * when the fit is close. */
static double fit_r2(const Fit *f, const int *col, const double *cost, double yy, double ysum,
                     double *ret_rss)
{
        double mean = ysum / (double)f->n_rows, ss_tot = 0, ss_res = 0;
        size_t start = 0;

        for (size_t i = 0; i < f->n_rows; i++) {
                size_t end = f->row_end[i];
                double pred = 0, d;

                for (size_t k = start; k < end; k++) {
                        int c = col[f->items[k].id];

                        if (c >= 0) {
                                pred += cost[c] * (double)f->items[k].count;
                        }
                }
                d = f->y[i] - pred;
                ss_res += d * d;
                ss_tot += (f->y[i] - mean) * (f->y[i] - mean);
                start = end;
        }
        *ret_rss = ss_res;
        if (ss_tot > 0) {
                return clamp01(1 - ss_res / ss_tot);
        }
        return ss_res <= 1e-18 * (yy > 1 ? yy : 1) ? 1 : 0;
}

/* A column whose Cholesky pivot, among the columns before it, falls below this is a
 * combination of them (relative: unit-norm columns). */
#define DEPENDENT_PIVOT 1e-6
/* A dependent column's coefficient on a column that it moves with, at or above which that
 * column cannot be told from it. */
#define DEPENDENT_WEIGHT 1e-3

/* The standard error of the cost of each of the @m columns, given the normal matrix @g of
 * unit-norm columns and their norms @scale, and the residual sum of squares @rss over @rows
 * intervals: that of least squares over all the columns, sqrt(s2 * inv(G)_jj) / scale_j with
 * s2 = rss / (rows - m). A column that is a combination of others (to DEPENDENT_PIVOT), and
 * every column it is made of, gets INFINITY: only their combination can be told, however the
 * fit shared it out. So does every column when no degree of freedom is left. */
static void cost_stderr(const double *g, const double *scale, size_t m, double rss, size_t rows,
                        double *ret)
{
        bool in[FIT_MAX_SOURCES] = {false}, confounded[FIT_MAX_SOURCES] = {false};
        double s2 = rows > m ? rss / (double)(rows - m) : INFINITY;

        /* The independent columns, in order; each dependent one marks what it is made of. */
        for (size_t j = 0; j < m; j++) {
                double c[FIT_MAX_SOURCES], rest = g[j * m + j];

                if (solve_passive(g, g + j * m, m, in, c)) {
                        for (size_t i = 0; i < m; i++) {
                                rest -= in[i] ? c[i] * g[j * m + i] : 0;
                        }
                } else {
                        c[0] = 0;
                }
                if (rest > DEPENDENT_PIVOT) {
                        in[j] = true;
                        continue;
                }
                confounded[j] = true;
                for (size_t i = 0; i < m; i++) {
                        if (in[i] && fabs(c[i]) >= DEPENDENT_WEIGHT) {
                                confounded[i] = true;
                        }
                }
        }
        for (size_t j = 0; j < m; j++) {
                double e[FIT_MAX_SOURCES] = {0}, z[FIT_MAX_SOURCES];

                e[j] = 1;
                /* z = inv(G_in) e_j, so z_j = inv(G_in)_jj */
                ret[j] = !confounded[j] && isfinite(s2) && solve_passive(g, e, m, in, z) && z[j] > 0
                                 ? sqrt(s2 * z[j]) / scale[j]
                                 : INFINITY;
        }
}

int fit_solve(const Fit *f, FitResult *ret)
{
        double g[FIT_MAX_SOURCES * FIT_MAX_SOURCES] = {0}, b[FIT_MAX_SOURCES] = {0};
        double cost[FIT_MAX_SOURCES], scale[FIT_MAX_SOURCES], se[FIT_MAX_SOURCES];
        int col[ATTRIB_MAX_SOURCES];
        uint16_t ids[FIT_MAX_SOURCES];
        double yy, ysum, rss, explained = 0;
        size_t m;

        if (!f || !ret) {
                return -EINVAL;
        }
        if (f->n_rows < FIT_MIN_INTERVALS) {
                return -EAGAIN;
        }
        memset(ret, 0, sizeof(*ret));
        ret->intervals = f->n_rows;

        m = pick_columns(f, col, ids);
        normal_equations(f, col, m, g, b, &yy, &ysum);
        solve_costs(g, b, m, yy, cost, scale);
        ret->r2 = fit_r2(f, col, cost, yy, ysum, &rss);
        cost_stderr(g, scale, m, rss, f->n_rows, se);

        ret->lost_ns = ysum;
        ret->n = m;
        for (size_t p = 0; p < m; p++) {
                FitSource *s = &ret->sources[p];

                s->id = ids[p];
                s->count = f->total[ids[p]];
                s->cost_ns = cost[p];
                s->share = ysum > 0 ? clamp01(cost[p] * (double)s->count / ysum) : 0;
                s->share_stderr = ysum > 0          ? se[p] * (double)s->count / ysum
                                  : isfinite(se[p]) ? 0
                                                    : INFINITY;
                explained += s->share;
        }
        ret->explained = clamp01(explained);
        qsort(ret->sources, m, sizeof(ret->sources[0]), cmp_source);
        return 0;
}

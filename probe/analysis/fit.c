#include "fit.h"
#include "fit-internal.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The columns: the sources, then the background (the interval's length). */
#define FIT_COLUMNS (FIT_MAX_SOURCES + 1)

/* A Cholesky pivot below this (columns scaled to unit norm, so relative) means the column is a
 * linear combination of those already in: the sources cannot be told apart. */
#define PIVOT_MIN 1e-10

struct Fit {
        size_t max_intervals;
        size_t n_rows;
        double *y;          /* lost ns per interval */
        double *len_s;      /* each interval's length, in seconds */
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
        free(f->len_s);
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

int fit_add(Fit *f, double lost_ns, double duration_ns, const AttribCount *items, size_t n)
{
        bool seen[ATTRIB_MAX_SOURCES] = {false};
        size_t kept = 0, cap_rows;
        int r;

        if (!f || (n > 0 && !items) || !isfinite(lost_ns) || lost_ns < 0 ||
            !isfinite(duration_ns) || duration_ns <= 0) {
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
        r = grow((void **)&f->len_s, &cap_rows, f->n_rows + 1, sizeof(*f->len_s));
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
        f->len_s[f->n_rows] = duration_ns / 1e9;
        f->row_end[f->n_rows] = f->n_items;
        f->n_rows++;
        return 0;
}

/* Solves G_PP z_P = b_P for the columns with @in set, by Cholesky; z is 0 elsewhere. False
 * when G_PP is not positive definite (dependent columns). */
static bool solve_passive(const double *g, const double *b, size_t m, const bool *in, double *z)
{
        double l[FIT_COLUMNS][FIT_COLUMNS], v[FIT_COLUMNS];
        size_t idx[FIT_COLUMNS], k = 0;

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
        bool in[FIT_COLUMNS] = {false}, excluded[FIT_COLUMNS] = {false};
        double z[FIT_COLUMNS], w[FIT_COLUMNS];

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

/* @ns of the time lost @lost_ns, 0..1 (0 when nothing was lost). */
static double share_of(double ns, double lost_ns)
{
        return lost_ns > 0 ? clamp01(ns / lost_ns) : 0;
}

/* A standard error of @ns as a share of @lost_ns: INFINITY stays (unknown), 0 when nothing was
 * lost. */
static double stderr_share(double ns, double lost_ns)
{
        return !isfinite(ns) ? INFINITY : lost_ns > 0 ? ns / lost_ns : 0;
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

/* The normal equations G x = b of the @m columns (the last the background: each interval's
 * length), the sum of each column, and the sum and sum of squares of y. */
static void normal_equations(const Fit *f, const int *col, size_t m, double *g, double *b,
                             double *colsum, double *ret_yy, double *ret_ysum)
{
        double yy = 0, ysum = 0;
        size_t start = 0;

        for (size_t i = 0; i < f->n_rows; i++) {
                size_t end = f->row_end[i];
                double xi[FIT_COLUMNS] = {0};

                for (size_t k = start; k < end; k++) {
                        int c = col[f->items[k].id];

                        if (c >= 0) {
                                xi[c] = (double)f->items[k].count;
                        }
                }
                xi[m - 1] = f->len_s[i];
                for (size_t p = 0; p < m; p++) {
                        if (xi[p] == 0) {
                                continue;
                        }
                        b[p] += xi[p] * f->y[i];
                        colsum[p] += xi[p];
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
        double x[FIT_COLUMNS];

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

/* The coefficient of determination of @cost and @background (ns lost per second), and the
 * residual sum of squares in @ret_rss. The
 * residual comes from the data, not from the normal equations, which lose it to cancellation
 * when the fit is close. */
static double fit_r2(const Fit *f, const int *col, const double *cost, double background, double yy,
                     double ysum, double *ret_rss)
{
        double mean = ysum / (double)f->n_rows, ss_tot = 0, ss_res = 0;
        size_t start = 0;

        for (size_t i = 0; i < f->n_rows; i++) {
                size_t end = f->row_end[i];
                double pred = background * f->len_s[i], d;

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

/* Which of the @m columns (normal matrix @g of unit-norm columns) are independent, in order:
 * @in. A column that is a combination of those before it (to DEPENDENT_PIVOT) is not, and
 * @made_of[j] has bit i set for each column i it is made of (its own bit included). */
static void independent_columns(const double *g, size_t m, bool *in, uint32_t *made_of)
{
        for (size_t j = 0; j < m; j++) {
                in[j] = false;
        }
        for (size_t j = 0; j < m; j++) {
                double c[FIT_COLUMNS], rest = g[j * m + j];

                made_of[j] = 0;
                if (solve_passive(g, g + j * m, m, in, c)) {
                        for (size_t i = 0; i < m; i++) {
                                rest -= in[i] ? c[i] * g[j * m + i] : 0;
                        }
                }
                if (rest > DEPENDENT_PIVOT) {
                        in[j] = true;
                        continue;
                }
                made_of[j] = 1u << j;
                for (size_t i = 0; i < m; i++) {
                        if (in[i] && fabs(c[i]) >= DEPENDENT_WEIGHT) {
                                made_of[j] |= 1u << i;
                        }
                }
        }
}

/* The residual variance s2 = rss / (rows - m), INFINITY without a degree of freedom left. */
static double residual_variance(double rss, size_t rows, size_t m)
{
        return rows > m ? rss / (double)(rows - m) : INFINITY;
}

/* The standard error of the cost of each of the @m columns, given the normal matrix @g of
 * unit-norm columns and their norms @scale, the independent columns @in and what the others
 * are made of (independent_columns()), and the residual variance @s2: that of least squares
 * over all the columns, sqrt(s2 * inv(G)_jj) / scale_j. A column that is a combination of
 * others, and every column it is made of, gets INFINITY: only their combination can be told,
 * however the fit shared it out. So does every column when no degree of freedom is left. */
static void cost_stderr(const double *g, const double *scale, size_t m, const bool *in,
                        const uint32_t *made_of, double s2, double *ret)
{
        uint32_t confounded = 0;

        for (size_t j = 0; j < m; j++) {
                confounded |= made_of[j];
        }
        for (size_t j = 0; j < m; j++) {
                double e[FIT_COLUMNS] = {0}, z[FIT_COLUMNS];

                e[j] = 1;
                /* z = inv(G_in) e_j, so z_j = inv(G_in)_jj */
                ret[j] = !(confounded & (1u << j)) && isfinite(s2) &&
                                         solve_passive(g, e, m, in, z) && z[j] > 0
                                 ? sqrt(s2 * z[j]) / scale[j]
                                 : INFINITY;
        }
}

static unsigned find_root(unsigned *parent, unsigned j)
{
        while (parent[j] != j) {
                j = parent[j] = parent[parent[j]];
        }
        return j;
}

/* The covariance over the @rows intervals of columns @i and @j, from the normal matrix @g of
 * unit-norm columns, their norms @scale and their sums @colsum (@m columns). */
static double column_cov(const double *g, const double *scale, const double *colsum, size_t m,
                         size_t rows, size_t i, size_t j)
{
        return g[i * m + j] * scale[i] * scale[j] / (double)rows -
               colsum[i] / (double)rows * colsum[j] / (double)rows;
}

/* Groups the first @n of the @m columns whose counts correlate (over the @rows intervals) at
 * least FIT_GROUP_CORRELATION, directly or through others, from the normal matrix @g of
 * unit-norm columns, their norms @scale and their sums @colsum: @group[j] is the first column
 * of j's group; the others are alone. The correlation is that of what the intervals' lengths
 * (the last column) leave of the counts: a longer interval holds more of every source, which
 * the background's column already says, and says nothing of which sources move together.
 * Columns that never vary (the same count in every interval) correlate with none. */
static void group_columns(const double *g, const double *scale, const double *colsum, size_t n,
                          size_t m, size_t rows, unsigned *group)
{
        double var[FIT_COLUMNS], len_cov[FIT_COLUMNS], rounding[FIT_COLUMNS];
        double len_var = column_cov(g, scale, colsum, m, rows, m - 1, m - 1);
        /* What is left of a variance after centring, below 1e-9 of the second moment it came
         * from (1e-12 for the lengths), is rounding: a column that does not vary. */
        bool by_len = len_var >
                      1e-12 * g[(m - 1) * m + m - 1] * scale[m - 1] * scale[m - 1] / (double)rows;

        for (size_t j = n; j < m; j++) {
                group[j] = (unsigned)j;
        }
        for (size_t j = 0; j < n; j++) {
                len_cov[j] = by_len ? column_cov(g, scale, colsum, m, rows, j, m - 1) : 0;
                var[j] = column_cov(g, scale, colsum, m, rows, j, j) -
                         (by_len ? len_cov[j] * len_cov[j] / len_var : 0);
                rounding[j] = 1e-9 * g[j * m + j] * scale[j] * scale[j] / (double)rows;
                group[j] = (unsigned)j;
        }
        for (size_t i = 0; i < n; i++) {
                for (size_t j = i + 1; j < n; j++) {
                        double cov = column_cov(g, scale, colsum, m, rows, i, j) -
                                     (by_len ? len_cov[i] * len_cov[j] / len_var : 0);

                        if (var[i] > rounding[i] && var[j] > rounding[j] &&
                            cov >= FIT_GROUP_CORRELATION * sqrt(var[i] * var[j])) {
                                unsigned a = find_root(group, (unsigned)i),
                                         b = find_root(group, (unsigned)j);

                                group[a > b ? a : b] = a < b ? a : b;
                        }
                }
        }
        for (size_t j = 0; j < n; j++) {
                group[j] = find_root(group, (unsigned)j);
        }
}

/* The standard error of the total of group @root (columns with @group == root): a_j =
 * count_j / scale_j on its independent columns, sqrt(s2 * a' inv(G_in) a). INFINITY when a
 * column of the group is made of columns outside it, or the other way round. */
static double group_stderr(const double *g, const double *scale, const double *count, size_t m,
                           const bool *in, const uint32_t *made_of, const unsigned *group,
                           unsigned root, double s2)
{
        double a[FIT_COLUMNS] = {0}, z[FIT_COLUMNS], var = 0;
        uint32_t members = 0;

        for (size_t j = 0; j < m; j++) {
                members |= group[j] == root ? 1u << j : 0;
        }
        for (size_t j = 0; j < m; j++) {
                if (made_of[j] && (made_of[j] & members) && (made_of[j] & ~members)) {
                        return INFINITY;
                }
                if (in[j] && group[j] == root) {
                        a[j] = count[j] / scale[j];
                }
        }
        if (!isfinite(s2) || !solve_passive(g, a, m, in, z)) {
                return INFINITY;
        }
        for (size_t j = 0; j < m; j++) {
                var += in[j] ? a[j] * z[j] : 0;
        }
        return var > 0 ? sqrt(s2 * var) : 0;
}

int fit_solve(const Fit *f, FitResult *ret)
{
        double g[FIT_COLUMNS * FIT_COLUMNS] = {0}, b[FIT_COLUMNS] = {0};
        double cost[FIT_COLUMNS], scale[FIT_COLUMNS], se[FIT_COLUMNS];
        double colsum[FIT_COLUMNS] = {0}, count[FIT_COLUMNS], s2;
        bool in[FIT_COLUMNS];
        uint32_t made_of[FIT_COLUMNS];
        unsigned group[FIT_COLUMNS];
        int col[ATTRIB_MAX_SOURCES];
        uint16_t ids[FIT_MAX_SOURCES];
        double yy, ysum, rss, explained = 0;
        size_t m, bg;

        if (!f || !ret) {
                return -EINVAL;
        }
        if (f->n_rows < FIT_MIN_INTERVALS) {
                return -EAGAIN;
        }
        memset(ret, 0, sizeof(*ret));
        ret->intervals = f->n_rows;

        /* The sources' columns, then the background's. */
        bg = pick_columns(f, col, ids);
        m = bg + 1;
        normal_equations(f, col, m, g, b, colsum, &yy, &ysum);
        solve_costs(g, b, m, yy, cost, scale);
        ret->r2 = fit_r2(f, col, cost, cost[bg], yy, ysum, &rss);
        s2 = residual_variance(rss, f->n_rows, m);
        independent_columns(g, m, in, made_of);
        cost_stderr(g, scale, m, in, made_of, s2, se);
        /* The background is no source: it joins no group. */
        group_columns(g, scale, colsum, bg, m, f->n_rows, group);
        for (size_t p = 0; p < bg; p++) {
                count[p] = (double)f->total[ids[p]];
        }
        count[bg] = colsum[bg];

        ret->lost_ns = ysum;
        ret->n = bg;
        for (size_t p = 0; p < bg; p++) {
                FitSource *s = &ret->sources[p];
                double gse = group_stderr(g, scale, count, m, in, made_of, group, group[p], s2);

                s->id = ids[p];
                s->count = f->total[ids[p]];
                s->cost_ns = cost[p];
                s->share = share_of(cost[p] * count[p], ysum);
                s->share_stderr = stderr_share(se[p] * count[p], ysum);
                s->group = ids[group[p]];
                s->group_share_stderr = stderr_share(gse, ysum);
                explained += s->share;
        }
        ret->background_ns_per_s = cost[bg];
        ret->background_share = share_of(cost[bg] * count[bg], ysum);
        ret->background_share_stderr = stderr_share(se[bg] * count[bg], ysum);
        ret->explained = clamp01(explained);
        qsort(ret->sources, bg, sizeof(ret->sources[0]), cmp_source);
        return 0;
}

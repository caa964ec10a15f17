/* rank.c: rank correlations of two paired samples: Spearman's rho (the Pearson correlation of
 * the ranks, tied values sharing the mean of their places) and Kendall's tau-b (concordant
 * minus discordant pairs over the geometric mean of the pairs untied in each sample). Used to
 * ask whether two orderings of the same things agree (docs/MATH.md section 5). Only the order
 * of the values counts, so infinities take part (+inf last, equal infinities tied). */
#include "trainbench/stats.h"

#include <math.h>
#include <stdlib.h>

static tb_status check_pairs(const double *x, const double *y, int64_t n, const char *what,
                             tb_error *err)
{
    if (!x || !y || n < 2)
        return tb_fail(err, TB_ERR_INVALID, "%s: needs 2 or more pairs, got %lld", what,
                       (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (isnan(x[i]) || isnan(y[i]))
            return tb_fail(err, TB_ERR_INVALID, "%s: pair %lld is not a number (%g, %g)", what,
                           (long long)i + 1, x[i], y[i]);
    return TB_OK;
}

/* The ranks of x (1 the smallest; tied values the mean of their places), O(n^2): the samples
 * ranked here are a handful of cells. */
static void ranks_of(const double *x, int64_t n, double *r)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t below = 0, tied = 0;
        for (int64_t j = 0; j < n; j++) {
            if (j == i) continue;
            if (x[j] < x[i]) below++;
            else if (x[j] == x[i]) tied++;
        }
        r[i] = 1.0 + (double)below + (double)tied / 2.0;
    }
}

tb_status tb_spearman_rho(const double *x, const double *y, int64_t n, double *rho,
                          tb_error *err)
{
    tb_status st = check_pairs(x, y, n, "spearman", err);
    if (st != TB_OK) return st;
    double *r = malloc(2 * (size_t)n * sizeof *r);
    if (!r) return tb_fail(err, TB_ERR_NOMEM, "spearman: out of memory");
    ranks_of(x, n, r);
    ranks_of(y, n, r + n);
    const double mean = (double)(n + 1) / 2.0; /* the mean of any ranking of n */
    double sxy = 0, sxx = 0, syy = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = r[i] - mean, b = r[n + i] - mean;
        sxy += a * b;
        sxx += a * a;
        syy += b * b;
    }
    free(r);
    if (sxx == 0 || syy == 0)
        return tb_fail(err, TB_ERR_INVALID, "spearman: every %s value is the same: no order "
                       "to correlate", sxx == 0 ? "first" : "second");
    *rho = sxy / sqrt(sxx * syy);
    return TB_OK;
}

tb_status tb_kendall_tau(const double *x, const double *y, int64_t n, double *tau,
                         tb_error *err)
{
    tb_status st = check_pairs(x, y, n, "kendall", err);
    if (st != TB_OK) return st;
    double concordant = 0, discordant = 0, untied_x = 0, untied_y = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) {
            const int dx = (x[i] > x[j]) - (x[i] < x[j]), dy = (y[i] > y[j]) - (y[i] < y[j]);
            untied_x += dx != 0;
            untied_y += dy != 0;
            if (dx * dy > 0) concordant++;
            else if (dx * dy < 0) discordant++;
        }
    if (untied_x == 0 || untied_y == 0)
        return tb_fail(err, TB_ERR_INVALID, "kendall: every %s value is the same: no order "
                       "to correlate", untied_x == 0 ? "first" : "second");
    *tau = (concordant - discordant) / sqrt(untied_x * untied_y);
    return TB_OK;
}

/* detection.c: the detection rates of three comparison methods (Bouthillier et al. 2021): over
 * simulated comparisons resampled from a study's recorded runs, how often a single run, the
 * mean of k runs and the P(A>B) test at gamma declare "A better than B", on the study's two
 * cells (a true difference, the medians of all their runs) and on each cell against itself
 * (no true difference). */
#include "study/study_impl.h"
#include "trainbench/stats.h"
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainbench/rng.h"

static bool better(double x, double y, bool higher) { return higher ? x > y : x < y; }

static double mean_of(const double *x, int k)
{
    double s = 0;
    for (int i = 0; i < k; i++) s += x[i];
    return s / k;
}

tb_status tb_study_detection_rates_of(const double *a, int64_t na, const double *b, int64_t nb,
                                      int n, int k, double gamma, int resamples, bool higher,
                                      uint64_t seed, tb_study_detection_rates *out,
                                      tb_error *err)
{
    if (!a || !b || !out)
        return tb_fail(err, TB_ERR_INVALID, "detection rates: %s is NULL",
                       !a ? "a" : !b ? "b" : "out");
    if (na < 1 || nb < 1 || n < 1 || k < 1 || k > n || resamples < 1 ||
        !(gamma > 0.5 && gamma < 1))
        return tb_fail(err, TB_ERR_INVALID, "detection rates: need na, nb, n, resamples >= 1, "
                       "1 <= k <= n and gamma in (0.5, 1); got na %lld, nb %lld, n %d, k %d, "
                       "resamples %d, gamma %g", (long long)na, (long long)nb, n, k, resamples,
                       gamma);
    memset(out, 0, sizeof *out);
    double *x = malloc(2 * (size_t)n * sizeof *x);
    if (!x) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the detection rates");
    double *y = x + n;
    tb_pab_options o = tb_pab_options_default();
    o.direction = higher ? TB_HIGHER_IS_BETTER : TB_LOWER_IS_BETTER;
    o.gamma = gamma;
    tb_rng rng = tb_rng_make(seed, 0xde7ec7);
    int64_t single = 0, mean = 0, pab = 0;
    tb_status st = TB_OK;
    for (int r = 0; r < resamples && st == TB_OK; r++) {
        for (int i = 0; i < n; i++) {
            x[i] = a[tb_rng_below(&rng, (uint64_t)na)];
            y[i] = b[tb_rng_below(&rng, (uint64_t)nb)];
        }
        tb_pab_result p;
        st = tb_pab_paired(x, y, n, &o, &p, err);
        single += better(x[0], y[0], higher);
        mean += better(mean_of(x, k), mean_of(y, k), higher);
        pab += st == TB_OK && p.verdict == TB_VERDICT_A_BETTER;
    }
    free(x);
    if (st != TB_OK) return st;
    out->resamples = resamples;
    out->single = (double)single / resamples;
    out->mean = (double)mean / resamples;
    out->pab = (double)pab / resamples;
    return TB_OK;
}

/* The finite runs of cell c into out (sorted); their count and median. */
static int64_t finite_sorted(const tb_study_values *v, int c, double *out, double *median)
{
    int64_t m = 0;
    for (int i = 0; i < v->seeds; i++) {
        double x = v->v[(size_t)c * (size_t)v->seeds + (size_t)i];
        if (isfinite(x)) out[m++] = x;
    }
    tb_stats_sort(out, m);
    *median = tb_quantile_sorted(out, m, 0.5); /* NaN for none */
    return m;
}

tb_status tb_study_detection_compute(const tb_study_plan *plan, const tb_study_values *v,
                                     tb_study_detection_fig *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    if (v->cells != 2)
        return tb_fail(err, TB_ERR_INVALID, "detection figure: %d cells (it needs two)",
                       v->cells);
    double *x = malloc(2 * ((size_t)v->seeds + 1) * sizeof *x);
    if (!x) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the detection figure");
    double *y = x + v->seeds + 1, m0, m1;
    const bool higher = tb_study_metric_higher_is_better(plan->metric);
    int64_t n0 = finite_sorted(v, 0, x, &m0), n1 = finite_sorted(v, 1, y, &m1);
    tb_status st = TB_OK;
    if (n0 < 2 || n1 < 2)
        st = tb_fail(err, TB_ERR_NUMERIC, "detection figure: only %lld and %lld of %d runs "
                     "a cell finished", (long long)n0, (long long)n1, v->seeds);
    const bool swap = better(m1, m0, higher);
    const double *g = swap ? y : x, *w = swap ? x : y;
    out->better = swap;
    out->worse = !swap;
    out->median_better = swap ? m1 : m0;
    out->median_worse = swap ? m0 : m1;
    out->n_better = swap ? n1 : n0;
    out->n_worse = swap ? n0 : n1;
    const int n = plan->detection_n, k = plan->detection_k, r = plan->detection_resamples;
    const double gamma = plan->detection_gamma;
    if (st == TB_OK)
        st = tb_study_detection_rates_of(g, out->n_better, g, out->n_better, n, k, gamma, r,
                                         higher, plan->seed + 1, &out->control_better, err);
    if (st == TB_OK)
        st = tb_study_detection_rates_of(w, out->n_worse, w, out->n_worse, n, k, gamma, r,
                                         higher, plan->seed + 2, &out->control_worse, err);
    if (st == TB_OK)
        st = tb_study_detection_rates_of(g, out->n_better, w, out->n_worse, n, k, gamma, r,
                                         higher, plan->seed + 3, &out->difference, err);
    free(x);
    const tb_study_detection_rates *cb = &out->control_better, *cw = &out->control_worse;
    if (st == TB_OK && !isnan(plan->detection_max_fp))
        out->outcome = cb->pab <= plan->detection_max_fp && cw->pab <= plan->detection_max_fp &&
                               1 - out->difference.pab <= plan->detection_max_fn
                           ? TB_STUDY_REPRODUCED
                           : TB_STUDY_NOT_REPRODUCED;
    return st;
}

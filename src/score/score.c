/* score.c: AlgoPerf's benchmark score in its exact closed form, performance profiles, medians
 * with misses, and the geometric-mean speedup (docs/MATH.md section 1). */
#include "trainbench/score.h"
#include "trainbench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tb_score_median(const double *x, int n)
{
    if (!x || n < 1) return NAN;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c) return NAN;
    memcpy(c, x, (size_t)n * sizeof *c);
    tb_stats_sort(c, n);
    double m = tb_quantile_sorted(c, n, 0.5);
    free(c);
    return m;
}

static double best_of(int n_subs, int n_wl, const double *t, int w, const bool *eligible)
{
    double best = INFINITY;
    for (int s = 0; s < n_subs; s++)
        if ((!eligible || eligible[s]) && t[s * n_wl + w] < best) best = t[s * n_wl + w];
    return best;
}

static double ratio_of(double t, double best, double tau_max)
{
    if (!isfinite(t) || !isfinite(best) || best <= 0) return INFINITY;
    double r = t / best;
    return r > tau_max ? INFINITY : r;
}

tb_status tb_score_compute(int n_subs, int n_wl, const double *times, const int *variant_of,
                           double tau_max, double *ratios, double *scores, tb_error *err)
{
    if (!times || !ratios || !scores)
        return tb_fail(err, TB_ERR_INVALID, "score_compute: %s is NULL",
                       !times ? "times" : !ratios ? "ratios" : "scores");
    if (n_subs < 1 || n_wl < 1)
        return tb_fail(err, TB_ERR_INVALID, "scoring needs a submission and a workload");
    if (!(tau_max > 1))
        return tb_fail(err, TB_ERR_INVALID, "tau_max must be above 1, got %g", tau_max);
    for (int w = 0; variant_of && w < n_wl; w++)
        if (variant_of[w] >= n_wl || variant_of[w] == w || variant_of[w] < -1 ||
            (variant_of[w] >= 0 && variant_of[variant_of[w]] >= 0))
            return tb_fail(err, TB_ERR_INVALID, "workload %d: bad variant base %d", w,
                           variant_of[w]);
    double *t = malloc((size_t)n_subs * (size_t)n_wl * sizeof *t);
    bool *passed = malloc((size_t)n_subs * sizeof *passed);
    if (!t || !passed) {
        free(t);
        free(passed);
        return tb_fail(err, TB_ERR_NOMEM, "scoring: out of memory");
    }
    memcpy(t, times, (size_t)n_subs * (size_t)n_wl * sizeof *t);
    for (int w = 0; variant_of && w < n_wl; w++) {
        int b = variant_of[w];
        if (b < 0) continue;
        /* the fastest variant time among submissions that passed the base */
        for (int s = 0; s < n_subs; s++) passed[s] = isfinite(times[s * n_wl + b]);
        double best = best_of(n_subs, n_wl, times, w, passed);
        for (int s = 0; s < n_subs; s++) {
            double r = ratio_of(times[s * n_wl + w], best, tau_max);
            ratios[s * n_wl + w] = r;
            if (!isfinite(r)) t[s * n_wl + b] = INFINITY; /* the base does not count */
        }
    }
    for (int w = 0; w < n_wl; w++) {
        if (variant_of && variant_of[w] >= 0) continue;
        double best = best_of(n_subs, n_wl, t, w, NULL);
        for (int s = 0; s < n_subs; s++)
            ratios[s * n_wl + w] = ratio_of(t[s * n_wl + w], best, tau_max);
    }
    int counted = 0;
    for (int w = 0; w < n_wl; w++) counted += !(variant_of && variant_of[w] >= 0);
    for (int s = 0; s < n_subs; s++) {
        double sum = 0;
        for (int w = 0; w < n_wl; w++) {
            if (variant_of && variant_of[w] >= 0) continue;
            double r = ratios[s * n_wl + w];
            if (isfinite(r)) sum += fmax(0.0, tau_max - r);
        }
        scores[s] = sum / ((double)counted * (tau_max - 1));
    }
    free(t);
    free(passed);
    return TB_OK;
}

double tb_score_profile(const double *ratios, const bool *counted, int n_wl, double tau)
{
    if (!ratios) return NAN;
    int n = 0, k = 0;
    for (int w = 0; w < n_wl; w++) {
        if (counted && !counted[w]) continue;
        n++;
        k += ratios[w] <= tau;
    }
    return n ? (double)k / n : NAN;
}

double tb_score_speedup(const double *t_ref, const double *t_sub, const double *budgets,
                        int n_wl)
{
    if (!t_ref || !t_sub || !budgets) return NAN;
    double sum = 0;
    for (int w = 0; w < n_wl; w++) {
        double a = isfinite(t_ref[w]) ? t_ref[w] : budgets[w] + 1.0;
        double b = isfinite(t_sub[w]) ? t_sub[w] : budgets[w] + 1.0;
        sum += log(a / b);
    }
    return n_wl ? exp(sum / n_wl) : NAN;
}

/* stability.c: the edge-of-stability figure (Cohen et al. 2022, "Adaptive Gradient Methods at
 * the Edge of Stability"): per cell, the ratio of the preconditioned sharpness measured during
 * its runs to the stability threshold of its optimizer (38/eta for Adam at beta1 = 0.9, 2/eta
 * for gradient descent), its median over the last part of training and its range; judged
 * against 1 within a tolerance. */
#include "study/study_impl.h"
#include "trainbench/study_plan.h"
#include "trainbench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tb_study_sharpness_ratio(const tb_study_sharpness_point *p)
{
    return p && isfinite(p->threshold) && p->threshold > 0 && isfinite(p->pre_max)
               ? p->pre_max / p->threshold
               : NAN;
}

tb_status tb_study_stability_row_of(const tb_study_sharpness_curve *curves, int runs,
                                    double threshold, double tail, double tolerance,
                                    tb_study_stability_row *out, tb_error *err)
{
    if (!out || (runs > 0 && !curves))
        return tb_fail(err, TB_ERR_INVALID, "stability row: %s is NULL", out ? "curves" : "out");
    if (!(tail > 0 && tail <= 1))
        return tb_fail(err, TB_ERR_INVALID, "stability row: tail %g is not in (0, 1]", tail);
    memset(out, 0, sizeof *out);
    out->threshold = threshold;
    out->median = out->lo = out->hi = NAN;
    int64_t total = 0;
    for (int r = 0; r < runs; r++) total += curves[r].n;
    double *x = malloc((size_t)(total > 0 ? total : 1) * sizeof *x);
    if (!x) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the stability figure");
    for (int r = 0; r < runs; r++) {
        const tb_study_sharpness_curve *c = &curves[r];
        if (c->diverged) {
            out->lost++;
            continue;
        }
        if (c->n == 0) continue;
        out->runs++;
        /* the last ceil(tail m) of its m measurements, at least one */
        int64_t keep = (int64_t)ceil(tail * (double)c->n - 1e-9);
        if (keep < 1) keep = 1;
        for (int64_t i = c->n - keep; i < c->n; i++) {
            const double q = tb_study_sharpness_ratio(&c->points[i]);
            if (isfinite(q)) x[out->n++] = q;
        }
    }
    if (out->n > 0) {
        tb_stats_sort(x, out->n);
        out->median = tb_quantile_sorted(x, out->n, 0.5);
        out->lo = x[0];
        out->hi = x[out->n - 1];
    }
    free(x);
    out->outcome = isnan(tolerance)                       ? TB_STUDY_NOT_JUDGED
                   : out->n == 0                          ? TB_STUDY_INCONCLUSIVE
                   : fabs(out->median - 1.0) <= tolerance ? TB_STUDY_REPRODUCED
                                                          : TB_STUDY_NOT_REPRODUCED;
    return TB_OK;
}

tb_status tb_study_cell_threshold(const tb_study_plan *plan, int cell, double *out,
                                  tb_error *err)
{
    tb_run_config cfg;
    tb_status st = tb_study_plan_run_config(plan, cell, 0, &cfg, err);
    if (st == TB_OK)
        st = tb_optimizer_stability_threshold_of(cfg.model.algorithm, &cfg.model.hparams, out,
                                                 err);
    return st;
}

tb_status tb_study_stability_compute(const tb_study_plan *plan, const tb_study_values *v,
                                     tb_study_stability_row *rows, tb_error *err)
{
    if (!v->sharpness)
        return tb_fail(err, TB_ERR_INVALID, "stability figure: the values have no sharpness "
                       "measurements");
    tb_status st = TB_OK;
    for (int c = 0; c < v->cells && st == TB_OK; c++) {
        double threshold = NAN;
        st = tb_study_cell_threshold(plan, c, &threshold, err);
        if (st == TB_OK)
            st = tb_study_stability_row_of(v->sharpness + (size_t)c * (size_t)v->seeds,
                                           v->seeds, threshold, plan->stability_tail,
                                           plan->stability_judged ? plan->stability_tolerance
                                                                  : NAN,
                                           &rows[c], err);
    }
    return st;
}

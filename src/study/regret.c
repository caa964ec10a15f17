/* regret.c: the regret figure of a study whose "sampler" axis sets its cells' searches side by
 * side (Wang et al., HyperBO: a pre-trained prior against a GP with a default prior and
 * quasi-random search): per cell the regret after b trials, and the trials it needs to reach
 * the regret the group's halton cell reaches after all of its own. */
#include "study/study_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tb_study_regret_free(tb_study_regret_fig *r)
{
    if (!r) return;
    free(r->regret);
    free(r->best_known);
    free(r->target);
    free(r->to_target);
    free(r->ratio);
    free(r->outcome);
    memset(r, 0, sizeof *r);
}

static int sampler_axis(const tb_study_plan *plan)
{
    for (int k = 0; k < plan->n_axes; k++)
        if (plan->axes[k].kind == TB_AXIS_SAMPLER) return k;
    return -1;
}

/* Whether cells a and b differ only in the sampler axis k. */
static bool same_group(const tb_study_plan *plan, int k, int a, int b)
{
    int va[TB_STUDY_MAX_AXES], vb[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, a, va);
    tb_study_plan_cell_values(plan, b, vb);
    for (int i = 0; i < plan->n_axes; i++)
        if (i != k && va[i] != vb[i]) return false;
    return true;
}

/* The lowest trial of any search of cell c. */
static double best_trial(const tb_study_values *v, int c)
{
    double best = INFINITY;
    const size_t n = (size_t)v->seeds * (size_t)v->max_trials;
    for (size_t i = 0; i < n; i++) {
        double x = v->trial_v[(size_t)c * n + i];
        if (!isnan(x) && x < best) best = x;
    }
    return best;
}

/* The first b (1-based) whose regret is at most target; 0 when none is. */
static int first_reaching(const double *regret, int trials, double target)
{
    for (int b = 0; b < trials; b++)
        if (regret[b] <= target) return b + 1;
    return 0;
}

static tb_study_outcome judge(const tb_study_plan *plan, int cell, double target, int to,
                              double ratio)
{
    if (isnan(plan->regret_min_ratio) ||
        tb_study_plan_cell_sampler(plan, cell) != TB_STUDY_SAMPLER_GP_PRIOR)
        return TB_STUDY_NOT_JUDGED;
    if (!isfinite(target)) return TB_STUDY_INCONCLUSIVE;
    return to > 0 && ratio >= plan->regret_min_ratio ? TB_STUDY_REPRODUCED
                                                     : TB_STUDY_NOT_REPRODUCED;
}

tb_status tb_study_regret_compute(const tb_study_plan *plan, const tb_study_values *v,
                                  tb_study_regret_fig *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    const int k = sampler_axis(plan), T = v->max_trials, cells = v->cells;
    if (k < 0 || !v->trial_v || T < 1)
        return tb_fail(err, TB_ERR_INVALID, "regret figure: no sampler axis, or no searches");
    out->cells = cells;
    out->trials = T;
    out->regret = malloc((size_t)cells * (size_t)T * sizeof *out->regret);
    out->best_known = malloc((size_t)cells * sizeof *out->best_known);
    out->target = malloc((size_t)cells * sizeof *out->target);
    out->to_target = calloc((size_t)cells, sizeof *out->to_target);
    out->ratio = malloc((size_t)cells * sizeof *out->ratio);
    out->outcome = calloc((size_t)cells, sizeof *out->outcome);
    double *scratch = malloc(((size_t)v->seeds + 1) * (size_t)T * sizeof *scratch);
    if (!out->regret || !out->best_known || !out->target || !out->to_target || !out->ratio ||
        !out->outcome || !scratch) {
        free(scratch);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the regret figure");
    }
    tb_status st = TB_OK;
    for (int c = 0; c < cells && st == TB_OK; c++) {
        double best = INFINITY;
        for (int d = 0; d < cells; d++)
            if (same_group(plan, k, c, d)) best = fmin(best, best_trial(v, d));
        out->best_known[c] = best;
        double *row = out->regret + (size_t)c * (size_t)T;
        st = tb_study_curve_cell(plan, v, c, scratch, row);
        for (int b = 0; b < T; b++) row[b] -= best; /* NaN stays NaN */
    }
    for (int c = 0; c < cells && st == TB_OK; c++) {
        int ref = -1; /* the group's halton cell */
        for (int d = 0; d < cells && ref < 0; d++)
            if (same_group(plan, k, c, d) &&
                tb_study_plan_cell_sampler(plan, d) == TB_STUDY_SAMPLER_HALTON)
                ref = d;
        const tb_study_tune *t = ref >= 0 ? tb_study_plan_cell_tune(plan, ref) : NULL;
        const double *href = t ? out->regret + (size_t)ref * (size_t)T : NULL;
        out->target[c] = href ? href[t->trials - 1] : NAN;
        const double *row = out->regret + (size_t)c * (size_t)T;
        out->to_target[c] = isfinite(out->target[c]) ? first_reaching(row, T, out->target[c]) : 0;
        const int h =
            href && isfinite(out->target[c]) ? first_reaching(href, T, out->target[c]) : 0;
        out->ratio[c] = h > 0 && out->to_target[c] > 0 ? (double)h / out->to_target[c] : NAN;
        out->outcome[c] = judge(plan, c, out->target[c], out->to_target[c], out->ratio[c]);
    }
    free(scratch);
    return st;
}

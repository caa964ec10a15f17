/* space_utility.c: the search-space utility figure of a study (Ariafar et al. 2022;
 * docs/MATH.md section 5): the candidate spaces of the "space" axis scored at each budget by
 * a GP fitted to the pilot searches (every cell's run-1 search, tb_space_utility_points), the
 * best value the other runs' searches reached at that budget, and the rank correlations of the
 * two orderings (Kendall's tau-b, Spearman's rho) per budget. */
#include "study/study_impl.h"
#include "trainbench/benchmark.h"
#include "trainbench/stats.h"
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The best selection value of trials 0..b-1 of search row `slot` (+inf: each diverged). */
static double best_of(const tb_study_values *v, size_t slot, int b)
{
    double best = INFINITY;
    for (int t = 0; t < b; t++) {
        double x = v->trial_v[slot * (size_t)v->max_trials + (size_t)t];
        if (!isnan(x) && x < best) best = x;
    }
    return best;
}

/* The median over runs 2..seeds of the best after b trials (+inf where most diverged). */
static double reached_at(const tb_study_values *v, int cell, int b, double *scratch)
{
    int m = 0;
    for (int r = 1; r < v->seeds; r++)
        scratch[m++] = best_of(v, (size_t)cell * (size_t)v->seeds + (size_t)r, b);
    tb_stats_sort(scratch, m);
    return tb_quantile_sorted(scratch, m, 0.5); /* NaN for none */
}

/* The pilot searches' trials (every cell's run-1 search) as points and values. */
static int pilot_points(const tb_study_plan *plan, const tb_study_values *v, tb_hparams *pts,
                        double *y)
{
    int n = 0;
    for (int c = 0; c < v->cells; c++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(plan, c);
        const size_t row = (size_t)c * (size_t)v->seeds * (size_t)v->max_trials;
        for (int k = 0; t && k < t->trials; k++) {
            if (isnan(v->trial_v[row + (size_t)k]) || v->trial_points[row + (size_t)k].count == 0)
                continue;
            pts[n] = v->trial_points[row + (size_t)k];
            y[n++] = v->trial_v[row + (size_t)k];
        }
    }
    return n;
}

/* Per budget the rank correlations of score and reached over the cells, and their mean tau;
 * false when a budget has no tau. */
static bool correlate(tb_study_utility_fig *u, int cells, double *scratch)
{
    int with_tau = 0;
    double sum = 0;
    bool missing = false;
    for (int b = 0; b < u->n_budgets; b++) {
        for (int c = 0; c < cells; c++) {
            scratch[c] = u->score[c * u->n_budgets + b];
            scratch[cells + c] = u->reached[c * u->n_budgets + b];
        }
        tb_error e = {0}; /* ties everywhere or a search without a finite best: no tau */
        if (tb_kendall_tau(scratch, scratch + cells, cells, &u->tau[b], &e) != TB_OK)
            u->tau[b] = NAN;
        if (tb_spearman_rho(scratch, scratch + cells, cells, &u->rho[b], &e) != TB_OK)
            u->rho[b] = NAN;
        if (isfinite(u->tau[b])) {
            sum += u->tau[b];
            with_tau++;
        } else {
            missing = true;
        }
    }
    u->mean_tau = with_tau ? sum / with_tau : NAN;
    return !missing;
}

tb_status tb_study_utility_compute(const tb_study_plan *plan, const tb_study_values *v,
                                   tb_study_utility_fig *u, tb_error *err)
{
    memset(u, 0, sizeof *u);
    const int cells = v->cells, nb = plan->n_utility_budgets;
    if (!v->trial_v || !v->trial_points || v->seeds < 2)
        return tb_fail(err, TB_ERR_INVALID, "utility figure: the values have no searches "
                       "(or fewer than 2 runs a cell)");
    u->n_budgets = nb;
    memcpy(u->budgets, plan->utility_budgets, sizeof u->budgets);
    u->searches = v->seeds - 1;
    const size_t n_pts = (size_t)cells * (size_t)v->max_trials;
    tb_search_space **spaces = calloc((size_t)cells, sizeof *spaces);
    tb_hparams *pts = malloc(n_pts * sizeof *pts);
    double *y = malloc(n_pts * sizeof *y);
    double *scratch = malloc(((size_t)v->seeds + 2 * (size_t)cells) * sizeof *scratch);
    tb_utility *util = malloc((size_t)cells * (size_t)nb * sizeof *util);
    u->score = malloc((size_t)cells * (size_t)nb * sizeof *u->score);
    u->score_se = malloc((size_t)cells * (size_t)nb * sizeof *u->score_se);
    u->reached = malloc((size_t)cells * (size_t)nb * sizeof *u->reached);
    tb_status st = spaces && pts && y && scratch && util && u->score && u->score_se && u->reached
                       ? TB_OK
                       : tb_fail(err, TB_ERR_NOMEM, "out of memory for the utility figure");
    for (int c = 0; c < cells && st == TB_OK; c++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(plan, c);
        st = t ? tb_search_space_parse(plan->space_json[t->space], t->space_source, &spaces[c],
                                       err)
               : tb_fail(err, TB_ERR_INVALID, "utility figure: cell %d does not tune", c + 1);
    }
    int n = st == TB_OK ? pilot_points(plan, v, pts, y) : 0;
    tb_space_utility_info info = {0};
    tb_space_utility_spec spec = {.spaces = (const tb_search_space *const *)spaces,
                                  .n_spaces = cells, .budgets = plan->utility_budgets,
                                  .n_budgets = nb, .draws = 1000, .seed = plan->seed};
    if (st == TB_OK) st = tb_space_utility_points(&spec, pts, y, n, util, &info, err);
    if (st != TB_OK) tb_error_prefix(err, "utility figure");
    u->fit_points = info.trials;
    u->fit_imputed = info.imputed;
    for (int c = 0; c < cells && st == TB_OK; c++)
        for (int b = 0; b < nb; b++) {
            u->score[c * nb + b] = util[c * nb + b].expected_best;
            u->score_se[c * nb + b] = util[c * nb + b].std_error;
            u->reached[c * nb + b] = reached_at(v, c, plan->utility_budgets[b], scratch);
        }
    if (st == TB_OK) {
        const bool every = correlate(u, cells, scratch);
        u->outcome = isnan(plan->utility_min_tau) ? TB_STUDY_NOT_JUDGED
                     : !every                     ? TB_STUDY_INCONCLUSIVE
                     : u->mean_tau >= plan->utility_min_tau ? TB_STUDY_REPRODUCED
                                                            : TB_STUDY_NOT_REPRODUCED;
    }
    for (int c = 0; spaces && c < cells; c++) tb_search_space_destroy(spaces[c]);
    free(spaces);
    free(pts);
    free(y);
    free(scratch);
    free(util);
    return st;
}

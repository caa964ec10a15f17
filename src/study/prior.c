/* prior.c: the gp_prior sampler's pre-trained GP (Wang et al., HyperBO; docs/MATH.md section
 * 3): leave one workload out, a GP's mean, kernel and noise fitted to the searches the study
 * already made on its other workloads, one task per search, with the NLL averaged over the
 * tasks. A gp_prior cell's searches then condition it on their own trials without refitting. */
#include "study/study_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The index of the workload axis's value in cell c, -1 without a workload axis. */
static int workload_of(const tb_study_plan *plan, int c)
{
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, c, v);
    for (int k = 0; k < plan->n_axes; k++)
        if (plan->axes[k].kind == TB_AXIS_WORKLOAD) return v[k];
    return -1;
}

bool tb_study_prior_source(const tb_study_plan *plan, int cell, int d)
{
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    const tb_study_tune *u = tb_study_plan_cell_tune(plan, d);
    return t && u && workload_of(plan, d) != workload_of(plan, cell) &&
           tb_study_plan_cell_sampler(plan, d) != TB_STUDY_SAMPLER_GP_PRIOR &&
           strcmp(plan->space_json[t->space], plan->space_json[u->space]) == 0;
}

/* One search's trials (row `row` of v) as a task over the active dimensions: its points into
 * x, its values into y (a diverged trial at the search's worst finished one); the count. */
static int task_of(const tb_search_space *space, const int *active, int na,
                   const tb_study_values *v, size_t row, double *x, double *y)
{
    double worst = -INFINITY, u[TB_HPARAMS_MAX];
    for (int t = 0; t < v->max_trials; t++) {
        double s = v->trial_v[row * (size_t)v->max_trials + (size_t)t];
        if (isfinite(s)) worst = fmax(worst, s);
    }
    int n = 0;
    for (int t = 0; t < v->max_trials && isfinite(worst); t++) {
        const size_t i = row * (size_t)v->max_trials + (size_t)t;
        if (isnan(v->trial_v[i]) || !tb_search_space_unmap(space, &v->trial_points[i], u))
            continue;
        for (int k = 0; k < na; k++) x[n * na + k] = u[active[k]];
        y[n++] = isfinite(v->trial_v[i]) ? v->trial_v[i] : worst;
    }
    return n;
}

tb_status tb_study_prior_fit(const tb_study_plan *plan, const tb_study_values *v, int cell,
                             tb_gp_params *out, tb_error *err)
{
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    if (!t || !v->trial_v || !v->trial_points)
        return tb_fail(err, TB_ERR_INVALID, "prior: cell %d does not tune", cell + 1);
    tb_search_space *space = NULL;
    tb_status st = tb_search_space_parse(plan->space_json[t->space], t->space_source, &space, err);
    if (st != TB_OK) return st;
    int active[TB_HPARAMS_MAX], na = 0;
    for (int d = 0; d < tb_search_space_dims(space); d++)
        if (tb_search_space_dim_varies(space, d)) active[na++] = d;
    const size_t rows = (size_t)v->cells * (size_t)v->seeds;
    double *x = malloc(rows * (size_t)v->max_trials * (size_t)(na > 0 ? na : 1) * sizeof *x);
    double *y = malloc(rows * (size_t)v->max_trials * sizeof *y);
    tb_gp_task *tasks = malloc(rows * sizeof *tasks);
    if (!x || !y || !tasks) st = tb_fail(err, TB_ERR_NOMEM, "out of memory for a prior");
    if (st == TB_OK && na == 0)
        st = tb_fail(err, TB_ERR_INVALID, "prior: no dimension of the space varies");
    int n_tasks = 0, points = 0;
    for (int d = 0; d < v->cells && st == TB_OK; d++) {
        if (!tb_study_prior_source(plan, cell, d)) continue;
        const int searches = tb_study_plan_cell_per_run(plan, d) ? v->seeds : 1;
        for (int r = 0; r < searches; r++) {
            const size_t row = (size_t)d * (size_t)v->seeds + (size_t)r;
            int n = task_of(space, active, na, v, row, x + (size_t)points * (size_t)na,
                            y + points);
            if (n == 0) continue;
            tasks[n_tasks++] = (tb_gp_task){x + (size_t)points * (size_t)na, y + points, n};
            points += n;
        }
    }
    if (st == TB_OK && points < 2)
        st = tb_fail(err, TB_ERR_MISSING, "prior: %d finished trials on the other workloads to "
                     "pre-train a GP on (at least 2 are needed)", points);
    tb_gp_fit_options fo = {.seed = plan->seed ^ 0x9b10ull ^ (uint64_t)cell};
    if (st == TB_OK) st = tb_gp_fit(tasks, n_tasks, na, &fo, out, err);
    tb_search_space_destroy(space);
    free(x);
    free(y);
    free(tasks);
    return st;
}

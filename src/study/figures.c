/* figures.c: the figures beyond the table, as data: the std of each source varied alone per
 * cell (with its chi-square interval and its share of the cell's own runs, which vary every
 * source: tb_variance_decompose), the cells ranked within each run, and the best tuning trial
 * so far over the trials. */
#include "study/study_impl.h"
#include "trainbench/stats.h"
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tb_study_figures_free(tb_study_figures *f)
{
    if (!f) return;
    free(f->variance);
    free(f->rank);
    free(f->curve);
    free(f->estimators);
    free(f->utility.score);
    free(f->utility.score_se);
    free(f->utility.reached);
    tb_study_regret_free(&f->regret);
    free(f->echo_rows);
    free(f->stability);
    memset(f, 0, sizeof *f);
}

/* The finite values of x[0..n) into out; their count. */
static int64_t finite_of(const double *x, int n, double *out)
{
    int64_t k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) out[k++] = x[i];
    return k;
}

static tb_status variance_cell(const tb_study_plan *plan, const tb_study_values *v, int cell,
                               double *scratch, tb_study_variance_cell *out, tb_error *err)
{
    tb_variation_group g[TB_STREAM_COUNT + 1];
    const int n = plan->n_fig_sources + 1;
    if (tb_study_plan_cell_per_run(plan, cell)) return TB_OK; /* no source varies alone */
    for (int k = 0; k < n; k++) {
        const bool all = k == plan->n_fig_sources;
        const double *x = all ? v->v + (size_t)cell * (size_t)v->seeds
                              : v->source_v + ((size_t)k * (size_t)v->cells + (size_t)cell) *
                                                  (size_t)v->seeds;
        double *kept = scratch + (size_t)k * (size_t)v->seeds;
        int64_t m = finite_of(x, v->seeds, kept);
        out->lost[k] = v->seeds - m;
        g[k] = (tb_variation_group){all ? "all" : tb_stream_name(plan->fig_sources[k]), kept, m};
        if (m < 2) {
            char label[256];
            tb_study_plan_cell_label(plan, cell, label, sizeof label);
            return tb_fail(err, TB_ERR_NUMERIC, "variance figure: cell %s, source %s: only %lld "
                           "of %d runs finished", label, g[k].name, (long long)m, v->seeds);
        }
    }
    out->n_groups = n;
    return tb_variance_decompose(g, n, "all", 0.05, out->rows, err);
}

/* Ranks of the cells in run i: 1 the best, tied cells the mean of their places. */
static void rank_run(const tb_study_plan *plan, const tb_study_values *v, int run,
                     tb_study_rank_cell *out)
{
    const bool higher = tb_study_metric_higher_is_better(plan->metric);
    for (int c = 0; c < v->cells; c++) {
        double x = v->v[(size_t)c * (size_t)v->seeds + (size_t)run];
        int better = 0, tied = 0;
        for (int d = 0; d < v->cells; d++) {
            double y = v->v[(size_t)d * (size_t)v->seeds + (size_t)run];
            if (d != c && y == x) tied++;
            else if (higher ? y > x : y < x) better++;
        }
        out[c].mean_rank += 1.0 + better + tied / 2.0;
        out[c].firsts += better == 0;
    }
}

/* The best so far after each trial of search row `slot`. */
static void best_so_far(const tb_study_values *v, size_t slot, double *out)
{
    double best = INFINITY;
    for (int t = 0; t < v->max_trials; t++) {
        double x = v->trial_v[slot * (size_t)v->max_trials + (size_t)t];
        if (!isnan(x) && x < best) best = x;
        out[t] = isnan(x) ? NAN : best;
    }
}

tb_status tb_study_curve_cell(const tb_study_plan *plan, const tb_study_values *v, int cell,
                              double *scratch, double *out)
{
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    for (int k = 0; k < v->max_trials; k++) out[k] = NAN;
    if (!t || !v->trial_v) return TB_OK;
    const int searches = tb_study_plan_cell_per_run(plan, cell) ? v->seeds : 1;
    for (int r = 0; r < searches; r++)
        best_so_far(v, (size_t)cell * (size_t)v->seeds + (size_t)r,
                    scratch + (size_t)r * (size_t)v->max_trials);
    double *col = scratch + (size_t)searches * (size_t)v->max_trials;
    for (int k = 0; k < t->trials; k++) { /* the median over the searches */
        int m = 0;
        for (int r = 0; r < searches; r++) {
            double x = scratch[(size_t)r * (size_t)v->max_trials + (size_t)k];
            if (!isnan(x)) col[m++] = x;
        }
        if (m == 0) continue;
        tb_stats_sort(col, m);
        out[k] = tb_quantile_sorted(col, m, 0.5);
    }
    return TB_OK;
}

/* The cell whose axis values are cell's but for axis k, which has value index i. */
static int twin_of(const tb_study_plan *plan, int cell, int k, int i)
{
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    v[k] = i;
    int c = 0;
    for (int a = 0; a < plan->n_axes; a++) c = c * plan->axes[a].n + v[a];
    return c;
}

/* Mean, std and the std's 95% interval of the finite values of cell c's runs; their count. */
static tb_status cell_stats(const tb_study_values *v, int c, double *scratch, double *mean,
                            double *std, tb_interval *ci, tb_error *err)
{
    int64_t n = finite_of(v->v + (size_t)c * (size_t)v->seeds, v->seeds, scratch);
    *mean = *std = NAN;
    *ci = (tb_interval){NAN, NAN};
    if (n < 2) return TB_OK;
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) s += scratch[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) ss += (scratch[i] - *mean) * (scratch[i] - *mean);
    *std = sqrt(ss / (double)(n - 1));
    return tb_std_interval(scratch, n, 0.05, ci, err);
}

/* One row per search=once cell: its statistics, its per_run twin's, the error and the cost. */
static tb_status estimators(const tb_study_plan *plan, const tb_study_values *v,
                            double *scratch, tb_study_figures *out, tb_error *err)
{
    int k = 0;
    while (k < plan->n_axes && plan->axes[k].kind != TB_AXIS_SEARCH) k++;
    if (k == plan->n_axes)
        return tb_fail(err, TB_ERR_INVALID, "estimators figure: the plan has no search axis");
    const int once = strcmp(plan->axes[k].labels[0], "once") == 0 ? 0 : 1;
    out->estimators = calloc((size_t)v->cells, sizeof *out->estimators);
    if (!out->estimators) return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's figures");
    tb_status st = TB_OK;
    for (int c = 0; c < v->cells && st == TB_OK; c++) {
        int vals[TB_STUDY_MAX_AXES];
        tb_study_plan_cell_values(plan, c, vals);
        if (vals[k] != once) continue;
        tb_study_estimator_row *r = &out->estimators[out->n_estimators++];
        r->cell_once = c;
        r->cell_ideal = twin_of(plan, c, k, 1 - once);
        r->n_once = finite_of(v->v + (size_t)c * (size_t)v->seeds, v->seeds, scratch);
        r->n_ideal = finite_of(v->v + (size_t)r->cell_ideal * (size_t)v->seeds, v->seeds, scratch);
        st = cell_stats(v, c, scratch, &r->mean_once, &r->std_once, &r->std_ci_once, err);
        if (st == TB_OK)
            st = cell_stats(v, r->cell_ideal, scratch, &r->mean_ideal, &r->std_ideal,
                            &r->std_ci_ideal, err);
        r->mean_error = r->mean_once - r->mean_ideal;
        r->std_ratio = r->std_once / r->std_ideal;
        const int64_t trials = tb_study_plan_cell_tune(plan, c)->trials;
        const int64_t trials_ideal = tb_study_plan_cell_tune(plan, r->cell_ideal)->trials;
        r->trainings_once = trials + v->seeds;
        r->trainings_ideal = (int64_t)v->seeds * (trials_ideal + 1);
        r->compute_ratio = (double)r->trainings_ideal / (double)r->trainings_once;
        r->outcome = !plan->fig_estimators_judged        ? TB_STUDY_NOT_JUDGED
                     : r->n_once < 2 || r->n_ideal < 2   ? TB_STUDY_INCONCLUSIVE
                     : r->std_ideal >= r->std_ci_once.lo && r->std_ideal <= r->std_ci_once.hi &&
                               r->std_once >= r->std_ci_ideal.lo &&
                               r->std_once <= r->std_ci_ideal.hi &&
                               fabs(r->mean_error) <= r->std_ideal
                         ? TB_STUDY_REPRODUCED
                         : TB_STUDY_NOT_REPRODUCED;
    }
    return st;
}

tb_study_outcome tb_study_outcome_of(const tb_study_figure *figure,
                                     const tb_study_figures *figures, int *judged,
                                     int *reproduced)
{
    bool any[4] = {false};
    int n = 0, yes = 0;
    const int n_est = figures ? figures->n_estimators : 0;
    const int n_echo = figures ? figures->n_echo_rows : 0;
    for (int i = 0; figure && i < figure->n_pairs + n_est + n_echo + (figures != NULL); i++) {
        const int j = i - figure->n_pairs;
        tb_study_outcome o = i < figure->n_pairs  ? figure->pairs[i].outcome
                             : j < n_est          ? figures->estimators[j].outcome
                             : j < n_est + n_echo ? figures->echo_rows[j - n_est].outcome
                                                  : figures->utility.outcome;
        any[o] = true;
        n += o != TB_STUDY_NOT_JUDGED;
        yes += o == TB_STUDY_REPRODUCED;
    }
    for (int c = 0; figures && figures->regret.outcome && c < figures->regret.cells; c++) {
        tb_study_outcome o = figures->regret.outcome[c];
        any[o] = true;
        n += o != TB_STUDY_NOT_JUDGED;
        yes += o == TB_STUDY_REPRODUCED;
    }
    for (int c = 0; figures && figures->stability && c < figures->n_stability; c++) {
        tb_study_outcome o = figures->stability[c].outcome;
        any[o] = true;
        n += o != TB_STUDY_NOT_JUDGED;
        yes += o == TB_STUDY_REPRODUCED;
    }
    if (figures && figures->detection.outcome != TB_STUDY_NOT_JUDGED) {
        any[figures->detection.outcome] = true;
        n++;
        yes += figures->detection.outcome == TB_STUDY_REPRODUCED;
    }
    if (judged) *judged = n;
    if (reproduced) *reproduced = yes;
    return any[TB_STUDY_NOT_REPRODUCED] ? TB_STUDY_NOT_REPRODUCED
           : any[TB_STUDY_INCONCLUSIVE] ? TB_STUDY_INCONCLUSIVE
           : any[TB_STUDY_REPRODUCED]   ? TB_STUDY_REPRODUCED
                                        : TB_STUDY_NOT_JUDGED;
}

tb_status tb_study_figures_compute(const tb_study_plan *plan, const tb_study_values *v,
                                   tb_study_figures *out, tb_error *err)
{
    if (!plan || !v || !out)
        return tb_fail(err, TB_ERR_INVALID, "study_figures_compute: %s is NULL",
                       !plan ? "plan" : !v ? "values" : "out");
    memset(out, 0, sizeof *out);
    const size_t cells = (size_t)v->cells, seeds = (size_t)v->seeds;
    double *scratch = malloc((TB_STREAM_COUNT + 2) * (seeds + 1) *
                             ((size_t)v->max_trials + 1) * sizeof *scratch);
    if (plan->fig_variance) out->variance = calloc(cells, sizeof *out->variance);
    if (plan->fig_rank) out->rank = calloc(cells, sizeof *out->rank);
    if (plan->fig_curve) out->curve = malloc(cells * ((size_t)v->max_trials + 1) * sizeof(double));
    tb_status st = TB_OK;
    if (!scratch || (plan->fig_variance && !out->variance) || (plan->fig_rank && !out->rank) ||
        (plan->fig_curve && !out->curve))
        st = tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's figures");
    if (st == TB_OK && plan->fig_variance && !v->source_v)
        st = tb_fail(err, TB_ERR_INVALID, "variance figure: the values have no source runs");
    for (int c = 0; c < v->cells && st == TB_OK && plan->fig_variance; c++)
        st = variance_cell(plan, v, c, scratch, &out->variance[c], err);
    for (int r = 0; r < v->seeds && st == TB_OK && plan->fig_rank; r++)
        rank_run(plan, v, r, out->rank);
    for (size_t c = 0; c < cells && st == TB_OK && plan->fig_rank; c++)
        out->rank[c].mean_rank /= (double)seeds;
    for (int c = 0; c < v->cells && st == TB_OK && plan->fig_curve; c++)
        st = tb_study_curve_cell(plan, v, c, scratch,
                                 out->curve + (size_t)c * (size_t)v->max_trials);
    if (st == TB_OK && plan->fig_estimators) st = estimators(plan, v, scratch, out, err);
    if (st == TB_OK && plan->fig_utility)
        st = tb_study_utility_compute(plan, v, &out->utility, err);
    if (st == TB_OK && plan->fig_regret) st = tb_study_regret_compute(plan, v, &out->regret, err);
    if (st == TB_OK && plan->fig_echoing) st = tb_study_echo_figure(plan, v, out, err);
    if (st == TB_OK && plan->fig_detection)
        st = tb_study_detection_compute(plan, v, &out->detection, err);
    if (st == TB_OK && plan->fig_stability) {
        out->stability = calloc(cells, sizeof *out->stability);
        out->n_stability = v->cells;
        st = out->stability ? tb_study_stability_compute(plan, v, out->stability, err)
                            : tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's figures");
    }
    free(scratch);
    if (st != TB_OK) tb_study_figures_free(out);
    return st;
}

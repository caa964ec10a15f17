/* figure.c: a study's figure from its runs' values: the table of cells (median or mean
 * with a 95% interval) and the paired comparisons with their checks. */
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tb_study_figure_free(tb_study_figure *f)
{
    if (!f) return;
    free(f->cells);
    free(f->pairs);
    memset(f, 0, sizeof *f);
}

static tb_status cell_row(const tb_study_plan *plan, const tb_study_values *v, int cell,
                          tb_rng *rng, tb_study_cell_row *row, tb_error *err)
{
    row->cell = cell;
    tb_bootstrap_options boot = tb_bootstrap_options_default();
    tb_status st = tb_summarize_finite(v->v + (int64_t)cell * v->seeds, v->seeds, &boot, rng,
                                       &row->summary, err);
    if (st != TB_OK) return st;
    row->n = (int)row->summary.n;
    row->lost = v->seeds - row->n;
    bool median = plan->statistic == TB_STAT_MEDIAN;
    row->center = median ? row->summary.median : row->summary.mean;
    row->ci = median ? row->summary.median_ci : row->summary.mean_ci;
    return TB_OK;
}

/* The largest relative gap of the pairs: |a - b| / max(|a|, |b|); two equal values (two
 * infinities of one sign included) give 0, one finite and one not +inf. */
static double max_rel_gap(const double *a, const double *b, int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (a[i] == b[i]) continue;
        double scale = fmax(fabs(a[i]), fabs(b[i]));
        double gap = isfinite(a[i]) && isfinite(b[i]) ? fabs(a[i] - b[i]) / scale : INFINITY;
        worst = fmax(worst, gap);
    }
    return worst;
}

static tb_study_outcome judge(const tb_study_comparison *c, const tb_study_pair_row *row)
{
    const tb_pab_result *p = &row->pab;
    const tb_verdict v = p->verdict;
    if (c->expect == TB_EXPECT_NONE) return TB_STUDY_NOT_JUDGED;
    if (c->expect == TB_EXPECT_SAME_WITHIN)
        return row->max_rel_gap <= c->tolerance ? TB_STUDY_REPRODUCED : TB_STUDY_NOT_REPRODUCED;
    if (c->expect == TB_EXPECT_A_WINS)
        return (double)p->wins >= ceil(c->min_wins * (double)p->n - 1e-9)
                   ? TB_STUDY_REPRODUCED
                   : TB_STUDY_NOT_REPRODUCED;
    if (v == TB_VERDICT_NOT_SIGNIFICANT) return TB_STUDY_INCONCLUSIVE;
    bool ok = (c->expect == TB_EXPECT_A_BETTER && v == TB_VERDICT_A_BETTER) ||
              (c->expect == TB_EXPECT_B_BETTER && v == TB_VERDICT_B_BETTER) ||
              (c->expect == TB_EXPECT_NO_DIFFERENCE &&
               v == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE) ||
              (c->expect == TB_EXPECT_A_NOT_WORSE && v != TB_VERDICT_B_BETTER);
    return ok ? TB_STUDY_REPRODUCED : TB_STUDY_NOT_REPRODUCED;
}

/* The cell of values[] (one index per axis). */
static int cell_of(const tb_study_plan *plan, const int *values)
{
    int cell = 0;
    for (int k = 0; k < plan->n_axes; k++) cell = cell * plan->axes[k].n + values[k];
    return cell;
}

/* The pairs of comparison i: one per cell matching side a, against that cell with side b's
 * values in place. Appends to out->pairs (room for every cell per comparison). */
static tb_status compare(const tb_study_plan *plan, const tb_study_values *v, int i,
                         tb_study_figure *out, tb_error *err)
{
    const tb_study_comparison *c = &plan->comparisons[i];
    for (int cell = 0; cell < v->cells; cell++) {
        int val[TB_STUDY_MAX_AXES];
        tb_study_plan_cell_values(plan, cell, val);
        bool match = true;
        for (int k = 0; k < plan->n_axes; k++)
            match &= c->a.value[k] < 0 || c->a.value[k] == val[k];
        if (!match) continue;
        for (int k = 0; k < plan->n_axes; k++)
            if (c->b.value[k] >= 0) val[k] = c->b.value[k];
        tb_study_pair_row *row = &out->pairs[out->n_pairs];
        row->comparison = i;
        row->cell_a = cell;
        row->cell_b = cell_of(plan, val);
        if (row->cell_b == cell) continue; /* b's values change nothing here */
        tb_pab_options o = tb_pab_options_default();
        o.direction = tb_study_metric_higher_is_better(plan->metric) ? TB_HIGHER_IS_BETTER
                                                                      : TB_LOWER_IS_BETTER;
        o.gamma = c->gamma;
        const double *va = v->v + (size_t)cell * (size_t)v->seeds;
        const double *vb = v->v + (size_t)row->cell_b * (size_t)v->seeds;
        tb_status st = tb_pab_paired(va, vb, v->seeds, &o, &row->pab, err);
        if (st != TB_OK) return st;
        row->max_rel_gap = max_rel_gap(va, vb, v->seeds);
        row->outcome = judge(c, row);
        out->n_pairs++;
    }
    return TB_OK;
}

tb_status tb_study_figure_compute(const tb_study_plan *plan, const tb_study_values *values,
                                  tb_study_figure *out, tb_error *err)
{
    if (!plan || !values || !out)
        return tb_fail(err, TB_ERR_INVALID, "study_figure_compute: %s is NULL",
                       !plan ? "plan" : !values ? "values" : "out");
    memset(out, 0, sizeof *out);
    const int cells = values->cells;
    out->cells = calloc((size_t)cells, sizeof *out->cells);
    out->pairs = calloc((size_t)cells * (size_t)(plan->n_comparisons + 1), sizeof *out->pairs);
    tb_status st = out->cells && out->pairs
                       ? TB_OK
                       : tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's figure");
    tb_rng rng = tb_rng_make(plan->seed, 0xf16u);
    for (int cell = 0; cell < cells && st == TB_OK; cell++) {
        st = cell_row(plan, values, cell, &rng, &out->cells[cell], err);
        out->n_cells = cell + 1;
    }
    for (int i = 0; i < plan->n_comparisons && st == TB_OK; i++)
        st = compare(plan, values, i, out, err);
    if (st != TB_OK) {
        tb_study_figure_free(out);
        return st;
    }
    bool any[4] = {false};
    for (int p = 0; p < out->n_pairs; p++) any[out->pairs[p].outcome] = true;
    out->outcome = any[TB_STUDY_NOT_REPRODUCED] ? TB_STUDY_NOT_REPRODUCED
                   : any[TB_STUDY_INCONCLUSIVE] ? TB_STUDY_INCONCLUSIVE
                   : any[TB_STUDY_REPRODUCED]   ? TB_STUDY_REPRODUCED
                                                : TB_STUDY_NOT_JUDGED;
    return TB_OK;
}

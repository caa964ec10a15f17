/* echo_figure.c: the echoing figure of a study with the axes "echo" and "upstream_slowdown"
 * (Choi et al. 2019): per group of cells (the other axes equal) and per slowdown, no echoing
 * against each echo cell in time to target and in fresh examples read to it, each P(A>B) over
 * the paired runs; the checks that echoing helps when the upstream is slow and not when it is
 * fast; and the largest slowdown echoing compensates. */
#include "trainbench/stats.h"
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The median of x[0..n) with +inf kept (half or more +inf: +inf); NaNs left out (NaN if all). */
static double median_of(const double *x, int n, double *scratch)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) scratch[k++] = x[i];
    tb_stats_sort(scratch, k);
    return tb_quantile_sorted(scratch, k, 0.5); /* NaN for none */
}

static bool any_nan(const double *x, int n)
{
    for (int i = 0; i < n; i++)
        if (isnan(x[i])) return true;
    return false;
}

/* P(A>B) of the runs of cells a and b in x (lower better); left zero (not significant) when a
 * value is unknown. */
static tb_status pab(const double *x, int seeds, int a, int b, tb_pab_result *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    const double *va = x + (size_t)a * (size_t)seeds, *vb = x + (size_t)b * (size_t)seeds;
    if (any_nan(va, seeds) || any_nan(vb, seeds)) return TB_OK;
    tb_pab_options o = tb_pab_options_default();
    o.direction = TB_LOWER_IS_BETTER;
    return tb_pab_paired(va, vb, seeds, &o, out, err);
}

static int cell_of(const tb_study_plan *plan, const int *values)
{
    int cell = 0;
    for (int k = 0; k < plan->n_axes; k++) cell = cell * plan->axes[k].n + values[k];
    return cell;
}

static int axis_of(const tb_study_plan *plan, tb_study_axis_kind kind)
{
    for (int k = 0; k < plan->n_axes; k++)
        if (plan->axes[k].kind == kind) return k;
    return -1;
}

static tb_study_outcome judge(const tb_study_echo_row *r)
{
    bool helps = false, none = true, better = false;
    for (int i = 0; i < r->n_echo; i++) {
        const tb_verdict t = r->echo[i].time_pab.verdict;
        helps |= t == TB_VERDICT_A_BETTER && r->echo[i].fresh_pab.verdict == TB_VERDICT_A_BETTER;
        better |= t == TB_VERDICT_A_BETTER;
        none &= t == TB_VERDICT_B_BETTER || t == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE;
    }
    if (r->control)
        return better ? TB_STUDY_NOT_REPRODUCED : none ? TB_STUDY_REPRODUCED : TB_STUDY_INCONCLUSIVE;
    return helps ? TB_STUDY_REPRODUCED : none ? TB_STUDY_NOT_REPRODUCED : TB_STUDY_INCONCLUSIVE;
}

/* The row of group cell g (echo and slowdown at index 0) at slowdown index s. */
static tb_status echo_row(const tb_study_plan *plan, const tb_study_values *v, int g, int s,
                          int none, double *scratch, tb_study_echo_row *r, tb_error *err)
{
    const int ke = axis_of(plan, TB_AXIS_ECHO_MODE), ks = axis_of(plan, TB_AXIS_SLOWDOWN);
    const tb_study_axis *slow = &plan->axes[ks], *echo = &plan->axes[ke];
    int val[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, g, val);
    memset(r, 0, sizeof *r);
    r->group = g;
    r->slowdown = slow->numbers[s];
    int fastest = 0;
    for (int i = 1; i < slow->n; i++)
        if (slow->numbers[i] < slow->numbers[fastest]) fastest = i;
    r->control = s == fastest && r->slowdown <= 1;
    val[ke] = none;
    val[ks] = fastest;
    const int fast_base = cell_of(plan, val);
    val[ks] = s;
    r->cell_base = cell_of(plan, val);
    const size_t base = (size_t)r->cell_base * (size_t)v->seeds;
    r->base_time = median_of(v->v + base, v->seeds, scratch);
    r->base_fresh = median_of(v->fresh + base, v->seeds, scratch);
    r->delay_s = median_of(v->delay_s + base, v->seeds, scratch);
    const double fast_time =
        median_of(v->v + (size_t)fast_base * (size_t)v->seeds, v->seeds, scratch);
    r->best = -1;
    tb_status st = TB_OK;
    for (int e = 0; e < echo->n && st == TB_OK; e++) {
        if (e == none) continue;
        val[ke] = e;
        tb_study_echo_cell *c = &r->echo[r->n_echo];
        c->cell = cell_of(plan, val);
        const size_t at = (size_t)c->cell * (size_t)v->seeds;
        c->time = median_of(v->v + at, v->seeds, scratch);
        c->fresh = median_of(v->fresh + at, v->seeds, scratch);
        st = pab(v->v, v->seeds, c->cell, r->cell_base, &c->time_pab, err);
        if (st == TB_OK) st = pab(v->fresh, v->seeds, c->cell, r->cell_base, &c->fresh_pab, err);
        if (st == TB_OK) st = pab(v->v, v->seeds, c->cell, fast_base, &c->fast_pab, err);
        if (isfinite(c->time) && (r->best < 0 || c->time < r->echo[r->best].time))
            r->best = r->n_echo;
        r->compensated |= c->time <= fast_time;
        r->n_echo++;
    }
    r->outcome = plan->fig_echoing_judged ? judge(r) : TB_STUDY_NOT_JUDGED;
    return st;
}

tb_status tb_study_echo_figure(const tb_study_plan *plan, const tb_study_values *v,
                               tb_study_figures *f, tb_error *err)
{
    const int ke = axis_of(plan, TB_AXIS_ECHO_MODE), ks = axis_of(plan, TB_AXIS_SLOWDOWN);
    if (ke < 0 || ks < 0 || !v->fresh || !v->delay_s)
        return tb_fail(err, TB_ERR_INVALID, "echoing figure: the plan needs the axes \"echo\" "
                       "and \"upstream_slowdown\", and the values their fresh examples");
    int none = -1;
    for (int i = 0; i < plan->axes[ke].n && none < 0; i++)
        if (strcmp(plan->axes[ke].labels[i], "none") == 0) none = i;
    if (none < 0) return tb_fail(err, TB_ERR_INVALID, "echoing figure: the echo axis has no \"none\"");
    f->echo_rows = calloc(TB_STUDY_MAX_ECHO_ROWS, sizeof *f->echo_rows);
    double *scratch = malloc((size_t)v->seeds * sizeof *scratch);
    tb_status st = f->echo_rows && scratch
                       ? TB_OK
                       : tb_fail(err, TB_ERR_NOMEM, "out of memory for the echoing figure");
    for (int cell = 0; cell < v->cells && st == TB_OK; cell++) {
        int val[TB_STUDY_MAX_AXES];
        tb_study_plan_cell_values(plan, cell, val);
        if (val[ke] != 0 || val[ks] != 0) continue; /* one per group */
        for (int s = 0; s < plan->axes[ks].n && st == TB_OK; s++) {
            if (f->n_echo_rows == TB_STUDY_MAX_ECHO_ROWS)
                st = tb_fail(err, TB_ERR_INVALID, "echoing figure: more than %d rows",
                             TB_STUDY_MAX_ECHO_ROWS);
            else
                st = echo_row(plan, v, cell, s, none, scratch, &f->echo_rows[f->n_echo_rows++],
                              err);
        }
    }
    free(scratch);
    return st;
}

double tb_study_echo_compensated(const tb_study_figures *f, int group)
{
    double best = 0;
    for (int i = 0; f && i < f->n_echo_rows; i++) {
        const tb_study_echo_row *r = &f->echo_rows[i];
        if (r->group == group && r->compensated && r->slowdown > best) best = r->slowdown;
    }
    return best;
}

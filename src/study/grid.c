/* grid.c: a study plan's cells and the training configuration of each of its runs. */
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *tb_study_expect_name(tb_study_expect e)
{
    static const char *const names[] = {"none", "a_better", "b_better",
                                        "no_meaningful_difference", "a_not_worse", "a_wins",
                                        "same_within"};
    return (unsigned)e < sizeof names / sizeof *names ? names[e] : "unknown";
}

const char *tb_study_outcome_name(tb_study_outcome o)
{
    switch (o) {
    case TB_STUDY_REPRODUCED: return "reproduced";
    case TB_STUDY_NOT_REPRODUCED: return "not reproduced";
    case TB_STUDY_INCONCLUSIVE: return "inconclusive";
    case TB_STUDY_NOT_JUDGED: break;
    }
    return "not judged";
}

int tb_study_plan_cells(const tb_study_plan *plan)
{
    int n = 1;
    for (int k = 0; k < plan->n_axes; k++) n *= plan->axes[k].n;
    return n;
}

void tb_study_plan_cell_values(const tb_study_plan *plan, int cell, int *values)
{
    for (int k = plan->n_axes - 1; k >= 0; k--) {
        values[k] = cell % plan->axes[k].n;
        cell /= plan->axes[k].n;
    }
}

void tb_study_plan_cell_label(const tb_study_plan *plan, int cell, char *buf, size_t cap)
{
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    size_t len = 0;
    if (cap) buf[0] = '\0';
    for (int k = 0; k < plan->n_axes && len < cap; k++) {
        int w = snprintf(buf + len, cap - len, "%s%s=%s", k ? " " : "", plan->axes[k].name,
                         plan->axes[k].labels[v[k]]);
        if (w < 0) break;
        len += (size_t)w;
    }
}

/* Sets every value of src in dst. */
static tb_status merge(tb_hparams *dst, const tb_hparams *src, tb_error *err)
{
    for (int i = 0; i < src->count; i++) {
        tb_status st = tb_hparams_set(dst, src->names[i], src->values[i], err);
        if (st != TB_OK) return st;
    }
    return TB_OK;
}

static bool matches(const tb_study_plan *plan, const tb_study_where *w, const int *values)
{
    for (int k = 0; k < plan->n_axes; k++)
        if (w->value[k] >= 0 && w->value[k] != values[k]) return false;
    return true;
}

/* The cell's configuration before seeds: settings, axis values, hyperparameters ("*", its
 * algorithm's, the matching overrides in order, a hyperparameter axis last). */
static tb_status cell_config(const tb_study_plan *plan, int cell, tb_run_config *out,
                             tb_error *err)
{
    if (!plan || !out || cell < 0 || cell >= tb_study_plan_cells(plan))
        return tb_fail(err, TB_ERR_INVALID, "study_plan: no cell %d", cell);
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    *out = plan->base;
    out->model.workload = plan->workload;
    out->model.algorithm = plan->algorithm;
    out->model.hparams.count = 0;
    for (int k = 0; k < plan->n_axes; k++) {
        const tb_study_axis *a = &plan->axes[k];
        switch (a->kind) {
        case TB_AXIS_WORKLOAD: out->model.workload = a->labels[v[k]]; break;
        case TB_AXIS_ALGORITHM: out->model.algorithm = a->labels[v[k]]; break;
        case TB_AXIS_BATCH_SIZE: out->data.batch_size = (int)a->numbers[v[k]]; break;
        case TB_AXIS_STEPS: out->length.max_steps = (int64_t)a->numbers[v[k]]; break;
        case TB_AXIS_ECHO:
            out->data.pipeline.echo_factor = a->numbers[v[k]];
            if (out->data.pipeline.echo == TB_ECHO_NONE && a->numbers[v[k]] > 1)
                out->data.pipeline.echo = TB_ECHO_EXAMPLE_BEFORE_AUGMENT;
            break;
        case TB_AXIS_HPARAM: break; /* set last, below */
        case TB_AXIS_SEARCH: break; /* the tuning's, tb_study_plan_cell_per_run */
        case TB_AXIS_SPACE: break;  /* the tuning's: an override's tune per space */
        case TB_AXIS_SAMPLER: break; /* the tuning's, tb_study_plan_cell_sampler */
        case TB_AXIS_SLOWDOWN: break; /* its delay is the step time's: tb_study_execute */
        case TB_AXIS_ECHO_MODE:
            if (tb_study_echo_parse(a->labels[v[k]], &out->data.pipeline.echo,
                                    &out->data.pipeline.echo_factor, err) != TB_OK)
                return TB_ERR_INVALID;
            if (out->data.pipeline.echo == TB_ECHO_NONE) out->data.pipeline.echo_factor = 0;
            break;
        }
    }
    tb_status st = TB_OK;
    for (int pass = 0; pass < 2; pass++) /* "*" first, then the cell's algorithm */
        for (int i = 0; i < plan->n_hp_sets && st == TB_OK; i++)
            if (strcmp(plan->hp_names[i], pass ? out->model.algorithm : "*") == 0)
                st = merge(&out->model.hparams, &plan->hp_sets[i], err);
    for (int i = 0; i < plan->n_overrides && st == TB_OK; i++)
        if (matches(plan, &plan->overrides[i].when, v))
            st = merge(&out->model.hparams, &plan->overrides[i].hparams, err);
    for (int k = 0; k < plan->n_axes && st == TB_OK; k++)
        if (plan->axes[k].kind == TB_AXIS_HPARAM)
            st = tb_hparams_set(&out->model.hparams, plan->axes[k].name, plan->axes[k].numbers[v[k]],
                                err);
    return st;
}

static void set_seeds(const tb_study_plan *plan, int index, tb_run_config *c)
{
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        c->seeds[s] = tb_study_seed(plan->seed, (tb_stream)s, index);
}

tb_status tb_study_plan_run_config(const tb_study_plan *plan, int cell, int run,
                                   tb_run_config *out, tb_error *err)
{
    if (run < 0) return tb_fail(err, TB_ERR_INVALID, "study_plan_run_config: no run %d", run);
    tb_status st = cell_config(plan, cell, out, err);
    if (st != TB_OK) return st;
    set_seeds(plan, run + 1, out);
    return tb_study_prepare_config(plan->metric, out, err);
}

const tb_study_tune *tb_study_plan_cell_tune(const tb_study_plan *plan, int cell)
{
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    for (int i = plan->n_overrides - 1; i >= 0; i--)
        if (plan->overrides[i].tune.on && matches(plan, &plan->overrides[i].when, v))
            return &plan->overrides[i].tune;
    return plan->tune.on ? &plan->tune : NULL;
}

tb_study_sampler tb_study_plan_cell_sampler(const tb_study_plan *plan, int cell)
{
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    if (!t) return TB_STUDY_SAMPLER_HALTON;
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    for (int k = 0; k < plan->n_axes; k++)
        if (plan->axes[k].kind == TB_AXIS_SAMPLER)
            return (tb_study_sampler)(int)plan->axes[k].numbers[v[k]];
    return t->sampler;
}

bool tb_study_plan_cell_per_run(const tb_study_plan *plan, int cell)
{
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    if (!t) return false;
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    for (int k = 0; k < plan->n_axes; k++)
        if (plan->axes[k].kind == TB_AXIS_SEARCH)
            return strcmp(plan->axes[k].labels[v[k]], "per_run") == 0;
    return t->per_run;
}

tb_status tb_study_plan_trial_config(const tb_study_plan *plan, int cell, int seeds_index,
                                     const tb_hparams *point, tb_run_config *out, tb_error *err)
{
    tb_status st = cell_config(plan, cell, out, err);
    if (st != TB_OK) return st;
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    if (t && (t->budget_steps > 0 || t->budget_epochs > 0 || t->budget_seconds > 0)) {
        out->length.max_steps = t->budget_steps;
        out->length.epochs = t->budget_epochs;
        out->length.max_time_s = t->budget_seconds;
    }
    if (point && (st = merge(&out->model.hparams, point, err)) != TB_OK) return st;
    set_seeds(plan, seeds_index, out);
    return tb_study_prepare_config(plan->metric, out, err);
}

tb_status tb_study_plan_scale(tb_study_plan *plan, double factor, tb_error *err)
{
    if (!plan || !(factor > 0) || !isfinite(factor) || factor > 1000)
        return tb_fail(err, TB_ERR_INVALID, "scale %g is not in (0, 1000]", factor);
    if (plan->base.length.max_steps > 0) {
        double s = round((double)plan->base.length.max_steps * factor);
        plan->base.length.max_steps = s < 1 ? 1 : (int64_t)s;
    } else {
        plan->base.length.epochs *= factor;
    }
    plan->base.length.max_time_s *= factor; /* settings.seconds (0 stays 0) */
    for (int i = -1; i < plan->n_overrides; i++) { /* the tuning budgets */
        tb_study_tune *t = i < 0 ? &plan->tune : &plan->overrides[i].tune;
        if (t->budget_steps > 0) {
            double s = round((double)t->budget_steps * factor);
            t->budget_steps = s < 1 ? 1 : (int64_t)s;
        }
        t->budget_epochs *= factor;
        t->budget_seconds *= factor;
    }
    for (int k = 0; k < plan->n_axes; k++) {
        tb_study_axis *a = &plan->axes[k];
        if (a->kind != TB_AXIS_STEPS) continue;
        for (int i = 0; i < a->n; i++) {
            double s = round(a->numbers[i] * factor);
            a->numbers[i] = s < 1 ? 1 : s;
            snprintf(a->labels[i], sizeof a->labels[i], "%.0f", a->numbers[i]);
        }
    }
    return TB_OK;
}

tb_status tb_study_plan_set_seeds(tb_study_plan *plan, int seeds, tb_error *err)
{
    if (!plan || seeds < 2 || seeds > TB_STUDY_MAX_SEEDS)
        return tb_fail(err, TB_ERR_INVALID, "seeds: %d is not a whole number in [2, %d] (runs "
                       "per cell)", seeds, TB_STUDY_MAX_SEEDS);
    plan->seeds = seeds;
    return TB_OK;
}

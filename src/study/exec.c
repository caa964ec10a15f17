/* exec.c: runs a study plan's runs, reusing and recording them in a results store. */
#include "study/study_impl.h"
#include "trainbench/machine.h"
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends to buf (cap bytes) at *len; a key that does not fit is an error (TB_ERR_INVALID). */
__attribute__((format(printf, 4, 5))) static bool put(char *buf, size_t cap, size_t *len,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = *len < cap ? vsnprintf(buf + *len, cap - *len, fmt, ap) : -1;
    va_end(ap);
    if (n < 0 || *len + (size_t)n >= cap) return false;
    *len += (size_t)n;
    return true;
}

/* The run's whole configuration as text: what the store keys the run by. The hyperparameters
 * resolved (tb_hparams_resolve: every one, defaults filled in, aliases settled, in the
 * registry's order), so that a default given or left out, the order a file gives them in, or
 * nadamw's beta1 against one_minus_beta1 make the same key. A slow upstream enters by its
 * slowdown (the multiple of the step time), not by the delay measured for it. */
static tb_status run_key(const tb_run_config *c, double slowdown, char *buf, size_t cap,
                         tb_error *err)
{
    tb_hparams hp;
    tb_status st = tb_hparams_resolve(c->model.algorithm, &c->model.hparams, &hp, NULL, err);
    if (st != TB_OK) return st;
    size_t len = 0;
    char full[160] = ""; /* only when set: the keys of every other run stay as they were */
    if (c->data.full_batch > 0)
        snprintf(full, sizeof full, " full_batch=%lld", (long long)c->data.full_batch);
    if (c->diag.sharpness_every > 0)
        snprintf(full + strlen(full), sizeof full - strlen(full),
                 " sharpness_every=%lld sharpness_iters=%d",
                 (long long)c->diag.sharpness_every, c->diag.sharpness_iters);
    if (c->eval.target > 0 || c->eval.every_steps > 0 || slowdown > 0)
        snprintf(full + strlen(full), sizeof full - strlen(full),
                 " target=%.17g eval_every_steps=%lld upstream_slowdown=%.17g", c->eval.target,
                 (long long)c->eval.every_steps, slowdown);
    bool ok = put(buf, cap, &len, "workload=%s algorithm=%s hparams={", c->model.workload,
                  c->model.algorithm);
    for (int i = 0; i < hp.count && ok; i++)
        ok = put(buf, cap, &len, "%s%s=%.17g", i ? "," : "", hp.names[i], hp.values[i]);
    ok = ok && put(buf, cap, &len,
                   "} batch_size=%d steps=%lld epochs=%.17g schedule=%s warmup=%.17g "
                   "evals=%d eval_examples=%lld split=%d stop_at_target=%d max_time_s=%.17g "
                   "eval_period_s=%.17g device=%s precision=%s echo=%s echo_factor=%.17g "
                   "augment=%d shuffle_buffer=%lld%s seeds=",
                   c->data.batch_size, (long long)c->length.max_steps, c->length.epochs,
                   tb_schedule_name(c->length.schedule), c->length.warmup_fraction, c->eval.during,
                   (long long)c->eval.examples, (int)c->data.source.split_kind, (int)c->eval.stop_at_target,
                   c->length.max_time_s, c->eval.period_s, tb_device_name(c->model.backend.device),
                   tb_precision_name(c->model.backend.precision), tb_echo_kind_name(c->data.pipeline.echo),
                   c->data.pipeline.echo_factor, (int)c->data.pipeline.augment,
                   (long long)c->data.pipeline.shuffle_buffer, full);
    for (int s = 0; s < TB_STREAM_COUNT && ok; s++)
        ok = put(buf, cap, &len, "%s%llu", s ? "," : "", (unsigned long long)c->seeds[s]);
    return ok ? TB_OK : tb_fail(err, TB_ERR_INVALID, "a study run's configuration is longer "
                                "than %zu characters", cap - 1);
}

/* The metric of a finished run: the worst value (+inf, or -inf where higher is better) if it
 * diverged or its value is not finite (a missed target under time_to_target is +inf
 * already). */
static double run_value(tb_study_metric m, const tb_train_result *r, bool diverged)
{
    const double worst = tb_study_metric_higher_is_better(m) ? -INFINITY : INFINITY;
    if (diverged) return worst;
    double v = tb_study_metric_value(m, r);
    return isfinite(v) || (isinf(v) && tb_study_metric_to_target(m)) ? v : worst;
}

typedef struct exec_ctx {
    const tb_study_plan *plan;
    const tb_study_exec_options *o;
    tb_study_values *out;
    tb_study_run_record *rec;
    int done, total;
    int cell, run;              /* the run (or the search) under way */
    tb_gp_params *priors;       /* per cell: a gp_prior cell's pre-trained GP (prior.c) */
    bool *prior_ready;
    double *step_s;             /* [group * seeds + run]: the step time measured for a slow
                                   upstream (NaN: not yet; group: tb_study_echo_group) */
    tb_study_collector got;     /* the sharpness measurements of the run just made */
} exec_ctx;

/* The first cell whose axes equal cell's but for "echo" and "upstream_slowdown": the cells
 * that share the step time a slowdown is a multiple of. */
static int echo_group(const tb_study_plan *plan, int cell)
{
    int v[TB_STUDY_MAX_AXES], w[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, v);
    for (int g = 0; g < cell; g++) {
        tb_study_plan_cell_values(plan, g, w);
        bool same = true;
        for (int k = 0; k < plan->n_axes && same; k++)
            same = plan->axes[k].kind == TB_AXIS_SLOWDOWN ||
                   plan->axes[k].kind == TB_AXIS_ECHO_MODE || v[k] == w[k];
        if (same) return g;
    }
    return cell;
}

/* The slow upstream of a run of cell x->cell about to train: the step time of its group,
 * measured once per run index (every cell's run i shares it, so a pair of runs compared has
 * one delay), times the slowdown, over the batch, as the delay per fresh example. */
static tb_status slow_upstream(exec_ctx *x, double slowdown, tb_run_config *cfg, tb_error *err)
{
    const int g = echo_group(x->plan, x->cell);
    double *step_s = &x->step_s[(size_t)g * (size_t)x->out->seeds + (size_t)x->run];
    tb_status st = TB_OK;
    if (isnan(*step_s)) {
        const tb_step_time_plan how = {TB_STUDY_STEP_TIME_WARMUP, TB_STUDY_STEP_TIME_STEPS,
                                       TB_STUDY_STEP_TIME_WINDOWS};
        st = tb_run_measure_step_s(cfg, &how, step_s, err);
    }
    const tb_workload_info *w = tb_workload_find_info(cfg->model.workload);
    int64_t batch = cfg->data.batch_size > 0 ? cfg->data.batch_size
                    : w                      ? w->default_batch_size
                                             : 0;
    if (st == TB_OK)
        st = tb_upstream_delay_for(slowdown, *step_s, batch, &cfg->data.pipeline.upstream_delay_s,
                                   err);
    return st;
}

/* A run of configuration cfg: from the store if it holds it, else trained (and recorded under
 * the study's name, or "<name>/tune" for a tuning trial). */
static tb_status record_run(exec_ctx *x, tb_run_config *cfg, bool trial, bool *reused,
                            tb_error *err)
{
    const tb_study_exec_options *o = x->o;
    tb_study_run_record *rec = x->rec;
    memset(rec, 0, sizeof *rec);
    cfg->model.backend = o->backend;
    cfg->data.source.data_dir = o->data_dir;
    cfg->data.source.cache_dir = o->cache_dir;
    const double slowdown = tb_study_plan_cell_slowdown(x->plan, x->cell);
    tb_status st = run_key(cfg, slowdown, rec->key, sizeof rec->key, err);
    if (st != TB_OK) return st;
    *reused = false;
    tb_study_collector_take(&x->got, NULL);
    const bool sharp = cfg->diag.sharpness_every > 0;
    if (o->store) {
        st = tb_store_get_study_run(o->store, rec->key, rec, reused, err);
        if (st == TB_OK && *reused && sharp)
            st = tb_store_get_study_sharpness(o->store, rec->key, &x->got.curve, err);
        if (st != TB_OK || *reused) return st;
    }
    snprintf(rec->study, sizeof rec->study, "%.56s%s", x->plan->name, trial ? "/tune" : "");
    if (slowdown > 0 && (st = slow_upstream(x, slowdown, cfg, err)) != TB_OK) return st;
    rec->upstream_delay_s = cfg->data.pipeline.upstream_delay_s;
    tb_error e = {0};
    const tb_train_observers obs = {.on_sharpness = sharp ? tb_study_collect_sharpness : NULL,
                                    .sharpness_user = &x->got};
    st = tb_train(cfg, &obs, &rec->result, &e);
    if (st != TB_OK && st != TB_ERR_NUMERIC) {
        *err = e;
        return st;
    }
    if (x->got.nomem)
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study run's sharpness");
    rec->diverged = st == TB_ERR_NUMERIC;
    snprintf(rec->reason, sizeof rec->reason, "%s", rec->diverged ? e.message : "");
    /* the measurements first: a run the store holds has its measurements there */
    st = o->store && sharp ? tb_store_put_study_sharpness(o->store, rec->key, &x->got.curve, err)
                           : TB_OK;
    if (st != TB_OK) return st;
    return o->store ? tb_store_put_study_run(o->store, rec, tb_code_version(), err) : TB_OK;
}

static void report(exec_ctx *x, int trial, bool reused, double v)
{
    if (reused) x->out->reused++;
    else x->out->trained++;
    x->done++;
    if (!x->o->progress) return;
    tb_error why = {0};
    if (x->rec->diverged) snprintf(why.message, sizeof why.message, "%s", x->rec->reason);
    x->o->progress(x->o->user, x->done, x->total, x->cell, x->run, trial, reused,
                   x->rec->diverged ? NAN : v, x->rec->diverged ? &why : NULL);
}

static tb_status trial_fn(void *user, const tb_run_config *cfg, int trial, double *select,
                          double *reported, tb_error *err)
{
    exec_ctx *x = user;
    tb_run_config c = *cfg;
    c.diag.sharpness_every = 0; /* tuning trials are not measured */
    bool reused = false;
    tb_status st = record_run(x, &c, true, &reused, err);
    if (st != TB_OK) return tb_error_prefix(err, "tuning trial %d", trial + 1);
    const tb_study_metric m = x->plan->metric;
    *select = run_value(tb_study_selection_metric(m), &x->rec->result, x->rec->diverged);
    *reported = run_value(m, &x->rec->result, x->rec->diverged);
    report(x, trial, reused, *select);
    return x->rec->diverged ? TB_ERR_NUMERIC : TB_OK;
}

/* The search of cell x->cell on the seeds of index seeds_index (0: the cell's one search; a
 * run's own: run + 1), its hparam seed that of index hparam_index (-1: seeds_index's), its
 * trials' values into the values' row `slot` (none when slot < 0); *chosen its best. */
static tb_status tune_cell(exec_ctx *x, const tb_study_tune *t, int seeds_index,
                           int hparam_index, int slot, tb_hparams *chosen, tb_error *err)
{
    tb_run_config base;
    tb_status st = tb_study_plan_trial_config(x->plan, x->cell, seeds_index, NULL, &base, err);
    if (hparam_index >= 0)
        base.seeds[TB_STREAM_HPARAM] = tb_study_seed(x->plan->seed, TB_STREAM_HPARAM,
                                                      hparam_index);
    tb_search_space *space = NULL;
    if (st == TB_OK)
        st = tb_search_space_parse(x->plan->space_json[t->space], t->space_source, &space, err);
    if (st != TB_OK) return st;
    const tb_study_sampler sampler = tb_study_plan_cell_sampler(x->plan, x->cell);
    const tb_gp_params *prior = NULL;
    if (st == TB_OK && sampler == TB_STUDY_SAMPLER_GP_PRIOR) {
        if (!x->prior_ready[x->cell])
            st = tb_study_prior_fit(x->plan, x->out, x->cell, &x->priors[x->cell], err);
        x->prior_ready[x->cell] = st == TB_OK;
        prior = &x->priors[x->cell];
    }
    if (st != TB_OK) {
        tb_search_space_destroy(space);
        return st;
    }
    tb_study_search s = {space, t->trials, sampler, base.seeds[TB_STREAM_HPARAM], trial_fn, x,
                         prior};
    tb_study_search_result r;
    st = tb_study_search_run(&s, &base, &r, err);
    tb_search_space_destroy(space);
    if (st != TB_OK) return st;
    double *row = x->out->trial_v + (size_t)(slot < 0 ? 0 : slot) * (size_t)x->out->max_trials;
    tb_hparams *points = x->out->trial_points + (row - x->out->trial_v);
    for (int i = 0; slot >= 0 && i < r.n; i++) {
        row[i] = r.select[i];
        points[i] = r.points[i];
    }
    if (r.best < 0)
        st = tb_fail(err, TB_ERR_NUMERIC, "every one of the %d tuning trials diverged", r.n);
    else
        *chosen = r.points[r.best];
    tb_study_search_result_free(&r);
    return st;
}

/* Run `run` of cell `cell`: the cell's configuration with its tuned point, if it has one. */
static tb_status one_run(exec_ctx *x, int cell, int run, tb_error *err)
{
    x->cell = cell;
    x->run = run;
    const tb_study_plan *plan = x->plan;
    tb_study_values *out = x->out;
    const size_t slot = (size_t)cell * (size_t)out->seeds + (size_t)run;
    const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
    tb_status st = TB_OK;
    if (tb_study_plan_cell_per_run(plan, cell)) st = tune_cell(x, t, run + 1, -1, (int)slot, &out->chosen[slot], err);
    else if (t) out->chosen[slot] = out->chosen[(size_t)cell * (size_t)out->seeds];
    tb_run_config cfg;
    if (st == TB_OK) st = tb_study_plan_run_config(plan, cell, run, &cfg, err);
    for (int k = 0; t && st == TB_OK && k < out->chosen[slot].count; k++)
        st = tb_hparams_set(&cfg.model.hparams, out->chosen[slot].names[k],
                            out->chosen[slot].values[k], err);
    bool reused = false;
    if (st == TB_OK) st = record_run(x, &cfg, false, &reused, err);
    if (st != TB_OK) return st;
    double v = run_value(plan->metric, &x->rec->result, x->rec->diverged);
    out->v[slot] = v;
    out->fresh[slot] = x->rec->result.fresh_to_target < 0
                           ? NAN
                           : run_value(TB_METRIC_FRESH_TO_TARGET, &x->rec->result,
                                       x->rec->diverged);
    out->delay_s[slot] = x->rec->upstream_delay_s;
    if (out->sharpness) {
        x->got.curve.diverged = x->rec->diverged;
        tb_study_collector_take(&x->got, &out->sharpness[slot]);
    }
    report(x, -1, reused, v);
    return TB_OK;
}

/* Run i of cell `cell` varying source fig_sources[k] alone: every other seed the base one
 * (index 0), that source's run i's; the cell's chosen point (it tunes once), or for hparam the
 * best of a search of its own on the base seeds with run i's hparam seed. A cell that
 * searches per run has none (NaN). */
static tb_status source_run(exec_ctx *x, int k, int cell, int run, tb_error *err)
{
    x->cell = cell;
    x->run = run;
    const tb_study_plan *plan = x->plan;
    tb_study_values *out = x->out;
    double *value = &out->source_v[((size_t)k * (size_t)out->cells + (size_t)cell) *
                                       (size_t)out->seeds + (size_t)run];
    *value = NAN;
    if (tb_study_plan_cell_per_run(plan, cell)) return TB_OK;
    tb_run_config cfg;
    tb_status st = tb_study_plan_run_config(plan, cell, run, &cfg, err);
    if (st != TB_OK) return st;
    const tb_stream src = plan->fig_sources[k];
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        cfg.seeds[s] = tb_study_seed(plan->seed, (tb_stream)s, s == (int)src ? run + 1 : 0);
    const tb_hparams *chosen = out->chosen ? &out->chosen[(size_t)cell * (size_t)out->seeds]
                                           : NULL;
    tb_hparams own;
    if (src == TB_STREAM_HPARAM) {
        st = tune_cell(x, tb_study_plan_cell_tune(plan, cell), 0, run + 1, -1, &own, err);
        if (st != TB_OK) return st;
        chosen = &own;
    }
    for (int i = 0; chosen && st == TB_OK && i < chosen->count; i++)
        st = tb_hparams_set(&cfg.model.hparams, chosen->names[i], chosen->values[i], err);
    bool reused = false;
    if (st == TB_OK) st = record_run(x, &cfg, false, &reused, err);
    if (st != TB_OK) return st;
    double v = run_value(plan->metric, &x->rec->result, x->rec->diverged);
    *value = v;
    tb_study_collector_take(&x->got, NULL);
    report(x, -2 - k, reused, v);
    return TB_OK;
}

/* Room for the values, and the tuning's rows when a cell tunes; the progress total. */
static tb_status values_alloc(exec_ctx *x, tb_error *err)
{
    const tb_study_plan *plan = x->plan;
    tb_study_values *out = x->out;
    out->cells = tb_study_plan_cells(plan);
    out->seeds = plan->seeds;
    const size_t runs = (size_t)out->cells * (size_t)out->seeds;
    x->total = (int)runs;
    for (int cell = 0; cell < out->cells; cell++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
        if (!t) continue;
        if (t->trials > out->max_trials) out->max_trials = t->trials;
        x->total += t->trials * (tb_study_plan_cell_per_run(plan, cell) ? out->seeds : 1);
    }
    out->v = malloc(runs * sizeof(double));
    out->fresh = malloc(runs * sizeof(double));
    out->delay_s = malloc(runs * sizeof(double));
    x->step_s = malloc(runs * sizeof(double));
    if (!out->fresh || !out->delay_s || !x->step_s)
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's results");
    for (size_t i = 0; i < runs; i++) x->step_s[i] = NAN;
    for (int k = 0; k < plan->n_fig_sources; k++) /* per_run cells have no source runs */
        for (int cell = 0; cell < out->cells; cell++) {
            if (tb_study_plan_cell_per_run(plan, cell)) continue;
            const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
            const bool search = plan->fig_sources[k] == TB_STREAM_HPARAM;
            x->total += out->seeds * (1 + (search && t ? t->trials : 0));
        }
    if (plan->base.diag.sharpness_every > 0 &&
        !(out->sharpness = calloc(runs, sizeof *out->sharpness)))
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's results");
    if (plan->n_fig_sources > 0 &&
        !(out->source_v = malloc((size_t)plan->n_fig_sources * runs * sizeof(double))))
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's results");
    if (out->max_trials > 0) {
        out->trial_v = malloc(runs * (size_t)out->max_trials * sizeof(double));
        out->chosen = calloc(runs, sizeof *out->chosen);
        out->trial_points = calloc(runs * (size_t)out->max_trials, sizeof *out->trial_points);
    }
    if (!out->v || (out->max_trials > 0 && (!out->trial_v || !out->chosen || !out->trial_points)))
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's results");
    for (size_t i = 0; out->trial_v && i < runs * (size_t)out->max_trials; i++)
        out->trial_v[i] = NAN;
    return TB_OK;
}

tb_status tb_study_execute(const tb_study_plan *plan, const tb_study_exec_options *opts,
                           tb_study_values *out, tb_error *err)
{
    if (!plan || !opts || !out)
        return tb_fail(err, TB_ERR_INVALID, "study_execute: %s is NULL",
                       !plan ? "plan" : !opts ? "options" : "out");
    memset(out, 0, sizeof *out);
    const int n_cells = tb_study_plan_cells(plan);
    exec_ctx x = {plan, opts, out, malloc(sizeof *x.rec), 0, 0, 0, 0,
                  calloc((size_t)n_cells, sizeof *x.priors),
                  calloc((size_t)n_cells, sizeof *x.prior_ready), NULL, {{0}, 0, false}};
    tb_status st = x.rec && x.priors && x.prior_ready
                       ? values_alloc(&x, err)
                       : tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's results");
    /* pass 0 every cell but the gp_prior ones, pass 1 those: their priors are fitted to the
     * other workloads' searches of pass 0 */
    for (int pass = 0; pass < 2 && st == TB_OK; pass++) {
        /* the cells that search once, first: their runs retrain the point chosen */
        for (int cell = 0; cell < out->cells && st == TB_OK; cell++) {
            const tb_study_tune *t = tb_study_plan_cell_tune(plan, cell);
            if (pass != (tb_study_plan_cell_sampler(plan, cell) == TB_STUDY_SAMPLER_GP_PRIOR))
                continue;
            x.cell = cell;
            x.run = 0;
            if (t && !tb_study_plan_cell_per_run(plan, cell)) {
                const int slot = cell * out->seeds;
                st = tune_cell(&x, t, 0, -1, slot, &out->chosen[slot], err);
                if (st != TB_OK) {
                    char label[256];
                    tb_study_plan_cell_label(plan, cell, label, sizeof label);
                    tb_error_prefix(err, "%s, tuning", label);
                }
            }
        }
        for (int run = 0; run < out->seeds && st == TB_OK; run++)
            for (int cell = 0; cell < out->cells && st == TB_OK; cell++) {
                if (pass != (tb_study_plan_cell_sampler(plan, cell) == TB_STUDY_SAMPLER_GP_PRIOR))
                    continue;
                st = one_run(&x, cell, run, err);
                if (st != TB_OK) {
                    char label[256];
                    tb_study_plan_cell_label(plan, cell, label, sizeof label);
                    tb_error_prefix(err, "%s, run %d", label, run + 1);
                }
            }
    }
    /* the variance figure's runs: each source varied alone, seed-major as the runs */
    for (int run = 0; run < out->seeds && st == TB_OK; run++)
        for (int k = 0; k < plan->n_fig_sources && st == TB_OK; k++)
            for (int cell = 0; cell < out->cells && st == TB_OK; cell++) {
                st = source_run(&x, k, cell, run, err);
                if (st != TB_OK) {
                    char label[256];
                    tb_study_plan_cell_label(plan, cell, label, sizeof label);
                    tb_error_prefix(err, "%s, %s run %d", label,
                                    tb_stream_name(plan->fig_sources[k]), run + 1);
                }
            }
    free(x.rec);
    free(x.priors);
    free(x.prior_ready);
    free(x.step_s);
    tb_study_collector_take(&x.got, NULL);
    if (st != TB_OK) tb_study_values_free(out);
    return st;
}

void tb_study_values_free(tb_study_values *values)
{
    if (!values) return;
    free(values->v);
    free(values->trial_v);
    free(values->chosen);
    free(values->trial_points);
    free(values->source_v);
    free(values->fresh);
    free(values->delay_s);
    for (int i = 0; values->sharpness && i < values->cells * values->seeds; i++)
        free(values->sharpness[i].points);
    free(values->sharpness);
    memset(values, 0, sizeof *values);
}

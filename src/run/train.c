/* train.c: `trainbench train`'s driver of the run core (see trainbench/train.h): the run's
 * steps, its evaluations by the scheduler, the target, the sharpness probe and progress as
 * observers, the final evaluations. The update is the run's optimizer's, or an update hook's
 * (a submission's, tb_submission_hook: `train -a FILE`). */
#include "trainbench/train.h"

#include "core/clock.h"
#include "run/run_dist.h"
#include "run/sharpness_probe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct trainer {
    const tb_run_config *cfg;
    tb_train_observers obs;
    tb_train_result *res;
    tb_run *run;
    tb_sharpness_probe *probe; /* diag.sharpness_every > 0 */
    tb_eval_sched sched;
    double last_report;
} trainer;

/* The result before the run: NaN where nothing is measured yet, and the hyperparameters the
 * run will use (tb_hparams_resolve runs tb_optimizer_check_hparams' checks). */
static tb_status begin(const tb_run_config *c, tb_train_result *res, tb_error *err)
{
    memset(res, 0, sizeof *res);
    res->validation.loss = res->test.loss = NAN;
    res->best_validation_metric = res->time_to_target_s = res->final_train_loss = NAN;
    tb_status st = tb_run_config_check(c, err);
    if (st != TB_OK) return st;
    const tb_run_length *l = &c->length;
    if (l->max_steps == 0 && l->epochs == 0 && l->max_time_s == 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "the run has no steps (epochs %g, max steps %lld, no time limit)",
                       l->epochs, (long long)l->max_steps);
    if (c->update.update) { /* a submission: its hyperparameters are the ones given */
        res->hparams = c->model.hparams;
        return TB_OK;
    }
    return tb_hparams_resolve(c->model.algorithm, &c->model.hparams, &res->hparams,
                              &res->default_hparams, err);
}

/* An evaluation of `split`: an update hook's preparation first (a submission's
 * prepare_for_eval), untimed as the evaluation is. */
static tb_status evaluate(trainer *t, tb_split split, tb_eval_metrics *m, tb_error *err)
{
    const tb_run_update *u = &t->cfg->update;
    if (u->prepare_eval) {
        tb_status st = u->prepare_eval(u->user, t->run, err);
        if (st != TB_OK) return st;
    }
    return tb_run_evaluate(t->run, split, t->cfg->eval.examples, m, err);
}

static tb_status setup(trainer *t, tb_error *err)
{
    const tb_run_config *c = t->cfg;
    tb_status st = tb_run_create(c, &t->run, err);
    if (st != TB_OK) return st;
    tb_train_result *res = t->res;
    snprintf(res->backend, sizeof res->backend, "%s", tb_backend_describe(tb_run_backend(t->run)));
    res->parameters = tb_params_trainable(tb_workload_params(tb_run_workload(t->run)));
    res->schedule = *tb_run_schedule(t->run);
    t->sched = tb_eval_sched_make(&c->eval, tb_run_total_steps(t->run));
    if (c->model.cuda_graph) {
        snprintf(res->graph_note, sizeof res->graph_note, "%s",
                 tb_step_runner_note(tb_run_step_runner(t->run)));
        if (res->graph_note[0]) tb_log(t->obs.logger, TB_LOG_INFO, "%s", res->graph_note);
    }
    const tb_run_diag *d = &c->diag;
    /* full batch: the Hessian of the loss the steps minimise, on their subset (unless another
     * sharpness batch size is asked for) */
    const int64_t batch = d->sharpness_batch > 0 ? d->sharpness_batch : tb_run_batch_size(t->run);
    const int64_t *rows = c->data.full_batch == batch ? tb_run_full_rows(t->run) : NULL;
    if (d->sharpness_every > 0)
        st = tb_sharpness_probe_create(
            tb_run_workload(t->run), tb_run_optimizer(t->run), batch, rows,
            d->sharpness_iters > 0 ? d->sharpness_iters : TB_SHARPNESS_DEFAULT_ITERS,
            d->sharpness_fd_scale, c->seeds[TB_STREAM_DROPOUT], &t->probe, err);
    return st;
}

/* Fresh examples delivered so far (full batch: the subset, read once at the first step). */
static int64_t fresh_so_far(const trainer *t)
{
    const int64_t full = t->cfg->data.full_batch;
    if (full > 0) return tb_run_steps(t->run) > 0 ? full : 0;
    return tb_pipeline_fresh_examples(tb_run_pipeline(t->run));
}

/* Records a validation evaluation made after `timed` seconds of training: the best metric,
 * and the target (confirmed on the whole validation split by tb_run_at_target). */
static tb_status note_validation(trainer *t, const tb_eval_metrics *m, double timed,
                                 tb_error *err)
{
    tb_train_result *res = t->res;
    const tb_workload_info *info = tb_workload_get_info(tb_run_workload(t->run));
    double v = m->metric;
    res->evaluations++;
    if (isnan(res->best_validation_metric) ||
        (info->lower_is_better ? v < res->best_validation_metric
                               : v > res->best_validation_metric))
        res->best_validation_metric = v;
    if (res->reached_target) return TB_OK;
    const double target = t->cfg->eval.target > 0 ? t->cfg->eval.target : info->validation_target;
    tb_status st = tb_run_at_target(t->run, target, m, &res->reached_target, NULL, err);
    if (st == TB_OK && res->reached_target) {
        res->time_to_target_s = timed;
        res->steps_to_target = tb_run_steps(t->run);
        res->fresh_to_target = fresh_so_far(t);
    }
    return st;
}

/* One sharpness measurement (untimed) after the step just taken: into the result, then to the
 * observer. */
static tb_status measure_sharpness(trainer *t, int64_t step, tb_error *err)
{
    double t0 = tb_monotonic_s();
    tb_sharpness s;
    tb_status st = tb_sharpness_probe_measure(
        t->probe, tb_schedule_factor(tb_run_schedule(t->run), step), &s, err);
    if (st != TB_OK) return tb_error_prefix(err, "sharpness after step %lld", (long long)step);
    t->res->sharpness_time_s += tb_monotonic_s() - t0;
    t->res->sharpness_measurements++;
    t->res->sharpness = s;
    if (t->obs.on_sharpness) t->obs.on_sharpness(t->obs.sharpness_user, &s);
    return TB_OK;
}

static void report(trainer *t, const tb_run_step_info *s, const tb_eval_metrics *val)
{
    const double timed = tb_run_timed_s(t->run), every = t->obs.progress_every_s;
    const int64_t total = tb_run_total_steps(t->run);
    if (!t->obs.progress ||
        !(val || timed - t->last_report >= every || s->step == total))
        return;
    const bool by_time = tb_run_open_ended(t->run);
    double eta = by_time ? fmax(t->cfg->length.max_time_s - timed, 0.0)
                         : timed / (double)s->step * (double)(total - s->step);
    tb_train_progress p = {
        .step = s->step, .total_steps = by_time ? 0 : total,
        .epoch = tb_pipeline_epoch(tb_run_pipeline(t->run)), .loss = s->loss,
        .examples_per_s = timed > 0 ? (double)t->res->examples / timed : 0,
        .elapsed_s = timed, .eta_s = eta, .validation = val};
    t->obs.progress(t->obs.progress_user, &p);
    t->last_report = timed;
}

/* What follows a step on rank 0 (or the one process): a due evaluation, the sharpness probe,
 * progress; *stop when the time or the target ends the run. */
static tb_status after_step(trainer *t, const tb_run_step_info *s, bool last, bool *stop,
                            tb_error *err)
{
    const tb_run_config *c = t->cfg;
    const double timed = tb_run_timed_s(t->run);
    const bool out_of_time = c->length.max_time_s > 0 && timed >= c->length.max_time_s;
    bool eval_now = tb_eval_sched_due(&t->sched, s->step, timed) && !last && !out_of_time;
    bool root = tb_dist_rank(c->dist) == 0;
    tb_eval_metrics val;
    tb_status st = TB_OK;
    if (eval_now && root) {
        st = evaluate(t, TB_SPLIT_VALIDATION, &val, err);
        if (st == TB_OK) st = note_validation(t, &val, timed, err);
        tb_eval_sched_done(&t->sched, timed);
    }
    if (st == TB_OK && t->probe && s->step % c->diag.sharpness_every == 0)
        st = measure_sharpness(t, s->step, err);
    if (st == TB_OK) report(t, s, eval_now ? &val : NULL);
    *stop = out_of_time || s->done || (c->eval.stop_at_target && t->res->reached_target);
    return st;
}

static tb_status loop(trainer *t, tb_error *err)
{
    tb_train_result *res = t->res;
    const int64_t total = tb_run_total_steps(t->run);
    tb_status st = TB_OK;
    for (int64_t step = 1; step <= total; step++) {
        tb_run_step_info s;
        /* batch, forward, backward and update; eager, or replayed from a CUDA graph */
        st = tb_run_step(t->run, true, &s, err);
        res->graph_replays = tb_step_runner_replays(tb_run_step_runner(t->run));
        if (st != TB_OK) break;
        res->steps = step;
        res->examples += s.examples;
        res->final_train_loss = s.loss;
        bool stop = false;
        st = after_step(t, &s, step == total, &stop, err);
        /* data-parallel: rank 0's verdict (stop, or failed) reaches every rank */
        st = tb_dist_agree(t->cfg->dist, st, &stop, err);
        if (st != TB_OK || stop) break;
    }
    res->train_time_s = tb_run_timed_s(t->run);
    res->examples_per_s = res->train_time_s > 0 ? (double)res->examples / res->train_time_s : 0;
    res->fresh_examples = fresh_so_far(t);
    tb_pipeline_projection_stats(tb_run_pipeline(t->run), &res->projection);
    if (t->cfg->diag.profile) {
        int n = tb_tape_profile(tb_run_tape(t->run), res->profile, TB_TRAIN_PROFILE_MAX);
        res->profile_ops = n < TB_TRAIN_PROFILE_MAX ? n : TB_TRAIN_PROFILE_MAX;
    }
    return st;
}

/* After the last step: the weights identical on every rank (data-parallel), the final
 * validation (whose loss the divergence rule checks: no later training loss checks the last
 * update) and the test split, on rank 0. */
static tb_status finish(trainer *t, tb_error *err)
{
    const tb_run_config *c = t->cfg;
    tb_train_result *res = t->res;
    tb_params *params = tb_workload_params(tb_run_workload(t->run));
    bool dist = tb_dist_size(c->dist) > 1, root = tb_dist_rank(c->dist) == 0;
    tb_status st = TB_OK;
    if (dist)
        st = tb_dist_check_identical(c->dist, tb_params_values(params), tb_params_numel(params),
                                     "the weights after training", err);
    if (st == TB_OK && root)
        st = evaluate(t, TB_SPLIT_VALIDATION, &res->validation, err);
    if (st == TB_OK && root)
        st = tb_run_check_loss(t->run, "the validation loss", res->validation.loss, res->steps,
                               true, err);
    if (st == TB_OK && root)
        st = note_validation(t, &res->validation, tb_run_timed_s(t->run), err);
    if (st == TB_OK && root)
        st = evaluate(t, TB_SPLIT_TEST, &res->test, err);
    return dist ? tb_dist_agree(c->dist, st, NULL, err) : st;
}

tb_status tb_train(const tb_run_config *cfg, const tb_train_observers *observers,
                   tb_train_result *res, tb_error *err)
{
    if (!cfg || !res)
        return tb_fail(err, TB_ERR_INVALID, "train: %s is NULL", cfg ? "the result" : "config");
    trainer t = {.cfg = cfg, .res = res, .last_report = -1e9};
    if (observers) t.obs = *observers;
    tb_status st = begin(cfg, res, err);
    if (st == TB_OK) st = setup(&t, err);
    /* data-parallel: every rank learns whether every rank set the probe up */
    if (t.run) st = tb_dist_agree(cfg->dist, st, NULL, err);
    if (st == TB_OK) st = loop(&t, err);
    if (st == TB_OK) st = finish(&t, err);
    res->diverged = st == TB_ERR_NUMERIC; /* the status and the result always agree */
    tb_sharpness_probe_destroy(t.probe);
    tb_run_destroy(t.run);
    return st;
}

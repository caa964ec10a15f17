/* step.c: the run's one step (tb_run_step): the batch, the update (the step runner's or the
 * update hook's), the host time, and the divergence rule on the step's loss. Also the step's
 * model for the runners: the Fisher pass of curvature optimizers, Sophia's Hessian pass, this
 * rank's shard, the forward pass and loss; and the data-parallel average between backward and update. */
#include "run/run_impl.h"

#include "core/clock.h"
#include "run/fisher.h"
#include "run/hessian.h"
#include "run/run_dist.h"

#include <math.h>

static tb_var *step_loss(void *user, tb_tape *tape, const tb_batch *b, tb_rng *dropout,
                         tb_error *err)
{
    tb_run_stepper *s = user;
    tb_run *r = s->run;
    tb_batch shard; /* the whole batch, or this rank's shard of it (data-parallel) */
    tb_status st = tb_run_dist_shard(r->cfg.dist, tape, b, &shard, err);
    if (st == TB_OK)
        st = tb_fisher_pass(s->opt, r->wl, tape, tb_workload_params(r->wl), shard.inputs,
                            &r->fisher, dropout, err);
    if (st == TB_OK) /* sophia's probes share the Fisher stream: no optimizer uses both */
        st = tb_hessian_pass(s->opt, r->wl, tape, tb_workload_params(r->wl), shard.inputs,
                             shard.targets, tb_dist_size(r->cfg.dist), &r->fisher, dropout, err);
    if (st != TB_OK) return NULL;
    return tb_workload_loss_fn(r->wl, tape,
                               tb_workload_forward(r->wl, tape, shard.inputs, dropout),
                               shard.targets);
}

/* Data-parallel: the gradients and the loss averaged across ranks before the update; the
 * averaged loss is the step's loss. */
static tb_status step_reduce(void *user, float *loss, tb_error *err)
{
    tb_run *r = ((tb_run_stepper *)user)->run;
    return tb_run_dist_reduce(r->cfg.dist, tb_workload_params(r->wl), loss, err);
}

tb_status tb_run_runner_create(tb_run *r, tb_optimizer *opt, bool cuda_graph,
                               tb_run_stepper *out, tb_error *err)
{
    tb_step_runner_destroy(out->runner);
    *out = (tb_run_stepper){.run = r, .opt = opt};
    tb_step_config sc = {.loss = step_loss, .user = out, .cuda_graph = cuda_graph,
                         .reduce = tb_dist_size(r->cfg.dist) > 1 ? step_reduce : NULL};
    return tb_step_runner_create(r->tape, tb_workload_params(r->wl), opt, &sc, &out->runner,
                                 err);
}

/* A step that failed with TB_ERR_NUMERIC: a NaN or an infinity in the step's own numbers (a
 * gradient, a trust ratio, a factor inverse, the Fisher pass's logits), found before the
 * update. That is the run diverging too, with the step in the message. */
static tb_status numeric_failure(int64_t step, tb_error *err)
{
    return tb_error_prefix(err, "the run diverged at step %lld", (long long)step);
}

/* The update hook's step: its batch (or the pipeline's) on the reset tape, then its update. */
static tb_status hook_step(tb_run *r, int64_t step, tb_run_step_info *info, tb_error *err)
{
    const tb_run_update *u = &r->cfg.update;
    tb_tape_reset(r->tape);
    tb_tape_set_training(r->tape, true);
    tb_batch b;
    tb_status st = u->select ? u->select(u->user, r, &b, err)
                             : tb_pipeline_next(r->pipe, r->tape, &b, err);
    if (st != TB_OK) return st;
    info->examples = b.n;
    tb_step_report rep = {.loss = NAN};
    st = u->update(u->user, r, &b, step, &rep, err);
    info->loss = rep.loss;
    info->done = rep.training_done;
    return st;
}

/* Full batch: the fixed subset on the reset tape, then the runner's step on it. */
static tb_status full_batch_step(tb_run *r, int64_t step, float *loss, int64_t *examples,
                                 tb_error *err)
{
    tb_tape_reset(r->tape);
    tb_batch b = {.n = r->batch, .fresh = step == 1 ? r->batch : 0, .rows = r->full_rows};
    if (!tb_workload_gather(r->wl, r->tape, TB_SPLIT_TRAIN, r->full_rows, r->batch, &b.inputs,
                            &b.targets)) {
        if (err) *err = *tb_tape_error(r->tape);
        return tb_tape_status(r->tape);
    }
    *examples = b.n;
    return tb_step_runner_run(r->own.runner, &b, tb_schedule_factor(&r->schedule, step),
                              &r->dropout, loss, err);
}

static tb_status runner_step(tb_run *r, int64_t step, bool read_loss, tb_run_step_info *info,
                             tb_error *err)
{
    float loss = NAN;
    tb_status st = r->full_rows
                       ? full_batch_step(r, step, read_loss ? &loss : NULL, &info->examples, err)
                       : tb_step_runner_step(r->own.runner, r->pipe,
                                             tb_schedule_factor(&r->schedule, step),
                                             &r->dropout, read_loss ? &loss : NULL,
                                             &info->examples, err);
    info->loss = loss;
    return st;
}

tb_status tb_run_step(tb_run *r, bool read_loss, tb_run_step_info *info, tb_error *err)
{
    tb_run_step_info own;
    if (!info) info = &own;
    const int64_t step = r->steps + 1;
    *info = (tb_run_step_info){.step = step, .loss = NAN};
    const bool hook = r->cfg.update.update != NULL;
    double t0 = tb_monotonic_s();
    tb_status st = hook ? hook_step(r, step, info, err)
                        : runner_step(r, step, read_loss, info, err);
    info->seconds = tb_monotonic_s() - t0;
    /* the runner's numeric failure is named here; a hook's error is its own, as it is */
    if (st == TB_ERR_NUMERIC && !hook) return numeric_failure(step, err);
    if (st != TB_OK) return st;
    if (hook || read_loss) {
        if (step == 1 || isnan(r->first_loss)) r->first_loss = info->loss;
        st = tb_run_check_loss(r, "the training loss", info->loss, step, false, err);
        if (st != TB_OK) return st;
    }
    r->steps = step;
    r->timed_s += info->seconds;
    return TB_OK;
}

tb_status tb_run_last_loss(tb_run *r, float *loss, tb_error *err)
{
    tb_status st = tb_step_runner_last_loss(r->own.runner, loss, err);
    if (st != TB_OK) return st;
    if (isnan(r->first_loss)) r->first_loss = *loss;
    return tb_run_check_loss(r, "the training loss", *loss, r->steps, false, err);
}

tb_status tb_run_standard_update(tb_run *r, tb_optimizer *opt, const tb_batch *batch,
                                 double lr_scale, double *loss, tb_error *err)
{
    *loss = NAN;
    if (r->theirs.opt != opt || !r->theirs.runner) {
        /* data-parallel: what train --dist refuses (a curvature optimizer, an uneven shard) */
        tb_status st = tb_run_dist_refusals(&r->cfg, batch->n, opt, err);
        if (st == TB_OK) st = tb_fisher_attach(opt, r->wl, err); /* K-FAC, EKFAC: the layers */
        if (st == TB_OK) st = tb_run_runner_create(r, opt, false, &r->theirs, err);
        if (st != TB_OK) return st;
    }
    float value = NAN;
    tb_status st = tb_step_runner_run(r->theirs.runner, batch, lr_scale, &r->dropout, &value, err);
    *loss = value;
    return st;
}

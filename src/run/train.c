/* train.c: a single timed training run: data order, steps, schedule, evaluations. */
#include "trainbench/train.h"
#include "core/clock.h"

#include "trainbench/pipeline.h"

#include "run/fisher.h"
#include "run/sharpness_probe.h"
#include "run/train_dist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tb_train_config tb_train_config_default(void)
{
    tb_train_config c;
    memset(&c, 0, sizeof c);
    c.workload = "fmnist_mlp";
    c.algorithm = "adamw";
    c.backend.device = TB_DEVICE_CPU;
    c.epochs = 5.0;
    c.schedule = TB_SCHEDULE_WARMUP_COSINE;
    c.warmup_fraction = 0.05;
    c.evals = 3;
    c.progress_every_s = 0.5;
    return c;
}

void tb_train_config_seed_all(tb_train_config *c, uint64_t seed)
{
    for (int i = 0; c && i < TB_STREAM_COUNT; i++) c->seeds[i] = seed;
}

typedef struct run {
    const tb_train_config *cfg;
    tb_backend *be;
    tb_workload *wl;
    tb_tape *tape;
    tb_tape *eval_tape; /* graph mode: evaluations keep off the captured step's tape */
    tb_optimizer *opt;
    tb_pipeline *pipe;
    tb_step_runner *runner;
    tb_sharpness_probe *probe; /* sharpness_every > 0 */
    tb_rng fisher_rng;
} run;

static void run_free(run *r)
{
    tb_sharpness_probe_destroy(r->probe);
    tb_step_runner_destroy(r->runner);
    tb_pipeline_destroy(r->pipe);
    tb_optimizer_destroy(r->opt);
    tb_tape_destroy(r->tape);
    tb_tape_destroy(r->eval_tape);
    tb_workload_destroy(r->wl);
    tb_backend_destroy(r->be);
}

static tb_status setup(run *r, tb_train_result *res, tb_error *err)
{
    const tb_train_config *cfg = r->cfg;
    tb_status st = tb_backend_create(&cfg->backend, &r->be, err);
    if (st != TB_OK) return st;
    snprintf(res->backend, sizeof res->backend, "%s", tb_backend_describe(r->be));
    tb_workload_config wc = {.data_dir = cfg->data_dir,
                             .split_seed = cfg->seeds[TB_STREAM_SPLIT],
                             .split_kind = cfg->split_kind,
                             .cache_dir = cfg->cache_dir};
    st = tb_workload_create(cfg->workload, r->be, &wc, &r->wl, err);
    if (st != TB_OK) return st;
    res->parameters = tb_params_trainable(tb_workload_params(r->wl));
    tb_rng init = tb_rng_make(cfg->seeds[TB_STREAM_INIT], TB_STREAM_INIT);
    st = tb_workload_init(r->wl, &init, err);
    if (st == TB_OK) st = tb_tape_create(r->be, &r->tape, err);
    return st;
}

static tb_status evaluate(run *r, tb_split split, tb_eval_metrics *m, tb_error *err)
{
    return tb_workload_evaluate(r->wl, r->eval_tape ? r->eval_tape : r->tape, split,
                                r->cfg->eval_examples, m, err);
}

/* The step's model for the runner: the Fisher pass of curvature optimizers (when they ask for
 * one), then the workload's forward pass and loss. */
static tb_var *step_loss(void *user, tb_tape *tape, const tb_batch *b, tb_rng *dropout,
                         tb_error *err)
{
    run *r = user;
    tb_batch shard; /* the whole batch, or this rank's shard of it (data-parallel) */
    tb_status st = tb_train_dist_shard(r->cfg->dist, tape, b, &shard, err);
    if (st == TB_OK)
        st = tb_fisher_pass(r->opt, r->wl, tape, tb_workload_params(r->wl), shard.inputs,
                            &r->fisher_rng, dropout, err);
    if (st != TB_OK) return NULL;
    return tb_workload_loss_fn(r->wl, tape,
                               tb_workload_forward(r->wl, tape, shard.inputs, dropout),
                               shard.targets);
}

/* Data-parallel: the gradients and the loss averaged across ranks before the update. */
static tb_status step_reduce(void *user, float *loss, tb_error *err)
{
    run *r = user;
    return tb_train_dist_reduce(r->cfg->dist, tb_workload_params(r->wl), loss, err);
}

/* The divergence rule (see trainbench/train.h): a loss that is not finite, or, when the first
 * step's loss is positive, one above TB_TRAIN_DIVERGENCE_FACTOR times it. On divergence fails
 * with TB_ERR_NUMERIC naming what diverged (`what`, `when`), the loss and the rule broken. */
static tb_status check_divergence(const char *what, double loss, double first, bool after_last,
                                  int64_t step, tb_train_result *res, tb_error *err)
{
    if (isfinite(loss) && !(first > 0 && loss > TB_TRAIN_DIVERGENCE_FACTOR * first))
        return TB_OK;
    res->diverged = true;
    char when[64];
    snprintf(when, sizeof when, after_last ? "after the last step (%lld)" : "at step %lld",
             (long long)step);
    if (!isfinite(loss))
        return tb_fail(err, TB_ERR_NUMERIC, "the run diverged: %s is %g %s (not finite)", what,
                       loss, when);
    return tb_fail(err, TB_ERR_NUMERIC,
                   "the run diverged: %s is %g %s, more than %g times the first step's training "
                   "loss %g",
                   what, loss, when, TB_TRAIN_DIVERGENCE_FACTOR, first);
}

/* A step that failed with TB_ERR_NUMERIC: a NaN or an infinity in the step's own numbers (a
 * gradient, an optimizer's trust ratio or factor inverse, the Fisher pass's logits), found
 * before the update. That is the run diverging too (trainbench/train.h): marked so, with the
 * step in the message. */
static tb_status numeric_failure(int64_t step, tb_train_result *res, tb_error *err)
{
    res->diverged = true;
    return tb_error_prefix(err, "the run diverged at step %lld", (long long)step);
}

/* One sharpness measurement (untimed) after the step just taken at learning-rate factor
 * lr_scale: into the result, then to the caller's callback. */
static tb_status measure_sharpness(run *r, double lr_scale, tb_train_result *res, tb_error *err)
{
    double t0 = tb_monotonic_s();
    tb_sharpness s;
    tb_status st = tb_sharpness_probe_measure(r->probe, lr_scale, &s, err);
    if (st != TB_OK)
        return tb_error_prefix(err, "sharpness after step %lld",
                               (long long)tb_optimizer_steps(r->opt));
    res->sharpness_time_s += tb_monotonic_s() - t0;
    res->sharpness_measurements++;
    res->sharpness = s;
    if (r->cfg->on_sharpness) r->cfg->on_sharpness(r->cfg->sharpness_user, &s);
    return TB_OK;
}

/* The step after which the k-th of n evaluations during a run of `total` steps is made. */
static int64_t eval_step(int64_t k, int64_t n, int64_t total)
{
    return (int64_t)ceil((double)k * (double)total / (double)(n + 1));
}

static bool at_target(const tb_workload_info *info, double v)
{
    return info->lower_is_better ? v <= info->validation_target : v >= info->validation_target;
}

/* Records a validation evaluation made after `timed` seconds of training. The target is
 * calibrated on the whole validation split, so only the whole split can reach it: an
 * evaluation subset (eval_examples) at the target is confirmed by evaluating the whole split
 * (untimed, as every evaluation), and the target counts only if that one reaches it too. */
static tb_status note_validation(run *r, const tb_workload_info *info, const tb_eval_metrics *m,
                                 double timed, tb_train_result *res, tb_error *err)
{
    double v = m->metric;
    res->evaluations++;
    if (isnan(res->best_validation_metric) ||
        (info->lower_is_better ? v < res->best_validation_metric
                               : v > res->best_validation_metric))
        res->best_validation_metric = v;
    if (res->reached_target || !at_target(info, v)) return TB_OK;
    if (m->examples < tb_workload_size(r->wl, TB_SPLIT_VALIDATION)) {
        tb_eval_metrics whole;
        tb_status st = tb_workload_evaluate(r->wl, r->eval_tape ? r->eval_tape : r->tape,
                                            TB_SPLIT_VALIDATION, 0, &whole, err);
        if (st != TB_OK) return st;
        if (!at_target(info, whole.metric)) return TB_OK;
    }
    res->reached_target = true;
    res->time_to_target_s = timed;
    return TB_OK;
}

tb_status tb_train(const tb_train_config *cfg, tb_train_result *res, tb_error *err)
{
    if (!cfg || !res)
        return tb_fail(err, TB_ERR_INVALID, "train: %s is NULL", cfg ? "the result" : "config");
    memset(res, 0, sizeof *res);
    if (!cfg->workload || !cfg->algorithm)
        return tb_fail(err, TB_ERR_INVALID, "train: config->%s is NULL",
                       cfg->workload ? "algorithm" : "workload");
    res->validation.loss = res->test.loss = NAN;
    res->best_validation_metric = res->time_to_target_s = res->final_train_loss = NAN;
    if (cfg->batch_size < 0)
        return tb_fail(err, TB_ERR_INVALID, "batch size must be positive, got %d",
                       cfg->batch_size);
    if (!(cfg->epochs >= 0) || cfg->max_steps < 0 || cfg->eval_examples < 0)
        return tb_fail(err, TB_ERR_INVALID, "the run length must not be negative");
    if (cfg->evals < 0)
        return tb_fail(err, TB_ERR_INVALID, "evaluations during the run must not be negative, "
                       "got %d", cfg->evals);
    if (!(cfg->max_time_s >= 0 && cfg->max_time_s < INFINITY))
        return tb_fail(err, TB_ERR_INVALID, "the time limit must be positive seconds (0: none), "
                       "got %g", cfg->max_time_s);
    if (cfg->sharpness_every < 0 || cfg->sharpness_iters < 0 || cfg->sharpness_batch < 0 ||
        !(cfg->sharpness_fd_scale >= 0 && cfg->sharpness_fd_scale < INFINITY))
        return tb_fail(err, TB_ERR_INVALID, "sharpness settings must not be negative (every "
                       "%lld, iterations %d, batch %lld, relative step %g)",
                       (long long)cfg->sharpness_every, cfg->sharpness_iters,
                       (long long)cfg->sharpness_batch, cfg->sharpness_fd_scale);
    if (!(cfg->eval_period_s >= 0 && cfg->eval_period_s < INFINITY))
        return tb_fail(err, TB_ERR_INVALID, "the eval period must be positive seconds (0: off), "
                       "got %g", cfg->eval_period_s);
    /* the algorithm and its hyperparameters, checked before the data is loaded (a bad value
     * fails at once; tb_optimizer_create checks them again), and what the run will use, given
     * and defaults, in one pass (tb_hparams_resolve runs tb_optimizer_check_hparams' checks) */
    tb_status hst = tb_hparams_resolve(cfg->algorithm, &cfg->hparams, &res->hparams,
                                       &res->default_hparams, err);
    if (hst != TB_OK) return hst;
    hst = tb_train_dist_check(cfg, 0, NULL, err); /* e.g. a GPU, before creating its backend */
    if (hst != TB_OK) return hst;
    run r = {.cfg = cfg};
    tb_status st = setup(&r, res, err);
    const tb_workload_info *info = st == TB_OK ? tb_workload_get_info(r.wl) : NULL;
    int64_t n_train = st == TB_OK ? tb_workload_size(r.wl, TB_SPLIT_TRAIN) : 0;
    int64_t batch = cfg->batch_size > 0 ? cfg->batch_size : (info ? info->default_batch_size : 0);
    if (st == TB_OK && batch > n_train)
        st = tb_fail(err, TB_ERR_INVALID, "batch size %lld exceeds the %lld training examples",
                     (long long)batch, (long long)n_train);
    int64_t per_epoch = batch > 0 ? n_train / batch : 0;
    /* neither steps nor epochs, but a time limit: the time (or the target) ends the run */
    bool until_time = cfg->max_steps == 0 && cfg->epochs == 0 && cfg->max_time_s > 0;
    /* epochs in steps, checked in floating point: a huge count does not fit an int64_t */
    double epoch_steps = ceil(cfg->epochs * (double)per_epoch);
    if (st == TB_OK && cfg->max_steps == 0 && !until_time && epoch_steps > TB_TRAIN_MAX_STEPS)
        st = tb_fail(err, TB_ERR_INVALID,
                     "%g epochs are %.4g steps (%lld per epoch), more than the %lld steps a run "
                     "can take: give fewer epochs",
                     cfg->epochs, epoch_steps, (long long)per_epoch,
                     (long long)TB_TRAIN_MAX_STEPS);
    int64_t total = cfg->max_steps > 0 ? cfg->max_steps
                    : until_time       ? INT64_MAX
                    : st == TB_OK      ? (int64_t)epoch_steps
                                       : 0;
    if (st == TB_OK && total < 1)
        st = tb_fail(err, TB_ERR_INVALID,
                     "the run has no steps (epochs %g, max steps %lld, no time limit)",
                     cfg->epochs, (long long)cfg->max_steps);
    if (st == TB_OK) st = tb_optimizer_create(cfg->algorithm, tb_workload_params(r.wl),
                                              &cfg->hparams, &r.opt, err);
    if (st == TB_OK) st = tb_fisher_attach(r.opt, r.wl, err);
    if (st == TB_OK) st = tb_train_dist_check(cfg, batch, r.opt, err);
    bool dist = tb_dist_size(cfg->dist) > 1, root = tb_dist_rank(cfg->dist) == 0;
    tb_pipeline_config pc = cfg->pipeline;
    pc.batch_size = batch;
    pc.data_order_seed = cfg->seeds[TB_STREAM_DATA_ORDER];
    pc.augment_seed = cfg->seeds[TB_STREAM_AUGMENT];
    if (st == TB_OK) st = tb_pipeline_create(r.wl, &pc, &r.pipe, err);
    tb_step_config sc = {.loss = step_loss, .user = &r, .cuda_graph = cfg->cuda_graph,
                         .reduce = dist ? step_reduce : NULL};
    if (st == TB_OK) st = tb_step_runner_create(r.tape, tb_workload_params(r.wl), r.opt, &sc,
                                                &r.runner, err);
    if (st == TB_OK && tb_step_runner_graphed(r.runner))
        st = tb_tape_create(r.be, &r.eval_tape, err);
    if (st == TB_OK && cfg->profile) tb_tape_set_profiling(r.tape, true);
    if (st == TB_OK && cfg->sharpness_every > 0)
        st = tb_sharpness_probe_create(
            r.wl, r.opt, cfg->sharpness_batch > 0 ? cfg->sharpness_batch : batch,
            cfg->sharpness_iters > 0 ? cfg->sharpness_iters : TB_SHARPNESS_DEFAULT_ITERS,
            cfg->sharpness_fd_scale, cfg->seeds[TB_STREAM_DROPOUT], &r.probe, err);
    if (st == TB_OK && cfg->cuda_graph) {
        snprintf(res->graph_note, sizeof res->graph_note, "%s", tb_step_runner_note(r.runner));
        if (res->graph_note[0]) tb_log(cfg->logger, TB_LOG_INFO, "%s", res->graph_note);
    }
    /* data-parallel: every rank learns whether every rank could set up */
    st = tb_train_dist_agree(cfg->dist, st, NULL, err);
    if (st != TB_OK) {
        run_free(&r);
        return st;
    }
    /* The schedule spans the run's steps, or for a run ended by time the workload's step hint
     * (as the built-in submissions' schedules do); past its end it holds its last factor. */
    int64_t horizon = !until_time ? total
                      : info->step_hint > 0 ? info->step_hint
                                            : 1000; /* no hint: as the benchmark's trials */
    tb_schedule sched = {.kind = cfg->schedule,
                         .warmup_steps = cfg->schedule == TB_SCHEDULE_CONSTANT
                                             ? 0 /* constant has no warmup */
                                             : (int64_t)(cfg->warmup_fraction * (double)horizon),
                         .total_steps = horizon};
    res->schedule = sched;
    st = tb_schedule_validate(&sched, err);
    if (st != TB_OK) {
        run_free(&r);
        return st;
    }
    tb_rng dropout_rng = tb_rng_make(cfg->seeds[TB_STREAM_DROPOUT], TB_STREAM_DROPOUT);
    tb_train_dist_dropout(cfg->dist, &dropout_rng);
    /* targets sampled for Fisher statistics: model-side randomness, keyed by the dropout seed */
    r.fisher_rng = tb_rng_make(cfg->seeds[TB_STREAM_DROPOUT], TB_STREAM_COUNT + 1);
    /* evaluations by count need a known length; a run ended by time has its eval period. The
     * k-th of the `evals` during the run follows step ceil(k * total / (evals + 1)): evenly
     * spaced, at most one per step, none at the last step (the final evaluation follows it). */
    int64_t evals = cfg->evals > 0 && !until_time ? cfg->evals : 0, next_eval = 1;
    double timed = 0, last_report = -1e9;
    double next_eval_time = cfg->eval_period_s > 0 ? cfg->eval_period_s : INFINITY;
    float loss_value = NAN;
    double first_loss = NAN; /* the untrained model's training loss: divergence's yardstick */
    for (int64_t step = 1; step <= total; step++) {
        double t0 = tb_monotonic_s();
        /* batch, forward, backward and update; eager, or replayed from a CUDA graph */
        st = tb_step_runner_step(r.runner, r.pipe, tb_schedule_factor(&sched, step),
                                 &dropout_rng, &loss_value, NULL, err);
        res->graph_replays = tb_step_runner_replays(r.runner);
        if (st == TB_ERR_NUMERIC) st = numeric_failure(step, res, err);
        if (st != TB_OK) break;
        if (step == 1) first_loss = loss_value;
        st = check_divergence("the training loss", loss_value, first_loss, false, step, res, err);
        if (st != TB_OK) break;
        timed += tb_monotonic_s() - t0;
        res->steps = step;
        res->examples += batch;
        res->final_train_loss = loss_value;
        bool out_of_time = cfg->max_time_s > 0 && timed >= cfg->max_time_s;
        bool last = step == total || out_of_time;
        bool by_count = false;
        while (next_eval <= evals && eval_step(next_eval, evals, total) <= step) {
            by_count = true;
            next_eval++;
        }
        /* data-parallel: rank 0 alone evaluates; its verdict (stop, or failed) reaches every
         * rank after this block, whose breaks leave the block only */
        bool eval_now = root && (by_count || timed >= next_eval_time) && !last;
        bool stop = false;
        tb_eval_metrics val;
        do {
            if (eval_now && (st = evaluate(&r, TB_SPLIT_VALIDATION, &val, err)) != TB_OK) break;
            if (eval_now) {
                if ((st = note_validation(&r, info, &val, timed, res, err)) != TB_OK) break;
                while (next_eval_time <= timed) next_eval_time += cfg->eval_period_s;
            }
            if (r.probe && step % cfg->sharpness_every == 0 &&
                (st = measure_sharpness(&r, tb_schedule_factor(&sched, step), res, err)) != TB_OK)
                break;
            if (cfg->progress && (eval_now || timed - last_report >= cfg->progress_every_s ||
                                  step == total)) {
                double eta = until_time ? fmax(cfg->max_time_s - timed, 0.0)
                                        : timed / (double)step * (double)(total - step);
                tb_train_progress p = {step, until_time ? 0 : total, tb_pipeline_epoch(r.pipe),
                                       loss_value, timed > 0 ? (double)res->examples / timed : 0,
                                       timed, eta, eval_now ? &val : NULL};
                cfg->progress(cfg->progress_user, &p);
                last_report = timed;
            }
            stop = out_of_time || (cfg->stop_at_target && res->reached_target);
        } while (0);
        st = tb_train_dist_agree(cfg->dist, st, &stop, err);
        if (st != TB_OK || stop) break;
    }
    res->fresh_examples = r.pipe ? tb_pipeline_fresh_examples(r.pipe) : 0;
    if (cfg->profile) {
        int n = tb_tape_profile(r.tape, res->profile, TB_TRAIN_PROFILE_MAX);
        res->profile_ops = n < TB_TRAIN_PROFILE_MAX ? n : TB_TRAIN_PROFILE_MAX;
    }
    res->train_time_s = timed;
    res->examples_per_s = timed > 0 ? (double)res->examples / timed : 0;
    /* data-parallel: every rank took the same steps, so holds the same weights (checked) */
    tb_params *params = tb_workload_params(r.wl);
    if (st == TB_OK && dist)
        st = tb_dist_check_identical(cfg->dist, tb_params_values(params),
                                     tb_params_numel(params), "the weights after training", err);
    if (st == TB_OK && root) st = evaluate(&r, TB_SPLIT_VALIDATION, &res->validation, err);
    /* the last step's update is checked by no later training loss: the final evaluation's */
    if (st == TB_OK && root)
        st = check_divergence("the validation loss", res->validation.loss, first_loss, true,
                              res->steps, res, err);
    if (st == TB_OK && root) st = note_validation(&r, info, &res->validation, timed, res, err);
    if (st == TB_OK && root) st = evaluate(&r, TB_SPLIT_TEST, &res->test, err);
    if (dist) st = tb_train_dist_agree(cfg->dist, st, NULL, err);
    res->diverged |= st == TB_ERR_NUMERIC; /* the status and the result always agree */
    run_free(&r);
    return st;
}

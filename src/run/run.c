/* run.c: a run's set-up and teardown (see trainbench/run.h): the config's checks, then the
 * backend, workload, weights, tape, optimizer, pipeline and step runner, in that order. */
#include "run/run_impl.h"

#include "run/fisher.h"
#include "run/run_dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tb_run_config tb_run_config_default(void)
{
    return (tb_run_config){
        .model = {.workload = "fmnist_mlp", .algorithm = "adamw",
                  .backend = {.device = TB_DEVICE_CPU}},
        .length = {.epochs = 5.0, .schedule = TB_SCHEDULE_WARMUP_COSINE,
                   .warmup_fraction = 0.05},
        .eval = {.during = 3},
    };
}

void tb_run_config_seed_all(tb_run_config *c, uint64_t seed)
{
    for (int i = 0; c && i < TB_STREAM_COUNT; i++) c->seeds[i] = seed;
}

static bool finite_nonneg(double v) { return v >= 0 && v < INFINITY; }

/* Full-batch training's refusals: what would change the examples of a step. */
static tb_status check_full_batch(const tb_run_config *c, tb_error *err)
{
    const tb_run_data *d = &c->data;
    if (d->full_batch < 0)
        return tb_fail(err, TB_ERR_INVALID, "full batch: %lld examples is negative",
                       (long long)d->full_batch);
    if (d->full_batch == 0) return TB_OK;
    const char *why = d->batch_size > 0 && d->batch_size != d->full_batch ? "another batch size"
                      : d->pipeline.echo != TB_ECHO_NONE || d->pipeline.echo_factor > 1
                          ? "data echoing"
                      : d->pipeline.augment        ? "augmentation"
                      : d->pipeline.shuffle_buffer ? "a shuffle buffer"
                      : c->update.update           ? "a submission's own update"
                      : tb_dist_size(c->dist) > 1  ? "several ranks"
                                                   : NULL;
    if (why)
        return tb_fail(err, TB_ERR_INVALID, "full batch (%lld examples, every step all of them) "
                       "cannot be combined with %s", (long long)d->full_batch, why);
    return TB_OK;
}

tb_status tb_run_config_check(const tb_run_config *c, tb_error *err)
{
    tb_status st_full;
    if (!c) return tb_fail(err, TB_ERR_INVALID, "run: config is NULL");
    const bool hook = c->update.update != NULL;
    if (!c->model.workload || (!c->model.algorithm && !hook))
        return tb_fail(err, TB_ERR_INVALID, "run: config->model.%s is NULL",
                       c->model.workload ? "algorithm" : "workload");
    if (c->data.batch_size < 0)
        return tb_fail(err, TB_ERR_INVALID, "batch size must be positive, got %d",
                       c->data.batch_size);
    const tb_run_length *l = &c->length;
    if (!(l->epochs >= 0) || l->max_steps < 0 || c->eval.examples < 0)
        return tb_fail(err, TB_ERR_INVALID, "the run length must not be negative");
    if (c->eval.during < 0)
        return tb_fail(err, TB_ERR_INVALID, "evaluations during the run must not be negative, "
                       "got %d", c->eval.during);
    if (!finite_nonneg(l->max_time_s))
        return tb_fail(err, TB_ERR_INVALID, "the time limit must be positive seconds (0: none), "
                       "got %g", l->max_time_s);
    const tb_run_diag *d = &c->diag;
    if (d->sharpness_every < 0 || d->sharpness_iters < 0 || d->sharpness_batch < 0 ||
        !finite_nonneg(d->sharpness_fd_scale))
        return tb_fail(err, TB_ERR_INVALID, "sharpness settings must not be negative (every "
                       "%lld, iterations %d, batch %lld, relative step %g)",
                       (long long)d->sharpness_every, d->sharpness_iters,
                       (long long)d->sharpness_batch, d->sharpness_fd_scale);
    if (!finite_nonneg(c->eval.period_s))
        return tb_fail(err, TB_ERR_INVALID, "the eval period must be positive seconds (0: off), "
                       "got %g", c->eval.period_s);
    if (!finite_nonneg(c->eval.target))
        return tb_fail(err, TB_ERR_INVALID, "the validation target must be a positive number "
                       "(0: the workload's), got %g", c->eval.target);
    if (hook && (c->model.cuda_graph || d->sharpness_every > 0))
        return tb_fail(err, TB_ERR_UNSUPPORTED, "a run with its own update (a submission) "
                       "cannot use %s", c->model.cuda_graph ? "CUDA graphs" : "sharpness");
    /* the algorithm and its hyperparameters, before any data is loaded */
    if (!hook) {
        tb_status st = tb_optimizer_check_hparams(c->model.algorithm, &c->model.hparams, err);
        if (st != TB_OK) return st;
    }
    st_full = check_full_batch(c, err);
    if (st_full != TB_OK) return st_full;
    return tb_run_dist_refusals(c, 0, NULL, err); /* e.g. a GPU, before creating its backend */
}

/* The run's steps from its length (epochs in steps checked in floating point: a huge count
 * does not fit an int64_t), and its schedule. */
static tb_status plan_length(tb_run *r, tb_error *err)
{
    const tb_run_length *l = &r->cfg.length;
    int64_t n_train = tb_workload_size(r->wl, TB_SPLIT_TRAIN);
    if (r->batch > n_train)
        return tb_fail(err, TB_ERR_INVALID, "batch size %lld exceeds the %lld training examples",
                       (long long)r->batch, (long long)n_train);
    int64_t per_epoch = r->cfg.data.full_batch > 0 ? 1 : n_train / r->batch; /* full: 1 step */
    r->open_ended = l->max_steps == 0 && l->epochs == 0;
    double epoch_steps = ceil(l->epochs * (double)per_epoch);
    if (l->max_steps == 0 && !r->open_ended && epoch_steps > TB_RUN_MAX_STEPS)
        return tb_fail(err, TB_ERR_INVALID,
                       "%g epochs are %.4g steps (%lld per epoch), more than the %lld steps a run "
                       "can take: give fewer epochs",
                       l->epochs, epoch_steps, (long long)per_epoch, (long long)TB_RUN_MAX_STEPS);
    r->total = l->max_steps > 0 ? l->max_steps
               : r->open_ended  ? INT64_MAX
                                : (int64_t)epoch_steps;
    if (r->total < 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "the run has no steps (epochs %g, max steps %lld, no time limit)",
                       l->epochs, (long long)l->max_steps);
    int64_t hint = tb_workload_get_info(r->wl)->step_hint;
    int64_t horizon = !r->open_ended ? r->total : hint > 0 ? hint : 1000;
    r->schedule = (tb_schedule){
        .kind = l->schedule,
        .warmup_steps = l->schedule == TB_SCHEDULE_CONSTANT
                            ? 0 /* constant has no warmup */
                            : (int64_t)(l->warmup_fraction * (double)horizon),
        .total_steps = horizon};
    return tb_schedule_validate(&r->schedule, err);
}

/* The batch size: the hook's, the config's, or the workload's default. */
static tb_status choose_batch(tb_run *r, tb_error *err)
{
    const tb_run_config *c = &r->cfg;
    if (c->update.update && c->update.batch_size) {
        int b = c->update.batch_size(c->update.user, r);
        if (b < 1) return tb_fail(err, TB_ERR_INVALID, "the batch size chosen is %d", b);
        r->batch = b;
    } else if (c->data.full_batch > 0) {
        r->batch = c->data.full_batch;
    } else {
        r->batch = c->data.batch_size > 0 ? c->data.batch_size
                                          : tb_workload_get_info(r->wl)->default_batch_size;
    }
    return TB_OK;
}

/* Full batch: the fixed subset, drawn without replacement by the data-order seed (a partial
 * Fisher-Yates shuffle of the training rows). */
static tb_status draw_full_rows(tb_run *r, tb_error *err)
{
    const int64_t n_train = tb_workload_size(r->wl, TB_SPLIT_TRAIN), n = r->cfg.data.full_batch;
    int64_t *all = malloc((size_t)n_train * sizeof *all);
    r->full_rows = malloc((size_t)n * sizeof *r->full_rows);
    if (!all || !r->full_rows) {
        free(all);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a full batch's rows");
    }
    for (int64_t i = 0; i < n_train; i++) all[i] = i;
    tb_rng rng = tb_rng_make(r->cfg.seeds[TB_STREAM_DATA_ORDER], TB_STREAM_COUNT + 2);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i + (int64_t)tb_rng_below(&rng, (uint64_t)(n_train - i));
        int64_t t = all[i];
        all[i] = all[j];
        all[j] = t;
        r->full_rows[i] = all[i];
    }
    free(all);
    return TB_OK;
}

/* The optimizer, the pipeline and the step runner, once the workload exists. */
static tb_status setup_training(tb_run *r, tb_error *err)
{
    const tb_run_config *c = &r->cfg;
    tb_status st = TB_OK;
    if (!c->update.update) {
        st = tb_optimizer_create(c->model.algorithm, tb_workload_params(r->wl), &c->model.hparams,
                                 &r->opt, err);
        if (st == TB_OK) st = tb_fisher_attach(r->opt, r->wl, err);
    }
    if (st == TB_OK) st = tb_run_dist_refusals(c, r->batch, r->opt, err);
    tb_pipeline_config pc = c->data.pipeline;
    pc.batch_size = r->batch;
    pc.data_order_seed = c->seeds[TB_STREAM_DATA_ORDER];
    pc.augment_seed = c->seeds[TB_STREAM_AUGMENT];
    if (c->data.full_batch > 0) pc.prefetch = -1; /* no thread: the steps read full_rows */
    pc.dropout_seed = c->seeds[TB_STREAM_DROPOUT]; /* the projection stage's masks */
    if (st == TB_OK) st = tb_pipeline_create(r->wl, &pc, &r->pipe, err);
    if (st == TB_OK && r->opt) st = tb_run_runner_create(r, r->opt, c->model.cuda_graph,
                                                         &r->own, err);
    if (st == TB_OK && tb_step_runner_graphed(r->own.runner))
        st = tb_tape_create(r->be, &r->eval_tape, err);
    if (st == TB_OK && c->diag.profile) tb_tape_set_profiling(r->tape, true);
    return st;
}

static tb_status setup(tb_run *r, tb_error *err)
{
    const tb_run_config *c = &r->cfg;
    tb_status st = tb_backend_create(&c->model.backend, &r->be, err);
    if (st != TB_OK) return st;
    tb_workload_config wc = c->data.source;
    wc.split_seed = c->seeds[TB_STREAM_SPLIT];
    st = tb_workload_create(c->model.workload, r->be, &wc, &r->wl, err);
    if (st != TB_OK) return st;
    tb_rng init = tb_rng_make(c->seeds[TB_STREAM_INIT], TB_STREAM_INIT);
    st = tb_workload_init(r->wl, &init, err);
    if (st == TB_OK) st = tb_tape_create(r->be, &r->tape, err);
    if (st == TB_OK) st = choose_batch(r, err);
    if (st == TB_OK) st = plan_length(r, err);
    if (st == TB_OK && c->data.full_batch > 0) st = draw_full_rows(r, err);
    if (st == TB_OK) st = setup_training(r, err);
    return st;
}

tb_status tb_run_create(const tb_run_config *config, tb_run **out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "run_create: out is NULL");
    *out = NULL;
    tb_status st = tb_run_config_check(config, err);
    if (st != TB_OK) return st;
    tb_run *r = calloc(1, sizeof *r);
    if (!r) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate a run");
    r->cfg = *config;
    r->first_loss = NAN;
    r->dropout = tb_rng_make(config->seeds[TB_STREAM_DROPOUT], TB_STREAM_DROPOUT);
    tb_run_dist_dropout(config->dist, &r->dropout);
    /* targets sampled for Fisher statistics: model-side randomness, keyed by the dropout seed */
    r->fisher = tb_rng_make(config->seeds[TB_STREAM_DROPOUT], TB_STREAM_COUNT + 1);
    st = setup(r, err);
    /* data-parallel: every rank learns whether every rank could set up */
    st = tb_dist_agree(config->dist, st, NULL, err);
    if (st != TB_OK) {
        tb_run_destroy(r);
        return st;
    }
    *out = r;
    return TB_OK;
}

void tb_run_destroy(tb_run *r)
{
    if (!r) return;
    tb_step_runner_destroy(r->own.runner);
    tb_step_runner_destroy(r->theirs.runner);
    tb_pipeline_destroy(r->pipe);
    tb_optimizer_destroy(r->opt);
    tb_tape_destroy(r->tape);
    tb_tape_destroy(r->eval_tape);
    tb_workload_destroy(r->wl);
    tb_backend_destroy(r->be);
    free(r->full_rows);
    free(r);
}

const tb_run_config *tb_run_get_config(const tb_run *r) { return &r->cfg; }
tb_backend *tb_run_backend(tb_run *r) { return r->be; }
tb_workload *tb_run_workload(tb_run *r) { return r->wl; }
tb_tape *tb_run_tape(tb_run *r) { return r->tape; }
tb_optimizer *tb_run_optimizer(tb_run *r) { return r->opt; }
tb_pipeline *tb_run_pipeline(tb_run *r) { return r->pipe; }
tb_step_runner *tb_run_step_runner(tb_run *r) { return r->own.runner; }
tb_rng *tb_run_dropout(tb_run *r) { return &r->dropout; }
int64_t tb_run_batch_size(const tb_run *r) { return r->batch; }
const int64_t *tb_run_full_rows(const tb_run *r) { return r->full_rows; }
int64_t tb_run_total_steps(const tb_run *r) { return r->total; }
bool tb_run_open_ended(const tb_run *r) { return r->open_ended; }
const tb_schedule *tb_run_schedule(const tb_run *r) { return &r->schedule; }
int64_t tb_run_steps(const tb_run *r) { return r->steps; }
double tb_run_timed_s(const tb_run *r) { return r->timed_s; }
double tb_run_first_loss(const tb_run *r) { return r->first_loss; }

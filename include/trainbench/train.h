/* train.h: one training run of a workload with an algorithm, timed, with evaluations.
 *
 * Timing follows AlgoPerf's rules: the training steps (batch assembly, forward, backward,
 * update) are timed; evaluations are not. Every source of variation has its own seed.
 *
 * Divergence: a run diverges when a step's training loss is NaN or infinite, or, when the first
 * step's training loss (the untrained model's) is positive, more than
 * TB_TRAIN_DIVERGENCE_FACTOR times that loss; the final validation loss is checked the same
 * way, so an update that blows up on the last step is caught too. A step that fails on a NaN
 * or an infinity in its own numbers (TB_ERR_NUMERIC: a gradient, the Fisher pass's logits, an
 * optimizer's trust ratio or factor inverse; the update is then not applied) diverges too.
 * Such a run stops with TB_ERR_NUMERIC and is reported as diverged. */
#ifndef TRAINBENCH_TRAIN_H
#define TRAINBENCH_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/dist.h"
#include "trainbench/optim.h"
#include "trainbench/pipeline.h"
#include "trainbench/rng.h"
#include "trainbench/sharpness.h"
#include "trainbench/step.h"
#include "trainbench/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_train_progress {
    int64_t step, total_steps; /* total_steps 0: the run ends by time (max_time_s) */
    int64_t epoch;
    double loss;            /* training loss of the last step */
    double examples_per_s;  /* training throughput so far (timed steps only) */
    double elapsed_s;       /* timed training seconds so far */
    double eta_s;           /* estimated seconds of training left (at most, when by time) */
    const tb_eval_metrics *validation; /* non-NULL right after an evaluation */
} tb_train_progress;

typedef void (*tb_train_progress_fn)(void *user, const tb_train_progress *progress);
/* Called after each sharpness measurement (see tb_train_config.sharpness_every). */
typedef void (*tb_train_sharpness_fn)(void *user, const tb_sharpness *measurement);

typedef struct tb_train_config {
    const char *workload;
    const char *algorithm;
    tb_hparams hparams;
    tb_backend_config backend;
    uint64_t seeds[TB_STREAM_COUNT]; /* one per source of variation (see tb_stream) */
    int batch_size;                  /* 0: the workload's default */
    /* Length of the run: max_steps when > 0, else epochs. With both 0 and max_time_s > 0 the
     * run ends by time (or at the target with stop_at_target), and its schedule spans the
     * workload's step_hint instead of the run's steps (as the built-in submissions' do). */
    double epochs;
    int64_t max_steps;
    /* The schedule spans the run's steps (or the step hint, above); past its end it holds its
     * last factor (0 for warmup_cosine, linear_decay and polynomial). */
    tb_schedule_kind schedule;
    double warmup_fraction;          /* of the schedule's steps, for warmup schedules */
    int evals;                       /* evaluations on the validation set during the run,
                                        evenly spaced: the k-th after step
                                        ceil(k * steps / (evals + 1)), at most one per step;
                                        the final evaluation comes after them, always (none
                                        when the run ends by time: use eval_period_s) */
    int64_t eval_examples;           /* evaluate N examples spread evenly over each split
                                        (tb_workload_evaluate's limit); 0 = all */
    const char *data_dir;            /* NULL: the Debian package's directory */
    tb_train_progress_fn progress;   /* optional; called about every progress_every_s */
    void *progress_user;
    double progress_every_s;
    const tb_logger *logger;         /* optional */
    /* ---- added with the workload suite (zero = default) ---- */
    const char *cache_dir;           /* prepared-data cache (NULL: data prepared in memory) */
    tb_split_kind split_kind;        /* official (default) or bootstrap */
    /* prefetch, augmentation, echoing; batch_size and seeds come from the fields above */
    tb_pipeline_config pipeline;
    double max_time_s;               /* stop after this many timed seconds (0: no limit) */
    double eval_period_s;            /* also evaluate every this many timed seconds (0: off) */
    bool stop_at_target;             /* stop once validation reaches the workload's target (on
                                        the whole validation split: a subset at the target,
                                        eval_examples, is confirmed on the whole split) */
    /* ---- added with CUDA graphs ---- */
    /* Capture one whole step as a CUDA graph after two eager warm-up steps and replay it (see
     * trainbench/step.h). Needs the cuda backend: on cpu tb_train fails with
     * TB_ERR_UNSUPPORTED. Optimizers with host-side per-step work run eagerly and say so in
     * result->graph_note. Evaluations then use a tape of their own. */
    bool cuda_graph;
    /* ---- added with the op profiler ---- */
    /* Time every op's forward and backward (tb_tape_set_profiling) into result->profile. The
     * backend is synchronised around each op, which slows the run: profile, then measure. */
    bool profile;
    /* ---- added with sharpness diagnostics (trainbench/sharpness.h) ---- */
    /* After every sharpness_every-th step (0: never), untimed: the sharpness lambda_1(H) and
     * the preconditioned sharpness lambda_1(P^-1 H) of the training loss on a fixed batch
     * (sharpness_batch examples of the training split spread evenly over it, 0: the run's
     * batch size; taken once), by sharpness_iters Lanczos steps each (0: 20), with the
     * optimizer's stability threshold at the step's learning rate. 4 x sharpness_iters
     * gradient evaluations of that batch per measurement (2 x when P = 1: sgd, momentum,
     * nesterov). Batch norm normalises with the batch's statistics and updates no running
     * average; the parameters and gradients are restored bit for bit, so the run is the same
     * as without (the results are those of an unmeasured run). The optimizer needs a diagonal
     * preconditioner (not lars, lamb, kfac, ekfac, shampoo: TB_ERR_INVALID). */
    int64_t sharpness_every;
    int sharpness_iters;
    int64_t sharpness_batch;
    double sharpness_fd_scale; /* the central differences' relative step (0: 1e-3; see
                                  tb_hvp_begin) */
    tb_train_sharpness_fn on_sharpness; /* optional; called after each measurement */
    void *sharpness_user;
    /* ---- added with data-parallel training (trainbench/dist.h, docs/DISTRIBUTED.md) ---- */
    /* NULL or a world of 1: one process. Otherwise every rank calls tb_train with the same
     * config (seeds, batch size: the global batch, which must divide by the ranks); each rank
     * runs the forward and backward passes of its equal shard of the batch, the gradients and
     * the loss are averaged across ranks before every update, so every rank takes the same
     * step. Rank 0 alone evaluates and decides when to stop (target, time, evaluation
     * failure), and every rank stops with it; the others' result has no evaluations. The
     * weights are checked to be bit-identical on every rank at the end (TB_ERR_INTERNAL if
     * not). Each rank draws its own dropout masks; batch norm uses its shard's statistics
     * (running averages: rank 0's). Refused (TB_ERR_UNSUPPORTED): a device other than cpu,
     * cuda_graph, sharpness_every, curvature optimizers (kfac, ekfac). */
    tb_dist *dist;
} tb_train_config;

/* Defaults: 5 epochs, the workload's batch size, linear warmup (5%) then cosine decay,
 * 3 evaluations during the run (then the final one), all seeds 0. */
tb_train_config tb_train_config_default(void);
/* Sets the seed of every source of variation. */
void tb_train_config_seed_all(tb_train_config *config, uint64_t seed);

/* The most steps a run's epochs may come to (tb_train refuses more, naming the epochs); also
 * the command's limit on --steps. */
#define TB_TRAIN_MAX_STEPS 1000000000LL

/* A loss above this many times the first step's training loss is a divergence (a finite but
 * exploded loss; normal training stays near or below the untrained loss). */
#define TB_TRAIN_DIVERGENCE_FACTOR 1e4

/* Ops a training result's profile keeps (the largest; a model has rarely more kinds). */
#define TB_TRAIN_PROFILE_MAX 24

typedef struct tb_train_result {
    int64_t steps;
    int64_t examples;
    double train_time_s;     /* timed training seconds */
    double examples_per_s;
    double final_train_loss; /* of the last step counted in steps; NaN if none */
    bool diverged;
    tb_eval_metrics validation;
    tb_eval_metrics test;
    char backend[256];       /* tb_backend_describe */
    int64_t parameters;
    /* ---- added with the workload suite ---- */
    int64_t fresh_examples;        /* examples read fresh and delivered in the run's batches
                                      (tb_pipeline_fresh_examples: echo copies and reads
                                      still in the shuffle buffer are not counted) */
    int64_t evaluations;           /* validation evaluations, the final one included */
    double best_validation_metric; /* best info->metric over the evaluations */
    double time_to_target_s;       /* timed seconds at the first evaluation at or past the
                                      validation target, on the whole validation split (a
                                      subset at it is confirmed on the whole split); NaN if
                                      never reached */
    bool reached_target;
    /* ---- added with CUDA graphs ---- */
    int64_t graph_replays;         /* steps replayed from the captured graph */
    char graph_note[320];          /* why graph mode was off (tb_step_runner_note), or "" */
    /* ---- added with the op profiler (config->profile) ---- */
    tb_op_profile profile[TB_TRAIN_PROFILE_MAX]; /* largest total time first */
    int profile_ops;               /* entries in profile */
    /* ---- added with budgeted runs' schedules ---- */
    tb_schedule schedule;          /* the learning-rate schedule the run used (its horizon) */
    /* ---- added with resolved hyperparameters ---- */
    tb_hparams hparams;            /* every hyperparameter of the algorithm as the run used
                                      it (tb_hparams_resolve): the values of config->hparams
                                      and the defaults of the others; empty when the
                                      algorithm or a value given is invalid */
    tb_hparams default_hparams;    /* those of hparams that took their defaults */
    /* ---- added with sharpness diagnostics (config->sharpness_every) ---- */
    int64_t sharpness_measurements;
    double sharpness_time_s;       /* untimed seconds they took */
    tb_sharpness sharpness;        /* the latest (when sharpness_measurements > 0) */
} tb_train_result;

/* Runs the training. Negative or non-finite run settings and the algorithm's hyperparameters
 * (tb_optimizer_check_hparams) are checked before any data is loaded: TB_ERR_INVALID naming
 * them. On divergence returns TB_ERR_NUMERIC with result->diverged set and the
 * step and what diverged (the loss and the rule broken, or the number that was not finite) in
 * the message; result->diverged is set exactly when it returns TB_ERR_NUMERIC. result holds
 * what was measured until then (the diverging step is not counted in steps or
 * final_train_loss). */
tb_status tb_train(const tb_train_config *config, tb_train_result *result, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

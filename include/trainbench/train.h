/* train.h: `trainbench train`'s driver of the run core: one training run of a workload with an
 * algorithm (a tb_run_config, trainbench/run.h), timed, with evaluations, observed by progress
 * and sharpness callbacks.
 *
 * Timing follows AlgoPerf's rules: the training steps (batch assembly, forward, backward,
 * update) are timed; evaluations are not. Every source of variation has its own seed.
 *
 * Divergence is the run core's rule (tb_run_check_loss) on every step's training loss, and on
 * the final validation loss, so an update that blows up on the last step is caught too. Such a
 * run stops with TB_ERR_NUMERIC and is reported as diverged. */
#ifndef TRAINBENCH_TRAIN_H
#define TRAINBENCH_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/run.h"
#include "trainbench/sharpness.h"

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
/* Called after each sharpness measurement (see tb_run_diag.sharpness_every). */
typedef void (*tb_train_sharpness_fn)(void *user, const tb_sharpness *measurement);

/* Who watches a training run (every field optional). */
typedef struct tb_train_observers {
    tb_train_progress_fn progress;   /* called about every progress_every_s (0: every step),
                                        after each evaluation and at the last step */
    void *progress_user;
    double progress_every_s;
    tb_train_sharpness_fn on_sharpness; /* after each sharpness measurement */
    void *sharpness_user;
    const tb_logger *logger;
} tb_train_observers;

/* Ops a training result's profile keeps (the largest; a model has rarely more kinds). */
#define TB_TRAIN_PROFILE_MAX 24

typedef struct tb_train_result {
    /* the run */
    int64_t steps;
    int64_t examples;
    int64_t fresh_examples;        /* examples read fresh and delivered in the run's batches
                                      (tb_pipeline_fresh_examples: echo copies and reads
                                      still in the shuffle buffer are not counted) */
    tb_projection_stats projection; /* projected variants: the pipeline's projection stage
                                       (docs/DROPOUT.md); all zero for other workloads */
    double train_time_s;           /* timed training seconds */
    double examples_per_s;
    double final_train_loss;       /* of the last step counted in steps; NaN if none */
    bool diverged;                 /* exactly when tb_train returns TB_ERR_NUMERIC */
    char backend[256];             /* tb_backend_describe */
    int64_t parameters;
    tb_schedule schedule;          /* the learning-rate schedule the run used (its horizon) */
    tb_hparams hparams;            /* every hyperparameter of the algorithm as the run used
                                      it (tb_hparams_resolve): the values given and the
                                      defaults of the others; empty when the algorithm or a
                                      value given is invalid */
    tb_hparams default_hparams;    /* those of hparams that took their defaults */
    /* the evaluations */
    tb_eval_metrics validation;    /* the final one */
    tb_eval_metrics test;
    int64_t evaluations;           /* validation evaluations, the final one included */
    double best_validation_metric; /* best info->metric over the evaluations */
    double time_to_target_s;       /* timed seconds at the first evaluation at or past the
                                      validation target, on the whole validation split (a
                                      subset at it is confirmed on the whole split); NaN if
                                      never reached */
    bool reached_target;
    int64_t steps_to_target;       /* steps and fresh examples (as fresh_examples) delivered by */
    int64_t fresh_to_target;       /* that evaluation; 0 if the target was never reached (-1:
                                      unknown, a study run stored before it was recorded) */
    /* CUDA graphs (model.cuda_graph) */
    int64_t graph_replays;         /* steps replayed from the captured graph */
    char graph_note[320];          /* why graph mode was off (tb_step_runner_note), or "" */
    /* diagnostics */
    tb_op_profile profile[TB_TRAIN_PROFILE_MAX]; /* diag.profile: largest total time first */
    int profile_ops;               /* entries in profile */
    int64_t sharpness_measurements;
    double sharpness_time_s;       /* untimed seconds they took */
    tb_sharpness sharpness;        /* the latest (when sharpness_measurements > 0) */
} tb_train_result;

/* Runs the training. A run needs a length: steps, epochs or a time limit (TB_ERR_INVALID
 * otherwise). Bad settings and the algorithm's hyperparameters are checked before any data is
 * loaded (tb_run_config_check). On divergence returns TB_ERR_NUMERIC with result->diverged
 * set and the step and what diverged in the message. result holds what was measured until
 * then (the diverging step is not counted in steps or final_train_loss). observers may be
 * NULL. Data-parallel (config->dist): every rank calls it; rank 0 alone evaluates and decides
 * when to stop, every rank stops with it, the others' result has no evaluations; the weights
 * are checked to be bit-identical on every rank at the end (TB_ERR_INTERNAL if not). With an
 * update hook (config->update, e.g. a submission's: tb_submission_hook) the hook's steps are
 * the update, its prepare_eval runs before each evaluation, a step that ends training
 * (training_done) ends the run, and result->hparams are the given ones. */
tb_status tb_train(const tb_run_config *config, const tb_train_observers *observers,
                   tb_train_result *result, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* run.h: the run core. One training run, set up once and stepped: every driver of training
 * (tb_train, the hardware suite's throughput windows, the benchmark's trials) sets up with
 * tb_run_create and steps with tb_run_step, so a step, an evaluation and a divergence mean the
 * same thing in all of them.
 *
 * Set-up (tb_run_create), in this order: the backend, the workload and its data, the weights
 * (init stream), the tape, the optimizer (unless a submission brings its own update), the
 * input pipeline, the step runner (eager, or a CUDA graph).
 *
 * A step (tb_run_step): the next batch (the pipeline's, or the update hook's own selection),
 * the forward and backward passes and the update (the step runner's, or the hook's), timed on
 * the host clock; then the divergence rule on the step's loss. Evaluations are never timed.
 *
 * The divergence rule (tb_run_check_loss), the same for every driver: a loss diverges when it
 * is NaN or infinite, or, when the first step's training loss (the untrained model's) is
 * positive, more than TB_RUN_DIVERGENCE_FACTOR times that loss. A step that finds a NaN or an
 * infinity in its own numbers (a gradient, a trust ratio, a factor inverse: TB_ERR_NUMERIC
 * before the update) diverges too. Divergence is TB_ERR_NUMERIC naming the step and what.
 *
 * Nothing here prints; every function returns a status with the reason in err. */
#ifndef TRAINBENCH_RUN_H
#define TRAINBENCH_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/dist.h"
#include "trainbench/optim.h"
#include "trainbench/pipeline.h"
#include "trainbench/rng.h"
#include "trainbench/step.h"
#include "trainbench/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loss above this many times the first step's training loss is a divergence (a finite but
 * exploded loss; normal training stays near or below the untrained loss). */
#define TB_RUN_DIVERGENCE_FACTOR 1e4
/* The most steps a run's epochs may come to (also the command's limit on --steps). */
#define TB_RUN_MAX_STEPS 1000000000LL

/* What is trained, and how. */
typedef struct tb_run_model {
    const char *workload;
    const char *algorithm;   /* NULL with an update hook (tb_run_update): no optimizer */
    tb_hparams hparams;      /* the algorithm's; defaults for those not set */
    tb_backend_config backend;
    bool cuda_graph;         /* capture one step as a CUDA graph and replay it (step.h) */
} tb_run_model;

/* The data and the input pipeline. */
typedef struct tb_run_data {
    tb_workload_config source; /* data and cache directories, split kind, model scale;
                                  its split_seed is the run's TB_STREAM_SPLIT seed */
    int batch_size;            /* 0: the workload's default */
    tb_pipeline_config pipeline; /* prefetch, augmentation, echoing; its batch size and
                                    seeds are the run's */
    int64_t full_batch;        /* > 0: full-batch training on a fixed subset of this many
                                  training examples (drawn without replacement by the
                                  data-order seed): every step is all of it, the batch size is
                                  full_batch and an epoch is one step. Refused with another
                                  batch size, echoing, augmentation, a shuffle buffer, an
                                  update hook or several ranks */
} tb_run_data;

/* The length of the run and its learning-rate schedule. max_steps when > 0, else epochs; with
 * both 0 the run is open-ended: max_time_s > 0 ends it by time, or its driver does (the hardware
 * suite's windows). An open-ended run's schedule spans the workload's step hint (1000 without
 * one) instead of its steps, as the built-in submissions' schedules do; past its end a schedule
 * holds its last factor. */
typedef struct tb_run_length {
    double epochs;
    int64_t max_steps;
    double max_time_s;         /* stop after this many timed seconds (0: no limit) */
    tb_schedule_kind schedule;
    double warmup_fraction;    /* of the schedule's steps, for warmup schedules */
} tb_run_length;

/* When the run evaluates on the validation split (tb_eval_sched). */
typedef struct tb_run_eval {
    int during;                /* evaluations during the run, evenly spaced: the k-th after
                                  step ceil(k * steps / (during + 1)), at most one per step;
                                  the final evaluation comes after them (none for an
                                  open-ended run: use period_s) */
    double period_s;           /* also evaluate once this many timed seconds have passed
                                  since the last evaluation (0: off; AlgoPerf's eval period) */
    int64_t every_steps;       /* > 0: also evaluate after every this many steps, and not by
                                  period_s (placed by steps, the evaluations fall at the same
                                  steps however fast the machine runs) */
    int64_t examples;          /* evaluate N examples spread over each split; 0: all */
    bool stop_at_target;       /* stop once validation reaches the workload's target (on the
                                  whole validation split: a subset at the target is confirmed
                                  on the whole split) */
    double target;             /* > 0: this validation target in place of the workload's (a
                                  study's "target": one its runs reach at CPU scale) */
} tb_run_eval;

/* Diagnostics: they observe the run and change none of its numbers. */
typedef struct tb_run_diag {
    /* Time every op's forward and backward (tb_tape_set_profiling); the backend is
     * synchronised around each op, which slows the run: profile, then measure. */
    bool profile;
    /* After every sharpness_every-th step (0: never), untimed: the sharpness lambda_1(H) and
     * the preconditioned sharpness lambda_1(P^-1 H) of the training loss on a fixed batch
     * (sharpness_batch examples spread over the training split, 0: the run's batch size), by
     * sharpness_iters Lanczos steps each (0: 20), with the optimizer's stability threshold at
     * the step's learning rate (trainbench/sharpness.h). The optimizer needs a diagonal
     * preconditioner (not lars, lamb, kfac, ekfac, shampoo: TB_ERR_INVALID). */
    int64_t sharpness_every;
    int sharpness_iters;
    int64_t sharpness_batch;
    double sharpness_fd_scale; /* the central differences' relative step (0: 1e-3) */
} tb_run_diag;

typedef struct tb_run tb_run;

/* A training algorithm that brings its own update (a benchmark submission): with update set,
 * tb_run_create makes no optimizer and tb_run_step calls these instead of the step runner. */
typedef struct tb_run_update {
    /* optional: the batch size (0 or less: refused), asked once the workload exists */
    int (*batch_size)(void *user, tb_run *run);
    /* optional: puts the step's batch on the run's tape (default: the pipeline's next) */
    tb_status (*select)(void *user, tb_run *run, tb_batch *out, tb_error *err);
    /* the forward and backward passes and the update of step `step` (1-based) on batch;
     * report->loss gets the step's training loss */
    tb_status (*update)(void *user, tb_run *run, const tb_batch *batch, int64_t step,
                        tb_step_report *report, tb_error *err);
    /* optional: tb_train calls it before each evaluation (AlgoPerf's prepare_for_eval); a
     * benchmark trial calls its submission's itself, timed, and leaves this NULL */
    tb_status (*prepare_eval)(void *user, tb_run *run, tb_error *err);
    void *user;
} tb_run_update;

typedef struct tb_run_config {
    tb_run_model model;
    tb_run_data data;
    uint64_t seeds[TB_STREAM_COUNT]; /* one per source of variation (see tb_stream) */
    tb_run_length length;
    tb_run_eval eval;
    tb_run_diag diag;
    /* Data-parallel across MPI ranks (NULL or a world of 1: one process; dist.h): every rank
     * sets up with the same config, steps on its shard of the global batch, and the gradients
     * and the loss are averaged before every update. Refused: a device other than the cpu,
     * cuda_graph, sharpness, curvature optimizers (kfac, ekfac), a batch the ranks do not
     * divide. */
    tb_dist *dist;
    tb_run_update update; /* update.update NULL: the optimizer model.algorithm */
} tb_run_config;

/* Defaults: fmnist_mlp with adamw on the cpu, 5 epochs, the workload's batch size, linear
 * warmup (5%) then cosine decay, 3 evaluations during the run (then the final one), all seeds
 * 0. */
tb_run_config tb_run_config_default(void);
/* Sets the seed of every source of variation. */
void tb_run_config_seed_all(tb_run_config *config, uint64_t seed);

/* Checks the settings that need no data (lengths, evaluation and sharpness settings, the
 * algorithm's hyperparameters): TB_ERR_INVALID naming the value. tb_run_create runs it. */
tb_status tb_run_config_check(const tb_run_config *config, tb_error *err);

/* Sets the run up (the order above). Fails with TB_ERR_INVALID for a bad setting (naming it),
 * TB_ERR_MISSING when the data is not installed, TB_ERR_NO_DEVICE, or what a part fails with.
 * Data-parallel: every rank learns whether every rank could set up. */
tb_status tb_run_create(const tb_run_config *config, tb_run **out, tb_error *err);
void tb_run_destroy(tb_run *r);

/* What a step did. */
typedef struct tb_run_step_info {
    int64_t step;      /* its number, 1-based */
    int64_t examples;  /* of its batch */
    double loss;       /* its training loss; NaN when not read back */
    double seconds;    /* its host time */
    bool done;         /* the update hook ended training (AlgoPerf's "training complete") */
} tb_run_step_info;

/* One training step (above). read_loss false reads nothing back from the device, so its work
 * is not waited for (throughput windows; tb_run_last_loss reads it later), and applies no
 * divergence rule. On divergence returns TB_ERR_NUMERIC naming the step; the step is then not
 * counted. info may be NULL. */
tb_status tb_run_step(tb_run *r, bool read_loss, tb_run_step_info *info, tb_error *err);

/* The divergence rule applied to `loss`, named `what` ("the training loss"), measured at step
 * `step` (after_last: after the run's last step). TB_OK, or TB_ERR_NUMERIC naming it. */
tb_status tb_run_check_loss(const tb_run *r, const char *what, double loss, int64_t step,
                            bool after_last, tb_error *err);

/* The last step's training loss, read back now (waiting for the device), and checked by the
 * divergence rule; the first read becomes the rule's yardstick when no step read one. */
tb_status tb_run_last_loss(tb_run *r, float *loss, tb_error *err);

/* One untimed evaluation of the current weights on `split` (examples: 0 all, else spread
 * evenly); on a graphed run on a tape of its own. The weights are the optimizer's evaluation
 * point during it (tb_optimizer_prepare_for_eval: Schedule-Free's x) and its training point
 * again after it. */
tb_status tb_run_evaluate(tb_run *r, tb_split split, int64_t examples, tb_eval_metrics *m,
                          tb_error *err);

/* The standard step of an optimizer of the caller's on a batch already on the run's tape:
 * the Fisher pass when opt asks for one, the forward and backward passes, and opt's update at
 * learning-rate factor lr_scale unless the loss is not finite; *loss gets the loss. For update
 * hooks (the built-in baselines); the run keeps a step runner for the optimizer given last.
 * opt lives on the run's backend: destroy it before the run. */
tb_status tb_run_standard_update(tb_run *r, tb_optimizer *opt, const tb_batch *batch,
                                 double lr_scale, double *loss, tb_error *err);

/* The parts, for drivers and observers (owned by the run). */
const tb_run_config *tb_run_get_config(const tb_run *r);
tb_backend *tb_run_backend(tb_run *r);
tb_workload *tb_run_workload(tb_run *r);
tb_tape *tb_run_tape(tb_run *r);
tb_optimizer *tb_run_optimizer(tb_run *r); /* NULL with an update hook */
tb_pipeline *tb_run_pipeline(tb_run *r);
tb_step_runner *tb_run_step_runner(tb_run *r); /* NULL with an update hook */
tb_rng *tb_run_dropout(tb_run *r);             /* the dropout stream, this rank's */
int64_t tb_run_batch_size(const tb_run *r);
/* Full-batch training (data.full_batch > 0): the training rows every step trains on
 * (tb_run_batch_size of them); NULL otherwise. */
const int64_t *tb_run_full_rows(const tb_run *r);
/* Steps the run will take: max_steps, the epochs in steps, or INT64_MAX when open-ended. */
int64_t tb_run_total_steps(const tb_run *r);
bool tb_run_open_ended(const tb_run *r);
const tb_schedule *tb_run_schedule(const tb_run *r);
int64_t tb_run_steps(const tb_run *r);         /* steps taken */
double tb_run_timed_s(const tb_run *r);        /* their host seconds */
double tb_run_first_loss(const tb_run *r);     /* the divergence rule's yardstick (NaN: none) */

/* ---- the step time, and an upstream stated in it (step_time.c) ------------------------------ */

/* How to measure a step: `warmup` steps untimed, then `windows` windows (1 to 64) of `steps`
 * steps each; the step time is the median of the windows' seconds per step. */
typedef struct tb_step_time_plan {
    int warmup, steps, windows;
} tb_step_time_plan;

/* The downstream step time of config's run (the step with its batch at hand), timed as the
 * benchmark times a step (tb_run_step's host seconds) on a run of its own whose upstream is out
 * of the way: read inline (no thread to wait for), no augmentation, no echoing, no delay, no
 * evaluations. *step_s in seconds. Upstream work (reading, augmenting) thus counts on the
 * upstream's side of a slowdown: a stated N x is at least N x. */
tb_status tb_run_measure_step_s(const tb_run_config *config, const tb_step_time_plan *plan,
                                double *step_s, tb_error *err);
/* The upstream delay per fresh example that makes a batch of batch_size fresh examples cost
 * `slowdown` times the step time step_s: slowdown * step_s / batch_size (TB_ERR_INVALID for a
 * slowdown outside (0, 1000], a step time or batch size that is not positive, or a delay past
 * the pipeline's 10 s). */
tb_status tb_upstream_delay_for(double slowdown, double step_s, int64_t batch_size,
                                double *delay_s, tb_error *err);

/* ---- the evaluation scheduler ---------------------------------------------------------------
 * When a run evaluates: the k-th of eval->during evaluations after step ceil(k * total /
 * (during + 1)), after every eval->every_steps steps, and, when every_steps is 0, once
 * eval->period_s seconds of the driver's clock have passed since the last evaluation; never
 * at the last step (the final evaluation follows it). With every_steps set, the steps of the
 * evaluations are a function of the run's length alone, not of its speed. Plain data. */
typedef struct tb_eval_sched {
    int64_t during, next, total, every;
    double period_s, last_s;
} tb_eval_sched;

tb_eval_sched tb_eval_sched_make(const tb_run_eval *eval, int64_t total_steps);
/* Whether an evaluation is due after `step` at `clock_s` seconds; advances past the due
 * counted evaluations either way. */
bool tb_eval_sched_due(tb_eval_sched *s, int64_t step, double clock_s);
/* An evaluation was made at clock_s. */
void tb_eval_sched_done(tb_eval_sched *s, double clock_s);

/* Whether a validation result m reaches `target` in the workload's metric (its direction:
 * tb_workload_info.lower_is_better). Targets are calibrated on the whole validation split, so
 * an evaluation of a subset at the target is confirmed by an untimed evaluation of the whole
 * split, written to *whole when given (whole->examples is 0 when none was made). */
tb_status tb_run_at_target(tb_run *r, double target, const tb_eval_metrics *m, bool *reached,
                           tb_eval_metrics *whole, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

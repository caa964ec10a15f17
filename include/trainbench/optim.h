/* optim.h: training algorithms (optimizers), their named hyperparameters, and learning-rate
 * schedules.
 *
 * Every optimizer is found by name in one registry and configured by named hyperparameters
 * (tb_hparams), the names a JSON search space refers to. Values outside an algorithm's valid
 * range are rejected with a message naming the hyperparameter and the value. An optimizer
 * sweeps the parameters' flat buffers through backend kernels, so every backend runs the same
 * update; weight decay skips biases and normalisation parameters. */
#ifndef TRAINBENCH_OPTIM_H
#define TRAINBENCH_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- named hyperparameter values -------------------------------------------------------- */
#define TB_HPARAMS_MAX 32
#define TB_HPARAM_NAME_MAX 40

typedef struct tb_hparams {
    int count;
    char names[TB_HPARAMS_MAX][TB_HPARAM_NAME_MAX];
    double values[TB_HPARAMS_MAX];
} tb_hparams;

/* Sets (or replaces) name = value. Fails if the set is full or the name too long. */
tb_status tb_hparams_set(tb_hparams *hp, const char *name, double value, tb_error *err);
/* hp or name NULL: not there (get returns the fallback). */
bool tb_hparams_has(const tb_hparams *hp, const char *name);
double tb_hparams_get(const tb_hparams *hp, const char *name, double fallback);
/* Parses "name=value" (as given on a command line) into hp. */
tb_status tb_hparams_parse_assignment(tb_hparams *hp, const char *text, tb_error *err);

/* The description of one hyperparameter of an algorithm: its default and valid range. */
typedef struct tb_hparam_spec {
    const char *name;
    double default_value;
    double min, max;     /* valid range */
    bool min_open;       /* true: value must be > min (not >=) */
    bool max_open;       /* true: value must be < max */
    bool is_flag;        /* 0 or 1 only */
    const char *help;
} tb_hparam_spec;

/* ---- optimizers ---------------------------------------------------------------------------- */
typedef struct tb_optimizer tb_optimizer;

typedef struct tb_optimizer_info {
    const char *name;
    const char *summary;
    const tb_hparam_spec *hparams;
    int n_hparams;
} tb_optimizer_info;

int tb_optimizer_count(void);
const tb_optimizer_info *tb_optimizer_info_at(int i);
/* NULL if unknown. */
const tb_optimizer_info *tb_optimizer_find(const char *name);

/* Creates the optimizer `name` over params with hyperparameters hp (missing ones take their
 * defaults; hp may be NULL). Fails with TB_ERR_INVALID and a message naming the cause for
 * everything tb_optimizer_check_hparams refuses, and for parameters not finalized. */
tb_status tb_optimizer_create(const char *name, tb_params *params, const tb_hparams *hp,
                              tb_optimizer **out, tb_error *err);
void tb_optimizer_destroy(tb_optimizer *opt);
/* One update with the current gradients; lr_scale multiplies the base learning rate (the
 * schedule's factor at this step). Counts steps from 1; a step that fails is not counted
 * (tb_optimizer_steps is as before it, and the next call takes the same step number).
 * Numbers that are not finite fail with TB_ERR_NUMERIC (a divergence) and leave the
 * parameters as they were: a gradient with a NaN or an infinity (found by one sum of squares
 * over all gradients, in double, before anything is written; the message names the first
 * such parameter), or an update direction the algorithm computed (a LARS or LAMB trust
 * ratio, a K-FAC, EKFAC or Shampoo preconditioned gradient) that is not finite in float32.
 * Statistics an algorithm keeps (K-FAC's factors, LAMB's moments) may have moved. Inside a
 * CUDA graph capture nothing can be read back, and the gradients are not checked. */
tb_status tb_optimizer_step(tb_optimizer *opt, double lr_scale, tb_error *err);
/* Evaluation at the algorithm's evaluation point. Schedule-Free trains at y and is evaluated
 * at x (its averaged iterate): prepare_for_eval puts x into the parameters, prepare_for_train
 * restores y bit for bit. Every evaluation of a run is bracketed so (tb_run_evaluate). For
 * every other algorithm both do nothing. A second prepare_for_eval (or a prepare_for_train
 * while training) does nothing; tb_optimizer_step between the two fails (TB_ERR_INVALID).
 * opt NULL: TB_ERR_INVALID. */
tb_status tb_optimizer_prepare_for_eval(tb_optimizer *opt, tb_error *err);
tb_status tb_optimizer_prepare_for_train(tb_optimizer *opt, tb_error *err);
/* Whether the algorithm evaluates elsewhere than where it trains (it has the two hooks). */
bool tb_optimizer_evaluates_elsewhere(const tb_optimizer *opt);
const tb_optimizer_info *tb_optimizer_get_info(const tb_optimizer *opt);
/* The value in effect for a hyperparameter (given or default). */
double tb_optimizer_hparam(const tb_optimizer *opt, const char *name);
int64_t tb_optimizer_steps(const tb_optimizer *opt);

/* ---- the step in two halves, for CUDA graphs ----------------------------------------------
 * tb_optimizer_step = tb_optimizer_step_prepare + tb_optimizer_step_queue for algorithms whose
 * step has no host-side work but computing its per-step values. prepare counts the step and
 * writes those values (learning rate times lr_scale, bias corrections...) into the backend's
 * step block (tb_backend_step_alloc), queuing nothing; queue queues the update kernels, which
 * read the values by pointer. A graph captures queue once; each replay needs a prepare and a
 * tb_backend_step_upload before it. */
/* NULL if the step splits so; otherwise one line naming the host-side per-step work that keeps
 * it out of a graph (LARS and LAMB read norms back, K-FAC and Shampoo invert on the host). */
const char *tb_optimizer_graph_blocker(const tb_optimizer *opt);
/* TB_ERR_UNSUPPORTED (naming the blocker) where the step does not split; TB_ERR_INVALID for a
 * bad lr_scale (as tb_optimizer_step). A failed prepare does not count the step. */
tb_status tb_optimizer_step_prepare(tb_optimizer *opt, double lr_scale, tb_error *err);
/* Queues the update with the values of the last prepare (TB_ERR_INVALID before any). */
tb_status tb_optimizer_step_queue(tb_optimizer *opt, tb_error *err);

/* ---- the preconditioner and the stability threshold (sharpness diagnostics) ---------------
 * A step of the diagonal methods is  w -= lr * direction / P  with P a per-value diagonal:
 * sgd, momentum and nesterov P = 1; adam, adamw, nadam and nadamw P = sqrt(v_hat) + epsilon
 * with v_hat = v / (1 - beta2^t); rmsprop sqrt(v + epsilon) (TF style) or sqrt(v) + epsilon
 * (torch_style); adagrad sqrt(G) + epsilon. LARS and LAMB (per-layer trust ratios computed
 * from the step), K-FAC, EKFAC and Shampoo (Kronecker-factored) have no diagonal P. */
/* NULL when the optimizer has a diagonal preconditioner; otherwise one line saying why not. */
const char *tb_optimizer_preconditioner_blocker(const tb_optimizer *opt);
/* Writes P of the latest step to p (host memory, tb_params_numel(params) floats, the flat
 * buffers' layout, padding included), computed from the optimizer's state exactly as its
 * update kernel computes the denominator (the same float operations on the same values,
 * epsilon and bias correction included). Fails with TB_ERR_UNSUPPORTED (naming the reason)
 * for optimizers without one, TB_ERR_INVALID for NULL arguments or, for the adaptive methods,
 * before the first step (there is no latest step; sgd's P = 1 always is). */
tb_status tb_optimizer_preconditioner(const tb_optimizer *opt, float *p, tb_error *err);
/* The stability threshold of the optimizer's step at learning rate lr = learning_rate *
 * lr_scale: on a quadratic with Hessian H and P frozen, the step is stable iff the largest
 * eigenvalue of P^-1 H is below it (Cohen et al. 2022, weight decay left out):
 *   gradient descent (momentum 0), adagrad      2 / lr
 *   heavy ball (sgd nesterov=0, momentum, rmsprop with momentum mu)   (2 + 2 mu) / lr
 *   nesterov                                    (2 + 2 mu) / ((1 + 2 mu) lr)
 *   adam, adamw (EMA momentum beta1)            (2 + 2 beta1) / ((1 - beta1) lr): 38/lr at 0.9
 *   nadam, nadamw (numerator beta1 m + (1 - beta1) g)
 *                                               (2 + 2 beta1) / ((1 - beta1)(1 + 2 beta1) lr)
 * The Adam family's bias correction of m (1/(1 - beta1^t), within 1% of 1 after 44 steps at
 * beta1 = 0.9) is left out, as in the paper's 38/lr. TB_ERR_UNSUPPORTED for optimizers
 * without a diagonal P and for nadam with momentum_decay > 0 (its momentum changes every
 * step); TB_ERR_INVALID for NULL arguments or an lr_scale that is not finite and >= 0 (0, a
 * step of size 0, is stable at any sharpness: +infinity). */
tb_status tb_optimizer_stability_threshold(const tb_optimizer *opt, double lr_scale, double *out,
                                           tb_error *err);
/* The same threshold at lr = learning_rate for algorithm `algorithm` with the hyperparameters
 * `given` (NULL: none; the rest their defaults), without an optimizer: what a plan states
 * before it trains (a study's stability figure). Fails as tb_hparams_resolve for an unknown
 * algorithm or a bad value, and as tb_optimizer_stability_threshold (TB_ERR_UNSUPPORTED
 * naming the algorithm) where it has none. */
tb_status tb_optimizer_stability_threshold_of(const char *algorithm, const tb_hparams *given,
                                              double *out, tb_error *err);

/* The hyperparameters algorithm `name` runs with for the values `given` (NULL: none), as
 * tb_optimizer_create uses them: into *out every one it has, in the registry's order, the
 * given value or its default, aliases settled (nadamw's beta1 from a given one_minus_beta1 and
 * the other way round); into *defaults (may be NULL) those that took their default (neither
 * given nor derived from a given alias). Fails as tb_optimizer_create does for an unknown
 * algorithm, an unknown or out-of-range hyperparameter or a contradiction (TB_ERR_INVALID;
 * *out and *defaults are then empty). Creates nothing. */
tb_status tb_hparams_resolve(const char *name, const tb_hparams *given, tb_hparams *out,
                             tb_hparams *defaults, tb_error *err);

/* Checks hp against specs without creating anything: unknown names, values that are not
 * finite, flags other than 0 or 1, values outside their range, and values that float32 (in
 * which the updates run) rounds onto a bound the range excludes, e.g. beta2 = 0.99999999,
 * which is 1 in float32, so that 1 - beta2 would be 0. */
tb_status tb_hparams_validate(const tb_hparams *hp, const tb_hparam_spec *specs, int n_specs,
                              const char *algorithm, tb_error *err);
/* Everything tb_optimizer_create checks of hp for the algorithm `name` (hp may be NULL),
 * without parameters: an unknown algorithm, tb_hparams_validate, then each algorithm's own
 * checks of values in range that would still produce 0/0 or an infinity: an epsilon or a
 * damping below float32's smallest normal number (about 1.18e-38; Adam's family, LAMB,
 * RMSProp, Adagrad, K-FAC, EKFAC, Shampoo), nadamw's beta1 derived from a one_minus_beta1 so
 * small that beta1 is 1 in float32, and names that disagree. TB_ERR_INVALID with a message
 * naming the algorithm, the hyperparameter, its value and why. Studies and benchmarks call it
 * when they are planned, before any training. */
tb_status tb_optimizer_check_hparams(const char *name, const tb_hparams *hp, tb_error *err);

/* ---- presets: a published submission's fixed configuration of an algorithm ------------------
 * One table (src/optim/preset.c) for `train --preset NAME`, `bench -s NAME` (a built-in
 * baseline at that configuration) and `trainbench algorithms`. */
#define TB_PRESET_MAX_VALUES 8
typedef struct tb_optimizer_preset {
    const char *name;      /* e.g. "algoperf_sf_adamw"; never a registry algorithm's name */
    const char *algorithm; /* the registry's algorithm it configures */
    const char *summary;
    bool self_tuning;      /* the configuration of an AlgoPerf self-tuning submission */
    int n_values;          /* the algorithm's hyperparameters it fixes: */
    const char *names[TB_PRESET_MAX_VALUES];
    double values[TB_PRESET_MAX_VALUES];
    double warmup_steps_of_hint; /* > 0: the algorithm's warmup_steps = floor(this x the
                                    workload's step hint) */
    double schedule_warmup;      /* > 0: the learning-rate schedule is a linear warmup of this
                                    fraction, then cosine decay to 0; 0: the caller's */
} tb_optimizer_preset;

int tb_optimizer_preset_count(void);
const tb_optimizer_preset *tb_optimizer_preset_at(int i); /* NULL out of range */
const tb_optimizer_preset *tb_optimizer_preset_find(const char *name); /* NULL: none */
/* "a, b": the presets' names, cut to cap. */
void tb_optimizer_preset_names(char *buf, size_t cap);
/* Applies preset `name` for a workload of step hint `step_hint`: *algorithm becomes its
 * algorithm, and hp gets every hyperparameter it fixes that hp does not already hold (so
 * values given by the caller win), some derived from step_hint (algoperf_sf_adamw's
 * warmup_steps = floor(0.015 step_hint)). The schedule (schedule_warmup) is the caller's to
 * apply. TB_ERR_INVALID naming the cause for an unknown preset (listing the known ones), a
 * step hint below 1 where one is needed, or a resulting set tb_optimizer_check_hparams
 * refuses; hp and *algorithm are then unchanged. */
tb_status tb_optimizer_preset_apply(const char *name, int64_t step_hint, const char **algorithm,
                                    tb_hparams *hp, tb_error *err);

/* ---- learning-rate schedules ----------------------------------------------------------------- */
/* Every kind but constant starts with a linear warmup, factor step / warmup_steps for steps
 * 1..warmup_steps (none when warmup_steps is 0), then decays over the remaining steps; with
 * progress p = (step - warmup_steps) / (total_steps - warmup_steps), clamped to [0, 1]: */
typedef enum tb_schedule_kind {
    TB_SCHEDULE_CONSTANT = 0,  /* "constant": 1 at every step (no warmup) */
    TB_SCHEDULE_WARMUP_COSINE, /* "warmup_cosine": 0.5 (1 + cos(pi p)), 0 at total_steps */
    TB_SCHEDULE_LINEAR_DECAY,  /* "linear_decay": 1 - p */
    TB_SCHEDULE_POLYNOMIAL,    /* "polynomial": (1 - p)^power (Nado et al.: power 2) */
    TB_SCHEDULE_STEP,          /* "step": decay_factor^floor((step - warmup - 1) / step_every) */
    TB_SCHEDULE_COUNT
} tb_schedule_kind;

/* A schedule. Fields a kind does not use are ignored; 0 in power, decay_factor or step_every
 * means its default (2, 0.1, and a third of the steps after warmup rounded up, at least 1), so
 * {kind, warmup_steps, total_steps} is a complete schedule. */
typedef struct tb_schedule {
    tb_schedule_kind kind;
    int64_t warmup_steps;
    int64_t total_steps;
    double power;        /* polynomial: exponent > 0 */
    double decay_factor; /* step: factor in (0, 1] applied every step_every steps */
    int64_t step_every;  /* step: interval >= 1 */
    /* warmup_cosine, linear_decay, polynomial: the factor decays from 1 to end_factor in
     * [0, 1] (0: to 0), end + (1 - end) shape(p), AlgoPerf's end_factor */
    double end_factor;
} tb_schedule;

/* Parses a schedule name (constant, warmup_cosine or cosine, linear_decay or linear,
 * polynomial or poly, step); an unknown name fails naming it and the known ones. */
tb_status tb_schedule_parse(const char *name, tb_schedule_kind *out, tb_error *err);
/* The canonical name of a kind ("constant", "warmup_cosine", ...); "unknown" if out of range. */
const char *tb_schedule_name(tb_schedule_kind kind);
/* Checks a schedule's settings (negative steps, warmup beyond the total, power <= 0, decay
 * factor outside (0, 1], negative interval, end factor outside [0, 1]); fails with
 * TB_ERR_INVALID naming the value. */
tb_status tb_schedule_validate(const tb_schedule *s, tb_error *err);
/* The learning-rate factor at step, counted from 1 (a step < 1 gets step 1's factor, never 0
 * or a negative value; s NULL: 1); past total_steps it stays at its value there
 * (end_factor for the decaying schedules, the last level for step), for runs longer than their
 * schedule (a run ended by time whose schedule spans a step hint). */
double tb_schedule_factor(const tb_schedule *s, int64_t step);

/* ---- gradient clipping ----------------------------------------------------------------------- */
/* Clips the gradients of params by their global L2 norm, torch.nn.utils.clip_grad_norm_'s
 * rule: when norm > max_norm every gradient is scaled by max_norm / (norm + 1e-6). Returns the
 * norm before clipping. max_norm <= 0 (or not finite) disables clipping; a non-finite norm
 * leaves the gradients unchanged (the caller sees it in the return value). */
double tb_params_clip_grad_norm(tb_params *params, double max_norm);

#ifdef __cplusplus
}
#endif
#endif

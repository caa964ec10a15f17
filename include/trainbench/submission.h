/* submission.h: the submission API: what a training algorithm provides to the benchmark.
 *
 * Modelled on AlgoPerf's: a submission gives its batch size, initialises its optimizer state,
 * updates the parameters one step at a time (and may end training early), prepares for an
 * evaluation, and may choose its own training batches (data selection). The workload's fixed
 * functions (model, loss, parameters, the input pipeline) are reached only through the
 * tb_submission_api table handed to every call, so an external submission (a shared library
 * loaded with dlopen) needs nothing from trainbench but this header: it links against nothing.
 *
 * Timing (AlgoPerf's rules, with its quirks fixed): init_optimizer_state, data_selection,
 * update_params and prepare_for_eval are all timed; evaluations are not.
 *
 * External submissions export one function, TB_SUBMISSION_ENTRY_NAME:
 *     const tb_submission *tb_submission_entry(int abi_version);
 * returning a static table (or NULL if it does not support abi_version). See
 * examples/submission_example.c and docs/SUBMISSIONS.md. */
#ifndef TRAINBENCH_SUBMISSION_H
#define TRAINBENCH_SUBMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/optim.h"
#include "trainbench/pipeline.h"
#include "trainbench/status.h"
#include "trainbench/step.h"
#include "trainbench/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_SUBMISSION_ABI_VERSION 1
#define TB_SUBMISSION_ENTRY_NAME "tb_submission_entry"

/* The running trial, as the submission sees it (opaque). */
typedef struct tb_trial_ctx tb_trial_ctx;

/* The fixed functions of the workload and the helpers a submission may call. Every pointer is
 * set. Variables live on the trial's tape until the next step. */
typedef struct tb_submission_api {
    int abi_version;
    /* the workload */
    const char *(*submission_name)(tb_trial_ctx *c); /* the name the trial runs under */
    const tb_workload_info *(*workload_info)(tb_trial_ctx *c);
    int64_t (*step_hint)(tb_trial_ctx *c); /* steps a tuned baseline takes; a schedule length */
    tb_var *(*model_fn)(tb_trial_ctx *c, tb_var *inputs);      /* training mode, on the tape */
    tb_var *(*loss_fn)(tb_trial_ctx *c, tb_var *outputs, tb_var *targets); /* scalar */
    /* zeroes the gradients, then back-propagates loss into them */
    tb_status (*backward)(tb_trial_ctx *c, tb_var *loss, tb_error *err);
    double (*scalar)(tb_trial_ctx *c, tb_var *v); /* a scalar variable's value on the host */
    tb_params *(*params)(tb_trial_ctx *c);
    int (*param_count)(tb_trial_ctx *c);
    tb_param *(*param_at)(tb_trial_ctx *c, int i);
    int64_t (*numel)(tb_trial_ctx *c);
    float *(*values)(tb_trial_ctx *c);  /* flat parameter buffer */
    float *(*grads)(tb_trial_ctx *c);   /* flat gradient buffer */
    bool (*on_host)(tb_trial_ctx *c);   /* whether values/grads are host memory (CPU backend) */
    /* the input pipeline: the next batch in the workload's data order (for data_selection) */
    tb_status (*next_batch)(tb_trial_ctx *c, tb_batch *out, tb_error *err);
    /* the optimizer zoo, by registry name (see optim.h) */
    tb_status (*optimizer_create)(tb_trial_ctx *c, const char *name, const tb_hparams *hp,
                                  tb_optimizer **out, tb_error *err);
    tb_status (*optimizer_step)(tb_optimizer *opt, double lr_scale, tb_error *err);
    void (*optimizer_destroy)(tb_optimizer *opt);
    double (*hparam)(const tb_hparams *hp, const char *name, double fallback);
    tb_status (*fail)(tb_error *err, tb_status st, const char *message); /* fills err */
    /* The standard training step of an optimizer made with optimizer_create, on the batch: the
     * curvature pass when the optimizer takes one (K-FAC, EKFAC), the forward and backward
     * passes, and the update at learning-rate factor lr_scale unless the loss is not finite;
     * *loss gets the step's loss. The step `trainbench train` takes, for a submission whose
     * algorithm is an optimizer of the zoo on a schedule of its own. */
    tb_status (*standard_update)(tb_trial_ctx *c, tb_optimizer *opt, const tb_batch *batch,
                                 double lr_scale, double *loss, tb_error *err);
} tb_submission_api;

/* A submission: a table of callbacks; optional ones may be NULL. `hp` is the trial's
 * hyperparameter point (empty under the self-tuning ruleset). `state` is the submission's own
 * optimizer state, created by init_optimizer_state and freed by free_state. */
typedef struct tb_submission {
    const char *name;
    const char *summary;
    int abi_version; /* TB_SUBMISSION_ABI_VERSION */
    /* required */
    int (*get_batch_size)(const tb_submission_api *api, tb_trial_ctx *c, const tb_hparams *hp);
    tb_status (*init_optimizer_state)(const tb_submission_api *api, tb_trial_ctx *c,
                                      const tb_hparams *hp, void **state, tb_error *err);
    /* one step on batch (already on the tape): forward, loss, backward, update */
    tb_status (*update_params)(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                               const tb_hparams *hp, const tb_batch *batch, int64_t step,
                               tb_step_report *report, tb_error *err);
    void (*free_state)(void *state);
    /* optional */
    tb_status (*prepare_for_eval)(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                                  tb_error *err);
    /* chooses the next batch (default: api->next_batch) */
    tb_status (*data_selection)(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                                tb_batch *out, tb_error *err);
    /* default workload-agnostic search space, AlgoPerf JSON (see tune.h); NULL: none */
    const char *default_search_space;
} tb_submission;

typedef const tb_submission *(*tb_submission_entry_fn)(int abi_version);

/* ---- finding submissions ------------------------------------------------------------------ */
/* A built-in submission: one per optimizer in the registry ("sgd", "adamw", ...), a generic
 * baseline (forward, loss, backward, the optimizer's step; constant learning rate unless the
 * point sets warmup_fraction > 0, then linear warmup and cosine decay over the step hint),
 * with its default search space read from <search_space_dir>/<name>.json. */
typedef struct tb_submission_ref tb_submission_ref;

/* Resolves `spec`: an optimizer name (a built-in baseline) or a path to a shared library
 * (anything containing '/' or ending in ".so"), loaded with dlopen (RTLD_NOW | RTLD_LOCAL)
 * and checked for its entry point, ABI version and required fields. A library is loaded
 * first in a probe child process (fork), so that one that crashes in its ELF constructors or
 * its entry point does not take the caller with it, and its prints (there and while it is
 * loaded here) go to stderr. search_space_dir may be NULL (no default search spaces for
 * built-ins). The ref owns the library handle, the names and the search space text; free
 * with tb_submission_unload. Fails with TB_ERR_INVALID naming the spec when unknown or when
 * the library is refused (not loadable, with dlerror's text; no entry point; another ABI; a
 * required field missing, named): a bad value given by the user; with TB_ERR_CRASHED naming
 * the library and the signal (or exit status) when it crashed, exited or hung while loading
 * in the probe: the submission's failure. The caller must not have started threads. */
tb_status tb_submission_load(const char *spec, const char *search_space_dir,
                             tb_submission_ref **out, tb_error *err);
void tb_submission_unload(tb_submission_ref *ref);
const tb_submission *tb_submission_get(const tb_submission_ref *ref);
/* The name results are stored under: the optimizer name, or the library's submission name. */
const char *tb_submission_ref_name(const tb_submission_ref *ref);
/* The spec it was loaded from (the library path for external submissions). */
const char *tb_submission_ref_spec(const tb_submission_ref *ref);
bool tb_submission_ref_external(const tb_submission_ref *ref);
/* The default search space (JSON text), or NULL if the submission has none. */
const char *tb_submission_ref_search_space(const tb_submission_ref *ref);
/* The file a built-in's search space was read from ("" for an external submission). */
const char *tb_submission_ref_search_space_path(const tb_submission_ref *ref);
/* The registry optimizer a built-in runs (its name, or a preset's algorithm: nadamw for
 * nadamw_self_tuning; the presets are tb_optimizer_preset's); NULL for an external
 * submission. */
const char *tb_submission_ref_optimizer(const tb_submission_ref *ref);
/* Replaces ref's search space by the file at path (`bench --space FILE`); TB_ERR_IO or
 * TB_ERR_INVALID naming the file when it cannot be read (missing, a directory, a FIFO, too
 * large, not text). */
tb_status tb_submission_ref_set_search_space_file(tb_submission_ref *ref, const char *path,
                                                  tb_error *err);

/* Hyperparameters the built-in baselines read themselves (not passed to the optimizer), by
 * their names in a point (docs/TUNING.md, "AlgoPerf's search spaces, unedited"): the
 * schedule's warmup as a fraction of the step hint (warmup_fraction, or AlgoPerf's
 * warmup_factor) or in steps (warmup_steps, AlgoPerf's target setting), and AlgoPerf's linear
 * decay (decay_steps_factor, end_factor). */
#define TB_HP_WARMUP_FRACTION "warmup_fraction"
#define TB_HP_WARMUP_FACTOR "warmup_factor"
#define TB_HP_WARMUP_STEPS "warmup_steps"
#define TB_HP_DECAY_STEPS_FACTOR "decay_steps_factor"
#define TB_HP_END_FACTOR "end_factor"
/* AlgoPerf's 1 - beta1: a built-in baseline gives its optimizer beta1 = 1 - v, or momentum =
 * 1 - v where the optimizer has a momentum and no beta1 (nadamw takes the name itself). */
#define TB_HP_ONE_MINUS_BETA1 "one_minus_beta1"
/* A trial passes dropout_rate and label_smoothing of its point on to the workload
 * (tb_workload_config; AlgoPerf's names) for every submission: the rate of its hidden layers'
 * dropout, and the label smoothing of its training loss. A workload without dropout, or
 * whose loss is not cross-entropy against labels, ignores them there, as AlgoPerf's do. */
#define TB_HP_DROPOUT_RATE "dropout_rate"
#define TB_HP_LABEL_SMOOTHING "label_smoothing"

#ifdef __cplusplus
}
#endif
#endif

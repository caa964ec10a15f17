/* trial_impl.h: the running trial a submission sees through tb_submission_api (internal). */
#ifndef TRAINBENCH_TRIAL_IMPL_H
#define TRAINBENCH_TRIAL_IMPL_H

#include "trainbench/benchmark.h"
#include "trainbench/run.h"
#include "trainbench/submission.h"

#include <stdatomic.h>

struct tb_trial_ctx {
    const char *submission;
    tb_run *run;           /* the trial's run: backend, workload, tape, pipeline, dropout */
    int64_t step_hint;
    /* the hyperparameters in effect, as far as trainbench sees them: every one of the
     * optimizers created through the API (given or default) and a built-in baseline's own;
     * which of them took defaults */
    tb_hparams resolved, defaults;
    struct tb_py_session *py; /* a Python submission's interpreter session (pysub.h) */
};

/* Adds values (those of them in defaults also to c->defaults) to what the trial records as
 * its hyperparameters in effect. */
void tb_trial_note_hparams(tb_trial_ctx *c, const tb_hparams *values, const tb_hparams *defaults);

/* What a trial's process tells its parent while it runs, in memory they share: `beats` goes up
 * at every sign of progress (the process started, set-up done, the optimizer's state made,
 * each step, each eval), `step` is the last step completed. The parent judges a trial hung by
 * it (isolate.c). */
typedef struct tb_trial_heartbeat {
    _Atomic uint64_t beats;
    _Atomic int64_t step;
    _Atomic int ready;        /* set once the trial's set-up is done and it trains */
} tb_trial_heartbeat;

/* tb_trial_execute, beating hb (NULL: none). */
tb_status tb_trial_execute_watched(const char *store_path, int64_t trial_id,
                                   const tb_submission_ref *ref, const tb_trial_options *opts,
                                   tb_trial_heartbeat *hb, tb_error *err);

/* tb_trial_execute_watched as one rank of a data-parallel trial (d: its ranks; NULL or a world
 * of 1: one process): every rank trains its shard of each batch, rank 0 alone evaluates,
 * decides (evals, the stop) and writes the store, which the others only read. */
struct tb_dist;
tb_status tb_trial_execute_dist(const char *store_path, int64_t trial_id,
                                const tb_submission_ref *ref, const tb_trial_options *opts,
                                tb_trial_heartbeat *hb, struct tb_dist *d, tb_error *err);

/* The table handed to every submission call. */
extern const tb_submission_api tb_trial_api;

#endif

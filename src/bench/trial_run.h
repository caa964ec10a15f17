/* trial_run.h: one running trial's state, shared by trial.c (set-up, the submission's hooks,
 * the training loop, the record's start and finish) and trial_record.c (its evals and what it
 * records of its conditions) (internal). */
#ifndef TRAINBENCH_TRIAL_RUN_H
#define TRAINBENCH_TRIAL_RUN_H

#include "bench/trial_impl.h"
#include "trainbench/machine.h"
#include "trainbench/run.h"
#include "trainbench/store.h"

#include <stdbool.h>

/* One trial as it runs (tb_trial_execute_dist), from its record to its end. */
typedef struct trial_run {
    tb_trial_record rec;
    const tb_trial_options *opts;
    tb_store *store;
    tb_trial_ctx ctx;
    const tb_submission *sub;
    void *state;
    tb_run *run;
    int batch_chosen;       /* get_batch_size's answer */
    tb_eval_sched sched;
    double t_sub, t_eval, t_start;
    int64_t step;
    int evals;
    bool reached;
    double time_to_target;
    bool submission_failed; /* the error came from a submission's callback */
    tb_trial_heartbeat *hb;   /* NULL: no parent watching */
    tb_machine_sample since;  /* at the end of set-up */
    bool sampled;             /* since was taken */
    double load_max;          /* the largest load average sampled since */
    int threads;              /* the backend's */
    tb_dist *dist;            /* a data-parallel trial's ranks (NULL: one process) */
    bool root;                /* rank 0 (or the one process): it evaluates and records */
} trial_run;

/* A sign of progress for the parent's hang detection (its limit is the set-up's until the
 * trial is ready: set_up_done). */
static inline void tb_trial_beat(trial_run *r)
{
    if (!r->hb) return;
    atomic_store(&r->hb->step, r->step);
    atomic_fetch_add(&r->hb->beats, 1);
}

/* One untimed eval (train subset, validation, test) at the current step, written to the
 * store with its conditions; notes whether the target was reached within the budget and
 * fails on a validation loss that diverged. */
tb_status tb_trial_eval(trial_run *r, tb_error *err);
/* Records the trial's conditions since the end of its set-up, and whether it was contended
 * (nothing for a trial that never trained). */
tb_status tb_trial_record_conditions(trial_run *r, tb_error *err);
/* The reason a failed trial records, from its status and message (out: n bytes). */
void tb_trial_failure_reason(tb_status st, const char *message, char *out, size_t n);
/* Adds to the machine facts (JSON in machine, cap bytes) how the trial is run. */
void tb_trial_placement_facts(const tb_trial_options *o, char *machine, size_t cap);

#endif

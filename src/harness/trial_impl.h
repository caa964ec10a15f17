/* trial_impl.h: the running trial a submission sees through tb_submission_api (internal). */
#ifndef TRAINBENCH_TRIAL_IMPL_H
#define TRAINBENCH_TRIAL_IMPL_H

#include "trainbench/submission.h"

struct tb_trial_ctx {
    const char *submission;
    tb_backend *be;
    tb_workload *wl;
    tb_tape *tape;
    tb_pipeline *pipe;
    tb_rng dropout;
    int64_t step_hint;
};

/* The table handed to every submission call. */
extern const tb_submission_api tb_trial_api;

#endif

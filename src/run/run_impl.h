/* run_impl.h: the run core's state (internal to src/run/; drivers use trainbench/run.h). */
#ifndef TRAINBENCH_RUN_IMPL_H
#define TRAINBENCH_RUN_IMPL_H

#include "trainbench/run.h"

/* A step runner and the optimizer its steps update: the loss function's context. */
typedef struct tb_run_stepper {
    tb_run *run;
    tb_optimizer *opt;
    tb_step_runner *runner;
} tb_run_stepper;

struct tb_run {
    tb_run_config cfg;
    tb_backend *be;
    tb_workload *wl;
    tb_tape *tape;
    tb_tape *eval_tape;     /* graph mode: evaluations keep off the captured step's tape */
    tb_optimizer *opt;      /* NULL with an update hook */
    tb_pipeline *pipe;
    tb_run_stepper own;     /* the run's optimizer's runner */
    tb_run_stepper theirs;  /* an update hook's optimizer's (tb_run_standard_update) */
    tb_rng dropout;         /* this rank's dropout masks */
    tb_rng fisher;          /* targets sampled for curvature statistics */
    int64_t batch;
    int64_t *full_rows;     /* data.full_batch > 0: the subset every step trains on */
    int64_t total;          /* steps to take; INT64_MAX when open-ended */
    bool open_ended;
    tb_schedule schedule;
    int64_t steps;          /* taken */
    double timed_s;         /* their host seconds */
    double first_loss;      /* the divergence rule's yardstick: the untrained model's loss */
};

/* A runner for opt's steps on the run's tape into *out (eager, or a CUDA graph). */
tb_status tb_run_runner_create(tb_run *r, tb_optimizer *opt, bool cuda_graph,
                               tb_run_stepper *out, tb_error *err);

#endif

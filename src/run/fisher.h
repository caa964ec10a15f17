/* fisher.h: curvature statistics for the trainers (internal to the run core). */
#ifndef TRAINBENCH_RUN_FISHER_H
#define TRAINBENCH_RUN_FISHER_H

#include "trainbench/optim.h"
#include "trainbench/workload.h"

/* Tells opt the workload's dense and conv layers (a no-op for first-order optimizers). */
tb_status tb_fisher_attach(tb_optimizer *opt, tb_workload *wl, tb_error *err);
/* If opt wants Fisher statistics this step: a forward pass on inputs, a backward pass of the
 * loss against targets sampled from the model (drawn from `fisher`), the statistics update;
 * then the tape is rewound and the gradients zeroed, ready for the training pass. The model is
 * left as it was: batch norm's running statistics are frozen during the pass. */
tb_status tb_fisher_pass(tb_optimizer *opt, tb_workload *wl, tb_tape *tape, tb_params *params,
                         tb_var *inputs, tb_rng *fisher, tb_rng *dropout, tb_error *err);

#endif

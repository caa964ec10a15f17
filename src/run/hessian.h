/* hessian.h: Hessian-diagonal estimates for the trainers (internal to the run core). */
#ifndef TRAINBENCH_RUN_HESSIAN_H
#define TRAINBENCH_RUN_HESSIAN_H

#include "trainbench/optim.h"
#include "trainbench/workload.h"

/* If opt wants a Hessian-diagonal estimate before this step (sophia): hands it the gradient
 * of the loss of (inputs, targets) as a function of the parameters, its probes drawn from
 * `probes`. Each gradient evaluation is a forward and backward pass with batch norm's running
 * statistics frozen and the step's dropout masks (a copy of `dropout`, so every evaluation
 * draws the same ones); the parameters are left as they were, the gradients zeroed, the tape
 * rewound. TB_ERR_UNSUPPORTED with more than one data-parallel rank (each rank's estimate
 * would come from its own shard, and the replicas would drift apart). */
tb_status tb_hessian_pass(tb_optimizer *opt, tb_workload *wl, tb_tape *tape, tb_params *params,
                          tb_var *inputs, tb_var *targets, int ranks, tb_rng *probes,
                          const tb_rng *dropout, tb_error *err);

#endif

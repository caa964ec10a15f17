/* run_dist.h: what a run does differently across MPI ranks (internal to the run core; see
 * tb_run_config.dist). Every call is a no-op, or the plain behaviour, for a world of 1. */
#ifndef TRAINBENCH_RUN_DIST_H
#define TRAINBENCH_RUN_DIST_H

#include "trainbench/run.h"

/* What data-parallel runs refuse for a world of more than 1: TB_ERR_UNSUPPORTED for another
 * device than the CPU (NCCL is not built), CUDA graphs, sharpness measurements and a
 * curvature optimizer (opt NULL: not checked), TB_ERR_INVALID for a global batch that does
 * not divide evenly among the ranks (batch 0: not checked). */
tb_status tb_run_dist_refusals(const tb_run_config *config, int64_t batch,
                               const tb_optimizer *opt, tb_error *err);
/* This rank's shard of the global batch b: rows [rank n / size, (rank + 1) n / size) of its
 * inputs and targets, as views on tape. */
tb_status tb_run_dist_shard(tb_dist *d, tb_tape *tape, const tb_batch *b, tb_batch *shard,
                              tb_error *err);
/* Data-parallel: rank r's dropout masks from counter blocks r 2^40 on of the stream rng (rank
 * 0's, and a world of 1's, are a single run's). */
void tb_run_dist_dropout(const tb_dist *d, tb_rng *rng);
/* After backward, before the update: the gradients of params and *loss averaged across ranks. */
tb_status tb_run_dist_reduce(tb_dist *d, tb_params *params, float *loss, tb_error *err);
#endif

/* train_dist.h: what tb_train and tb_throughput_run do differently across MPI ranks (internal
 * to the harness; see tb_train_config.dist, tb_throughput_config.dist). Every call is a no-op, or the plain behaviour, for a world of 1. */
#ifndef TRAINBENCH_HARNESS_TRAIN_DIST_H
#define TRAINBENCH_HARNESS_TRAIN_DIST_H

#include "trainbench/train.h"

/* What data-parallel training and throughput runs refuse for a world of more than 1:
 * TB_ERR_UNSUPPORTED for another device than the CPU (NCCL is not built), CUDA graphs and a
 * curvature optimizer (opt NULL: not checked), TB_ERR_INVALID for a global batch that does not
 * divide evenly among the ranks (batch 0: not checked). */
tb_status tb_dist_refusals(const tb_dist *d, tb_device device, bool cuda_graph,
                           const tb_optimizer *opt, int64_t batch, tb_error *err);
/* What data-parallel training refuses: tb_dist_refusals for the run's settings, and
 * sharpness measurements (TB_ERR_UNSUPPORTED). */
tb_status tb_train_dist_check(const tb_train_config *cfg, int64_t batch,
                              const tb_optimizer *opt, tb_error *err);
/* This rank's shard of the global batch b: rows [rank n / size, (rank + 1) n / size) of its
 * inputs and targets, as views on tape. */
tb_status tb_train_dist_shard(tb_dist *d, tb_tape *tape, const tb_batch *b, tb_batch *shard,
                              tb_error *err);
/* Data-parallel: rank r's dropout masks from counter blocks r 2^40 on of the stream rng (rank
 * 0's, and a world of 1's, are a single run's). */
void tb_train_dist_dropout(const tb_dist *d, tb_rng *rng);
/* After backward, before the update: the gradients of params and *loss averaged across ranks. */
tb_status tb_train_dist_reduce(tb_dist *d, tb_params *params, float *loss, tb_error *err);
/* Every rank leaves with the same verdict (one collective every rank calls): when a rank
 * failed, every other one fails too, with the failed status (theirs when several failed) and a
 * message saying another rank failed and reports why; a rank's own failure and message are
 * kept. With stop non-NULL, every rank gets rank 0's *stop (rank 0 decides when to stop). */
tb_status tb_train_dist_agree(tb_dist *d, tb_status st, bool *stop, tb_error *err);
/* tb_train_dist_agree with a decision code instead of the stop: every rank gets rank 0's *code
 * (0 to TB_DIST_FAILED - 1; code NULL: none is carried). */
#define TB_DIST_FAILED 1000
tb_status tb_train_dist_agree_code(tb_dist *d, tb_status st, int *code, tb_error *err);

#endif

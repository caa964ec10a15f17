/* projection_stage.h: the input pipeline's projection stage (internal to src/workloads/): a
 * projected variant's batches, each with its first hidden layer's dropout noise projected
 * into the input space by the model being trained (docs/DROPOUT.md, "Training on projected
 * samples"). */
#ifndef TRAINBENCH_PROJECTION_STAGE_H
#define TRAINBENCH_PROJECTION_STAGE_H

#include "trainbench/dropout.h"

typedef struct tb_projection_stage tb_projection_stage;

/* A stage for wl (tb_workload_projection_rate(wl) > 0) at the workload's rate, with config's
 * other settings, its masks from the stream keyed by seed (the run's dropout seed). */
tb_status tb_projection_stage_create(tb_workload *wl, const tb_projection_config *config,
                                     uint64_t seed, tb_projection_stage **out, tb_error *err);
void tb_projection_stage_destroy(tb_projection_stage *s);
/* Replaces the n inputs x (host, float32, as tb_workload_read lays them out) by their
 * projection, or leaves them as they are when it does not converge (counted, with its
 * reason). Fails only for what is not a non-convergence (memory, a tape error). */
tb_status tb_projection_stage_apply(tb_projection_stage *s, int64_t n, float *x, tb_error *err);
void tb_projection_stage_stats(const tb_projection_stage *s, tb_projection_stats *out);

#endif

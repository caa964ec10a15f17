/* sharpness_probe.h: sharpness measurements during a training run (tb_train's
 * sharpness_every; internal to the run core): a fixed batch of the training split, the
 * deterministic gradient of its loss, and tb_sharpness_measure on it. */
#ifndef TRAINBENCH_RUN_SHARPNESS_PROBE_H
#define TRAINBENCH_RUN_SHARPNESS_PROBE_H

#include "trainbench/sharpness.h"
#include "trainbench/workload.h"

typedef struct tb_sharpness_probe tb_sharpness_probe;

/* A probe of wl's training loss on `batch` examples of the training split: the given rows
 * (rows[0..batch), e.g. a full-batch run's subset, whose loss is the one its steps minimise),
 * or with rows NULL examples spread evenly over it (row floor((i + 1/2) n / batch) for
 * i < batch: no random draw, so the batch is the same whatever the seeds), taken once; on its own tape, in training mode with batch norm's
 * running averages frozen (tb_tape_set_freeze_running_stats) and the same dropout masks in every
 * gradient evaluation (a copy of a stream of its own, keyed by dropout_seed); fd_scale as
 * tb_hvp_begin's. opt gives the
 * preconditioner and threshold: TB_ERR_INVALID naming why when it has no diagonal
 * preconditioner, or for a batch outside 1..the training examples or iterations outside
 * 1..TB_LANCZOS_MAX_ITERS. */
tb_status tb_sharpness_probe_create(tb_workload *wl, tb_optimizer *opt, int64_t batch,
                                    const int64_t *rows, int iterations, double fd_scale, uint64_t dropout_seed,
                                    tb_sharpness_probe **out, tb_error *err);
void tb_sharpness_probe_destroy(tb_sharpness_probe *p);
/* Both sharpnesses and the threshold at the current parameters, lr_scale being the
 * schedule's factor of the step just taken (tb_sharpness_measure); the parameters, their
 * gradients and the running averages are as before. */
tb_status tb_sharpness_probe_measure(tb_sharpness_probe *p, double lr_scale, tb_sharpness *out,
                                     tb_error *err);

#endif

/* pipeline.h: the input pipeline: from a workload's training split to batches on the device.
 *
 * The pipeline decides which examples form each batch (data order from its own stream) and
 * delivers them as variables on a tape. tb_pipeline_next is part of the timed training step.
 * (This first version prepares batches on the calling thread; the prefetching thread, data
 * echoing and augmentation plug in behind the same interface.) */
#ifndef TRAINBENCH_PIPELINE_H
#define TRAINBENCH_PIPELINE_H

#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One training batch, as variables on the tape it was delivered to (valid until reset). */
typedef struct tb_batch {
    int64_t n;        /* examples */
    tb_var *inputs;   /* e.g. images [n, C, H, W] float32 */
    tb_var *targets;  /* e.g. labels [n] int32 */
    int64_t fresh;    /* examples read fresh from the data (not repeated by echoing) */
} tb_batch;

typedef struct tb_pipeline_config {
    int64_t batch_size;
    uint64_t data_order_seed; /* seed of TB_STREAM_DATA_ORDER */
    uint64_t augment_seed;    /* seed of TB_STREAM_AUGMENT */
} tb_pipeline_config;

typedef struct tb_pipeline tb_pipeline;

/* A pipeline over wl's training split. Fails if batch_size is < 1 or exceeds the split. */
tb_status tb_pipeline_create(tb_workload *wl, const tb_pipeline_config *config,
                             tb_pipeline **out, tb_error *err);
void tb_pipeline_destroy(tb_pipeline *p);
/* Delivers the next batch onto tape. Epochs reshuffle; the incomplete tail of an epoch is
 * dropped. */
tb_status tb_pipeline_next(tb_pipeline *p, tb_tape *tape, tb_batch *out, tb_error *err);
/* Epochs started so far (1 after the first batch). */
int64_t tb_pipeline_epoch(const tb_pipeline *p);
/* Examples read fresh from the data so far. */
int64_t tb_pipeline_fresh_examples(const tb_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif

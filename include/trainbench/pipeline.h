/* pipeline.h: the input pipeline: from a workload's training split to batches on the device.
 *
 * Upstream (its own thread, ahead of the training step, behind a bounded queue of `prefetch`
 * host batches): read fresh examples in a seeded order (epochs reshuffle; each epoch reads
 * the largest multiple of the batch size), augment images (random crop with zero padding,
 * horizontal flip), echo (Choi et al. 2019: example echoing before or after augmentation, or
 * batch echoing, with integer or fractional factors), a shuffle buffer, batches.
 * Downstream (tb_pipeline_next, part of the timed step): upload the next host batch onto the
 * tape. Every random choice has its own stream: data order (TB_STREAM_DATA_ORDER), echo copy
 * counts and the shuffle buffer (streams derived from the data-order seed), augmentation
 * (TB_STREAM_AUGMENT). The stream of batches depends only on the seeds and the config, never
 * on thread timing; prefetch < 0 runs upstream on the calling thread with the same result.
 * For a workload that trains on projected dropout noise (tb_workload_projection_rate > 0:
 * fmnist_mlp_projected), tb_pipeline_next also projects each batch through the model as it is
 * at that step, on the calling thread (docs/DROPOUT.md), its masks from a stream of the
 * dropout seed. */
#ifndef TRAINBENCH_PIPELINE_H
#define TRAINBENCH_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/dropout.h"
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
    int64_t fresh;    /* examples in it read fresh from the data: first copies of reads
                         (echo copies are not fresh; a read still in the shuffle buffer counts
                         in the batch it reaches) */
    const int64_t *rows; /* the training-split row of each example; valid until the next call */
} tb_batch;

typedef enum tb_echo_kind {
    TB_ECHO_NONE = 0,
    TB_ECHO_EXAMPLE_BEFORE_AUGMENT, /* copies get different augmentations */
    TB_ECHO_EXAMPLE_AFTER_AUGMENT,  /* copies are identical */
    TB_ECHO_BATCH,                  /* each batch repeated on consecutive steps */
} tb_echo_kind;

const char *tb_echo_kind_name(tb_echo_kind kind);
/* "none", "example_before_augment" (or "example"), "example_after_augment", "batch" */
tb_status tb_echo_kind_parse(const char *name, tb_echo_kind *out, tb_error *err);

typedef struct tb_pipeline_config {
    int64_t batch_size;
    uint64_t data_order_seed; /* seed of TB_STREAM_DATA_ORDER */
    uint64_t augment_seed;    /* seed of TB_STREAM_AUGMENT */
    /* the threaded pipeline (zero = off / default) */
    int prefetch;             /* host batches prepared ahead: 0 = 2; < 0 = no thread */
    bool augment;             /* image workloads only: random crop and flip (of the target
                                 too when it is the input: layout.target_is_input) */
    int crop_padding;         /* zero padding of the random crop (0: 2 pixels) */
    bool no_flip;             /* augment without the horizontal flip */
    tb_echo_kind echo;
    double echo_factor;       /* mean copies per item, >= 1 (0: 1); fractional: floor or ceil */
    int64_t shuffle_buffer;   /* examples mixed after echoing (0: none; at most the training
                                 examples) */
    double upstream_delay_s;  /* artificial upstream cost per fresh example (to study echoing) */
    /* the projection stage (projected variants only; other workloads ignore these) */
    uint64_t dropout_seed;    /* seed of the stage's masks (the run's TB_STREAM_DROPOUT seed) */
    tb_projection_config projection; /* its steps, step size, tolerance and target error (0:
                                        the defaults); the rate is the workload's dropout_rate */
} tb_pipeline_config;

typedef struct tb_pipeline tb_pipeline;

/* A pipeline over wl's training split. Fails if batch_size is < 1 or exceeds the split, or
 * the shuffle buffer exceeds the split. */
tb_status tb_pipeline_create(tb_workload *wl, const tb_pipeline_config *config,
                             tb_pipeline **out, tb_error *err);
void tb_pipeline_destroy(tb_pipeline *p);
/* Delivers the next batch onto tape. Epochs reshuffle; the incomplete tail of an epoch is
 * dropped. */
tb_status tb_pipeline_next(tb_pipeline *p, tb_tape *tape, tb_batch *out, tb_error *err);
/* Epochs started so far, by the fresh examples delivered (1 after the first batch). */
int64_t tb_pipeline_epoch(const tb_pipeline *p);
/* Examples read fresh from the data and delivered so far: the sum of the delivered batches'
 * fresh counts (reads still in the shuffle buffer or the queue are not counted). */
int64_t tb_pipeline_fresh_examples(const tb_pipeline *p);
/* Batches delivered so far. */
int64_t tb_pipeline_batches(const tb_pipeline *p);
/* What the projection stage did so far (all zero for a workload without one). */
void tb_pipeline_projection_stats(const tb_pipeline *p, tb_projection_stats *out);

#ifdef __cplusplus
}
#endif
#endif

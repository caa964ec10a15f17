/* workload.h: benchmark workloads: data, model, loss and evaluation metrics.
 *
 * A workload owns its data (read from the Debian package's files), declares its model's
 * parameters, initialises them from the init stream, computes the training loss of a batch on
 * a tape, and evaluates a split. The training algorithm never sees inside it. */
#ifndef TRAINBENCH_WORKLOAD_H
#define TRAINBENCH_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/rng.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tb_split {
    TB_SPLIT_TRAIN = 0,
    TB_SPLIT_VALIDATION = 1,
    TB_SPLIT_TEST = 2,
} tb_split;

const char *tb_split_name(tb_split split);

typedef struct tb_workload_info {
    const char *id;
    const char *summary;
    const char *data_package; /* Debian package with the data */
    const char *metric;       /* the metric targets refer to, e.g. "error_rate" */
    int default_batch_size;
} tb_workload_info;

int tb_workload_count(void);
const tb_workload_info *tb_workload_info_at(int i);

typedef struct tb_workload_config {
    const char *data_dir;       /* NULL: where the Debian package installs the data */
    uint64_t split_seed;        /* seed of the train/validation split */
    int64_t validation_size;    /* examples held out of the training set; 0 = default */
} tb_workload_config;

typedef struct tb_workload tb_workload;

/* Loads the data and declares the model. Fails with TB_ERR_MISSING (naming the package) when
 * the data is not installed, TB_ERR_FORMAT when a file is corrupt. */
tb_status tb_workload_create(const char *id, tb_backend *be, const tb_workload_config *config,
                             tb_workload **out, tb_error *err);
void tb_workload_destroy(tb_workload *wl);
const tb_workload_info *tb_workload_get_info(const tb_workload *wl);
tb_params *tb_workload_params(tb_workload *wl);
int64_t tb_workload_size(const tb_workload *wl, tb_split split);

/* (Re)initialises every parameter from rng (the init stream). */
tb_status tb_workload_init(tb_workload *wl, tb_rng *rng, tb_error *err);

/* The mean training loss of the examples idx[0..n) of the training split, on tape (in
 * training mode). dropout is the dropout stream. NULL on error (see the tape's error). */
tb_var *tb_workload_loss(tb_workload *wl, tb_tape *tape, const int64_t *idx, int64_t n,
                         tb_rng *dropout);

/* Copies examples rows[0..n) of a split onto tape: inputs and targets as the workload's model
 * and loss expect them. Returns false with the tape's error set on failure. */
bool tb_workload_gather(tb_workload *wl, tb_tape *tape, tb_split split, const int64_t *rows,
                        int64_t n, tb_var **inputs, tb_var **targets);
/* The model's output for a batch of inputs (training mode follows the tape). */
tb_var *tb_workload_forward(tb_workload *wl, tb_tape *tape, tb_var *inputs, tb_rng *dropout);
/* The training loss of model outputs against targets (a scalar). */
tb_var *tb_workload_loss_fn(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_var *targets);

typedef struct tb_eval_metrics {
    double loss;       /* mean loss */
    double accuracy;   /* for classifiers; NaN otherwise */
    double error_rate; /* 1 - accuracy */
    int64_t examples;
} tb_eval_metrics;

/* Evaluates a split (or its first `limit` examples if limit > 0) in eval mode, batch by batch
 * on tape (which is reset). */
tb_status tb_workload_evaluate(tb_workload *wl, tb_tape *tape, tb_split split, int64_t limit,
                               tb_eval_metrics *out, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

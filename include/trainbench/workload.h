/* workload.h: benchmark workloads: data, model, loss and evaluation metrics.
 *
 * A workload owns its data (read from the Debian package's files, or from the compact cache
 * `trainbench prepare` builds from them), declares its model's parameters, initialises them
 * from the init stream, computes the training loss of a batch on a tape, and evaluates a
 * split. The training algorithm never sees inside it.
 *
 * Every workload has a target metric (lower is better for all current workloads), validation
 * and test targets and a time budget calibrated on this machine class (docs/WORKLOADS.md). A
 * variant is a workload of its own (e.g. "fmnist_cnn_silu") whose info names its base. */
#ifndef TRAINBENCH_WORKLOAD_H
#define TRAINBENCH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/data.h"
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
    const char *data_package; /* Debian package(s) the data needs, space-separated (as
                                 `apt-get install` takes them) */
    const char *metric;       /* what targets refer to: "error_rate", "loss", "bits_per_char" */
    int default_batch_size;
    const char *base;          /* the base workload (== id for a base workload) */
    const char *variant;       /* "" for a base workload, else what the variant changes */
    bool held_out;             /* a variant of AlgoPerf's held-out kind (an architecture or
                                  loss change of its base; two a base): `bench --variants`
                                  adds these, not the studies' dropout and target variants */
    bool lower_is_better;      /* direction of `metric` */
    double validation_target;  /* target of `metric` on the validation split */
    double test_target;        /* target of `metric` on the test split */
    double max_runtime_s;      /* time budget (timed training seconds) */
    double eval_period_s;      /* evaluate about every this many timed seconds */
    int64_t step_hint;         /* steps a baseline needs, roughly (for step-based schedules) */
    const char *data_source;   /* files the data comes from */
    const char *loss_desc;     /* the training loss, in words */
    bool no_error_rate;        /* no class prediction to score (a reconstruction, or the
                                  sparse-target layer's output): accuracy and error rate NaN */
    /* A looser validation target that a default baseline reaches within the quick budget
     * (15 s of timed training on 2 cores), per base workload (variants take their base's):
     * set from the best validation metric of 15 s runs of the default adamw and sgd
     * (Nesterov) settings on an idle 2-core machine (`trainbench train -w W -a A --max-time
     * 15 --eval-period 3 --schedule constant`), loosened so most points of the default search
     * spaces reach it. */
    double quick_target;
} tb_workload_info;

int tb_workload_count(void);
const tb_workload_info *tb_workload_info_at(int i);
/* The info of workload id; NULL if there is none (or id is NULL). */
const tb_workload_info *tb_workload_find_info(const char *id);
/* The base workload of a variant (w->base), or NULL for a base workload (or a NULL w). */
const char *tb_workload_variant_of(const tb_workload_info *w);

/* How the train / validation / test splits are drawn. */
typedef enum tb_split_kind {
    /* the data's fixed training and test sets; validation drawn (by split_seed) from the
     * training set without replacement */
    TB_SPLITS_OFFICIAL = 0,
    /* Bouthillier et al. 2021: the training set drawn with replacement from all examples,
     * validation and test drawn without replacement from the examples never drawn
     * (out-of-bootstrap), stratified by class for classifiers. */
    TB_SPLITS_BOOTSTRAP = 1,
} tb_split_kind;

const char *tb_split_kind_name(tb_split_kind kind);
tb_status tb_split_kind_parse(const char *name, tb_split_kind *out, tb_error *err);

typedef struct tb_workload_config {
    const char *data_dir;       /* NULL: where the Debian package installs the data */
    uint64_t split_seed;        /* seed of the train/validation split */
    int64_t validation_size;    /* examples held out of the training set; 0 = default */
    tb_split_kind split_kind;   /* default TB_SPLITS_OFFICIAL */
    int64_t test_size;          /* bootstrap splits only; 0 = the workload's default */
    /* Directory of the prepared-data cache (see tb_workload_prepare). NULL: no cache, the
     * data is prepared in memory on every create. */
    const char *cache_dir;
    /* Training examples used (the first `train_limit` of the training split); 0 = all. For
     * tests and quick runs. */
    int64_t train_limit;
    /* Model size multipliers; 0 or 1 keep the workload's own (calibrated) model. width_scale
     * multiplies channels and heads (the head size stays), depth_scale the number of blocks.
     * Only kjv_transformer and its variants take them, for throughput and MFU measurements on
     * large machines: the workload's targets and budgets do not apply to a scaled model.
     * Other workloads fail with TB_ERR_UNSUPPORTED. */
    int width_scale, depth_scale;
    /* AlgoPerf's dropout_rate: the rate of the hidden layers' dropout in training, in [0, 1);
     * 0 keeps the workload's own (its dropout variants': docs/WORKLOADS.md; others: none). A
     * workload without dropout refuses a rate (TB_ERR_UNSUPPORTED), a rate outside [0, 1) is
     * TB_ERR_INVALID naming dropout_rate. Evaluation never drops. */
    double dropout_rate;
    /* AlgoPerf's label_smoothing: the training loss's cross-entropy takes the target
     * (1 - s) onehot + s / C, s in [0, 1); 0: none. Only workloads whose loss is softmax
     * cross-entropy against class labels take it (tb_workload_has_label_smoothing); another
     * refuses s > 0 (TB_ERR_UNSUPPORTED), s outside [0, 1) is TB_ERR_INVALID naming
     * label_smoothing. Evaluation never smooths (the metrics stay the workload's). */
    double label_smoothing;
} tb_workload_config;
/* Whether workload id has dropout (a rate it applies in training; its info otherwise). */
bool tb_workload_has_dropout(const char *id);
/* Whether workload id's training loss is softmax cross-entropy against class labels, which
 * takes label smoothing. */
bool tb_workload_has_label_smoothing(const char *id);

typedef struct tb_workload tb_workload;

/* Loads the data and declares the model (config NULL: the defaults). Fails with TB_ERR_MISSING
 * (naming the package) when the data is not installed, TB_ERR_FORMAT when a file is corrupt. */
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

/* The training loss of outputs against targets SAMPLED from the model's own predictive
 * distribution (categorical over the last dimension for softmax outputs; Bernoulli or Gaussian
 * for the autoencoder), drawn from rng: its gradients give the true Fisher that curvature
 * optimizers (K-FAC, EKFAC) estimate. NULL with the tape's error set on failure (also for
 * outputs with no element or no dimension, and for a NULL rng). */
tb_var *tb_workload_fisher_loss(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_rng *rng);

typedef struct tb_eval_metrics {
    double loss;       /* mean loss */
    double accuracy;   /* for classifiers (per target token for language models); NaN for
                          the autoencoder */
    double error_rate; /* 1 - accuracy */
    int64_t examples;
    double metric;     /* the workload's target metric (info->metric) */
} tb_eval_metrics;

/* Evaluates a split in eval mode, batch by batch on tape (which is reset): all of it, or with
 * 0 < limit < its size `limit` examples spread evenly over it (the middle row of each of limit
 * equal parts), never its first rows alone (official test sets are in corpus order). */
tb_status tb_workload_evaluate(tb_workload *wl, tb_tape *tape, tb_split split, int64_t limit,
                               tb_eval_metrics *out, tb_error *err);

/* ---- examples on the host (for the input pipeline; tb_example_layout: data.h) ------------ */

tb_example_layout tb_workload_layout(const tb_workload *wl);

/* Copies examples rows[0..n) of a split into host memory: x gets n inputs, y n targets, each
 * laid out as tb_workload_layout says. Reads only immutable data: safe to call from another
 * thread while the workload trains (but not while it is destroyed). */
tb_status tb_workload_read(const tb_workload *wl, tb_split split, const int64_t *rows, int64_t n,
                           void *x, void *y, tb_error *err);
/* The dataset-wide ids of rows[0..n) of a split: equal ids are the same example (bootstrap
 * training sets repeat ids; ids of different splits never coincide except by that). */
tb_status tb_workload_example_ids(const tb_workload *wl, tb_split split, const int64_t *rows,
                                  int64_t n, int64_t *ids, tb_error *err);
/* The class of each id (stratification), or -1 for workloads without classes. */
int32_t tb_workload_example_class(const tb_workload *wl, int64_t id);
/* Puts a host batch (n examples, as tb_workload_read writes them) on tape as the inputs and
 * targets tb_workload_forward and tb_workload_loss_fn take. False with the tape's error set on
 * failure. */
bool tb_workload_upload(tb_workload *wl, tb_tape *tape, int64_t n, const void *x, const void *y,
                        tb_var **inputs, tb_var **targets);

/* ---- layers for curvature methods --------------------------------------------------------- */
/* Writes up to max of the model's linear and conv layers, in forward order, to out (out NULL:
 * none written) and returns how many the model has (0 for a NULL workload). Their
 * input/output fields refer to the latest forward pass. Embeddings, norms and attention are
 * not layers here. */
int tb_workload_layers(tb_workload *wl, tb_layer_ref *out, int max);

/* ---- the prepared-data cache (tb_prepare_report, tb_default_cache_dir: data.h) ------------ */

/* Builds the cache of the data of workload `id` in config->cache_dir from the Debian package's
 * files (config->data_dir), or checks and reuses the one there (force: rebuild anyway); config
 * NULL means the defaults and report may be NULL. A
 * corrupt or stale cache is rebuilt. Temporary files of the cache left by processes that are
 * no longer running (<cache file>.tmp.<PID>; PIDs of this machine) are removed. Workloads reading their files directly (Fashion-MNIST)
 * only check that the files are there. Fails with TB_ERR_MISSING naming the package (and how
 * to install it) when the data is not installed, TB_ERR_FORMAT naming the files when they are
 * there but cannot be read as the data (corrupt or incomplete), TB_ERR_IO when the cache
 * cannot be written or its path is not a regular file (a FIFO, a directory). */
tb_status tb_workload_prepare(const char *id, const tb_workload_config *config, bool force,
                              tb_prepare_report *report, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* workload_impl.h: how a workload plugs in (internal).
 *
 * A workload is a data source (examples with dataset-wide ids, read on the host: a
 * tb_example_source from the data layer, src/data/source.h) plus a model. workload.c
 * holds the registry and the generic parts (splits in splits.c, batches and evaluation in
 * eval.c, the input pipeline in pipeline.c). */
#ifndef TRAINBENCH_WORKLOAD_IMPL_H
#define TRAINBENCH_WORKLOAD_IMPL_H

#include "data/source.h"
#include "trainbench/workload.h"

/* How tb_workload_evaluate turns outputs into the target metric. */
typedef enum tb_metric_kind {
    TB_METRIC_ERROR_RATE = 0, /* classification error */
    TB_METRIC_LOSS = 1,       /* the mean loss itself */
    TB_METRIC_BPC = 2,        /* cross-entropy in bits: loss / ln 2 */
} tb_metric_kind;

typedef struct tb_workload_vtable {
    tb_workload_info info;
    /* Loads (or prepares) the data into wl->src, from its data source's loader. */
    tb_status (*load_data)(tb_workload *wl, const tb_workload_config *cfg, tb_error *err);
    /* Builds or checks the data cache (see tb_workload_prepare): its data source's. */
    tb_source_prepare_fn prepare;
    /* Declares the model's parameters into wl->params and keeps its layers in wl->model. */
    tb_status (*create_model)(tb_workload *wl, tb_error *err);
    tb_status (*init_model)(tb_workload *wl, tb_rng *rng, tb_error *err);
    /* the model's outputs for inputs x */
    tb_var *(*forward)(tb_workload *wl, tb_tape *tape, tb_var *x, tb_rng *dropout);
    /* the training loss; NULL: softmax cross-entropy of outputs [N, C] against labels [N] */
    tb_var *(*loss)(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_var *targets);
    /* its own loss is softmax cross-entropy against labels too (tb_workload_xent), so it takes
     * label smoothing as the default loss does */
    bool xent_loss;
    void (*destroy_model)(tb_workload *wl);
    /* targets sampled from the model's predictive distribution given outputs (for the Fisher);
     * NULL: categorical over the last dimension of softmax outputs */
    tb_var *(*sample_targets)(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_rng *rng);
    tb_metric_kind metric_kind;
    int64_t default_validation, default_test; /* split sizes (0: n_official_train / 12) */
    int eval_batch;
    const void *options; /* the variant's model options */
    bool scalable;       /* takes tb_workload_config's width_scale and depth_scale */
    /* Dropout on the hidden layers (docs/DROPOUT.md): the rate when the config sets none (0:
     * the model has no dropout and refuses a rate); dropout_random: each example's rate drawn
     * uniformly in [0, 2 * rate) (the random-rate scheme, mean = rate) instead of fixed. */
    float dropout_rate;
    bool dropout_random;
    /* Dropout as data augmentation: the forward has no dropout; instead the input pipeline
     * trains it on inputs whose first hidden layer's dropout noise at dropout_rate is
     * projected into the input space (the projection stage, projection_stage.c) */
    bool dropout_projected;
    /* The first hidden layer's output in eval mode (for the projection of its dropout noise,
     * tb_dropout_project); NULL: the model has no projection. */
    tb_var *(*hidden)(tb_workload *wl, tb_tape *tape, tb_var *x);
} tb_workload_vtable;

#define TB_WORKLOAD_MAX_LAYERS 64

struct tb_workload {
    const tb_workload_vtable *vt;
    tb_backend *be;
    tb_params *params;
    void *model;
    tb_example_source src;
    int64_t *split_ids[3]; /* ids of each split's rows */
    int64_t split_n[3];
    tb_layer_ref layers[TB_WORKLOAD_MAX_LAYERS];
    char layer_names[TB_WORKLOAD_MAX_LAYERS][48];
    int n_layers;
    int width_scale, depth_scale;     /* model size multipliers (>= 1; see tb_workload_config) */
    float dropout_rate;               /* of the hidden layers in training (0: none) */
    float label_smoothing;            /* of the training loss's cross-entropy (0: none) */
    unsigned char *stage_x, *stage_y; /* host staging of one batch */
    int64_t stage_cap;
};

/* Records a linear or conv layer of the model (during create_model). */
tb_status tb_workload_add_layer(tb_workload *wl, tb_layer_kind kind, const char *name,
                                void *layer, tb_error *err);
/* The model's dropout applied to a hidden layer h (dropout.c): identity in eval mode, at
 * rate 0 or for a projected variant, else fixed-rate or random-rate dropout as the workload
 * says, masks from rng. */
tb_var *tb_workload_dropout(tb_workload *wl, tb_tape *tape, tb_var *h, tb_rng *rng);
/* Whether the model's forward drops units in training (a rate, and not a projected variant). */
bool tb_workload_drops(const tb_workload *wl);
/* Sets wl->dropout_rate from the config (0: the workload's own), refusing a rate outside
 * [0, 1) and one for a model without dropout (dropout.c). */
tb_status tb_workload_set_dropout(tb_workload *wl, float config_rate, tb_error *err);
/* Softmax cross-entropy of logits [N, C] against labels [N], with the workload's label
 * smoothing in training mode (none in evaluation) (eval.c). */
tb_var *tb_workload_xent(tb_workload *wl, tb_tape *tape, tb_var *logits, tb_var *labels);
/* Whether the workload's training loss takes label smoothing (its loss is the default or
 * declares xent_loss). */
bool tb_workload_vt_smooths(const tb_workload_vtable *vt);
/* Draws the splits (splits.c). */
tb_status tb_workload_draw_splits(tb_workload *wl, const tb_workload_config *cfg, tb_error *err);
/* The k-th of the n rows (0 <= k < n) that evaluate a subset of n examples of a split of size
 * rows: spread evenly over it (the middle of each of n equal parts); k itself when n >= size. */
int64_t tb_eval_subset_row(int64_t size, int64_t n, int64_t k);
/* Ensures the staging buffers hold n examples. */
bool tb_workload_stage(tb_workload *wl, int64_t n);

/* torch-default (fan-in uniform) init of a linear layer's weight and bias. */
tb_status tb_init_linear_default(tb_linear_layer *l, tb_rng *rng, tb_error *err);
tb_status tb_init_conv_default(tb_conv_layer *l, tb_rng *rng, tb_error *err);

/* the registry */
extern const tb_workload_vtable tb_workload_fmnist_mlp, tb_workload_fmnist_mlp_tanh,
    tb_workload_fmnist_mlp_narrow, tb_workload_fmnist_mlp_dropout,
    tb_workload_fmnist_mlp_dropout_random, tb_workload_fmnist_mlp_projected;
extern const tb_workload_vtable tb_workload_fmnist_cnn, tb_workload_fmnist_cnn_silu,
    tb_workload_fmnist_cnn_nonorm, tb_workload_fmnist_cnn_dropout;
extern const tb_workload_vtable tb_workload_fmnist_autoencoder,
    tb_workload_fmnist_autoencoder_relu, tb_workload_fmnist_autoencoder_mse;
extern const tb_workload_vtable tb_workload_kjv_transformer, tb_workload_kjv_transformer_relu,
    tb_workload_kjv_transformer_deep;
extern const tb_workload_vtable tb_workload_wordnet_sparse, tb_workload_wordnet_sparse_wide,
    tb_workload_wordnet_sparse_tanh;
extern const tb_workload_vtable tb_workload_wordnet_sparse_sq_naive,
    tb_workload_wordnet_sparse_sq_exact, tb_workload_wordnet_sparse_sph_naive,
    tb_workload_wordnet_sparse_sph_exact, tb_workload_wordnet_sparse_sq_naive_54k,
    tb_workload_wordnet_sparse_sq_exact_54k, tb_workload_wordnet_sparse_sph_naive_54k,
    tb_workload_wordnet_sparse_sph_exact_54k, tb_workload_wordnet_sparse_sq_naive_lemma,
    tb_workload_wordnet_sparse_sq_exact_lemma, tb_workload_wordnet_sparse_sph_naive_lemma,
    tb_workload_wordnet_sparse_sph_exact_lemma; /* wordnet_sparse_exact.c */

#endif

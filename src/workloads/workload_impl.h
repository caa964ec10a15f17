/* workload_impl.h: how a workload plugs in (internal). Image classifiers share the data
 * handling in image_classifier.c and provide only their model. */
#ifndef TRAINBENCH_WORKLOAD_IMPL_H
#define TRAINBENCH_WORKLOAD_IMPL_H

#include "trainbench/data.h"
#include "trainbench/workload.h"

typedef struct tb_workload_vtable {
    tb_workload_info info;
    /* Declares the model's parameters into wl->params and keeps its layers in wl->model. */
    tb_status (*create_model)(tb_workload *wl, tb_error *err);
    tb_status (*init_model)(tb_workload *wl, tb_rng *rng, tb_error *err);
    /* logits of the batch x [N, C, H, W] */
    tb_var *(*forward)(tb_workload *wl, tb_tape *tape, tb_var *x, tb_rng *dropout);
    void (*destroy_model)(tb_workload *wl);
} tb_workload_vtable;

struct tb_workload {
    const tb_workload_vtable *vt;
    tb_backend *be;
    tb_params *params;
    void *model;
    tb_image_dataset train_all, test;
    int64_t *train_idx, *val_idx; /* indices into train_all */
    int64_t n_train, n_val;
    float *stage_x;               /* host staging of one batch */
    int32_t *stage_y;
    int64_t stage_cap;
    int64_t *rows;                /* host scratch: rows of one training batch */
    int64_t rows_cap;
};

extern const tb_workload_vtable tb_workload_fmnist_mlp;

#endif

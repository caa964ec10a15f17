/* fmnist_mlp.c: Fashion-MNIST with an MLP 784-1024-1024-10 (ReLU), torch's default init. */
#include "workloads/workload_impl.h"

#include <stdlib.h>

#define HIDDEN 1024

typedef struct mlp {
    tb_linear_layer l1, l2, l3; /* 784 -> 1024 -> 1024 -> 10 */
} mlp;

static tb_status mlp_create(tb_workload *wl, tb_error *err)
{
    mlp *m = calloc(1, sizeof *m);
    if (!m) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the MLP");
    wl->model = m;
    int64_t in = (int64_t)wl->train_all.channels * wl->train_all.height * wl->train_all.width;
    tb_status st = tb_linear_layer_init(&m->l1, wl->params, "fc1", in, HIDDEN, true, err);
    if (st == TB_OK) st = tb_linear_layer_init(&m->l2, wl->params, "fc2", HIDDEN, HIDDEN, true, err);
    if (st == TB_OK)
        st = tb_linear_layer_init(&m->l3, wl->params, "fc3", HIDDEN, wl->train_all.classes, true,
                                  err);
    return st;
}

static tb_status mlp_init(tb_workload *wl, tb_rng *rng, tb_error *err)
{
    mlp *m = wl->model;
    tb_linear_layer *layers[3] = {&m->l1, &m->l2, &m->l3};
    for (int i = 0; i < 3; i++) {
        int64_t fan_in = layers[i]->w->value.shape[1];
        tb_status st = tb_init_fan_in_uniform(layers[i]->w, fan_in, rng, err);
        if (st == TB_OK) st = tb_init_fan_in_uniform(layers[i]->b, fan_in, rng, err);
        if (st != TB_OK) return st;
    }
    return TB_OK;
}

static tb_var *mlp_forward(tb_workload *wl, tb_tape *tape, tb_var *x, tb_rng *dropout)
{
    (void)dropout;
    mlp *m = wl->model;
    int64_t flat[2] = {x ? x->value.shape[0] : 0, -1};
    tb_var *h = tb_op_reshape(tape, x, 2, flat);
    h = tb_op_relu(tape, tb_linear_layer_forward(tape, &m->l1, h));
    h = tb_op_relu(tape, tb_linear_layer_forward(tape, &m->l2, h));
    return tb_linear_layer_forward(tape, &m->l3, h);
}

static void mlp_destroy(tb_workload *wl) { free(wl->model); }

const tb_workload_vtable tb_workload_fmnist_mlp = {
    .info = {"fmnist_mlp", "Fashion-MNIST, MLP 784-1024-1024-10 with ReLU",
             "dataset-fashion-mnist", "error_rate", 128},
    .create_model = mlp_create,
    .init_model = mlp_init,
    .forward = mlp_forward,
    .destroy_model = mlp_destroy,
};

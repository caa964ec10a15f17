/* ops_norm.c: batch norm ([N, C] or [N, C, H, W], per channel) and layer norm (last dim). */
#include "nn/tape_impl.h"

/* Fails naming op and what unless v is a float32 vector of length len. */
static bool expect_vector(tb_tape *t, const char *op, const char *what, const tb_tensor *v,
                          int64_t len)
{
    char vs[96];
    if (v->dtype != TB_F32 || v->ndim != 1 || v->shape[0] != len || !v->data ||
        !tb_tensor_is_contiguous(v)) {
        tb_op_fail(t, TB_ERR_SHAPE, "%s: %s has shape %s%s; expected float32 [%lld]", op, what,
                   tb_shape_str(v, vs, sizeof vs), v->data ? "" : " (no memory)",
                   (long long)len);
        return false;
    }
    return true;
}

/* ---- batch norm -------------------------------------------------------------------------------
 * in: x, gamma, beta. Training saves the batch mean and invstd [C]; eval saves copies of the
 * running mean and variance [C] it normalised with. TB_OP_BATCHNORM_RELU (training only)
 * applies a ReLU in the same kernels. */

void tb_fwd_batchnorm(tb_tape *t, const tb_node *n)
{
    const tb_var *x = n->in[0], *gamma = n->in[1], *beta = n->in[2];
    const tb_backend_ops *k = tb_tape_ops(t);
    tb_backend *be = tb_tape_be(t);
    const tb_batchnorm_attr *a = &n->attr.batchnorm;
    float *s0 = n->saved[0], *s1 = n->saved[1];
    if (a->training) {
        k->batchnorm_fwd_train(be, a->n, a->c, a->hw, x->value.data, gamma->value.data,
                               beta->value.data, a->eps, a->momentum, a->running_mean,
                               a->running_var, n->op == TB_OP_BATCHNORM_RELU, n->out->value.data,
                               s0, s1);
        return;
    }
    k->batchnorm_fwd_eval(be, a->n, a->c, a->hw, x->value.data, gamma->value.data,
                          beta->value.data, a->eps, a->running_mean, a->running_var,
                          n->out->value.data);
    /* the statistics backward uses: as they were now, whatever happens to them later */
    k->copy(be, s0, a->running_mean, (size_t)a->c * sizeof(float));
    k->copy(be, s1, a->running_var, (size_t)a->c * sizeof(float));
}

void tb_bwd_batchnorm(tb_tape *t, const tb_node *n)
{
    tb_var *x = n->in[0], *gamma = n->in[1], *beta = n->in[2];
    const tb_backend_ops *k = tb_tape_ops(t);
    const tb_batchnorm_attr *a = &n->attr.batchnorm;
    if (a->training) {
        float *dg = tb_var_grad(t, gamma), *db = tb_var_grad(t, beta);
        bool acc;
        float *dx = tb_var_grad_for(t, x, &acc); /* the last request: the kernel runs next */
        const float *relu_beta = n->op == TB_OP_BATCHNORM_RELU ? beta->value.data : NULL;
        if (dx || dg || db)
            k->batchnorm_bwd(tb_tape_be(t), a->n, a->c, a->hw, x->value.data, gamma->value.data,
                             n->saved[0], n->saved[1], relu_beta, n->out->grad.data, dx, acc, dg,
                             db);
        return;
    }
    float *dx = tb_var_grad(t, x), *dg = tb_var_grad(t, gamma), *db = tb_var_grad(t, beta);
    if (dx || dg || db)
        k->batchnorm_bwd_eval(tb_tape_be(t), a->n, a->c, a->hw, x->value.data, gamma->value.data,
                              a->eps, n->saved[0], n->saved[1], n->out->grad.data, dx, dg, db);
}

/* Batch norm, followed in training mode by a fused ReLU when relu is set. */
static tb_var *batchnorm(tb_tape *t, tb_var *x, tb_var *gamma, tb_var *beta,
                         tb_tensor *running_mean, tb_tensor *running_var, float momentum,
                         float eps, bool relu)
{
    tb_var *ins[3] = {x, gamma, beta};
    if (!tb_op_begin(t, 3, ins)) return NULL;
    if (!tb_op_expect(t, "batchnorm", "input", x, TB_F32, 2, 4)) return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    if (!k->batchnorm_fwd_train || !k->batchnorm_fwd_eval || !k->batchnorm_bwd ||
        !k->batchnorm_bwd_eval)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "batchnorm: not implemented by the %s backend",
                          tb_tape_be(t)->name);
    char xs[96];
    tb_shape_str(&x->value, xs, sizeof xs);
    if (x->value.ndim == 3)
        return tb_op_fail(t, TB_ERR_SHAPE, "batchnorm: input %s; expected [N, C] or [N, C, H, W]",
                          xs);
    int64_t N = x->value.shape[0], C = x->value.shape[1];
    int64_t HW = x->value.ndim == 4 ? x->value.shape[2] * x->value.shape[3] : 1;
    if (N < 1 || C < 1 || HW < 1)
        return tb_op_fail(t, TB_ERR_SHAPE, "batchnorm: empty input %s", xs);
    if (!running_mean || !running_var)
        return tb_op_fail(t, TB_ERR_INVALID, "batchnorm: running mean and variance are required");
    if (!(momentum >= 0.0f && momentum <= 1.0f))
        return tb_op_fail(t, TB_ERR_INVALID, "batchnorm: momentum %g outside [0, 1]", momentum);
    if (!(eps > 0.0f))
        return tb_op_fail(t, TB_ERR_INVALID, "batchnorm: eps %g must be positive", eps);
    if (!tb_op_expect(t, "batchnorm", "gamma", gamma, TB_F32, 1, 1) ||
        !tb_op_expect(t, "batchnorm", "beta", beta, TB_F32, 1, 1) ||
        !expect_vector(t, "batchnorm", "gamma", &gamma->value, C) ||
        !expect_vector(t, "batchnorm", "beta", &beta->value, C) ||
        !expect_vector(t, "batchnorm", "running_mean", running_mean, C) ||
        !expect_vector(t, "batchnorm", "running_var", running_var, C))
        return NULL;
    bool training = tb_tape_training(t);
    if (training && N * HW < 2)
        return tb_op_fail(t, TB_ERR_SHAPE,
                          "batchnorm: input %s has one value per channel; training needs more",
                          xs);
    tb_var *y = tb_tape_output(t, TB_F32, x->value.ndim, x->value.shape, 3, ins);
    float *s0 = tb_tape_scratch(t, (size_t)C * sizeof(float));
    float *s1 = tb_tape_scratch(t, (size_t)C * sizeof(float));
    if (!y || !s0 || !s1) return NULL;
    float *rm = running_mean->data, *rv = running_var->data;
    if (training && tb_tape_freezes_running_stats(t)) { /* the kernel updates copies, dropped */
        rm = tb_tape_scratch(t, (size_t)C * sizeof(float));
        rv = tb_tape_scratch(t, (size_t)C * sizeof(float));
        if (!rm || !rv) return NULL;
        k->copy(tb_tape_be(t), rm, running_mean->data, (size_t)C * sizeof(float));
        k->copy(tb_tape_be(t), rv, running_var->data, (size_t)C * sizeof(float));
    }
    return tb_op_run(t, &(tb_node){.op = relu ? TB_OP_BATCHNORM_RELU : TB_OP_BATCHNORM,
                                   .n_in = 3, .in = {x, gamma, beta}, .out = y, .saved = {s0, s1},
                                   .attr.batchnorm = {.n = N, .c = C, .hw = HW, .eps = eps,
                                                      .momentum = momentum, .training = training,
                                                      .running_mean = rm, .running_var = rv}});
}

tb_var *tb_op_batchnorm(tb_tape *t, tb_var *x, tb_var *gamma, tb_var *beta,
                        tb_tensor *running_mean, tb_tensor *running_var, float momentum,
                        float eps)
{
    return batchnorm(t, x, gamma, beta, running_mean, running_var, momentum, eps, false);
}

tb_var *tb_op_batchnorm_act(tb_tape *t, tb_activation act, tb_var *x, tb_var *gamma,
                            tb_var *beta, tb_tensor *running_mean, tb_tensor *running_var,
                            float momentum, float eps)
{
    if (act == TB_RELU && tb_tape_training(t))
        return batchnorm(t, x, gamma, beta, running_mean, running_var, momentum, eps, true);
    return tb_op_activation(
        t, act, batchnorm(t, x, gamma, beta, running_mean, running_var, momentum, eps, false));
}

/* ---- layer norm ------------------------------------------------------------------------------
 * in: x, gamma, beta; saved: mean and rstd [rows]. */

void tb_fwd_layernorm(tb_tape *t, const tb_node *n)
{
    const tb_var *x = n->in[0], *gamma = n->in[1], *beta = n->in[2];
    tb_tape_ops(t)->layernorm_fwd(tb_tape_be(t), n->attr.layernorm.rows, n->attr.layernorm.cols,
                                  x->value.data, gamma->value.data, beta->value.data,
                                  n->attr.layernorm.eps, n->out->value.data, n->saved[0],
                                  n->saved[1]);
}

void tb_bwd_layernorm(tb_tape *t, const tb_node *n)
{
    tb_var *x = n->in[0], *gamma = n->in[1], *beta = n->in[2];
    float *dg = tb_var_grad(t, gamma), *db = tb_var_grad(t, beta);
    bool acc;
    float *dx = tb_var_grad_for(t, x, &acc); /* the last request: the kernel runs next */
    if (!dx && !dg && !db) return;
    tb_tape_ops(t)->layernorm_bwd(tb_tape_be(t), n->attr.layernorm.rows, n->attr.layernorm.cols,
                                  x->value.data, gamma->value.data, n->saved[0], n->saved[1],
                                  n->out->grad.data, dx, acc, dg, db);
}

tb_var *tb_op_layernorm(tb_tape *t, tb_var *x, tb_var *gamma, tb_var *beta, float eps)
{
    tb_var *ins[3] = {x, gamma, beta};
    if (!tb_op_begin(t, 3, ins)) return NULL;
    if (!tb_op_expect(t, "layernorm", "input", x, TB_F32, 1, TB_MAX_DIMS)) return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    if (!k->layernorm_fwd || !k->layernorm_bwd)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "layernorm: not implemented by the %s backend",
                          tb_tape_be(t)->name);
    int64_t cols = x->value.shape[x->value.ndim - 1];
    int64_t numel = tb_tensor_numel(&x->value);
    if (cols < 1 || numel < 1) {
        char xs[96];
        return tb_op_fail(t, TB_ERR_SHAPE, "layernorm: empty input %s",
                          tb_shape_str(&x->value, xs, sizeof xs));
    }
    if (!(eps > 0.0f))
        return tb_op_fail(t, TB_ERR_INVALID, "layernorm: eps %g must be positive", eps);
    if (!tb_op_expect(t, "layernorm", "gamma", gamma, TB_F32, 1, 1) ||
        !tb_op_expect(t, "layernorm", "beta", beta, TB_F32, 1, 1) ||
        !expect_vector(t, "layernorm", "gamma", &gamma->value, cols) ||
        !expect_vector(t, "layernorm", "beta", &beta->value, cols))
        return NULL;
    int64_t rows = numel / cols;
    tb_var *y = tb_tape_output(t, TB_F32, x->value.ndim, x->value.shape, 3, ins);
    float *mean = tb_tape_scratch(t, (size_t)rows * sizeof(float));
    float *rstd = tb_tape_scratch(t, (size_t)rows * sizeof(float));
    if (!y || !mean || !rstd) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_LAYERNORM, .n_in = 3, .in = {x, gamma, beta},
                                   .out = y, .saved = {mean, rstd},
                                   .attr.layernorm = {.rows = rows, .cols = cols, .eps = eps}});
}

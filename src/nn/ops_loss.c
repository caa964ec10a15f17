/* ops_loss.c: softmax cross-entropy, mean squared error, sigmoid BCE, dropout. */
#include "nn/tape_impl.h"

#include <math.h>

static tb_var *scalar_output(tb_tape *t, int n_in, tb_var *const *ins)
{
    return tb_tape_output(t, TB_F32, 0, NULL, n_in, ins);
}

/* ---- softmax cross-entropy ------------------------------------------------------------------ */

/* in: logits, labels; saved: each row's max logit and 1 / sum exp (the backend recomputes the
 * probabilities from them and the logits) */
void tb_fwd_softmax_xent(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->softmax_xent_fwd(tb_tape_be(t), (int)n->attr.xent.rows,
                                     (int)n->attr.xent.classes, n->in[0]->value.data,
                                     n->in[1]->value.data, n->attr.xent.smoothing, n->saved[0],
                                     n->out->value.data);
}

void tb_bwd_softmax_xent(tb_tape *t, const tb_node *n)
{
    bool acc;
    float *dz = tb_var_grad_for(t, n->in[0], &acc);
    if (!dz) return;
    tb_tape_ops(t)->softmax_xent_bwd(tb_tape_be(t), (int)n->attr.xent.rows,
                                     (int)n->attr.xent.classes, n->in[0]->value.data,
                                     n->saved[0], n->in[1]->value.data, n->attr.xent.smoothing,
                                     n->out->grad.data, dz, acc);
}

tb_var *tb_op_softmax_xent(tb_tape *t, tb_var *logits, tb_var *labels, float smoothing)
{
    tb_var *ins[2] = {logits, labels};
    if (!tb_op_begin(t, 2, ins)) return NULL;
    if (!tb_op_expect(t, "softmax_xent", "logits", logits, TB_F32, 2, 2) ||
        !tb_op_expect(t, "softmax_xent", "labels", labels, TB_I32, 1, 1))
        return NULL;
    int64_t n = logits->value.shape[0], c = logits->value.shape[1];
    if (labels->value.shape[0] != n)
        return tb_op_fail(t, TB_ERR_SHAPE, "softmax_xent: %lld logits rows but %lld labels",
                          (long long)n, (long long)labels->value.shape[0]);
    if (!(smoothing >= 0.0f && smoothing < 1.0f))
        return tb_op_fail(t, TB_ERR_INVALID,
                          "softmax_xent: label smoothing %g outside [0, 1)", smoothing);
    if (n == 0 || c == 0) return tb_op_fail(t, TB_ERR_SHAPE, "softmax_xent: empty logits");
    /* the kernels index each row at its label: one outside [0, C) would read and write past it */
    if (!tb_op_check_indices(t, "softmax_xent", "label", labels, c)) return NULL;
    tb_var *loss = scalar_output(t, 2, ins);
    float *stats = tb_tape_scratch(t, (size_t)(n * 2) * sizeof(float));
    if (!loss || !stats) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_SOFTMAX_XENT, .n_in = 2, .in = {logits, labels},
                                   .out = loss, .saved = {stats},
                                   .attr.xent = {.rows = n, .classes = c,
                                                 .smoothing = smoothing}});
}

/* ---- element-wise losses against a target of the same shape --------------------------------- */

static bool same_shape(tb_tape *t, const char *op, tb_var *a, tb_var *b)
{
    if (!tb_op_expect(t, op, "prediction", a, TB_F32, 0, TB_MAX_DIMS) ||
        !tb_op_expect(t, op, "target", b, TB_F32, 0, TB_MAX_DIMS))
        return false;
    if (!tb_tensor_same_shape(&a->value, &b->value)) {
        char as[96], bs[96];
        tb_op_fail(t, TB_ERR_SHAPE, "%s: prediction %s and target %s differ", op,
                   tb_shape_str(&a->value, as, sizeof as), tb_shape_str(&b->value, bs, sizeof bs));
        return false;
    }
    if (tb_tensor_numel(&a->value) == 0) { /* a mean over no element, as softmax_xent's */
        char as[96];
        tb_op_fail(t, TB_ERR_SHAPE, "%s: empty prediction %s", op,
                   tb_shape_str(&a->value, as, sizeof as));
        return false;
    }
    return true;
}

void tb_fwd_mse(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->mse_fwd(tb_tape_be(t), tb_tensor_numel(&n->in[0]->value),
                            n->in[0]->value.data, n->in[1]->value.data, n->out->value.data);
}

void tb_bwd_mse(tb_tape *t, const tb_node *n)
{
    int64_t numel = tb_tensor_numel(&n->in[0]->value);
    const float *p = n->in[0]->value.data, *y = n->in[1]->value.data;
    float *dp = tb_var_grad(t, n->in[0]);
    if (dp) tb_tape_ops(t)->mse_bwd(tb_tape_be(t), numel, p, y, n->out->grad.data, dp);
    float *dy = tb_var_grad(t, n->in[1]);
    if (dy) /* symmetric: d/dy = -d/dp */
        tb_tape_ops(t)->mse_bwd(tb_tape_be(t), numel, y, p, n->out->grad.data, dy);
}

tb_var *tb_op_mse(tb_tape *t, tb_var *pred, tb_var *target)
{
    tb_var *ins[2] = {pred, target};
    if (!tb_op_begin(t, 2, ins) || !same_shape(t, "mse", pred, target)) return NULL;
    tb_var *loss = scalar_output(t, 2, ins);
    if (!loss) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_MSE, .n_in = 2, .in = {pred, target}, .out = loss});
}

void tb_fwd_sigmoid_bce(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->bce_fwd(tb_tape_be(t), tb_tensor_numel(&n->in[0]->value),
                            n->in[0]->value.data, n->in[1]->value.data, n->out->value.data);
}

void tb_bwd_sigmoid_bce(tb_tape *t, const tb_node *n)
{
    float *dz = tb_var_grad(t, n->in[0]);
    if (dz)
        tb_tape_ops(t)->bce_bwd(tb_tape_be(t), tb_tensor_numel(&n->in[0]->value),
                                n->in[0]->value.data, n->in[1]->value.data, n->out->grad.data,
                                dz);
}

/* Fails naming the first target outside [0, 1] (or NaN) and its position, when the targets
 * are in host memory (the CPU backend). A device backend's are not read back: its kernel
 * makes the loss NaN instead. */
static bool check_targets(tb_tape *t, const tb_var *target)
{
    if (tb_backend_device(tb_tape_be(t)) != TB_DEVICE_CPU) return true;
    const float *y = target->value.data;
    int64_t n = tb_tensor_numel(&target->value);
    for (int64_t i = 0; i < n; i++)
        if (!(y[i] >= 0.0f && y[i] <= 1.0f)) {
            char pos[128];
            tb_format_position(&target->value, i, pos, sizeof pos);
            tb_op_fail(t, TB_ERR_INVALID, "sigmoid_bce: target %g at position %s is outside [0, 1]",
                       (double)y[i], pos);
            return false;
        }
    return true;
}

tb_var *tb_op_sigmoid_bce(tb_tape *t, tb_var *logits, tb_var *target)
{
    tb_var *ins[2] = {logits, target};
    if (!tb_op_begin(t, 2, ins) || !same_shape(t, "sigmoid_bce", logits, target) ||
        !check_targets(t, target))
        return NULL;
    /* the target is data, not a function of parameters: its gradient is not computed */
    tb_var *loss = scalar_output(t, 1, ins);
    if (!loss) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_SIGMOID_BCE, .n_in = 2, .in = {logits, target},
                                   .out = loss});
}

/* ---- dropout ---------------------------------------------------------------------------------- */

/* saved: the mask (0 or 1 / (1 - p) per element) */
void tb_fwd_dropout(tb_tape *t, const tb_node *n)
{
    /* the kernel advances rng->counter past the blocks it draws (on CUDA graphs, on the device) */
    tb_rng *rng = n->attr.dropout.rng;
    tb_tape_ops(t)->dropout_fwd(tb_tape_be(t), tb_tensor_numel(&n->out->value),
                                n->attr.dropout.p, rng->key, &rng->counter, n->in[0]->value.data,
                                n->out->value.data, n->saved[0]);
}

void tb_bwd_dropout(tb_tape *t, const tb_node *n)
{
    float *dx = tb_var_grad(t, n->in[0]);
    if (dx)
        tb_tape_ops(t)->dropout_bwd(tb_tape_be(t), tb_tensor_numel(&n->out->value), n->saved[0],
                                    n->out->grad.data, dx);
}

tb_var *tb_op_dropout(tb_tape *t, tb_var *x, float p, tb_rng *rng)
{
    if (!tb_op_begin(t, 1, &x)) return NULL;
    if (!tb_op_expect(t, "dropout", "input", x, TB_F32, 0, TB_MAX_DIMS)) return NULL;
    if (!(p >= 0.0f && p < 1.0f))
        return tb_op_fail(t, TB_ERR_INVALID, "dropout: rate %g outside [0, 1)", p);
    if (!rng) return tb_op_fail(t, TB_ERR_INVALID, "dropout: no random stream given");
    if (!tb_tape_training(t) || p == 0.0f) return x;
    int64_t numel = tb_tensor_numel(&x->value);
    tb_var *y = tb_tape_output(t, TB_F32, x->value.ndim, x->value.shape, 1, &x);
    float *mask = tb_tape_scratch(t, (size_t)numel * sizeof(float));
    if (!y || !mask) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_DROPOUT, .n_in = 1, .in = {x}, .out = y,
                                   .saved = {mask}, .attr.dropout = {.p = p, .rng = rng}});
}

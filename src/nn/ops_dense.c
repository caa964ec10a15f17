/* ops_dense.c: batched matmul, activations, residual add, scale, reshape, transpose, concat
 * (linear layers and the fused MLP are in ops_linear.c). */
#include "nn/tape_impl.h"

#include <string.h>

/* ---- matmul: c [B, M, N] = a [B, M, K] b [B, K, N] (or b^T) --------------------------------- */

void tb_fwd_matmul(tb_tape *t, const tb_node *n)
{
    const int64_t M = n->attr.matmul.m, K = n->attr.matmul.k, N = n->attr.matmul.n;
    const bool trans_b = n->attr.matmul.trans_b;
    tb_tape_ops(t)->gemm_batched(tb_tape_be(t), false, trans_b, (int)M, (int)N, (int)K, 1.0f,
                                 n->in[0]->value.data, (int)K, M * K, n->in[1]->value.data,
                                 trans_b ? (int)K : (int)N, K * N, 0.0f, n->out->value.data,
                                 (int)N, M * N, (int)n->attr.matmul.batch);
}

void tb_bwd_matmul(tb_tape *t, const tb_node *n)
{
    const tb_backend_ops *k = tb_tape_ops(t);
    tb_backend *be = tb_tape_be(t);
    tb_var *a = n->in[0], *b = n->in[1];
    int batch = (int)n->attr.matmul.batch, M = (int)n->attr.matmul.m, K = (int)n->attr.matmul.k,
        N = (int)n->attr.matmul.n;
    bool tb = n->attr.matmul.trans_b;
    const float *dc = n->out->grad.data;
    float *da = tb_var_grad(t, a), *db = tb_var_grad(t, b);
    int ldb = tb ? K : N;
    /* da = dc op(b)^T */
    if (da)
        k->gemm_batched(be, false, !tb, M, K, N, 1.0f, dc, N, (int64_t)M * N, b->value.data,
                        ldb, (int64_t)K * N, 1.0f, da, K, (int64_t)M * K, batch);
    if (db) {
        if (tb) /* b is [N, K]: db = dc^T a */
            k->gemm_batched(be, true, false, N, K, M, 1.0f, dc, N, (int64_t)M * N,
                            a->value.data, K, (int64_t)M * K, 1.0f, db, K, (int64_t)K * N,
                            batch);
        else /* b is [K, N]: db = a^T dc */
            k->gemm_batched(be, true, false, K, N, M, 1.0f, a->value.data, K, (int64_t)M * K,
                            dc, N, (int64_t)M * N, 1.0f, db, N, (int64_t)K * N, batch);
    }
}

tb_var *tb_op_matmul(tb_tape *t, tb_var *a, tb_var *b, bool trans_b)
{
    tb_var *ins[2] = {a, b};
    if (!tb_op_begin(t, 2, ins)) return NULL;
    if (!tb_op_expect(t, "matmul", "a", a, TB_F32, 2, TB_MAX_DIMS) ||
        !tb_op_expect(t, "matmul", "b", b, TB_F32, 2, TB_MAX_DIMS))
        return NULL;
    const tb_tensor *A = &a->value, *B = &b->value;
    char as[96], bs[96];
    if (A->ndim != B->ndim)
        return tb_op_fail(t, TB_ERR_SHAPE, "matmul: %s and %s differ in rank",
                          tb_shape_str(A, as, sizeof as), tb_shape_str(B, bs, sizeof bs));
    int nd = A->ndim;
    int64_t batch = 1;
    for (int d = 0; d < nd - 2; d++) {
        if (A->shape[d] != B->shape[d])
            return tb_op_fail(t, TB_ERR_SHAPE, "matmul: batch dimensions of %s and %s differ",
                              tb_shape_str(A, as, sizeof as), tb_shape_str(B, bs, sizeof bs));
        batch *= A->shape[d];
    }
    int64_t M = A->shape[nd - 2], K = A->shape[nd - 1];
    int64_t Kb = trans_b ? B->shape[nd - 1] : B->shape[nd - 2];
    int64_t N = trans_b ? B->shape[nd - 2] : B->shape[nd - 1];
    if (K != Kb)
        return tb_op_fail(t, TB_ERR_SHAPE, "matmul: inner dimensions of %s and %s%s differ",
                          tb_shape_str(A, as, sizeof as), tb_shape_str(B, bs, sizeof bs),
                          trans_b ? " (transposed)" : "");
    int64_t shape[TB_MAX_DIMS];
    memcpy(shape, A->shape, sizeof shape);
    shape[nd - 1] = N;
    tb_var *c = tb_tape_output(t, TB_F32, nd, shape, 2, ins);
    if (!c) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_MATMUL, .n_in = 2, .in = {a, b}, .out = c,
                                   .attr.matmul = {.batch = batch, .m = M, .k = K, .n = N,
                                                   .trans_b = trans_b}});
}

/* ---- activations ----------------------------------------------------------------------------- */

/* An activation is the op TB_OP_RELU + act, named by the op table. */
#define N_ACTIVATIONS (TB_OP_SIGMOID - TB_OP_RELU + 1)

const char *tb_activation_name(tb_activation act)
{
    return (unsigned)act < N_ACTIVATIONS ? tb_op_table[TB_OP_RELU + act].name : "unknown";
}

tb_status tb_activation_parse(const char *name, tb_activation *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "activation_parse: %s is NULL", name ? "out" : "name");
    for (int i = 0; i < N_ACTIVATIONS; i++)
        if (strcmp(name, tb_op_table[TB_OP_RELU + i].name) == 0) {
            *out = (tb_activation)i;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID,
                   "unknown activation '%s' (expected relu, gelu, silu, tanh or sigmoid)", name);
}

void tb_fwd_act(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->act_fwd(tb_tape_be(t), n->attr.act.kind, tb_tensor_numel(&n->out->value),
                            n->in[0]->value.data, n->out->value.data);
}

void tb_bwd_act(tb_tape *t, const tb_node *n)
{
    bool acc;
    float *dx = tb_var_grad_for(t, n->in[0], &acc);
    if (!dx) return;
    tb_tape_ops(t)->act_bwd(tb_tape_be(t), n->attr.act.kind, tb_tensor_numel(&n->out->value),
                            n->in[0]->value.data, n->out->value.data, n->out->grad.data, dx,
                            acc);
}

tb_var *tb_op_activation(tb_tape *t, tb_activation act, tb_var *x)
{
    if (!tb_op_begin(t, 1, &x)) return NULL;
    if (!tb_op_expect(t, tb_activation_name(act), "input", x, TB_F32, 0, TB_MAX_DIMS))
        return NULL;
    if ((unsigned)act >= TB_ACT_COUNT)
        return tb_op_fail(t, TB_ERR_INVALID, "unknown activation %d", (int)act);
    tb_var *y = tb_tape_output(t, TB_F32, x->value.ndim, x->value.shape, 1, &x);
    if (!y) return NULL;
    return tb_op_run(t, &(tb_node){.op = (tb_op)(TB_OP_RELU + act), .n_in = 1, .in = {x},
                                   .out = y, .attr.act.kind = (tb_act)act});
}

tb_var *tb_op_relu(tb_tape *t, tb_var *x) { return tb_op_activation(t, TB_RELU, x); }
tb_var *tb_op_gelu(tb_tape *t, tb_var *x) { return tb_op_activation(t, TB_GELU, x); }
tb_var *tb_op_silu(tb_tape *t, tb_var *x) { return tb_op_activation(t, TB_SILU, x); }
tb_var *tb_op_tanh(tb_tape *t, tb_var *x) { return tb_op_activation(t, TB_TANH, x); }
tb_var *tb_op_sigmoid(tb_tape *t, tb_var *x) { return tb_op_activation(t, TB_SIGMOID, x); }

/* ---- residual add ---------------------------------------------------------------------------- */

/* dy flows to both inputs unchanged: at most one of them takes over dy's buffer. */
void tb_fwd_add(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->add(tb_tape_be(t), tb_tensor_numel(&n->out->value), n->in[0]->value.data,
                        n->in[1]->value.data, n->out->value.data);
}

void tb_bwd_add(tb_tape *t, const tb_node *n)
{
    bool adopted = tb_var_grad_pass(t, n->in[0], n->out, true);
    tb_var_grad_pass(t, n->in[1], n->out, !adopted);
}

tb_var *tb_op_add(tb_tape *t, tb_var *a, tb_var *b)
{
    tb_var *ins[2] = {a, b};
    if (!tb_op_begin(t, 2, ins)) return NULL;
    if (!tb_op_expect(t, "add", "a", a, TB_F32, 0, TB_MAX_DIMS) ||
        !tb_op_expect(t, "add", "b", b, TB_F32, 0, TB_MAX_DIMS))
        return NULL;
    char as[96], bs[96];
    if (!tb_tensor_same_shape(&a->value, &b->value))
        return tb_op_fail(t, TB_ERR_SHAPE, "add: shapes %s and %s differ",
                          tb_shape_str(&a->value, as, sizeof as),
                          tb_shape_str(&b->value, bs, sizeof bs));
    tb_var *y = tb_tape_output(t, TB_F32, a->value.ndim, a->value.shape, 2, ins);
    if (!y) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_ADD, .n_in = 2, .in = {a, b}, .out = y});
}

/* ---- scale by a constant ---------------------------------------------------------------------- */

void tb_fwd_scale(tb_tape *t, const tb_node *n)
{
    int64_t numel = tb_tensor_numel(&n->out->value);
    const tb_backend_ops *k = tb_tape_ops(t);
    float *y = n->out->value.data;
    k->copy(tb_tape_be(t), y, n->in[0]->value.data, (size_t)numel * sizeof(float));
    k->scale(tb_tape_be(t), y, numel, n->attr.scale.a);
}

void tb_bwd_scale(tb_tape *t, const tb_node *n)
{
    float *dx = tb_var_grad(t, n->in[0]);
    if (dx)
        tb_tape_ops(t)->axpy(tb_tape_be(t), tb_tensor_numel(&n->out->value), n->attr.scale.a,
                             n->out->grad.data, dx);
}

tb_var *tb_op_scale(tb_tape *t, tb_var *x, float a)
{
    if (!tb_op_begin(t, 1, &x)) return NULL;
    if (!tb_op_expect(t, "scale", "input", x, TB_F32, 0, TB_MAX_DIMS)) return NULL;
    tb_var *y = tb_tape_output(t, TB_F32, x->value.ndim, x->value.shape, 1, &x);
    if (!y) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_SCALE, .n_in = 1, .in = {x}, .out = y,
                                   .attr.scale.a = a});
}

/* ---- reshape (a view: shares value memory; its gradient is the input's, viewed) ------------- */

void tb_bwd_reshape(tb_tape *t, const tb_node *n)
{
    if (tb_var_grad_adopt(t, n->in[0], n->out)) return;
    float *dx = tb_var_grad(t, n->in[0]);
    if (dx)
        tb_tape_ops(t)->axpy(tb_tape_be(t), tb_tensor_numel(&n->out->value), 1.0f,
                             n->out->grad.data, dx);
}

tb_var *tb_op_reshape(tb_tape *t, tb_var *x, int ndim, const int64_t *shape)
{
    if (!tb_op_begin(t, 1, &x) || !tb_op_expect_memory(t, "reshape", "input", x)) return NULL;
    if (!tb_tensor_is_contiguous(&x->value)) {
        /* materialise first: transpose(x, 0, 0) is a contiguous copy */
        tb_var *c = tb_op_transpose(t, x, 0, 0);
        if (!c) return NULL;
        x = c;
    }
    tb_tensor view;
    tb_error err = {0};
    if (tb_tensor_reshape(&x->value, ndim, shape, &view, &err) != TB_OK)
        return tb_op_fail(t, err.status, "%s", err.message);
    tb_var *y = tb_tape_output(t, x->value.dtype, 0, NULL, 1, &x);
    if (!y) return NULL;
    y->value = view; /* share memory: no copy */
    y->grad = view;
    y->grad.data = NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_RESHAPE, .n_in = 1, .in = {x}, .out = y});
}

/* ---- transpose (materialised; transpose(x, d, d) is a contiguous copy) ---------------------- */

void tb_fwd_transpose(tb_tape *t, const tb_node *n)
{
    /* y (contiguous) = x read with its strides d0 and d1 swapped */
    const tb_tensor *x = &n->in[0]->value, *y = &n->out->value;
    int d0 = n->attr.transpose.d0, d1 = n->attr.transpose.d1;
    int64_t src_stride[TB_MAX_DIMS];
    memcpy(src_stride, x->stride, sizeof src_stride);
    src_stride[d0] = x->stride[d1];
    src_stride[d1] = x->stride[d0];
    tb_tape_ops(t)->strided_copy(tb_tape_be(t), y->ndim, y->shape, y->data, y->stride, x->data,
                                 src_stride, false);
}

void tb_bwd_transpose(tb_tape *t, const tb_node *n)
{
    float *dx = tb_var_grad(t, n->in[0]);
    if (!dx) return;
    /* dx (its own contiguous strides, whatever x's are, with d0/d1 swapped) += dy */
    const tb_tensor *y = &n->out->value;
    const tb_tensor gx = n->in[0]->grad;
    int d0 = n->attr.transpose.d0, d1 = n->attr.transpose.d1;
    int64_t dst_stride[TB_MAX_DIMS];
    memcpy(dst_stride, gx.stride, sizeof dst_stride);
    dst_stride[d0] = gx.stride[d1];
    dst_stride[d1] = gx.stride[d0];
    tb_tape_ops(t)->strided_copy(tb_tape_be(t), y->ndim, y->shape, dx, dst_stride,
                                 n->out->grad.data, y->stride, true);
}

tb_var *tb_op_transpose(tb_tape *t, tb_var *x, int d0, int d1)
{
    if (!tb_op_begin(t, 1, &x) || !tb_op_expect_memory(t, "transpose", "input", x)) return NULL;
    if (x->value.dtype != TB_F32)
        return tb_op_fail(t, TB_ERR_INVALID, "transpose: only float32 tensors");
    tb_tensor view;
    tb_error err = {0};
    if (tb_tensor_transpose(&x->value, d0, d1, &view, &err) != TB_OK)
        return tb_op_fail(t, err.status, "%s", err.message);
    tb_var *y = tb_tape_output(t, TB_F32, view.ndim, view.shape, 1, &x);
    if (!y) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_TRANSPOSE, .n_in = 1, .in = {x}, .out = y,
                                   .attr.transpose = {.d0 = d0, .d1 = d1}});
}

/* ---- concat ----------------------------------------------------------------------------------- */

void tb_fwd_concat(tb_tape *t, const tb_node *n)
{
    int dim = n->attr.concat.dim;
    int64_t start = 0;
    for (int i = 0; i < n->n_in; i++) {
        const tb_tensor *x = &n->in[i]->value;
        tb_tensor part;
        tb_tensor_narrow(&n->out->value, dim, start, x->shape[dim], &part, NULL);
        tb_tape_ops(t)->strided_copy(tb_tape_be(t), part.ndim, part.shape, part.data,
                                     part.stride, x->data, x->stride, false);
        start += x->shape[dim];
    }
}

void tb_bwd_concat(tb_tape *t, const tb_node *n)
{
    int dim = n->attr.concat.dim;
    const tb_tensor *y = &n->out->value;
    tb_tensor gy = *y;
    gy.data = n->out->grad.data;
    int64_t start = 0;
    for (int i = 0; i < n->n_in; i++) {
        tb_var *x = n->in[i];
        int64_t len = x->value.shape[dim];
        float *dx = tb_var_grad(t, x);
        if (dx) {
            tb_tensor part;
            tb_tensor_narrow(&gy, dim, start, len, &part, NULL);
            tb_tape_ops(t)->strided_copy(tb_tape_be(t), part.ndim, part.shape, dx,
                                         x->grad.stride, part.data, part.stride, true);
        }
        start += len;
    }
}

tb_var *tb_op_concat(tb_tape *t, tb_var *const *xs, int n_in, int dim)
{
    if (!xs) return tb_op_fail(t, TB_ERR_INVALID, "concat: xs is NULL");
    _Static_assert(TB_CONCAT_MAX_INPUTS <= TB_NODE_MAX_IN, "a node records concat's inputs");
    if (n_in < 1 || n_in > TB_CONCAT_MAX_INPUTS)
        return tb_op_fail(t, TB_ERR_INVALID,
                          "concat: %d inputs (from 1 to TB_CONCAT_MAX_INPUTS = %d)", n_in,
                          TB_CONCAT_MAX_INPUTS);
    if (!tb_op_begin(t, n_in, xs)) return NULL;
    const tb_tensor *first = &xs[0]->value;
    if (dim < 0 || dim >= first->ndim)
        return tb_op_fail(t, TB_ERR_SHAPE, "concat: dimension %d of a %d-d tensor", dim,
                          first->ndim);
    int64_t shape[TB_MAX_DIMS];
    memcpy(shape, first->shape, sizeof shape);
    shape[dim] = 0;
    for (int i = 0; i < n_in; i++) {
        if (!tb_op_expect(t, "concat", "input", xs[i], TB_F32, first->ndim, first->ndim))
            return NULL;
        for (int d = 0; d < first->ndim; d++)
            if (d != dim && xs[i]->value.shape[d] != first->shape[d]) {
                char a[96], b[96];
                return tb_op_fail(t, TB_ERR_SHAPE, "concat: %s and %s differ outside dim %d",
                                  tb_shape_str(first, a, sizeof a),
                                  tb_shape_str(&xs[i]->value, b, sizeof b), dim);
            }
        shape[dim] += xs[i]->value.shape[dim];
    }
    tb_var *y = tb_tape_output(t, TB_F32, first->ndim, shape, n_in, xs);
    if (!y) return NULL;
    tb_node n = {.op = TB_OP_CONCAT, .n_in = n_in, .out = y, .attr.concat.dim = dim};
    memcpy(n.in, xs, (size_t)n_in * sizeof *xs);
    return tb_op_run(t, &n);
}

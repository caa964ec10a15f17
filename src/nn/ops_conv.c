/* ops_conv.c: 2-D convolution, max and average pooling, global average pooling (NCHW). */
#include "nn/tape_impl.h"

#include <limits.h>

/* Output extent of a window of k with stride and pad over n; 0 if the window does not fit. */
static int64_t out_extent(int64_t n, int k, int stride, int pad)
{
    int64_t span = n + 2 * (int64_t)pad - k;
    return span < 0 ? 0 : span / stride + 1;
}

/* True if every dimension of x fits the kernels' int sizes. */
static bool dims_fit_int(const tb_tensor *x)
{
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] > INT_MAX / 4) return false;
    return true;
}

/* ---- conv2d: y [N, Cout, Ho, Wo] = x [N, Cin, H, W] * w [Cout, Cin, kh, kw] + b -------------- */

static tb_conv_shape conv_shape_of(const tb_tensor *x, const tb_tensor *w, int stride, int pad)
{
    tb_conv_shape s = {
        .n = (int)x->shape[0], .c_in = (int)x->shape[1], .h = (int)x->shape[2],
        .w = (int)x->shape[3], .c_out = (int)w->shape[0], .kh = (int)w->shape[2],
        .kw = (int)w->shape[3], .stride = stride, .pad = pad,
    };
    s.h_out = (int)out_extent(s.h, s.kh, stride, pad);
    s.w_out = (int)out_extent(s.w, s.kw, stride, pad);
    return s;
}

/* in: x, w, b or NULL; saved: the kernels' workspace */
void tb_fwd_conv2d(tb_tape *t, const tb_node *n)
{
    const tb_var *b = n->in[2];
    tb_tape_ops(t)->conv2d_fwd(tb_tape_be(t), &n->attr.conv, n->in[0]->value.data,
                               n->in[1]->value.data, b ? b->value.data : NULL,
                               n->out->value.data, n->saved[0]);
}

void tb_bwd_conv2d(tb_tape *t, const tb_node *n)
{
    tb_var *x = n->in[0], *w = n->in[1], *b = n->in[2];
    float *dw = tb_var_grad(t, w), *db = tb_var_grad(t, b);
    bool acc;
    float *dx = tb_var_grad_for(t, x, &acc); /* the last request: the kernel runs next */
    if (!dx && !dw && !db) return;
    /* the forward pass's workspace is reused: it is step memory and no longer needed there */
    tb_tape_ops(t)->conv2d_bwd(tb_tape_be(t), &n->attr.conv, x->value.data, w->value.data,
                               n->out->grad.data, dx, acc, dw, db, n->saved[0]);
}

tb_var *tb_op_conv2d(tb_tape *t, tb_var *x, tb_var *w, tb_var *b, int stride, int pad)
{
    tb_var *ins[3] = {x, w, b};
    if (!tb_op_begin(t, 2, ins)) return NULL;
    if (!tb_op_expect(t, "conv2d", "input", x, TB_F32, 4, 4) ||
        !tb_op_expect(t, "conv2d", "weight", w, TB_F32, 4, 4))
        return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    if (!k->conv2d_fwd || !k->conv2d_bwd || !k->conv2d_workspace)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "conv2d: not implemented by the %s backend",
                          tb_tape_be(t)->name);
    char xs[96], ws[96];
    tb_shape_str(&x->value, xs, sizeof xs);
    tb_shape_str(&w->value, ws, sizeof ws);
    if (stride < 1 || pad < 0)
        return tb_op_fail(t, TB_ERR_INVALID,
                          "conv2d: stride %d and pad %d (need stride >= 1, pad >= 0)", stride,
                          pad);
    if (x->value.shape[1] != w->value.shape[1])
        return tb_op_fail(t, TB_ERR_SHAPE,
                          "conv2d: input %s has %lld channels but weight %s expects %lld", xs,
                          (long long)x->value.shape[1], ws, (long long)w->value.shape[1]);
    if (w->value.shape[0] < 1 || w->value.shape[2] < 1 || w->value.shape[3] < 1 ||
        x->value.shape[0] < 1 || x->value.shape[1] < 1)
        return tb_op_fail(t, TB_ERR_SHAPE, "conv2d: empty input %s or weight %s", xs, ws);
    if (!dims_fit_int(&x->value) || !dims_fit_int(&w->value) || pad > INT_MAX / 4)
        return tb_op_fail(t, TB_ERR_SHAPE, "conv2d: input %s or weight %s too large", xs, ws);
    if (b && (!tb_op_expect(t, "conv2d", "bias", b, TB_F32, 1, 1) ||
              b->value.shape[0] != w->value.shape[0])) {
        if (tb_tape_status(t) != TB_OK) return NULL;
        char bs[96];
        return tb_op_fail(t, TB_ERR_SHAPE, "conv2d: bias %s does not match weight %s (want [%lld])",
                          tb_shape_str(&b->value, bs, sizeof bs), ws,
                          (long long)w->value.shape[0]);
    }
    tb_conv_shape s = conv_shape_of(&x->value, &w->value, stride, pad);
    if (s.h_out < 1 || s.w_out < 1)
        return tb_op_fail(t, TB_ERR_SHAPE,
                          "conv2d: kernel %dx%d with pad %d does not fit input %s", s.kh, s.kw,
                          pad, xs);
    if ((int64_t)s.c_in * s.kh * s.kw > INT_MAX || (int64_t)s.h_out * s.w_out > INT_MAX)
        return tb_op_fail(t, TB_ERR_SHAPE, "conv2d: input %s or weight %s too large", xs, ws);
    int n_in = b ? 3 : 2;
    int64_t shape[4] = {s.n, s.c_out, s.h_out, s.w_out};
    tb_var *y = tb_tape_output(t, TB_F32, 4, shape, n_in, ins);
    if (!y) return NULL;
    size_t ws_bytes = k->conv2d_workspace(tb_tape_be(t), &s);
    void *work = tb_tape_scratch(t, ws_bytes ? ws_bytes : 1);
    if (!work) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_CONV2D, .n_in = n_in, .in = {x, w, b}, .out = y,
                                   .saved = {work}, .attr.conv = s});
}

/* ---- pooling --------------------------------------------------------------------------------- */

static tb_pool_shape pool_shape_of(const tb_tensor *x, int kernel, int stride, int pad)
{
    tb_pool_shape s = {
        .n = (int)x->shape[0], .c = (int)x->shape[1], .h = (int)x->shape[2],
        .w = (int)x->shape[3], .kh = kernel, .kw = kernel, .stride = stride, .pad = pad,
    };
    s.h_out = (int)out_extent(s.h, kernel, stride, pad);
    s.w_out = (int)out_extent(s.w, kernel, stride, pad);
    return s;
}

/* saved: the argmax of each output (into the window's input) */
void tb_fwd_maxpool2d(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->maxpool2d_fwd(tb_tape_be(t), &n->attr.pool, n->in[0]->value.data,
                                  n->out->value.data, n->saved[0]);
}

void tb_bwd_maxpool2d(tb_tape *t, const tb_node *n)
{
    bool acc;
    float *dx = tb_var_grad_for(t, n->in[0], &acc);
    if (dx)
        tb_tape_ops(t)->maxpool2d_bwd(tb_tape_be(t), &n->attr.pool, n->saved[0],
                                      n->out->grad.data, dx, acc);
}

void tb_fwd_avgpool2d(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->avgpool2d_fwd(tb_tape_be(t), &n->attr.pool, n->in[0]->value.data,
                                  n->out->value.data);
}

void tb_bwd_avgpool2d(tb_tape *t, const tb_node *n)
{
    float *dx = tb_var_grad(t, n->in[0]);
    if (dx)
        tb_tape_ops(t)->avgpool2d_bwd(tb_tape_be(t), &n->attr.pool, n->out->grad.data, dx);
}

/* op: TB_OP_MAXPOOL2D or TB_OP_AVGPOOL2D */
static tb_var *pool2d(tb_tape *t, tb_op kind, tb_var *x, int kernel, int stride, int pad)
{
    const char *op = tb_op_table[kind].name;
    if (!tb_op_begin(t, 1, &x)) return NULL;
    if (!tb_op_expect(t, op, "input", x, TB_F32, 4, 4)) return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    if (kind == TB_OP_MAXPOOL2D ? !k->maxpool2d_fwd || !k->maxpool2d_bwd
                                : !k->avgpool2d_fwd || !k->avgpool2d_bwd)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "%s: not implemented by the %s backend", op,
                          tb_tape_be(t)->name);
    if (kernel < 1 || stride < 1 || pad < 0 || pad > kernel / 2)
        return tb_op_fail(t, TB_ERR_INVALID,
                          "%s: kernel %d, stride %d, pad %d (need kernel >= 1, stride >= 1, "
                          "0 <= pad <= kernel/2)",
                          op, kernel, stride, pad);
    char xs[96];
    tb_shape_str(&x->value, xs, sizeof xs);
    if (!dims_fit_int(&x->value) || kernel > INT_MAX / 4 ||
        x->value.shape[2] * x->value.shape[3] > INT32_MAX)
        return tb_op_fail(t, TB_ERR_SHAPE, "%s: input %s too large", op, xs);
    tb_pool_shape s = pool_shape_of(&x->value, kernel, stride, pad);
    if (s.n < 1 || s.c < 1 || s.h_out < 1 || s.w_out < 1)
        return tb_op_fail(t, TB_ERR_SHAPE, "%s: kernel %d with pad %d does not fit input %s", op,
                          kernel, pad, xs);
    int64_t shape[4] = {s.n, s.c, s.h_out, s.w_out};
    tb_var *y = tb_tape_output(t, TB_F32, 4, shape, 1, &x);
    if (!y) return NULL;
    int32_t *argmax = NULL;
    if (kind == TB_OP_MAXPOOL2D &&
        !(argmax = tb_tape_scratch(t, (size_t)tb_tensor_numel(&y->value) * sizeof(int32_t))))
        return NULL;
    return tb_op_run(t, &(tb_node){.op = kind, .n_in = 1, .in = {x}, .out = y, .saved = {argmax},
                                   .attr.pool = s});
}

tb_var *tb_op_maxpool2d(tb_tape *t, tb_var *x, int kernel, int stride, int pad)
{
    return pool2d(t, TB_OP_MAXPOOL2D, x, kernel, stride, pad);
}

tb_var *tb_op_avgpool2d(tb_tape *t, tb_var *x, int kernel, int stride, int pad)
{
    return pool2d(t, TB_OP_AVGPOOL2D, x, kernel, stride, pad);
}

/* ---- global average pooling: [N, C, H, W] -> [N, C] ------------------------------------------ */

void tb_fwd_global_avgpool(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->gap_fwd(tb_tape_be(t), n->attr.gap.nc, n->attr.gap.hw, n->in[0]->value.data,
                            n->out->value.data);
}

void tb_bwd_global_avgpool(tb_tape *t, const tb_node *n)
{
    float *dx = tb_var_grad(t, n->in[0]);
    if (dx)
        tb_tape_ops(t)->gap_bwd(tb_tape_be(t), n->attr.gap.nc, n->attr.gap.hw,
                                n->out->grad.data, dx);
}

tb_var *tb_op_global_avgpool(tb_tape *t, tb_var *x)
{
    if (!tb_op_begin(t, 1, &x)) return NULL;
    if (!tb_op_expect(t, "global_avgpool", "input", x, TB_F32, 4, 4)) return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    if (!k->gap_fwd || !k->gap_bwd)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED,
                          "global_avgpool: not implemented by the %s backend",
                          tb_tape_be(t)->name);
    const int64_t *d = x->value.shape;
    if (d[0] < 1 || d[1] < 1 || d[2] < 1 || d[3] < 1) {
        char xs[96];
        return tb_op_fail(t, TB_ERR_SHAPE, "global_avgpool: empty input %s",
                          tb_shape_str(&x->value, xs, sizeof xs));
    }
    int64_t shape[2] = {d[0], d[1]};
    tb_var *y = tb_tape_output(t, TB_F32, 2, shape, 1, &x);
    if (!y) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_GLOBAL_AVGPOOL, .n_in = 1, .in = {x}, .out = y,
                                   .attr.gap = {.nc = d[0] * d[1], .hw = d[2] * d[3]}});
}

/* ops_linear.c: linear layers, alone or with a residual added (y = x w^T + b + r), and the
 * fused MLP y = act(x w1^T + b1) w2^T + b2 + r of a transformer block.
 *
 * The fused forms save passes over activations, each as large as the layer's output: the
 * bias, the residual and the activation are applied by the product's epilogue while a tile of
 * the output is in cache (gemm_ep), and the MLP's backward pass multiplies the gradient
 * reaching its hidden layer by act' in the same way, so the gradient of act(.) is never
 * written out. */
#include "nn/tape_impl.h"

#include <string.h>

/* For y = x w^T + b with dy given: dx (+)= dy w (when want_dx), dw (+)= dy^T x, db (+)= column
 * sums of dy (each written when fresh: tb_params_begin_grads). */
static void linear_grads(tb_tape *t, tb_var *x, tb_var *w, tb_var *b, const float *dy, int rows,
                         int in, int out, bool want_dx)
{
    const tb_backend_ops *k = tb_tape_ops(t);
    tb_backend *be = tb_tape_be(t);
    bool acc;
    float *dx = want_dx ? tb_var_grad_for(t, x, &acc) : NULL;
    if (dx)
        k->gemm(be, false, false, rows, in, out, 1.0f, dy, out, w->value.data, in,
                acc ? 1.0f : 0.0f, dx, in);
    bool acc_w, acc_b;
    float *dw = tb_var_grad_for(t, w, &acc_w);
    if (dw) {
        float *db = tb_var_grad_for(t, b, &acc_b);
        k->linear_wgrad(be, rows, in, out, dy, x->value.data, dw, acc_w, db, acc_b);
        return;
    }
    float *db = tb_var_grad(t, b); /* zeroed when fresh: bias_grad adds */
    if (db) k->bias_grad(be, rows, out, dy, db);
}

/* Checks a dense layer's operands: x [..., in], w [out, in] with in, out >= 1, b [out] or
 * NULL; fails naming op. */
static bool check_dense(tb_tape *t, const char *op, tb_var *x, tb_var *w, tb_var *b)
{
    if (!tb_op_expect(t, op, "input", x, TB_F32, 1, TB_MAX_DIMS) ||
        !tb_op_expect(t, op, "weight", w, TB_F32, 2, 2))
        return false;
    const int64_t in = w->value.shape[1], out = w->value.shape[0];
    char xs[96], ws[96];
    if (in == 0 || out == 0) {
        tb_op_fail(t, TB_ERR_INVALID, "%s: weight %s has %s = 0 (a dense layer needs in >= 1 "
                   "and out >= 1)", op, tb_shape_str(&w->value, ws, sizeof ws),
                   in == 0 ? "in" : "out");
        return false;
    }
    if (x->value.shape[x->value.ndim - 1] != in) {
        tb_op_fail(t, TB_ERR_SHAPE, "%s: input %s does not match weight %s", op,
                   tb_shape_str(&x->value, xs, sizeof xs), tb_shape_str(&w->value, ws, sizeof ws));
        return false;
    }
    if (b && (!tb_op_expect(t, op, "bias", b, TB_F32, 1, 1) || b->value.shape[0] != out)) {
        tb_op_fail(t, TB_ERR_SHAPE, "%s: bias must have shape [%lld]", op, (long long)out);
        return false;
    }
    return true;
}

/* Checks that the residual r has the shape of the layer's output y. */
static bool check_residual(tb_tape *t, const char *op, const tb_var *r, const tb_var *y)
{
    if (!r) return true;
    char rs[96], ys[96];
    if (!tb_op_expect(t, op, "residual", r, TB_F32, 1, TB_MAX_DIMS)) return false;
    if (!tb_tensor_same_shape(&r->value, &y->value)) {
        tb_op_fail(t, TB_ERR_SHAPE, "%s: residual %s does not match the output %s", op,
                   tb_shape_str(&r->value, rs, sizeof rs), tb_shape_str(&y->value, ys, sizeof ys));
        return false;
    }
    return true;
}

/* A new output of x's shape with the last dimension `last`. */
static tb_var *dense_output(tb_tape *t, const tb_var *x, int64_t last, int n_in, tb_var **ins)
{
    int64_t shape[TB_MAX_DIMS];
    memcpy(shape, x->value.shape, sizeof shape);
    shape[x->value.ndim - 1] = last;
    return tb_tape_output(t, TB_F32, x->value.ndim, shape, n_in, ins);
}

/* ---- linear: y [R, out] = x [R, in] w^T + b (+ r) ---------------------------------------- */

/* in: x, w, b or NULL, r or NULL */
void tb_fwd_linear(tb_tape *t, const tb_node *n)
{
    const tb_var *x = n->in[0], *w = n->in[1], *b = n->in[2], *r = n->in[3];
    const int in = (int)n->attr.linear.in, out = (int)n->attr.linear.out;
    const tb_gemm_epilogue ep = {.bias = b ? b->value.data : NULL,
                                 .residual = r ? r->value.data : NULL};
    tb_tape_ops(t)->gemm_ep(tb_tape_be(t), false, true, (int)n->attr.linear.rows, out, in,
                            x->value.data, in, w->value.data, in, &ep, n->out->value.data, out);
}

void tb_bwd_linear(tb_tape *t, const tb_node *n)
{
    tb_var *x = n->in[0], *w = n->in[1], *b = n->in[2], *r = n->in[3];
    linear_grads(t, x, w, b, n->out->grad.data, (int)n->attr.linear.rows,
                 (int)n->attr.linear.in, (int)n->attr.linear.out, true);
    if (r) tb_var_grad_pass(t, r, n->out, true);
}

tb_var *tb_op_linear_add(tb_tape *t, tb_var *x, tb_var *w, tb_var *b, tb_var *r)
{
    tb_var *ins[4] = {x, w, b, r};
    if (!tb_op_begin(t, 2, ins) || !check_dense(t, "linear", x, w, b)) return NULL;
    const int64_t in = w->value.shape[1], out = w->value.shape[0];
    const int64_t rows = tb_tensor_numel(&x->value) / in;
    tb_var *y = dense_output(t, x, out, 4, ins);
    if (!y || !check_residual(t, "linear", r, y)) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_LINEAR, .n_in = 4, .in = {x, w, b, r}, .out = y,
                                   .attr.linear = {.rows = rows, .in = in, .out = out}});
}

tb_var *tb_op_linear(tb_tape *t, tb_var *x, tb_var *w, tb_var *b)
{
    return tb_op_linear_add(t, x, w, b, NULL);
}

/* ---- MLP: y = act(x w1^T + b1) w2^T + b2 (+ r) ------------------------------------------- */

/* in: x, w1, b1, w2, b2, r (b1, b2, r may be NULL); saved: the hidden layer before and after
 * the activation (tape variables, which tb_op_mlp hands out for curvature methods). */
void tb_fwd_mlp(tb_tape *t, const tb_node *n)
{
    const tb_var *x = n->in[0], *w1 = n->in[1], *b1 = n->in[2], *w2 = n->in[3], *b2 = n->in[4],
                 *r = n->in[5];
    const tb_var *h = n->saved[0], *g = n->saved[1];
    const int rows = (int)n->attr.mlp.rows, in = (int)n->attr.mlp.in,
              hid = (int)n->attr.mlp.hidden, out = (int)n->attr.mlp.out;
    const tb_backend_ops *k = tb_tape_ops(t);
    tb_backend *be = tb_tape_be(t);
    const tb_gemm_epilogue ep1 = {.bias = b1 ? b1->value.data : NULL,
                                  .mode = TB_GEMM_ACT_FWD,
                                  .act = n->attr.mlp.act,
                                  .act_y = g->value.data};
    k->gemm_ep(be, false, true, rows, hid, in, x->value.data, in, w1->value.data, in, &ep1,
               h->value.data, hid);
    const tb_gemm_epilogue ep2 = {.bias = b2 ? b2->value.data : NULL,
                                  .residual = r ? r->value.data : NULL};
    k->gemm_ep(be, false, true, rows, out, hid, g->value.data, hid, w2->value.data, hid, &ep2,
               n->out->value.data, out);
}

void tb_bwd_mlp(tb_tape *t, const tb_node *n)
{
    tb_var *x = n->in[0], *w1 = n->in[1], *b1 = n->in[2], *w2 = n->in[3], *b2 = n->in[4],
           *r = n->in[5];
    tb_var *h = n->saved[0], *g = n->saved[1];
    const int rows = (int)n->attr.mlp.rows, in = (int)n->attr.mlp.in,
              hid = (int)n->attr.mlp.hidden, out = (int)n->attr.mlp.out;
    const float *dy = n->out->grad.data;
    /* dh (+)= (dy w2 + dg) act'(h), the product's epilogue adding dg (what ops that read the
     * hidden variables handed out by tb_op_mlp sent to g; their backward ran before this one)
     * and multiplying by act' tile by tile. The epilogue writes C: a gradient h already has
     * gets the product through scratch. */
    bool acc;
    float *dh = tb_var_grad_for(t, h, &acc);
    if (dh) {
        const size_t bytes = (size_t)rows * (size_t)hid * sizeof(float);
        float *dst = acc ? tb_tape_scratch(t, bytes) : dh;
        if (!dst) return;
        const tb_gemm_epilogue ep = {.residual = g->grad.data,
                                     .mode = TB_GEMM_ACT_BWD,
                                     .act = n->attr.mlp.act,
                                     .act_x = h->value.data,
                                     .act_y = g->value.data};
        const tb_backend_ops *k = tb_tape_ops(t);
        k->gemm_ep(tb_tape_be(t), false, false, rows, hid, out, dy, out, w2->value.data, hid,
                   &ep, dst, hid);
        if (acc) k->axpy(tb_tape_be(t), (int64_t)rows * hid, 1.0f, dst, dh);
    }
    linear_grads(t, g, w2, b2, dy, rows, hid, out, false);
    if (dh) linear_grads(t, x, w1, b1, dh, rows, in, hid, true);
    if (r) tb_var_grad_pass(t, r, n->out, true);
}

tb_var *tb_op_mlp(tb_tape *t, tb_var *x, tb_var *w1, tb_var *b1, tb_activation act, tb_var *w2,
                  tb_var *b2, tb_var *r, tb_var **hidden)
{
    tb_var *ins[6] = {x, w1, b1, w2, b2, r};
    if (hidden) hidden[0] = hidden[1] = NULL;
    if (!tb_op_begin(t, 2, ins) || !tb_op_begin(t, 1, &w2) || !check_dense(t, "mlp", x, w1, b1))
        return NULL;
    if ((unsigned)act >= TB_ACT_COUNT)
        return tb_op_fail(t, TB_ERR_INVALID, "mlp: unknown activation %d", (int)act);
    const int64_t in = w1->value.shape[1], hid = w1->value.shape[0];
    if (!tb_op_expect(t, "mlp", "w2", w2, TB_F32, 2, 2)) return NULL;
    if (w2->value.shape[1] != hid) { /* name the hidden layer, not an input the caller gave */
        tb_tensor hs = x->value;
        hs.shape[hs.ndim - 1] = hid;
        char hb[96], w1b[96], w2b[96];
        return tb_op_fail(t, TB_ERR_SHAPE, "mlp: hidden layer %s (from w1 %s) does not match "
                          "w2 %s", tb_shape_str(&hs, hb, sizeof hb),
                          tb_shape_str(&w1->value, w1b, sizeof w1b),
                          tb_shape_str(&w2->value, w2b, sizeof w2b));
    }
    const int64_t rows = tb_tensor_numel(&x->value) / in;
    tb_var *h = dense_output(t, x, hid, 3, ins);
    tb_var *g = h ? dense_output(t, x, hid, 1, &h) : NULL;
    if (!g || !check_dense(t, "mlp", g, w2, b2)) return NULL;
    const int64_t out = w2->value.shape[0];
    tb_var *y = dense_output(t, x, out, 6, ins);
    if (!y || !check_residual(t, "mlp", r, y)) return NULL;
    if (hidden) {
        hidden[0] = h;
        hidden[1] = g;
    }
    return tb_op_run(t, &(tb_node){.op = TB_OP_MLP, .n_in = 6, .in = {x, w1, b1, w2, b2, r},
                                   .out = y, .saved = {h, g},
                                   .attr.mlp = {.rows = rows, .in = in, .hidden = hid,
                                                .out = out, .act = (tb_act)act}});
}

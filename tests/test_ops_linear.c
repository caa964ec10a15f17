/* test_ops_linear.c: the fused dense ops: linear with a residual (tb_op_linear_add) and the
 * MLP (tb_op_mlp) by finite differences, against the unfused ops they replace at sizes where
 * the CPU backend's own kernel and its epilogue run, the gradients a tape keeps for curvature
 * statistics (tb_tape_set_keep_grads), and parameter gradients written instead of zeroed and
 * added to (tb_params_begin_grads). */
#include "testutil.h"

#include "backend/backend_impl.h"

#include <stdlib.h>
#include <string.h>

static tb_backend *be;

/* in: x, w, b, r */
static tb_var *f_linear_add(tb_tape *t, tb_var *const *in, void *ctx)
{
    tb_var *r = ctx ? in[0] : in[3]; /* ctx: the residual is the input itself */
    return tb_test_reduce(t, tb_op_linear_add(t, in[0], in[1], in[2], r));
}

typedef struct mlp_case {
    tb_activation act;
    bool bias, residual_is_x;
} mlp_case;

/* in: x, w1, b1, w2, b2, r */
static tb_var *f_mlp(tb_tape *t, tb_var *const *in, void *ctx)
{
    const mlp_case *c = ctx;
    tb_var *r = c->residual_is_x ? in[0] : in[5];
    return tb_test_reduce(t, tb_op_mlp(t, in[0], in[1], c->bias ? in[2] : NULL, c->act, in[3],
                                       c->bias ? in[4] : NULL, r, NULL));
}

/* in: x, w1, b1, w2, b2; ctx: which hidden variable another op also reads (0: before the
 * activation, 1: after it), so that its gradient must flow back through the fused op */
static tb_var *f_mlp_hidden(tb_tape *t, tb_var *const *in, void *ctx)
{
    const int which = *(const int *)ctx;
    tb_var *hidden[2];
    tb_var *y = tb_op_mlp(t, in[0], in[1], in[2], TB_TANH, in[3], in[4], NULL, hidden);
    tb_var *side = y ? tb_op_scale(t, tb_test_reduce(t, hidden[which]), 0.5f) : NULL;
    return tb_op_add(t, tb_test_reduce(t, y), side);
}

static void test_gradients(void)
{
    tb_rng rng = tb_rng_make(3, 0);
    int64_t xs[3] = {2, 3, 6}, ws[2] = {6, 6}, bs[1] = {6}, rs[3] = {2, 3, 6};
    tb_var *in[4] = {tb_test_var(be, 3, xs, &rng, -1, 1, true),
                     tb_test_var(be, 2, ws, &rng, -1, 1, true),
                     tb_test_var(be, 1, bs, &rng, -1, 1, true),
                     tb_test_var(be, 3, rs, &rng, -1, 1, true)};
    tb_gradcheck("linear_add", be, f_linear_add, NULL, in, 4, 1e-2, 1e-3, 1e-2, 60);
    tb_gradcheck("linear_add, residual = input", be, f_linear_add, in, in, 3, 1e-2, 1e-3, 1e-2,
                 60);
    for (int i = 0; i < 4; i++) tb_test_var_free(in[i]);

    /* x [3, 5] -> 7 hidden -> 5 outputs, plus the residual [3, 5] */
    int64_t x2[2] = {3, 5}, w1[2] = {7, 5}, b1[1] = {7}, w2[2] = {5, 7}, b2[1] = {5};
    tb_var *m[6] = {tb_test_var(be, 2, x2, &rng, -1.5f, 1.5f, true),
                    tb_test_var(be, 2, w1, &rng, -1, 1, true),
                    tb_test_var(be, 1, b1, &rng, -1, 1, true),
                    tb_test_var(be, 2, w2, &rng, -1, 1, true),
                    tb_test_var(be, 1, b2, &rng, -1, 1, true),
                    tb_test_var(be, 2, x2, &rng, -1, 1, true)};
    const mlp_case cases[] = {{TB_GELU, true, false},
                              {TB_TANH, false, false},
                              {TB_SIGMOID, true, true},
                              {TB_SILU, true, false}};
    const char *names[] = {"mlp gelu", "mlp tanh, no biases", "mlp sigmoid, residual = input",
                           "mlp silu"};
    for (int c = 0; c < 4; c++)
        tb_gradcheck(names[c], be, f_mlp, (void *)&cases[c], m, cases[c].residual_is_x ? 5 : 6,
                     1e-2, 1e-3, 1e-2, 60);
    static const int pre = 0, post = 1;
    tb_gradcheck("mlp, pre-activation also read", be, f_mlp_hidden, (void *)&pre, m, 5, 1e-2,
                 1e-3, 1e-2, 60);
    tb_gradcheck("mlp, activation also read", be, f_mlp_hidden, (void *)&post, m, 5, 1e-2, 1e-3,
                 1e-2, 60);
    for (int i = 0; i < 6; i++) tb_test_var_free(m[i]);
}

/* Largest |a - b| relative to the largest |b| of n floats. */
static double rel_diff(const float *a, const float *b, int64_t n)
{
    double worst = 0, mag = 1e-12;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        worst = d > worst ? d : worst;
        mag = fabs((double)b[i]) > mag ? fabs((double)b[i]) : mag;
    }
    return worst / mag;
}

/* The fused ops against linear, activation, linear and add, at sizes the own kernel takes
 * (split across two threads, the hidden layer past one K block in the backward pass): the
 * output and every gradient agree to float rounding. The chain: y = r + mlp(x), then
 * z = y + linear(y) (a residual that is the layer's own input). */
enum { NV = 8 };

static void test_fused_against_unfused(void)
{
    tb_rng rng = tb_rng_make(4, 0);
    int64_t xs[2] = {256, 96}, w1s[2] = {300, 96}, b1s[1] = {300}, w2s[2] = {96, 300},
            b2s[1] = {96}, wps[2] = {96, 96};
    /* x, w1, b1, w2, b2, r, wp, bp */
    tb_var *v[NV] = {tb_test_var(be, 2, xs, &rng, -1, 1, true),
                     tb_test_var(be, 2, w1s, &rng, -0.2f, 0.2f, true),
                     tb_test_var(be, 1, b1s, &rng, -0.5f, 0.5f, true),
                     tb_test_var(be, 2, w2s, &rng, -0.2f, 0.2f, true),
                     tb_test_var(be, 1, b2s, &rng, -0.5f, 0.5f, true),
                     tb_test_var(be, 2, xs, &rng, -1, 1, true),
                     tb_test_var(be, 2, wps, &rng, -0.2f, 0.2f, true),
                     tb_test_var(be, 1, b2s, &rng, -0.5f, 0.5f, true)};
    float *grads[2][NV], *outs[2];
    int64_t n_out = 0;
    for (int fused = 0; fused < 2; fused++) {
        for (int i = 0; i < NV; i++) memset(v[i]->grad.data, 0, tb_tensor_bytes(&v[i]->grad));
        tb_tape *t = tb_test_tape(be);
        tb_var *z;
        if (fused) {
            tb_var *y = tb_op_mlp(t, v[0], v[1], v[2], TB_GELU, v[3], v[4], v[5], NULL);
            z = tb_op_linear_add(t, y, v[6], v[7], y);
        } else {
            tb_var *g = tb_op_activation(t, TB_GELU, tb_op_linear(t, v[0], v[1], v[2]));
            tb_var *y = tb_op_add(t, v[5], tb_op_linear(t, g, v[3], v[4]));
            z = tb_op_add(t, y, tb_op_linear(t, y, v[6], v[7]));
        }
        CHECK_OK(tb_tape_backward(t, tb_test_reduce(t, z)), tb_tape_error(t));
        outs[fused] = tb_test_host_copy(z);
        n_out = tb_tensor_numel(&z->value);
        for (int i = 0; i < NV; i++) {
            grads[fused][i] = malloc(tb_tensor_bytes(&v[i]->grad));
            memcpy(grads[fused][i], v[i]->grad.data, tb_tensor_bytes(&v[i]->grad));
        }
        tb_tape_destroy(t);
    }
    double worst = rel_diff(outs[1], outs[0], n_out);
    for (int i = 0; i < NV; i++)
        worst = fmax(worst, rel_diff(grads[1][i], grads[0][i], tb_tensor_numel(&v[i]->value)));
    printf("  fused against unfused: largest relative difference %.2g\n", worst);
    CHECK(worst < 1e-5);
    for (int f = 0; f < 2; f++) {
        free(outs[f]);
        for (int i = 0; i < NV; i++) free(grads[f][i]);
    }
    for (int i = 0; i < NV; i++) tb_test_var_free(v[i]);
}

/* y = mlp(x, residual h) with h also used on its own before (as a transformer block's layer
 * norm reads the residual stream): the residual's gradient takes over y's buffer by default,
 * so y's gradient then holds h's; with keep_grads it stays dL/dy, which curvature statistics
 * read. h's gradient is the same either way. */
static void test_keep_grads(void)
{
    tb_rng rng = tb_rng_make(5, 0);
    int64_t xs[2] = {4, 3}, ws[2] = {3, 3}, hs[2] = {4, 3};
    tb_var *x = tb_test_var(be, 2, xs, &rng, -1, 1, true), *w = tb_test_var(be, 2, ws, &rng, -1, 1, true);
    tb_var *h = tb_test_var(be, 2, hs, &rng, -1, 1, true);
    float *hgrad[2] = {NULL, NULL};
    for (int keep = 0; keep < 2; keep++) {
        memset(h->grad.data, 0, tb_tensor_bytes(&h->grad));
        tb_tape *t = tb_test_tape(be);
        tb_tape_set_keep_grads(t, keep);
        /* h is a parameter-like variable with its own buffer: route it through a reshape so
         * the tape owns its gradient (the residual can adopt only a tape variable's) */
        tb_var *hv = tb_op_reshape(t, h, 2, hs);
        tb_var *lh = tb_test_reduce(t, hv); /* before the mlp: its backward runs after */
        tb_var *y = tb_op_mlp(t, x, w, NULL, TB_TANH, w, NULL, hv, NULL);
        tb_var *loss = tb_op_add(t, tb_test_reduce(t, y), lh);
        CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
        /* dL/dy of the mse against tb_test_reduce's target: 2 (y - target) / n */
        const int64_t n = tb_tensor_numel(&y->value);
        float *target = malloc(sizeof(float) * (size_t)n), *yv = tb_test_host_copy(y);
        tb_rng trng = tb_rng_make(12345, (uint64_t)n);
        tb_rng_fill_uniform(&trng, target, n, -2.0f, 2.0f);
        double worst = 0;
        const float *dy = y->grad.data;
        for (int64_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(dy[i] - 2.0 * (yv[i] - target[i]) / (double)n));
        if (keep)
            CHECK(worst < 1e-6);
        else
            CHECK(y->grad.data == hv->grad.data); /* adopted: y's gradient is h's now */
        hgrad[keep] = malloc(tb_tensor_bytes(&h->grad));
        memcpy(hgrad[keep], h->grad.data, tb_tensor_bytes(&h->grad));
        free(target);
        free(yv);
        tb_tape_destroy(t);
    }
    CHECK(rel_diff(hgrad[1], hgrad[0], tb_tensor_numel(&h->value)) < 1e-6);
    free(hgrad[0]);
    free(hgrad[1]);
    tb_test_var_free(x);
    tb_test_var_free(w);
    tb_test_var_free(h);
}

/* Shapes that do not fit fail naming the tensors. */
static void test_errors(void)
{
    tb_rng rng = tb_rng_make(6, 0);
    int64_t xs[2] = {4, 3}, ws[2] = {5, 3}, w2s[2] = {3, 4}, rs[2] = {4, 4};
    tb_var *x = tb_test_var(be, 2, xs, &rng, -1, 1, true), *w = tb_test_var(be, 2, ws, &rng, -1, 1, true);
    tb_var *w2 = tb_test_var(be, 2, w2s, &rng, -1, 1, true), *r = tb_test_var(be, 2, rs, &rng, -1, 1, true);
    tb_tape *t = tb_test_tape(be);
    CHECK(tb_op_linear_add(t, x, w, NULL, r) == NULL); /* y [4, 5], residual [4, 4] */
    CHECK(tb_tape_status(t) == TB_ERR_SHAPE);
    CHECK(strstr(tb_tape_error(t)->message, "residual [4, 4]") != NULL);
    tb_tape_reset(t);
    CHECK(tb_op_mlp(t, x, w, NULL, TB_GELU, w2, NULL, NULL, NULL) == NULL); /* 5 into 4 */
    CHECK(tb_tape_status(t) == TB_ERR_SHAPE);
    /* the message names the hidden layer, not an "input" the caller never gave */
    CHECK(strstr(tb_tape_error(t)->message,
                 "mlp: hidden layer [4, 5] (from w1 [5, 3]) does not match w2 [3, 4]") != NULL);
    /* in = 0 or out = 0: refused (in = 0 divided by zero: rows = numel / in) */
    tb_tape_reset(t);
    int64_t x0s[2] = {3, 0}, w0s[2] = {4, 0}, wo0s[2] = {0, 3};
    tb_var *x0 = tb_test_var(be, 2, x0s, &rng, -1, 1, false);
    tb_var *w0 = tb_test_var(be, 2, w0s, &rng, -1, 1, true);
    tb_var *wo0 = tb_test_var(be, 2, wo0s, &rng, -1, 1, true);
    CHECK(tb_op_linear(t, x0, w0, NULL) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_INVALID &&
          strstr(tb_tape_error(t)->message, "linear: weight [4, 0] has in = 0"));
    tb_tape_reset(t);
    CHECK(tb_op_mlp(t, x0, w0, NULL, TB_RELU, w2, NULL, NULL, NULL) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_INVALID &&
          strstr(tb_tape_error(t)->message, "mlp: weight [4, 0] has in = 0"));
    tb_tape_reset(t);
    CHECK(tb_op_linear(t, x, wo0, NULL) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_INVALID &&
          strstr(tb_tape_error(t)->message, "linear: weight [0, 3] has out = 0"));
    tb_test_var_free(x0);
    tb_test_var_free(w0);
    tb_test_var_free(wo0);
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_test_var_free(w);
    tb_test_var_free(w2);
    tb_test_var_free(r);
}

/* The backend's bias gradient (column sums of dy, added) on its two paths, at one thread and
 * two: many row chunks, and rows too wide for the chunk sums' scratch; against double sums,
 * and the same bits at either thread count. */
static void test_bias_grad(void)
{
    static const int64_t shapes[][2] = {{1000, 130}, {300, 100000}, {50, 7}};
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = 1};
    tb_backend *one = NULL;
    if (!CHECK_OK(tb_backend_create(&cfg, &one, NULL), NULL)) return;
    tb_backend *bes[2] = {one, be};
    for (int s = 0; s < 3; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1];
        tb_rng rng = tb_rng_make(40, (uint64_t)s);
        float *dy = malloc(sizeof(float) * (size_t)(rows * cols));
        tb_rng_fill_uniform(&rng, dy, rows * cols, -1.0f, 1.0f);
        float *db[2];
        for (int b = 0; b < 2; b++) {
            db[b] = malloc(sizeof(float) * (size_t)cols);
            for (int64_t c = 0; c < cols; c++) db[b][c] = 0.5f; /* added to */
            bes[b]->ops.bias_grad(bes[b], rows, cols, dy, db[b]);
        }
        double worst = 0;
        for (int64_t c = 0; c < cols; c++) {
            double sum = 0.5;
            for (int64_t r = 0; r < rows; r++) sum += dy[r * cols + c];
            worst = fmax(worst, fabs(db[1][c] - sum) / (double)rows);
        }
        CHECK(worst < 1e-7);
        CHECK(memcmp(db[0], db[1], sizeof(float) * (size_t)cols) == 0);
        free(db[0]);
        free(db[1]);
        free(dy);
    }
    tb_backend_destroy(one);
}

/* One step's loss on the parameters p (a.weight, a.bias, b.weight, b.bias, ln.gamma, ln.beta,
 * unused) for the input x: an MLP, a linear layer and a layer norm, so that weight and bias
 * gradients come through linear_wgrad and layer norm's through tb_var_grad. */
static void fresh_backward(tb_params *p, tb_var *x)
{
    tb_var *v[7];
    for (int i = 0; i < 7; i++) v[i] = &tb_params_get(p, i)->var;
    tb_tape *t = tb_test_tape(be);
    tb_var *y = tb_op_mlp(t, x, v[0], v[1], TB_GELU, v[2], v[3], NULL, NULL);
    y = tb_op_layernorm(t, tb_op_linear(t, y, v[0], NULL), v[4], v[5], 1e-5f); /* a.weight twice */
    CHECK_OK(tb_tape_backward(t, tb_test_reduce(t, y)), tb_tape_error(t));
    tb_tape_destroy(t);
}

/* tb_params_begin_grads / end_grads against tb_params_zero_grad: the same gradients, bit for
 * bit, from buffers that held NaN (never read); a parameter no gradient reached ends at zero;
 * two backward passes between begin and end add up as they do from zeros. a.weight gets two
 * gradients a pass (written, then added to). Sizes where the own kernel runs. */
static void test_fresh_grads(void)
{
    tb_params *p = NULL;
    if (!CHECK_OK(tb_params_create(be, &p, NULL), NULL)) return;
    static const int64_t shapes[7][2] = {{256, 96}, {256, 1}, {96, 256}, {96, 1},
                                         {256, 1}, {256, 1}, {10, 1}};
    static const char *names[7] = {"a.weight", "a.bias", "b.weight", "b.bias",
                                   "ln.gamma", "ln.beta", "unused"};
    for (int i = 0; i < 7; i++)
        CHECK(tb_params_add(p, names[i], TB_PARAM_WEIGHT, shapes[i][1] == 1 ? 1 : 2, shapes[i],
                            NULL) != NULL);
    CHECK_OK(tb_params_finalize(p, NULL), NULL);
    const int64_t n = tb_params_numel(p);
    tb_rng rng = tb_rng_make(70, 0);
    tb_rng_fill_uniform(&rng, tb_params_values(p), n, -0.2f, 0.2f);
    int64_t xs[2] = {200, 96};
    tb_var *x = tb_test_var(be, 2, xs, &rng, -1, 1, false);
    float *g = tb_params_grads(p), *want = malloc(sizeof(float) * (size_t)n);
    tb_params_zero_grad(p);
    fresh_backward(p, x);
    memcpy(want, g, sizeof(float) * (size_t)n);
    for (int i = 0; i < 7; i++) { /* the padding between tensors stays zero: nothing writes it */
        const tb_param *prm = tb_params_get(p, i);
        for (int64_t e = 0; e < tb_tensor_numel(&prm->var.value); e++) g[prm->offset + e] = NAN;
    }
    tb_params_begin_grads(p);
    fresh_backward(p, x);
    tb_params_end_grads(p);
    CHECK(memcmp(g, want, sizeof(float) * (size_t)n) == 0);
    const tb_param *unused = tb_params_get(p, 6);
    CHECK(!unused->var.grad_fresh && g[unused->offset] == 0.0f && g[unused->offset + 9] == 0.0f);
    tb_params_zero_grad(p); /* two passes add up, as they do from zeros */
    fresh_backward(p, x);
    fresh_backward(p, x);
    memcpy(want, g, sizeof(float) * (size_t)n);
    tb_params_begin_grads(p);
    fresh_backward(p, x);
    fresh_backward(p, x);
    tb_params_end_grads(p);
    CHECK(memcmp(g, want, sizeof(float) * (size_t)n) == 0);
    free(want);
    tb_test_var_free(x);
    tb_params_destroy(p);
}

int main(void)
{
    be = tb_test_backend();
    test_gradients();
    test_fused_against_unfused();
    test_keep_grads();
    test_errors();
    test_bias_grad();
    test_fresh_grads();
    tb_backend_destroy(be);
    return tb_test_finish("test_ops_linear");
}

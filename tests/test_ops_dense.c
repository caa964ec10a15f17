/* test_ops_dense.c: finite-difference gradients and forward values of the dense ops, losses and
 * dropout; sticky errors of the tape. */
#include "testutil.h"

#include "backend/backend_impl.h"

#include <stdlib.h>
#include <string.h>

static tb_backend *be;

static tb_var *f_linear(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_test_reduce(t, tb_op_linear(t, in[0], in[1], in[2]));
}

static tb_var *f_linear_nobias(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_test_reduce(t, tb_op_linear(t, in[0], in[1], NULL));
}

static void test_linear(void)
{
    tb_rng r = tb_rng_make(1, 0);
    int64_t xs[3] = {2, 3, 5}, ws[2] = {4, 5}, bs[1] = {4};
    tb_var *in[3] = {tb_test_var(be, 3, xs, &r, -1, 1, true), tb_test_var(be, 2, ws, &r, -1, 1, true),
                     tb_test_var(be, 1, bs, &r, -1, 1, true)};
    tb_gradcheck("linear", be, f_linear, NULL, in, 3, 1e-2, 1e-3, 1e-2, 60);
    tb_gradcheck("linear without bias", be, f_linear_nobias, NULL, in, 2, 1e-2, 1e-3, 1e-2, 60);
    /* forward against a direct sum */
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    tb_var *y = tb_op_linear(t, in[0], in[1], in[2]);
    const float *x = in[0]->value.data, *w = in[1]->value.data, *b = in[2]->value.data;
    float worst = 0;
    for (int r2 = 0; r2 < 6; r2++)
        for (int o = 0; o < 4; o++) {
            float s = b[o];
            for (int i = 0; i < 5; i++) s += x[r2 * 5 + i] * w[o * 5 + i];
            float d = fabsf(s - ((float *)y->value.data)[r2 * 4 + o]);
            worst = d > worst ? d : worst;
        }
    CHECK(worst < 1e-5f);
    CHECK(y->value.ndim == 3 && y->value.shape[2] == 4);
    /* a bad shape is a sticky error naming both shapes; later ops return NULL */
    int64_t bad[2] = {4, 6};
    tb_var *wbad = tb_test_var(be, 2, bad, &r, -1, 1, true);
    CHECK(tb_op_linear(t, in[0], wbad, NULL) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_SHAPE);
    CHECK(strstr(tb_tape_error(t)->message, "[2, 3, 5]") != NULL);
    CHECK(strstr(tb_tape_error(t)->message, "[4, 6]") != NULL);
    CHECK(tb_op_relu(t, y) == NULL);
    tb_tape_reset(t);
    CHECK(tb_tape_status(t) == TB_OK);
    tb_tape_destroy(t);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
    tb_test_var_free(wbad);
}

static tb_var *f_matmul(tb_tape *t, tb_var *const *in, void *ctx)
{
    return tb_test_reduce(t, tb_op_matmul(t, in[0], in[1], ctx != NULL));
}

static void test_matmul(void)
{
    tb_rng r = tb_rng_make(2, 0);
    int64_t as[3] = {3, 4, 5}, bs[3] = {3, 5, 2}, bts[3] = {3, 2, 5}, a2[2] = {4, 5}, b2[2] = {5, 3};
    tb_var *in[2] = {tb_test_var(be, 3, as, &r, -1, 1, true), tb_test_var(be, 3, bs, &r, -1, 1, true)};
    tb_gradcheck("matmul batched", be, f_matmul, NULL, in, 2, 1e-2, 1e-3, 1e-2, 60);
    tb_var *in_t[2] = {in[0], tb_test_var(be, 3, bts, &r, -1, 1, true)};
    tb_gradcheck("matmul batched, b transposed", be, f_matmul, (void *)1, in_t, 2, 1e-2, 1e-3,
                 1e-2, 60);
    tb_var *in2[2] = {tb_test_var(be, 2, a2, &r, -1, 1, true), tb_test_var(be, 2, b2, &r, -1, 1, true)};
    tb_gradcheck("matmul 2-d", be, f_matmul, NULL, in2, 2, 1e-2, 1e-3, 1e-2, 60);
    /* c = a b element [1][2][1] */
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    tb_var *c = tb_op_matmul(t, in[0], in[1], false);
    const float *A = in[0]->value.data, *B = in[1]->value.data;
    float s = 0;
    for (int k = 0; k < 5; k++) s += A[1 * 20 + 2 * 5 + k] * B[1 * 10 + k * 2 + 1];
    CHECK_NEAR(((float *)c->value.data)[1 * 8 + 2 * 2 + 1], s, 1e-5);
    CHECK(tb_op_matmul(t, in[0], in[0], false) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "inner dimensions") != NULL);
    tb_tape_destroy(t);
    tb_test_var_free(in[0]);
    tb_test_var_free(in[1]);
    tb_test_var_free(in_t[1]);
    tb_test_var_free(in2[0]);
    tb_test_var_free(in2[1]);
}

static tb_var *f_act(tb_tape *t, tb_var *const *in, void *ctx)
{
    return tb_test_reduce(t, tb_op_activation(t, *(tb_activation *)ctx, in[0]));
}

static void test_activations(void)
{
    tb_rng r = tb_rng_make(3, 0);
    int64_t s[2] = {4, 8};
    tb_var *x = tb_test_var(be, 2, s, &r, 0.05f, 2.0f, true);
    /* signs mixed but away from relu's kink at 0 */
    float *xd = x->value.data;
    for (int i = 0; i < 32; i += 2) xd[i] = -xd[i];
    for (int a = TB_RELU; a <= TB_SIGMOID; a++) {
        tb_activation act = (tb_activation)a;
        char name[64];
        snprintf(name, sizeof name, "activation %s", tb_activation_name(act));
        tb_gradcheck(name, be, f_act, &act, &x, 1, 1e-2, 1e-3, 1e-2, 32);
    }
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    const float *yv[5];
    for (int a = TB_RELU; a <= TB_SIGMOID; a++) yv[a] = tb_op_activation(t, a, x)->value.data;
    float v = xd[3];
    CHECK_NEAR(yv[TB_RELU][3], v > 0 ? v : 0, 1e-6);
    CHECK_NEAR(yv[TB_GELU][3], 0.5 * v * (1 + erf(v / sqrt(2.0))), 1e-5);
    CHECK_NEAR(yv[TB_SILU][3], v / (1 + exp(-v)), 1e-5);
    CHECK_NEAR(yv[TB_TANH][3], tanh(v), 1e-6);
    CHECK_NEAR(yv[TB_SIGMOID][3], 1 / (1 + exp(-v)), 1e-6);
    tb_activation parsed;
    tb_error err = {0};
    CHECK_OK(tb_activation_parse("silu", &parsed, &err), &err);
    CHECK(parsed == TB_SILU);
    CHECK_FAILS(tb_activation_parse("swish2", &parsed, &err), TB_ERR_INVALID, &err, "swish2");
    tb_tape_destroy(t);
    tb_test_var_free(x);
}

/* The GELU kernels over [-10, 10] (a length that is not a multiple of 16) against erf in
 * double: values, gradients (fresh and accumulated), NaN passed through, and the limits at
 * huge and infinite inputs. */
static void test_gelu_kernel_range(void)
{
    enum { N = 20001 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    float *dy = malloc(N * sizeof(float)), *dx = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) {
        x[i] = -10.0f + 20.0f * (float)i / (N - 1);
        dy[i] = 1.0f;
        dx[i] = NAN; /* a fresh gradient is never read */
    }
    x[7] = NAN;
    be->ops.act_fwd(be, TB_ACT_GELU, N, x, y);
    be->ops.act_bwd(be, TB_ACT_GELU, N, x, y, dy, dx, false);
    double worst_y = 0, worst_g = 0;
    for (int i = 0; i < N; i++) {
        if (i == 7) continue;
        double v = x[i], cdf = 0.5 * (1.0 + erf(v / sqrt(2.0)));
        double grad = cdf + v * exp(-0.5 * v * v) * 0.39894228040143268;
        worst_y = fmax(worst_y, fabs(y[i] - v * cdf));
        worst_g = fmax(worst_g, fabs(dx[i] - grad));
    }
    CHECK_NEAR(worst_y, 0.0, 1e-6);
    CHECK_NEAR(worst_g, 0.0, 1e-6);
    CHECK(isnan(y[7]) && isnan(dx[7]));
    for (int i = 0; i < N; i++) dx[i] = 0.5f;
    be->ops.act_bwd(be, TB_ACT_GELU, N, x, y, dy, dx, true);
    double worst_acc = 0;
    for (int i = 0; i < N; i++) {
        if (i == 7) continue;
        double v = x[i], cdf = 0.5 * (1.0 + erf(v / sqrt(2.0)));
        double grad = cdf + v * exp(-0.5 * v * v) * 0.39894228040143268;
        worst_acc = fmax(worst_acc, fabs(dx[i] - (0.5 + grad)));
    }
    CHECK_NEAR(worst_acc, 0.0, 1e-6);
    /* the tails: GELU(x) -> x or 0 and GELU'(x) -> 1 or 0, infinities included */
    const float tails[8] = {INFINITY, -INFINITY, 1e38f, -1e38f, 3e38f, -3e38f, 20.0f, -20.0f};
    float ty[8], tdy[8] = {1, 1, 1, 1, 1, 1, 1, 1}, tdx[8];
    be->ops.act_fwd(be, TB_ACT_GELU, 8, tails, ty);
    be->ops.act_bwd(be, TB_ACT_GELU, 8, tails, ty, tdy, tdx, false);
    bool tails_ok = true;
    for (int i = 0; i < 8; i++) {
        const bool pos = tails[i] > 0;
        tails_ok &= (pos ? ty[i] == tails[i] : ty[i] == 0.0f) && tdx[i] == (pos ? 1.0f : 0.0f);
        if (!tails_ok) {
            fprintf(stderr, "gelu(%g) = %g, gelu'(%g) = %g\n", tails[i], ty[i], tails[i], tdx[i]);
            break;
        }
    }
    CHECK(tails_ok);
    free(x);
    free(y);
    free(dy);
    free(dx);
}

/* The double-precision references of the smooth kernels below. */
static double ref_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }
static double ref_silu(double v) { return v * ref_sigmoid(v); }
static double ref_silu_grad(double v)
{
    const double s = ref_sigmoid(v);
    return s * (1.0 + v * (1.0 - s));
}

/* The gradient of act a of the three below at v, whose output the kernel gave as y: tanh and
 * sigmoid differentiate their output, SiLU its input. */
static double ref_grad(int a, double v, double y)
{
    return a == 0 ? 1.0 - y * y : a == 1 ? y * (1.0 - y) : ref_silu_grad(v);
}

/* |got - want| relative to max(1, |want|) */
static double rel_err(double got, double want) { return fabs(got - want) / fmax(1.0, fabs(want)); }

/* tanh, sigmoid and SiLU over [-30, 30] (a length that is not a multiple of 16) against libm
 * in double: values, gradients (fresh and accumulated), NaN passed through, and the limits at
 * huge and infinite inputs. */
static void test_smooth_kernel_range(void)
{
    enum { N = 20001 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    float *dy = malloc(N * sizeof(float)), *dx = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = -30.0f + 60.0f * (float)i / (N - 1);
    x[9] = NAN;
    const tb_act acts[3] = {TB_ACT_TANH, TB_ACT_SIGMOID, TB_ACT_SILU};
    for (int a = 0; a < 3; a++) {
        for (int i = 0; i < N; i++) {
            dy[i] = 1.0f;
            dx[i] = NAN; /* a fresh gradient is never read */
        }
        be->ops.act_fwd(be, acts[a], N, x, y);
        be->ops.act_bwd(be, acts[a], N, x, y, dy, dx, false);
        double worst_y = 0, worst_g = 0;
        for (int i = 0; i < N; i++) {
            if (i == 9) continue;
            const double v = x[i];
            const double want = a == 0 ? tanh(v) : a == 1 ? ref_sigmoid(v) : ref_silu(v);
            worst_y = fmax(worst_y, rel_err(y[i], want));
            worst_g = fmax(worst_g, rel_err(dx[i], ref_grad(a, v, y[i])));
        }
        CHECK_NEAR(worst_y, 0.0, 1e-6);
        CHECK_NEAR(worst_g, 0.0, 1e-6);
        CHECK(isnan(y[9]) && isnan(dx[9]));
        for (int i = 0; i < N; i++) dx[i] = 0.5f;
        be->ops.act_bwd(be, acts[a], N, x, y, dy, dx, true);
        double worst_acc = 0;
        for (int i = 0; i < N; i++) {
            if (i == 9) continue;
            worst_acc = fmax(worst_acc, rel_err(dx[i], 0.5 + ref_grad(a, x[i], y[i])));
        }
        CHECK_NEAR(worst_acc, 0.0, 1e-6);
    }
    /* the tails: tanh -> +-1, sigmoid -> 1 or 0, SiLU -> x or 0 and SiLU' -> 1 or 0 */
    const float tails[8] = {INFINITY, -INFINITY, 1e38f, -1e38f, 3e38f, -3e38f, 100.0f, -100.0f};
    float ty[8], tdy[8] = {1, 1, 1, 1, 1, 1, 1, 1}, tdx[8];
    bool tails_ok = true;
    for (int a = 0; a < 3 && tails_ok; a++) {
        be->ops.act_fwd(be, acts[a], 8, tails, ty);
        be->ops.act_bwd(be, acts[a], 8, tails, ty, tdy, tdx, false);
        for (int i = 0; i < 8 && tails_ok; i++) {
            const bool pos = tails[i] > 0;
            const float want = a == 0 ? (pos ? 1.0f : -1.0f) : a == 1 ? (pos ? 1.0f : 0.0f)
                                                                      : (pos ? tails[i] : 0.0f);
            /* the sigmoid's clamped exponential leaves e^-88 below -88 */
            tails_ok &= fabs(ty[i] - want) <= 1e-30 || ty[i] == want;
            if (a == 2) tails_ok &= tdx[i] == (pos ? 1.0f : 0.0f);
            if (!tails_ok)
                fprintf(stderr, "act %d at %g: %g, gradient %g\n", (int)acts[a], tails[i], ty[i],
                        tdx[i]);
        }
    }
    CHECK(tails_ok);
    free(x);
    free(y);
    free(dy);
    free(dx);
}

static tb_var *f_scale(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_test_reduce(t, tb_op_scale(t, tb_op_tanh(t, in[0]), -2.5f));
}

/* residual: relu(x w^T) + x, so x receives two gradient contributions */
static tb_var *f_residual(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    tb_var *h = tb_op_tanh(t, tb_op_linear(t, in[0], in[1], NULL));
    return tb_test_reduce(t, tb_op_add(t, h, in[0]));
}

static tb_var *f_shape_ops(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    int64_t s[3] = {2, -1, 3};
    tb_var *r = tb_op_reshape(t, in[0], 3, s);         /* [2, 2, 3] */
    tb_var *tr = tb_op_transpose(t, r, 0, 2);          /* [3, 2, 2] */
    tb_var *parts[2] = {tr, tb_op_tanh(t, in[1])};     /* in[1] [3, 1, 2] */
    tb_var *c = tb_op_concat(t, parts, 2, 1);          /* [3, 3, 2] */
    return tb_test_reduce(t, tb_op_sigmoid(t, c));
}

static void test_composites(void)
{
    tb_rng r = tb_rng_make(4, 0);
    int64_t xs[2] = {3, 6}, ws[2] = {6, 6}, a[2] = {4, 3}, b[3] = {3, 1, 2};
    tb_var *in[2] = {tb_test_var(be, 2, xs, &r, -1, 1, true), tb_test_var(be, 2, ws, &r, -1, 1, true)};
    tb_gradcheck("residual add", be, f_residual, NULL, in, 2, 1e-2, 1e-3, 1e-2, 40);
    tb_gradcheck("scale", be, f_scale, NULL, in, 1, 1e-2, 1e-3, 1e-2, 18);
    tb_var *in2[2] = {tb_test_var(be, 2, a, &r, -1, 1, true), tb_test_var(be, 3, b, &r, -1, 1, true)};
    tb_gradcheck("reshape/transpose/concat", be, f_shape_ops, NULL, in2, 2, 1e-2, 1e-3, 1e-2, 40);
    /* transpose values */
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    tb_var *tr = tb_op_transpose(t, in2[0], 0, 1);
    const float *src = in2[0]->value.data, *dst = tr->value.data;
    CHECK(dst[2 * 4 + 1] == src[1 * 3 + 2]);
    tb_var *parts[2] = {in2[0], in[0]};
    CHECK(tb_op_concat(t, parts, 2, 0) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "differ outside dim 0") != NULL);
    /* more inputs than the documented limit fail naming it; the limit itself works */
    tb_var *many[TB_CONCAT_MAX_INPUTS + 1];
    for (int i = 0; i <= TB_CONCAT_MAX_INPUTS; i++) many[i] = in2[0];
    tb_tape_reset(t);
    CHECK(tb_op_concat(t, many, TB_CONCAT_MAX_INPUTS + 1, 0) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "7 inputs (from 1 to TB_CONCAT_MAX_INPUTS = 6)"));
    tb_tape_reset(t);
    tb_var *cat = tb_op_concat(t, many, TB_CONCAT_MAX_INPUTS, 0);
    CHECK(cat && cat->value.shape[0] == 4 * TB_CONCAT_MAX_INPUTS);
    tb_tape_destroy(t);
    for (int i = 0; i < 2; i++) {
        tb_test_var_free(in[i]);
        tb_test_var_free(in2[i]);
    }
}

typedef struct loss_ctx {
    tb_var *labels;
    float smoothing;
} loss_ctx;

static tb_var *f_xent(tb_tape *t, tb_var *const *in, void *ctx)
{
    loss_ctx *c = ctx;
    return tb_op_softmax_xent(t, in[0], c->labels, c->smoothing);
}

static tb_var *f_mse(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_op_mse(t, in[0], in[1]);
}

static tb_var *f_bce(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_op_sigmoid_bce(t, in[0], in[1]);
}

static void test_losses(void)
{
    tb_rng r = tb_rng_make(5, 0);
    int64_t ls[2] = {5, 7}, ns[1] = {5};
    int32_t labels[5] = {0, 6, 3, 3, 1};
    tb_var *logits = tb_test_var(be, 2, ls, &r, -3, 3, true);
    loss_ctx c = {tb_test_ivar(be, 1, ns, labels), 0.0f};
    tb_gradcheck("softmax xent", be, f_xent, &c, &logits, 1, 1e-2, 1e-4, 1e-2, 35);
    c.smoothing = 0.1f;
    tb_gradcheck("softmax xent smoothed", be, f_xent, &c, &logits, 1, 1e-2, 1e-4, 1e-2, 35);
    /* value: smoothed loss = 0.9 nll + 0.1 mean_j(-log p_j) */
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    float got = *(float *)tb_op_softmax_xent(t, logits, c.labels, 0.1f)->value.data;
    const float *z = logits->value.data;
    double want = 0;
    for (int i = 0; i < 5; i++) {
        double m = -1e30, s = 0;
        for (int j = 0; j < 7; j++) m = fmax(m, z[i * 7 + j]);
        for (int j = 0; j < 7; j++) s += exp(z[i * 7 + j] - m);
        double lse = m + log(s), uni = 0;
        for (int j = 0; j < 7; j++) uni += lse - z[i * 7 + j];
        want += 0.9 * (lse - z[i * 7 + labels[i]]) + 0.1 * uni / 7;
    }
    CHECK_NEAR(got, want / 5, 1e-5);
    CHECK(tb_op_softmax_xent(t, logits, c.labels, 1.0f) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "label smoothing") != NULL);
    tb_tape_reset(t);

    tb_var *pred = tb_test_var(be, 2, ls, &r, -1, 1, true);
    tb_var *target = tb_test_var(be, 2, ls, &r, -1, 1, true);
    tb_var *pt[2] = {pred, target};
    tb_gradcheck("mse (both sides)", be, f_mse, NULL, pt, 2, 1e-2, 1e-4, 1e-2, 35);
    tb_var *prob = tb_test_var(be, 2, ls, &r, 0, 1, false);
    tb_var *lb[2] = {pred, prob};
    tb_gradcheck("sigmoid bce", be, f_bce, NULL, lb, 2, 1e-2, 1e-4, 1e-2, 35);
    float bce = *(float *)tb_op_sigmoid_bce(t, pred, prob)->value.data;
    double bw = 0;
    for (int i = 0; i < 35; i++) {
        double zz = ((float *)pred->value.data)[i], y = ((float *)prob->value.data)[i];
        double s = 1 / (1 + exp(-zz));
        bw += -(y * log(s) + (1 - y) * log(1 - s));
    }
    CHECK_NEAR(bce, bw / 35, 1e-5);
    tb_tape_destroy(t);
    tb_test_var_free(logits);
    tb_test_var_free(c.labels);
    tb_test_var_free(pred);
    tb_test_var_free(target);
    tb_test_var_free(prob);
}

static bool tape_failed(tb_tape *t, tb_status want, const char *needle)
{
    const tb_error *e = tb_tape_error(t);
    bool ok = tb_tape_status(t) == want && strstr(e->message, needle) != NULL;
    if (!ok)
        fprintf(stderr, "tape error %s \"%s\"; wanted %s with \"%s\"\n",
                tb_status_name(tb_tape_status(t)), e->message, tb_status_name(want), needle);
    return ok;
}

/* The fused softmax cross-entropy on rows wider than its 256-class blocks (and not a multiple
 * of 16): the loss and the gradient, recomputed in the backward pass from the logits and each
 * row's max and 1 / sum, against softmax in double; twice the loss sends the gradient through
 * the accumulating path too; a NaN logit makes the loss NaN. */
static void test_xent_wide(void)
{
    enum { N = 3, C = 1000 };
    tb_rng r = tb_rng_make(11, 0);
    int64_t ls[2] = {N, C}, ns[1] = {N};
    const int32_t labels[N] = {0, 517, 999};
    tb_var *logits = tb_test_var(be, 2, ls, &r, -20, 20, true);
    tb_var *y = tb_test_ivar(be, 1, ns, labels);
    const float *z = logits->value.data;
    for (int twice = 0; twice < 2; twice++) {
        const float smoothing = twice ? 0.1f : 0.0f;
        memset(logits->grad.data, 0, sizeof(float) * N * C); /* a leaf's gradient adds up */
        tb_tape *t = tb_test_tape(be);
        tb_var *loss = tb_op_softmax_xent(t, logits, y, smoothing);
        if (twice) loss = tb_op_add(t, loss, tb_op_softmax_xent(t, logits, y, smoothing));
        CHECK(loss != NULL);
        CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
        double want = 0, max_err = 0;
        for (int i = 0; i < N; i++) {
            double m = -1e30, s = 0;
            for (int j = 0; j < C; j++) m = fmax(m, z[i * C + j]);
            for (int j = 0; j < C; j++) s += exp(z[i * C + j] - m);
            double lse = m + log(s), uni = 0;
            for (int j = 0; j < C; j++) {
                uni += lse - z[i * C + j];
                const double target = smoothing / C + (j == labels[i] ? 1.0 - smoothing : 0.0);
                const double g = (1 + twice) * (exp(z[i * C + j] - lse) - target) / N;
                max_err = fmax(max_err, fabs(((const float *)logits->grad.data)[i * C + j] - g));
            }
            want += (1 - smoothing) * (lse - z[i * C + labels[i]]) + smoothing * uni / C;
        }
        CHECK_NEAR(*(float *)loss->value.data, (1 + twice) * want / N, 1e-4);
        CHECK(max_err < 1e-6);
        tb_tape_destroy(t);
    }
    ((float *)logits->value.data)[C + 3] = NAN;
    tb_tape *t = tb_test_tape(be);
    tb_var *loss = tb_op_softmax_xent(t, logits, y, 0.0f);
    CHECK(loss != NULL && isnan(*(float *)loss->value.data));
    tb_tape_destroy(t);
    tb_test_var_free(logits);
    tb_test_var_free(y);
}

/* Labels outside [0, C) are refused naming the label and its position (the kernels would read
 * and write past the row), as are labels of the wrong dtype, rank or count. */
static void test_xent_bad_labels(void)
{
    tb_rng r = tb_rng_make(8, 0);
    int64_t ls[2] = {2, 3}, ns[1] = {2}, ns3[1] = {3}, ns2d[2] = {2, 1};
    tb_var *logits = tb_test_var(be, 2, ls, &r, -1, 1, true);
    const int32_t high[2] = {0, 3}, low[2] = {-100000000, 1}, ok[2] = {2, 0};
    tb_var *y_high = tb_test_ivar(be, 1, ns, high), *y_low = tb_test_ivar(be, 1, ns, low);
    tb_var *y_ok = tb_test_ivar(be, 1, ns, ok), *y_3 = tb_test_ivar(be, 1, ns3, (int32_t[3]){0});
    tb_var *y_2d = tb_test_ivar(be, 2, ns2d, ok);
    tb_tape *t = tb_test_tape(be);
    CHECK(tb_op_softmax_xent(t, logits, y_high, 0.0f) == NULL);
    CHECK(tape_failed(t, TB_ERR_INVALID, "softmax_xent: label 3 at position [1] is outside [0, 3)"));
    tb_tape_reset(t);
    CHECK(tb_op_softmax_xent(t, logits, y_low, 0.1f) == NULL);
    CHECK(tape_failed(t, TB_ERR_INVALID, "label -100000000 at position [0]"));
    tb_tape_reset(t);
    CHECK(tb_op_softmax_xent(t, logits, logits, 0.0f) == NULL);
    CHECK(tape_failed(t, TB_ERR_INVALID, "labels must be int32"));
    tb_tape_reset(t);
    CHECK(tb_op_softmax_xent(t, logits, y_2d, 0.0f) == NULL);
    CHECK(tape_failed(t, TB_ERR_SHAPE, "labels has shape"));
    tb_tape_reset(t);
    CHECK(tb_op_softmax_xent(t, logits, y_3, 0.0f) == NULL);
    CHECK(tape_failed(t, TB_ERR_SHAPE, "2 logits rows but 3 labels"));
    tb_tape_reset(t);
    /* the bounds themselves are labels */
    tb_var *loss = tb_op_softmax_xent(t, logits, y_ok, 0.0f);
    CHECK(loss != NULL && isfinite(*(float *)loss->value.data));
    CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
    tb_tape_destroy(t);
    tb_test_var_free(logits);
    tb_test_var_free(y_high);
    tb_test_var_free(y_low);
    tb_test_var_free(y_ok);
    tb_test_var_free(y_3);
    tb_test_var_free(y_2d);
}

/* Empty inputs are refused by every loss (a mean over nothing was a NaN loss with TB_OK), and
 * sigmoid_bce's targets outside [0, 1] on the CPU backend as softmax_xent's labels are. */
static void test_loss_inputs(void)
{
    tb_rng r = tb_rng_make(10, 0);
    int64_t es[2] = {0, 3}, ts[2] = {2, 3};
    tb_var *ep = tb_test_var(be, 2, es, &r, 0, 1, true), *et = tb_test_var(be, 2, es, &r, 0, 1, false);
    tb_var *z = tb_test_var(be, 2, ts, &r, -2, 2, true), *y = tb_test_var(be, 2, ts, &r, 0, 1, false);
    tb_tape *t = tb_test_tape(be);
    CHECK(tb_op_mse(t, ep, et) == NULL);
    CHECK(tape_failed(t, TB_ERR_SHAPE, "mse: empty prediction [0, 3]"));
    tb_tape_reset(t);
    CHECK(tb_op_sigmoid_bce(t, ep, et) == NULL);
    CHECK(tape_failed(t, TB_ERR_SHAPE, "sigmoid_bce: empty prediction [0, 3]"));
    tb_tape_reset(t);
    float *yv = y->value.data;
    yv[0] = 0.0f; /* the bounds are targets */
    yv[1] = 1.0f;
    tb_var *l = tb_op_sigmoid_bce(t, z, y);
    CHECK(l != NULL && isfinite(*(float *)l->value.data));
    tb_tape_reset(t);
    const float bad[3] = {1.5f, -0.25f, NAN};
    const char *want[3] = {"target 1.5 at position [1, 2] is outside [0, 1]",
                           "target -0.25 at position [1, 2]", "target nan at position [1, 2]"};
    for (int i = 0; i < 3; i++) {
        yv[5] = bad[i];
        CHECK(tb_op_sigmoid_bce(t, z, y) == NULL);
        CHECK(tape_failed(t, TB_ERR_INVALID, want[i]));
        tb_tape_reset(t);
    }
    /* mse's targets are any reals */
    yv[5] = 7.0f;
    CHECK(tb_op_mse(t, z, y) != NULL);
    tb_tape_destroy(t);
    tb_test_var_free(ep);
    tb_test_var_free(et);
    tb_test_var_free(z);
    tb_test_var_free(y);
}

static tb_var *f_dropout(tb_tape *t, tb_var *const *in, void *ctx)
{
    tb_rng rng = *(tb_rng *)ctx; /* the same mask at every evaluation */
    return tb_test_reduce(t, tb_op_dropout(t, in[0], 0.3f, &rng));
}

static void test_dropout(void)
{
    tb_rng r = tb_rng_make(6, 0), mask_rng = tb_rng_make(6, TB_STREAM_DROPOUT);
    int64_t s[2] = {50, 40};
    tb_var *x = tb_test_var(be, 2, s, &r, 0.5f, 1.5f, true);
    tb_gradcheck("dropout", be, f_dropout, &mask_rng, &x, 1, 1e-2, 1e-4, 1e-2, 60);
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    tb_rng a = mask_rng, b = mask_rng;
    tb_var *y1 = tb_op_dropout(t, x, 0.3f, &a);
    tb_var *y2 = tb_op_dropout(t, x, 0.3f, &b);
    tb_var *y3 = tb_op_dropout(t, x, 0.3f, &a);
    CHECK(memcmp(y1->value.data, y2->value.data, 2000 * sizeof(float)) == 0);
    CHECK(memcmp(y1->value.data, y3->value.data, 2000 * sizeof(float)) != 0);
    int zeros = 0;
    bool scaled = true;
    for (int i = 0; i < 2000; i++) {
        float v = ((float *)y1->value.data)[i], xv = ((float *)x->value.data)[i];
        if (v == 0.0f) zeros++;
        else scaled &= fabsf(v - xv / 0.7f) < 1e-5f;
    }
    CHECK(scaled);
    CHECK(abs(zeros - 600) < 80);
    tb_tape_set_training(t, false);
    CHECK(tb_op_dropout(t, x, 0.3f, &a) == x);
    CHECK(tb_op_dropout(t, x, 1.0f, &a) == NULL);
    tb_tape_destroy(t);
    tb_test_var_free(x);
}

static void test_backward_errors_and_no_grad(void)
{
    tb_rng r = tb_rng_make(7, 0);
    int64_t s[2] = {3, 3};
    tb_var *c = tb_test_var(be, 2, s, &r, -1, 1, false);
    tb_var *w = tb_test_var(be, 2, s, &r, -1, 1, true);
    tb_tape *t;
    tb_tape_create(be, &t, NULL);
    tb_var *loss = tb_test_reduce(t, tb_op_relu(t, c));
    CHECK(tb_tape_backward(t, loss) == TB_ERR_INVALID);
    tb_tape_reset(t);
    tb_tape_set_grad_enabled(t, false);
    loss = tb_test_reduce(t, tb_op_linear(t, c, w, NULL));
    CHECK(tb_tape_node_count(t) == 0 && !loss->requires_grad);
    tb_tape_set_grad_enabled(t, true);
    tb_tape_reset(t);
    /* a step repeated on a reset tape allocates no new memory after the first */
    for (int i = 0; i < 3; i++) {
        tb_tape_reset(t);
        loss = tb_test_reduce(t, tb_op_linear(t, c, w, NULL));
        CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
    }
    uint64_t blocks = tb_tape_block_allocations(t);
    tb_tape_reset(t);
    loss = tb_test_reduce(t, tb_op_linear(t, c, w, NULL));
    tb_tape_backward(t, loss);
    CHECK(tb_tape_block_allocations(t) == blocks);
    tb_tape_destroy(t);
    tb_test_var_free(c);
    tb_test_var_free(w);
}

/* A variable whose value is a strided view (a narrow of [4, 8] to [4, 4], row stride 8) gets a
 * contiguous gradient of its own; transpose and reshape's copy write it so (they wrote it with
 * the view's strides, past the 16-float buffer). Against the hand-computed gradient of
 * mse(x^T, a) + mse(x^T, a) + mse(reshape(x, [2, 8]), b). */
static void test_strided_var_grad(void)
{
    tb_rng r = tb_rng_make(9, 0);
    int64_t bs[2] = {4, 8}, as[2] = {4, 4}, rs[2] = {2, 8};
    tb_var *base = tb_test_var(be, 2, bs, &r, -1, 1, false);
    tb_var *a = tb_test_var(be, 2, as, &r, -1, 1, false);
    tb_var *b = tb_test_var(be, 2, rs, &r, -1, 1, false);
    tb_var x = {0};
    tb_error err = {0};
    CHECK_OK(tb_tensor_narrow(&base->value, 1, 0, 4, &x.value, &err), &err);
    CHECK(x.value.stride[0] == 8 && !tb_tensor_is_contiguous(&x.value));
    x.grad = x.value;
    x.grad.data = NULL;
    x.requires_grad = true;
    tb_tape *t = tb_test_tape(be);
    tb_var *l = tb_op_add(t, tb_op_mse(t, tb_op_transpose(t, &x, 0, 1), a),
                          tb_op_mse(t, tb_op_transpose(t, &x, 0, 1), a));
    l = tb_op_add(t, l, tb_op_mse(t, tb_op_reshape(t, &x, 2, rs), b));
    CHECK_OK(tb_tape_backward(t, l), tb_tape_error(t));
    CHECK(x.grad.data != NULL && tb_tensor_is_contiguous(&x.grad));
    CHECK(x.grad.shape[0] == 4 && x.grad.shape[1] == 4);
    const float *xv = x.value.data, *av = a->value.data, *bv = b->value.data, *g = x.grad.data;
    double worst = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double want = 2 * 2.0 / 16 * (xv[i * 8 + j] - av[j * 4 + i]) +
                          2.0 / 16 * (xv[i * 8 + j] - bv[i * 4 + j]);
            worst = fmax(worst, fabs(g[i * 4 + j] - want));
        }
    CHECK(worst < 1e-6);
    /* a gradient buffer the caller gives must be contiguous too */
    tb_tape_reset(t);
    tb_var v = x;
    v.grad = x.value; /* a strided view of base */
    CHECK(tb_tape_backward(t, tb_op_mse(t, tb_op_transpose(t, &v, 0, 1), a)) == TB_ERR_INVALID);
    CHECK(tape_failed(t, TB_ERR_INVALID, "gradient buffer is not contiguous"));
    tb_tape_destroy(t);
    tb_test_var_free(base);
    tb_test_var_free(a);
    tb_test_var_free(b);
}

/* A second backward over the same recorded graph would add the intermediate gradients again
 * (QA saw 5x the gradient): refused until a reset, or a rewind before every node it visited. */
static void test_backward_twice(void)
{
    tb_rng r = tb_rng_make(8, 0);
    int64_t xs[2] = {2, 3}, ws[2] = {4, 3}, ys[2] = {2, 4};
    tb_var *x = tb_test_var(be, 2, xs, &r, -1, 1, false);
    tb_var *w = tb_test_var(be, 2, ws, &r, -1, 1, true);
    tb_var *y = tb_test_var(be, 2, ys, &r, -1, 1, false);
    tb_tape *t = tb_test_tape(be);
    const float *dw = w->grad.data;
    tb_var *h = tb_op_tanh(t, tb_op_linear(t, x, w, NULL));
    tb_var *loss = tb_op_mse(t, tb_op_scale(t, h, 3.0f), y);
    CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
    const float g1 = dw[0];
    CHECK(tb_tape_backward(t, loss) == TB_ERR_INVALID);
    CHECK(tape_failed(t, TB_ERR_INVALID, "backward already ran on this tape; reset it"));
    CHECK(dw[0] == g1); /* nothing ran */
    /* after a reset the same step runs again and accumulates once more: 2x */
    tb_tape_reset(t);
    loss = tb_op_mse(t, tb_op_scale(t, tb_op_tanh(t, tb_op_linear(t, x, w, NULL)), 3.0f), y);
    CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
    CHECK_NEAR(dw[0], 2.0 * g1, 1e-6 * fabs(g1) + 1e-7);
    /* mark, forward, backward, rewind to the mark: the next pass is a new one (Fisher's way) */
    tb_tape_reset(t);
    int mark = tb_tape_mark(t);
    loss = tb_op_mse(t, tb_op_scale(t, tb_op_tanh(t, tb_op_linear(t, x, w, NULL)), 3.0f), y);
    CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
    tb_tape_rewind(t, mark);
    loss = tb_op_mse(t, tb_op_scale(t, tb_op_tanh(t, tb_op_linear(t, x, w, NULL)), 3.0f), y);
    CHECK_OK(tb_tape_backward(t, loss), tb_tape_error(t));
    CHECK_NEAR(dw[0], 4.0 * g1, 4e-6 * fabs(g1) + 1e-7);
    /* a rewind that keeps nodes the pass visited does not: they would run again */
    tb_tape_reset(t);
    h = tb_op_tanh(t, tb_op_linear(t, x, w, NULL));
    mark = tb_tape_mark(t);
    CHECK(mark > 0);
    CHECK_OK(tb_tape_backward(t, tb_op_mse(t, tb_op_scale(t, h, 3.0f), y)), tb_tape_error(t));
    tb_tape_rewind(t, mark);
    CHECK(tb_tape_backward(t, tb_op_mse(t, h, y)) == TB_ERR_INVALID);
    CHECK(tape_failed(t, TB_ERR_INVALID, "backward already ran"));
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_test_var_free(w);
    tb_test_var_free(y);
}

/* An input whose value has elements but no memory (a parameter used before
 * tb_params_finalize, a zeroed tb_var) fails the op naming it; kernels ran on NULL before. */
static void test_inputs_without_memory(void)
{
    tb_error err = {0};
    tb_params *params;
    CHECK_OK(tb_params_create(be, &params, &err), &err);
    int64_t ws[2] = {4, 3}, xs[2] = {2, 3};
    tb_var *w = tb_params_add(params, "w", TB_PARAM_WEIGHT, 2, ws, &err);
    tb_rng r = tb_rng_make(8, 0);
    tb_var *x = tb_test_var(be, 2, xs, &r, -1, 1, false);
    tb_tape *t;
    CHECK_OK(tb_tape_create(be, &t, &err), &err);
    CHECK(tb_op_linear(t, x, w, NULL) == NULL); /* forgot tb_params_finalize */
    CHECK(tb_tape_status(t) == TB_ERR_INVALID &&
          strstr(tb_tape_error(t)->message, "linear: weight [4, 3] has no memory"));
    tb_var zeroed = {0};
    tb_tape_reset(t);
    CHECK(tb_op_relu(t, &zeroed) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_INVALID &&
          strstr(tb_tape_error(t)->message, "relu: input [] has no memory"));
    tb_tape_reset(t);
    CHECK(tb_op_transpose(t, w, 0, 1) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "transpose: input [4, 3] has no memory"));
    tb_tape_reset(t);
    CHECK(tb_op_reshape(t, w, 1, (int64_t[]){12}) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "reshape: input [4, 3] has no memory"));
    /* after finalize the same op runs */
    tb_tape_reset(t);
    CHECK_OK(tb_params_finalize(params, &err), &err);
    CHECK(tb_op_linear(t, x, w, NULL) != NULL);
    tb_tape_destroy(t);
    tb_params_destroy(params);
    tb_test_var_free(x);
}

/* NULL arguments: tape calls with a NULL tape return NULL or TB_ERR_INVALID; ops fail the
 * tape naming a NULL shape or input list; params and initialisers name the NULL argument
 * (most of these segfaulted). */
static void test_null_arguments(void)
{
    tb_error err = {0};
    tb_tape *t = NULL;
    CHECK_FAILS(tb_tape_create(NULL, &t, &err), TB_ERR_INVALID, &err, "backend is NULL");
    CHECK(t == NULL);
    CHECK_FAILS(tb_tape_create(be, NULL, &err), TB_ERR_INVALID, &err, "out is NULL");
    /* a NULL tape */
    CHECK(tb_op_relu(NULL, NULL) == NULL);
    CHECK(tb_op_concat(NULL, NULL, 2, 0) == NULL);
    CHECK(tb_op_batchnorm_act(NULL, TB_RELU, NULL, NULL, NULL, NULL, NULL, 0.1f, 1e-5f) == NULL);
    CHECK(tb_tape_constant(NULL, NULL) == NULL);
    CHECK(tb_tape_new_var(NULL, TB_F32, 0, NULL, false) == NULL);
    CHECK(tb_tape_fail(NULL, TB_ERR_INVALID, "x") == NULL);
    CHECK(tb_tape_backward(NULL, NULL) == TB_ERR_INVALID);
    CHECK(tb_tape_status(NULL) == TB_ERR_INVALID);
    CHECK(strstr(tb_tape_error(NULL)->message, "NULL") != NULL);
    CHECK(tb_tape_node_count(NULL) == 0 && tb_tape_mark(NULL) == 0);
    tb_tape_reset(NULL);
    tb_tape_set_training(NULL, false);
    tb_tape_destroy(NULL);
    CHECK(tb_linear_layer_forward(NULL, NULL, NULL) == NULL);
    /* a tape, NULL elsewhere */
    CHECK_OK(tb_tape_create(be, &t, &err), &err);
    CHECK(tb_tape_constant(t, NULL) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_INVALID &&
          strstr(tb_tape_error(t)->message, "constant: the tensor is NULL"));
    tb_tape_reset(t);
    tb_rng r = tb_rng_make(9, 0);
    int64_t s4[1] = {4};
    tb_var *x = tb_test_var(be, 1, s4, &r, -1, 1, false);
    CHECK(tb_op_reshape(t, x, 1, NULL) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "reshape: shape is NULL"));
    tb_tape_reset(t);
    CHECK(tb_op_concat(t, NULL, 2, 0) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "concat: xs is NULL"));
    tb_tape_reset(t);
    CHECK(tb_op_relu(t, NULL) == NULL);
    CHECK(tb_tape_status(t) == TB_ERR_INVALID);
    tb_tape_reset(t);
    CHECK(tb_linear_layer_forward(t, NULL, x) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "linear layer: layer is NULL"));
    tb_tape_destroy(t);
    tb_activation act;
    CHECK_FAILS(tb_activation_parse(NULL, &act, &err), TB_ERR_INVALID, &err, "name is NULL");
    /* parameters and initialisers */
    tb_params *p = NULL;
    CHECK_FAILS(tb_params_create(NULL, &p, &err), TB_ERR_INVALID, &err, "backend is NULL");
    CHECK(tb_params_add(NULL, "w", TB_PARAM_WEIGHT, 1, s4, &err) == NULL);
    CHECK(strstr(err.message, "params is NULL"));
    CHECK_FAILS(tb_params_finalize(NULL, &err), TB_ERR_INVALID, &err, "params is NULL");
    CHECK(tb_params_count(NULL) == 0 && tb_params_get(NULL, 0) == NULL);
    tb_params_destroy(NULL);
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    CHECK(tb_params_add(p, NULL, TB_PARAM_WEIGHT, 1, s4, &err) == NULL);
    CHECK(strstr(err.message, "name is NULL"));
    CHECK(tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, NULL, &err) == NULL);
    CHECK(strstr(err.message, "shape is NULL"));
    tb_var *w = tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, s4, &err);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    CHECK_FAILS(tb_init_normal(w, NULL, 0.0f, 1.0f, &err), TB_ERR_INVALID, &err,
                "init_normal: rng is NULL");
    CHECK_FAILS(tb_init_uniform(NULL, &r, 0.0f, 1.0f, &err), TB_ERR_INVALID, &err,
                "variable is NULL");
    tb_linear_layer layer;
    CHECK_FAILS(tb_linear_layer_init(&layer, p, NULL, 2, 2, false, &err), TB_ERR_INVALID, &err,
                "name is NULL");
    tb_conv_layer conv;
    CHECK_FAILS(tb_conv_layer_init(&conv, NULL, "c", 1, 1, 3, 1, 1, false, &err),
                TB_ERR_INVALID, &err, "params is NULL");
    tb_params_destroy(p);
    tb_test_var_free(x);
}

/* The tape's op profiler: one entry per op name with its call count, forward time charged
 * when the op is recorded and backward time when its node runs; sorted by total time; off by
 * default, cleared on request. */
static void test_profiler(void)
{
    tb_rng r = tb_rng_make(5, 0);
    int64_t xs[2] = {64, 32}, ws[2] = {48, 32}, bs[1] = {48};
    tb_var *x = tb_test_var(be, 2, xs, &r, -1, 1, false);
    tb_var *w = tb_test_var(be, 2, ws, &r, -1, 1, true);
    tb_var *b = tb_test_var(be, 1, bs, &r, -1, 1, true);
    tb_tape *t = tb_test_tape(be);
    tb_op_profile prof[8];
    CHECK(tb_tape_profile(t, prof, 8) == 0);
    tb_tape_set_profiling(t, true);
    for (int step = 0; step < 3; step++) {
        tb_tape_reset(t);
        tb_var *h = tb_op_relu(t, tb_op_linear(t, x, w, b));
        h = tb_op_gelu(t, tb_op_add(t, h, h));
        CHECK(tb_tape_backward(t, tb_test_reduce(t, h)) == TB_OK);
    }
    int n = tb_tape_profile(t, prof, 8);
    bool have_linear = false, have_add = false, sorted = true, nonneg = true;
    for (int i = 0; i < n && i < 8; i++) {
        if (strcmp(prof[i].name, "linear") == 0) have_linear = prof[i].calls == 3;
        if (strcmp(prof[i].name, "add") == 0) have_add = prof[i].calls == 3;
        nonneg = nonneg && prof[i].forward_s >= 0 && prof[i].backward_s >= 0;
        if (i > 0)
            sorted = sorted && prof[i - 1].forward_s + prof[i - 1].backward_s >=
                                   prof[i].forward_s + prof[i].backward_s;
    }
    CHECK(n >= 5); /* linear, relu, add, gelu, the reduction's loss */
    CHECK(have_linear && have_add && sorted && nonneg);
    /* off: nothing more is counted; clear: empty */
    tb_tape_set_profiling(t, false);
    tb_tape_reset(t);
    CHECK(tb_op_relu(t, tb_op_linear(t, x, w, b)) != NULL);
    tb_tape_profile(t, prof, 8);
    for (int i = 0; i < n && i < 8; i++)
        if (strcmp(prof[i].name, "linear") == 0) CHECK(prof[i].calls == 3);
    tb_tape_profile_clear(t);
    CHECK(tb_tape_profile(t, prof, 8) == 0);
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_test_var_free(w);
    tb_test_var_free(b);
}

int main(void)
{
    be = tb_test_backend();
    test_linear();
    test_matmul();
    test_activations();
    test_gelu_kernel_range();
    test_smooth_kernel_range();
    test_composites();
    test_losses();
    test_xent_bad_labels();
    test_xent_wide();
    test_loss_inputs();
    test_dropout();
    test_backward_errors_and_no_grad();
    test_inputs_without_memory();
    test_null_arguments();
    test_backward_twice();
    test_strided_var_grad();
    test_profiler();
    tb_backend_destroy(be);
    return tb_test_finish("test_ops_dense");
}

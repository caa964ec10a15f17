/* test_ops_norm.c: batch norm (training and eval mode, [N, C] and [N, C, H, W]) and layer
 * norm: forward passes against direct loops, gradients against finite differences, the
 * running-statistics update with exact values, and shape errors. */
#include "testutil.h"

#include "backend/backend_impl.h"

#include <stdlib.h>
#include <string.h>

static tb_backend *g_be;

static float *host_of(const tb_var *v) { return tb_test_host_copy(v); }

static tb_tape *new_tape(void) { return tb_test_tape(g_be); }

/* A persistent float32 tensor [len] holding vals (or `fill` everywhere if vals is NULL). */
static tb_tensor vec(int64_t len, const float *vals, float fill)
{
    tb_tensor v;
    tb_error err = {0};
    if (tb_tensor_alloc(g_be, TB_F32, 1, &len, &v, &err) != TB_OK) {
        fprintf(stderr, "vec: %s\n", err.message);
        exit(1);
    }
    float *h = malloc((size_t)len * sizeof(float));
    for (int64_t i = 0; i < len; i++) h[i] = vals ? vals[i] : fill;
    tb_tensor_upload(&v, h, NULL);
    free(h);
    return v;
}

/* ---- batch norm ------------------------------------------------------------------------------ */

typedef struct bn_case {
    int ndim;
    int64_t shape[4];
    bool training;
    tb_tensor rm, rv;
} bn_case;

static const float BN_EPS = 1e-5f, BN_MOMENTUM = 0.1f;

static tb_var *bn_loss(tb_tape *t, tb_var *const *in, void *ctx)
{
    bn_case *c = ctx;
    tb_tape_set_training(t, c->training);
    tb_var *y = tb_op_batchnorm(t, in[0], in[1], in[2], &c->rm, &c->rv, BN_MOMENTUM, BN_EPS);
    /* a nonlinearity after the norm, so the loss is not a plain quadratic of its output */
    return tb_test_reduce(t, tb_op_tanh(t, y));
}

/* Direct batch norm on the host; mean and var (biased) per channel out. */
static void bn_direct(const bn_case *c, const float *x, const float *g, const float *b,
                      const float *rm, const float *rv, float *y)
{
    int64_t n = c->shape[0], ch = c->shape[1];
    int64_t hw = c->ndim == 4 ? c->shape[2] * c->shape[3] : 1;
    for (int64_t k = 0; k < ch; k++) {
        double mean, var;
        if (c->training) {
            double s = 0, ss = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t p = 0; p < hw; p++) s += x[(i * ch + k) * hw + p];
            mean = s / (double)(n * hw);
            for (int64_t i = 0; i < n; i++)
                for (int64_t p = 0; p < hw; p++) {
                    double d = x[(i * ch + k) * hw + p] - mean;
                    ss += d * d;
                }
            var = ss / (double)(n * hw);
        } else {
            mean = rm[k];
            var = rv[k];
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t p = 0; p < hw; p++) {
                int64_t j = (i * ch + k) * hw + p;
                y[j] = (float)(g[k] * (x[j] - mean) / sqrt(var + BN_EPS) + b[k]);
            }
    }
}

static void run_bn_case(int ndim, const int64_t *shape, bool training)
{
    bn_case c = {.ndim = ndim, .training = training};
    memcpy(c.shape, shape, (size_t)ndim * sizeof *shape);
    int64_t C = shape[1];
    tb_rng rng = tb_rng_make(21, (uint64_t)(shape[0] * 100 + C * 10 + training));
    float *rmv = malloc((size_t)C * sizeof(float)), *rvv = malloc((size_t)C * sizeof(float));
    tb_rng_fill_uniform(&rng, rmv, C, -0.5f, 0.5f);
    tb_rng_fill_uniform(&rng, rvv, C, 0.5f, 2.0f);
    c.rm = vec(C, rmv, 0);
    c.rv = vec(C, rvv, 0);
    tb_var *in[3] = {tb_test_var(g_be, ndim, shape, &rng, -2, 2, true),
                     tb_test_var(g_be, 1, &C, &rng, 0.5f, 1.5f, true),
                     tb_test_var(g_be, 1, &C, &rng, -0.5f, 0.5f, true)};
    /* forward against the direct loop (eval mode normalises with the running stats as they
     * were before the call; training mode with batch stats) */
    tb_tape *t = new_tape();
    tb_tape_set_training(t, training);
    tb_var *y = tb_op_batchnorm(t, in[0], in[1], in[2], &c.rm, &c.rv, BN_MOMENTUM, BN_EPS);
    if (CHECK(y != NULL)) {
        float *x = host_of(in[0]), *g = host_of(in[1]), *b = host_of(in[2]), *got = host_of(y);
        int64_t n = tb_tensor_numel(&y->value);
        float *want = malloc((size_t)n * sizeof(float));
        bn_direct(&c, x, g, b, rmv, rvv, want);
        double worst = 0;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        CHECK_NEAR(worst, 0.0, 1e-4);
        free(x);
        free(g);
        free(b);
        free(got);
        free(want);
    } else {
        fprintf(stderr, "batchnorm: %s\n", tb_tape_error(t)->message);
    }
    tb_tape_destroy(t);
    char name[128];
    snprintf(name, sizeof name, "batchnorm %s %dd N%lld C%lld", training ? "train" : "eval", ndim,
             (long long)shape[0], (long long)C);
    tb_gradcheck(name, g_be, bn_loss, &c, in, 3, 1e-2, 1e-4, 1e-2, 40);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
    tb_tensor_free(&c.rm);
    tb_tensor_free(&c.rv);
    free(rmv);
    free(rvv);
}

static void test_batchnorm_gradients(void)
{
    int64_t s4[4] = {3, 2, 3, 4}, s4b[4] = {2, 3, 5, 2}, s2[2] = {6, 3}, s4c[4] = {1, 2, 2, 3};
    for (int training = 1; training >= 0; training--) {
        run_bn_case(4, s4, training);
        run_bn_case(4, s4b, training);
        run_bn_case(4, s4c, training); /* batch 1: statistics over H W only */
        run_bn_case(2, s2, training);
    }
}

/* The fused batch norm + ReLU equals batch norm then ReLU (values, gradients of x, gamma and
 * beta, running statistics) up to float rounding of the sums (both ops are gradient-checked on
 * their own; a finite-difference check across ReLU's kink would be noise). */
static void zero_grad(tb_var *v)
{
    float *z = calloc((size_t)tb_tensor_numel(&v->value), sizeof(float));
    tb_tensor_upload(&v->grad, z, NULL);
    free(z);
}

static void test_batchnorm_relu_fused(void)
{
    int64_t shape[4] = {3, 4, 5, 6}, C = 4;
    tb_rng rng = tb_rng_make(23, 0);
    tb_var *in[3] = {tb_test_var(g_be, 4, shape, &rng, -2, 2, true),
                     tb_test_var(g_be, 1, &C, &rng, 0.5f, 1.5f, true),
                     tb_test_var(g_be, 1, &C, &rng, -0.5f, 0.5f, true)};
    float *got[2][5];
    for (int fused = 0; fused < 2; fused++) {
        tb_tensor rm = vec(C, NULL, 0.0f), rv = vec(C, NULL, 1.0f);
        for (int i = 0; i < 3; i++) zero_grad(in[i]);
        tb_tape *t = new_tape();
        tb_var *y = fused ? tb_op_batchnorm_act(t, TB_RELU, in[0], in[1], in[2], &rm, &rv,
                                                BN_MOMENTUM, BN_EPS)
                          : tb_op_relu(t, tb_op_batchnorm(t, in[0], in[1], in[2], &rm, &rv,
                                                          BN_MOMENTUM, BN_EPS));
        CHECK(y != NULL && tb_tape_backward(t, tb_test_reduce(t, y)) == TB_OK);
        got[fused][0] = host_of(y);
        for (int i = 0; i < 3; i++) {
            tb_var g = *in[i];
            g.value = in[i]->grad;
            got[fused][1 + i] = host_of(&g);
        }
        float *stats = malloc(2 * (size_t)C * sizeof(float));
        tb_tensor_download(&rm, stats, NULL);
        tb_tensor_download(&rv, stats + C, NULL);
        got[fused][4] = stats;
        tb_tape_destroy(t);
        tb_tensor_free(&rm);
        tb_tensor_free(&rv);
    }
    const int64_t sizes[5] = {3 * 4 * 5 * 6, 3 * 4 * 5 * 6, 4, 4, 8};
    int differ = 0;
    for (int k = 0; k < 5; k++) {
        for (int64_t i = 0; i < sizes[k]; i++) {
            float a = got[0][k][i], b = got[1][k][i];
            bool same = fabsf(a - b) <= 1e-6f + 1e-5f * fabsf(b);
            if (!same && differ < 5)
                fprintf(stderr, "fused differs: output %d element %lld: %g vs %g\n", k,
                        (long long)i, a, b);
            differ += !same;
        }
        free(got[0][k]);
        free(got[1][k]);
    }
    CHECK(differ == 0);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
}

/* A batch norm input x [shape] holding hx, gamma 1 and beta 0 for its C = shape[1] channels,
 * running statistics starting at mean 0 and variance v0, and a tape. */
typedef struct bn_fixture {
    tb_var *x, *g, *b;
    tb_tensor rm, rv;
    tb_tape *t;
} bn_fixture;

static bn_fixture bn_fixture_make(const int64_t shape[4], const float *hx, float v0)
{
    bn_fixture f;
    const int64_t C = shape[1];
    f.x = tb_test_var(g_be, 4, shape, NULL, 0, 0, false);
    tb_tensor_upload(&f.x->value, hx, NULL);
    f.g = tb_test_var(g_be, 1, &C, NULL, 0, 0, false);
    f.b = tb_test_var(g_be, 1, &C, NULL, 0, 0, false);
    float *host = malloc(sizeof(float) * (size_t)C);
    for (int64_t c = 0; c < C; c++) host[c] = 1.0f;
    tb_tensor_upload(&f.g->value, host, NULL);
    for (int64_t c = 0; c < C; c++) host[c] = 0.0f;
    tb_tensor_upload(&f.b->value, host, NULL);
    free(host);
    f.rm = vec((int)C, NULL, 0.0f);
    f.rv = vec((int)C, NULL, v0);
    f.t = new_tape();
    return f;
}

static void bn_fixture_free(bn_fixture *f)
{
    tb_tape_destroy(f->t);
    tb_tensor_free(&f->rm);
    tb_tensor_free(&f->rv);
    tb_test_var_free(f->x);
    tb_test_var_free(f->g);
    tb_test_var_free(f->b);
}

static void test_batchnorm_running_stats(void)
{
    /* x [2, 2, 1, 2]: channel 0 holds 1, 2, 3, 4 (images 0 and 1), channel 1 holds 10, 10, 10,
     * 14. */
    float hx[8] = {1, 2, 10, 10, 3, 4, 10, 14};
    const int64_t xs[4] = {2, 2, 1, 2};
    bn_fixture f = bn_fixture_make(xs, hx, 1.0f);
    tb_var *x = f.x, *g = f.g, *b = f.b;
    tb_tape *t = f.t;
    tb_var *y = tb_op_batchnorm(t, x, g, b, &f.rm, &f.rv, 0.1f, 1e-5f);
    CHECK(y != NULL);
    float m[2], v[2];
    tb_tensor_download(&f.rm, m, NULL);
    tb_tensor_download(&f.rv, v, NULL);
    /* channel 0: mean 2.5, unbiased var 5/3; channel 1: mean 11, unbiased var 4 */
    CHECK_NEAR(m[0], 0.25, 1e-6);
    CHECK_NEAR(m[1], 1.1, 1e-6);
    CHECK_NEAR(v[0], 0.9 + 0.1 * 5.0 / 3.0, 1e-6);
    CHECK_NEAR(v[1], 0.9 + 0.1 * 4.0, 1e-6);
    /* the output uses the biased variance: channel 0 (1 - 2.5) / sqrt(1.25 + eps) */
    if (y) {
        float hy[8];
        tb_tensor_download(&y->value, hy, NULL);
        CHECK_NEAR(hy[0], -1.5 / sqrt(1.25 + 1e-5), 1e-5);
        CHECK_NEAR(hy[7], 3.0 / sqrt(3.0 + 1e-5), 1e-5);
    }
    /* a second step compounds: new = 0.9 old + 0.1 batch */
    tb_tape_reset(t);
    CHECK(tb_op_batchnorm(t, x, g, b, &f.rm, &f.rv, 0.1f, 1e-5f) != NULL);
    tb_tensor_download(&f.rm, m, NULL);
    tb_tensor_download(&f.rv, v, NULL);
    CHECK_NEAR(m[0], 0.9 * 0.25 + 0.25, 1e-6);
    CHECK_NEAR(v[1], 0.9 * 1.3 + 0.4, 1e-6);
    /* eval mode leaves the running statistics alone and normalises with them */
    tb_tape_reset(t);
    tb_tape_set_training(t, false);
    float before[2];
    tb_tensor_download(&f.rm, before, NULL);
    y = tb_op_batchnorm(t, x, g, b, &f.rm, &f.rv, 0.1f, 1e-5f);
    tb_tensor_download(&f.rm, m, NULL);
    CHECK(m[0] == before[0] && m[1] == before[1]);
    if (CHECK(y != NULL)) {
        float hy[8];
        tb_tensor_download(&y->value, hy, NULL);
        tb_tensor_download(&f.rv, v, NULL);
        CHECK_NEAR(hy[0], (1.0 - m[0]) / sqrt(v[0] + 1e-5), 1e-5);
    }
    /* momentum 1 replaces the running statistics with the batch ones */
    tb_tape_reset(t);
    tb_tape_set_training(t, true);
    CHECK(tb_op_batchnorm(t, x, g, b, &f.rm, &f.rv, 1.0f, 1e-5f) != NULL);
    tb_tensor_download(&f.rm, m, NULL);
    tb_tensor_download(&f.rv, v, NULL);
    CHECK_NEAR(m[0], 2.5, 1e-6);
    CHECK_NEAR(v[0], 5.0 / 3.0, 1e-6);
    /* frozen (the Fisher pass of curvature optimizers): normalised by the batch as in
     * training, with and without the fused ReLU, and the running statistics stay as they were */
    for (int relu = 0; relu < 2; relu++) {
        tb_tape_reset(t);
        tb_tape_set_freeze_running_stats(t, true);
        CHECK(tb_tape_freezes_running_stats(t));
        float m0[2], v0[2];
        tb_tensor_download(&f.rm, m0, NULL);
        tb_tensor_download(&f.rv, v0, NULL);
        y = relu ? tb_op_batchnorm_act(t, TB_RELU, x, g, b, &f.rm, &f.rv, 0.1f, 1e-5f)
                 : tb_op_batchnorm(t, x, g, b, &f.rm, &f.rv, 0.1f, 1e-5f);
        tb_tensor_download(&f.rm, m, NULL);
        tb_tensor_download(&f.rv, v, NULL);
        CHECK(memcmp(m, m0, sizeof m) == 0 && memcmp(v, v0, sizeof v) == 0);
        if (CHECK(y != NULL)) {
            float hy[8];
            tb_tensor_download(&y->value, hy, NULL);
            CHECK_NEAR(hy[0], relu ? 0.0 : -1.5 / sqrt(1.25 + 1e-5), 1e-5);
            CHECK_NEAR(hy[7], 3.0 / sqrt(3.0 + 1e-5), 1e-5);
        }
        tb_tape_set_freeze_running_stats(t, false);
    }
    bn_fixture_free(&f);
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static tb_var *ln_loss(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_test_reduce(t, tb_op_tanh(t, tb_op_layernorm(t, in[0], in[1], in[2], 1e-5f)));
}

static void run_ln_case(int ndim, const int64_t *shape)
{
    int64_t D = shape[ndim - 1];
    tb_rng rng = tb_rng_make(31, (uint64_t)(ndim * 100 + D));
    tb_var *in[3] = {tb_test_var(g_be, ndim, shape, &rng, -2, 2, true),
                     tb_test_var(g_be, 1, &D, &rng, 0.5f, 1.5f, true),
                     tb_test_var(g_be, 1, &D, &rng, -0.5f, 0.5f, true)};
    tb_tape *t = new_tape();
    tb_var *y = tb_op_layernorm(t, in[0], in[1], in[2], 1e-5f);
    if (CHECK(y != NULL)) {
        float *x = host_of(in[0]), *g = host_of(in[1]), *b = host_of(in[2]), *got = host_of(y);
        int64_t rows = tb_tensor_numel(&y->value) / D;
        double worst = 0;
        for (int64_t r = 0; r < rows; r++) {
            double s = 0, ss = 0;
            for (int64_t j = 0; j < D; j++) s += x[r * D + j];
            double mean = s / (double)D;
            for (int64_t j = 0; j < D; j++) ss += (x[r * D + j] - mean) * (x[r * D + j] - mean);
            double rstd = 1.0 / sqrt(ss / (double)D + 1e-5);
            for (int64_t j = 0; j < D; j++) {
                double want = (x[r * D + j] - mean) * rstd * g[j] + b[j];
                worst = fmax(worst, fabs(got[r * D + j] - want));
            }
        }
        CHECK_NEAR(worst, 0.0, 1e-4);
        free(x);
        free(g);
        free(b);
        free(got);
    }
    tb_tape_destroy(t);
    char name[64];
    snprintf(name, sizeof name, "layernorm %dd D%lld", ndim, (long long)D);
    tb_gradcheck(name, g_be, ln_loss, NULL, in, 3, 1e-2, 1e-4, 1e-2, 400);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
}

static void test_layernorm(void)
{
    int64_t s3[3] = {2, 3, 5}, s2[2] = {4, 7}, s1[1] = {6}, wide[2] = {3, 130};
    run_ln_case(3, s3);
    run_ln_case(2, s2);
    run_ln_case(1, s1);
    run_ln_case(2, wide); /* more than one column block in the dgamma/dbeta reduction */
}

/* The backend's layer norm backward on its two paths, at one thread and two: many row chunks
 * (dgamma/dbeta summed per chunk in the same pass as dx), and rows too wide for the chunk sums'
 * scratch (a second pass). dx, dgamma and dbeta against double sums, and the same bits at
 * either thread count. */
static void test_layernorm_backend_paths(void)
{
    static const int64_t shapes[][2] = {{1000, 96}, {130, 50000}};
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = 1};
    tb_backend *one = NULL;
    if (!CHECK_OK(tb_backend_create(&cfg, &one, NULL), NULL)) return;
    tb_backend *bes[2] = {one, g_be};
    for (int s = 0; s < 2; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        tb_rng rng = tb_rng_make(32, (uint64_t)s);
        float *x = malloc(sizeof(float) * (size_t)n), *dy = malloc(sizeof(float) * (size_t)n);
        float *gamma = malloc(sizeof(float) * (size_t)cols);
        float *mean = malloc(sizeof(float) * (size_t)rows), *rstd = malloc(sizeof(float) * (size_t)rows);
        tb_rng_fill_uniform(&rng, x, n, -2.0f, 2.0f);
        tb_rng_fill_uniform(&rng, dy, n, -1.0f, 1.0f);
        tb_rng_fill_uniform(&rng, gamma, cols, 0.5f, 1.5f);
        for (int64_t r = 0; r < rows; r++) {
            double m = 0, v = 0;
            for (int64_t j = 0; j < cols; j++) m += x[r * cols + j];
            m /= (double)cols;
            for (int64_t j = 0; j < cols; j++) v += (x[r * cols + j] - m) * (x[r * cols + j] - m);
            mean[r] = (float)m;
            rstd[r] = (float)(1.0 / sqrt(v / (double)cols + 1e-5));
        }
        float *dx[2], *dg[2], *db[2];
        for (int b = 0; b < 2; b++) {
            dx[b] = malloc(sizeof(float) * (size_t)n);
            dg[b] = calloc((size_t)cols, sizeof(float));
            db[b] = calloc((size_t)cols, sizeof(float));
            bes[b]->ops.layernorm_bwd(bes[b], rows, cols, x, gamma, mean, rstd, dy, dx[b], false,
                                      dg[b], db[b]);
        }
        double worst = 0;
        for (int64_t j = 0; j < cols; j++) {
            double sg = 0, sb = 0, mag = 0;
            for (int64_t r = 0; r < rows; r++) {
                const double xh = (x[r * cols + j] - mean[r]) * (double)rstd[r];
                sg += dy[r * cols + j] * xh;
                sb += dy[r * cols + j];
                mag += fabs(dy[r * cols + j] * xh);
            }
            worst = fmax(worst, fabs(dg[1][j] - sg) / (mag + 1.0));
            worst = fmax(worst, fabs(db[1][j] - sb) / (double)rows);
        }
        for (int64_t r = 0; r < rows; r += 7) { /* every 7th row of dx */
            double a = 0, bsum = 0;
            for (int64_t j = 0; j < cols; j++) {
                const double g = (double)dy[r * cols + j] * gamma[j];
                a += g;
                bsum += g * (x[r * cols + j] - mean[r]) * (double)rstd[r];
            }
            a /= (double)cols;
            bsum /= (double)cols;
            for (int64_t j = 0; j < cols; j++) {
                const double xh = (x[r * cols + j] - mean[r]) * (double)rstd[r];
                const double want = rstd[r] * ((double)dy[r * cols + j] * gamma[j] - a - xh * bsum);
                worst = fmax(worst, fabs(dx[1][r * cols + j] - want) / (fabs(want) + 1.0));
            }
        }
        printf("  layernorm backward %lld x %lld: largest relative error %.2g\n",
               (long long)rows, (long long)cols, worst);
        CHECK(worst < 1e-5);
        CHECK(memcmp(dx[0], dx[1], sizeof(float) * (size_t)n) == 0);
        CHECK(memcmp(dg[0], dg[1], sizeof(float) * (size_t)cols) == 0);
        CHECK(memcmp(db[0], db[1], sizeof(float) * (size_t)cols) == 0);
        for (int b = 0; b < 2; b++) {
            free(dx[b]);
            free(dg[b]);
            free(db[b]);
        }
        free(x);
        free(dy);
        free(gamma);
        free(mean);
        free(rstd);
    }
    tb_backend_destroy(one);
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void expect_error(tb_tape *t, tb_var *result, tb_status want, const char *needle)
{
    CHECK(result == NULL);
    CHECK_FAILS(tb_tape_status(t), want, tb_tape_error(t), needle);
    tb_tape_reset(t);
}

static void test_errors(void)
{
    tb_rng rng = tb_rng_make(4, 4);
    int64_t xs[4] = {2, 3, 4, 4}, x3s[3] = {2, 3, 4}, one[4] = {1, 3, 1, 1}, C = 3, C4 = 4;
    tb_var *x = tb_test_var(g_be, 4, xs, &rng, -1, 1, true);
    tb_var *x3 = tb_test_var(g_be, 3, x3s, &rng, -1, 1, true);
    tb_var *x1 = tb_test_var(g_be, 4, one, &rng, -1, 1, true);
    tb_var *g = tb_test_var(g_be, 1, &C, &rng, -1, 1, true);
    tb_var *g4 = tb_test_var(g_be, 1, &C4, &rng, -1, 1, true);
    tb_tensor rm = vec(3, NULL, 0), rv = vec(3, NULL, 1), rv4 = vec(4, NULL, 1);
    tb_tape *t = new_tape();
    expect_error(t, tb_op_batchnorm(t, x, g4, g, &rm, &rv, 0.1f, 1e-5f), TB_ERR_SHAPE,
                 "batchnorm: gamma has shape [4]; expected float32 [3]");
    expect_error(t, tb_op_batchnorm(t, x, g, g4, &rm, &rv, 0.1f, 1e-5f), TB_ERR_SHAPE,
                 "batchnorm: beta has shape [4]");
    expect_error(t, tb_op_batchnorm(t, x, g, g, &rm, &rv4, 0.1f, 1e-5f), TB_ERR_SHAPE,
                 "batchnorm: running_var has shape [4]");
    expect_error(t, tb_op_batchnorm(t, x3, g, g, &rm, &rv, 0.1f, 1e-5f), TB_ERR_SHAPE,
                 "batchnorm: input [2, 3, 4]; expected [N, C] or [N, C, H, W]");
    expect_error(t, tb_op_batchnorm(t, x, g, g, NULL, &rv, 0.1f, 1e-5f), TB_ERR_INVALID,
                 "running mean and variance");
    expect_error(t, tb_op_batchnorm(t, x, g, g, &rm, &rv, 1.5f, 1e-5f), TB_ERR_INVALID,
                 "momentum 1.5");
    expect_error(t, tb_op_batchnorm(t, x, g, g, &rm, &rv, 0.1f, 0.0f), TB_ERR_INVALID, "eps");
    expect_error(t, tb_op_batchnorm(t, x1, g, g, &rm, &rv, 0.1f, 1e-5f), TB_ERR_SHAPE,
                 "one value per channel");
    /* ... which eval mode allows */
    tb_tape_set_training(t, false);
    CHECK(tb_op_batchnorm(t, x1, g, g, &rm, &rv, 0.1f, 1e-5f) != NULL);
    tb_tape_set_training(t, true);
    tb_tape_reset(t);
    expect_error(t, tb_op_layernorm(t, x, g, g, 1e-5f), TB_ERR_SHAPE,
                 "layernorm: gamma has shape [3]; expected float32 [4]");
    expect_error(t, tb_op_layernorm(t, x, g4, g, 1e-5f), TB_ERR_SHAPE, "layernorm: beta");
    expect_error(t, tb_op_layernorm(t, x, g4, g4, -1.0f), TB_ERR_INVALID, "eps");
    /* sticky: the first error stays */
    CHECK(tb_op_layernorm(t, x, g, g, 1e-5f) == NULL);
    CHECK(tb_op_batchnorm(t, x, g, g, &rm, &rv, 0.1f, 1e-5f) == NULL);
    CHECK_FAILS(tb_tape_status(t), TB_ERR_SHAPE, tb_tape_error(t), "layernorm: gamma");
    tb_tape_destroy(t);
    tb_tensor_free(&rm);
    tb_tensor_free(&rv);
    tb_tensor_free(&rv4);
    tb_test_var_free(x);
    tb_test_var_free(x3);
    tb_test_var_free(x1);
    tb_test_var_free(g);
    tb_test_var_free(g4);
}

/* Batch norm's statistics of channels whose mean is large against their spread (1000 and -50,
 * deviations of about 0.1: a naive one-pass variance cancels away), whose first image lies 3
 * deviations off the rest, and whose first 16 elements of every plane (the sample the CPU
 * kernel shifts by) lie 2 deviations off the rest of the plane, so that the shift is not the
 * mean and its correction counts; planes of 8 x 8 and of 3 x 3 (fewer than 16 elements).
 * Against double sums of the same floats. */
static void batchnorm_offset_case(int H, int W)
{
    enum { N = 8, C = 2 };
    const int HW = H * W;
    float *hx = malloc(sizeof(float) * N * C * HW), *hy = malloc(sizeof(float) * N * C * HW);
    for (int b = 0; b < N; b++)
        for (int c = 0; c < C; c++)
            for (int p = 0; p < HW; p++) {
                const float u = (float)((b * 37 + c * 11 + p * 7) % 23) / 11.0f - 1.0f;
                hx[(b * C + c) * HW + p] =
                    c == 0 ? 1000.0f + 0.1f * u + (b == 0 ? 0.3f : 0.0f) + (p < 16 ? 0.2f : 0.0f)
                           : -50.0f + 0.1f * u;
            }
    const int64_t xs[4] = {N, C, H, W};
    bn_fixture f = bn_fixture_make(xs, hx, 0.0f);
    /* momentum 1: the running statistics become the batch's */
    tb_var *y = tb_op_batchnorm(f.t, f.x, f.g, f.b, &f.rm, &f.rv, 1.0f, 1e-5f);
    float m[C], v[C];
    tb_tensor_download(&f.rm, m, NULL);
    tb_tensor_download(&f.rv, v, NULL);
    if (CHECK(y != NULL)) tb_tensor_download(&y->value, hy, NULL);
    for (int c = 0; c < C && y; c++) {
        double s = 0, ss = 0;
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) s += hx[(i * C + c) * HW + p];
        const double mu = s / (N * HW);
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) {
                const double d = hx[(i * C + c) * HW + p] - mu;
                ss += d * d;
            }
        CHECK_NEAR(m[c], mu, 1e-4 * fabs(mu));
        CHECK_NEAR(v[c] / (ss / (N * HW - 1)), 1.0, 1e-3); /* unbiased, relative */
        const double r = 1.0 / sqrt(ss / (N * HW) + 1e-5);
        double worst = 0;
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) {
                const int j = (i * C + c) * HW + p;
                worst = fmax(worst, fabs(hy[j] - (hx[j] - mu) * r));
            }
        CHECK(worst < 5e-3); /* float's rounding of x near 1000 is 3e-5, 3e-4 deviations */
    }
    bn_fixture_free(&f);
    free(hx);
    free(hy);
}

static void test_batchnorm_offset(void)
{
    batchnorm_offset_case(8, 8);
    batchnorm_offset_case(3, 3);
}

int main(void)
{
    g_be = tb_test_backend();
    test_batchnorm_gradients();
    test_batchnorm_running_stats();
    test_batchnorm_offset();
    test_batchnorm_relu_fused();
    test_layernorm();
    test_layernorm_backend_paths();
    test_errors();
    tb_backend_destroy(g_be);
    return tb_test_finish("test_ops_norm");
}

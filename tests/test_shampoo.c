/* test_shampoo.c: blocked Shampoo against dense inverse fourth roots computed here (Jacobi
 * eigendecomposition in double), SGD grafting, conv-weight reshaping, SGD before
 * preconditioning starts, and hyperparameter validation. */
#include "testutil.h"

#include "backend/backend_impl.h"

#include <stdlib.h>
#include <string.h>

static tb_backend *be;

/* Jacobi eigendecomposition of symmetric a [n, n] (destroyed): v gets eigenvectors (columns). */
static void jacobi(int n, double *a, double *v, double *w)
{
    for (int i = 0; i < n * n; i++) v[i] = (i % (n + 1) == 0);
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                if (fabs(a[p * n + q]) < 1e-300) continue;
                double th = 0.5 * atan2(2 * a[p * n + q], a[q * n + q] - a[p * n + p]);
                double c = cos(th), s = sin(th);
                for (int k = 0; k < n; k++) { /* columns */
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* rows */
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for (int k = 0; k < n; k++) {
                    double vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < n; i++) w[i] = a[i * n + i];
}

/* out = (X + eps lmax I)^(-1/4) */
static void dense_root(int n, const double *x, double eps, double *out)
{
    double *a = malloc((size_t)n * n * sizeof *a), *v = malloc((size_t)n * n * sizeof *v);
    double *w = malloc((size_t)n * sizeof *w);
    memcpy(a, x, (size_t)n * n * sizeof *a);
    jacobi(n, a, v, w);
    double lmax = 0;
    for (int i = 0; i < n; i++) lmax = fmax(lmax, w[i]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += v[i * n + k] * pow(fmax(w[k], 0) + eps * lmax, -0.25) * v[j * n + k];
            out[i * n + j] = s;
        }
    free(a);
    free(v);
    free(w);
}

static tb_optimizer *make(tb_params *p, const char *const *names, const double *values, int n)
{
    tb_hparams hp = {0};
    for (int i = 0; i < n; i++) tb_hparams_set(&hp, names[i], values[i], NULL);
    tb_optimizer *opt = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_optimizer_create("shampoo", p, &hp, &opt, &err), &err)) exit(1);
    return opt;
}

/* A [10, 6] weight in blocks of 4 (rows 4, 4, 2 x columns 4, 2), after 3 steps of known
 * gradients with summed statistics: the last step is L^-1/4 G R^-1/4 per block. */
static void test_blocked_roots(void)
{
    enum { M = 10, NC = 6, BS = 4, STEPS = 3 };
    tb_params *p;
    tb_params_create(be, &p, NULL);
    int64_t shape[2] = {M, NC};
    tb_var *w = tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, shape, NULL);
    tb_params_finalize(p, NULL);
    tb_init_constant(w, 0.0f, NULL);
    const double eps = 1e-3;
    const char *names[] = {"learning_rate", "momentum", "beta2", "epsilon", "block_size",
                           "start_preconditioning_step", "precondition_interval", "grafting"};
    double values[] = {1.0, 0.0, 1.0, eps, BS, 1, 1, 0};
    tb_optimizer *opt = make(p, names, values, 8);
    tb_rng r = tb_rng_make(31, 0);
    static float g[STEPS][M * NC];
    float w0[M * NC], w1[M * NC];
    tb_error err = {0};
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < M * NC; i++) g[s][i] = (float)tb_rng_normal(&r);
        tb_backend_upload(be, w->grad.data, g[s], sizeof g[s]);
        tb_backend_download(be, w0, w->value.data, sizeof w0);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        tb_backend_download(be, w1, w->value.data, sizeof w1);
    }
    double worst = 0, scale = 0;
    for (int r0 = 0; r0 < M; r0 += BS)
        for (int c0 = 0; c0 < NC; c0 += BS) {
            int bm = M - r0 < BS ? M - r0 : BS, bn = NC - c0 < BS ? NC - c0 : BS;
            double L[16] = {0}, R[16] = {0}, Lr[16], Rr[16], t1[16], d[16];
            for (int s = 0; s < STEPS; s++) {
#define GB(i, j) ((double)g[s][(r0 + (i)) * NC + c0 + (j)])
                for (int i = 0; i < bm; i++)
                    for (int j = 0; j < bm; j++)
                        for (int k = 0; k < bn; k++) L[i * bm + j] += GB(i, k) * GB(j, k);
                for (int i = 0; i < bn; i++)
                    for (int j = 0; j < bn; j++)
                        for (int k = 0; k < bm; k++) R[i * bn + j] += GB(k, i) * GB(k, j);
            }
            dense_root(bm, L, eps, Lr);
            dense_root(bn, R, eps, Rr);
            int s = STEPS - 1;
            for (int i = 0; i < bm; i++)
                for (int j = 0; j < bn; j++) {
                    t1[i * bn + j] = 0;
                    for (int k = 0; k < bm; k++) t1[i * bn + j] += Lr[i * bm + k] * GB(k, j);
                }
#undef GB
            for (int i = 0; i < bm; i++)
                for (int j = 0; j < bn; j++) {
                    d[i * bn + j] = 0;
                    for (int k = 0; k < bn; k++) d[i * bn + j] += t1[i * bn + k] * Rr[k * bn + j];
                    double step = w0[(r0 + i) * NC + c0 + j] - w1[(r0 + i) * NC + c0 + j];
                    worst = fmax(worst, fabs(step - d[i * bn + j]));
                    scale = fmax(scale, fabs(d[i * bn + j]));
                }
        }
    printf("shampoo blocked roots: max |diff| %.3g (max |step| %.3g)\n", worst, scale);
    CHECK(scale > 1e-2);
    CHECK(worst <= 1e-3 * scale);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

/* Grafting: each parameter's step has the SGD step's norm; before start: exactly SGD. Also a
 * conv weight (reshaped to [Cout, Cin k k]) and a 1-D bias. */
static void test_grafting(void)
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    int64_t ws[4] = {3, 2, 3, 3}, bs = 3;
    tb_var *w = tb_params_add(p, "conv.weight", TB_PARAM_WEIGHT, 4, ws, NULL);
    tb_var *b = tb_params_add(p, "conv.bias", TB_PARAM_BIAS, 1, &bs, NULL);
    tb_params_finalize(p, NULL);
    tb_init_constant(w, 0.0f, NULL);
    tb_init_constant(b, 0.0f, NULL);
    const char *names[] = {"learning_rate", "momentum", "start_preconditioning_step",
                           "precondition_interval", "block_size"};
    double values[] = {0.5, 0.0, 3, 2, 8};
    tb_optimizer *opt = make(p, names, values, 5);
    tb_rng r = tb_rng_make(32, 0);
    tb_error err = {0};
    float g[54], gb[3], w0[54], w1[54], b0[3], b1[3];
    for (int s = 1; s <= 5; s++) {
        for (int i = 0; i < 54; i++) g[i] = (float)tb_rng_normal(&r) * (i % 7 == 0 ? 5.0f : 1.0f);
        for (int i = 0; i < 3; i++) gb[i] = (float)tb_rng_normal(&r);
        tb_backend_upload(be, w->grad.data, g, sizeof g);
        tb_backend_upload(be, b->grad.data, gb, sizeof gb);
        tb_backend_download(be, w0, w->value.data, sizeof w0);
        tb_backend_download(be, b0, b->value.data, sizeof b0);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        tb_backend_download(be, w1, w->value.data, sizeof w1);
        tb_backend_download(be, b1, b->value.data, sizeof b1);
        double ns = 0, ng = 0, diff = 0;
        for (int i = 0; i < 54; i++) {
            double step = (w0[i] - w1[i]) / 0.5;
            ns += step * step;
            ng += (double)g[i] * g[i];
            diff = fmax(diff, fabs(step - g[i]));
        }
        CHECK_NEAR(sqrt(ns), sqrt(ng), 1e-4 * sqrt(ng));
        if (s < 3) CHECK(diff < 1e-5);  /* SGD before preconditioning */
        else CHECK(diff > 1e-2);        /* preconditioned: another direction, same norm */
        for (int i = 0; i < 3; i++) CHECK_NEAR((b0[i] - b1[i]) / 0.5, gb[i], 1e-5);
    }
    tb_optimizer_destroy(opt);

    struct { const char *name; double v; const char *needle; } bad[] = {
        {"block_size", 0, "block_size"},
        {"epsilon", 0, "epsilon"},
        {"epsilon", -1e-6, "epsilon"},
        {"beta2", 0, "beta2"},
        {"start_preconditioning_step", 1.5, "whole number"},
        {"momentum", 1.0, "momentum"},
        {"damping", 0.1, "no hyperparameter 'damping'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tb_hparams hp = {0};
        tb_hparams_set(&hp, bad[i].name, bad[i].v, NULL);
        tb_optimizer *o = NULL;
        CHECK_FAILS(tb_optimizer_create("shampoo", p, &hp, &o, &err), TB_ERR_INVALID, &err,
                    bad[i].needle);
    }
    tb_params_destroy(p);
}

/* Adam grafting (grafting_method = 1): before preconditioning, and for the bias throughout, the
 * step is Adam's with beta1 = 0, B = g / (sqrt(v / (1 - b2^t)) + eps), computed here in double;
 * once preconditioned, another direction with B's norm. */
static void test_adam_grafting(void)
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    int64_t ws[2] = {6, 9}, bs = 3;
    tb_var *w = tb_params_add(p, "fc.weight", TB_PARAM_WEIGHT, 2, ws, NULL);
    tb_var *b = tb_params_add(p, "fc.bias", TB_PARAM_BIAS, 1, &bs, NULL);
    tb_params_finalize(p, NULL);
    tb_init_constant(w, 0.0f, NULL);
    tb_init_constant(b, 0.0f, NULL);
    const char *names[] = {"learning_rate", "momentum", "start_preconditioning_step",
                           "grafting_method", "grafting_beta2", "grafting_epsilon"};
    const double b2 = 0.9, eps = 1e-3, values[] = {0.5, 0.0, 3, 1, b2, eps};
    tb_optimizer *opt = make(p, names, values, 6);
    tb_rng r = tb_rng_make(33, 0);
    tb_error err = {0};
    float g[54], gb[3], w0[54], w1[54], b0[3], b1[3];
    double v[54] = {0}, vb[3] = {0};
    for (int s = 1; s <= 4; s++) {
        for (int i = 0; i < 54; i++) g[i] = (float)tb_rng_normal(&r);
        for (int i = 0; i < 3; i++) gb[i] = (float)tb_rng_normal(&r);
        tb_backend_upload(be, w->grad.data, g, sizeof g);
        tb_backend_upload(be, b->grad.data, gb, sizeof gb);
        tb_backend_download(be, w0, w->value.data, sizeof w0);
        tb_backend_download(be, b0, b->value.data, sizeof b0);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        tb_backend_download(be, w1, w->value.data, sizeof w1);
        tb_backend_download(be, b1, b->value.data, sizeof b1);
        double bc = 1.0 - pow(b2, s), ns = 0, na = 0, diff = 0;
        for (int i = 0; i < 54; i++) {
            v[i] = b2 * v[i] + (1 - b2) * (double)g[i] * g[i];
            double adam = g[i] / (sqrt(v[i] / bc) + eps), step = (w0[i] - w1[i]) / 0.5;
            ns += step * step;
            na += adam * adam;
            diff = fmax(diff, fabs(step - adam));
        }
        CHECK_NEAR(sqrt(ns), sqrt(na), 1e-4 * sqrt(na));
        if (s < 3) CHECK(diff < 1e-4); /* Adam before preconditioning */
        else CHECK(diff > 1e-2);       /* preconditioned: another direction, Adam's norm */
        for (int i = 0; i < 3; i++) {
            vb[i] = b2 * vb[i] + (1 - b2) * (double)gb[i] * gb[i];
            CHECK_NEAR((b0[i] - b1[i]) / 0.5, gb[i] / (sqrt(vb[i] / bc) + eps), 1e-4);
        }
    }
    tb_optimizer_destroy(opt);
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "grafting_epsilon", 1e-40, NULL);
    tb_optimizer *o = NULL;
    CHECK_FAILS(tb_optimizer_create("shampoo", p, &hp, &o, &err), TB_ERR_INVALID, &err,
                "grafting_epsilon = 1e-40 is below float32's smallest normal number");
    tb_params_destroy(p);
}

/* The backend's allocator, wrapped to record the largest request and refuse huge ones. */
static void *(*real_alloc)(tb_backend *, size_t);
static size_t largest_alloc;
static void *recording_alloc(tb_backend *b, size_t bytes)
{
    if (bytes > largest_alloc) largest_alloc = bytes;
    return bytes > ((size_t)64 << 20) ? NULL : real_alloc(b, bytes);
}

/* One step of a [10, 6] weight, preconditioned from step 1, with block side bs: w after it. */
static void step_with_block_size(double bs, float w_after[60])
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    int64_t shape[2] = {10, 6};
    tb_var *w = tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, shape, NULL);
    tb_params_finalize(p, NULL);
    tb_init_constant(w, 0.0f, NULL);
    const char *names[] = {"learning_rate", "momentum", "start_preconditioning_step",
                           "precondition_interval", "grafting", "block_size"};
    double values[] = {1.0, 0.0, 1, 1, 0, bs};
    largest_alloc = 0;
    tb_optimizer *opt = make(p, names, values, 6);
    /* the state is sized by the real blocks: g, d, momentum, L, R and their roots, scratch */
    CHECK(largest_alloc <= 64 * 4 * 4);
    float g[60];
    tb_rng r = tb_rng_make(33, 0);
    for (int i = 0; i < 60; i++) g[i] = (float)tb_rng_normal(&r);
    tb_backend_upload(be, w->grad.data, g, sizeof g);
    tb_error err = {0};
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    tb_backend_download(be, w_after, w->value.data, 60 * sizeof *w_after);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

/* block_size far above every parameter's sides (65536: 16 GiB if the scratch were
 * block_size^2) allocates for the real [10, 6] block and steps as a block size that fits. */
static void test_large_block_size(void)
{
    real_alloc = be->ops.alloc;
    be->ops.alloc = recording_alloc;
    float fit[60], huge[60];
    step_with_block_size(16, fit);
    step_with_block_size(65536, huge);
    be->ops.alloc = real_alloc;
    double diff = 0, scale = 0;
    for (int i = 0; i < 60; i++) {
        diff = fmax(diff, fabs((double)fit[i] - huge[i]));
        scale = fmax(scale, fabs((double)fit[i]));
    }
    CHECK(scale > 1e-2 && diff == 0);
}

int main(void)
{
    be = tb_test_backend();
    test_blocked_roots();
    test_grafting();
    test_adam_grafting();
    test_large_block_size();
    tb_backend_destroy(be);
    return tb_test_finish("test_shampoo");
}

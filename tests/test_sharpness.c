/* test_sharpness.c: sharpness diagnostics (docs/MATH.md section 9) against dense linear
 * algebra: Lanczos against LAPACK's dsyevd for d <= 200, Hessian-vector products against the
 * analytic Hessian of softmax regression, both sharpnesses against dsyevd of H and D H D with
 * the optimizer's own P; the preconditioners against the updates they come from; the
 * stability thresholds against the dynamics they predict (frozen-P Adam diverges exactly
 * above 38/lr); parameters untouched by a measurement; bad arguments. */
#include "testutil.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

static tb_backend *be;

/* ---- dense helpers ------------------------------------------------------------------------ */

/* Eigenvalues of the symmetric n x n row-major a (copied), ascending, into w. */
static void eigenvalues(const double *a, int n, double *w)
{
    double *c = malloc((size_t)n * (size_t)n * sizeof *c);
    memcpy(c, a, (size_t)n * (size_t)n * sizeof *c);
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', n, c, n, w);
    CHECK(info == 0);
    free(c);
}

/* A = Q diag(lambda) Q^T with Q the eigenvectors of a random symmetric matrix. */
static double *with_spectrum(const double *lambda, int n, tb_rng *rng)
{
    double *q = malloc((size_t)n * (size_t)n * sizeof *q), w[256];
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) q[i * n + j] = q[j * n + i] = tb_rng_normal(rng);
    LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, q, n, w); /* columns: eigenvectors */
    double *a = calloc((size_t)n * (size_t)n, sizeof *a);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++) a[i * n + j] += q[i * n + k] * lambda[k] * q[j * n + k];
    free(q);
    return a;
}

typedef struct dense_op {
    const double *a;
    int n;
} dense_op;

static tb_status dense_apply(void *user, const float *x, float *y, tb_error *err)
{
    (void)err;
    const dense_op *d = user;
    for (int i = 0; i < d->n; i++) {
        double s = 0;
        for (int j = 0; j < d->n; j++) s += d->a[i * d->n + j] * x[j];
        y[i] = (float)s;
    }
    return TB_OK;
}

/* ---- Lanczos ------------------------------------------------------------------------------ */

static void test_lanczos_against_dsyevd(void)
{
    tb_rng rng = tb_rng_make(11, 0);
    tb_error err = {0};
    tb_lanczos_result *r = malloc(sizeof *r);
    /* a Hessian-like spectrum, d = 150: outliers 9, 6, 4 over a bulk in [-1, 1] */
    double lam[200], w[200];
    int n = 150;
    lam[0] = 9, lam[1] = 6, lam[2] = 4;
    for (int i = 3; i < n; i++) lam[i] = -1 + 2 * tb_rng_uniform(&rng);
    double *a = with_spectrum(lam, n, &rng);
    eigenvalues(a, n, w);
    dense_op op = {a, n};
    CHECK_OK(tb_lanczos(n, dense_apply, &op, 30, 1, r, &err), &err);
    CHECK(r->iterations == 30);
    for (int j = 0; j < 3; j++) CHECK_NEAR(r->ritz[j], w[n - 1 - j], 1e-4);
    CHECK_NEAR(r->ritz[29], w[0], 0.05); /* the bulk's edge converges more slowly */
    CHECK(fabs(r->ritz[0] - w[n - 1]) <= r->residual[0] + 1e-5);
    CHECK(r->residual[0] < 1e-3);
    free(a);

    /* negative-dominated: power iteration would find -10; Lanczos gives 3 and -10 */
    lam[0] = -10, lam[1] = 3, lam[2] = 2.6;
    a = with_spectrum(lam, n, &rng);
    eigenvalues(a, n, w);
    op.a = a;
    CHECK_OK(tb_lanczos(n, dense_apply, &op, 30, 2, r, &err), &err);
    CHECK_NEAR(r->ritz[0], w[n - 1], 1e-4);
    CHECK_NEAR(r->ritz[0], 3.0, 1e-4);
    CHECK_NEAR(r->ritz[r->iterations - 1], w[0], 1e-4);
    CHECK_NEAR(r->ritz[r->iterations - 1], -10.0, 1e-4);
    free(a);

    /* as many steps as dimensions: every eigenvalue of a random symmetric matrix */
    n = 60;
    a = malloc((size_t)n * (size_t)n * sizeof *a);
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) a[i * n + j] = a[j * n + i] = tb_rng_normal(&rng);
    eigenvalues(a, n, w);
    op = (dense_op){a, n};
    CHECK_OK(tb_lanczos(n, dense_apply, &op, 100, 3, r, &err), &err); /* capped at n */
    CHECK(r->iterations == n);
    double worst = 0;
    for (int j = 0; j < n; j++) worst = fmax(worst, fabs(r->ritz[j] - w[n - 1 - j]));
    CHECK(worst < 1e-4 * fabs(w[n - 1]));
    free(a);

    /* rank 2: the Krylov space (the start vector's part in the null space, and the range)
     * is invariant after 3 steps, and its values 5, 0, -2 are exact */
    n = 50;
    memset(lam, 0, sizeof lam);
    lam[0] = 5, lam[1] = -2;
    a = with_spectrum(lam, n, &rng);
    op = (dense_op){a, n};
    CHECK_OK(tb_lanczos(n, dense_apply, &op, 20, 4, r, &err), &err);
    CHECK(r->iterations == 3);
    CHECK_NEAR(r->ritz[0], 5.0, 1e-5);
    CHECK_NEAR(r->ritz[1], 0.0, 1e-5);
    CHECK_NEAR(r->ritz[2], -2.0, 1e-5);
    free(a);
    free(r);
}

/* ---- softmax regression: analytic Hessian ------------------------------------------------- */
enum { N = 20, IN = 5, C = 3, DIM = C * IN + C };

typedef struct logreg {
    tb_params *params;
    tb_var *w, *b, *x, *y;
    tb_tape *tape;
    int calls, fail_at; /* fail_at > 0: the fail_at-th gradient fails */
} logreg;

static tb_status logreg_grad(void *user, tb_error *err)
{
    logreg *m = user;
    if (++m->calls == m->fail_at) return tb_fail(err, TB_ERR_IO, "gradient %d fails", m->calls);
    tb_tape_reset(m->tape);
    tb_params_begin_grads(m->params);
    tb_var *loss = tb_op_softmax_xent(m->tape, tb_op_linear(m->tape, m->x, m->w, m->b), m->y, 0);
    tb_status st = loss ? tb_tape_backward(m->tape, loss) : tb_tape_status(m->tape);
    tb_params_end_grads(m->params);
    return st == TB_OK ? TB_OK : tb_fail(err, st, "%s", tb_tape_error(m->tape)->message);
}

static void logreg_make(logreg *m, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    tb_params_create(be, &m->params, NULL);
    int64_t ws[2] = {C, IN}, bs[1] = {C}, xs[2] = {N, IN}, ys[1] = {N};
    m->w = tb_params_add(m->params, "w", TB_PARAM_WEIGHT, 2, ws, NULL);
    m->b = tb_params_add(m->params, "b", TB_PARAM_BIAS, 1, bs, NULL);
    tb_params_finalize(m->params, NULL);
    tb_rng rng = tb_rng_make(seed, 0);
    tb_rng_fill_uniform(&rng, m->w->value.data, C * IN, -1, 1);
    tb_rng_fill_uniform(&rng, m->b->value.data, C, -0.5f, 0.5f);
    m->x = tb_test_var(be, 2, xs, &rng, -1, 1, false);
    int32_t labels[N];
    for (int i = 0; i < N; i++) labels[i] = (int32_t)tb_rng_below(&rng, C);
    m->y = tb_test_ivar(be, 1, ys, labels);
    m->tape = tb_test_tape(be);
}

static void logreg_free(logreg *m)
{
    tb_tape_destroy(m->tape);
    tb_test_var_free(m->x);
    tb_test_var_free(m->y);
    tb_params_destroy(m->params);
}

/* H of the mean cross-entropy over (w row-major, then b): sum over examples of
 * (diag(p) - p p^T) (x) [x; 1][x; 1]^T / N. */
static void logreg_hessian(const logreg *m, double *h)
{
    const float *w = m->w->value.data, *b = m->b->value.data, *x = m->x->value.data;
    memset(h, 0, sizeof(double) * DIM * DIM);
    for (int n = 0; n < N; n++) {
        double z[C], p[C], zmax = -1e300, sum = 0, xt[IN + 1];
        for (int i = 0; i < IN; i++) xt[i] = x[n * IN + i];
        xt[IN] = 1;
        for (int c = 0; c < C; c++) {
            z[c] = b[c];
            for (int i = 0; i < IN; i++) z[c] += (double)w[c * IN + i] * xt[i];
            zmax = fmax(zmax, z[c]);
        }
        for (int c = 0; c < C; c++) sum += (p[c] = exp(z[c] - zmax));
        for (int c = 0; c < C; c++) p[c] /= sum;
        for (int c = 0; c < C; c++)
            for (int i = 0; i <= IN; i++)
                for (int c2 = 0; c2 < C; c2++)
                    for (int j = 0; j <= IN; j++) {
                        int r = i < IN ? c * IN + i : C * IN + c;
                        int s = j < IN ? c2 * IN + j : C * IN + c2;
                        h[r * DIM + s] += ((c == c2 ? p[c] : 0) - p[c] * p[c2]) * xt[i] * xt[j] / N;
                    }
    }
}

static double max_abs(const double *a, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

static void test_hvp_against_analytic_hessian(void)
{
    logreg m;
    logreg_make(&m, 5);
    double h[DIM * DIM], hf[DIM * DIM];
    logreg_hessian(&m, h);
    double hmax = max_abs(h, DIM * DIM);
    tb_error err = {0};
    tb_hvp *hvp;
    CHECK_OK(tb_hvp_begin(m.params, logreg_grad, &m, 0, &hvp, &err), &err);
    CHECK(tb_hvp_dim(hvp) == DIM); /* the flat buffers' padding left out */
    CHECK(tb_hvp_step(hvp) > 0);
    /* the dense Hessian column by column: H e_k */
    float e[DIM], col[DIM];
    for (int k = 0; k < DIM; k++) {
        memset(e, 0, sizeof e);
        e[k] = 1;
        CHECK_OK(tb_hvp_apply(hvp, e, col, &err), &err);
        for (int i = 0; i < DIM; i++) hf[i * DIM + k] = col[i];
    }
    double worst = 0, asym = 0;
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++) {
            worst = fmax(worst, fabs(hf[i * DIM + j] - h[i * DIM + j]));
            asym = fmax(asym, fabs(hf[i * DIM + j] - hf[j * DIM + i]));
        }
    printf("H by central differences: max error %.2e, asymmetry %.2e (max |H| %.3f)\n", worst,
           asym, hmax);
    CHECK(worst < 1e-3 * hmax);
    CHECK(asym < 1e-3 * hmax);
    /* a random direction, of any length */
    tb_rng rng = tb_rng_make(3, 0);
    float v[DIM], hv[DIM];
    tb_rng_fill_normal(&rng, v, DIM, 0, 10);
    CHECK_OK(tb_hvp_apply(hvp, v, hv, &err), &err);
    double ref[DIM], diff = 0, size = 0;
    for (int i = 0; i < DIM; i++) {
        ref[i] = 0;
        for (int j = 0; j < DIM; j++) ref[i] += h[i * DIM + j] * v[j];
        diff += (hv[i] - ref[i]) * (hv[i] - ref[i]);
        size += ref[i] * ref[i];
    }
    CHECK(sqrt(diff) < 1e-3 * sqrt(size));
    CHECK(tb_hvp_grad_evals(hvp) == 2 * (DIM + 1));
    memset(v, 0, sizeof v); /* v = 0: H v = 0 without a gradient */
    CHECK_OK(tb_hvp_apply(hvp, v, hv, &err), &err);
    CHECK(hv[0] == 0 && hv[DIM - 1] == 0 && tb_hvp_grad_evals(hvp) == 2 * (DIM + 1));
    tb_hvp_end(hvp);
    logreg_free(&m);
}

/* The optimizer's P over the trainable values (w, then b), as doubles. */
static void packed_p(const logreg *m, const tb_optimizer *opt, double *p)
{
    float flat[64];
    CHECK(tb_params_numel(m->params) <= 64);
    tb_error err = {0};
    CHECK_OK(tb_optimizer_preconditioner(opt, flat, &err), &err);
    int k = 0;
    for (int i = 0; i < 2; i++) {
        const tb_param *prm = tb_params_get(m->params, i);
        for (int64_t j = 0; j < tb_tensor_numel(&prm->var.value); j++) p[k++] = flat[prm->offset + j];
    }
}

static void test_sharpness_against_dsyevd(void)
{
    logreg m;
    logreg_make(&m, 6);
    tb_error err = {0};
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 0.01, NULL);
    tb_optimizer *adam;
    CHECK_OK(tb_optimizer_create("adam", m.params, &hp, &adam, &err), &err);
    for (int s = 0; s < 3; s++) { /* P from real steps */
        CHECK_OK(logreg_grad(&m, &err), &err);
        CHECK_OK(tb_optimizer_step(adam, 1.0, &err), &err);
    }
    double h[DIM * DIM], dhd[DIM * DIM], w[DIM], wp[DIM], p[DIM];
    logreg_hessian(&m, h);
    eigenvalues(h, DIM, w);
    packed_p(&m, adam, p);
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++) dhd[i * DIM + j] = h[i * DIM + j] / sqrt(p[i] * p[j]);
    eigenvalues(dhd, DIM, wp);
    tb_sharpness_config c = tb_sharpness_config_default();
    c.iterations = DIM;
    tb_sharpness s;
    m.calls = 0;
    CHECK_OK(tb_sharpness_measure(m.params, logreg_grad, &m, adam, 0.5, &c, &s, &err), &err);
    printf("softmax regression: lambda_1(H) %.6f (dsyevd %.6f), lambda_1(P^-1 H) %.3f (dsyevd "
           "%.3f)\n", s.lambda_max, w[DIM - 1], s.pre_max, wp[DIM - 1]);
    CHECK_NEAR(s.lambda_max, w[DIM - 1], 1e-3 * w[DIM - 1]);
    CHECK_NEAR(s.lambda_min, w[0], 1e-3 * w[DIM - 1]);
    CHECK_NEAR(s.pre_max, wp[DIM - 1], 1e-3 * wp[DIM - 1]);
    CHECK_NEAR(s.pre_min, wp[0], 1e-3 * wp[DIM - 1]);
    CHECK(s.pre_max > 2 * s.lambda_max); /* P is far from 1: the test tells them apart */
    /* H has rank (C - 1)(IN + 1) = 12 < 18: Lanczos stops when its space is invariant */
    CHECK(s.step == 3 && s.iterations >= 12 && s.iterations <= DIM);
    CHECK_NEAR(s.learning_rate, 0.005, 1e-15);
    CHECK_NEAR(s.threshold, 38.0 / 0.005, 1e-9);
    CHECK(s.grad_evals == m.calls && s.grad_evals <= 4 * DIM);
    /* raw only: half the gradients, no P needed */
    c.preconditioned = false;
    CHECK_OK(tb_sharpness_measure(m.params, logreg_grad, &m, NULL, 1.0, &c, &s, &err), &err);
    CHECK(s.grad_evals == 2 * s.iterations && isnan(s.pre_max) && isnan(s.threshold));
    CHECK_NEAR(s.lambda_max, w[DIM - 1], 1e-3 * w[DIM - 1]);
    /* sgd: P = 1, the preconditioned sharpness is H's, measured once */
    tb_optimizer *sgd;
    CHECK_OK(tb_optimizer_create("sgd", m.params, &hp, &sgd, &err), &err);
    c.preconditioned = true;
    CHECK_OK(tb_sharpness_measure(m.params, logreg_grad, &m, sgd, 1.0, &c, &s, &err), &err);
    CHECK(s.grad_evals == 2 * s.iterations && s.pre_max == s.lambda_max);
    CHECK_NEAR(s.threshold, 3.8 / (2.8 * 0.01), 1e-9); /* nesterov, momentum 0.9 */
    tb_optimizer_destroy(sgd);
    tb_optimizer_destroy(adam);
    logreg_free(&m);
}

/* ---- a measurement leaves the parameters as they were ------------------------------------- */

static void test_parameters_restored(void)
{
    logreg m;
    logreg_make(&m, 7);
    tb_error err = {0};
    tb_optimizer *adam;
    CHECK_OK(tb_optimizer_create("adam", m.params, NULL, &adam, &err), &err);
    CHECK_OK(logreg_grad(&m, &err), &err);
    CHECK_OK(tb_optimizer_step(adam, 1.0, &err), &err);
    CHECK_OK(logreg_grad(&m, &err), &err); /* gradients a later step would use */
    size_t bytes = (size_t)tb_params_numel(m.params) * sizeof(float);
    float *v0 = malloc(bytes), *g0 = malloc(bytes);
    memcpy(v0, tb_params_values(m.params), bytes);
    memcpy(g0, tb_params_grads(m.params), bytes);
    tb_sharpness_config c = tb_sharpness_config_default();
    tb_sharpness s;
    CHECK_OK(tb_sharpness_measure(m.params, logreg_grad, &m, adam, 1.0, &c, &s, &err), &err);
    CHECK(memcmp(v0, tb_params_values(m.params), bytes) == 0);
    CHECK(memcmp(g0, tb_params_grads(m.params), bytes) == 0);
    /* a gradient that fails midway: its error, and everything as it was */
    m.calls = 0;
    m.fail_at = 7;
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, adam, 1.0, &c, &s, &err),
                TB_ERR_IO, &err, "gradient 7 fails");
    CHECK(memcmp(v0, tb_params_values(m.params), bytes) == 0);
    CHECK(memcmp(g0, tb_params_grads(m.params), bytes) == 0);
    m.fail_at = 0;
    /* a gradient that is not finite: TB_ERR_NUMERIC, restored */
    ((float *)m.x->value.data)[0] = NAN;
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, adam, 1.0, &c, &s, &err),
                TB_ERR_NUMERIC, &err, "not finite");
    CHECK(memcmp(v0, tb_params_values(m.params), bytes) == 0);
    CHECK(memcmp(g0, tb_params_grads(m.params), bytes) == 0);
    free(v0);
    free(g0);
    tb_optimizer_destroy(adam);
    logreg_free(&m);
}

/* Batch norm on a frozen-statistics tape: the batch's statistics, no running update. */
static void test_frozen_statistics(void)
{
    int64_t xs[2] = {8, 3}, cs[1] = {3};
    tb_rng rng = tb_rng_make(9, 0);
    tb_var *x = tb_test_var(be, 2, xs, &rng, -2, 2, false);
    tb_var *g = tb_test_var(be, 1, cs, &rng, 0.5f, 1.5f, true);
    tb_var *b = tb_test_var(be, 1, cs, &rng, -0.5f, 0.5f, true);
    tb_var *rm = tb_test_var(be, 1, cs, &rng, -0.1f, 0.1f, false);
    tb_var *rv = tb_test_var(be, 1, cs, &rng, 0.9f, 1.1f, false);
    float rm0[3], rv0[3], y_frozen[24], y_free[24];
    memcpy(rm0, rm->value.data, sizeof rm0);
    memcpy(rv0, rv->value.data, sizeof rv0);
    tb_tape *t = tb_test_tape(be);
    CHECK(!tb_tape_freezes_running_stats(t));
    tb_tape_set_freeze_running_stats(t, true);
    CHECK(tb_tape_freezes_running_stats(t) && tb_tape_training(t));
    tb_var *y = tb_op_batchnorm(t, x, g, b, &rm->value, &rv->value, 0.1f, 1e-5f);
    CHECK(y != NULL && tb_tape_backward(t, tb_test_reduce(t, y)) == TB_OK);
    memcpy(y_frozen, y->value.data, sizeof y_frozen);
    CHECK(memcmp(rm0, rm->value.data, sizeof rm0) == 0);
    CHECK(memcmp(rv0, rv->value.data, sizeof rv0) == 0);
    tb_tape_reset(t);
    tb_tape_set_freeze_running_stats(t, false); /* the same pass updates them */
    y = tb_op_batchnorm(t, x, g, b, &rm->value, &rv->value, 0.1f, 1e-5f);
    CHECK(y != NULL);
    memcpy(y_free, y->value.data, sizeof y_free);
    CHECK(memcmp(y_frozen, y_free, sizeof y_free) == 0);
    CHECK(memcmp(rm0, rm->value.data, sizeof rm0) != 0);
    tb_tape_destroy(t);
    tb_var *vars[] = {x, g, b, rm, rv};
    for (int i = 0; i < 5; i++) tb_test_var_free(vars[i]);
}

/* ---- the optimizers' preconditioners ------------------------------------------------------ */

/* params "w" [3] (weight) and "b" [2] (bias) with values 1, -2, 3, 0.5, -0.5 */
static tb_params *small_params(void)
{
    const float w[3] = {1, -2, 3}, b[2] = {0.5f, -0.5f};
    return tb_test_params_wb(be, w, b, NULL, NULL);
}

/* Sets the gradients to scale * (0.1, -0.2, 0.3 | 1, -1). */
static void set_grads(tb_params *p, float scale, float *g5)
{
    const float g[5] = {0.1f, -0.2f, 0.3f, 1, -1};
    for (int i = 0; i < 5; i++) g5[i] = scale * g[i];
    memcpy(tb_params_get(p, 0)->var.grad.data, g5, 3 * sizeof(float));
    memcpy(tb_params_get(p, 1)->var.grad.data, g5 + 3, 2 * sizeof(float));
}

static float value_at(tb_params *p, int k)
{
    return k < 3 ? ((float *)tb_params_get(p, 0)->var.value.data)[k]
                 : ((float *)tb_params_get(p, 1)->var.value.data)[k - 3];
}

static float p_at(tb_params *params, const float *flat, int k)
{
    return flat[k < 3 ? tb_params_get(params, 0)->offset + k
                      : tb_params_get(params, 1)->offset + k - 3];
}

/* P after one step with gradient g is closed-form: f(g) for each algorithm. */
static void check_first_p(const char *alg, const tb_hparams *hp, double (*f)(double g))
{
    tb_params *params = small_params();
    tb_optimizer *opt;
    tb_error err = {0};
    CHECK_OK(tb_optimizer_create(alg, params, hp, &opt, &err), &err);
    float g[5], flat[64];
    set_grads(params, 1, g);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    CHECK_OK(tb_optimizer_preconditioner(opt, flat, &err), &err);
    for (int k = 0; k < 5; k++) {
        /* float: 1 - beta2 and its inverse are rounded, relative 1e-5 */
        bool ok = CHECK_NEAR(p_at(params, flat, k), f(g[k]), 2e-5 * f(g[k]));
        if (!ok) printf("  %s, value %d\n", alg, k);
    }
    tb_optimizer_destroy(opt);
    tb_params_destroy(params);
}

static double adam_p1(double g) { return fabs(g) + 1e-8; }
static double rms_tf_p1(double g) { return sqrt(0.9 + 0.1 * g * g + 1e-10); }
static double rms_torch_p1(double g) { return sqrt(0.1 * g * g) + 1e-10; }
static double adagrad_p1(double g) { return sqrt(0.1 + g * g) + 1e-7; }
static double one(double g) { return (void)g, 1.0; }

static void test_preconditioners(void)
{
    tb_hparams hp = {0};
    check_first_p("adam", &hp, adam_p1); /* v_hat = g^2 after one step */
    check_first_p("adamw", &hp, adam_p1);
    check_first_p("nadam", &hp, adam_p1);
    check_first_p("nadamw", &hp, adam_p1);
    check_first_p("rmsprop", &hp, rms_tf_p1);
    check_first_p("adagrad", &hp, adagrad_p1);
    check_first_p("sgd", &hp, one);
    check_first_p("momentum", &hp, one);
    tb_hparams_set(&hp, "torch_style", 1, NULL);
    check_first_p("rmsprop", &hp, rms_torch_p1);

    /* P is what the update divided by: with beta1 = 0, w_old - w_new = lr g / P at every step
     * (bias correction of v included) */
    tb_params *params = small_params();
    tb_hparams ah = {0};
    tb_hparams_set(&ah, "beta1", 0, NULL);
    tb_hparams_set(&ah, "learning_rate", 0.01, NULL);
    tb_optimizer *opt;
    tb_error err = {0};
    CHECK_OK(tb_optimizer_create("adam", params, &ah, &opt, &err), &err);
    float flat[64];
    CHECK_FAILS(tb_optimizer_preconditioner(opt, flat, &err), TB_ERR_INVALID, &err,
                "no step taken yet");
    for (int t = 1; t <= 4; t++) {
        float g[5], before[5];
        set_grads(params, (float)t * 0.7f, g);
        for (int k = 0; k < 5; k++) before[k] = value_at(params, k);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        CHECK_OK(tb_optimizer_preconditioner(opt, flat, &err), &err);
        for (int k = 0; k < 5; k++) {
            double implied = (double)(before[k] - value_at(params, k)) * p_at(params, flat, k) / 0.01;
            CHECK_NEAR(implied, g[k], 1e-4 * fabs(g[k]));
        }
    }
    tb_optimizer_destroy(opt);

    /* no diagonal P: said so, by name */
    const char *none[] = {"lars", "lamb", "kfac", "ekfac", "shampoo"};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(tb_optimizer_create(none[i], params, NULL, &opt, &err), &err);
        CHECK(tb_optimizer_preconditioner_blocker(opt) != NULL);
        CHECK_FAILS(tb_optimizer_preconditioner(opt, flat, &err), TB_ERR_UNSUPPORTED, &err,
                    "no diagonal preconditioner");
        CHECK(strstr(err.message, none[i]) == err.message);
        double thr;
        CHECK_FAILS(tb_optimizer_stability_threshold(opt, 1.0, &thr, &err), TB_ERR_UNSUPPORTED,
                    &err, "no diagonal preconditioner");
        tb_optimizer_destroy(opt);
    }
    CHECK_OK(tb_optimizer_create("adamw", params, NULL, &opt, &err), &err);
    CHECK(tb_optimizer_preconditioner_blocker(opt) == NULL);
    CHECK_FAILS(tb_optimizer_preconditioner(opt, NULL, &err), TB_ERR_INVALID, &err, "NULL");
    tb_optimizer_destroy(opt);
    CHECK(tb_optimizer_preconditioner_blocker(NULL) != NULL);
    CHECK_FAILS(tb_optimizer_preconditioner(NULL, flat, &err), TB_ERR_INVALID, &err, "NULL");
    tb_params_destroy(params);
}

/* ---- stability thresholds ----------------------------------------------------------------- */

static double threshold_of(const char *alg, const tb_hparams *hp, double lr_scale)
{
    tb_params *params = small_params();
    tb_optimizer *opt;
    tb_error err = {0};
    double t = NAN;
    CHECK_OK(tb_optimizer_create(alg, params, hp, &opt, &err), &err);
    CHECK_OK(tb_optimizer_stability_threshold(opt, lr_scale, &t, &err), &err);
    tb_optimizer_destroy(opt);
    tb_params_destroy(params);
    return t;
}

static void test_threshold_formulas(void)
{
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 0.01, NULL);
    CHECK_NEAR(threshold_of("adam", &hp, 1.0), 3800, 1e-9);  /* 38 / lr */
    CHECK_NEAR(threshold_of("adamw", &hp, 0.5), 7600, 1e-9); /* at the schedule's factor */
    CHECK_NEAR(threshold_of("nadamw", &hp, 1.0), 3.8 / (0.1 * 2.8 * 0.01), 1e-9);
    CHECK_NEAR(threshold_of("momentum", &hp, 1.0), 3.8 / 0.01, 1e-9);
    CHECK_NEAR(threshold_of("nesterov", &hp, 1.0), 3.8 / (2.8 * 0.01), 1e-9);
    CHECK_NEAR(threshold_of("adagrad", &hp, 1.0), 200, 1e-9);
    CHECK_NEAR(threshold_of("rmsprop", &hp, 1.0), 200, 1e-9); /* momentum 0 by default */
    CHECK(isinf(threshold_of("adam", &hp, 0.0)));             /* no step: always stable */
    tb_hparams_set(&hp, "momentum", 0, NULL);
    CHECK_NEAR(threshold_of("sgd", &hp, 1.0), 200, 1e-9); /* gradient descent: 2 / lr */
    tb_hparams_set(&hp, "momentum", 0.5, NULL);
    CHECK_NEAR(threshold_of("rmsprop", &hp, 1.0), 300, 1e-9);
    tb_hparams b1 = {0};
    tb_hparams_set(&b1, "learning_rate", 0.01, NULL);
    tb_hparams_set(&b1, "beta1", 0.95, NULL);
    CHECK_NEAR(threshold_of("adam", &b1, 1.0), 3.9 / (0.05 * 0.01), 1e-6);

    tb_params *params = small_params();
    tb_optimizer *opt;
    tb_error err = {0};
    double t;
    tb_hparams psi = {0};
    tb_hparams_set(&psi, "momentum_decay", 0.004, NULL);
    CHECK_OK(tb_optimizer_create("nadam", params, &psi, &opt, &err), &err);
    CHECK_FAILS(tb_optimizer_stability_threshold(opt, 1.0, &t, &err), TB_ERR_UNSUPPORTED, &err,
                "momentum_decay");
    CHECK_FAILS(tb_optimizer_stability_threshold(opt, -1.0, &t, &err), TB_ERR_INVALID, &err,
                "-1");
    CHECK_FAILS(tb_optimizer_stability_threshold(opt, NAN, &t, &err), TB_ERR_INVALID, &err,
                "not a finite");
    CHECK_FAILS(tb_optimizer_stability_threshold(opt, 1.0, NULL, &err), TB_ERR_INVALID, &err,
                "NULL");
    tb_optimizer_destroy(opt);
    tb_params_destroy(params);
}

/* ---- the thresholds predict the dynamics -------------------------------------------------- */
enum { QD = 10 };

typedef struct quad {
    tb_params *params;
    tb_var *x;
    double a[QD * QD];
} quad;

/* gradient of 1/2 x^T A x */
static tb_status quad_grad(void *user, tb_error *err)
{
    (void)err;
    quad *q = user;
    const float *x = q->x->value.data;
    float *g = q->x->grad.data;
    for (int i = 0; i < QD; i++) {
        double s = 0;
        for (int j = 0; j < QD; j++) s += q->a[i * QD + j] * x[j];
        g[i] = (float)s;
    }
    return TB_OK;
}

/* A random SPD quadratic with eigenvalues in [0.1, 1] and a start x of norm ~1. */
static void quad_make(quad *q, uint64_t seed)
{
    tb_rng rng = tb_rng_make(seed, 0);
    double lam[QD];
    for (int i = 0; i < QD; i++) lam[i] = 0.1 + 0.9 * i / (QD - 1);
    double *a = with_spectrum(lam, QD, &rng);
    memcpy(q->a, a, sizeof q->a);
    free(a);
    tb_params_create(be, &q->params, NULL);
    int64_t n = QD;
    q->x = tb_params_add(q->params, "x", TB_PARAM_WEIGHT, 1, &n, NULL);
    tb_params_finalize(q->params, NULL);
    tb_rng_fill_uniform(&rng, q->x->value.data, QD, -0.5f, 0.5f);
}

/* Runs a real first-order optimizer (P = 1) at lr for 3000 steps on the quadratic scaled so
 * that lambda_1(A) = ratio * the optimizer's threshold; returns ||x_end|| / ||x_0|| (stops
 * early once it exceeds 1e6). */
static double run_real(const char *alg, double mu, double ratio)
{
    quad q;
    quad_make(&q, 21);
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 0.05, NULL);
    tb_hparams_set(&hp, "momentum", mu, NULL);
    if (strcmp(alg, "sgd") == 0) tb_hparams_set(&hp, "nesterov", 0, NULL);
    tb_optimizer *opt;
    tb_error err = {0};
    CHECK_OK(tb_optimizer_create(alg, q.params, &hp, &opt, &err), &err);
    double thr, w[QD];
    CHECK_OK(tb_optimizer_stability_threshold(opt, 1.0, &thr, &err), &err);
    eigenvalues(q.a, QD, w);
    for (int i = 0; i < QD * QD; i++) q.a[i] *= ratio * thr / w[QD - 1];
    const float *x = q.x->value.data;
    double n0 = 0, n = 0;
    for (int i = 0; i < QD; i++) n0 += (double)x[i] * x[i];
    for (int s = 0; s < 3000 && !(n > 1e12 * n0); s++) {
        quad_grad(&q, &err);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        n = 0;
        for (int i = 0; i < QD; i++) n += (double)x[i] * x[i];
    }
    tb_optimizer_destroy(opt);
    tb_params_destroy(q.params);
    return sqrt(n / n0);
}

/* The frozen-P iteration x -= eta (alpha m + gamma A x) / P, m = beta1 m + (1 - beta1) A x,
 * for 10000 steps; returns ||x_end|| / ||x_0|| (stops early past 1e6). At 0.1% above the
 * threshold the largest root's modulus is 1.030 for Adam, 1.0029 for NAdam: 10000 steps tell
 * either apart from 0.1% below. */
static double run_frozen(const quad *q, const double *p, double eta, double b1, bool nesterov)
{
    double x[QD], m[QD] = {0}, g[QD], n0 = 0, n = 0;
    for (int i = 0; i < QD; i++) {
        x[i] = ((const float *)q->x->value.data)[i];
        n0 += x[i] * x[i];
    }
    double alpha = nesterov ? b1 : 1.0, gamma = nesterov ? 1.0 - b1 : 0.0;
    for (int s = 0; s < 10000 && !(n > 1e12 * n0); s++) {
        for (int i = 0; i < QD; i++) {
            g[i] = 0;
            for (int j = 0; j < QD; j++) g[i] += q->a[i * QD + j] * x[j];
        }
        n = 0;
        for (int i = 0; i < QD; i++) {
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            x[i] -= eta * (alpha * m[i] + gamma * g[i]) / p[i];
            n += x[i] * x[i];
        }
    }
    return sqrt(n / n0);
}

static void test_thresholds_predict_divergence(void)
{
    /* real optimizers with P = 1: stable 1% below their threshold, diverging 1% above */
    const char *algs[] = {"sgd", "momentum", "nesterov"};
    const double mus[] = {0.0, 0.9, 0.9};
    for (int i = 0; i < 3; i++) {
        double below = run_real(algs[i], mus[i], 0.99), above = run_real(algs[i], mus[i], 1.01);
        printf("%s: ||x|| ratio %.3g at 0.99 x threshold, %.3g at 1.01 x\n", algs[i], below,
               above);
        CHECK(below < 1.0);
        CHECK(above > 1e6);
    }
    /* frozen-preconditioner Adam (and NAdam) on a quadratic with the P of a real adam run:
     * diverges exactly when lambda_1(P^-1 A) > threshold (38/eta at beta1 = 0.9) */
    quad q;
    quad_make(&q, 22);
    tb_error err = {0};
    tb_optimizer *adam;
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 0.01, NULL);
    CHECK_OK(tb_optimizer_create("adam", q.params, &hp, &adam, &err), &err);
    float saved[QD];
    memcpy(saved, q.x->value.data, sizeof saved);
    for (int s = 0; s < 5; s++) {
        quad_grad(&q, &err);
        CHECK_OK(tb_optimizer_step(adam, 1.0, &err), &err);
    }
    memcpy(q.x->value.data, saved, sizeof saved); /* the start point again; P from the run */
    float flat[64];
    double p[QD], dad[QD * QD], w[QD];
    CHECK_OK(tb_optimizer_preconditioner(adam, flat, &err), &err);
    for (int i = 0; i < QD; i++) p[i] = flat[i]; /* x is the only parameter: offset 0 */
    for (int i = 0; i < QD; i++)
        for (int j = 0; j < QD; j++) dad[i * QD + j] = q.a[i * QD + j] / sqrt(p[i] * p[j]);
    eigenvalues(dad, QD, w);
    tb_sharpness_config c = tb_sharpness_config_default();
    tb_sharpness s;
    CHECK_OK(tb_sharpness_measure(q.params, quad_grad, &q, adam, 1.0, &c, &s, &err), &err);
    CHECK_NEAR(s.pre_max, w[QD - 1], 1e-4 * w[QD - 1]);
    CHECK_NEAR(s.threshold, 3800, 1e-9);
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        tb_optimizer *opt = adam;
        if (nesterov) CHECK_OK(tb_optimizer_create("nadam", q.params, &hp, &opt, &err), &err);
        double thr;
        CHECK_OK(tb_optimizer_stability_threshold(opt, 1.0, &thr, &err), &err);
        /* threshold(eta) = thr * 0.01 / eta; lambda_1 = ratio * threshold(eta) */
        for (int k = 0; k < 4; k++) {
            const double ratios[] = {0.99, 0.999, 1.001, 1.01};
            double eta = ratios[k] * thr * 0.01 / s.pre_max;
            double growth = run_frozen(&q, p, eta, 0.9, nesterov);
            printf("frozen %s: lambda_1(P^-1 A) = %.3f x threshold: ||x|| ratio %.3g\n",
                   nesterov ? "nadam" : "adam", ratios[k], growth);
            CHECK(ratios[k] < 1 ? growth < 1e-2 : growth > 1e3);
        }
        if (nesterov) tb_optimizer_destroy(opt);
    }
    tb_optimizer_destroy(adam);
    tb_params_destroy(q.params);
}

/* ---- bad arguments ------------------------------------------------------------------------ */

static void test_bad_arguments(void)
{
    tb_error err = {0};
    tb_lanczos_result *r = malloc(sizeof *r);
    double a[4] = {1, 0, 0, 2};
    dense_op op = {a, 2};
    CHECK_FAILS(tb_lanczos(2, dense_apply, &op, 0, 0, r, &err), TB_ERR_INVALID, &err,
                "iterations must be 1 to 256, got 0");
    CHECK_FAILS(tb_lanczos(2, dense_apply, &op, 257, 0, r, &err), TB_ERR_INVALID, &err, "257");
    CHECK_FAILS(tb_lanczos(0, dense_apply, &op, 5, 0, r, &err), TB_ERR_INVALID, &err,
                "dimension 0");
    CHECK_FAILS(tb_lanczos(2, NULL, &op, 5, 0, r, &err), TB_ERR_INVALID, &err, "operator");
    CHECK_FAILS(tb_lanczos(2, dense_apply, &op, 5, 0, NULL, &err), TB_ERR_INVALID, &err, "out");
    a[3] = NAN;
    CHECK_FAILS(tb_lanczos(2, dense_apply, &op, 2, 0, r, &err), TB_ERR_NUMERIC, &err,
                "not finite");
    free(r);

    logreg m;
    logreg_make(&m, 8);
    tb_optimizer *opt;
    CHECK_OK(tb_optimizer_create("adam", m.params, NULL, &opt, &err), &err);
    tb_sharpness_config c = tb_sharpness_config_default();
    tb_sharpness s;
    m.calls = 0;
    /* each fails before a gradient is evaluated */
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, opt, 1.0, &c, &s, &err),
                TB_ERR_INVALID, &err, "no step taken yet");
    c.iterations = 0;
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, opt, 1.0, &c, &s, &err),
                TB_ERR_INVALID, &err, "iterations must be 1 to 256, got 0");
    c = tb_sharpness_config_default();
    CHECK_FAILS(tb_sharpness_measure(NULL, logreg_grad, &m, opt, 1.0, &c, &s, &err),
                TB_ERR_INVALID, &err, "params is NULL");
    CHECK_FAILS(tb_sharpness_measure(m.params, NULL, &m, opt, 1.0, &c, &s, &err),
                TB_ERR_INVALID, &err, "gradient function is NULL");
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, opt, 1.0, NULL, &s, &err),
                TB_ERR_INVALID, &err, "configuration is NULL");
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, NULL, 1.0, &c, &s, &err),
                TB_ERR_INVALID, &err, "needs the optimizer");
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, opt, -2.0, &c, &s, &err),
                TB_ERR_INVALID, &err, "-2");
    tb_optimizer_destroy(opt);
    CHECK_OK(tb_optimizer_create("kfac", m.params, NULL, &opt, &err), &err);
    CHECK_FAILS(tb_sharpness_measure(m.params, logreg_grad, &m, opt, 1.0, &c, &s, &err),
                TB_ERR_UNSUPPORTED, &err, "kfac has no diagonal preconditioner");
    tb_optimizer_destroy(opt);
    CHECK(m.calls == 0);

    tb_hvp *h = NULL;
    CHECK_FAILS(tb_hvp_begin(m.params, logreg_grad, &m, -1, &h, &err), TB_ERR_INVALID, &err,
                "relative step -1");
    CHECK_FAILS(tb_hvp_begin(m.params, NULL, &m, 0, &h, &err), TB_ERR_INVALID, &err,
                "gradient function");
    CHECK_FAILS(tb_hvp_apply(NULL, NULL, NULL, &err), TB_ERR_INVALID, &err, "NULL");
    ((float *)m.w->value.data)[1] = INFINITY;
    CHECK_FAILS(tb_hvp_begin(m.params, logreg_grad, &m, 0, &h, &err), TB_ERR_NUMERIC, &err,
                "not finite");
    CHECK(h == NULL && m.calls == 0);
    tb_hvp_end(NULL);
    logreg_free(&m);
}

int main(void)
{
    be = tb_test_backend();
    test_lanczos_against_dsyevd();
    test_hvp_against_analytic_hessian();
    test_sharpness_against_dsyevd();
    test_parameters_restored();
    test_frozen_statistics();
    test_preconditioners();
    test_threshold_formulas();
    test_thresholds_predict_divergence();
    test_bad_arguments();
    tb_backend_destroy(be);
    return tb_test_finish("test_sharpness");
}

/* test_kfac.c: K-FAC and EKFAC against dense linear algebra on tiny layers: the Kronecker
 * solve, the exact Gauss-Newton step on least squares, EKFAC's re-initialised scaling, the
 * Frobenius inequality, eigenbasis round trips, convolution factors (KFC), the Fisher
 * handshake and label sampling, hyperparameter validation, and a short Fashion-MNIST run. */
#include "testutil.h"

#include "optim/kfac_impl.h"
#include "trainbench/data.h"

#include <stdlib.h>
#include <string.h>

static tb_backend *be;
static tb_tape *tape;

/* ---- helpers ------------------------------------------------------------------------------- */

static tb_var *host_var(int ndim, const int64_t *shape, const float *data)
{
    tb_var *v = tb_tape_new_var(tape, TB_F32, ndim, shape, false);
    if (v) tb_backend_upload(be, v->value.data, data, tb_tensor_bytes(&v->value));
    return v;
}

static void rand_fill(tb_rng *r, float *x, int n, float lo, float hi)
{
    for (int i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)tb_rng_uniform(r);
}

/* One dense layer in -> out with bias, its parameters, and its data. */
typedef struct dense_model {
    tb_params *params;
    tb_linear_layer l;
    int in, out, n;
} dense_model;

static void dense_make(dense_model *m, int in, int out, int n, tb_rng *r)
{
    m->in = in;
    m->out = out;
    m->n = n;
    tb_params_create(be, &m->params, NULL);
    tb_linear_layer_init(&m->l, m->params, "fc", in, out, true, NULL);
    tb_params_finalize(m->params, NULL);
    tb_init_uniform(m->l.w, r, -0.5f, 0.5f, NULL);
    tb_init_uniform(m->l.b, r, -0.5f, 0.5f, NULL);
}

/* Forward x [n, in], mse against y [n, out], backward. Returns the loss. */
static double dense_pass(dense_model *m, const float *x, const float *y)
{
    tb_tape_reset(tape);
    tb_params_zero_grad(m->params);
    int64_t xs[2] = {m->n, m->in}, ys[2] = {m->n, m->out};
    tb_var *out = tb_linear_layer_forward(tape, &m->l, host_var(2, xs, x));
    tb_var *loss = tb_op_mse(tape, out, host_var(2, ys, y));
    if (!CHECK(loss && tb_tape_backward(tape, loss) == TB_OK)) return NAN;
    return be->ops.read_scalar(be, loss->value.data);
}

/* Host copies of the layer's a-bar [n, din] and h = n g [n, out] after a pass (double). */
static void dense_ah(dense_model *m, double *abar, double *h)
{
    int din = m->in + 1;
    float *f = malloc((size_t)m->n * (m->in > m->out ? m->in : m->out) * sizeof *f);
    tb_backend_download(be, f, m->l.input->value.data, (size_t)m->n * m->in * 4);
    for (int r = 0; r < m->n; r++) {
        for (int j = 0; j < m->in; j++) abar[r * din + j] = f[r * m->in + j];
        abar[r * din + m->in] = 1.0;
    }
    tb_backend_download(be, f, m->l.output->grad.data, (size_t)m->n * m->out * 4);
    for (int i = 0; i < m->n * m->out; i++) h[i] = (double)f[i] * m->n;
    free(f);
}

/* C[a, b] = (1/n) X^T X for X [n, d] */
static void gram(const double *x, int n, int d, double *c)
{
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double s = 0;
            for (int r = 0; r < n; r++) s += x[r * d + i] * x[r * d + j];
            c[i * d + j] = s / n;
        }
}

/* W-bar = [W, b] [out, in+1] of the parameter values (or gradients) on the host. */
static void dense_wbar(dense_model *m, bool grad, double *wbar)
{
    int din = m->in + 1;
    float *w = malloc((size_t)m->out * m->in * 4), b[64];
    tb_backend_download(be, w, grad ? m->l.w->grad.data : m->l.w->value.data,
                        (size_t)m->out * m->in * 4);
    tb_backend_download(be, b, grad ? m->l.b->grad.data : m->l.b->value.data,
                        (size_t)m->out * 4);
    for (int i = 0; i < m->out; i++) {
        for (int j = 0; j < m->in; j++) wbar[i * din + j] = w[i * m->in + j];
        wbar[i * din + m->in] = b[i];
    }
    free(w);
}

/* Solves M x = b (M [n, n], overwritten) by Gaussian elimination with partial pivoting. */
static void dense_solve(int n, double *M, double *b)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(M[r * n + c]) > fabs(M[p * n + c])) p = r;
        for (int k = 0; k < n; k++) {
            double t = M[c * n + k];
            M[c * n + k] = M[p * n + k];
            M[p * n + k] = t;
        }
        double t = b[c];
        b[c] = b[p];
        b[p] = t;
        for (int r = c + 1; r < n; r++) {
            double f = M[r * n + c] / M[c * n + c];
            for (int k = c; k < n; k++) M[r * n + k] -= f * M[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        for (int k = c + 1; k < n; k++) b[c] -= M[c * n + k] * b[k];
        b[c] /= M[c * n + c];
    }
}

/* M = (A + da I) (x) (G + dg I) + de I in the column-major vec order of [dout, din]. */
static void kron_dense(int din, const double *A, double da, int dout, const double *G, double dg,
                       double de, double *M)
{
    int n = din * dout;
    for (int j = 0; j < din; j++)
        for (int i = 0; i < dout; i++)
            for (int j2 = 0; j2 < din; j2++)
                for (int i2 = 0; i2 < dout; i2++) {
                    double a = A[j * din + j2] + (j == j2 ? da : 0);
                    double g = G[i * dout + i2] + (i == i2 ? dg : 0);
                    M[(j * dout + i) * n + j2 * dout + i2] =
                        a * g + ((j == j2 && i == i2) ? de : 0);
                }
}

static tb_optimizer *make_opt(const char *name, tb_params *p, const char *const *names,
                              const double *values, int n)
{
    tb_hparams hp = {0};
    for (int i = 0; i < n; i++) tb_hparams_set(&hp, names[i], values[i], NULL);
    tb_optimizer *opt = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_optimizer_create(name, p, &hp, &opt, &err), &err)) exit(1);
    return opt;
}

/* ---- (1) and (3): Kronecker solve and EKFAC's re-initialised scaling vs dense solves ---------- */

static void check_against_dense(bool ekfac)
{
    tb_rng r = tb_rng_make(11, 0);
    dense_model m;
    dense_make(&m, 5, 4, 12, &r);
    int din = 6, dout = 4, nn = din * dout;
    float x[60], yf[48], y[48];
    rand_fill(&r, x, 60, -1, 1);
    rand_fill(&r, yf, 48, -1, 1);
    rand_fill(&r, y, 48, -1, 1);
    const double lambda = 0.1;
    const char *names[] = {"learning_rate", "momentum", "damping", "kl_clip", "stat_decay",
                           "cov_interval", "inv_interval"};
    double values[] = {1.0, 0.0, lambda, 0.0, 0.0, 1, 1};
    tb_optimizer *opt = make_opt(ekfac ? "ekfac" : "kfac", m.params, names, values, 7);
    tb_layer_ref ref = tb_layer_linear(&m.l);
    tb_error err = {0};
    CHECK_OK(tb_optimizer_set_layers(opt, &ref, 1, &err), &err);
    CHECK(tb_optimizer_wants_fisher(opt));
    dense_pass(&m, x, yf); /* the "Fisher" pass: any targets */
    double abar[72], h[48], A[36], G[16], grad[24], w0[24], w1[24];
    dense_ah(&m, abar, h);
    gram(abar, m.n, din, A);
    gram(h, m.n, dout, G);
    CHECK_OK(tb_optimizer_update_fisher(opt, &err), &err);
    dense_pass(&m, x, y);
    dense_wbar(&m, true, grad);
    dense_wbar(&m, false, w0);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    dense_wbar(&m, false, w1);

    double *M = malloc((size_t)nn * nn * sizeof *M), b[24];
    if (ekfac) {
        kron_dense(din, A, 0, dout, G, 0, lambda, M);
    } else {
        double ta = 0, tg = 0;
        for (int i = 0; i < din; i++) ta += A[i * din + i];
        for (int i = 0; i < dout; i++) tg += G[i * dout + i];
        double pi = sqrt((ta / din) / (tg / dout));
        kron_dense(din, A, pi * sqrt(lambda), dout, G, sqrt(lambda) / pi, 0, M);
    }
    for (int j = 0; j < din; j++)
        for (int i = 0; i < dout; i++) b[j * dout + i] = grad[i * din + j];
    dense_solve(nn, M, b);
    double worst = 0, scale = 0;
    for (int j = 0; j < din; j++)
        for (int i = 0; i < dout; i++) {
            double step = w0[i * din + j] - w1[i * din + j];
            worst = fmax(worst, fabs(step - b[j * dout + i]));
            scale = fmax(scale, fabs(b[j * dout + i]));
        }
    printf("%s vs dense solve: max |diff| %.3g (max |step| %.3g)\n", ekfac ? "ekfac" : "kfac",
           worst, scale);
    CHECK(scale > 1e-3);
    CHECK(worst <= 2e-4 * scale);
    free(M);
    tb_optimizer_destroy(opt);
    tb_params_destroy(m.params);
}

/* ---- (2): exact Gauss-Newton on linear least squares ------------------------------------------- */

static void test_least_squares(void)
{
    tb_rng r = tb_rng_make(12, 0);
    dense_model m;
    enum { IN = 3, OUT = 2, N = 8, DIN = IN + 1 };
    dense_make(&m, IN, OUT, N, &r);
    float x[N * IN], y[N * OUT], yf[N * OUT];
    rand_fill(&r, x, N * IN, -1, 1);
    rand_fill(&r, y, N * OUT, -2, 2);
    double w0[OUT * DIN], w1[OUT * DIN], abar[N * DIN];
    dense_wbar(&m, false, w0);
    for (int n = 0; n < N; n++) {
        for (int j = 0; j < IN; j++) abar[n * DIN + j] = x[n * IN + j];
        abar[n * DIN + IN] = 1;
    }
    /* Fisher targets chosen so that h = N g = sqrt(2) e_(n mod OUT): G = (2/OUT) I exactly,
     * the Fisher (and Hessian) of the per-example loss (1/OUT)|s - y|^2 */
    for (int n = 0; n < N; n++)
        for (int i = 0; i < OUT; i++) {
            double s = 0;
            for (int j = 0; j < DIN; j++) s += w0[i * DIN + j] * abar[n * DIN + j];
            yf[n * OUT + i] = (float)(s - (i == n % OUT ? OUT / 2.0 * sqrt(2.0) : 0.0));
        }
    /* damping must be > 0; 1e-12 moves the exact Gauss-Newton step by about 1e-6 */
    const char *names[] = {"learning_rate", "momentum", "damping", "kl_clip", "stat_decay"};
    double values[] = {1.0, 0.0, 1e-12, 0.0, 0.0};
    tb_optimizer *opt = make_opt("kfac", m.params, names, values, 5);
    tb_layer_ref ref = tb_layer_linear(&m.l);
    tb_error err = {0};
    CHECK_OK(tb_optimizer_set_layers(opt, &ref, 1, &err), &err);
    dense_pass(&m, x, yf);
    CHECK_OK(tb_optimizer_update_fisher(opt, &err), &err);
    tb_kfac_state *s = opt->state;
    float G[OUT * OUT];
    tb_backend_download(be, G, s->layers[0].G, sizeof G);
    CHECK_NEAR(G[0], 1.0, 1e-5);
    CHECK_NEAR(G[1], 0.0, 1e-5);
    double loss0 = dense_pass(&m, x, y);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    dense_wbar(&m, false, w1);
    double loss1 = dense_pass(&m, x, y);
    /* least squares: W* = Y^T Abar (Abar^T Abar)^-1, row by row */
    double worst = 0;
    for (int i = 0; i < OUT; i++) {
        double M[DIN * DIN], b[DIN];
        for (int j = 0; j < DIN; j++) {
            b[j] = 0;
            for (int n = 0; n < N; n++) b[j] += abar[n * DIN + j] * y[n * OUT + i];
            for (int k = 0; k < DIN; k++) {
                M[j * DIN + k] = 0;
                for (int n = 0; n < N; n++) M[j * DIN + k] += abar[n * DIN + j] * abar[n * DIN + k];
            }
        }
        dense_solve(DIN, M, b);
        for (int j = 0; j < DIN; j++) worst = fmax(worst, fabs(w1[i * DIN + j] - b[j]));
    }
    printf("least squares: loss %.5f -> %.5f, max |W - W*| %.3g\n", loss0, loss1, worst);
    CHECK(worst < 1e-4);
    tb_optimizer_destroy(opt);
    tb_params_destroy(m.params);
}

/* ---- (4) and (5): Frobenius inequality and eigenbasis round trip --------------------------------- */

static void test_frobenius_and_roundtrip(void)
{
    tb_rng r = tb_rng_make(13, 0);
    dense_model m;
    enum { IN = 3, OUT = 3, N = 16, DIN = IN + 1, NN = DIN * OUT };
    dense_make(&m, IN, OUT, N, &r);
    float x[N * IN], y[N * OUT];
    rand_fill(&r, x, N * IN, -1, 1);
    for (int i = 0; i < N * IN; i += 2) x[i] = 0.3f * x[i] + 0.7f * x[i + 1]; /* correlated */
    rand_fill(&r, y, N * OUT, -2, 2);
    const char *names[] = {"stat_decay", "cov_interval", "inv_interval", "scale_interval",
                           "kl_clip"};
    double values[] = {0.0, 100, 100, 1, 0.0};
    tb_optimizer *opt = make_opt("ekfac", m.params, names, values, 5);
    tb_layer_ref ref = tb_layer_linear(&m.l);
    tb_error err = {0};
    CHECK_OK(tb_optimizer_set_layers(opt, &ref, 1, &err), &err);
    dense_pass(&m, x, y);
    CHECK_OK(tb_optimizer_update_fisher(opt, &err), &err);
    CHECK_OK(tb_optimizer_step(opt, 0.0, &err), &err); /* refresh; weights stay */
    CHECK(tb_optimizer_wants_fisher(opt));              /* step 2 rescales */
    dense_pass(&m, x, y);
    double abar[N * DIN], h[N * OUT], A[DIN * DIN], G[OUT * OUT];
    dense_ah(&m, abar, h);
    gram(abar, N, DIN, A);
    gram(h, N, OUT, G);
    CHECK_OK(tb_optimizer_update_fisher(opt, &err), &err);
    tb_kfac_layer *L = &((tb_kfac_state *)opt->state)->layers[0];
    float ua[DIN * DIN], ug[OUT * OUT];
    tb_backend_download(be, ua, L->PA, sizeof ua);
    tb_backend_download(be, ug, L->PG, sizeof ug);

    /* per-example gradients, exact Fisher, and S from its definition */
    static double F[NN * NN], FK[NN * NN], FE[NN * NN];
    double v[N][NN], sdef[OUT * DIN] = {0};
    for (int n = 0; n < N; n++) {
        for (int j = 0; j < DIN; j++)
            for (int i = 0; i < OUT; i++) v[n][j * OUT + i] = h[n * OUT + i] * abar[n * DIN + j];
        for (int i = 0; i < OUT; i++)
            for (int j = 0; j < DIN; j++) {
                double p = 0; /* (U_G^T dW_n U_A)_ij = (u_Gi . h_n)(u_Aj . abar_n) */
                double pg = 0, pa = 0;
                for (int k = 0; k < OUT; k++) pg += ug[k * OUT + i] * h[n * OUT + k];
                for (int k = 0; k < DIN; k++) pa += ua[k * DIN + j] * abar[n * DIN + k];
                p = pg * pa;
                sdef[i * DIN + j] += p * p / N;
            }
    }
    double sworst = 0, smax = 0;
    for (int k = 0; k < OUT * DIN; k++) {
        sworst = fmax(sworst, fabs(sdef[k] - L->S[k]));
        smax = fmax(smax, sdef[k]);
    }
    CHECK(sworst <= 1e-4 * smax);
    for (int a = 0; a < NN; a++)
        for (int b = 0; b < NN; b++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += v[n][a] * v[n][b];
            F[a * NN + b] = s / N;
        }
    kron_dense(DIN, A, 0, OUT, G, 0, 0, FK);
    memset(FE, 0, sizeof FE);
    for (int i = 0; i < OUT; i++)
        for (int j = 0; j < DIN; j++) {
            double e[NN];
            for (int j2 = 0; j2 < DIN; j2++)
                for (int i2 = 0; i2 < OUT; i2++)
                    e[j2 * OUT + i2] = (double)ua[j2 * DIN + j] * ug[i2 * OUT + i];
            for (int a = 0; a < NN; a++)
                for (int b = 0; b < NN; b++) FE[a * NN + b] += L->S[i * DIN + j] * e[a] * e[b];
        }
    double dk = 0, de = 0;
    for (int k = 0; k < NN * NN; k++) {
        dk += (F[k] - FK[k]) * (F[k] - FK[k]);
        de += (F[k] - FE[k]) * (F[k] - FE[k]);
    }
    printf("||F - F_KFAC|| = %.5f, ||F - F_EKFAC|| = %.5f\n", sqrt(dk), sqrt(de));
    CHECK(sqrt(de) <= sqrt(dk) + 1e-6);
    CHECK(sqrt(de) < 0.999 * sqrt(dk)); /* strictly better on correlated data */

    /* (5) U_G (U_G^T V U_A) U_A^T = V on the backend, fp32 */
    float vh[OUT * DIN], back[OUT * DIN];
    rand_fill(&r, vh, OUT * DIN, -1, 1);
    float *dv = tb_backend_alloc(be, sizeof vh), *t1 = tb_backend_alloc(be, sizeof vh),
          *t2 = tb_backend_alloc(be, sizeof vh);
    tb_backend_upload(be, dv, vh, sizeof vh);
    be->ops.gemm(be, true, false, OUT, DIN, OUT, 1, L->PG, OUT, dv, DIN, 0, t1, DIN);
    be->ops.gemm(be, false, false, OUT, DIN, DIN, 1, t1, DIN, L->PA, DIN, 0, t2, DIN);
    be->ops.gemm(be, false, false, OUT, DIN, OUT, 1, L->PG, OUT, t2, DIN, 0, t1, DIN);
    be->ops.gemm(be, false, true, OUT, DIN, DIN, 1, t1, DIN, L->PA, DIN, 0, t2, DIN);
    tb_backend_download(be, back, t2, sizeof back);
    double rt = 0;
    for (int k = 0; k < OUT * DIN; k++) rt = fmax(rt, fabs(back[k] - vh[k]));
    CHECK(rt < 1e-5);
    tb_backend_free(be, dv);
    tb_backend_free(be, t1);
    tb_backend_free(be, t2);
    tb_optimizer_destroy(opt);
    tb_params_destroy(m.params);
}

/* ---- damping: 0 refused at creation; too small a one fails naming the user's value --------- */

static void test_damping(void)
{
    tb_rng r = tb_rng_make(14, 0);
    dense_model m;
    enum { IN = 20, OUT = 3, N = 2 }; /* 2 examples: A (21 x 21) has rank 2 */
    dense_make(&m, IN, OUT, N, &r);
    tb_error err = {0};
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "damping", 0.0, NULL);
    for (int e = 0; e < 2; e++) {
        tb_optimizer *o = NULL;
        CHECK_FAILS(tb_optimizer_create(e ? "ekfac" : "kfac", m.params, &hp, &o, &err),
                    TB_ERR_INVALID, &err, "damping = 0 is outside (0,");
        /* in range, but 0 in float32 (1e-300) or subnormal (1e-40): refused when created,
         * naming why, instead of failing (or dividing by 0) at step 1 */
        const double tiny[2] = {1e-300, 1e-40};
        for (int k = 0; k < 2; k++) {
            tb_hparams one = {0};
            tb_hparams_set(&one, "damping", tiny[k], NULL);
            char want[64];
            snprintf(want, sizeof want, "damping = %g is below float32's smallest normal",
                     tiny[k]);
            CHECK_FAILS(tb_optimizer_create(e ? "ekfac" : "kfac", m.params, &one, &o, &err),
                        TB_ERR_INVALID, &err, want);
            CHECK(strstr(err.message, e ? "S + damping" : "A + pi sqrt(damping) I") != NULL);
            CHECK_FAILS(tb_optimizer_check_hparams(e ? "ekfac" : "kfac", &one, &err),
                        TB_ERR_INVALID, &err, want);
        }
    }
    float x[N * IN], y[N * OUT];
    rand_fill(&r, x, N * IN, -1, 1);
    rand_fill(&r, y, N * OUT, -1, 1);
    const char *names[] = {"damping", "stat_decay", "cov_interval", "inv_interval"};
    double values[] = {1e-36, 0.0, 1, 1};
    tb_optimizer *opt = make_opt("kfac", m.params, names, values, 4);
    tb_layer_ref ref = tb_layer_linear(&m.l);
    CHECK_OK(tb_optimizer_set_layers(opt, &ref, 1, &err), &err);
    dense_pass(&m, x, y);
    CHECK_OK(tb_optimizer_update_fisher(opt, &err), &err);
    dense_pass(&m, x, y);
    /* accepted, but A + pi sqrt(1e-36) I is still singular in double: the message gives the
     * damping the user set, not only the factored pi sqrt(damping) added to A */
    CHECK_FAILS(tb_optimizer_step(opt, 1.0, &err), TB_ERR_NUMERIC, &err, "damping = 1e-36");
    CHECK(strstr(err.message, "factor A") && strstr(err.message, "increase damping"));
    tb_optimizer_destroy(opt);
    tb_params_destroy(m.params);
}

/* A layer whose factor would not fit is refused when attached, before anything is allocated,
 * naming the layer, the factor, its size and the memory: WordNet's output layer (26851
 * classes) ran over 10 minutes at 15 GB before. max_factor_dim raises (or lowers) the limit. */
static void test_layer_limit(void)
{
    tb_rng r = tb_rng_make(15, 0);
    tb_error err = {0};
    for (int e = 0; e < 2; e++) {
        const char *name = e ? "ekfac" : "kfac";
        dense_model m;
        dense_make(&m, 16, 26851, 1, &r);
        tb_optimizer *opt = NULL;
        tb_layer_ref ref = tb_layer_linear(&m.l);
        CHECK_OK(tb_optimizer_create(name, m.params, NULL, &opt, &err), &err);
        CHECK_FAILS(tb_optimizer_set_layers(opt, &ref, 1, &err), TB_ERR_INVALID, &err,
                    "layer 'fc.weight' is too large for Kronecker factors: its factor G would "
                    "be 26851 x 26851 (its outputs), above max_factor_dim = 4096");
        CHECK(strstr(err.message, "GiB on the backend") && strstr(err.message, "max_factor_dim="));
        CHECK(strncmp(err.message, name, strlen(name)) == 0);
        tb_optimizer_destroy(opt);
        tb_params_destroy(m.params);
        /* the input side (+1 for the bias), under a lowered limit; a layer within it attaches */
        dense_make(&m, 8, 3, 1, &r);
        tb_hparams hp = {0};
        tb_hparams_set(&hp, "max_factor_dim", 8, NULL);
        ref = tb_layer_linear(&m.l);
        CHECK_OK(tb_optimizer_create(name, m.params, &hp, &opt, &err), &err);
        CHECK_FAILS(tb_optimizer_set_layers(opt, &ref, 1, &err), TB_ERR_INVALID, &err,
                    "its factor A would be 9 x 9 (its inputs, +1 for a bias), above "
                    "max_factor_dim = 8");
        tb_optimizer_destroy(opt);
        tb_hparams_set(&hp, "max_factor_dim", 9, NULL);
        CHECK_OK(tb_optimizer_create(name, m.params, &hp, &opt, &err), &err);
        CHECK_OK(tb_optimizer_set_layers(opt, &ref, 1, &err), &err);
        tb_optimizer_destroy(opt);
        tb_hparams_set(&hp, "max_factor_dim", 9.5, NULL);
        CHECK_FAILS(tb_optimizer_create(name, m.params, &hp, &opt, &err), TB_ERR_INVALID, &err,
                    "max_factor_dim = 9.5 must be a whole number");
        tb_params_destroy(m.params);
    }
}

int main(void)
{
    be = tb_test_backend();
    tb_error err = {0};
    if (tb_tape_create(be, &tape, &err) != TB_OK) return 1;
    check_against_dense(false);
    check_against_dense(true);
    test_least_squares();
    test_frobenius_and_roundtrip();
    test_damping();
    test_layer_limit();
    tb_tape_destroy(tape);
    tb_backend_destroy(be);
    return tb_test_finish("test_kfac");
}

/* soap.c: SOAP, Adam in the eigenbasis of Shampoo's factors (Vyas et al. 2024; the update of
 * pytorch-optimizer's SOAP, its names and defaults).
 *
 * A parameter is viewed as a matrix G [a, b] (a 1-D one as [1, b], a conv weight as [d0, rest]).
 * Each side of at most max_precondition_dim values keeps a factor, L [a, a] and R [b, b], and an
 * orthogonal basis Q_L, Q_R (a side without one rotates nothing; 1-D parameters precondition
 * only with precondition_1d). With sb = shampoo_beta (beta2 when it is -1):
 *   step 1:  L = (1 - sb) G G^T, R = (1 - sb) G^T G; Q = their eigenvectors, largest
 *            eigenvalue first (LAPACK dsyevd); the parameters do not move (as the reference).
 *   step t > 1, s = t - 1:
 *     G' = Q_L^T G Q_R                       (the gradient in the eigenbasis)
 *     m = beta1 m + (1 - beta1) G;  v = beta2 v + (1 - beta2) G'^2
 *     D = Q_L ((Q_L^T m Q_R) / (sqrt(v) + epsilon)) Q_R^T      (normalize_gradient: D / rms(D))
 *     w -= lr sqrt(1 - beta2^s) / (1 - beta1^s) D  (correct_bias; lr D without)
 *     w *= 1 - lr weight_decay                  (weights and embeddings)
 *     L = sb L + (1 - sb) G G^T,  R = sb R + (1 - sb) G^T G
 *     every precondition_frequency-th s: one power iteration per side, P = L Q_L, the columns
 *     ordered by the estimated eigenvalues diag(Q_L^T P), largest first (v's rows permuted
 *     alike; then R and v's columns), Q_L = the Q of P's QR decomposition (LAPACK).
 * The state and the arithmetic are double on the host, the products BLAS dgemm: in float32
 * the rotated gradient's off-diagonal rounding (1e-8 of its scale, where the eigenbasis of
 * the same gradient makes it diagonal) is not small next to epsilon, and sqrt(v) + epsilon
 * turns it into steps of either sign. The gradients and weights are copied to and from the
 * backend each step. */
#include "optim/optim_impl.h"

#include "optim/kron.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const tb_hparam_spec soap_hparams[] = {
    {.name = "learning_rate", .default_value = 3e-3, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size (SOAP lr)"},
    {.name = "beta1", .default_value = 0.95, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "first-moment decay (SOAP betas[0])"},
    {.name = "beta2", .default_value = 0.95, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "second-moment decay in the eigenbasis (SOAP betas[1])"},
    {.name = "shampoo_beta", .default_value = -1.0, .min = -1.0, .max = 1.0, .max_open = true,
     .help = "factor EMA decay in [0, 1); -1: beta2 (SOAP's None)"},
    {.name = "weight_decay", .default_value = 1e-2, .min = 0.0, .max = 1e6,
     .help = "decoupled decay w *= 1 - lr wd (weights and embeddings)"},
    {.name = "precondition_frequency", .default_value = 10, .min = 1, .max = 1e9,
     .help = "steps between eigenbasis refreshes (power iteration + QR), integer"},
    {.name = "max_precondition_dim", .default_value = 10000, .min = 1, .max = 65536,
     .help = "sides longer than this keep no factor, integer"},
    {.name = "precondition_1d", .default_value = 0, .min = 0, .max = 1, .is_flag = true,
     .help = "1: 1-D parameters keep a factor too"},
    {.name = "correct_bias", .default_value = 1, .min = 0, .max = 1, .is_flag = true,
     .help = "1: Adam's bias correction of the step"},
    {.name = "normalize_gradient", .default_value = 0, .min = 0, .max = 1, .is_flag = true,
     .help = "1: divide the direction by its RMS"},
    {.name = "epsilon", .default_value = 1e-8, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "added to sqrt(v) (SOAP eps)"},
};

typedef struct soap_side {
    int n;        /* side length */
    double *gg, *q; /* [n, n] factor and basis; NULL: this side rotates nothing */
} soap_side;

typedef struct soap_param {
    tb_param *p;
    int a, b;     /* the matrix view */
    soap_side side[2];
} soap_param;

typedef struct soap_state {
    soap_param *ps;
    int n_ps;
    int64_t numel;
    float *w, *g;             /* host [numel]: weights and gradients (float32) */
    double *gd, *m, *v, *x;   /* host [numel]: gradients, moments, directions (double) */
    double *t1, *t2;          /* host [largest a b]: projections */
    double *work;             /* host [largest side^2]: LAPACK */
    int *idx;                 /* [largest side]: the eigenvalue order */
    double *est;              /* [largest side] */
} soap_state;

static tb_status soap_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                            tb_error *err)
{
    (void)given;
    const char *ints[] = {"precondition_frequency", "max_precondition_dim"};
    for (int i = 0; i < 2; i++) {
        double v = tb_hparams_get(hp, ints[i], 1);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    double sb = tb_hparams_get(hp, "shampoo_beta", -1);
    if (sb != -1.0 && sb < 0.0)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: shampoo_beta = %g must be -1 (use beta2) or in [0, 1)", algorithm, sb);
    return tb_opt_check_guard(hp, algorithm, "epsilon",
                              "sqrt(v) + epsilon would be 0 where the rotated gradient has been "
                              "0, and the update 0/0 = NaN",
                              err);
}

static void soap_destroy(tb_optimizer *opt)
{
    soap_state *s = opt->state;
    if (!s) return;
    for (int i = 0; s->ps && i < s->n_ps; i++)
        for (int k = 0; k < 2; k++) {
            free(s->ps[i].side[k].gg);
            free(s->ps[i].side[k].q);
        }
    free(s->ps);
    free(s->w);
    free(s->gd);
    free(s->t1);
    free(s->work);
    free(s->idx);
    free(s->est);
    free(s);
}

static tb_status soap_init(tb_optimizer *opt, tb_error *err)
{
    soap_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "soap: cannot allocate its state");
    opt->state = s;
    const int maxdim = (int)tb_opt_hp(opt, "max_precondition_dim");
    const bool one_d = tb_opt_hp(opt, "precondition_1d") != 0.0;
    s->n_ps = tb_params_count(opt->params);
    s->numel = tb_params_numel(opt->params);
    s->ps = calloc((size_t)s->n_ps + 1, sizeof *s->ps);
    s->w = calloc((size_t)(2 * s->numel + 1), sizeof(float));
    s->gd = calloc((size_t)(4 * s->numel + 1), sizeof(double));
    if (!s->ps || !s->w || !s->gd)
        return tb_fail(err, TB_ERR_NOMEM, "soap: cannot allocate its state");
    s->g = s->w + s->numel;
    s->m = s->gd + s->numel;
    s->v = s->m + s->numel;
    s->x = s->v + s->numel;
    int64_t largest = 1, side_max = 1;
    for (int i = 0; i < s->n_ps; i++) {
        soap_param *q = &s->ps[i];
        q->p = tb_params_get(opt->params, i);
        const tb_tensor *t = &q->p->var.value;
        int64_t numel = tb_tensor_numel(t);
        q->a = t->ndim >= 2 ? (int)t->shape[0] : 1;
        q->b = (int)(numel / q->a);
        if (numel > largest) largest = numel;
        int n[2] = {q->a, q->b};
        for (int k = 0; k < 2; k++) {
            bool on = n[k] <= maxdim && (t->ndim >= 2 || (k == 1 && one_d));
            q->side[k].n = n[k];
            if (!on) continue;
            size_t nn = (size_t)n[k] * n[k];
            q->side[k].gg = calloc(nn, sizeof(double));
            q->side[k].q = calloc(nn, sizeof(double));
            if (!q->side[k].gg || !q->side[k].q)
                return tb_fail(err, TB_ERR_NOMEM,
                               "soap: cannot allocate the %dx%d factor of '%s'", n[k], n[k],
                               q->p->name);
            if (n[k] > side_max) side_max = n[k];
        }
    }
    s->t1 = malloc((size_t)(2 * largest) * sizeof(double));
    s->work = malloc((size_t)(side_max * side_max) * sizeof(double));
    s->idx = malloc((size_t)side_max * sizeof(int));
    s->est = malloc((size_t)side_max * sizeof(double));
    if (!s->t1 || !s->work || !s->idx || !s->est)
        return tb_fail(err, TB_ERR_NOMEM, "soap: cannot allocate its scratch");
    s->t2 = s->t1 + largest;
    return TB_OK;
}

/* out = Q_L^T x Q_R (forward) or Q_L x Q_R^T (back), for the sides that rotate. */
static void project(const soap_state *s, const soap_param *q, const double *x, double *out,
                    bool back)
{
    const int a = q->a, b = q->b;
    const double *ql = q->side[0].q, *qr = q->side[1].q;
    const double *mid = x;
    if (ql) {
        double *dst = qr ? s->t2 : out;
        cblas_dgemm(CblasRowMajor, back ? CblasNoTrans : CblasTrans, CblasNoTrans, a, b, a, 1.0,
                    ql, a, x, b, 0.0, dst, b);
        mid = dst;
    }
    if (qr)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, back ? CblasTrans : CblasNoTrans, a, b, b, 1.0,
                    mid, b, qr, b, 0.0, out, b);
    else if (mid != out)
        memcpy(out, mid, (size_t)a * b * sizeof(double));
}

/* L = sb L + (1 - sb) G G^T and R = sb R + (1 - sb) G^T G for the sides that keep one. */
static void update_factors(const soap_param *q, const double *g, double sb)
{
    const int a = q->a, b = q->b;
    if (q->side[0].gg)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, a, a, b, 1.0 - sb, g, b, g, b, sb,
                    q->side[0].gg, a);
    if (q->side[1].gg)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, b, b, a, 1.0 - sb, g, b, g, b, sb,
                    q->side[1].gg, b);
}

/* Q = the eigenvectors of the side's factor, largest eigenvalue first. */
static tb_status eigenbasis(soap_state *s, soap_side *side, const char *name, tb_error *err)
{
    const int n = side->n;
    for (int i = 0; i < n * n; i++) s->work[i] = side->gg[i];
    tb_status st = tb_kron_eigh(n, s->work, s->est, name, err);
    if (st != TB_OK) return st;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) side->q[i * n + j] = s->work[i * n + (n - 1 - j)];
    return TB_OK;
}

/* One power iteration of side k with QR, and v's rows (k = 0) or columns permuted to the new
 * order of the estimated eigenvalues. */
static tb_status refresh(soap_state *s, soap_param *q, int k, tb_error *err)
{
    soap_side *side = &q->side[k];
    const int n = side->n;
    double *pm = malloc((size_t)n * n * sizeof *pm);
    if (!pm) return tb_fail(err, TB_ERR_NOMEM, "soap: out of memory for a %dx%d refresh", n, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, side->gg, n, side->q, n,
                0.0, pm, n);
    for (int j = 0; j < n; j++) {
        double e = 0.0;
        for (int i = 0; i < n; i++) e += side->q[i * n + j] * pm[i * n + j];
        s->est[j] = e;
    }
    for (int j = 0; j < n; j++) s->idx[j] = j; /* descending, ties in index order */
    for (int j = 1; j < n; j++) {
        int v = s->idx[j], i = j;
        while (i > 0 && s->est[s->idx[i - 1]] < s->est[v]) {
            s->idx[i] = s->idx[i - 1];
            i--;
        }
        s->idx[i] = v;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) s->work[i * n + j] = pm[i * n + s->idx[j]];
    free(pm);
    double *v = s->v + q->p->offset, *tmp = s->t2;
    const int a = q->a, b = q->b;
    memcpy(tmp, v, (size_t)a * b * sizeof *tmp);
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++)
            v[i * b + j] = k == 0 ? tmp[s->idx[i] * b + j] : tmp[i * b + s->idx[j]];
    tb_status st = tb_kron_qr(n, s->work, q->p->name, err);
    if (st != TB_OK) return st;
    memcpy(side->q, s->work, (size_t)n * n * sizeof *side->q);
    return TB_OK;
}

/* The direction of parameter q at step s (>= 1) into x; m and v move. */
static void direction(const tb_optimizer *opt, soap_state *s, const soap_param *q)
{
    const int64_t o = q->p->offset, n = (int64_t)q->a * q->b;
    const double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    const double eps = tb_opt_hp(opt, "epsilon");
    double *g = s->gd + o, *m = s->m + o, *v = s->v + o, *x = s->x + o;
    project(s, q, g, s->t1, false);
    for (int64_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1.0 - b1) * g[i];
        v[i] = b2 * v[i] + (1.0 - b2) * s->t1[i] * s->t1[i];
    }
    project(s, q, m, s->t1, false);
    for (int64_t i = 0; i < n; i++) s->t1[i] /= sqrt(v[i]) + eps;
    project(s, q, s->t1, x, true);
    if (tb_opt_hp(opt, "normalize_gradient") != 0.0) {
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
        double d = sqrt(ss / (double)n) + eps;
        for (int64_t i = 0; i < n; i++) x[i] /= d;
    }
}

static tb_status soap_step(tb_optimizer *opt, double lr, tb_error *err)
{
    soap_state *s = opt->state;
    tb_backend *be = opt->be;
    const size_t bytes = (size_t)s->numel * sizeof(float);
    const double sbh = tb_opt_hp(opt, "shampoo_beta");
    const double sb = sbh == -1.0 ? tb_opt_hp(opt, "beta2") : sbh;
    const int64_t t = opt->step, step = t - 1;
    tb_backend_download(be, s->g, tb_params_grads(opt->params), bytes);
    for (int64_t i = 0; i < s->numel; i++) s->gd[i] = s->g[i];
    if (t == 1) { /* the reference's first step builds the bases and moves nothing */
        for (int i = 0; i < s->n_ps; i++) {
            soap_param *q = &s->ps[i];
            update_factors(q, s->gd + q->p->offset, sb);
            for (int k = 0; k < 2; k++) {
                tb_status st = q->side[k].q ? eigenbasis(s, &q->side[k], q->p->name, err) : TB_OK;
                if (st != TB_OK) return st;
            }
        }
        return TB_OK;
    }
    for (int i = 0; i < s->n_ps; i++) {
        const soap_param *q = &s->ps[i];
        direction(opt, s, q);
        int64_t n = tb_tensor_numel(&q->p->var.value);
        double ss = 0.0;
        for (int64_t e = 0; e < n; e++) ss += s->x[q->p->offset + e] * s->x[q->p->offset + e];
        if (!isfinite(ss) || !isfinite((float)ss))
            return tb_fail(err, TB_ERR_NUMERIC,
                           "soap: step %lld: the preconditioned gradient of '%s' is not finite; "
                           "the weights were not updated",
                           (long long)t, q->p->name);
    }
    const double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    const bool correct = tb_opt_hp(opt, "correct_bias") != 0.0;
    const double size = correct ? lr * sqrt(1.0 - pow(b2, (double)step)) /
                                      (1.0 - pow(b1, (double)step))
                                : lr;
    const double wd = tb_opt_hp(opt, "weight_decay");
    const double decay = 1.0 - lr * wd;
    const int64_t every = (int64_t)tb_opt_hp(opt, "precondition_frequency");
    tb_backend_download(be, s->w, tb_params_values(opt->params), bytes);
    for (int i = 0; i < s->n_ps; i++) {
        soap_param *q = &s->ps[i];
        const int64_t o = q->p->offset, n = tb_tensor_numel(&q->p->var.value);
        const bool decays = wd != 0.0 && tb_param_decays(q->p->kind);
        for (int64_t e = o; e < o + n; e++) {
            double w = s->w[e] - size * s->x[e];
            s->w[e] = (float)(decays ? w * decay : w);
        }
    }
    tb_backend_upload(be, tb_params_values(opt->params), s->w, bytes);
    /* the statistics of finite gradients are finite: LAPACK does not fail on them */
    for (int i = 0; i < s->n_ps; i++) {
        soap_param *q = &s->ps[i];
        update_factors(q, s->gd + q->p->offset, sb);
        for (int k = 0; step % every == 0 && k < 2; k++) {
            tb_status st = q->side[k].q ? refresh(s, q, k, err) : TB_OK;
            if (st != TB_OK) return st;
        }
    }
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_soap = {
    .info = {.name = "soap",
             .summary = "SOAP: Adam in the eigenbasis of Shampoo's Kronecker factors",
             .hparams = soap_hparams,
             .n_hparams = (int)(sizeof soap_hparams / sizeof *soap_hparams)},
    .check = soap_check,
    .init = soap_init,
    .step = soap_step,
    .graph_blocker = "its eigenbases are computed on the host (LAPACK) and its update runs on "
                     "the host",
    .destroy = soap_destroy,
    .no_preconditioner = "it preconditions in a rotated basis (Kronecker-factored "
                         "eigenvectors), not with a per-value diagonal",
};

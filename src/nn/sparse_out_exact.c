/* sparse_out_exact.c: the exact form of the sparse-target output layer, O(d^2 + K d) per
 * example (docs/SPARSE_TARGETS.md, "The exact update, minibatched"). W = V U is never formed;
 * the layer keeps V (D x d), U, U^-1 and Q = W^T W (d x d). Row-major throughout: H is m x d
 * (row i = h_i), T = H U^T (row i = U h_i), R = H Q (row i = Q h_i). */
#include "nn/sparse_out_impl.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <string.h>

#define NT CblasNoTrans
#define TR CblasTrans

/* c = alpha op(a) op(b) + beta c, row-major, with leading dimensions the stored widths */
static void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                 const float *b, float beta, float *c)
{
    cblas_sgemm(CblasRowMajor, ta ? TR : NT, tb ? TR : NT, (int)m, (int)n, (int)k, alpha, a,
                (int)(ta ? m : k), b, (int)(tb ? k : n), beta, c, (int)n);
}

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

void tb_sparse_exact_forward(tb_sparse_out *l, double *loss)
{
    int64_t m = l->m, k = l->k, d = l->cfg.dim;
    gemm(false, true, m, d, d, 1.0f, l->h, l->u, 0.0f, l->t);  /* T = H U^T */
    gemm(false, false, m, d, d, 1.0f, l->h, l->q, 0.0f, l->r); /* R = H Q */
    double total = 0.0;
    for (int64_t i = 0; i < m; i++) {
        l->sq[i] = (float)dot(l->h + i * d, l->r + i * d, d); /* ||o_i||^2 = h^T Q h */
        for (int64_t j = 0; j < k; j++)                        /* o_ik = V_k (U h_i) */
            l->ok[i * k + j] = (float)dot(l->v + (int64_t)l->idx[i * k + j] * d, l->t + i * d, d);
        total += tb_sparse_example_loss(l, i);
    }
    *loss = total / (double)m;
}

/* P = Gamma^T Gamma (m x m), gamma_i = alpha_i o_i + zeta_i the gradient for o_i */
static void gamma_gram(tb_sparse_out *l)
{
    int64_t m = l->m, k = l->k, d = l->cfg.dim, mk = m * k;
    for (int64_t c = 0; c < mk; c++) /* X[i][c] = o_i at the c-th target index of the batch */
        if (l->zeta[c] != 0.0f) /* else unused: an empty slot's zeta is 0 */
            cblas_sgemv(CblasRowMajor, NT, (int)m, (int)d, 1.0f, l->t, (int)d,
                    l->v + (int64_t)l->idx[c] * d, 1, 0.0f, l->x + c, (int)mk);
    gemm(false, true, m, m, d, 1.0f, l->h, l->r, 0.0f, l->p); /* o_i . o_j = h_i^T Q h_j */
    for (int64_t i = 0; i < m; i++)                           /* gram[i][j] = o_i . zeta_j */
        for (int64_t j = 0; j < m; j++) {
            double s = 0.0;
            for (int64_t c = 0; c < k; c++)
                if (l->zeta[j * k + c] != 0.0f)
                    s += (double)l->zeta[j * k + c] * l->x[i * mk + j * k + c];
            l->gram[i * m + j] = (float)s;
        }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++) {
            double zz = 0.0; /* zeta_i . zeta_j: where their indices meet */
            for (int64_t a = 0; a < k; a++)
                for (int64_t b = 0; b < k && l->zeta[i * k + a] != 0.0f; b++)
                    if (l->idx[i * k + a] == l->idx[j * k + b])
                        zz += (double)l->zeta[i * k + a] * l->zeta[j * k + b];
            double ai = l->alpha[i], aj = l->alpha[j];
            l->p[i * m + j] = (float)(ai * aj * l->p[i * m + j] + ai * l->gram[i * m + j] +
                                      aj * l->gram[j * m + i] + zz);
        }
}

/* dh (and y2 = W^T Gamma as rows): alpha_i Q h_i + U^T V^T zeta_i */
static void grad_h(tb_sparse_out *l, float *dh, bool acc)
{
    int64_t m = l->m, k = l->k, d = l->cfg.dim;
    memset(l->vz, 0, (size_t)(m * d) * sizeof *l->vz);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++)
            cblas_saxpy((int)d, l->zeta[i * k + j], l->v + (int64_t)l->idx[i * k + j] * d, 1,
                        l->vz + i * d, 1);
    gemm(false, false, m, d, d, 1.0f, l->vz, l->u, 0.0f, l->y2);
    for (int64_t i = 0; i < m; i++) cblas_saxpy((int)d, l->alpha[i], l->r + i * d, 1, l->y2 + i * d, 1);
    if (dh) {
        if (!acc) memset(dh, 0, (size_t)(m * d) * sizeof *dh);
        cblas_saxpy((int)(m * d), 1.0f, l->y2, 1, dh, 1);
    }
}

/* dq = -lr (G^T H + H^T G) + lr^2 H^T P H, G = y2 (the update of Q = W^T W) */
static void q_delta(tb_sparse_out *l, float lr)
{
    int64_t m = l->m, d = l->cfg.dim;
    gemm(true, false, d, d, m, 1.0f, l->y2, l->h, 0.0f, l->dq);
    for (int64_t a = 0; a < d; a++)
        for (int64_t b = a; b < d; b++) {
            float s = -lr * (l->dq[a * d + b] + l->dq[b * d + a]);
            l->dq[a * d + b] = l->dq[b * d + a] = s;
        }
    gemm(false, false, m, d, m, 1.0f, l->p, l->h, 0.0f, l->ph);
    gemm(true, false, d, d, m, lr * lr, l->h, l->ph, 1.0f, l->dq);
}

/* U^-1 <- M^-1 U^-1 with M = I - lr H^T A H, by Woodbury: M^-1 = I + lr H^T C^-1 A H,
 * C = I - lr A H H^T (m x m, solved by LU) */
static tb_status inverse_update(tb_sparse_out *l, float lr, tb_error *err)
{
    int64_t m = l->m, d = l->cfg.dim;
    float *c = (float *)(void *)l->lu;
    lapack_int *piv = (lapack_int *)(void *)(c + m * m);
    gemm(false, true, m, m, d, 1.0f, l->h, l->h, 0.0f, l->gram);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++)
            c[i * m + j] = (i == j ? 1.0f : 0.0f) - lr * l->alpha[i] * l->gram[i * m + j];
    gemm(false, false, m, d, d, 1.0f, l->h, l->uinv, 0.0f, l->ph); /* H U^-1 */
    for (int64_t i = 0; i < m; i++) cblas_sscal((int)d, l->alpha[i], l->ph + i * d, 1);
    lapack_int info = LAPACKE_sgesv(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)d, c,
                                    (lapack_int)m, piv, l->ph, (lapack_int)d);
    if (info != 0)
        return tb_fail(err, TB_ERR_NUMERIC, "sparse_out: the update makes U singular (I - lr "
                       "A H H^T has a zero pivot at %d): the learning rate %g is too large for "
                       "the exact update", (int)info, (double)lr);
    gemm(true, false, d, d, m, lr, l->h, l->ph, 1.0f, l->uinv);
    return TB_OK;
}

static tb_status check_state(const tb_sparse_out *l, tb_error *err)
{
    int64_t n = l->cfg.dim * l->cfg.dim;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(l->u[i]) || !isfinite(l->uinv[i]) || !isfinite(l->q[i]))
            return tb_fail(err, TB_ERR_NUMERIC, "sparse_out: U, U^-1 or Q holds a non-finite "
                           "value after update %lld", (long long)l->updates + 1);
    double cond = tb_sparse_out_condition(l);
    if (!(cond <= l->cfg.max_condition))
        return tb_fail(err, TB_ERR_NUMERIC, "sparse_out: U's condition number ||U||_F "
                       "||U^-1||_F = %.3g passed the bound %.3g after update %lld (%lld since "
                       "the last renormalisation): the exact update has diverged", cond,
                       l->cfg.max_condition, (long long)l->updates + 1,
                       (long long)l->since_renorm + 1);
    return TB_OK;
}

tb_status tb_sparse_exact_backward(tb_sparse_out *l, float dloss, float lr, float *dh, bool acc,
                                   tb_error *err)
{
    (void)dloss; /* in alpha and zeta */
    int64_t m = l->m, k = l->k, d = l->cfg.dim;
    grad_h(l, dh, acc);
    gamma_gram(l);
    q_delta(l, lr);
    tb_status st = inverse_update(l, lr, err);
    if (st != TB_OK) return st;
    for (int64_t i = 0; i < m; i++) /* y2 = A H */
        for (int64_t j = 0; j < d; j++) l->y2[i * d + j] = l->alpha[i] * l->h[i * d + j];
    gemm(true, false, d, d, m, -lr, l->t, l->y2, 1.0f, l->u);       /* U <- U M */
    gemm(false, false, m, d, d, 1.0f, l->h, l->uinv, 0.0f, l->y2); /* H U_new^-1 */
    for (int64_t i = 0; i < m; i++)                                 /* V -= lr Z H U_new^-1 */
        for (int64_t j = 0; j < k; j++)
            cblas_saxpy((int)d, -lr * l->zeta[i * k + j], l->y2 + i * d, 1,
                        l->v + (int64_t)l->idx[i * k + j] * d, 1);
    cblas_saxpy((int)(d * d), 1.0f, l->dq, 1, l->q, 1);
    st = check_state(l, err);
    if (st != TB_OK) return st;
    if (++l->since_renorm >= l->cfg.renorm_period) tb_sparse_out_renormalise(l);
    return TB_OK;
}

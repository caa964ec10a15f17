/* sparse_out_naive.c: the naive form of the sparse-target output layer: O = H W^T formed
 * (m x D), its gradient written over it, then dh = G W and W -= lr G^T H: O(D d) per example,
 * the reference the exact form must match (docs/SPARSE_TARGETS.md). */
#include "nn/sparse_out_impl.h"

#include <cblas.h>
#include <string.h>

void tb_sparse_naive_forward(tb_sparse_out *l, double *loss)
{
    int64_t m = l->m, k = l->k, d = l->cfg.dim, D = l->cfg.vocab;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)D, (int)d, 1.0f, l->h,
                (int)d, l->v, (int)d, 0.0f, l->o, (int)D);
    double total = 0.0;
    for (int64_t i = 0; i < m; i++) {
        const float *o = l->o + i * D;
        double s = 0.0;
        for (int64_t j = 0; j < D; j++) s += (double)o[j] * o[j];
        l->sq[i] = (float)s;
        for (int64_t j = 0; j < k; j++) l->ok[i * k + j] = o[l->idx[i * k + j]];
        total += tb_sparse_example_loss(l, i);
    }
    *loss = total / (double)m;
}

void tb_sparse_naive_backward(tb_sparse_out *l, float dloss, float lr, float *dh, bool acc)
{
    (void)dloss; /* in alpha and zeta */
    int64_t m = l->m, k = l->k, d = l->cfg.dim, D = l->cfg.vocab;
    for (int64_t i = 0; i < m; i++) { /* G_i = alpha_i o_i + zeta_i */
        float *g = l->o + i * D;
        cblas_sscal((int)D, l->alpha[i], g, 1);
        for (int64_t j = 0; j < k; j++) g[l->idx[i * k + j]] += l->zeta[i * k + j];
    }
    if (dh)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)d, (int)D, 1.0f,
                    l->o, (int)D, l->v, (int)d, acc ? 1.0f : 0.0f, dh, (int)d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)D, (int)d, (int)m, -lr, l->o,
                (int)D, l->h, (int)d, 1.0f, l->v, (int)d);
}

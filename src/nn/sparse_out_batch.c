/* sparse_out_batch.c: a batch through the sparse-target output layer: the checks on its
 * targets, the copy the backward pass reads, the per-example losses and the coefficients of
 * their gradient for o (docs/SPARSE_TARGETS.md, "Both losses in one form"). */
#include "nn/sparse_out_impl.h"

#include <math.h>
#include <string.h>

static tb_status check_target(const tb_sparse_out *l, const tb_sparse_target *y, tb_error *err)
{
    if (!y || !y->idx) return tb_fail(err, TB_ERR_INVALID, "sparse_out: NULL target");
    if (y->k < 1)
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: a target with %lld nonzeros (K = 0: "
                       "nothing to predict)", (long long)y->k);
    if (y->m < 1 || y->m > l->cfg.max_batch || y->k > l->cfg.max_k)
        return tb_fail(err, TB_ERR_SHAPE, "sparse_out: a batch of %lld targets of %lld "
                       "nonzeros, the layer takes 1..%lld of at most %lld", (long long)y->m,
                       (long long)y->k, (long long)l->cfg.max_batch, (long long)l->cfg.max_k);
    for (int64_t i = 0; i < y->m; i++) {
        int64_t used = 0;
        for (int64_t j = 0; j < y->k; j++) {
            int32_t c = y->idx[i * y->k + j];
            if (c == -1) continue; /* an empty slot */
            used++;
            if (c < 0 || c >= l->cfg.vocab)
                return tb_fail(err, TB_ERR_INVALID, "sparse_out: target index %d of example "
                               "%lld is outside the vocabulary [0, %lld) (-1: an empty slot)",
                               (int)c, (long long)i, (long long)l->cfg.vocab);
            for (int64_t j2 = 0; j2 < j; j2++)
                if (y->idx[i * y->k + j2] == c)
                    return tb_fail(err, TB_ERR_INVALID, "sparse_out: target index %d appears "
                                   "twice in example %lld", (int)c, (long long)i);
            float v = y->val ? y->val[i * y->k + j] : 1.0f;
            if (!isfinite(v) || (l->cfg.loss == TB_SPARSE_SPHERICAL && !(v > 0.0f)))
                return tb_fail(err, TB_ERR_INVALID, "sparse_out: target value %g of example "
                               "%lld (%s)", (double)v, (long long)i,
                               l->cfg.loss == TB_SPARSE_SPHERICAL ? "must be finite and > 0"
                                                                  : "must be finite");
        }
        if (used == 0)
            return tb_fail(err, TB_ERR_INVALID, "sparse_out: example %lld has no target index "
                           "(all %lld slots empty: K = 0, nothing to predict)", (long long)i,
                           (long long)y->k);
    }
    return TB_OK;
}

/* y into the layer; an empty slot (-1) becomes the example's first index with value 0, which
 * adds nothing to the loss or either gradient in both forms (docs/SPARSE_TARGETS.md) */
static void copy_target(tb_sparse_out *l, const tb_sparse_target *y)
{
    int64_t m = y->m, k = y->k;
    for (int64_t i = 0; i < m; i++) {
        const int32_t *idx = y->idx + i * k;
        int32_t first = -1;
        for (int64_t j = 0; j < k && first < 0; j++) first = idx[j];
        for (int64_t j = 0; j < k; j++) {
            bool empty = idx[j] == -1;
            l->idx[i * k + j] = empty ? first : idx[j];
            l->val[i * k + j] = empty ? 0.0f : y->val ? y->val[i * k + j] : 1.0f;
        }
    }
}

tb_status tb_sparse_out_forward(tb_sparse_out *l, const float *h, const tb_sparse_target *y,
                                double *loss, tb_error *err)
{
    if (!l || !h || !loss) return tb_fail(err, TB_ERR_INVALID, "sparse_out: NULL argument");
    l->have_forward = false;
    tb_status st = check_target(l, y, err);
    if (st != TB_OK) return st;
    int64_t m = y->m, k = y->k, d = l->cfg.dim;
    for (int64_t i = 0; i < m * d; i++)
        if (!isfinite(h[i]))
            return tb_fail(err, TB_ERR_NUMERIC, "sparse_out: input h[%lld][%lld] = %g",
                           (long long)(i / d), (long long)(i % d), (double)h[i]);
    l->m = m, l->k = k;
    memcpy(l->h, h, (size_t)(m * d) * sizeof *h);
    copy_target(l, y);
    if (l->cfg.algo == TB_SPARSE_EXACT)
        tb_sparse_exact_forward(l, loss);
    else
        tb_sparse_naive_forward(l, loss);
    if (!isfinite(*loss))
        return tb_fail(err, TB_ERR_NUMERIC, "sparse_out: the loss is %g", *loss);
    l->have_forward = true;
    return TB_OK;
}

tb_status tb_sparse_out_backward_update(tb_sparse_out *l, float dloss, float lr, float *dh,
                                        bool acc, tb_error *err)
{
    if (!l) return tb_fail(err, TB_ERR_INVALID, "sparse_out: NULL layer");
    if (!l->have_forward)
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: backward without a forward pass (or "
                       "after an update or a renormalisation)");
    if (!isfinite(lr) || lr < 0.0f || !isfinite(dloss))
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: learning rate %g, loss gradient %g",
                       (double)lr, (double)dloss);
    l->have_forward = false; /* W changes: the saved values are stale */
    tb_sparse_coefficients(l, dloss);
    tb_status st = TB_OK;
    if (l->cfg.algo == TB_SPARSE_EXACT)
        st = tb_sparse_exact_backward(l, dloss, lr, dh, acc, err);
    else
        tb_sparse_naive_backward(l, dloss, lr, dh, acc);
    if (st == TB_OK) l->updates++;
    return st;
}

double tb_sparse_example_loss(const tb_sparse_out *l, int64_t i)
{
    const float *y = l->val + i * l->k, *o = l->ok + i * l->k;
    double s = 0.0;
    if (l->cfg.loss == TB_SPARSE_SQUARED) { /* ||o||^2 - 2 y.o + y.y */
        s = l->sq[i];
        for (int64_t j = 0; j < l->k; j++) s += (double)y[j] * (y[j] - 2.0 * o[j]);
        return s;
    }
    double ysum = 0.0, eps = l->cfg.eps;
    for (int64_t j = 0; j < l->k; j++) {
        s -= y[j] * log((double)o[j] * o[j] + eps);
        ysum += y[j];
    }
    return s + ysum * log((double)l->sq[i] + (double)l->cfg.vocab * eps);
}

/* the mean loss's gradient for o_i, times dloss: alpha_i o_i + zeta_i */
void tb_sparse_coefficients(tb_sparse_out *l, float dloss)
{
    int64_t m = l->m, k = l->k;
    double g = 2.0 * dloss / (double)m, eps = l->cfg.eps, deps = (double)l->cfg.vocab * eps;
    float *alpha = l->alpha ? l->alpha : NULL;
    for (int64_t i = 0; i < m; i++) {
        const float *y = l->val + i * k, *o = l->ok + i * k;
        float *z = l->zeta ? l->zeta + i * k : NULL;
        double ysum = 0.0;
        for (int64_t j = 0; j < k; j++) ysum += y[j];
        double a = l->cfg.loss == TB_SPARSE_SQUARED ? g : g * ysum / ((double)l->sq[i] + deps);
        if (alpha) alpha[i] = (float)a;
        for (int64_t j = 0; j < k && z; j++)
            z[j] = (float)(l->cfg.loss == TB_SPARSE_SQUARED
                               ? -g * y[j]
                               : -g * y[j] * o[j] / ((double)o[j] * o[j] + eps));
    }
}

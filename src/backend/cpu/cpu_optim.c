/* cpu_optim.c: optimizer update sweeps over flat parameter buffers. */
#include "backend/cpu/cpu.h"

#include <math.h>

static void cpu_sgd_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                           const float *lr_ptr, float momentum, bool nesterov, float wd)
{
    const float lr = *lr_ptr;
    if (momentum == 0.0f) {
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) w[i] -= lr * (g[i] + wd * w[i]);
        return;
    }
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] + wd * w[i];
        float vi = momentum * v[i] + gi;
        v[i] = vi;
        w[i] -= lr * (nesterov ? gi + momentum * vi : vi);
    }
}

static void cpu_adam_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                            float *v, const tb_adam_coefs *c, float *dir)
{
    const float b1 = c->beta1, b2 = c->beta2, eps = c->eps, l2 = c->l2, decay = c->decay;
    const float g1 = c->one_minus_beta1, g2 = c->one_minus_beta2, dir_decay = c->dir_decay;
    const float c_m = c->c_m, c_g = c->c_g, inv_bc2 = c->inv_bc2;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float wi = w[i];
        float gi = g[i] + l2 * wi;
        float mi = b1 * m[i] + g1 * gi;
        float vi = b2 * v[i] + g2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float step = (c_m * mi + c_g * gi) / (sqrtf(vi * inv_bc2) + eps);
        if (dir)
            dir[i] = dir_decay * wi + step;
        else
            w[i] = wi * decay - step;
    }
}

static void cpu_rms_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                           float *m, const tb_rms_coefs *c)
{
    const float vd = c->v_decay, sq = c->sq_scale, eps = c->eps, mu = c->momentum;
    const float lr_in = c->lr_in, lr_out = c->lr_out, l2 = c->l2;
    const bool inside = c->eps_inside;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] + l2 * w[i];
        float vi = vd * v[i] + sq * gi * gi;
        v[i] = vi;
        float d = inside ? sqrtf(vi + eps) : sqrtf(vi) + eps;
        if (m) {
            float mi = mu * m[i] + lr_in * gi / d;
            m[i] = mi;
            w[i] -= lr_out * mi;
        } else {
            w[i] -= lr_out * lr_in * gi / d;
        }
    }
}

static void cpu_lars_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                            float scaled_lr, float momentum, float l2)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float vi = momentum * v[i] + scaled_lr * (g[i] + l2 * w[i]);
        v[i] = vi;
        w[i] -= vi;
    }
}

void tb_cpu_register_optim(tb_backend_ops *ops)
{
    ops->sgd_update = cpu_sgd_update;
    ops->adam_update = cpu_adam_update;
    ops->rms_update = cpu_rms_update;
    ops->lars_update = cpu_lars_update;
}

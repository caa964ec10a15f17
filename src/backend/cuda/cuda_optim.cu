/* cuda_optim.cu: optimizer update sweeps over flat parameter buffers on the GPU, one element per
 * thread. Formulas follow src/backend/cpu/cpu_optim.c term for term.
 *
 * Adding an optimizer kernel: write the entry's function with one tb_cuda_for_each over n whose
 * __device__ lambda updates element i (capture pointers and scalars by value), and set the
 * entry in tb_cuda_register_optim. Nothing else in the backend needs to change. */
#include "backend/cuda/cuda_internal.h"

static void cuda_sgd_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                            float lr, float momentum, bool nesterov, float wd)
{
    if (momentum == 0.0f) { /* no velocity buffer is needed (v may be NULL) */
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { w[i] -= lr * (g[i] + wd * w[i]); });
        return;
    }
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        float gi = g[i] + wd * w[i];
        float vi = momentum * v[i] + gi;
        v[i] = vi;
        w[i] -= lr * (nesterov ? gi + momentum * vi : vi);
    });
}

static void cuda_adam_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                             float *v, const tb_adam_coefs *c, float *dir)
{
    const float b1 = c->beta1, b2 = c->beta2, eps = c->eps, l2 = c->l2, decay = c->decay;
    const float c_m = c->c_m, c_g = c->c_g, inv_bc2 = c->inv_bc2;
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        float wi = w[i];
        float gi = g[i] + l2 * wi;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float step = (c_m * mi + c_g * gi) / (sqrtf(vi * inv_bc2) + eps);
        if (dir)
            dir[i] = (1.0f - decay) * wi + step;
        else
            w[i] = wi * decay - step;
    });
}

static void cuda_rms_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                            float *m, const tb_rms_coefs *c)
{
    const float vd = c->v_decay, sq = c->sq_scale, eps = c->eps, mu = c->momentum;
    const float lr_in = c->lr_in, lr_out = c->lr_out, l2 = c->l2;
    const bool inside = c->eps_inside;
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
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
    });
}

static void cuda_lars_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                             float scaled_lr, float momentum, float l2)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        float vi = momentum * v[i] + scaled_lr * (g[i] + l2 * w[i]);
        v[i] = vi;
        w[i] -= vi;
    });
}

void tb_cuda_register_optim(tb_backend_ops *ops)
{
    ops->sgd_update = cuda_sgd_update;
    ops->adam_update = cuda_adam_update;
    ops->rms_update = cuda_rms_update;
    ops->lars_update = cuda_lars_update;
}

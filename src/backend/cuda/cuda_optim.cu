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

static void cuda_adamw_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                              float *v, float lr, float beta1, float beta2, float eps, float wd,
                              float bc1, float bc2)
{
    const float step = lr / bc1, inv_bc2 = 1.0f / bc2, decay = 1.0f - lr * wd;
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * decay - step * mi / (sqrtf(vi * inv_bc2) + eps);
    });
}

void tb_cuda_register_optim(tb_backend_ops *ops)
{
    ops->sgd_update = cuda_sgd_update;
    ops->adamw_update = cuda_adamw_update;
}

/* cpu_optim.c: optimizer update sweeps over flat parameter buffers. */
#include "backend/cpu/cpu.h"

#include <math.h>

static void cpu_sgd_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                           float lr, float momentum, bool nesterov, float wd)
{
    (void)be;
    if (momentum == 0.0f) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) w[i] -= lr * (g[i] + wd * w[i]);
        return;
    }
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] + wd * w[i];
        float vi = momentum * v[i] + gi;
        v[i] = vi;
        w[i] -= lr * (nesterov ? gi + momentum * vi : vi);
    }
}

static void cpu_adamw_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                             float *v, float lr, float beta1, float beta2, float eps, float wd,
                             float bc1, float bc2)
{
    (void)be;
    const float step = lr / bc1, inv_bc2 = 1.0f / bc2, decay = 1.0f - lr * wd;
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * decay - step * mi / (sqrtf(vi * inv_bc2) + eps);
    }
}

void tb_cpu_register_optim(tb_backend_ops *ops)
{
    ops->sgd_update = cpu_sgd_update;
    ops->adamw_update = cpu_adamw_update;
}

/* cuda_optim.cu: optimizer update sweeps over flat parameter buffers on the GPU, one element per
 * thread. Formulas follow src/backend/cpu/cpu_optim.c term for term.
 *
 * Adding an optimizer kernel: write the entry's function with one tb_cuda_for_each over n whose
 * __device__ lambda updates element i (capture pointers and scalars by value), and set the
 * entry in tb_cuda_register_optim. Values that change from step to step are taken by pointer
 * and resolved as below, so the kernel works inside a captured CUDA graph. */
#include "backend/cuda/cuda_internal.h"

/* Per-step values (learning rate, coefficients) come by pointer. Outside a capture they are
 * read on the host now and passed by value; while capturing, a pointer into the step block is
 * passed instead (tb_step_device_ref) and every thread reads the value from the device mirror
 * (one uniform, cached load), so replays use the values of the latest step upload. */

static void cuda_sgd_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                            const float *lr_ptr, float momentum, bool nesterov, float wd)
{
    const float lr_host = *lr_ptr;
    const float *lr_dev = (const float *)tb_step_device_ref(be, lr_ptr);
    if (momentum == 0.0f) { /* no velocity buffer is needed (v may be NULL) */
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
            const float lr = lr_dev ? *lr_dev : lr_host;
            w[i] -= lr * (g[i] + wd * w[i]);
        });
        return;
    }
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const float lr = lr_dev ? *lr_dev : lr_host;
        float gi = g[i] + wd * w[i];
        float vi = momentum * v[i] + gi;
        v[i] = vi;
        w[i] -= lr * (nesterov ? gi + momentum * vi : vi);
    });
}

static void cuda_adam_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                             float *v, const tb_adam_coefs *c, float *dir)
{
    const tb_adam_coefs host = *c;
    const tb_adam_coefs *dev = (const tb_adam_coefs *)tb_step_device_ref(be, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_adam_coefs k = dev ? *dev : host;
        float wi = w[i];
        float gi = g[i] + k.l2 * wi;
        float mi = k.beta1 * m[i] + k.one_minus_beta1 * gi;
        float vi = k.beta2 * v[i] + k.one_minus_beta2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float step = (k.c_m * mi + k.c_g * gi) / (sqrtf(vi * k.inv_bc2) + k.eps);
        if (dir)
            dir[i] = k.dir_decay * wi + step;
        else
            w[i] = wi * k.decay - step;
    });
}

static void cuda_rms_update(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                            float *m, const tb_rms_coefs *c)
{
    const tb_rms_coefs host = *c;
    const tb_rms_coefs *dev = (const tb_rms_coefs *)tb_step_device_ref(be, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_rms_coefs k = dev ? *dev : host;
        float gi = g[i] + k.l2 * w[i];
        float vi = k.v_decay * v[i] + k.sq_scale * gi * gi;
        v[i] = vi;
        float d = k.eps_inside ? sqrtf(vi + k.eps) : sqrtf(vi) + k.eps;
        if (m) {
            float mi = k.momentum * m[i] + k.lr_in * gi / d;
            m[i] = mi;
            w[i] -= k.lr_out * mi;
        } else {
            w[i] -= k.lr_out * k.lr_in * gi / d;
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

/* cuda_optim_elem.cu: the element-wise updates of Schedule-Free, Lion, ADOPT, AdEMAMix, Prodigy
 * and MARS on the GPU, term for term as src/backend/cpu/cpu_optim_elem.c. Per-step coefficients
 * come by pointer and are resolved as in cuda_optim.cu, so the kernels work in a captured graph
 * (Prodigy's first pass reads sums back and is refused inside a capture). */
#include "backend/cuda/cuda_internal.h"

#define TB_COEFS(type, c)                                                                          \
    const type host = *(c);                                                                        \
    const type *dev = (const type *)tb_step_device_ref(be, (c))

static void cuda_sf_update(tb_backend *be, int64_t n, float *y, const float *g, float *z,
                           float *v, const tb_sf_coefs *c)
{
    TB_COEFS(tb_sf_coefs, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_sf_coefs k = dev ? *dev : host;
        float u = g[i];
        if (v) {
            float vi = k.beta2 * v[i] + k.one_minus_beta2 * u * u;
            v[i] = vi;
            u = u / (sqrtf(vi / k.bc2) + k.eps);
        }
        float yi = y[i], zi = z[i];
        u += k.wd * yi;
        y[i] = yi + k.ckp1 * (zi - yi) + k.c_y * u;
        z[i] = zi - k.lr * u;
    });
}

static void cuda_lion_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                             const tb_lion_coefs *c)
{
    TB_COEFS(tb_lion_coefs, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_lion_coefs k = dev ? *dev : host;
        float mi = m[i], gi = g[i];
        float d = k.beta1 * mi + k.one_minus_beta1 * gi;
        float sign = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
        w[i] = w[i] * k.decay - k.lr * sign;
        m[i] = k.beta2 * mi + k.one_minus_beta2 * gi;
    });
}

static void cuda_adopt_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                              float *v, const tb_adopt_coefs *c)
{
    TB_COEFS(tb_adopt_coefs, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_adopt_coefs k = dev ? *dev : host;
        float wi = w[i];
        float gi = g[i] + k.l2 * wi;
        wi *= k.decay;
        if (k.first) {
            v[i] += gi * gi;
            w[i] = wi;
            return;
        }
        float u = gi / fmaxf(sqrtf(v[i]), k.eps);
        u = fminf(fmaxf(u, -k.clip), k.clip);
        float mi = m[i] + k.beta1_gap * (u - m[i]);
        m[i] = mi;
        w[i] = wi - k.lr * mi;
        v[i] = k.beta2 * v[i] + k.one_minus_beta2 * gi * gi;
    });
}

static void cuda_ademamix_update(tb_backend *be, int64_t n, float *w, const float *g, float *m1,
                                 float *m2, float *v, const tb_ademamix_coefs *c)
{
    TB_COEFS(tb_ademamix_coefs, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_ademamix_coefs k = dev ? *dev : host;
        float wi = w[i];
        float gi = g[i] + k.l2 * wi;
        float a = m1[i] + k.one_minus_beta1 * (gi - m1[i]);
        float b = m2[i] + k.one_minus_beta3 * (gi - m2[i]);
        float vi = k.beta2 * v[i] + k.one_minus_beta2 * gi * gi;
        m1[i] = a;
        m2[i] = b;
        v[i] = vi;
        w[i] = wi * k.decay - k.lr * (a / k.bc1 + k.alpha * b) / (sqrtf(vi) / k.bc2_sqrt + k.eps);
    });
}

/* Sums over [0, n) of f into host *out (synchronises). */
template <class F> static double cuda_sum(tb_backend *be, int64_t n, F f)
{
    tb_cuda *cu = tb_cu(be);
    tb_cuda_reduce(be, n, f, 1.0, NULL, cu->result);
    double out = 0;
    tb_cuda_check(be, cudaMemcpyAsync(&out, cu->result, sizeof out, cudaMemcpyDeviceToHost,
                                      cu->stream));
    tb_cuda_check(be, cudaStreamSynchronize(cu->stream));
    return out;
}

static void cuda_prodigy_accumulate(tb_backend *be, int64_t n, const float *w, const float *g,
                                    const float *p0, float *m, float *v, float *s,
                                    const tb_prodigy_coefs *c, double sums[2])
{
    sums[0] = sums[1] = NAN;
    if (tb_cuda_refused_in_capture(be, "prodigy_accumulate (sums read back)")) return;
    const tb_prodigy_coefs k = *c;
    sums[0] = cuda_sum(be, n, [=] __device__(int64_t i) {
        float gi = g[i] + k.l2 * w[i];
        return (double)gi * (double)(p0[i] - w[i]);
    });
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        float gi = g[i] + k.l2 * w[i];
        m[i] = k.beta1 * m[i] + k.m_scale * gi;
        v[i] = k.beta2 * v[i] + k.v_scale * gi * gi;
        s[i] = k.beta3 * s[i] + k.s_scale * gi;
    });
    sums[1] = cuda_sum(be, n, [=] __device__(int64_t i) { return fabs((double)s[i]); });
}

static void cuda_prodigy_apply(tb_backend *be, int64_t n, float *w, const float *m,
                               const float *v, const tb_prodigy_coefs *c)
{
    TB_COEFS(tb_prodigy_coefs, c);
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const tb_prodigy_coefs k = dev ? *dev : host;
        w[i] = k.decay * w[i] - k.dlr * m[i] / (sqrtf(v[i]) + k.d_eps);
    });
}

static void cuda_mars_correct(tb_backend *be, int64_t n, const float *g, float *last, float *c,
                              float k)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        float gi = g[i];
        c[i] = k * (gi - last[i]) + gi;
        last[i] = gi;
    });
}

void tb_cuda_register_optim_elem(tb_backend_ops *ops)
{
    ops->sf_update = cuda_sf_update;
    ops->lion_update = cuda_lion_update;
    ops->adopt_update = cuda_adopt_update;
    ops->ademamix_update = cuda_ademamix_update;
    ops->prodigy_accumulate = cuda_prodigy_accumulate;
    ops->prodigy_apply = cuda_prodigy_apply;
    ops->mars_correct = cuda_mars_correct;
}

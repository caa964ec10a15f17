/* cpu_optim_elem.c: the element-wise updates of Schedule-Free, Lion, ADOPT, AdEMAMix, Prodigy and
 * MARS (backend_impl.h gives each formula), one sweep over a flat buffer each. */
#include "backend/cpu/cpu.h"

#include <math.h>

static void cpu_sf_update(tb_backend *be, int64_t n, float *y, const float *g, float *z, float *v,
                          const tb_sf_coefs *c)
{
    const tb_sf_coefs k = *c;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
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
    }
}

static void cpu_lion_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                            const tb_lion_coefs *c)
{
    const tb_lion_coefs k = *c;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float mi = m[i], gi = g[i];
        float d = k.beta1 * mi + k.one_minus_beta1 * gi;
        float sign = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
        w[i] = w[i] * k.decay - k.lr * sign;
        m[i] = k.beta2 * mi + k.one_minus_beta2 * gi;
    }
}

static void cpu_adopt_update(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                             float *v, const tb_adopt_coefs *c)
{
    const tb_adopt_coefs k = *c;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float wi = w[i];
        float gi = g[i] + k.l2 * wi;
        wi *= k.decay;
        if (k.first) {
            v[i] += gi * gi;
            w[i] = wi;
            continue;
        }
        float u = gi / fmaxf(sqrtf(v[i]), k.eps);
        u = fminf(fmaxf(u, -k.clip), k.clip);
        float mi = m[i] + k.beta1_gap * (u - m[i]);
        m[i] = mi;
        w[i] = wi - k.lr * mi;
        v[i] = k.beta2 * v[i] + k.one_minus_beta2 * gi * gi;
    }
}

static void cpu_ademamix_update(tb_backend *be, int64_t n, float *w, const float *g, float *m1,
                                float *m2, float *v, const tb_ademamix_coefs *c)
{
    const tb_ademamix_coefs k = *c;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float wi = w[i];
        float gi = g[i] + k.l2 * wi;
        float a = m1[i] + k.one_minus_beta1 * (gi - m1[i]);
        float b = m2[i] + k.one_minus_beta3 * (gi - m2[i]);
        float vi = k.beta2 * v[i] + k.one_minus_beta2 * gi * gi;
        m1[i] = a;
        m2[i] = b;
        v[i] = vi;
        w[i] = wi * k.decay - k.lr * (a / k.bc1 + k.alpha * b) / (sqrtf(vi) / k.bc2_sqrt + k.eps);
    }
}

static void cpu_prodigy_accumulate(tb_backend *be, int64_t n, const float *w, const float *g,
                                   const float *p0, float *m, float *v, float *s,
                                   const tb_prodigy_coefs *c, double sums[2])
{
    const tb_prodigy_coefs k = *c;
    double dot = 0.0, abs_s = 0.0;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)         \
    reduction(+ : dot, abs_s)
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i] + k.l2 * w[i];
        dot += (double)gi * (double)(p0[i] - w[i]);
        m[i] = k.beta1 * m[i] + k.m_scale * gi;
        v[i] = k.beta2 * v[i] + k.v_scale * gi * gi;
        float si = k.beta3 * s[i] + k.s_scale * gi;
        s[i] = si;
        abs_s += fabs((double)si);
    }
    sums[0] = dot;
    sums[1] = abs_s;
}

static void cpu_prodigy_apply(tb_backend *be, int64_t n, float *w, const float *m, const float *v,
                              const tb_prodigy_coefs *c)
{
    const tb_prodigy_coefs k = *c;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++)
        w[i] = k.decay * w[i] - k.dlr * m[i] / (sqrtf(v[i]) + k.d_eps);
}

static void cpu_mars_correct(tb_backend *be, int64_t n, const float *g, float *last, float *c,
                             float k)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        c[i] = k * (gi - last[i]) + gi;
        last[i] = gi;
    }
}

void tb_cpu_register_optim_elem(tb_backend_ops *ops)
{
    ops->sf_update = cpu_sf_update;
    ops->lion_update = cpu_lion_update;
    ops->adopt_update = cpu_adopt_update;
    ops->ademamix_update = cpu_ademamix_update;
    ops->prodigy_accumulate = cpu_prodigy_accumulate;
    ops->prodigy_apply = cpu_prodigy_apply;
    ops->mars_correct = cpu_mars_correct;
}

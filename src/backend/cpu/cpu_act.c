/* cpu_act.c: activations forward and backward. The loops over a range run on the calling
 * thread, so that a product's epilogue can apply them to a tile while it is in cache
 * (cpu_gemm.c); the backend's entries split a vector into chunks across the threads. */
#include "backend/cpu/cpu.h"

/* Phi(x), the standard normal CDF, and e^(-x^2/2), sharing one exponential:
 * Phi(x) = (1 + erf(x/sqrt2))/2 with erf by Abramowitz & Stegun 7.1.26 (absolute error below
 * 1.5e-7), vectorisable (no libm call). Past |x/sqrt2| = 9 erf is +-1 in float and the
 * density is below float's range: z is clamped there and the density reported as 0, so that
 * GELU and its gradient tend to x or 0 and to 1 or 0 at any magnitude, infinities included
 * (the exponential's clamp at -87 would otherwise leave x e^(-x^2/2) growing with x). NaN
 * stays NaN. */
#define GELU_Z_MAX 9.0f

#ifndef __AVX512F__
static inline float normal_cdf(float x, float *gauss)
{
    const float z0 = x * 0.70710678118654752f;
    const float z = z0 > GELU_Z_MAX ? GELU_Z_MAX : (z0 < -GELU_Z_MAX ? -GELU_Z_MAX : z0);
    const float az = z < 0.0f ? -z : z;
    const float t = 1.0f / (1.0f + 0.3275911f * az);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    const float e = tb_cpu_expf(-z * z);
    const float erf_abs = 1.0f - p * t * e;
    *gauss = z0 > GELU_Z_MAX || z0 < -GELU_Z_MAX ? 0.0f : e;
    return 0.5f + 0.5f * (z < 0.0f ? -erf_abs : erf_abs);
}

static inline float gelu(float x)
{
    float e;
    const float cdf = normal_cdf(x, &e);
    return cdf == 0.0f ? 0.0f : x * cdf; /* 0, not NaN, at -inf */
}

static inline float gelu_grad(float x)
{
    float e;
    const float cdf = normal_cdf(x, &e);
    return cdf + (e == 0.0f ? 0.0f : x * 0.39894228040143268f * e);
}
#else
/* normal_cdf for 16 floats: the same steps, with the division as a reciprocal estimate and
 * one Newton step (relative error 2^-28; the compiler's vectorisation of a division kept the
 * full division and ran 2.5x slower). NaN lanes come out as garbage here: the callers put
 * the NaN back. */
static inline __m512 normal_cdf16(__m512 x, __m512 *gauss)
{
    const __m512 one = _mm512_set1_ps(1.0f), zmax = _mm512_set1_ps(GELU_Z_MAX);
    const __m512 z0 = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
    const __m512 z = _mm512_min_ps(_mm512_max_ps(z0, _mm512_sub_ps(_mm512_setzero_ps(), zmax)),
                                   zmax);
    const __m512 az = _mm512_abs_ps(z);
    const __m512 d = _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), az, one);
    __m512 t = _mm512_rcp14_ps(d);
    t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmsub_ps(p, t, _mm512_set1_ps(1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmsub_ps(p, t, _mm512_set1_ps(0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    /* -z^2 is in [-81, 0]: no clamp needed (NaN lanes are the callers' to fix) */
    const __m512 e = tb_cpu_exp16_core(_mm512_fnmadd_ps(z, z, _mm512_setzero_ps()));
    const __m512 erf_abs = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, one);
    const __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 erf = _mm512_mask_sub_ps(erf_abs, neg, _mm512_setzero_ps(), erf_abs);
    const __mmask16 inside = _mm512_cmp_ps_mask(_mm512_abs_ps(z0), zmax, _CMP_LE_OQ);
    *gauss = _mm512_maskz_mov_ps(inside, e);
    return _mm512_fmadd_ps(_mm512_set1_ps(0.5f), erf, _mm512_set1_ps(0.5f));
}

/* gelu and gelu_grad for 16 floats, with the same limits; NaN stays NaN. */
static inline __m512 gelu16(__m512 x)
{
    __m512 e;
    const __m512 cdf = normal_cdf16(x, &e);
    const __m512 g = _mm512_maskz_mul_ps( /* 0 where Phi is 0 (so 0, not NaN, at -inf) */
        _mm512_cmp_ps_mask(cdf, _mm512_setzero_ps(), _CMP_NEQ_UQ), x, cdf);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), g, x);
}

static inline __m512 gelu_grad16(__m512 x)
{
    __m512 e;
    const __m512 cdf = normal_cdf16(x, &e);
    const __m512 tail = _mm512_maskz_mul_ps( /* x phi(x), 0 where the density is */
        _mm512_cmp_ps_mask(e, _mm512_setzero_ps(), _CMP_NEQ_UQ),
        _mm512_mul_ps(x, _mm512_set1_ps(0.39894228040143268f)), e);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q),
                                _mm512_add_ps(cdf, tail), x);
}

#endif

static inline float silu_grad(float x)
{
    float s = tb_cpu_sigmoidf(x);
    return s * (1.0f + x * (1.0f - s));
}

void tb_cpu_act_fwd_range(tb_act act, int64_t n, const float *x, float *y)
{
    switch (act) {
    case TB_ACT_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case TB_ACT_GELU:
#ifdef __AVX512F__
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = tb_cpu_lanes(n - i);
            _mm512_mask_storeu_ps(y + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
        }
#else
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = gelu(x[i]);
#endif
        break;
    case TB_ACT_SILU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * tb_cpu_sigmoidf(x[i]);
        break;
    case TB_ACT_TANH:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = tb_cpu_tanhf(x[i]);
        break;
    case TB_ACT_SIGMOID:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = tb_cpu_sigmoidf(x[i]);
        break;
    case TB_ACT_COUNT: break;
    }
}

/* dx[i] (+)= G for every i, G an expression in i (a fresh dx is never read: its contents may
 * be anything, NaN included; dx may be dy). */
#define ACT_BWD_LOOP(G)                                                                    \
    do {                                                                                   \
        if (dx_acc) {                                                                      \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) dx[i] += (G);              \
        } else {                                                                           \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) dx[i] = (G);               \
        }                                                                                  \
    } while (0)

void tb_cpu_act_bwd_range(tb_act act, int64_t n, const float *x, const float *y,
                          const float *dy, float *dx, bool dx_acc)
{
    switch (act) {
    case TB_ACT_RELU: ACT_BWD_LOOP(x[i] > 0.0f ? dy[i] : 0.0f); break;
    case TB_ACT_GELU:
#ifdef __AVX512F__
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = tb_cpu_lanes(n - i);
            __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dy + i),
                                     gelu_grad16(_mm512_maskz_loadu_ps(m, x + i)));
            if (dx_acc) g = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dx + i), g);
            _mm512_mask_storeu_ps(dx + i, m, g);
        }
#else
        ACT_BWD_LOOP(dy[i] * gelu_grad(x[i]));
#endif
        break;
    case TB_ACT_SILU: ACT_BWD_LOOP(dy[i] * silu_grad(x[i])); break;
    case TB_ACT_TANH: ACT_BWD_LOOP(dy[i] * (1.0f - y[i] * y[i])); break;
    case TB_ACT_SIGMOID: ACT_BWD_LOOP(dy[i] * y[i] * (1.0f - y[i])); break;
    case TB_ACT_COUNT: break;
    }
}

void tb_cpu_act_fwd_rows(tb_act act, int m, int n, const float *x, int64_t ldx, float *y,
                         int64_t ldy)
{
#ifdef __AVX512F__
    if (act == TB_ACT_GELU) { /* the common case without a call and a switch per row */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j += 16) {
                const __mmask16 k = tb_cpu_lanes(n - j);
                _mm512_mask_storeu_ps(y + i * ldy + j, k,
                                      gelu16(_mm512_maskz_loadu_ps(k, x + i * ldx + j)));
            }
        return;
    }
#endif
    for (int i = 0; i < m; i++) tb_cpu_act_fwd_range(act, n, x + i * ldx, y + i * ldy);
}

void tb_cpu_act_grad_rows(tb_act act, int m, int n, const float *x, const float *y,
                          int64_t ldxy, float *d, int64_t ldd)
{
#ifdef __AVX512F__
    if (act == TB_ACT_GELU) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j += 16) {
                const __mmask16 k = tb_cpu_lanes(n - j);
                float *dp = d + i * ldd + j;
                _mm512_mask_storeu_ps(
                    dp, k,
                    _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dp),
                                  gelu_grad16(_mm512_maskz_loadu_ps(k, x + i * ldxy + j))));
            }
        return;
    }
#endif
    for (int i = 0; i < m; i++)
        tb_cpu_act_bwd_range(act, n, x + i * ldxy, y ? y + i * ldxy : NULL, d + i * ldd,
                             d + i * ldd, false);
}

/* The backend's entries: chunks of ACT_CHUNK elements (a multiple of 16) across the threads
 * for vectors above ACT_PAR elements. */
#define ACT_CHUNK 4096
#define ACT_PAR 16384

static void cpu_act_fwd(tb_backend *be, tb_act act, int64_t n, const float *x, float *y)
{
    (void)be;
    const int64_t chunks = (n + ACT_CHUNK - 1) / ACT_CHUNK;
#pragma omp parallel for schedule(static) if (n > ACT_PAR)
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t i = c * ACT_CHUNK;
        tb_cpu_act_fwd_range(act, n - i < ACT_CHUNK ? n - i : ACT_CHUNK, x + i, y + i);
    }
}

static void cpu_act_bwd(tb_backend *be, tb_act act, int64_t n, const float *x, const float *y,
                        const float *dy, float *dx, bool dx_acc)
{
    (void)be;
    const int64_t chunks = (n + ACT_CHUNK - 1) / ACT_CHUNK;
#pragma omp parallel for schedule(static) if (n > ACT_PAR)
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t i = c * ACT_CHUNK;
        tb_cpu_act_bwd_range(act, n - i < ACT_CHUNK ? n - i : ACT_CHUNK, x + i,
                             y ? y + i : NULL, dy + i, dx + i, dx_acc);
    }
}

void tb_cpu_register_act(tb_backend_ops *ops)
{
    ops->act_fwd = cpu_act_fwd;
    ops->act_bwd = cpu_act_bwd;
}

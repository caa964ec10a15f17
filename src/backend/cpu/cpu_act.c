/* cpu_act.c: activations forward and backward. The loops over a range run on the calling
 * thread, so that a product's epilogue can apply them to a tile while it is in cache
 * (cpu_gemm.c); the backend's entries split a vector into chunks across the threads. */
#include "backend/cpu/cpu.h"

/* GELU(x) = x Phi(x), Phi the standard normal CDF, and GELU'(x) = Phi(x) + x phi(x).
 *
 * Without AVX-512: Phi and e^(-x^2/2) share one exponential, Phi(x) = (1 + erf(x/sqrt2))/2 with
 * erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), vectorisable (no libm
 * call). Past |x/sqrt2| = 9 erf is +-1 in float and the density is below float's range: z is
 * clamped there and the density reported as 0, so that GELU and its gradient tend to x or 0
 * and to 1 or 0 at any magnitude, infinities included (the exponential's clamp at -87 would
 * otherwise leave x e^(-x^2/2) growing with x). NaN stays NaN. With AVX2, the same in 8
 * lanes with fused multiply-adds; with AVX-512, piecewise polynomials from tables, below,
 * with the same limits. */
#ifndef __AVX512F__
#define GELU_Z_MAX 9.0f

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
#endif

#if !defined(__AVX512F__) && defined(TB_CPU_VEC_W) && TB_CPU_VEC_W == 8
/* normal_cdf in 8 lanes: Phi(x), and e^(-x^2/2) in *gauss (0 past |x/sqrt2| = 9). GCC's
 * vectorisation of the scalar form above ran 2.4 ns an element (no fused multiply-adds under
 * -std=c11, constants spilled); this one runs several times faster. */
static inline __m256 normal_cdf8(__m256 x, __m256 *gauss)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), zmax = _mm256_set1_ps(GELU_Z_MAX);
    const __m256 z0 = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
    const __m256 z = _mm256_min_ps(_mm256_max_ps(z0, _mm256_set1_ps(-GELU_Z_MAX)), zmax);
    const __m256 az = _mm256_andnot_ps(sign, z), one = _mm256_set1_ps(1.0f);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), one));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    const __m256 e = tb_cpu_vexp_core(_mm256_mul_ps(_mm256_xor_ps(z, sign), z));
    const __m256 erf_abs = _mm256_fnmadd_ps(_mm256_mul_ps(p, t), e, one);
    *gauss = _mm256_and_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, z0), zmax, _CMP_LE_OQ), e);
    const __m256 half = _mm256_set1_ps(0.5f);
    return _mm256_fmadd_ps(half, _mm256_or_ps(erf_abs, _mm256_and_ps(z, sign)), half);
}

/* gelu and gelu_grad in 8 lanes, with the scalar forms' limits; NaN stays NaN. */
static inline __m256 gelu_vec(__m256 x)
{
    __m256 e;
    const __m256 cdf = normal_cdf8(x, &e);
    const __m256 zero = _mm256_cmp_ps(cdf, _mm256_setzero_ps(), _CMP_EQ_OQ);
    const __m256 y = _mm256_andnot_ps(zero, _mm256_mul_ps(x, cdf));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline __m256 gelu_grad_vec(__m256 x)
{
    __m256 e;
    const __m256 cdf = normal_cdf8(x, &e);
    const __m256 dens = _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.39894228040143268f)), e);
    const __m256 none = _mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_EQ_OQ);
    const __m256 g = _mm256_add_ps(cdf, _mm256_andnot_ps(none, dens));
    return _mm256_blendv_ps(g, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
#endif

#ifdef __AVX512F__
#include "backend/cpu/cpu_gelu_tables.h"

/* The table polynomial (cpu_gelu_tables.h) at x clamped to [-6, 6], for 16 floats: n = round(2x),
 * t = x - n/2 (exact), the six coefficients of n looked up by two-register permutes (index
 * n & 31) and summed by Horner's rule. About 19 instructions against 35 for the A&S form with
 * its exponential (cpu_gelu_tables.h: absolute error of GELU below 5e-7 on any input, of GELU'
 * below 3e-7). The clamp's operand order keeps NaN, which the lookup then carries through. */
static inline __m512 gelu_poly16(const float (*coef)[32], __m512 x)
{
    const __m512 c = _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(_mm512_set1_ps(-6.0f), x));
    const __m512 n = _mm512_roundscale_ps(_mm512_add_ps(c, c),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 t = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.5f), c);
    const __m512i i = _mm512_cvtps_epi32(n);
    __m512 p = _mm512_permutex2var_ps(_mm512_load_ps(coef[5]), i, _mm512_load_ps(coef[5] + 16));
#pragma GCC unroll 5
    for (int d = 4; d >= 0; d--)
        p = _mm512_fmadd_ps(p, t, _mm512_permutex2var_ps(_mm512_load_ps(coef[d]), i,
                                                         _mm512_load_ps(coef[d] + 16)));
    return p;
}

/* gelu and gelu_grad for 16 floats: Phi is 1 in float past 6 (GELU(x) = x), and below -6 the
 * result is 0 (so 0, not NaN, at -inf); GELU' is 1 past 6 and 0 below -6; NaN stays NaN. */
static inline __m512 gelu_vec(__m512 x)
{
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-6.0f), _CMP_NLT_UQ);
    return _mm512_maskz_mul_ps(keep, x, gelu_poly16(gelu_cdf_coef, x));
}

static inline __m512 gelu_grad_vec(__m512 x)
{
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-6.0f), _CMP_NLT_UQ);
    const __mmask16 one = _mm512_cmp_ps_mask(x, _mm512_set1_ps(6.0f), _CMP_GT_OQ);
    return _mm512_mask_blend_ps(one, _mm512_maskz_mov_ps(keep, gelu_poly16(gelu_grad_coef, x)),
                                _mm512_set1_ps(1.0f));
}

#endif

/* SiLU(x) = x sigmoid(x) and SiLU'(x) = s (1 + x (1 - s)), s = sigmoid(x). Past |x| = 88 the
 * limits are taken: SiLU 0 and SiLU' 0 below -88 (the sigmoid's exponential is clamped there,
 * so x s would be x e^-88, -0.6 at x = -1e38), SiLU' 1 above 88 (where 1 - s is 0 in float, and
 * infinity times it NaN); the error is below 1e-35. NaN stays NaN. */
#define SILU_X_MAX 88.0f

static inline float silu(float x) { return x < -SILU_X_MAX ? 0.0f : x * tb_cpu_sigmoidf(x); }

static inline float silu_grad(float x)
{
    const float s = tb_cpu_sigmoidf(x);
    const float g = x > SILU_X_MAX ? 1.0f : s * (1.0f + x * (1.0f - s));
    return x < -SILU_X_MAX ? 0.0f : g;
}

#ifdef TB_CPU_VEC_W
static inline tb_vf silu_vec(tb_vf x)
{
    return tb_vec_select_lt(x, tb_vec_set1(-SILU_X_MAX), tb_vec_zero(),
                            tb_vec_mul(x, tb_cpu_vsigmoid(x)));
}

static inline tb_vf silu_grad_vec(tb_vf x)
{
    const tb_vf s = tb_cpu_vsigmoid(x), one = tb_vec_set1(1.0f);
    const tb_vf g = tb_vec_select_lt(tb_vec_set1(SILU_X_MAX), x, one,
                                     tb_vec_mul(s, tb_vec_fmadd(x, tb_vec_sub(one, s), one)));
    return tb_vec_select_lt(x, tb_vec_set1(-SILU_X_MAX), tb_vec_zero(), g);
}

/* y[i] = f(x[i]) for i < n, a vector of f at a time */
#define VEC_MAP(f)                                                                         \
    for (int64_t i = 0; i < n; i += TB_CPU_VEC_W)                                          \
    tb_vec_store_n(y + i, n - i, f(tb_vec_load_n(x + i, n - i)))

/* dx[i] (+)= dy[i] fg(x[i]) for i < n, a vector of fg at a time (a fresh dx is never read) */
#define VEC_GRAD(fg)                                                                       \
    for (int64_t i = 0; i < n; i += TB_CPU_VEC_W) {                                        \
        tb_vf g = tb_vec_mul(tb_vec_load_n(dy + i, n - i), fg(tb_vec_load_n(x + i, n - i))); \
        if (dx_acc) g = tb_vec_add(tb_vec_load_n(dx + i, n - i), g);                       \
        tb_vec_store_n(dx + i, n - i, g);                                                  \
    }
#endif

void tb_cpu_act_fwd_range(tb_act act, int64_t n, const float *x, float *y)
{
    switch (act) {
    case TB_ACT_RELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
#ifdef TB_CPU_VEC_W /* gelu_vec, AVX-512's or AVX2's, and the others for both widths */
    case TB_ACT_GELU: VEC_MAP(gelu_vec); break;
    case TB_ACT_SILU: VEC_MAP(silu_vec); break;
    case TB_ACT_TANH: VEC_MAP(tb_cpu_vtanh); break;
    case TB_ACT_SIGMOID: VEC_MAP(tb_cpu_vsigmoid); break;
#else
    case TB_ACT_GELU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = gelu(x[i]);
        break;
    case TB_ACT_SILU:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = silu(x[i]);
        break;
    case TB_ACT_TANH:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = tb_cpu_tanhf(x[i]);
        break;
    case TB_ACT_SIGMOID:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = tb_cpu_sigmoidf(x[i]);
        break;
#endif
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
#ifdef TB_CPU_VEC_W
    case TB_ACT_GELU: VEC_GRAD(gelu_grad_vec); break;
    case TB_ACT_SILU: VEC_GRAD(silu_grad_vec); break;
#else
    case TB_ACT_GELU: ACT_BWD_LOOP(dy[i] * gelu_grad(x[i])); break;
    case TB_ACT_SILU: ACT_BWD_LOOP(dy[i] * silu_grad(x[i])); break;
#endif
    case TB_ACT_TANH: ACT_BWD_LOOP(dy[i] * (1.0f - y[i] * y[i])); break;
    case TB_ACT_SIGMOID: ACT_BWD_LOOP(dy[i] * y[i] * (1.0f - y[i])); break;
    case TB_ACT_COUNT: break;
    }
}

void tb_cpu_act_fwd_rows(tb_act act, int m, int n, const float *x, int64_t ldx, float *y,
                         int64_t ldy)
{
#ifdef TB_CPU_VEC_W
    if (act == TB_ACT_GELU) { /* the common case without a call and a switch per row */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j += TB_CPU_VEC_W)
                tb_vec_store_n(y + i * ldy + j, n - j,
                               gelu_vec(tb_vec_load_n(x + i * ldx + j, n - j)));
        return;
    }
#endif
    for (int i = 0; i < m; i++) tb_cpu_act_fwd_range(act, n, x + i * ldx, y + i * ldy);
}

void tb_cpu_act_grad_rows(tb_act act, int m, int n, const float *x, const float *y,
                          int64_t ldxy, float *d, int64_t ldd)
{
#ifdef TB_CPU_VEC_W
    if (act == TB_ACT_GELU) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j += TB_CPU_VEC_W) {
                float *dp = d + i * ldd + j;
                tb_vec_store_n(dp, n - j,
                               tb_vec_mul(tb_vec_load_n(dp, n - j),
                                          gelu_grad_vec(tb_vec_load_n(x + i * ldxy + j, n - j))));
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
    const int64_t chunks = (n + ACT_CHUNK - 1) / ACT_CHUNK;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n > ACT_PAR)
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t i = c * ACT_CHUNK;
        tb_cpu_act_fwd_range(act, n - i < ACT_CHUNK ? n - i : ACT_CHUNK, x + i, y + i);
    }
}

static void cpu_act_bwd(tb_backend *be, tb_act act, int64_t n, const float *x, const float *y,
                        const float *dy, float *dx, bool dx_acc)
{
    const int64_t chunks = (n + ACT_CHUNK - 1) / ACT_CHUNK;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n > ACT_PAR)
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

/* cpu_dense.c: matrix products (the own sgemm of cpu_gemm.c, or OpenBLAS) and element-wise
 * kernels (OpenMP). */
#include "backend/cpu/cpu.h"

#include <math.h>

#include <omp.h>

#include <cblas.h>

/* Products at least this large (m n k) go to the backend's own sgemm (cpu_gemm.c); smaller
 * ones to OpenBLAS, whose small-matrix kernels win there (measured: 64^3 at 0.7x, 96^3 at 1.16x
 * of OpenBLAS, in build/bench_gemm). Products at least GEMM_SPLIT_MIN are split
 * across the threads. */
#define GEMM_OWN_MIN ((int64_t)1 << 19)
#define GEMM_SPLIT_MIN ((int64_t)1 << 22)

/* One thread's product C = alpha op(A) op(B) + beta C (+ bias in every row): the backend's
 * sgemm with this thread's scratch slice, or OpenBLAS. */
static void gemm_one(tb_backend *be, int tid, bool own, bool ta, bool tb, int m, int n, int k,
                     float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                     const float *bias, float *c, int ldc)
{
    if (own)
        tb_cpu_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc,
                     tb_cpu_gemm_scratch(be, tid));
    else
        tb_cpu_sgemm_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc);
}

/* Large products are split into one block of C per thread, along its longer side (columns in
 * multiples of the 32-column micro tile), each block a single-threaded product. Measured on
 * the 2-core development machine, this beats OpenBLAS's own threading on the tall-skinny
 * products of training steps (e.g. 2048 x 512 x 128) and matches it on square ones. With the
 * backend's own kernel each block's result is the same as the unsplit one's, bit for bit
 * (every element is the same dot product in the same order); OpenBLAS (without AVX-512)
 * picks its kernels by shape, so there the last bits may differ between thread counts. */
static void gemm_run(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta,
                     const float *bias, float *c, int ldc)
{
    be->gemm_flops += 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k;
    const int64_t size = (int64_t)m * n * k;
    /* inside another parallel region only OpenBLAS is safe: the scratch is per thread of
     * the backend's own teams */
    const bool nested = omp_in_parallel(), own = size >= GEMM_OWN_MIN && !nested;
    const int threads = be->threads;
    if (threads < 2 || size < GEMM_SPLIT_MIN || nested) {
        gemm_one(be, 0, own, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc);
        return;
    }
    const bool rows = m >= n;
#pragma omp parallel num_threads(threads)
    {
        const int id = omp_get_thread_num(), nth = omp_get_num_threads();
        if (rows) {
            const int m0 = (int)((int64_t)m * id / nth), m1 = (int)((int64_t)m * (id + 1) / nth);
            if (m1 > m0)
                gemm_one(be, id, own, ta, tb, m1 - m0, n, k, alpha,
                         ta ? a + m0 : a + (int64_t)m0 * lda, lda, b, ldb, beta, bias,
                         c + (int64_t)m0 * ldc, ldc);
        } else {
            const int tile = TB_CPU_GEMM_NR, blocks = (n + tile - 1) / tile;
            const int n0 = tile * (int)((int64_t)blocks * id / nth);
            int n1 = tile * (int)((int64_t)blocks * (id + 1) / nth);
            n1 = n1 < n ? n1 : n;
            if (n1 > n0)
                gemm_one(be, id, own, ta, tb, m, n1 - n0, k, alpha, a, lda,
                         tb ? b + (int64_t)n0 * ldb : b + n0, ldb, beta, bias ? bias + n0 : NULL,
                         c + n0, ldc);
        }
    }
}

static void cpu_gemm(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    gemm_run(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, NULL, c, ldc);
}

static void cpu_gemm_bias(tb_backend *be, bool ta, bool tb, int m, int n, int k, const float *a,
                          int lda, const float *b, int ldb, const float *bias, float *c, int ldc)
{
    gemm_run(be, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, bias, c, ldc);
}

static void cpu_gemm_batched(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                             const float *a, int lda, int64_t sa, const float *b, int ldb,
                             int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch)
{
    be->gemm_flops += 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k * (uint64_t)batch;
    for (int i = 0; i < batch; i++)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a + i * sa, lda, b + i * sb,
                    ldb, beta, c + i * sc, ldc);
}

static void cpu_fill(tb_backend *be, float *x, int64_t n, float v)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) x[i] = v;
}

static void cpu_scale(tb_backend *be, float *x, int64_t n, float a)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) x[i] *= a;
}

static void cpu_axpy(tb_backend *be, int64_t n, float a, const float *x, float *y)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void cpu_add(tb_backend *be, int64_t n, const float *a, const float *b, float *y)
{
    (void)be;
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

static void cpu_bias_grad(tb_backend *be, int64_t rows, int64_t cols, const float *dy, float *db)
{
    (void)be;
    /* column blocks, rows walked in order: every read is contiguous */
    enum { BLOCK = 256 };
    const int64_t blocks = (cols + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t blk = 0; blk < blocks; blk++) {
        const int64_t c0 = blk * BLOCK, w = cols - c0 < BLOCK ? cols - c0 : BLOCK;
        double acc[BLOCK];
        for (int64_t c = 0; c < w; c++) acc[c] = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const float *row = dy + r * cols + c0;
#pragma omp simd
            for (int64_t c = 0; c < w; c++) acc[c] += row[c];
        }
        for (int64_t c = 0; c < w; c++) db[c0 + c] += (float)acc[c];
    }
}

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
    const __m512 e = tb_cpu_exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z));
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

/* GELU forward and backward (dx (+)= dy GELU'(x)) in 16-lane blocks. */
static void gelu_fwd16(int64_t n, const float *x, float *y)
{
#pragma omp parallel for schedule(static) if (n > 8192)
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tb_cpu_lanes(n - i);
        _mm512_mask_storeu_ps(y + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

static void gelu_bwd16(int64_t n, const float *x, const float *dy, float *dx, bool dx_acc)
{
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tb_cpu_lanes(n - i);
        __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dy + i),
                                 gelu_grad16(_mm512_maskz_loadu_ps(m, x + i)));
        if (dx_acc) g = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dx + i), g);
        _mm512_mask_storeu_ps(dx + i, m, g);
    }
}
#endif

static void cpu_act_fwd(tb_backend *be, tb_act act, int64_t n, const float *x, float *y)
{
    (void)be;
    switch (act) {
    case TB_ACT_RELU:
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case TB_ACT_GELU:
#ifdef __AVX512F__
        gelu_fwd16(n, x, y);
#else
#pragma omp parallel for simd schedule(static) if (n > 8192)
        for (int64_t i = 0; i < n; i++) y[i] = gelu(x[i]);
#endif
        break;
    case TB_ACT_SILU:
#pragma omp parallel for simd schedule(static) if (n > 8192)
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * tb_cpu_sigmoidf(x[i]);
        break;
    case TB_ACT_TANH:
#pragma omp parallel for simd schedule(static) if (n > 8192)
        for (int64_t i = 0; i < n; i++) y[i] = tb_cpu_tanhf(x[i]);
        break;
    case TB_ACT_SIGMOID:
#pragma omp parallel for simd schedule(static) if (n > 8192)
        for (int64_t i = 0; i < n; i++) y[i] = tb_cpu_sigmoidf(x[i]);
        break;
    case TB_ACT_COUNT: break;
    }
}

/* dx[i] (+)= G for every i, G an expression in i; a parallel vector loop either way (a fresh dx
 * is never read: its contents may be anything, NaN included). */
#define ACT_BWD_LOOP(G)                                                                    \
    do {                                                                                   \
        if (dx_acc) {                                                                      \
            _Pragma("omp parallel for simd schedule(static) if (n > 16384)")                \
            for (int64_t i = 0; i < n; i++) dx[i] += (G);                                  \
        } else {                                                                           \
            _Pragma("omp parallel for simd schedule(static) if (n > 16384)")                \
            for (int64_t i = 0; i < n; i++) dx[i] = (G);                                   \
        }                                                                                  \
    } while (0)

static inline float silu_grad(float x)
{
    float s = tb_cpu_sigmoidf(x);
    return s * (1.0f + x * (1.0f - s));
}

static void cpu_act_bwd(tb_backend *be, tb_act act, int64_t n, const float *x, const float *y,
                        const float *dy, float *dx, bool dx_acc)
{
    (void)be;
    switch (act) {
    case TB_ACT_RELU: ACT_BWD_LOOP(x[i] > 0.0f ? dy[i] : 0.0f); break;
    case TB_ACT_GELU:
#ifdef __AVX512F__
        gelu_bwd16(n, x, dy, dx, dx_acc);
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

static void cpu_strided_copy(tb_backend *be, int ndim, const int64_t *shape, float *dst,
                             const int64_t *dst_stride, const float *src,
                             const int64_t *src_stride, bool accumulate)
{
    (void)be;
    if (ndim == 0) {
        *dst = accumulate ? *dst + *src : *src;
        return;
    }
    /* iterate over all but the last dimension; the last is the inner loop */
    int64_t outer = 1;
    for (int d = 0; d < ndim - 1; d++) outer *= shape[d];
    const int64_t inner = shape[ndim - 1], ds = dst_stride[ndim - 1], ss = src_stride[ndim - 1];
#pragma omp parallel for schedule(static) if (outer * inner > 32768)
    for (int64_t o = 0; o < outer; o++) {
        int64_t rem = o, doff = 0, soff = 0;
        for (int d = ndim - 2; d >= 0; d--) {
            int64_t i = rem % shape[d];
            rem /= shape[d];
            doff += i * dst_stride[d];
            soff += i * src_stride[d];
        }
        float *dp = dst + doff;
        const float *sp = src + soff;
        if (ds == 1 && ss == 1) { /* contiguous rows (concat, slices, broadcast rows) */
            if (accumulate) {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++) dp[i] += sp[i];
            } else {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++) dp[i] = sp[i];
            }
        } else if (accumulate)
            for (int64_t i = 0; i < inner; i++) dp[i * ds] += sp[i * ss];
        else
            for (int64_t i = 0; i < inner; i++) dp[i * ds] = sp[i * ss];
    }
}

static double cpu_sum_squares(tb_backend *be, int64_t n, const float *x)
{
    (void)be;
    double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

static float cpu_read_scalar(tb_backend *be, const float *x)
{
    (void)be;
    return *x;
}

void tb_cpu_register_dense(tb_backend_ops *ops)
{
    ops->gemm = cpu_gemm;
    ops->gemm_bias = cpu_gemm_bias;
    ops->gemm_batched = cpu_gemm_batched;
    ops->fill = cpu_fill;
    ops->scale = cpu_scale;
    ops->axpy = cpu_axpy;
    ops->add = cpu_add;
    ops->bias_grad = cpu_bias_grad;
    ops->act_fwd = cpu_act_fwd;
    ops->act_bwd = cpu_act_bwd;
    ops->strided_copy = cpu_strided_copy;
    ops->sum_squares = cpu_sum_squares;
    ops->read_scalar = cpu_read_scalar;
}

/* cpu_conv.c: 2-D convolution (im2col + sgemm), max/avg pooling and global average
 * pooling on NCHW tensors, parallelised with OpenMP.
 *
 * Convolution is parallel over images, not inside the products: each thread takes images,
 * builds an image's im2col matrix col[K, HWo] (K = c_in kh kw) in its own slice of the
 * workspace, where it stays in the core's cache, and calls sgemm on it (OpenBLAS, single-
 * threaded, or for the weight gradient the backend's own kernel with the thread's gemm
 * scratch). Per image:
 *     forward   y_b[c_out, HWo]  = w[c_out, K] col_b + bias
 *     backward  dw_q[K, c_out]  += col_b dy_b^T      (q: the image's chunk, see below)
 *               col_b            = w^T dy_b, then dx_b += col2im(col_b)
 * Threads own whole images, so no two write the same dx or y element. The weight gradient is
 * a sum over images, taken so that it has the same bits at any thread count: the images are
 * cut into at most CONV_DW_CHUNKS chunks of consecutive images fixed by the batch size alone
 * (conv_dw_chunk); each chunk's images are added in order, in float, into the chunk's own
 * dw_q by whichever thread has the chunk, and the chunks' dw_q are then added in chunk order,
 * in double. The bias gradient sums each channel over the images in order on one thread. For
 * stride 1 im2col and col2im move whole row segments instead of testing every element against
 * the padding, and for "same" geometry (output as large as the input) whole shifted planes.
 * A fresh dx (dx_acc false) is zeroed image by image just before its col2im. */
#include "backend/cpu/cpu.h"

#include <float.h>
#include <string.h>

#include <omp.h>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include <cblas.h>

static int64_t conv_k(const tb_conv_shape *s) { return (int64_t)s->c_in * s->kh * s->kw; }
static int64_t conv_hwo(const tb_conv_shape *s) { return (int64_t)s->h_out * s->w_out; }

static int conv_threads(const tb_backend *be, const tb_conv_shape *s)
{
    int t = be->threads > 0 ? be->threads : 1;
    return s->n < t ? (s->n > 0 ? s->n : 1) : t;
}

/* The weight gradient's chunks: at most this many, of conv_dw_chunk consecutive images each
 * (the last may be shorter). Enough chunks to balance the threads of a 16-core machine; few
 * enough that adding their partial sums costs little next to the products (the CNN's second
 * layer, 128 images: 32 partial sums of 144 x 32, about 150 000 additions against 116
 * million multiply-adds in the products). */
#define CONV_DW_CHUNKS 32

/* Images per chunk: fixed by the batch size, never by the thread count. */
static int conv_dw_chunk(const tb_conv_shape *s)
{
    const int n = s->n > 0 ? s->n : 1;
    return (n + CONV_DW_CHUNKS - 1) / CONV_DW_CHUNKS;
}

static int conv_dw_chunks(const tb_conv_shape *s)
{
    const int g = conv_dw_chunk(s);
    return s->n > 0 ? (s->n + g - 1) / g : 0;
}

/* The workspace: one col[K, HWo] per thread, then one dw_q^T[K, c_out] per chunk. */
static size_t cpu_conv2d_workspace(tb_backend *be, const tb_conv_shape *s)
{
    const int64_t cols = conv_threads(be, s) * conv_k(s) * conv_hwo(s);
    const int64_t parts = (int64_t)conv_dw_chunks(s) * s->c_out * conv_k(s);
    return (size_t)(cols + parts) * sizeof(float);
}

/* The output columns [lo, hi) of kernel column kj whose input column lies inside the image
 * (stride 1): iw = ow - pad + kj in [0, W). */
static void valid_cols(const tb_conv_shape *s, int kj, int *lo, int *hi)
{
    int a = s->pad - kj, b = s->w + s->pad - kj;
    *lo = a < 0 ? 0 : (a > s->w_out ? s->w_out : a);
    *hi = b > s->w_out ? s->w_out : (b < *lo ? *lo : b);
}

/* "Same" geometry: stride 1 and output planes as large as the input (2 pad = k - 1). Then the
 * plane of kernel tap (ki, kj) is the input plane shifted by d = (ki - pad) W + (kj - pad) as
 * one flat array, except for the columns that wrapped around a row edge: one long vector copy
 * plus a few scalar fixes instead of a short copy per row. */
static bool same_geometry(const tb_conv_shape *s)
{
    return s->stride == 1 && s->h_out == s->h && s->w_out == s->w;
}

/* Sets the wrapped columns of a shifted plane [H, W] (column shift dc = kj - pad) to zero:
 * column by column, down the rows (rows first made a memset call per row of one float). */
static void zero_wrapped_cols(float *plane, int H, int W, int dc)
{
    const int c0 = dc > 0 ? W - dc : 0, c1 = dc > 0 ? W : -dc;
    for (int c = c0; c < c1; c++)
        for (int r = 0; r < H; r++) plane[(int64_t)r * W + c] = 0.0f;
}

static void im2col_same(const tb_conv_shape *s, const float *x, float *col)
{
    const int H = s->h, W = s->w, kh = s->kh, kw = s->kw, pad = s->pad;
    const int64_t hw = (int64_t)H * W;
    for (int c = 0; c < s->c_in; c++) {
        const float *xp = x + (int64_t)c * hw;
        for (int ki = 0; ki < kh; ki++)
            for (int kj = 0; kj < kw; kj++) {
                float *dst = col + ((int64_t)(c * kh + ki) * kw + kj) * hw;
                const int64_t d = (int64_t)(ki - pad) * W + (kj - pad);
                const int64_t lo = d < 0 ? -d : 0, hi = d > 0 ? hw - d : hw;
                tb_cpu_zero(dst, lo);
#pragma omp simd
                for (int64_t i = lo; i < hi; i++) dst[i] = xp[i + d];
                tb_cpu_zero(dst + hi, hw - hi);
                if (kj != pad) zero_wrapped_cols(dst, H, W, kj - pad);
            }
    }
}

/* col2im of the same geometry; the wrapped columns of col (scratch) are zeroed first. */
static void col2im_add_same(const tb_conv_shape *s, float *col, float *dx)
{
    const int H = s->h, W = s->w, kh = s->kh, kw = s->kw, pad = s->pad;
    const int64_t hw = (int64_t)H * W;
    for (int c = 0; c < s->c_in; c++) {
        float *xp = dx + (int64_t)c * hw;
        for (int ki = 0; ki < kh; ki++)
            for (int kj = 0; kj < kw; kj++) {
                float *src = col + ((int64_t)(c * kh + ki) * kw + kj) * hw;
                const int64_t d = (int64_t)(ki - pad) * W + (kj - pad);
                const int64_t lo = d < 0 ? -d : 0, hi = d > 0 ? hw - d : hw;
                if (kj != pad) zero_wrapped_cols(src, H, W, kj - pad);
#pragma omp simd
                for (int64_t i = lo; i < hi; i++) xp[i + d] += src[i];
            }
    }
}

/* col[K, HWo] of one image x[c_in, H, W]. */
static void im2col(const tb_conv_shape *s, const float *x, float *col)
{
    const int H = s->h, W = s->w, Ho = s->h_out, Wo = s->w_out, kh = s->kh, kw = s->kw;
    const int st = s->stride, pad = s->pad;
    const int64_t hwo = conv_hwo(s);
    if (same_geometry(s)) {
        im2col_same(s, x, col);
        return;
    }
    for (int c = 0; c < s->c_in; c++) {
        const float *xp = x + (int64_t)c * H * W;
        for (int ki = 0; ki < kh; ki++)
            for (int kj = 0; kj < kw; kj++) {
                float *dst = col + ((int64_t)(c * kh + ki) * kw + kj) * hwo;
                int lo = 0, hi = 0;
                if (st == 1) valid_cols(s, kj, &lo, &hi);
                for (int oh = 0; oh < Ho; oh++) {
                    int ih = oh * st - pad + ki;
                    float *d = dst + (int64_t)oh * Wo;
                    if (ih < 0 || ih >= H) {
                        tb_cpu_zero(d, Wo);
                        continue;
                    }
                    const float *xr = xp + (int64_t)ih * W;
                    if (st == 1) {
                        /* inline loops, not memcpy: rows are short (tens of floats), and a
                         * library call per row cost more than the copy */
                        const float *xs = xr + lo - pad + kj;
                        tb_cpu_zero(d, lo);
#pragma omp simd
                        for (int i = 0; i < hi - lo; i++) d[lo + i] = xs[i];
                        tb_cpu_zero(d + hi, Wo - hi);
                        continue;
                    }
                    for (int ow = 0; ow < Wo; ow++) {
                        int iw = ow * st - pad + kj;
                        d[ow] = (iw >= 0 && iw < W) ? xr[iw] : 0.0f;
                    }
                }
            }
    }
}

/* dx[c_in, H, W] += col2im(col) for one image (col is scratch and may be modified). */
static void col2im_add(const tb_conv_shape *s, float *col, float *dx)
{
    const int H = s->h, W = s->w, Ho = s->h_out, Wo = s->w_out, kh = s->kh, kw = s->kw;
    const int st = s->stride, pad = s->pad;
    const int64_t hwo = conv_hwo(s);
    if (same_geometry(s)) {
        col2im_add_same(s, col, dx);
        return;
    }
    for (int c = 0; c < s->c_in; c++) {
        float *xp = dx + (int64_t)c * H * W;
        for (int ki = 0; ki < kh; ki++)
            for (int kj = 0; kj < kw; kj++) {
                const float *src = col + ((int64_t)(c * kh + ki) * kw + kj) * hwo;
                int lo = 0, hi = 0;
                if (st == 1) valid_cols(s, kj, &lo, &hi);
                for (int oh = 0; oh < Ho; oh++) {
                    int ih = oh * st - pad + ki;
                    if (ih < 0 || ih >= H) continue;
                    const float *sr = src + (int64_t)oh * Wo;
                    float *xr = xp + (int64_t)ih * W;
                    if (st == 1) {
                        float *xo = xr + lo - pad + kj;
                        const float *so = sr + lo;
#pragma omp simd
                        for (int i = 0; i < hi - lo; i++) xo[i] += so[i];
                        continue;
                    }
                    for (int ow = 0; ow < Wo; ow++) {
                        int iw = ow * st - pad + kj;
                        if (iw >= 0 && iw < W) xr[iw] += sr[ow];
                    }
                }
            }
    }
}

/* One image's product on the calling thread (a thread of the conv's team): the backend's own
 * sgemm with the thread's scratch (own), or OpenBLAS. */
static void conv_gemm(tb_backend *be, bool own, bool ta, bool tb, int m, int n, int k,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc)
{
#ifdef TB_CPU_GEMM_TILES
    if (own) {
        tb_cpu_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, NULL, c, ldc,
                     tb_cpu_gemm_scratch(be, omp_get_thread_num()));
        return;
    }
#else
    (void)be, (void)own;
#endif
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_conv2d_fwd(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                           const float *bias, float *y, void *workspace)
{
    const int threads = conv_threads(be, s), cout = s->c_out;
    const int64_t hwo = conv_hwo(s), k = conv_k(s), chw = (int64_t)s->c_in * s->h * s->w;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        float *col = (float *)workspace + (int64_t)tid * k * hwo;
        for (int b = tid; b < s->n; b += nth) {
            float *yb = y + (int64_t)b * cout * hwo;
            if (bias)
                for (int o = 0; o < cout; o++)
                    for (int64_t p = 0; p < hwo; p++) yb[o * hwo + p] = bias[o];
            im2col(s, x + (int64_t)b * chw, col);
            conv_gemm(be, false, false, false, cout, (int)hwo, (int)k, w, (int)k, col,
                      (int)hwo, bias ? 1.0f : 0.0f, yb, (int)hwo);
        }
    }
    be->gemm_flops += 2ull * (uint64_t)s->n * (uint64_t)cout * (uint64_t)hwo * (uint64_t)k;
}

static void cpu_conv2d_bwd(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                           const float *dy, float *dx, bool dx_acc, float *dw, float *db,
                           void *workspace)
{
    const int threads = conv_threads(be, s), cout = s->c_out;
    const int64_t hwo = conv_hwo(s), k = conv_k(s), chw = (int64_t)s->c_in * s->h * s->w;
    if (db) {
#pragma omp parallel for num_threads(be->threads) schedule(static) \
    if ((int64_t)s->n * cout * hwo > 32768)
        for (int o = 0; o < cout; o++) {
            double acc = 0;
            for (int b = 0; b < s->n; b++) {
                const float *d = dy + ((int64_t)b * cout + o) * hwo;
                float part = 0;
#pragma omp simd reduction(+ : part)
                for (int64_t p = 0; p < hwo; p++) part += d[p];
                acc += part;
            }
            db[o] += (float)acc;
        }
    }
    if (!dx && !dw) return;
    /* the weight gradient on the backend's own kernel where it has whole 32-column panels and
     * K fills its tiles (measured on the CNN's second layer, 16 -> 32 channels: 4.8 -> 2.5 ms
     * a step on 1 thread; its first layer, 1 -> 16, runs faster on OpenBLAS); from a caller's
     * parallel region (where every thread is thread 0) OpenBLAS */
    const bool own_dw = cout % 32 == 0 && k >= 64 && !omp_in_parallel();
    const int g = conv_dw_chunk(s), chunks = conv_dw_chunks(s);
    const int64_t kc = k * cout;
    float *parts = (float *)workspace + (int64_t)threads * k * hwo; /* [chunks][K][c_out] */
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        float *col = (float *)workspace + (int64_t)omp_get_thread_num() * k * hwo;
#pragma omp for schedule(static)
        for (int q = 0; q < chunks; q++) {
            const int b1 = (q + 1) * g < s->n ? (q + 1) * g : s->n;
            for (int b = q * g; b < b1; b++) {
                const float *dyb = dy + (int64_t)b * cout * hwo;
                if (dw) {
                    im2col(s, x + (int64_t)b * chw, col);
                    /* dw_q^T [K, c_out] (+)= col dy_b^T, the chunk's first image written */
                    conv_gemm(be, own_dw, false, true, (int)k, cout, (int)hwo, col, (int)hwo,
                              dyb, (int)hwo, b == q * g ? 0.0f : 1.0f, parts + q * kc, cout);
                }
                if (dx) {
                    conv_gemm(be, false, true, false, (int)k, (int)hwo, cout, w, (int)k, dyb,
                              (int)hwo, 0.0f, col, (int)hwo);
                    /* a fresh dx is zeroed image by image, in cache, just before its col2im */
                    if (!dx_acc) memset(dx + (int64_t)b * chw, 0, (size_t)chw * sizeof(float));
                    col2im_add(s, col, dx + (int64_t)b * chw);
                }
            }
        }
        /* dw[o, i] += the chunks' dw_q^T[i, o] in chunk order, in double; rows of K shared by
         * the team (the for above ended with a barrier, the region's end is the next) */
        if (dw) {
            enum { OB = 64 };
#pragma omp for schedule(static) nowait
            for (int64_t i = 0; i < k; i++)
                for (int o0 = 0; o0 < cout; o0 += OB) {
                    const int ob = cout - o0 < OB ? cout - o0 : OB;
                    double acc[OB];
                    for (int o = 0; o < ob; o++) acc[o] = 0.0;
                    for (int q = 0; q < chunks; q++) {
                        const float *p = parts + q * kc + i * cout + o0;
                        for (int o = 0; o < ob; o++) acc[o] += p[o];
                    }
                    for (int o = 0; o < ob; o++) dw[(int64_t)(o0 + o) * k + i] += (float)acc[o];
                }
        }
    }
    uint64_t one = 2ull * (uint64_t)s->n * (uint64_t)cout * (uint64_t)hwo * (uint64_t)k;
    be->gemm_flops += (dw ? one : 0) + (dx ? one : 0);
}

/* ---- pooling --------------------------------------------------------------------------------- */

/* The choice rule of max pooling after a window's first valid element: a larger element, or a
 * NaN (which propagates). */
static inline void max_take(float v, int32_t i, float *best, int32_t *at)
{
    bool take = v > *best || v != v;
    *best = take ? v : *best;
    *at = take ? i : *at;
}

#ifdef __AVX512F__
/* One output row of the 2x2 / stride 2 pool with AVX-512: 16 outputs a vector (masked at the
 * row's end, so the short rows of small feature maps vectorise too); even and odd input
 * columns are separated with two-source permutes. Same choice rule as max_take. */
static void maxpool_2x2_row(const float *r0, const float *r1, int W, int Wo, int32_t base,
                            float *yr, int32_t *ar)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4,
                                          2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i lane2 = _mm512_slli_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 1);
    for (int ow0 = 0; ow0 < Wo; ow0 += 16) {
        const int n_out = Wo - ow0 < 16 ? Wo - ow0 : 16, n_in = 2 * n_out;
        const __mmask16 m_out = (__mmask16)((1u << n_out) - 1);
        const __mmask16 m_lo = (__mmask16)(n_in >= 16 ? 0xffffu : (1u << n_in) - 1);
        const __mmask16 m_hi = (__mmask16)(n_in > 16 ? (1u << (n_in - 16)) - 1 : 0);
        const float *a = r0 + 2 * ow0, *b = r1 + 2 * ow0;
        __m512 a_lo = _mm512_maskz_loadu_ps(m_lo, a), a_hi = _mm512_maskz_loadu_ps(m_hi, a + 16);
        __m512 b_lo = _mm512_maskz_loadu_ps(m_lo, b), b_hi = _mm512_maskz_loadu_ps(m_hi, b + 16);
        __m512 cand[4] = {_mm512_permutex2var_ps(a_lo, even, a_hi),
                          _mm512_permutex2var_ps(a_lo, odd, a_hi),
                          _mm512_permutex2var_ps(b_lo, even, b_hi),
                          _mm512_permutex2var_ps(b_lo, odd, b_hi)};
        const __m512i at0 = _mm512_add_epi32(_mm512_set1_epi32(base + 2 * ow0), lane2);
        const int32_t offs[4] = {0, 1, W, W + 1};
        __m512 best = cand[0];
        __m512i at = at0;
        for (int c = 1; c < 4; c++) {
            __mmask16 take = _mm512_cmp_ps_mask(cand[c], best, _CMP_GT_OQ) |
                             _mm512_cmp_ps_mask(cand[c], cand[c], _CMP_UNORD_Q);
            best = _mm512_mask_mov_ps(best, take, cand[c]);
            at = _mm512_mask_mov_epi32(at, take,
                                       _mm512_add_epi32(at0, _mm512_set1_epi32(offs[c])));
        }
        _mm512_mask_storeu_ps(yr + ow0, m_out, best);
        _mm512_mask_storeu_epi32(ar + ow0, m_out, at);
    }
}
#endif

/* The 2x2, stride 2, unpadded window (every window lies inside the plane), which the pool's
 * fast paths take. */
static bool pool_2x2(const tb_pool_shape *s)
{
    return s->kh == 2 && s->kw == 2 && s->stride == 2 && s->pad == 0;
}

static void maxpool_2x2(const tb_pool_shape *s, const float *xp, float *yp, int32_t *ap)
{
    const int W = s->w, Wo = s->w_out;
    for (int oh = 0; oh < s->h_out; oh++) {
        const float *r0 = xp + (int64_t)(2 * oh) * W, *r1 = r0 + W;
        float *yr = yp + (int64_t)oh * Wo;
        int32_t *ar = ap + (int64_t)oh * Wo;
        const int32_t base = 2 * oh * W;
#ifdef __AVX512F__
        maxpool_2x2_row(r0, r1, W, Wo, base, yr, ar);
#else
        for (int ow = 0; ow < Wo; ow++) {
            float best = r0[2 * ow];
            int32_t at = base + 2 * ow;
            max_take(r0[2 * ow + 1], base + 2 * ow + 1, &best, &at);
            max_take(r1[2 * ow], base + W + 2 * ow, &best, &at);
            max_take(r1[2 * ow + 1], base + W + 2 * ow + 1, &best, &at);
            yr[ow] = best;
            ar[ow] = at;
        }
#endif
    }
}

static void cpu_maxpool2d_fwd(tb_backend *be, const tb_pool_shape *s, const float *x, float *y,
                              int32_t *argmax)
{
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
    if (pool_2x2(s)) {
#pragma omp parallel for num_threads(be->threads) schedule(static) if (planes * hwo > 32768)
        for (int64_t p = 0; p < planes; p++)
            maxpool_2x2(s, x + p * hw, y + p * hwo, argmax + p * hwo);
        return;
    }
#pragma omp parallel for num_threads(be->threads) schedule(static) \
    if (planes * hwo * s->kh * s->kw > 32768)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * hw;
        float *yp = y + p * hwo;
        int32_t *ap = argmax + p * hwo;
        for (int oh = 0; oh < s->h_out; oh++)
            for (int ow = 0; ow < s->w_out; ow++) {
                float best = -FLT_MAX;
                int32_t at = -1;
                for (int ki = 0; ki < s->kh; ki++) {
                    int ih = oh * s->stride - s->pad + ki;
                    if (ih < 0 || ih >= s->h) continue;
                    for (int kj = 0; kj < s->kw; kj++) {
                        int iw = ow * s->stride - s->pad + kj;
                        if (iw < 0 || iw >= s->w) continue;
                        const int32_t i = ih * s->w + iw;
                        if (at < 0) { /* the window's first valid element */
                            best = xp[i];
                            at = i;
                        } else {
                            max_take(xp[i], i, &best, &at);
                        }
                    }
                }
                yp[oh * s->w_out + ow] = at < 0 ? 0.0f : best;
                ap[oh * s->w_out + ow] = at;
            }
    }
}

#ifdef __AVX512F__
/* The 16-lane mask whose lanes 2i and 2i + 1 are bit i of even and of odd (i < 8). */
static inline __mmask16 interleave8(unsigned even, unsigned odd)
{
    unsigned r = 0;
    for (int i = 0; i < 8; i++)
        r |= ((even >> i) & 1u) << (2 * i) | ((odd >> i) & 1u) << (2 * i + 1);
    return (__mmask16)r;
}

/* The backward pass of the 2x2 / stride 2 pool on an even plane (every element in exactly one
 * window): each output row's gradient goes to its two input rows in one pass of whole
 * vectors, the element its window chose getting dy and the other three zero (or, with acc,
 * their old values), instead of zeroing the plane and scattering into it. */
static void maxpool_2x2_bwd_plane(const tb_pool_shape *s, const int32_t *ap, const float *gp,
                                  float *dp, bool acc)
{
    const int W = s->w, Wo = s->w_out;
    /* output lane l of the low (high) half holds input column 2l + c of the 16 (32) ... */
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const __m512i lane2 = _mm512_slli_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
    for (int oh = 0; oh < s->h_out; oh++) {
        float *r0 = dp + (int64_t)(2 * oh) * W, *r1 = r0 + W;
        for (int ow0 = 0; ow0 < Wo; ow0 += 16) {
            const int n_out = Wo - ow0 < 16 ? Wo - ow0 : 16, n_in = 2 * n_out;
            const __mmask16 m_out = tb_cpu_lanes(n_out), m_lo = tb_cpu_lanes(n_in),
                            m_hi = tb_cpu_lanes(n_in - 16);
            const __m512 g = _mm512_maskz_loadu_ps(m_out, gp + (int64_t)oh * Wo + ow0);
            const __m512i at = _mm512_maskz_loadu_epi32(m_out, ap + (int64_t)oh * Wo + ow0);
            const __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32(2 * oh * W + 2 * ow0), lane2);
            const __mmask16 k00 = _mm512_cmpeq_epi32_mask(at, c0),
                            k01 = _mm512_cmpeq_epi32_mask(
                                at, _mm512_add_epi32(c0, _mm512_set1_epi32(1))),
                            k10 = _mm512_cmpeq_epi32_mask(
                                at, _mm512_add_epi32(c0, _mm512_set1_epi32(W))),
                            k11 = _mm512_cmpeq_epi32_mask(
                                at, _mm512_add_epi32(c0, _mm512_set1_epi32(W + 1)));
            const __m512 v00 = _mm512_maskz_mov_ps(k00, g), v01 = _mm512_maskz_mov_ps(k01, g);
            const __m512 v10 = _mm512_maskz_mov_ps(k10, g), v11 = _mm512_maskz_mov_ps(k11, g);
            __m512 out[4] = {_mm512_permutex2var_ps(v00, lo, v01),
                             _mm512_permutex2var_ps(v00, hi, v01),
                             _mm512_permutex2var_ps(v10, lo, v11),
                             _mm512_permutex2var_ps(v10, hi, v11)};
            float *dst[4] = {r0 + 2 * ow0, r0 + 2 * ow0 + 16, r1 + 2 * ow0, r1 + 2 * ow0 + 16};
            const __mmask16 mask[4] = {m_lo, m_hi, m_lo, m_hi};
            /* with acc, only the chosen elements are added to (as the scatter does: a -0 the
             * others hold stays -0) */
            const __mmask16 chosen[4] = {interleave8(k00, k01), interleave8(k00 >> 8, k01 >> 8),
                                         interleave8(k10, k11), interleave8(k10 >> 8, k11 >> 8)};
            for (int q = 0; q < 4; q++) {
                if (acc) {
                    const __m512 old = _mm512_maskz_loadu_ps(mask[q], dst[q]);
                    out[q] = _mm512_mask_add_ps(old, chosen[q], old, out[q]);
                }
                _mm512_mask_storeu_ps(dst[q], mask[q], out[q]);
            }
        }
    }
}
#endif

static void cpu_maxpool2d_bwd(tb_backend *be, const tb_pool_shape *s, const int32_t *argmax,
                              const float *dy, float *dx, bool dx_acc)
{
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
#ifdef __AVX512F__
    if (pool_2x2(s) && s->h % 2 == 0 && s->w % 2 == 0) {
#pragma omp parallel for num_threads(be->threads) schedule(static) if (planes * hwo > 32768)
        for (int64_t p = 0; p < planes; p++)
            maxpool_2x2_bwd_plane(s, argmax + p * hwo, dy + p * hwo, dx + p * hw, dx_acc);
        return;
    }
#endif
#pragma omp parallel for num_threads(be->threads) schedule(static) if (planes * hwo > 32768)
    for (int64_t p = 0; p < planes; p++) {
        float *dp = dx + p * hw;
        if (!dx_acc) memset(dp, 0, (size_t)hw * sizeof(float)); /* in cache, just before use */
        const float *gp = dy + p * hwo;
        const int32_t *ap = argmax + p * hwo;
        for (int64_t i = 0; i < hwo; i++)
            if (ap[i] >= 0) dp[ap[i]] += gp[i];
    }
}

static void cpu_avgpool2d_fwd(tb_backend *be, const tb_pool_shape *s, const float *x, float *y)
{
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
    const float inv = 1.0f / (float)(s->kh * s->kw);
#pragma omp parallel for num_threads(be->threads) schedule(static) \
    if (planes * hwo * s->kh * s->kw > 32768)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * hw;
        float *yp = y + p * hwo;
        for (int oh = 0; oh < s->h_out; oh++)
            for (int ow = 0; ow < s->w_out; ow++) {
                float acc = 0.0f;
                for (int ki = 0; ki < s->kh; ki++) {
                    int ih = oh * s->stride - s->pad + ki;
                    if (ih < 0 || ih >= s->h) continue;
                    for (int kj = 0; kj < s->kw; kj++) {
                        int iw = ow * s->stride - s->pad + kj;
                        if (iw >= 0 && iw < s->w) acc += xp[ih * s->w + iw];
                    }
                }
                yp[oh * s->w_out + ow] = acc * inv;
            }
    }
}

static void cpu_avgpool2d_bwd(tb_backend *be, const tb_pool_shape *s, const float *dy, float *dx)
{
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
    const float inv = 1.0f / (float)(s->kh * s->kw);
#pragma omp parallel for num_threads(be->threads) schedule(static) \
    if (planes * hwo * s->kh * s->kw > 32768)
    for (int64_t p = 0; p < planes; p++) {
        float *dp = dx + p * hw;
        const float *gp = dy + p * hwo;
        for (int oh = 0; oh < s->h_out; oh++)
            for (int ow = 0; ow < s->w_out; ow++) {
                float g = gp[oh * s->w_out + ow] * inv;
                for (int ki = 0; ki < s->kh; ki++) {
                    int ih = oh * s->stride - s->pad + ki;
                    if (ih < 0 || ih >= s->h) continue;
                    for (int kj = 0; kj < s->kw; kj++) {
                        int iw = ow * s->stride - s->pad + kj;
                        if (iw >= 0 && iw < s->w) dp[ih * s->w + iw] += g;
                    }
                }
            }
    }
}

static void cpu_gap_fwd(tb_backend *be, int64_t nc, int64_t hw, const float *x, float *y)
{
#pragma omp parallel for num_threads(be->threads) schedule(static) if (nc * hw > 32768)
    for (int64_t i = 0; i < nc; i++) {
        const float *xp = x + i * hw;
        double acc = 0;
        for (int64_t p = 0; p < hw; p++) acc += xp[p];
        y[i] = (float)(acc / (double)hw);
    }
}

static void cpu_gap_bwd(tb_backend *be, int64_t nc, int64_t hw, const float *dy, float *dx)
{
    const float inv = 1.0f / (float)hw;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (nc * hw > 32768)
    for (int64_t i = 0; i < nc; i++) {
        float g = dy[i] * inv;
        float *dp = dx + i * hw;
        for (int64_t p = 0; p < hw; p++) dp[p] += g;
    }
}

void tb_cpu_register_conv(tb_backend_ops *ops)
{
    ops->conv2d_workspace = cpu_conv2d_workspace;
    ops->conv2d_fwd = cpu_conv2d_fwd;
    ops->conv2d_bwd = cpu_conv2d_bwd;
    ops->maxpool2d_fwd = cpu_maxpool2d_fwd;
    ops->maxpool2d_bwd = cpu_maxpool2d_bwd;
    ops->avgpool2d_fwd = cpu_avgpool2d_fwd;
    ops->avgpool2d_bwd = cpu_avgpool2d_bwd;
    ops->gap_fwd = cpu_gap_fwd;
    ops->gap_bwd = cpu_gap_bwd;
}

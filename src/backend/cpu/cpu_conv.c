/* cpu_conv.c: 2-D convolution (im2col + OpenBLAS sgemm), max/avg pooling and global average
 * pooling on NCHW tensors, parallelised with OpenMP.
 *
 * Convolution works on chunks of `nb` images at a time. The chunk's im2col matrix is laid out
 * as col[K, nb * HWo] (K = c_in kh kw; the nb images side by side in each row), so one gemm
 *     out[c_out, nb * HWo] = w[c_out, K] col[K, nb * HWo]
 * computes the whole chunk; small feature maps thus still give wide, efficient products. For
 * nb == 1 the gemm writes straight into y (and reads dy directly in the backward pass), so the
 * staging buffer is skipped. The chunk size depends only on the shape, so conv2d_workspace, the
 * forward and the backward pass agree on it; the workspace holds col and the staging buffer. */
#include "backend/cpu/cpu.h"

#include <float.h>
#include <string.h>

#include <cblas.h>

/* Columns (nb * HWo) a chunk aims for, and the most workspace a chunk may take (at least one
 * image is always processed, whatever its size). The workspace is step memory that lives until
 * the tape is reset, once per conv op, so it is kept modest. */
#define CONV_TARGET_COLS 2048
#define CONV_MAX_WORKSPACE ((size_t)16 << 20)

static int64_t conv_k(const tb_conv_shape *s) { return (int64_t)s->c_in * s->kh * s->kw; }
static int64_t conv_hwo(const tb_conv_shape *s) { return (int64_t)s->h_out * s->w_out; }

/* Images per chunk. */
static int conv_chunk(const tb_conv_shape *s)
{
    int64_t hwo = conv_hwo(s), k = conv_k(s);
    int64_t nb = (CONV_TARGET_COLS + hwo - 1) / hwo;
    if (nb > s->n) nb = s->n;
    /* floats per image: its col block plus its staging block */
    int64_t per_image = (k + s->c_out) * hwo;
    int64_t cap = (int64_t)(CONV_MAX_WORKSPACE / sizeof(float)) / (per_image > 0 ? per_image : 1);
    if (nb > cap) nb = cap;
    return nb < 1 ? 1 : (int)nb;
}

static size_t cpu_conv2d_workspace(tb_backend *be, const tb_conv_shape *s)
{
    (void)be;
    int64_t nb = conv_chunk(s), hwo = conv_hwo(s);
    int64_t floats = conv_k(s) * nb * hwo;
    if (nb > 1) floats += (int64_t)s->c_out * nb * hwo; /* staging buffer */
    return (size_t)floats * sizeof(float);
}

/* col[K, nb HWo] from images x[b0 .. b0+nb). */
static void im2col(const tb_conv_shape *s, const float *x, int b0, int nb, float *col)
{
    const int H = s->h, W = s->w, Ho = s->h_out, Wo = s->w_out, kh = s->kh, kw = s->kw;
    const int st = s->stride, pad = s->pad, cin = s->c_in;
    const int64_t hwo = conv_hwo(s), ld = (int64_t)nb * hwo;
    const bool par = (int64_t)nb * cin * kh * kw * hwo > 16384;
#pragma omp parallel for collapse(2) schedule(static) if (par)
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < cin; c++) {
            const float *xp = x + ((int64_t)(b0 + b) * cin + c) * H * W;
            for (int ki = 0; ki < kh; ki++)
                for (int kj = 0; kj < kw; kj++) {
                    float *dst = col + ((int64_t)(c * kh + ki) * kw + kj) * ld + b * hwo;
                    for (int oh = 0; oh < Ho; oh++) {
                        int ih = oh * st - pad + ki;
                        float *d = dst + (int64_t)oh * Wo;
                        if (ih < 0 || ih >= H) {
                            memset(d, 0, (size_t)Wo * sizeof(float));
                            continue;
                        }
                        const float *xr = xp + (int64_t)ih * W;
                        for (int ow = 0; ow < Wo; ow++) {
                            int iw = ow * st - pad + kj;
                            d[ow] = (iw >= 0 && iw < W) ? xr[iw] : 0.0f;
                        }
                    }
                }
        }
}

/* dx[b0 .. b0+nb) += col2im(col). Each (image, channel) plane is owned by one thread. */
static void col2im_add(const tb_conv_shape *s, const float *col, int b0, int nb, float *dx)
{
    const int H = s->h, W = s->w, Ho = s->h_out, Wo = s->w_out, kh = s->kh, kw = s->kw;
    const int st = s->stride, pad = s->pad, cin = s->c_in;
    const int64_t hwo = conv_hwo(s), ld = (int64_t)nb * hwo;
    const bool par = (int64_t)nb * cin * kh * kw * hwo > 16384;
#pragma omp parallel for collapse(2) schedule(static) if (par)
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < cin; c++) {
            float *xp = dx + ((int64_t)(b0 + b) * cin + c) * H * W;
            for (int ki = 0; ki < kh; ki++)
                for (int kj = 0; kj < kw; kj++) {
                    const float *src = col + ((int64_t)(c * kh + ki) * kw + kj) * ld + b * hwo;
                    for (int oh = 0; oh < Ho; oh++) {
                        int ih = oh * st - pad + ki;
                        if (ih < 0 || ih >= H) continue;
                        const float *sr = src + (int64_t)oh * Wo;
                        float *xr = xp + (int64_t)ih * W;
                        for (int ow = 0; ow < Wo; ow++) {
                            int iw = ow * st - pad + kj;
                            if (iw >= 0 && iw < W) xr[iw] += sr[ow];
                        }
                    }
                }
        }
}

static void cpu_conv2d_fwd(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                           const float *bias, float *y, void *workspace)
{
    const int nb_max = conv_chunk(s), cout = s->c_out;
    const int64_t hwo = conv_hwo(s), k = conv_k(s);
    float *col = workspace;
    float *stage = col + k * nb_max * hwo;
    for (int b0 = 0; b0 < s->n; b0 += nb_max) {
        int nb = s->n - b0 < nb_max ? s->n - b0 : nb_max;
        int64_t cols = nb * hwo;
        im2col(s, x, b0, nb, col);
        float *yb = y + (int64_t)b0 * cout * hwo;
        float *out = nb == 1 ? yb : stage;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cout, (int)cols, (int)k, 1.0f, w,
                    (int)k, col, (int)cols, 0.0f, out, (int)cols);
        be->gemm_flops += 2ull * (uint64_t)cout * (uint64_t)cols * (uint64_t)k;
        /* scatter out[c_out, nb, HWo] to y[nb, c_out, HWo], adding the bias */
#pragma omp parallel for collapse(2) schedule(static) if (cols * cout > 32768)
        for (int b = 0; b < nb; b++)
            for (int o = 0; o < cout; o++) {
                float *dst = yb + ((int64_t)b * cout + o) * hwo;
                const float *src = out + (int64_t)o * cols + b * hwo;
                float bv = bias ? bias[o] : 0.0f;
                if (dst == src) {
                    if (bias)
                        for (int64_t p = 0; p < hwo; p++) dst[p] += bv;
                } else {
                    for (int64_t p = 0; p < hwo; p++) dst[p] = src[p] + bv;
                }
            }
    }
}

static void cpu_conv2d_bwd(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                           const float *dy, float *dx, float *dw, float *db, void *workspace)
{
    (void)be;
    const int nb_max = conv_chunk(s), cout = s->c_out;
    const int64_t hwo = conv_hwo(s), k = conv_k(s);
    if (db) {
#pragma omp parallel for schedule(static) if ((int64_t)s->n * cout * hwo > 32768)
        for (int o = 0; o < cout; o++) {
            double acc = 0;
            for (int b = 0; b < s->n; b++) {
                const float *d = dy + ((int64_t)b * cout + o) * hwo;
                float part = 0;
                for (int64_t p = 0; p < hwo; p++) part += d[p];
                acc += part;
            }
            db[o] += (float)acc;
        }
    }
    if (!dx && !dw) return;
    float *col = workspace;
    float *stage = col + k * nb_max * hwo;
    for (int b0 = 0; b0 < s->n; b0 += nb_max) {
        int nb = s->n - b0 < nb_max ? s->n - b0 : nb_max;
        int64_t cols = nb * hwo;
        const float *dyb = dy + (int64_t)b0 * cout * hwo;
        const float *g = dyb; /* dy of the chunk as [c_out, nb HWo] */
        if (nb > 1) {
#pragma omp parallel for collapse(2) schedule(static) if (cols * cout > 32768)
            for (int b = 0; b < nb; b++)
                for (int o = 0; o < cout; o++)
                    memcpy(stage + (int64_t)o * cols + b * hwo,
                           dyb + ((int64_t)b * cout + o) * hwo, (size_t)hwo * sizeof(float));
            g = stage;
        }
        if (dw) {
            im2col(s, x, b0, nb, col);
            /* dw[c_out, K] += g[c_out, cols] col[K, cols]^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, cout, (int)k, (int)cols, 1.0f, g,
                        (int)cols, col, (int)cols, 1.0f, dw, (int)k);
            be->gemm_flops += 2ull * (uint64_t)cout * (uint64_t)cols * (uint64_t)k;
        }
        if (dx) {
            /* dcol[K, cols] = w[c_out, K]^T g[c_out, cols] */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)cols, cout, 1.0f, w,
                        (int)k, g, (int)cols, 0.0f, col, (int)cols);
            be->gemm_flops += 2ull * (uint64_t)cout * (uint64_t)cols * (uint64_t)k;
            col2im_add(s, col, b0, nb, dx);
        }
    }
}

/* ---- pooling --------------------------------------------------------------------------------- */

static void cpu_maxpool2d_fwd(tb_backend *be, const tb_pool_shape *s, const float *x, float *y,
                              int32_t *argmax)
{
    (void)be;
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
#pragma omp parallel for schedule(static) if (planes * hwo * s->kh * s->kw > 32768)
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
                        float v = xp[ih * s->w + iw];
                        /* the first valid element, a larger one, or NaN (propagates) */
                        if (at < 0 || v > best || v != v) {
                            best = v;
                            at = ih * s->w + iw;
                        }
                    }
                }
                yp[oh * s->w_out + ow] = at < 0 ? 0.0f : best;
                ap[oh * s->w_out + ow] = at;
            }
    }
}

static void cpu_maxpool2d_bwd(tb_backend *be, const tb_pool_shape *s, const int32_t *argmax,
                              const float *dy, float *dx)
{
    (void)be;
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
#pragma omp parallel for schedule(static) if (planes * hwo > 32768)
    for (int64_t p = 0; p < planes; p++) {
        float *dp = dx + p * hw;
        const float *gp = dy + p * hwo;
        const int32_t *ap = argmax + p * hwo;
        for (int64_t i = 0; i < hwo; i++)
            if (ap[i] >= 0) dp[ap[i]] += gp[i];
    }
}

static void cpu_avgpool2d_fwd(tb_backend *be, const tb_pool_shape *s, const float *x, float *y)
{
    (void)be;
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
    const float inv = 1.0f / (float)(s->kh * s->kw);
#pragma omp parallel for schedule(static) if (planes * hwo * s->kh * s->kw > 32768)
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
    (void)be;
    const int64_t planes = (int64_t)s->n * s->c, hw = (int64_t)s->h * s->w;
    const int64_t hwo = (int64_t)s->h_out * s->w_out;
    const float inv = 1.0f / (float)(s->kh * s->kw);
#pragma omp parallel for schedule(static) if (planes * hwo * s->kh * s->kw > 32768)
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
    (void)be;
#pragma omp parallel for schedule(static) if (nc * hw > 32768)
    for (int64_t i = 0; i < nc; i++) {
        const float *xp = x + i * hw;
        double acc = 0;
        for (int64_t p = 0; p < hw; p++) acc += xp[p];
        y[i] = (float)(acc / (double)hw);
    }
}

static void cpu_gap_bwd(tb_backend *be, int64_t nc, int64_t hw, const float *dy, float *dx)
{
    (void)be;
    const float inv = 1.0f / (float)hw;
#pragma omp parallel for schedule(static) if (nc * hw > 32768)
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

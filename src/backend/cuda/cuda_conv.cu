/* cuda_conv.cu: 2-D convolution (im2col + cuBLAS gemm), max/avg pooling and global average
 * pooling on NCHW tensors on the GPU.
 *
 * As on the CPU, convolution works on chunks of nb images: col[K, nb HWo] (K = c_in kh kw) and
 * one product out[c_out, nb HWo] = w[c_out, K] col per chunk, then a scatter to NCHW adding the
 * bias. The chunk size depends only on the shape (workspace, forward and backward agree). Every
 * backward kernel gathers into its output element (col2im, pooling) instead of scattering, so no
 * atomics are needed and sums have a fixed order. */
#include "backend/cuda/cuda_internal.h"

#include <float.h>

/* Most workspace a chunk may take (at least one image is always processed). */
#define CONV_MAX_WORKSPACE ((size_t)256 << 20)

static int64_t conv_k(const tb_conv_shape *s) { return (int64_t)s->c_in * s->kh * s->kw; }
static int64_t conv_hwo(const tb_conv_shape *s) { return (int64_t)s->h_out * s->w_out; }

static int conv_chunk(const tb_conv_shape *s)
{
    int64_t per_image = (conv_k(s) + s->c_out) * conv_hwo(s);
    int64_t cap = (int64_t)(CONV_MAX_WORKSPACE / sizeof(float)) / (per_image > 0 ? per_image : 1);
    int64_t nb = s->n < cap ? s->n : cap;
    return nb < 1 ? 1 : (int)nb;
}

static size_t cuda_conv2d_workspace(tb_backend *be, const tb_conv_shape *s)
{
    (void)be;
    return (size_t)(conv_k(s) + s->c_out) * (size_t)conv_chunk(s) * (size_t)conv_hwo(s) *
           sizeof(float);
}

/* col[K, nb HWo] from images x[b0 .. b0+nb). */
static void im2col(tb_backend *be, const tb_conv_shape *s, const float *x, int b0, int nb,
                   float *col)
{
    const tb_conv_shape g = *s;
    const int64_t hwo = conv_hwo(s), ld = (int64_t)nb * hwo;
    tb_cuda_for_each(be, conv_k(s) * ld, [=] __device__(int64_t e) {
        const int64_t row = e / ld, colx = e % ld;
        const int b = (int)(colx / hwo), p = (int)(colx % hwo);
        const int kj = (int)(row % g.kw), ki = (int)(row / g.kw % g.kh), c = (int)(row / (g.kw * g.kh));
        const int oh = p / g.w_out, ow = p % g.w_out;
        const int ih = oh * g.stride - g.pad + ki, iw = ow * g.stride - g.pad + kj;
        float v = 0.0f;
        if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
            v = x[(((int64_t)(b0 + b) * g.c_in + c) * g.h + ih) * g.w + iw];
        col[e] = v;
    });
}

/* dx[b0 .. b0+nb) (+)= col2im(col): each input element sums the col entries that read it. */
static void col2im_add(tb_backend *be, const tb_conv_shape *s, const float *col, int b0, int nb,
                       float *dx, bool dx_acc)
{
    const tb_conv_shape g = *s;
    const int64_t hwo = conv_hwo(s), ld = (int64_t)nb * hwo;
    tb_cuda_for_each(be, (int64_t)nb * g.c_in * g.h * g.w, [=] __device__(int64_t e) {
        const int iw = (int)(e % g.w), ih = (int)(e / g.w % g.h);
        const int c = (int)(e / ((int64_t)g.w * g.h) % g.c_in);
        const int b = (int)(e / ((int64_t)g.w * g.h * g.c_in));
        float acc = 0.0f;
        for (int ki = 0; ki < g.kh; ki++) {
            int th = ih + g.pad - ki;
            if (th < 0 || th % g.stride) continue;
            int oh = th / g.stride;
            if (oh >= g.h_out) continue;
            for (int kj = 0; kj < g.kw; kj++) {
                int tw = iw + g.pad - kj;
                if (tw < 0 || tw % g.stride) continue;
                int ow = tw / g.stride;
                if (ow >= g.w_out) continue;
                int64_t row = ((int64_t)c * g.kh + ki) * g.kw + kj;
                acc += col[row * ld + (int64_t)b * hwo + (int64_t)oh * g.w_out + ow];
            }
        }
        float *d = dx + ((int64_t)(b0 + b) * g.c_in + c) * g.h * g.w + (int64_t)ih * g.w + iw;
        *d = (dx_acc ? *d : 0.0f) + acc;
    });
}

static void cuda_conv2d_fwd(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                            const float *bias, float *y, void *workspace)
{
    const int nb_max = conv_chunk(s), cout = s->c_out;
    const int64_t hwo = conv_hwo(s), k = conv_k(s);
    float *col = (float *)workspace;
    float *stage = col + k * nb_max * hwo;
    for (int b0 = 0; b0 < s->n; b0 += nb_max) {
        const int nb = s->n - b0 < nb_max ? s->n - b0 : nb_max;
        const int64_t cols = nb * hwo;
        im2col(be, s, x, b0, nb, col);
        tb_cuda_gemm(be, false, false, cout, (int)cols, (int)k, 1.0f, w, (int)k, col, (int)cols,
                     0.0f, stage, (int)cols);
        /* out[c_out, nb, HWo] -> y[nb, c_out, HWo] plus the bias */
        float *yb = y + (int64_t)b0 * cout * hwo;
        tb_cuda_for_each(be, cols * cout, [=] __device__(int64_t e) {
            const int64_t p = e % hwo, o = e / hwo % cout, b = e / (hwo * cout);
            yb[e] = stage[o * cols + b * hwo + p] + (bias ? bias[o] : 0.0f);
        });
    }
}

static void cuda_conv2d_bwd(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                            const float *dy, float *dx, bool dx_acc, float *dw, float *db,
                            void *workspace)
{
    const int nb_max = conv_chunk(s), cout = s->c_out, n = s->n;
    const int64_t hwo = conv_hwo(s), k = conv_k(s);
    if (db) {
        /* one thread per output channel, images and positions in order */
        tb_cuda_for_each(be, cout, [=] __device__(int64_t o) {
            double acc = 0;
            for (int b = 0; b < n; b++) {
                const float *d = dy + ((int64_t)b * cout + o) * hwo;
                float part = 0;
                for (int64_t p = 0; p < hwo; p++) part += d[p];
                acc += part;
            }
            db[o] += (float)acc;
        });
    }
    if (!dx && !dw) return;
    float *col = (float *)workspace;
    float *stage = col + k * nb_max * hwo;
    for (int b0 = 0; b0 < n; b0 += nb_max) {
        const int nb = n - b0 < nb_max ? n - b0 : nb_max;
        const int64_t cols = nb * hwo;
        const float *dyb = dy + (int64_t)b0 * cout * hwo;
        /* dy of the chunk as g[c_out, nb HWo] */
        tb_cuda_for_each(be, cols * cout, [=] __device__(int64_t e) {
            const int64_t p = e % hwo, o = e / hwo % cout, b = e / (hwo * cout);
            stage[o * cols + b * hwo + p] = dyb[e];
        });
        if (dw) {
            im2col(be, s, x, b0, nb, col);
            tb_cuda_gemm(be, false, true, cout, (int)k, (int)cols, 1.0f, stage, (int)cols, col,
                         (int)cols, 1.0f, dw, (int)k);
        }
        if (dx) {
            tb_cuda_gemm(be, true, false, (int)k, (int)cols, cout, 1.0f, w, (int)k, stage,
                         (int)cols, 0.0f, col, (int)cols);
            col2im_add(be, s, col, b0, nb, dx, dx_acc);
        }
    }
}

/* ---- pooling --------------------------------------------------------------------------------- */

static void cuda_maxpool2d_fwd(tb_backend *be, const tb_pool_shape *s, const float *x, float *y,
                               int32_t *argmax)
{
    const tb_pool_shape g = *s;
    const int64_t hwo = (int64_t)g.h_out * g.w_out, hw = (int64_t)g.h * g.w;
    tb_cuda_for_each(be, (int64_t)g.n * g.c * hwo, [=] __device__(int64_t e) {
        const int64_t plane = e / hwo;
        const int oh = (int)(e % hwo / g.w_out), ow = (int)(e % g.w_out);
        const float *xp = x + plane * hw;
        float best = -FLT_MAX;
        int32_t at = -1;
        for (int ki = 0; ki < g.kh; ki++) {
            int ih = oh * g.stride - g.pad + ki;
            if (ih < 0 || ih >= g.h) continue;
            for (int kj = 0; kj < g.kw; kj++) {
                int iw = ow * g.stride - g.pad + kj;
                if (iw < 0 || iw >= g.w) continue;
                float v = xp[ih * g.w + iw];
                if (at < 0 || v > best || v != v) { /* as the CPU: first, larger, or NaN */
                    best = v;
                    at = ih * g.w + iw;
                }
            }
        }
        y[e] = at < 0 ? 0.0f : best;
        argmax[e] = at;
    });
}

/* Output windows [lo, hi] that contain input position i (one dimension). */
__device__ inline void windows_of(int i, int pad, int k, int stride, int out, int *lo, int *hi)
{
    int t = i + pad;
    int l = t - k + 1 <= 0 ? 0 : (t - k + 1 + stride - 1) / stride;
    int h = t / stride;
    *lo = l;
    *hi = h < out - 1 ? h : out - 1;
}

static void cuda_maxpool2d_bwd(tb_backend *be, const tb_pool_shape *s, const int32_t *argmax,
                               const float *dy, float *dx, bool dx_acc)
{
    const tb_pool_shape g = *s;
    const int64_t hwo = (int64_t)g.h_out * g.w_out, hw = (int64_t)g.h * g.w;
    tb_cuda_for_each(be, (int64_t)g.n * g.c * hw, [=] __device__(int64_t e) {
        const int64_t plane = e / hw;
        const int pos = (int)(e % hw), ih = pos / g.w, iw = pos % g.w;
        int oh0, oh1, ow0, ow1;
        windows_of(ih, g.pad, g.kh, g.stride, g.h_out, &oh0, &oh1);
        windows_of(iw, g.pad, g.kw, g.stride, g.w_out, &ow0, &ow1);
        float acc = 0.0f;
        for (int oh = oh0; oh <= oh1; oh++)
            for (int ow = ow0; ow <= ow1; ow++) {
                int64_t o = plane * hwo + (int64_t)oh * g.w_out + ow;
                if (argmax[o] == pos) acc += dy[o];
            }
        dx[e] = (dx_acc ? dx[e] : 0.0f) + acc;
    });
}

static void cuda_avgpool2d_fwd(tb_backend *be, const tb_pool_shape *s, const float *x, float *y)
{
    const tb_pool_shape g = *s;
    const int64_t hwo = (int64_t)g.h_out * g.w_out, hw = (int64_t)g.h * g.w;
    const float inv = 1.0f / (float)(g.kh * g.kw);
    tb_cuda_for_each(be, (int64_t)g.n * g.c * hwo, [=] __device__(int64_t e) {
        const int64_t plane = e / hwo;
        const int oh = (int)(e % hwo / g.w_out), ow = (int)(e % g.w_out);
        const float *xp = x + plane * hw;
        float acc = 0.0f;
        for (int ki = 0; ki < g.kh; ki++) {
            int ih = oh * g.stride - g.pad + ki;
            if (ih < 0 || ih >= g.h) continue;
            for (int kj = 0; kj < g.kw; kj++) {
                int iw = ow * g.stride - g.pad + kj;
                if (iw >= 0 && iw < g.w) acc += xp[ih * g.w + iw];
            }
        }
        y[e] = acc * inv;
    });
}

static void cuda_avgpool2d_bwd(tb_backend *be, const tb_pool_shape *s, const float *dy, float *dx)
{
    const tb_pool_shape g = *s;
    const int64_t hwo = (int64_t)g.h_out * g.w_out, hw = (int64_t)g.h * g.w;
    const float inv = 1.0f / (float)(g.kh * g.kw);
    tb_cuda_for_each(be, (int64_t)g.n * g.c * hw, [=] __device__(int64_t e) {
        const int64_t plane = e / hw;
        const int pos = (int)(e % hw), ih = pos / g.w, iw = pos % g.w;
        int oh0, oh1, ow0, ow1;
        windows_of(ih, g.pad, g.kh, g.stride, g.h_out, &oh0, &oh1);
        windows_of(iw, g.pad, g.kw, g.stride, g.w_out, &ow0, &ow1);
        float acc = 0.0f;
        for (int oh = oh0; oh <= oh1; oh++)
            for (int ow = ow0; ow <= ow1; ow++)
                acc += dy[plane * hwo + (int64_t)oh * g.w_out + ow] * inv;
        dx[e] += acc;
    });
}

/* One block per (image, channel) row. */
static __global__ void gap_fwd_kernel(int64_t hw, const float *x, float *y)
{
    const float *xp = x + (int64_t)blockIdx.x * hw;
    double acc = 0;
    for (int64_t p = threadIdx.x; p < hw; p += blockDim.x) acc += xp[p];
    acc = tb_cuda_block_sum(acc);
    if (threadIdx.x == 0) y[blockIdx.x] = (float)(acc / (double)hw);
}

static void cuda_gap_fwd(tb_backend *be, int64_t nc, int64_t hw, const float *x, float *y)
{
    if (nc <= 0) return;
    gap_fwd_kernel<<<(unsigned)nc, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(hw, x, y);
    TB_CUDA_LAUNCHED(be);
}

static void cuda_gap_bwd(tb_backend *be, int64_t nc, int64_t hw, const float *dy, float *dx)
{
    const float inv = 1.0f / (float)hw;
    tb_cuda_for_each(be, nc * hw, [=] __device__(int64_t e) { dx[e] += dy[e / hw] * inv; });
}

void tb_cuda_register_conv(tb_backend_ops *ops)
{
    ops->conv2d_workspace = cuda_conv2d_workspace;
    ops->conv2d_fwd = cuda_conv2d_fwd;
    ops->conv2d_bwd = cuda_conv2d_bwd;
    ops->maxpool2d_fwd = cuda_maxpool2d_fwd;
    ops->maxpool2d_bwd = cuda_maxpool2d_bwd;
    ops->avgpool2d_fwd = cuda_avgpool2d_fwd;
    ops->avgpool2d_bwd = cuda_avgpool2d_bwd;
    ops->gap_fwd = cuda_gap_fwd;
    ops->gap_bwd = cuda_gap_bwd;
}

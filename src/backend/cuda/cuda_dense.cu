/* cuda_dense.cu: element-wise kernels, bias, activations, strided copies and the host-returning
 * reductions (sum of squares, scalar reads) on the GPU. Matrix products are in
 * cuda_backend.cu (cuBLAS). Formulas follow src/backend/cpu/cpu_dense.c. */
#include "backend/cuda/cuda_internal.h"

static void cuda_fill(tb_backend *be, float *x, int64_t n, float v)
{
    if (v == 0.0f && n > 0) {
        tb_cuda_check(be, cudaMemsetAsync(x, 0, (size_t)n * sizeof(float), tb_cu(be)->stream));
        return;
    }
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) { x[i] = v; });
}

static void cuda_scale(tb_backend *be, float *x, int64_t n, float a)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) { x[i] *= a; });
}

static void cuda_axpy(tb_backend *be, int64_t n, float a, const float *x, float *y)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) { y[i] += a * x[i]; });
}

static void cuda_add(tb_backend *be, int64_t n, const float *a, const float *b, float *y)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) { y[i] = a[i] + b[i]; });
}

/* One thread per column walks the rows in order (coalesced across threads, deterministic). */
static void cuda_bias_grad(tb_backend *be, int64_t rows, int64_t cols, const float *dy, float *db)
{
    tb_cuda_for_each(be, cols, [=] __device__(int64_t c) {
        double s = 0;
        for (int64_t r = 0; r < rows; r++) s += dy[r * cols + c];
        db[c] += (float)s;
    });
}

__device__ inline float d_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
/* SiLU and SiLU' with the CPU's limits past |x| = 88 (cpu_act.c): 0 below, SiLU' 1 above. */
__device__ inline float d_silu(float x) { return x < -88.0f ? 0.0f : x * d_sigmoid(x); }
__device__ inline float d_silu_grad(float x)
{
    const float s = d_sigmoid(x);
    return x < -88.0f ? 0.0f : x > 88.0f ? 1.0f : s * (1.0f + x * (1.0f - s));
}

static void cuda_act_fwd(tb_backend *be, tb_act act, int64_t n, const float *x, float *y)
{
    switch (act) {
    case TB_ACT_RELU:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
        break;
    case TB_ACT_GELU:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
            y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
        });
        break;
    case TB_ACT_SILU:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { y[i] = d_silu(x[i]); });
        break;
    case TB_ACT_TANH:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { y[i] = tanhf(x[i]); });
        break;
    case TB_ACT_SIGMOID:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { y[i] = d_sigmoid(x[i]); });
        break;
    case TB_ACT_COUNT: break;
    }
}

static void cuda_act_bwd(tb_backend *be, tb_act act, int64_t n, const float *x, const float *y,
                         const float *dy, float *dx, bool dx_acc)
{
    switch (act) {
    case TB_ACT_RELU:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
            dx[i] = (dx_acc ? dx[i] : 0.0f) + (x[i] > 0.0f ? dy[i] : 0.0f);
        });
        break;
    case TB_ACT_GELU:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
            float cdf = 0.5f * (1.0f + erff(x[i] * 0.70710678118654752f));
            float pdf = 0.39894228040143268f * expf(-0.5f * x[i] * x[i]);
            dx[i] = (dx_acc ? dx[i] : 0.0f) + dy[i] * (cdf + x[i] * pdf);
        });
        break;
    case TB_ACT_SILU:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
            dx[i] = (dx_acc ? dx[i] : 0.0f) + dy[i] * d_silu_grad(x[i]);
        });
        break;
    case TB_ACT_TANH:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { dx[i] = (dx_acc ? dx[i] : 0.0f) + dy[i] * (1.0f - y[i] * y[i]); });
        break;
    case TB_ACT_SIGMOID:
        tb_cuda_for_each(be, n, [=] __device__(int64_t i) { dx[i] = (dx_acc ? dx[i] : 0.0f) + dy[i] * y[i] * (1.0f - y[i]); });
        break;
    case TB_ACT_COUNT: break;
    }
}

/* Shape and strides by value (tensors have at most TB_MAX_DIMS = 6 dimensions). */
#define STRIDED_MAX_DIMS 8
typedef struct strided_geom {
    int ndim;
    int64_t shape[STRIDED_MAX_DIMS], ds[STRIDED_MAX_DIMS], ss[STRIDED_MAX_DIMS];
} strided_geom;

static void cuda_strided_copy(tb_backend *be, int ndim, const int64_t *shape, float *dst,
                              const int64_t *dst_stride, const float *src,
                              const int64_t *src_stride, bool accumulate)
{
    if (ndim > STRIDED_MAX_DIMS) {
        tb_cuda_check(be, cudaErrorInvalidValue);
        return;
    }
    strided_geom g;
    g.ndim = ndim;
    int64_t total = 1;
    bool dst_aliases = false; /* a zero dst stride: several elements land on one address */
    for (int d = 0; d < ndim; d++) {
        g.shape[d] = shape[d];
        g.ds[d] = dst_stride[d];
        g.ss[d] = src_stride[d];
        total *= shape[d];
        if (dst_stride[d] == 0 && shape[d] > 1) dst_aliases = true;
    }
    tb_cuda_for_each(be, total, [=] __device__(int64_t i) {
        int64_t rem = i, doff = 0, soff = 0;
        for (int d = g.ndim - 1; d >= 0; d--) {
            int64_t k = rem % g.shape[d];
            rem /= g.shape[d];
            doff += k * g.ds[d];
            soff += k * g.ss[d];
        }
        if (!accumulate)
            dst[doff] = src[soff];
        else if (dst_aliases)
            atomicAdd(dst + doff, src[soff]);
        else
            dst[doff] += src[soff];
    });
}

static double cuda_sum_squares(tb_backend *be, int64_t n, const float *x)
{
    tb_cuda *cu = tb_cu(be);
    if (tb_cuda_refused_in_capture(be, "sum_squares (a value read back)")) return NAN;
    tb_cuda_reduce(be, n, [=] __device__(int64_t i) { return (double)x[i] * x[i]; }, 1.0, NULL,
                   cu->result);
    double out = 0;
    tb_cuda_check(be, cudaMemcpyAsync(&out, cu->result, sizeof out, cudaMemcpyDeviceToHost,
                                      cu->stream));
    tb_cuda_check(be, cudaStreamSynchronize(cu->stream));
    return out;
}

static bool cuda_all_finite(tb_backend *be, int64_t n, const float *x)
{
    tb_cuda *cu = tb_cu(be);
    if (tb_cuda_refused_in_capture(be, "all_finite (a value read back)")) return false;
    tb_cuda_reduce(be, n, [=] __device__(int64_t i) { return isfinite(x[i]) ? 0.0 : 1.0; }, 1.0,
                   NULL, cu->result);
    double out = 0;
    tb_cuda_check(be, cudaMemcpyAsync(&out, cu->result, sizeof out, cudaMemcpyDeviceToHost,
                                      cu->stream));
    tb_cuda_check(be, cudaStreamSynchronize(cu->stream));
    return out == 0.0;
}

static float cuda_read_scalar(tb_backend *be, const float *x)
{
    tb_cuda *cu = tb_cu(be);
    if (tb_cuda_refused_in_capture(be, "read_scalar (a value read back)")) return NAN;
    float out = 0;
    tb_cuda_check(be, cudaMemcpyAsync(&out, x, sizeof out, cudaMemcpyDeviceToHost, cu->stream));
    tb_cuda_check(be, cudaStreamSynchronize(cu->stream));
    return out;
}

void tb_cuda_register_dense(tb_backend_ops *ops)
{
    ops->fill = cuda_fill;
    ops->scale = cuda_scale;
    ops->axpy = cuda_axpy;
    ops->add = cuda_add;
    ops->bias_grad = cuda_bias_grad;
    ops->act_fwd = cuda_act_fwd;
    ops->act_bwd = cuda_act_bwd;
    ops->strided_copy = cuda_strided_copy;
    ops->sum_squares = cuda_sum_squares;
    ops->all_finite = cuda_all_finite;
    ops->read_scalar = cuda_read_scalar;
}

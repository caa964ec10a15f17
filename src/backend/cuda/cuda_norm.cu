/* cuda_norm.cu: batch norm (one block per channel over N and HW) and layer norm (one block per
 * row; a thread per column for dgamma/dbeta) on the GPU. Statistics accumulate in double with
 * fixed-order block sums, as on the CPU (src/backend/cpu/cpu_norm.c has the formulas). */
#include "backend/cuda/cuda_internal.h"

/* x[b, ch, p] for the flat index idx over (b, p) of one channel. */
#define BN_AT(ptr, idx) ((ptr)[((idx) / hw * c + ch) * hw + (idx) % hw])

static __global__ void bn_fwd_train_kernel(int64_t n, int64_t c, int64_t hw, const float *x,
                                           const float *gamma, const float *beta, float eps,
                                           float momentum, float *running_mean,
                                           float *running_var, bool relu, float *y, float *mean,
                                           float *invstd)
{
    const int64_t ch = blockIdx.x, count = n * hw;
    double s = 0, ss = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += BN_AT(x, i);
    const double mu = tb_cuda_block_sum(s) / (double)count;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        double d = BN_AT(x, i) - mu;
        ss += d * d;
    }
    ss = tb_cuda_block_sum(ss);
    const double var = ss / (double)count;
    const float r = (float)(1.0 / sqrt(var + (double)eps));
    const float m = (float)mu, g = gamma[ch] * r, sh = beta[ch];
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        const float v = (BN_AT(x, i) - m) * g + sh;
        BN_AT(y, i) = relu && !(v > 0.0f) ? 0.0f : v;
    }
    if (threadIdx.x == 0) {
        mean[ch] = m;
        invstd[ch] = r;
        double unbiased = count > 1 ? ss / (double)(count - 1) : var;
        running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * m;
        running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
    }
}

static void cuda_batchnorm_fwd_train(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                     const float *x, const float *gamma, const float *beta,
                                     float eps, float momentum, float *running_mean,
                                     float *running_var, bool relu, float *y, float *mean,
                                     float *invstd)
{
    if (c <= 0) return;
    bn_fwd_train_kernel<<<(unsigned)c, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(
        n, c, hw, x, gamma, beta, eps, momentum, running_mean, running_var, relu, y, mean,
        invstd);
    TB_CUDA_LAUNCHED(be);
}

static void cuda_batchnorm_fwd_eval(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                    const float *x, const float *gamma, const float *beta,
                                    float eps, const float *running_mean,
                                    const float *running_var, float *y)
{
    tb_cuda_for_each(be, n * c * hw, [=] __device__(int64_t e) {
        const int64_t ch = e / hw % c;
        float r = 1.0f / sqrtf(running_var[ch] + eps);
        float g = gamma[ch] * r, sh = beta[ch] - running_mean[ch] * g;
        y[e] = x[e] * g + sh;
    });
}

static __global__ void bn_bwd_kernel(int64_t n, int64_t c, int64_t hw, const float *x,
                                     const float *gamma, const float *mean, const float *invstd,
                                     const float *relu_beta, const float *dy, float *dx, bool dx_acc,
                                     float *dgamma, float *dbeta)
{
    const int64_t ch = blockIdx.x, count = n * hw;
    const float m = mean[ch], r = invstd[ch];
    /* a fused ReLU's mask: the forward output recomputed as bn_fwd_train_kernel computes it */
    const float g_fwd = gamma[ch] * r, sh = relu_beta ? relu_beta[ch] : 0.0f;
    double sdy = 0, sdyx = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        float g = relu_beta && !((BN_AT(x, i) - m) * g_fwd + sh > 0.0f) ? 0.0f : BN_AT(dy, i);
        sdy += g;
        sdyx += (double)g * ((BN_AT(x, i) - m) * r);
    }
    sdy = tb_cuda_block_sum(sdy);
    sdyx = tb_cuda_block_sum(sdyx);
    if (threadIdx.x == 0) {
        if (dbeta) dbeta[ch] += (float)sdy;
        if (dgamma) dgamma[ch] += (float)sdyx;
    }
    if (!dx) return;
    const float k = gamma[ch] * r, a = (float)(sdy / (double)count),
                bcoef = (float)(sdyx / (double)count);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
        BN_AT(dx, i) = (dx_acc ? BN_AT(dx, i) : 0.0f) +
                       k * ((relu_beta && !((BN_AT(x, i) - m) * g_fwd + sh > 0.0f)
                                 ? 0.0f
                                 : BN_AT(dy, i)) -
                            a - (BN_AT(x, i) - m) * r * bcoef);
}

static void cuda_batchnorm_bwd(tb_backend *be, int64_t n, int64_t c, int64_t hw, const float *x,
                               const float *gamma, const float *mean, const float *invstd,
                               const float *relu_beta, const float *dy, float *dx, bool dx_acc,
                               float *dgamma, float *dbeta)
{
    if (c <= 0) return;
    bn_bwd_kernel<<<(unsigned)c, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(
        n, c, hw, x, gamma, mean, invstd, relu_beta, dy, dx, dx_acc, dgamma, dbeta);
    TB_CUDA_LAUNCHED(be);
}

static __global__ void bn_bwd_eval_kernel(int64_t n, int64_t c, int64_t hw, const float *x,
                                          const float *gamma, float eps,
                                          const float *running_mean, const float *running_var,
                                          const float *dy, float *dx, float *dgamma, float *dbeta)
{
    const int64_t ch = blockIdx.x, count = n * hw;
    const float m = running_mean[ch], r = 1.0f / sqrtf(running_var[ch] + eps), k = gamma[ch] * r;
    double sdy = 0, sdyx = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        float g = BN_AT(dy, i);
        sdy += g;
        sdyx += (double)g * ((BN_AT(x, i) - m) * r);
        if (dx) BN_AT(dx, i) += k * g;
    }
    sdy = tb_cuda_block_sum(sdy);
    sdyx = tb_cuda_block_sum(sdyx);
    if (threadIdx.x == 0) {
        if (dbeta) dbeta[ch] += (float)sdy;
        if (dgamma) dgamma[ch] += (float)sdyx;
    }
}

static void cuda_batchnorm_bwd_eval(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                    const float *x, const float *gamma, float eps,
                                    const float *running_mean, const float *running_var,
                                    const float *dy, float *dx, float *dgamma, float *dbeta)
{
    if (c <= 0) return;
    bn_bwd_eval_kernel<<<(unsigned)c, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(
        n, c, hw, x, gamma, eps, running_mean, running_var, dy, dx, dgamma, dbeta);
    TB_CUDA_LAUNCHED(be);
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static __global__ void ln_fwd_kernel(int64_t cols, const float *x, const float *gamma,
                                     const float *beta, float eps, float *y, float *mean,
                                     float *rstd)
{
    const int64_t r = blockIdx.x;
    const float *xp = x + r * cols;
    float *yp = y + r * cols;
    double s = 0, ss = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += xp[j];
    const double mu = tb_cuda_block_sum(s) / (double)cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        double d = xp[j] - mu;
        ss += d * d;
    }
    ss = tb_cuda_block_sum(ss);
    const float m = (float)mu, rs = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        yp[j] = (xp[j] - m) * rs * gamma[j] + beta[j];
    if (threadIdx.x == 0) {
        mean[r] = m;
        rstd[r] = rs;
    }
}

static void cuda_layernorm_fwd(tb_backend *be, int64_t rows, int64_t cols, const float *x,
                               const float *gamma, const float *beta, float eps, float *y,
                               float *mean, float *rstd)
{
    if (rows <= 0) return;
    ln_fwd_kernel<<<(unsigned)rows, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(cols, x, gamma, beta,
                                                                            eps, y, mean, rstd);
    TB_CUDA_LAUNCHED(be);
}

static __global__ void ln_bwd_dx_kernel(int64_t cols, const float *x, const float *gamma,
                                        const float *mean, const float *rstd, const float *dy,
                                        float *dx, bool dx_acc)
{
    const int64_t r = blockIdx.x;
    const float *xp = x + r * cols, *gp = dy + r * cols;
    float *dp = dx + r * cols;
    const float m = mean[r], rs = rstd[r];
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float g = gp[j] * gamma[j];
        sg += g;
        sgx += (double)g * ((xp[j] - m) * rs);
    }
    sg = tb_cuda_block_sum(sg);
    sgx = tb_cuda_block_sum(sgx);
    const float a = (float)(sg / (double)cols), b = (float)(sgx / (double)cols);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        dp[j] = (dx_acc ? dp[j] : 0.0f) + rs * (gp[j] * gamma[j] - a - (xp[j] - m) * rs * b);
}

static void cuda_layernorm_bwd(tb_backend *be, int64_t rows, int64_t cols, const float *x,
                               const float *gamma, const float *mean, const float *rstd,
                               const float *dy, float *dx, bool dx_acc, float *dgamma,
                               float *dbeta)
{
    if (rows <= 0) return;
    if (dx) {
        ln_bwd_dx_kernel<<<(unsigned)rows, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(
            cols, x, gamma, mean, rstd, dy, dx, dx_acc);
        TB_CUDA_LAUNCHED(be);
    }
    if (!dgamma && !dbeta) return;
    tb_cuda_for_each(be, cols, [=] __device__(int64_t j) {
        double sg = 0, sb = 0;
        for (int64_t r = 0; r < rows; r++) {
            const float g = dy[r * cols + j];
            sg += (double)g * ((x[r * cols + j] - mean[r]) * rstd[r]);
            sb += g;
        }
        if (dgamma) dgamma[j] += (float)sg;
        if (dbeta) dbeta[j] += (float)sb;
    });
}

void tb_cuda_register_norm(tb_backend_ops *ops)
{
    ops->batchnorm_fwd_train = cuda_batchnorm_fwd_train;
    ops->batchnorm_fwd_eval = cuda_batchnorm_fwd_eval;
    ops->batchnorm_bwd = cuda_batchnorm_bwd;
    ops->batchnorm_bwd_eval = cuda_batchnorm_bwd_eval;
    ops->layernorm_fwd = cuda_layernorm_fwd;
    ops->layernorm_bwd = cuda_layernorm_bwd;
}

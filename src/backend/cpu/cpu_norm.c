/* cpu_norm.c: batch norm (per channel over N and HW) and layer norm (per row over the last
 * dimension), forward and backward, with OpenMP over channels or rows. Statistics accumulate
 * in double so large batches keep float accuracy. */
#include "backend/cpu/cpu.h"

#include <math.h>

/* Above this many elements the loops run in parallel. */
#define NORM_PAR 32768

/* ---- batch norm ------------------------------------------------------------------------------ */

static void cpu_batchnorm_fwd_train(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                    const float *x, const float *gamma, const float *beta,
                                    float eps, float momentum, float *running_mean,
                                    float *running_var, bool relu, float *y, float *mean,
                                    float *invstd)
{
    const int64_t count = n * hw;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n * c * hw > NORM_PAR)
    for (int64_t ch = 0; ch < c; ch++) {
        /* One pass for both sums, of x - K and its squares (float partial sums over one
         * plane, vectorised, accumulated in double), instead of a pass for the mean and one
         * for the squares about it. K is the mean of the first 16 elements of every plane, a
         * sample of the whole channel: the terms are then about the size of the spread, not
         * of the mean, so a large mean does not cancel the variance away. The cancellation
         * left is bounded: a sample of a fraction f of the channel has a mean within
         * sqrt(1/f - 1) deviations of the channel's, so the squares' sum is at most hw/16
         * times the variance's, and its relative rounding grows at most that much (6e-5
         * measured for 12544-element planes whose first 16 lay 100 deviations off; 3e-8 with
         * the two passes). */
        const int64_t q = hw < 16 ? hw : 16;
        double k0 = 0;
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * c + ch) * hw;
            float part = 0;
#pragma omp simd reduction(+ : part)
            for (int64_t p = 0; p < q; p++) part += xp[p];
            k0 += part;
        }
        const float K = n * q > 0 ? (float)(k0 / (double)(n * q)) : 0.0f;
        double s = 0, ss = 0;
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * c + ch) * hw;
            float part = 0, part2 = 0;
#pragma omp simd reduction(+ : part, part2)
            for (int64_t p = 0; p < hw; p++) {
                const float d = xp[p] - K;
                part += d;
                part2 += d * d;
            }
            s += part;
            ss += part2;
        }
        const double shift = s / (double)count;
        const double mu = (double)K + shift;
        double var = ss / (double)count - shift * shift; /* biased: used to normalise */
        if (var < 0) var = 0; /* rounding, for a constant channel */
        float r = (float)(1.0 / sqrt(var + (double)eps));
        float m = (float)mu, g = gamma[ch] * r, sh = beta[ch];
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * c + ch) * hw;
            float *yp = y + (b * c + ch) * hw;
            if (relu) {
#pragma omp simd
                for (int64_t p = 0; p < hw; p++) {
                    float v = (xp[p] - m) * g + sh;
                    yp[p] = v > 0.0f ? v : 0.0f;
                }
            } else {
#pragma omp simd
                for (int64_t p = 0; p < hw; p++) yp[p] = (xp[p] - m) * g + sh;
            }
        }
        mean[ch] = m;
        invstd[ch] = r;
        double unbiased = count > 1 ? var * (double)count / (double)(count - 1) : var;
        running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * m;
        running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
    }
}

static void cpu_batchnorm_fwd_eval(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                   const float *x, const float *gamma, const float *beta,
                                   float eps, const float *running_mean,
                                   const float *running_var, float *y)
{
#pragma omp parallel for num_threads(be->threads) collapse(2) schedule(static) \
    if (n * c * hw > NORM_PAR)
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++) {
            float r = 1.0f / sqrtf(running_var[ch] + eps);
            float g = gamma[ch] * r, sh = beta[ch] - running_mean[ch] * g;
            const float *xp = x + (b * c + ch) * hw;
            float *yp = y + (b * c + ch) * hw;
            for (int64_t p = 0; p < hw; p++) yp[p] = xp[p] * g + sh;
        }
}

/* With xhat = (x - mean) invstd and M = n hw per channel:
 *     dbeta = sum dy, dgamma = sum dy xhat,
 *     dx = gamma invstd (dy - dbeta / M - xhat dgamma / M). */
/* The backward pass of batch norm, with the fused ReLU's mask when relu_beta is given: the
 * forward output (x - mean) invstd gamma + beta is recomputed from x (read anyway) with the
 * same float operations, so its sign is the forward pass's and the output need not be read. */
static void cpu_batchnorm_bwd(tb_backend *be, int64_t n, int64_t c, int64_t hw, const float *x,
                              const float *gamma, const float *mean, const float *invstd,
                              const float *relu_beta, const float *dy, float *dx, bool dx_acc,
                              float *dgamma, float *dbeta)
{
    const double count = (double)(n * hw);
    const bool relu = relu_beta != NULL;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n * c * hw > NORM_PAR)
    for (int64_t ch = 0; ch < c; ch++) {
        const float m = mean[ch], r = invstd[ch];
        /* the forward pass's scale and shift (cpu_batchnorm_fwd_train) */
        const float g = gamma[ch] * r, sh = relu ? relu_beta[ch] : 0.0f;
        double sdy = 0, sdyx = 0;
        for (int64_t b = 0; b < n; b++) {
            const int64_t off = (b * c + ch) * hw;
            const float *xp = x + off, *gp = dy + off;
            float pdy = 0, pdyx = 0;
#pragma omp simd reduction(+ : pdy, pdyx)
            for (int64_t p = 0; p < hw; p++) {
                const float y = (xp[p] - m) * g + sh;
                const float d = relu && !(y > 0.0f) ? 0.0f : gp[p];
                pdy += d;
                pdyx += d * ((xp[p] - m) * r);
            }
            sdy += pdy;
            sdyx += pdyx;
        }
        if (dbeta) dbeta[ch] += (float)sdy;
        if (dgamma) dgamma[ch] += (float)sdyx;
        if (!dx) continue;
        const float k = gamma[ch] * r, a = (float)(sdy / count), bcoef = (float)(sdyx / count);
        for (int64_t b = 0; b < n; b++) {
            const int64_t off = (b * c + ch) * hw;
            const float *xp = x + off, *gp = dy + off;
            float *dp = dx + off;
            if (dx_acc) {
#pragma omp simd
                for (int64_t p = 0; p < hw; p++) {
                    const float y = (xp[p] - m) * g + sh;
                    const float d = relu && !(y > 0.0f) ? 0.0f : gp[p];
                    dp[p] += k * (d - a - (xp[p] - m) * r * bcoef);
                }
            } else {
#pragma omp simd
                for (int64_t p = 0; p < hw; p++) {
                    const float y = (xp[p] - m) * g + sh;
                    const float d = relu && !(y > 0.0f) ? 0.0f : gp[p];
                    dp[p] = k * (d - a - (xp[p] - m) * r * bcoef);
                }
            }
        }
    }
}

static void cpu_batchnorm_bwd_eval(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                   const float *x, const float *gamma, float eps,
                                   const float *running_mean, const float *running_var,
                                   const float *dy, float *dx, float *dgamma, float *dbeta)
{
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n * c * hw > NORM_PAR)
    for (int64_t ch = 0; ch < c; ch++) {
        const float m = running_mean[ch], r = 1.0f / sqrtf(running_var[ch] + eps);
        const float k = gamma[ch] * r;
        double sdy = 0, sdyx = 0;
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * c + ch) * hw, *gp = dy + (b * c + ch) * hw;
            float pdy = 0, pdyx = 0;
#pragma omp simd reduction(+ : pdy, pdyx)
            for (int64_t p = 0; p < hw; p++) {
                pdy += gp[p];
                pdyx += gp[p] * ((xp[p] - m) * r);
            }
            sdy += pdy;
            sdyx += pdyx;
            if (dx) {
                float *dp = dx + (b * c + ch) * hw;
#pragma omp simd
                for (int64_t p = 0; p < hw; p++) dp[p] += k * gp[p];
            }
        }
        if (dbeta) dbeta[ch] += (float)sdy;
        if (dgamma) dgamma[ch] += (float)sdyx;
    }
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static void cpu_layernorm_fwd(tb_backend *be, int64_t rows, int64_t cols, const float *x,
                              const float *gamma, const float *beta, float eps, float *y,
                              float *mean, float *rstd)
{
#pragma omp parallel for num_threads(be->threads) schedule(static) if (rows * cols > NORM_PAR)
    for (int64_t r = 0; r < rows; r++) {
        const float *xp = x + r * cols;
        float *yp = y + r * cols;
        float s = 0, ss = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < cols; j++) s += xp[j];
        const float m = s / (float)cols;
#pragma omp simd reduction(+ : ss)
        for (int64_t j = 0; j < cols; j++) {
            float d = xp[j] - m;
            ss += d * d;
        }
        float rs = (float)(1.0 / sqrt((double)ss / (double)cols + (double)eps));
        for (int64_t j = 0; j < cols; j++) yp[j] = (xp[j] - m) * rs * gamma[j] + beta[j];
        mean[r] = m;
        rstd[r] = rs;
    }
}

/* Column block of the two-pass dgamma/dbeta reduction (one thread per block, rows in order). */
#define LN_COL_BLOCK 64

/* One row of dx: dx (+)= rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma. When pg is
 * given, the row's dy xhat and dy are also added to the chunk partials pg and pb. */
static inline void ln_row_bwd(int64_t cols, const float *xp, const float *gp, const float *gamma,
                              float m, float rs, float *dp, bool dx_acc, float *pg, float *pb)
{
    float sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
    for (int64_t j = 0; j < cols; j++) {
        float g = gp[j] * gamma[j];
        sg += g;
        sgx += g * ((xp[j] - m) * rs);
    }
    const float a = sg / (float)cols, b = sgx / (float)cols;
    if (pg) {
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) {
            pg[j] += gp[j] * ((xp[j] - m) * rs);
            pb[j] += gp[j];
        }
    }
    if (!dp) return;
    if (dx_acc) {
#pragma omp simd
        for (int64_t j = 0; j < cols; j++)
            dp[j] += rs * (gp[j] * gamma[j] - a - (xp[j] - m) * rs * b);
    } else {
#pragma omp simd
        for (int64_t j = 0; j < cols; j++)
            dp[j] = rs * (gp[j] * gamma[j] - a - (xp[j] - m) * rs * b);
    }
}

/* dgamma/dbeta by a second pass over x and dy: column blocks, rows in order. */
static void ln_param_grads_2pass(const tb_backend *be, int64_t rows, int64_t cols,
                                 const float *x, const float *mean, const float *rstd,
                                 const float *dy, float *dgamma, float *dbeta)
{
    const int64_t blocks = (cols + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (rows * cols > NORM_PAR)
    for (int64_t blk = 0; blk < blocks; blk++) {
        const int64_t j0 = blk * LN_COL_BLOCK;
        const int64_t j1 = j0 + LN_COL_BLOCK < cols ? j0 + LN_COL_BLOCK : cols;
        double sg[LN_COL_BLOCK] = {0}, sb[LN_COL_BLOCK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *xp = x + r * cols, *gp = dy + r * cols;
            const float m = mean[r], rs = rstd[r];
            for (int64_t j = j0; j < j1; j++) {
                sg[j - j0] += (double)gp[j] * ((xp[j] - m) * rs);
                sb[j - j0] += gp[j];
            }
        }
        for (int64_t j = j0; j < j1; j++) {
            if (dgamma) dgamma[j] += (float)sg[j - j0];
            if (dbeta) dbeta[j] += (float)sb[j - j0];
        }
    }
}

/* With xhat = (x - mean) rstd and g = dy gamma per row:
 *     dx = rstd (g - mean(g) - xhat mean(g xhat)); dgamma = sum_rows dy xhat; dbeta = sum dy.
 * One pass over x and dy where the partial sums have scratch: each chunk of TB_CPU_SUM_CHUNK
 * rows sums its dgamma/dbeta terms in float while it computes dx, and the chunks' sums are
 * added in order (tb_cpu_sum_chunks). Otherwise a second pass sums them. */
static void cpu_layernorm_bwd(tb_backend *be, int64_t rows, int64_t cols, const float *x,
                              const float *gamma, const float *mean, const float *rstd,
                              const float *dy, float *dx, bool dx_acc, float *dgamma,
                              float *dbeta)
{
    const bool params = dgamma || dbeta;
    const int64_t chunks = (rows + TB_CPU_SUM_CHUNK - 1) / TB_CPU_SUM_CHUNK;
    float *part = params ? tb_cpu_sum_scratch(be, chunks * 2 * cols) : NULL; /* [chunks][2][cols] */
    if (!part) {
        if (dx) {
#pragma omp parallel for num_threads(be->threads) schedule(static) if (rows * cols > NORM_PAR)
            for (int64_t r = 0; r < rows; r++)
                ln_row_bwd(cols, x + r * cols, dy + r * cols, gamma, mean[r], rstd[r],
                           dx + r * cols, dx_acc, NULL, NULL);
        }
        if (params) ln_param_grads_2pass(be, rows, cols, x, mean, rstd, dy, dgamma, dbeta);
        return;
    }
#pragma omp parallel num_threads(be->threads) if (rows * cols > NORM_PAR)
    {
#pragma omp for schedule(static)
        for (int64_t ch = 0; ch < chunks; ch++) {
            float *pg = part + ch * 2 * cols, *pb = pg + cols;
            for (int64_t j = 0; j < 2 * cols; j++) pg[j] = 0.0f;
            const int64_t r0 = ch * TB_CPU_SUM_CHUNK;
            const int64_t r1 = r0 + TB_CPU_SUM_CHUNK < rows ? r0 + TB_CPU_SUM_CHUNK : rows;
            for (int64_t r = r0; r < r1; r++)
                ln_row_bwd(cols, x + r * cols, dy + r * cols, gamma, mean[r], rstd[r],
                           dx ? dx + r * cols : NULL, dx_acc, pg, pb);
        }
        tb_cpu_sum_chunks(chunks, cols, part, 2 * cols, dgamma);
        tb_cpu_sum_chunks(chunks, cols, part + cols, 2 * cols, dbeta);
    }
}

void tb_cpu_register_norm(tb_backend_ops *ops)
{
    ops->batchnorm_fwd_train = cpu_batchnorm_fwd_train;
    ops->batchnorm_fwd_eval = cpu_batchnorm_fwd_eval;
    ops->batchnorm_bwd = cpu_batchnorm_bwd;
    ops->batchnorm_bwd_eval = cpu_batchnorm_bwd_eval;
    ops->layernorm_fwd = cpu_layernorm_fwd;
    ops->layernorm_bwd = cpu_layernorm_bwd;
}

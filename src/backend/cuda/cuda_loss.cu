/* cuda_loss.cu: losses (softmax cross-entropy with label smoothing, MSE, sigmoid BCE) and dropout
 * on the GPU. Losses are sums in double reduced in a fixed order (tb_cuda_reduce), written to a
 * device float; backward passes read the incoming gradient from device memory. Dropout draws
 * the same Philox bits as the CPU backend, so both backends make the same mask. */
#include "backend/cuda/cuda_internal.h"

/* One block per row: the row's max logit and 1 / sum exp(z - max) into stats[2i], stats[2i + 1]
 * (the backward pass recomputes the probabilities from them), its smoothed loss into
 * row_loss. */
static __global__ void xent_fwd_kernel(int c, const float *logits, const int32_t *labels,
                                       float smoothing, float *stats, double *row_loss)
{
    const int64_t i = blockIdx.x;
    const float *z = logits + i * c;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < c; j += blockDim.x) mx = fmaxf(mx, z[j]);
    mx = tb_cuda_block_max(mx);
    double sum = 0, sum_z = 0;
    for (int j = threadIdx.x; j < c; j += blockDim.x) {
        sum += expf(z[j] - mx);
        sum_z += z[j] - mx;
    }
    sum = tb_cuda_block_sum(sum);
    sum_z = tb_cuda_block_sum(sum_z);
    if (threadIdx.x == 0) {
        stats[2 * i] = mx;
        stats[2 * i + 1] = (float)(1.0 / sum);
        double log_sum = log(sum);
        /* the op checks labels on the host, except in a graph replay: a label outside [0, c)
         * makes the loss NaN there instead of reading past the row */
        const int32_t y = labels[i];
        double nll = y >= 0 && y < c ? log_sum - (z[y] - mx) : (double)NAN;
        double uniform = log_sum - sum_z / c;
        row_loss[i] = (1.0 - smoothing) * nll + smoothing * uniform;
    }
}

static void cuda_softmax_xent_fwd(tb_backend *be, int n, int c, const float *logits,
                                  const int32_t *labels, float smoothing, float *stats,
                                  float *loss)
{
    if (n <= 0) return;
    double *rows = (double *)tb_cuda_rows_scratch(be, (size_t)n * sizeof(double));
    if (!rows) return;
    xent_fwd_kernel<<<(unsigned)n, TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(c, logits, labels,
                                                                           smoothing, stats, rows);
    TB_CUDA_LAUNCHED(be);
    tb_cuda_reduce(be, n, [=] __device__(int64_t i) { return rows[i]; }, 1.0 / n, loss, NULL);
}

static void cuda_softmax_xent_bwd(tb_backend *be, int n, int c, const float *logits,
                                  const float *stats, const int32_t *labels, float smoothing,
                                  const float *dloss, float *dlogits, bool dx_acc)
{
    const float off = smoothing / (float)c;
    tb_cuda_for_each(be, (int64_t)n * c, [=] __device__(int64_t k) {
        const int64_t i = k / c, j = k % c;
        const float scale = *dloss / (float)n;
        const float p = expf(logits[k] - stats[2 * i]) * stats[2 * i + 1];
        float target = off + (j == labels[i] ? 1.0f - smoothing : 0.0f);
        dlogits[k] = (dx_acc ? dlogits[k] : 0.0f) + scale * (p - target);
    });
}

static void cuda_mse_fwd(tb_backend *be, int64_t n, const float *pred, const float *target,
                         float *loss)
{
    tb_cuda_reduce(be, n, [=] __device__(int64_t i) {
        double d = (double)pred[i] - target[i];
        return d * d;
    }, 1.0 / (double)n, loss, NULL);
}

static void cuda_mse_bwd(tb_backend *be, int64_t n, const float *pred, const float *target,
                         const float *dloss, float *dpred)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const float scale = 2.0f * *dloss / (float)n;
        dpred[i] += scale * (pred[i] - target[i]);
    });
}

static void cuda_bce_fwd(tb_backend *be, int64_t n, const float *logits, const float *target,
                         float *loss)
{
    tb_cuda_reduce(be, n, [=] __device__(int64_t i) {
        /* stable: max(z,0) - z t + log(1 + exp(-|z|)); the CPU backend refuses a target
         * outside [0, 1], which would need a read back here: it makes the loss NaN instead */
        double z = logits[i], t = target[i];
        if (!(t >= 0.0 && t <= 1.0)) return (double)NAN;
        return (z > 0 ? z : 0) - z * t + log1p(exp(-fabs(z)));
    }, 1.0 / (double)n, loss, NULL);
}

static void cuda_bce_bwd(tb_backend *be, int64_t n, const float *logits, const float *target,
                         const float *dloss, float *dlogits)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        const float scale = *dloss / (float)n;
        float s = 1.0f / (1.0f + expf(-logits[i]));
        dlogits[i] += scale * (s - target[i]);
    });
}

/* Element i keeps x with probability 1-p: Philox block c + i/4, lane i%4, as the CPU, with
 * c = *counter, which then advances by the blocks drawn. While capturing a counter in the step
 * block, the kernel reads c from the device mirror and a one-thread kernel advances it there,
 * so every replay (and every dropout of one replay) draws fresh masks; the host copy advances
 * too, as it does outside a capture. */
static void cuda_dropout_fwd(tb_backend *be, int64_t n, float p, const uint32_t key[2],
                             uint64_t *counter, const float *x, float *y, float *mask)
{
    const float keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    const uint32_t k0 = key[0], k1 = key[1];
    const uint64_t blocks = (uint64_t)((n + 3) / 4), host_counter = *counter;
    uint64_t *dev_counter = (uint64_t *)tb_step_device_ref(be, counter);
    *counter += blocks;
    tb_cuda_for_each(be, (int64_t)blocks, [=] __device__(int64_t blk) {
        uint32_t bits[4];
        const uint64_t c = dev_counter ? *dev_counter : host_counter;
        tb_philox4x32_block(k0, k1, c + (uint64_t)blk, bits);
        for (int lane = 0; lane < 4; lane++) {
            int64_t i = blk * 4 + lane;
            if (i >= n) break;
            float u = (float)(bits[lane] >> 8) * (1.0f / 16777216.0f); /* tb_u32_to_unit */
            float m = u >= p ? keep_scale : 0.0f;
            mask[i] = m;
            y[i] = __fmul_rn(x[i], m); /* no FMA contraction: bit-identical to the CPU */
        }
    });
    if (dev_counter)
        tb_cuda_for_each(be, 1, [=] __device__(int64_t) { *dev_counter += blocks; });
}

static void cuda_dropout_bwd(tb_backend *be, int64_t n, const float *mask, const float *dy,
                             float *dx)
{
    tb_cuda_for_each(be, n, [=] __device__(int64_t i) {
        dx[i] = __fadd_rn(dx[i], __fmul_rn(dy[i], mask[i])); /* as the CPU, without FMA */
    });
}

void tb_cuda_register_loss(tb_backend_ops *ops)
{
    ops->softmax_xent_fwd = cuda_softmax_xent_fwd;
    ops->softmax_xent_bwd = cuda_softmax_xent_bwd;
    ops->mse_fwd = cuda_mse_fwd;
    ops->mse_bwd = cuda_mse_bwd;
    ops->bce_fwd = cuda_bce_fwd;
    ops->bce_bwd = cuda_bce_bwd;
    ops->dropout_fwd = cuda_dropout_fwd;
    ops->dropout_bwd = cuda_dropout_bwd;
}

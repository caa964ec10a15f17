/* cpu_loss.c: loss functions and dropout on the CPU. */
#include "backend/cpu/cpu.h"

#include <math.h>

#include "trainbench/rng.h"

/* One row of the softmax cross-entropy: probs p = softmax(z), and the row's loss
 * (1 - smoothing) (-log p_y) + smoothing mean_j (-log p_j), in double. */
static double xent_row(int c, const float *z, int32_t label, float smoothing, float *p)
{
    float zmax = z[0];
#pragma omp simd reduction(max : zmax)
    for (int j = 1; j < c; j++) zmax = z[j] > zmax ? z[j] : zmax;
    /* float partial sums over blocks of 256 classes (vectorised), added in double */
    double sum = 0, sum_z = 0;
    for (int j0 = 0; j0 < c; j0 += 256) {
        const int j1 = j0 + 256 < c ? j0 + 256 : c;
        float s = 0, sz = 0;
#pragma omp simd reduction(+ : s, sz)
        for (int j = j0; j < j1; j++) {
            p[j] = tb_cpu_expf(z[j] - zmax);
            s += p[j];
            sz += z[j] - zmax;
        }
        sum += s;
        sum_z += sz;
    }
    double log_sum = log(sum);
    float inv = (float)(1.0 / sum);
#pragma omp simd
    for (int j = 0; j < c; j++) p[j] *= inv;
    /* -log p_y = log_sum - (z_y - zmax); the smoothed part averages -log p over classes */
    double nll = log_sum - (z[label] - zmax);
    double uniform = log_sum - sum_z / c;
    return (1.0 - smoothing) * nll + smoothing * uniform;
}

/* The rows of one softmax cross-entropy and where their probabilities go. */
typedef struct {
    int c;
    const float *logits;
    const int32_t *labels;
    float smoothing;
    float *probs;
} xent_rows;

static double xent_part(const void *ctx, int64_t i0, int64_t i1)
{
    const xent_rows *r = ctx;
    double s = 0;
    for (int64_t i = i0; i < i1; i++)
        s += xent_row(r->c, r->logits + i * r->c, r->labels[i], r->smoothing,
                      r->probs + i * r->c);
    return s;
}

/* The mean of the rows' losses, rows in fixed parts of at least 16 (tb_cpu_sum_in_parts): the
 * same bits at any thread count. */
static void cpu_softmax_xent_fwd(tb_backend *be, int n, int c, const float *logits,
                                 const int32_t *labels, float smoothing, float *probs,
                                 float *loss)
{
    const xent_rows rows = {c, logits, labels, smoothing, probs};
    *loss = (float)(tb_cpu_sum_in_parts(be, n, 16, (int64_t)n * c > 16384, xent_part, &rows) /
                    n);
}

static void cpu_softmax_xent_bwd(tb_backend *be, int n, int c, const float *probs,
                                 const int32_t *labels, float smoothing, const float *dloss,
                                 float *dlogits, bool dx_acc)
{
    const float scale = *dloss / (float)n, off = smoothing / (float)c;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n * c > 16384)
    for (int i = 0; i < n; i++) {
        const float *p = probs + (int64_t)i * c;
        float *d = dlogits + (int64_t)i * c;
        if (dx_acc) {
#pragma omp simd
            for (int j = 0; j < c; j++) d[j] += scale * (p[j] - off);
        } else {
#pragma omp simd
            for (int j = 0; j < c; j++) d[j] = scale * (p[j] - off);
        }
        d[labels[i]] -= scale * (1.0f - smoothing); /* the label's one-hot part */
    }
}

/* Two operands of an element-wise loss. */
typedef struct {
    const float *a, *b;
} pair;

/* The sums of squared differences over one part, in double, lane by lane. */
static double mse_part(const void *ctx, int64_t i0, int64_t i1)
{
    enum { L = TB_CPU_PART_LANES };
    const float *pred = ((const pair *)ctx)->a + i0, *target = ((const pair *)ctx)->b + i0;
    const int64_t n = i1 - i0;
    double acc[L] = {0};
    int64_t i = 0;
    for (; i + L <= n; i += L)
        for (int l = 0; l < L; l++) {
            const double d = (double)pred[i + l] - target[i + l];
            acc[l] += d * d;
        }
    for (int l = 0; i + l < n; l++) {
        const double d = (double)pred[i + l] - target[i + l];
        acc[l] += d * d;
    }
    return tb_cpu_add_lanes(acc);
}

/* The mean over n elements of an element-wise loss whose sum over a part is part_sum, in fixed
 * parts of at least 4096 (tb_cpu_sum_in_parts), on the backend's threads above par elements. */
static float mean_in_parts(const tb_backend *be, int64_t n, int64_t par, tb_cpu_part_sum part_sum,
                           const float *a, const float *b)
{
    const pair ab = {a, b};
    return (float)(tb_cpu_sum_in_parts(be, n, 4096, n > par, part_sum, &ab) / (double)n);
}

static void cpu_mse_fwd(tb_backend *be, int64_t n, const float *pred, const float *target,
                        float *loss)
{
    *loss = mean_in_parts(be, n, 32768, mse_part, pred, target);
}

static void cpu_mse_bwd(tb_backend *be, int64_t n, const float *pred, const float *target,
                        const float *dloss, float *dpred)
{
    const float scale = 2.0f * *dloss / (float)n;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) dpred[i] += scale * (pred[i] - target[i]);
}

/* The stable logistic loss max(z, 0) - z t + log(1 + exp(-|z|)) of one element, in float. */
static inline float bce_term(float z, float t)
{
    const float az = z < 0.0f ? -z : z;
    return (z > 0.0f ? z : 0.0f) - z * t + tb_cpu_log1pf_unit(tb_cpu_expf(-az));
}

/* The sum of one part's terms, in double, lane by lane. */
static double bce_part(const void *ctx, int64_t i0, int64_t i1)
{
    enum { L = TB_CPU_PART_LANES };
    const float *logits = ((const pair *)ctx)->a + i0, *target = ((const pair *)ctx)->b + i0;
    const int64_t n = i1 - i0;
    double acc[L] = {0};
    int64_t i = 0;
    for (; i + L <= n; i += L)
        for (int l = 0; l < L; l++) acc[l] += (double)bce_term(logits[i + l], target[i + l]);
    for (int l = 0; i + l < n; l++) acc[l] += (double)bce_term(logits[i + l], target[i + l]);
    return tb_cpu_add_lanes(acc);
}

static void cpu_bce_fwd(tb_backend *be, int64_t n, const float *logits, const float *target,
                        float *loss)
{
    *loss = mean_in_parts(be, n, 16384, bce_part, logits, target);
}

static void cpu_bce_bwd(tb_backend *be, int64_t n, const float *logits, const float *target,
                        const float *dloss, float *dlogits)
{
    const float scale = *dloss / (float)n;
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; i++) {
        dlogits[i] += scale * (tb_cpu_sigmoidf(logits[i]) - target[i]);
    }
}

static void cpu_dropout_fwd(tb_backend *be, int64_t n, float p, const uint32_t key[2],
                            uint64_t *counter_ptr, const float *x, float *y, float *mask)
{
    const uint64_t counter = *counter_ptr;
    *counter_ptr += (uint64_t)((n + 3) / 4);
    const float keep_scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n > 16384)
    for (int64_t blk = 0; blk < (n + 3) / 4; blk++) {
        uint32_t bits[4];
        tb_philox4x32(key, counter + (uint64_t)blk, bits);
        for (int lane = 0; lane < 4; lane++) {
            int64_t i = blk * 4 + lane;
            if (i >= n) break;
            float m = tb_u32_to_unit(bits[lane]) >= p ? keep_scale : 0.0f;
            mask[i] = m;
            y[i] = x[i] * m;
        }
    }
}

static void cpu_dropout_bwd(tb_backend *be, int64_t n, const float *mask, const float *dy,
                            float *dx)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * mask[i];
}

void tb_cpu_register_loss(tb_backend_ops *ops)
{
    ops->softmax_xent_fwd = cpu_softmax_xent_fwd;
    ops->softmax_xent_bwd = cpu_softmax_xent_bwd;
    ops->mse_fwd = cpu_mse_fwd;
    ops->mse_bwd = cpu_mse_bwd;
    ops->bce_fwd = cpu_bce_fwd;
    ops->bce_bwd = cpu_bce_bwd;
    ops->dropout_fwd = cpu_dropout_fwd;
    ops->dropout_bwd = cpu_dropout_bwd;
}

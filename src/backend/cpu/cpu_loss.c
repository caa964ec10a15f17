/* cpu_loss.c: loss functions and dropout on the CPU. */
#include "backend/cpu/cpu.h"

#include <math.h>

#include "trainbench/rng.h"

#ifdef TB_CPU_VEC_W
/* The three row loops in cpu_vec.h's vectors, for both widths: with AVX2, GCC's vectorisation
 * of the scalar loops below took the WordNet step's softmax cross-entropy to 13% of it. */
enum { W = TB_CPU_VEC_W };

/* A row's max logit (a NaN is never chosen: it shows in the sums instead; max takes its
 * second operand where either is NaN). */
static float row_max(int c, const float *z)
{
    const tb_vf ninf = tb_vec_set1(-INFINITY);
    tb_vf m = ninf;
    for (int j = 0; j < c; j += W) m = tb_vec_max(tb_vec_load_or(z + j, c - j, ninf), m);
    return tb_vec_reduce_max(m);
}

/* sum_j exp(z_j - zmax) and sum_j (z_j - zmax): float sums over blocks of 256 classes, added
 * in double. */
static void row_sums(int c, const float *z, float zmax, double *sum, double *sum_z)
{
    const tb_vf vmax = tb_vec_set1(zmax);
    double s = 0, sz = 0;
    for (int j0 = 0; j0 < c; j0 += 256) {
        const int j1 = j0 + 256 < c ? j0 + 256 : c;
        tb_vf vs = tb_vec_zero(), vz = tb_vec_zero();
        for (int j = j0; j < j1; j += W) {
            const int n = j1 - j;
            const tb_vf x = tb_vec_keep_n(tb_vec_sub(tb_vec_load_n(z + j, n), vmax), n);
            vs = tb_vec_add(vs, tb_vec_keep_n(tb_cpu_vexp(x), n));
            vz = tb_vec_add(vz, x);
        }
        s += tb_vec_reduce_add(vs);
        sz += tb_vec_reduce_add(vz);
    }
    *sum = s;
    *sum_z = sz;
}

/* d (+)= scale (exp(z - zmax) inv - off) over a row. */
static void row_grad(int c, const float *z, float zmax, float inv, float scale, float off,
                     float *d, bool acc)
{
    const tb_vf vmax = tb_vec_set1(zmax), vinv = tb_vec_set1(inv);
    const tb_vf vscale = tb_vec_set1(scale), voff = tb_vec_set1(off);
    for (int j = 0; j < c; j += W) {
        const int n = c - j;
        const tb_vf e = tb_cpu_vexp(tb_vec_sub(tb_vec_load_n(z + j, n), vmax));
        tb_vf g = tb_vec_mul(vscale, tb_vec_sub(tb_vec_mul(e, vinv), voff));
        if (acc) g = tb_vec_add(g, tb_vec_load_n(d + j, n));
        tb_vec_store_n(d + j, n, g);
    }
}

#else

static float row_max(int c, const float *z)
{
    float zmax = z[0];
#pragma omp simd reduction(max : zmax)
    for (int j = 1; j < c; j++) zmax = z[j] > zmax ? z[j] : zmax;
    return zmax;
}

static void row_sums(int c, const float *z, float zmax, double *sum, double *sum_z)
{
    double s = 0, sz = 0;
    for (int j0 = 0; j0 < c; j0 += 256) {
        const int j1 = j0 + 256 < c ? j0 + 256 : c;
        float bs = 0, bz = 0;
#pragma omp simd reduction(+ : bs, bz)
        for (int j = j0; j < j1; j++) {
            bs += tb_cpu_expf(z[j] - zmax);
            bz += z[j] - zmax;
        }
        s += bs;
        sz += bz;
    }
    *sum = s;
    *sum_z = sz;
}

static void row_grad(int c, const float *z, float zmax, float inv, float scale, float off,
                     float *d, bool acc)
{
    if (acc) {
#pragma omp simd
        for (int j = 0; j < c; j++) d[j] += scale * (tb_cpu_expf(z[j] - zmax) * inv - off);
    } else {
#pragma omp simd
        for (int j = 0; j < c; j++) d[j] = scale * (tb_cpu_expf(z[j] - zmax) * inv - off);
    }
}

#endif

/* One row of the softmax cross-entropy: its loss (1 - smoothing) (-log p_y) + smoothing
 * mean_j (-log p_j) in double, p = softmax(z), and in st[0], st[1] the row's max z and
 * 1 / sum_j exp(z_j - max): all the backward pass needs to recompute p (no [N, C] matrix of
 * probabilities is written, nor normalised in a second pass). */
static double xent_row(int c, const float *z, int32_t label, float smoothing, float *st)
{
    const float zmax = row_max(c, z);
    double sum, sum_z;
    row_sums(c, z, zmax, &sum, &sum_z);
    st[0] = zmax;
    st[1] = (float)(1.0 / sum);
    /* -log p_y = log_sum - (z_y - zmax); the smoothed part averages -log p over classes */
    const double log_sum = log(sum);
    const double nll = log_sum - (z[label] - zmax);
    const double uniform = log_sum - sum_z / c;
    return (1.0 - smoothing) * nll + smoothing * uniform;
}

/* The rows of one softmax cross-entropy and where their statistics go. */
typedef struct {
    int c;
    const float *logits;
    const int32_t *labels;
    float smoothing;
    float *stats;
} xent_rows;

static double xent_part(const void *ctx, int64_t i0, int64_t i1)
{
    const xent_rows *r = ctx;
    double s = 0;
    for (int64_t i = i0; i < i1; i++)
        s += xent_row(r->c, r->logits + i * r->c, r->labels[i], r->smoothing, r->stats + 2 * i);
    return s;
}

/* The mean of the rows' losses, rows in fixed parts of at least 16 (tb_cpu_sum_in_parts): the
 * same bits at any thread count. */
static void cpu_softmax_xent_fwd(tb_backend *be, int n, int c, const float *logits,
                                 const int32_t *labels, float smoothing, float *stats,
                                 float *loss)
{
    const xent_rows rows = {c, logits, labels, smoothing, stats};
    *loss = (float)(tb_cpu_sum_in_parts(be, n, 16, (int64_t)n * c > 16384, xent_part, &rows) /
                    n);
}

/* dlogits (+)= dloss / n (p - target), p = exp(z - max) / sum recomputed from the logits and
 * the forward pass's row statistics: one read of the logits and one write of the gradient. */
static void cpu_softmax_xent_bwd(tb_backend *be, int n, int c, const float *logits,
                                 const float *stats, const int32_t *labels, float smoothing,
                                 const float *dloss, float *dlogits, bool dx_acc)
{
    const float scale = *dloss / (float)n, off = smoothing / (float)c;
#pragma omp parallel for num_threads(be->threads) schedule(static) if ((int64_t)n * c > 16384)
    for (int i = 0; i < n; i++) {
        const float *z = logits + (int64_t)i * c;
        const float zmax = stats[2 * i], inv = stats[2 * i + 1];
        float *d = dlogits + (int64_t)i * c;
        row_grad(c, z, zmax, inv, scale, off, d, dx_acc);
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

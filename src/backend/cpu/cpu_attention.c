/* cpu_attention.c: embedding gather/scatter and causal multi-head self-attention (OpenBLAS per
 * (batch, head) pair, OpenMP across pairs). */
#include "backend/cpu/cpu.h"

#include <math.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- embedding ------------------------------------------------------------------------------ */

/* y[i, :] = table[idx[i], :]; indices were checked by the op. */
static void cpu_embedding_fwd(tb_backend *be, int64_t n, int64_t dim, const float *table,
                              const int32_t *idx, float *y)
{
    (void)be;
#pragma omp parallel for schedule(static) if (n * dim > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *src = table + (int64_t)idx[i] * dim;
        float *dst = y + i * dim;
        for (int64_t d = 0; d < dim; d++)
            dst[d] = src[d];
    }
}

/* Columns of the table one thread owns in the backward pass. */
#define TB_EMB_COLS 64

/* dtable[idx[i], :] += dy[i, :]. Rows repeat, so threads split the embedding dimension into
 * column blocks: each block is owned by one thread, which visits every i in order. No two
 * threads write the same element and the summation order is fixed (deterministic). */
static void cpu_embedding_bwd(tb_backend *be, int64_t n, int64_t dim, const int32_t *idx,
                              const float *dy, float *dtable)
{
    (void)be;
    int64_t blocks = (dim + TB_EMB_COLS - 1) / TB_EMB_COLS;
#pragma omp parallel for schedule(static) if (blocks > 1 && n * dim > 32768)
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t d0 = blk * TB_EMB_COLS;
        int64_t d1 = d0 + TB_EMB_COLS < dim ? d0 + TB_EMB_COLS : dim;
        for (int64_t i = 0; i < n; i++) {
            float *dst = dtable + (int64_t)idx[i] * dim;
            const float *src = dy + i * dim;
            for (int64_t d = d0; d < d1; d++)
                dst[d] += src[d];
        }
    }
}

/* ---- causal self-attention ------------------------------------------------------------------
 * For one (b, h) pair, with row stride 3C in qkv and C in y:
 *   Q = qkv[b, :, h hd : (h+1) hd], K = the same + C, V = the same + 2C   (each [T, hd])
 *   S = Q K^T / sqrt(hd); P = softmax of each row t over columns 0..t (zeros above); Y = P V.
 * Backward (accumulating into dQ, dK, dV):
 *   dV += P^T dY; dP = dY V^T; dS = P * (dP - rowsum(dP * P)); dQ += dS K / sqrt(hd);
 *   dK += dS^T Q / sqrt(hd). */

/* Threads working on the (b, h) pairs: at most the backend's budget and the number of pairs. */
static int attention_threads(const tb_backend *be, int b, int heads)
{
    int64_t pairs = (int64_t)b * heads;
    int threads = be->threads > 0 ? be->threads : 1;
    return pairs < threads ? (int)(pairs > 0 ? pairs : 1) : threads;
}

/* Backward needs one [T, T] buffer (dP, then dS) per thread. */
static size_t cpu_attention_workspace(tb_backend *be, int b, int t, int c, int heads)
{
    (void)c;
    return (size_t)attention_threads(be, b, heads) * (size_t)t * (size_t)t * sizeof(float);
}

static int thread_index(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static void cpu_attention_fwd(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                              float *y, float *att, void *workspace)
{
    (void)workspace;
    const int hd = c / heads, c3 = 3 * c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t pairs = (int64_t)b * heads;
    const int threads = attention_threads(be, b, heads);
    /* one pair at a time lets OpenBLAS thread each product itself */
#pragma omp parallel for schedule(static) num_threads(threads) if (pairs > 1)
    for (int64_t bh = 0; bh < pairs; bh++) {
        const int64_t bi = bh / heads, h = bh % heads;
        const float *q = qkv + bi * t * c3 + h * hd, *k = q + c, *v = q + 2 * c;
        float *p = att + bh * t * t;
        float *yo = y + bi * t * c + h * hd;
        /* S = scale Q K^T (the upper triangle is computed and then overwritten) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, scale, q, c3, k, c3, 0.0f, p,
                    t);
        for (int64_t i = 0; i < t; i++) {
            float *row = p + i * t;
            float mx = row[0];
#pragma omp simd reduction(max : mx)
            for (int64_t j = 1; j <= i; j++)
                mx = row[j] > mx ? row[j] : mx;
            float sum = 0.0f; /* at most t terms in [0, 1], one of them 1: float suffices */
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j <= i; j++) {
                row[j] = tb_cpu_expf(row[j] - mx);
                sum += row[j];
            }
            const float inv = 1.0f / sum;
#pragma omp simd
            for (int64_t j = 0; j <= i; j++)
                row[j] *= inv;
            for (int64_t j = i + 1; j < t; j++)
                row[j] = 0.0f;
        }
        /* Y = P V */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, v, c3, 0.0f,
                    yo, c);
    }
}

static void cpu_attention_bwd(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                              const float *att, const float *dy, float *dqkv, void *workspace)
{
    const int hd = c / heads, c3 = 3 * c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t pairs = (int64_t)b * heads;
    const int threads = attention_threads(be, b, heads);
    float *scratch = workspace;
#pragma omp parallel for schedule(static) num_threads(threads) if (pairs > 1)
    for (int64_t bh = 0; bh < pairs; bh++) {
        const int64_t bi = bh / heads, h = bh % heads;
        const int64_t off = bi * t * c3 + h * hd;
        const float *q = qkv + off, *k = q + c, *v = q + 2 * c;
        float *dq = dqkv + off, *dk = dq + c, *dv = dq + 2 * c;
        const float *p = att + bh * t * t;
        const float *dyo = dy + bi * t * c + h * hd;
        float *ds = scratch + (int64_t)thread_index() * t * t;
        /* dV += P^T dY */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, dyo, c, 1.0f, dv,
                    c3);
        /* dP = dY V^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, 1.0f, dyo, c, v, c3, 0.0f,
                    ds, t);
        /* dS = P * (dP - sum_j dP P), causal part only (P is zero above the diagonal) */
        for (int64_t i = 0; i < t; i++) {
            float *row = ds + i * t;
            const float *prow = p + i * t;
            float fdot = 0.0f;
#pragma omp simd reduction(+ : fdot)
            for (int64_t j = 0; j <= i; j++)
                fdot += row[j] * prow[j];
#pragma omp simd
            for (int64_t j = 0; j <= i; j++)
                row[j] = prow[j] * (row[j] - fdot);
            for (int64_t j = i + 1; j < t; j++)
                row[j] = 0.0f;
        }
        /* dQ += scale dS K; dK += scale dS^T Q */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, scale, ds, t, k, c3, 1.0f,
                    dq, c3);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, scale, ds, t, q, c3, 1.0f,
                    dk, c3);
    }
}

void tb_cpu_register_attention(tb_backend_ops *ops)
{
    ops->embedding_fwd = cpu_embedding_fwd;
    ops->embedding_bwd = cpu_embedding_bwd;
    ops->attention_workspace = cpu_attention_workspace;
    ops->attention_fwd = cpu_attention_fwd;
    ops->attention_bwd = cpu_attention_bwd;
}

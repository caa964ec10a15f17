/* cuda_attention.cu: embedding gather/scatter and causal multi-head self-attention on the GPU.
 *
 * Attention follows src/backend/cpu/cpu_attention.c: for each batch element, the heads are one
 * strided batched cuBLAS product (head h of Q, K, V starts h*hd floats into a row of qkv), and
 * a kernel with one block per score row does the causal softmax and its backward pass.
 * The workspace holds dP/dS for all [B, heads, T, T] rows. */
#include "backend/cuda/cuda_internal.h"

/* ---- embedding ------------------------------------------------------------------------------ */

/* The op checks indices on the host, except in a graph replay: an index outside [0, vocab)
 * gives a row of NaN there (the loss shows it) instead of a read past the table. */
static void cuda_embedding_fwd(tb_backend *be, int64_t n, int64_t dim, int64_t vocab,
                               const float *table, const int32_t *idx, float *y)
{
    tb_cuda_for_each(be, n * dim, [=] __device__(int64_t e) {
        const int32_t row = idx[e / dim];
        y[e] = row >= 0 && row < vocab ? table[(int64_t)row * dim + e % dim] : NAN;
    });
}

/* dtable[idx[i], :] += dy[i, :]. One thread per column visits every i in order: no two threads
 * write the same element and the summation order is fixed (deterministic, as on the CPU). */
static void cuda_embedding_bwd(tb_backend *be, int64_t n, int64_t dim, int64_t vocab,
                               const int32_t *idx, const float *dy, float *dtable)
{
    tb_cuda_for_each(be, dim, [=] __device__(int64_t d) {
        for (int64_t i = 0; i < n; i++) {
            const int32_t row = idx[i];
            if (row >= 0 && row < vocab) dtable[(int64_t)row * dim + d] += dy[i * dim + d];
        }
    });
}

/* ---- causal self-attention ------------------------------------------------------------------ */

static size_t cuda_attention_workspace(tb_backend *be, int b, int t, int c, int heads)
{
    (void)be;
    (void)c;
    return (size_t)b * (size_t)heads * (size_t)t * (size_t)t * sizeof(float);
}

/* Row r = (bh, i) of the scores: softmax over columns 0..i, zeros above the diagonal. */
static __global__ void causal_softmax_kernel(int t, float *att)
{
    const int64_t r = blockIdx.x;
    const int i = (int)(r % t);
    float *row = att + r * t;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) mx = fmaxf(mx, row[j]);
    mx = tb_cuda_block_max(mx);
    double sum = 0;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) {
        float e = expf(row[j] - mx);
        row[j] = e;
        sum += e;
    }
    const float inv = (float)(1.0 / tb_cuda_block_sum(sum));
    for (int j = threadIdx.x; j < t; j += blockDim.x) row[j] = j <= i ? row[j] * inv : 0.0f;
}

/* dS = P * (dP - sum_j dP P) over the causal part, zeros above the diagonal. */
static __global__ void causal_softmax_bwd_kernel(int t, const float *att, float *ds)
{
    const int64_t r = blockIdx.x;
    const int i = (int)(r % t);
    const float *p = att + r * t;
    float *row = ds + r * t;
    double dot = 0;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) dot += (double)row[j] * p[j];
    const float fdot = (float)tb_cuda_block_sum(dot);
    for (int j = threadIdx.x; j < t; j += blockDim.x) row[j] = j <= i ? p[j] * (row[j] - fdot) : 0.0f;
}

static void cuda_attention_fwd(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                               float *y, float *att, void *workspace)
{
    (void)workspace;
    const int hd = c / heads, c3 = 3 * c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t tt = (int64_t)t * t;
    for (int bi = 0; bi < b; bi++) {
        const float *q = qkv + (int64_t)bi * t * c3, *k = q + c;
        float *p = att + (int64_t)bi * heads * tt;
        /* S = scale Q K^T for every head */
        tb_cuda_gemm_batched(be, false, true, t, t, hd, scale, q, c3, hd, k, c3, hd, 0.0f, p, t,
                             tt, heads);
    }
    if ((int64_t)b * heads * t > 0) {
        causal_softmax_kernel<<<(unsigned)((int64_t)b * heads * t), TB_CUDA_THREADS, 0,
                                tb_cu(be)->stream>>>(t, att);
        TB_CUDA_LAUNCHED(be);
    }
    for (int bi = 0; bi < b; bi++) {
        const float *v = qkv + (int64_t)bi * t * c3 + 2 * c;
        const float *p = att + (int64_t)bi * heads * tt;
        /* Y = P V, head h into columns h*hd of y */
        tb_cuda_gemm_batched(be, false, false, t, hd, t, 1.0f, p, t, tt, v, c3, hd, 0.0f,
                             y + (int64_t)bi * t * c, c, hd, heads);
    }
}

static void cuda_attention_bwd(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                               const float *att, const float *dy, float *dqkv, bool dqkv_acc,
                               void *workspace)
{
    const float beta = dqkv_acc ? 1.0f : 0.0f; /* cuBLAS never reads C for beta 0 */
    const int hd = c / heads, c3 = 3 * c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t tt = (int64_t)t * t;
    float *ds_all = (float *)workspace;
    for (int bi = 0; bi < b; bi++) {
        const int64_t off = (int64_t)bi * t * c3;
        const float *v = qkv + off + 2 * c;
        float *dv = dqkv + off + 2 * c;
        const float *p = att + (int64_t)bi * heads * tt;
        const float *dyo = dy + (int64_t)bi * t * c;
        float *ds = ds_all + (int64_t)bi * heads * tt;
        /* dV (+)= P^T dY; dP = dY V^T */
        tb_cuda_gemm_batched(be, true, false, t, hd, t, 1.0f, p, t, tt, dyo, c, hd, beta, dv, c3,
                             hd, heads);
        tb_cuda_gemm_batched(be, false, true, t, t, hd, 1.0f, dyo, c, hd, v, c3, hd, 0.0f, ds, t,
                             tt, heads);
    }
    if ((int64_t)b * heads * t > 0) {
        causal_softmax_bwd_kernel<<<(unsigned)((int64_t)b * heads * t), TB_CUDA_THREADS, 0,
                                    tb_cu(be)->stream>>>(t, att, ds_all);
        TB_CUDA_LAUNCHED(be);
    }
    for (int bi = 0; bi < b; bi++) {
        const int64_t off = (int64_t)bi * t * c3;
        const float *q = qkv + off, *k = q + c;
        float *dq = dqkv + off, *dk = dq + c;
        const float *ds = ds_all + (int64_t)bi * heads * tt;
        /* dQ (+)= scale dS K; dK (+)= scale dS^T Q */
        tb_cuda_gemm_batched(be, false, false, t, hd, t, scale, ds, t, tt, k, c3, hd, beta, dq, c3,
                             hd, heads);
        tb_cuda_gemm_batched(be, true, false, t, hd, t, scale, ds, t, tt, q, c3, hd, beta, dk, c3,
                             hd, heads);
    }
}

void tb_cuda_register_attention(tb_backend_ops *ops)
{
    ops->embedding_fwd = cuda_embedding_fwd;
    ops->embedding_bwd = cuda_embedding_bwd;
    ops->attention_workspace = cuda_attention_workspace;
    ops->attention_fwd = cuda_attention_fwd;
    ops->attention_bwd = cuda_attention_bwd;
}

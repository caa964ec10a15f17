/* cuda_internal.h: internal to the CUDA backend: its state, launch helpers shared by the kernel
 * files (element-wise loops, deterministic reductions, block reductions), the row-major gemm
 * wrapper (Philox comes from core/philox.h, shared with the host). Only .cu files under
 * src/backend/cuda/ include it.
 *
 * Every kernel runs on the backend's one stream, in order, so buffers can be reused as soon as
 * the host has queued the next use; nothing here synchronises except where the interface hands
 * data to the host (download, read_scalar, sum_squares, sync). Launch failures are recorded as
 * the backend's first error (tb_cuda_check) because kernels have no status to return. */
#ifndef TRAINBENCH_CUDA_INTERNAL_H
#define TRAINBENCH_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "backend/backend_impl.h"
#include "core/philox.h" /* the device draws dropout masks with tb_philox4x32_block */
#include "trainbench/rng.h"
}

/* One cached device allocation. A block that was in use when the current graph was captured
 * (graph_ref) may be read by its replays: freeing it retires it (kept, not handed out again)
 * until the graph is replaced or the backend destroyed. */
typedef struct tb_cuda_block {
    void *ptr;
    size_t bytes;
    bool in_use;
    bool graph_ref;
    bool retired;
} tb_cuda_block;

/* Bytes of the cuBLAS workspace set at creation, so cuBLAS never allocates inside a capture
 * (32 MiB, NVIDIA's recommendation for Hopper). */
#define TB_CUDA_BLAS_WORKSPACE ((size_t)32 << 20)
#define TB_CUDA_MAX_RETIRED 16

/* Partial sums of the deterministic reduction: fixed grid, then one block in fixed order. */
#define TB_CUDA_REDUCE_BLOCKS 512
#define TB_CUDA_THREADS 256

typedef struct tb_cuda {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    tb_precision precision;
    /* caching allocator: freed blocks are kept and handed out again for the same size class */
    tb_cuda_block *blocks;
    int n_blocks, cap_blocks;
    size_t live_bytes, cached_bytes;
    /* reduction scratch: TB_CUDA_REDUCE_BLOCKS partials and one result (double) */
    double *partials;
    double *result;
    /* per-row scratch (grows; freed with the backend) */
    void *rows;
    size_t rows_bytes;
    /* outgrown per-row scratch buffers a graph may still read (freed with the backend) */
    void *retired_rows[TB_CUDA_MAX_RETIRED];
    int n_retired_rows;
    void *blas_workspace;
    /* CUDA graph of a captured step */
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    const char *capture_violation; /* the first host-side call made while capturing, or NULL */
    cudaError_t first_error; /* sticky: the first failure of an asynchronous call */
} tb_cuda;

static inline tb_cuda *tb_cu(tb_backend *be) { return (tb_cuda *)be->impl; }

/* Records the first CUDA failure (asynchronous calls have no status to return). */
void tb_cuda_check(tb_backend *be, cudaError_t e);
void tb_cuda_check_blas(tb_backend *be, cublasStatus_t s);
#define TB_CUDA_LAUNCHED(be) tb_cuda_check((be), cudaGetLastError())

/* Device scratch for per-row values; valid until the next call (stream order keeps it safe). */
void *tb_cuda_rows_scratch(tb_backend *be, size_t bytes);

/* True (and the call `what` recorded as the capture's violation) while a graph is being
 * captured: entries that hand data to the host or wait for the stream call it and do nothing,
 * and tb_backend_capture_end then fails naming the call. */
bool tb_cuda_refused_in_capture(tb_backend *be, const char *what);

/* Row-major C[M,N] = alpha op(A) op(B) + beta C, as the interface's gemm (cublas is column-major:
 * C^T = op(B)^T op(A)^T, so the operands swap places). Honours the backend's precision. */
void tb_cuda_gemm(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
void tb_cuda_gemm_batched(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                          const float *a, int lda, int64_t sa, const float *b, int ldb, int64_t sb,
                          float beta, float *c, int ldc, int64_t sc, int batch);

/* ---- launch helpers --------------------------------------------------------------------------- */

static inline unsigned tb_cuda_grid(int64_t n)
{
    int64_t g = (n + TB_CUDA_THREADS - 1) / TB_CUDA_THREADS;
    if (g < 1) g = 1;
    if (g > 65536) g = 65536; /* the kernels loop with a grid stride */
    return (unsigned)g;
}

template <class F> __global__ void tb_cuda_for_each_kernel(int64_t n, F f)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        f(i);
}

/* Runs f(i) for i in [0, n) on the stream. f is a __device__ lambda (nvcc --extended-lambda):
 * adding an element-wise kernel (an optimizer update, say) is one call. */
template <class F> static void tb_cuda_for_each(tb_backend *be, int64_t n, F f)
{
    if (n <= 0) return;
    tb_cuda_for_each_kernel<<<tb_cuda_grid(n), TB_CUDA_THREADS, 0, tb_cu(be)->stream>>>(n, f);
    TB_CUDA_LAUNCHED(be);
}

/* Sum of v over the block's threads, in a fixed order; every thread gets the result. */
template <class T> __device__ T tb_cuda_block_sum(T v)
{
    __shared__ T shared[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    T s = 0;
    for (int w = 0; w < warps; w++) s += shared[w];
    return s;
}

__device__ inline float tb_cuda_block_max(float v)
{
    __shared__ float shared[32];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    float m = shared[0];
    for (int w = 1; w < warps; w++) m = fmaxf(m, shared[w]);
    return m;
}

template <class F> __global__ void tb_cuda_reduce_partials(int64_t n, F f, double *partials)
{
    double s = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        s += f(i);
    s = tb_cuda_block_sum(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

/* The finishing pass: out_f (float) or out_d (double) = scale * sum of the partials. */
static __global__ void tb_cuda_reduce_finish(const double *partials, int count, double scale,
                                             float *out_f, double *out_d)
{
    double s = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
    s = tb_cuda_block_sum(s) * scale;
    if (threadIdx.x == 0) {
        if (out_f) *out_f = (float)s;
        if (out_d) *out_d = s;
    }
}

/* Sum over i in [0, n) of f(i) (double), times scale, written to the device float *out_f and/or
 * double *out_d. Deterministic: the grid and the summation order depend only on n. */
template <class F>
static void tb_cuda_reduce(tb_backend *be, int64_t n, F f, double scale, float *out_f,
                           double *out_d)
{
    tb_cuda *cu = tb_cu(be);
    int64_t blocks = (n + TB_CUDA_THREADS - 1) / TB_CUDA_THREADS;
    if (blocks < 1) blocks = 1;
    if (blocks > TB_CUDA_REDUCE_BLOCKS) blocks = TB_CUDA_REDUCE_BLOCKS;
    tb_cuda_reduce_partials<<<(unsigned)blocks, TB_CUDA_THREADS, 0, cu->stream>>>(n, f,
                                                                                 cu->partials);
    TB_CUDA_LAUNCHED(be);
    tb_cuda_reduce_finish<<<1, TB_CUDA_THREADS, 0, cu->stream>>>(cu->partials, (int)blocks, scale,
                                                                 out_f, out_d);
    TB_CUDA_LAUNCHED(be);
}

/* ---- registration, one per kernel file ------------------------------------------------------- */
void tb_cuda_register_dense(tb_backend_ops *ops);     /* cuda_dense.cu */
void tb_cuda_register_loss(tb_backend_ops *ops);      /* cuda_loss.cu */
void tb_cuda_register_conv(tb_backend_ops *ops);      /* cuda_conv.cu */
void tb_cuda_register_norm(tb_backend_ops *ops);      /* cuda_norm.cu */
void tb_cuda_register_attention(tb_backend_ops *ops); /* cuda_attention.cu */
void tb_cuda_register_optim(tb_backend_ops *ops);     /* cuda_optim.cu */
void tb_cuda_register_optim_elem(tb_backend_ops *ops); /* cuda_optim_elem.cu */

#endif

/* cuda_backend.cu: the CUDA backend: device selection, one stream, the cuBLAS handle, a caching
 * allocator over cudaMalloc, host transfers, synchronisation, the row-major gemm wrappers and
 * CUDA-graph capture of a step. The kernels live in the other cuda_*.cu files. */
#include "backend/cuda/cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ----------------------------------------------------------------------------------- */

void tb_cuda_check(tb_backend *be, cudaError_t e)
{
    tb_cuda *cu = tb_cu(be);
    if (e != cudaSuccess && cu->first_error == cudaSuccess) cu->first_error = e;
}

void tb_cuda_check_blas(tb_backend *be, cublasStatus_t s)
{
    if (s != CUBLAS_STATUS_SUCCESS) tb_cuda_check(be, cudaErrorUnknown);
}

/* ---- memory: a caching allocator ---------------------------------------------------------------
 * Sizes round up to 512 bytes (small) or 1/8 of their power of two (large), so a block freed by
 * one step fits the same request of the next. Freed blocks stay cached; a failing cudaMalloc
 * releases the cache and tries once more. Arenas above already reuse their blocks, so the list
 * stays short and a linear scan is enough. */

static size_t size_class(size_t bytes)
{
    if (bytes <= ((size_t)1 << 20)) return (bytes + 511) / 512 * 512;
    size_t p = (size_t)1 << 20;
    while (p < bytes) p <<= 1;
    size_t step = p / 8;
    return (bytes + step - 1) / step * step;
}

static void release_cache(tb_cuda *cu)
{
    int kept = 0;
    for (int i = 0; i < cu->n_blocks; i++) {
        if (cu->blocks[i].in_use) {
            cu->blocks[kept++] = cu->blocks[i];
        } else {
            cudaFree(cu->blocks[i].ptr);
            cu->cached_bytes -= cu->blocks[i].bytes;
        }
    }
    cu->n_blocks = kept;
}

static void *cuda_alloc(tb_backend *be, size_t bytes)
{
    tb_cuda *cu = tb_cu(be);
    size_t want = size_class(bytes ? bytes : 1);
    for (int i = 0; i < cu->n_blocks; i++) {
        tb_cuda_block *b = &cu->blocks[i];
        if (!b->in_use && b->bytes == want) {
            b->in_use = true;
            cu->cached_bytes -= want;
            cu->live_bytes += want;
            return b->ptr;
        }
    }
    if (cu->n_blocks == cu->cap_blocks) {
        int cap = cu->cap_blocks ? 2 * cu->cap_blocks : 64;
        tb_cuda_block *nb = (tb_cuda_block *)realloc(cu->blocks, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        cu->blocks = nb;
        cu->cap_blocks = cap;
    }
    void *p = NULL;
    if (cudaMalloc(&p, want) != cudaSuccess) {
        (void)cudaGetLastError(); /* an allocation failure is reported by the NULL return */
        release_cache(cu);
        if (cudaMalloc(&p, want) != cudaSuccess) {
            (void)cudaGetLastError();
            return NULL;
        }
    }
    cu->blocks[cu->n_blocks++] = (tb_cuda_block){p, want, true, false, false};
    cu->live_bytes += want;
    return p;
}

static void cuda_free(tb_backend *be, void *ptr)
{
    tb_cuda *cu = tb_cu(be);
    for (int i = 0; i < cu->n_blocks; i++) {
        if (cu->blocks[i].ptr == ptr && cu->blocks[i].in_use && !cu->blocks[i].retired) {
            if (cu->blocks[i].graph_ref) { /* the graph may still read it: keep it aside */
                cu->blocks[i].retired = true;
                return;
            }
            cu->blocks[i].in_use = false;
            cu->live_bytes -= cu->blocks[i].bytes;
            cu->cached_bytes += cu->blocks[i].bytes;
            return;
        }
    }
    tb_cuda_check(be, cudaErrorInvalidDevicePointer); /* not ours: a bug above */
}

void *tb_cuda_rows_scratch(tb_backend *be, size_t bytes)
{
    tb_cuda *cu = tb_cu(be);
    if (bytes <= cu->rows_bytes) return cu->rows;
    if (tb_cuda_refused_in_capture(be, "growing the per-row scratch")) return NULL;
    size_t grow = bytes > 2 * cu->rows_bytes ? bytes : 2 * cu->rows_bytes;
    if (cu->rows) {
        tb_cuda_check(be, cudaStreamSynchronize(cu->stream)); /* queued kernels may use it */
        if (cu->graph_exec && cu->n_retired_rows < TB_CUDA_MAX_RETIRED)
            cu->retired_rows[cu->n_retired_rows++] = cu->rows; /* replays may read it */
        else
            cudaFree(cu->rows);
        cu->rows = NULL;
        cu->rows_bytes = 0;
    }
    if (cudaMalloc(&cu->rows, grow) != cudaSuccess) {
        tb_cuda_check(be, cudaGetLastError());
        cu->rows = NULL;
        return NULL;
    }
    cu->rows_bytes = grow;
    return cu->rows;
}

/* ---- transfers --------------------------------------------------------------------------------
 * Both directions wait for the copy: the caller may free or reuse its host buffer as soon as an
 * upload returns (CUDA only promises that for pinned memory if we did not wait), and reads the
 * result of a download next. Copies go on the backend's stream, so they are ordered with the
 * kernels. A training step uploads one batch, so the wait costs little. */

bool tb_cuda_refused_in_capture(tb_backend *be, const char *what)
{
    if (!be->capturing) return false; /* set around the capture by backend.c */
    tb_cuda *cu = tb_cu(be);
    if (!cu->capture_violation) cu->capture_violation = what;
    return true;
}

static void cuda_upload(tb_backend *be, void *dst, const void *host, size_t bytes)
{
    if (!bytes || tb_cuda_refused_in_capture(be, "an upload")) return;
    tb_cuda *cu = tb_cu(be);
    tb_cuda_check(be, cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, cu->stream));
    tb_cuda_check(be, cudaStreamSynchronize(cu->stream));
}

static void cuda_download(tb_backend *be, void *host, const void *src, size_t bytes)
{
    if (!bytes || tb_cuda_refused_in_capture(be, "a download")) return;
    tb_cuda *cu = tb_cu(be);
    tb_cuda_check(be, cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, cu->stream));
    tb_cuda_check(be, cudaStreamSynchronize(cu->stream));
}

static void cuda_copy(tb_backend *be, void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src) return;
    tb_cuda_check(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, tb_cu(be)->stream));
}

/* Waits for every kernel queued so far: timing code calls it before reading the clock. */
static void cuda_sync(tb_backend *be)
{
    if (tb_cuda_refused_in_capture(be, "a sync")) return;
    tb_cuda_check(be, cudaStreamSynchronize(tb_cu(be)->stream));
}

/* Page-locked host memory: copies from it are true DMA, asynchronous to the host. */
static void *cuda_host_alloc(tb_backend *be, size_t bytes)
{
    (void)be;
    void *p = NULL;
    if (cudaMallocHost(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError(); /* reported by the NULL return */
        return NULL;
    }
    return p;
}

static void cuda_host_free(tb_backend *be, void *ptr)
{
    if (ptr) tb_cuda_check(be, cudaFreeHost(ptr));
}

/* ---- gemm ------------------------------------------------------------------------------------ */

static cublasComputeType_t compute_type(const tb_cuda *cu)
{
    switch (cu->precision) {
    case TB_PRECISION_TF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case TB_PRECISION_BF16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    default: return CUBLAS_COMPUTE_32F;
    }
}

void tb_cuda_gemm(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    tb_cuda *cu = tb_cu(be);
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s;
    if (cu->precision == TB_PRECISION_FP32)
        s = cublasSgemm(cu->blas, opb, opa, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc);
    else
        s = cublasGemmEx(cu->blas, opb, opa, n, m, k, &alpha, b, CUDA_R_32F, ldb, a, CUDA_R_32F,
                         lda, &beta, c, CUDA_R_32F, ldc, compute_type(cu), CUBLAS_GEMM_DEFAULT);
    tb_cuda_check_blas(be, s);
}

void tb_cuda_gemm_batched(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                          const float *a, int lda, int64_t sa, const float *b, int ldb, int64_t sb,
                          float beta, float *c, int ldc, int64_t sc, int batch)
{
    if (m <= 0 || n <= 0 || batch <= 0) return;
    tb_cuda *cu = tb_cu(be);
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s;
    if (cu->precision == TB_PRECISION_FP32)
        s = cublasSgemmStridedBatched(cu->blas, opb, opa, n, m, k, &alpha, b, ldb, sb, a, lda, sa,
                                      &beta, c, ldc, sc, batch);
    else
        s = cublasGemmStridedBatchedEx(cu->blas, opb, opa, n, m, k, &alpha, b, CUDA_R_32F, ldb,
                                       sb, a, CUDA_R_32F, lda, sa, &beta, c, CUDA_R_32F, ldc, sc,
                                       batch, compute_type(cu), CUBLAS_GEMM_DEFAULT);
    tb_cuda_check_blas(be, s);
}

/* ---- CUDA graphs ------------------------------------------------------------------------------
 * capture_begin records every kernel and device copy queued on the stream until capture_end
 * into one graph; replay launches it again. Only device work may happen in between: download,
 * upload, read_scalar, sum_squares and sync wait for results that do not exist while capturing,
 * so they do nothing and capture_end fails naming the first of them. Kernel arguments are
 * frozen at capture time, except per-step values in the step block, which captured kernels
 * read from its device mirror (tb_step_device_ref). Blocks in use at capture_end are marked:
 * freeing one later retires it instead of recycling it, so a replay never reads memory that
 * was handed to someone else. */

/* After a successful capture: memory only the previous graph could read is recycled, and
 * everything in use now is protected for the new one. */
static void mark_graph_memory(tb_cuda *cu)
{
    for (int i = 0; i < cu->n_blocks; i++) {
        tb_cuda_block *b = &cu->blocks[i];
        if (b->retired) {
            b->retired = false;
            b->in_use = false;
            cu->live_bytes -= b->bytes;
            cu->cached_bytes += b->bytes;
        }
        b->graph_ref = b->in_use;
    }
    for (int i = 0; i < cu->n_retired_rows; i++) cudaFree(cu->retired_rows[i]);
    cu->n_retired_rows = 0;
}

static tb_status cuda_error_status(tb_error *err, const char *what, cudaError_t e)
{
    return tb_fail(err, TB_ERR_INTERNAL, "CUDA %s failed: %s", what, cudaGetErrorString(e));
}

static tb_status cuda_capture_begin(tb_backend *be, tb_error *err)
{
    tb_cuda *cu = tb_cu(be);
    cudaError_t e = cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) return cuda_error_status(err, "cudaStreamBeginCapture", e);
    cu->capture_violation = NULL;
    return TB_OK;
}

static tb_status cuda_capture_end(tb_backend *be, tb_error *err)
{
    tb_cuda *cu = tb_cu(be);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(cu->stream, &graph);
    if (cu->capture_violation) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return tb_fail(err, TB_ERR_INVALID,
                       "CUDA graph capture: %s was asked for while capturing (a captured step "
                       "must not read back to the host, wait or allocate new scratch)",
                       cu->capture_violation);
    }
    if (e != cudaSuccess) return cuda_error_status(err, "cudaStreamEndCapture", e);
    cudaGraphExec_t exec = NULL;
    e = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        return cuda_error_status(err, "cudaGraphInstantiateWithFlags", e);
    }
    if (cu->graph_exec) cudaGraphExecDestroy(cu->graph_exec);
    if (cu->graph) cudaGraphDestroy(cu->graph);
    cu->graph = graph;
    cu->graph_exec = exec;
    mark_graph_memory(cu);
    return TB_OK;
}

static tb_status cuda_replay(tb_backend *be, tb_error *err)
{
    tb_cuda *cu = tb_cu(be);
    if (!cu->graph_exec) return tb_fail(err, TB_ERR_INVALID, "no CUDA graph has been captured");
    cudaError_t e = cudaGraphLaunch(cu->graph_exec, cu->stream);
    if (e != cudaSuccess) return cuda_error_status(err, "cudaGraphLaunch", e);
    return TB_OK;
}

static tb_status cuda_status(tb_backend *be, tb_error *err)
{
    tb_cuda *cu = tb_cu(be);
    if (cu->first_error == cudaSuccess) return TB_OK;
    return tb_fail(err, TB_ERR_INTERNAL, "a CUDA call failed earlier: %s",
                   cudaGetErrorString(cu->first_error));
}

/* ---- lifetime -------------------------------------------------------------------------------- */

static void cuda_destroy(tb_backend *be)
{
    tb_cuda *cu = tb_cu(be);
    if (!cu) return;
    cudaSetDevice(cu->device);
    if (cu->stream) cudaStreamSynchronize(cu->stream);
    if (cu->graph_exec) cudaGraphExecDestroy(cu->graph_exec);
    if (cu->graph) cudaGraphDestroy(cu->graph);
    for (int i = 0; i < cu->n_blocks; i++) cudaFree(cu->blocks[i].ptr);
    free(cu->blocks);
    if (cu->rows) cudaFree(cu->rows);
    for (int i = 0; i < cu->n_retired_rows; i++) cudaFree(cu->retired_rows[i]);
    if (cu->blas_workspace) cudaFree(cu->blas_workspace);
    if (cu->partials) cudaFree(cu->partials);
    if (cu->blas) cublasDestroy(cu->blas);
    if (cu->stream) cudaStreamDestroy(cu->stream);
    free(cu);
    be->impl = NULL;
}

static const char *precision_name(tb_precision p)
{
    switch (p) {
    case TB_PRECISION_TF32: return "tf32 products";
    case TB_PRECISION_BF16: return "bf16 products, fp32 master weights";
    default: return "fp32";
    }
}

extern "C" tb_status tb_cuda_backend_init(tb_backend *be, const tb_backend_config *config,
                                          tb_error *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tb_fail(err, TB_ERR_NO_DEVICE, "no CUDA device: cudaGetDeviceCount failed: %s",
                       cudaGetErrorString(e));
    }
    if (count == 0)
        return tb_fail(err, TB_ERR_NO_DEVICE, "no CUDA device: the driver reports 0 GPUs");
    if (config->device_index < 0 || config->device_index >= count)
        return tb_fail(err, TB_ERR_NO_DEVICE,
                       "no CUDA device with index %d (this machine has %d, numbered from 0)",
                       config->device_index, count);
    if ((int)config->precision < TB_PRECISION_FP32 || config->precision > TB_PRECISION_BF16)
        return tb_fail(err, TB_ERR_INVALID, "unknown precision %d", (int)config->precision);
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, config->device_index);
    if (e == cudaSuccess) e = cudaSetDevice(config->device_index);
    if (e != cudaSuccess)
        return tb_fail(err, TB_ERR_NO_DEVICE, "CUDA device %d cannot be used: %s",
                       config->device_index, cudaGetErrorString(e));
    tb_cuda *cu = (tb_cuda *)calloc(1, sizeof *cu);
    if (!cu) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the CUDA backend state");
    cu->device = config->device_index;
    cu->precision = config->precision;
    be->impl = cu;
    tb_status st = TB_OK;
    const char *what = NULL;
    if ((e = cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking)) != cudaSuccess)
        what = "cudaStreamCreate";
    else if ((e = cudaMalloc((void **)&cu->partials,
                             (TB_CUDA_REDUCE_BLOCKS + 1) * sizeof(double))) != cudaSuccess)
        what = "cudaMalloc of the reduction scratch";
    if (what) {
        st = tb_fail(err, e == cudaErrorMemoryAllocation ? TB_ERR_NOMEM : TB_ERR_NO_DEVICE,
                     "CUDA device %d: %s failed: %s", cu->device, what, cudaGetErrorString(e));
    } else {
        cu->result = cu->partials + TB_CUDA_REDUCE_BLOCKS;
        cublasStatus_t bs = cublasCreate(&cu->blas);
        if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(cu->blas, cu->stream);
        /* FP32 stays exact float32 (no silent TF32); the other precisions ask per call */
        if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetMathMode(cu->blas, CUBLAS_DEFAULT_MATH);
        /* a fixed workspace: cuBLAS then allocates nothing inside a graph capture (without
         * one, CUDA 12.2+ cuBLAS allocates asynchronously, which works too) */
        if (bs == CUBLAS_STATUS_SUCCESS &&
            cudaMalloc(&cu->blas_workspace, TB_CUDA_BLAS_WORKSPACE) == cudaSuccess)
            bs = cublasSetWorkspace(cu->blas, cu->blas_workspace, TB_CUDA_BLAS_WORKSPACE);
        else
            (void)cudaGetLastError();
        if (bs != CUBLAS_STATUS_SUCCESS)
            st = tb_fail(err, TB_ERR_NO_DEVICE, "CUDA device %d: cuBLAS initialisation failed: %s",
                         cu->device, cublasGetStatusString(bs));
    }
    if (st != TB_OK) {
        cuda_destroy(be);
        return st;
    }
    be->device = TB_DEVICE_CUDA;
    be->name = "cuda";
    be->threads = 1;
    snprintf(be->description, sizeof be->description,
             "cuda:%d %.80s, %.1f GiB, compute capability %d.%d, %d SMs, %s", cu->device, prop.name,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), prop.major, prop.minor,
             prop.multiProcessorCount, precision_name(cu->precision));
    memset(&be->ops, 0, sizeof be->ops);
    be->ops.alloc = cuda_alloc;
    be->ops.free = cuda_free;
    be->ops.upload = cuda_upload;
    be->ops.download = cuda_download;
    be->ops.copy = cuda_copy;
    be->ops.sync = cuda_sync;
    be->ops.capture_begin = cuda_capture_begin;
    be->ops.capture_end = cuda_capture_end;
    be->ops.replay = cuda_replay;
    be->ops.status = cuda_status;
    be->ops.host_alloc = cuda_host_alloc;
    be->ops.host_free = cuda_host_free;
    be->ops.gemm = tb_cuda_gemm;
    be->ops.gemm_batched = tb_cuda_gemm_batched;
    tb_cuda_register_dense(&be->ops);
    tb_cuda_register_loss(&be->ops);
    tb_cuda_register_conv(&be->ops);
    tb_cuda_register_norm(&be->ops);
    tb_cuda_register_attention(&be->ops);
    tb_cuda_register_optim(&be->ops);
    tb_cuda_register_optim_elem(&be->ops);
    be->destroy = cuda_destroy;
    return TB_OK;
}

/* backend.h: where tensors live and who computes on them.
 *
 * A backend (CPU with BLAS + OpenMP; CUDA when built with it) owns device memory and implements
 * every kernel the engine needs behind one interface (src/backend/backend_impl.h). Ops and layers
 * call the interface and never test which backend they run on. */
#ifndef TRAINBENCH_BACKEND_H
#define TRAINBENCH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tb_device {
    TB_DEVICE_CPU = 0,
    TB_DEVICE_CUDA = 1,
} tb_device;

typedef struct tb_backend tb_backend; /* opaque */

/* Arithmetic of matrix products (gemm, convolution, attention). Parameters, gradients, optimizer
 * state and every other kernel stay float32 whatever is chosen, so BF16 means "bf16 products
 * with fp32 master weights". The CPU backend computes in FP32 only. */
typedef enum tb_precision {
    TB_PRECISION_FP32 = 0, /* float32 products (default) */
    TB_PRECISION_TF32,     /* CUDA: TF32 tensor cores, float32 accumulation */
    TB_PRECISION_BF16,     /* CUDA: bf16 operands on tensor cores, float32 accumulation */
} tb_precision;

typedef struct tb_backend_config {
    tb_device device;
    int threads;      /* CPU: threads of the backend's kernels; 0 = all cores (below): the
                       * CPUs this process may run on (tb_machine_cpus) */
    int device_index; /* CUDA: which GPU */
    tb_precision precision; /* zero (FP32) unless asked for */
    /* CPU: split each large product into one block of C per thread, as before the dynamic
     * split (kept to measure one against the other in bench/; the same bits either way). By
     * default the threads take a few blocks each in turn, so that a thread descheduled by
     * another process leaves its blocks to the others (docs/SPEED.md "Under contention") */
    bool static_split;
} tb_backend_config;

/* Parses "fp32", "tf32" or "bf16"; TB_ERR_INVALID naming the text otherwise. */
tb_status tb_precision_parse(const char *name, tb_precision *out, tb_error *err);
const char *tb_precision_name(tb_precision precision);

/* Parses "cpu" or "cuda". */
tb_status tb_device_parse(const char *name, tb_device *out, tb_error *err);
const char *tb_device_name(tb_device device);
/* Whether this build has the code for device (CUDA needs a build with TB_WITH_CUDA). */
bool tb_device_compiled(tb_device device);

/* Creates a backend (config NULL: the zeroed config, CPU with all cores). Fails with TB_ERR_UNSUPPORTED if not compiled in and TB_ERR_NO_DEVICE if
 * the device is absent. The caller destroys it after every tensor allocated on it.
 *
 * CPU threads: every parallel region of a CPU backend's kernels runs on its own `threads`
 * (OpenMP num_threads), whatever other backends exist, and creating one leaves the caller's
 * OpenMP settings (omp_get_max_threads) as they were. Its results have the same bits at any
 * thread count (with AVX-512; docs/ENGINE.md says what may differ without it). Called from
 * inside the caller's own parallel region, a kernel runs on that thread alone (nested regions
 * are inactive unless the caller enabled them) and takes paths that need no scratch of the
 * backend's threads (OpenBLAS for products, layer norm's two-pass gradients), whose last bits
 * may differ from a call outside it. One process-wide effect remains: OpenBLAS
 * keeps a single thread count per process, and the first CPU backend created sets it to 1
 * (openblas_set_num_threads(1)); the backend parallelises around its OpenBLAS calls itself.
 * The caller's own OpenBLAS and LAPACK calls then run single-threaded too, and a caller that
 * raises the count again makes the backend's OpenBLAS products (small ones, and all of them
 * without AVX-512) and K-FAC's and Shampoo's LAPACK work threaded, whose last bits then
 * depend on that count. */
tb_status tb_backend_create(const tb_backend_config *config, tb_backend **out, tb_error *err);
void tb_backend_destroy(tb_backend *be);

tb_device tb_backend_device(const tb_backend *be);
const char *tb_backend_name(const tb_backend *be);
/* Threads the backend computes with (CPU) or 1 (devices that manage their own). */
int tb_backend_threads(const tb_backend *be);
/* One line describing the backend: BLAS library and threads, or the GPU's name. */
const char *tb_backend_describe(const tb_backend *be);

/* Floating-point operations done by the backend's matrix products so far (2 m n k per product),
 * for GEMM-efficiency figures. Kernels that multiply matrices internally (attention) are not
 * counted. */
uint64_t tb_backend_gemm_flops(const tb_backend *be);

/* Device memory. Allocations are 64-byte aligned; tb_backend_alloc returns NULL on failure. */
void *tb_backend_alloc(tb_backend *be, size_t bytes);
void tb_backend_free(tb_backend *be, void *ptr);
void tb_backend_upload(tb_backend *be, void *dst_device, const void *src_host, size_t bytes);
void tb_backend_download(tb_backend *be, void *dst_host, const void *src_device, size_t bytes);
/* Waits until all queued work has finished (a no-op on CPU). */
void tb_backend_sync(tb_backend *be);

/* Reports a failure of earlier asynchronous device work (a kernel or copy that failed after the
 * call that queued it returned): TB_OK, or TB_ERR_INTERNAL with the device's message. Always
 * TB_OK on CPU. Call it after tb_backend_sync where a step's result matters. */
tb_status tb_backend_check(tb_backend *be, tb_error *err);

/* CUDA graphs for a step whose shapes do not change. Between tb_backend_capture_begin and
 * tb_backend_capture_end, device work is recorded instead of run; tb_backend_replay runs the
 * recorded work again (asynchronously; sync before reading results). Inside a capture only
 * device work is allowed: no download, no scalar read, no sync, no upload, no new allocation
 * that was not made in an earlier identical step. Every argument (pointers, sizes, learning
 * rate, dropout counter) is frozen at capture, so a trainer must keep inputs in the same device
 * buffers and must not rely on per-step host values. Returns TB_ERR_UNSUPPORTED on backends
 * without graphs (CPU), TB_ERR_INVALID when called out of order. */
/* Whether the backend can capture and replay graphs (cuda: yes; cpu: no). */
bool tb_backend_has_graphs(const tb_backend *be);
tb_status tb_backend_capture_begin(tb_backend *be, tb_error *err);
tb_status tb_backend_capture_end(tb_backend *be, tb_error *err);
tb_status tb_backend_replay(tb_backend *be, tb_error *err);
/* Whether a capture is open (ops then skip host-side checks that would read device memory). */
bool tb_backend_capturing(const tb_backend *be);

/* Per-step scalars: the values a replayed step must not take frozen from its capture (learning
 * rate, optimizer coefficients, dropout counters) live in the backend's step block, 64 KiB of
 * host memory (page-locked on CUDA) with a device mirror on devices. Kernels take them by
 * pointer; while capturing, the CUDA backend records the mirror's address, so a replay reads
 * the values of the latest tb_backend_step_upload.
 *
 * tb_backend_step_alloc returns `bytes` of zeroed, 64-byte aligned host memory in the block,
 * or NULL when the block is full (or its memory cannot be allocated); the pointer stays valid
 * until tb_backend_step_free or the backend's destruction. */
void *tb_backend_step_alloc(tb_backend *be, size_t bytes);
void tb_backend_step_free(tb_backend *be, void *ptr);
/* Copies the block's used part to the device mirror in one transfer (a no-op where kernels
 * read host memory, as on CPU). Call it outside a capture, before the replay that must see the
 * values. TB_ERR_INVALID inside a capture; TB_ERR_INTERNAL if the copy failed. */
tb_status tb_backend_step_upload(tb_backend *be, tb_error *err);

/* Per-product time profile (a diagnostic: which of a step's matrix products run below the
 * machine's ceiling, and by how much the mean call trails the fastest?). While enabled, every
 * product the backend's matrix entries compute (gemm, a gemm with an epilogue, a linear
 * layer's weight gradient, a batch of products) is timed, the backend synchronised before and
 * after it so device work is included, and charged to its entry: one per distinct shape and
 * epilogue. Products a kernel computes inside another op (a convolution's, attention's) are
 * that op's time, not listed here. Sums accumulate until cleared; the first 64 distinct
 * entries are kept and later calls of other shapes are only counted (dropped_calls). */
typedef struct tb_product_profile {
    bool trans_a, trans_b;
    int m, n, k;
    int batch;          /* products per call (1 but for batched calls) */
    char epilogue[40];  /* what the call applied besides the product: "bias", "residual", an
                           activation ("gelu") or its derivative ("gelu'"), "bias sums" (a
                           weight gradient's), "acc" (added to C), or "" */
    int64_t calls;
    double total_s, best_s; /* all calls' seconds, and the fastest call's */
} tb_product_profile;

/* Turns the profile on or off (off keeps what was recorded). TB_ERR_NOMEM when the table
 * cannot be allocated. */
tb_status tb_backend_set_product_profiling(tb_backend *be, bool enabled, tb_error *err);
/* Copies up to cap entries, largest total time first; returns the number of entries. */
int tb_backend_product_profile(const tb_backend *be, tb_product_profile *out, int cap);
/* Calls not charged to an entry because the table was full. */
int64_t tb_backend_product_profile_dropped(const tb_backend *be);
void tb_backend_product_profile_clear(tb_backend *be);

#ifdef __cplusplus
}
#endif
#endif

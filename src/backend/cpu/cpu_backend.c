/* cpu_backend.c: the CPU backend: host memory, its own thread count for its OpenMP loops,
 * OpenBLAS single-threaded. */
#define _DEFAULT_SOURCE 1 /* madvise (Linux) */
#include "backend/cpu/cpu.h"
#include "trainbench/machine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* OpenBLAS extensions (declared in its cblas.h; repeated here for other CBLAS headers). */
extern void openblas_set_num_threads(int num_threads);
extern int openblas_get_num_threads(void);
extern char *openblas_get_config(void);

/* Blocks of 4 MB and more (a tape's step memory, parameter buffers) are 2 MB aligned and
 * asked for transparent huge pages: a training step streams through tens of megabytes of
 * activations, and with 4 KB pages its products spent a tenth of their time on TLB misses
 * (transformer step, 1 thread: 66-69 ms -> 55-61 ms, same run). The advice is only advice:
 * where the kernel gives no huge pages, nothing changes. */
#define HUGE_PAGE ((size_t)2 << 20)

static void *cpu_alloc(tb_backend *be, size_t bytes)
{
    (void)be;
    if (bytes > SIZE_MAX - HUGE_PAGE) return NULL; /* a size that overflowed upstream */
    if (bytes >= 2 * HUGE_PAGE) {
        size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void *p = aligned_alloc(HUGE_PAGE, rounded);
#ifdef MADV_HUGEPAGE
        if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
        return p;
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, rounded ? rounded : 64);
}

static void cpu_free(tb_backend *be, void *p)
{
    (void)be;
    free(p);
}

static void cpu_copy(tb_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    if (bytes) memmove(dst, src, bytes);
}

static void cpu_sync(tb_backend *be) { (void)be; }

static void cpu_destroy(tb_backend *be)
{
    tb_cpu_state *st = be->impl;
    if (st) free(st->gemm_work), free(st->gemm_b);
    free(st);
    be->impl = NULL;
}

tb_status tb_cpu_backend_init(tb_backend *be, const tb_backend_config *config, tb_error *err)
{
    const int cores = tb_machine_cpus(); /* "all cores": those this process may run on */
    int threads = config->threads > 0 ? config->threads : cores;
    if (config->threads < 0)
        return tb_fail(err, TB_ERR_INVALID, "threads must be >= 0 (0 = all cores), got %d",
                       config->threads);
    if (config->precision != TB_PRECISION_FP32)
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "the cpu backend computes in fp32 only (precision %s was asked for; "
                       "tf32 and bf16 need the cuda device)",
                       tb_precision_name(config->precision));
    tb_cpu_state *st = calloc(1, sizeof *st);
    if (st)
        st->gemm_work = aligned_alloc(64, sizeof(float) * TB_CPU_GEMM_WORK * (size_t)threads);
    if (!st || !st->gemm_work) {
        if (st) free(st);
        return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the gemm scratch of %d threads (%zu MB)",
                       threads, sizeof(float) * TB_CPU_GEMM_WORK * (size_t)threads >> 20);
    }
    /* The thread count is the backend's own: every parallel region of its kernels names it
     * (num_threads), and the caller's OpenMP settings are left as they were. OpenBLAS keeps
     * one thread count for the whole process, and its threaded products and LAPACK routines
     * split their sums differently at different counts (measured with 0.3.21: a 256 x 100 x
     * 384 sgemm differs in 887 of its elements between 1 and 2 threads). So the backend runs
     * OpenBLAS single-threaded and parallelises around its calls (convolution over images,
     * attention over heads, large products in blocks): the process's OpenBLAS count is set
     * to 1 (backend.h), once, and OpenBLAS's OpenMP build, which sets the calling thread's
     * OpenMP thread count with it, has that restored. */
    if (openblas_get_num_threads() != 1) {
#ifdef _OPENMP
        const int caller = omp_get_max_threads();
#endif
        openblas_set_num_threads(1);
#ifdef _OPENMP
        omp_set_num_threads(caller);
#endif
    }
    st->static_split = config->static_split;
    be->impl = st;
    be->destroy = cpu_destroy;
    be->device = TB_DEVICE_CPU;
    be->name = "cpu";
    be->threads = threads;
    const char *blas = openblas_get_config();
    snprintf(be->description, sizeof be->description, "cpu, %d thread%s, %s", threads,
             threads == 1 ? "" : "s", blas ? blas : "BLAS");
    memset(&be->ops, 0, sizeof be->ops);
    be->ops.alloc = cpu_alloc;
    be->ops.free = cpu_free;
    be->ops.upload = cpu_copy;
    be->ops.download = cpu_copy;
    be->ops.copy = cpu_copy;
    be->ops.sync = cpu_sync;
    tb_cpu_register_dense(&be->ops);
    tb_cpu_register_act(&be->ops);
    tb_cpu_register_loss(&be->ops);
    tb_cpu_register_conv(&be->ops);
    tb_cpu_register_norm(&be->ops);
    tb_cpu_register_attention(&be->ops);
    tb_cpu_register_optim(&be->ops);
    tb_cpu_register_optim_elem(&be->ops);
    return TB_OK;
}

/* cpu_dense.c: matrix products (the own sgemm of cpu_gemm.c, or OpenBLAS) and element-wise
 * kernels (OpenMP). */
#include "backend/cpu/cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include <cblas.h>

/* Products at least this large (m n k) go to the backend's own sgemm (cpu_gemm.c); smaller
 * ones to OpenBLAS, whose small-matrix kernels win there (measured: 64^3 at 0.7x, 96^3 at 1.16x
 * of OpenBLAS, in build/bench_gemm). Products at least GEMM_SPLIT_MIN are split
 * across the threads. */
#define GEMM_OWN_MIN ((int64_t)1 << 19)
#define GEMM_SPLIT_MIN ((int64_t)1 << 22)

/* One thread's product C = alpha op(A) op(B) + beta C with the epilogue ep (and, with ta,
 * A^T's column sums added to at_sums): the backend's sgemm with this thread's scratch slice,
 * or OpenBLAS. */
static void gemm_one(tb_backend *be, int tid, bool own, bool ta, bool tb, int m, int n, int k,
                     float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                     const tb_gemm_epilogue *ep, float *c, int ldc, float *at_sums,
                     bool transposed, const tb_cpu_gemm_shared *shared)
{
    if (own) {
        tb_cpu_sgemm_sums(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc,
                          tb_cpu_gemm_scratch(be, tid), at_sums, transposed, shared);
    } else {
        tb_cpu_sgemm_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc);
        if (at_sums) tb_cpu_col_sums(k, m, a, lda, at_sums);
    }
}

/* Large products are split into blocks of C along its longer side (columns in multiples of
 * the 32-column micro tile), a few per thread, each block a single-threaded product, and the
 * threads take the blocks in turn (dynamic schedule): a thread that starts late, or is
 * descheduled because another process shares its core, leaves its blocks to the threads that
 * run, instead of stalling the product for its static share (docs/SPEED.md "Under
 * contention"). Measured on the 2-core development machine, splitting beats OpenBLAS's own
 * threading on the tall-skinny products of training steps (e.g. 2048 x 512 x 128) and matches
 * it on square ones. With the backend's own kernel each block's result is the same as the
 * unsplit one's, bit for bit, whichever thread computes it (every element is the same dot
 * product in the same order); OpenBLAS (without AVX-512) picks its kernels by shape, so there
 * the last bits may differ between thread counts. */
#define GEMM_BLOCKS_PER_THREAD 4
#define GEMM_BLOCK_MIN ((int64_t)1 << 21) /* multiply-adds: no block smaller (B repacked) */
/* Every block reads all of the operand it does not split: B for a split of C's rows, A for a
 * split of its columns. Where each block would pack it (B; A of a product computed
 * transposed; A^T of one given transposed), the threads pack it once for all blocks
 * (gemm_run). Past this many floats (8 MB: beyond what the caches keep between blocks) each
 * block reads it from memory, so the product is split into one block per thread:
 * wordnet_sparse's output-layer dh = dy w (256 x 128 x 26851, w 13.7 MB) packed w eight
 * times at 2 threads and ran memory-bound. */
#define GEMM_SHARED_MAX ((int64_t)1 << 21)

/* One product's operands, for its blocks. */
typedef struct gemm_args {
    bool own, ta, tb, transposed, rows;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    const tb_gemm_epilogue *ep;
    float *c, *at_sums;
    tb_cpu_gemm_shared shared; /* what every block reads in full, packed once */
    const float *a_rows;       /* or A's rows copied to the stride lda_rows (PACK_A_ROWS) */
    int lda_rows;
} gemm_args;

/* The scratch for the operand packed once (floats, as tb_cpu_gemm_packed_*_floats give)
 * whose every block would pack all of it, or NULL: none needed, or none to be had (each block
 * then packs it itself, as before). Grown outside any parallel region. */
static float *shared_scratch(tb_backend *be, int64_t floats)
{
    tb_cpu_state *st = be->impl;
    if (floats <= 0 || floats > GEMM_SHARED_MAX) return NULL;
    if (floats > st->gemm_b_cap) {
        const int64_t cap = floats < ((int64_t)1 << 16) ? (int64_t)1 << 16 : floats;
        float *p = aligned_alloc(64, (size_t)cap * sizeof(float));
        if (!p) return NULL;
        free(st->gemm_b);
        st->gemm_b = p;
        st->gemm_b_cap = cap;
    }
    return st->gemm_b;
}

/* The operand every block of a split reads in full and would pack itself: B of a split of
 * C's rows; of a split of its columns, A computed transposed (as C^T's B) or A^T's panels.
 * The threads pack it once together instead (the same panels: the same bits). Or, for a
 * split of columns whose A has rows a multiple of 2 KB apart, A's rows copied as they are to
 * a padded stride (PACK_A_ROWS, plan_shared says why). */
typedef enum { PACK_NONE, PACK_B, PACK_A_AS_B, PACK_AT, PACK_A_ROWS } shared_kind;

typedef struct shared_pack {
    shared_kind kind;
    int units;      /* 0: nothing to pack (none shared, or no scratch for it) */
    float *scratch; /* where it goes: g->shared.b or .at, or g->a_rows */
} shared_pack;

#define A_ROWS_UNIT 16 /* rows a unit of the copy */

/* A row stride of at least k floats that crowds no L1 sets (tb_cpu_gemm_crowded_stride). */
static int padded_stride(int k)
{
    const int ld = (k + 15) / 16 * 16 + 16;
    return tb_cpu_gemm_crowded_stride(ld) ? ld + 16 : ld;
}

/* Which operand g's blocks share, with its scratch set in g->shared (or g->a_rows). A split
 * of C's columns whose A (not transposed) has rows a multiple of 2 KB apart gets A's rows
 * copied once to a stride that is not (tb_cpu_gemm_crowded_stride): each block reads all of
 * A, and a block's few columns make it read A in place (cpu_gemm.c, block()), where 12 rows
 * at such a stride crowd a few L1 sets (OpenBLAS, without the own kernel: no copy); the
 * MLP's 128 x 1024 x 1024 input gradient, 8 blocks of 128 columns, ran 8-12% slower than with
 * one block per thread, which copies (harness around gemm_ep, 2 threads, operands from
 * memory). */
static shared_pack plan_shared(tb_backend *be, gemm_args *g)
{
    shared_pack sp = {PACK_NONE, 0, NULL};
    if (!g->own) return sp;
    if (g->rows && !g->transposed) sp.kind = PACK_B;
    else if (!g->rows && g->transposed) sp.kind = PACK_A_AS_B;
    else if (!g->rows && g->ta) sp.kind = PACK_AT;
#ifdef TB_CPU_GEMM_TILES
    else if (!g->rows && tb_cpu_gemm_crowded_stride(g->lda)) sp.kind = PACK_A_ROWS;
#endif
    if (sp.kind == PACK_B || sp.kind == PACK_A_AS_B) {
        const int pn = sp.kind == PACK_B ? g->n : g->m;
        sp.scratch = shared_scratch(be, tb_cpu_gemm_packed_b_floats(g->k, pn));
        sp.units = sp.scratch ? tb_cpu_gemm_pack_b_units(g->k, pn) : 0;
        g->shared.b = sp.scratch;
    } else if (sp.kind == PACK_AT) {
        sp.scratch = shared_scratch(be, tb_cpu_gemm_packed_at_floats(g->k, g->m));
        sp.units = sp.scratch ? tb_cpu_gemm_pack_at_units(g->k, g->m) : 0;
        g->shared.at = sp.scratch;
    } else if (sp.kind == PACK_A_ROWS) {
        const int ld = padded_stride(g->k);
        sp.scratch = shared_scratch(be, (int64_t)g->m * ld);
        sp.units = sp.scratch ? (g->m + A_ROWS_UNIT - 1) / A_ROWS_UNIT : 0;
        g->a_rows = sp.scratch;
        g->lda_rows = ld;
    }
    return sp;
}

/* Rows [A_ROWS_UNIT u, + A_ROWS_UNIT) of A, as they are, to the stride g->lda_rows. */
static void copy_a_rows_unit(const gemm_args *g, int u, float *dst)
{
    const int r1 = (u + 1) * A_ROWS_UNIT < g->m ? (u + 1) * A_ROWS_UNIT : g->m;
    for (int r = u * A_ROWS_UNIT; r < r1; r++)
        memcpy(dst + (int64_t)r * g->lda_rows, g->a + (int64_t)r * g->lda,
               (size_t)g->k * sizeof(float));
}

/* Unit u of the shared operand into its scratch. */
static void pack_shared_unit(const gemm_args *g, const shared_pack *sp, int u)
{
    if (sp->kind == PACK_A_ROWS)
        copy_a_rows_unit(g, u, sp->scratch);
    else if (sp->kind == PACK_B)
        tb_cpu_gemm_pack_b_unit(g->tb, g->k, g->n, g->b, g->ldb, u, sp->scratch);
    else if (sp->kind == PACK_A_AS_B) /* C^T = B A^T: A [m, k] is its B, transposed */
        tb_cpu_gemm_pack_b_unit(true, g->k, g->m, g->a, g->lda, u, sp->scratch);
    else /* A^T [k, m], as each block's product would pack it */
        tb_cpu_gemm_pack_at_unit(g->k, g->m, g->a, g->lda, u, sp->scratch);
}

/* Block i of `blocks` of C, on thread id: rows in whole micro tiles (or, !rows, columns in
 * whole micro tiles) [x0, x1) of the product. A block's rows in whole tiles leave only the
 * product's last tile short: split at any row, every block's last tile computed 12 rows for
 * fewer (8 blocks of the transformer's 128 x 128 x 2048 weight gradient, 16 rows each, ran
 * two tiles each, a third of them padding). */
static void gemm_block(tb_backend *be, int id, const gemm_args *g, int i, int blocks)
{
    const int tile = g->rows ? TB_CPU_GEMM_MR : TB_CPU_GEMM_NR, len = g->rows ? g->m : g->n;
    const int tiles = (len + tile - 1) / tile;
    const int x0 = tile * (int)((int64_t)tiles * i / blocks);
    int x1 = tile * (int)((int64_t)tiles * (i + 1) / blocks);
    if (x1 > len) x1 = len;
    if (x1 <= x0) return;
    tb_gemm_epilogue at;
    if (g->rows)
        gemm_one(be, id, g->own, g->ta, g->tb, x1 - x0, g->n, g->k, g->alpha,
                 g->ta ? g->a + x0 : g->a + (int64_t)x0 * g->lda, g->lda, g->b, g->ldb, g->beta,
                 tb_cpu_gemm_ep_at(g->ep, x0, 0, g->ldc, &at), g->c + (int64_t)x0 * g->ldc,
                 g->ldc, g->at_sums ? g->at_sums + x0 : NULL, g->transposed, &g->shared);
    else
        gemm_one(be, id, g->own, g->ta, g->tb, g->m, x1 - x0, g->k, g->alpha,
                 g->a_rows ? g->a_rows : g->a, g->a_rows ? g->lda_rows : g->lda,
                 g->tb ? g->b + (int64_t)x0 * g->ldb : g->b + x0, g->ldb, g->beta,
                 tb_cpu_gemm_ep_at(g->ep, 0, x0, g->ldc, &at), g->c + x0, g->ldc,
                 x0 == 0 ? g->at_sums : NULL, /* every block reads all of A: one sums */
                 g->transposed, &g->shared);
}

static void gemm_run(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta,
                     const tb_gemm_epilogue *ep, float *c, int ldc, float *at_sums)
{
    be->gemm_flops += 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k;
    const int64_t size = (int64_t)m * n * k;
    /* inside another parallel region only OpenBLAS is safe: the scratch is per thread of
     * the backend's own teams */
    const bool nested = omp_in_parallel(), own = size >= GEMM_OWN_MIN && !nested;
    const int threads = be->threads;
    /* decided for the whole product: every block then computes its elements the same way */
    const bool transposed = own && tb_cpu_gemm_transposed(ta, tb, m, n, k);
    if (threads < 2 || size < GEMM_SPLIT_MIN || nested) {
        gemm_one(be, 0, own, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc, at_sums,
                 transposed, NULL);
        return;
    }
    gemm_args g = {own, ta, tb, transposed, m >= n, m, n, k, lda, ldb, ldc, alpha, beta,
                   a, b, ep, c, at_sums, {NULL, NULL}, NULL, 0};
    const int64_t side = g.rows ? (m + TB_CPU_GEMM_MR - 1) / TB_CPU_GEMM_MR
                                : (n + TB_CPU_GEMM_NR - 1) / TB_CPU_GEMM_NR; /* tiles */
    int64_t blocks = (int64_t)GEMM_BLOCKS_PER_THREAD * threads;
    if (blocks > size / GEMM_BLOCK_MIN) blocks = size / GEMM_BLOCK_MIN;
    if (blocks < threads) blocks = threads;
    if (blocks > side) blocks = side;
    if ((g.rows ? (int64_t)k * n : (int64_t)m * k) > GEMM_SHARED_MAX) blocks = threads;
    const bool dynamic = !((const tb_cpu_state *)be->impl)->static_split;
    const shared_pack sp = plan_shared(be, &g);
#pragma omp parallel num_threads(threads)
    {
        if (sp.units > 0) /* the same answer on every thread: all or none reach the loop */
#pragma omp for schedule(dynamic, 1)
            for (int u = 0; u < sp.units; u++) pack_shared_unit(&g, &sp, u);
        if (dynamic) {
#pragma omp for schedule(dynamic, 1)
            for (int i = 0; i < (int)blocks; i++) gemm_block(be, omp_get_thread_num(), &g, i, (int)blocks);
        } else { /* one block per thread (tb_backend_config.static_split) */
            gemm_block(be, omp_get_thread_num(), &g, omp_get_thread_num(), omp_get_num_threads());
        }
    }
}

static void cpu_gemm(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    gemm_run(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, NULL, c, ldc, NULL);
}

static void cpu_gemm_ep(tb_backend *be, bool ta, bool tb, int m, int n, int k, const float *a,
                        int lda, const float *b, int ldb, const tb_gemm_epilogue *ep, float *c,
                        int ldc)
{
    gemm_run(be, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, ep, c, ldc, NULL);
}

/* dw (+)= dy^T x, with db (+)= dy's column sums taken while dy is packed for the product (a
 * written db starts at zero: the sums are added to it). */
static void cpu_linear_wgrad(tb_backend *be, int rows, int in, int out, const float *dy,
                             const float *x, float *dw, bool dw_acc, float *db, bool db_acc)
{
    if (db && !db_acc) memset(db, 0, (size_t)out * sizeof *db);
    gemm_run(be, true, false, out, in, rows, 1.0f, dy, out, x, in, dw_acc ? 1.0f : 0.0f, NULL,
             dw, in, db);
}

/* One product: gemm_run (the own kernel, split across the threads when large); several: one
 * per thread at a time, each single-threaded OpenBLAS (the products are independent: distinct
 * C). Either way each element's sum has one order at any thread count. */
static void cpu_gemm_batched(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                             const float *a, int lda, int64_t sa, const float *b, int ldb,
                             int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch)
{
    if (batch == 1) {
        gemm_run(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, NULL, c, ldc, NULL);
        return;
    }
    be->gemm_flops += 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k * (uint64_t)batch;
    const int64_t size = (int64_t)m * n * k * batch;
#pragma omp parallel for schedule(static) num_threads(be->threads) if (size >= GEMM_OWN_MIN)
    for (int i = 0; i < batch; i++)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a + i * sa, lda, b + i * sb,
                    ldb, beta, c + i * sc, ldc);
}

static void cpu_fill(tb_backend *be, float *x, int64_t n, float v)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) x[i] = v;
}

static void cpu_scale(tb_backend *be, float *x, int64_t n, float a)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) x[i] *= a;
}

static void cpu_axpy(tb_backend *be, int64_t n, float a, const float *x, float *y)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void cpu_add(tb_backend *be, int64_t n, const float *a, const float *b, float *y)
{
#pragma omp parallel for simd num_threads(be->threads) schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* db[c] += sum over rows of dy[r, c]: chunks of TB_CPU_SUM_CHUNK rows summed by every thread
 * (each reading its own rows, contiguously), then added in order (tb_cpu_sum_chunks). A single
 * chunk, or partial sums that have no scratch, take column blocks instead, each summing all
 * rows in double. */
static void cpu_bias_grad(tb_backend *be, int64_t rows, int64_t cols, const float *dy, float *db)
{
    const int64_t chunks = (rows + TB_CPU_SUM_CHUNK - 1) / TB_CPU_SUM_CHUNK;
    float *part = chunks > 1 ? tb_cpu_sum_scratch(be, chunks * cols) : NULL; /* [chunks][cols] */
    if (!part) {
        enum { BLOCK = 256 };
        const int64_t blocks = (cols + BLOCK - 1) / BLOCK;
#pragma omp parallel for num_threads(be->threads) schedule(static) if (rows * cols > 32768)
        for (int64_t blk = 0; blk < blocks; blk++) {
            const int64_t c0 = blk * BLOCK, w = cols - c0 < BLOCK ? cols - c0 : BLOCK;
            tb_cpu_col_sums(rows, w, dy + c0, cols, db + c0);
        }
        return;
    }
#pragma omp parallel num_threads(be->threads) if (rows * cols > 32768)
    {
#pragma omp for schedule(static)
        for (int64_t ch = 0; ch < chunks; ch++) {
            float *p = part + ch * cols;
            for (int64_t c = 0; c < cols; c++) p[c] = 0.0f;
            const int64_t r1 = (ch + 1) * TB_CPU_SUM_CHUNK < rows ? (ch + 1) * TB_CPU_SUM_CHUNK : rows;
            for (int64_t r = ch * TB_CPU_SUM_CHUNK; r < r1; r++) {
                const float *row = dy + r * cols;
#pragma omp simd
                for (int64_t c = 0; c < cols; c++) p[c] += row[c];
            }
        }
        tb_cpu_sum_chunks(chunks, cols, part, cols, db);
    }
}

static void cpu_strided_copy(tb_backend *be, int ndim, const int64_t *shape, float *dst,
                             const int64_t *dst_stride, const float *src,
                             const int64_t *src_stride, bool accumulate)
{
    if (ndim == 0) {
        *dst = accumulate ? *dst + *src : *src;
        return;
    }
    /* iterate over all but the last dimension; the last is the inner loop */
    int64_t outer = 1;
    for (int d = 0; d < ndim - 1; d++) outer *= shape[d];
    const int64_t inner = shape[ndim - 1], ds = dst_stride[ndim - 1], ss = src_stride[ndim - 1];
#pragma omp parallel for num_threads(be->threads) schedule(static) if (outer * inner > 32768)
    for (int64_t o = 0; o < outer; o++) {
        int64_t rem = o, doff = 0, soff = 0;
        for (int d = ndim - 2; d >= 0; d--) {
            int64_t i = rem % shape[d];
            rem /= shape[d];
            doff += i * dst_stride[d];
            soff += i * src_stride[d];
        }
        float *dp = dst + doff;
        const float *sp = src + soff;
        if (ds == 1 && ss == 1) { /* contiguous rows (concat, slices, broadcast rows) */
            if (accumulate) {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++) dp[i] += sp[i];
            } else {
#pragma omp simd
                for (int64_t i = 0; i < inner; i++) dp[i] = sp[i];
            }
        } else if (accumulate)
            for (int64_t i = 0; i < inner; i++) dp[i * ds] += sp[i * ss];
        else
            for (int64_t i = 0; i < inner; i++) dp[i * ds] = sp[i * ss];
    }
}

double tb_cpu_sum_in_parts(const tb_backend *be, int64_t n, int64_t min_len, bool parallel,
                           tb_cpu_part_sum part_sum, const void *ctx)
{
    double part[TB_CPU_PARTS];
    const int64_t len = tb_cpu_part_len(n, min_len), parts = tb_cpu_parts(n, len);
#pragma omp parallel for schedule(static) num_threads(be->threads) if (parallel)
    for (int64_t q = 0; q < parts; q++)
        part[q] = part_sum(ctx, q * len, (q + 1) * len < n ? (q + 1) * len : n);
    double s = 0.0;
    for (int64_t q = 0; q < parts; q++) s += part[q];
    return s;
}

/* The sum of x[i]^2 over one part, in double, lane by lane (TB_CPU_PART_LANES). */
static double sum_squares_part(const void *ctx, int64_t i0, int64_t i1)
{
    enum { L = TB_CPU_PART_LANES };
    const float *x = (const float *)ctx + i0;
    const int64_t n = i1 - i0;
    double acc[L] = {0};
    int64_t i = 0;
    for (; i + L <= n; i += L)
        for (int l = 0; l < L; l++) acc[l] += (double)x[i + l] * x[i + l];
    for (int l = 0; i + l < n; l++) acc[l] += (double)x[i + l] * x[i + l];
    return tb_cpu_add_lanes(acc);
}

static double cpu_sum_squares(tb_backend *be, int64_t n, const float *x)
{
    return tb_cpu_sum_in_parts(be, n, 4096, n > 32768, sum_squares_part, x);
}

/* 1 when x[i0..i1) holds a NaN or an infinity, else 0: x 0 is 0 (or -0) for a finite x and
 * NaN otherwise, and a sum of zeros stays zero (one float pass, no conversion to double). */
static double nonfinite_part(const void *ctx, int64_t i0, int64_t i1)
{
    const float *x = ctx;
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = i0; i < i1; i++) acc += x[i] * 0.0f;
    return acc == 0.0f ? 0.0 : 1.0;
}

static bool cpu_all_finite(tb_backend *be, int64_t n, const float *x)
{
    return tb_cpu_sum_in_parts(be, n, 4096, n > 32768, nonfinite_part, x) == 0.0;
}

static float cpu_read_scalar(tb_backend *be, const float *x)
{
    (void)be;
    return *x;
}

void tb_cpu_register_dense(tb_backend_ops *ops)
{
    ops->gemm = cpu_gemm;
    ops->gemm_ep = cpu_gemm_ep;
    ops->linear_wgrad = cpu_linear_wgrad;
    ops->gemm_batched = cpu_gemm_batched;
    ops->fill = cpu_fill;
    ops->scale = cpu_scale;
    ops->axpy = cpu_axpy;
    ops->add = cpu_add;
    ops->bias_grad = cpu_bias_grad;
    ops->strided_copy = cpu_strided_copy;
    ops->sum_squares = cpu_sum_squares;
    ops->all_finite = cpu_all_finite;
    ops->read_scalar = cpu_read_scalar;
}

/* cpu_attention.c: embedding gather/scatter and causal multi-head self-attention (OpenMP
 * across (batch, head) pairs; each pair in registers where it fits (cpu_attention_fused.c),
 * else on the gemm tiles or OpenBLAS). */
#include "backend/cpu/cpu.h"

#include <math.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- embedding ------------------------------------------------------------------------------ */

/* y[i, :] = table[idx[i], :]. The op checked the indices; an index outside the table gives a
 * row of NaN all the same, as the CUDA kernels do in a graph replay (backend_impl.h). */
static void cpu_embedding_fwd(tb_backend *be, int64_t n, int64_t dim, int64_t vocab,
                              const float *table, const int32_t *idx, float *y)
{
#pragma omp parallel for num_threads(be->threads) schedule(static) if (n * dim > 32768)
    for (int64_t i = 0; i < n; i++) {
        float *dst = y + i * dim;
        if (idx[i] < 0 || idx[i] >= vocab) {
            for (int64_t d = 0; d < dim; d++)
                dst[d] = NAN;
            continue;
        }
        const float *src = table + (int64_t)idx[i] * dim;
        for (int64_t d = 0; d < dim; d++)
            dst[d] = src[d];
    }
}

/* Columns of the table one thread owns in the backward pass. */
#define TB_EMB_COLS 64

/* dtable[idx[i], :] += dy[i, :]. Rows repeat, so threads split the embedding dimension into
 * column blocks: each block is owned by one thread, which visits every i in order. No two
 * threads write the same element and the summation order is fixed (deterministic). */
static void cpu_embedding_bwd(tb_backend *be, int64_t n, int64_t dim, int64_t vocab,
                              const int32_t *idx, const float *dy, float *dtable)
{
    int64_t blocks = (dim + TB_EMB_COLS - 1) / TB_EMB_COLS;
#pragma omp parallel for num_threads(be->threads) schedule(static) \
    if (blocks > 1 && n * dim > 32768)
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t d0 = blk * TB_EMB_COLS;
        int64_t d1 = d0 + TB_EMB_COLS < dim ? d0 + TB_EMB_COLS : dim;
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] < 0 || idx[i] >= vocab) continue; /* no row to send it to */
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
 * Backward (into dQ, dK, dV: added, or written when dqkv is fresh):
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

#ifdef TB_CPU_VEC_W
/* P = softmax of each row i of S [t, t] over columns 0..i, zeros above the diagonal (where S
 * may hold anything), in blocks of cpu_vec.h's W lanes: row i touches only its
 * ceil((i+1)/W) blocks, the last one partial, and zero-fills the rest. (Loops to i,
 * vectorised by the compiler, spent more in their per-row remainders than in the
 * exponentials: with AVX2 such a softmax took 3.5% of the transformer's step.) */
enum { W = TB_CPU_VEC_W };

static void softmax_causal(float *p, int t)
{
    const tb_vf ninf = tb_vec_set1(-INFINITY);
    for (int i = 0; i < t; i++) {
        float *row = p + (int64_t)i * t;
        const int nb = i / W + 1;
        tb_vf vmx = ninf;
        for (int b = 0; b < nb; b++)
            vmx = tb_vec_max(vmx, tb_vec_load_or(row + W * b, i + 1 - W * b, ninf));
        const tb_vf mx = tb_vec_set1(tb_vec_reduce_max(vmx));
        tb_vf vsum = tb_vec_zero();
        for (int b = 0; b < nb; b++) {
            const int valid = i + 1 - W * b;
            const tb_vf e = tb_vec_keep_n(
                tb_cpu_vexp(tb_vec_sub(tb_vec_load_n(row + W * b, valid), mx)), valid);
            vsum = tb_vec_add(vsum, e);
            tb_vec_store_n(row + W * b, t - W * b, e);
        }
        const tb_vf inv = tb_vec_set1(1.0f / tb_vec_reduce_add(vsum));
        for (int b = 0; b < nb; b++)
            tb_vec_store_n(row + W * b, t - W * b,
                           tb_vec_mul(tb_vec_load_n(row + W * b, t - W * b), inv));
        for (int b = nb; W * b < t; b++) tb_vec_store_n(row + W * b, t - W * b, tb_vec_zero());
    }
}

/* dS = P * (dP - sum_j dP P) in place of dP, causal part only, the same way. */
static void softmax_causal_bwd(float *ds, const float *p, int t)
{
    for (int i = 0; i < t; i++) {
        float *row = ds + (int64_t)i * t;
        const float *prow = p + (int64_t)i * t;
        const int nb = i / W + 1;
        tb_vf vdot = tb_vec_zero();
        for (int b = 0; b < nb; b++) {
            const int valid = i + 1 - W * b;
            vdot = tb_vec_fmadd(tb_vec_load_n(row + W * b, valid),
                                tb_vec_load_n(prow + W * b, valid), vdot);
        }
        const tb_vf dot = tb_vec_set1(tb_vec_reduce_add(vdot));
        for (int b = 0; b < nb; b++) {
            const int valid = i + 1 - W * b;
            const tb_vf d = tb_vec_mul(tb_vec_load_n(prow + W * b, valid),
                                       tb_vec_sub(tb_vec_load_n(row + W * b, valid), dot));
            tb_vec_store_n(row + W * b, t - W * b, tb_vec_keep_n(d, valid));
        }
        for (int b = nb; W * b < t; b++) tb_vec_store_n(row + W * b, t - W * b, tb_vec_zero());
    }
}

#else

/* P = softmax of each row i of S [t, t] over columns 0..i, zeros above the diagonal. */
static void softmax_causal(float *p, int t)
{
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
}

/* dS = P * (dP - sum_j dP P) in place of dP, causal part only (P is zero above the diagonal). */
static void softmax_causal_bwd(float *ds, const float *p, int t)
{
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
}

#endif

#ifdef TB_CPU_GEMM_TILES
/* One pair's products with the backend's gemm tiles (cpu_gemm.c): each operand packed once
 * per pair, no per-call dispatch, and the causal structure used: S and dP only below the
 * diagonal (per 12-row panel, up to its last row), P V and dS K only over j <= i, P^T dY and
 * dS^T Q only over i >= j. The thread's gemm scratch holds the packed operand and an A
 * panel. Used for t and hd up to TILE_MAX. */
enum { MR = TB_CPU_GEMM_MR, NR = TB_CPU_GEMM_NR, TILE_MAX = 256 };

typedef struct tiles {
    float *bp; /* a packed B, [k, n] in panels of NR columns: at most TILE_MAX^2 floats */
    float *ap; /* an A panel, or the short last panel's rows: at most MR TILE_MAX floats */
} tiles;

_Static_assert(TILE_MAX * TILE_MAX + MR * TILE_MAX <= TB_CPU_GEMM_WORK,
               "one pair's operands fit in a thread's gemm scratch");

static tiles thread_tiles(const tb_backend *be)
{
    float *slice = tb_cpu_gemm_scratch(be, thread_index());
    return (tiles){slice, slice + TILE_MAX * TILE_MAX};
}

static inline int imin(int a, int b) { return a < b ? a : b; }

/* A B operand [k, n] for the tiles: panel q (columns q NR ...) at p + q ps, its rows at
 * stride rs. Packed: ps = k NR, rs = NR; read in place (n == NR): ps = NR, rs = the row
 * stride. */
typedef struct bmat {
    const float *p;
    int64_t rs, ps;
    bool packed; /* the packed tiles (aligned panels), else the in-place ones */
} bmat;

/* B [k, n] with rows of stride rsb and contiguous columns: read in place when it is one whole
 * panel (n == NR: a head of 32 channels), else packed into ws->bp. */
static bmat rows_b(const tiles *ws, int k, int n, const float *b, int64_t rsb)
{
    if (n == NR) return (bmat){b, rsb, NR, false};
    tb_cpu_gemm_pack_b(k, n, b, rsb, 1, ws->bp);
    return (bmat){ws->bp, NR, (int64_t)k * NR, true};
}

/* B [k, n] given transposed (element (p, j) at b[j ldb + p]): packed into ws->bp. */
static bmat cols_b(const tiles *ws, int k, int n, const float *b, int64_t ldb)
{
    tb_cpu_gemm_pack_b(k, n, b, 1, ldb, ws->bp);
    return (bmat){ws->bp, NR, (int64_t)k * NR, true};
}

/* C[m, n] = alpha A B + beta C for A [m, k] as rows of stride lda. causal_n: row i needs
 * columns j <= i only; causal_k: row i needs terms p <= i only (both rounded up to the 12-row
 * panel's last row). */
static void rows_product(const tiles *ws, int m, int n, int k, const float *a, int64_t lda,
                         const bmat *b, float alpha, float beta, float *c, int64_t ldc,
                         bool causal_n, bool causal_k)
{
    for (int ir = 0; ir < m; ir += MR) {
        const int mr = imin(MR, m - ir), last = ir + mr;
        const int nu = causal_n ? imin(n, last) : n, ku = causal_k ? imin(k, last) : k;
        const float *ar = a + (int64_t)ir * lda;
        int64_t rs = lda;
        if (mr < MR) { /* the tile reads MR rows: the short last panel is copied, zero padded */
            tb_cpu_gemm_pack_a_rows(mr, ku, ar, lda, ws->ap, ku);
            ar = ws->ap;
            rs = ku;
        }
        for (int jr = 0; jr < nu; jr += NR) {
            const float *bq = b->p + (int64_t)(jr / NR) * b->ps;
            float *ct = c + (int64_t)ir * ldc + jr;
            if (b->packed)
                tb_cpu_gemm_tile_rows(ku, ar, rs, bq, ct, ldc, mr, imin(NR, nu - jr), alpha, beta,
                                      NULL, NULL);
            else
                tb_cpu_gemm_tile_rows_b(ku, ar, rs, bq, b->rs, ct, ldc, mr, imin(NR, nu - jr),
                                        alpha, beta);
        }
    }
}

/* C[m, n] = alpha At^T B + beta C for At [k, m] as rows of stride ldat, lower triangular
 * (At[i, j] = 0 for i < j): the 12 columns from jr sum over i >= jr only. */
static void cols_product(const tiles *ws, int m, int n, int k, const float *at, int64_t ldat,
                         const bmat *b, float alpha, float beta, float *c, int64_t ldc)
{
    for (int jr = 0; jr < m; jr += MR) {
        const int mr = imin(MR, m - jr), k0 = imin(jr, k), kc = k - k0;
        tb_cpu_gemm_pack_a_panels(mr, kc, at + (int64_t)k0 * ldat + jr, ldat, ws->ap);
        for (int jn = 0; jn < n; jn += NR) {
            const float *bq = b->p + (int64_t)(jn / NR) * b->ps + k0 * b->rs;
            float *ct = c + (int64_t)jr * ldc + jn;
            if (b->packed)
                tb_cpu_gemm_tile_panel(kc, ws->ap, bq, ct, ldc, mr, imin(NR, n - jn), alpha, beta,
                                       NULL, NULL);
            else
                tb_cpu_gemm_tile_panel_b(kc, ws->ap, bq, b->rs, ct, ldc, mr, imin(NR, n - jn),
                                         alpha, beta);
        }
    }
}

/* The tiled path needs t and hd up to TILE_MAX, and a team of its own: the scratch slices are
 * per thread of the backend, so a call from inside another parallel region (where every
 * caller is thread 0 of its own team) takes the OpenBLAS path. */
static bool tiles_fit(int t, int hd) { return t <= TILE_MAX && hd <= TILE_MAX; }

static void pair_fwd_tiles(const tiles *ws, int t, int hd, int c, float scale, const float *q,
                           float *p, float *yo)
{
    const int c3 = 3 * c;
    const float *k = q + c, *v = q + 2 * c;
    bmat b = cols_b(ws, hd, t, k, c3); /* K^T */
    rows_product(ws, t, t, hd, q, c3, &b, scale, 0.0f, p, t, true, false);
    softmax_causal(p, t);
    b = rows_b(ws, t, hd, v, c3); /* V */
    rows_product(ws, t, hd, t, p, t, &b, 1.0f, 0.0f, yo, c, false, true);
}

static void pair_bwd_tiles(const tiles *ws, int t, int hd, int c, float scale, const float *q,
                           float *dq, const float *p, const float *dyo, float *ds, float beta)
{
    const int c3 = 3 * c;
    const float *k = q + c, *v = q + 2 * c;
    float *dk = dq + c, *dv = dq + 2 * c;
    bmat b = rows_b(ws, t, hd, dyo, c); /* dV (+)= P^T dY */
    cols_product(ws, t, hd, t, p, t, &b, 1.0f, beta, dv, c3);
    b = cols_b(ws, hd, t, v, c3); /* dP = dY V^T */
    rows_product(ws, t, t, hd, dyo, c, &b, 1.0f, 0.0f, ds, t, true, false);
    softmax_causal_bwd(ds, p, t);
    b = rows_b(ws, t, hd, k, c3); /* dQ (+)= scale dS K */
    rows_product(ws, t, hd, t, ds, t, &b, scale, beta, dq, c3, false, true);
    b = rows_b(ws, t, hd, q, c3); /* dK (+)= scale dS^T Q */
    cols_product(ws, t, hd, t, ds, t, &b, scale, beta, dk, c3);
}
#endif

/* The same with one OpenBLAS call per product (any t and hd). */
static void pair_fwd_blas(int t, int hd, int c, float scale, const float *q, float *p, float *yo)
{
    const int c3 = 3 * c;
    const float *k = q + c, *v = q + 2 * c;
    /* S = scale Q K^T (the upper triangle is computed and then overwritten) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, scale, q, c3, k, c3, 0.0f, p,
                t);
    softmax_causal(p, t);
    /* Y = P V */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, v, c3, 0.0f, yo,
                c);
}

static void pair_bwd_blas(int t, int hd, int c, float scale, const float *q, float *dq,
                          const float *p, const float *dyo, float *ds, float beta)
{
    const int c3 = 3 * c;
    const float *k = q + c, *v = q + 2 * c;
    float *dk = dq + c, *dv = dq + 2 * c;
    /* dV (+)= P^T dY */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, dyo, c, beta, dv,
                c3);
    /* dP = dY V^T */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, 1.0f, dyo, c, v, c3, 0.0f, ds,
                t);
    softmax_causal_bwd(ds, p, t);
    /* dQ (+)= scale dS K; dK (+)= scale dS^T Q */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, scale, ds, t, k, c3, beta,
                dq, c3);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, scale, ds, t, q, c3, beta, dk,
                c3);
}

static void cpu_attention_fwd(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                              float *y, float *att, void *workspace)
{
    (void)workspace;
    const int hd = c / heads, c3 = 3 * c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t pairs = (int64_t)b * heads;
    const int threads = attention_threads(be, b, heads);
#ifdef TB_CPU_GEMM_TILES
    const bool tiled = tiles_fit(t, hd) && !omp_in_parallel();
#endif
#ifdef __AVX512F__
    const bool fused = tb_cpu_attention_fused_fits(t, hd);
#endif
#pragma omp parallel for schedule(static) num_threads(threads) if (pairs > 1)
    for (int64_t bh = 0; bh < pairs; bh++) {
        const int64_t bi = bh / heads, h = bh % heads;
        const float *q = qkv + bi * t * c3 + h * hd;
        float *p = att + bh * t * t, *yo = y + bi * t * c + h * hd;
#ifdef __AVX512F__
        if (fused) {
            tb_cpu_attention_fused_fwd(t, hd, c, scale, q, p, yo);
            continue;
        }
#endif
#ifdef TB_CPU_GEMM_TILES
        if (tiled) {
            const tiles ws = thread_tiles(be);
            pair_fwd_tiles(&ws, t, hd, c, scale, q, p, yo);
            continue;
        }
#endif
        pair_fwd_blas(t, hd, c, scale, q, p, yo);
    }
}

static void cpu_attention_bwd(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                              const float *att, const float *dy, float *dqkv, bool dqkv_acc,
                              void *workspace)
{
    /* each pair writes only its own head's columns of dqkv, all of them: a fresh dqkv is
     * overwritten (beta 0 never reads it) instead of zeroed first */
    const float beta = dqkv_acc ? 1.0f : 0.0f;
    const int hd = c / heads, c3 = 3 * c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t pairs = (int64_t)b * heads;
    const int threads = attention_threads(be, b, heads);
    float *scratch = workspace;
#ifdef TB_CPU_GEMM_TILES
    const bool tiled = tiles_fit(t, hd) && !omp_in_parallel();
#endif
#ifdef __AVX512F__
    const bool fused = tb_cpu_attention_fused_fits(t, hd);
#endif
#pragma omp parallel for schedule(static) num_threads(threads) if (pairs > 1)
    for (int64_t bh = 0; bh < pairs; bh++) {
        const int64_t bi = bh / heads, h = bh % heads;
        const int64_t off = bi * t * c3 + h * hd;
        const float *p = att + bh * t * t, *dyo = dy + bi * t * c + h * hd;
#ifdef __AVX512F__
        if (fused) {
            tb_cpu_attention_fused_bwd(t, hd, c, scale, qkv + off, dqkv + off, p, dyo, beta);
            continue;
        }
#endif
        float *ds = scratch + (int64_t)thread_index() * t * t;
#ifdef TB_CPU_GEMM_TILES
        if (tiled) {
            const tiles ws = thread_tiles(be);
            pair_bwd_tiles(&ws, t, hd, c, scale, qkv + off, dqkv + off, p, dyo, ds, beta);
            continue;
        }
#endif
        pair_bwd_blas(t, hd, c, scale, qkv + off, dqkv + off, p, dyo, ds, beta);
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

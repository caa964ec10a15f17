/* cpu_gemm.c: the CPU backend's own single-threaded sgemm, for the shapes of training steps.
 *
 * OpenBLAS reaches its peak on large square products but loses 5-15% on the tall, narrow
 * products of a training step (k = 128 inner dimensions, 128 rows), and a linear layer's bias
 * costs it an extra pass over the output. This is a BLIS-style product written once against
 * cpu_vec.h's vector (16 floats with AVX-512, 8 with AVX2 and FMA): a micro kernel of
 * MR x NR = 12 x 32 or 6 x 16 (two vectors a row, 24 or 12 accumulators). B is packed once
 * per (KC x NC) block into k-major panels of NR columns (a vector-square register transpose
 * for a transposed B), A is read in place (copied to a padded stride only where its own
 * stride would crowd a few L1 sets, packed into k-major panels when transposed), and the
 * kernel's epilogue applies alpha, beta, the bias and a residual matrix while the tile is in
 * registers. beta = 0 never reads C. An activation (forward, or its derivative times the
 * product for the backward pass) is applied to each finished panel of rows while it is in
 * cache, saving the pass over C that a separate op makes.
 * A product of few rows with B transposed (a linear layer's forward pass on a batch of 128)
 * is computed as C^T = B A^T, so that the weights are read in place instead of transposed
 * into panels, and C^T is stored transposed with the epilogue (tb_cpu_gemm_transposed).
 *
 * Without either vector (the compiler's target decides) it is OpenBLAS with the bias added
 * first and the residual and activation in passes after it. */
#include "backend/cpu/cpu.h"

#include <cblas.h>

/* C rows start as the bias (or zero), scaled C when beta != 0, before a product with beta 1. */
static void init_rows(int m, int n, float beta, const float *bias, float *c, int ldc)
{
    for (int i = 0; i < m; i++) {
        float *row = c + (int64_t)i * ldc;
        for (int j = 0; j < n; j++)
            row[j] = (beta == 0.0f ? 0.0f : beta * row[j]) + (bias ? bias[j] : 0.0f);
    }
}

/* The activation of ep on rows [0, m) x columns [0, n) of C, whose element (0, 0) is at
 * offset off of ep's matrices. */
static void act_rows(const tb_gemm_epilogue *ep, int m, int n, float *c, int64_t ldc,
                     int64_t off)
{
    if (ep->mode == TB_GEMM_ACT_FWD)
        tb_cpu_act_fwd_rows(ep->act, m, n, c, ldc, ep->act_y + off, ldc);
    else if (ep->mode == TB_GEMM_ACT_BWD)
        tb_cpu_act_grad_rows(ep->act, m, n, ep->act_x + off, ep->act_y ? ep->act_y + off : NULL,
                             ldc, c, ldc);
}

/* The epilogue's residual and activation in passes over a finished C. */
static void post_rows(const tb_gemm_epilogue *ep, int m, int n, float *c, int ldc)
{
    if (!ep) return;
    if (ep->residual)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(int64_t)i * ldc + j] += ep->residual[(int64_t)i * ldc + j];
    act_rows(ep, m, n, c, ldc, 0);
}

const tb_gemm_epilogue *tb_cpu_gemm_ep_at(const tb_gemm_epilogue *ep, int64_t r0, int64_t c0,
                                          int64_t ldc, tb_gemm_epilogue *out)
{
    if (!ep) return NULL;
    const int64_t off = r0 * ldc + c0;
    *out = *ep;
    if (ep->bias) out->bias = ep->bias + c0;
    if (ep->residual) out->residual = ep->residual + off;
    if (ep->act_y) out->act_y = ep->act_y + off;
    if (ep->act_x) out->act_x = ep->act_x + off;
    return out;
}

void tb_cpu_sgemm_blas(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
                       int lda, const float *b, int ldb, float beta, const tb_gemm_epilogue *ep,
                       float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    if (ep && ep->bias) { /* rows start as beta C + bias, and the product is added (beta 1) */
        init_rows(m, n, beta, ep->bias, c, ldc);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    post_rows(ep, m, n, c, ldc);
}

void tb_cpu_col_sums(int64_t rows, int64_t cols, const float *x, int64_t ldx, float *sums)
{
    enum { BLOCK = 256 }; /* column blocks, rows walked in order: every read is contiguous */
    for (int64_t j0 = 0; j0 < cols; j0 += BLOCK) {
        const int64_t w = cols - j0 < BLOCK ? cols - j0 : BLOCK;
        double acc[BLOCK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *row = x + r * ldx + j0;
#pragma omp simd
            for (int64_t j = 0; j < w; j++) acc[j] += row[j];
        }
        for (int64_t j = 0; j < w; j++) sums[j0 + j] += (float)acc[j];
    }
}

#ifndef TB_CPU_GEMM_TILES

void tb_cpu_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                  const float *b, int ldb, float beta, const tb_gemm_epilogue *ep, float *c,
                  int ldc, float *work)
{
    (void)work;
    tb_cpu_sgemm_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc);
}

bool tb_cpu_gemm_transposed(bool ta, bool tb, int m, int n, int k)
{
    (void)ta, (void)tb, (void)m, (void)n, (void)k;
    return false;
}

int64_t tb_cpu_gemm_packed_b_floats(int k, int n)
{
    (void)k, (void)n;
    return 0; /* OpenBLAS packs its own */
}

int tb_cpu_gemm_pack_b_units(int k, int n)
{
    (void)k, (void)n;
    return 0;
}

void tb_cpu_gemm_pack_b_unit(bool tb, int k, int n, const float *b, int ldb, int u, float *bp)
{
    (void)tb, (void)k, (void)n, (void)b, (void)ldb, (void)u, (void)bp;
}

int64_t tb_cpu_gemm_packed_at_floats(int k, int m)
{
    (void)k, (void)m;
    return 0;
}

int tb_cpu_gemm_pack_at_units(int k, int m)
{
    (void)k, (void)m;
    return 0;
}

void tb_cpu_gemm_pack_at_unit(int k, int m, const float *at, int lda, int u, float *ap)
{
    (void)k, (void)m, (void)at, (void)lda, (void)u, (void)ap;
}

void tb_cpu_sgemm_sums(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
                       int lda, const float *b, int ldb, float beta, const tb_gemm_epilogue *ep,
                       float *c, int ldc, float *work, float *at_sums, bool transposed,
                       const tb_cpu_gemm_shared *shared)
{
    (void)work, (void)transposed, (void)shared;
    tb_cpu_sgemm_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc);
    if (at_sums) tb_cpu_col_sums(k, m, a, lda, at_sums);
}

#else

enum {
    MR = TB_CPU_GEMM_MR,
    NR = TB_CPU_GEMM_NR,
    KC = TB_CPU_GEMM_KC,
    MC = TB_CPU_GEMM_MC,
    NC = TB_CPU_GEMM_NC,
    W = TB_CPU_VEC_W, /* floats a vector (cpu_vec.h): a tile row is two */
    A_STRIDE = TB_CPU_GEMM_KC + 16 /* padded row stride of a copied A block */
};

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The end of an epilogue for one vector of a row of C (its first n lanes) that holds
 * alpha A B + bias: + beta C (C not read when beta = 0), + the residual r (or NULL), stored. */
ALWAYS_INLINE void store_vec(tb_vf v, int n, float beta, tb_vf vb, float *c, const float *r)
{
    if (beta != 0.0f) v = tb_vec_fmadd(vb, tb_vec_load_n(c, n), v);
    if (r) v = tb_vec_add(v, tb_vec_load_n(r, n));
    tb_vec_store_n(c, n, v);
}

/* The micro kernel's k loop: acc[MR][2] = A B for A [MR, kc] (element (r, p) at
 * a[r rsa + p csa]) and B [kc, NR] as rows of stride rsb.
 * The sanitizer build leaves this loop (its reads of A and of B only) uninstrumented and out of
 * line: AddressSanitizer's check on each of its 8 loads a step of k made it about 3.4 times
 * as long, and the sanitizer build's test_cli_study spent 47% of its time here (perf). The
 * epilogue's loads and stores stay checked, and test_gemm compares every edge shape's result
 * with a double-precision reference, in both builds. */
#ifdef __SANITIZE_ADDRESS__
#define KLOOP static __attribute__((noinline, no_sanitize_address))
#else
#define KLOOP ALWAYS_INLINE
#endif
KLOOP void accumulate(int kc, const float *a, int64_t rsa, int64_t csa, const float *bp,
                      int64_t rsb, tb_vf acc[MR][2])
{
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = tb_vec_zero();
    for (int p = 0; p < kc; p++) {
        tb_vf b0 = tb_vec_loadu(bp + p * rsb), b1 = tb_vec_loadu(bp + p * rsb + W);
#if TB_CPU_VEC_W == 8
        __asm__("" : "+x"(b0), "+x"(b1));
#endif
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            const tb_vf x = tb_vec_set1(a[r * rsa + p * csa]);
            acc[r][0] = tb_vec_fmadd(x, b0, acc[r][0]);
            acc[r][1] = tb_vec_fmadd(x, b1, acc[r][1]);
        }
    }
}

/* The micro kernel: C[mr, nr] = alpha A B + beta C + bias + R for A [MR, kc] (element (r, p)
 * at a[r rsa + p csa]), B [kc, NR] as rows of stride rsb (a packed panel: NR) and R (or NULL)
 * at C's stride; rows past mr (zero padded) are computed and dropped. The two callers fix the
 * A strides so that each is compiled for its layout. */
ALWAYS_INLINE void micro(int kc, const float *a, int64_t rsa, int64_t csa, const float *bp,
                         int64_t rsb, float *c, int64_t ldc, int mr, int nr, float alpha,
                         float beta, const float *bias, const float *res)
{
    tb_vf acc[MR][2];
#if TB_CPU_VEC_W == 8
    /* AVX2's 16 registers hold the 12 accumulators, B's two vectors and A's broadcast, with
     * one to spare: alpha and beta are read back from memory after the loop, and B's second
     * vector is held in a register, where GCC kept alpha and beta across the loop and read B's
     * second vector from memory in each of its six multiply-adds: 13 loads a step of k for 12
     * multiply-adds, 8 now */
    float ab[2] = {alpha, beta};
    __asm__("" : "+m"(ab));
#endif
    accumulate(kc, a, rsa, csa, bp, rsb, acc);
#if TB_CPU_VEC_W == 8
    alpha = ab[0], beta = ab[1];
#endif
    const int n0 = nr, n1 = nr - W; /* lanes of the tile's two vectors a row */
    const tb_vf va = tb_vec_set1(alpha), vb = tb_vec_set1(beta);
    const tb_vf bias0 = bias ? tb_vec_load_n(bias, n0) : tb_vec_zero();
    const tb_vf bias1 = bias && n1 > 0 ? tb_vec_load_n(bias + W, n1) : tb_vec_zero();
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        float *cr = c + r * ldc;
        const float *rr = res ? res + r * ldc : NULL;
        store_vec(tb_vec_fmadd(va, acc[r][0], bias0), n0, beta, vb, cr, rr);
        if (n1 > 0)
            store_vec(tb_vec_fmadd(va, acc[r][1], bias1), n1, beta, vb, cr + W,
                      rr ? rr + W : NULL);
    }
}

/* A as rows of stride rsa (in place, or copied), B a packed panel */
void tb_cpu_gemm_tile_rows(int kc, const float *a, int64_t rsa, const float *bp, float *c,
                           int64_t ldc, int mr, int nr, float alpha, float beta,
                           const float *bias, const float *res)
{
    micro(kc, a, rsa, 1, bp, NR, c, ldc, mr, nr, alpha, beta, bias, res);
}

/* A as a k-major panel [kc, MR], B a packed panel */
void tb_cpu_gemm_tile_panel(int kc, const float *a, const float *bp, float *c, int64_t ldc,
                            int mr, int nr, float alpha, float beta, const float *bias,
                            const float *res)
{
    micro(kc, a, 1, MR, bp, NR, c, ldc, mr, nr, alpha, beta, bias, res);
}

/* The same two with B read in place, rows of stride rsb (a compile-time NR above keeps the
 * packed kernels' addressing as simple as it was: a runtime stride cost them 3-5%). */
void tb_cpu_gemm_tile_rows_b(int kc, const float *a, int64_t rsa, const float *b, int64_t rsb,
                             float *c, int64_t ldc, int mr, int nr, float alpha, float beta)
{
    micro(kc, a, rsa, 1, b, rsb, c, ldc, mr, nr, alpha, beta, NULL, NULL);
}

void tb_cpu_gemm_tile_panel_b(int kc, const float *a, const float *b, int64_t rsb, float *c,
                              int64_t ldc, int mr, int nr, float alpha, float beta)
{
    micro(kc, a, 1, MR, b, rsb, c, ldc, mr, nr, alpha, beta, NULL, NULL);
}

/* nr contiguous floats of a row of B as one row of a panel: two vectors, zero padded. */
ALWAYS_INLINE void pack_b_tile_row(const float *src, int nr, float *d)
{
    tb_vec_store(d, tb_vec_load_n(src, nr));
    tb_vec_store(d + W, nr > W ? tb_vec_load_n(src + W, nr - W) : tb_vec_zero());
}

/* Packs B [kc, nc] (element (p, j) at b[p rsb + j csb]) into panels [kc, NR], zero padded.
 * Contiguous rows a 4 KB page or more apart are packed row by row, each row's part of the
 * block read as whole adjacent lines, instead of panel by panel down a page per row (a
 * harness on 1 thread, 40 alternated rounds, the MLP's 1024 x 1024 weights packed in 256 x
 * 128 blocks from memory: mean 0.84-0.94 ms against 1.03-1.74; from cache 0.25-0.35 against
 * 0.26-0.39. Rows 784 or 512 floats apart gained nothing from cache, so they keep panels.) */
void tb_cpu_gemm_pack_b(int kc, int nc, const float *b, int64_t rsb, int64_t csb, float *bp)
{
    if (csb == 1 && rsb >= 1024) {
        for (int p = 0; p < kc; p++)
            for (int j0 = 0; j0 < nc; j0 += NR)
                pack_b_tile_row(b + p * rsb + j0, nc - j0 < NR ? nc - j0 : NR,
                                bp + (int64_t)j0 * kc + (int64_t)p * NR);
        return;
    }
    for (int j0 = 0; j0 < nc; j0 += NR, bp += (int64_t)kc * NR) {
        const int nr = nc - j0 < NR ? nc - j0 : NR;
        if (csb == 1) { /* rows of B are contiguous: copy a tile row (two vectors) at a time */
            for (int p = 0; p < kc; p++) pack_b_tile_row(b + p * rsb + j0, nr, bp + p * NR);
            continue;
        }
        /* columns of B are contiguous (B transposed): W x W blocks through registers */
        int p = 0;
        if (nr == NR)
            for (; p + W <= kc; p += W)
                for (int h = 0; h < 2; h++) {
                    tb_vf r[W];
                    for (int i = 0; i < W; i++)
                        r[i] = tb_vec_loadu(b + (int64_t)(j0 + W * h + i) * csb + p);
                    tb_vec_transpose(r);
                    for (int i = 0; i < W; i++) tb_vec_store(bp + (p + i) * NR + W * h, r[i]);
                }
        for (; p < kc; p++)
            for (int jj = 0; jj < NR; jj++)
                bp[p * NR + jj] = jj < nr ? b[(int64_t)(j0 + jj) * csb + p] : 0.0f;
    }
}

void tb_cpu_gemm_pack_a_rows(int mr, int kc, const float *a, int64_t lda, float *ap, int64_t ldp)
{
    for (int i = 0; i < MR; i++)
        for (int p = 0; p < kc; p += W) /* vector copy: memcpy became rep movsq */
            tb_vec_store_n(ap + i * ldp + p, kc - p,
                           i < mr ? tb_vec_load_n(a + i * lda + p, kc - p) : tb_vec_zero());
}

#if TB_CPU_VEC_W == 16
void tb_cpu_gemm_pack_a_panels(int mc, int kc, const float *at, int64_t ldat, float *ap)
{
    const int panels = (mc + MR - 1) / MR;
    int p = 0;
    /* four rows of a panel are 48 floats, three whole vectors: each two-source permute takes
     * what it needs of two consecutive rows (12 + 4, 8 + 8, 4 + 12 floats) */
    const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19);
    const __m512i i1 = _mm512_setr_epi32(4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i i2 =
        _mm512_setr_epi32(8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27);
    for (; p + 4 <= kc; p += 4) {
        const float *src = at + p * ldat;
        for (int q = 0; q < panels; q++) {
            const __mmask16 m = tb_cpu_lanes(mc - q * MR < MR ? mc - q * MR : MR);
            const float *s = src + q * MR;
            const __m512 r0 = _mm512_maskz_loadu_ps(m, s), r1 = _mm512_maskz_loadu_ps(m, s + ldat);
            const __m512 r2 = _mm512_maskz_loadu_ps(m, s + 2 * ldat);
            const __m512 r3 = _mm512_maskz_loadu_ps(m, s + 3 * ldat);
            float *d = ap + ((int64_t)q * kc + p) * MR;
            _mm512_storeu_ps(d, _mm512_permutex2var_ps(r0, i0, r1));
            _mm512_storeu_ps(d + 16, _mm512_permutex2var_ps(r1, i1, r2));
            _mm512_storeu_ps(d + 32, _mm512_permutex2var_ps(r2, i2, r3));
        }
    }
    for (; p < kc; p++) { /* the last rows one by one */
        const float *src = at + p * ldat;
        for (int q = 0; q < panels; q++)
            _mm512_mask_storeu_ps(ap + ((int64_t)q * kc + p) * MR, tb_cpu_lanes(MR),
                                  _mm512_maskz_loadu_ps(tb_cpu_lanes(mc - q * MR), src + q * MR));
    }
}
#else
/* Row p of panel q: A^T's row p, columns q MR .. q MR + MR - 1, as a whole vector (W = 8
 * floats), whose last two lanes land on the panel's next row, which is written after it, but
 * for the panel's last row; the load is whole where the vector stays inside the block's
 * columns (a masked load per row cost the transformer's 512 x 128 x 2048 weight gradient
 * 20%). */
ALWAYS_INLINE void pack_a_vec(int mc, int kc, const float *at, int64_t ldat, int p, int q,
                              float *ap)
{
    const float *src = at + p * ldat + q * MR;
    const tb_vf v = q * MR + W <= mc ? tb_vec_loadu(src) : tb_vec_load_n(src, mc - q * MR);
    tb_vec_store_n(ap + ((int64_t)q * kc + p) * MR, p + 1 < kc ? W : MR, v);
}

/* Panel by panel, down A^T's columns; but row by row where A^T's rows are more than a 4 KB
 * page apart, so that each row's part of the block comes in as whole adjacent lines (1
 * thread, alternated pairs on a busy host: the WordNet output layer's 26851 x 128 x 256
 * weight gradient took 0.80-1.03 times as long row by row, median 0.91 of 6 pairs; 2048 x 128
 * x 256 0.75-0.98; while 512 x 128 x 2048 took 1.03-1.35 times as long, and 1024 x 1024 x 128
 * 1.01-1.12). */
void tb_cpu_gemm_pack_a_panels(int mc, int kc, const float *at, int64_t ldat, float *ap)
{
    const int panels = (mc + MR - 1) / MR;
    if (ldat > 1024) {
        for (int p = 0; p < kc; p++)
            for (int q = 0; q < panels; q++) pack_a_vec(mc, kc, at, ldat, p, q, ap);
    } else {
        for (int q = 0; q < panels; q++)
            for (int p = 0; p < kc; p++) pack_a_vec(mc, kc, at, ldat, p, q, ap);
    }
}
#endif

/* The epilogue's parts for one K block of a product: the first applies beta, the bias and the
 * residual, the last the activation. */
typedef struct kblock_ep {
    float beta;
    const float *bias, *res;
    const tb_gemm_epilogue *act; /* NULL: no activation here */
} kblock_ep;

/* sums[r] += the sum over p < kc of a packed panel's column r (A^T's column, r < mr): in
 * float over 64 terms (one vector add a step of the panel), then in double for the K block;
 * the blocks' sums are added in K order (a bias gradient's terms). */
static void add_panel_sums(int mr, int kc, const float *panel, float *sums)
{
    double acc[MR] = {0};
    for (int p0 = 0; p0 < kc; p0 += 64) {
        const int p1 = kc - p0 < 64 ? kc : p0 + 64;
        tb_vf f = tb_vec_zero();
        for (int p = p0; p < p1; p++) f = tb_vec_add(f, tb_vec_load_n(panel + p * MR, MR));
        float part[W];
        tb_vec_store_n(part, W, f);
        for (int r = 0; r < MR; r++) acc[r] += part[r];
    }
    for (int r = 0; r < mr; r++) sums[r] += (float)acc[r];
}

/* One MC x KC block of A against the packed B block [kc, nc]; ep's matrices start at C's
 * block, and at_sums (or NULL, always NULL unless ta) at its first row. With ta, panels (or
 * NULL) are the block's panels of A^T packed already. */
static void block(bool ta, int mc, int nc, int kc, const float *a, int lda, const float *bp,
                  float alpha, const kblock_ep *ep, float *c, int ldc, float *ap,
                  float *at_sums, const float *panels)
{
    const bool packed = ta;
    if (packed && !panels) /* A^T stored [kc, mc]: all of the block's panels packed first */
        tb_cpu_gemm_pack_a_panels(mc, kc, a, lda, ap);
    if (packed && panels) ap = (float *)panels; /* only read from here on */
    /* A [mc, kc] rows, read in place unless the panel is short (the tile reads MR rows) or
     * the row stride is a multiple of 2 KB and the panel serves more than 8 tiles: its 12
     * rows then crowd a few L1 sets and are evicted between tiles, while the copy pays off
     * only over many tiles (measured, 1 thread: 128 x 1024 x 1024 ran 144 GFLOP/s copied,
     * 113 in place; 2048 x 128 x 512, 149 copied and 160 in place; 2048 x 64 x 512, 126-134
     * copied and 151-155 in place) */
    const bool in_place = !tb_cpu_gemm_crowded_stride(lda) || nc <= 8 * NR;
    for (int ir = 0; ir < mc; ir += MR) {
        const int mr = mc - ir < MR ? mc - ir : MR;
        const float *ar = packed ? ap + (int64_t)(ir / MR) * kc * MR : a + (int64_t)ir * lda;
        int64_t rs = lda;
        if (!packed && (!in_place || mr < MR)) {
            tb_cpu_gemm_pack_a_rows(mr, kc, ar, lda, ap, A_STRIDE);
            ar = ap;
            rs = A_STRIDE;
        }
        if (at_sums) add_panel_sums(mr, kc, ar, at_sums + ir);
        for (int jr = 0; jr < nc; jr += NR) {
            const int nr = nc - jr < NR ? nc - jr : NR;
            const int64_t off = (int64_t)ir * ldc + jr;
            const float *bias = ep->bias ? ep->bias + jr : NULL;
            const float *res = ep->res ? ep->res + off : NULL;
            if (packed)
                tb_cpu_gemm_tile_panel(kc, ar, bp + (int64_t)jr * kc, c + off, ldc, mr, nr,
                                       alpha, ep->beta, bias, res);
            else
                tb_cpu_gemm_tile_rows(kc, ar, rs, bp + (int64_t)jr * kc, c + off, ldc, mr, nr,
                                      alpha, ep->beta, bias, res);
        }
        /* the activation over the panel's finished rows at once: one call per tile cost the
         * transformer's GELU' product 45% over the plain product, one per panel 20% */
        if (ep->act) act_rows(ep->act, mr, nc, c + (int64_t)ir * ldc, ldc, (int64_t)ir * ldc);
    }
}

/* B packed whole, for the threads of a split product to share: block (jc, pc) of product()'s
 * loops, kc x nc rounded up to whole panels, at jc k + pc round_up(nc, NR) (every block before
 * column jc is NC wide). */
static int whole_panels(int n) { return (n + NR - 1) / NR * NR; } /* columns, rounded up */

static int64_t packed_b_at(int k, int n, int jc, int pc)
{
    return (int64_t)jc * k + (int64_t)pc * whole_panels(n - jc < NC ? n - jc : NC);
}

int64_t tb_cpu_gemm_packed_b_floats(int k, int n) { return (int64_t)k * whole_panels(n); }

int tb_cpu_gemm_pack_b_units(int k, int n) { return (n + NR - 1) / NR * ((k + KC - 1) / KC); }

/* Unit u: K block u % kblocks of the panel of columns [NR (u / kblocks), + NR). */
void tb_cpu_gemm_pack_b_unit(bool tb, int k, int n, const float *b, int ldb, int u, float *bp)
{
    const int kblocks = (k + KC - 1) / KC, j = NR * (u / kblocks), pc = KC * (u % kblocks);
    const int kc = k - pc < KC ? k - pc : KC, jc = j / NC * NC;
    const int64_t rsb = tb ? 1 : ldb, csb = tb ? ldb : 1;
    tb_cpu_gemm_pack_b(kc, n - j < NR ? n - j : NR, b + pc * rsb + j * csb, rsb, csb,
                       bp + packed_b_at(k, n, jc, pc) + (int64_t)(j - jc) * kc);
}

/* A^T [k, m] packed whole, for the threads of a split of C's columns to share: the panels of
 * block (pc, ic) of product()'s loops, kc x mc rounded up to whole panels, at pc mpad + ic kc
 * (mpad: m with its last block of rows rounded up to whole panels). */
static int padded_rows(int m) { return m / MC * MC + (m % MC + MR - 1) / MR * MR; } /* mpad */

static int64_t packed_at_at(int k, int m, int pc, int ic)
{
    return (int64_t)pc * padded_rows(m) + (int64_t)ic * (k - pc < KC ? k - pc : KC);
}

int64_t tb_cpu_gemm_packed_at_floats(int k, int m) { return (int64_t)k * padded_rows(m); }

int tb_cpu_gemm_pack_at_units(int k, int m) { return (m + MC - 1) / MC * ((k + KC - 1) / KC); }

/* Unit u: K block u % kblocks of the block of rows [MC (u / kblocks), + MC). */
void tb_cpu_gemm_pack_at_unit(int k, int m, const float *at, int lda, int u, float *ap)
{
    const int kblocks = (k + KC - 1) / KC, ic = MC * (u / kblocks), pc = KC * (u % kblocks);
    const int kc = k - pc < KC ? k - pc : KC, mc = m - ic < MC ? m - ic : MC;
    tb_cpu_gemm_pack_a_panels(mc, kc, at + (int64_t)pc * lda + ic, lda,
                              ap + packed_at_at(k, m, pc, ic));
}

/* The blocked product (k > 0): B packed per K block, and A^T's panels per block of A (or
 * either from shared, all of it packed already), A read in place, copied or packed. */
static void product(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, const tb_gemm_epilogue *ep, float *c,
                    int ldc, float *work, float *at_sums, const tb_cpu_gemm_shared *shared)
{
    const float *b_packed = shared ? shared->b : NULL;
    const float *at_packed = shared && ta ? shared->at : NULL;
    float *ap = work, *bp = work + TB_CPU_GEMM_WORK_A;
    const int64_t rsb = tb ? 1 : ldb, csb = tb ? ldb : 1;
    const bool act = ep && ep->mode != TB_GEMM_ACT_NONE;
    for (int jc = 0; jc < n; jc += NC) {
        const int nc = n - jc < NC ? n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            const int kc = k - pc < KC ? k - pc : KC;
            const float *bk = bp;
            if (b_packed)
                bk = b_packed + packed_b_at(k, n, jc, pc);
            else
                tb_cpu_gemm_pack_b(kc, nc, b + pc * rsb + jc * csb, rsb, csb, bp);
            for (int ic = 0; ic < m; ic += MC) {
                const int mc = m - ic < MC ? m - ic : MC;
                const float *ablk = ta ? a + (int64_t)pc * lda + ic : a + (int64_t)ic * lda + pc;
                tb_gemm_epilogue at;
                const tb_gemm_epilogue *e = tb_cpu_gemm_ep_at(ep, ic, jc, ldc, &at);
                /* the first K block applies beta, the bias and the residual; the later ones
                 * add to C; the last one applies the activation */
                const kblock_ep kb = {pc == 0 ? beta : 1.0f, pc == 0 && e ? e->bias : NULL,
                                      pc == 0 && e ? e->residual : NULL,
                                      act && pc + kc >= k ? e : NULL};
                /* A^T's column sums once, with the first column block */
                block(ta, mc, nc, kc, ablk, lda, bk, alpha, &kb, c + (int64_t)ic * ldc + jc, ldc,
                      ap, jc == 0 && at_sums ? at_sums + ic : NULL,
                      at_packed ? at_packed + packed_at_at(k, m, pc, ic) : NULL);
            }
        }
    }
}

/* C [m, nc] = ct^T + beta C + the bias + the residual, then the activation, for ct [nc, m]
 * (rows of stride m): W x W blocks through registers. ep's matrices start at C's block. */
static void store_transposed(int m, int nc, const float *ct, float beta,
                             const tb_gemm_epilogue *ep, float *c, int ldc)
{
    const tb_vf vb = tb_vec_set1(beta);
    for (int i0 = 0; i0 < m; i0 += W) {
        const int mi = m - i0 < W ? m - i0 : W; /* the strip's rows */
        for (int j0 = 0; j0 < nc; j0 += W) {
            const int nj = nc - j0 < W ? nc - j0 : W;
            tb_vf r[W];
            for (int q = 0; q < W; q++) /* r[q]: C's column j0 + q, rows i0 ... */
                r[q] = q < nj ? tb_vec_load_n(ct + (int64_t)(j0 + q) * m + i0, mi) : tb_vec_zero();
            tb_vec_transpose(r); /* r[p]: C's row i0 + p, columns j0 ... */
            const tb_vf bias = ep && ep->bias ? tb_vec_load_n(ep->bias + j0, nj) : tb_vec_zero();
            for (int p = 0; p < mi; p++) {
                const int64_t off = (int64_t)(i0 + p) * ldc + j0;
                store_vec(tb_vec_add(r[p], bias), nj, beta, vb, c + off,
                          ep && ep->residual ? ep->residual + off : NULL);
            }
        }
        if (ep && ep->mode != TB_GEMM_ACT_NONE) /* the strip's rows at once, as in block() */
            act_rows(ep, mi, nc, c + (int64_t)i0 * ldc, ldc, (int64_t)i0 * ldc);
    }
}

/* C^T = B A^T chunk by chunk of B's rows; a_packed (or NULL) is A packed as that product's B
 * (tb_cpu_gemm_pack_b_unit with tb, k and m): every chunk reads all of it. */
static void product_transposed(int m, int n, int k, float alpha, const float *a, int lda,
                               const float *b, int ldb, float beta, const tb_gemm_epilogue *ep,
                               float *c, int ldc, float *work, const float *a_packed)
{
    const tb_cpu_gemm_shared as_b = {.b = a_packed};
    float *ct = work + TB_CPU_GEMM_WORK_A + TB_CPU_GEMM_WORK_B;
    const int chunk = TB_CPU_GEMM_WORK_T / m / NR * NR;
    if (chunk == 0) { /* more rows than the scratch takes (tb_cpu_gemm_transposed never asks) */
        product(false, true, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc, work, NULL, NULL);
        return;
    }
    for (int j0 = 0; j0 < n; j0 += chunk) {
        const int nc = n - j0 < chunk ? n - j0 : chunk;
        product(false, true, nc, m, k, alpha, b + (int64_t)j0 * ldb, ldb, a, lda, 0.0f, NULL, ct,
                m, work, NULL, a_packed ? &as_b : NULL);
        tb_gemm_epilogue at;
        store_transposed(m, nc, ct, beta, tb_cpu_gemm_ep_at(ep, 0, j0, ldc, &at), c + j0, ldc);
    }
}

/* Measured on 1 thread (build a harness around tb_cpu_sgemm): 128 rows with k of 500-1024 and
 * 250-1024 columns ran 8-15% faster transposed; with k = 128-256, 256 rows, or 27000 columns
 * the store of C^T and the repacking of A per chunk cost more than the transposed packing of
 * B saves (256 x 27000 x 128: 60 GFLOP/s against 129). */
bool tb_cpu_gemm_transposed(bool ta, bool tb, int m, int n, int k)
{
    return !ta && tb && m >= 64 && m <= 128 && m < n && n <= 4096 && k >= 384;
}

void tb_cpu_sgemm_sums(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
                       int lda, const float *b, int ldb, float beta, const tb_gemm_epilogue *ep,
                       float *c, int ldc, float *work, float *at_sums, bool transposed,
                       const tb_cpu_gemm_shared *shared)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) {
        init_rows(m, n, beta, ep ? ep->bias : NULL, c, ldc);
        post_rows(ep, m, n, c, ldc);
        if (at_sums && k > 0) tb_cpu_col_sums(k, m, a, lda, at_sums);
        return;
    }
    if (transposed && !ta && tb && !at_sums)
        product_transposed(m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc, work,
                           shared ? shared->b : NULL);
    else
        product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc, work, at_sums,
                shared);
}

void tb_cpu_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                  const float *b, int ldb, float beta, const tb_gemm_epilogue *ep, float *c,
                  int ldc, float *work)
{
    tb_cpu_sgemm_sums(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ep, c, ldc, work, NULL,
                      tb_cpu_gemm_transposed(ta, tb, m, n, k), NULL);
}

#endif

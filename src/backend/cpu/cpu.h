/* cpu.h: internal to the CPU backend. Each kernel group registers its entries in the ops table. */
#ifndef TRAINBENCH_CPU_H
#define TRAINBENCH_CPU_H

#include "backend/backend_impl.h"
#include "backend/cpu/cpu_vec.h"

#include <stdint.h>
#include <string.h>

#include <omp.h>

/* exp(x) for float, vectorisable (no libm call, no errno): x = k ln2 + r with |r| <= ln2/2,
 * exp(r) by its degree-6 Taylor polynomial (relative error below 2e-7), times 2^k built in the
 * exponent bits. Inputs are clamped to [-87, 88]: the result never overflows or goes
 * subnormal (exp(-87) ~ 1.6e-38 stands in for smaller values); NaN gives NaN. */
static inline float tb_cpu_expf(float x)
{
    /* NaN stays NaN (a diverging run must show as one), by a select at the end so the
     * function stays branch-free and loops calling it vectorise; the clamp keeps k in range */
    const float in = x;
    x = x >= -87.0f ? (x <= 88.0f ? x : 88.0f) : -87.0f; /* NaN -> -87: no NaN reaches the int
                                                            conversion below (undefined) */
    /* k = round(x / ln2) by the 1.5 * 2^23 trick (exact for |k| < 2^22; here |k| <= 127) */
    const float kf = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - kf * 0.693145751953125f - kf * 1.428606765330187e-06f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)kf + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return in != in ? in : p * scale;
}

#ifdef TB_CPU_VEC_W
/* exp of cpu_vec.h's vector for x in [-87, 88] (no clamp, no NaN rule: for callers that know
 * their range): tb_cpu_expf's steps and constants with fused multiply-adds, 2^k applied by
 * vscalefps (AVX-512) or in the exponent bits (AVX2), so the same values up to the fused
 * multiply-adds. */
static inline tb_vf tb_cpu_vexp_core(tb_vf x)
{
    const tb_vf shift = tb_vec_set1(12582912.0f);
    const tb_vf kf = tb_vec_sub(tb_vec_fmadd(x, tb_vec_set1(1.44269504088896341f), shift), shift);
    tb_vf r = tb_vec_fnmadd(kf, tb_vec_set1(0.693145751953125f), x);
    r = tb_vec_fnmadd(kf, tb_vec_set1(1.428606765330187e-06f), r);
    tb_vf p = tb_vec_set1(1.0f / 720.0f);
    p = tb_vec_fmadd(p, r, tb_vec_set1(1.0f / 120.0f));
    p = tb_vec_fmadd(p, r, tb_vec_set1(1.0f / 24.0f));
    p = tb_vec_fmadd(p, r, tb_vec_set1(1.0f / 6.0f));
    p = tb_vec_fmadd(p, r, tb_vec_set1(0.5f));
    p = tb_vec_fmadd(p, r, tb_vec_set1(1.0f));
    p = tb_vec_fmadd(p, r, tb_vec_set1(1.0f));
    return tb_vec_scale2k(p, kf);
}

/* exp of cpu_vec.h's vector: tb_cpu_expf's algorithm (the same clamp to [-87, 88]), NaN kept. */
static inline tb_vf tb_cpu_vexp(tb_vf x)
{
    const tb_vf c = tb_vec_min(tb_vec_max(x, tb_vec_set1(-87.0f)), tb_vec_set1(88.0f));
    return tb_vec_nan_to(tb_cpu_vexp_core(c), x);
}
#endif

/* p[0, n) = 0. For the short runs of im2col (tens of floats, thousands of times a step): GCC
 * turns a plain zeroing loop into a memset call, whose call and dispatch cost more than the
 * stores (measured: 7.8% of the CNN's step in memset). */
static inline void tb_cpu_zero(float *p, int64_t n)
{
#ifdef __AVX512F__
    for (int64_t i = 0; i < n; i += 16)
        _mm512_mask_storeu_ps(p + i, tb_cpu_lanes(n - i), _mm512_setzero_ps());
#else
    if (n > 0) memset(p, 0, (size_t)n * sizeof *p);
#endif
}

/* 1 / (1 + e^-x), vectorisable; NaN gives NaN. */
static inline float tb_cpu_sigmoidf(float x) { return 1.0f / (1.0f + tb_cpu_expf(-x)); }

/* log(1 + x) for x in [0, 1], vectorisable: log1p(x) = 2 atanh(s) with s = x / (2 + x) in
 * [0, 1/3] (no cancellation for small x), atanh by its odd series to s^13 (relative error
 * below 1e-7). Used where x = exp(-|z|), as in the stable logistic losses. */
static inline float tb_cpu_log1pf_unit(float x)
{
    const float s = x / (2.0f + x), s2 = s * s;
    float p = 2.0f / 13.0f;
    p = p * s2 + 2.0f / 11.0f;
    p = p * s2 + 2.0f / 9.0f;
    p = p * s2 + 2.0f / 7.0f;
    p = p * s2 + 2.0f / 5.0f;
    p = p * s2 + 2.0f / 3.0f;
    p = p * s2 + 2.0f;
    return s * p;
}

/* tanh(x), vectorisable: the odd Taylor series to x^11 below |x| = 0.25 (relative error below
 * 1e-9 there), 1 - 2 / (exp(2|x|) + 1) above it (relative error below 3e-7), with the sign of
 * x; saturates to +-1 and keeps NaN. */
static inline float tb_cpu_tanhf(float x)
{
    const float ax = x < 0.0f ? -x : x, x2 = x * x;
    float p = -1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    const float small = x + x * x2 * p;
    const float big = 1.0f - 2.0f / (tb_cpu_expf(2.0f * ax) + 1.0f);
    const float r = ax < 0.25f ? small : (x < 0.0f ? -big : big);
    return x != x ? x : r;
}

#ifdef TB_CPU_VEC_W
/* tb_cpu_sigmoidf and tb_cpu_tanhf in cpu_vec.h's vectors: the same steps with fused
 * multiply-adds and tb_cpu_vexp, the same limits, NaN kept. (GCC's vectorisation of the scalar
 * forms ran tanh at 1.6 ns an element with AVX2.) */
static inline tb_vf tb_cpu_vsigmoid(tb_vf x)
{
    const tb_vf one = tb_vec_set1(1.0f);
    return tb_vec_div(one, tb_vec_add(one, tb_cpu_vexp(tb_vec_sub(tb_vec_zero(), x))));
}

static inline tb_vf tb_cpu_vtanh(tb_vf x)
{
    const tb_vf ax = tb_vec_abs(x), x2 = tb_vec_mul(x, x), one = tb_vec_set1(1.0f);
    tb_vf p = tb_vec_set1(-1382.0f / 155925.0f);
    p = tb_vec_fmadd(p, x2, tb_vec_set1(62.0f / 2835.0f));
    p = tb_vec_fmadd(p, x2, tb_vec_set1(-17.0f / 315.0f));
    p = tb_vec_fmadd(p, x2, tb_vec_set1(2.0f / 15.0f));
    p = tb_vec_fmadd(p, x2, tb_vec_set1(-1.0f / 3.0f));
    const tb_vf small = tb_vec_fmadd(tb_vec_mul(x, x2), p, x);
    /* 2|x| >= 0: only the top of the exponential's clamp applies (min keeps 88 for NaN) */
    const tb_vf e = tb_cpu_vexp_core(tb_vec_min(tb_vec_add(ax, ax), tb_vec_set1(88.0f)));
    const tb_vf big = tb_vec_sub(one, tb_vec_div(tb_vec_set1(2.0f), tb_vec_add(e, one)));
    const tb_vf r = tb_vec_select_lt(ax, tb_vec_set1(0.25f), small, tb_vec_signed(big, x));
    return tb_vec_nan_to(r, x);
}
#endif

/* ---- cpu_gemm.c: the backend's own sgemm ---- */
/* Whether rows of A lda floats apart crowd a few L1 sets when a tile reads MR of them in place
 * (a stride that is a multiple of 2 KB): block() (cpu_gemm.c) then copies a panel that serves
 * many tiles, and a split of C's columns copies all of A once for its blocks (cpu_dense.c). */
static inline bool tb_cpu_gemm_crowded_stride(int64_t lda) { return lda % 512 == 0; }
/* Blocking: micro tile MR x NR, K blocks of KC, A blocks of MC rows, B blocks of NC columns.
 * The tile is two vectors wide and as many rows as leave registers for B's two vectors and
 * A's broadcast: 12 x 32 (24 accumulators of AVX-512's 32 registers), 6 x 16 with AVX2 (12 of
 * 16). Without either, the products are OpenBLAS's and these only size a split's blocks. */
#if defined(TB_CPU_VEC_W) && TB_CPU_VEC_W == 8
#define TB_CPU_GEMM_TILE_ROWS 6
#else
#define TB_CPU_GEMM_TILE_ROWS 12
#endif
#ifdef TB_CPU_VEC_W
#define TB_CPU_GEMM_TILE_COLS (2 * TB_CPU_VEC_W)
#else
#define TB_CPU_GEMM_TILE_COLS 32
#endif
enum {
    TB_CPU_GEMM_MR = TB_CPU_GEMM_TILE_ROWS,
    TB_CPU_GEMM_NR = TB_CPU_GEMM_TILE_COLS,
    TB_CPU_GEMM_KC = 256,
    TB_CPU_GEMM_MC = 96,
    TB_CPU_GEMM_NC = 1024,
    TB_CPU_GEMM_WORK_A = TB_CPU_GEMM_MC * (TB_CPU_GEMM_KC + 16), /* floats, a multiple of 16 */
    TB_CPU_GEMM_WORK_B = TB_CPU_GEMM_KC * TB_CPU_GEMM_NC,
    /* C^T of a few-row product computed transposed (cpu_gemm.c: at most 256 rows, in column
     * chunks of at least 256) */
    TB_CPU_GEMM_WORK_T = 256 * 256,
    TB_CPU_GEMM_WORK = TB_CPU_GEMM_WORK_A + TB_CPU_GEMM_WORK_B + TB_CPU_GEMM_WORK_T
};

/* C[m, n] = alpha op(A) op(B) + beta C, then the epilogue ep (NULL: none; its bias, residual
 * and activation as tb_gemm_epilogue says, with the activation's matrices at C's stride),
 * row-major, on the calling thread. beta = 0 never reads C (it may hold NaN); an activation's
 * backward (TB_GEMM_ACT_BWD) needs beta = 0, as the multiplication by act' must not reach
 * beta C. work: TB_CPU_GEMM_WORK floats, 64-byte aligned, used as scratch. */
void tb_cpu_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                  const float *b, int ldb, float beta, const tb_gemm_epilogue *ep, float *c,
                  int ldc, float *work);
/* Whether tb_cpu_sgemm computes C [m, n] as C^T = op(B) op(A)^T: for B given transposed and
 * few rows and a deep k (a linear layer's forward pass on a batch of 64-128 with 384 inputs or
 * more, x [m, k] times w^T for w [n, k], n up to 4096),
 * w's rows are then read in place as the kernel's A and only x is packed (transposed) instead
 * of all of w; C^T goes to scratch in chunks of columns and is stored transposed with the
 * epilogue. The sums of the K blocks round in another order than C's own product, so a
 * caller that splits a product across threads decides once, for the whole product. */
bool tb_cpu_gemm_transposed(bool ta, bool tb, int m, int n, int k);
/* tb_cpu_sgemm with that decision given (transposed), and for A given transposed (ta, A^T
 * stored [k, m]) adding A^T's column sums to at_sums[0..m) (or NULL): a linear layer's bias
 * gradient beside its weight gradient (A^T = dy), summed while A^T is packed instead of in a
 * pass of its own. Each K block's sums are taken in double and added in K order: the same at
 * any thread count. at_sums must be NULL unless ta. */
/* The operand that every block of a product split across threads reads in full, packed once
 * for all of them (NULL members, or shared NULL: the product packs its own). */
typedef struct tb_cpu_gemm_shared {
    /* B for a split of C's rows; A for a split of its columns computed transposed (C^T = B
     * A^T, whose B it is: packed with tb, k and m): tb_cpu_gemm_packed_b_floats(k, n) floats
     * in tb_cpu_gemm_pack_b_units(k, n) units (one K block of one panel of columns) */
    const float *b;
    /* A^T (ta) for a split of C's columns: tb_cpu_gemm_packed_at_floats(k, m) floats in
     * tb_cpu_gemm_pack_at_units(k, m) units (one K block of one block of rows) */
    const float *at;
} tb_cpu_gemm_shared;
void tb_cpu_sgemm_sums(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
                       int lda, const float *b, int ldb, float beta, const tb_gemm_epilogue *ep,
                       float *c, int ldc, float *work, float *at_sums, bool transposed,
                       const tb_cpu_gemm_shared *shared);
/* The sizes (0: this build packs nothing, OpenBLAS does) and units of the shared operands,
 * unit u packed by the pack_*_unit calls, so that the threads share the packing. */
int64_t tb_cpu_gemm_packed_b_floats(int k, int n);
int tb_cpu_gemm_pack_b_units(int k, int n);
void tb_cpu_gemm_pack_b_unit(bool tb, int k, int n, const float *b, int ldb, int u, float *bp);
int64_t tb_cpu_gemm_packed_at_floats(int k, int m);
int tb_cpu_gemm_pack_at_units(int k, int m);
void tb_cpu_gemm_pack_at_unit(int k, int m, const float *at, int lda, int u, float *ap);
/* sums[j] += the sum over rows r of x[r ldx + j] for j < cols, in double, on the calling
 * thread (column blocks, rows in order). */
void tb_cpu_col_sums(int64_t rows, int64_t cols, const float *x, int64_t ldx, float *sums);
/* The same with OpenBLAS (its own threading; the bias copied into C's rows first, the
 * residual and activation in passes after it): for small products, and all of them without
 * AVX-512. */
void tb_cpu_sgemm_blas(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
                       int lda, const float *b, int ldb, float beta, const tb_gemm_epilogue *ep,
                       float *c, int ldc);
/* ep for the rows [r0, ...) and columns [c0, ...) of its product (a block of C at c + r0 ldc
 * + c0), in *out; returns NULL for NULL. */
const tb_gemm_epilogue *tb_cpu_gemm_ep_at(const tb_gemm_epilogue *ep, int64_t r0, int64_t c0,
                                          int64_t ldc, tb_gemm_epilogue *out);

/* ---- cpu_act.c: activations on the calling thread (the entries split across threads) ---- */
void tb_cpu_act_fwd_range(tb_act act, int64_t n, const float *x, float *y);
/* dx (+)= dy act'(x), y = act(x) where the derivative uses it; dx may be dy. */
void tb_cpu_act_bwd_range(tb_act act, int64_t n, const float *x, const float *y,
                          const float *dy, float *dx, bool dx_acc);
/* The same on a block of m rows of n: y = act(x), and d *= act'(x) in place (x and y at one
 * row stride), for a product's epilogue. */
void tb_cpu_act_fwd_rows(tb_act act, int m, int n, const float *x, int64_t ldx, float *y,
                         int64_t ldy);
void tb_cpu_act_grad_rows(tb_act act, int m, int n, const float *x, const float *y,
                          int64_t ldxy, float *d, int64_t ldd);

#ifdef TB_CPU_VEC_W
/* The pieces of cpu_gemm.c, for kernels that run their own small products (attention):
 * B [kc, nc] (element (p, j) at b[p rsb + j csb]) packed into panels of NR columns, each
 * [kc, NR] k-major and zero padded, panel q at bp + q kc NR; one MR x NR tile
 * C[mr, nr] = alpha A B + beta C (+ bias) (+ res, a matrix at C's stride) of one packed panel
 * (advanced by p0 rows: bp + p0 NR) and A read as MR rows of stride rsa (all MR rows must be
 * readable: zero rows past mr) or as a k-major panel [kc, MR]. The _b forms read B [kc, NR]
 * in place, rows of stride rsb, all NR columns readable. beta = 0 never reads C. */
#define TB_CPU_GEMM_TILES 1
void tb_cpu_gemm_pack_b(int kc, int nc, const float *b, int64_t rsb, int64_t csb, float *bp);
void tb_cpu_gemm_tile_rows(int kc, const float *a, int64_t rsa, const float *bp, float *c,
                           int64_t ldc, int mr, int nr, float alpha, float beta,
                           const float *bias, const float *res);
void tb_cpu_gemm_tile_panel(int kc, const float *a, const float *bp, float *c, int64_t ldc,
                            int mr, int nr, float alpha, float beta, const float *bias,
                            const float *res);
void tb_cpu_gemm_tile_rows_b(int kc, const float *a, int64_t rsa, const float *b, int64_t rsb,
                             float *c, int64_t ldc, int mr, int nr, float alpha, float beta);
void tb_cpu_gemm_tile_panel_b(int kc, const float *a, const float *b, int64_t rsb, float *c,
                              int64_t ldc, int mr, int nr, float alpha, float beta);
/* A [mr, kc] (rows of stride lda) copied to MR rows of stride ldp, rows past mr zero, for
 * tile_rows where A cannot be read in place. */
void tb_cpu_gemm_pack_a_rows(int mr, int kc, const float *a, int64_t lda, float *ap,
                             int64_t ldp);
/* A [mc, kc] given as At [kc, mc] (rows of stride ldat) packed into ceil(mc / MR) k-major
 * panels [kc, MR] for tile_panel, panel q at ap + q kc MR, columns past mc zero. */
void tb_cpu_gemm_pack_a_panels(int mc, int kc, const float *at, int64_t ldat, float *ap);
#endif

#ifdef __AVX512F__
/* Causal attention of one (batch, head) pair in registers (cpu_attention_fused.c), for the
 * shapes tb_cpu_attention_fused_fits accepts: q points at the pair's Q (K and V follow at
 * + c and + 2c, rows of stride 3c), p at its [t, t] probabilities, y and dy at its rows of
 * stride c, dq at its dQ (dK, dV as q's). beta 0 writes dq, dk, dv without reading them. */
bool tb_cpu_attention_fused_fits(int t, int hd);
void tb_cpu_attention_fused_fwd(int t, int hd, int c, float scale, const float *q, float *p,
                                float *y);
void tb_cpu_attention_fused_bwd(int t, int hd, int c, float scale, const float *q, float *dq,
                                const float *p, const float *dy, float beta);
#endif

/* The CPU backend's private state (tb_backend.impl): one gemm scratch slice per thread. */
typedef struct tb_cpu_state {
    float *gemm_work; /* threads x TB_CPU_GEMM_WORK floats */
    float *gemm_b;    /* a split product's shared operand (B, A or A^T), packed once for its
                         blocks (cpu_dense.c, tb_cpu_gemm_shared) */
    int64_t gemm_b_cap; /* floats gemm_b holds */
    bool static_split; /* large products: one block per thread (tb_backend_config) */
} tb_cpu_state;

/* Thread tid's gemm scratch (tid below the backend's thread count: a thread of a team the
 * backend started, never a caller's own parallel region). */
static inline float *tb_cpu_gemm_scratch(const tb_backend *be, int tid)
{
    return ((const tb_cpu_state *)be->impl)->gemm_work + (size_t)tid * TB_CPU_GEMM_WORK;
}

/* ---- row reductions that give the same bits at any thread count ---- */
/* Rows per chunk of a reduction over rows (bias gradients, layer norm's dgamma and dbeta):
 * each chunk is summed in float by whichever thread has it, and the chunks' sums are added in
 * order, in double (tb_cpu_sum_chunks); the chunks are fixed by the shape. */
#define TB_CPU_SUM_CHUNK 64

/* Scratch for floats partial sums of the chunks, or NULL where they do not fit or the caller
 * is inside another parallel region (whose threads would share it): the caller then sums
 * another way. It is thread 0's gemm slice: no product runs during the reduction. */
static inline float *tb_cpu_sum_scratch(const tb_backend *be, int64_t floats)
{
    return floats <= TB_CPU_GEMM_WORK && !omp_in_parallel() ? tb_cpu_gemm_scratch(be, 0) : NULL;
}

/* Inside the reduction's parallel region, after its chunks: out[j] (or nothing when out is
 * NULL) += the sum over chunks of part[ch stride + j] for j < cols, in double, in chunk order,
 * the columns shared by the team. */
static inline void tb_cpu_sum_chunks(int64_t chunks, int64_t cols, const float *part,
                                     int64_t stride, float *out)
{
    if (!out) return;
#pragma omp for schedule(static)
    for (int64_t j = 0; j < cols; j++) {
        double sum = 0.0;
        for (int64_t ch = 0; ch < chunks; ch++) sum += part[ch * stride + j];
        out[j] += (float)sum;
    }
}

/* ---- scalar sums that give the same bits at any thread count ---- */
/* A sum over n elements or rows (a squared norm, a loss) is cut into parts of tb_cpu_part_len
 * of them, fixed by n (and the kernel's smallest part, min_len): each part is summed by
 * whichever thread has it, and the parts' sums are added in order, in double
 * (tb_cpu_sum_in_parts). There are at most TB_CPU_PARTS parts, so their sums fit in an array on
 * the caller's stack. */
#define TB_CPU_PARTS 1024
/* Accumulators a part sums its elements into, element i into i mod TB_CPU_PART_LANES (four
 * AVX-512 registers of doubles): vectorised without reassociation, so the compiler's choices
 * do not reach the bits. */
#define TB_CPU_PART_LANES 32

static inline int64_t tb_cpu_part_len(int64_t n, int64_t min_len)
{
    int64_t len = (n + TB_CPU_PARTS - 1) / TB_CPU_PARTS;
    len = (len + TB_CPU_PART_LANES - 1) / TB_CPU_PART_LANES * TB_CPU_PART_LANES;
    return len > min_len ? len : min_len;
}

static inline int64_t tb_cpu_parts(int64_t n, int64_t len) { return n > 0 ? (n + len - 1) / len : 0; }

/* One part's sum: elements (or rows) [i0, i1) of the operands behind ctx. */
typedef double (*tb_cpu_part_sum)(const void *ctx, int64_t i0, int64_t i1);

/* The sum over n elements or rows in parts of tb_cpu_part_len(n, min_len), each summed by
 * part_sum on whichever thread has it (on the backend's threads if parallel), the parts' sums
 * added in order: the same bits at any thread count (an OpenMP reduction would add one partial
 * sum per thread). In cpu_dense.c. */
double tb_cpu_sum_in_parts(const tb_backend *be, int64_t n, int64_t min_len, bool parallel,
                           tb_cpu_part_sum part_sum, const void *ctx);

/* The sum of acc[0, TB_CPU_PART_LANES) in order. */
static inline double tb_cpu_add_lanes(const double *acc)
{
    double s = 0.0;
    for (int l = 0; l < TB_CPU_PART_LANES; l++) s += acc[l];
    return s;
}

void tb_cpu_register_dense(tb_backend_ops *ops);     /* cpu_dense.c: BLAS, element-wise */
void tb_cpu_register_act(tb_backend_ops *ops);       /* cpu_act.c: activations */
void tb_cpu_register_loss(tb_backend_ops *ops);      /* cpu_loss.c: losses, dropout */
void tb_cpu_register_conv(tb_backend_ops *ops);      /* cpu_conv.c: conv2d, pooling */
void tb_cpu_register_norm(tb_backend_ops *ops);      /* cpu_norm.c: batch norm, layer norm */
void tb_cpu_register_attention(tb_backend_ops *ops); /* cpu_attention.c: attention, embedding */
void tb_cpu_register_optim(tb_backend_ops *ops);     /* cpu_optim.c: optimizer updates */
void tb_cpu_register_optim_elem(tb_backend_ops *ops); /* cpu_optim_elem.c: the newer ones */

#endif

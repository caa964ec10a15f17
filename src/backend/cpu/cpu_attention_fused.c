/* cpu_attention_fused.c: causal self-attention of one (batch, head) pair in one pass per
 * direction, for contexts up to 64 and heads of 16, 32, 48 or 64 channels (AVX-512).
 *
 * Forward, for each group of 4 query rows: the group's score rows S = scale Q K^T stay in
 * registers (at most 4 vectors of 16 keys a row, only the causal ones: a group lies in one
 * 16-key block), their softmax is taken there and written once as the saved P, and Y = P V
 * is summed over the group's keys 0..i at once, so no pass reads S back and none computes
 * the masked half of a block. Backward: dP = dY V^T row group by row group in registers,
 * dS = scale P (dP - rowsum(dP P)) into a per-call buffer in L1, dQ = dS K from it; then dK
 * = dS^T Q and dV = P^T dY for each group of 4 key rows j over i >= j in one loop. Every
 * element is summed in a fixed order by the thread that owns its pair: the same bits at any
 * thread count. */
#include "backend/cpu/cpu.h"

#include <math.h>

#ifdef __AVX512F__

enum { FT = 64, FR = 4 }; /* the longest context; rows per group */

bool tb_cpu_attention_fused_fits(int t, int hd)
{
    return t >= 1 && t <= FT && hd >= 16 && hd <= 64 && hd % 16 == 0;
}

#define INLINE static inline __attribute__((always_inline))

static inline int imin(int a, int b)
{
    return a < b ? a : b;
}

/* bt [hd, FT] = B^T for B [t, hd] (rows of stride ld), columns t..FT-1 zero. (Measured
 * faster here than the gemm's 16 x 16 register-transposing packer and than reading B row by
 * row.) */
static void pack_t(int t, int hd, const float *b, int64_t ld, float *bt)
{
    for (int p = 0; p < hd; p++)
        for (int j = 0; j < FT; j++)
            bt[p * FT + j] = j < t ? b[(int64_t)j * ld + p] : 0.0f;
}

/* acc[r][v] = sum_p a[r][p] B^T[p, 16 v ..] for the group's rows a[r] and nb vectors. */
INLINE void rows_bt(int hd, const float *const a[FR], const float *bt, int nb, __m512 acc[FR][4])
{
    for (int r = 0; r < FR; r++)
        for (int v = 0; v < nb; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (int p = 0; p < hd; p++) {
        __m512 b[4];
        for (int v = 0; v < nb; v++)
            b[v] = _mm512_load_ps(bt + p * FT + 16 * v);
        for (int r = 0; r < FR; r++) {
            const __m512 x = _mm512_set1_ps(a[r][p]);
            for (int v = 0; v < nb; v++)
                acc[r][v] = _mm512_fmadd_ps(x, b[v], acc[r][v]);
        }
    }
}

/* out[r, :hd] = sum_{j < jn} w[r][j] B[j, :] (B rows of stride ldb), then written to
 * out[r] (+ out[r] when beta is 1; beta 0 never reads it) for the first rows rows. */
INLINE void rows_b(int jn, int hv, const float *const w[FR], const float *b, int64_t ldb,
                   float beta, int rows, float *const out[FR])
{
    __m512 acc[FR][4];
    for (int r = 0; r < FR; r++)
        for (int h = 0; h < hv; h++)
            acc[r][h] = _mm512_setzero_ps();
    for (int j = 0; j < jn; j++) {
        __m512 x[4];
        for (int h = 0; h < hv; h++)
            x[h] = _mm512_loadu_ps(b + (int64_t)j * ldb + 16 * h);
        for (int r = 0; r < FR; r++) {
            const __m512 s = _mm512_set1_ps(w[r][j]);
            for (int h = 0; h < hv; h++)
                acc[r][h] = _mm512_fmadd_ps(s, x[h], acc[r][h]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < hv; h++) {
            __m512 o = acc[r][h];
            if (beta != 0.0f) o = _mm512_add_ps(o, _mm512_loadu_ps(out[r] + 16 * h));
            _mm512_storeu_ps(out[r] + 16 * h, o);
        }
}

/* One group of query rows i0 .. i0 + rows - 1 forward: P rows into p (stride t), Y rows. */
INLINE void fwd_group(int t, int hd, int hv, int nb, int i0, int rows, float scale, const float *q,
                      int64_t ldq, const float *kt, const float *v, float *p, float *y, int64_t ldy)
{
    const float *qr[FR], *pr[FR];
    float *yr[FR];
    for (int r = 0; r < FR; r++) {
        const int i = r < rows ? i0 + r : i0; /* rows past t repeat the first, unused */
        qr[r] = q + (int64_t)i * ldq;
        pr[r] = p + (int64_t)i * t;
        yr[r] = y + (int64_t)i * ldy;
    }
    __m512 s[FR][4];
    rows_bt(hd, qr, kt, nb, s);
    const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    const int nt = (t + 15) / 16;
    for (int r = 0; r < rows; r++) {
        const __mmask16 last = tb_cpu_lanes(i0 + r + 1 - 16 * (nb - 1));
        __m512 vmx = ninf;
        for (int b = 0; b < nb; b++) {
            s[r][b] = _mm512_mul_ps(s[r][b], vs);
            if (b == nb - 1) s[r][b] = _mm512_mask_mov_ps(ninf, last, s[r][b]);
            vmx = _mm512_max_ps(vmx, s[r][b]);
        }
        const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vmx));
        __m512 vsum = _mm512_setzero_ps();
        for (int b = 0; b < nb; b++) {
            const __mmask16 valid = b == nb - 1 ? last : (__mmask16)0xffff;
            s[r][b] = _mm512_maskz_mov_ps(valid, tb_cpu_vexp(_mm512_sub_ps(s[r][b], mx)));
            vsum = _mm512_add_ps(vsum, s[r][b]);
        }
        const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
        float *row = p + (int64_t)(i0 + r) * t;
        for (int b = 0; b < nt; b++)
            _mm512_mask_storeu_ps(row + 16 * b, tb_cpu_lanes(t - 16 * b),
                                  b < nb ? _mm512_mul_ps(s[r][b], inv) : _mm512_setzero_ps());
    }
    rows_b(i0 + rows, hv, pr, v, ldq, 0.0f, rows, yr);
}

INLINE void fwd_pair_nb(int t, int hd, int hv, float scale, const float *q, int64_t ldq,
                        const float *kt, const float *v, float *p, float *y, int64_t ldy)
{
    for (int i0 = 0; i0 < t; i0 += FR) {
        const int rows = imin(FR, t - i0);
        switch (i0 / 16) {
        case 0:
            fwd_group(t, hd, hv, 1, i0, rows, scale, q, ldq, kt, v, p, y, ldy);
            break;
        case 1:
            fwd_group(t, hd, hv, 2, i0, rows, scale, q, ldq, kt, v, p, y, ldy);
            break;
        case 2:
            fwd_group(t, hd, hv, 3, i0, rows, scale, q, ldq, kt, v, p, y, ldy);
            break;
        default:
            fwd_group(t, hd, hv, 4, i0, rows, scale, q, ldq, kt, v, p, y, ldy);
            break;
        }
    }
}

void tb_cpu_attention_fused_fwd(int t, int hd, int c, float scale, const float *q, float *p,
                                float *y)
{
    const int64_t ldq = 3 * (int64_t)c;
    const float *k = q + c, *v = q + 2 * c;
    _Alignas(64) float kt[64 * FT];
    pack_t(t, hd, k, ldq, kt);
    switch (hd / 16) {
    case 1:
        fwd_pair_nb(t, hd, 1, scale, q, ldq, kt, v, p, y, c);
        break;
    case 2:
        fwd_pair_nb(t, hd, 2, scale, q, ldq, kt, v, p, y, c);
        break;
    case 3:
        fwd_pair_nb(t, hd, 3, scale, q, ldq, kt, v, p, y, c);
        break;
    default:
        fwd_pair_nb(t, hd, 4, scale, q, ldq, kt, v, p, y, c);
        break;
    }
}

/* One group of query rows backward: dS rows (times scale) into ds (stride FT), dQ rows. */
INLINE void bwd_group(int t, int hd, int hv, int nb, int i0, int rows, float scale, const float *k,
                      int64_t ldq, const float *vt, const float *p, const float *dy, int64_t ldy,
                      float *ds, float *dq, float beta)
{
    const float *dyr[FR], *dsr[FR];
    float *dqr[FR];
    for (int r = 0; r < FR; r++) {
        const int i = r < rows ? i0 + r : i0;
        dyr[r] = dy + (int64_t)i * ldy;
        dsr[r] = ds + (int64_t)i * FT;
        dqr[r] = dq + (int64_t)i * ldq;
    }
    __m512 dp[FR][4];
    rows_bt(hd, dyr, vt, nb, dp);
    const __m512 vs = _mm512_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        const float *prow = p + (int64_t)(i0 + r) * t;
        __m512 pv[4], vdot = _mm512_setzero_ps();
        for (int b = 0; b < nb; b++) { /* P is zero past the diagonal and VT past t */
            pv[b] = _mm512_maskz_loadu_ps(tb_cpu_lanes(t - 16 * b), prow + 16 * b);
            vdot = _mm512_fmadd_ps(dp[r][b], pv[b], vdot);
        }
        const __m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(vdot));
        float *row = ds + (int64_t)(i0 + r) * FT;
        for (int b = 0; b < FT / 16; b++)
            _mm512_store_ps(
                row + 16 * b,
                b < nb ? _mm512_mul_ps(_mm512_mul_ps(pv[b], _mm512_sub_ps(dp[r][b], dot)), vs)
                       : _mm512_setzero_ps());
    }
    rows_b(i0 + rows, hv, dsr, k, ldq, beta, rows, dqr);
}

/* dK and dV rows j0 .. j0 + rows - 1: sums over i >= j0 (dS and P are zero for i < j). */
INLINE void bwd_keys(int t, int hv, int j0, int rows, const float *q, int64_t ldq, const float *p,
                     const float *dy, int64_t ldy, const float *ds, float *dk, float *dv,
                     float beta)
{
    int col[FR];
    for (int r = 0; r < FR; r++)
        col[r] = imin(j0 + r, t - 1); /* columns past t repeat the last, unused */
    __m512 ak[FR][4], av[FR][4];
    for (int r = 0; r < FR; r++)
        for (int h = 0; h < hv; h++)
            ak[r][h] = av[r][h] = _mm512_setzero_ps();
    for (int i = j0; i < t; i++) {
        __m512 qx[4], dx[4];
        for (int h = 0; h < hv; h++) {
            qx[h] = _mm512_loadu_ps(q + (int64_t)i * ldq + 16 * h);
            dx[h] = _mm512_loadu_ps(dy + (int64_t)i * ldy + 16 * h);
        }
        for (int r = 0; r < FR; r++) {
            const __m512 a = _mm512_set1_ps(ds[(int64_t)i * FT + col[r]]);
            const __m512 b = _mm512_set1_ps(p[(int64_t)i * t + col[r]]);
            for (int h = 0; h < hv; h++) {
                ak[r][h] = _mm512_fmadd_ps(a, qx[h], ak[r][h]);
                av[r][h] = _mm512_fmadd_ps(b, dx[h], av[r][h]);
            }
        }
    }
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < hv; h++) {
            float *ok = dk + (int64_t)(j0 + r) * ldq + 16 * h,
                  *ov = dv + (int64_t)(j0 + r) * ldq + 16 * h;
            __m512 xk = ak[r][h], xv = av[r][h];
            if (beta != 0.0f) {
                xk = _mm512_add_ps(xk, _mm512_loadu_ps(ok));
                xv = _mm512_add_ps(xv, _mm512_loadu_ps(ov));
            }
            _mm512_storeu_ps(ok, xk);
            _mm512_storeu_ps(ov, xv);
        }
}

INLINE void bwd_pair_nb(int t, int hd, int hv, float scale, const float *q, int64_t ldq,
                        const float *vt, const float *p, const float *dy, int64_t ldy, float *ds,
                        float *dq, float beta)
{
    const float *k = q + ldq / 3;
    for (int i0 = 0; i0 < t; i0 += FR) {
        const int rows = imin(FR, t - i0);
        switch (i0 / 16) {
        case 0:
            bwd_group(t, hd, hv, 1, i0, rows, scale, k, ldq, vt, p, dy, ldy, ds, dq, beta);
            break;
        case 1:
            bwd_group(t, hd, hv, 2, i0, rows, scale, k, ldq, vt, p, dy, ldy, ds, dq, beta);
            break;
        case 2:
            bwd_group(t, hd, hv, 3, i0, rows, scale, k, ldq, vt, p, dy, ldy, ds, dq, beta);
            break;
        default:
            bwd_group(t, hd, hv, 4, i0, rows, scale, k, ldq, vt, p, dy, ldy, ds, dq, beta);
            break;
        }
    }
    float *dk = dq + ldq / 3, *dv = dq + 2 * (ldq / 3);
    for (int j0 = 0; j0 < t; j0 += FR)
        bwd_keys(t, hv, j0, imin(FR, t - j0), q, ldq, p, dy, ldy, ds, dk, dv, beta);
}

void tb_cpu_attention_fused_bwd(int t, int hd, int c, float scale, const float *q, float *dq,
                                const float *p, const float *dy, float beta)
{
    const int64_t ldq = 3 * (int64_t)c;
    _Alignas(64) float vt[64 * FT];
    _Alignas(64) float ds[FT * FT];
    pack_t(t, hd, q + 2 * c, ldq, vt);
    switch (hd / 16) {
    case 1:
        bwd_pair_nb(t, hd, 1, scale, q, ldq, vt, p, dy, c, ds, dq, beta);
        break;
    case 2:
        bwd_pair_nb(t, hd, 2, scale, q, ldq, vt, p, dy, c, ds, dq, beta);
        break;
    case 3:
        bwd_pair_nb(t, hd, 3, scale, q, ldq, vt, p, dy, c, ds, dq, beta);
        break;
    default:
        bwd_pair_nb(t, hd, 4, scale, q, ldq, vt, p, dy, c, ds, dq, beta);
        break;
    }
}

#endif

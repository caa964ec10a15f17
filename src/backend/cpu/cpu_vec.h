/* cpu_vec.h: the vector of the CPU backend's own sgemm (cpu_gemm.c) and of the activations'
 * loops (cpu_act.c), as the compiler's target
 * gives it: 16 floats with AVX-512, 8 with AVX2 and FMA, none without (the backend then
 * multiplies with OpenBLAS alone). The kernel is written once against these few operations;
 * a partial vector is its first n lanes, loaded with zeros past them and stored without
 * touching the memory past them. */
#ifndef TRAINBENCH_CPU_VEC_H
#define TRAINBENCH_CPU_VEC_H

#include <stdint.h>

/* Every operation is inlined, also into the sanitizer build's uninstrumented kernels (GCC does
 * not inline a plain inline function into a function whose sanitizer attributes differ, and
 * each vector operation became a call). */
#define TB_VEC_INLINE static inline __attribute__((always_inline))

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#if defined(__AVX512F__)

#define TB_CPU_VEC_W 16
typedef __m512 tb_vf;

/* The first n of 16 lanes (none for n <= 0, all for n >= 16). */
TB_VEC_INLINE __mmask16 tb_cpu_lanes(int64_t n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* the first n lanes (all for n >= 16), zeros past them */
TB_VEC_INLINE tb_vf tb_vec_load_n(const float *p, int64_t n)
{
    return _mm512_maskz_loadu_ps(tb_cpu_lanes(n), p);
}

TB_VEC_INLINE void tb_vec_store_n(float *p, int64_t n, tb_vf v)
{
    _mm512_mask_storeu_ps(p, tb_cpu_lanes(n), v);
}

TB_VEC_INLINE tb_vf tb_vec_zero(void) { return _mm512_setzero_ps(); }
TB_VEC_INLINE tb_vf tb_vec_set1(float x) { return _mm512_set1_ps(x); }
TB_VEC_INLINE tb_vf tb_vec_loadu(const float *p) { return _mm512_loadu_ps(p); }
TB_VEC_INLINE void tb_vec_store(float *p, tb_vf v) { _mm512_store_ps(p, v); } /* aligned */
TB_VEC_INLINE tb_vf tb_vec_add(tb_vf a, tb_vf b) { return _mm512_add_ps(a, b); }
TB_VEC_INLINE tb_vf tb_vec_mul(tb_vf a, tb_vf b) { return _mm512_mul_ps(a, b); }
TB_VEC_INLINE tb_vf tb_vec_sub(tb_vf a, tb_vf b) { return _mm512_sub_ps(a, b); }
TB_VEC_INLINE tb_vf tb_vec_max(tb_vf a, tb_vf b) { return _mm512_max_ps(a, b); }
TB_VEC_INLINE float tb_vec_reduce_add(tb_vf v) { return _mm512_reduce_add_ps(v); }
TB_VEC_INLINE float tb_vec_reduce_max(tb_vf v) { return _mm512_reduce_max_ps(v); }

/* the first n lanes, fill past them */
TB_VEC_INLINE tb_vf tb_vec_load_or(const float *p, int64_t n, tb_vf fill)
{
    return _mm512_mask_loadu_ps(fill, tb_cpu_lanes(n), p);
}

/* v's first n lanes, zeros past them */
TB_VEC_INLINE tb_vf tb_vec_keep_n(tb_vf v, int64_t n) { return _mm512_maskz_mov_ps(tb_cpu_lanes(n), v); }
TB_VEC_INLINE tb_vf tb_vec_fmadd(tb_vf a, tb_vf b, tb_vf c) { return _mm512_fmadd_ps(a, b, c); }
TB_VEC_INLINE tb_vf tb_vec_fnmadd(tb_vf a, tb_vf b, tb_vf c) { return _mm512_fnmadd_ps(a, b, c); }
TB_VEC_INLINE tb_vf tb_vec_min(tb_vf a, tb_vf b) { return _mm512_min_ps(a, b); }
/* p 2^k for k a whole number in float */
TB_VEC_INLINE tb_vf tb_vec_scale2k(tb_vf p, tb_vf k) { return _mm512_scalef_ps(p, k); }
/* x where x is NaN, else v */
TB_VEC_INLINE tb_vf tb_vec_nan_to(tb_vf v, tb_vf x)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), v, x);
}
TB_VEC_INLINE tb_vf tb_vec_div(tb_vf a, tb_vf b) { return _mm512_div_ps(a, b); }
/* |x|, and m (not negative) with the sign of x */
TB_VEC_INLINE tb_vf tb_vec_abs(tb_vf x) { return _mm512_abs_ps(x); }
TB_VEC_INLINE tb_vf tb_vec_signed(tb_vf m, tb_vf x)
{
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    return _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(m), _mm512_and_si512(_mm512_castps_si512(x), sign)));
}
/* t where a < b, else f (f where either is NaN) */
TB_VEC_INLINE tb_vf tb_vec_select_lt(tb_vf a, tb_vf b, tb_vf t, tb_vf f)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), f, t);
}

/* In-register transpose of a 16 x 16 block: r[i] holds row i on entry, column i on return. */
TB_VEC_INLINE void tb_vec_transpose(tb_vf r[16])
{
    tb_vf t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
        t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);
        t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
        t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
        r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
        r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
        r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xDD);
    }
}

#elif defined(__AVX2__) && defined(__FMA__)

#define TB_CPU_VEC_W 8
typedef __m256 tb_vf;

/* The first n of 8 lanes, as a vector of all-ones and zero lanes. */
TB_VEC_INLINE __m256i tb_cpu_lanes(int64_t n)
{
    const int k = n >= 8 ? 8 : n <= 0 ? 0 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* A whole vector takes the plain load and store: AMD's masked store is microcoded, several
 * times slower than a plain one, and a tile's stores are whole but at C's right edge. */
TB_VEC_INLINE tb_vf tb_vec_load_n(const float *p, int64_t n)
{
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tb_cpu_lanes(n));
}

TB_VEC_INLINE void tb_vec_store_n(float *p, int64_t n, tb_vf v)
{
    if (n >= 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, tb_cpu_lanes(n), v);
}

TB_VEC_INLINE tb_vf tb_vec_zero(void) { return _mm256_setzero_ps(); }
TB_VEC_INLINE tb_vf tb_vec_set1(float x) { return _mm256_set1_ps(x); }
TB_VEC_INLINE tb_vf tb_vec_loadu(const float *p) { return _mm256_loadu_ps(p); }
TB_VEC_INLINE void tb_vec_store(float *p, tb_vf v) { _mm256_store_ps(p, v); } /* aligned */
TB_VEC_INLINE tb_vf tb_vec_add(tb_vf a, tb_vf b) { return _mm256_add_ps(a, b); }
TB_VEC_INLINE tb_vf tb_vec_mul(tb_vf a, tb_vf b) { return _mm256_mul_ps(a, b); }
TB_VEC_INLINE tb_vf tb_vec_sub(tb_vf a, tb_vf b) { return _mm256_sub_ps(a, b); }
TB_VEC_INLINE tb_vf tb_vec_max(tb_vf a, tb_vf b) { return _mm256_max_ps(a, b); }

/* the 8 lanes summed pairwise: halves, then quarters, then the last two */
TB_VEC_INLINE float tb_vec_reduce_add(tb_vf v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

TB_VEC_INLINE float tb_vec_reduce_max(tb_vf v)
{
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}

/* the first n lanes, fill past them */
TB_VEC_INLINE tb_vf tb_vec_load_or(const float *p, int64_t n, tb_vf fill)
{
    if (n >= 8) return _mm256_loadu_ps(p);
    const __m256i m = tb_cpu_lanes(n);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}

/* v's first n lanes, zeros past them */
TB_VEC_INLINE tb_vf tb_vec_keep_n(tb_vf v, int64_t n)
{
    return n >= 8 ? v : _mm256_and_ps(v, _mm256_castsi256_ps(tb_cpu_lanes(n)));
}
TB_VEC_INLINE tb_vf tb_vec_fmadd(tb_vf a, tb_vf b, tb_vf c) { return _mm256_fmadd_ps(a, b, c); }
TB_VEC_INLINE tb_vf tb_vec_fnmadd(tb_vf a, tb_vf b, tb_vf c) { return _mm256_fnmadd_ps(a, b, c); }
TB_VEC_INLINE tb_vf tb_vec_min(tb_vf a, tb_vf b) { return _mm256_min_ps(a, b); }
/* p 2^k for k a whole number in float in [-126, 127]: 2^k built in the exponent bits */
TB_VEC_INLINE tb_vf tb_vec_scale2k(tb_vf p, tb_vf k)
{
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}
/* x where x is NaN, else v */
TB_VEC_INLINE tb_vf tb_vec_nan_to(tb_vf v, tb_vf x)
{
    return _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
TB_VEC_INLINE tb_vf tb_vec_div(tb_vf a, tb_vf b) { return _mm256_div_ps(a, b); }
/* |x|, and m (not negative) with the sign of x */
TB_VEC_INLINE tb_vf tb_vec_abs(tb_vf x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
TB_VEC_INLINE tb_vf tb_vec_signed(tb_vf m, tb_vf x)
{
    return _mm256_or_ps(m, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
}
/* t where a < b, else f (f where either is NaN) */
TB_VEC_INLINE tb_vf tb_vec_select_lt(tb_vf a, tb_vf b, tb_vf t, tb_vf f)
{
    return _mm256_blendv_ps(f, t, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
}

/* In-register transpose of an 8 x 8 block: r[i] holds row i on entry, column i on return. */
TB_VEC_INLINE void tb_vec_transpose(tb_vf r[8])
{
    tb_vf t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        s[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(s[i], s[4 + i], 0x31);
    }
}

#endif

#endif

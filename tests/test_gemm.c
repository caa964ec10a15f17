/* test_gemm.c: the CPU backend's own sgemm (cpu_gemm.c) against a double-precision reference,
 * on every transpose case and on shapes at, below and past each blocking boundary; the
 * backend's gemm and gemm_ep entries split across threads with bit-identical results; the
 * epilogue's residual and activations (forward, and the derivative for the backward pass)
 * against the reference, also as a backend without its own gemm_ep computes it (gemm, then
 * the element-wise entries); the product profile's entries. */
#include "testutil.h"

#include "backend/cpu/cpu.h"

#include <stdlib.h>
#include <string.h>

#define SENTINEL 7.0f

typedef struct problem {
    bool ta, tb;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
    bool bias;
} problem;

typedef struct operands {
    float *a, *b, *c, *bias, *ref;
} operands;

static float elem(const float *x, int ld, bool trans, int i, int j)
{
    return trans ? x[(int64_t)j * ld + i] : x[(int64_t)i * ld + j];
}

/* The reference C in double (o->ref; SENTINEL in the padding columns, and the same in C,
 * NaN in C where beta = 0): op(B) as dense doubles first, then each row of C as a
 * running sum over q in order, the same sums as a dot product per element in a loop over
 * contiguous rows (element by element, the reference took 86% of this test under the
 * sanitizers). Returns the tolerance scale (sum of |terms| of the largest element). */
static double reference(const problem *p, operands *o)
{
    /* one more element each: an empty shape (k = 0) still gets memory */
    double *bd = malloc(sizeof(double) * ((size_t)p->k * (size_t)p->n + 1));
    double *acc = malloc(sizeof(double) * ((size_t)p->n + 1));
    double *mag = malloc(sizeof(double) * ((size_t)p->n + 1));
    if (!bd || !acc || !mag) abort();
    for (int q = 0; q < p->k; q++)
        for (int j = 0; j < p->n; j++)
            bd[(int64_t)q * p->n + j] = elem(o->b, p->ldb, p->tb, q, j);
    double scale = 0.0;
    for (int i = 0; i < p->m; i++) {
        for (int j = 0; j < p->n; j++) acc[j] = mag[j] = 0.0;
        for (int q = 0; q < p->k; q++) {
            const double aiq = elem(o->a, p->lda, p->ta, i, q), *bq = bd + (int64_t)q * p->n;
            for (int j = 0; j < p->n; j++) {
                const double t = aiq * bq[j];
                acc[j] += t;
                mag[j] += fabs(t);
            }
        }
        for (int j = 0; j < p->ldc; j++) {
            float *cij = o->c + (int64_t)i * p->ldc + j;
            if (j >= p->n) {
                *cij = o->ref[(int64_t)i * p->ldc + j] = SENTINEL;
                continue;
            }
            if (p->beta == 0.0f) *cij = NAN;
            double v = p->alpha * acc[j], extra = 0.0;
            if (p->beta != 0.0f) extra += (double)p->beta * *cij;
            if (p->bias) extra += o->bias[j];
            o->ref[(int64_t)i * p->ldc + j] = (float)(v + extra);
            const double m = fabs(p->alpha) * mag[j] + fabs(extra);
            if (m > scale) scale = m;
        }
    }
    free(bd);
    free(acc);
    free(mag);
    return scale;
}

/* A and B uniform in [-1, 1); C uniform (or NaN where beta = 0: it must not be read) inside
 * [m, n] and SENTINEL in the padding columns up to ldc; the reference in double. Returns the
 * per-problem tolerance scale (sum of |terms| of the largest element). */
static double setup(const problem *p, operands *o, tb_rng *rng)
{
    const int64_t asz = (int64_t)(p->ta ? p->k : p->m) * p->lda;
    const int64_t bsz = (int64_t)(p->tb ? p->n : p->k) * p->ldb;
    const int64_t csz = (int64_t)p->m * p->ldc;
    o->a = malloc(sizeof(float) * (size_t)asz);
    o->b = malloc(sizeof(float) * (size_t)bsz);
    o->c = malloc(sizeof(float) * (size_t)csz);
    o->ref = malloc(sizeof(float) * (size_t)csz);
    o->bias = malloc(sizeof(float) * (size_t)p->n);
    tb_rng_fill_uniform(rng, o->a, asz, -1.0f, 1.0f);
    tb_rng_fill_uniform(rng, o->b, bsz, -1.0f, 1.0f);
    tb_rng_fill_uniform(rng, o->c, csz, -1.0f, 1.0f);
    tb_rng_fill_uniform(rng, o->bias, p->n, -1.0f, 1.0f);
    return reference(p, o);
}

static void release(operands *o)
{
    free(o->a);
    free(o->b);
    free(o->c);
    free(o->bias);
    free(o->ref);
}

/* Every element within 1e-6 of the problem's scale (fp32 accumulation over k <= 600 terms),
 * the padding columns untouched. */
static bool agrees(const problem *p, const float *c, const float *ref, double scale)
{
    for (int i = 0; i < p->m; i++)
        for (int j = 0; j < p->ldc; j++) {
            float x = c[(int64_t)i * p->ldc + j], y = ref[(int64_t)i * p->ldc + j];
            bool ok = j >= p->n ? x == SENTINEL : fabs((double)x - y) <= 1e-6 * scale + 1e-6;
            if (!ok) {
                fprintf(stderr,
                        "  %c%c m=%d n=%d k=%d alpha=%g beta=%g bias=%d: C[%d][%d] = %g, want %g\n",
                        p->ta ? 'T' : 'N', p->tb ? 'T' : 'N', p->m, p->n, p->k, p->alpha,
                        p->beta, p->bias, i, j, x, y);
                return false;
            }
        }
    return true;
}

static void test_against_reference(void)
{
    /* below, at and past the micro tile (12 x 32 with AVX-512, 6 x 16 with AVX2), the K
     * block (256), the A block (96 rows) and the B block (1024 columns); tall, wide and deep
     * products */
    static const int shapes[][3] = {
        {1, 1, 1},     {12, 32, 1},    {13, 33, 17},  {11, 31, 255}, {37, 53, 29},
        {6, 16, 1},    {7, 17, 9},     {5, 15, 250},
        {96, 64, 256}, {97, 65, 257},  {200, 70, 600}, {5, 1030, 3},  {130, 1025, 40},
        {24, 17, 513}, {30, 40, 510}, /* lda 512 (s % 3 = 2): read in place, few tiles */
        /* few rows, more columns (NT computed transposed): column chunks with a tail, rows
         * and k off the 16 x 16 transposes */
        {128, 1100, 400}, {77, 200, 390},
        {40, 300, 510}, /* lda 512 and more than 8 tiles: rows copied (L1 sets) */
        {1030, 9, 70}, /* A^T's rows more than a page apart: packed row by row (AVX2) */
        /* B's rows more than a page apart, packed row by row: a last B block of 44 and 36
         * columns, its last panel short by more and by less than a vector */
        {20, 1068, 30}, {9, 1060, 300},
    };
    tb_rng rng = tb_rng_make(11, TB_STREAM_INIT);
    float *work = aligned_alloc(64, sizeof(float) * TB_CPU_GEMM_WORK);
    int cases = 0, good = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int v = 0; v < 3; v++) {
                problem p = {.ta = t & 1, .tb = t >> 1, .m = shapes[s][0], .n = shapes[s][1],
                             .k = shapes[s][2]};
                /* leading dimensions with padding, as views of wider matrices */
                p.lda = (p.ta ? p.m : p.k) + (int)(s % 3);
                p.ldb = (p.tb ? p.k : p.n) + 2;
                p.ldc = p.n + 3;
                p.alpha = v == 1 ? -0.5f : 1.0f;
                p.beta = v == 0 ? 0.0f : (v == 1 ? 1.0f : 0.25f);
                p.bias = v != 1;
                operands o;
                double scale = setup(&p, &o, &rng);
                const tb_gemm_epilogue ep = {.bias = o.bias};
                tb_cpu_sgemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, o.a, p.lda, o.b, p.ldb, p.beta,
                             p.bias ? &ep : NULL, o.c, p.ldc, work);
                cases++;
                good += agrees(&p, o.c, o.ref, scale);
                release(&o);
            }
    printf("  %d of %d products agree with the double reference\n", good, cases);
    CHECK(good == cases);
    free(work);
}

/* k = 0 (and alpha = 0) leave beta C + bias, never reading C when beta = 0 */
static void test_empty_product(void)
{
    float *work = aligned_alloc(64, sizeof(float) * TB_CPU_GEMM_WORK);
    float c[6] = {NAN, NAN, NAN, 1, 2, 3}, bias[3] = {0.5f, -1, 2};
    const tb_gemm_epilogue ep = {.bias = bias};
    tb_cpu_sgemm(false, false, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, 0.0f, &ep, c, 3, work);
    CHECK(c[0] == 0.5f && c[1] == -1.0f && c[2] == 2.0f && c[3] == 0.5f && c[5] == 2.0f);
    float d[2] = {4, 8}, a[1] = {3}, b[2] = {1, 1};
    tb_cpu_sgemm(false, false, 1, 2, 1, 0.0f, a, 1, b, 2, 0.5f, NULL, d, 2, work);
    CHECK(d[0] == 2.0f && d[1] == 4.0f);
    free(work);
}

static tb_backend *backend_split(int threads, bool static_split)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = threads,
                             .static_split = static_split};
    tb_backend *be = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_backend_create(&cfg, &be, &err), &err)) exit(1);
    return be;
}

static tb_backend *backend(int threads) { return backend_split(threads, false); }

/* The backend entries: one thread against two and three (split by rows, or by columns when
 * the product is wider than tall, into blocks the threads take in turn) and two with one block
 * each (static_split), own kernel and OpenBLAS sizes, against the reference, and bit for bit
 * where the own kernel runs (AVX-512 and AVX2 builds). */
static void test_backend_split(void)
{
    enum { N = 4 };
    tb_backend *bes[N] = {backend(1), backend(2), backend(3), backend_split(2, true)};
    /* split by rows, by columns, too small to split (OpenBLAS), split by rows with tails, split
     * by rows with B wider than one block of columns (B packed once for all blocks: each
     * block of columns and of K at its own place), split by columns computed transposed
     * (B given transposed: A packed once for all blocks), split by columns with more rows than
     * one block of A (A given transposed: its panels packed once, the last block's rows
     * rounded up to whole panels); then by rows and by columns with the
     * operand every block reads past GEMM_SHARED_MAX (one block per thread), not transposed
     * only (their k makes them slow); last, by columns with A's rows 2 KB apart (copied once
     * to another stride for all blocks when A is not transposed) */
    static const int shapes[][3] = {{1100, 200, 128}, {96, 700, 300},   {40, 40, 40},
                                    {1000, 70, 300},  {1030, 1028, 40}, {120, 900, 520},
                                    {200, 900, 300},  {8, 8, 262200},    {16, 64, 131100},
                                    {100, 640, 1024}};
    tb_rng rng = tb_rng_make(12, TB_STREAM_INIT);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < (shapes[s][2] > 10000 ? 1 : 4); t++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                problem p = {.ta = t & 1, .tb = t >> 1, .m = shapes[s][0], .n = shapes[s][1],
                             .k = shapes[s][2], .alpha = 1.0f, .bias = with_bias};
                p.lda = p.ta ? p.m : p.k;
                p.ldb = p.tb ? p.k : p.n;
                p.ldc = p.n;
                p.beta = with_bias ? 0.0f : 0.5f;
                operands o;
                double scale = setup(&p, &o, &rng);
                const size_t bytes = sizeof(float) * (size_t)p.m * p.n;
                float *cs[N] = {o.c};
                for (int i = 1; i < N; i++) {
                    cs[i] = malloc(bytes);
                    memcpy(cs[i], o.c, bytes);
                }
                for (int i = 0; i < N; i++) {
                    const tb_gemm_epilogue ep = {.bias = o.bias};
                    if (with_bias)
                        bes[i]->ops.gemm_ep(bes[i], p.ta, p.tb, p.m, p.n, p.k, o.a, p.lda, o.b,
                                            p.ldb, &ep, cs[i], p.ldc);
                    else
                        bes[i]->ops.gemm(bes[i], p.ta, p.tb, p.m, p.n, p.k, p.alpha, o.a, p.lda,
                                         o.b, p.ldb, p.beta, cs[i], p.ldc);
                }
                CHECK(agrees(&p, o.c, o.ref, scale));
                for (int i = 1; i < N; i++) {
#ifdef TB_CPU_GEMM_TILES /* the own kernel; OpenBLAS may differ in the last bits */
                    CHECK(memcmp(cs[i], o.c, bytes) == 0);
#endif
                    free(cs[i]);
                }
                release(&o);
            }
    for (int i = 0; i < N; i++) tb_backend_destroy(bes[i]);
}

/* The activations and their derivatives in double. */
static double act_ref(tb_act act, double x)
{
    switch (act) {
    case TB_ACT_RELU: return x > 0 ? x : 0;
    case TB_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case TB_ACT_SILU: return x / (1.0 + exp(-x));
    case TB_ACT_TANH: return tanh(x);
    default: return 1.0 / (1.0 + exp(-x));
    }
}

static double act_grad_ref(tb_act act, double x)
{
    const double s = 1.0 / (1.0 + exp(-x)), t = tanh(x);
    switch (act) {
    case TB_ACT_RELU: return x > 0 ? 1 : 0;
    case TB_ACT_GELU: return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / 2.5066282746310002;
    case TB_ACT_SILU: return s * (1.0 + x * (1.0 - s));
    case TB_ACT_TANH: return 1.0 - t * t;
    default: return s * (1.0 - s);
    }
}

/* One gemm_ep case on a backend of one thread and one of two: C = op(A) op(B) (+ bias)
 * (+ residual), then the activation forward (act_y = act(C)) or backward (C *= act'(x) for a
 * given pre-activation x, with y = act(x) given too), against the double reference, the
 * padding columns of C and act_y untouched, and the two backends bit for bit where the own
 * kernel runs. */
static bool epilogue_case(tb_backend *const bes[2], problem p, tb_gemm_act_mode mode, tb_act act,
                          bool residual, bool by_parts, tb_rng *rng)
{
    p.lda = p.ta ? p.m : p.k;
    p.ldb = p.tb ? p.k : p.n;
    p.ldc = p.n + 5;
    p.alpha = 1.0f;
    p.beta = 0.0f;
    operands o;
    const double scale = setup(&p, &o, rng);
    const size_t csz = (size_t)p.m * p.ldc;
    float *r = malloc(sizeof(float) * csz), *x = malloc(sizeof(float) * csz);
    float *y[2] = {malloc(sizeof(float) * csz), malloc(sizeof(float) * csz)};
    float *c[2] = {o.c, malloc(sizeof(float) * csz)};
    tb_rng_fill_uniform(rng, r, (int64_t)csz, -1.0f, 1.0f);
    tb_rng_fill_uniform(rng, x, (int64_t)csz, -3.0f, 3.0f);
    memcpy(c[1], c[0], sizeof(float) * csz);
    for (size_t i = 0; i < csz; i++) /* y: act(x) for the backward, padding for both */
        y[0][i] = y[1][i] = mode == TB_GEMM_ACT_BWD && (int)(i % (size_t)p.ldc) < p.n
                                ? (float)act_ref(act, x[i])
                                : SENTINEL;
    bool ok = true;
    for (int b = 0; b < 2; b++) {
        const tb_gemm_epilogue ep = {.bias = p.bias ? o.bias : NULL,
                                     .residual = residual ? r : NULL,
                                     .mode = mode,
                                     .act = act,
                                     .act_y = y[b],
                                     .act_x = x};
        if (by_parts && b == 0) /* a backend without its own gemm_ep (CUDA) gets this one */
            tb_backend_gemm_ep_by_parts(bes[b], p.ta, p.tb, p.m, p.n, p.k, o.a, p.lda, o.b, p.ldb,
                                        &ep, c[b], p.ldc);
        else
            bes[b]->ops.gemm_ep(bes[b], p.ta, p.tb, p.m, p.n, p.k, o.a, p.lda, o.b, p.ldb, &ep,
                                c[b], p.ldc);
        for (int i = 0; i < p.m && ok; i++)
            for (int j = 0; j < p.ldc && ok; j++) {
                const int64_t e = (int64_t)i * p.ldc + j;
                if (j >= p.n) {
                    ok = c[b][e] == SENTINEL && y[b][e] == SENTINEL;
                    continue;
                }
                double want = (double)o.ref[e] + (residual ? r[e] : 0.0), got = c[b][e];
                double tol = 2e-6 * (scale + 1.0) + 1e-5;
                if (mode == TB_GEMM_ACT_BWD) want *= act_grad_ref(act, x[e]);
                ok = fabs(got - want) <= tol * (1.0 + fabs(want));
                if (ok && mode == TB_GEMM_ACT_FWD) {
                    got = y[b][e];
                    want = act_ref(act, want);
                    ok = fabs(got - want) <= tol * (1.0 + fabs(want));
                }
                if (!ok)
                    fprintf(stderr, "  %c%c m=%d n=%d k=%d mode %d act %d res %d, %d thread(s): "
                            "[%d][%d] = %g, want %g\n", p.ta ? 'T' : 'N', p.tb ? 'T' : 'N',
                            p.m, p.n, p.k, (int)mode, (int)act, residual, b + 1, i, j, got, want);
            }
    }
#ifdef TB_CPU_GEMM_TILES
    ok = ok && (by_parts || (memcmp(c[0], c[1], sizeof(float) * csz) == 0 &&
                             memcmp(y[0], y[1], sizeof(float) * csz) == 0));
#endif
    free(r);
    free(x);
    free(y[0]);
    free(y[1]);
    free(c[1]);
    release(&o);
    return ok;
}

static void test_epilogue(void)
{
    tb_backend *bes[2] = {backend(1), backend(2)};
    /* the own kernel split by rows and by columns, k past one K block in both (the activation
     * must wait for the last; 64 x 700 x 400 NT is computed transposed), and OpenBLAS (too
     * small for the own kernel) */
    static const int shapes[][3] = {{300, 70, 600}, {64, 700, 400}, {30, 20, 10}};
    tb_rng rng = tb_rng_make(21, TB_STREAM_INIT);
    int cases = 0, good = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int act = 0; act < TB_ACT_COUNT; act++)
                for (int mode = 0; mode < 3; mode++) {
                    problem p = {.ta = t & 1, .tb = t >> 1, .m = shapes[s][0],
                                 .n = shapes[s][1], .k = shapes[s][2], .bias = (act + t) % 2};
                    if (mode == TB_GEMM_ACT_NONE && act > 0) continue;
                    for (int parts = 0; parts < 2; parts++) {
                        good += epilogue_case(bes, p, (tb_gemm_act_mode)mode, (tb_act)act,
                                              (act + mode + t) % 2 == 0, parts, &rng);
                        cases++;
                    }
                }
    printf("  %d of %d epilogue cases agree with the double reference\n", good, cases);
    CHECK(good == cases);
    tb_backend_destroy(bes[0]);
    tb_backend_destroy(bes[1]);
}

/* The backend's linear_wgrad (dw (+)= dy^T x, db (+)= dy's column sums, the sums taken while
 * dy is packed) at one thread and two, adding to the gradients and writing them (they start as
 * NaN then: never read): split by rows with k past one K block, split by columns (only one
 * block may add the sums), with row tails, and on OpenBLAS; against double sums and the same
 * bits at either thread count where the own kernel runs. */
static void test_linear_wgrad(void)
{
    tb_backend *bes[2] = {backend(1), backend(2)};
    static const int shapes[][3] = {{2048, 128, 384}, {300, 700, 64}, {1000, 96, 130}, {100, 30, 20}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int acc = 1; acc >= 0; acc--) {
            const int rows = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
            const double w0 = acc ? 0.25 : 0.0, b0 = acc ? 0.5 : 0.0;
            tb_rng rng = tb_rng_make(50, (uint64_t)s);
            float *dy = malloc(sizeof(float) * (size_t)rows * out), *x = malloc(sizeof(float) * (size_t)rows * in);
            tb_rng_fill_uniform(&rng, dy, (int64_t)rows * out, -1.0f, 1.0f);
            tb_rng_fill_uniform(&rng, x, (int64_t)rows * in, -1.0f, 1.0f);
            float *dw[2], *db[2];
            for (int b = 0; b < 2; b++) {
                dw[b] = malloc(sizeof(float) * (size_t)out * in);
                db[b] = malloc(sizeof(float) * (size_t)out);
                for (int i = 0; i < out * in; i++) dw[b][i] = acc ? (float)w0 : NAN;
                for (int i = 0; i < out; i++) db[b][i] = acc ? (float)b0 : NAN;
                bes[b]->ops.linear_wgrad(bes[b], rows, in, out, dy, x, dw[b], acc, db[b], acc);
            }
            double worst = 0;
            for (int o = 0; o < out; o++) {
                double sb = b0;
                for (int r = 0; r < rows; r++) sb += dy[(int64_t)r * out + o];
                worst = fmax(worst, fabs(db[1][o] - sb) / rows);
                for (int i = 0; i < in; i += 7) {
                    double sw = w0;
                    for (int r = 0; r < rows; r++) sw += (double)dy[(int64_t)r * out + o] * x[(int64_t)r * in + i];
                    worst = fmax(worst, fabs(dw[1][(int64_t)o * in + i] - sw) / rows);
                }
            }
            for (int i = 0; i < out * in; i++) /* a NaN read from a written dw (fmax skips it) */
                if (!isfinite(dw[1][i]) || (i < out && !isfinite(db[1][i]))) worst = INFINITY;
            if (worst > 1e-6) {
                fprintf(stderr, "  linear_wgrad %d x %d -> %d (acc %d): relative error %g\n", rows, in, out, acc, worst);
                bad++;
            }
#ifdef TB_CPU_GEMM_TILES
            if (memcmp(dw[0], dw[1], sizeof(float) * (size_t)out * in) != 0 ||
                memcmp(db[0], db[1], sizeof(float) * (size_t)out) != 0) {
                fprintf(stderr, "  linear_wgrad %d x %d -> %d (acc %d): 1 and 2 threads differ\n", rows, in, out, acc);
                bad++;
            }
#endif
            for (int b = 0; b < 2; b++) {
                free(dw[b]);
                free(db[b]);
            }
            free(dy);
            free(x);
        }
    CHECK(bad == 0);
    tb_backend_destroy(bes[0]);
    tb_backend_destroy(bes[1]);
}

/* The entry of prof with this shape and epilogue, or NULL. */
static const tb_product_profile *find_entry(const tb_product_profile *prof, int n, bool ta,
                                            bool tb, int m, int nn, int k, int batch,
                                            const char *ep)
{
    for (int i = 0; i < n; i++)
        if (prof[i].trans_a == ta && prof[i].trans_b == tb && prof[i].m == m &&
            prof[i].n == nn && prof[i].k == k && prof[i].batch == batch &&
            strcmp(prof[i].epilogue, ep) == 0)
            return &prof[i];
    return NULL;
}

/* The product profile: each entry's calls charged to its shape and epilogue while it is on
 * (a gemm_ep made of a gemm and passes counted once), nothing while it is off, largest total
 * first, the products' bits unchanged, and clear empties it. */
static void test_product_profile(void)
{
    tb_backend *be = backend(2);
    tb_error err = {0};
    enum { M = 64, N = 48, K = 32, ROWS = 40, IN = 30, OUT = 20 };
    float *a = malloc(sizeof(float) * 3 * M * K), *b = malloc(sizeof(float) * 3 * K * N);
    float *c = malloc(sizeof(float) * 3 * M * N), *c0 = malloc(sizeof(float) * M * N);
    float *x = malloc(sizeof(float) * M * N), *bias = malloc(sizeof(float) * N);
    float *dw = malloc(sizeof(float) * OUT * IN), *db = malloc(sizeof(float) * OUT);
    tb_rng rng = tb_rng_make(61, 0);
    tb_rng_fill_uniform(&rng, a, 3 * M * K, -1.0f, 1.0f);
    tb_rng_fill_uniform(&rng, b, 3 * K * N, -1.0f, 1.0f);
    tb_rng_fill_uniform(&rng, x, M * N, -2.0f, 2.0f);
    tb_rng_fill_uniform(&rng, bias, N, -1.0f, 1.0f);
    be->ops.gemm(be, false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c0, N); /* off */
    CHECK(tb_backend_product_profile(be, NULL, 0) == 0);
    if (!CHECK_OK(tb_backend_set_product_profiling(be, true, &err), &err)) return;
    for (int i = 0; i < 2; i++) be->ops.gemm(be, false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
    CHECK(memcmp(c, c0, sizeof(float) * M * N) == 0);
    const tb_gemm_epilogue ep = {.bias = bias, .mode = TB_GEMM_ACT_BWD, .act = TB_ACT_GELU,
                                 .act_x = x};
    be->ops.gemm_ep(be, false, true, M, N, K, a, K, b, K, &ep, c, N);
    be->ops.linear_wgrad(be, ROWS, IN, OUT, a, b, dw, false, db, false);
    be->ops.gemm_batched(be, false, false, M, N, K, 1.0f, a, K, M * K, b, N, K * N, 0.0f, c, N,
                         M * N, 3);
    /* a backend whose gemm_ep is a gemm and element-wise passes: its gemm is not charged */
    CHECK_OK(tb_backend_set_product_profiling(be, false, &err), &err);
    be->ops.gemm_ep = tb_backend_gemm_ep_by_parts;
    CHECK_OK(tb_backend_set_product_profiling(be, true, &err), &err);
    const tb_gemm_epilogue ep2 = {.residual = x};
    be->ops.gemm_ep(be, false, false, M, N, K, a, K, b, N, &ep2, c, N);
    CHECK_OK(tb_backend_set_product_profiling(be, false, &err), &err);
    be->ops.gemm(be, false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N); /* off: not counted */

    tb_product_profile prof[8];
    const int n = tb_backend_product_profile(be, prof, 8);
    CHECK(n == 5);
    const tb_product_profile *g = find_entry(prof, n, false, false, M, N, K, 1, "");
    const tb_product_profile *e = find_entry(prof, n, false, true, M, N, K, 1, "bias gelu'");
    const tb_product_profile *w = find_entry(prof, n, true, false, OUT, IN, ROWS, 1, "bias sums");
    const tb_product_profile *bt = find_entry(prof, n, false, false, M, N, K, 3, "");
    const tb_product_profile *r = find_entry(prof, n, false, false, M, N, K, 1, "residual");
    CHECK(g && g->calls == 2 && g->best_s > 0.0 && g->best_s <= g->total_s / 2.0);
    CHECK(e && e->calls == 1 && e->best_s == e->total_s);
    CHECK(w && w->calls == 1);
    CHECK(bt && bt->calls == 1);
    CHECK(r && r->calls == 1);
    for (int i = 1; i < n && i < 8; i++) CHECK(prof[i - 1].total_s >= prof[i].total_s);
    CHECK(tb_backend_product_profile_dropped(be) == 0);
    tb_backend_product_profile_clear(be);
    CHECK(tb_backend_product_profile(be, prof, 8) == 0);
    free(a);
    free(b);
    free(c);
    free(c0);
    free(x);
    free(bias);
    free(dw);
    free(db);
    tb_backend_destroy(be);
}

int main(void)
{
    test_against_reference();
    test_empty_product();
    test_backend_split();
    test_epilogue();
    test_linear_wgrad();
    test_product_profile();
    return tb_test_finish("test_gemm");
}

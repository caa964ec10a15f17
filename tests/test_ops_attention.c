/* test_ops_attention.c: embedding and causal self-attention: forward against naive loops,
 * causality, finite-difference gradients, accumulation, and error messages. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static float *download_f32(const tb_tensor *x)
{
    int64_t n = tb_tensor_numel(x);
    float *host = malloc((size_t)(n ? n : 1) * sizeof(float));
    tb_tensor_download(x, host, NULL);
    return host;
}

static tb_tape *new_tape(tb_backend *be)
{
    tb_tape *tape = NULL;
    tb_error err = {0};
    if (tb_tape_create(be, &tape, &err) != TB_OK) {
        fprintf(stderr, "cannot create a tape: %s\n", err.message);
        exit(1);
    }
    return tape;
}

/* Naive causal attention in double: qkv [B, T, 3C] -> y [B, T, C]. */
static void naive_attention(int b, int t, int c, int heads, const float *qkv, double *y)
{
    int hd = c / heads;
    double *w = malloc((size_t)t * sizeof(double));
    for (int bi = 0; bi < b; bi++)
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < t; i++) {
                const float *q = qkv + ((size_t)bi * t + i) * 3 * c + h * hd;
                double mx = -1e300, sum = 0;
                for (int j = 0; j <= i; j++) {
                    const float *k = qkv + ((size_t)bi * t + j) * 3 * c + c + h * hd;
                    double s = 0;
                    for (int d = 0; d < hd; d++)
                        s += (double)q[d] * k[d];
                    w[j] = s / sqrt((double)hd);
                    if (w[j] > mx) mx = w[j];
                }
                for (int j = 0; j <= i; j++) {
                    w[j] = exp(w[j] - mx);
                    sum += w[j];
                }
                for (int d = 0; d < hd; d++) {
                    double acc = 0;
                    for (int j = 0; j <= i; j++) {
                        const float *v = qkv + ((size_t)bi * t + j) * 3 * c + 2 * c + h * hd;
                        acc += w[j] / sum * v[d];
                    }
                    y[((size_t)bi * t + i) * c + h * hd + d] = acc;
                }
            }
    free(w);
}

/* ---- attention forward ------------------------------------------------------------------------
 */

static void check_attention_forward(tb_backend *be, int b, int t, int c, int heads)
{
    tb_rng rng = tb_rng_make(11, (uint64_t)(b * 1000 + t * 10 + heads));
    int64_t shape[3] = {b, t, 3 * c};
    tb_var *qkv = tb_test_var(be, 3, shape, &rng, -2.0f, 2.0f, false);
    tb_tape *tape = new_tape(be);
    tb_var *y = tb_op_causal_attention(tape, qkv, heads);
    if (CHECK(y != NULL)) {
        CHECK(y->value.ndim == 3 && y->value.shape[0] == b && y->value.shape[1] == t &&
              y->value.shape[2] == c);
        float *got = download_f32(&y->value);
        float *in = download_f32(&qkv->value);
        double *want = malloc((size_t)b * t * c * sizeof(double));
        naive_attention(b, t, c, heads, in, want);
        double worst = 0;
        for (int64_t i = 0; i < (int64_t)b * t * c; i++)
            worst = fmax(worst, fabs(got[i] - want[i]));
        CHECK_NEAR(worst, 0.0, 1e-5);
        free(got);
        free(in);
        free(want);
    } else {
        fprintf(stderr, "attention forward: %s\n", tb_tape_error(tape)->message);
    }
    tb_tape_destroy(tape);
    tb_test_var_free(qkv);
}

static void test_attention_forward(void)
{
    tb_backend *be = tb_test_backend();
    check_attention_forward(be, 1, 1, 4, 1);
    check_attention_forward(be, 2, 5, 8, 2);
    check_attention_forward(be, 3, 7, 12, 3);
    check_attention_forward(be, 1, 33, 16, 1);
    check_attention_forward(be, 4, 64, 32, 4); /* 16 (b, h) pairs: the parallel path */
    /* heads of 16-64 channels and T <= 64: each pair in registers, 4-row groups with a short
     * last one, 1-4 blocks of 16 keys */
    check_attention_forward(be, 2, 64, 128, 2);
    check_attention_forward(be, 1, 50, 48, 1);
    check_attention_forward(be, 3, 18, 96, 3);
    tb_backend_destroy(be);
}

/* ---- causality: a later token's q, k, v leave earlier outputs unchanged ---------------------- */

static void test_attention_causal(void)
{
    tb_backend *be = tb_test_backend();
    enum { B = 2, T = 6, C = 8, H = 2 };
    tb_rng rng = tb_rng_make(5, 0);
    int64_t shape[3] = {B, T, 3 * C};
    tb_var *qkv = tb_test_var(be, 3, shape, &rng, -1.0f, 1.0f, false);
    tb_tape *tape = new_tape(be);
    tb_var *y0 = tb_op_causal_attention(tape, qkv, H);
    float *before = y0 ? download_f32(&y0->value) : NULL;
    CHECK(before != NULL);
    const int changed = 3; /* token whose q, k and v change, in every batch row */
    float *host = download_f32(&qkv->value);
    for (int bi = 0; bi < B; bi++)
        for (int ch = 0; ch < 3 * C; ch++)
            host[((size_t)bi * T + changed) * 3 * C + ch] += 0.7f;
    tb_tensor_upload(&qkv->value, host, NULL);
    tb_tape_reset(tape);
    tb_var *y1 = tb_op_causal_attention(tape, qkv, H);
    float *after = y1 ? download_f32(&y1->value) : NULL;
    if (CHECK(before && after)) {
        double early = 0, late = 0;
        for (int bi = 0; bi < B; bi++)
            for (int i = 0; i < T; i++)
                for (int ch = 0; ch < C; ch++) {
                    size_t e = ((size_t)bi * T + i) * C + ch;
                    double d = fabs(before[e] - after[e]);
                    if (i < changed)
                        early = fmax(early, d);
                    else
                        late = fmax(late, d);
                }
        CHECK(early == 0.0);
        CHECK(late > 1e-3);
    }
    free(before);
    free(after);
    free(host);
    tb_tape_destroy(tape);
    tb_test_var_free(qkv);
    tb_backend_destroy(be);
}

/* ---- attention gradients -----------------------------------------------------------------------
 */

typedef struct attn_ctx {
    int heads;
    bool twice; /* use qkv in two attention calls: gradients must accumulate */
} attn_ctx;

static tb_var *attention_loss(tb_tape *tape, tb_var *const *in, void *ctx)
{
    const attn_ctx *a = ctx;
    tb_var *y = tb_op_causal_attention(tape, in[0], a->heads);
    if (a->twice) y = tb_op_add(tape, y, tb_op_causal_attention(tape, in[0], a->heads));
    return tb_test_reduce(tape, y);
}

static void check_attention_grad(tb_backend *be, int b, int t, int c, int heads, bool twice)
{
    char name[96];
    snprintf(name, sizeof name, "attention grad B=%d T=%d C=%d heads=%d%s", b, t, c, heads,
             twice ? " twice" : "");
    tb_rng rng = tb_rng_make(21, (uint64_t)(b * 1000 + t * 10 + heads));
    int64_t shape[3] = {b, t, 3 * c};
    tb_var *qkv = tb_test_var(be, 3, shape, &rng, -1.0f, 1.0f, true);
    attn_ctx ctx = {heads, twice};
    tb_gradcheck(name, be, attention_loss, &ctx, &qkv, 1, 1e-2, 1e-3, 1e-2, 400);
    tb_test_var_free(qkv);
}

static void test_attention_grad(void)
{
    tb_backend *be = tb_test_backend();
    check_attention_grad(be, 1, 1, 4, 1, false); /* T = 1: softmax of one score */
    check_attention_grad(be, 2, 1, 6, 2, false);
    check_attention_grad(be, 1, 4, 4, 1, false); /* heads = 1 */
    check_attention_grad(be, 2, 3, 6, 1, false);
    check_attention_grad(be, 2, 4, 8, 2, false);
    check_attention_grad(be, 1, 5, 12, 3, false);
    check_attention_grad(be, 3, 6, 8, 4, false); /* head_dim 2, 12 pairs in parallel */
    check_attention_grad(be, 2, 4, 8, 2, true);  /* accumulation into dqkv */
    /* heads of 16 and 32 channels: the pair in registers, T across a block of 16 keys */
    check_attention_grad(be, 1, 6, 16, 1, false);
    check_attention_grad(be, 1, 19, 32, 1, false);
    check_attention_grad(be, 2, 5, 32, 2, true);
    tb_backend_destroy(be);
}

/* The kernel itself accumulates: dqkv starting at ones ends at ones + the gradient. */
static void test_attention_bwd_accumulates(void)
{
    tb_backend *be = tb_test_backend();
    enum { B = 2, T = 5, C = 8, H = 2 };
    const size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, na = (size_t)B * H * T * T;
    float *qkv = malloc(nq * sizeof(float)), *dy = malloc(ny * sizeof(float));
    float *y = malloc(ny * sizeof(float)), *att = malloc(na * sizeof(float));
    float *d0 = malloc(nq * sizeof(float)), *d1 = malloc(nq * sizeof(float));
    tb_rng rng = tb_rng_make(3, 1);
    tb_rng_fill_uniform(&rng, qkv, (int64_t)nq, -1.0f, 1.0f);
    tb_rng_fill_uniform(&rng, dy, (int64_t)ny, -1.0f, 1.0f);
    size_t ws_bytes = be->ops.attention_workspace(be, B, T, C, H);
    void *ws = malloc(ws_bytes ? ws_bytes : 1);
    be->ops.attention_fwd(be, B, T, C, H, qkv, y, att, ws);
    bool causal_zeros = true, rows_sum_to_one = true;
    for (size_t r = 0; r < (size_t)B * H * T; r++) {
        int i = (int)(r % T);
        double s = 0;
        for (int j = 0; j < T; j++) {
            float p = att[r * T + j];
            if (j > i) causal_zeros &= p == 0.0f;
            s += p;
        }
        rows_sum_to_one &= fabs(s - 1.0) < 1e-5;
    }
    CHECK(causal_zeros);
    CHECK(rows_sum_to_one);
    for (size_t i = 0; i < nq; i++) {
        d0[i] = 0.0f;
        d1[i] = 1.0f;
    }
    be->ops.attention_bwd(be, B, T, C, H, qkv, att, dy, d0, true, ws);
    be->ops.attention_bwd(be, B, T, C, H, qkv, att, dy, d1, true, ws);
    double worst = 0;
    for (size_t i = 0; i < nq; i++)
        worst = fmax(worst, fabs(d1[i] - (1.0 + d0[i])));
    CHECK_NEAR(worst, 0.0, 1e-6);
    /* a fresh dqkv (acc false) is written, never read: NaN in it changes nothing */
    for (size_t i = 0; i < nq; i++) d1[i] = NAN;
    be->ops.attention_bwd(be, B, T, C, H, qkv, att, dy, d1, false, ws);
    CHECK(memcmp(d0, d1, nq * sizeof(float)) == 0);
    free(qkv);
    free(dy);
    free(y);
    free(att);
    free(d0);
    free(d1);
    free(ws);
    tb_backend_destroy(be);
}

/* Naive causal attention backward in double: dqkv for qkv [B, T, 3C] and dy [B, T, C]. */
static void naive_attention_bwd(int b, int t, int c, int heads, const float *qkv, const float *dy,
                                double *dqkv)
{
    const int hd = c / heads, c3 = 3 * c;
    const double scale = 1.0 / sqrt((double)hd);
    double *p = malloc(sizeof(double) * (size_t)t * t), *ds = malloc(sizeof(double) * (size_t)t * t);
    for (size_t i = 0; i < (size_t)b * t * c3; i++) dqkv[i] = 0.0;
    for (int bi = 0; bi < b; bi++)
        for (int h = 0; h < heads; h++) {
            const float *base = qkv + (size_t)bi * t * c3 + (size_t)h * hd;
            double *dbase = dqkv + (size_t)bi * t * c3 + (size_t)h * hd;
            const float *g = dy + (size_t)bi * t * c + (size_t)h * hd;
            for (int i = 0; i < t; i++) { /* P, then dS row by row */
                double mx = -1e300, sum = 0, dot = 0;
                for (int j = 0; j <= i; j++) {
                    double sij = 0;
                    for (int d = 0; d < hd; d++)
                        sij += (double)base[(size_t)i * c3 + d] * base[(size_t)j * c3 + c + d];
                    p[i * t + j] = sij * scale;
                    mx = fmax(mx, p[i * t + j]);
                }
                for (int j = 0; j <= i; j++) sum += p[i * t + j] = exp(p[i * t + j] - mx);
                for (int j = 0; j <= i; j++) {
                    p[i * t + j] /= sum;
                    double dp = 0;
                    for (int d = 0; d < hd; d++)
                        dp += (double)g[(size_t)i * c + d] * base[(size_t)j * c3 + 2 * c + d];
                    ds[i * t + j] = dp;
                    dot += dp * p[i * t + j];
                }
                for (int j = 0; j <= i; j++) ds[i * t + j] = p[i * t + j] * (ds[i * t + j] - dot);
            }
            for (int i = 0; i < t; i++)
                for (int j = 0; j <= i; j++)
                    for (int d = 0; d < hd; d++) {
                        dbase[(size_t)j * c3 + 2 * c + d] += p[i * t + j] * g[(size_t)i * c + d];
                        dbase[(size_t)i * c3 + d] += scale * ds[i * t + j] * base[(size_t)j * c3 + c + d];
                        dbase[(size_t)j * c3 + c + d] += scale * ds[i * t + j] * base[(size_t)i * c3 + d];
                    }
        }
    free(p);
    free(ds);
}

/* The backward kernel against the naive one on long sequences (finite differences above
 * stop at T = 6): tile tails, head sizes that are not multiples of 16, and T past the tiled
 * path's limit (256), at 2 threads. */
static void test_attention_bwd_against_naive(void)
{
    tb_backend *be = tb_test_backend();
    static const int cases[][4] = {{2, 64, 128, 4}, {1, 37, 48, 3}, {2, 13, 40, 1},
                                   {1, 300, 32, 2}, {1, 64, 128, 2}, {2, 21, 96, 2}};
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        const int B = cases[n][0], T = cases[n][1], C = cases[n][2], H = cases[n][3];
        const size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C;
        float *qkv = malloc(nq * sizeof(float)), *dy = malloc(ny * sizeof(float));
        float *y = malloc(ny * sizeof(float)), *d = malloc(nq * sizeof(float));
        float *att = malloc((size_t)B * H * T * T * sizeof(float));
        double *want = malloc(nq * sizeof(double));
        tb_rng rng = tb_rng_make(5, n);
        tb_rng_fill_uniform(&rng, qkv, (int64_t)nq, -1.0f, 1.0f);
        tb_rng_fill_uniform(&rng, dy, (int64_t)ny, -1.0f, 1.0f);
        size_t ws_bytes = be->ops.attention_workspace(be, B, T, C, H);
        void *ws = malloc(ws_bytes ? ws_bytes : 1);
        be->ops.attention_fwd(be, B, T, C, H, qkv, y, att, ws);
        for (size_t i = 0; i < nq; i++) d[i] = NAN; /* fresh: written, never read */
        be->ops.attention_bwd(be, B, T, C, H, qkv, att, dy, d, false, ws);
        naive_attention_bwd(B, T, C, H, qkv, dy, want);
        double worst = 0, scale = 0;
        for (size_t i = 0; i < nq; i++) {
            worst = fmax(worst, fabs(d[i] - want[i]));
            scale = fmax(scale, fabs(want[i]));
        }
        if (worst > 1e-5 * scale + 1e-6)
            fprintf(stderr, "attention bwd B=%d T=%d C=%d H=%d: off by %g (largest %g)\n", B, T,
                    C, H, worst, scale);
        CHECK(worst <= 1e-5 * scale + 1e-6);
        free(qkv);
        free(dy);
        free(y);
        free(d);
        free(att);
        free(want);
        free(ws);
    }
    tb_backend_destroy(be);
}

/* Attention called from inside another parallel region (each caller thread 0 of its own
 * team): every caller must still get its own answer (the tiled path's scratch is per thread
 * of the backend, so such calls take the OpenBLAS path). */
static void test_attention_inside_parallel_region(void)
{
    tb_backend *be = tb_test_backend();
    enum { B = 1, T = 64, C = 64, H = 1, CALLERS = 2 };
    const size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, na = (size_t)B * H * T * T;
    const size_t ws_bytes = be->ops.attention_workspace(be, B, T, C, H);
    float *qkv[CALLERS], *y[CALLERS], *att[CALLERS], *want[CALLERS];
    void *ws[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        qkv[i] = malloc(nq * sizeof(float));
        y[i] = malloc(ny * sizeof(float));
        want[i] = malloc(ny * sizeof(float));
        att[i] = malloc(na * sizeof(float));
        ws[i] = malloc(ws_bytes ? ws_bytes : 1);
        tb_rng rng = tb_rng_make(9, (uint64_t)i);
        tb_rng_fill_uniform(&rng, qkv[i], (int64_t)nq, -1.0f, 1.0f);
        be->ops.attention_fwd(be, B, T, C, H, qkv[i], want[i], att[i], ws[i]);
    }
    double worst[CALLERS] = {0};
#pragma omp parallel for num_threads(CALLERS)
    for (int i = 0; i < CALLERS; i++)
        for (int rep = 0; rep < 200; rep++) { /* long enough for the callers to overlap */
            be->ops.attention_fwd(be, B, T, C, H, qkv[i], y[i], att[i], ws[i]);
            for (size_t j = 0; j < ny; j++) worst[i] = fmax(worst[i], fabs(y[i][j] - want[i][j]));
        }
    for (int i = 0; i < CALLERS; i++) CHECK_NEAR(worst[i], 0.0, 1e-5);
    for (int i = 0; i < CALLERS; i++) {
        free(qkv[i]);
        free(y[i]);
        free(want[i]);
        free(att[i]);
        free(ws[i]);
    }
    tb_backend_destroy(be);
}

/* ---- embedding ----------------------------------------------------------------------------------
 */

typedef struct emb_ctx {
    tb_var *idx;
} emb_ctx;

static tb_var *embedding_loss(tb_tape *tape, tb_var *const *in, void *ctx)
{
    const emb_ctx *e = ctx;
    return tb_test_reduce(tape, tb_op_embedding(tape, in[0], e->idx));
}

static void test_embedding_forward_and_grad(void)
{
    tb_backend *be = tb_test_backend();
    enum { V = 5, D = 7 };
    tb_rng rng = tb_rng_make(8, 0);
    int64_t tshape[2] = {V, D}, ishape[2] = {2, 6};
    /* repeats (1 four times, 0, 3 and 4 more than once) and one unused row (2) */
    const int32_t ids[12] = {0, 1, 1, 4, 1, 0, 3, 3, 1, 0, 4, 4};
    tb_var *table = tb_test_var(be, 2, tshape, &rng, -1.0f, 1.0f, true);
    tb_var *idx = tb_test_ivar(be, 2, ishape, ids);
    tb_tape *tape = new_tape(be);
    tb_var *y = tb_op_embedding(tape, table, idx);
    if (CHECK(y != NULL)) {
        CHECK(y->value.ndim == 3 && y->value.shape[0] == 2 && y->value.shape[1] == 6 &&
              y->value.shape[2] == D);
        float *got = download_f32(&y->value), *tab = download_f32(&table->value);
        bool same = true;
        for (int i = 0; i < 12; i++)
            for (int d = 0; d < D; d++)
                same &= got[i * D + d] == tab[ids[i] * D + d];
        CHECK(same);
        free(got);
        free(tab);
    }
    tb_tape_destroy(tape);
    emb_ctx ctx = {idx};
    tb_gradcheck("embedding grad", be, embedding_loss, &ctx, &table, 1, 1e-2, 1e-3, 1e-2, 100);
    tb_test_var_free(table);
    tb_test_var_free(idx);
    tb_backend_destroy(be);
}

/* A large scatter-add (several column blocks, threaded) against a host loop, accumulating onto
 * a non-zero gradient. */
static void test_embedding_bwd_large(void)
{
    tb_backend *be = tb_test_backend();
    enum { V = 37, D = 200, N = 900 };
    int32_t *idx = malloc(N * sizeof(int32_t));
    float *dy = malloc((size_t)N * D * sizeof(float));
    float *dt = malloc((size_t)V * D * sizeof(float)),
          *want = malloc((size_t)V * D * sizeof(float));
    tb_rng rng = tb_rng_make(9, 0);
    for (int i = 0; i < N; i++)
        idx[i] = (int32_t)tb_rng_below(&rng, V);
    tb_rng_fill_uniform(&rng, dy, (int64_t)N * D, -1.0f, 1.0f);
    tb_rng_fill_uniform(&rng, dt, (int64_t)V * D, -1.0f, 1.0f);
    memcpy(want, dt, (size_t)V * D * sizeof(float));
    for (int i = 0; i < N; i++)
        for (int d = 0; d < D; d++)
            want[idx[i] * D + d] += dy[(size_t)i * D + d];
    be->ops.embedding_bwd(be, N, D, V, idx, dy, dt);
    double worst = 0;
    for (int i = 0; i < V * D; i++)
        worst = fmax(worst, fabs(dt[i] - want[i]));
    CHECK_NEAR(worst, 0.0, 1e-5);
    free(idx);
    free(dy);
    free(dt);
    free(want);
    tb_backend_destroy(be);
}

/* The kernels' own contract, for a replayed CUDA graph where the op's host check cannot run: an
 * index outside the table gives a NaN row forward and sends no gradient backward, touching no
 * memory outside the table (ASan would see it). */
static void test_embedding_kernel_out_of_range(void)
{
    tb_backend *be = tb_test_backend();
    enum { V = 5, D = 3, N = 4 };
    float table[V * D], y[N * D], dy[N * D], dt[V * D] = {0};
    for (int i = 0; i < V * D; i++)
        table[i] = (float)i;
    for (int i = 0; i < N * D; i++)
        dy[i] = 1.0f;
    const int32_t idx[N] = {2, V, -1, 4};
    be->ops.embedding_fwd(be, N, D, V, table, idx, y);
    be->ops.embedding_bwd(be, N, D, V, idx, dy, dt);
    for (int d = 0; d < D; d++) {
        CHECK_NEAR(y[0 * D + d], table[2 * D + d], 0.0);
        CHECK(isnan(y[1 * D + d]) && isnan(y[2 * D + d]));
        CHECK_NEAR(y[3 * D + d], table[4 * D + d], 0.0);
    }
    float total = 0;
    for (int i = 0; i < V * D; i++)
        total += dt[i];
    CHECK_NEAR(total, 2.0 * D, 0.0); /* rows 2 and 4 only */
    CHECK_NEAR(dt[2 * D] + dt[4 * D], 2.0, 0.0);
    tb_backend_destroy(be);
}

/* ---- errors -------------------------------------------------------------------------------------
 */

static bool message_has(tb_tape *tape, tb_status want, const char *needle)
{
    const tb_error *e = tb_tape_error(tape);
    bool ok = tb_tape_status(tape) == want && strstr(e->message, needle) != NULL;
    if (!ok)
        fprintf(stderr, "tape error %s \"%s\"; wanted %s with \"%s\"\n",
                tb_status_name(tb_tape_status(tape)), e->message, tb_status_name(want), needle);
    return ok;
}

static void test_embedding_bad_index(void)
{
    tb_backend *be = tb_test_backend();
    int64_t tshape[2] = {5, 3}, ishape[2] = {2, 3};
    tb_rng rng = tb_rng_make(4, 0);
    tb_var *table = tb_test_var(be, 2, tshape, &rng, -1.0f, 1.0f, true);
    const int32_t high[6] = {0, 1, 2, 3, 4, 7}, low[6] = {0, -1, 2, 3, 4, 0};
    tb_var *bad_high = tb_test_ivar(be, 2, ishape, high);
    tb_var *bad_low = tb_test_ivar(be, 2, ishape, low);
    tb_tape *tape = new_tape(be);
    CHECK(tb_op_embedding(tape, table, bad_high) == NULL);
    CHECK(message_has(tape, TB_ERR_INVALID, "index 7 at position [1, 2]"));
    CHECK(message_has(tape, TB_ERR_INVALID, "[0, 5)"));
    /* the error is sticky: later ops fail too and keep the first message */
    CHECK(tb_op_embedding(tape, table, bad_low) == NULL);
    CHECK(message_has(tape, TB_ERR_INVALID, "index 7"));
    tb_tape_reset(tape);
    CHECK(tb_op_embedding(tape, table, bad_low) == NULL);
    CHECK(message_has(tape, TB_ERR_INVALID, "index -1 at position [0, 1]"));
    tb_tape_reset(tape);
    /* wrong dtypes and ranks */
    CHECK(tb_op_embedding(tape, table, table) == NULL);
    CHECK(message_has(tape, TB_ERR_INVALID, "int32"));
    tb_tape_reset(tape);
    CHECK(tb_op_embedding(tape, bad_high, bad_high) == NULL);
    CHECK(message_has(tape, TB_ERR_INVALID, "float32"));
    tb_tape_destroy(tape);
    tb_test_var_free(table);
    tb_test_var_free(bad_high);
    tb_test_var_free(bad_low);
    tb_backend_destroy(be);
}

static void test_attention_bad_shapes(void)
{
    tb_backend *be = tb_test_backend();
    int64_t s_not3[3] = {2, 3, 10}, s_12[3] = {2, 3, 12}, s_2d[2] = {3, 12};
    tb_rng rng = tb_rng_make(6, 0);
    tb_var *not3 = tb_test_var(be, 3, s_not3, &rng, -1.0f, 1.0f, false);
    tb_var *x12 = tb_test_var(be, 3, s_12, &rng, -1.0f, 1.0f, false);
    tb_var *flat = tb_test_var(be, 2, s_2d, &rng, -1.0f, 1.0f, false);
    tb_tape *tape = new_tape(be);
    CHECK(tb_op_causal_attention(tape, not3, 1) == NULL);
    CHECK(message_has(tape, TB_ERR_SHAPE, "not divisible by 3"));
    tb_tape_reset(tape);
    CHECK(tb_op_causal_attention(tape, x12, 3) == NULL); /* C = 4 */
    CHECK(message_has(tape, TB_ERR_SHAPE, "4 channels"));
    CHECK(message_has(tape, TB_ERR_SHAPE, "not divisible by 3 heads"));
    tb_tape_reset(tape);
    CHECK(tb_op_causal_attention(tape, x12, 0) == NULL);
    CHECK(message_has(tape, TB_ERR_INVALID, "0 heads"));
    tb_tape_reset(tape);
    CHECK(tb_op_causal_attention(tape, flat, 1) == NULL);
    CHECK(message_has(tape, TB_ERR_SHAPE, "[3, 12]"));
    tb_tape_reset(tape);
    CHECK(tb_op_causal_attention(tape, x12, 2) != NULL); /* C = 4, 2 heads: fine */
    CHECK(tb_tape_status(tape) == TB_OK);
    tb_tape_destroy(tape);
    tb_test_var_free(not3);
    tb_test_var_free(x12);
    tb_test_var_free(flat);
    tb_backend_destroy(be);
}

int main(void)
{
    test_attention_forward();
    test_attention_causal();
    test_attention_grad();
    test_attention_bwd_accumulates();
    test_attention_bwd_against_naive();
    test_attention_inside_parallel_region();
    test_embedding_forward_and_grad();
    test_embedding_bwd_large();
    test_embedding_bad_index();
    test_embedding_kernel_out_of_range();
    test_attention_bad_shapes();
    return tb_test_finish("test_ops_attention");
}

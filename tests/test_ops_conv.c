/* test_ops_conv.c: conv2d, max/avg pooling and global average pooling: forward passes against
 * direct loops, gradients against finite differences over several geometries, shape errors,
 * and the conv layer. */
#include "testutil.h"

#include "backend/backend_impl.h"

#include <math.h>

#include <float.h>
#include <stdlib.h>
#include <string.h>

static tb_backend *g_be;

static float *host_of(const tb_var *v) { return tb_test_host_copy(v); }

static tb_tape *new_tape(void) { return tb_test_tape(g_be); }

/* ---- conv2d ---------------------------------------------------------------------------------- */

typedef struct conv_case {
    int n, cin, h, w, cout, k, stride, pad;
    bool bias;
} conv_case;

static int out_size(int n, int k, int stride, int pad) { return (n + 2 * pad - k) / stride + 1; }

/* Direct convolution on the host. */
static void conv_direct(const conv_case *c, const float *x, const float *w, const float *b,
                        float *y)
{
    int ho = out_size(c->h, c->k, c->stride, c->pad), wo = out_size(c->w, c->k, c->stride, c->pad);
    for (int n = 0; n < c->n; n++)
        for (int o = 0; o < c->cout; o++)
            for (int oh = 0; oh < ho; oh++)
                for (int ow = 0; ow < wo; ow++) {
                    double acc = b ? b[o] : 0.0;
                    for (int i = 0; i < c->cin; i++)
                        for (int ki = 0; ki < c->k; ki++)
                            for (int kj = 0; kj < c->k; kj++) {
                                int ih = oh * c->stride - c->pad + ki;
                                int iw = ow * c->stride - c->pad + kj;
                                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w) continue;
                                acc += (double)x[((n * c->cin + i) * c->h + ih) * c->w + iw] *
                                       w[((o * c->cin + i) * c->k + ki) * c->k + kj];
                            }
                    y[((n * c->cout + o) * ho + oh) * wo + ow] = (float)acc;
                }
}

static tb_var *conv_loss(tb_tape *t, tb_var *const *in, void *ctx)
{
    const conv_case *c = ctx;
    return tb_test_reduce(t, tb_op_conv2d(t, in[0], in[1], c->bias ? in[2] : NULL, c->stride,
                                          c->pad));
}

/* x feeds two convolutions whose outputs are added: gradients must accumulate. */
static tb_var *conv_twice_loss(tb_tape *t, tb_var *const *in, void *ctx)
{
    const conv_case *c = ctx;
    tb_var *a = tb_op_conv2d(t, in[0], in[1], in[2], c->stride, c->pad);
    tb_var *b = tb_op_conv2d(t, in[0], in[1], NULL, c->stride, c->pad);
    return tb_test_reduce(t, tb_op_add(t, a, b));
}

static void run_conv_case(const conv_case *c, int max_checks)
{
    tb_rng rng = tb_rng_make(11, (uint64_t)(c->n * 1000 + c->h * 10 + c->k));
    int64_t xs[4] = {c->n, c->cin, c->h, c->w}, ws[4] = {c->cout, c->cin, c->k, c->k};
    int64_t bs[1] = {c->cout};
    tb_var *in[3] = {tb_test_var(g_be, 4, xs, &rng, -1, 1, true),
                     tb_test_var(g_be, 4, ws, &rng, -1, 1, true),
                     tb_test_var(g_be, 1, bs, &rng, -1, 1, true)};
    /* forward against the direct loop */
    tb_tape *t = new_tape();
    tb_var *y = tb_op_conv2d(t, in[0], in[1], c->bias ? in[2] : NULL, c->stride, c->pad);
    int ho = out_size(c->h, c->k, c->stride, c->pad), wo = out_size(c->w, c->k, c->stride, c->pad);
    if (CHECK(y != NULL)) {
        CHECK(y->value.ndim == 4 && y->value.shape[0] == c->n && y->value.shape[1] == c->cout &&
              y->value.shape[2] == ho && y->value.shape[3] == wo);
        float *x = host_of(in[0]), *w = host_of(in[1]), *b = host_of(in[2]), *got = host_of(y);
        int64_t ny = tb_tensor_numel(&y->value);
        float *want = malloc((size_t)ny * sizeof(float));
        conv_direct(c, x, w, c->bias ? b : NULL, want);
        double worst = 0;
        for (int64_t i = 0; i < ny; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        CHECK_NEAR(worst, 0.0, 1e-4);
        free(x);
        free(w);
        free(b);
        free(got);
        free(want);
    } else {
        fprintf(stderr, "conv2d: %s\n", tb_tape_error(t)->message);
    }
    tb_tape_destroy(t);
    char name[128];
    snprintf(name, sizeof name, "conv2d n%d cin%d %dx%d cout%d k%d s%d p%d%s", c->n, c->cin, c->h,
             c->w, c->cout, c->k, c->stride, c->pad, c->bias ? " bias" : "");
    tb_gradcheck(name, g_be, conv_loss, (void *)c, in, c->bias ? 3 : 2, 1e-2, 1e-4, 1e-2,
                 max_checks);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
}

static void test_conv2d(void)
{
    static const conv_case cases[] = {
        {2, 3, 5, 7, 4, 3, 1, 1, true},  /* same padding, non-square */
        {2, 2, 6, 5, 3, 5, 1, 2, true},  /* same padding, 5x5 (column shifts of 2) */
        {2, 2, 6, 5, 3, 3, 2, 1, true},  /* stride 2, pad 1 */
        {3, 2, 7, 6, 3, 3, 2, 0, true},  /* stride 2, pad 0 */
        {1, 3, 4, 6, 2, 1, 1, 0, false}, /* 1x1, no bias */
        {2, 1, 5, 5, 2, 1, 2, 0, true},  /* 1x1, stride 2 */
        {5, 2, 3, 4, 2, 2, 1, 1, true},  /* even kernel, pad 1, batch 5 */
        {2, 2, 3, 3, 3, 3, 1, 0, true},  /* output 1x1 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_conv_case(&cases[i], 40);
    /* larger maps: one image per chunk (64x64 outputs) and chunks that do not divide the batch
     * (32x32 outputs: 2 images per chunk, 5 images) */
    static const conv_case big[] = {
        {2, 2, 64, 64, 3, 3, 1, 1, true},
        {5, 2, 32, 32, 2, 3, 1, 1, true},
        /* 32 and 64 output channels with K = 72: the weight gradient on the own kernel */
        {3, 8, 7, 6, 32, 3, 1, 1, true},
        {2, 8, 9, 9, 64, 3, 2, 1, false},
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) run_conv_case(&big[i], 12);
}

static void test_conv2d_accumulates(void)
{
    conv_case c = {2, 2, 5, 4, 3, 3, 1, 1, true};
    tb_rng rng = tb_rng_make(5, 5);
    int64_t xs[4] = {c.n, c.cin, c.h, c.w}, ws[4] = {c.cout, c.cin, c.k, c.k}, bs[1] = {c.cout};
    tb_var *in[3] = {tb_test_var(g_be, 4, xs, &rng, -1, 1, true),
                     tb_test_var(g_be, 4, ws, &rng, -1, 1, true),
                     tb_test_var(g_be, 1, bs, &rng, -1, 1, true)};
    tb_gradcheck("conv2d used twice", g_be, conv_twice_loss, &c, in, 3, 1e-2, 1e-4, 1e-2, 40);
    /* a constant weight: the backward pass computes dx and db only (dw NULL) */
    tb_var *wc = tb_test_var(g_be, 4, ws, &rng, -1, 1, false);
    tb_var *in2[3] = {in[0], wc, in[2]};
    tb_gradcheck("conv2d constant weight", g_be, conv_loss, &c, in2, 3, 1e-2, 1e-4, 1e-2, 40);
    tb_test_var_free(wc);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
}

/* conv2d's gradients (dx, dw, db) on backends of 1, 2 and 3 threads: the same bits. Batches
 * of 1, 5 (one image per dw chunk), 40 and 70 (2 and 3 images per chunk, the last chunk
 * short); 16 output channels (OpenBLAS) and 32 with K = 72 (the own kernel). */
static void conv_grads_at(int threads, const conv_case *c, float *out[3])
{
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = threads};
    tb_backend *be = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_backend_create(&cfg, &be, &err), &err)) return;
    tb_rng rng = tb_rng_make(11, 3);
    const int64_t xs[4] = {c->n, c->cin, c->h, c->w}, ws[4] = {c->cout, c->cin, c->k, c->k};
    const int64_t bs[1] = {c->cout};
    tb_var *in[3] = {tb_test_var(be, 4, xs, &rng, -1, 1, true),
                     tb_test_var(be, 4, ws, &rng, -1, 1, true),
                     tb_test_var(be, 1, bs, &rng, -1, 1, true)};
    tb_tape *t = tb_test_tape(be);
    tb_var *loss = conv_loss(t, in, (void *)c);
    CHECK(loss && tb_tape_backward(t, loss) == TB_OK);
    for (int i = 0; i < 3; i++) {
        const size_t bytes = tb_tensor_bytes(&in[i]->grad);
        out[i] = malloc(bytes);
        memcpy(out[i], in[i]->grad.data, bytes);
    }
    tb_tape_destroy(t);
    for (int i = 0; i < 3; i++) tb_test_var_free(in[i]);
    tb_backend_destroy(be);
}

static void test_conv2d_thread_count(void)
{
    static const conv_case cases[] = {
        {1, 3, 8, 8, 16, 3, 1, 1, true},   {5, 3, 8, 8, 16, 3, 1, 1, true},
        {40, 3, 8, 8, 16, 3, 1, 1, true},  {70, 2, 9, 7, 16, 3, 2, 1, true},
        {40, 8, 6, 6, 32, 3, 1, 1, true},  {70, 8, 7, 7, 32, 3, 1, 1, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const conv_case *c = &cases[i];
        const size_t n[3] = {(size_t)c->n * c->cin * c->h * c->w,
                             (size_t)c->cout * c->cin * c->k * c->k, (size_t)c->cout};
        float *g1[3] = {0}, *g[3] = {0};
        conv_grads_at(1, c, g1);
        for (int threads = 2; threads <= 3; threads++) {
            conv_grads_at(threads, c, g);
            for (int j = 0; j < 3; j++) {
                bool same = g1[j] && g[j] && memcmp(g1[j], g[j], n[j] * sizeof(float)) == 0;
                if (!CHECK(same))
                    printf("  conv2d n%d cout%d: %s gradient differs at %d threads\n", c->n,
                           c->cout, j == 0 ? "input" : j == 1 ? "weight" : "bias", threads);
                free(g[j]);
            }
        }
        for (int j = 0; j < 3; j++) free(g1[j]);
    }
}

/* ---- pooling --------------------------------------------------------------------------------- */

typedef struct pool_case {
    int n, c, h, w, k, stride, pad;
    bool max;
} pool_case;

static void pool_direct(const pool_case *p, const float *x, float *y)
{
    int ho = out_size(p->h, p->k, p->stride, p->pad), wo = out_size(p->w, p->k, p->stride, p->pad);
    for (int pl = 0; pl < p->n * p->c; pl++)
        for (int oh = 0; oh < ho; oh++)
            for (int ow = 0; ow < wo; ow++) {
                double acc = 0, best = -DBL_MAX;
                for (int ki = 0; ki < p->k; ki++)
                    for (int kj = 0; kj < p->k; kj++) {
                        int ih = oh * p->stride - p->pad + ki, iw = ow * p->stride - p->pad + kj;
                        if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->w) continue;
                        double v = x[(pl * p->h + ih) * p->w + iw];
                        acc += v;
                        if (v > best) best = v;
                    }
                y[(pl * ho + oh) * wo + ow] = (float)(p->max ? best : acc / (p->k * p->k));
            }
}

static tb_var *pool_loss(tb_tape *t, tb_var *const *in, void *ctx)
{
    const pool_case *p = ctx;
    tb_var *y = p->max ? tb_op_maxpool2d(t, in[0], p->k, p->stride, p->pad)
                       : tb_op_avgpool2d(t, in[0], p->k, p->stride, p->pad);
    return tb_test_reduce(t, y);
}

static void run_pool_case(const pool_case *p)
{
    int64_t xs[4] = {p->n, p->c, p->h, p->w};
    int64_t numel = xs[0] * xs[1] * xs[2] * xs[3];
    tb_var *x = tb_test_var(g_be, 4, xs, NULL, 0, 0, true);
    /* distinct values 0.1 apart in shuffled order: no ties, so max pooling is differentiable
     * for finite-difference steps well below 0.05 */
    int64_t *perm = malloc((size_t)numel * sizeof *perm);
    float *hx = malloc((size_t)numel * sizeof *hx);
    for (int64_t i = 0; i < numel; i++) perm[i] = i;
    tb_rng rng = tb_rng_make(3, (uint64_t)numel);
    tb_rng_shuffle_i64(&rng, perm, numel);
    for (int64_t i = 0; i < numel; i++) hx[i] = 0.1f * (float)perm[i] - 0.05f * (float)numel;
    tb_tensor_upload(&x->value, hx, NULL);

    tb_tape *t = new_tape();
    tb_var *y = p->max ? tb_op_maxpool2d(t, x, p->k, p->stride, p->pad)
                       : tb_op_avgpool2d(t, x, p->k, p->stride, p->pad);
    int ho = out_size(p->h, p->k, p->stride, p->pad), wo = out_size(p->w, p->k, p->stride, p->pad);
    if (CHECK(y != NULL)) {
        CHECK(y->value.shape[0] == p->n && y->value.shape[1] == p->c &&
              y->value.shape[2] == ho && y->value.shape[3] == wo);
        int64_t ny = tb_tensor_numel(&y->value);
        float *got = host_of(y), *want = malloc((size_t)ny * sizeof(float));
        pool_direct(p, hx, want);
        double worst = 0;
        for (int64_t i = 0; i < ny; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        CHECK_NEAR(worst, 0.0, 1e-4);
        free(got);
        free(want);
    } else {
        fprintf(stderr, "pool: %s\n", tb_tape_error(t)->message);
    }
    tb_tape_destroy(t);
    char name[128];
    snprintf(name, sizeof name, "%s n%d c%d %dx%d k%d s%d p%d", p->max ? "maxpool" : "avgpool",
             p->n, p->c, p->h, p->w, p->k, p->stride, p->pad);
    tb_gradcheck(name, g_be, pool_loss, (void *)p, &x, 1, 1e-2, 1e-4, 1e-2, 60);
    free(perm);
    free(hx);
    tb_test_var_free(x);
}

static void test_pooling(void)
{
    static const pool_case shapes[] = {
        {2, 3, 4, 6, 2, 2, 0, false}, /* 2x2 stride 2, non-square */
        {2, 2, 5, 7, 3, 1, 1, false}, /* 3x3 stride 1 pad 1 */
        {3, 2, 7, 6, 3, 2, 1, false}, /* 3x3 stride 2 pad 1 (ResNet stem) */
        {1, 2, 5, 4, 3, 2, 0, false}, /* partial coverage: the last row is dropped */
        {2, 2, 3, 5, 1, 1, 0, false}, /* 1x1: identity */
        {2, 1, 4, 4, 4, 1, 2, false}, /* pad = kernel/2 */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        pool_case p = shapes[i];
        run_pool_case(&p);
        p.max = true;
        run_pool_case(&p);
    }
}

static void test_maxpool_known_values(void)
{
    /* one 3x4 plane, 2x2 stride 2: maxima 6, 8, and padding never wins (all negative input
     * with pad 1 still takes a real element) */
    float hx[12] = {1, 5, 2, 0, 6, 3, 8, 7, -1, -2, -3, -4};
    int64_t xs[4] = {1, 1, 3, 4};
    tb_var *x = tb_test_var(g_be, 4, xs, NULL, 0, 0, false);
    tb_tensor_upload(&x->value, hx, NULL);
    tb_tape *t = new_tape();
    tb_var *y = tb_op_maxpool2d(t, x, 2, 2, 0);
    if (CHECK(y != NULL)) {
        float got[2];
        tb_tensor_download(&y->value, got, NULL);
        CHECK(y->value.shape[2] == 1 && y->value.shape[3] == 2 && got[0] == 6 && got[1] == 8);
    }
    float neg[12];
    for (int i = 0; i < 12; i++) neg[i] = -1.0f - (float)i;
    tb_tensor_upload(&x->value, neg, NULL);
    y = tb_op_maxpool2d(t, x, 3, 2, 1);
    if (CHECK(y != NULL)) {
        float got[4];
        tb_tensor_download(&y->value, got, NULL);
        /* 2x2 output; windows cover rows {0,1},{1,2}, cols {0,1},{1,2,3} */
        CHECK(got[0] == -1 && got[1] == -2 && got[2] == -5 && got[3] == -6);
    }
    /* avg pooling counts padding as zeros: the corner window of a 3x3/pad 1 pool over ones
     * sees 4 real elements of 9 */
    for (int i = 0; i < 12; i++) neg[i] = 1.0f;
    tb_tensor_upload(&x->value, neg, NULL);
    y = tb_op_avgpool2d(t, x, 3, 1, 1);
    if (CHECK(y != NULL)) {
        float got[12];
        tb_tensor_download(&y->value, got, NULL);
        CHECK_NEAR(got[0], 4.0 / 9.0, 1e-6);
        CHECK_NEAR(got[5], 1.0, 1e-6);
    }
    tb_tape_destroy(t);
    tb_test_var_free(x);
}

/* The 2x2 / stride 2 fast path against a direct host computation: odd sizes (the last row and
 * column unused), rows of more than 16 outputs (two vectors, the second partial), ties (the
 * first element wins) and NaN (propagates). */
static void test_maxpool_2x2_fast_path(void)
{
    const int N = 2, C = 2, H = 5, W = 37, Ho = 2, Wo = 18;
    int64_t xs[4] = {N, C, H, W};
    tb_rng r = tb_rng_make(4, 0);
    tb_var *x = tb_test_var(g_be, 4, xs, &r, -1, 1, true);
    float *hx = tb_test_host_copy(x);
    for (int i = 0; i < N * C * H * W; i += 7) hx[i] = 0.5f; /* ties */
    hx[3] = NAN;
    hx[W + 20] = NAN;
    tb_tensor_upload(&x->value, hx, NULL);
    tb_tape *t = new_tape();
    tb_var *y = tb_op_maxpool2d(t, x, 2, 2, 0);
    if (!CHECK(y != NULL && y->value.shape[2] == Ho && y->value.shape[3] == Wo)) return;
    float *hy = tb_test_host_copy(y);
    int wrong = 0;
    for (int p = 0; p < N * C; p++)
        for (int oh = 0; oh < Ho; oh++)
            for (int ow = 0; ow < Wo; ow++) {
                int at = -1;
                float best = 0;
                for (int ki = 0; ki < 2; ki++)
                    for (int kj = 0; kj < 2; kj++) {
                        int i = p * H * W + (2 * oh + ki) * W + 2 * ow + kj;
                        if (at < 0 || hx[i] > best || hx[i] != hx[i]) {
                            best = hx[i];
                            at = i;
                        }
                    }
                float got = hy[(p * Ho + oh) * Wo + ow];
                if (!(got == best || (got != got && best != best))) wrong++;
            }
    CHECK(wrong == 0);
    free(hx);
    free(hy);
    tb_tape_destroy(t);
    tb_test_var_free(x);
}

/* The 2x2 pool's backward on even planes (one vectorised pass, no zeroing and scatter) against
 * the scatter it replaces, bit for bit: written over NaN, and added to what dx held (negative
 * zeros included); full 16-window vectors and a tail. */
static void test_maxpool_2x2_backward(void)
{
    static const int shapes[][4] = {{2, 3, 6, 40}, {1, 2, 4, 64}, {3, 1, 2, 2}};
    for (int s = 0; s < 3; s++) {
        const tb_pool_shape ps = {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 2, 2, 2,
                                  0, shapes[s][2] / 2, shapes[s][3] / 2};
        const int64_t nx = (int64_t)ps.n * ps.c * ps.h * ps.w, ny = nx / 4;
        tb_rng rng = tb_rng_make(8, (uint64_t)s);
        float *x = malloc(sizeof(float) * (size_t)nx), *y = malloc(sizeof(float) * (size_t)ny);
        float *dy = malloc(sizeof(float) * (size_t)ny), *old = malloc(sizeof(float) * (size_t)nx);
        float *dx = malloc(sizeof(float) * (size_t)nx), *want = malloc(sizeof(float) * (size_t)nx);
        int32_t *at = malloc(sizeof(int32_t) * (size_t)ny);
        tb_rng_fill_uniform(&rng, x, nx, -1.0f, 1.0f);
        tb_rng_fill_uniform(&rng, dy, ny, -1.0f, 1.0f);
        tb_rng_fill_uniform(&rng, old, nx, -1.0f, 1.0f);
        for (int64_t i = 0; i < nx; i += 5) old[i] = -0.0f; /* kept where not chosen */
        g_be->ops.maxpool2d_fwd(g_be, &ps, x, y, at);
        for (int acc = 0; acc < 2; acc++) {
            for (int64_t i = 0; i < nx; i++) {
                want[i] = acc ? old[i] : 0.0f;
                dx[i] = acc ? old[i] : NAN;
            }
            const int64_t hw = (int64_t)ps.h * ps.w, hwo = hw / 4;
            for (int64_t i = 0; i < ny; i++) want[i / hwo * hw + at[i]] += dy[i];
            g_be->ops.maxpool2d_bwd(g_be, &ps, at, dy, dx, acc);
            CHECK(memcmp(dx, want, sizeof(float) * (size_t)nx) == 0);
        }
        free(x);
        free(y);
        free(dy);
        free(old);
        free(dx);
        free(want);
        free(at);
    }
}

/* ---- global average pooling ------------------------------------------------------------------ */

static tb_var *gap_loss(tb_tape *t, tb_var *const *in, void *ctx)
{
    (void)ctx;
    return tb_test_reduce(t, tb_op_global_avgpool(t, in[0]));
}

static void test_global_avgpool(void)
{
    int64_t xs[4] = {3, 4, 5, 3};
    tb_rng rng = tb_rng_make(9, 9);
    tb_var *x = tb_test_var(g_be, 4, xs, &rng, -1, 1, true);
    tb_tape *t = new_tape();
    tb_var *y = tb_op_global_avgpool(t, x);
    if (CHECK(y != NULL)) {
        CHECK(y->value.ndim == 2 && y->value.shape[0] == 3 && y->value.shape[1] == 4);
        float *hx = host_of(x), *hy = host_of(y);
        double worst = 0;
        for (int i = 0; i < 12; i++) {
            double s = 0;
            for (int p = 0; p < 15; p++) s += hx[i * 15 + p];
            worst = fmax(worst, fabs(hy[i] - s / 15));
        }
        CHECK_NEAR(worst, 0.0, 1e-6);
        free(hx);
        free(hy);
    }
    tb_tape_destroy(t);
    tb_gradcheck("global_avgpool", g_be, gap_loss, NULL, &x, 1, 1e-2, 1e-4, 1e-2, 60);
    tb_test_var_free(x);
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void expect_error(tb_tape *t, tb_var *result, tb_status want, const char *needle)
{
    CHECK(result == NULL);
    CHECK_FAILS(tb_tape_status(t), want, tb_tape_error(t), needle);
    tb_tape_reset(t);
}

static void test_errors(void)
{
    tb_rng rng = tb_rng_make(1, 1);
    int64_t xs[4] = {2, 3, 5, 5}, ws[4] = {4, 2, 3, 3}, ws_ok[4] = {4, 3, 3, 3}, bs[1] = {5};
    int64_t x3s[3] = {3, 5, 5}, bigk[4] = {4, 3, 8, 8};
    tb_var *x = tb_test_var(g_be, 4, xs, &rng, -1, 1, true);
    tb_var *x3 = tb_test_var(g_be, 3, x3s, &rng, -1, 1, true);
    tb_var *w = tb_test_var(g_be, 4, ws, &rng, -1, 1, true);
    tb_var *wok = tb_test_var(g_be, 4, ws_ok, &rng, -1, 1, true);
    tb_var *wbig = tb_test_var(g_be, 4, bigk, &rng, -1, 1, true);
    tb_var *b = tb_test_var(g_be, 1, bs, &rng, -1, 1, true);
    tb_tape *t = new_tape();

    expect_error(t, tb_op_conv2d(t, x, w, NULL, 1, 1), TB_ERR_SHAPE,
                 "conv2d: input [2, 3, 5, 5] has 3 channels but weight [4, 2, 3, 3] expects 2");
    expect_error(t, tb_op_conv2d(t, x, wok, b, 1, 1), TB_ERR_SHAPE,
                 "conv2d: bias [5] does not match weight [4, 3, 3, 3]");
    expect_error(t, tb_op_conv2d(t, x3, wok, NULL, 1, 1), TB_ERR_SHAPE,
                 "conv2d: input has shape [3, 5, 5]");
    expect_error(t, tb_op_conv2d(t, x, wok, NULL, 0, 1), TB_ERR_INVALID, "stride 0");
    expect_error(t, tb_op_conv2d(t, x, wok, NULL, 1, -1), TB_ERR_INVALID, "pad -1");
    expect_error(t, tb_op_conv2d(t, x, wbig, NULL, 1, 1), TB_ERR_SHAPE,
                 "conv2d: kernel 8x8 with pad 1 does not fit input [2, 3, 5, 5]");
    expect_error(t, tb_op_maxpool2d(t, x, 3, 1, 2), TB_ERR_INVALID, "maxpool2d: kernel 3");
    expect_error(t, tb_op_avgpool2d(t, x, 2, 0, 0), TB_ERR_INVALID,
                 "avgpool2d: kernel 2, stride 0");
    expect_error(t, tb_op_avgpool2d(t, x, 0, 1, 0), TB_ERR_INVALID, "kernel >= 1");
    expect_error(t, tb_op_maxpool2d(t, x, 7, 1, 0), TB_ERR_SHAPE,
                 "maxpool2d: kernel 7 with pad 0 does not fit input [2, 3, 5, 5]");
    expect_error(t, tb_op_maxpool2d(t, x3, 2, 2, 0), TB_ERR_SHAPE, "maxpool2d: input");
    expect_error(t, tb_op_global_avgpool(t, x3), TB_ERR_SHAPE, "global_avgpool: input");

    /* the error is sticky: later ops return NULL and the first message stays */
    tb_var *bad = tb_op_conv2d(t, x, w, NULL, 1, 1);
    tb_var *after = tb_op_relu(t, bad);
    tb_var *more = tb_op_maxpool2d(t, x, 2, 2, 0);
    CHECK(bad == NULL && after == NULL && more == NULL);
    CHECK_FAILS(tb_tape_status(t), TB_ERR_SHAPE, tb_tape_error(t), "has 3 channels");
    tb_tape_reset(t);
    CHECK(tb_op_conv2d(t, x, wok, NULL, 2, 1) != NULL);
    CHECK(tb_tape_status(t) == TB_OK);

    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_test_var_free(x3);
    tb_test_var_free(w);
    tb_test_var_free(wok);
    tb_test_var_free(wbig);
    tb_test_var_free(b);
}

/* ---- conv layer ------------------------------------------------------------------------------ */

static void test_conv_layer(void)
{
    tb_params *params = NULL;
    tb_error err = {0};
    CHECK_OK(tb_params_create(g_be, &params, &err), &err);
    tb_conv_layer a, b;
    CHECK_OK(tb_conv_layer_init(&a, params, "conv1", 3, 8, 3, 1, 1, true, &err), &err);
    CHECK_OK(tb_conv_layer_init(&b, params, "conv2", 8, 4, 1, 2, 0, false, &err), &err);
    CHECK_FAILS(tb_conv_layer_init(&b, params, "bad", 8, 4, 3, 0, 0, false, &err),
                TB_ERR_INVALID, &err, "stride 0");
    CHECK_OK(tb_params_finalize(params, &err), &err);
    CHECK(tb_params_count(params) == 3);
    tb_param *p0 = tb_params_get(params, 0), *p1 = tb_params_get(params, 1);
    tb_param *p2 = tb_params_get(params, 2);
    CHECK(strcmp(p0->name, "conv1.weight") == 0 && p0->kind == TB_PARAM_WEIGHT);
    CHECK(strcmp(p1->name, "conv1.bias") == 0 && p1->kind == TB_PARAM_BIAS);
    CHECK(strcmp(p2->name, "conv2.weight") == 0 && p2->var.value.shape[0] == 4 &&
          p2->var.value.shape[1] == 8 && p2->var.value.shape[2] == 1);
    CHECK(tb_tensor_numel(&p0->var.value) == 8 * 3 * 9 && tb_tensor_numel(&p1->var.value) == 8);
    tb_rng rng = tb_rng_make(2, 2);
    CHECK_OK(tb_init_fan_in_uniform(a.w, 27, &rng, &err), &err);
    CHECK_OK(tb_init_fan_in_uniform(a.b, 27, &rng, &err), &err);
    CHECK_OK(tb_init_fan_in_uniform(b.w, 8, &rng, &err), &err);
    tb_params_zero_grad(params);

    int64_t xs[4] = {2, 3, 6, 6};
    tb_var *x = tb_test_var(g_be, 4, xs, &rng, -1, 1, false);
    tb_tape *t = new_tape();
    tb_var *h = tb_conv_layer_forward(t, &a, x);
    tb_var *y = tb_conv_layer_forward(t, &b, tb_op_relu(t, h));
    if (CHECK(y != NULL)) {
        CHECK(a.input == x && a.output == h && b.output == y);
        CHECK(y->value.shape[1] == 4 && y->value.shape[2] == 3 && y->value.shape[3] == 3);
        CHECK(tb_tape_backward(t, tb_test_reduce(t, y)) == TB_OK);
        CHECK(a.output->grad.data != NULL && b.input->grad.data != NULL);
        CHECK(tb_params_grad_norm(params) > 0);
    }
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_params_destroy(params);
}

/* Gradients written into fresh step memory (overwritten, not accumulated, and buffers taken
 * over by add/reshape) must not depend on what that memory held: a net of every op that does
 * so gets the same gradients on a new tape as on a tape whose step memory a previous step
 * filled with NaN. */
static tb_var *dirty_net(tb_tape *t, tb_var *const *in)
{
    tb_var *x = in[0], *w = in[1], *g = in[2], *b = in[3], *lg = in[4], *lb = in[5];
    int64_t c = 3;
    tb_tensor rm, rv;
    float zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1};
    tb_tensor_alloc(g_be, TB_F32, 1, &c, &rm, NULL);
    tb_tensor_alloc(g_be, TB_F32, 1, &c, &rv, NULL);
    tb_tensor_upload(&rm, zeros, NULL);
    tb_tensor_upload(&rv, ones, NULL);
    tb_var *h = tb_op_conv2d(t, x, w, NULL, 1, 1);                  /* [2, 3, 6, 6] */
    h = tb_op_batchnorm(t, h, g, b, &rm, &rv, 0.1f, 1e-5f);
    tb_var *r = tb_op_relu(t, h);
    h = tb_op_add(t, r, tb_op_gelu(t, h));                          /* h used twice */
    h = tb_op_maxpool2d(t, h, 2, 2, 0);                             /* [2, 3, 3, 3] */
    int64_t flat[2] = {6, 9};
    h = tb_op_reshape(t, h, 2, flat);
    h = tb_op_add(t, h, tb_op_layernorm(t, h, lg, lb, 1e-5f));      /* residual */
    tb_var *loss = tb_test_reduce(t, tb_op_silu(t, h));
    tb_tensor_free(&rm);
    tb_tensor_free(&rv);
    return loss;
}

static void test_dirty_step_memory(void)
{
    tb_rng r = tb_rng_make(9, 0);
    int64_t xs[4] = {2, 2, 6, 6}, ws[4] = {3, 2, 3, 3}, cs[1] = {3}, ls[1] = {9};
    tb_var *in[6] = {tb_test_var(g_be, 4, xs, &r, -1, 1, true),
                     tb_test_var(g_be, 4, ws, &r, -1, 1, true),
                     tb_test_var(g_be, 1, cs, &r, 0.5f, 1.5f, true),
                     tb_test_var(g_be, 1, cs, &r, -0.5f, 0.5f, true),
                     tb_test_var(g_be, 1, ls, &r, 0.5f, 1.5f, true),
                     tb_test_var(g_be, 1, ls, &r, -0.5f, 0.5f, true)};
    float *clean[6], *dirty[6];
    for (int pass = 0; pass < 2; pass++) {
        tb_tape *t = tb_test_tape(g_be);
        if (pass == 1) {
            /* fill the step memory with NaN: many large NaN tensors and their gradients */
            int64_t big[1] = {1 << 16};
            tb_var *v = tb_test_var(g_be, 1, big, &r, -1, 1, true);
            tb_var *acc = tb_op_scale(t, v, NAN);
            for (int i = 0; i < 8; i++) acc = tb_op_add(t, acc, tb_op_scale(t, v, NAN));
            CHECK(tb_tape_backward(t, tb_test_reduce(t, acc)) == TB_OK);
            tb_tape_reset(t);
            tb_test_var_free(v);
        }
        for (int i = 0; i < 6; i++) {
            float *zeros = calloc((size_t)tb_tensor_numel(&in[i]->value), sizeof(float));
            CHECK_OK(tb_tensor_upload(&in[i]->grad, zeros, NULL), NULL);
            free(zeros);
        }
        tb_var *loss = dirty_net(t, in);
        CHECK(loss != NULL);
        CHECK(tb_tape_backward(t, loss) == TB_OK);
        for (int i = 0; i < 6; i++) {
            tb_var tmp = *in[i];
            tmp.value = in[i]->grad;
            (pass ? dirty : clean)[i] = tb_test_host_copy(&tmp);
        }
        tb_tape_destroy(t);
    }
    int bad = 0;
    for (int i = 0; i < 6; i++) {
        for (int64_t j = 0; j < tb_tensor_numel(&in[i]->value); j++)
            if (!(clean[i][j] == dirty[i][j])) bad++; /* NaN or a different value */
        free(clean[i]);
        free(dirty[i]);
        tb_test_var_free(in[i]);
    }
    CHECK(bad == 0);
}

int main(void)
{
    g_be = tb_test_backend();
    test_conv2d();
    test_conv2d_accumulates();
    test_conv2d_thread_count();
    test_pooling();
    test_maxpool_known_values();
    test_maxpool_2x2_fast_path();
    test_maxpool_2x2_backward();
    test_global_avgpool();
    test_errors();
    test_conv_layer();
    test_dirty_step_memory();
    tb_backend_destroy(g_be);
    return tb_test_finish("test_ops_conv");
}

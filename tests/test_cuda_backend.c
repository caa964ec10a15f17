/* test_cuda_backend.c: the CUDA backend against the CPU backend, kernel by kernel and through
 * the public ops, tape and optimizers.
 *
 * Every case draws the same inputs for both backends (same seed), prefills every output with
 * the same random values (so an accumulating kernel that overwrote, or the reverse, is caught),
 * runs on both and compares all outputs: |cpu - cuda| <= ATOL + RTOL max(|cpu|, |cuda|), with
 * RTOL = 1e-4 and ATOL = 1e-5 unless a case says otherwise. Integer outputs (argmax) and
 * dropout masks must match exactly.
 *
 * Without a GPU (or without a driver) the CUDA backend cannot be created; the test then checks
 * that the error is TB_ERR_NO_DEVICE with a message naming the cause, prints
 * "test_cuda_backend: skipped: no CUDA device (...)" and exits with 77, which ctest reports as
 * skipped (SKIP_RETURN_CODE). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "trainbench/optim.h"

#define RTOL 1e-4
#define ATOL 1e-5

static tb_backend *cpu, *gpu;

/* ---- a case: buffers created the same way on one backend ---------------------------------- */

enum { BUF_IN, BUF_OUT_F, BUF_OUT_I };
#define MAX_BUFS 24

typedef struct buf {
    void *dev;
    size_t bytes;
    int kind;
    const char *name;
} buf;

typedef struct run {
    tb_backend *be;
    tb_backend_ops *ops;
    tb_rng rng;
    buf b[MAX_BUFS];
    int n;
} run;

static void *add_buf(run *r, const void *host, size_t bytes, int kind, const char *name)
{
    if (r->n == MAX_BUFS) {
        fprintf(stderr, "test_cuda_backend: too many buffers in one case\n");
        exit(1);
    }
    void *d = tb_backend_alloc(r->be, bytes ? bytes : 4);
    if (!d) {
        fprintf(stderr, "test_cuda_backend: cannot allocate %zu bytes on %s\n", bytes,
                tb_backend_name(r->be));
        exit(1);
    }
    if (host && bytes) tb_backend_upload(r->be, d, host, bytes);
    r->b[r->n++] = (buf){d, bytes, kind, name};
    return d;
}

static float *rand_host(run *r, int64_t n, float lo, float hi)
{
    float *h = malloc((size_t)(n ? n : 1) * sizeof(float));
    tb_rng_fill_uniform(&r->rng, h, n, lo, hi);
    return h;
}

/* An input of n uniforms in [lo, hi). */
static float *in_f(run *r, int64_t n, float lo, float hi)
{
    float *h = rand_host(r, n, lo, hi);
    float *d = add_buf(r, h, (size_t)n * sizeof(float), BUF_IN, "in");
    free(h);
    return d;
}

/* An output, compared after the case; prefilled with uniforms in [-1, 1). */
static float *out_f(run *r, int64_t n, const char *name)
{
    float *h = rand_host(r, n, -1.0f, 1.0f);
    float *d = add_buf(r, h, (size_t)n * sizeof(float), BUF_OUT_F, name);
    free(h);
    return d;
}

static float *scalar_in(run *r, float v)
{
    return add_buf(r, &v, sizeof v, BUF_IN, "scalar");
}

static int32_t *in_i(run *r, int64_t n, int32_t modulo)
{
    int32_t *h = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) h[i] = (int32_t)tb_rng_below(&r->rng, (uint64_t)modulo);
    int32_t *d = add_buf(r, h, (size_t)n * sizeof(int32_t), BUF_IN, "labels");
    free(h);
    return d;
}

static int32_t *out_i(run *r, int64_t n, const char *name)
{
    int32_t *h = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) h[i] = -7;
    int32_t *d = add_buf(r, h, (size_t)n * sizeof(int32_t), BUF_OUT_I, name);
    free(h);
    return d;
}

/* Scratch (workspace) that is not compared. */
static void *scratch(run *r, size_t bytes) { return add_buf(r, NULL, bytes, BUF_IN, "scratch"); }

static bool close_enough(double a, double b, double rtol, double atol)
{
    if (a != a || b != b) return a != a && b != b;
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= atol + rtol * m;
}

typedef void (*case_fn)(run *r);

/* Runs fn on both backends and compares every output buffer. */
static void compare_case(const char *name, case_fn fn, double rtol, double atol)
{
    run a = {.be = cpu, .ops = &cpu->ops, .rng = tb_rng_make(2024, 7)};
    run b = {.be = gpu, .ops = &gpu->ops, .rng = tb_rng_make(2024, 7)};
    fn(&a);
    fn(&b);
    tb_backend_sync(gpu);
    tb_error err = {0};
    CHECK_OK(tb_backend_check(gpu, &err), &err);
    for (int i = 0; i < a.n; i++) {
        if (a.b[i].kind == BUF_IN) continue;
        size_t bytes = a.b[i].bytes;
        void *ha = malloc(bytes ? bytes : 4), *hb = malloc(bytes ? bytes : 4);
        tb_backend_download(cpu, ha, a.b[i].dev, bytes);
        tb_backend_download(gpu, hb, b.b[i].dev, bytes);
        int64_t n = (int64_t)(bytes / 4), bad = 0, first = -1;
        double worst = 0;
        for (int64_t k = 0; k < n; k++) {
            bool ok;
            if (a.b[i].kind == BUF_OUT_I) {
                ok = ((int32_t *)ha)[k] == ((int32_t *)hb)[k];
            } else {
                double x = ((float *)ha)[k], y = ((float *)hb)[k];
                ok = close_enough(x, y, rtol, atol);
                if (x == x && y == y && fabs(x - y) > worst) worst = fabs(x - y);
            }
            if (!ok && bad++ == 0) first = k;
        }
        if (bad) {
            if (a.b[i].kind == BUF_OUT_I)
                fprintf(stderr, "%s: %s: %lld of %lld differ; first [%lld] cpu %d cuda %d\n", name,
                        a.b[i].name, (long long)bad, (long long)n, (long long)first,
                        ((int32_t *)ha)[first], ((int32_t *)hb)[first]);
            else
                fprintf(stderr, "%s: %s: %lld of %lld differ (max abs %.3g); first [%lld] cpu "
                        "%.9g cuda %.9g\n", name, a.b[i].name, (long long)bad, (long long)n,
                        worst, (long long)first, ((float *)ha)[first], ((float *)hb)[first]);
        }
        CHECK(bad == 0);
        free(ha);
        free(hb);
    }
    for (int i = 0; i < a.n; i++) {
        tb_backend_free(cpu, a.b[i].dev);
        tb_backend_free(gpu, b.b[i].dev);
    }
}

/* ---- BLAS ------------------------------------------------------------------------------------ */

static void c_gemm(run *r)
{
    const int m = 5, n = 7, k = 9;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        /* leading dimensions larger than the matrices: sub-matrix access */
        int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 4;
        float *a = in_f(r, (int64_t)(ta ? k : m) * lda, -1, 1);
        float *b = in_f(r, (int64_t)(tb ? n : k) * ldb, -1, 1);
        float *c = out_f(r, (int64_t)m * ldc, "C");
        r->ops->gemm(r->be, ta, tb, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, c, ldc);
    }
}

static void c_gemm_batched(run *r)
{
    const int m = 4, n = 6, k = 5, batch = 3;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        int lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
        int64_t sa = (int64_t)(ta ? k : m) * lda + 2, sb = (int64_t)(tb ? n : k) * ldb + 1,
                sc = (int64_t)m * ldc + 3;
        float *a = in_f(r, sa * batch, -1, 1), *b = in_f(r, sb * batch, -1, 1);
        float *c = out_f(r, sc * batch, "C");
        r->ops->gemm_batched(r->be, ta, tb, m, n, k, 1.1f, a, lda, sa, b, ldb, sb, 0.5f, c, ldc,
                             sc, batch);
    }
}

/* ---- element-wise ---------------------------------------------------------------------------- */

static void c_elementwise(run *r)
{
    const int64_t n = 1000, rows = 37, cols = 29;
    float *x = out_f(r, n, "fill 0");
    r->ops->fill(r->be, x, n, 0.0f);
    x = out_f(r, n, "fill");
    r->ops->fill(r->be, x, n, 2.5f);
    x = out_f(r, n, "scale");
    r->ops->scale(r->be, x, n, -0.3f);
    float *in = in_f(r, n, -2, 2), *in2 = in_f(r, n, -2, 2);
    x = out_f(r, n, "axpy");
    r->ops->axpy(r->be, n, 0.75f, in, x);
    x = out_f(r, n, "add");
    r->ops->add(r->be, n, in, in2, x);
    /* the bias broadcast to every row, as linear layers start their output */
    float *bias = in_f(r, cols, -1, 1);
    x = out_f(r, rows * cols, "bias rows");
    const int64_t shape[2] = {rows, cols}, ystride[2] = {cols, 1}, bstride[2] = {0, 1};
    r->ops->strided_copy(r->be, 2, shape, x, ystride, bias, bstride, false);
    float *dy = in_f(r, rows * cols, -1, 1);
    float *db = out_f(r, cols, "bias_grad");
    r->ops->bias_grad(r->be, rows, cols, dy, db);
}

static void c_activations(run *r)
{
    const int64_t n = 777;
    float *x = in_f(r, n, -4, 4), *dy = in_f(r, n, -1, 1);
    for (int act = 0; act < TB_ACT_COUNT; act++) {
        float *y = out_f(r, n, "act_fwd");
        r->ops->act_fwd(r->be, (tb_act)act, n, x, y);
        float *dx = out_f(r, n, "act_bwd");
        r->ops->act_bwd(r->be, (tb_act)act, n, x, y, dy, dx, true);
        float *dx_new = out_f(r, n, "act_bwd overwrite");
        r->ops->act_bwd(r->be, (tb_act)act, n, x, y, dy, dx_new, false);
    }
}

static void c_strided_copy(run *r)
{
    /* transpose of [3, 4, 5] to [5, 4, 3], copying and accumulating; a scalar; a slice */
    const int64_t shape[3] = {3, 4, 5}, src_stride[3] = {20, 5, 1}, dst_stride[3] = {1, 3, 12};
    float *src = in_f(r, 60, -1, 1);
    float *dst = out_f(r, 60, "transpose");
    r->ops->strided_copy(r->be, 3, shape, dst, dst_stride, src, src_stride, false);
    dst = out_f(r, 60, "transpose +=");
    r->ops->strided_copy(r->be, 3, shape, dst, dst_stride, src, src_stride, true);
    dst = out_f(r, 1, "scalar +=");
    r->ops->strided_copy(r->be, 0, NULL, dst, NULL, src + 7, NULL, true);
    const int64_t sshape[2] = {3, 2}, sss[2] = {20, 1}, sds[2] = {2, 1};
    dst = out_f(r, 6, "slice");
    r->ops->strided_copy(r->be, 2, sshape, dst, sds, src + 3, sss, false);
}

/* ---- losses and dropout ---------------------------------------------------------------------- */

static void c_losses(run *r)
{
    const int n = 13, c = 300; /* c larger than a block: the row reductions loop */
    float *logits = in_f(r, (int64_t)n * c, -5, 5);
    int32_t *labels = in_i(r, n, c);
    float *dloss = scalar_in(r, 1.3f);
    for (int s = 0; s < 2; s++) {
        float smoothing = s ? 0.1f : 0.0f;
        float *stats = out_f(r, (int64_t)n * 2, "xent row stats");
        float *loss = out_f(r, 1, "xent loss");
        r->ops->softmax_xent_fwd(r->be, n, c, logits, labels, smoothing, stats, loss);
        float *dl = out_f(r, (int64_t)n * c, "dlogits");
        r->ops->softmax_xent_bwd(r->be, n, c, logits, stats, labels, smoothing, dloss, dl, true);
        float *dl_new = out_f(r, (int64_t)n * c, "softmax_xent_bwd overwrite");
        r->ops->softmax_xent_bwd(r->be, n, c, logits, stats, labels, smoothing, dloss, dl_new,
                                 false);
    }
    const int64_t m = 1001;
    float *pred = in_f(r, m, -3, 3), *target = in_f(r, m, 0, 1);
    float *loss = out_f(r, 1, "mse");
    r->ops->mse_fwd(r->be, m, pred, target, loss);
    float *dp = out_f(r, m, "dmse");
    r->ops->mse_bwd(r->be, m, pred, target, dloss, dp);
    loss = out_f(r, 1, "bce");
    r->ops->bce_fwd(r->be, m, pred, target, loss);
    dp = out_f(r, m, "dbce");
    r->ops->bce_bwd(r->be, m, pred, target, dloss, dp);
}

static void c_dropout(run *r)
{
    const int64_t n = 1003; /* not a multiple of 4 */
    const uint32_t key[2] = {0x12345678u, 0x9abcdef0u};
    float *x = in_f(r, n, -1, 1), *dy = in_f(r, n, -1, 1);
    const float ps[3] = {0.0f, 0.3f, 0.9f};
    for (int i = 0; i < 3; i++) {
        float *y = out_f(r, n, "dropout y"), *mask = out_f(r, n, "dropout mask");
        uint64_t counter = 12345678901ull + (uint64_t)i;
        r->ops->dropout_fwd(r->be, n, ps[i], key, &counter, x, y, mask);
        CHECK(counter == 12345678901ull + (uint64_t)i + (n + 3) / 4); /* advanced past it */
        float *dx = out_f(r, n, "dropout dx");
        r->ops->dropout_bwd(r->be, n, mask, dy, dx);
    }
}

/* ---- convolution and pooling ------------------------------------------------------------------ */

static void conv_case(run *r, int n, int cin, int h, int w, int cout, int k, int stride, int pad)
{
    tb_conv_shape s = {n, cin, h, w, cout, k, k, stride, pad, (h + 2 * pad - k) / stride + 1,
                       (w + 2 * pad - k) / stride + 1};
    int64_t xs = (int64_t)n * cin * h * w, ws = (int64_t)cout * cin * k * k;
    int64_t ys = (int64_t)n * cout * s.h_out * s.w_out;
    float *x = in_f(r, xs, -1, 1), *wt = in_f(r, ws, -1, 1), *bias = in_f(r, cout, -1, 1);
    float *dy = in_f(r, ys, -1, 1);
    void *work = scratch(r, r->ops->conv2d_workspace(r->be, &s));
    float *y = out_f(r, ys, "conv y");
    r->ops->conv2d_fwd(r->be, &s, x, wt, bias, y, work);
    y = out_f(r, ys, "conv y (no bias)");
    r->ops->conv2d_fwd(r->be, &s, x, wt, NULL, y, work);
    float *dx = out_f(r, xs, "conv dx"), *dw = out_f(r, ws, "conv dw"), *db = out_f(r, cout, "db");
    r->ops->conv2d_bwd(r->be, &s, x, wt, dy, dx, true, dw, db, work);
    dx = out_f(r, xs, "conv dx only");
    r->ops->conv2d_bwd(r->be, &s, x, wt, dy, dx, false, NULL, NULL, work);
}

static void c_conv(run *r)
{
    conv_case(r, 3, 4, 9, 8, 5, 3, 2, 1);
    conv_case(r, 2, 3, 7, 7, 6, 3, 1, 1);
    conv_case(r, 4, 2, 6, 6, 3, 1, 1, 0);
}

static void c_pool(run *r)
{
    const int cfg[3][3] = {{3, 2, 1}, {2, 2, 0}, {3, 1, 1}}; /* kernel, stride, pad */
    for (int i = 0; i < 3; i++) {
        int k = cfg[i][0], st = cfg[i][1], pad = cfg[i][2];
        tb_pool_shape s = {2, 3, 7, 6, k, k, st, pad, (7 + 2 * pad - k) / st + 1,
                           (6 + 2 * pad - k) / st + 1};
        int64_t xs = 2 * 3 * 7 * 6, ys = 2 * 3 * (int64_t)s.h_out * s.w_out;
        float *x = in_f(r, xs, -1, 1), *dy = in_f(r, ys, -1, 1);
        float *y = out_f(r, ys, "maxpool y");
        int32_t *am = out_i(r, ys, "argmax");
        r->ops->maxpool2d_fwd(r->be, &s, x, y, am);
        float *dx = out_f(r, xs, "maxpool dx");
        r->ops->maxpool2d_bwd(r->be, &s, am, dy, dx, true);
        float *dx_new = out_f(r, (int64_t)s.n * s.c * s.h * s.w, "maxpool2d_bwd overwrite");
        r->ops->maxpool2d_bwd(r->be, &s, am, dy, dx_new, false);
        y = out_f(r, ys, "avgpool y");
        r->ops->avgpool2d_fwd(r->be, &s, x, y);
        dx = out_f(r, xs, "avgpool dx");
        r->ops->avgpool2d_bwd(r->be, &s, dy, dx);
    }
    float *x = in_f(r, 6 * 300, -1, 1), *dy = in_f(r, 6, -1, 1);
    float *y = out_f(r, 6, "gap y");
    r->ops->gap_fwd(r->be, 6, 300, x, y);
    float *dx = out_f(r, 6 * 300, "gap dx");
    r->ops->gap_bwd(r->be, 6, 300, dy, dx);
}

/* ---- normalisation --------------------------------------------------------------------------- */

static void c_batchnorm(run *r)
{
    const int64_t n = 5, c = 4, hw = 70, total = n * c * hw;
    float *x = in_f(r, total, -2, 3), *gamma = in_f(r, c, 0.5f, 1.5f), *beta = in_f(r, c, -1, 1);
    float *dy = in_f(r, total, -1, 1);
    float *rm = out_f(r, c, "running_mean"), *rv = in_f(r, c, 0.5f, 2);
    float *rv_out = out_f(r, c, "running_var");
    r->ops->copy(r->be, rv_out, rv, (size_t)c * sizeof(float));
    float *y = out_f(r, total, "bn y"), *mean = out_f(r, c, "mean"), *inv = out_f(r, c, "invstd");
    r->ops->batchnorm_fwd_train(r->be, n, c, hw, x, gamma, beta, 1e-5f, 0.1f, rm, rv_out, false,
                                y, mean, inv);
    float *dx = out_f(r, total, "bn dx"), *dg = out_f(r, c, "dgamma"), *dbt = out_f(r, c, "dbeta");
    r->ops->batchnorm_bwd(r->be, n, c, hw, x, gamma, mean, inv, NULL, dy, dx, true, dg, dbt);
    dx = out_f(r, total, "bn dx (alone)");
    r->ops->batchnorm_bwd(r->be, n, c, hw, x, gamma, mean, inv, NULL, dy, dx, false, NULL, NULL);
    /* fused with ReLU */
    float *yr = out_f(r, total, "bn-relu y");
    r->ops->batchnorm_fwd_train(r->be, n, c, hw, x, gamma, beta, 1e-5f, 0.1f, rm, rv_out, true,
                                yr, mean, inv);
    dx = out_f(r, total, "bn-relu dx");
    dg = out_f(r, c, "bn-relu dgamma");
    r->ops->batchnorm_bwd(r->be, n, c, hw, x, gamma, mean, inv, beta, dy, dx, true, dg, NULL);
    y = out_f(r, total, "bn eval y");
    r->ops->batchnorm_fwd_eval(r->be, n, c, hw, x, gamma, beta, 1e-5f, rm, rv, y);
    dx = out_f(r, total, "bn eval dx");
    dg = out_f(r, c, "eval dgamma");
    dbt = out_f(r, c, "eval dbeta");
    r->ops->batchnorm_bwd_eval(r->be, n, c, hw, x, gamma, 1e-5f, rm, rv, dy, dx, dg, dbt);
    dg = out_f(r, c, "eval dgamma (alone)");
    r->ops->batchnorm_bwd_eval(r->be, n, c, hw, x, gamma, 1e-5f, rm, rv, dy, NULL, dg, NULL);
}

static void c_layernorm(run *r)
{
    const int64_t rows = 9, cols = 300;
    float *x = in_f(r, rows * cols, -2, 3), *gamma = in_f(r, cols, 0.5f, 1.5f);
    float *beta = in_f(r, cols, -1, 1), *dy = in_f(r, rows * cols, -1, 1);
    float *y = out_f(r, rows * cols, "ln y"), *mean = out_f(r, rows, "ln mean");
    float *rstd = out_f(r, rows, "ln rstd");
    r->ops->layernorm_fwd(r->be, rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd);
    float *dx = out_f(r, rows * cols, "ln dx"), *dg = out_f(r, cols, "ln dgamma");
    float *dbt = out_f(r, cols, "ln dbeta");
    r->ops->layernorm_bwd(r->be, rows, cols, x, gamma, mean, rstd, dy, dx, true, dg, dbt);
    dg = out_f(r, cols, "ln dgamma (alone)");
    r->ops->layernorm_bwd(r->be, rows, cols, x, gamma, mean, rstd, dy, NULL, true, dg, NULL);
}

/* ---- embedding and attention ------------------------------------------------------------------ */

static void c_embedding(run *r)
{
    const int64_t vocab = 11, dim = 70, n = 40; /* indices repeat */
    float *table = in_f(r, vocab * dim, -1, 1), *dy = in_f(r, n * dim, -1, 1);
    int32_t *idx = in_i(r, n, (int32_t)vocab);
    float *y = out_f(r, n * dim, "embedding y");
    r->ops->embedding_fwd(r->be, n, dim, vocab, table, idx, y);
    float *dt = out_f(r, vocab * dim, "embedding dtable");
    r->ops->embedding_bwd(r->be, n, dim, vocab, idx, dy, dt);
}

static void c_attention(run *r)
{
    const int b = 2, t = 7, c = 12, heads = 3;
    float *qkv = in_f(r, (int64_t)b * t * 3 * c, -1, 1), *dy = in_f(r, (int64_t)b * t * c, -1, 1);
    void *work = scratch(r, r->ops->attention_workspace(r->be, b, t, c, heads));
    float *y = out_f(r, (int64_t)b * t * c, "attention y");
    float *att = out_f(r, (int64_t)b * heads * t * t, "attention probs");
    r->ops->attention_fwd(r->be, b, t, c, heads, qkv, y, att, work);
    float *dqkv = out_f(r, (int64_t)b * t * 3 * c, "attention dqkv");
    r->ops->attention_bwd(r->be, b, t, c, heads, qkv, att, dy, dqkv, false, work);
}

/* ---- optimizer kernels ------------------------------------------------------------------------ */

static void c_optim(run *r)
{
    const int64_t n = 1000;
    float *g = in_f(r, n, -1, 1);
    float *w = out_f(r, n, "sgd w (no momentum)");
    const float lr = 0.1f;
    for (int s = 0; s < 3; s++) r->ops->sgd_update(r->be, n, w, g, NULL, &lr, 0.0f, false, 0.01f);
    for (int nest = 0; nest < 2; nest++) {
        w = out_f(r, n, "sgd w");
        float *v = out_f(r, n, "sgd v");
        for (int s = 0; s < 3; s++)
            r->ops->sgd_update(r->be, n, w, g, v, &lr, 0.9f, nest, 0.01f);
    }
    w = out_f(r, n, "adam w");
    float *m = out_f(r, n, "adam m"), *v = in_f(r, n, 0, 1);
    float *v_out = out_f(r, n, "adam v");
    r->ops->copy(r->be, v_out, v, (size_t)n * sizeof(float)); /* v >= 0 */
    for (int s = 1; s <= 3; s++) {
        tb_adam_coefs c = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                           .one_minus_beta1 = 0.1f, .one_minus_beta2 = 0.001f, .l2 = 0.001f,
                           .decay = 1.0f - 1e-4f,
                           .c_m = 1e-2f / (1.0f - powf(0.9f, (float)s)),
                           .c_g = s == 2 ? 0.05f : 0.0f,
                           .inv_bc2 = 1.0f / (1.0f - powf(0.999f, (float)s))};
        r->ops->adam_update(r->be, n, w, g, m, v_out, &c, NULL);
    }
    float *dir = out_f(r, n, "adam direction");
    tb_adam_coefs cd = {.beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-6f, .one_minus_beta1 = 0.1f,
                        .one_minus_beta2 = 0.01f, .decay = 1.0f, .dir_decay = 0.01f, .c_m = 0.1f,
                        .inv_bc2 = 1.0f};
    r->ops->adam_update(r->be, n, w, g, m, v_out, &cd, dir);
    for (int mom = 0; mom < 2; mom++) {
        float *wr = out_f(r, n, "rms w"), *vr = in_f(r, n, 0, 1);
        float *vr_out = out_f(r, n, "rms v"), *mr = mom ? out_f(r, n, "rms m") : NULL;
        r->ops->copy(r->be, vr_out, vr, (size_t)n * sizeof(float));
        tb_rms_coefs rc = {0.9f, 0.1f, 1e-3f, mom == 1, 0.9f, 0.01f, 1.0f, 0.001f};
        for (int s = 0; s < 3; s++) r->ops->rms_update(r->be, n, wr, g, vr_out, mr, &rc);
    }
    float *wl = out_f(r, n, "lars w"), *vl = out_f(r, n, "lars v");
    for (int s = 0; s < 3; s++) r->ops->lars_update(r->be, n, wl, g, vl, 0.01f, 0.9f, 1e-4f);
}

/* Values returned to the host. */
static void test_host_reductions(void)
{
    run a = {.be = cpu, .ops = &cpu->ops, .rng = tb_rng_make(5, 5)};
    run b = {.be = gpu, .ops = &gpu->ops, .rng = tb_rng_make(5, 5)};
    const int64_t n = 100003;
    float *xa = in_f(&a, n, -1, 1), *xb = in_f(&b, n, -1, 1);
    double sa = cpu->ops.sum_squares(cpu, n, xa), sb = gpu->ops.sum_squares(gpu, n, xb);
    CHECK(close_enough(sa, sb, 1e-9, 0));
    CHECK(cpu->ops.read_scalar(cpu, xa + 17) == gpu->ops.read_scalar(gpu, xb + 17));
    for (int i = 0; i < a.n; i++) {
        tb_backend_free(cpu, a.b[i].dev);
        tb_backend_free(gpu, b.b[i].dev);
    }
}

/* ---- through the public ops, the tape and the optimizers --------------------------------------- */

typedef struct model {
    tb_backend *be;
    tb_params *params;
    tb_tape *tape;
    tb_var *w1, *b1, *g1, *be1, *w2, *b2, *conv, *bng, *bnb, *emb, *wqkv;
    tb_tensor rm, rv; /* batch norm running statistics */
} model;

static void upload_rand(tb_var *v, uint64_t seed, float lo, float hi)
{
    int64_t n = tb_tensor_numel(&v->value);
    float *h = malloc((size_t)n * sizeof(float));
    tb_rng rng = tb_rng_make(seed, 1);
    tb_rng_fill_uniform(&rng, h, n, lo, hi);
    tb_tensor_upload(&v->value, h, NULL);
    free(h);
}

static tb_var *param(model *m, const char *name, int ndim, const int64_t *shape)
{
    tb_error err = {0};
    tb_var *v = tb_params_add(m->params, name, TB_PARAM_WEIGHT, ndim, shape, &err);
    if (!v) fprintf(stderr, "%s\n", err.message);
    return v;
}

static void model_build(model *m, tb_backend *be)
{
    tb_error err = {0};
    m->be = be;
    CHECK_OK(tb_params_create(be, &m->params, &err), &err);
    const int64_t s_w1[2] = {16, 10}, s_16[1] = {16}, s_w2[2] = {5, 16}, s_5[1] = {5};
    const int64_t s_conv[4] = {4, 2, 3, 3}, s_4[1] = {4}, s_emb[2] = {9, 12}, s_qkv[2] = {36, 12};
    m->w1 = param(m, "w1", 2, s_w1);
    m->b1 = param(m, "b1", 1, s_16);
    m->g1 = param(m, "g1", 1, s_16);
    m->be1 = param(m, "be1", 1, s_16);
    m->w2 = param(m, "w2", 2, s_w2);
    m->b2 = param(m, "b2", 1, s_5);
    m->conv = param(m, "conv", 4, s_conv);
    m->bng = param(m, "bng", 1, s_4);
    m->bnb = param(m, "bnb", 1, s_4);
    m->emb = param(m, "emb", 2, s_emb);
    m->wqkv = param(m, "wqkv", 2, s_qkv);
    CHECK_OK(tb_params_finalize(m->params, &err), &err);
    tb_var *all[] = {m->w1, m->b1, m->g1, m->be1, m->w2, m->b2, m->conv, m->bng, m->bnb, m->emb,
                     m->wqkv};
    for (int i = 0; i < 11; i++) upload_rand(all[i], 100 + (uint64_t)i, -0.5f, 0.5f);
    const int64_t s_c[1] = {4};
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, s_c, &m->rm, &err), &err);
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, s_c, &m->rv, &err), &err);
    CHECK_OK(tb_tape_create(be, &m->tape, &err), &err);
}

/* Builds the inputs on the tape and returns the total loss of three small networks:
 * MLP (linear, layer norm, GELU, dropout, linear, softmax cross-entropy with smoothing),
 * CNN (conv, batch norm, ReLU, max pool, avg pool, global pool, concat, sigmoid BCE) and a
 * tiny transformer block (embedding, linear to qkv, causal attention, tanh, MSE). */
static tb_var *model_loss(model *m)
{
    tb_tape *t = m->tape;
    tb_tape_reset(t);
    const int64_t s_x[2] = {6, 10}, s_img[4] = {3, 2, 8, 8}, s_tok[1] = {10};
    tb_var *x = tb_tape_new_var(t, TB_F32, 2, s_x, false);
    upload_rand(x, 1, -1, 1);
    const int64_t s_lab[1] = {6};
    tb_var *labels = tb_tape_new_var(t, TB_I32, 1, s_lab, false);
    int32_t lab[6] = {0, 4, 2, 2, 1, 3};
    tb_tensor_upload(&labels->value, lab, NULL);
    tb_rng drop = tb_rng_make(77, TB_STREAM_DROPOUT);
    tb_var *h = tb_op_linear(t, x, m->w1, m->b1);
    h = tb_op_layernorm(t, h, m->g1, m->be1, 1e-5f);
    h = tb_op_gelu(t, h);
    h = tb_op_dropout(t, h, 0.25f, &drop);
    h = tb_op_linear(t, h, m->w2, m->b2);
    tb_var *l1 = tb_op_softmax_xent(t, h, labels, 0.1f);

    tb_var *img = tb_tape_new_var(t, TB_F32, 4, s_img, false);
    upload_rand(img, 2, -1, 1);
    tb_var *c = tb_op_conv2d(t, img, m->conv, NULL, 1, 1);
    c = tb_op_batchnorm(t, c, m->bng, m->bnb, &m->rm, &m->rv, 0.1f, 1e-5f);
    c = tb_op_relu(t, c);
    tb_var *p1 = tb_op_global_avgpool(t, tb_op_maxpool2d(t, c, 2, 2, 0));
    tb_var *p2 = tb_op_global_avgpool(t, tb_op_avgpool2d(t, c, 3, 2, 1));
    tb_var *cat[2] = {p1, p2};
    tb_var *feat = tb_op_concat(t, cat, 2, 1);
    const int64_t s_feat[2] = {3, 8};
    tb_var *tgt = tb_tape_new_var(t, TB_F32, 2, s_feat, false);
    upload_rand(tgt, 3, 0, 1);
    tb_var *l2 = tb_op_sigmoid_bce(t, feat, tgt);

    tb_var *tok = tb_tape_new_var(t, TB_I32, 1, s_tok, false);
    int32_t toks[10] = {1, 4, 4, 8, 0, 2, 7, 7, 3, 5};
    tb_tensor_upload(&tok->value, toks, NULL);
    tb_var *e = tb_op_embedding(t, m->emb, tok);
    const int64_t s_bt[3] = {2, 5, 12};
    e = tb_op_reshape(t, e, 3, s_bt);
    tb_var *qkv = tb_op_linear(t, e, m->wqkv, NULL);
    tb_var *a = tb_op_tanh(t, tb_op_causal_attention(t, qkv, 3));
    tb_var *at = tb_op_transpose(t, a, 1, 2);
    tb_var *tgt2 = tb_tape_new_var(t, TB_F32, 3, at->value.shape, false);
    upload_rand(tgt2, 4, -1, 1);
    tb_var *l3 = tb_op_mse(t, at, tgt2);
    return tb_op_add(t, tb_op_add(t, l1, l2), l3);
}

static void model_free(model *m)
{
    tb_tape_destroy(m->tape);
    tb_params_destroy(m->params);
    tb_tensor_free(&m->rm);
    tb_tensor_free(&m->rv);
}

static void compare_flat(const char *what, tb_backend *bea, const float *a, tb_backend *beb,
                         const float *b, int64_t n)
{
    float *ha = malloc((size_t)n * sizeof(float)), *hb = malloc((size_t)n * sizeof(float));
    tb_backend_download(bea, ha, a, (size_t)n * sizeof(float));
    tb_backend_download(beb, hb, b, (size_t)n * sizeof(float));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!close_enough(ha[i], hb[i], RTOL, ATOL)) {
            if (bad++ == 0)
                fprintf(stderr, "%s: [%lld] cpu %.9g cuda %.9g\n", what, (long long)i, ha[i],
                        hb[i]);
        }
    CHECK(bad == 0);
    free(ha);
    free(hb);
}

static void test_tape_and_optimizers(void)
{
    const char *opts[2] = {"sgd", "adamw"};
    for (int o = 0; o < 2; o++) {
        model mc = {0}, mg = {0};
        model_build(&mc, cpu);
        model_build(&mg, gpu);
        tb_hparams hp = {0};
        tb_error err = {0};
        tb_hparams_set(&hp, "learning_rate", o ? 1e-2 : 0.05, &err);
        tb_hparams_set(&hp, "weight_decay", 0.01, &err);
        /* a larger epsilon keeps AdamW from magnifying rounding in near-zero gradients */
        if (o) tb_hparams_set(&hp, "epsilon", 1e-3, &err);
        tb_optimizer *oc = NULL, *og = NULL;
        CHECK_OK(tb_optimizer_create(opts[o], mc.params, &hp, &oc, &err), &err);
        CHECK_OK(tb_optimizer_create(opts[o], mg.params, &hp, &og, &err), &err);
        for (int step = 0; step < 3; step++) {
            tb_params_zero_grad(mc.params);
            tb_params_zero_grad(mg.params);
            tb_var *lc = model_loss(&mc), *lg = model_loss(&mg);
            CHECK(lc && lg);
            if (!lc || !lg) {
                fprintf(stderr, "forward failed: %s / %s\n", tb_tape_error(mc.tape)->message,
                        tb_tape_error(mg.tape)->message);
                break;
            }
            float vc = cpu->ops.read_scalar(cpu, lc->value.data);
            float vg = gpu->ops.read_scalar(gpu, lg->value.data);
            CHECK(close_enough(vc, vg, RTOL, ATOL));
            CHECK_OK(tb_tape_backward(mc.tape, lc), tb_tape_error(mc.tape));
            CHECK_OK(tb_tape_backward(mg.tape, lg), tb_tape_error(mg.tape));
            int64_t n = tb_params_numel(mc.params);
            compare_flat("gradients", cpu, tb_params_grads(mc.params), gpu,
                         tb_params_grads(mg.params), n);
            CHECK_OK(tb_optimizer_step(oc, 1.0, &err), &err);
            CHECK_OK(tb_optimizer_step(og, 1.0, &err), &err);
            compare_flat(opts[o], cpu, tb_params_values(mc.params), gpu,
                         tb_params_values(mg.params), n);
            compare_flat("running mean", cpu, mc.rm.data, gpu, mg.rm.data, 4);
            compare_flat("running var", cpu, mc.rv.data, gpu, mg.rv.data, 4);
        }
        CHECK_OK(tb_backend_check(gpu, &err), &err);
        tb_optimizer_destroy(oc);
        tb_optimizer_destroy(og);
        model_free(&mc);
        model_free(&mg);
    }
}

/* ---- graphs and precision ---------------------------------------------------------------------- */

static void test_graph_replay(void)
{
    tb_error err = {0};
    CHECK_FAILS(tb_backend_capture_begin(cpu, &err), TB_ERR_UNSUPPORTED, &err, "cpu");
    CHECK_FAILS(tb_backend_replay(gpu, &err), TB_ERR_INVALID, &err, "no CUDA graph");
    const int64_t n = 4096;
    float *x = tb_backend_alloc(gpu, n * sizeof(float));
    gpu->ops.fill(gpu, x, n, 1.0f);
    CHECK_OK(tb_backend_capture_begin(gpu, &err), &err);
    gpu->ops.scale(gpu, x, n, 2.0f);
    gpu->ops.axpy(gpu, n, 1.0f, x, x); /* x = 4 x per replay */
    CHECK_OK(tb_backend_capture_end(gpu, &err), &err);
    /* capture records without running */
    CHECK(gpu->ops.read_scalar(gpu, x + 5) == 1.0f);
    CHECK_OK(tb_backend_replay(gpu, &err), &err);
    CHECK_OK(tb_backend_replay(gpu, &err), &err);
    tb_backend_sync(gpu);
    CHECK(gpu->ops.read_scalar(gpu, x + n - 1) == 16.0f);
    tb_backend_free(gpu, x);
}

static void test_bf16_gemm(void)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CUDA, .precision = TB_PRECISION_BF16};
    tb_backend *bf = NULL;
    tb_error err = {0};
    CHECK_OK(tb_backend_create(&cfg, &bf, &err), &err);
    if (!bf) return;
    CHECK(strstr(tb_backend_describe(bf), "bf16") != NULL);
    /* bf16 operands keep 8 bits of mantissa: products of 64 terms agree to about 1e-2 */
    const int m = 32, n = 24, k = 64;
    run a = {.be = cpu, .ops = &cpu->ops, .rng = tb_rng_make(9, 9)};
    run b = {.be = bf, .ops = &bf->ops, .rng = tb_rng_make(9, 9)};
    run *rs[2] = {&a, &b};
    float *c[2];
    for (int i = 0; i < 2; i++) {
        float *x = in_f(rs[i], (int64_t)m * k, -1, 1), *y = in_f(rs[i], (int64_t)k * n, -1, 1);
        c[i] = out_f(rs[i], (int64_t)m * n, "C");
        rs[i]->ops->gemm(rs[i]->be, false, false, m, n, k, 1.0f, x, k, y, n, 0.0f, c[i], n);
    }
    float *ha = malloc(m * n * sizeof(float)), *hb = malloc(m * n * sizeof(float));
    tb_backend_download(cpu, ha, c[0], m * n * sizeof(float));
    tb_backend_download(bf, hb, c[1], m * n * sizeof(float));
    int bad = 0;
    for (int i = 0; i < m * n; i++) bad += !close_enough(ha[i], hb[i], 2e-2, 5e-2);
    CHECK(bad == 0);
    free(ha);
    free(hb);
    for (int i = 0; i < a.n; i++) {
        tb_backend_free(cpu, a.b[i].dev);
        tb_backend_free(bf, b.b[i].dev);
    }
    tb_backend_destroy(bf);
}

int main(void)
{
    /* without a GPU the message must name the cause; then the test is skipped, not passed */
    int code = 0;
    if (!(gpu = tb_test_cuda_backend("test_cuda_backend", &code))) return code;
    tb_error err = {0};
    printf("cuda backend: %s\n", tb_backend_describe(gpu));
    cpu = tb_test_backend();
    /* a wrong index is a clear error */
    tb_backend *none = NULL;
    tb_backend_config bad = {.device = TB_DEVICE_CUDA, .device_index = 1000};
    CHECK_FAILS(tb_backend_create(&bad, &none, &err), TB_ERR_NO_DEVICE, &err, "index 1000");

    compare_case("gemm", c_gemm, RTOL, ATOL);
    compare_case("gemm_batched", c_gemm_batched, RTOL, ATOL);
    compare_case("element-wise", c_elementwise, RTOL, ATOL);
    compare_case("activations", c_activations, RTOL, ATOL);
    compare_case("strided_copy", c_strided_copy, 0, 0);
    compare_case("losses", c_losses, RTOL, ATOL);
    compare_case("dropout", c_dropout, 0, 0); /* masks and outputs bit-identical */
    compare_case("conv2d", c_conv, RTOL, ATOL);
    compare_case("pooling", c_pool, RTOL, ATOL);
    compare_case("batch norm", c_batchnorm, RTOL, ATOL);
    compare_case("layer norm", c_layernorm, RTOL, ATOL);
    compare_case("embedding", c_embedding, RTOL, ATOL);
    compare_case("attention", c_attention, RTOL, ATOL);
    compare_case("optimizer kernels", c_optim, RTOL, ATOL);
    test_host_reductions();
    test_tape_and_optimizers();
    test_graph_replay();
    test_bf16_gemm();

    tb_backend_destroy(gpu);
    tb_backend_destroy(cpu);
    return tb_test_finish("test_cuda_backend");
}

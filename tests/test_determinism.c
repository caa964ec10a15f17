/* test_determinism.c: results that must not depend on the CPU backend's thread count. */
#include "testutil.h"

#include "trainbench/curvature.h"
#include "trainbench/optim.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

/* OpenBLAS's process-wide thread count (declared in its cblas.h, repeated for other headers). */
extern void openblas_set_num_threads(int num_threads);
extern int openblas_get_num_threads(void);

static tb_backend *cpu_backend(int threads)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = threads};
    tb_backend *be = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_backend_create(&cfg, &be, &err), &err)) exit(1);
    return be;
}

/* ---- gradient norms ------------------------------------------------------------------------- */

/* The norm and the clipped gradients of a parameter set of n values on a backend of `threads`
 * threads; the clipped gradients are returned (malloc'd, *numel of them). */
static float *norms_at(int threads, int64_t n, double *norm, double *clip_norm, int64_t *numel)
{
    tb_backend *be = cpu_backend(threads);
    tb_error err = {0};
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, (int64_t[]){n}, &err);
    tb_params_add(p, "b", TB_PARAM_BIAS, 1, (int64_t[]){37}, &err);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    tb_rng rng = tb_rng_make(3, TB_STREAM_INIT);
    tb_rng_fill_uniform(&rng, tb_params_grads(p), tb_params_numel(p), -1.0f, 1.0f);
    *norm = tb_params_grad_norm(p);
    *clip_norm = tb_params_clip_grad_norm(p, 1.0);
    *numel = tb_params_numel(p);
    float *g = malloc((size_t)*numel * sizeof *g);
    memcpy(g, tb_params_grads(p), (size_t)*numel * sizeof *g);
    tb_params_destroy(p);
    tb_backend_destroy(be);
    return g;
}

/* tb_params_grad_norm and tb_params_clip_grad_norm give the same doubles (and the same
 * clipped gradients) at 1, 2 and 3 threads: below the parallel threshold, above it, and
 * above TB_CPU_PARTS parts of the minimum length (longer parts). */
static void test_grad_norm(void)
{
    static const int64_t sizes[] = {1000, 100003, 5000000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        double n1, c1;
        int64_t numel;
        float *g1 = norms_at(1, sizes[i], &n1, &c1, &numel);
        for (int threads = 2; threads <= 3; threads++) {
            double n, c;
            float *g = norms_at(threads, sizes[i], &n, &c, &numel);
            if (!CHECK(n == n1 && c == c1))
                printf("  %lld values: norm %.17g at 1 thread, %.17g at %d\n", (long long)sizes[i],
                       n1, n, threads);
            CHECK(memcmp(g, g1, (size_t)numel * sizeof *g) == 0);
            free(g);
        }
        CHECK(n1 > 0.0 && c1 == n1);
        free(g1);
    }
}

/* ---- a backend's thread count is its own ----------------------------------------------------- */

/* A convolution's weight gradient and the norm of 100003 gradient values on be (both above
 * their parallel thresholds), as bytes in out[0, 432 + 2). */
static void compute_on(tb_backend *be, float *out)
{
    tb_error err = {0};
    tb_rng rng = tb_rng_make(4, TB_STREAM_INIT);
    tb_var *x = tb_test_var(be, 4, (int64_t[]){8, 3, 16, 16}, &rng, -1, 1, false);
    tb_var *w = tb_test_var(be, 4, (int64_t[]){16, 3, 3, 3}, &rng, -1, 1, true);
    tb_tape *t = tb_test_tape(be);
    tb_var *loss = tb_test_reduce(t, tb_op_conv2d(t, x, w, NULL, 1, 1));
    CHECK(loss && tb_tape_backward(t, loss) == TB_OK);
    memcpy(out, w->grad.data, 432 * sizeof *out);
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_test_var_free(w);
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, (int64_t[]){100003}, &err);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    tb_rng_fill_uniform(&rng, tb_params_grads(p), tb_params_numel(p), -1.0f, 1.0f);
    double norm = tb_params_grad_norm(p);
    memcpy(out + 432, &norm, sizeof norm);
    tb_params_destroy(p);
}

/* Creating backends leaves the caller's OpenMP thread count alone (OpenBLAS's count, which its
 * OpenMP build sets together with the caller's, included), sets OpenBLAS's to 1, and does not
 * change how an existing backend computes. */
static void test_backends_own_their_threads(void)
{
    const int caller = omp_get_max_threads();
    /* a caller that set OpenBLAS's count (which OpenMP builds of OpenBLAS may pass on to the
     * caller's OpenMP count), then its own OpenMP count */
    openblas_set_num_threads(3);
    omp_set_num_threads(1);
    tb_backend *one = cpu_backend(1);
    CHECK(omp_get_max_threads() == 1);
    CHECK(openblas_get_num_threads() == 1);
    float before[434], other[434], after[434];
    compute_on(one, before);
    tb_backend *two = cpu_backend(2);
    CHECK(omp_get_max_threads() == 1);
    CHECK(tb_backend_threads(one) == 1 && tb_backend_threads(two) == 2);
    compute_on(two, other);
    compute_on(one, after);
    CHECK(memcmp(before, after, sizeof before) == 0);
    CHECK(memcmp(before, other, sizeof before) == 0);
    omp_set_num_threads(3);
    tb_backend *zero = cpu_backend(0); /* all cores */
    CHECK(omp_get_max_threads() == 3);
    compute_on(zero, other);
    CHECK(memcmp(before, other, sizeof before) == 0);
    tb_backend_destroy(zero);
    tb_backend_destroy(two);
    tb_backend_destroy(one);
    omp_set_num_threads(caller);
}

/* ---- training ------------------------------------------------------------------------------ */

/* A small model with every kind of layer whose kernels reduce: a dense block (linear, GELU,
 * layer norm, dropout, label-smoothed cross-entropy), a convolutional one (conv, batch norm
 * with ReLU, max pooling, global average pooling, linear, cross-entropy) and a transformer
 * one (embedding, layer norm, causal attention, a residual projection, a fused MLP, MSE),
 * plus a logistic loss. Sizes put most kernels above their parallel thresholds, the larger
 * products above the size split across threads, K-FAC's factors of l2 (257 and 100) above
 * the size at which OpenBLAS's dpotrf threads, and conv's 40 images in 20 chunks of 2. */
typedef struct det_model {
    tb_params *params;
    tb_linear_layer l1, l2, fc, qkv, proj, m1, m2, bce;
    tb_conv_layer conv;
    tb_var *ln_g, *ln_b, *bn_g, *bn_b, *emb, *ln2_g, *ln2_b;
    tb_tensor rm, rv; /* batch norm's running statistics */
} det_model;

static void model_init(tb_backend *be, det_model *m)
{
    tb_error err = {0};
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    m->params = p;
    tb_linear_layer_init(&m->l1, p, "l1", 384, 256, true, &err);
    tb_linear_layer_init(&m->l2, p, "l2", 256, 100, true, &err);
    m->ln_g = tb_params_add(p, "ln.g", TB_PARAM_NORM, 1, (int64_t[]){256}, &err);
    m->ln_b = tb_params_add(p, "ln.b", TB_PARAM_NORM, 1, (int64_t[]){256}, &err);
    tb_conv_layer_init(&m->conv, p, "conv", 3, 16, 3, 1, 1, true, &err);
    m->bn_g = tb_params_add(p, "bn.g", TB_PARAM_NORM, 1, (int64_t[]){16}, &err);
    m->bn_b = tb_params_add(p, "bn.b", TB_PARAM_NORM, 1, (int64_t[]){16}, &err);
    tb_linear_layer_init(&m->fc, p, "fc", 16, 10, true, &err);
    m->emb = tb_params_add(p, "emb", TB_PARAM_EMBEDDING, 2, (int64_t[]){100, 64}, &err);
    tb_linear_layer_init(&m->qkv, p, "qkv", 64, 192, true, &err);
    tb_linear_layer_init(&m->proj, p, "proj", 64, 64, true, &err);
    tb_linear_layer_init(&m->m1, p, "m1", 64, 256, true, &err);
    tb_linear_layer_init(&m->m2, p, "m2", 256, 64, true, &err);
    m->ln2_g = tb_params_add(p, "ln2.g", TB_PARAM_NORM, 1, (int64_t[]){64}, &err);
    m->ln2_b = tb_params_add(p, "ln2.b", TB_PARAM_NORM, 1, (int64_t[]){64}, &err);
    tb_linear_layer_init(&m->bce, p, "bce", 64, 1, true, &err);
    if (!CHECK_OK(tb_params_finalize(p, &err), &err)) exit(1);
    tb_rng init = tb_rng_make(1, TB_STREAM_INIT);
    for (int i = 0; i < tb_params_count(p); i++) {
        tb_param *q = tb_params_get(p, i);
        if (q->var.value.data == m->ln_g->value.data || q->var.value.data == m->bn_g->value.data ||
            q->var.value.data == m->ln2_g->value.data)
            tb_init_constant(&q->var, 1.0f, &err);
        else
            tb_init_uniform(&q->var, &init, -0.1f, 0.1f, &err);
    }
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, (int64_t[]){16}, &m->rm, &err), &err);
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, (int64_t[]){16}, &m->rv, &err), &err);
    for (int i = 0; i < 16; i++) { /* host memory on the CPU backend */
        ((float *)m->rm.data)[i] = 0.0f;
        ((float *)m->rv.data)[i] = 1.0f;
    }
}

/* Step memory constants: uniform floats, or integers below mod. */
static tb_var *const_f(tb_tape *t, int ndim, const int64_t *shape, tb_rng *rng)
{
    tb_var *v = tb_tape_new_var(t, TB_F32, ndim, shape, false);
    if (v) tb_rng_fill_uniform(rng, v->value.data, tb_tensor_numel(&v->value), -1.0f, 1.0f);
    return v;
}

static tb_var *const_u(tb_tape *t, int ndim, const int64_t *shape, tb_rng *rng)
{
    tb_var *v = tb_tape_new_var(t, TB_F32, ndim, shape, false);
    if (v) tb_rng_fill_uniform(rng, v->value.data, tb_tensor_numel(&v->value), 0.0f, 1.0f);
    return v;
}

static tb_var *const_i(tb_tape *t, int ndim, const int64_t *shape, tb_rng *rng, int mod)
{
    tb_var *v = tb_tape_new_var(t, TB_I32, ndim, shape, false);
    if (!v) return NULL;
    int32_t *x = v->value.data;
    for (int64_t i = 0; i < tb_tensor_numel(&v->value); i++)
        x[i] = (int32_t)tb_rng_below(rng, (uint64_t)mod);
    return v;
}

/* One training step's loss (the sum of five), its parts in parts[0..5). */
static tb_var *model_loss(tb_tape *t, det_model *m, int step, tb_rng *drop, tb_var **parts)
{
    tb_rng data = tb_rng_make(100 + (uint64_t)step, TB_STREAM_DATA_ORDER);
    tb_var *x = const_f(t, 2, (int64_t[]){256, 384}, &data);
    tb_var *h = tb_op_gelu(t, tb_linear_layer_forward(t, &m->l1, x));
    h = tb_op_dropout(t, tb_op_layernorm(t, h, m->ln_g, m->ln_b, 1e-5f), 0.1f, drop);
    parts[0] = tb_op_softmax_xent(t, tb_linear_layer_forward(t, &m->l2, h),
                                  const_i(t, 1, (int64_t[]){256}, &data, 100), 0.1f);
    tb_var *img = const_f(t, 4, (int64_t[]){40, 3, 16, 16}, &data);
    tb_var *c = tb_op_batchnorm_act(t, TB_RELU, tb_conv_layer_forward(t, &m->conv, img), m->bn_g,
                                    m->bn_b, &m->rm, &m->rv, 0.1f, 1e-5f);
    c = tb_op_global_avgpool(t, tb_op_maxpool2d(t, c, 2, 2, 0));
    parts[1] = tb_op_softmax_xent(t, tb_linear_layer_forward(t, &m->fc, c),
                                  const_i(t, 1, (int64_t[]){40}, &data, 10), 0.0f);
    tb_var *z = tb_op_embedding(t, m->emb, const_i(t, 2, (int64_t[]){16, 64}, &data, 100));
    tb_var *a = tb_op_causal_attention(
        t, tb_linear_layer_forward(t, &m->qkv, tb_op_layernorm(t, z, m->ln2_g, m->ln2_b, 1e-5f)),
        4);
    z = tb_linear_layer_forward_add(t, &m->proj, a, z);
    z = tb_mlp_forward(t, &m->m1, TB_GELU, &m->m2, z, z);
    parts[2] = tb_op_mse(t, z, const_f(t, 3, (int64_t[]){16, 64, 64}, &data));
    tb_var *flat = tb_op_reshape(t, z, 2, (int64_t[]){16 * 64, 64});
    parts[3] = tb_op_sigmoid_bce(t, tb_linear_layer_forward(t, &m->bce, flat),
                                 const_u(t, 2, (int64_t[]){16 * 64, 1}, &data));
    parts[4] = tb_op_add(t, tb_op_add(t, parts[0], parts[1]), tb_op_add(t, parts[2], parts[3]));
    return parts[4];
}

/* A growing byte record of everything a run computes. */
typedef struct record {
    unsigned char *data;
    size_t n, cap;
} record;

static void put(record *r, const void *p, size_t bytes)
{
    if (r->n + bytes > r->cap) {
        r->cap = 2 * (r->n + bytes);
        r->data = realloc(r->data, r->cap);
        if (!r->data) exit(1);
    }
    memcpy(r->data + r->n, p, bytes);
    r->n += bytes;
}

/* Three steps of algo on a backend of `threads` threads, with gradient clipping: the losses,
 * the gradient norm, the gradients, the parameters after each step and the running
 * statistics, in one record. */
static record train(const char *algo, int threads)
{
    record r = {0};
    tb_backend *be = cpu_backend(threads);
    tb_error err = {0};
    det_model m;
    model_init(be, &m);
    tb_hparams hp = {0};
    const bool kfac = strcmp(algo, "kfac") == 0 || strcmp(algo, "ekfac") == 0;
    if (kfac) { /* statistics and inverses every step, from the training backward */
        tb_hparams_set(&hp, "empirical_fisher", 1, NULL);
        tb_hparams_set(&hp, "cov_interval", 1, NULL);
        tb_hparams_set(&hp, "inv_interval", 1, NULL);
        tb_hparams_set(&hp, "damping", 0.03, NULL);
        if (algo[0] == 'e') tb_hparams_set(&hp, "scale_interval", 1, NULL);
    }
    if (strcmp(algo, "shampoo") == 0) { /* preconditioned from the first step */
        tb_hparams_set(&hp, "start_preconditioning_step", 1, NULL);
        tb_hparams_set(&hp, "precondition_interval", 1, NULL);
    }
    tb_optimizer *opt = NULL;
    if (!CHECK_OK(tb_optimizer_create(algo, m.params, &hp, &opt, &err), &err)) exit(1);
    if (kfac) {
        tb_layer_ref layers[3] = {tb_layer_linear(&m.l2), tb_layer_conv(&m.conv),
                                  tb_layer_linear(&m.fc)};
        CHECK_OK(tb_optimizer_set_layers(opt, layers, 3, &err), &err);
    }
    tb_tape *t = tb_test_tape(be);
    tb_tape_set_keep_grads(t, kfac); /* K-FAC reads the layers' output gradients */
    tb_rng drop = tb_rng_make(1, TB_STREAM_DROPOUT);
    for (int step = 0; step < 3; step++) {
        tb_tape_reset(t);
        tb_params_begin_grads(m.params);
        tb_var *parts[5] = {0};
        tb_var *loss = model_loss(t, &m, step, &drop, parts);
        if (!CHECK(loss && tb_tape_backward(t, loss) == TB_OK)) {
            printf("  %s: %s\n", algo, tb_tape_error(t)->message);
            break;
        }
        tb_params_end_grads(m.params);
        for (int i = 0; i < 5; i++)
            put(&r, parts[i]->value.data, sizeof(float));
        const double norm = tb_params_clip_grad_norm(m.params, 0.5);
        put(&r, &norm, sizeof norm);
        const size_t bytes = (size_t)tb_params_numel(m.params) * sizeof(float);
        put(&r, tb_params_grads(m.params), bytes);
        if (!CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err)) break;
        put(&r, tb_params_values(m.params), bytes);
        put(&r, m.rm.data, 16 * sizeof(float));
        put(&r, m.rv.data, 16 * sizeof(float));
    }
    tb_tape_destroy(t);
    tb_optimizer_destroy(opt);
    tb_tensor_free(&m.rm);
    tb_tensor_free(&m.rv);
    tb_params_destroy(m.params);
    tb_backend_destroy(be);
    return r;
}

/* The same model trained for three steps at 1 and at 2 threads: every loss, gradient norm,
 * gradient, parameter and running statistic bit for bit, for several optimizers (LARS and
 * LAMB trust ratios, Shampoo's and K-FAC's statistics and host decompositions included). */
static void test_training(void)
{
    static const char *const algos[] = {"sgd", "adamw", "lars", "lamb", "shampoo", "kfac", "ekfac"};
    for (size_t i = 0; i < sizeof algos / sizeof *algos; i++) {
        record one = train(algos[i], 1), two = train(algos[i], 2);
        size_t first = 0;
        while (first < one.n && first < two.n && one.data[first] == two.data[first])
            first++;
        const bool same = one.n > 0 && one.n == two.n && first == one.n;
        if (!CHECK(same))
            printf("  %s: 1 and 2 threads differ from byte %zu of %zu\n", algos[i], first, one.n);
        free(one.data);
        free(two.data);
    }
}

int main(void)
{
    test_grad_norm();
    test_backends_own_their_threads();
    test_training();
    return tb_test_finish("test_determinism");
}

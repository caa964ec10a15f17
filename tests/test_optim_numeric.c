/* test_optim_numeric.c: what every optimizer refuses or reports rather than writing NaN or
 * infinite weights: hyperparameters in range that break in float32 (a beta or a momentum that
 * rounds to 1, an epsilon or a damping below float32's smallest normal number), refused when
 * the optimizer is created and when a study is planned, naming the value and why; a step with a
 * NaN or infinite gradient, which fails with TB_ERR_NUMERIC naming the parameter and leaves
 * the weights and the step count as they were, for every registered algorithm; LARS and LAMB
 * trust ratios that overflow float32, refused the same way. */
#include "testutil.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

static tb_backend *be;

/* A weight w [2, 3], a bias b [3] and a norm scale n [3], with values 0.1 (i + 1) and
 * gradients 0.01 (i - 4) (i counting every value in that order). */
static tb_params *make_params(void)
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    const int64_t sw[2] = {2, 3}, s3 = 3;
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, sw, NULL);
    tb_params_add(p, "b", TB_PARAM_BIAS, 1, &s3, NULL);
    tb_params_add(p, "n", TB_PARAM_NORM, 1, &s3, NULL);
    tb_params_finalize(p, NULL);
    int i = 0;
    for (int k = 0; k < tb_params_count(p); k++) {
        tb_param *q = tb_params_get(p, k);
        float *v = q->var.value.data, *g = q->var.grad.data;
        for (int64_t j = 0; j < tb_tensor_numel(&q->var.value); j++, i++) {
            v[j] = 0.1f * (float)(i + 1);
            g[j] = 0.01f * (float)(i - 4);
        }
    }
    return p;
}

/* ---- hyperparameters in range that break in float32 ----------------------------------------- */

typedef struct bad_hp {
    const char *algorithm, *name;
    double value;
    const char *message; /* what the error must say */
} bad_hp;

static void test_float_refusals(void)
{
    const bad_hp cases[] = {
        /* 1 - beta is 0 in float32: the moment would never move */
        {"adam", "beta2", 0.99999999, "beta2 = 0.99999999 is 1 in float32"},
        {"adamw", "beta1", 0.999999999, "beta1 = 0.999999999 is 1 in float32"},
        {"nadam", "beta2", 1 - 1e-9, "beta2 = 0.999999999 is 1 in float32"},
        {"nadamw", "one_minus_beta1", 1e-9, "one_minus_beta1 = 1e-09 makes beta1 = 0.999999999"},
        {"lamb", "beta2", 0.99999999, "is 1 in float32"},
        {"rmsprop", "rho", 0.99999999, "rho = 0.99999999 is 1 in float32"},
        {"sgd", "momentum", 0.99999999, "momentum = 0.99999999 is 1 in float32"},
        {"lars", "momentum", 0.99999999, "is 1 in float32"},
        {"kfac", "stat_decay", 0.99999999, "stat_decay = 0.99999999 is 1 in float32"},
        /* a denominator's guard that float32 makes 0 or subnormal: 0/0 */
        {"adam", "epsilon", 1e-40, "epsilon = 1e-40 is below float32's smallest normal"},
        {"adamw", "epsilon", 1e-300, "epsilon = 1e-300 is below float32's smallest normal"},
        {"nadam", "epsilon", 1e-39, "sqrt(v_hat) + epsilon would be 0"},
        {"nadamw", "epsilon", 1e-45, "0/0 = NaN"},
        {"lamb", "epsilon", 1e-40, "sqrt(v_hat) + epsilon would be 0"},
        {"rmsprop", "epsilon", 1e-40, "sqrt(v + epsilon) would be 0"},
        {"adagrad", "epsilon", 1e-40, "sqrt(G) + epsilon would be 0"},
        {"shampoo", "epsilon", 1e-150, "epsilon = 1e-150 is below float32's smallest normal"},
        {"schedule_free_adamw", "epsilon", 1e-40, "sqrt(v_hat) + epsilon would be 0"},
        {"adopt", "epsilon", 1e-40, "max(sqrt(v), epsilon) would be 0"},
        {"ademamix", "epsilon", 1e-40, "sqrt(v_hat) + epsilon would be 0"},
        {"prodigy", "epsilon", 1e-40, "sqrt(v) + d epsilon would be 0"},
        {"mars", "epsilon", 1e-40, "sqrt(v_hat) + epsilon would be 0"},
        {"schedule_free_sgd", "momentum", 0.99999999, "momentum = 0.99999999 is 1 in float32"},
        {"ademamix", "beta3", 0.99999999, "beta3 = 0.99999999 is 1 in float32"},
        {"ekfac", "damping", 1e-300, "S + damping would be 0"},
        /* a learning rate that is 0 in float32: the run would train nothing */
        {"adam", "learning_rate", 1e-300, "learning_rate = 1e-300 is 0 in float32"},
        {"sgd", "learning_rate", 1e-50, "learning_rate = 1e-50 is 0 in float32"},
        {"lamb", "learning_rate", 1e-46, "is 0 in float32"},
    };
    tb_params *p = make_params();
    tb_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bad_hp *c = &cases[i];
        tb_hparams hp = {0};
        tb_hparams_set(&hp, c->name, c->value, NULL);
        tb_optimizer *opt = NULL;
        if (!CHECK_FAILS(tb_optimizer_create(c->algorithm, p, &hp, &opt, &err), TB_ERR_INVALID,
                         &err, c->message))
            printf("  %s %s = %g\n", c->algorithm, c->name, c->value);
        CHECK(opt == NULL && strncmp(err.message, c->algorithm, strlen(c->algorithm)) == 0);
        /* the same refusal when a study or a benchmark is planned */
        CHECK_FAILS(tb_optimizer_check_hparams(c->algorithm, &hp, &err), TB_ERR_INVALID, &err,
                    c->message);
        tb_optimizer_destroy(opt);
    }
    /* torch-style RMSProp names its own denominator */
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "torch_style", 1, NULL);
    tb_hparams_set(&hp, "epsilon", 1e-40, NULL);
    CHECK_FAILS(tb_optimizer_check_hparams("rmsprop", &hp, &err), TB_ERR_INVALID, &err,
                "sqrt(v) + epsilon would be 0");
    /* the largest float below 1 and the smallest normal float are still accepted */
    const bad_hp edges[] = {
        {"adam", "beta2", 1.0 - 0x1p-24, NULL},  {"adam", "epsilon", FLT_MIN, NULL},
        {"nadamw", "one_minus_beta1", 0x1p-24, NULL}, {"shampoo", "epsilon", FLT_MIN, NULL},
        {"kfac", "damping", FLT_MIN, NULL},      {"sgd", "momentum", 1.0 - 0x1p-24, NULL},
    };
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        tb_hparams one = {0};
        tb_hparams_set(&one, edges[i].name, edges[i].value, NULL);
        tb_optimizer *opt = NULL;
        CHECK_OK(tb_optimizer_create(edges[i].algorithm, p, &one, &opt, &err), &err);
        tb_optimizer_destroy(opt);
    }
    CHECK_FAILS(tb_optimizer_check_hparams("adamax", NULL, &err), TB_ERR_INVALID, &err,
                "unknown algorithm 'adamax'");
    CHECK_OK(tb_optimizer_check_hparams("adam", NULL, &err), &err);
    tb_params_destroy(p);
}

/* ---- non-finite gradients ------------------------------------------------------------------- */

static bool same_values(tb_params *p, const float *before)
{
    return memcmp(tb_params_values(p), before, (size_t)tb_params_numel(p) * sizeof(float)) == 0;
}

/* Every registered algorithm, a NaN in the bias's gradient and then an infinity in the
 * weight's: TB_ERR_NUMERIC naming the parameter and the step, the weights bit for bit as they
 * were, the step not counted. */
static void test_nonfinite_gradients(void)
{
    tb_error err = {0};
    for (int a = 0; a < tb_optimizer_count(); a++) {
        const char *name = tb_optimizer_info_at(a)->name;
        tb_params *p = make_params();
        tb_optimizer *opt = NULL;
        if (!CHECK_OK(tb_optimizer_create(name, p, NULL, &opt, &err), &err)) continue;
        int64_t n = tb_params_numel(p);
        float *before = malloc((size_t)n * sizeof *before);
        memcpy(before, tb_params_values(p), (size_t)n * sizeof *before);
        float *gb = tb_params_get(p, 1)->var.grad.data, *gw = tb_params_get(p, 0)->var.grad.data;
        gb[2] = NAN;
        if (!CHECK_FAILS(tb_optimizer_step(opt, 1.0, &err), TB_ERR_NUMERIC, &err,
                         "step 1: the gradient of 'b' is not finite"))
            printf("  %s\n", name);
        CHECK(strstr(err.message, "not applied") && strncmp(err.message, name, strlen(name)) == 0);
        CHECK(same_values(p, before) && tb_optimizer_steps(opt) == 0);
        gb[2] = 0.0f;
        gw[4] = -INFINITY;
        CHECK_FAILS(tb_optimizer_step(opt, 0.5, &err), TB_ERR_NUMERIC, &err,
                    "the gradient of 'w' is not finite");
        CHECK(same_values(p, before) && tb_optimizer_steps(opt) == 0);
        free(before);
        tb_optimizer_destroy(opt);
        tb_params_destroy(p);
    }
}

/* tb_params_grads_finite over 300001 gradients (many parts, on the backend's threads when it
 * has several): finite values of every kind pass (the largest floats, subnormals, -0); a NaN,
 * +inf or -inf fails wherever it is: the first, a part's edge, the last element. */
static void test_grads_finite(void)
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    const int64_t n = 300001;
    tb_params_add(p, "big", TB_PARAM_WEIGHT, 1, &n, NULL);
    if (!CHECK(tb_params_finalize(p, NULL) == TB_OK)) return;
    float *g = tb_params_grads(p);
    for (int64_t i = 0; i < n; i++) g[i] = (float)(i % 7) - 3.0f;
    g[10] = FLT_MAX;
    g[11] = -FLT_MAX;
    g[12] = FLT_TRUE_MIN;
    g[13] = -0.0f;
    CHECK(tb_params_grads_finite(p));
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    const int64_t at[5] = {0, 4095, 4096, 150000, n - 1};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 5; k++) {
            const float keep = g[at[k]];
            g[at[k]] = bad[b];
            if (!CHECK(!tb_params_grads_finite(p)))
                printf("  %g at %lld passed\n", (double)bad[b], (long long)at[k]);
            g[at[k]] = keep;
        }
    CHECK(tb_params_grads_finite(p) && tb_params_grads_finite(NULL));
    tb_params_destroy(p);
}

/* ---- trust ratios that overflow float32 ------------------------------------------------------ */

/* LARS: eeta ||w|| / ||g|| with ||w|| ~ 1e10 and ||g|| ~ 1e-30 times lr 1e6 is ~1e52, infinite in
 * float32; LAMB: epsilon 1e12 next to gradients of 1e-30 makes ||u|| ~ 1e-42, and lr ||w|| /
 * ||u|| overflows. Both refuse the step before any weight moves. */
static void test_trust_overflow(void)
{
    tb_error err = {0};
    const char *algs[2] = {"lars", "lamb"};
    for (int k = 0; k < 2; k++) {
        tb_params *p = make_params();
        tb_param *w = tb_params_get(p, 0);
        float *v = w->var.value.data, *g = w->var.grad.data;
        for (int j = 0; j < 6; j++) {
            v[j] = 1e10f;
            g[j] = 1e-30f;
        }
        tb_hparams hp = {0};
        tb_hparams_set(&hp, "learning_rate", k ? 1.0 : 1e6, NULL);
        tb_hparams_set(&hp, "weight_decay", 0.0, NULL);
        tb_hparams_set(&hp, k ? "epsilon" : "eeta", k ? 1e12 : 1e6, NULL);
        tb_optimizer *opt = NULL;
        if (!CHECK_OK(tb_optimizer_create(algs[k], p, &hp, &opt, &err), &err)) continue;
        int64_t n = tb_params_numel(p);
        float *before = malloc((size_t)n * sizeof *before);
        memcpy(before, tb_params_values(p), (size_t)n * sizeof *before);
        CHECK_FAILS(tb_optimizer_step(opt, 1.0, &err), TB_ERR_NUMERIC, &err,
                    "'w': the trust ratio");
        CHECK(strstr(err.message, "not finite in float32") && strstr(err.message, "not updated"));
        CHECK(same_values(p, before) && tb_optimizer_steps(opt) == 0);
        free(before);
        tb_optimizer_destroy(opt);
        tb_params_destroy(p);
    }
}

/* MARS: a finite gradient of 3e38 whose correction c = k (g - g_prev) + g overflows float32;
 * the step is refused, naming the parameter, before any weight moves. */
static void test_mars_overflow(void)
{
    tb_error err = {0};
    tb_params *p = make_params();
    float *g = tb_params_get(p, 0)->var.grad.data;
    for (int j = 0; j < 6; j++) g[j] = 3e38f;
    tb_optimizer *opt = NULL;
    if (!CHECK_OK(tb_optimizer_create("mars", p, NULL, &opt, &err), &err)) return;
    int64_t n = tb_params_numel(p);
    float *before = malloc((size_t)n * sizeof *before);
    memcpy(before, tb_params_values(p), (size_t)n * sizeof *before);
    CHECK_FAILS(tb_optimizer_step(opt, 1.0, &err), TB_ERR_NUMERIC, &err,
                "mars: step 1: the corrected gradient of 'w' is not finite");
    CHECK(same_values(p, before) && tb_optimizer_steps(opt) == 0);
    free(before);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

int main(void)
{
    be = tb_test_backend();
    test_float_refusals();
    test_nonfinite_gradients();
    test_grads_finite();
    test_trust_overflow();
    test_mars_overflow();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_numeric");
}

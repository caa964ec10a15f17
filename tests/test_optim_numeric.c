/* test_optim_numeric.c: what every optimizer refuses rather than writing NaN or infinite
 * weights: hyperparameters in range that break in float32 (a beta or a momentum that rounds
 * to 1, an epsilon or a damping below float32's smallest normal number), refused when the
 * optimizer is created and when a study is planned, naming the value and why. */
#include "testutil.h"

#include <float.h>
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
        {"ekfac", "damping", 1e-300, "S + damping would be 0"},
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

int main(void)
{
    be = tb_test_backend();
    test_float_refusals();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_numeric");
}

/* test_optim_torch.c: trainbench's optimizers against torch.optim trajectories (5 steps of
 * SGD, momentum, Nesterov, Adam, AdamW, NAdam, RMSprop and Adagrad on a weight and a bias with
 * fixed gradients; weight decay on the weight only), from tests/golden/make_optim_golden.py. */
#include "golden.h"

#include <stdlib.h>
#include <string.h>

/* Observed differences are at most 1.2e-7 (float32 rounding over 5 steps); this tolerance is
 * tighter than TB_GOLDEN_* so that, for example, torch 1.13's single-tensor NAdam (2e-4 away
 * from the foreach path over these 5 steps) would fail. */
#define OPT_ATOL 1e-6
#define OPT_RTOL 1e-6

static tb_backend *be;

static const struct {
    const char *fixture, *algorithm;
} cases[] = {
    {"optim_sgd", "sgd"},         {"optim_momentum", "momentum"}, {"optim_nesterov", "nesterov"},
    {"optim_adam", "adam"},       {"optim_adamw", "adamw"},       {"optim_nadam", "nadam"},
    {"optim_rmsprop", "rmsprop"}, {"optim_adagrad", "adagrad"},
};

/* Compares a parameter with the named reference; prints the worst element on failure. */
static bool compare(const tb_golden *g, const char *name, const tb_tensor *got, double *max_diff)
{
    const tb_golden_tensor *ref = tb_golden_get(g, name);
    int64_t n = tb_tensor_numel(got);
    if (!ref || ref->numel != n) return tb_test_check(false, name, __FILE__, __LINE__);
    float *host = malloc((size_t)n * sizeof(float));
    tb_tensor_download(got, host, NULL);
    const float *r = ref->data;
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)host[i] - (double)r[i]);
        if (!(diff == diff)) diff = INFINITY;
        if (diff > *max_diff) *max_diff = diff;
        if (ok && diff > OPT_ATOL + OPT_RTOL * fabs((double)r[i])) {
            fprintf(stderr, "%s: %s[%lld] is %.8g, torch %.8g\n", g->name, name, (long long)i,
                    host[i], r[i]);
            ok = false;
        }
    }
    free(host);
    return tb_test_check(ok, name, __FILE__, __LINE__);
}

static void run_case(const char *fixture, const char *algorithm)
{
    tb_golden g;
    if (!tb_golden_load(fixture, &g)) {
        tb_test_check(false, fixture, __FILE__, __LINE__);
        return;
    }
    tb_hparams hp = {0};
    for (int i = 0; i < g.count; i++)
        if (strncmp(g.tensors[i].name, "hp.", 3) == 0)
            tb_hparams_set(&hp, g.tensors[i].name + 3, tb_golden_scalar(&g, g.tensors[i].name),
                           NULL);
    tb_params *p = NULL;
    tb_error err = {0};
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    int64_t ws[2] = {3, 4}, bs[1] = {4};
    tb_var *w = tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, ws, NULL);
    tb_var *b = tb_params_add(p, "b", TB_PARAM_BIAS, 1, bs, NULL);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    tb_golden_upload(&g, "w0", &w->value);
    tb_golden_upload(&g, "b0", &b->value);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create(algorithm, p, &hp, &opt, &err), &err);
    double max_diff = 0;
    for (int t = 1; opt && t <= 5; t++) {
        char name[32];
        snprintf(name, sizeof name, "gw.%d", t);
        tb_golden_upload(&g, name, &w->grad);
        snprintf(name, sizeof name, "gb.%d", t);
        tb_golden_upload(&g, name, &b->grad);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        snprintf(name, sizeof name, "w.%d", t);
        compare(&g, name, &w->value, &max_diff);
        snprintf(name, sizeof name, "b.%d", t);
        compare(&g, name, &b->value, &max_diff);
    }
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-8s vs torch.optim: max abs diff over 5 steps %.3g\n", algorithm, max_diff);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_golden_free(&g);
}

int main(void)
{
    be = tb_test_backend();
    if (tb_golden_available())
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(cases[i].fixture, cases[i].algorithm);
    else
        tb_test_check(false, "golden fixtures present", __FILE__, __LINE__);
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_torch");
}

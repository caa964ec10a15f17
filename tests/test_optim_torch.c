/* test_optim_torch.c: trainbench's optimizers against torch.optim trajectories (5 steps of
 * SGD, momentum, Nesterov, Adam, AdamW, NAdam, RMSprop and Adagrad on a weight and a bias with
 * fixed gradients; weight decay on the weight only), from tests/golden/make_optim_golden.py. */
#include "optim_traj.h"

#include <stdlib.h>

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

static void run_case(const char *fixture, const char *algorithm)
{
    traj_wb t;
    tb_error err = {0};
    tb_optimizer *opt = NULL;
    if (traj_wb_open(fixture, be, 4, &t))
        CHECK_OK(tb_optimizer_create(algorithm, t.params, &t.hp, &opt, &err), &err);
    double max_diff = 0;
    for (int step = 1; opt && step <= 5; step++) {
        traj_wb_grads(&t, step);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        traj_wb_compare(&t, step, OPT_ATOL, OPT_RTOL, &max_diff);
    }
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-8s vs torch.optim: max abs diff over 5 steps %.3g\n", algorithm, max_diff);
    tb_optimizer_destroy(opt);
    traj_wb_close(&t);
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

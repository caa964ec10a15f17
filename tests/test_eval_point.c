/* test_eval_point.c: the run's evaluations are made at the optimizer's evaluation point
 * (tb_run_evaluate brackets them with tb_optimizer_prepare_for_eval/_train): Schedule-Free's
 * x, not the y it trains at, and y again, bit for bit, after; other algorithms at their
 * weights. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define STEPS 12
#define EXAMPLES 512

static tb_run_config small(const char *algorithm)
{
    tb_run_config c = tb_run_config_default();
    c.model.algorithm = algorithm;
    tb_hparams_set(&c.model.hparams, "learning_rate", 0.01, NULL);
    c.model.backend.threads = 1;
    c.data.source.train_limit = 2048;
    c.data.batch_size = 64;
    c.length.max_steps = STEPS;
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    tb_run_config_seed_all(&c, 5);
    return c;
}

static float *weights(tb_run *r)
{
    tb_params *p = tb_workload_params(tb_run_workload(r));
    size_t bytes = (size_t)tb_params_numel(p) * sizeof(float);
    float *host = malloc(bytes);
    tb_backend_download(tb_params_backend(p), host, tb_params_values(p), bytes);
    return host;
}

/* The validation loss of the weights as they are now, without the run's bracket. */
static double loss_here(tb_run *r, tb_error *err)
{
    tb_eval_metrics m = {0};
    CHECK_OK(tb_workload_evaluate(tb_run_workload(r), tb_run_tape(r), TB_SPLIT_VALIDATION, EXAMPLES,
                                  &m, err),
             err);
    return m.loss;
}

static void check(const char *algorithm, bool elsewhere)
{
    tb_error err = {0};
    tb_run_config c = small(algorithm);
    tb_run *r;
    if (!CHECK_OK(tb_run_create(&c, &r, &err), &err)) return;
    for (int i = 0; i < STEPS; i++) {
        tb_run_step_info s;
        if (!CHECK_OK(tb_run_step(r, false, &s, &err), &err)) break;
    }
    tb_optimizer *opt = tb_run_optimizer(r);
    CHECK(tb_optimizer_evaluates_elsewhere(opt) == elsewhere);
    int64_t n = tb_params_numel(tb_workload_params(tb_run_workload(r)));
    float *before = weights(r);
    tb_eval_metrics m = {0};
    CHECK_OK(tb_run_evaluate(r, TB_SPLIT_VALIDATION, EXAMPLES, &m, &err), &err);
    float *after = weights(r);
    CHECK(memcmp(before, after, (size_t)n * sizeof(float)) == 0); /* back at y */
    double at_y = loss_here(r, &err);
    CHECK_OK(tb_optimizer_prepare_for_eval(opt, &err), &err);
    float *x = weights(r);
    double at_x = loss_here(r, &err);
    CHECK_OK(tb_optimizer_prepare_for_train(opt, &err), &err);
    CHECK(m.loss == at_x);
    if (elsewhere) { /* x is not y, and the evaluation saw x */
        CHECK(memcmp(x, before, (size_t)n * sizeof(float)) != 0);
        CHECK(at_x != at_y);
    } else {
        CHECK(memcmp(x, before, (size_t)n * sizeof(float)) == 0 && at_x == at_y);
    }
    free(before), free(after), free(x);
    tb_run_destroy(r);
}

int main(void)
{
    check("schedule_free_adamw", true);
    check("schedule_free_sgd", true);
    check("adamw", false);
    return tb_test_finish("test_eval_point");
}

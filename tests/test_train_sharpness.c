/* test_train_sharpness.c: sharpness measurements during real training runs (tb_train's
 * sharpness_every): when they happen, what they report, that a measured run is bit for bit
 * the unmeasured one (parameters, gradients and batch norm's running averages untouched),
 * a full-batch run measured on its own subset, and the errors for optimizers without a diagonal preconditioner and bad settings. */
#include "testutil.h"

#include <math.h>
#include <string.h>

typedef struct seen {
    int n;
    tb_sharpness s[8];
} seen;

static void record(void *user, const tb_sharpness *s)
{
    seen *w = user;
    if (w->n < 8) w->s[w->n] = *s;
    w->n++;
}

static tb_run_config base(const char *workload, const char *algorithm)
{
    tb_run_config c = tb_run_config_default();
    c.model.workload = workload;
    c.model.algorithm = algorithm;
    c.model.backend.threads = 2;
    c.eval.during = 0;
    c.eval.examples = 500;
    c.length.max_steps = 6;
    c.data.batch_size = 32;
    return c;
}

/* The run with measurements every `every` steps is the run without them, bit for bit. */
static void check_unchanged(tb_run_config c, int64_t every, seen *w, tb_train_result *with)
{
    tb_train_result without;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, NULL, &without, &err), &err);
    c.diag.sharpness_every = every;
    c.diag.sharpness_iters = 4;
    c.diag.sharpness_batch = 48;
    tb_train_observers obs = {.on_sharpness = record, .sharpness_user = w};
    CHECK_OK(tb_train(&c, &obs, with, &err), &err);
    CHECK(with->final_train_loss == without.final_train_loss);
    CHECK(with->validation.loss == without.validation.loss);
    CHECK(with->test.loss == without.test.loss);
    CHECK(with->sharpness_measurements == w->n && with->sharpness_time_s > 0);
}

static void test_adam_mlp(void)
{
    tb_run_config c = base("fmnist_mlp_narrow", "adam");
    seen w = {0};
    tb_train_result r;
    check_unchanged(c, 3, &w, &r);
    CHECK(w.n == 2 && w.s[0].step == 3 && w.s[1].step == 6);
    for (int i = 0; i < 2 && i < w.n; i++) {
        const tb_sharpness *s = &w.s[i];
        double lr = 1e-3 * tb_schedule_factor(&r.schedule, s->step);
        CHECK_NEAR(s->learning_rate, lr, 1e-15);
        /* warmup then cosine over 6 steps: the factor is 0.5 at step 3 and 0 at step 6, where
         * a step of size 0 is stable at any sharpness */
        if (s->step == 6)
            CHECK(lr == 0 && isinf(s->threshold));
        else
            CHECK_NEAR(s->threshold, 38.0 / lr, 1e-9 * 38.0 / lr);
        CHECK(isfinite(s->lambda_max) && s->lambda_max > 0 && s->lambda_min <= s->lambda_max);
        CHECK(isfinite(s->pre_max) && s->pre_max > s->lambda_max); /* P < 1: Adam's v is small */
        CHECK(s->iterations == 4 && s->grad_evals == 16);
        printf("fmnist_mlp_narrow, adam, step %lld: lambda_1(H) %.3f, lambda_1(P^-1 H) %.1f, "
               "threshold %.0f\n", (long long)s->step, s->lambda_max, s->pre_max, s->threshold);
    }
    CHECK(r.sharpness.step == 6 && r.sharpness.pre_max == w.s[1].pre_max);
}

/* Batch norm: measurements normalise with the batch's statistics and move no running average
 * (evaluation, which uses them, is unchanged). P = 1 for sgd: one Lanczos run. */
static void test_sgd_batchnorm(void)
{
    tb_run_config c = base("fmnist_cnn", "sgd");
    c.length.max_steps = 4;
    seen w = {0};
    tb_train_result r;
    check_unchanged(c, 2, &w, &r);
    CHECK(w.n == 2);
    for (int i = 0; i < 2 && i < w.n; i++) {
        CHECK(w.s[i].pre_max == w.s[i].lambda_max && w.s[i].grad_evals == 8);
        CHECK(isfinite(w.s[i].lambda_max));
    }
}

/* lambda_1(H) after one step of size 1e-12 (the parameters still the initial ones, bit for
 * bit) of full-batch sgd on 40 examples drawn by data-order seed `order`. */
static double full_batch_sharpness(uint64_t order, int64_t sharpness_batch)
{
    tb_run_config c = base("fmnist_mlp_narrow", "sgd");
    tb_error err = {0};
    CHECK_OK(tb_hparams_set(&c.model.hparams, "learning_rate", 1e-12, &err), &err);
    CHECK_OK(tb_hparams_set(&c.model.hparams, "momentum", 0, &err), &err);
    c.data.batch_size = 0;
    c.data.full_batch = 40;
    c.length.max_steps = 1;
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    c.seeds[TB_STREAM_DATA_ORDER] = order;
    c.diag.sharpness_every = 1;
    c.diag.sharpness_iters = 6;
    c.diag.sharpness_batch = sharpness_batch;
    seen w = {0};
    tb_train_observers obs = {.on_sharpness = record, .sharpness_user = &w};
    tb_train_result r;
    CHECK_OK(tb_train(&c, &obs, &r, &err), &err);
    CHECK(w.n == 1 && isfinite(w.s[0].lambda_max));
    return w.n == 1 ? w.s[0].lambda_max : NAN;
}

/* Full batch: the sharpness is that of the loss the steps minimise, on the run's own subset
 * (drawn by the data-order seed), not of examples spread over the split; another sharpness
 * batch size takes the spread examples, the same whatever the seed. */
static void test_full_batch(void)
{
    double own1 = full_batch_sharpness(1, 0), own2 = full_batch_sharpness(2, 0);
    double same = full_batch_sharpness(1, 40);
    double spread1 = full_batch_sharpness(1, 41), spread2 = full_batch_sharpness(2, 41);
    printf("full batch of 40: lambda_1(H) %.4f (subset 1), %.4f (subset 2); spread 41: %.4f, "
           "%.4f\n", own1, own2, spread1, spread2);
    CHECK(own1 != own2 && own1 == same);
    CHECK(spread1 == spread2 && spread1 != own1);
}

static void test_errors(void)
{
    tb_run_config c = base("fmnist_mlp_narrow", "kfac");
    c.diag.sharpness_every = 2;
    tb_train_result r;
    tb_error err = {0};
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err,
                "need a diagonal preconditioner, and kfac has none");
    CHECK(r.steps == 0);
    c.model.algorithm = "lamb";
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "lamb has none");
    c.model.algorithm = "adam";
    c.diag.sharpness_batch = 10000000;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "sharpness batch must be 1 to");
    c.diag.sharpness_batch = 0;
    c.diag.sharpness_iters = 300;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "iterations must be 1 to 256");
    c.diag.sharpness_iters = 0;
    c.diag.sharpness_every = -1;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "must not be negative");
}

int main(void)
{
    test_adam_mlp();
    test_sgd_batchnorm();
    test_full_batch();
    test_errors();
    return tb_test_finish("test_train_sharpness");
}

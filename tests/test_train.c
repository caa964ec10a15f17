/* test_train.c: short real training runs of fmnist_mlp: learning happens, runs are
 * reproducible from their seeds, each seed moves only its own source, divergence and bad
 * input are reported as errors. */
#include "testutil.h"

#include <string.h>

static tb_run_config base(void)
{
    tb_run_config c = tb_run_config_default();
    c.model.backend.threads = 2;
    c.eval.during = 0;
    c.eval.examples = 1000; /* keeps the suite short; test_learns evaluates everything */
    return c;
}

static void test_learns(void)
{
    tb_run_config c = base();
    c.length.max_steps = 125; /* 0.836 validation and 0.820 test accuracy (250 steps: 0.864) */
    c.eval.examples = 0;
    tb_train_result r;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, NULL, &r, &err), &err);
    CHECK(r.steps == 125 && r.examples == 125 * 128);
    /* a loose target: 10 classes, chance is 0.10 */
    CHECK(r.validation.accuracy > 0.78);
    CHECK(r.test.accuracy > 0.76);
    CHECK(r.validation.examples == 5000 && r.test.examples == 10000);
    CHECK(r.parameters == 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
    printf("125 steps: validation accuracy %.4f, test accuracy %.4f\n", r.validation.accuracy,
           r.test.accuracy);
}

static void test_reproducible_and_sources(void)
{
    tb_run_config c = base();
    c.length.max_steps = 15;
    c.model.algorithm = "sgd";
    tb_train_result a, b, d, e;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, NULL, &a, &err), &err);
    CHECK_OK(tb_train(&c, NULL, &b, &err), &err);
    CHECK(a.final_train_loss == b.final_train_loss);
    CHECK(a.validation.loss == b.validation.loss);
    c.seeds[TB_STREAM_INIT] = 1; /* only the init changes */
    CHECK_OK(tb_train(&c, NULL, &d, &err), &err);
    CHECK(d.final_train_loss != a.final_train_loss);
    c.seeds[TB_STREAM_INIT] = 0;
    c.seeds[TB_STREAM_DATA_ORDER] = 5; /* only the data order changes */
    CHECK_OK(tb_train(&c, NULL, &e, &err), &err);
    CHECK(e.final_train_loss != a.final_train_loss);
    /* the test set is fixed and the validation split unchanged: at step 0 they would agree */
    CHECK(e.validation.examples == a.validation.examples && a.validation.examples == 1000);
}

static void test_errors(void)
{
    tb_run_config c = base();
    c.length.max_steps = 200;
    c.model.algorithm = "sgd";
    tb_hparams_set(&c.model.hparams, "learning_rate", 1e5, NULL);
    tb_train_result r;
    tb_error err = {0};
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_NUMERIC, &err, "diverged");
    CHECK(r.diverged && r.steps < 200);

    /* a finite but exploded loss (2e13 at step 2 against 2.3 untrained) is a divergence */
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    c.length.max_steps = 2;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_NUMERIC, &err,
                "more than 10000 times the first step's training loss");
    CHECK(r.diverged && r.steps == 1 && strstr(err.message, "at step 2"));
    /* the last step's update is caught by the final validation loss: no later training loss */
    c.length.max_steps = 1;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_NUMERIC, &err,
                "the validation loss is");
    CHECK(r.diverged && r.steps == 1 && strstr(err.message, "after the last step (1)"));
    c = base();
    c.model.algorithm = "adam"; /* 4.5e6 after 40 steps with the old NaN-only rule */
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    c.length.max_steps = 40;
    tb_hparams_set(&c.model.hparams, "learning_rate", 1e6, NULL);
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_NUMERIC, &err, "times the first step's");
    CHECK(r.diverged && r.steps < 40);

    /* a step that fails on a number that is not finite (K-FAC: A + pi sqrt(1e-36) I is still
     * singular in double) is a divergence too: the result says so (it said diverged = false
     * while the status said numeric) and the message gives the step */
    c = base();
    c.model.workload = "fmnist_mlp_narrow";
    c.model.algorithm = "kfac";
    c.length.max_steps = 2;
    tb_hparams_set(&c.model.hparams, "damping", 1e-36, NULL);
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_NUMERIC, &err,
                "the run diverged at step 1: kfac: damping = 1e-36");
    CHECK(r.diverged && r.steps == 0 && strstr(err.message, "increase damping"));

    c = base();
    c.data.source.data_dir = "/nonexistent/fashion";
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_MISSING, &err, "dataset-fashion-mnist");

    c = base();
    c.model.algorithm = "adamw";
    tb_hparams_set(&c.model.hparams, "beta2", 1.5, NULL);
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "beta2 = 1.5");

    c = base();
    c.model.workload = "imagenet_resnet";
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "unknown workload");

    c = base();
    c.data.batch_size = 100000;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "exceeds");
}

/* The schedule spans the run's steps, or, for a run ended by time (neither steps nor epochs),
 * the workload's step hint: not a billion steps, which left a budgeted run in warmup at a
 * learning rate near 0. */
static void test_schedule_horizon(void)
{
    tb_run_config c = base();
    c.model.algorithm = "sgd";
    c.eval.examples = 100;
    c.length.max_steps = 40;
    tb_train_result r;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, NULL, &r, &err), &err);
    CHECK(r.schedule.kind == TB_SCHEDULE_WARMUP_COSINE && r.schedule.total_steps == 40 &&
          r.schedule.warmup_steps == 2);
    c.length.max_steps = 0;
    c.length.epochs = 0.01; /* 1% of 55000 / 128 = 429 steps */
    CHECK_OK(tb_train(&c, NULL, &r, &err), &err);
    CHECK(r.steps == 5 && r.schedule.total_steps == 5);

    const tb_workload_info *info = NULL;
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, c.model.workload) == 0) info = tb_workload_info_at(i);
    CHECK(info && info->step_hint > 100);
    c.length.epochs = 0; /* ended by time: the first step outlasts a nanosecond */
    c.length.max_time_s = 1e-9;
    CHECK_OK(tb_train(&c, NULL, &r, &err), &err);
    CHECK(r.steps == 1);
    CHECK(info && r.schedule.total_steps == info->step_hint &&
          r.schedule.warmup_steps == (int64_t)(0.05 * (double)info->step_hint));

    c.length.max_time_s = 0; /* neither a length nor a time limit */
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "the run has no steps");
    /* epochs whose steps do not fit are refused by name, not cast into "no steps" */
    c.length.epochs = 1e17;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err,
                "1e+17 epochs are 4.29e+19 steps (429 per epoch), more than the 1000000000");
}

/* Records the steps after which the run evaluated. */
typedef struct eval_log {
    int64_t steps[64];
    int n;
} eval_log;

static void log_evals(void *user, const tb_train_progress *p)
{
    eval_log *l = user;
    if (p->validation && l->n < 64) l->steps[l->n++] = p->step;
}

/* `evals` evaluations during the run, evenly spaced, then the final one: 0 and 1 differ (the
 * old rule put the one evaluation of --evals 1 on the last step, where it was skipped). */
static void test_evals(void)
{
    tb_run_config c = base();
    c.model.algorithm = "sgd";
    c.eval.examples = 100;
    c.length.max_steps = 10;
    tb_train_result r;
    tb_error err = {0};
    const int counts[][2] = {{1, 2}, {3, 4}, {50, 10}}; /* 0 gives 1: base() and test_cli */
    for (int i = 0; i < 3; i++) {
        eval_log log = {.n = 0};
        c.eval.during = counts[i][0];
        tb_train_observers obs = {.progress = log_evals, .progress_user = &log,
                                  .progress_every_s = 0.5};
        CHECK_OK(tb_train(&c, &obs, &r, &err), &err);
        if (!CHECK(r.evaluations == counts[i][1] && log.n == counts[i][1] - 1))
            fprintf(stderr, "evals %d: %lld evaluations\n", c.eval.during, (long long)r.evaluations);
        if (counts[i][0] == 3) CHECK(log.steps[0] == 3 && log.steps[1] == 5 && log.steps[2] == 8);
        if (counts[i][0] == 1) CHECK(log.steps[0] == 5);
    }
    c = base();
    c.length.max_steps = 2;
    c.eval.during = -1;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "must not be negative");
    c.eval.during = 0;
    c.length.max_time_s = -1;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "time limit");
    c.length.max_time_s = 0;
    c.eval.period_s = -1;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err, "eval period");
}

/* Full-batch training: every step the same fixed subset (its size the batch, read once, an
 * epoch one step), the same result from the same seeds, another subset from another data-order
 * seed; what would change a step's examples refused before any data. */
static void test_full_batch(void)
{
    tb_run_config c = base();
    c.data.full_batch = 64;
    c.length.epochs = 4; /* 4 steps: an epoch of the subset is one step */
    c.eval.examples = 200;
    tb_train_result a, b;
    tb_error err = {0};
    if (!CHECK_OK(tb_train(&c, NULL, &a, &err), &err)) return;
    CHECK(a.steps == 4 && a.examples == 4 * 64 && a.fresh_examples == 64);
    CHECK_OK(tb_train(&c, NULL, &b, &err), &err);
    CHECK(a.final_train_loss == b.final_train_loss);
    c.seeds[TB_STREAM_DATA_ORDER] = 99;
    CHECK_OK(tb_train(&c, NULL, &b, &err), &err);
    CHECK(a.final_train_loss != b.final_train_loss); /* another subset */
    c.data.batch_size = 32;
    CHECK_FAILS(tb_train(&c, NULL, &b, &err), TB_ERR_INVALID, &err,
                "full batch (64 examples, every step all of them) cannot be combined with "
                "another batch size");
    c.data.batch_size = 0;
    c.data.pipeline.augment = true;
    CHECK_FAILS(tb_train(&c, NULL, &b, &err), TB_ERR_INVALID, &err, "with augmentation");
    c.data.pipeline.augment = false;
    c.data.full_batch = 1000000;
    CHECK_FAILS(tb_train(&c, NULL, &b, &err), TB_ERR_INVALID, &err, "exceeds the");
}

int main(void)
{
    test_learns();
    test_reproducible_and_sources();
    test_errors();
    test_schedule_horizon();
    test_evals();
    test_full_batch();
    return tb_test_finish("test_train");
}

/* test_dropout.c: dropout in the models (docs/DROPOUT.md): the dropout stream makes runs
 * reproducible and is a real source of variation, evaluation does not drop, the rate is
 * checked, and the random-rate scheme draws its rates in its range. */
#include "testutil.h"

#include "trainbench/study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 4

static tb_run_config small(const char *workload)
{
    tb_run_config c = tb_run_config_default();
    c.model.workload = workload;
    c.model.algorithm = "sgd";
    tb_hparams_set(&c.model.hparams, "learning_rate", 0.05, NULL);
    c.model.backend.threads = 1;
    c.data.source.train_limit = 512;
    c.data.batch_size = 32;
    c.length.max_steps = STEPS;
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    tb_run_config_seed_all(&c, 5);
    return c;
}

/* STEPS losses of a run, then its validation metrics on 200 examples, twice (eval twice must
 * agree: evaluation runs without dropout) */
static bool run(const tb_run_config *c, double *loss, tb_eval_metrics *m)
{
    tb_error err = {0};
    tb_run *r;
    if (!CHECK_OK(tb_run_create(c, &r, &err), &err)) return false;
    bool ok = true;
    for (int i = 0; i < STEPS && ok; i++) {
        tb_run_step_info s;
        ok = CHECK_OK(tb_run_step(r, true, &s, &err), &err);
        loss[i] = s.loss;
    }
    tb_eval_metrics again;
    ok = ok && CHECK_OK(tb_run_evaluate(r, TB_SPLIT_VALIDATION, 200, m, &err), &err) &&
         CHECK_OK(tb_run_evaluate(r, TB_SPLIT_VALIDATION, 200, &again, &err), &err);
    ok = ok && CHECK(m->loss == again.loss && m->error_rate == again.error_rate);
    tb_run_destroy(r);
    return ok;
}

static void test_stream(const char *workload, bool has_dropout)
{
    tb_run_config c = small(workload);
    double a[STEPS], b[STEPS], d[STEPS];
    tb_eval_metrics ma, mb, md;
    if (!run(&c, a, &ma) || !run(&c, b, &mb)) return;
    CHECK(memcmp(a, b, sizeof a) == 0 && ma.loss == mb.loss); /* same seeds, same bits */
    c.seeds[TB_STREAM_DROPOUT] = 6;
    if (!run(&c, d, &md)) return;
    /* the step-1 loss already sees other masks; without dropout the seed changes nothing */
    CHECK((a[0] != d[0]) == has_dropout);
    CHECK((memcmp(a, d, sizeof a) != 0) == has_dropout);
}

static void test_rates(void)
{
    tb_error err = {0};
    tb_run_config c = small("fmnist_mlp_dropout");
    tb_run *r = NULL;
    static const double bad[] = {1.0, -0.1, 2.0};
    for (int i = 0; i < 3; i++) {
        c.data.source.dropout_rate = bad[i];
        CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "dropout_rate");
    }
    c.data.source.dropout_rate = NAN;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "dropout_rate");
    c = small("fmnist_mlp");
    c.data.source.dropout_rate = 0.3;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_UNSUPPORTED, &err, "has no dropout");
    c = small("fmnist_mlp_dropout_random");
    c.data.source.dropout_rate = 0.5; /* rates up to 2 x 0.5 = 1 */
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "below 0.5");
    CHECK(tb_workload_has_dropout("fmnist_cnn_dropout") && !tb_workload_has_dropout("fmnist_cnn"));
    /* a rate the run sets is the model's: another rate, other losses */
    c = small("fmnist_mlp_dropout");
    double a[STEPS], b[STEPS];
    tb_eval_metrics m;
    c.data.source.dropout_rate = 0.1;
    if (!run(&c, a, &m)) return;
    c.data.source.dropout_rate = 0.6;
    if (!run(&c, b, &m)) return;
    CHECK(a[0] != b[0]);
}

/* the random-rate scheme: rates in [lo, hi), spread over it; each row dropped at its rate */
static void test_random_rates(void)
{
    enum { ROWS = 64, COLS = 4096, N = 1000 };
    tb_rng rng = tb_rng_make(11, 0);
    float *rates = malloc(N * sizeof *rates);
    tb_dropout_random_rates(&rng, N, 0.1f, 0.4f, rates);
    float lo = 1, hi = 0;
    for (int i = 0; i < N; i++) {
        lo = fminf(lo, rates[i]);
        hi = fmaxf(hi, rates[i]);
    }
    CHECK(lo >= 0.1f && hi < 0.4f && lo < 0.11f && hi > 0.39f);
    tb_backend *be = tb_test_backend();
    tb_tape *t = tb_test_tape(be);
    int64_t shape[2] = {ROWS, COLS};
    tb_rng vals = tb_rng_make(3, 0);
    tb_var *x = tb_test_var(be, 2, shape, &vals, 1.0f, 2.0f, false); /* no zero in x */
    tb_rng drop = rng;
    tb_dropout_random_rates(&drop, ROWS, 0.0f, 0.6f, rates);
    tb_tape_set_training(t, true);
    tb_var *y = tb_op_dropout_random(t, x, 0.0f, 0.6f, &drop);
    CHECK(y != NULL && drop.counter > rng.counter);
    float *h = y ? tb_test_host_copy(y) : NULL;
    for (int i = 0; h && i < ROWS; i++) {
        int zeros = 0;
        for (int j = 0; j < COLS; j++) zeros += h[i * COLS + j] == 0.0f;
        /* binomial sd <= 0.008 at 4096 draws: 0.04 is five of them */
        CHECK_NEAR((double)zeros / COLS, rates[i], 0.04);
    }
    free(h);
    tb_tape_reset(t);
    tb_tape_set_training(t, false); /* eval: the identity, the stream untouched */
    tb_rng before = drop;
    CHECK(tb_op_dropout_random(t, x, 0.0f, 0.6f, &drop) == x && drop.counter == before.counter);
    CHECK(tb_op_dropout_random(t, x, 0.5f, 0.2f, &drop) == NULL);
    free(rates);
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_backend_destroy(be);
}

/* variance refuses a source its runs never read, and takes dropout on a dropout model */
static void test_variance_sources(void)
{
    tb_variance_study_config c = {0};
    c.base = small("fmnist_mlp");
    c.base.length.max_steps = 2;
    c.base.eval.examples = 100;
    c.runs = 2;
    c.n_sources = 1;
    c.seed = 3;
    c.metric = TB_METRIC_VALIDATION_LOSS;
    tb_variance_study s;
    tb_error err = {0};
    c.sources[0] = TB_STREAM_DROPOUT;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err,
                "fmnist_mlp has no dropout");
    c.sources[0] = TB_STREAM_AUGMENT;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err, "no data augmentation");
    c.sources[0] = TB_STREAM_HPARAM;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err, "no search");
    c.base.model.workload = "fmnist_mlp_dropout";
    c.sources[0] = TB_STREAM_DROPOUT;
    if (!CHECK_OK(tb_variance_study_run(&c, &s, &err), &err)) return;
    CHECK(s.values[0][0] != s.values[0][1]); /* other masks, another result */
    tb_variance_study_free(&s);
}

int main(void)
{
    test_variance_sources();
    test_random_rates();
    test_rates();
    test_stream("fmnist_mlp_dropout", true);
    test_stream("fmnist_mlp_dropout_random", true);
    test_stream("fmnist_cnn_dropout", true);
    test_stream("fmnist_mlp_narrow", false);
    return tb_test_finish("test_dropout");
}

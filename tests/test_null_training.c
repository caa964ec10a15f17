/* test_null_training.c: NULL arguments to the training side of the harness (data.h,
 * pipeline.h, step.h, workload.h, train.h, study.h) never crash: a call that returns a status
 * fails with TB_ERR_INVALID naming the argument, the others return what their header says
 * (NULL, 0, false, NaN, a zeroed value), as the engine's calls do (test_core, test_ops_dense
 * and test_optim sweep those). One test per header; ASan runs them in scripts/test.sh. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "trainbench/study.h"

static tb_backend *be;
static tb_workload *wl; /* fmnist_mlp on 512 training examples */

#define FAILS(call, needle) CHECK_FAILS((call), TB_ERR_INVALID, &err, (needle))

static void test_null_data(void)
{
    tb_error err = {0};
    tb_idx idx;
    tb_image_dataset ds;
    int64_t bytes;
    FAILS(tb_idx_read(NULL, &idx, &err), "path is NULL");
    FAILS(tb_idx_read("x.gz", NULL, &err), "out is NULL");
    FAILS(tb_idx_read_ndim(NULL, 1, &idx, &err), "path is NULL");
    FAILS(tb_idx_read_ndim("x.gz", 1, NULL, &err), "out is NULL");
    tb_idx_free(NULL);
    tb_image_dataset_free(NULL);
    FAILS(tb_fmnist_files(NULL, NULL, &err), "bytes is NULL");
    CHECK_OK(tb_fmnist_files(NULL, &bytes, &err), &err); /* dir NULL: the package's */
    FAILS(tb_fmnist_load(NULL, NULL, &ds, &err), "split is NULL");
    FAILS(tb_fmnist_load(NULL, "train", NULL, &err), "out is NULL");
    CHECK(tb_fmnist_class_name(-1) == NULL);
}

static void test_null_pipeline(void)
{
    tb_error err = {0};
    tb_echo_kind kind;
    tb_pipeline_config pc = {.batch_size = 8};
    tb_pipeline *p = NULL;
    tb_batch b;
    FAILS(tb_echo_kind_parse(NULL, &kind, &err), "name is NULL");
    FAILS(tb_echo_kind_parse("none", NULL, &err), "out is NULL");
    FAILS(tb_pipeline_create(NULL, &pc, &p, &err), "workload is NULL");
    FAILS(tb_pipeline_create(wl, NULL, &p, &err), "config is NULL");
    FAILS(tb_pipeline_create(wl, &pc, NULL, &err), "out is NULL");
    tb_pipeline_destroy(NULL);
    tb_tape *tape = tb_test_tape(be);
    FAILS(tb_pipeline_next(NULL, tape, &b, &err), "pipeline is NULL");
    CHECK(tb_pipeline_epoch(NULL) == 0 && tb_pipeline_fresh_examples(NULL) == 0 &&
          tb_pipeline_batches(NULL) == 0);
    pc.prefetch = -1;
    if (CHECK_OK(tb_pipeline_create(wl, &pc, &p, &err), &err)) {
        FAILS(tb_pipeline_next(p, NULL, &b, &err), "tape is NULL");
        FAILS(tb_pipeline_next(p, tape, NULL, &err), "out is NULL");
        CHECK_OK(tb_pipeline_next(p, tape, &b, &err), &err); /* the pipeline still works */
        CHECK(b.n == 8 && tb_pipeline_batches(p) == 1);
        tb_pipeline_destroy(p);
    }
    tb_tape_destroy(tape);
}

static tb_var *no_loss(void *user, tb_tape *tape, const tb_batch *batch, tb_rng *dropout,
                       tb_error *err)
{
    (void)user, (void)tape, (void)batch, (void)dropout;
    tb_fail(err, TB_ERR_INTERNAL, "not called");
    return NULL;
}

static void test_null_step(void)
{
    tb_error err = {0};
    tb_tape *tape = tb_test_tape(be);
    tb_params *params = tb_workload_params(wl);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create("sgd", params, NULL, &opt, &err), &err);
    tb_step_config sc = {.loss = no_loss}, none = {0};
    tb_step_runner *r = NULL;
    FAILS(tb_step_runner_create(NULL, params, opt, &sc, &r, &err), "tape is NULL");
    FAILS(tb_step_runner_create(tape, NULL, opt, &sc, &r, &err), "params is NULL");
    FAILS(tb_step_runner_create(tape, params, NULL, &sc, &r, &err), "optimizer is NULL");
    FAILS(tb_step_runner_create(tape, params, opt, NULL, &r, &err), "config is NULL");
    FAILS(tb_step_runner_create(tape, params, opt, &none, &r, &err), "config->loss is NULL");
    FAILS(tb_step_runner_create(tape, params, opt, &sc, NULL, &err), "out is NULL");
    tb_step_runner_destroy(NULL);
    FAILS(tb_step_runner_step(NULL, NULL, 1.0, NULL, NULL, NULL, &err), "runner is NULL");
    if (CHECK_OK(tb_step_runner_create(tape, params, opt, &sc, &r, &err), &err)) {
        FAILS(tb_step_runner_step(r, NULL, 1.0, NULL, NULL, NULL, &err), "pipeline is NULL");
        tb_step_runner_destroy(r);
    }
    CHECK(!tb_step_runner_graphed(NULL) && tb_step_runner_replays(NULL) == 0 &&
          strcmp(tb_step_runner_note(NULL), "") == 0);
    tb_optimizer_destroy(opt);
    tb_tape_destroy(tape);
}

static void test_null_workload(void)
{
    tb_error err = {0};
    tb_split_kind kind;
    tb_workload *w = NULL;
    tb_rng rng = tb_rng_make(1, TB_STREAM_INIT);
    tb_eval_metrics m;
    tb_prepare_report report;
    tb_workload_config wc = {0};
    FAILS(tb_split_kind_parse(NULL, &kind, &err), "name is NULL");
    FAILS(tb_split_kind_parse("official", NULL, &err), "out is NULL");
    FAILS(tb_workload_create(NULL, be, NULL, &w, &err), "id is NULL");
    FAILS(tb_workload_create("fmnist_mlp", NULL, NULL, &w, &err), "backend is NULL");
    FAILS(tb_workload_create("fmnist_mlp", be, NULL, NULL, &err), "out is NULL");
    tb_workload_destroy(NULL);
    CHECK(tb_workload_get_info(NULL) == NULL && tb_workload_params(NULL) == NULL &&
          tb_workload_size(NULL, TB_SPLIT_TRAIN) == 0);
    FAILS(tb_workload_init(NULL, &rng, &err), "workload is NULL");
    FAILS(tb_workload_init(wl, NULL, &err), "rng is NULL");
    tb_tape *tape = tb_test_tape(be);
    const int64_t rows[2] = {0, 1};
    tb_var *in = NULL, *tg = NULL;
    CHECK(tb_workload_loss(NULL, tape, rows, 2, NULL) == NULL);
    CHECK(tb_workload_loss(wl, NULL, rows, 2, NULL) == NULL);
    tb_tape_reset(tape); /* the first failure stays on a tape until it is reset */
    CHECK(tb_workload_loss(wl, tape, NULL, 2, NULL) == NULL);
    CHECK(strstr(tb_tape_error(tape)->message, "idx is NULL") != NULL);
    tb_tape_reset(tape);
    CHECK(!tb_workload_gather(NULL, tape, TB_SPLIT_TRAIN, rows, 2, &in, &tg));
    CHECK(!tb_workload_gather(wl, NULL, TB_SPLIT_TRAIN, rows, 2, &in, &tg));
    tb_tape_reset(tape);
    CHECK(!tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, NULL, 2, &in, &tg));
    CHECK(strstr(tb_tape_error(tape)->message, "rows is NULL") != NULL);
    tb_tape_reset(tape);
    CHECK(!tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, rows, 2, NULL, &tg));
    CHECK(strstr(tb_tape_error(tape)->message, "inputs is NULL") != NULL);
    tb_tape_reset(tape);
    CHECK(tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, rows, 2, &in, &tg));
    CHECK(tb_workload_forward(NULL, tape, in, NULL) == NULL);
    CHECK(tb_workload_forward(wl, NULL, in, NULL) == NULL);
    tb_tape_reset(tape);
    CHECK(tb_workload_forward(wl, tape, NULL, NULL) == NULL);
    CHECK(strstr(tb_tape_error(tape)->message, "inputs is NULL") != NULL);
    tb_tape_reset(tape);
    CHECK(tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, rows, 2, &in, &tg));
    tb_var *out = tb_workload_forward(wl, tape, in, NULL);
    CHECK(out != NULL);
    CHECK(tb_workload_loss_fn(NULL, tape, out, tg) == NULL);
    CHECK(tb_workload_loss_fn(wl, NULL, out, tg) == NULL);
    CHECK(tb_tape_status(tape) != TB_OK);
    tb_tape_reset(tape);
    CHECK(tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, rows, 2, &in, &tg));
    out = tb_workload_forward(wl, tape, in, NULL);
    CHECK(tb_workload_loss_fn(wl, tape, out, NULL) == NULL);
    CHECK(strstr(tb_tape_error(tape)->message, "targets is NULL") != NULL);
    CHECK(tb_workload_fisher_loss(NULL, tape, out, &rng) == NULL);
    CHECK(tb_workload_fisher_loss(wl, NULL, out, &rng) == NULL);
    FAILS(tb_workload_evaluate(NULL, tape, TB_SPLIT_VALIDATION, 10, &m, &err),
          "workload is NULL");
    FAILS(tb_workload_evaluate(wl, NULL, TB_SPLIT_VALIDATION, 10, &m, &err), "tape is NULL");
    FAILS(tb_workload_evaluate(wl, tape, TB_SPLIT_VALIDATION, 10, NULL, &err), "out is NULL");
    tb_example_layout lay = tb_workload_layout(NULL);
    CHECK(lay.x_ndim == 0 && tb_example_x_bytes(NULL) == 0 && tb_example_y_bytes(NULL) == 0);
    lay = tb_workload_layout(wl);
    float x[2 * 784];
    int32_t y[2];
    int64_t ids[2];
    FAILS(tb_workload_read(NULL, TB_SPLIT_TRAIN, rows, 2, x, y, &err), "workload is NULL");
    FAILS(tb_workload_read(wl, TB_SPLIT_TRAIN, NULL, 2, x, y, &err), "rows is NULL");
    FAILS(tb_workload_read(wl, TB_SPLIT_TRAIN, rows, 2, NULL, y, &err), "x is NULL");
    FAILS(tb_workload_read(wl, TB_SPLIT_TRAIN, rows, 2, x, NULL, &err), "y is NULL");
    FAILS(tb_workload_example_ids(NULL, TB_SPLIT_TRAIN, rows, 2, ids, &err), "workload is NULL");
    FAILS(tb_workload_example_ids(wl, TB_SPLIT_TRAIN, NULL, 2, ids, &err), "rows is NULL");
    FAILS(tb_workload_example_ids(wl, TB_SPLIT_TRAIN, rows, 2, NULL, &err), "ids is NULL");
    CHECK(tb_workload_example_class(NULL, 0) == -1);
    CHECK_OK(tb_workload_read(wl, TB_SPLIT_TRAIN, rows, 2, x, y, &err), &err);
    tb_tape_reset(tape);
    CHECK(!tb_workload_upload(NULL, tape, 2, x, y, &in, &tg));
    CHECK(!tb_workload_upload(wl, NULL, 2, x, y, &in, &tg));
    tb_tape_reset(tape);
    CHECK(!tb_workload_upload(wl, tape, 2, NULL, y, &in, &tg));
    CHECK(strstr(tb_tape_error(tape)->message, "x is NULL") != NULL);
    tb_tape_reset(tape);
    CHECK(!tb_workload_upload(wl, tape, 2, x, y, &in, NULL));
    CHECK(strstr(tb_tape_error(tape)->message, "targets is NULL") != NULL);
    CHECK(tb_workload_layers(NULL, NULL, 0) == 0);
    CHECK(tb_workload_layers(wl, NULL, 4) == tb_workload_layers(wl, NULL, 0)); /* a count */
    CHECK(!tb_default_cache_dir(NULL, 64));
    FAILS(tb_workload_prepare(NULL, &wc, false, &report, &err), "id is NULL");
    /* config (the defaults) and report may be NULL */
    CHECK_OK(tb_workload_prepare("fmnist_mlp", NULL, false, NULL, &err), &err);
    CHECK_OK(tb_workload_prepare("fmnist_mlp", &wc, false, &report, &err), &err);
    tb_tape_destroy(tape);
}

static void test_null_train(void)
{
    tb_error err = {0};
    tb_train_result res;
    tb_run_config c = tb_run_config_default();
    tb_run_config_seed_all(NULL, 3);
    FAILS(tb_train(NULL, NULL, &res, &err), "config is NULL");
    FAILS(tb_train(&c, NULL, NULL, &err), "result is NULL");
    c.model.workload = NULL;
    FAILS(tb_train(&c, NULL, &res, &err), "config->model.workload is NULL");
    c = tb_run_config_default();
    c.model.algorithm = NULL;
    FAILS(tb_train(&c, NULL, &res, &err), "config->model.algorithm is NULL");
}

static void test_null_study(void)
{
    tb_error err = {0};
    tb_study_metric m;
    FAILS(tb_study_metric_parse(NULL, &m, &err), "name is NULL");
    FAILS(tb_study_metric_parse("test", NULL, &err), "out is NULL");
    CHECK(isnan(tb_study_metric_value(TB_METRIC_TEST, NULL)));
    FAILS(tb_study_prepare_config(TB_METRIC_TIME_TO_TARGET, NULL, &err), "config is NULL");
    tb_variance_study_config vc = {.base = tb_run_config_default(), .runs = 2};
    tb_variance_study vs;
    FAILS(tb_variance_study_run(NULL, &vs, &err), "config is NULL");
    FAILS(tb_variance_study_run(&vc, NULL, &err), "out is NULL");
    vc.base.model.algorithm = NULL;
    FAILS(tb_variance_study_run(&vc, &vs, &err), "algorithm is NULL");
    tb_variance_study_free(NULL);
    tb_compare_config cc = {.a = tb_run_config_default(), .b = tb_run_config_default(),
                            .pairs = 2, .pab = tb_pab_options_default()};
    tb_compare_result cr;
    FAILS(tb_compare_run(NULL, &cr, &err), "config is NULL");
    FAILS(tb_compare_run(&cc, NULL, &err), "out is NULL");
    cc.b.model.workload = NULL;
    FAILS(tb_compare_run(&cc, &cr, &err), "workload is NULL");
    cc.b.model.workload = "fmnist_mlp";
    cc.search_trials = 2;
    FAILS(tb_compare_run(&cc, &cr, &err), "space_a is NULL");
    tb_compare_result_free(NULL);
}

int main(void)
{
    be = tb_test_backend();
    tb_error err = {0};
    tb_workload_config wc = {.train_limit = 512, .validation_size = 100};
    if (!CHECK_OK(tb_workload_create("fmnist_mlp", be, &wc, &wl, &err), &err))
        return tb_test_finish("test_null_training");
    test_null_data();
    test_null_pipeline();
    test_null_step();
    test_null_workload();
    test_null_train();
    test_null_study();
    tb_workload_destroy(wl);
    tb_backend_destroy(be);
    return tb_test_finish("test_null_training");
}

/* test_study.c: paired comparisons and variance studies over short real runs. */
#include "testutil.h"

#include <string.h>

#include "trainbench/study.h"

static tb_run_config short_run(const char *algorithm)
{
    tb_run_config c = tb_run_config_default();
    c.model.algorithm = algorithm;
    c.length.max_steps = 8;
    c.eval.during = 0;
    c.eval.examples = 300;
    c.model.backend.threads = 2;
    return c;
}

static void test_seeds(void)
{
    CHECK(tb_study_seed(7, TB_STREAM_INIT, 0) == 7);
    CHECK(tb_study_seed(7, TB_STREAM_INIT, 1) != tb_study_seed(7, TB_STREAM_INIT, 2));
    CHECK(tb_study_seed(7, TB_STREAM_INIT, 1) != tb_study_seed(7, TB_STREAM_SPLIT, 1));
    CHECK(tb_study_seed(7, TB_STREAM_INIT, 1) != tb_study_seed(8, TB_STREAM_INIT, 1));
    CHECK(tb_study_seed(7, TB_STREAM_INIT, 3) == tb_study_seed(7, TB_STREAM_INIT, 3));
    tb_study_metric m;
    tb_error err = {0};
    CHECK_OK(tb_study_metric_parse("test_loss", &m, &err), &err);
    CHECK(m == TB_METRIC_TEST_LOSS);
    CHECK_FAILS(tb_study_metric_parse("accuracy", &m, &err), TB_ERR_INVALID, &err, "accuracy");
}

static void test_compare_identical_sides_tie(void)
{
    /* the same algorithm on both sides with shared seeds: every pair ties exactly */
    tb_compare_config c = {0};
    c.a = short_run("adamw");
    c.b = short_run("adamw");
    c.pairs = 2;
    c.seed = 11;
    c.pab = tb_pab_options_default();
    tb_compare_result r;
    tb_error err = {0};
    CHECK_OK(tb_compare_run(&c, &r, &err), &err);
    CHECK(r.n == 2 && r.pab.ties == 2);
    CHECK_NEAR(r.pab.p, 0.5, 0);
    CHECK(r.pab.verdict == TB_VERDICT_NOT_SIGNIFICANT);
    /* different pairs saw different seeds: their results differ */
    CHECK(r.a[0] != r.a[1]);
    tb_compare_result_free(&r);

    c.b = short_run("sgd");
    tb_hparams_set(&c.b.model.hparams, "learning_rate", 1e-6, NULL); /* B barely moves */
    CHECK_OK(tb_compare_run(&c, &r, &err), &err);
    CHECK(r.pab.wins == 2); /* lower validation error for A in every pair */
    tb_compare_result_free(&r);

    c.pairs = 1;
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err, "at least 2 pairs");
}

static void count_run(void *user, const char *group, int index, int total,
                      const tb_train_result *r, const tb_error *err)
{
    (void)group, (void)index, (void)total, (void)r, (void)err;
    (*(int *)user)++;
}

static void test_compare_divergence_and_errors(void)
{
    /* B diverges in every pair (sgd at learning rate 1e5: NaN loss by step 3). Each divergence
     * loses its pair instead of removing it, so A wins all of them; the old code dropped the
     * pairs and failed with "only 0 pairs finished". */
    tb_compare_config c = {0};
    c.a = short_run("adamw");
    c.b = short_run("sgd");
    tb_hparams_set(&c.b.model.hparams, "learning_rate", 1e5, NULL);
    c.pairs = 2;
    c.seed = 2;
    c.pab = tb_pab_options_default();
    tb_compare_result r;
    tb_error err = {0};
    CHECK_OK(tb_compare_run(&c, &r, &err), &err);
    CHECK(r.n == 2 && r.failed_a == 0 && r.failed_b == 2 && r.pab.wins == 2);
    CHECK(isinf(r.b[0]) && isfinite(r.a[0]));
    CHECK(r.summary_a.n == 2 && r.summary_b.n == 0 && isnan(r.summary_b.mean));
    CHECK(r.pab.verdict == TB_VERDICT_NOT_SIGNIFICANT); /* 2 of 2: too few pairs to tell */
    tb_compare_result_free(&r);
    /* Both sides always diverge: nothing to compare. */
    c.a = c.b;
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_NUMERIC, &err, "every run diverged");

    /* Configuration errors of either side fail before any training. */
    int runs = 0;
    c.a = short_run("adamw");
    c.b = short_run("sgdd");
    c.on_run = count_run;
    c.user = &runs;
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err,
                "side B: unknown algorithm 'sgdd'");
    c.b = short_run("sgd");
    tb_hparams_set(&c.b.model.hparams, "momentun", 0.9, NULL);
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err, "momentun");
    /* a value in range that cannot work in float32 is refused here too, before training (it
     * failed every run at step 1 and lost every pair as a divergence) */
    c.b = short_run("kfac");
    tb_hparams_set(&c.b.model.hparams, "damping", 1e-300, NULL);
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err,
                "side B: kfac: damping = 1e-300 is below float32's smallest normal number");
    c.b = short_run("sgd");
    c.a.model.workload = "fmnist_mpl";
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err,
                "side A: unknown workload 'fmnist_mpl'");
    c.a = short_run("adamw");
    c.pab.gamma = 0.5 + 1e-9;
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err, "too close to 0.5");
    c.pab = tb_pab_options_default();
    c.metric = TB_METRIC_EXAMPLES_PER_SECOND; /* a study file's metric only */
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err,
                "compare cannot use examples_per_second");
    /* an error rate of a workload that does not classify (it failed after the first run) */
    c.metric = TB_METRIC_TEST_ERROR;
    c.a.model.workload = c.b.model.workload = "fmnist_autoencoder";
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err,
                "workload fmnist_autoencoder has no error rate");
    c.metric = TB_METRIC_VALIDATION;
    c.a = short_run("adamw");
    c.b = short_run("sgd");
    /* a malformed search space is a bad value (it was TB_ERR_FORMAT), named by its file */
    c.search_trials = 1;
    c.space_a = "{\"learning_rate\": {\"min\": 0.001, \"max\": 0.1, \"scaling\": \"log\"}}";
    c.space_b = "learning_rate = 0.1";
    c.space_b_source = "spaces/sgd.txt";
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_INVALID, &err,
                "search space spaces/sgd.txt (B): malformed JSON at line 1");
    c.search_trials = 0;
    c.space_a = c.space_b = c.space_b_source = NULL;
    CHECK(runs == 0);
    /* Any failure but a divergence stops the study at the run that failed. */
    c.pab = tb_pab_options_default();
    c.a.data.source.data_dir = c.b.data.source.data_dir = "/nonexistent/fashion";
    CHECK_FAILS(tb_compare_run(&c, &r, &err), TB_ERR_MISSING, &err, "run 1");
    CHECK(runs == 1);
}

static void test_search_and_ideal(void)
{
    const char *space = "{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}}";
    tb_compare_config c = {0};
    c.a = short_run("adamw");
    c.b = short_run("sgd");
    c.a.length.max_steps = c.b.length.max_steps = 3;
    c.pairs = 2;
    c.seed = 5;
    c.pab = tb_pab_options_default();
    c.space_a = c.space_b = space;
    c.search_trials = 2;
    c.metric = TB_METRIC_TEST_ERROR; /* selected on validation error, reported on test */
    tb_compare_result r;
    tb_error err = {0};
    CHECK_OK(tb_compare_run(&c, &r, &err), &err);
    CHECK(r.runs == 2 * 2 + 2 * 2); /* one search of 2 per side, then 2 pairs */
    double lr = tb_hparams_get(&r.best_a, "learning_rate", -1);
    CHECK(lr >= 1e-4 && lr <= 1e-2);
    tb_compare_result_free(&r);
    c.ideal = true;
    CHECK_OK(tb_compare_run(&c, &r, &err), &err);
    CHECK(r.runs == 2 * 2 * 2); /* a search of 2 per pair and side */
    CHECK(r.n == 2);
    tb_compare_result_free(&r);
    c.space_b = "{\"learning_rate\": [1, 2]}";
    CHECK(tb_compare_run(&c, &r, &err) == TB_ERR_FORMAT || err.status != TB_OK);
}

static void test_variance_study(void)
{
    tb_variance_study_config c = {0};
    c.base = short_run("adamw");
    c.runs = 2;
    c.n_sources = 1;
    c.sources[0] = TB_STREAM_INIT;
    c.seed = 3;
    /* the loss, not the error rate: two runs' error rates on 300 examples can tie (they did
     * for "all" on the evenly spread subset), which leaves the share NaN */
    c.metric = TB_METRIC_VALIDATION_LOSS;
    tb_variance_study s;
    tb_error err = {0};
    CHECK_OK(tb_variance_study_run(&c, &s, &err), &err);
    CHECK(s.n_groups == 2);
    CHECK(strcmp(s.names[0], "init") == 0 && strcmp(s.names[1], "all") == 0);
    CHECK(s.n_values[0] == 2 && s.n_values[1] == 2);
    CHECK(s.values[0][0] != s.values[0][1]); /* another init, another result */
    CHECK_NEAR(s.rows[1].std_share, 1.0, 1e-12);
    tb_variance_study_free(&s);

    c.runs = 1;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err, "at least 2 runs");
    c.runs = 2;
    c.n_sources = 2;
    c.sources[1] = TB_STREAM_INIT;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err,
                "'init' is listed twice");
    c.n_sources = 1;
    c.metric = TB_METRIC_TIME_TO_TARGET;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err,
                "cannot use time_to_target");
    c.metric = TB_METRIC_VALIDATION_ERROR;
    c.base.model.workload = "fmnist_autoencoder";
    c.on_run = count_run;
    int runs = 0;
    c.user = &runs;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err,
                "workload fmnist_autoencoder has no error rate");
    CHECK(runs == 0); /* refused before training (it was after the first run) */
    c.base.model.workload = "fmnist_mlp";
    c.metric = TB_METRIC_VALIDATION;
    c.base.model.algorithm = "adamax";
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err,
                "unknown algorithm 'adamax'");
}

/* The hparam source: refused without a search; with one, each of its runs searches anew from
 * its own hparam seed (the other seeds fixed), so its values differ, as "all"'s do. */
static void test_hparam_source(void)
{
    tb_variance_study_config c = {0};
    c.base = short_run("adamw");
    c.base.length.max_steps = 3;
    c.runs = 2;
    c.n_sources = 1;
    c.sources[0] = TB_STREAM_HPARAM;
    c.seed = 9;
    c.metric = TB_METRIC_VALIDATION_LOSS;
    tb_variance_study s;
    tb_error err = {0};
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err,
                "source hparam does not vary");
    c.space = "{\"learning_rate\": {\"min\": 1e-5, \"max\": 1e-1, \"scaling\": \"log\"}}";
    c.search_trials = 2;
    int runs = 0;
    c.on_run = count_run;
    c.user = &runs;
    if (!CHECK_OK(tb_variance_study_run(&c, &s, &err), &err)) return;
    CHECK(runs == 2 + 2 * 2 + 2 * 2); /* the base search, then a search per run of each group */
    CHECK(strcmp(s.names[0], "hparam") == 0 && s.n_values[0] == 2);
    CHECK(s.values[0][0] != s.values[0][1]); /* another search, another result */
    tb_variance_study_free(&s);
    c.space = "{\"learning_rat\": {\"min\": 1e-5, \"max\": 1e-1}}";
    runs = 0;
    CHECK_FAILS(tb_variance_study_run(&c, &s, &err), TB_ERR_INVALID, &err, "learning_rat");
    CHECK(runs == 0); /* refused before any training */
}

int main(void)
{
    test_seeds();
    test_compare_identical_sides_tie();
    test_compare_divergence_and_errors();
    test_search_and_ideal();
    test_variance_study();
    test_hparam_source();
    return tb_test_finish("test_study");
}

/* test_null_results.c: NULL arguments to the results side of the harness (store.h, score.h,
 * stats.h, tune.h, submission.h, benchmark.h) never crash: a call that returns a status fails
 * with TB_ERR_INVALID naming the argument, the others return what their header says (NULL,
 * "", 0, false, NaN), as test_null_training does for the training side. One test per header;
 * ASan runs them in scripts/test.sh. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainbench/score.h"
#include "trainbench/study_plan.h"

#define FAILS(call, needle) CHECK_FAILS((call), TB_ERR_INVALID, &err, (needle))

static char db[64];

static void test_null_store(void)
{
    tb_error err = {0};
    tb_store *s = NULL;
    tb_export_format fmt;
    FAILS(tb_store_open(NULL, &s, &err), "path is NULL");
    FAILS(tb_store_open(db, NULL, &err), "out is NULL");
    FAILS(tb_store_open_readonly(NULL, &s, &err), "path is NULL");
    FAILS(tb_store_open_readonly(db, NULL, &err), "out is NULL");
    tb_store_close(NULL);
    FAILS(tb_store_begin(NULL, &err), "store is NULL");
    FAILS(tb_store_commit(NULL, &err), "store is NULL");
    tb_store_rollback(NULL);
    FAILS(tb_export_format_parse(NULL, &fmt, &err), "name is NULL");
    FAILS(tb_export_format_parse("csv", NULL, &err), "out is NULL");
    tb_trial_record t, *rows = NULL;
    tb_eval_record e = {0}, *evals = NULL;
    tb_hparams hp = {0};
    char **names = NULL, list[64];
    int n = 0;
    static tb_study_run_record run; /* zeroed; large for the stack */
    memset(&t, 0, sizeof t);
    /* every call with a NULL store */
    FAILS(tb_store_put_benchmark(NULL, "b", "{}", &err), "store is NULL");
    FAILS(tb_store_plan_trial(NULL, &t, &err), "store is NULL");
    FAILS(tb_store_trials(NULL, NULL, &rows, &n, &err), "store is NULL");
    FAILS(tb_store_benchmarks(NULL, &names, &n, &err), "store is NULL");
    tb_store_benchmark_list(NULL, list, sizeof list);
    CHECK(strcmp(list, "none") == 0);
    FAILS(tb_store_trial_start(NULL, 1, "v", "{}", &err), "store is NULL");
    FAILS(tb_store_put_study_run(NULL, &run, "v", &err), "store is NULL");
    FAILS(tb_store_add_eval(NULL, 1, &e, &err), "store is NULL");
    FAILS(tb_store_trial_hparams(NULL, 1, &hp, &hp, &err), "store is NULL");
    FAILS(tb_store_trial_finish(NULL, 1, TB_TRIAL_DONE, NULL, false, 0, 0, 0, &err),
          "store is NULL");
    FAILS(tb_store_trial_get(NULL, 1, &t, &err), "store is NULL");
    FAILS(tb_store_evals(NULL, 1, &evals, &n, &err), "store is NULL");
    FAILS(tb_store_export(NULL, NULL, TB_EXPORT_CSV, stdout, &err), "store is NULL");
    /* and with a store, every other pointer */
    if (!CHECK_OK(tb_store_open(db, &s, &err), &err)) return;
    FAILS(tb_store_put_benchmark(s, NULL, "{}", &err), "name is NULL");
    FAILS(tb_store_put_benchmark(s, "b", NULL, &err), "spec is NULL");
    FAILS(tb_store_plan_trial(s, NULL, &err), "trial is NULL");
    FAILS(tb_store_trials(s, NULL, NULL, &n, &err), "out is NULL");
    FAILS(tb_store_trials(s, NULL, &rows, NULL, &err), "n is NULL");
    FAILS(tb_store_benchmarks(s, NULL, &n, &err), "names is NULL");
    FAILS(tb_store_benchmarks(s, &names, NULL, &err), "n is NULL");
    tb_store_benchmark_list(s, NULL, 64);
    FAILS(tb_store_trial_start(s, 1, NULL, "{}", &err), "code_version is NULL");
    FAILS(tb_store_trial_start(s, 1, "v", NULL, &err), "machine is NULL");
    FAILS(tb_store_put_study_run(s, NULL, "v", &err), "record is NULL");
    FAILS(tb_store_put_study_run(s, &run, NULL, &err), "code_version is NULL");
    FAILS(tb_store_add_eval(s, 1, NULL, &err), "eval is NULL");
    FAILS(tb_store_trial_hparams(s, 1, NULL, &hp, &err), "resolved is NULL");
    FAILS(tb_store_trial_hparams(s, 1, &hp, NULL, &err), "defaults is NULL");
    FAILS(tb_store_trial_get(s, 1, NULL, &err), "out is NULL");
    FAILS(tb_store_evals(s, 1, NULL, &n, &err), "out is NULL");
    FAILS(tb_store_evals(s, 1, &evals, NULL, &err), "n is NULL");
    FAILS(tb_store_export(s, NULL, TB_EXPORT_CSV, NULL, &err), "file is NULL");
    /* a NULL benchmark means all of them; the store still works */
    CHECK_OK(tb_store_trials(s, NULL, &rows, &n, &err), &err);
    CHECK(n == 0);
    free(rows);
    tb_store_close(s);
}

static void test_null_score(void)
{
    tb_error err = {0};
    double times[2] = {1, 2}, ratios[2], scores[1];
    bool counted[2] = {true, true};
    CHECK(isnan(tb_score_median(NULL, 3)));
    FAILS(tb_score_compute(1, 2, NULL, NULL, 4, ratios, scores, &err), "times is NULL");
    FAILS(tb_score_compute(1, 2, times, NULL, 4, NULL, scores, &err), "ratios is NULL");
    FAILS(tb_score_compute(1, 2, times, NULL, 4, ratios, NULL, &err), "scores is NULL");
    CHECK_OK(tb_score_compute(1, 2, times, NULL, 4, ratios, scores, &err), &err);
    CHECK(isnan(tb_score_profile(NULL, counted, 2, 1.0)));
    CHECK(tb_score_profile(ratios, NULL, 2, 1.0) == 1.0); /* counted NULL: all */
    CHECK(isnan(tb_score_speedup(NULL, times, times, 2)));
    CHECK(isnan(tb_score_speedup(times, NULL, times, 2)));
    CHECK(isnan(tb_score_speedup(times, times, NULL, 2)));
    tb_store *s = NULL;
    tb_score_table *t = NULL;
    tb_score_options o = {0};
    FAILS(tb_score_store(NULL, &o, &t, &err), "store is NULL");
    if (CHECK_OK(tb_store_open(db, &s, &err), &err)) {
        FAILS(tb_score_store(s, NULL, &t, &err), "options is NULL");
        FAILS(tb_score_store(s, &o, &t, &err), "options->benchmark is NULL");
        o.benchmark = "b";
        FAILS(tb_score_store(s, &o, NULL, &err), "out is NULL");
        tb_store_close(s);
    }
    tb_score_table_destroy(NULL);
    tb_score_table_write_text(NULL, stdout);
    tb_score_table_write_json(NULL, stdout);
}

static void test_null_stats(void)
{
    tb_error err = {0};
    const double x[4] = {1, 2, 3, 4}, y[4] = {2, 2, 1, 5};
    double q;
    tb_interval ci;
    tb_summary sum;
    tb_rng rng = tb_rng_make(1, TB_STREAM_HPARAM);
    tb_bootstrap_options bo = tb_bootstrap_options_default();
    tb_pab_options po = tb_pab_options_default();
    tb_pab_result pr;
    FAILS(tb_normal_quantile_checked(0.5, NULL, &err), "out is NULL");
    CHECK(isnan(tb_quantile_sorted(NULL, 4, 0.5)));
    FAILS(tb_quantile(NULL, 4, 0.5, &q, &err), "values are NULL");
    FAILS(tb_quantile(x, 4, 0.5, NULL, &err), "out is NULL");
    FAILS(tb_bootstrap_ci(NULL, 4, TB_STAT_MEAN, &bo, &rng, &ci, &err), "values are NULL");
    FAILS(tb_bootstrap_ci(x, 4, TB_STAT_MEAN, NULL, &rng, &ci, &err), "no options given");
    FAILS(tb_bootstrap_ci(x, 4, TB_STAT_MEAN, &bo, NULL, &ci, &err), "no rng given");
    FAILS(tb_bootstrap_ci(x, 4, TB_STAT_MEAN, &bo, &rng, NULL, &err), "ci is NULL");
    FAILS(tb_mean_interval(NULL, 4, 0.05, &ci, &err), "values are NULL");
    FAILS(tb_mean_interval(x, 4, 0.05, NULL, &err), "ci is NULL");
    FAILS(tb_std_interval(NULL, 4, 0.05, &ci, &err), "values are NULL");
    FAILS(tb_std_interval(x, 4, 0.05, NULL, &err), "ci is NULL");
    FAILS(tb_summarize(NULL, 4, NULL, NULL, &sum, &err), "values are NULL");
    FAILS(tb_summarize(x, 4, NULL, NULL, NULL, &err), "out is NULL");
    CHECK_OK(tb_summarize(x, 4, NULL, NULL, &sum, &err), &err); /* no bootstrap, no rng */
    FAILS(tb_pab_estimate(NULL, y, 4, TB_HIGHER_IS_BETTER, TB_TIES_HALF, &q, NULL, NULL, NULL,
                          &err), "results of A are NULL");
    FAILS(tb_pab_estimate(x, NULL, 4, TB_HIGHER_IS_BETTER, TB_TIES_HALF, &q, NULL, NULL, NULL,
                          &err), "results of B are NULL");
    FAILS(tb_pab_estimate(x, y, 4, TB_HIGHER_IS_BETTER, TB_TIES_HALF, NULL, NULL, NULL, NULL,
                          &err), "p is NULL");
    FAILS(tb_pab_paired(NULL, y, 4, &po, &pr, &err), "results of A are NULL");
    FAILS(tb_pab_paired(x, y, 4, NULL, &pr, &err), "no options given");
    FAILS(tb_pab_paired(x, y, 4, &po, NULL, &err), "out is NULL");
    FAILS(tb_pab_unpaired(NULL, 4, y, 4, &po, &rng, &pr, &err), "results of A are NULL");
    FAILS(tb_pab_unpaired(x, 4, NULL, 4, &po, &rng, &pr, &err), "results of B are NULL");
    FAILS(tb_pab_unpaired(x, 4, y, 4, &po, NULL, &pr, &err), "no rng given");
    FAILS(tb_pab_unpaired(x, 4, y, 4, &po, &rng, NULL, &err), "out is NULL");
    char buf[64];
    CHECK(tb_pab_describe(NULL, "a", "b", buf, sizeof buf) == 0 && buf[0] == 0);
    CHECK_OK(tb_pab_paired(x, y, 4, &po, &pr, &err), &err);
    CHECK(tb_pab_describe(&pr, NULL, NULL, NULL, 0) > 0); /* the length it needs */
    FAILS(tb_sign_test_sample_size(0.05, 0.05, 0.75, NULL, &err), "n is NULL");
    tb_variation_group g[2] = {{"init", x, 4}, {"all", NULL, 4}};
    tb_variance_row rows[2];
    FAILS(tb_variance_decompose(NULL, 2, NULL, 0.05, rows, &err), "groups is NULL");
    FAILS(tb_variance_decompose(g, 1, NULL, 0.05, NULL, &err), "out is NULL");
    FAILS(tb_variance_decompose(g, 2, NULL, 0.05, rows, &err), "values of source 'all' are NULL");
    CHECK_OK(tb_variance_decompose(g, 1, NULL, 0.05, rows, &err), &err);
    double gap;
    tb_gap_row gr[1];
    FAILS(tb_gap_versus_sources(NULL, 4, y, 4, rows, 1, &gap, gr, &err), "values are NULL");
    FAILS(tb_gap_versus_sources(x, 4, NULL, 4, rows, 1, &gap, gr, &err), "values are NULL");
    FAILS(tb_gap_versus_sources(x, 4, y, 4, NULL, 1, &gap, gr, &err), "rows is NULL");
    FAILS(tb_gap_versus_sources(x, 4, y, 4, rows, 1, NULL, gr, &err), "gap is NULL");
    FAILS(tb_gap_versus_sources(x, 4, y, 4, rows, 1, &gap, NULL, &err), "out is NULL");
}

static void test_null_tune(void)
{
    tb_error err = {0};
    tb_search_space *s = NULL;
    tb_hparams hp = {0};
    double u[1] = {0.5}, pts[4];
    FAILS(tb_search_space_parse(NULL, "src", &s, &err), "JSON text is NULL");
    FAILS(tb_search_space_parse("{}", "src", NULL, &err), "out is NULL");
    FAILS(tb_search_space_load(NULL, &s, &err), "path is NULL");
    FAILS(tb_search_space_load("x.json", NULL, &err), "out is NULL");
    tb_search_space_destroy(NULL);
    CHECK(tb_search_space_dims(NULL) == 0 && tb_search_space_list_size(NULL) == 0);
    tb_hparams_set(&hp, "x", 1, NULL);
    tb_search_space_map(NULL, u, &hp);
    CHECK(hp.count == 0);
    FAILS(tb_search_space_sample(NULL, 1, 1, 0, &hp, &err), "search space is NULL");
    /* source NULL names it "search space" */
    CHECK_OK(tb_search_space_parse("{\"lr\": {\"min\": 0.1, \"max\": 1}}", NULL, &s, &err), &err);
    tb_search_space_map(s, NULL, &hp);
    CHECK(hp.count == 0);
    tb_search_space_map(s, u, NULL);
    FAILS(tb_search_space_sample(s, 1, 1, 0, NULL, &err), "out is NULL");
    tb_search_space_destroy(s);
    CHECK(tb_radical_inverse(5, 2, NULL) == 0.625); /* perm NULL: the identity */
    FAILS(tb_halton(4, 1, 0, false, 0, NULL, &err), "out is NULL");
    CHECK_OK(tb_halton(4, 1, 0, false, 0, pts, &err), &err);
}

static void test_null_submission(void)
{
    tb_error err = {0};
    tb_submission_ref *r = NULL;
    FAILS(tb_submission_load(NULL, NULL, &r, &err), "spec is NULL");
    FAILS(tb_submission_load("sgd", NULL, NULL, &err), "out is NULL");
    tb_submission_unload(NULL);
    CHECK(tb_submission_get(NULL) == NULL && strcmp(tb_submission_ref_name(NULL), "") == 0 &&
          strcmp(tb_submission_ref_spec(NULL), "") == 0 && !tb_submission_ref_external(NULL) &&
          tb_submission_ref_search_space(NULL) == NULL);
    /* search_space_dir NULL: a built-in without a search space */
    if (CHECK_OK(tb_submission_load("sgd", NULL, &r, &err), &err)) {
        CHECK(tb_submission_ref_search_space(r) == NULL);
        tb_submission_unload(r);
    }
}

static void test_null_benchmark(void)
{
    tb_error err = {0};
    tb_bench_workload bw;
    tb_ruleset rs;
    CHECK(!tb_bench_workload_find(NULL, &bw) && !tb_bench_workload_find("fmnist_mlp", NULL));
    CHECK(!tb_bench_workload_at(0, NULL));
    FAILS(tb_ruleset_parse(NULL, &rs, &err), "name is NULL");
    FAILS(tb_ruleset_parse("self", NULL, &err), "out is NULL");
    tb_trial_options opts = {0};
    tb_submission_ref *r = NULL;
    CHECK_OK(tb_submission_load("sgd", NULL, &r, &err), &err);
    FAILS(tb_trial_execute(NULL, 1, r, &opts, &err), "store's path is NULL");
    FAILS(tb_trial_execute(db, 1, NULL, &opts, &err), "submission is NULL");
    FAILS(tb_trial_execute(db, 1, r, NULL, &err), "opts is NULL");
    FAILS(tb_trial_run_isolated(NULL, 1, r, &opts, &err), "store's path is NULL");
    FAILS(tb_trial_run_isolated(db, 1, NULL, &opts, &err), "submission is NULL");
    FAILS(tb_trial_run_isolated(db, 1, r, NULL, &err), "opts is NULL");
    tb_submission_unload(r);
    tb_bench_spec spec = tb_bench_spec_default();
    FAILS(tb_bench_preset(NULL, &spec, &err), "preset's name is NULL");
    FAILS(tb_bench_preset("quick", NULL, &err), "spec is NULL");
    tb_bench_summary sum;
    FAILS(tb_bench_run(NULL, &spec, NULL, NULL, &sum, &err), "store's path is NULL");
    FAILS(tb_bench_run(db, NULL, NULL, NULL, &sum, &err), "spec is NULL");
    spec.n_submissions = 1;
    FAILS(tb_bench_run(db, &spec, NULL, NULL, &sum, &err), "spec->submissions is NULL");
    const char *subs[1] = {NULL};
    spec.submissions = subs;
    FAILS(tb_bench_run(db, &spec, NULL, NULL, NULL, &err), "submission 0 is NULL");
    CHECK(tb_code_version() != NULL);
    char facts[256] = "x";
    tb_machine_facts(NULL, 2, facts, sizeof facts); /* no backend description: "" */
    CHECK(strstr(facts, "\"blas\":\"\"") != NULL);
    tb_machine_facts("cpu", 2, NULL, 64);
}

int main(void)
{
    snprintf(db, sizeof db, "/tmp/tb_null_results_%d.db", (int)getpid());
    test_null_store();
    test_null_score();
    test_null_stats();
    test_null_tune();
    test_null_submission();
    test_null_benchmark();
    tb_test_remove_store(db);
    return tb_test_finish("test_null_results");
}

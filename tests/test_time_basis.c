/* test_time_basis.c: the time bases of scoring (wall, reference, steps): a store with known
 * calibration windows and evals gives the expected reference step times, times to target,
 * ratios and scores in each basis; a workload without windows is named when the reference basis
 * is asked for; the windows of every benchmark of the store with the same reference step count;
 * a store without the windows' table reads as none; a short benchmark run
 * records its calibration windows, and a rerun that reuses every trial adds none. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void put_window_of(tb_store *store, const char *bench, int threads, const char *wl,
                          int64_t steps, double seconds)
{
    tb_error err = {0};
    tb_calibration_record w = {.threads = threads, .batch_size = 128, .steps = steps,
                               .seconds = seconds, .cpu_seconds = NAN};
    snprintf(w.benchmark, sizeof w.benchmark, "%s", bench);
    snprintf(w.workload, sizeof w.workload, "%s", wl);
    snprintf(w.algorithm, sizeof w.algorithm, "sgd");
    snprintf(w.device, sizeof w.device, "cpu");
    snprintf(w.code_version, sizeof w.code_version, "v");
    CHECK_OK(tb_store_add_calibration(store, &w, &err), &err);
}

static void put_window(tb_store *store, const char *wl, int64_t steps, double seconds)
{
    put_window_of(store, "b", 1, wl, steps, seconds);
}

/* A finished trial of benchmark "b" with evals at steps[i] / seconds[i]; it reaches its target
 * at eval `at` (-1: never). */
static void put_trial(tb_store *store, const char *sub, const char *wl, int n,
                      const int64_t *steps, const double *seconds, int at)
{
    tb_error err = {0};
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.benchmark, sizeof t.benchmark, "b");
    snprintf(t.submission, sizeof t.submission, "%s", sub);
    snprintf(t.workload, sizeof t.workload, "%s", wl);
    snprintf(t.ruleset, sizeof t.ruleset, "external");
    snprintf(t.metric, sizeof t.metric, "error_rate");
    t.budget_s = 60;
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
    for (int i = 0; i < n; i++) {
        tb_eval_record e = {.index = i, .step = steps[i], .submission_time = seconds[i],
                            .validation_loss = 1, .train_loss = 1};
        CHECK_OK(tb_store_add_eval(store, t.id, &e, &err), &err);
    }
    CHECK_OK(tb_store_trial_finish(store, t.id, TB_TRIAL_DONE, "", at >= 0,
                                   at >= 0 ? seconds[at] : INFINITY, seconds[n - 1],
                                   steps[n - 1], &err), &err);
}

static tb_score_table *scored(tb_store *store, tb_time_basis basis)
{
    tb_error err = {0};
    tb_score_options o = {"b", NULL, false, 0, basis};
    tb_score_table *t = NULL;
    CHECK_OK(tb_score_store(store, &o, &t, &err), &err);
    return t;
}

static void test_known_windows(void)
{
    char path[] = "/tmp/tb_test_time_basis_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    tb_error err = {0};
    tb_store *store;
    CHECK_OK(tb_store_open(path, &store, &err), &err);
    CHECK_OK(tb_store_put_benchmark(store, "b", "{}", &err), &err);
    tb_calibration_record *w = NULL;
    int nw = -1;
    CHECK_OK(tb_store_calibrations(store, "b", &w, &nw, &err), &err); /* no table yet */
    CHECK(nw == 0 && w == NULL);
    /* fmnist_mlp: 20, 30 and (a window another process slowed) 100 ms a step: median 30 ms;
     * fmnist_cnn: 100 and 300 ms: the mean of the middle two, 200 ms */
    put_window(store, "fmnist_mlp", 100, 2.0);
    put_window(store, "fmnist_mlp", 100, 3.0);
    put_window(store, "fmnist_mlp", 50, 5.0);
    put_window(store, "fmnist_cnn", 10, 1.0);
    put_window(store, "fmnist_cnn", 10, 3.0);
    tb_calibration_record bad = {.steps = 0, .seconds = 1};
    CHECK_FAILS(tb_store_add_calibration(store, &bad, &err), TB_ERR_INVALID, &err, "steps >= 1");
    CHECK_OK(tb_store_calibrations(store, "b", &w, &nw, &err), &err);
    CHECK(nw == 5 && w && strcmp(w[2].workload, "fmnist_mlp") == 0 && w[2].steps == 50);
    CHECK(w && w[0].started_at[0] != 0 && isnan(w[0].cpu_seconds));
    CHECK_NEAR(tb_calibration_step_s(w, nw, "fmnist_mlp"), 0.030, 1e-12);
    CHECK_NEAR(tb_calibration_step_s(w, nw, "fmnist_cnn"), 0.200, 1e-12);
    CHECK(isnan(tb_calibration_step_s(w, nw, "kjv_transformer")));
    free(w);

    /* A reaches the MLP's target at step 200 in 9 s; B at step 100, but in 12 s (a slower
     * machine): by wall time A is the fastest, by steps and reference time B is */
    const int64_t sa[2] = {100, 200}, sb[2] = {50, 100};
    const double ta[2] = {4.5, 9.0}, tb[2] = {6.0, 12.0};
    put_trial(store, "A", "fmnist_mlp", 2, sa, ta, 1);
    put_trial(store, "B", "fmnist_mlp", 2, sb, tb, 1);
    /* the CNN: A at step 10 (4 s), B misses after 40 steps */
    const int64_t ca[1] = {10}, cb[2] = {20, 40};
    const double tca[1] = {4.0}, tcb[2] = {5.0, 10.0};
    put_trial(store, "A", "fmnist_cnn", 1, ca, tca, 0);
    put_trial(store, "B", "fmnist_cnn", 2, cb, tcb, -1);

    tb_score_table *t = scored(store, TB_TIME_WALL);
    CHECK(t && t->n_subs == 2 && t->n_wl == 2 && strcmp(t->wls[0], "fmnist_mlp") == 0);
    if (t) {
        CHECK_NEAR(t->time[0], 9.0, 1e-12);
        CHECK_NEAR(t->time[2], 12.0, 1e-12);
        CHECK_NEAR(t->ratio[2], 12.0 / 9.0, 1e-12);
        CHECK_NEAR(t->score[0], 1.0, 1e-12);
        CHECK_NEAR(t->score[1], (4 - 12.0 / 9.0) / 6.0, 1e-12);
        CHECK(isnan(t->reference_step_s[0]) && t->basis == TB_TIME_WALL);
    }
    tb_score_table_destroy(t);
    t = scored(store, TB_TIME_STEPS);
    if (t) {
        CHECK_NEAR(t->time[0], 200, 1e-12);
        CHECK_NEAR(t->time[1], 10, 1e-12);
        CHECK_NEAR(t->time[2], 100, 1e-12);
        CHECK(isinf(t->time[3]));
        CHECK_NEAR(t->ratio[0], 2.0, 1e-12);
        CHECK_NEAR(t->score[0], 0.5 * (4 - 2.0) / 3.0 + 0.5, 1e-12);
        CHECK_NEAR(t->score[1], 0.5, 1e-12);
        CHECK_NEAR(t->budgets[1], 40, 1e-12); /* a miss: the most steps of the CNN's trials */
        /* B over A: MLP 200/100, CNN 10/(40 + 1) */
        CHECK_NEAR(t->speedup[1], sqrt(2.0 * 10.0 / 41.0), 1e-12);
    }
    tb_score_table_destroy(t);
    t = scored(store, TB_TIME_REFERENCE);
    if (t) {
        CHECK_NEAR(t->reference_step_s[0], 0.030, 1e-12);
        CHECK_NEAR(t->reference_step_s[1], 0.200, 1e-12);
        CHECK_NEAR(t->time[0], 6.0, 1e-9);  /* 200 x 30 ms */
        CHECK_NEAR(t->time[2], 3.0, 1e-9);  /* 100 x 30 ms */
        CHECK_NEAR(t->time[1], 2.0, 1e-9);  /* 10 x 200 ms */
        CHECK_NEAR(t->ratio[0], 2.0, 1e-9);
        CHECK_NEAR(t->score[0], 0.5 * (4 - 2.0) / 3.0 + 0.5, 1e-9);
        CHECK_NEAR(t->score[1], 0.5, 1e-9);
        CHECK_NEAR(t->speedup[1], sqrt(2.0 * 2.0 / 61.0), 1e-9); /* a miss: budget + 1 s */
    }
    tb_score_table_destroy(t);
    /* the JSON and the text say the basis */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    t = scored(store, TB_TIME_REFERENCE);
    if (t && f) {
        tb_score_table_write_json(t, f);
        tb_score_table_write_text(t, f);
    }
    if (f) fclose(f);
    CHECK(buf && strstr(buf, "\"time_basis\":\"reference\"") &&
          strstr(buf, "\"reference_step_s\":{\"fmnist_mlp\":0.03") &&
          strstr(buf, "fmnist_mlp 30.00 ms") && strstr(buf, "time to target in reference time"));
    free(buf);
    tb_score_table_destroy(t);

    /* another benchmark's windows of the same reference step count too (one store prices its
     * benchmarks alike): MLP {20, 30, 100, 40, 50} ms, median 40; a window at other threads
     * does not */
    put_window_of(store, "c", 1, "fmnist_mlp", 10, 0.4);
    put_window_of(store, "c", 1, "fmnist_mlp", 10, 0.5);
    put_window_of(store, "c", 2, "fmnist_mlp", 10, 0.01);
    put_window_of(store, "c", 2, "fmnist_mlp", 10, 0.01);
    t = scored(store, TB_TIME_REFERENCE);
    if (t) {
        CHECK_NEAR(t->reference_step_s[0], 0.040, 1e-12);
        CHECK_NEAR(t->time[0], 8.0, 1e-9); /* 200 x 40 ms */
        CHECK_NEAR(t->reference_step_s[1], 0.200, 1e-12);
    }
    tb_score_table_destroy(t);
    CHECK_OK(tb_store_calibrations(store, NULL, &w, &nw, &err), &err);
    CHECK(nw == 9);
    CHECK_NEAR(tb_calibration_reference_step_s(w, nw, "c", "fmnist_mlp"), 0.040, 1e-12);
    CHECK(isnan(tb_calibration_reference_step_s(w, nw, "c", "fmnist_cnn")));
    free(w);

    /* a workload without a window: the reference basis names it; wall and steps still score */
    const int64_t s1[1] = {5};
    const double t1[1] = {1.0};
    put_trial(store, "A", "kjv_transformer", 1, s1, t1, 0);
    tb_score_options o = {"b", NULL, false, 0, TB_TIME_REFERENCE};
    CHECK_FAILS(tb_score_store(store, &o, &t, &err), TB_ERR_MISSING, &err,
                "no calibration window of workload kjv_transformer");
    CHECK(strstr(err.message, "--time wall") != NULL);
    o.basis = (tb_time_basis)7;
    CHECK_FAILS(tb_score_store(store, &o, &t, &err), TB_ERR_INVALID, &err, "unknown time basis");
    t = scored(store, TB_TIME_STEPS);
    CHECK(t && t->n_wl == 3);
    tb_score_table_destroy(t);
    tb_time_basis b;
    CHECK_FAILS(tb_time_basis_parse("cpu", &b, &err), TB_ERR_INVALID, &err,
                "unknown time basis 'cpu' (wall, reference or steps)");
    CHECK_OK(tb_time_basis_parse("steps", &b, &err), &err);
    CHECK(b == TB_TIME_STEPS && strcmp(tb_time_basis_name(TB_TIME_REFERENCE), "reference") == 0);
    tb_store_close(store);
    tb_test_remove_store(path);
}

/* A short benchmark of two trials, a window before each (calibrate_every 1), then the same
 * benchmark again: every trial reused, and no window added. */
static void test_bench_windows(void)
{
    char db[256];
    snprintf(db, sizeof db, "/tmp/tb_test_time_basis_%d.db", (int)getpid());
    tb_test_remove_store(db);
    const char *subs[2] = {"sgd", "adamw"};
    tb_bench_spec s = tb_test_bench_spec(subs, 2, 0.3, 200);
    s.calibration_s = 0.2;
    s.calibrate_every = 1;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 2);
    tb_store *store;
    tb_calibration_record *w = NULL;
    int n = 0;
    CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
    CHECK_OK(tb_store_calibrations(store, "t", &w, &n, &err), &err);
    tb_store_close(store);
    CHECK(n == 2);
    for (int i = 0; w && i < n; i++) {
        CHECK(strcmp(w[i].workload, "fmnist_mlp") == 0 && strcmp(w[i].algorithm, "sgd") == 0);
        CHECK(w[i].trials_before == i && w[i].steps >= 3 && w[i].seconds >= 0.2);
        CHECK(w[i].batch_size == 128 && w[i].threads == 2 && strcmp(w[i].device, "cpu") == 0);
        CHECK(w[i].started_unix > 1.7e9 && w[i].code_version[0] != 0);
    }
    free(w);
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 2 && sum.ran == 0);
    CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
    CHECK_OK(tb_store_calibrations(store, NULL, &w, &n, &err), &err);
    tb_store_close(store);
    CHECK(n == 2);
    free(w);
    s.calibration_s = 5000;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "calibration windows");
    tb_test_remove_store(db);
}

int main(void)
{
    test_known_windows();
    test_bench_windows();
    return tb_test_finish("test_time_basis");
}

/* test_bench_gp.c: the gp sampler of `trainbench bench`: the objective of a finished trial
 * (one scale for every workload, failed trials kept at the worst), a study's next point chosen
 * from the trials finished before it (deterministic, inside the search space, the Halton point
 * when too few finished), a HyperBO prior pre-trained on other workloads' trials and kept in
 * the store, a real benchmark run and resumed with --sampler gp, and the command's checks. */
#include "testutil.h"

#include "bench/bench_impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/tb_test_bench_gp_XXXXXX";

/* A smooth synthetic result of a point of sgd's space: missed targets, best at
 * u = (0.7, *, *, 0.4) in the space's unit coordinates. */
static double synthetic_error(const tb_search_space *space, const tb_hparams *hp)
{
    double u[TB_HPARAMS_MAX];
    if (!tb_search_space_unmap(space, hp, u)) return NAN;
    return 0.2 * exp(2 * (pow(u[0] - 0.7, 2) + 0.3 * pow(u[3] - 0.4, 2)) + 0.01);
}

static void test_objective(void)
{
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.metric, sizeof t.metric, "error_rate");
    t.status = TB_TRIAL_DONE;
    t.target = 0.2;
    t.budget_s = 10;
    t.reached = true;
    t.time_to_target = 2.5;
    CHECK_NEAR(tb_trial_objective(&t, NULL, 0), log(0.25), 1e-12);
    t.reached = false;
    t.time_to_target = INFINITY;
    tb_eval_record e[3] = {{.validation_error = 0.5}, {.validation_error = 0.3},
                           {.validation_error = NAN}};
    CHECK_NEAR(tb_trial_objective(&t, e, 3), log(1.5), 1e-12);
    snprintf(t.metric, sizeof t.metric, "bits_per_char");
    t.target = 1.0;
    e[1].validation_loss = 1.5 * log(2.0);
    e[0].validation_loss = 4.0;
    e[2].validation_loss = NAN;
    CHECK_NEAR(tb_trial_objective(&t, e, 3), log(1.5), 1e-12);
    t.status = TB_TRIAL_FAILED;
    CHECK(isnan(tb_trial_objective(&t, e, 3)));
}

/* A new store <dir>/<tag>.db and sgd's search space; false (both closed) if either fails. */
static bool fixture(const char *tag, tb_store **store, tb_search_space **space)
{
    char db[300];
    snprintf(db, sizeof db, "%s/%s.db", dir, tag);
    tb_error err = {0};
    *store = NULL;
    *space = NULL;
    if (CHECK_OK(tb_store_open(db, store, &err), &err) &&
        CHECK_OK(tb_search_space_load(TB_SOURCE_DIR "/search_spaces/sgd.json", space, &err),
                 &err))
        return true;
    tb_store_close(*store);
    return false;
}

static void test_next_point(void)
{
    tb_error err = {0};
    tb_store *store;
    tb_search_space *space;
    if (!fixture("point", &store, &space)) return;
    static const char *subs[1] = {"sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 1, 100);
    s.name = "g";
    s.studies = 2;
    s.trials = 6;
    s.seed = 11;
    s.sampler = TB_SAMPLER_GP;
    tb_hparams pts[12];
    CHECK_OK(tb_search_space_sample(space, 2, 6, tb_bench_points_seed(&s), pts, &err), &err);
    CHECK(tb_bench_gp_initial(&s) == 3);
    /* study 0: three finished trials, one of them failed; study 1: its first three failed */
    int64_t ids[2][6];
    for (int st = 0; st < 2; st++)
        for (int k = 0; k < 6; k++) {
            tb_trial_status want = k >= 3 ? TB_TRIAL_PLANNED
                                   : (st == 1 || k == 1) ? TB_TRIAL_FAILED
                                                         : TB_TRIAL_DONE;
            ids[st][k] = tb_test_add_trial(store, "g", "sgd", "fmnist_mlp", st, k,
                                           k < 3 ? &pts[st * 6 + k] : NULL, want,
                                           synthetic_error(space, &pts[st * 6 + k]), -1);
        }
    /* the failed trial is kept at the worst objective of the study, flagged */
    tb_trial_record tr[3];
    for (int k = 0; k < 3; k++) tb_store_trial_get(store, ids[0][k], &tr[k], &err);
    double y[3];
    bool imputed[3];
    CHECK_OK(tb_trial_objectives(store, tr, 3, y, imputed, &err), &err);
    CHECK(!imputed[0] && imputed[1] && !imputed[2] && y[1] == fmax(y[0], y[2]));

    tb_trial_record t;
    tb_store_trial_get(store, ids[0][3], &t, &err);
    CHECK(t.hparams.count == 0);
    if (!CHECK_OK(tb_bench_gp_point(store, &s, space, &t, &err), &err)) goto done;
    CHECK(t.hparams.count == 4);
    tb_trial_record back;
    tb_store_trial_get(store, ids[0][3], &back, &err);
    CHECK(memcmp(&back.hparams, &t.hparams, sizeof t.hparams) == 0);
    double u[TB_HPARAMS_MAX];
    CHECK(tb_search_space_unmap(space, &t.hparams, u));
    CHECK(u[0] >= 0 && u[0] <= 1 && u[3] >= 0 && u[3] <= 1);
    /* the same results give the same point */
    tb_hparams none = {0}, first = t.hparams;
    tb_store_trial_set_hparams(store, ids[0][3], &none, &err);
    tb_store_trial_get(store, ids[0][3], &t, &err);
    CHECK_OK(tb_bench_gp_point(store, &s, space, &t, &err), &err);
    CHECK(memcmp(&first, &t.hparams, sizeof first) == 0);
    /* BO's point is not the Halton point of that trial */
    CHECK(fabs(t.hparams.values[0] - pts[3].values[0]) > 1e-9 ||
          fabs(t.hparams.values[3] - pts[3].values[3]) > 1e-9);
    /* study 1 has nothing finished to model: the Halton point */
    tb_store_trial_get(store, ids[1][3], &t, &err);
    CHECK_OK(tb_bench_gp_point(store, &s, space, &t, &err), &err);
    CHECK(memcmp(&t.hparams, &pts[9], sizeof t.hparams) == 0);
done:
    tb_search_space_destroy(space);
    tb_store_close(store);
}

static void test_prior(void)
{
    tb_error err = {0};
    tb_store *store;
    tb_search_space *space;
    if (!fixture("prior", &store, &space)) return;
    /* an earlier benchmark of sgd on two other workloads */
    tb_hparams pts[16];
    CHECK_OK(tb_search_space_sample(space, 2, 8, 5, pts, &err), &err);
    const char *others[2] = {"fmnist_cnn", "fmnist_autoencoder"};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 8; k++)
            tb_test_add_trial(store, "old", "sgd", others[w], 0, k, &pts[w * 8 + k],
                              TB_TRIAL_DONE,
                              synthetic_error(space, &pts[w * 8 + k]) * (1 + 0.1 * w), -1);
    static const char *subs[1] = {"sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 1, 100);
    s.name = "new";
    s.trials = 4;
    s.sampler = TB_SAMPLER_GP;
    s.gp_prior = true;
    CHECK(tb_bench_gp_initial(&s) == 1);
    CHECK_OK(tb_bench_gp_prior(store, &s, "sgd", space, "fmnist_mlp", &err), &err);
    char *json = NULL, *again = NULL;
    CHECK_OK(tb_store_get_prior(store, "new", "sgd", "fmnist_mlp", &json, &err), &err);
    CHECK(json && strstr(json, "\"learning_rate\":") && strstr(json, "\"weight_decay\":") &&
          !strstr(json, "\"momentum\":") && strstr(json, "old/fmnist_cnn (8)") &&
          strstr(json, "old/fmnist_autoencoder (8)"));
    /* planned once: a second call (a resumed run) keeps it */
    CHECK_OK(tb_bench_gp_prior(store, &s, "sgd", space, "fmnist_mlp", &err), &err);
    CHECK_OK(tb_store_get_prior(store, "new", "sgd", "fmnist_mlp", &again, &err), &err);
    CHECK(json && again && strcmp(json, again) == 0);
    CHECK_FAILS(tb_store_put_prior(store, "new", "sgd", "fmnist_mlp", "{}", &err),
                TB_ERR_INVALID, &err, "already holds a prior");
    free(json);
    free(again);
    /* named workloads without trials: nothing to pre-train on */
    const char *none[1] = {"kjv_transformer"};
    s.prior_workloads = none;
    s.n_prior_workloads = 1;
    CHECK_FAILS(tb_bench_gp_prior(store, &s, "sgd", space, "fmnist_cnn", &err), TB_ERR_MISSING,
                &err, "no finished trials of sgd on the workloads named");
    s.prior_workloads = NULL;
    s.n_prior_workloads = 0;
    /* with the prior, one finished trial is enough for a BO point */
    tb_hparams first[4];
    CHECK_OK(tb_search_space_sample(space, 1, 4, tb_bench_points_seed(&s), first, &err), &err);
    tb_test_add_trial(store, "new", "sgd", "fmnist_mlp", 0, 0, &first[0], TB_TRIAL_DONE,
                      synthetic_error(space, &first[0]), -1);
    tb_trial_record t;
    int64_t id =
        tb_test_add_trial(store, "new", "sgd", "fmnist_mlp", 0, 1, NULL, TB_TRIAL_PLANNED, 0, -1);
    tb_store_trial_get(store, id, &t, &err);
    CHECK_OK(tb_bench_gp_point(store, &s, space, &t, &err), &err);
    CHECK(t.hparams.count == 4 && memcmp(&t.hparams, &first[1], sizeof t.hparams) != 0);
    tb_search_space_destroy(space);
    tb_store_close(store);
}

/* A real benchmark with --sampler gp: 3 trials, the third chosen by BO; resumed: reused. */
static void test_bench_run(void)
{
    char db[300];
    snprintf(db, sizeof db, "%s/run.db", dir);
    static const char *subs[1] = {"sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 0.2, 100);
    s.trials = 3;
    s.sampler = TB_SAMPLER_GP;
    s.gp_initial = 2;
    tb_bench_summary sum;
    tb_error err = {0};
    if (!CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err)) return;
    CHECK(sum.planned == 3 && sum.ran == 3);
    tb_store *store = NULL;
    tb_trial_record *t = NULL;
    int n = 0;
    tb_search_space *space = NULL;
    tb_hparams pts[3];
    CHECK_OK(tb_search_space_load(TB_SOURCE_DIR "/search_spaces/sgd.json", &space, &err), &err);
    CHECK_OK(tb_search_space_sample(space, 1, 3, tb_bench_points_seed(&s), pts, &err), &err);
    tb_search_space_destroy(space);
    CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
    if (store) CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    tb_store_close(store);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(memcmp(&t[0].hparams, &pts[0], sizeof pts[0]) == 0);
        CHECK(memcmp(&t[1].hparams, &pts[1], sizeof pts[1]) == 0);
        CHECK(t[2].hparams.count == 4 && memcmp(&t[2].hparams, &pts[2], sizeof pts[2]) != 0);
    }
    free(t);
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 3 && sum.ran == 0);
    /* the sampler is part of the spec */
    s.sampler = TB_SAMPLER_HALTON;
    s.gp_initial = 0;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: sampler, gp_initial, gp_prior");
    /* and the gp sampler's settings are refused without it, as is self-tuning with it */
    s.gp_prior = true;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "settings of the gp sampler");
    s.gp_prior = false;
    s.sampler = TB_SAMPLER_GP;
    s.ruleset = TB_RULESET_SELF;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "self-tuning ruleset has none");
}

static void test_cli(void)
{
    static char out[16384];
    CHECK(tb_test_run_cli("bench --help", out, sizeof out) == 0 &&
          tb_test_output_has(out, "--sampler NAME") &&
          tb_test_output_has(out, "--prior-from-store"));
    CHECK(tb_test_run_cli("bench --sampler bo", out, sizeof out) == 2 &&
          tb_test_output_has(out, "unknown sampler 'bo' (halton or gp)"));
    CHECK(tb_test_run_cli("bench --gp-initial 2", out, sizeof out) == 2 &&
          tb_test_output_has(out, "--gp-initial is a setting of the gp sampler"));
    CHECK(tb_test_run_cli("bench --prior-workload fmnist_cnn", out, sizeof out) == 2 &&
          tb_test_output_has(out, "add --sampler gp"));
    CHECK(tb_test_run_cli("bench --sampler gp --ruleset self", out, sizeof out) == 2 &&
          tb_test_output_has(out, "not with --ruleset self"));
    char db[300], args[400];
    snprintf(db, sizeof db, "%s/cli.db", dir);
    snprintf(args, sizeof args, "bench --db %s --sampler gp --prior-workload mnist", db);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2 &&
          tb_test_output_has(out, "prior workload 'mnist' is not a workload"));
    CHECK(access(db, F_OK) != 0); /* refused before the store was created */
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    test_objective();
    test_next_point();
    test_prior();
    test_cli();
    test_bench_run();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return tb_test_finish("test_bench_gp");
}

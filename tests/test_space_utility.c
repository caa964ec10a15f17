/* test_space_utility.c: search spaces scored against a store's trials (tb_space_utility and
 * `trainbench utility`), on synthetic trials of sgd whose error is smallest at the log-middle
 * of learning rate 0.1 and weight decay 6.3e-6: a narrow space around that point wins at small
 * budgets, one away from it loses, the best value never grows with the budget; failed trials
 * are counted at the worst; several submissions, mismatched spaces, too few trials and bad
 * options are refused with messages that name the cause. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/tb_test_space_utility_XXXXXX";
static char out[16384];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

#define FIXED " \"momentum\": {\"feasible_points\": [0.9]},"
static const char wide[] =
    "{\"learning_rate\": {\"min\": 0.02, \"max\": 0.2, \"scaling\": \"log\"}," FIXED
    " \"weight_decay\": {\"min\": 1e-6, \"max\": 1e-4, \"scaling\": \"log\"}}";
static const char narrow[] =
    "{\"learning_rate\": {\"min\": 0.08, \"max\": 0.125, \"scaling\": \"log\"}," FIXED
    " \"weight_decay\": {\"min\": 4e-6, \"max\": 1e-5, \"scaling\": \"log\"}}";
static const char away[] =
    "{\"learning_rate\": {\"min\": 0.02, \"max\": 0.025, \"scaling\": \"log\"}," FIXED
    " \"weight_decay\": {\"min\": 1e-6, \"max\": 1e-4, \"scaling\": \"log\"}}";

/* Error of a point: 0.2 at the best (a miss just at the target), growing away from it. */
static double error_at(const tb_hparams *hp)
{
    double lr = 0, wd = 0;
    for (int i = 0; i < hp->count; i++) {
        if (strcmp(hp->names[i], "learning_rate") == 0) lr = hp->values[i];
        if (strcmp(hp->names[i], "weight_decay") == 0) wd = hp->values[i];
    }
    double a = log(lr / 0.1) / log(10.0), b = log(wd / 6.3e-6) / log(100.0);
    return 0.2 * exp(3 * (a * a + 0.3 * b * b));
}

static void make_store(const char *db)
{
    tb_error err = {0};
    tb_store *store = NULL;
    tb_search_space *space = NULL;
    CHECK_OK(tb_search_space_parse(wide, "wide", &space, &err), &err);
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    if (!store || !space) return;
    tb_hparams pts[30];
    CHECK_OK(tb_search_space_sample(space, 1, 30, 4, pts, &err), &err);
    /* trials 0 and 21, at the smallest learning rates, diverged (as if; the worst points
     * anyway: a failure next to the best point would rightly make the model doubt it) */
    for (int k = 0; k < 30; k++)
        tb_test_add_trial(store, "old", "sgd", "fmnist_mlp", 0, k, &pts[k],
                          k == 0 || k == 21 ? TB_TRIAL_FAILED : TB_TRIAL_DONE, error_at(&pts[k]),
                          -1);
    for (int k = 0; k < 3; k++) /* another submission on the same workload */
        tb_test_add_trial(store, "old", "adamw", "fmnist_mlp", 0, k, &pts[k], TB_TRIAL_DONE, 0.3,
                          -1);
    tb_store_close(store);
    tb_search_space_destroy(space);
}

static void test_library(const char *db)
{
    tb_error err = {0};
    tb_search_space *sp[3] = {0}, *bad = NULL;
    CHECK_OK(tb_search_space_parse(wide, "wide", &sp[0], &err), &err);
    CHECK_OK(tb_search_space_parse(narrow, "narrow", &sp[1], &err), &err);
    CHECK_OK(tb_search_space_parse(away, "away", &sp[2], &err), &err);
    tb_store *store = NULL;
    CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
    if (!store || !sp[0] || !sp[1] || !sp[2]) return;
    const int budgets[4] = {1, 2, 4, 16};
    tb_utility u[3 * 4];
    tb_space_utility_info info;
    tb_space_utility_spec spec = {.workload = "fmnist_mlp",
                                  .spaces = (const tb_search_space *const *)sp, .n_spaces = 3,
                                  .budgets = budgets, .n_budgets = 4, .draws = 300, .seed = 1};
    CHECK_FAILS(tb_space_utility(store, &spec, u, &info, &err), TB_ERR_INVALID, &err,
                "several submissions on fmnist_mlp (sgd, adamw)");
    spec.submission = "sgd";
    if (!CHECK_OK(tb_space_utility(store, &spec, u, &info, &err), &err)) goto done;
    CHECK(strcmp(info.submission, "sgd") == 0 && info.trials == 30 && info.imputed == 2 &&
          info.skipped == 0);
    for (int s = 0; s < 3; s++)
        for (int i = 1; i < 4; i++)
            CHECK(u[s * 4 + i].expected_best <= u[s * 4 + i - 1].expected_best);
    printf("  b=1: wide %.3f, narrow %.3f, away %.3f; b=16: %.3f, %.3f, %.3f\n",
           u[0].expected_best, u[4].expected_best, u[8].expected_best, u[3].expected_best,
           u[7].expected_best, u[11].expected_best);
    for (int i = 0; i < 3; i++) /* narrow around the best: better at small budgets */
        CHECK(u[4 + i].expected_best < u[i].expected_best);
    CHECK(u[8 + 3].expected_best > u[3].expected_best); /* away from it: worse with 16 */
    /* spaces must share their dimensions */
    CHECK_OK(tb_search_space_parse("{\"learning_rate\": {\"min\": 0.02, \"max\": 0.2}}", "bad",
                                   &bad, &err), &err);
    const tb_search_space *two[2] = {sp[0], bad};
    spec.spaces = two;
    spec.n_spaces = 2;
    CHECK_FAILS(tb_space_utility(store, &spec, u, &info, &err), TB_ERR_INVALID, &err,
                "search space 2 has 1 dimensions, search space 1 has 3");
    spec.spaces = (const tb_search_space *const *)sp;
    spec.workload = "fmnist_cnn";
    CHECK_FAILS(tb_space_utility(store, &spec, u, &info, &err), TB_ERR_MISSING, &err,
                "0 finished trials of sgd on fmnist_cnn");
done:
    tb_search_space_destroy(bad);
    for (int s = 0; s < 3; s++) tb_search_space_destroy(sp[s]);
    tb_store_close(store);
}

static void test_cli(const char *db)
{
    char w[300], n[300], args[1200];
    snprintf(w, sizeof w, "%s/wide.json", dir);
    snprintf(n, sizeof n, "%s/narrow.json", dir);
    write_text(w, wide);
    write_text(n, narrow);
    CHECK(tb_test_run_cli("utility --help", out, sizeof out) == 0 &&
          tb_test_output_has(out, "--budget LIST"));
    CHECK(tb_test_run_cli("--help", out, sizeof out) == 0 && tb_test_output_has(out, "utility"));
    snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp -s sgd --space %s --space %s "
             "--budget 1,4 --draws 200", db, w, n);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 0 &&
          tb_test_output_has(out, "a GP fitted to 30 finished trials (2 failed") &&
          tb_test_output_has(out, "P(target)"));
    char want[400];
    snprintf(want, sizeof want, "b=1 %s", n);
    CHECK(tb_test_output_has(out, want));
    snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp -s sgd --space %s --json "
             "--draws 50", db, w);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 0 &&
          tb_test_output_has(out, "\"budgets\":[{\"budget\":1,\"expected_best\":"));
    snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp --space %s", db, w);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2 &&
          tb_test_output_has(out, "several submissions"));
    snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp -s sgd", db);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2 &&
          tb_test_output_has(out, "at least one --space"));
    snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp -s sgd --space %s --budget 4,0",
             db, w);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2 &&
          tb_test_output_has(out, "--budget: 0 is outside [1, 1024]"));
    snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp -s sgd --space %s/none.json", db,
             dir);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2 &&
          tb_test_output_has(out, "cannot open search space"));
    /* a space sgd cannot take, checked as bench checks it: a value out of range, a name sgd
     * has not (not scored, not "0 finished trials"): a bad value, exit 2, naming the file */
    static const char *const bad[2] = {
        "{\"learning_rate\": {\"min\": 0.02, \"max\": 0.2, \"scaling\": \"log\"},"
        " \"momentum\": {\"min\": 0.5, \"max\": 1.5}}",
        "{\"learning_rat\": {\"min\": 0.02, \"max\": 0.2, \"scaling\": \"log\"}," FIXED
        " \"weight_decay\": {\"min\": 1e-6, \"max\": 1e-4, \"scaling\": \"log\"}}"};
    static const char *const why[2] = {"dimension 'momentum'", "is not a hyperparameter of sgd"};
    for (int k = 0; k < 2; k++) {
        char b[300];
        snprintf(b, sizeof b, "%s/bad%d.json", dir, k);
        write_text(b, bad[k]);
        snprintf(args, sizeof args, "utility --db %s -w fmnist_mlp -s sgd --space %s", db, b);
        int rc = tb_test_run_cli(args, out, sizeof out);
        if (!CHECK(rc == 2 && tb_test_output_has(out, why[k]) && tb_test_output_has(out, b)))
            fprintf(stderr, "bad space %d: exit %d: %s\n", k, rc, out);
    }
    snprintf(args, sizeof args, "utility --db %s -w fmnist_cnn -s sgd --space %s", db, w);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 3 &&
          tb_test_output_has(out, "0 finished trials of sgd on fmnist_cnn"));
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    char db[300];
    snprintf(db, sizeof db, "%s/r.db", dir);
    make_store(db);
    test_library(db);
    test_cli(db);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return tb_test_finish("test_space_utility");
}

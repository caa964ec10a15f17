/* test_export.c: `trainbench export --format algoperf DIR` on a store made by hand: AlgoPerf's
 * tree (submission, study_<s>, <workload>_pytorch, trial_<t+1>), its file names, the header
 * row its loader reads and a trial's rows; a trial without evals; a DIR that is not empty
 * refused unless --replace; a store of several benchmarks refused; nothing left behind. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[65536];
static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }
static bool has(const char *needle) { return tb_test_output_has(out, needle); }
static bool exists(const char *path) { return access(path, F_OK) == 0; }

static char *slurp(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    return f ? buf : NULL;
}

/* How many entries dir has (-1: not a directory). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A finished trial with two evals (error 0.5 at 1 s, 0.1 at 2 s). */
static void add_trial(tb_store *s, const char *bench, const char *sub, int study, int trial)
{
    tb_error err = {0};
    tb_hparams hp = {.count = 1, .names = {"learning_rate"}, .values = {0.01 * (trial + 1)}};
    int64_t id = tb_test_add_trial(s, bench, sub, "fmnist_mlp", study, trial, &hp,
                                   TB_TRIAL_PLANNED, 0, 0);
    CHECK_OK(tb_store_trial_start(s, id, "test", "{}", &err), &err);
    for (int i = 0; i < 2; i++) {
        tb_eval_record e = {.index = i, .step = 10 * (i + 1), .submission_time = i + 1.0,
                            .eval_time = 0.25 * (i + 1), .total_duration = 1.5 * (i + 1),
                            .validation_error = i ? 0.1 : 0.5, .validation_accuracy = i ? 0.9 : 0.5,
                            .validation_loss = 1.0 - 0.5 * i, .validation_examples = 500,
                            .train_loss = 1.0, .train_accuracy = NAN, .test_loss = 1.0,
                            .test_examples = 100};
        CHECK_OK(tb_store_add_eval(s, id, &e, &err), &err);
    }
    CHECK_OK(tb_store_trial_finish(s, id, TB_TRIAL_DONE, "", true, 2.0, 2.0, 20, &err), &err);
}

static void make_store(const char *db)
{
    tb_store *s;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open(db, &s, &err), &err)) return;
    CHECK_OK(tb_store_put_benchmark(s, "b", "{}", &err), &err);
    for (int k = 0; k < 4; k++) add_trial(s, "b", "sgd", k / 2, k % 2);
    add_trial(s, "b", "lib/my sub.so", 0, 0);
    /* planned, never run: no evals */
    tb_test_add_trial(s, "b", "adamw", "fmnist_mlp", 0, 0, NULL, TB_TRIAL_PLANNED, 0, 0);
    tb_store_close(s);
}

static void tree(const char *dir)
{
    char path[1024];
    /* one directory per submission ('/' and ' ' of a library path made '_'), nothing else */
    CHECK(entries(dir) == 3);
    snprintf(path, sizeof path, "%s/lib_my_sub.so/study_0/fmnist_mlp_pytorch/trial_1", dir);
    CHECK(entries(path) == 2);
    snprintf(path, sizeof path, "%s/sgd", dir);
    CHECK(entries(path) == 2); /* study_0, study_1 */
    snprintf(path, sizeof path, "%s/sgd/study_1/fmnist_mlp_pytorch", dir);
    CHECK(entries(path) == 2); /* trial_1, trial_2: numbered from 1 */
    snprintf(path, sizeof path, "%s/sgd/study_1/fmnist_mlp_pytorch/trial_0", dir);
    CHECK(!exists(path));
    /* the header AlgoPerf's loader reads, then one row per eval, in order */
    snprintf(path, sizeof path, "%s/sgd/study_1/fmnist_mlp_pytorch/trial_2/eval_measurements.csv",
             dir);
    const char *csv = slurp(path);
    if (!CHECK(csv != NULL)) return;
    const char *header = "global_step,preemption_count,score,total_duration,"
                         "accumulated_submission_time,accumulated_eval_time,"
                         "accumulated_logging_time,train/accuracy,train/loss,validation/accuracy,"
                         "validation/loss,validation/error_rate,validation/num_examples,";
    CHECK(strncmp(csv, header, strlen(header)) == 0);
    CHECK(tb_test_count(csv, "\n") == 3);
    const char *row2 = strchr(strchr(csv, '\n') + 1, '\n') + 1;
    /* step 20, no preemption, score = submission time 2, duration 3, submission 2, eval 0.5,
     * logging 0, train accuracy unknown (empty), train loss 1, validation 0.9 / 0.5 / 0.1 */
    const char *want = "20,0,2,3,2,0.5,0,,1,0.9,0.5,0.1,500,";
    if (!CHECK(strncmp(row2, want, strlen(want)) == 0)) fprintf(stderr, "row: %s", row2);
    snprintf(path, sizeof path, "%s/sgd/study_1/fmnist_mlp_pytorch/trial_2/hparams.json", dir);
    const char *hp = slurp(path);
    CHECK(hp && strstr(hp, "\"learning_rate\"") && strstr(hp, "0.02"));
    /* a trial without evals: the header alone (AlgoPerf counts it; it reaches nothing) */
    snprintf(path, sizeof path, "%s/adamw/study_0/fmnist_mlp_pytorch/trial_1/eval_measurements.csv",
             dir);
    csv = slurp(path);
    CHECK(csv && tb_test_count(csv, "\n") == 1 && strncmp(csv, "global_step,", 12) == 0);
}

int main(void)
{
    char dir[] = "/tmp/tb_export_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return tb_test_finish("test_export");
    char db[300], exp[300], args[2048], path[600];
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(exp, sizeof exp, "%s/algoperf", dir);
    make_store(db);
    snprintf(args, sizeof args, "export --db %s --format algoperf %s", db, exp);
    if (!CHECK(run(args) == 0)) fprintf(stderr, "%s\n", out);
    tree(exp);
    /* a directory that is not empty is refused, the old tree kept; --replace replaces it */
    snprintf(path, sizeof path, "%s/sgd/keep", exp);
    mkdir(path, 0755);
    CHECK(run(args) == 2 && has("is not empty") && has("--replace") && exists(path));
    snprintf(args, sizeof args, "export --db %s --format algoperf --replace -o %s/", db, exp);
    CHECK(run(args) == 0 && !exists(path));
    tree(exp);
    CHECK(entries(dir) == 2); /* r.db and algoperf: no .tmp- or .old- directory left */
    /* no directory named; a file in the way */
    snprintf(args, sizeof args, "export --db %s --format algoperf", db);
    CHECK(run(args) == 2 && has("which directory"));
    snprintf(args, sizeof args, "export --db %s --format algoperf %s", db, db);
    CHECK(run(args) == 2 && has("is not a directory"));
    /* two benchmarks: AlgoPerf's layout has no level for them, so one is picked */
    tb_store *s;
    tb_error err = {0};
    if (CHECK_OK(tb_store_open(db, &s, &err), &err)) {
        CHECK_OK(tb_store_put_benchmark(s, "c", "{}", &err), &err);
        add_trial(s, "c", "sgd", 0, 0);
        tb_store_close(s);
    }
    snprintf(args, sizeof args, "export --db %s --format algoperf %s/two", db, dir);
    CHECK(run(args) == 2 && has("several benchmarks") && has("--name"));
    snprintf(args, sizeof args, "export --db %s --format algoperf --name nope %s/two", db, dir);
    CHECK(run(args) == 2 && has("no trials of benchmark 'nope'"));
    snprintf(args, sizeof args, "export --db %s --format algoperf --name c %s/two", db, dir);
    CHECK(run(args) == 0);
    snprintf(path, sizeof path, "%s/two/sgd/study_0/fmnist_mlp_pytorch/trial_1/hparams.json", dir);
    CHECK(exists(path));
    CHECK(entries(dir) == 3);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    CHECK(system(args) == 0);
    return tb_test_finish("test_export");
}

/* test_export.c: `trainbench export --format algoperf DIR` on a store made by hand: AlgoPerf's
 * tree (submission, study_<s>, <workload>_pytorch, trial_<t+1>), its file names, the header
 * row its loader reads and a trial's rows; a trial without evals; a DIR that is not empty
 * refused unless --replace; a store of several benchmarks refused; nothing left behind. Then
 * `export --runs hardware|studies` (CSV and JSON lines) of runs recorded by hand. */
#include "testutil.h"

#include "trainbench/hardware.h"
#include "trainbench/study_plan.h"

#include <cjson/cJSON.h>

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

/* One hardware run: a result that passed, one that failed (a reason with a comma), a score;
 * two study runs, one diverged. */
static void add_side_runs(const char *db)
{
    tb_store *s;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open(db, &s, &err), &err)) return;
    tb_throughput_config cfg;
    memset(&cfg, 0, sizeof cfg);
    tb_hw_run_record run = {.code_version = "test", .machine = "{\"cpu\":\"x\"}",
                            .settings = &cfg, .reference = "ref", .world_size = 1};
    tb_throughput_result res;
    memset(&res, 0, sizeof res);
    res.windows = 2;
    res.examples_per_s = 1000;
    res.sem_pct = 1.5;
    res.batch_size = 64;
    tb_hw_result_record rr[2] = {
        {.workload = "fmnist_mlp", .algorithm = "sgd", .threads = 1, .result = &res,
         .reason = "", .ratio = 2.0},
        {.workload = "fmnist_cnn", .algorithm = "sgd", .threads = 1, .result = &res,
         .failed = true, .reason = "out of memory, badly", .ratio = NAN}};
    tb_hw_score sc = {.items = 2, .failed = 1, .score = 0, .low = NAN, .high = NAN};
    tb_hw_score_record sr = {.config = "cpu, 1 thread", .level = 0.95, .score = &sc};
    CHECK_OK(tb_store_add_hw_run(s, &run, rr, 2, &sr, 1, NULL, &err), &err);
    for (int i = 0; i < 2; i++) {
        tb_study_run_record r;
        memset(&r, 0, sizeof r);
        snprintf(r.study, sizeof r.study, "echo");
        snprintf(r.key, sizeof r.key, "workload=fmnist_mlp seeds=%d", i);
        r.result.steps = 100;
        r.result.validation.metric = 0.25;
        r.result.test.metric = 0.3;
        r.result.time_to_target_s = INFINITY;
        r.diverged = i == 1;
        CHECK_OK(tb_store_put_study_run(s, &r, "test", &err), &err);
    }
    tb_store_close(s);
}

static void side_exports(const char *dir, const char *db)
{
    char args[2048];
    /* a store without them says which command records them */
    snprintf(args, sizeof args, "export --db %s --runs hardware", db);
    CHECK(run(args) == 2 && has("no hardware runs") && has("trainbench hw --db"));
    snprintf(args, sizeof args, "export --db %s --runs studies", db);
    CHECK(run(args) == 2 && has("no study runs") && has("trainbench study"));
    add_side_runs(db);
    snprintf(args, sizeof args, "export --db %s --runs hardware", db);
    CHECK(run(args) == 0 && has("row,run_id,created,code_version,world_size,machine,workload") &&
          tb_test_count(out, "\nresult,") == 2 && tb_test_count(out, "\nscore,") == 1 &&
          has(",fmnist_cnn,sgd,cpu,1,64,failed,\"out of memory, badly\",1000,1.5,,") &&
          has("\"cpu, 1 thread\",2,1,0,,,0.95"));
    snprintf(args, sizeof args, "export --db %s --runs hardware --format jsonl -o %s/hw.jsonl",
             db, dir);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "%s/hw.jsonl", dir);
    const char *text = slurp(args);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    if (CHECK(o && tb_test_count(text, "\n") == 1)) { /* one run: one line */
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "results")) == 2);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "scores")) == 1);
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(o, "machine")));
        const cJSON *failed = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "results"), 1);
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(failed, "ratio")));
    }
    cJSON_Delete(o);
    snprintf(args, sizeof args, "export --db %s --runs studies", db);
    CHECK(run(args) == 0 && has("study,key,created,status,") && tb_test_count(out, "\necho,") == 2 &&
          has(",diverged,"));
    snprintf(args, sizeof args, "export --db %s --runs studies --format jsonl", db);
    CHECK(run(args) == 0 && tb_test_count(out, "\"study\":\"echo\"") == 2 &&
          has("\"status\":\"diverged\"") && has("\"time_to_target_s\":null"));
    /* what does not apply */
    snprintf(args, sizeof args, "export --db %s --runs studies --name b", db);
    CHECK(run(args) == 2 && has("--name picks a benchmark's trials"));
    snprintf(args, sizeof args, "export --db %s --runs hardware --format algoperf %s/x", db, dir);
    CHECK(run(args) == 2 && has("AlgoPerf's layout holds trials"));
    snprintf(args, sizeof args, "export --db %s --runs machines", db);
    CHECK(run(args) == 2 && has("not trials, hardware or studies"));
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
    side_exports(dir, db);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    CHECK(system(args) == 0);
    return tb_test_finish("test_export");
}

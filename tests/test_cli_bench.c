/* test_cli_bench.c: `trainbench bench`, `score` and `export` as a user runs them: help, bad
 * values, a malformed search space, a tiny real benchmark, its resume, score and exports. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[65536];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

/* Runs SQL on a database file (as another program would). */
static bool sql(const char *path, const char *statements)
{
    sqlite3 *db = NULL;
    bool ok = sqlite3_open(path, &db) == SQLITE_OK &&
              sqlite3_exec(db, statements, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

static bool link_file(const char *from, const char *to) { return link(from, to) == 0; }

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Does the file hold exactly `text`? */
static bool file_is(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strcmp(buf, text) == 0;
}

int main(void)
{
    char dir[] = "/tmp/tb_cli_bench_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char db[300], spaces[300], path[400], args[1500];
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(spaces, sizeof spaces, "%s/spaces", dir);
    mkdir(spaces, 0700);
    snprintf(path, sizeof path, "%s/sgd.json", spaces);
    FILE *f = fopen(path, "w");
    fputs("{\"learning_rate\": {\"min\": 0.01, \"max\": 0.1,\n \"scaling\": \"log\"", f);
    fclose(f);

    CHECK(run("bench --help") == 0 && has("--preset") && has("--ruleset") &&
          has("2 studies x 1 trial, 15 s budgets") && has("spread evenly over\n") &&
          has("(the train subset, validation and test)"));
    CHECK(run("bench --timeout -5") == 2 && has("--timeout: must be positive"));
    CHECK(run("bench --hang-timeout 0") == 2 && has("--hang-timeout: must be positive") &&
          has("the default, 300 s"));
    CHECK(run("bench --setup-timeout -1") == 2 && has("--setup-timeout: must be positive") &&
          has("the default, 1800 s"));
    CHECK(run("bench --eval-every-steps 0") == 2 && has("--eval-every-steps"));
    CHECK(run("bench --help") == 0 && has("--eval-every-steps N") && has("--setup-timeout"));
    CHECK(run("bench -w fmnist_mlp --timeout 0.5") == 2 &&
          has("--timeout: 0.5 s is below the budget of a fmnist_mlp trial (15 s"));
    CHECK(run("bench -w fmnist_mlp --budget 2 --ruleset self --timeout 2.5") == 2 &&
          has("(3 s of submission time)"));
    CHECK(run("bench -w fmnist_mlp --variants") == 2 && has("here: fmnist_mlp_"));
    /* --variants: the ten held-out variants (15 workloads); =all: every variant; planned in
     * full by a shard that runs none of them */
    CHECK(run("bench --variants=some") == 2 && has("--variants=some: give --variants"));
    CHECK(run("bench --variants all") == 2 && has("give --variants=all, with '='"));
    snprintf(args, sizeof args, "bench --db %s/variants.db -s sgd --preset quick --studies 1 "
             "--trials 1 --variants --shard 15/16", dir);
    CHECK(run(args) == 0 && has("0 of the 15 planned trials") && has("fmnist_cnn_nonorm") &&
          !has("fmnist_mlp_dropout"));
    snprintf(args, sizeof args, "bench --db %s/variants-all.db -s sgd --preset quick --studies 1 "
             "--trials 1 --variants=all --shard 63/64", dir);
    CHECK(run(args) == 0 && has("0 of the 31 planned trials") && has("fmnist_mlp_dropout"));
    CHECK(run("workloads") == 0 && has("; held-out variant of kjv_transformer") &&
          has("; variant of fmnist_mlp\n"));
    /* --space: one submission's file, external tuning; bad files and names named */
    CHECK(run("bench --help") == 0 && has("--space FILE") && has("min(points, --trials)"));
    CHECK(run("bench -s sgd -s adamw --space x.json") == 2 && has("one -s (got 2)"));
    CHECK(run("bench -s adamw --ruleset self --space x.json") == 2 &&
          has("not with --ruleset self"));
    snprintf(args, sizeof args, "bench --db %s/space.db -w fmnist_mlp -s adamw --space "
             "%s/none.json", dir, dir);
    CHECK(run(args) != 0 && has("none.json") && !has("[1/"));
    char bad[400];
    snprintf(bad, sizeof bad, "%s/omb1.json", dir);
    FILE *bf = fopen(bad, "w");
    fputs("{\"one_minus_beta1\": {\"min\": 0.02, \"max\": 1.5, \"scaling\": \"log\"}}", bf);
    fclose(bf);
    snprintf(args, sizeof args, "bench --db %s/space.db -w fmnist_mlp -s adamw --space %s", dir,
             bad);
    CHECK(run(args) == 2 && has(bad) && has("dimension 'one_minus_beta1': 1.5 makes beta1") &&
          !has("[1/"));
    CHECK(run("algorithms") == 0 && has("nadamw_self_tuning"));
    CHECK(run("bench --db ''") == 2 && has("--db: '' is not a results file"));
    CHECK(run("bench --db :memory:") == 2 && has("':memory:' is not a results file"));
    CHECK(run("score --db :memory:") == 2 && has("':memory:' is not a results file"));
    CHECK(run("export --db ''") == 2 && has("'' is not a results file"));
    CHECK(run("score --help") == 0 && has("--variant-rule"));
    CHECK(run("export --help") == 0 && has("jsonl"));
    CHECK(run("bench --preset huge") == 2 && has("unknown preset 'huge'"));
    CHECK(run("bench --ruleset open") == 2 && has("unknown ruleset 'open'"));
    snprintf(args, sizeof args, "bench --db %s -s adamax", db);
    CHECK(run(args) == 2 && has("unknown submission 'adamax'"));
    snprintf(args, sizeof args, "bench --db %s -s /nonexistent/sub.so", db);
    CHECK(run(args) == 2 && has("/nonexistent/sub.so does not exist"));
    /* x.so is ./x.so: never looked up in LD_LIBRARY_PATH */
    const char *example = getenv("TB_EXAMPLE_SUBMISSION"), *bin = getenv("TB_BINARY");
    CHECK(example && bin);
    if (example && bin) {
        char libdir[400], cmd[1500];
        snprintf(libdir, sizeof libdir, "%s", example);
        char *slash = strrchr(libdir, '/');
        if (slash) *slash = 0;
        snprintf(cmd, sizeof cmd,
                 "cd %s && LD_LIBRARY_PATH=%s %s bench --db %s -s submission_example.so "
                 "-w fmnist_mlp >/dev/null 2>&1", dir, libdir, bin, db);
        int rc = system(cmd);
        CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    }
    /* a library that crashes while loading is named with the signal; alone, nothing runs */
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    CHECK(crash != NULL);
    if (crash) {
        setenv("TB_CRASHER_LOAD", "segv", 1);
        snprintf(args, sizeof args, "bench --db %s -s %s -w fmnist_mlp", db, crash);
        CHECK(run(args) == 1 && has("crashed while loading") && has("signal 11") &&
              has(crash) && has("no submission left to run"));
        unsetenv("TB_CRASHER_LOAD");
    }
    /* what a submission prints on stdout (a constructor, the entry point, update_params)
     * goes to stderr: bench --json prints one JSON object on stdout and nothing else */
    if (crash && bin) {
        setenv("TB_CRASHER_STDOUT", "1", 1);
        char cmd[1500];
        snprintf(cmd, sizeof cmd,
                 "%s bench --db %s/noisy.db -s %s -w fmnist_mlp --ruleset self --budget 0.3 "
                 "--eval-period 0.1 --eval-examples 200 --threads 2 --json 2>/dev/null", bin, dir,
                 crash);
        FILE *p = popen(cmd, "r");
        size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[n] = 0;
        CHECK(p && pclose(p) == 0);
        unsetenv("TB_CRASHER_STDOUT");
        CHECK(out[0] == '{' && !strstr(out, "crasher-noise") && strchr(out, '\n') == out + n - 1 &&
              has("\"name\":\"crasher\""));
    }
    snprintf(args, sizeof args, "bench --db %s -s sgd --search-spaces %s", db, spaces);
    CHECK(run(args) == 2 && has("malformed JSON at line 2"));
    f = fopen(path, "w");
    fputs("{\"learning_rat\": {\"min\": 0.01, \"max\": 0.1}}", f);
    fclose(f);
    CHECK(run(args) == 2 && has("dimension 'learning_rat' is not a hyperparameter of sgd"));
    snprintf(args, sizeof args, "export --db %s --format xml", db);
    CHECK(run(args) == 2 && has("unknown export format 'xml'"));

    /* a tiny real benchmark: one trial of sgd, self-tuning (defaults), then resumed */
    snprintf(args, sizeof args,
             "bench --db %s --name tiny -s sgd -w fmnist_mlp --ruleset self --studies 1 --budget 0.3 "
             "--eval-period 0.1 --eval-examples 200 --threads 2 --calibration-s 0.2", db);
    CHECK(run(args) == 0 && has("1 run now") && has("score") && has("sgd"));
    CHECK(run(args) == 0 && has("1 reused") && has("(done before)"));
    /* each time basis; the reference one from the run's calibration window */
    snprintf(args, sizeof args, "score --db %s --time reference --json", db);
    CHECK(run(args) == 0 && has("\"time_basis\":\"reference\"") &&
          has("\"reference_step_s\":{\"fmnist_mlp\":"));
    snprintf(args, sizeof args, "score --db %s --time steps", db);
    CHECK(run(args) == 0 && has("time to target in steps") && has("time basis: steps"));
    snprintf(args, sizeof args, "score --db %s --time wall", db);
    CHECK(run(args) == 0 && has("time basis: wall"));
    snprintf(args, sizeof args, "score --db %s --time cpu", db);
    CHECK(run(args) == 2 && has("--time: unknown time basis 'cpu' (wall, reference or steps)"));
    CHECK(run("bench --calibration-s 0") == 2 && has("--calibration-s: a window's seconds"));
    snprintf(args, sizeof args, "score --db %s --json", db);
    CHECK(run(args) == 0 && has("\"benchmark\":\"tiny\"") && has("\"ruleset\":\"self\""));
    /* output that cannot be written is a failure (the message goes to stderr, here lost) */
    snprintf(args, sizeof args, "score --db %s >/dev/full", db);
    CHECK(run(args) == 1);
    snprintf(args, sizeof args, "score --db %s --json >/dev/full", db);
    CHECK(run(args) == 1);
    CHECK(run("version >/dev/full") == 1);
    snprintf(args, sizeof args, "score --db %s --name other", db);
    CHECK(run(args) == 2 && has("no trials of benchmark 'other'"));
    snprintf(args, sizeof args, "score --db %s --reference nope", db);
    CHECK(run(args) == 2 &&
          has("reference submission 'nope' is not in benchmark 'tiny' (its submissions: sgd)"));
    snprintf(args, sizeof args, "export --db %s --name nope", db);
    CHECK(run(args) == 2 && has("no trials of benchmark 'nope' (its benchmarks: tiny)") &&
          !has("global_step"));
    snprintf(args, sizeof args, "export --db %s --format csv", db);
    CHECK(run(args) == 0 && has("global_step,preemption_count") && has("tiny,sgd,fmnist_mlp,self"));
    snprintf(args, sizeof args, "export --db %s --format jsonl", db);
    CHECK(run(args) == 0 && has("\"machine\":{\"cpu\"") && has("\"code_version\"") &&
          has("\"reference_step_s\":") && has("\"reference_time\":"));
    /* the hyperparameters the trial ran with: self-tuning gives none, so all are defaults
     * (the optimizer's, then the baseline's own) */
    CHECK(has("\"hparams\":{},\"resolved_hparams\":{\"learning_rate\":0.1,\"momentum\":0.9,"
              "\"nesterov\":1,\"weight_decay\":0,\"warmup_fraction\":0,\"batch_size\":128},"
              "\"default_hparams\":[\"learning_rate\",\"momentum\",\"nesterov\",\"weight_decay\","
              "\"warmup_fraction\",\"batch_size\"]"));
    snprintf(args, sizeof args, "export --db %s --format csv", db);
    CHECK(run(args) == 0 && has("trial_status,hparams,resolved_hparams,default_hparams,") &&
          has("self,0,0,done,{},\"{\"\"learning_rate\"\":0.1,"));

    /* -o is never the store itself, under any name; a failed export leaves the old file */
    char link[400], csv[400], other[400];
    snprintf(link, sizeof link, "%s/same.db", dir);
    CHECK(link_file(db, link));
    snprintf(args, sizeof args, "export --db %s -o %s", db, db);
    CHECK(run(args) == 2 && has("refusing to write the export over the results store"));
    snprintf(args, sizeof args, "export --db %s -o %s", db, link);
    CHECK(run(args) == 2 && has("refusing to write the export over the results store"));
    snprintf(args, sizeof args, "score --db %s --json", db);
    CHECK(run(args) == 0 && has("\"benchmark\":\"tiny\""));
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    f = fopen(csv, "w");
    fputs("old export\n", f);
    fclose(f);
    snprintf(args, sizeof args, "export --db %s --name nope -o %s", db, csv);
    CHECK(run(args) == 2 && file_is(csv, "old export\n"));
    snprintf(args, sizeof args, "export --db %s -o %s", db, csv);
    CHECK(run(args) == 0 && !file_is(csv, "old export\n"));

    /* a store of another schema is refused by name and left as it was */
    snprintf(other, sizeof other, "%s/v4.db", dir);
    snprintf(args, sizeof args, "cp %s %s", db, other);
    CHECK(system(args) == 0 &&
          sql(other, "UPDATE meta SET value='4' WHERE key='schema_version'"));
    const long before = file_size(other);
    snprintf(args, sizeof args, "score --db %s", other);
    CHECK(run(args) == 1 && has("a trainbench results store of another schema") &&
          has("schema version 4; this build reads versions 1 to 3"));
    snprintf(args, sizeof args, "bench --db %s --name tiny -s sgd -w fmnist_mlp", other);
    CHECK(run(args) == 1 && has("schema version 4"));
    CHECK(file_size(other) == before);
    /* the right version but a table of another build's columns */
    CHECK(sql(other, "UPDATE meta SET value='2' WHERE key='schema_version';"
                     "ALTER TABLE trials DROP COLUMN submission_spec"));
    snprintf(args, sizeof args, "export --db %s", other);
    CHECK(run(args) == 1 && has("no column trials.submission_spec"));

    snprintf(args, sizeof args, "rm -rf %s", dir);
    CHECK(system(args) == 0);
    return tb_test_finish("test_cli_bench");
}

/* test_cli_study.c: `trainbench study` as a user runs it: help, --list, a malformed file, a
 * tiny real study (2 algorithms x 2 seeds x 20 steps on fmnist_mlp) with --db, its rerun
 * reusing every run with the same figure, a resume after a run went missing, and the
 * figures beyond the table as text and data. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[65536];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

/* The output without its progress lines ("[k/n] ...") and the line that counts the runs
 * trained and reused: the figure. */
static void figure_of(const char *text, char *fig, size_t cap)
{
    size_t len = 0;
    fig[0] = '\0';
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line + 1) : strlen(line);
        bool skip = line[0] == '[' || (strstr(line, "trained now") &&
                                       strstr(line, "trained now") < line + n);
        if (!skip && len + n < cap) {
            memcpy(fig + len, line, n);
            len += n;
            fig[len] = '\0';
        }
        line += n;
    }
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static long sql_count(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *q = NULL;
    long n = -1;
    if (sqlite3_open(db, &h) == SQLITE_OK && sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return n;
}

static const char tiny[] =
    "{\"name\": \"tiny\", \"claim\": \"adam reaches a lower loss than sgd in 20 steps\",\n"
    " \"source\": \"a test\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"steps\": 20, \"eval_examples\": 300},\n"
    " \"hparams\": {\"sgd\": {\"learning_rate\": 0.01}},\n"
    " \"axes\": {\"algorithm\": [\"adam\", \"sgd\"]}, \"seeds\": 2,\n"
    " \"metric\": \"validation_loss\",\n"
    " \"comparisons\": [{\"a\": {\"algorithm\": \"adam\"}, \"b\": {\"algorithm\": \"sgd\"},\n"
    "                  \"expect\": \"a_wins\", \"min_wins\": 1}]}\n";

/* The text of a file (false if it cannot be read). */
static bool read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n > 0;
}

/* adam tuned in 2 trials of 5 steps, then 2 runs of 10 steps each on fresh seeds */
static const char tuned[] =
    "{\"name\": \"tuned\", \"claim\": \"c\", \"source\": \"a test\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"algorithm\": \"adam\", \"steps\": 10,\n"
    "              \"eval_examples\": 200},\n"
    " \"axes\": {\"batch_size\": [64]}, \"seeds\": 2, \"metric\": \"validation_loss\",\n"
    " \"tune\": {\"space\": {\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}},\n"
    "          \"trials\": 2, \"budget\": {\"steps\": 5}},\n"
    " \"figures\": [\"curve\"]}\n";

/* A tuned study: its trials recorded, a rerun trains nothing (no retuning), the chosen point
 * shown; a bad tune block refused with its line and column. */
static void test_tuned(const char *dir)
{
    char file[300], db[300], args[1200];
    snprintf(file, sizeof file, "%s/tuned.json", dir);
    snprintf(db, sizeof db, "%s/tuned.db", dir);
    tb_test_write_text(file, tuned);
    snprintf(args, sizeof args, "study %s --db %s -t 2", file, db);
    CHECK(run(args) == 0 && has("[1/4] batch_size=64 tuning trial 1: validation_loss") &&
          has("4 trained now and 0 from the store") && has("tuned (selected by validation_loss") &&
          has("batch_size=64: learning_rate=") && has("best of 2 halton trials of 5 steps"));
    char first[8192], second[8192];
    figure_of(out, first, sizeof first);
    CHECK(sql_count(db, "SELECT count(*) FROM study_runs WHERE study = 'tuned/tune'") == 2);
    CHECK(sql_count(db, "SELECT count(*) FROM study_runs WHERE study = 'tuned'") == 2);
    CHECK(run(args) == 0 && has("0 trained now and 4 from the store"));
    figure_of(out, second, sizeof second);
    CHECK(strcmp(first, second) == 0 && strstr(first, "best tuning trial so far"));
    /* the curve as data: a CSV and a JSON file, one row per trial */
    snprintf(args, sizeof args, "study %s --db %s -q --out %s", file, db, dir);
    char csv[320], json[320];
    snprintf(csv, sizeof csv, "%s/tuned.curve.csv", dir);
    snprintf(json, sizeof json, "%s/tuned.curve.json", dir);
    CHECK(run(args) == 0);
    char text[2048];
    CHECK(read_text(csv, text, sizeof text) && strstr(text, "cell,trial,best_so_far\n") &&
          strstr(text, "\"batch_size=64\",1,") && strstr(text, "\"batch_size=64\",2,"));
    CHECK(read_text(json, text, sizeof text) && strstr(text, "\"figure\":\"curve\"") &&
          strstr(text, "\"trial\":2,\"best_so_far\":"));
    unlink(csv);
    unlink(json);
    snprintf(args, sizeof args, "study %s --db %s -q --json", file, db);
    CHECK(run(args) == 0 && has("\"tuned\":{\"trials\":2,\"sampler\":\"halton\"") &&
          has("\"chosen\":[{\"learning_rate\":"));
    char bad[sizeof tuned + 64];
    const char *at = strstr(tuned, "\"trials\": 2");
    snprintf(bad, sizeof bad, "%.*s\"trials\": 2, \"sampler\": \"grid\"%s", (int)(at - tuned), tuned,
             at + strlen("\"trials\": 2"));
    tb_test_write_text(file, bad);
    snprintf(args, sizeof args, "study %s --db %s", file, db);
    CHECK(run(args) == 2 && has("tuned.json:6:35: tune.sampler: unknown sampler 'grid'"));
    tb_test_remove_store(db);
    unlink(file);
}

/* one search against a search per run, 2 trials of 3 steps, 2 runs of 6 steps each, and the
 * variance figure's hparam varied alone (a search of its own per run) and init */
static const char estimators[] =
    "{\"name\": \"est\", \"claim\": \"c\", \"source\": \"a test\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"algorithm\": \"adam\", \"steps\": 6,\n"
    "              \"batch_size\": 32, \"eval_examples\": 200, \"split\": \"bootstrap\"},\n"
    " \"axes\": {\"search\": [\"once\", \"per_run\"]}, \"seeds\": 2, \"metric\": \"validation_loss\",\n"
    " \"tune\": {\"space\": {\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}},\n"
    "          \"trials\": 2, \"budget\": {\"steps\": 3}},\n"
    " \"figures\": [{\"type\": \"variance\", \"sources\": [\"hparam\", \"init\"]},\n"
    "             {\"type\": \"estimators\", \"expect\": \"close\"}]}\n";

/* The two estimators side by side: every training counted once (2 + 2 x 2 trials, 2 + 2 runs,
 * init 2 runs, hparam 2 x (2 trials + 1 run)), the rows as text and data, a rerun reusing all. */
static void test_estimators(const char *dir)
{
    char file[300], db[300], args[1200];
    snprintf(file, sizeof file, "%s/est.json", dir);
    snprintf(db, sizeof db, "%s/est.db", dir);
    tb_test_write_text(file, estimators);
    snprintf(args, sizeof args, "study %s --db %s -t 2 --out %s", file, db, dir);
    CHECK(run(args) == 0 && has("[18/18] search=once init run 2: validation_loss") &&
          has("search=once hparam run 2: validation_loss") &&
          has("18 trained now and 0 from the store") &&
          has("estimators (once: one search, then k retrains") &&
          has("4 trainings\n") && has("6 trainings\n") &&
          has("the ideal costs 1.5x the trainings") && has("expected: close") &&
          has("of 1 checks reproduced)"));
    CHECK(has("search=once                  hparam") && !has("search=per_run               init"));
    CHECK(sql_count(db, "SELECT count(*) FROM study_runs WHERE study = 'est/tune'") == 10);
    char csv[320], text[4096];
    snprintf(csv, sizeof csv, "%s/est.estimators.csv", dir);
    CHECK(read_text(csv, text, sizeof text) && strstr(text, ",compute_ratio,outcome\n") &&
          strstr(text, "\"search=once\",2,") && strstr(text, ",4,6,1.5,"));
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/est.estimators.json", dir);
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/est.variance.csv", dir);
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/est.variance.json", dir);
    unlink(csv);
    snprintf(args, sizeof args, "study %s --db %s -t 2", file, db);
    CHECK(run(args) == 0 && has("0 trained now and 18 from the store"));
    snprintf(args, sizeof args, "study %s --db %s -t 2 --json", file, db);
    CHECK(run(args) == 0 && has("\"estimators\":[{\"cell\":\"search=once\",\"n_once\":2") &&
          has("\"trainings_ideal\":6,\"compute_ratio\":1.5,\"outcome\":\""));
    tb_test_remove_store(db);
    unlink(file);
}

/* two learning rates, 3 runs of 4 steps each: the detection figure as text and as data */
static const char detection_study[] =
    "{\"name\": \"det\", \"claim\": \"c\", \"source\": \"a test\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp_narrow\", \"algorithm\": \"adam\", \"steps\": 4,\n"
    "              \"batch_size\": 32, \"eval_examples\": 200},\n"
    " \"axes\": {\"learning_rate\": [0.002, 0.0005]}, \"seeds\": 3,\n"
    " \"metric\": \"validation_loss\",\n"
    " \"figures\": [{\"type\": \"detection\", \"n\": 6, \"k\": 2, \"resamples\": 50}]}\n";

static void test_detection(const char *dir)
{
    char file[300], db[300], args[1200], csv[320], text[4096];
    snprintf(file, sizeof file, "%s/det.json", dir);
    snprintf(db, sizeof db, "%s/det.db", dir);
    tb_test_write_text(file, detection_study);
    snprintf(args, sizeof args, "study %s --db %s -t 2 --out %s", file, db, dir);
    CHECK(run(args) == 0 && has("6 trained now and 0 from the store") &&
          has("detection rates (how often each method declares A better than B over 50 "
              "comparisons of 6 runs a side") &&
          has("  control learning_rate=0.002 vs learning_rate=0.002") &&
          has("(1 - false negatives)"));
    snprintf(csv, sizeof csv, "%s/det.detection.csv", dir);
    CHECK(read_text(csv, text, sizeof text) && strstr(text, ",single,mean,pab,outcome\n") &&
          strstr(text, "\"control learning_rate=0.0005 vs learning_rate=0.0005\",6,2,0.75,50,") &&
          strstr(text, ",not judged\n"));
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/det.detection.json", dir);
    unlink(csv);
    snprintf(args, sizeof args, "study %s --db %s -t 2 --json", file, db);
    CHECK(run(args) == 0 &&
          has("\"detection\":[{\"cell\":\"control learning_rate="));
    tb_test_remove_store(db);
    unlink(file);
}

/* full-batch Adam on 32 examples, measured every 2 of 4 steps: the stability figure as text,
 * as its two data files and in --json */
static const char stability_study[] =
    "{\"name\": \"eos\", \"claim\": \"c\", \"source\": \"a test\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp_tanh\", \"algorithm\": \"adam\", \"steps\": 4,\n"
    "              \"full_batch\": 32, \"schedule\": \"constant\", \"eval_examples\": 100,\n"
    "              \"sharpness_every\": 2, \"sharpness_iters\": 3},\n"
    " \"axes\": {\"learning_rate\": [0.01]}, \"seeds\": 2, \"metric\": \"validation_loss\",\n"
    " \"figures\": [{\"type\": \"stability\", \"tail\": 1, \"expect\": \"at_threshold\"}]}\n";

static void test_stability(const char *dir)
{
    char file[300], db[300], args[1200], csv[320], text[4096];
    snprintf(file, sizeof file, "%s/eos.json", dir);
    snprintf(db, sizeof db, "%s/eos.db", dir);
    tb_test_write_text(file, stability_study);
    snprintf(args, sizeof args, "study %s --db %s -t 1 --out %s", file, db, dir);
    CHECK(run(args) == 0 && has("2 trained now and 0 from the store") &&
          has("edge of stability (ratio: lambda_1(P^-1 H)") &&
          has("  learning_rate=0.01") && has("threshold       3800  runs 2 (lost 0)  n   4") &&
          has("    expected: at the threshold (|median - 1| <= 0.2): ") &&
          has("    step          2      4\n") && has("    run 2  "));
    snprintf(csv, sizeof csv, "%s/eos.stability.csv", dir);
    CHECK(read_text(csv, text, sizeof text) &&
          strstr(text, "cell,threshold,tail,runs,lost,n,median_ratio,min_ratio,max_ratio,"
                       "tolerance,outcome\n\"learning_rate=0.01\",3800,1,2,0,4,"));
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/eos.stability_curve.csv", dir);
    CHECK(read_text(csv, text, sizeof text) &&
          strstr(text, "cell,run,step,lambda_max,preconditioned_max,threshold,ratio\n"
                       "\"learning_rate=0.01\",1,2,") &&
          strstr(text, "\"learning_rate=0.01\",2,4,"));
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/eos.stability.json", dir);
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/eos.stability_curve.json", dir);
    unlink(csv);
    snprintf(args, sizeof args, "study %s --db %s -t 1 --json", file, db);
    CHECK(run(args) == 0 &&
          has("\"stability\":[{\"cell\":\"learning_rate=0.01\",\"threshold\":3800") &&
          has("\"stability_curve\":[{\"cell\":\"learning_rate=0.01\",\"run\":1,\"step\":2,"));
    CHECK(sql_count(db, "SELECT count(*) FROM study_sharpness") == 4);
    tb_test_remove_store(db);
    unlink(file);
}

/* a slow upstream against batch echoing: the echoing figure as text and as data */
static const char echo_study[] =
    "{\"name\": \"echo\", \"claim\": \"c\", \"source\": \"a test\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp_narrow\", \"algorithm\": \"adam\",\n"
    "              \"batch_size\": 32, \"eval_examples\": 200, \"target\": 0.6,\n"
    "              \"eval_every_steps\": 4},\n"
    " \"axes\": {\"upstream_slowdown\": [1, 2], \"echo\": [\"none\", \"batch:2\"]},\n"
    " \"seeds\": 2, \"metric\": \"time_to_target\",\n"
    " \"figures\": [{\"type\": \"echoing\", \"expect\": \"helps_when_slow\"}]}\n";

static void test_echoing(const char *dir)
{
    char file[300], db[300], args[1200], csv[320], text[4096];
    snprintf(file, sizeof file, "%s/echo.json", dir);
    snprintf(db, sizeof db, "%s/echo.db", dir);
    snprintf(csv, sizeof csv, "%s/echo.echoing.csv", dir);
    tb_test_write_text(file, echo_study);
    snprintf(args, sizeof args, "study %s --db %s -t 1 --out %s", file, db, dir);
    CHECK(run(args) == 0 && has("8 trained now") && has("echoing (medians of time to target") &&
          has("upstream_slowdown=1 echo=none (the control)") &&
          has("us per fresh example") && has("expected: some echo cell sooner") &&
          has("the largest slowdown echoing compensates") &&
          has("claim: inconclusive (0 of 2 checks reproduced)"));
    CHECK(read_text(csv, text, sizeof text) &&
          strstr(text, "cell,slowdown,delay_s,base_time,base_fresh,echo_time,echo_fresh,") &&
          strstr(text, "\"upstream_slowdown=2 echo=batch:2\",2,"));
    snprintf(args, sizeof args, "%s/echo.echoing.json", dir);
    unlink(args);
    unlink(csv);
    tb_test_remove_store(db);
    unlink(file);
}

int main(void)
{
    char dir[] = "/tmp/tb_cli_study_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char db[300], file[300], bad[300], args[1200];
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(file, sizeof file, "%s/tiny.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    tb_test_write_text(file, tiny);
    tb_test_write_text(bad, "{\"name\": \"bad\", \"claim\": \"c\", \"source\": \"s\",\n"
                            " \"settings\": {\"workload\": \"fmnist_mlp\"},\n"
                            " \"axes\": {\"algorithm\": [\"adam\", \"adamm\"]}, \"seeds\": 2}");

    CHECK(run("study --help") == 0 && has("--scale S") && has("--seeds N") && has("--list") && has("--db FILE"));
    CHECK(run("help study") == 0 && has("usage: trainbench study"));
    CHECK(run("--help") == 0 && has("  study "));
    CHECK(run("study") == 2 && has("give a study file or name"));
    CHECK(run("study --list") == 0 && has("ekfac_vs_kfac") && has("large_batch") &&
          has("data_echoing") && !strstr(out, "invalid"));
    snprintf(args, sizeof args, "study %s", bad);
    CHECK(run(args) == 2 && has("bad.json:3:33: axes.algorithm[1]: unknown algorithm 'adamm'"));
    snprintf(args, sizeof args, "study %s --scale 0", file);
    CHECK(run(args) == 2 && has("--scale: 0 is not in (0, 1000]"));
    snprintf(args, sizeof args, "study %s --seeds 1", file);
    CHECK(run(args) == 2 && has("--seeds"));
    CHECK(run("study no_such_study") == 2 && has("no_such_study.json"));

    /* a tiny real study, recorded */
    char first[8192], second[8192];
    snprintf(args, sizeof args, "study %s --db %s -t 2", file, db);
    CHECK(run(args) == 0 && has("[4/4] algorithm=sgd run 2: validation_loss") &&
          has("4 trained now and 0 from the store") && has("adam   ") && has("median") &&
          has("claim: ") && count(out, "(recorded)") == 0);
    figure_of(out, first, sizeof first);
    CHECK(sql_count(db, "SELECT count(*) FROM study_runs WHERE study = 'tiny'") == 4);

    /* again: every run from the store, nothing trained, the same figure */
    CHECK(run(args) == 0 && has("0 trained now and 4 from the store") &&
          count(out, "(recorded)") == 4);
    figure_of(out, second, sizeof second);
    CHECK(strcmp(first, second) == 0 && strstr(first, "claim: "));
    CHECK(sql_count(db, "SELECT count(*) FROM study_runs") == 4);

    /* a study stopped before its last run: only that run is trained */
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK &&
          sqlite3_exec(h, "DELETE FROM study_runs WHERE key LIKE '%algorithm=sgd%' AND rowid = "
                          "(SELECT max(rowid) FROM study_runs)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK(sql_count(db, "SELECT count(*) FROM study_runs") == 3);
    CHECK(run(args) == 0 && has("1 trained now and 3 from the store") &&
          count(out, "(recorded)") == 3);
    figure_of(out, second, sizeof second);
    CHECK(strcmp(first, second) == 0);

    snprintf(args, sizeof args, "study %s --db %s -t 2 -q --json", file, db);
    CHECK(run(args) == 0 && has("{\"study\":\"tiny\"") && has("\"reused\":4") &&
          has("\"outcome\":\"") && !strstr(out, "[1/4]"));

    /* --seeds: a third run per cell (at any --scale the file's seeds stay), the rest reused */
    snprintf(args, sizeof args, "study %s --db %s -t 2 --seeds 3", file, db);
    CHECK(run(args) == 0 && has("3 runs per cell, 2 trained now and 4 from the store"));

    test_tuned(dir);
    test_echoing(dir);
    test_estimators(dir);
    test_detection(dir);
    test_stability(dir);
    tb_test_remove_store(db);
    unlink(file);
    unlink(bad);
    rmdir(dir);
    return tb_test_finish("test_cli_study");
}

/* test_hw.c: the hardware suite's library parts: the score's arithmetic, the reference file
 * (reading, refusing malformed ones, matching a run to a figure), the suite's settings, a
 * tiny throughput run with its validation check, the results store's hardware tables, and a
 * run of the suite (its plan, a row measured, ratios, scores, the store record, the reference
 * file it saves and the scaling efficiency). */
#include "testutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *tmp_path(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "/tmp/tb_test_hw_%d_%s", (int)getpid(), name);
    return buf[k];
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* ---- the score ---------------------------------------------------------------------------- */

static void test_score(void)
{
    tb_error err = {0};
    tb_hw_score s;
    /* equal weights: sqrt(2 * 0.5) = 1; weights 3 and 1: 2^(3/4) 0.5^(1/4) = sqrt(2) */
    tb_hw_item two[2] = {{.ratio = 2, .rel_sem = 0, .windows = 5, .weight = 1},
                         {.ratio = 0.5, .rel_sem = 0, .windows = 5, .weight = 1}};
    CHECK_OK(tb_hw_score_compute(two, 2, 0.95, &s, &err), &err);
    CHECK_NEAR(s.score, 1.0, 1e-12);
    CHECK(s.low == s.score && s.high == s.score); /* no spread: a point */
    two[0].weight = 3;
    CHECK_OK(tb_hw_score_compute(two, 2, 0.95, &s, &err), &err);
    CHECK_NEAR(s.score, 1.4142135623730951, 1e-12);
    /* the interval: ratios 1.1 and 0.9, sem 1% each over 5 windows, equal weights:
     * var ln = 2 (1/2)^2 1e-4, df = 2 (5 - 1) = 8, t(0.975, 8) = 2.306004 */
    tb_hw_item pair[2] = {{.ratio = 1.1, .rel_sem = 0.01, .windows = 5, .weight = 1},
                          {.ratio = 0.9, .rel_sem = 0.01, .windows = 5, .weight = 1}};
    CHECK_OK(tb_hw_score_compute(pair, 2, 0.95, &s, &err), &err);
    CHECK_NEAR(s.score, 0.99498743710662, 1e-12);
    CHECK_NEAR(s.df, 8.0, 1e-9);
    CHECK_NEAR(s.low, 0.9788948188658808, 1e-8);
    CHECK_NEAR(s.high, 1.0113446112085722, 1e-8);
    CHECK(s.failed == 0 && s.items == 2 && s.passed_score == s.score);
    /* one window: no spread known, no interval */
    pair[1].windows = 1;
    CHECK_OK(tb_hw_score_compute(pair, 2, 0.95, &s, &err), &err);
    CHECK(isnan(s.low) && isnan(s.high) && isfinite(s.score));
    /* a failure counts as 0: the geometric mean is 0; the passed ones' mean stands beside it */
    tb_hw_item failing[3] = {{.ratio = 1.2, .rel_sem = 0.01, .windows = 5, .weight = 1},
                             {.failed = true, .weight = 1},
                             {.ratio = 0.3, .rel_sem = 0.01, .windows = 5, .weight = 1}};
    CHECK_OK(tb_hw_score_compute(failing, 3, 0.95, &s, &err), &err);
    CHECK(s.score == 0 && s.low == 0 && s.high == 0 && s.failed == 1 && s.items == 3);
    CHECK_NEAR(s.passed_score, 0.6, 1e-12); /* sqrt(1.2 * 0.3) */
    failing[0].failed = failing[2].failed = true;
    CHECK_OK(tb_hw_score_compute(failing, 3, 0.95, &s, &err), &err);
    CHECK(s.score == 0 && isnan(s.passed_score) && s.failed == 3);
    /* refused */
    CHECK_FAILS(tb_hw_score_compute(two, 0, 0.95, &s, &err), TB_ERR_INVALID, &err, "no workloads");
    CHECK_FAILS(tb_hw_score_compute(two, 2, 1.0, &s, &err), TB_ERR_INVALID, &err, "level");
    tb_hw_item zero_weight = {.ratio = 1, .weight = 0};
    CHECK_FAILS(tb_hw_score_compute(&zero_weight, 1, 0.95, &s, &err), TB_ERR_INVALID, &err,
                "weight");
    tb_hw_item zero_ratio = {.ratio = 0, .weight = 1};
    CHECK_FAILS(tb_hw_score_compute(&zero_ratio, 1, 0.95, &s, &err), TB_ERR_INVALID, &err,
                "ratio");
}

/* ---- the reference file ------------------------------------------------------------------- */

#define REF_HEAD                                                                                \
    "{\"format\":\"trainbench-hw-reference\",\"version\":1,\"date\":\"2026-12-01\","           \
    "\"commit\":\"abc1234\",\"cpu\":\"Test CPU\",\"cores\":2,\"command\":\"trainbench hw\","

static const char good_ref[] =
    REF_HEAD "\"note\":\"by hand\",\"workloads\":["
    "{\"workload\":\"fmnist_mlp\",\"algorithm\":\"sgd\",\"batch_size\":128,\"figures\":["
    "{\"device\":\"cpu\",\"threads\":1,\"examples_per_s\":1000,\"sem_pct\":0.5},"
    "{\"device\":\"cpu\",\"threads\":2,\"examples_per_s\":1800}]},"
    "{\"workload\":\"kjv_transformer\",\"algorithm\":\"adamw\",\"batch_size\":32,"
    "\"weight\":3,\"figures\":[{\"device\":\"cpu\",\"threads\":1,\"examples_per_s\":3000}]}]}";

static void test_reference_load(void)
{
    tb_error err = {0};
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    const char *path = tmp_path("ref.json");
    write_file(path, good_ref);
    CHECK_OK(tb_hw_reference_load(path, ref, &err), &err);
    CHECK(ref->n == 2 && ref->cores == 2 && strcmp(ref->commit, "abc1234") == 0 &&
          strcmp(ref->cpu, "Test CPU") == 0 && strcmp(ref->note, "by hand") == 0);
    CHECK(ref->workloads[0].weight == 1.0 && ref->workloads[1].weight == 3.0);
    CHECK(ref->workloads[0].n_figures == 2 && ref->workloads[0].figures[1].threads == 2 &&
          ref->workloads[0].figures[1].examples_per_s == 1800 &&
          ref->workloads[0].figures[0].sem_pct == 0.5);

    /* written back, it reads the same */
    const char *copy = tmp_path("copy.json");
    tb_hw_reference *back = calloc(1, sizeof *back);
    CHECK_OK(tb_hw_reference_write(ref, copy, &err), &err);
    CHECK_OK(tb_hw_reference_load(copy, back, &err), &err);
    CHECK(back->n == 2 && strcmp(back->command, ref->command) == 0 &&
          back->workloads[1].weight == 3.0 && back->workloads[1].batch_size == 32 &&
          back->workloads[0].figures[1].examples_per_s == 1800);
    remove(copy);
    free(back);

    /* malformed files: each refused naming what is wrong */
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"format\":", "not valid JSON"},
        {"[1, 2]", "JSON object"},
        {"{\"format\":\"something-else\",\"version\":1}", "format must be"},
        {"{\"format\":\"trainbench-hw-reference\",\"version\":2}", "version is 2"},
        {"{\"format\":\"trainbench-hw-reference\",\"version\":1,\"date\":\"d\",\"cpu\":\"c\"}",
         "commit is missing"},
        {REF_HEAD "\"workloads\":[]}", "workloads must be an array"},
        {REF_HEAD "\"workloads\":[{\"workload\":\"fmnist_mlp\",\"algorithm\":\"sgd\","
                  "\"batch_size\":128,\"figures\":[{\"device\":\"cpu\",\"threads\":1,"
                  "\"examples_per_s\":-5}]}]}",
         "workloads[0].figures[0].examples_per_s is -5"},
        {REF_HEAD "\"workloads\":[{\"workload\":\"fmnist_mlp\",\"algorithm\":\"sgd\","
                  "\"batch_size\":128,\"figures\":[{\"device\":\"cpu\",\"threads\":0,"
                  "\"examples_per_s\":5}]}]}",
         "threads is 0"},
        {REF_HEAD "\"workloads\":[{\"workload\":\"fmnist_mlp\",\"algorithm\":\"sgd\","
                  "\"batch_size\":128,\"figures\":[{\"device\":\"tpu\",\"threads\":1,"
                  "\"examples_per_s\":5}]}]}",
         "device must be"},
        {REF_HEAD "\"workloads\":[{\"workload\":\"fmnist_mlp\",\"algorithm\":\"sgd\","
                  "\"batch_size\":128,\"figures\":[{\"device\":\"cpu\",\"threads\":1,"
                  "\"examples_per_s\":5},{\"device\":\"cpu\",\"threads\":1,"
                  "\"examples_per_s\":6}]}]}",
         "repeats an earlier figure"},
        {REF_HEAD "\"workloads\":[{\"workload\":\"a\",\"algorithm\":\"sgd\",\"batch_size\":1,"
                  "\"figures\":[{\"device\":\"cpu\",\"threads\":1,\"examples_per_s\":5}]},"
                  "{\"workload\":\"a\",\"algorithm\":\"sgd\",\"batch_size\":1,\"figures\":"
                  "[{\"device\":\"cpu\",\"threads\":1,\"examples_per_s\":5}]}]}",
         "workloads[1].workload repeats"},
        {REF_HEAD "\"workloads\":[{\"workload\":\"a\",\"algorithm\":\"sgd\",\"batch_size\":1.5,"
                  "\"figures\":[{\"device\":\"cpu\",\"threads\":1,\"examples_per_s\":5}]}]}",
         "batch_size must be a whole number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i].text);
        CHECK_FAILS(tb_hw_reference_load(path, ref, &err), TB_ERR_FORMAT, &err, bad[i].needle);
        CHECK(strstr(err.message, path) != NULL);
    }
    remove(path);
    CHECK_FAILS(tb_hw_reference_load(path, ref, &err), TB_ERR_IO, &err, "cannot open");
    free(ref);
}

static void test_reference_find(void)
{
    tb_error err = {0};
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    const char *path = tmp_path("find.json");
    write_file(path, good_ref);
    CHECK_OK(tb_hw_reference_load(path, ref, &err), &err);
    remove(path);
    char why[256];
    const tb_hw_ref_workload *e = NULL;
    /* the same thread count */
    const tb_hw_figure *f = tb_hw_reference_find(ref, "fmnist_mlp", "sgd", 128, TB_DEVICE_CPU, 1,
                                                 16, &e, why, sizeof why);
    CHECK(f && f->examples_per_s == 1000 && e == &ref->workloads[0]);
    /* all 16 cores here against the reference's all (2) cores; a GPU too */
    f = tb_hw_reference_find(ref, "fmnist_mlp", "sgd", 128, TB_DEVICE_CPU, 16, 16, &e, why,
                             sizeof why);
    CHECK(f && f->examples_per_s == 1800);
    f = tb_hw_reference_find(ref, "fmnist_mlp", "sgd", 128, TB_DEVICE_CUDA, 1, 16, &e, why,
                             sizeof why);
    CHECK(f && f->examples_per_s == 1800);
    /* 4 of 16 cores: no figure */
    f = tb_hw_reference_find(ref, "fmnist_mlp", "sgd", 128, TB_DEVICE_CPU, 4, 16, &e, why,
                             sizeof why);
    CHECK(!f && strstr(why, "at 4 threads"));
    /* other settings, another workload */
    f = tb_hw_reference_find(ref, "fmnist_mlp", "adamw", 128, TB_DEVICE_CPU, 1, 2, &e, why,
                             sizeof why);
    CHECK(!f && strstr(why, "the reference ran fmnist_mlp with sgd"));
    f = tb_hw_reference_find(ref, "fmnist_mlp", "sgd", 64, TB_DEVICE_CPU, 1, 2, &e, why,
                             sizeof why);
    CHECK(!f && strstr(why, "batch size 128"));
    f = tb_hw_reference_find(ref, "wordnet_sparse", "adamw", 128, TB_DEVICE_CPU, 1, 2, &e, why,
                             sizeof why);
    CHECK(!f && e == NULL && strstr(why, "not in the reference file"));

    /* ratios against the file, then the score: 1500 / 1000 and 1500 / 3000 with weights 1
     * and 3: 1.5^(1/4) 0.5^(3/4) = 0.6580370064762462 */
    const char *ids[2] = {"fmnist_mlp", "kjv_transformer"};
    const char *algs[2] = {"sgd", "adamw"};
    int batch[2] = {128, 32};
    tb_hw_item items[2];
    for (int i = 0; i < 2; i++) {
        f = tb_hw_reference_find(ref, ids[i], algs[i], batch[i], TB_DEVICE_CPU, 1, 2, &e, why,
                                 sizeof why);
        CHECK(f != NULL);
        items[i] = (tb_hw_item){.ratio = f ? 1500.0 / f->examples_per_s : 1, .rel_sem = 0.01,
                                .windows = 5, .weight = e ? e->weight : 1};
    }
    CHECK_NEAR(items[0].ratio, 1.5, 1e-12);
    CHECK_NEAR(items[1].ratio, 0.5, 1e-12);
    tb_hw_score s;
    CHECK_OK(tb_hw_score_compute(items, 2, 0.95, &s, &err), &err);
    CHECK_NEAR(s.score, 0.6580370064762462, 1e-12);
    free(ref);
}

/* The repository's reference file: valid, and measured with the suite's settings, at 1 and 2
 * threads, for every default workload (else a changed setting was not remeasured). */
static void test_repository_reference(void)
{
    tb_error err = {0};
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    CHECK_OK(tb_hw_reference_load(TB_SOURCE_DIR "/data/hw_reference.json", ref, &err), &err);
    const char *ids[16];
    int n = tb_hw_default_workloads(ids, 16);
    CHECK(n == 5);
    for (int i = 0; i < n && i < 16; i++) {
        const char *alg;
        tb_hparams hp;
        CHECK_OK(tb_hw_settings(ids[i], &alg, &hp, &err), &err);
        int batch = 0;
        for (int k = 0; k < tb_workload_count(); k++)
            if (strcmp(tb_workload_info_at(k)->id, ids[i]) == 0)
                batch = tb_workload_info_at(k)->default_batch_size;
        char why[256] = "";
        for (int t = 1; t <= 2; t++) {
            bool found = tb_hw_reference_find(ref, ids[i], alg, batch, TB_DEVICE_CPU, t, 64,
                                              NULL, why, sizeof why) != NULL;
            if (!found) printf("  %s at %d threads: %s\n", ids[i], t, why);
            CHECK(found);
        }
    }
    free(ref);
}

static void test_settings(void)
{
    tb_error err = {0};
    const char *alg = NULL;
    tb_hparams hp;
    CHECK_OK(tb_hw_settings("fmnist_mlp", &alg, &hp, &err), &err);
    CHECK(strcmp(alg, "sgd") == 0 && tb_hparams_get(&hp, "momentum", 0) == 0.9 &&
          tb_hparams_get(&hp, "learning_rate", 0) > 0);
    /* a variant trains with its base's settings */
    CHECK_OK(tb_hw_settings("kjv_transformer_deep", &alg, &hp, &err), &err);
    CHECK(strcmp(alg, "adamw") == 0);
    CHECK_FAILS(tb_hw_settings("nosuch", &alg, &hp, &err), TB_ERR_INVALID, &err,
                "unknown workload 'nosuch'");
    /* every base workload has settings */
    const char *ids[16];
    int n = tb_hw_default_workloads(ids, 16);
    for (int i = 0; i < n && i < 16; i++) CHECK_OK(tb_hw_settings(ids[i], &alg, &hp, &err), &err);
}

/* ---- a throughput run --------------------------------------------------------------------- */

static tb_throughput_config tiny(void)
{
    tb_throughput_config c = tb_throughput_config_default();
    const char *alg;
    tb_hw_settings("fmnist_mlp", &alg, &c.hparams, NULL);
    c.algorithm = alg;
    c.backend.threads = 2;
    c.warmup_steps = 2;
    c.windows = 3;
    c.window_steps = 2;
    c.check_loss = true;
    return c;
}

static void test_throughput(void)
{
    tb_error err = {0};
    tb_throughput_result *r = calloc(1, sizeof *r);
    tb_throughput_config c = tiny();
    CHECK_OK(tb_throughput_run(&c, r, &err), &err);
    CHECK(r->passed && r->reason[0] == 0);
    CHECK(r->windows == 3 && r->steps == 6 && r->examples == 6 * 128 && r->batch_size == 128);
    double mean = (r->window_examples_per_s[0] + r->window_examples_per_s[1] +
                   r->window_examples_per_s[2]) / 3;
    CHECK_NEAR(r->examples_per_s, mean, 1e-9 * mean);
    CHECK(isfinite(r->std_pct) && r->std_pct >= 0);
    CHECK_NEAR(r->sem_pct, r->std_pct / sqrt(3.0), 1e-12);
    CHECK_NEAR(r->ms_per_step, 1e3 * r->timed_s / 6, 1e-9);
    CHECK(r->first_loss > r->last_loss && r->last_loss_step == 8);
    CHECK(r->peak_rss_mb > 0 && r->parameters > 0 && !r->time_limited);

    /* a learning rate that blows up: failed, with the reason */
    tb_hparams_set(&c.hparams, "learning_rate", 1e4, NULL);
    CHECK_OK(tb_throughput_run(&c, r, &err), &err);
    CHECK(!r->passed && (strstr(r->reason, "not finite") || strstr(r->reason, "did not fall") ||
                         strstr(r->reason, "times the first step's")));

    /* the time limit passing before two windows: failed, saying so */
    c = tiny();
    c.window_s = 30;
    c.max_time_s = 0.05;
    CHECK_OK(tb_throughput_run(&c, r, &err), &err);
    CHECK(!r->passed && r->time_limited && r->windows == 0 && strstr(r->reason, "time limit"));

    /* bad settings */
    c = tiny();
    c.windows = 0;
    CHECK_FAILS(tb_throughput_run(&c, r, &err), TB_ERR_INVALID, &err, "windows");
    c = tiny();
    c.warmup_steps = 0;
    CHECK_FAILS(tb_throughput_run(&c, r, &err), TB_ERR_INVALID, &err, "warm-up");
    c = tiny();
    c.cuda_graph = true;
    CHECK_FAILS(tb_throughput_run(&c, r, &err), TB_ERR_INVALID, &err, "3 or more warm-up");
    c = tiny();
    c.workload = "nosuch";
    CHECK_FAILS(tb_throughput_run(&c, r, &err), TB_ERR_INVALID, &err, "unknown workload");
    free(r);
}

/* ---- the store ---------------------------------------------------------------------------- */

static int64_t query_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    if (sqlite3_open(db, &h) == SQLITE_OK && sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return v;
}

static void exec_sql(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK && sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
}

/* The store's file (SQLite removes its -wal and -shm files when the last connection closes). */
static void remove_store(const char *db) { remove(db); }

static void test_store(void)
{
    tb_error err = {0};
    const char *db = tmp_path("store.db");
    remove_store(db);
    tb_store *s = NULL;
    /* a store as an earlier build made it: no hardware tables */
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_store_close(s);
    CHECK(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'hw_runs'") == 0);

    tb_throughput_result r = {.windows = 2, .window_examples_per_s = {100, 110}, .steps = 8,
                              .examples_per_s = 105, .std_pct = 6.7, .sem_pct = 4.7,
                              .ms_per_step = 10, .peak_rss_mb = 50, .batch_size = 128,
                              .first_loss = 2.3, .last_loss = 1.9, .backend = "cpu, 1 thread"};
    tb_hw_result_record res[2] = {
        {"fmnist_mlp", "sgd", TB_DEVICE_CPU, 1, &r, false, "", 1.05},
        {"fmnist_cnn", "adamw", TB_DEVICE_CPU, 1, &r, true, "the training loss is NaN", 0.5}};
    tb_hw_score score = {.items = 2, .failed = 1, .score = 0, .low = 0, .high = 0,
                         .passed_score = 1.05};
    tb_hw_score_record sc = {"cpu, 1 thread", 0.95, &score};
    tb_throughput_config settings = tiny();
    tb_hw_run_record run = {"v1-test", "{\"cpu\":\"x\"}", &settings, "ref.json (test)", 1};
    int64_t id = 0;
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    CHECK_OK(tb_store_add_hw_run(s, &run, res, 2, &sc, 1, &id, &err), &err);
    tb_store_close(s);
    CHECK(id == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_results WHERE run_id = 1") == 2);
    CHECK(query_int(db, "SELECT count(*) FROM hw_runs WHERE code_version = 'v1-test' AND "
                        "windows = 3 AND warmup_steps = 2 AND machine = '{\"cpu\":\"x\"}'") == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_results WHERE workload = 'fmnist_cnn' AND "
                        "status = 'failed' AND ratio = 0 AND reason LIKE '%NaN%'") == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_results WHERE workload = 'fmnist_mlp' AND "
                        "status = 'ok' AND ratio = 1.05 AND windows = 2 AND "
                        "window_examples_per_s = '[100,110]'") == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_scores WHERE score = 0 AND failed = 1 AND "
                        "passed_score = 1.05") == 1);
    /* the store still opens, read-write and read-only, with its schema version unchanged */
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_store_close(s);
    CHECK_OK(tb_store_open_readonly(db, &s, &err), &err);
    tb_store_close(s);
    CHECK(query_int(db, "SELECT value FROM meta WHERE key = 'schema_version'") == 3);
    remove_store(db);

    /* hardware tables of another build: refused by name before anything is written */
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_store_close(s);
    exec_sql(db, "CREATE TABLE hw_runs(id INTEGER PRIMARY KEY, created TEXT)");
    CHECK_OK(tb_store_open(db, &s, &err), &err); /* the store itself is fine */
    CHECK_FAILS(tb_store_add_hw_run(s, &run, res, 2, &sc, 1, &id, &err), TB_ERR_FORMAT, &err,
                "lack column hw_runs.code_version");
    tb_store_close(s);
    CHECK(query_int(db, "SELECT count(*) FROM hw_runs") == 0);
    remove_store(db);
}

/* hw_runs as a build before `hw --dist` made it gets world_size (1 for its runs); the
 * one-process run a data-parallel run compares with is found by its settings and machine */
static void test_store_world_size(void)
{
    tb_error err = {0};
    const char *db = tmp_path("world.db");
    remove_store(db);
    tb_store *s = NULL;
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_store_close(s);
    exec_sql(db, "CREATE TABLE hw_runs(id INTEGER PRIMARY KEY, created TEXT NOT NULL DEFAULT "
                 "(datetime('now')), code_version TEXT NOT NULL, machine TEXT NOT NULL, reference"
                 " TEXT NOT NULL, warmup_steps INTEGER NOT NULL, windows INTEGER NOT NULL, "
                 "window_steps INTEGER NOT NULL, window_s REAL NOT NULL, max_time_s REAL NOT "
                 "NULL, seed INTEGER NOT NULL);"
                 "INSERT INTO hw_runs(code_version, machine, reference, warmup_steps, windows, "
                 "window_steps, window_s, max_time_s, seed) VALUES('old', '{}', 'none', 2, 3, "
                 "2, 0, 0, 0)");
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    CHECK_OK(tb_store_hw_tables(s, &err), &err);
    CHECK(query_int(db, "SELECT world_size FROM hw_runs WHERE code_version = 'old'") == 1);

    tb_throughput_result r = {.windows = 2, .window_examples_per_s = {100, 110},
                              .examples_per_s = 105, .batch_size = 128};
    tb_hw_result_record res = {"fmnist_mlp", "sgd", TB_DEVICE_CPU, 1, &r, false, "", NAN};
    tb_throughput_config settings = tiny();
    const char *here = "{\"cpu\":\"x\",\"threads\":2}";
    tb_hw_run_record one = {"v", here, &settings, "none", 1};
    CHECK_OK(tb_store_add_hw_run(s, &one, &res, 1, NULL, 0, NULL, &err), &err);
    tb_throughput_result r2 = r;
    r2.examples_per_s = 180; /* a later 2-rank run: not a one-process figure */
    res.result = &r2;
    tb_hw_run_record two = {"v", here, &settings, "none", 2};
    int64_t id = 0;
    CHECK_OK(tb_store_add_hw_run(s, &two, &res, 1, NULL, 0, &id, &err), &err);
    CHECK(query_int(db, "SELECT world_size FROM hw_runs WHERE id = 3") == 2 && id == 3);

    tb_hw_single_query q = {"fmnist_mlp", "sgd", 128, 1, here, &settings};
    double eps;
    int64_t run_id;
    CHECK_OK(tb_store_hw_single_rank(s, &q, &eps, &run_id, &err), &err);
    CHECK(eps == 105 && run_id == 2);
    q.threads = 2; /* no run at 2 threads */
    CHECK_OK(tb_store_hw_single_rank(s, &q, &eps, &run_id, &err), &err);
    CHECK(isnan(eps) && run_id == 0);
    q.threads = 1;
    q.machine = "{\"cpu\":\"y\",\"threads\":2}"; /* another machine */
    CHECK_OK(tb_store_hw_single_rank(s, &q, &eps, &run_id, &err), &err);
    CHECK(isnan(eps));
    q.machine = here;
    tb_throughput_config other = settings;
    other.windows = 10; /* other settings */
    q.settings = &other;
    CHECK_OK(tb_store_hw_single_rank(s, &q, &eps, &run_id, &err), &err);
    CHECK(isnan(eps));
    tb_store_close(s);
    remove_store(db);
}

/* ---- a run of the suite ------------------------------------------------------------------- */

/* The plan: configurations by thread count, a row per workload and configuration with its
 * settings, and the request's mistakes refused by name. */
static void test_run_plan(void)
{
    tb_error err = {0};
    tb_hw_request q = tb_hw_request_default();
    q.cores = 4;
    tb_hw_run *run = NULL;
    CHECK_OK(tb_hw_plan(&q, &run, &err), &err); /* the default: 1 thread and all cores */
    CHECK(run && run->ranks == 1 && run->n_configs == 2 && run->n_rows == 10);
    if (!run) return;
    CHECK(run->configs[1].threads == 4 && strcmp(run->configs[1].label, "cpu, 4 threads") == 0);
    CHECK(run->rows[1].config == 1 && strcmp(run->rows[0].workload, run->rows[1].workload) == 0);
    CHECK(isnan(run->rows[0].ratio) && isnan(run->rows[0].efficiency));
    tb_hw_run_free(run);

    const char *ids[2] = {"fmnist_mlp", "kjv_transformer_deep"};
    int threads[2] = {1, 2};
    q.workloads = ids;
    q.n_workloads = 2;
    q.threads = threads;
    q.n_threads = 1;
    q.lr_set = true;
    q.lr = 0.5;
    CHECK_OK(tb_hw_plan(&q, &run, &err), &err);
    CHECK(run && run->n_rows == 2 && strcmp(run->configs[0].label, "cpu, 1 thread") == 0);
    if (!run) return;
    const tb_hw_row *r = &run->rows[0];
    CHECK(strcmp(r->algorithm, "sgd") == 0 && r->batch_size == 128 &&
          tb_hparams_get(&r->hparams, "learning_rate", 0) == 0.5 &&
          tb_hparams_get(&r->hparams, "momentum", 0) == 0.9);
    CHECK(strcmp(run->rows[1].algorithm, "adamw") == 0); /* the variant: its base's */
    CHECK_OK(tb_hw_use_reference(run, "none", &err), &err);
    CHECK(run->ref.n == 0 && strcmp(run->ref.path, "none") == 0);
    tb_hw_run_free(run);
    q.device = TB_DEVICE_CUDA; /* one configuration; whether there is a GPU is the run's */
    CHECK_OK(tb_hw_plan(&q, &run, &err), &err);
    CHECK(run && run->n_configs == 1 && strcmp(run->configs[0].label, "cuda") == 0);
    tb_hw_run_free(run);
    q.device = TB_DEVICE_CPU;

    ids[1] = "fmnist_mlp";
    CHECK_FAILS(tb_hw_plan(&q, &run, &err), TB_ERR_INVALID, &err, "fmnist_mlp is listed twice");
    CHECK(run == NULL);
    ids[1] = "nosuch";
    CHECK_FAILS(tb_hw_plan(&q, &run, &err), TB_ERR_INVALID, &err, "unknown workload 'nosuch'");
    q.n_workloads = 1;
    threads[1] = 1;
    q.n_threads = 2;
    CHECK_FAILS(tb_hw_plan(&q, &run, &err), TB_ERR_INVALID, &err, "1 is listed twice");
    threads[1] = 0;
    CHECK_FAILS(tb_hw_plan(&q, &run, &err), TB_ERR_INVALID, &err, "0 is outside [1, 4096]");
    q.n_threads = 1;
    q.level = 1;
    CHECK_FAILS(tb_hw_plan(&q, &run, &err), TB_ERR_INVALID, &err, "level");
}

/* The workloads ids[0..n) at 1 thread with tiny()'s settings. */
static tb_hw_request tiny_request(const char *const *ids, int n)
{
    static const int one[1] = {1};
    tb_hw_request q = tb_hw_request_default();
    q.workloads = ids;
    q.n_workloads = n;
    q.threads = one;
    q.n_threads = 1;
    q.settings = tiny();
    return q;
}

/* A row measured: a run failing its validation check is the row's failure; data missing
 * stops the suite. */
static void test_run_measure(void)
{
    tb_error err = {0};
    static const char *const ids[1] = {"fmnist_mlp"};
    tb_hw_request q = tiny_request(ids, 1);
    q.settings.windows = 2;
    q.lr_set = true;
    q.lr = 1e4;
    tb_hw_run *run = NULL;
    CHECK_OK(tb_hw_plan(&q, &run, &err), &err);
    if (!run) return;
    CHECK_OK(tb_hw_measure(run, 0, NULL, NULL, &err), &err);
    const char *why = run->rows[0].reason;
    CHECK(run->rows[0].failed && tb_hw_failures(run) == 1 &&
          (strstr(why, "not finite") || strstr(why, "did not fall") ||
           strstr(why, "times the first step's")));
    tb_hw_run_free(run);
    q.settings.data.data_dir = "/nonexistent/data";
    q.settings.data.cache_dir = tmp_path("no_cache");
    CHECK_OK(tb_hw_plan(&q, &run, &err), &err);
    if (!run) return;
    CHECK(tb_hw_measure(run, 0, NULL, NULL, &err) == TB_ERR_MISSING && !run->rows[0].failed);
    CHECK_FAILS(tb_hw_measure(run, 1, NULL, NULL, &err), TB_ERR_INVALID, &err, "no row 1");
    tb_hw_run_free(run);
}

/* Two rows as if measured: 1500 examples/s each against good_ref's 1000 and 3000. */
static tb_hw_run *measured_run(void)
{
    tb_error err = {0};
    static const char *const ids[2] = {"fmnist_mlp", "kjv_transformer"};
    tb_hw_request q = tiny_request(ids, 2);
    tb_hw_run *run = NULL;
    CHECK_OK(tb_hw_plan(&q, &run, &err), &err);
    if (!run) return NULL;
    const char *path = tmp_path("run_ref.json");
    write_file(path, good_ref);
    CHECK_OK(tb_hw_use_reference(run, path, &err), &err);
    remove(path);
    for (int i = 0; i < run->n_rows; i++)
        run->rows[i].res = (tb_throughput_result){.windows = 5, .examples_per_s = 1500,
                                                  .sem_pct = 1, .passed = true,
                                                  .batch_size = run->rows[i].batch_size,
                                                  .backend = "cpu, 1 thread"};
    tb_hw_describe_machine(run);
    return run;
}

/* The ratios and the score (as test_reference_find's), the store record, the reference file
 * saved, and the scaling efficiency of a job of two ranks measured here. */
static void test_run_results(void)
{
    tb_error err = {0};
    tb_hw_run *run = measured_run();
    if (!run) return;
    CHECK(run->machine[0] == '{' && run->job_cores == run->cores);
    CHECK_OK(tb_hw_score_run(run, &err), &err);
    CHECK_NEAR(run->rows[0].ratio, 1.5, 1e-12);
    CHECK_NEAR(run->rows[1].ratio, 0.5, 1e-12);
    CHECK(run->configs[0].scored && run->rows[1].weight == 3);
    CHECK_NEAR(run->configs[0].score.score, 0.6580370064762462, 1e-12);
    run->rows[1].failed = true; /* a failed row: ratio 0, score 0 */
    snprintf(run->rows[1].reason, sizeof run->rows[1].reason, "the training loss is nan");
    CHECK_OK(tb_hw_score_run(run, &err), &err);
    CHECK(run->rows[1].ratio == 0 && run->configs[0].score.score == 0 &&
          run->configs[0].score.failed == 1 && tb_hw_failures(run) == 1);

    const char *db = tmp_path("run.db");
    remove_store(db);
    tb_store *s = NULL;
    int64_t id = 0;
    CHECK_OK(tb_hw_open_store(db, &s, &err), &err);
    CHECK_OK(tb_hw_record(run, s, &id, &err), &err);
    CHECK(id == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_runs WHERE world_size = 1 AND "
                        "reference LIKE '%measured%'") == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_results WHERE status = 'failed' AND ratio = 0 "
                        "AND reason LIKE 'the training loss%'") == 1);
    CHECK(query_int(db, "SELECT count(*) FROM hw_scores WHERE config = 'cpu, 1 thread' AND "
                        "score = 0") == 1);

    const char *saved = tmp_path("saved.json");
    CHECK_OK(tb_hw_save_reference(run, saved, "trainbench hw -w x", &err), &err);
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    CHECK_OK(tb_hw_reference_load(saved, ref, &err), &err);
    CHECK(ref->n == 1 && strcmp(ref->workloads[0].workload, "fmnist_mlp") == 0 &&
          ref->workloads[0].figures[0].examples_per_s == 1500 && ref->cores == run->cores &&
          strcmp(ref->command, "trainbench hw -w x") == 0 && strstr(ref->note, "load average"));
    free(ref);
    remove(saved);

    /* a one-process run has no scaling; a job of two ranks here: from the store's one-process
     * run, else from the reference file when it was measured on this machine */
    CHECK_OK(tb_hw_scaling(run, s, &err), &err);
    CHECK(isnan(run->rows[0].efficiency));
    run->ranks = 2;
    CHECK_FAILS(tb_hw_save_reference(run, saved, "", &err), TB_ERR_INVALID, &err,
                "one process's figures");
    CHECK_OK(tb_hw_scaling(run, s, &err), &err);
    CHECK_NEAR(run->rows[0].efficiency, 0.5, 1e-12);
    CHECK(strcmp(run->rows[0].single_source, "hw_runs id 1 in the store") == 0 &&
          isnan(run->rows[1].efficiency)); /* failed */
    CHECK_OK(tb_hw_scaling(run, NULL, &err), &err);
    CHECK(isnan(run->rows[0].efficiency)); /* the reference file is another machine's */
    snprintf(run->ref.cpu, sizeof run->ref.cpu, "%s", run->cpu);
    run->ref.cores = run->cores;
    CHECK_OK(tb_hw_scaling(run, NULL, &err), &err);
    CHECK_NEAR(run->rows[0].efficiency, 0.75, 1e-12);
    CHECK(strstr(run->rows[0].single_source, "the reference file (this machine"));
    tb_store_close(s);
    remove_store(db);

    for (int i = 0; i < run->n_rows; i++) run->rows[i].failed = true;
    run->ranks = 1;
    CHECK_FAILS(tb_hw_save_reference(run, saved, "", &err), TB_ERR_INVALID, &err,
                "no run passed");
    tb_hw_run_free(run);
}

int main(void)
{
    test_score();
    test_reference_load();
    test_reference_find();
    test_repository_reference();
    test_settings();
    test_throughput();
    test_store();
    test_store_world_size();
    test_run_plan();
    test_run_measure();
    test_run_results();
    return tb_test_finish("test_hw");
}

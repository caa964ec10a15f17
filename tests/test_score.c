/* test_score.c: AlgoPerf scoring: one submission scores 1, twice slower everywhere 2/3, never
 * reaching a target 0, medians over studies with misses, the variant rule, profiles,
 * speedups; and a score table built from trials written to a real SQLite store. */
#include "testutil.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_closed_form(void)
{
    tb_error err = {0};
    double ratios[8], scores[4];
    double one[3] = {10, 20, 30};
    CHECK_OK(tb_score_compute(1, 3, one, NULL, 4, ratios, scores, &err), &err);
    CHECK_NEAR(scores[0], 1.0, 1e-12);

    /* B is twice slower than A everywhere: r = 2, (4 - 2) / 3 = 2/3 */
    double two[6] = {10, 20, 30, 20, 40, 60};
    CHECK_OK(tb_score_compute(2, 3, two, NULL, 4, ratios, scores, &err), &err);
    CHECK_NEAR(scores[0], 1.0, 1e-12);
    CHECK_NEAR(scores[1], 2.0 / 3.0, 1e-12);
    CHECK_NEAR(ratios[3], 2.0, 1e-12);

    /* never reaching a target scores 0; above tau_max counts as a miss */
    double miss[6] = {10, 20, 30, INFINITY, INFINITY, 150};
    CHECK_OK(tb_score_compute(2, 3, miss, NULL, 4, ratios, scores, &err), &err);
    CHECK_NEAR(scores[1], 0.0, 1e-12);
    CHECK(isinf(ratios[5]));

    /* profile: share of workloads with r <= tau */
    double r[4] = {1, 2, 3, INFINITY};
    CHECK_NEAR(tb_score_profile(r, NULL, 4, 1.0), 0.25, 1e-12);
    CHECK_NEAR(tb_score_profile(r, NULL, 4, 2.5), 0.5, 1e-12);
    CHECK_NEAR(tb_score_profile(r, NULL, 4, 4.0), 0.75, 1e-12);

    CHECK_FAILS(tb_score_compute(1, 3, one, NULL, 1.0, ratios, scores, &err), TB_ERR_INVALID,
                &err, "tau_max");
}

static void test_median_and_speedup(void)
{
    double a[5] = {3, INFINITY, 1, 2, INFINITY};
    CHECK_NEAR(tb_score_median(a, 5), 3.0, 0); /* 1 2 3 inf inf: 3 of 5 studies needed */
    double b[5] = {INFINITY, INFINITY, 1, INFINITY, 2};
    CHECK(isinf(tb_score_median(b, 5)));          /* a majority missed */
    double c[4] = {4, 1, 3, 2};
    CHECK_NEAR(tb_score_median(c, 4), 2.5, 1e-12);
    double d[2] = {1, INFINITY};
    CHECK(isinf(tb_score_median(d, 2)));

    double ref[2] = {10, 10}, sub[2] = {5, INFINITY}, budget[2] = {100, 19};
    /* sqrt(10/5 * 10/20) = 1 */
    CHECK_NEAR(tb_score_speedup(ref, sub, budget, 2), 1.0, 1e-12);
}

static void test_variant_rule(void)
{
    tb_error err = {0};
    /* workloads: 0 = base, 1 = its variant. A reaches both; B reaches the base fastest but
     * misses the variant, so B's base does not count and A is the fastest there. */
    double t[4] = {20, 10, 10, INFINITY};
    int variant_of[2] = {-1, 0};
    double ratios[4], scores[2];
    CHECK_OK(tb_score_compute(2, 2, t, variant_of, 4, ratios, scores, &err), &err);
    CHECK_NEAR(scores[0], 1.0, 1e-12);
    CHECK_NEAR(scores[1], 0.0, 1e-12);
    /* without the rule both workloads count on their own */
    CHECK_OK(tb_score_compute(2, 2, t, NULL, 4, ratios, scores, &err), &err);
    CHECK_NEAR(scores[0], (4 - 2 + 3) / 6.0, 1e-12);
    CHECK_NEAR(scores[1], 3 / 6.0, 1e-12);
}

/* A store with trials written directly: per study the fastest trial by time, median over
 * studies with misses, failed trials counted as misses. */
/* A path (template ending in XXXXXX) where no file is. */
static void fresh_path(char *path)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
}

static void test_store_table(void)
{
    char path[] = "/tmp/tb_test_score_XXXXXX";
    fresh_path(path);
    tb_error err = {0};
    tb_store *store;
    CHECK_OK(tb_store_open(path, &store, &err), &err);
    CHECK_OK(tb_store_put_benchmark(store, "b", "{}", &err), &err);
    CHECK_FAILS(tb_store_put_benchmark(store, "b", "{\"x\":1}", &err), TB_ERR_INVALID, &err,
                "different spec");
    /* sub A: studies {min(5, 9), min(inf, 7), min(inf, inf)} = {5, 7, inf}: median 7
     * sub B: studies {14, 14, failed+inf}: median 14 -> ratio 2 -> score 2/3 */
    const char *subs[2] = {"A", "B"};
    double times[2][3][2] = {{{9, 5}, {INFINITY, 7}, {INFINITY, INFINITY}},
                             {{14, 20}, {30, 14}, {-1, INFINITY}}};
    for (int s = 0; s < 2; s++)
        for (int st = 0; st < 3; st++)
            for (int k = 0; k < 2; k++) {
                tb_trial_record t;
                memset(&t, 0, sizeof t);
                snprintf(t.benchmark, sizeof t.benchmark, "b");
                snprintf(t.submission, sizeof t.submission, "%s", subs[s]);
                snprintf(t.workload, sizeof t.workload, "fmnist_mlp");
                snprintf(t.ruleset, sizeof t.ruleset, "external");
                snprintf(t.metric, sizeof t.metric, "error_rate");
                t.study = st;
                t.trial = k;
                t.budget_s = 60;
                CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
                double x = times[s][st][k];
                CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
                CHECK_OK(tb_store_trial_finish(store, t.id, x < 0 ? TB_TRIAL_FAILED : TB_TRIAL_DONE,
                                               x < 0 ? "crashed" : "", isfinite(x) && x > 0, x,
                                               60, 100, &err), &err);
            }
    tb_score_options o = {"b", NULL, false, 0, TB_TIME_WALL};
    tb_score_table *t;
    CHECK_OK(tb_score_store(store, &o, &t, &err), &err);
    CHECK(t->n_subs == 2 && t->n_wl == 1);
    CHECK_NEAR(t->time[0], 7, 1e-12);
    CHECK_NEAR(t->time[1], 14, 1e-12);
    CHECK(t->studies_reached[0] == 2 && t->studies[0] == 3);
    CHECK(t->trials_failed[1] == 1);
    CHECK_NEAR(t->score[0], 1.0, 1e-12);
    CHECK_NEAR(t->score[1], 2.0 / 3.0, 1e-12);
    CHECK_NEAR(t->speedup[1], 0.5, 1e-12);
    tb_score_table_destroy(t);
    o.benchmark = "nope";
    CHECK_FAILS(tb_score_store(store, &o, &t, &err), TB_ERR_INVALID, &err, "nope");
    tb_store_close(store);

    /* a file that is not a store is refused with its path */
    FILE *f = fopen(path, "w");
    fputs("this is not a database, just text that is long enough to be a header.....", f);
    fclose(f);
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    CHECK_FAILS(tb_store_open(path, &store, &err), TB_ERR_FORMAT, &err, path);
    unlink(path);
}

/* One finished trial of benchmark "v" (time: seconds to target, INFINITY for a miss). */
static void put_trial(tb_store *store, const char *sub, const char *wl, double time)
{
    tb_error err = {0};
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.benchmark, sizeof t.benchmark, "v");
    snprintf(t.submission, sizeof t.submission, "%s", sub);
    snprintf(t.workload, sizeof t.workload, "%s", wl);
    snprintf(t.ruleset, sizeof t.ruleset, "external");
    snprintf(t.metric, sizeof t.metric, "error_rate");
    t.budget_s = 15;
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
    CHECK_OK(tb_store_trial_finish(store, t.id, TB_TRIAL_DONE, "", isfinite(time), time, 15, 10,
                                   &err), &err);
}

/* With the variant rule the score, the profile and the speedup count the same workloads: not
 * the variant, and a's base time (reached first, but its variant was 5x slower than b's) as a
 * miss, marked in the text and the JSON. The profile had counted all three workloads and the
 * speedup had averaged over them with a's raw base time (1.357 for b instead of 2). */
static void test_store_variant_rule(void)
{
    char path[] = "/tmp/tb_test_score_XXXXXX";
    fresh_path(path);
    tb_error err = {0};
    tb_store *store;
    CHECK_OK(tb_store_open(path, &store, &err), &err);
    const char *wls[3] = {"fmnist_mlp", "fmnist_mlp_tanh", "fmnist_cnn"};
    double times[2][3] = {{2, 10, 3}, {4, 2, 3}};
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < 3; w++) put_trial(store, s ? "b" : "a", wls[w], times[s][w]);
    tb_score_options o = {"v", NULL, true, 0, TB_TIME_WALL};
    tb_score_table *t;
    CHECK_OK(tb_score_store(store, &o, &t, &err), &err);
    tb_store_close(store);
    unlink(path);
    if (!t) return;
    CHECK(t->n_wl == 3 && strcmp(t->wls[1], "fmnist_mlp_tanh") == 0);
    CHECK(t->counted[0] && !t->counted[1] && t->counted[2]);
    CHECK(t->disqualified[0] && !t->disqualified[3]);
    CHECK_NEAR(t->score[0], 0.5, 1e-12);
    CHECK_NEAR(t->score[1], 1.0, 1e-12);
    CHECK_NEAR(t->speedup[1], sqrt(16.0 / 4.0 * 1.0), 1e-12); /* a's base: budget + 1 s */
    char *text = NULL, *json = NULL;
    size_t n;
    FILE *f = open_memstream(&text, &n);
    tb_score_table_write_text(t, f);
    fclose(f);
    f = open_memstream(&json, &n);
    tb_score_table_write_json(t, f);
    fclose(f);
    CHECK(strstr(text, "2.0 s* (1/1 studies)") && strstr(text, "variants (fmnist_mlp_tanh)"));
    CHECK(strstr(json, "\"fmnist_mlp_tanh\":{") &&
          strstr(strstr(json, "\"fmnist_mlp_tanh\":{"), "\"counted\":false"));
    CHECK(strstr(json, "\"disqualified\":true"));
    /* a at tau = 1: one of the two counted workloads (fmnist_cnn) */
    CHECK(strstr(json, "\"profile\":[[1,0.5]"));
    free(text);
    free(json);
    tb_score_table_destroy(t);
}

static sqlite3_int64 count_objects(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_int64 n = -1;
    sqlite3_stmt *q = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* Opening for reading (score, export) creates nothing; another program's database is refused
 * untouched; a corrupt store is an error, never an empty store. */
static void test_store_open_modes(void)
{
    char path[] = "/tmp/tb_test_store_XXXXXX";
    fresh_path(path);
    int fd;
    tb_error err = {0};
    tb_store *store;
    CHECK_FAILS(tb_store_open_readonly(path, &store, &err), TB_ERR_INVALID, &err, "not exist");
    CHECK(access(path, F_OK) != 0);
    CHECK_FAILS(tb_store_open("", &store, &err), TB_ERR_INVALID, &err, "must be a file path");
    CHECK_FAILS(tb_store_open_readonly(":memory:", &store, &err), TB_ERR_INVALID, &err, "memory");

    /* another program's database: refused by both, and left as it was */
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE people(name TEXT); INSERT INTO people VALUES('x');",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK_FAILS(tb_store_open(path, &store, &err), TB_ERR_FORMAT, &err, "without trainbench");
    CHECK_FAILS(tb_store_open_readonly(path, &store, &err), TB_ERR_FORMAT, &err, path);
    CHECK(count_objects(path) == 1);
    unlink(path);

    /* a new store: empty for a reader until a benchmark has created it */
    fd = open(path, O_CREAT | O_WRONLY, 0644);
    close(fd);
    CHECK_FAILS(tb_store_open_readonly(path, &store, &err), TB_ERR_FORMAT, &err, "empty");
    CHECK_OK(tb_store_open(path, &store, &err), &err);
    CHECK_OK(tb_store_put_benchmark(store, "b", "{}", &err), &err);
    tb_store_close(store);
    char **names;
    int n = 0;
    CHECK_OK(tb_store_open_readonly(path, &store, &err), &err);
    CHECK_OK(tb_store_benchmarks(store, &names, &n, &err), &err);
    CHECK(n == 1 && strcmp(names[0], "b") == 0);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    tb_store_close(store);

    /* every page but the header overwritten: an error, not "no benchmark yet" */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 0, SEEK_END);
        const long size = ftell(f);
        for (long off = 4096; off < size; off++) {
            fseek(f, off, SEEK_SET);
            fputc((int)((off * 7919) & 0xff), f);
        }
        fclose(f);
    }
    tb_status st = tb_store_open_readonly(path, &store, &err);
    if (st == TB_OK) {
        n = 0;
        st = tb_store_benchmarks(store, &names, &n, &err);
        tb_store_close(store);
    }
    CHECK(st != TB_OK);
    unlink(path);
}

int main(void)
{
    test_store_open_modes();
    test_closed_form();
    test_median_and_speedup();
    test_variant_rule();
    test_store_variant_rule();
    test_store_table();
    return tb_test_finish("test_score");
}

/* test_store_rows.c: a trials row that holds what no trial can (edited by hand, or read from a
 * corrupt page) is refused by every reader of the store (trials, export, score) with a
 * message naming the store, the row, the field and the cause; never scored, never exported
 * as a blank row. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void plan_done_trial(tb_store *store)
{
    tb_error err = {0};
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.benchmark, sizeof t.benchmark, "b");
    snprintf(t.submission, sizeof t.submission, "A");
    snprintf(t.workload, sizeof t.workload, "fmnist_mlp");
    snprintf(t.ruleset, sizeof t.ruleset, "external");
    snprintf(t.metric, sizeof t.metric, "error_rate");
    t.budget_s = 60;
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
    CHECK_OK(tb_store_trial_finish(store, t.id, TB_TRIAL_DONE, "", true, 5, 10, 100, &err), &err);
}

static void edit(const char *path, const char *sql)
{
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

static void check_refused(const char *path, const char *needle)
{
    tb_error err = {0};
    tb_store *store = NULL;
    CHECK_OK(tb_store_open_readonly(path, &store, &err), &err);
    tb_trial_record *trials = NULL;
    int n = -1;
    CHECK_FAILS(tb_store_trials(store, "b", &trials, &n, &err), TB_ERR_FORMAT, &err, needle);
    CHECK(strstr(err.message, path) && strstr(err.message, "trials row 1"));
    CHECK(trials == NULL && n == 0);
    FILE *f = tmpfile();
    CHECK_FAILS(tb_store_export(store, "b", TB_EXPORT_CSV, f, &err), TB_ERR_FORMAT, &err,
                needle);
    if (f) fclose(f);
    tb_score_options o = {"b", NULL, false, 0, TB_TIME_WALL};
    tb_score_table *t = NULL;
    CHECK_FAILS(tb_score_store(store, &o, &t, &err), TB_ERR_FORMAT, &err, needle);
    tb_store_close(store);
}

/* A new store that cannot be created: the message says why in words (not SQLite's "unable
 * to open database file"). */
static void test_cannot_create(void)
{
    char dir[] = "/tmp/tb_test_store_create_XXXXXX", path[300], file[100];
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    tb_error err = {0};
    tb_store *store = NULL;
    snprintf(path, sizeof path, "%s/none/r.db", dir);
    char want[300];
    snprintf(want, sizeof want, "its directory %s/none does not exist", dir);
    CHECK_FAILS(tb_store_open(path, &store, &err), TB_ERR_IO, &err, want);
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/r.db", file); /* its directory is a file */
    CHECK_FAILS(tb_store_open(path, &store, &err), TB_ERR_IO, &err, "is a file, not a directory");
    CHECK(strstr(err.message, path) && !strstr(err.message, "unable to open"));
    if (geteuid() != 0) { /* root writes anywhere */
        chmod(dir, 0500);
        snprintf(path, sizeof path, "%s/r.db", dir);
        CHECK_FAILS(tb_store_open(path, &store, &err), TB_ERR_IO, &err, "is not writable");
        chmod(dir, 0700);
    }
    CHECK(store == NULL);
    unlink(file);
    rmdir(dir);
}

int main(void)
{
    static const struct {
        const char *sql, *needle;
    } cases[] = {
        {"UPDATE trials SET time_to_target=-3", "time_to_target is not a time"},
        {"UPDATE trials SET time_to_target=NULL", "time_to_target is missing"},
        {"UPDATE trials SET submission_time=-1", "submission_time is not a time"},
        {"UPDATE trials SET status='bogus'", "status is none of"},
        {"UPDATE trials SET workload=''", "workload is empty"},
        {"UPDATE trials SET submission=X'41'", "submission is not text"},
        {"UPDATE trials SET status=X'646f6e65'", "status is not text"},
        {"UPDATE trials SET budget_s=-60", "budget_s is not a time"},
        {"UPDATE trials SET steps=-7", "steps is negative"},
        {"UPDATE trials SET attempts=-1", "attempts is negative"},
        {"UPDATE trials SET trial=-1", "trial is negative"},
    };
    char dir[] = "/tmp/tb_test_store_rows_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char path[300];
    snprintf(path, sizeof path, "%s/s.db", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tb_error err = {0};
        tb_store *store = NULL;
        CHECK_OK(tb_store_open(path, &store, &err), &err);
        CHECK_OK(tb_store_put_benchmark(store, "b", "{}", &err), &err);
        plan_done_trial(store);
        tb_store_close(store);
        edit(path, cases[i].sql);
        check_refused(path, cases[i].needle);
        unlink(path);
    }
    rmdir(dir);
    test_cannot_create();
    return tb_test_finish("test_store_rows");
}

/* study_store.c: the runs of studies in the results store (`trainbench study --db`).
 *
 * One table of its own, created the first time a study touches the store and kept out of the
 * store's schema (store.c), as the hardware tables are: the schema version stays and a build
 * without it ignores it. A run is keyed by its whole configuration (tb_study_execute writes
 * the key), so any study whose plan contains the same run reuses it. */
#include "store/store_impl.h"

#include "trainbench/study_plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char study_table[] =
    "CREATE TABLE IF NOT EXISTS study_runs("
    "  key TEXT PRIMARY KEY, study TEXT NOT NULL,"
    "  created TEXT NOT NULL DEFAULT (datetime('now')), code_version TEXT NOT NULL,"
    "  diverged INTEGER NOT NULL, reason TEXT NOT NULL, steps INTEGER NOT NULL,"
    "  train_time_s REAL, validation_loss REAL, validation_error REAL, validation_metric REAL,"
    "  test_loss REAL, test_error REAL, test_metric REAL, reached INTEGER NOT NULL,"
    "  time_to_target_s REAL, examples INTEGER, steps_to_target INTEGER,"
    "  fresh_to_target INTEGER, upstream_delay_s REAL);";

/* Whether study_runs has column `name` (false when the query fails: the check reports). */
static bool has_column(sqlite3 *db, const char *name)
{
    sqlite3_stmt *q = NULL;
    bool has = sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('study_runs') "
                                      "WHERE name = ?", -1, &q, NULL) == SQLITE_OK &&
               sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC) == SQLITE_OK &&
               sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return has;
}
static bool has_examples(sqlite3 *db) { return has_column(db, "examples"); }
/* the three columns of a slow upstream's runs come together */
static bool has_to_target(sqlite3 *db) { return has_column(db, "upstream_delay_s"); }

/* The table ready (created and checked), then sql prepared into *q. */
static tb_status prepare(tb_store *s, const char *sql, const char *what, sqlite3_stmt **q,
                         tb_error *err)
{
    /* a study_runs table from before the timed metrics lacks examples alone: added below (its
     * runs read back with examples unknown) */
    static const char *const added[] = {"study_runs.examples", "study_runs.steps_to_target",
                                        "study_runs.fresh_to_target",
                                        "study_runs.upstream_delay_s"};
    tb_status st = tb_store_side_tables(s, study_table, added, 4, "study table", "studies", err);
    if (st == TB_OK)
        st = tb_store_add_columns(s, has_examples, "ALTER TABLE study_runs ADD COLUMN examples "
                                  "INTEGER", err);
    /* before the slow-upstream studies: read back with the three unknown */
    if (st == TB_OK)
        st = tb_store_add_columns(s, has_to_target, "ALTER TABLE study_runs ADD COLUMN "
                                  "steps_to_target INTEGER; ALTER TABLE study_runs ADD COLUMN "
                                  "fresh_to_target INTEGER; ALTER TABLE study_runs ADD COLUMN "
                                  "upstream_delay_s REAL", err);
    if (st != TB_OK) return st;
    return sqlite3_prepare_v2(s->db, sql, -1, q, NULL) ? tb_store_sql_fail(s, err, what)
                                                       : TB_OK;
}

static double column_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

tb_status tb_store_put_study_run(tb_store *s, const tb_study_run_record *r,
                                 const char *code_version, tb_error *err)
{
    if (!s || !r || !code_version)
        return tb_store_null(err, "store_put_study_run",
                             !s ? "store" : !r ? "record" : "code_version");
    sqlite3_stmt *q = NULL;
    tb_status st = prepare(s,
                           "INSERT OR REPLACE INTO study_runs(key, study, code_version, "
                           "diverged, reason, steps, train_time_s, validation_loss, "
                           "validation_error, validation_metric, test_loss, test_error, "
                           "test_metric, reached, time_to_target_s, examples, "
                           "steps_to_target, fresh_to_target, upstream_delay_s) "
                           "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           "recording a study run", &q, err);
    if (st != TB_OK) return st;
    const tb_train_result *t = &r->result;
    sqlite3_bind_text(q, 1, r->key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, r->study, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, code_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 4, r->diverged);
    sqlite3_bind_text(q, 5, r->reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 6, t->steps);
    tb_store_bind_real(q, 7, t->train_time_s);
    tb_store_bind_real(q, 8, t->validation.loss);
    tb_store_bind_real(q, 9, t->validation.error_rate);
    tb_store_bind_real(q, 10, t->validation.metric);
    tb_store_bind_real(q, 11, t->test.loss);
    tb_store_bind_real(q, 12, t->test.error_rate);
    tb_store_bind_real(q, 13, t->test.metric);
    sqlite3_bind_int(q, 14, t->reached_target);
    tb_store_bind_real(q, 15, t->time_to_target_s);
    sqlite3_bind_int64(q, 16, t->examples);
    sqlite3_bind_int64(q, 17, t->steps_to_target);
    sqlite3_bind_int64(q, 18, t->fresh_to_target);
    tb_store_bind_real(q, 19, r->upstream_delay_s);
    int rc = sqlite3_step(q);
    st = rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "recording a study run");
    sqlite3_finalize(q);
    return st;
}

tb_status tb_store_get_study_run(tb_store *s, const char *key, tb_study_run_record *out,
                                 bool *found, tb_error *err)
{
    if (!s || !key || !out || !found)
        return tb_store_null(err, "store_get_study_run", !s ? "store" : !key ? "key" : "out");
    *found = false;
    char k[sizeof out->key]; /* key may be out->key, which the row overwrites */
    snprintf(k, sizeof k, "%s", key);
    key = k;
    sqlite3_stmt *q = NULL;
    tb_status st = prepare(s,
                           "SELECT study, diverged, reason, steps, train_time_s, "
                           "validation_loss, validation_error, validation_metric, test_loss, "
                           "test_error, test_metric, reached, time_to_target_s, examples, "
                           "steps_to_target, fresh_to_target, upstream_delay_s "
                           "FROM study_runs WHERE key = ?", "reading a study run", &q, err);
    if (st != TB_OK) return st;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        memset(out, 0, sizeof *out);
        *found = true;
        snprintf(out->key, sizeof out->key, "%s", key);
        snprintf(out->study, sizeof out->study, "%s", (const char *)sqlite3_column_text(q, 0));
        out->diverged = sqlite3_column_int(q, 1) != 0;
        snprintf(out->reason, sizeof out->reason, "%s", (const char *)sqlite3_column_text(q, 2));
        tb_train_result *t = &out->result;
        t->steps = sqlite3_column_int64(q, 3);
        t->train_time_s = column_real(q, 4);
        t->validation.loss = column_real(q, 5);
        t->validation.error_rate = column_real(q, 6);
        t->validation.accuracy = 1.0 - t->validation.error_rate;
        t->validation.metric = column_real(q, 7);
        t->test.loss = column_real(q, 8);
        t->test.error_rate = column_real(q, 9);
        t->test.accuracy = 1.0 - t->test.error_rate;
        t->test.metric = column_real(q, 10);
        t->reached_target = sqlite3_column_int(q, 11) != 0;
        t->time_to_target_s = column_real(q, 12);
        t->examples = sqlite3_column_type(q, 13) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 13);
        t->examples_per_s = t->examples > 0 && t->train_time_s > 0
                                ? (double)t->examples / t->train_time_s
                                : NAN;
        t->diverged = out->diverged;
        t->steps_to_target = sqlite3_column_int64(q, 14);
        /* -1: unknown (a row from before the column) */
        t->fresh_to_target = sqlite3_column_type(q, 15) == SQLITE_NULL
                                 ? -1
                                 : sqlite3_column_int64(q, 15);
        out->upstream_delay_s = column_real(q, 16);
    } else if (rc != SQLITE_DONE) {
        st = tb_store_sql_fail(s, err, "reading a study run");
    }
    sqlite3_finalize(q);
    return st;
}

/* hw_store.c: hardware runs in the results store (`trainbench hw --db`).
 *
 * Three tables of their own, created the first time a hardware run is recorded and kept out
 * of the store's schema (store.c): the schema version stays, a store without them opens as
 * before in every build, and a build without them ignores them. Their columns are checked
 * against this file's CREATE statements before anything is written. */
#include "store/store_impl.h"

#include "trainbench/hardware.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hw_tables[] =
    "CREATE TABLE IF NOT EXISTS hw_runs("
    "  id INTEGER PRIMARY KEY, created TEXT NOT NULL DEFAULT (datetime('now')),"
    "  code_version TEXT NOT NULL, machine TEXT NOT NULL, reference TEXT NOT NULL,"
    "  warmup_steps INTEGER NOT NULL, windows INTEGER NOT NULL, window_steps INTEGER NOT NULL,"
    "  window_s REAL NOT NULL, max_time_s REAL NOT NULL, seed INTEGER NOT NULL,"
    "  world_size INTEGER NOT NULL DEFAULT 1);"
    "CREATE TABLE IF NOT EXISTS hw_results("
    "  run_id INTEGER NOT NULL REFERENCES hw_runs(id), idx INTEGER NOT NULL,"
    "  workload TEXT NOT NULL, algorithm TEXT NOT NULL, device TEXT NOT NULL,"
    "  threads INTEGER NOT NULL, batch_size INTEGER NOT NULL, backend TEXT NOT NULL,"
    "  status TEXT NOT NULL, reason TEXT NOT NULL, examples_per_s REAL, std_pct REAL,"
    "  sem_pct REAL, ms_per_step REAL, peak_mb REAL, windows INTEGER NOT NULL,"
    "  steps INTEGER NOT NULL, window_examples_per_s TEXT NOT NULL, first_loss REAL,"
    "  last_loss REAL, ratio REAL, PRIMARY KEY(run_id, idx));"
    "CREATE TABLE IF NOT EXISTS hw_scores("
    "  run_id INTEGER NOT NULL REFERENCES hw_runs(id), config TEXT NOT NULL,"
    "  workloads INTEGER NOT NULL, failed INTEGER NOT NULL, score REAL, low REAL, high REAL,"
    "  level REAL NOT NULL, passed_score REAL, PRIMARY KEY(run_id, config));";

/* Whether hw_runs has its world_size column (false when the query fails: the check reports). */
static bool has_world_size(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    bool has = sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('hw_runs') "
                                      "WHERE name = 'world_size'", -1, &q, NULL) == SQLITE_OK &&
               sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return has;
}

tb_status tb_store_hw_tables(tb_store *s, tb_error *err)
{
    /* hw_runs from before `hw --dist` lacks world_size alone: added below */
    static const char *const added[] = {"hw_runs.world_size"};
    tb_status st = tb_store_side_tables(s, hw_tables, added, 1, "hardware tables",
                                        "hardware runs", err);
    if (st != TB_OK) return st;
    /* its runs were one process each */
    return tb_store_add_columns(s, has_world_size, "ALTER TABLE hw_runs ADD COLUMN world_size "
                                "INTEGER NOT NULL DEFAULT 1", err);
}

/* Runs q (prepared from sql) once with its bindings; then finalizes it. */
static tb_status step_once(tb_store *s, sqlite3_stmt *q, const char *what, tb_error *err)
{
    int rc = sqlite3_step(q);
    tb_status st = rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, what);
    sqlite3_finalize(q);
    return st;
}

void tb_store_hw_bind_settings(sqlite3_stmt *q, int at, const tb_throughput_config *c)
{
    sqlite3_bind_int(q, at, c->warmup_steps);
    sqlite3_bind_int(q, at + 1, c->windows);
    sqlite3_bind_int64(q, at + 2, c->window_steps);
    sqlite3_bind_double(q, at + 3, c->window_s);
    sqlite3_bind_double(q, at + 4, c->max_time_s);
    sqlite3_bind_int64(q, at + 5, (int64_t)c->seed);
}

static tb_status add_run(tb_store *s, const tb_hw_run_record *run, int64_t *id, tb_error *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO hw_runs(code_version, machine, reference, warmup_steps,"
                           " windows, window_steps, window_s, max_time_s, seed, world_size)"
                           " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "recording a hardware run");
    sqlite3_bind_text(q, 1, run->code_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, run->machine, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, run->reference, -1, SQLITE_TRANSIENT);
    tb_store_hw_bind_settings(q, 4, run->settings);
    sqlite3_bind_int(q, 10, run->world_size > 1 ? run->world_size : 1);
    tb_status st = step_once(s, q, "recording a hardware run", err);
    *id = sqlite3_last_insert_rowid(s->db);
    return st;
}

/* The windows' examples/s as a JSON array. */
static void window_list(const tb_throughput_result *r, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < r->windows && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%.6g", i ? "," : "",
                              r->window_examples_per_s[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

static tb_status add_result(tb_store *s, int64_t run_id, int idx, const tb_hw_result_record *h,
                            tb_error *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO hw_results(run_id, idx, workload, algorithm, device,"
                           " threads, batch_size, backend, status, reason, examples_per_s,"
                           " std_pct, sem_pct, ms_per_step, peak_mb, windows, steps,"
                           " window_examples_per_s, first_loss, last_loss, ratio)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "recording a hardware result");
    const tb_throughput_result *r = h->result;
    char windows[TB_THROUGHPUT_MAX_WINDOWS * 16 + 2];
    window_list(r, windows, sizeof windows);
    sqlite3_bind_int64(q, 1, run_id);
    sqlite3_bind_int(q, 2, idx);
    sqlite3_bind_text(q, 3, h->workload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, h->algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 5, tb_device_name(h->device), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 6, h->threads);
    sqlite3_bind_int(q, 7, r->batch_size);
    sqlite3_bind_text(q, 8, r->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 9, h->failed ? "failed" : "ok", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 10, h->reason ? h->reason : "", -1, SQLITE_TRANSIENT);
    tb_store_bind_real(q, 11, r->examples_per_s);
    tb_store_bind_real(q, 12, r->std_pct);
    tb_store_bind_real(q, 13, r->sem_pct);
    tb_store_bind_real(q, 14, r->ms_per_step);
    tb_store_bind_real(q, 15, r->peak_rss_mb);
    sqlite3_bind_int(q, 16, r->windows);
    sqlite3_bind_int64(q, 17, r->steps);
    sqlite3_bind_text(q, 18, windows, -1, SQLITE_TRANSIENT);
    tb_store_bind_real(q, 19, r->first_loss);
    tb_store_bind_real(q, 20, r->last_loss);
    tb_store_bind_real(q, 21, h->failed ? 0.0 : h->ratio);
    return step_once(s, q, "recording a hardware result", err);
}

static tb_status add_score(tb_store *s, int64_t run_id, const tb_hw_score_record *h,
                           tb_error *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO hw_scores(run_id, config, workloads, failed, score, low,"
                           " high, level, passed_score) VALUES(?,?,?,?,?,?,?,?,?)", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "recording a hardware score");
    sqlite3_bind_int64(q, 1, run_id);
    sqlite3_bind_text(q, 2, h->config, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 3, h->score->items);
    sqlite3_bind_int(q, 4, h->score->failed);
    tb_store_bind_real(q, 5, h->score->score);
    tb_store_bind_real(q, 6, h->score->low);
    tb_store_bind_real(q, 7, h->score->high);
    sqlite3_bind_double(q, 8, h->level);
    tb_store_bind_real(q, 9, h->score->passed_score);
    return step_once(s, q, "recording a hardware score", err);
}

tb_status tb_store_add_hw_run(tb_store *s, const tb_hw_run_record *run,
                              const tb_hw_result_record *results, int n_results,
                              const tb_hw_score_record *scores, int n_scores, int64_t *run_id,
                              tb_error *err)
{
    tb_status st = tb_store_hw_tables(s, err);
    if (st == TB_OK) st = tb_store_begin(s, err);
    if (st != TB_OK) return st;
    int64_t id = 0;
    st = add_run(s, run, &id, err);
    for (int i = 0; st == TB_OK && i < n_results; i++) st = add_result(s, id, i, &results[i], err);
    for (int i = 0; st == TB_OK && i < n_scores; i++) st = add_score(s, id, &scores[i], err);
    if (st == TB_OK) st = tb_store_commit(s, err);
    if (st != TB_OK) {
        tb_store_rollback(s);
        return st;
    }
    if (run_id) *run_id = id;
    return TB_OK;
}

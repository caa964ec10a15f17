/* side_reads.c: the hardware and study runs read back whole (reports, exports). A store whose
 * side tables were never created has no rows; nothing here creates or writes anything, so a
 * read-only store (tb_store_open_readonly) is fine. */
#include "store/store_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *q = NULL;
    bool has = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                      "AND name = ?", -1, &q, NULL) == SQLITE_OK;
    if (has) sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    has = has && sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return has;
}

static double real_at(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

static void text_at(sqlite3_stmt *q, int i, char *buf, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

/* Runs sql and calls fill(row, q) for each row into a growing array of elements of size `size`.
 * *out NULL and *n 0 when there are none. */
static tb_status read_rows(tb_store *s, const char *sql, size_t size,
                           void (*fill)(void *row, sqlite3_stmt *q), void **out, int *n,
                           const char *what, tb_error *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return tb_store_sql_fail(s, err, what);
    int cap = 0, rc;
    char *rows = NULL;
    tb_status st = TB_OK;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char *grown = realloc(rows, (size_t)cap * size);
            if (!grown) {
                st = tb_fail(err, TB_ERR_NOMEM, "results store: %s: out of memory", what);
                break;
            }
            rows = grown;
        }
        memset(rows + (size_t)*n * size, 0, size);
        fill(rows + (size_t)*n * size, q);
        (*n)++;
    }
    if (st == TB_OK && rc != SQLITE_DONE) st = tb_store_sql_fail(s, err, what);
    sqlite3_finalize(q);
    if (st != TB_OK) {
        free(rows);
        *n = 0;
        return st;
    }
    *out = rows;
    return TB_OK;
}

static void fill_hw(void *row, sqlite3_stmt *q)
{
    tb_store_hw_row *r = row;
    r->run_id = sqlite3_column_int64(q, 0);
    text_at(q, 1, r->created, sizeof r->created);
    text_at(q, 2, r->machine, sizeof r->machine);
    text_at(q, 3, r->code_version, sizeof r->code_version);
    r->world_size = sqlite3_column_int(q, 4);
    text_at(q, 5, r->workload, sizeof r->workload);
    text_at(q, 6, r->algorithm, sizeof r->algorithm);
    text_at(q, 7, r->device, sizeof r->device);
    r->threads = sqlite3_column_int(q, 8);
    r->batch_size = sqlite3_column_int(q, 9);
    char status[16];
    text_at(q, 10, status, sizeof status);
    r->failed = strcmp(status, "ok") != 0;
    text_at(q, 11, r->reason, sizeof r->reason);
    r->examples_per_s = real_at(q, 12);
    r->sem_pct = real_at(q, 13);
    r->ratio = r->failed ? NAN : real_at(q, 14);
}

static void fill_hw_score(void *row, sqlite3_stmt *q)
{
    tb_store_hw_score_row *r = row;
    r->run_id = sqlite3_column_int64(q, 0);
    text_at(q, 1, r->created, sizeof r->created);
    text_at(q, 2, r->machine, sizeof r->machine);
    text_at(q, 3, r->config, sizeof r->config);
    r->workloads = sqlite3_column_int(q, 4);
    r->failed = sqlite3_column_int(q, 5);
    r->score = real_at(q, 6);
    r->low = real_at(q, 7);
    r->high = real_at(q, 8);
    r->level = real_at(q, 9);
}

tb_status tb_store_hw_history(tb_store *s, tb_store_hw_row **rows, int *n_rows,
                              tb_store_hw_score_row **scores, int *n_scores, tb_error *err)
{
    if (!s || !rows || !n_rows || !scores || !n_scores)
        return tb_store_null(err, "store_hw_history", !s ? "store" : "an output");
    *rows = NULL;
    *scores = NULL;
    *n_rows = *n_scores = 0;
    if (!has_table(s->db, "hw_runs") || !has_table(s->db, "hw_results")) return TB_OK;
    tb_status st = read_rows(
        s, "SELECT r.id, r.created, r.machine, r.code_version, r.world_size, x.workload, "
           "x.algorithm, x.device, x.threads, x.batch_size, x.status, x.reason, "
           "x.examples_per_s, x.sem_pct, x.ratio FROM hw_results x JOIN hw_runs r "
           "ON r.id = x.run_id ORDER BY r.id, x.idx", sizeof **rows, fill_hw, (void **)rows,
        n_rows, "reading the hardware runs", err);
    if (st != TB_OK || !has_table(s->db, "hw_scores")) return st;
    st = read_rows(s, "SELECT r.id, r.created, r.machine, c.config, c.workloads, c.failed, "
                      "c.score, c.low, c.high, c.level FROM hw_scores c JOIN hw_runs r "
                      "ON r.id = c.run_id ORDER BY r.id, c.rowid", sizeof **scores,
                   fill_hw_score, (void **)scores, n_scores, "reading the hardware scores", err);
    if (st != TB_OK) {
        free(*rows);
        *rows = NULL;
        *n_rows = 0;
    }
    return st;
}

static void fill_study(void *row, sqlite3_stmt *q)
{
    tb_store_study_row *r = row;
    text_at(q, 0, r->study, sizeof r->study);
    text_at(q, 1, r->key, sizeof r->key);
    text_at(q, 2, r->created, sizeof r->created);
    r->diverged = sqlite3_column_int(q, 3) != 0;
    text_at(q, 4, r->reason, sizeof r->reason);
    r->steps = sqlite3_column_int64(q, 5);
    r->train_time_s = real_at(q, 6);
    r->validation_loss = real_at(q, 7);
    r->validation_error = real_at(q, 8);
    r->validation_metric = real_at(q, 9);
    r->test_metric = real_at(q, 10);
    r->reached = sqlite3_column_int(q, 11) != 0;
    r->time_to_target_s = real_at(q, 12);
}

tb_status tb_store_study_history(tb_store *s, tb_store_study_row **out, int *n, tb_error *err)
{
    if (!s || !out || !n) return tb_store_null(err, "store_study_history", !s ? "store" : "out");
    *out = NULL;
    *n = 0;
    if (!has_table(s->db, "study_runs")) return TB_OK;
    return read_rows(s, "SELECT study, key, created, diverged, reason, steps, train_time_s, "
                        "validation_loss, validation_error, validation_metric, test_metric, "
                        "reached, time_to_target_s FROM study_runs ORDER BY study, rowid",
                     sizeof **out, fill_study, (void **)out, n, "reading the study runs", err);
}

/* study_sharpness.c: the sharpness measurements of study runs (a study's
 * settings.sharpness_every) in the results store: a table of their own beside study_runs, a
 * row per measurement keyed by the run's key and its step, created the first time a study
 * records or asks for one (so an older store gains it when a study opens it). */
#include "store/store_impl.h"

#include "trainbench/study_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char sharpness_table[] =
    "CREATE TABLE IF NOT EXISTS study_sharpness("
    "  key TEXT NOT NULL, step INTEGER NOT NULL, lambda_max REAL, preconditioned_max REAL,"
    "  threshold REAL, PRIMARY KEY(key, step));";

static tb_status prepare(tb_store *s, const char *sql, const char *what, sqlite3_stmt **q,
                         tb_error *err)
{
    tb_status st = tb_store_side_tables(s, sharpness_table, NULL, 0, "study sharpness table",
                                        "studies", err);
    if (st != TB_OK) return st;
    return sqlite3_prepare_v2(s->db, sql, -1, q, NULL) ? tb_store_sql_fail(s, err, what)
                                                       : TB_OK;
}

static double column_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

/* The key's rows deleted, then c's inserted, in one transaction. */
tb_status tb_store_put_study_sharpness(tb_store *s, const char *key,
                                       const tb_study_sharpness_curve *c, tb_error *err)
{
    if (!s || !key || !c)
        return tb_store_null(err, "store_put_study_sharpness",
                             !s ? "store" : !key ? "key" : "curve");
    sqlite3_stmt *del = NULL, *ins = NULL;
    tb_status st = prepare(s, "DELETE FROM study_sharpness WHERE key = ?",
                           "recording a study run's sharpness", &del, err);
    if (st == TB_OK)
        st = prepare(s, "INSERT INTO study_sharpness(key, step, lambda_max, preconditioned_max, "
                     "threshold) VALUES(?, ?, ?, ?, ?)", "recording a study run's sharpness",
                     &ins, err);
    if (st == TB_OK) st = tb_store_exec(s, "BEGIN", err);
    if (st != TB_OK) {
        sqlite3_finalize(del);
        sqlite3_finalize(ins);
        return st;
    }
    sqlite3_bind_text(del, 1, key, -1, SQLITE_TRANSIENT);
    bool ok = sqlite3_step(del) == SQLITE_DONE;
    for (int i = 0; ok && i < c->n; i++) {
        const tb_study_sharpness_point *p = &c->points[i];
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 2, p->step);
        tb_store_bind_real(ins, 3, p->lambda_max);
        tb_store_bind_real(ins, 4, p->pre_max);
        tb_store_bind_real(ins, 5, p->threshold);
        ok = sqlite3_step(ins) == SQLITE_DONE;
    }
    st = ok ? TB_OK : tb_store_sql_fail(s, err, "recording a study run's sharpness");
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    tb_error e2 = {0};
    if (st == TB_OK) st = tb_store_exec(s, "COMMIT", err);
    else tb_store_exec(s, "ROLLBACK", &e2);
    return st;
}

tb_status tb_store_get_study_sharpness(tb_store *s, const char *key,
                                       tb_study_sharpness_curve *out, tb_error *err)
{
    if (!s || !key || !out)
        return tb_store_null(err, "store_get_study_sharpness", !s ? "store" : !key ? "key" : "out");
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q = NULL;
    tb_status st = prepare(s, "SELECT step, lambda_max, preconditioned_max, threshold FROM "
                           "study_sharpness WHERE key = ? ORDER BY step",
                           "reading a study run's sharpness", &q, err);
    if (st != TB_OK) return st;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    int cap = 0, rc = SQLITE_DONE;
    while (st == TB_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            tb_study_sharpness_point *p = realloc(out->points, (size_t)cap * sizeof *p);
            if (!p) {
                st = tb_fail(err, TB_ERR_NOMEM, "out of memory for a study run's sharpness");
                break;
            }
            out->points = p;
        }
        tb_study_sharpness_point *p = &out->points[out->n++];
        p->step = sqlite3_column_int64(q, 0);
        p->lambda_max = column_real(q, 1);
        p->pre_max = column_real(q, 2);
        p->threshold = column_real(q, 3);
    }
    if (st == TB_OK && rc != SQLITE_DONE)
        st = tb_store_sql_fail(s, err, "reading a study run's sharpness");
    sqlite3_finalize(q);
    if (st != TB_OK) {
        free(out->points);
        memset(out, 0, sizeof *out);
    }
    return st;
}

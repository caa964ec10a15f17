/* priors.c: what a benchmark's samplers keep in the store besides the plan: a trial's point
 * chosen when its turn comes, and the pre-trained GP priors (JSON text) of its studies. */
#include "store/store_impl.h"

#include <stdlib.h>
#include <string.h>

tb_status tb_store_trial_set_hparams(tb_store *s, int64_t id, const tb_hparams *hp,
                                     tb_error *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "UPDATE trials SET hparams=? WHERE id=?", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "setting a trial's hyperparameters");
    char *text = tb_store_hparams_json(hp);
    sqlite3_bind_text(q, 1, text ? text : "{}", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 2, id);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    free(text);
    if (rc != SQLITE_DONE) return tb_store_sql_fail(s, err, "setting a trial's hyperparameters");
    if (sqlite3_changes(s->db) != 1)
        return tb_fail(err, TB_ERR_INVALID, "results store %s has no trial %lld", s->path,
                       (long long)id);
    return TB_OK;
}

static sqlite3_stmt *prior_query(tb_store *s, const char *sql, const char *benchmark,
                                 const char *submission, const char *workload)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_text(q, 1, benchmark, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, submission, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, workload, -1, SQLITE_TRANSIENT);
    return q;
}

tb_status tb_store_get_prior(tb_store *s, const char *benchmark, const char *submission,
                             const char *workload, char **json, tb_error *err)
{
    *json = NULL;
    sqlite3_stmt *q = prior_query(s, "SELECT params FROM priors WHERE benchmark=? AND "
                                     "submission=? AND workload=?", benchmark, submission,
                                  workload);
    if (!q) return tb_store_sql_fail(s, err, "reading a prior");
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *json = strdup((const char *)sqlite3_column_text(q, 0));
        if (!*json) rc = SQLITE_NOMEM;
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return TB_OK;
    return tb_store_sql_fail(s, err, "reading a prior");
}

tb_status tb_store_put_prior(tb_store *s, const char *benchmark, const char *submission,
                             const char *workload, const char *json, tb_error *err)
{
    sqlite3_stmt *q = prior_query(s, "INSERT INTO priors(benchmark, submission, workload, "
                                     "params) VALUES(?,?,?,?)", benchmark, submission, workload);
    if (!q) return tb_store_sql_fail(s, err, "recording a prior");
    sqlite3_bind_text(q, 4, json, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE) return TB_OK;
    if (rc == SQLITE_CONSTRAINT)
        return tb_fail(err, TB_ERR_INVALID,
                       "results store %s already holds a prior of %s on %s for benchmark '%s'",
                       s->path, submission, workload, benchmark);
    return tb_store_sql_fail(s, err, "recording a prior");
}

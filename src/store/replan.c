/* replan.c: trials an older trainbench recorded as failed although the machine had failed
 * them (their data missing or corrupt, a full disk), planned again so the next run runs them.
 * Since the environment-failure classification (src/bench/trial.c, environment_failure)
 * such trials are left planned and never recorded; stores written before it hold them as
 * failed rows, which a run would reuse for ever. */
#include "store/store_impl.h"

#include <stdlib.h>
#include <string.h>

/* What a submission's own callbacks prefix to their errors (src/bench/trial.c,
 * submission_error): such a failure is the submission's, whatever its status. "data selection"
 * also prefixes the built-in pipeline's errors; a reason cannot tell the two apart, so it is
 * kept as the submission's. */
static const char *const callbacks[] = {"update_params", "init_optimizer_state", "prepare_for_eval",
                                        "get_batch_size", "data selection"};

bool tb_trial_reason_is_machine(const char *reason, int64_t steps, bool has_evals)
{
    if (!reason) return false;
    /* a failure's reason is "<status name>: <message>" (tb_status_name) */
    bool setup = steps == 0 && !has_evals;
    const char *msg = NULL;
    if (strncmp(reason, "missing: ", 9) == 0)
        msg = reason + 9;
    else if (strncmp(reason, "io: ", 4) == 0)
        msg = reason + 4;
    else if (setup && strncmp(reason, "format: ", 8) == 0)
        msg = reason + 8; /* before training */
    if (!msg) return false;
    for (size_t i = 0; i < sizeof callbacks / sizeof *callbacks; i++)
        if (strncmp(msg, callbacks[i], strlen(callbacks[i])) == 0) return false;
    return true;
}

/* Whether trial id has an eval; -1 when it cannot be read. */
static int has_evals(tb_store *s, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT count(*) FROM evals WHERE trial_id=?", -1, &q, NULL);
    if (rc == SQLITE_OK) sqlite3_bind_int64(q, 1, id);
    int found =
        rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) > 0 : -1;
    sqlite3_finalize(q);
    return found;
}

/* The trial back to planned, as before its first attempt (attempts are kept). */
static tb_status replan(tb_store *s, int64_t id, tb_error *err)
{
    static const char *const sql[2] = {
        "DELETE FROM evals WHERE trial_id=?",
        "UPDATE trials SET status='planned', reason='', reached=0, time_to_target=NULL, "
        "submission_time=0, steps=0, started=NULL, finished=NULL WHERE id=?"};
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql[i], -1, &q, NULL);
        if (rc == SQLITE_OK) sqlite3_bind_int64(q, 1, id);
        rc = rc == SQLITE_OK ? sqlite3_step(q) : rc;
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE) return tb_store_sql_fail(s, err, "planning a trial again");
    }
    return TB_OK;
}

tb_status tb_store_replan_machine_failures(tb_store *s, const char *benchmark, int *n,
                                           tb_error *err)
{
    if (n) *n = 0;
    if (!s || !benchmark)
        return tb_store_null(err, "store_replan_machine_failures", s ? "benchmark" : "the store");
    tb_trial_record *t = NULL;
    int count = 0;
    tb_status st = tb_store_trials(s, benchmark, &t, &count, err);
    for (int i = 0; st == TB_OK && i < count; i++) {
        if (t[i].status != TB_TRIAL_FAILED) continue;
        int evals = has_evals(s, t[i].id);
        if (evals < 0) {
            st = tb_store_sql_fail(s, err, "reading a trial's evals");
            break;
        }
        if (!tb_trial_reason_is_machine(t[i].reason, t[i].steps, evals > 0)) continue;
        st = replan(s, t[i].id, err);
        if (st == TB_OK && n) (*n)++;
    }
    free(t);
    return st;
}

/* conditions.c: the store's schema 3: the conditions each trial and each eval ran in (wall and
 * CPU time, load average, steal, involuntary context switches, the contention flag) and the
 * order the trials were run in. Columns added to the trials and evals tables; an older store
 * reads them as unknown and gets them when opened to write. */
#include "store/store_impl.h"

#include <math.h>
#include <string.h>

const char tb_store_schema_3_sql[] =
    "ALTER TABLE trials ADD COLUMN wall_time REAL;"
    "ALTER TABLE trials ADD COLUMN cpu_time REAL;"
    "ALTER TABLE trials ADD COLUMN load_avg REAL;"
    "ALTER TABLE trials ADD COLUMN steal REAL;"
    "ALTER TABLE trials ADD COLUMN nivcsw INTEGER;"
    "ALTER TABLE trials ADD COLUMN contended INTEGER;"
    "ALTER TABLE trials ADD COLUMN contention TEXT;"
    "ALTER TABLE trials ADD COLUMN run_order INTEGER;"
    "ALTER TABLE evals ADD COLUMN cpu_time REAL;"
    "ALTER TABLE evals ADD COLUMN load_avg REAL;"
    "ALTER TABLE evals ADD COLUMN steal REAL;"
    "ALTER TABLE evals ADD COLUMN nivcsw INTEGER;"
    "UPDATE meta SET value='3' WHERE key='schema_version';";

const char *const tb_store_schema_3_only[] = {
    "trials.wall_time", "trials.cpu_time",  "trials.load_avg",   "trials.steal",
    "trials.nivcsw",    "trials.contended", "trials.contention", "trials.run_order",
    "evals.cpu_time",   "evals.load_avg",   "evals.steal",       "evals.nivcsw",
    NULL};

bool tb_store_has_schema_3(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    bool ok = sqlite3_prepare_v2(db, "SELECT " TB_STORE_TRIAL_CONDITIONS_SELECT " FROM trials "
                                     "LIMIT 0", -1, &q, NULL) == SQLITE_OK;
    sqlite3_finalize(q);
    q = NULL;
    ok = ok && sqlite3_prepare_v2(db, "SELECT " TB_STORE_EVAL_CONDITIONS_NAMES " FROM evals "
                                      "LIMIT 0", -1, &q, NULL) == SQLITE_OK;
    sqlite3_finalize(q);
    return ok;
}

static double real_or_nan(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? NAN : sqlite3_column_double(q, c);
}

static int64_t count_or_unknown(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, c);
}

void tb_store_read_trial_conditions(sqlite3_stmt *q, int at, tb_trial_record *t)
{
    t->wall_time = real_or_nan(q, at);
    t->cpu_time = real_or_nan(q, at + 1);
    t->load_avg = real_or_nan(q, at + 2);
    t->steal = real_or_nan(q, at + 3);
    t->nivcsw = count_or_unknown(q, at + 4);
    t->contended = (int)count_or_unknown(q, at + 5);
    if (t->contended > 1) t->contended = 1;
    const unsigned char *why = sqlite3_column_text(q, at + 6);
    snprintf(t->contention, sizeof t->contention, "%s", why ? (const char *)why : "");
    t->run_order = sqlite3_column_type(q, at + 7) == SQLITE_NULL ? 0
                                                                 : sqlite3_column_int64(q, at + 7);
}

static void bind_count(sqlite3_stmt *q, int i, int64_t v)
{
    if (v >= 0) sqlite3_bind_int64(q, i, v);
    else sqlite3_bind_null(q, i);
}

void tb_store_bind_eval_conditions(sqlite3_stmt *q, int at, const tb_eval_record *e)
{
    tb_store_bind_real(q, at, e->cpu_time);
    tb_store_bind_real(q, at + 1, e->load_avg);
    tb_store_bind_real(q, at + 2, e->steal);
    bind_count(q, at + 3, e->nivcsw);
}

void tb_store_read_eval_conditions(sqlite3_stmt *q, int at, tb_eval_record *e)
{
    const bool has = sqlite3_column_count(q) >= at + 4;
    e->cpu_time = has ? real_or_nan(q, at) : NAN;
    e->load_avg = has ? real_or_nan(q, at + 1) : NAN;
    e->steal = has ? real_or_nan(q, at + 2) : NAN;
    e->nivcsw = has ? count_or_unknown(q, at + 3) : -1;
}

tb_status tb_store_trial_conditions(tb_store *s, int64_t id, const tb_trial_record *t,
                                    tb_error *err)
{
    if (!s || !t) return tb_store_null(err, "store_trial_conditions", s ? "t" : "the store");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE trials SET wall_time=?, cpu_time=?, load_avg=?, steal=?, "
                           "nivcsw=?, contended=?, contention=? WHERE id=?", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "recording a trial's conditions");
    tb_store_bind_real(q, 1, t->wall_time);
    tb_store_bind_real(q, 2, t->cpu_time);
    tb_store_bind_real(q, 3, t->load_avg);
    tb_store_bind_real(q, 4, t->steal);
    bind_count(q, 5, t->nivcsw);
    bind_count(q, 6, t->contended);
    sqlite3_bind_text(q, 7, t->contention, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 8, id);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK
                             : tb_store_sql_fail(s, err, "recording a trial's conditions");
}

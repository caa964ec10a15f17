/* trial_row.c: what a trials row may hold, checked as it is read. A row edited by hand (a
 * negative time to target, which would be scored and win) or read from a corrupt page (blank
 * text columns, a status that is none of the four) is an error naming the store, the row, the
 * field and the cause, never a result. */
#include "store/store_impl.h"

#include <math.h>
#include <string.h>

/* The text columns of the SELECT of select_trials (store.c), and whether one may be empty. */
static const struct {
    int col;
    const char *name;
    bool may_be_empty;
} text_columns[] = {{1, "benchmark", false},      {2, "submission", false},
                    {3, "submission_spec", true}, {4, "workload", false},
                    {5, "ruleset", true},         {8, "hparams", true},
                    {9, "seeds", true},           {10, "metric", true},
                    {15, "status", false}};

static tb_status bad_row(const char *path, int64_t id, const char *field, const char *cause,
                         tb_error *err)
{
    return tb_fail(err, TB_ERR_FORMAT,
                   "results store %s: trials row %lld: %s %s (the row was edited, or the "
                   "store is corrupt: restore it from a copy, or delete the row to run the "
                   "trial again)", path, (long long)id, field, cause);
}

tb_status tb_store_trial_row_types(const char *path, sqlite3_stmt *q, tb_error *err)
{
    int64_t id = sqlite3_column_int64(q, 0);
    for (size_t i = 0; i < sizeof text_columns / sizeof text_columns[0]; i++) {
        const char *name = text_columns[i].name;
        if (sqlite3_column_type(q, text_columns[i].col) != SQLITE_TEXT)
            return bad_row(path, id, name, "is not text", err);
        if (!text_columns[i].may_be_empty && sqlite3_column_bytes(q, text_columns[i].col) == 0)
            return bad_row(path, id, name, "is empty", err);
    }
    return TB_OK;
}

tb_status tb_store_trial_row_check(const char *path, sqlite3_stmt *q, const tb_trial_record *t,
                                   tb_error *err)
{
    const char *status = (const char *)sqlite3_column_text(q, 15);
    if (strcmp(status, tb_trial_status_name(t->status)) != 0)
        return bad_row(path, t->id, "status", "is none of planned, running, done, failed", err);
    if (t->study < 0 || t->trial < 0)
        return bad_row(path, t->id, t->study < 0 ? "study" : "trial", "is negative", err);
    if (!(t->budget_s >= 0) || !isfinite(t->budget_s))
        return bad_row(path, t->id, "budget_s", "is not a time (seconds, >= 0)", err);
    if (!isfinite(t->target))
        return bad_row(path, t->id, "target", "is not a finite number", err);
    if (t->attempts < 0) return bad_row(path, t->id, "attempts", "is negative", err);
    if (!(t->submission_time >= 0) || !isfinite(t->submission_time))
        return bad_row(path, t->id, "submission_time", "is not a time (seconds, >= 0)", err);
    if (!(t->time_to_target >= 0))
        return bad_row(path, t->id, "time_to_target", "is not a time (seconds, >= 0)", err);
    if (t->reached && !isfinite(t->time_to_target))
        return bad_row(path, t->id, "time_to_target", "is missing for a trial that reached "
                       "its target", err);
    if (t->steps < 0) return bad_row(path, t->id, "steps", "is negative", err);
    return TB_OK;
}

/* side_tables.c: tables kept beside the store's schema (hardware runs, study runs): created
 * the first time they are used and checked against their CREATE statements, so that the schema
 * version stays and a build without them ignores them. */
#include "store/store_impl.h"

#include <math.h>

tb_status tb_store_side_tables(tb_store *s, const char *tables, const char *const *added,
                               int n_added, const char *what, const char *purpose,
                               tb_error *err)
{
    for (int i = 0; i < s->n_side_checked; i++)
        if (s->side_checked[i] == tables) return TB_OK;
    tb_status st = tb_store_exec(s, tables, err);
    if (st != TB_OK) return st;
    char missing[160], why[256] = "";
    if (!tb_store_missing_column(s->db, tables, added, n_added, missing, sizeof missing, why,
                                 sizeof why))
        return tb_fail(err, TB_ERR_IO, "results store %s: checking the %s: %s", s->path, what,
                       why);
    if (missing[0])
        return tb_fail(err, TB_ERR_FORMAT, "results store %s: its %s lack column %s (written "
                       "by another build): record %s in another --db", s->path, what, missing,
                       purpose);
    if (s->n_side_checked < (int)(sizeof s->side_checked / sizeof s->side_checked[0]))
        s->side_checked[s->n_side_checked++] = tables;
    return TB_OK;
}

void tb_store_bind_real(sqlite3_stmt *q, int i, double v)
{
    if (isfinite(v)) sqlite3_bind_double(q, i, v);
    else sqlite3_bind_null(q, i);
}

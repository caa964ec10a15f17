/* merge.c: copying one benchmark of a store into another (the shards of a benchmark run by
 * independent processes, `bench --shard`, into the one store that `score` reads): its spec,
 * its finished trials with their evals, the unfinished ones as planned, its GP priors. Rows
 * are copied column by column as the target's schema names them, so that every column a
 * trial has (its conditions, its resolved hyperparameters) arrives unchanged. */
#include "store/store_impl.h"

#include <stdlib.h>
#include <string.h>

#define MERGE_COLUMNS_MAX 64

/* The columns of table in the target other than skip, joined by ", " into list, and counted. */
static tb_status columns_of(tb_store *dst, const char *table, const char *skip, char *list,
                            size_t cap, int *n, tb_error *err)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s') ORDER BY cid", table);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(dst->db, sql, -1, &q, NULL))
        return tb_store_sql_fail(dst, err, "reading its columns");
    list[0] = 0;
    *n = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 0);
        if (strcmp(name, skip) == 0) continue;
        if (*n == MERGE_COLUMNS_MAX || strlen(list) + strlen(name) + 3 > cap) {
            sqlite3_finalize(q);
            return tb_fail(err, TB_ERR_INTERNAL, "results store %s: table %s has more columns "
                           "than a merge copies", dst->path, table);
        }
        strcat(list, *n ? ", " : "");
        strcat(list, name);
        (*n)++;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(dst, err, "reading its columns");
}

/* The statements of one merge, prepared once. */
typedef struct merger {
    tb_store *dst, *src;
    const char *name;
    int n_trial_cols, n_eval_cols;
    sqlite3_stmt *src_trials;  /* src: id, key, status, run identity of every trial */
    sqlite3_stmt *dst_find;    /* dst: id, status, run identity of one key */
    sqlite3_stmt *src_row;     /* src: the trial's columns (the target's, but id) */
    sqlite3_stmt *dst_insert;  /* dst: INSERT of them */
    sqlite3_stmt *src_evals;   /* src: a trial's evals' columns (but trial_id) */
    sqlite3_stmt *dst_eval;    /* dst: INSERT of an eval under a new trial id */
    sqlite3_stmt *dst_drop_evals, *dst_drop_trial, *dst_replan;
} merger;

/* The key and the identity of a run as selected (columns 1-5 and 8-12 of src_trials and, from
 * column 2 on, of dst_find): a finished trial found in both stores is the same run when its
 * attempts, start, end, code version and machine facts agree. */
#define KEY_COLUMNS "submission, workload, ruleset, study, trial"
#define RUN_COLUMNS "attempts, coalesce(started, ''), coalesce(finished, ''), code_version, machine"
#define KEY_MATCH "benchmark = ?1 AND submission = ?2 AND workload = ?3 AND ruleset = ?4 AND " \
                  "study = ?5 AND trial = ?6"

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **q)
{
    return sqlite3_prepare_v2(db, sql, -1, q, NULL);
}

static tb_status merger_init(merger *m, tb_error *err)
{
    char tcols[2048], ecols[1024], sql[6144], marks[MERGE_COLUMNS_MAX * 2 + 4];
    tb_status st = columns_of(m->dst, "trials", "id", tcols, sizeof tcols, &m->n_trial_cols,
                              err);
    if (st == TB_OK)
        st = columns_of(m->dst, "evals", "trial_id", ecols, sizeof ecols, &m->n_eval_cols, err);
    if (st != TB_OK) return st;
    if (prepare(m->src->db, "SELECT id, " KEY_COLUMNS ", status, " RUN_COLUMNS
                " FROM trials WHERE benchmark = ?1 ORDER BY id", &m->src_trials))
        return tb_store_sql_fail(m->src, err, "reading its trials");
    if (prepare(m->dst->db, "SELECT id, status, " RUN_COLUMNS " FROM trials WHERE " KEY_MATCH,
                &m->dst_find))
        return tb_store_sql_fail(m->dst, err, "reading its trials");
    snprintf(sql, sizeof sql, "SELECT %s FROM trials WHERE id = ?1", tcols);
    if (prepare(m->src->db, sql, &m->src_row))
        return tb_fail(err, TB_ERR_FORMAT, "results store %s: its trials lack a column of this "
                       "build's (%s): open it once with this build's `trainbench bench` (which "
                       "upgrades it), then merge it", m->src->path, sqlite3_errmsg(m->src->db));
    marks[0] = 0;
    for (int i = 0; i < m->n_trial_cols; i++) strcat(marks, i ? ",?" : "?");
    snprintf(sql, sizeof sql, "INSERT INTO trials(%s) VALUES(%s)", tcols, marks);
    if (prepare(m->dst->db, sql, &m->dst_insert))
        return tb_store_sql_fail(m->dst, err, "copying a trial");
    snprintf(sql, sizeof sql, "SELECT %s FROM evals WHERE trial_id = ?1 ORDER BY idx", ecols);
    if (prepare(m->src->db, sql, &m->src_evals))
        return tb_fail(err, TB_ERR_FORMAT, "results store %s: its evals lack a column of this "
                       "build's (%s): open it once with this build's `trainbench bench` (which "
                       "upgrades it), then merge it", m->src->path, sqlite3_errmsg(m->src->db));
    marks[0] = 0;
    for (int i = 0; i < m->n_eval_cols; i++) strcat(marks, ",?");
    snprintf(sql, sizeof sql, "INSERT INTO evals(trial_id, %s) VALUES(?%s)", ecols, marks);
    if (prepare(m->dst->db, sql, &m->dst_eval) ||
        prepare(m->dst->db, "DELETE FROM evals WHERE trial_id = ?1", &m->dst_drop_evals) ||
        prepare(m->dst->db, "DELETE FROM trials WHERE id = ?1", &m->dst_drop_trial) ||
        prepare(m->dst->db, "UPDATE trials SET status = 'planned', reason = '' WHERE id = ?1",
                &m->dst_replan))
        return tb_store_sql_fail(m->dst, err, "copying a trial");
    return TB_OK;
}

static void merger_free(merger *m)
{
    sqlite3_stmt *all[] = {m->src_trials, m->dst_find, m->src_row, m->dst_insert,
                           m->src_evals, m->dst_eval, m->dst_drop_evals, m->dst_drop_trial,
                           m->dst_replan};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
}

static bool finished_status(const unsigned char *status)
{
    return status && (strcmp((const char *)status, "done") == 0 ||
                      strcmp((const char *)status, "failed") == 0);
}

static const char *text_or_empty(sqlite3_stmt *q, int col)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    return t ? (const char *)t : "";
}

/* Whether the dst_find row is the same run as the src_trials row. */
static bool same_run(const merger *m)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(text_or_empty(m->src_trials, 7 + i), text_or_empty(m->dst_find, 2 + i)) != 0)
            return false;
    return true;
}

/* Copies the src trial `id` (and, when finished, its evals) as a new trial of dst; an
 * unfinished one is planned again there. */
static tb_status copy_trial(merger *m, int64_t id, bool finished, tb_error *err)
{
    sqlite3_reset(m->src_row);
    sqlite3_bind_int64(m->src_row, 1, id);
    if (sqlite3_step(m->src_row) != SQLITE_ROW)
        return tb_store_sql_fail(m->src, err, "reading a trial");
    sqlite3_reset(m->dst_insert);
    for (int i = 0; i < m->n_trial_cols; i++)
        sqlite3_bind_value(m->dst_insert, i + 1, sqlite3_column_value(m->src_row, i));
    int rc = sqlite3_step(m->dst_insert);
    sqlite3_reset(m->src_row);
    if (rc != SQLITE_DONE) return tb_store_sql_fail(m->dst, err, "copying a trial");
    const int64_t new_id = sqlite3_last_insert_rowid(m->dst->db);
    if (!finished) {
        sqlite3_reset(m->dst_replan);
        sqlite3_bind_int64(m->dst_replan, 1, new_id);
        return sqlite3_step(m->dst_replan) == SQLITE_DONE
                   ? TB_OK : tb_store_sql_fail(m->dst, err, "planning a trial");
    }
    sqlite3_reset(m->src_evals);
    sqlite3_bind_int64(m->src_evals, 1, id);
    while ((rc = sqlite3_step(m->src_evals)) == SQLITE_ROW) {
        sqlite3_reset(m->dst_eval);
        sqlite3_bind_int64(m->dst_eval, 1, new_id);
        for (int i = 0; i < m->n_eval_cols; i++)
            sqlite3_bind_value(m->dst_eval, i + 2, sqlite3_column_value(m->src_evals, i));
        if (sqlite3_step(m->dst_eval) != SQLITE_DONE) {
            sqlite3_reset(m->src_evals);
            return tb_store_sql_fail(m->dst, err, "copying an eval");
        }
    }
    sqlite3_reset(m->src_evals);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(m->src, err, "reading its evals");
}

/* Drops dst's unfinished trial `id` (and what evals an interrupted attempt left). */
static tb_status drop_trial(merger *m, int64_t id, tb_error *err)
{
    sqlite3_stmt *qs[] = {m->dst_drop_evals, m->dst_drop_trial};
    for (int i = 0; i < 2; i++) {
        sqlite3_reset(qs[i]);
        sqlite3_bind_int64(qs[i], 1, id);
        if (sqlite3_step(qs[i]) != SQLITE_DONE)
            return tb_store_sql_fail(m->dst, err, "replacing an unfinished trial");
    }
    return TB_OK;
}

/* One src trial (the src_trials row): copied, counted as there already, or refused. */
static tb_status merge_trial(merger *m, tb_store_merge_counts *c, tb_error *err)
{
    sqlite3_stmt *s = m->src_trials, *f = m->dst_find;
    const bool src_done = finished_status(sqlite3_column_text(s, 6));
    sqlite3_reset(f);
    sqlite3_bind_text(f, 1, m->name, -1, SQLITE_TRANSIENT);
    for (int i = 0; i < 3; i++)
        sqlite3_bind_text(f, 2 + i, text_or_empty(s, 1 + i), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(f, 5, sqlite3_column_int(s, 4));
    sqlite3_bind_int(f, 6, sqlite3_column_int(s, 5));
    int rc = sqlite3_step(f);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return tb_store_sql_fail(m->dst, err, "reading its trials");
    tb_status st = TB_OK;
    if (rc == SQLITE_ROW && !src_done) {
        c->kept++; /* planned there or finished there: nothing of this one to add */
    } else if (rc == SQLITE_ROW && finished_status(sqlite3_column_text(f, 1))) {
        if (same_run(m)) {
            c->already++;
        } else {
            st = tb_fail(err, TB_ERR_INVALID,
                         "trial %s %s study %d trial %d of benchmark '%s' is finished in both "
                         "%s (started %s) and %s (started %s), as different runs: the stores "
                         "overlap (shards of different counts, or a store that ran the "
                         "benchmark whole); nothing of %s was merged",
                         text_or_empty(s, 1), text_or_empty(s, 2), sqlite3_column_int(s, 4),
                         sqlite3_column_int(s, 5), m->name, m->dst->path,
                         text_or_empty(f, 3), m->src->path, text_or_empty(s, 8),
                         m->src->path);
        }
    } else {
        if (rc == SQLITE_ROW) st = drop_trial(m, sqlite3_column_int64(f, 0), err);
        if (st == TB_OK) st = copy_trial(m, sqlite3_column_int64(s, 0), src_done, err);
        if (st == TB_OK) src_done ? c->copied++ : c->planned++;
    }
    sqlite3_reset(f);
    return st;
}

/* The benchmark's spec in src (*spec malloc'ed). */
static tb_status spec_of(tb_store *src, const char *name, char **spec, tb_error *err)
{
    sqlite3_stmt *q = NULL;
    *spec = NULL;
    if (prepare(src->db, "SELECT spec FROM benchmarks WHERE name = ?1", &q))
        return tb_store_sql_fail(src, err, "reading benchmarks");
    sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    tb_status st = TB_OK;
    if (rc == SQLITE_ROW) {
        *spec = strdup(text_or_empty(q, 0));
        if (!*spec) st = tb_fail(err, TB_ERR_NOMEM, "out of memory");
    } else if (rc == SQLITE_DONE) {
        char names[512];
        tb_store_benchmark_list(src, names, sizeof names);
        st = tb_fail(err, TB_ERR_INVALID, "results store %s has no benchmark '%s' (it has: %s)",
                     src->path, name, names);
    } else {
        st = tb_store_sql_fail(src, err, "reading benchmarks");
    }
    sqlite3_finalize(q);
    return st;
}

/* The GP priors of the benchmark that dst lacks (a resumed gp run reads them). */
static tb_status merge_priors(tb_store *dst, tb_store *src, const char *name, tb_error *err)
{
    sqlite3_stmt *q = NULL;
    if (prepare(src->db, "SELECT submission, workload, params FROM priors WHERE benchmark = ?1",
                &q))
        return TB_OK; /* an older store without the table has none */
    sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
    tb_status st = TB_OK;
    int rc;
    while (st == TB_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        char *have = NULL;
        st = tb_store_get_prior(dst, name, text_or_empty(q, 0), text_or_empty(q, 1), &have, err);
        if (st == TB_OK && !have)
            st = tb_store_put_prior(dst, name, text_or_empty(q, 0), text_or_empty(q, 1),
                                    text_or_empty(q, 2), err);
        free(have);
    }
    sqlite3_finalize(q);
    return st;
}

tb_status tb_store_merge_benchmark(tb_store *dst, tb_store *src, const char *name,
                                   tb_store_merge_counts *out, tb_error *err)
{
    if (!dst || !src || !name || !out)
        return tb_store_null(err, "store_merge_benchmark",
                             !dst ? "the target" : !src ? "the source" : !name ? "name" : "out");
    memset(out, 0, sizeof *out);
    char *spec = NULL;
    tb_status st = spec_of(src, name, &spec, err);
    if (st != TB_OK) return st;
    merger m = {.dst = dst, .src = src, .name = name};
    st = tb_store_begin(dst, err);
    const bool in_tx = st == TB_OK;
    if (st == TB_OK) st = tb_store_put_benchmark(dst, name, spec, err);
    if (st == TB_OK) st = merger_init(&m, err);
    if (st == TB_OK) sqlite3_bind_text(m.src_trials, 1, name, -1, SQLITE_TRANSIENT);
    int rc = SQLITE_DONE;
    while (st == TB_OK && (rc = sqlite3_step(m.src_trials)) == SQLITE_ROW)
        st = merge_trial(&m, out, err);
    if (st == TB_OK && rc != SQLITE_DONE) st = tb_store_sql_fail(src, err, "reading its trials");
    if (st == TB_OK) st = merge_priors(dst, src, name, err);
    if (st == TB_OK && out->copied == 0 && out->already > 0)
        st = tb_fail(err, TB_ERR_INVALID,
                     "%s was merged into %s before: its %d finished trial%s of benchmark '%s' "
                     "%s there already, and it has no other; nothing was merged",
                     src->path, dst->path, out->already, out->already == 1 ? "" : "s", name,
                     out->already == 1 ? "is" : "are");
    merger_free(&m);
    free(spec);
    if (in_tx && st == TB_OK) st = tb_store_commit(dst, err);
    else if (in_tx) tb_store_rollback(dst);
    return st;
}

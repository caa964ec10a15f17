/* calibration_store.c: the calibration windows of benchmark runs (the reference step's time,
 * docs/TIME_TO_RESULT.md "Time bases"), the reference step time they give, and a trial's
 * steps at its target (what the reference and steps bases count). One table of its own, created the first time a window
 * is recorded and kept out of the store's schema (store.c), as the hardware and study tables
 * are: the schema version stays, a store without it opens as before (it has no windows), and
 * a build without it ignores it. */
#include "store/store_impl.h"
#include "trainbench/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char calibration_table[] =
    "CREATE TABLE IF NOT EXISTS calibrations("
    "  id INTEGER PRIMARY KEY, benchmark TEXT NOT NULL, workload TEXT NOT NULL,"
    "  algorithm TEXT NOT NULL, device TEXT NOT NULL, threads INTEGER NOT NULL,"
    "  batch_size INTEGER NOT NULL, started_at TEXT NOT NULL DEFAULT (datetime('now')),"
    "  started_unix REAL NOT NULL, trials_before INTEGER NOT NULL, steps INTEGER NOT NULL,"
    "  seconds REAL NOT NULL, cpu_seconds REAL, code_version TEXT NOT NULL);";

tb_status tb_store_add_calibration(tb_store *s, const tb_calibration_record *w, tb_error *err)
{
    if (!s || !w) return tb_store_null(err, "store_add_calibration", !s ? "store" : "window");
    if (w->steps < 1 || !(w->seconds > 0) || !isfinite(w->seconds))
        return tb_fail(err, TB_ERR_INVALID, "a calibration window of %s needs steps >= 1 and "
                       "seconds > 0 (got %lld steps, %g s)", w->workload, (long long)w->steps,
                       w->seconds);
    tb_status st = tb_store_side_tables(s, calibration_table, NULL, 0, "calibration table",
                                        "calibration windows", err);
    if (st != TB_OK) return st;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO calibrations(benchmark, workload, algorithm, device, "
                           "threads, batch_size, started_unix, trials_before, steps, seconds, "
                           "cpu_seconds, code_version) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           -1, &q, NULL) != SQLITE_OK)
        return tb_store_sql_fail(s, err, "recording a calibration window");
    sqlite3_bind_text(q, 1, w->benchmark, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, w->workload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, w->algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, w->device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 5, w->threads);
    sqlite3_bind_int(q, 6, w->batch_size);
    sqlite3_bind_double(q, 7, w->started_unix);
    sqlite3_bind_int(q, 8, w->trials_before);
    sqlite3_bind_int64(q, 9, w->steps);
    sqlite3_bind_double(q, 10, w->seconds);
    tb_store_bind_real(q, 11, w->cpu_seconds);
    sqlite3_bind_text(q, 12, w->code_version, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    st = rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "recording a calibration window");
    sqlite3_finalize(q);
    return st;
}

static bool has_calibrations(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    bool has = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                      "AND name = 'calibrations'", -1, &q, NULL) == SQLITE_OK &&
               sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return has;
}

static void text_at(sqlite3_stmt *q, int i, char *buf, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

static void fill(tb_calibration_record *r, sqlite3_stmt *q)
{
    memset(r, 0, sizeof *r);
    text_at(q, 0, r->benchmark, sizeof r->benchmark);
    text_at(q, 1, r->workload, sizeof r->workload);
    text_at(q, 2, r->algorithm, sizeof r->algorithm);
    text_at(q, 3, r->device, sizeof r->device);
    r->threads = sqlite3_column_int(q, 4);
    r->batch_size = sqlite3_column_int(q, 5);
    text_at(q, 6, r->started_at, sizeof r->started_at);
    r->started_unix = sqlite3_column_double(q, 7);
    r->trials_before = sqlite3_column_int(q, 8);
    r->steps = sqlite3_column_int64(q, 9);
    r->seconds = sqlite3_column_double(q, 10);
    r->cpu_seconds = sqlite3_column_type(q, 11) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 11);
    text_at(q, 12, r->code_version, sizeof r->code_version);
}

tb_status tb_store_calibrations(tb_store *s, const char *benchmark, tb_calibration_record **out,
                                int *n, tb_error *err)
{
    if (!s || !out || !n) return tb_store_null(err, "store_calibrations", !s ? "store" : "out");
    *out = NULL;
    *n = 0;
    if (!has_calibrations(s->db)) return TB_OK;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT benchmark, workload, algorithm, device, threads, batch_size, "
                           "started_at, started_unix, trials_before, steps, seconds, cpu_seconds, "
                           "code_version FROM calibrations WHERE ?1 IS NULL OR benchmark = ?1 "
                           "ORDER BY id", -1, &q, NULL) != SQLITE_OK)
        return tb_store_sql_fail(s, err, "reading the calibration windows");
    if (benchmark) sqlite3_bind_text(q, 1, benchmark, -1, SQLITE_TRANSIENT);
    tb_calibration_record *rows = NULL;
    int cap = 0, rc;
    tb_status st = TB_OK;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            tb_calibration_record *grown = realloc(rows, (size_t)cap * sizeof *rows);
            if (!grown) {
                st = tb_fail(err, TB_ERR_NOMEM, "reading the calibration windows: out of memory");
                break;
            }
            rows = grown;
        }
        fill(&rows[(*n)++], q);
    }
    if (st == TB_OK && rc != SQLITE_DONE)
        st = tb_store_sql_fail(s, err, "reading the calibration windows");
    sqlite3_finalize(q);
    if (st != TB_OK) {
        free(rows);
        *n = 0;
        return st;
    }
    *out = rows;
    return TB_OK;
}

double tb_calibration_step_s(const tb_calibration_record *w, int n, const char *workload)
{
    if (!w || n < 1 || !workload) return NAN;
    double *x = malloc((size_t)n * sizeof *x);
    if (!x) return NAN;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(w[i].workload, workload) == 0 && w[i].steps > 0 && w[i].seconds > 0)
            x[k++] = w[i].seconds / (double)w[i].steps;
    tb_stats_sort(x, k);
    double m = tb_quantile_sorted(x, k, 0.5); /* NaN for none */
    free(x);
    return m;
}

static bool same_step(const tb_calibration_record *a, const tb_calibration_record *b)
{
    return strcmp(a->workload, b->workload) == 0 && strcmp(a->algorithm, b->algorithm) == 0 &&
           strcmp(a->device, b->device) == 0 && a->threads == b->threads &&
           a->batch_size == b->batch_size;
}

double tb_calibration_reference_step_s(const tb_calibration_record *w, int n,
                                       const char *benchmark, const char *workload)
{
    const tb_calibration_record *key = NULL;
    for (int i = 0; w && benchmark && workload && i < n && !key; i++)
        if (strcmp(w[i].benchmark, benchmark) == 0 && strcmp(w[i].workload, workload) == 0)
            key = &w[i];
    if (!key) return NAN;
    tb_calibration_record *same = malloc((size_t)n * sizeof *same);
    if (!same) return NAN;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (same_step(&w[i], key)) same[k++] = w[i];
    double m = tb_calibration_step_s(same, k, workload);
    free(same);
    return m;
}

int64_t tb_trial_steps_to_target(const tb_trial_record *t, const tb_eval_record *ev, int n)
{
    if (!t || !t->reached || !isfinite(t->time_to_target)) return -1;
    /* the eval that decided: its submission time is the time to target, stored as it was */
    for (int i = 0; ev && i < n; i++)
        if (ev[i].submission_time == t->time_to_target) return ev[i].step;
    for (int i = 0; ev && i < n; i++) /* a store that rounded the times */
        if (ev[i].submission_time >= t->time_to_target - 1e-9) return ev[i].step;
    return -1;
}

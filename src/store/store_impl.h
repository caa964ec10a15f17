/* store_impl.h: internals shared by the store's files (not public). */
#ifndef TRAINBENCH_STORE_IMPL_H
#define TRAINBENCH_STORE_IMPL_H

#include "trainbench/store.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>

struct tb_store {
    sqlite3 *db;
    char path[1024];
    bool schema_2; /* the trials table has the resolved and default hyperparameters */
    bool schema_3; /* the trials and evals tables have the conditions (conditions.c) */
    /* the side tables' CREATE texts (tb_store_side_tables) already created and checked on
     * this connection: each is checked once, not at every get and put */
    const char *side_checked[4];
    int n_side_checked;
};

/* TB_ERR_INVALID "fn: what is NULL". */
tb_status tb_store_null(tb_error *err, const char *fn, const char *what);
tb_status tb_store_sql_fail(tb_store *s, tb_error *err, const char *what);
struct tb_throughput_config;
/* Binds a hardware run's settings to q from parameter `at` on: warm-up steps, windows, window
 * steps, window seconds, time limit, seed (hw_store.c). */
void tb_store_hw_bind_settings(sqlite3_stmt *q, int at, const struct tb_throughput_config *c);
tb_status tb_store_exec(tb_store *s, const char *sql, tb_error *err);
/* Runs sql (ALTER TABLE ... ADD COLUMN statements) unless present(db) says the columns are
 * there, in a transaction that checks again (two processes may open an old store at once). */
tb_status tb_store_add_columns(tb_store *s, bool (*present)(sqlite3 *db), const char *sql,
                               tb_error *err);
/* The first column of the tables created by `tables` (CREATE statements) that db lacks, as
 * "table.column" into missing ("" when none), other than the n_excused names of excused (and
 * tables that were added within a schema version, absent whole); false (with why) if the check
 * could not run. */
bool tb_store_missing_column(sqlite3 *db, const char *tables, const char *const *excused,
                             size_t n_excused, char *missing, size_t cap, char *why,
                             size_t why_cap);
/* Creates the tables of `tables` (CREATE TABLE IF NOT EXISTS statements) kept beside the
 * schema, and checks their columns: TB_ERR_FORMAT "its <what> lack column X ...: record
 * <purpose> in another --db" when a table lacks one other than the n_added "table.column"
 * names of `added` (columns added since the table was first written, which the caller adds;
 * side_tables.c). */
tb_status tb_store_side_tables(tb_store *s, const char *tables, const char *const *added,
                               int n_added, const char *what, const char *purpose,
                               tb_error *err);
/* Checks the row q is on (select_trials' columns) before it is read: its text columns are
 * text, and those that name it not empty. Then, once read into t, what it holds. Both fail
 * with TB_ERR_FORMAT naming the store (path), the row, the field and the cause (trial_row.c). */
tb_status tb_store_trial_row_types(const char *path, sqlite3_stmt *q, tb_error *err);
tb_status tb_store_trial_row_check(const char *path, sqlite3_stmt *q, const tb_trial_record *t,
                                   tb_error *err);
/* ---- schema 3: the conditions a trial and each eval ran in (conditions.c) ----
 * The columns as in the CREATE statements; the trials' as selected after the columns of
 * schema 2 (or NULLs in their place in an older store), reset when a trial starts; the evals'
 * names for the INSERT. */
#define TB_STORE_TRIAL_CONDITION_COLUMNS                                                       \
    "  wall_time REAL, cpu_time REAL, load_avg REAL, steal REAL, nivcsw INTEGER,"              \
    "  contended INTEGER, contention TEXT, run_order INTEGER"
#define TB_STORE_EVAL_CONDITION_COLUMNS "  cpu_time REAL, load_avg REAL, steal REAL, nivcsw INTEGER"
#define TB_STORE_TRIAL_CONDITIONS_SELECT                                                       \
    "wall_time, cpu_time, load_avg, steal, nivcsw, contended, contention, run_order"
#define TB_STORE_TRIAL_CONDITIONS_NULL "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
#define TB_STORE_TRIAL_CONDITIONS_RESET                                                        \
    "wall_time=NULL, cpu_time=NULL, load_avg=NULL, steal=NULL, nivcsw=NULL, contended=NULL, "  \
    "contention=NULL, run_order=(SELECT coalesce(max(o.run_order), 0) + 1 FROM trials o "     \
    "WHERE o.benchmark = trials.benchmark)"
#define TB_STORE_EVAL_CONDITIONS_NAMES "cpu_time, load_avg, steal, nivcsw"
/* The ALTER TABLE statements from schema 2 to 3, whether a database has their columns, and
 * their "table.column" names (NULL-terminated). */
extern const char tb_store_schema_3_sql[];
extern const char *const tb_store_schema_3_only[];
bool tb_store_has_schema_3(sqlite3 *db);
/* Reads the trial's conditions from column `at` on (TB_STORE_TRIAL_CONDITIONS_SELECT's order)
 * into t; NULLs as unknown. Binds an eval's conditions from parameter `at` on; reads them from
 * column `at` on when the row has them (an older store's has not: unknown). */
void tb_store_read_trial_conditions(sqlite3_stmt *q, int at, tb_trial_record *t);
void tb_store_bind_eval_conditions(sqlite3_stmt *q, int at, const tb_eval_record *e);
void tb_store_read_eval_conditions(sqlite3_stmt *q, int at, tb_eval_record *e);
/* Binds v, or NULL where it is not finite. */
void tb_store_bind_real(sqlite3_stmt *q, int i, double v);
/* JSON text (malloc'ed) of a hyperparameter point / of the seeds by stream name. */
char *tb_store_hparams_json(const tb_hparams *hp);
char *tb_store_seeds_json(const uint64_t *seeds);

/* AlgoPerf's eval_measurements.csv columns, as the exports write them, and one eval's row
 * under them (export.c). A value the store does not have is an empty field. */
#define TB_EXPORT_EVAL_COLUMNS                                                                 \
    "global_step,preemption_count,score,total_duration,accumulated_submission_time,"           \
    "accumulated_eval_time,accumulated_logging_time,train/accuracy,train/loss,"              \
    "validation/accuracy,validation/loss,validation/error_rate,validation/num_examples,"     \
    "test/accuracy,test/loss,test/error_rate,test/num_examples"
void tb_export_eval_row(FILE *f, const tb_eval_record *e, int preemptions);
/* A CSV field: text quoted where it must be; ",value" or "," for a value that is not finite. */
void tb_export_csv_text(FILE *f, const char *s);
void tb_export_csv_real(FILE *f, double v);
struct cJSON;
/* o[k] = v, or null where v is not finite. */
void tb_export_json_real(struct cJSON *o, const char *k, double v);
/* Before creating a new store at path: TB_ERR_IO saying why it cannot be (its directory does
 * not exist, is not one, is not writable); TB_OK when it may be, or path exists. */
tb_status tb_store_create_check(const char *path, tb_error *err);
/* After creating a new store failed with err (db: its connection, or NULL): says so when the
 * disk is full, else keeps err and returns its status. */
tb_status tb_store_create_failed(const char *path, sqlite3 *db, tb_error *err);

#endif

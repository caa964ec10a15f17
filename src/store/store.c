/* store.c: the SQLite results store: schema, WAL mode, plans, trial lifecycle and evals. */
#include "store/store_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trainbench/textfile.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS benchmarks(name TEXT PRIMARY KEY, spec TEXT NOT NULL,"
    "  created TEXT NOT NULL DEFAULT (datetime('now')));"
    "CREATE TABLE IF NOT EXISTS trials("
    "  id INTEGER PRIMARY KEY, benchmark TEXT NOT NULL, submission TEXT NOT NULL,"
    "  submission_spec TEXT NOT NULL, workload TEXT NOT NULL, ruleset TEXT NOT NULL,"
    "  study INTEGER NOT NULL, trial INTEGER NOT NULL, hparams TEXT NOT NULL,"
    "  seeds TEXT NOT NULL, metric TEXT NOT NULL, target REAL NOT NULL, budget_s REAL NOT NULL,"
    "  eval_period_s REAL NOT NULL, stop_at_target INTEGER NOT NULL,"
    "  status TEXT NOT NULL DEFAULT 'planned', reason TEXT NOT NULL DEFAULT '',"
    "  attempts INTEGER NOT NULL DEFAULT 0, reached INTEGER NOT NULL DEFAULT 0,"
    "  time_to_target REAL, submission_time REAL NOT NULL DEFAULT 0,"
    "  steps INTEGER NOT NULL DEFAULT 0, code_version TEXT NOT NULL DEFAULT '',"
    "  machine TEXT NOT NULL DEFAULT '', started TEXT, finished TEXT,"
    "  resolved_hparams TEXT, default_hparams TEXT," TB_STORE_TRIAL_CONDITION_COLUMNS ","
    "  UNIQUE(benchmark, submission, workload, ruleset, study, trial));"
    "CREATE TABLE IF NOT EXISTS evals("
    "  trial_id INTEGER NOT NULL REFERENCES trials(id), idx INTEGER NOT NULL,"
    "  step INTEGER NOT NULL, submission_time REAL NOT NULL, eval_time REAL NOT NULL,"
    "  total_duration REAL NOT NULL, train_loss REAL, train_accuracy REAL, train_error REAL,"
    "  validation_loss REAL, validation_accuracy REAL, validation_error REAL,"
    "  validation_examples INTEGER, test_loss REAL, test_accuracy REAL, test_error REAL,"
    "  test_examples INTEGER," TB_STORE_EVAL_CONDITION_COLUMNS ", PRIMARY KEY(trial_id, idx));"
    "CREATE TABLE IF NOT EXISTS priors(benchmark TEXT NOT NULL, submission TEXT NOT NULL,"
    "  workload TEXT NOT NULL, params TEXT NOT NULL,"
    "  PRIMARY KEY(benchmark, submission, workload));"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('format', 'trainbench-store'),"
    "  ('schema_version', '3');"; /* TB_STORE_SCHEMA_VERSION */

/* Schema 1 (before resolved hyperparameters) to 2: the two columns the trials table gained. */
static const char schema_2_columns[] =
    "ALTER TABLE trials ADD COLUMN resolved_hparams TEXT;"
    "ALTER TABLE trials ADD COLUMN default_hparams TEXT;"
    "UPDATE meta SET value='2' WHERE key='schema_version';";

/* Whether the trials table has schema 2's columns. */
static bool has_schema_2(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    bool ok = sqlite3_prepare_v2(db, "SELECT resolved_hparams, default_hparams FROM trials "
                                     "LIMIT 0", -1, &q, NULL) == SQLITE_OK;
    sqlite3_finalize(q);
    return ok;
}

tb_status tb_store_add_columns(tb_store *s, bool (*present)(sqlite3 *db), const char *sql,
                               tb_error *err)
{
    if (present(s->db)) return TB_OK;
    tb_status st = tb_store_exec(s, "BEGIN IMMEDIATE", err);
    if (st != TB_OK) return st;
    if (!present(s->db)) st = tb_store_exec(s, sql, err);
    if (st != TB_OK) {
        tb_store_exec(s, "ROLLBACK", NULL);
        return st;
    }
    return tb_store_exec(s, "COMMIT", err);
}

/* Brings a writable store to schema 3: schema 2's columns, then the conditions'
 * (conditions.c). */
static tb_status upgrade_schema(tb_store *s, tb_error *err)
{
    tb_status st = tb_store_add_columns(s, has_schema_2, schema_2_columns, err);
    if (st == TB_OK)
        st = tb_store_add_columns(s, tb_store_has_schema_3, tb_store_schema_3_sql, err);
    return st;
}

static const char *status_names[] = {"planned", "running", "done", "failed"};

const char *tb_trial_status_name(tb_trial_status st)
{
    return (unsigned)st < 4 ? status_names[st] : "unknown";
}

static tb_trial_status status_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (s && strcmp(s, status_names[i]) == 0) return (tb_trial_status)i;
    return TB_TRIAL_FAILED;
}

tb_status tb_store_null(tb_error *err, const char *fn, const char *what)
{
    return tb_fail(err, TB_ERR_INVALID, "%s: %s is NULL", fn, what);
}

tb_status tb_store_sql_fail(tb_store *s, tb_error *err, const char *what)
{
    return tb_fail(err, TB_ERR_IO, "results store %s: %s: %s", s->path, what,
                   sqlite3_errmsg(s->db));
}

tb_status tb_store_exec(tb_store *s, const char *sql, tb_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        tb_status st = tb_fail(err, TB_ERR_IO, "results store %s: %s", s->path,
                               msg ? msg : "error");
        sqlite3_free(msg);
        return st;
    }
    return TB_OK;
}

#define TB_STORE_SCHEMA_VERSION "3"
/* Schema 1 lacks these columns of schemas 2 and 3, schema 2 those of 3 (the conditions, from
 * tb_store_schema_3_only on): a writable open adds them (upgrade_schema), a read-only one reads
 * NULL for them. */
static const char *const schema_2_only[] = {"trials.resolved_hparams", "trials.default_hparams"};
/* Tables added to a schema version after it was released: a store without one gets it when
 * opened to write (CREATE TABLE IF NOT EXISTS), and reads that need it find it empty there. */
static const char *const added_tables[] = {"priors"};

static bool table_exists(sqlite3 *db, const char *table)
{
    sqlite3_stmt *q = NULL;
    bool found = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                        "name = ?1", -1, &q, NULL) == SQLITE_OK &&
                 sqlite3_bind_text(q, 1, table, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
                 sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return found;
}

/* The first "table.column" of the tables of `tables` (CREATE statements) that `db` lacks, other
 * than the n_excused names in excused and the tables of added_tables that it lacks whole: ""
 * when it has them all. The reference is the statements themselves, run in memory, so the check
 * cannot drift from them. Returns false if the check could not run (sets why). */
bool tb_store_missing_column(sqlite3 *db, const char *tables, const char *const *excused,
                             size_t n_excused, char *missing, size_t cap, char *why,
                             size_t why_cap)
{
    sqlite3 *ref = NULL;
    sqlite3_stmt *cols = NULL, *has = NULL;
    bool ok = sqlite3_open(":memory:", &ref) == SQLITE_OK &&
              sqlite3_exec(ref, tables, NULL, NULL, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(ref,
                                 "SELECT m.name, p.name FROM sqlite_master m, "
                                 "pragma_table_info(m.name) p WHERE m.type = 'table'",
                                 -1, &cols, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db,
                                 "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                                 -1, &has, NULL) == SQLITE_OK;
    missing[0] = '\0';
    while (ok && !missing[0] && sqlite3_step(cols) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(cols, 0),
                   *column = (const char *)sqlite3_column_text(cols, 1);
        bool added = false;
        for (size_t i = 0; i < sizeof added_tables / sizeof *added_tables; i++)
            added = added || strcmp(table, added_tables[i]) == 0;
        if (added && !table_exists(db, table)) continue;
        sqlite3_reset(has);
        sqlite3_bind_text(has, 1, table, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(has, 2, column, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(has) == SQLITE_ROW;
        if (ok && sqlite3_column_int(has, 0) == 0) {
            snprintf(missing, cap, "%s.%s", table, column);
            for (size_t i = 0; i < n_excused; i++)
                if (strcmp(missing, excused[i]) == 0) missing[0] = '\0';
        }
    }
    if (!ok) snprintf(why, why_cap, "%s", sqlite3_errmsg(has ? db : ref ? ref : db));
    sqlite3_finalize(has);
    sqlite3_finalize(cols);
    sqlite3_close(ref);
    return ok;
}

/* A store's schema version and tables against this build's: true if they match (else sets why,
 * before anything is written to the file). */
static bool schema_is_current(sqlite3 *db, char *why, size_t cap)
{
    sqlite3_stmt *q = NULL;
    char version[64] = "none";
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(version, sizeof version, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    /* schemas 1 and 2 are read as they are and upgraded when opened to write */
    const bool v1 = strcmp(version, "1") == 0, v2 = strcmp(version, "2") == 0;
    if (!v1 && !v2 && strcmp(version, TB_STORE_SCHEMA_VERSION) != 0) {
        snprintf(why, cap, "schema version %s; this build reads versions 1 to %s", version,
                 TB_STORE_SCHEMA_VERSION);
        return false;
    }
    const char *excused[32];
    size_t n_excused = 0;
    for (size_t i = 0; v1 && i < sizeof schema_2_only / sizeof *schema_2_only; i++)
        excused[n_excused++] = schema_2_only[i];
    for (size_t i = 0; (v1 || v2) && tb_store_schema_3_only[i]; i++)
        excused[n_excused++] = tb_store_schema_3_only[i];
    char missing[160];
    if (!tb_store_missing_column(db, schema, excused, n_excused, missing, sizeof missing, why,
                                 cap))
        return false;
    if (missing[0]) {
        snprintf(why, cap, "schema version %s but no column %s: written by another build",
                 version, missing);
        return false;
    }
    return true;
}

/* What the database holds: 1 a trainbench store (its format row) of this build's schema, 0
 * nothing at all (a new file), -2 a store of another schema, -1 something else (other tables,
 * or no readable schema). Sets why for -1 and -2. */
static int store_kind(sqlite3 *db, char *why, size_t cap)
{
    sqlite3_stmt *q = NULL;
    int kind = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        snprintf(why, cap, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(q);
        return -1;
    }
    const int64_t objects = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    if (objects == 0) return 0;
    q = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='format'", -1, &q, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_text(q, 0) &&
        strcmp((const char *)sqlite3_column_text(q, 0), "trainbench-store") == 0)
        kind = 2; /* a store: its schema is checked below */
    else if (rc == SQLITE_ROW || rc == SQLITE_DONE || sqlite3_errcode(db) == SQLITE_ERROR)
        snprintf(why, cap, "a SQLite database without trainbench's tables"); /* no meta table */
    else
        snprintf(why, cap, "%s", sqlite3_errmsg(db)); /* malformed, unreadable */
    sqlite3_finalize(q);
    if (kind == 2) kind = schema_is_current(db, why, cap) ? 1 : -2;
    return kind;
}

/* "file:PATH?immutable=1" with PATH percent-encoded where a URI needs it. */
static void immutable_uri(const char *path, char *uri, size_t cap)
{
    size_t o = (size_t)snprintf(uri, cap, "file:");
    for (const char *p = path; *p && o + 4 < cap; p++) {
        if (*p == '?' || *p == '#' || *p == '%')
            o += (size_t)snprintf(uri + o, cap - o, "%%%02X", (unsigned char)*p);
        else
            uri[o++] = *p;
    }
    snprintf(uri + o, cap - o, "?immutable=1");
}

static tb_status open_store(const char *path, bool writable, tb_store **out, tb_error *err)
{
    if (!path || !out) return tb_store_null(err, "store_open", path ? "out" : "path");
    *out = NULL;
    if (!path[0] || strcmp(path, ":memory:") == 0 || path[0] == ':')
        return tb_fail(err, TB_ERR_INVALID,
                       "results store: '%s' must be a file path (an in-memory store would not "
                       "outlive the command, nor be seen by a trial's process)",
                       path);
    if (!writable && access(path, F_OK) != 0)
        return tb_fail(err, TB_ERR_INVALID, "results store %s does not exist", path);
    /* never opened: SQLite would block on a FIFO opened to read, or fail vaguely */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return tb_fail(err, TB_ERR_IO, "results store %s is %s, not a regular file", path,
                       tb_file_kind(sb.st_mode));
    const bool created = writable && access(path, F_OK) != 0;
    if (created) {
        tb_status st = tb_store_create_check(path, err);
        if (st != TB_OK) return st;
    }
    tb_store *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the results store");
    snprintf(s->path, sizeof s->path, "%s", path);
    /* a reader whose user may write the file opens it read-write all the same (it writes
     * nothing): closing such a connection removes the WAL and shared-memory files, which a
     * read-only connection leaves behind */
    const int flags = writable                   ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                      : access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE
                                                : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        tb_status st = tb_fail(err, TB_ERR_IO, "cannot open results store %s: %s", path,
                               s->db ? sqlite3_errmsg(s->db) : "out of memory");
        if (created) st = tb_store_create_failed(path, s->db, err);
        tb_store_close(s);
        return st;
    }
    sqlite3_busy_timeout(s->db, 30000);
    if (writable && sqlite3_db_readonly(s->db, "main") == 1) {
        tb_status st = tb_fail(err, TB_ERR_IO, "results store %s is read-only (a benchmark writes "
                               "its plan and results there; `score` and `export` only read)", path);
        tb_store_close(s);
        return st;
    }
    /* nothing is written before the file is known to be a store or empty: another program's
     * database is refused as it was found */
    char why[256] = "";
    int kind = store_kind(s->db, why, sizeof why);
    /* another connection creating the store at this moment (a benchmark starting while a
     * reader polls) can make the first read fail as busy before the busy handler applies:
     * try again for up to the busy timeout */
    for (int tries = 0; kind == -1 && tries < 600; tries++) {
        const int code = sqlite3_errcode(s->db) & 0xff;
        if (code != SQLITE_BUSY && code != SQLITE_LOCKED) break;
        sqlite3_sleep(50);
        kind = store_kind(s->db, why, sizeof why);
    }
    const int code = sqlite3_errcode(s->db) & 0xff;
    if (kind == -1 && !writable && (code == SQLITE_READONLY || code == SQLITE_CANTOPEN)) {
        /* a store in WAL mode whose directory this user cannot write, or on a read-only file
         * system: SQLite cannot create the shared-memory file a reader needs, so read the file
         * as it is (immutable) */
        sqlite3_close(s->db);
        s->db = NULL;
        char uri[sizeof s->path * 3 + 32];
        immutable_uri(path, uri, sizeof uri);
        if (sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) ==
            SQLITE_OK)
            kind = store_kind(s->db, why, sizeof why);
    }
    tb_status st = TB_OK;
    if (kind == -2)
        st = tb_fail(err, TB_ERR_FORMAT,
                     "%s is a trainbench results store of another schema (%s): read it with the "
                     "build that wrote it, or start a new store with another --db",
                     path, why);
    else if (kind < 0 || (kind == 0 && !writable))
        st = tb_fail(err, TB_ERR_FORMAT, "%s is not a trainbench results store (%s)", path,
                     kind == 0 ? "an empty database" : why);
    if (st == TB_OK && writable) {
        st = tb_store_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", err);
        if (st == TB_OK) st = tb_store_exec(s, schema, err);
        if (st == TB_OK) st = upgrade_schema(s, err);
        if (st != TB_OK && created) st = tb_store_create_failed(path, s->db, err);
    }
    /* a store of schema 1 or 2 opened read-only reads its trials without the new columns */
    if (st == TB_OK) s->schema_2 = has_schema_2(s->db);
    if (st == TB_OK) s->schema_3 = tb_store_has_schema_3(s->db);
    if (st != TB_OK) {
        tb_store_close(s);
        return st;
    }
    *out = s;
    return TB_OK;
}

tb_status tb_store_open(const char *path, tb_store **out, tb_error *err)
{
    return open_store(path, true, out, err);
}

tb_status tb_store_open_readonly(const char *path, tb_store **out, tb_error *err)
{
    return open_store(path, false, out, err);
}

void tb_store_close(tb_store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

tb_status tb_store_begin(tb_store *s, tb_error *err)
{
    if (!s) return tb_store_null(err, "store_begin", "the store");
    return tb_store_exec(s, "BEGIN IMMEDIATE", err);
}

tb_status tb_store_commit(tb_store *s, tb_error *err)
{
    if (!s) return tb_store_null(err, "store_commit", "the store");
    return tb_store_exec(s, "COMMIT", err);
}

void tb_store_rollback(tb_store *s)
{
    if (s) tb_store_exec(s, "ROLLBACK", NULL);
}

/* Whether the number tokens after "key": in two texts differ (integers such as seeds beyond
 * 2^53 that cJSON's doubles see as equal). */
static bool number_text_differs(const char *a, const char *b, const char *key)
{
    char k[160];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *x = strstr(a, k), *y = strstr(b, k);
    if (!x || !y) return false;
    x += strlen(k);
    y += strlen(k);
    size_t nx = strcspn(x, ",}]"), ny = strcspn(y, ",}]");
    return nx != ny || strncmp(x, y, nx) != 0;
}

/* The top-level keys in which two specs (JSON objects) differ, comma-separated, into buf;
 * *b_only: whether some key of b is missing from a (a spec written by an earlier version). */
static void spec_differences(const char *a_text, const char *b_text, char *buf, size_t cap,
                             bool *b_only)
{
    buf[0] = 0;
    *b_only = false;
    cJSON *a = cJSON_Parse(a_text), *b = cJSON_Parse(b_text);
    for (int pass = 0; a && b && pass < 2; pass++) {
        const cJSON *x = pass ? b : a, *y = pass ? a : b;
        for (const cJSON *k = x->child; k; k = k->next) {
            const cJSON *other = cJSON_GetObjectItemCaseSensitive(y, k->string);
            if (pass && other) continue; /* compared in the first pass */
            if (pass && !other) *b_only = true;
            if (other && cJSON_Compare(k, other, true) &&
                !(cJSON_IsNumber(k) && number_text_differs(a_text, b_text, k->string)))
                continue;
            if (buf[0]) strncat(buf, ", ", cap - strlen(buf) - 1);
            strncat(buf, k->string ? k->string : "?", cap - strlen(buf) - 1);
        }
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
}

tb_status tb_store_put_benchmark(tb_store *s, const char *name, const char *spec, tb_error *err)
{
    if (!s || !name || !spec)
        return tb_store_null(err, "store_put_benchmark",
                             !s ? "the store" : !name ? "name" : "spec");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT spec FROM benchmarks WHERE name=?", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "reading benchmarks");
    sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    tb_status st = TB_OK;
    if (rc == SQLITE_ROW) {
        const char *old = (const char *)sqlite3_column_text(q, 0);
        if (strcmp(old, spec) != 0) {
            char diff[256];
            bool older;
            spec_differences(old, spec, diff, sizeof diff, &older);
            st = tb_fail(err, TB_ERR_INVALID,
                         "benchmark '%s' in %s was planned with a different spec (it differs "
                         "in: %s%s); its trials are not reused for other settings: choose another "
                         "name (--name) or another results file (planned spec: %s)", name,
                         s->path, diff[0] ? diff : "its text",
                         older ? "; it was planned by an earlier trainbench, whose spec did not "
                                 "record all of them, and cannot be resumed by this one"
                               : "",
                         old);
        }
        sqlite3_finalize(q);
        return st;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return tb_store_sql_fail(s, err, "reading benchmarks");
    if (sqlite3_prepare_v2(s->db, "INSERT INTO benchmarks(name, spec) VALUES(?, ?)", -1, &q,
                           NULL))
        return tb_store_sql_fail(s, err, "planning a benchmark");
    sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, spec, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "planning a benchmark");
}

tb_status tb_store_benchmarks(tb_store *s, char ***names, int *n, tb_error *err)
{
    if (!s || !names || !n)
        return tb_store_null(err, "store_benchmarks", !s ? "the store" : !names ? "names" : "n");
    *names = NULL;
    *n = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM benchmarks ORDER BY created, name", -1, &q,
                           NULL))
        return tb_store_sql_fail(s, err, "reading benchmarks");
    int cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            char **nn = realloc(*names, (size_t)cap * sizeof *nn);
            if (!nn) break;
            *names = nn;
        }
        (*names)[(*n)++] = strdup((const char *)sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) { /* a corrupt file reads as an error, not as an empty store */
        tb_status st = rc == SQLITE_ROW
                           ? tb_fail(err, TB_ERR_NOMEM, "results store %s: out of memory", s->path)
                           : tb_store_sql_fail(s, err, "reading benchmarks");
        for (int i = 0; i < *n; i++) free((*names)[i]);
        free(*names);
        *names = NULL;
        *n = 0;
        return st;
    }
    return TB_OK;
}

void tb_store_benchmark_list(tb_store *s, char *buf, size_t cap)
{
    char **names = NULL;
    int n = 0;
    if (!buf || cap == 0) return;
    buf[0] = 0;
    if (tb_store_benchmarks(s, &names, &n, NULL) != TB_OK) n = 0;
    for (int i = 0; i < n; i++) {
        strncat(buf, i ? ", " : "", cap - strlen(buf) - 1);
        strncat(buf, names[i], cap - strlen(buf) - 1);
        free(names[i]);
    }
    free(names);
    if (n == 0) snprintf(buf, cap, "none");
}

/* ---- JSON text of hyperparameters and seeds ------------------------------------------------ */
char *tb_store_hparams_json(const tb_hparams *hp)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; hp && i < hp->count; i++)
        cJSON_AddNumberToObject(o, hp->names[i], hp->values[i]);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static void hparams_from_json(const char *text, tb_hparams *hp)
{
    memset(hp, 0, sizeof *hp);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    for (const cJSON *v = o ? o->child : NULL; v; v = v->next)
        if (cJSON_IsNumber(v)) tb_hparams_set(hp, v->string, v->valuedouble, NULL);
    cJSON_Delete(o);
}

char *tb_store_seeds_json(const uint64_t *seeds)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "{");
    for (int i = 0; i < TB_STREAM_COUNT; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\"%s\":%llu", i ? "," : "",
                      tb_stream_name((tb_stream)i), (unsigned long long)seeds[i]);
    snprintf(buf + n, sizeof buf - (size_t)n, "}");
    return strdup(buf);
}

/* The seeds are read from the text, not through cJSON's doubles, which hold only 53 bits. */
static void seeds_from_json(const char *text, uint64_t *seeds)
{
    memset(seeds, 0, TB_STREAM_COUNT * sizeof *seeds);
    for (int i = 0; text && i < TB_STREAM_COUNT; i++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\"", tb_stream_name((tb_stream)i));
        const char *p = strstr(text, key);
        if (!p) continue;
        p += strlen(key);
        while (*p == ' ' || *p == ':') p++;
        if (*p >= '0' && *p <= '9') seeds[i] = strtoull(p, NULL, 10);
    }
}

/* ---- trials ---------------------------------------------------------------------------------- */
#define TRIAL_COLUMNS_1                                                                         \
    "id, benchmark, submission, submission_spec, workload, ruleset, study, trial, hparams, "    \
    "seeds, metric, target, budget_s, eval_period_s, stop_at_target, status, reason, attempts, " \
    "reached, time_to_target, submission_time, steps, code_version, machine, "

/* SELECT <the columns read_trial reads> FROM trials <rest> into sql (schema 1: NULL for the
 * columns of schema 2; schemas 1 and 2: NULL for those of 3). */
static const char *select_trials(const tb_store *s, const char *rest, char *sql, size_t cap)
{
    snprintf(sql, cap, "SELECT " TRIAL_COLUMNS_1 "%s, %s FROM trials %s",
             s->schema_2 ? "resolved_hparams, default_hparams" : "NULL, NULL",
             s->schema_3 ? TB_STORE_TRIAL_CONDITIONS_SELECT : TB_STORE_TRIAL_CONDITIONS_NULL,
             rest);
    return sql;
}

static void copy_text(char *dst, size_t cap, sqlite3_stmt *q, int col)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

static tb_status read_trial(const tb_store *s, sqlite3_stmt *q, tb_trial_record *t,
                            tb_error *err)
{
    memset(t, 0, sizeof *t);
    tb_status st = tb_store_trial_row_types(s->path, q, err); /* before a column converts */
    if (st != TB_OK) return st;
    t->id = sqlite3_column_int64(q, 0);
    copy_text(t->benchmark, sizeof t->benchmark, q, 1);
    copy_text(t->submission, sizeof t->submission, q, 2);
    copy_text(t->submission_spec, sizeof t->submission_spec, q, 3);
    copy_text(t->workload, sizeof t->workload, q, 4);
    copy_text(t->ruleset, sizeof t->ruleset, q, 5);
    t->study = sqlite3_column_int(q, 6);
    t->trial = sqlite3_column_int(q, 7);
    hparams_from_json((const char *)sqlite3_column_text(q, 8), &t->hparams);
    seeds_from_json((const char *)sqlite3_column_text(q, 9), t->seeds);
    copy_text(t->metric, sizeof t->metric, q, 10);
    t->target = sqlite3_column_double(q, 11);
    t->budget_s = sqlite3_column_double(q, 12);
    t->eval_period_s = sqlite3_column_double(q, 13);
    t->stop_at_target = sqlite3_column_int(q, 14) != 0;
    t->status = status_parse((const char *)sqlite3_column_text(q, 15));
    copy_text(t->reason, sizeof t->reason, q, 16);
    t->attempts = sqlite3_column_int(q, 17);
    t->reached = sqlite3_column_int(q, 18) != 0;
    t->time_to_target = sqlite3_column_type(q, 19) == SQLITE_NULL ? INFINITY
                                                                  : sqlite3_column_double(q, 19);
    t->submission_time = sqlite3_column_double(q, 20);
    t->steps = sqlite3_column_int64(q, 21);
    copy_text(t->code_version, sizeof t->code_version, q, 22);
    copy_text(t->machine, sizeof t->machine, q, 23);
    hparams_from_json((const char *)sqlite3_column_text(q, 24), &t->resolved_hparams);
    hparams_from_json((const char *)sqlite3_column_text(q, 25), &t->default_hparams);
    tb_store_read_trial_conditions(q, 26, t);
    return tb_store_trial_row_check(s->path, q, t, err);
}

tb_status tb_store_plan_trial(tb_store *s, tb_trial_record *t, tb_error *err)
{
    if (!s || !t) return tb_store_null(err, "store_plan_trial", s ? "the trial" : "the store");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR IGNORE INTO trials(benchmark, submission, submission_spec, "
                           "workload, ruleset, study, trial, hparams, seeds, metric, target, "
                           "budget_s, eval_period_s, stop_at_target) "
                           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "planning a trial");
    char *hp = tb_store_hparams_json(&t->hparams);
    char *seeds = tb_store_seeds_json(t->seeds);
    sqlite3_bind_text(q, 1, t->benchmark, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, t->submission, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, t->submission_spec, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, t->workload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 5, t->ruleset, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 6, t->study);
    sqlite3_bind_int(q, 7, t->trial);
    sqlite3_bind_text(q, 8, hp ? hp : "{}", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 9, seeds ? seeds : "{}", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 10, t->metric, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(q, 11, t->target);
    sqlite3_bind_double(q, 12, t->budget_s);
    sqlite3_bind_double(q, 13, t->eval_period_s);
    sqlite3_bind_int(q, 14, t->stop_at_target);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    free(hp);
    free(seeds);
    if (rc != SQLITE_DONE) return tb_store_sql_fail(s, err, "planning a trial");
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id FROM trials WHERE benchmark=? AND submission=? AND "
                           "workload=? AND ruleset=? AND study=? AND trial=?", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "planning a trial");
    sqlite3_bind_text(q, 1, t->benchmark, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, t->submission, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, t->workload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, t->ruleset, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 5, t->study);
    sqlite3_bind_int(q, 6, t->trial);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) t->id = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? TB_OK : tb_store_sql_fail(s, err, "planning a trial");
}

tb_status tb_store_trials(tb_store *s, const char *benchmark, tb_trial_record **out, int *n,
                          tb_error *err)
{
    if (!s || !out || !n)
        return tb_store_null(err, "store_trials", !s ? "the store" : !out ? "out" : "n");
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q = NULL;
    char buf[1024];
    const char *sql = select_trials(s, benchmark ? "WHERE benchmark=? ORDER BY id" : "ORDER BY id",
                                    buf, sizeof buf);
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL))
        return tb_store_sql_fail(s, err, "reading trials");
    if (benchmark) sqlite3_bind_text(q, 1, benchmark, -1, SQLITE_TRANSIENT);
    int cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            tb_trial_record *nt = realloc(*out, (size_t)cap * sizeof *nt);
            if (!nt) {
                sqlite3_finalize(q);
                return tb_fail(err, TB_ERR_NOMEM, "reading trials: out of memory");
            }
            *out = nt;
        }
        tb_status st = read_trial(s, q, &(*out)[(*n)++], err);
        if (st != TB_OK) {
            sqlite3_finalize(q);
            free(*out);
            *out = NULL;
            *n = 0;
            return st;
        }
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "reading trials");
}

tb_status tb_store_trial_get(tb_store *s, int64_t id, tb_trial_record *out, tb_error *err)
{
    if (!s || !out) return tb_store_null(err, "store_trial_get", s ? "out" : "the store");
    sqlite3_stmt *q = NULL;
    char sql[1024];
    if (sqlite3_prepare_v2(s->db, select_trials(s, "WHERE id=?", sql, sizeof sql), -1, &q, NULL))
        return tb_store_sql_fail(s, err, "reading a trial");
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    tb_status st = rc == SQLITE_ROW ? read_trial(s, q, out, err) : TB_OK;
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW) return st;
    return tb_fail(err, TB_ERR_INVALID, "results store %s has no trial %lld", s->path,
                   (long long)id);
}

tb_status tb_store_trial_start(tb_store *s, int64_t id, const char *code_version,
                               const char *machine, tb_error *err)
{
    if (!s || !code_version || !machine)
        return tb_store_null(err, "store_trial_start",
                             !s ? "the store" : !code_version ? "code_version" : "machine");
    tb_status st = tb_store_exec(s, "BEGIN IMMEDIATE", err);
    if (st != TB_OK) return st;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, "DELETE FROM evals WHERE trial_id=?", -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, id);
        rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db,
                                "UPDATE trials SET status='running', attempts=attempts+1, "
                                "reason='', reached=0, time_to_target=NULL, submission_time=0, "
                                "steps=0, code_version=?, machine=?, started=datetime('now'), "
                                "finished=NULL, resolved_hparams=NULL, default_hparams=NULL, "
                                TB_STORE_TRIAL_CONDITIONS_RESET " WHERE id=?", -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(q, 1, code_version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(q, 2, machine, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 3, id);
        rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_OK) {
        st = tb_store_sql_fail(s, err, "starting a trial");
        tb_store_exec(s, "ROLLBACK", NULL);
        return st;
    }
    return tb_store_exec(s, "COMMIT", err);
}

static void bind_real(sqlite3_stmt *q, int i, double v)
{
    if (isfinite(v)) sqlite3_bind_double(q, i, v);
    else sqlite3_bind_null(q, i);
}

tb_status tb_store_add_eval(tb_store *s, int64_t trial_id, const tb_eval_record *e,
                            tb_error *err)
{
    if (!s || !e) return tb_store_null(err, "store_add_eval", s ? "the eval" : "the store");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO evals(trial_id, idx, step, submission_time, "
                           "eval_time, total_duration, train_loss, train_accuracy, train_error, "
                           "validation_loss, validation_accuracy, validation_error, "
                           "validation_examples, test_loss, test_accuracy, test_error, "
                           "test_examples, " TB_STORE_EVAL_CONDITIONS_NAMES ") "
                           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &q, NULL))
        return tb_store_sql_fail(s, err, "recording an eval");
    sqlite3_bind_int64(q, 1, trial_id);
    sqlite3_bind_int(q, 2, e->index);
    sqlite3_bind_int64(q, 3, e->step);
    sqlite3_bind_double(q, 4, e->submission_time);
    sqlite3_bind_double(q, 5, e->eval_time);
    sqlite3_bind_double(q, 6, e->total_duration);
    const double r[] = {e->train_loss, e->train_accuracy, e->train_error, e->validation_loss,
                        e->validation_accuracy, e->validation_error};
    for (int i = 0; i < 6; i++) bind_real(q, 7 + i, r[i]);
    sqlite3_bind_int64(q, 13, e->validation_examples);
    bind_real(q, 14, e->test_loss);
    bind_real(q, 15, e->test_accuracy);
    bind_real(q, 16, e->test_error);
    sqlite3_bind_int64(q, 17, e->test_examples);
    tb_store_bind_eval_conditions(q, 18, e);
    int rc = sqlite3_step(q); /* autocommit: one transaction per eval */
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "recording an eval");
}

tb_status tb_store_trial_hparams(tb_store *s, int64_t id, const tb_hparams *resolved,
                                 const tb_hparams *defaults, tb_error *err)
{
    if (!s || !resolved || !defaults)
        return tb_store_null(err, "store_trial_hparams",
                             !s ? "the store" : !resolved ? "resolved" : "defaults");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE trials SET resolved_hparams=?, default_hparams=? WHERE id=?",
                           -1, &q, NULL))
        return tb_store_sql_fail(s, err, "recording a trial's hyperparameters");
    char *values = tb_store_hparams_json(resolved), *dflt = tb_store_hparams_json(defaults);
    sqlite3_bind_text(q, 1, values ? values : "{}", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, dflt ? dflt : "{}", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 3, id);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    free(values);
    free(dflt);
    return rc == SQLITE_DONE ? TB_OK
                             : tb_store_sql_fail(s, err, "recording a trial's hyperparameters");
}

tb_status tb_store_trial_finish(tb_store *s, int64_t id, tb_trial_status status,
                                const char *reason, bool reached, double ttt, double sub_time,
                                int64_t steps, tb_error *err)
{
    if (!s) return tb_store_null(err, "store_trial_finish", "the store");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE trials SET status=?, reason=?, reached=?, time_to_target=?, "
                           "submission_time=?, steps=?, finished=datetime('now') WHERE id=?",
                           -1, &q, NULL))
        return tb_store_sql_fail(s, err, "finishing a trial");
    sqlite3_bind_text(q, 1, tb_trial_status_name(status), -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, reason ? reason : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 3, reached);
    bind_real(q, 4, reached ? ttt : INFINITY);
    sqlite3_bind_double(q, 5, sub_time);
    sqlite3_bind_int64(q, 6, steps);
    sqlite3_bind_int64(q, 7, id);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "finishing a trial");
}

static double col_real(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? NAN : sqlite3_column_double(q, c);
}

tb_status tb_store_evals(tb_store *s, int64_t trial_id, tb_eval_record **out, int *n,
                         tb_error *err)
{
    if (!s || !out || !n)
        return tb_store_null(err, "store_evals", !s ? "the store" : !out ? "out" : "n");
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT * FROM evals WHERE trial_id=? ORDER BY idx", -1, &q,
                           NULL))
        return tb_store_sql_fail(s, err, "reading evals");
    sqlite3_bind_int64(q, 1, trial_id);
    int cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            tb_eval_record *ne = realloc(*out, (size_t)cap * sizeof *ne);
            if (!ne) {
                sqlite3_finalize(q);
                return tb_fail(err, TB_ERR_NOMEM, "reading evals: out of memory");
            }
            *out = ne;
        }
        tb_eval_record *e = &(*out)[(*n)++];
        e->index = sqlite3_column_int(q, 1);
        e->step = sqlite3_column_int64(q, 2);
        e->submission_time = sqlite3_column_double(q, 3);
        e->eval_time = sqlite3_column_double(q, 4);
        e->total_duration = sqlite3_column_double(q, 5);
        e->train_loss = col_real(q, 6);
        e->train_accuracy = col_real(q, 7);
        e->train_error = col_real(q, 8);
        e->validation_loss = col_real(q, 9);
        e->validation_accuracy = col_real(q, 10);
        e->validation_error = col_real(q, 11);
        e->validation_examples = sqlite3_column_int64(q, 12);
        e->test_loss = col_real(q, 13);
        e->test_accuracy = col_real(q, 14);
        e->test_error = col_real(q, 15);
        e->test_examples = sqlite3_column_int64(q, 16);
        tb_store_read_eval_conditions(q, 17, e);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? TB_OK : tb_store_sql_fail(s, err, "reading evals");
}

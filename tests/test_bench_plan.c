/* test_bench_plan.c: what a benchmark plans and keeps: seeds above 2^53 held exactly from the
 * spec through the store to the exports; submission libraries named without '/' loaded from
 * the current directory, never searched for, and one that crashes while loading caught;
 * built-ins' search spaces checked against their
 * optimizer before anything is planned, and part of the spec with the per-trial timeout; a
 * store failing inside a trial's process reported as the benchmark's error, the trial rerun;
 * one run of a benchmark at a time. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/tb_test_bench_plan_XXXXXX";

static void store_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "%s/%s.db", dir, tag);
}

static tb_bench_spec small_spec(const char *const *subs, int n)
{
    return tb_test_bench_spec(subs, n, 0.2, 100);
}

static char *spec_text(const char *db, const char *name)
{
    sqlite3 *h = NULL;
    char *text = NULL;
    if (sqlite3_open(db, &h) == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        sqlite3_prepare_v2(h, "SELECT spec FROM benchmarks WHERE name=?", -1, &q, NULL);
        sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
        if (q && sqlite3_step(q) == SQLITE_ROW)
            text = strdup((const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return text;
}

/* A trial of sgd on fmnist_mlp under external tuning in benchmark `name`, to plan by hand. */
static tb_trial_record sgd_trial(const char *name)
{
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.benchmark, sizeof t.benchmark, "%s", name);
    snprintf(t.submission, sizeof t.submission, "sgd");
    snprintf(t.workload, sizeof t.workload, "fmnist_mlp");
    snprintf(t.ruleset, sizeof t.ruleset, "external");
    return t;
}

/* Seeds above 2^53 (where doubles lose integers) are kept exactly. */
static void test_seeds_exact(void)
{
    char db[300];
    store_path(db, sizeof db, "seeds");
    tb_error err = {0};
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    /* the store: a planned trial's seeds read back bit for bit */
    tb_trial_record t = sgd_trial("raw");
    snprintf(t.metric, sizeof t.metric, "error_rate");
    t.budget_s = 1;
    t.eval_period_s = 1;
    const uint64_t want[TB_STREAM_COUNT] = {UINT64_MAX, 9007199254740993ull,
                                            9007199254740992ull, 7736398025145061ull,
                                            18446744073709551557ull, 0};
    memcpy(t.seeds, want, sizeof want);
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    tb_trial_record back;
    CHECK_OK(tb_store_trial_get(store, t.id, &back, &err), &err);
    CHECK(memcmp(back.seeds, want, sizeof want) == 0);
    /* the JSON-lines export prints them as exact integers */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(tb_store_export(store, "raw", TB_EXPORT_JSONL, f, &err), &err);
    fclose(f);
    CHECK(buf && strstr(buf, "\"init\":18446744073709551615,\"data_order\":9007199254740993,"
                             "\"dropout\":9007199254740992,\"augment\":7736398025145061,"
                             "\"split\":18446744073709551557,\"hparam\":0}"));
    CHECK(buf && !strstr(buf, "e+"));
    free(buf);
    /* the CSV export keeps a trial without evals: one row, its eval columns empty */
    f = open_memstream(&buf, &len);
    CHECK_OK(tb_store_export(store, "raw", TB_EXPORT_CSV, f, &err), &err);
    fclose(f);
    int lines = 0, commas = 0;
    for (size_t i = 0; i < len; i++) {
        lines += buf[i] == '\n';
        commas += buf[i] == ',';
    }
    CHECK(lines == 2 && commas == 2 * 26);
    /* ... its hyperparameters in effect empty: it has not started */
    CHECK(buf && strstr(buf, "\nraw,sgd,fmnist_mlp,external,0,0,planned,{},,,,0,,,"));
    free(buf);
    tb_store_close(store);

    /* the benchmark: seed 2^53 + 1 and seed 2^53 are different specs, not one reused */
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = small_spec(subs, 1);
    s.seed = 9007199254740993ull;
    tb_bench_summary sum;
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 1 && sum.ran == 1);
    char *spec = spec_text(db, "t");
    CHECK(spec && strstr(spec, "\"seed\":9007199254740993"));
    free(spec);
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *tr = NULL;
    int n = 0;
    CHECK_OK(tb_store_trials(store, "t", &tr, &n, &err), &err);
    CHECK(n == 1 && tr[0].seeds[TB_STREAM_SPLIT] == 9007199254740993ull &&
          tr[0].seeds[TB_STREAM_HPARAM] == 9007199254740993ull);
    free(tr);
    tb_store_close(store);
    s.seed = 9007199254740992ull;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "different spec (it differs in: seed)");
}

/* A submission named without '/' is a path in the current directory, never searched for. */
static void test_library_path(void)
{
    const char *example = getenv("TB_EXAMPLE_SUBMISSION");
    CHECK(example != NULL);
    if (!example) return;
    char here[1024], where[1024];
    CHECK(getcwd(here, sizeof here) != NULL);
    snprintf(where, sizeof where, "%s", example);
    char *slash = strrchr(where, '/');
    CHECK(slash != NULL);
    if (!slash) return;
    *slash = 0;
    const char *file = slash + 1;
    tb_error err = {0};
    tb_submission_ref *ref = NULL;
    /* from the directory holding it: found as ./submission_example.so */
    CHECK(chdir(where) == 0);
    CHECK_OK(tb_submission_load(file, NULL, &ref, &err), &err);
    CHECK(ref && tb_submission_ref_external(ref));
    tb_submission_unload(ref);
    /* from elsewhere: not there, whatever the library search path holds */
    CHECK(chdir(dir) == 0);
    CHECK_FAILS(tb_submission_load(file, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "./submission_example.so does not exist");
    /* a file that is not a library: a bad value too */
    FILE *f = fopen("junk.so", "w");
    if (f) fputs("not a library\n", f);
    if (f) fclose(f);
    CHECK_FAILS(tb_submission_load("junk.so", NULL, &ref, &err), TB_ERR_INVALID, &err,
                "cannot load submission library ./junk.so");
    CHECK(chdir(here) == 0);
}

/* A library that crashes while loading (here its entry point) is caught in a probe process
 * and reported with its path and the signal; a table without a required field names it. */
static void test_library_defects(void)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    CHECK(crash != NULL);
    if (!crash) return;
    tb_error err = {0};
    tb_submission_ref *ref = NULL;
    setenv("TB_CRASHER_LOAD", "segv", 1);
    CHECK_FAILS(tb_submission_load(crash, NULL, &ref, &err), TB_ERR_CRASHED, &err,
                "crashed while loading");
    CHECK(ref == NULL && strstr(err.message, crash) && strstr(err.message, "signal 11"));
    setenv("TB_CRASHER_LOAD", "noupdate", 1);
    CHECK_FAILS(tb_submission_load(crash, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "lacks update_params");
    unsetenv("TB_CRASHER_LOAD");
    CHECK_OK(tb_submission_load(crash, NULL, &ref, &err), &err);
    CHECK(ref && strcmp(tb_submission_ref_name(ref), "crasher") == 0);
    tb_submission_unload(ref);
}

static int count_benchmarks(const char *db)
{
    tb_store *store;
    tb_error err = {0};
    if (tb_store_open(db, &store, &err) != TB_OK) return -1;
    char **names = NULL;
    int n = 0;
    tb_store_benchmarks(store, &names, &n, &err);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    tb_store_close(store);
    return n;
}

/* The trial of sgd's space below recorded every hyperparameter it ran with: the point's
 * (learning_rate, momentum, warmup_fraction, batch_size), the optimizer's defaults (nesterov,
 * weight_decay), those marked as defaults. */
static void check_resolved(const char *db)
{
    tb_store *store;
    tb_error err = {0};
    tb_trial_record *t = NULL;
    int n = 0;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    CHECK_OK(tb_store_trials(store, NULL, &t, &n, &err), &err);
    if (CHECK(n == 1)) {
        const tb_hparams *r = &t[0].resolved_hparams, *d = &t[0].default_hparams;
        CHECK(r->count == 6 && d->count == 2);
        CHECK(tb_hparams_get(r, "learning_rate", 0) == tb_hparams_get(&t[0].hparams,
                                                                       "learning_rate", -1));
        CHECK(tb_hparams_get(r, "nesterov", 0) == 1 && tb_hparams_get(r, "weight_decay", 1) == 0);
        CHECK(tb_hparams_get(r, "warmup_fraction", 0) == 0.05 &&
              tb_hparams_get(r, "batch_size", 0) == 64);
        CHECK(tb_hparams_has(d, "nesterov") && tb_hparams_has(d, "weight_decay") &&
              !tb_hparams_has(d, "learning_rate") && !tb_hparams_has(d, "batch_size"));
    }
    free(t);
    tb_store_close(store);
}

/* A built-in's search space is checked against its optimizer when the benchmark is planned:
 * a dimension it does not have or a value outside its range is refused naming the dimension,
 * and nothing is planned; a malformed space is a bad value as well. */
static void test_search_space_checked(void)
{
    char db[300], spaces[300], sgd[400];
    store_path(db, sizeof db, "spaces");
    snprintf(spaces, sizeof spaces, "%s/spaces", dir);
    CHECK(mkdir(spaces, 0700) == 0);
    snprintf(sgd, sizeof sgd, "%s/sgd.json", spaces);
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = small_spec(subs, 1);
    s.search_space_dir = spaces;
    tb_bench_summary sum;
    tb_error err = {0};
    static const struct {
        const char *space, *needle;
    } bad[] = {
        {"{\"learning_rat\": {\"min\": 0.01, \"max\": 0.1}}",
         "dimension 'learning_rat' is not a hyperparameter of sgd"},
        {"{\"\": {\"feasible_points\": [1]}}", "a dimension has an empty name"},
        {"{\"learning_rate\": {\"feasible_points\": [0.1]}, "
         "\"momentum\": {\"feasible_points\": [1.5]}}", "dimension 'momentum'"},
        {"{\"learning_rate\": {\"min\": -1, \"max\": 0.1}}", "dimension 'learning_rate'"},
        {"[{\"learning_rate\": 0.1}, {\"learning_rate\": 0.1, \"nesterov\": 2}]",
         "dimension 'nesterov'"},
        {"{\"learning_rate\": {\"feasible_points\": [0.1]}, "
         "\"warmup_fraction\": {\"feasible_points\": [1]}}", "dimension 'warmup_fraction'"},
        {"{\"learning_rate\": {\"min\": 0.01,\n \"max\": 0.1", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tb_test_write_text(sgd, bad[i].space);
        CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                    bad[i].needle);
        CHECK(strstr(err.message, "of sgd") && strstr(err.message, sgd)); /* names the file */
        CHECK(count_benchmarks(db) == 0); /* refused before anything was planned */
    }

    /* a valid space (with the baseline's own hyperparameters) plans and runs */
    tb_test_write_text(sgd, "{\"learning_rate\": {\"min\": 0.02, \"max\": 0.2, \"scaling\": \"log\"},"
                    " \"momentum\": {\"feasible_points\": [0.9]},"
                    " \"warmup_fraction\": {\"feasible_points\": [0.05]},"
                    " \"batch_size\": {\"feasible_points\": [64]}}");
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 1 && sum.ran == 1);
    check_resolved(db);
    /* the same space reformatted: the same spec, the trial reused */
    tb_test_write_text(sgd, "{\n  \"learning_rate\": {\"min\": 0.02, \"max\": 0.2, \"scaling\": \"log\"},\n"
                    "  \"momentum\": {\"feasible_points\": [0.9]},\n"
                    "  \"warmup_fraction\": {\"feasible_points\": [0.05]},\n"
                    "  \"batch_size\": {\"feasible_points\": [64]}\n}\n");
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 1 && sum.ran == 0);
    /* an edited space is another spec: refused, naming what differs */
    tb_test_write_text(sgd, "{\"learning_rate\": {\"min\": 0.02, \"max\": 0.3, \"scaling\": \"log\"},"
                    " \"momentum\": {\"feasible_points\": [0.9]},"
                    " \"warmup_fraction\": {\"feasible_points\": [0.05]},"
                    " \"batch_size\": {\"feasible_points\": [64]}}");
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: search_spaces)");
    /* so are another per-trial timeout, hang limit and thread count */
    tb_test_write_text(sgd, "{\"learning_rate\": {\"min\": 0.02, \"max\": 0.2, \"scaling\": \"log\"},"
                    " \"momentum\": {\"feasible_points\": [0.9]},"
                    " \"warmup_fraction\": {\"feasible_points\": [0.05]},"
                    " \"batch_size\": {\"feasible_points\": [64]}}");
    s.trial.timeout_s = 60;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: timeout_s)");
    s.trial.timeout_s = 0;
    s.trial.hang_s = 30; /* (in the spec only when given: older specs have none) */
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: hang_s");
    s.trial.hang_s = 0;
    s.trial.setup_s = 900; /* (the same) */
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: setup_s");
    s.trial.setup_s = 0;
    /* evals placed by steps change the steps a trial reaches its target at */
    s.trial.eval_every_steps = 20;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: eval_every_steps");
    s.trial.eval_every_steps = -1;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "eval step interval");
    s.trial.eval_every_steps = 0;
    s.trial.threads = 1;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: threads)");
    s.trial.threads = 2;
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 1 && sum.ran == 0);
}

static void sql(const char *db, const char *text)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    char *msg = NULL;
    bool ok = sqlite3_exec(h, text, NULL, NULL, &msg) == SQLITE_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", text, msg ? msg : "?");
    CHECK(ok);
    sqlite3_free(msg);
    sqlite3_close(h);
}

/* A store of schema 1 (before the trials' resolved and default hyperparameters) is read as it
 * is (the new columns empty, not an error), and a writable open adds the columns. */
static void test_schema_1_store(void)
{
    char db[300];
    store_path(db, sizeof db, "schema1");
    tb_error err = {0};
    tb_store *store;
    if (!CHECK_OK(tb_store_open(db, &store, &err), &err)) return;
    tb_trial_record t = sgd_trial("old");
    tb_hparams_set(&t.hparams, "learning_rate", 0.1, NULL);
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    tb_store_close(store);
    sql(db, "ALTER TABLE trials DROP COLUMN resolved_hparams;"
            "ALTER TABLE trials DROP COLUMN default_hparams;"
            TB_TEST_DROP_SCHEMA_3_COLUMNS
            "UPDATE meta SET value='1' WHERE key='schema_version'");
    tb_trial_record *rows = NULL;
    int n = 0;
    if (CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) {
        CHECK_OK(tb_store_trials(store, "old", &rows, &n, &err), &err);
        CHECK(n == 1 && rows && rows[0].hparams.count == 1 && rows[0].resolved_hparams.count == 0);
        free(rows);
        FILE *f = tmpfile();
        CHECK_OK(tb_store_export(store, "old", TB_EXPORT_JSONL, f, &err), &err);
        char line[4096] = "";
        rewind(f);
        CHECK(fgets(line, sizeof line, f) != NULL);
        CHECK(strstr(line, "\"resolved_hparams\":null,\"default_hparams\":null") != NULL);
        fclose(f);
        tb_store_close(store);
    }
    if (CHECK_OK(tb_store_open(db, &store, &err), &err)) {
        tb_hparams resolved = {0}, defaults = {0};
        tb_hparams_set(&resolved, "learning_rate", 0.1, NULL);
        tb_hparams_set(&resolved, "momentum", 0.9, NULL);
        tb_hparams_set(&defaults, "momentum", 0.9, NULL);
        CHECK_OK(tb_store_trial_hparams(store, t.id, &resolved, &defaults, &err), &err);
        tb_trial_record back;
        CHECK_OK(tb_store_trial_get(store, t.id, &back, &err), &err);
        CHECK(back.resolved_hparams.count == 2 && back.default_hparams.count == 1 &&
              tb_hparams_get(&back.resolved_hparams, "momentum", 0) == 0.9);
        /* a restart forgets them until the trial records them again */
        CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
        CHECK_OK(tb_store_trial_get(store, t.id, &back, &err), &err);
        CHECK(back.resolved_hparams.count == 0 && back.hparams.count == 1);
        tb_store_close(store);
    }
}

/* A results store that fails while a trial runs in its child process (a full disk: here an
 * eval insert that fails) is the benchmark's error with the store's message, not a failed
 * trial; the trial is left unfinished and a rerun retries it. */
static void test_store_failure_in_trial(void)
{
    char db[300];
    store_path(db, sizeof db, "full");
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = small_spec(subs, 1);
    tb_error err = {0};
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_store_close(store);
    sql(db, "CREATE TRIGGER full BEFORE INSERT ON evals BEGIN "
            "SELECT RAISE(FAIL, 'database or disk is full (simulated)'); END;");
    tb_bench_summary sum;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_IO, &err,
                "disk is full (simulated)");
    CHECK(strstr(err.message, "recording an eval") && strstr(err.message, "left unfinished"));
    printf("store failure: %s\n", err.message);
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 1 && t[0].status == TB_TRIAL_RUNNING && t[0].attempts == 1 && !t[0].reason[0]);
    free(t);
    tb_store_close(store);
    /* the disk has room again: the rerun runs the trial (not "1 reused" with a failure) */
    sql(db, "DROP TRIGGER full;");
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 1 && sum.reused == 0 && sum.failed == 0);
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 1 && t[0].status == TB_TRIAL_DONE && t[0].attempts == 2);
    free(t);
    tb_store_close(store);
}

/* Two runs of one benchmark at once: the second is refused naming the first's process, and
 * leaves its trials alone; another benchmark of the same store runs meanwhile. */
static void test_one_run_at_a_time(void)
{
    char db[300];
    store_path(db, sizeof db, "lock");
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = small_spec(subs, 1);
    s.trials = 2;
    s.budget_s = 1.5;
    s.run_to_budget = true;
    tb_error err = {0};
    pid_t pid = tb_test_bench_in_child(db, &s);
    /* wait until the first run's first trial is running */
    bool running = false;
    for (int i = 0; i < 3000 && !running; i++) {
        running = tb_test_count_trials(db, "t", TB_TRIAL_RUNNING, NULL) > 0;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(running);
    tb_bench_summary sum;
    char want[64];
    snprintf(want, sizeof want, "being run by process %d", (int)pid);
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_IO, &err, want);
    printf("second run: %s\n", err.message);
    /* the same store under another name (a symbolic link) is the same lock */
    char alias[320];
    snprintf(alias, sizeof alias, "%s.alias", db);
    unlink(alias);
    CHECK(symlink(db, alias) == 0);
    CHECK_FAILS(tb_bench_run(alias, &s, NULL, NULL, &sum, &err), TB_ERR_IO, &err, want);
    unlink(alias);
    /* another benchmark in the same store is not held up */
    tb_bench_spec other = small_spec(subs, 1);
    other.name = "u";
    CHECK_OK(tb_bench_run(db, &other, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 1);
    int wst = 0;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    /* every trial ran once, by the first run; a run now reuses them */
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 2);
    for (int k = 0; k < n; k++) CHECK(t[k].status == TB_TRIAL_DONE && t[k].attempts == 1);
    free(t);
    tb_store_close(store);
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 2 && sum.ran == 0);
    /* a misspelt name is an error listing what there is, not an empty export or table */
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_FAILS(tb_store_export(store, "nope", TB_EXPORT_CSV, f, &err), TB_ERR_INVALID, &err,
                "no trials of benchmark 'nope' (its benchmarks: t, u)");
    fclose(f);
    CHECK(len == 0);
    free(buf);
    tb_score_options so = {"t", "nope", false, 0, TB_TIME_WALL};
    tb_score_table *table = NULL;
    CHECK_FAILS(tb_score_store(store, &so, &table, &err), TB_ERR_INVALID, &err,
                "reference submission 'nope' is not in benchmark 't' (its submissions: sgd)");
    so.reference = "sgd";
    CHECK_OK(tb_score_store(store, &so, &table, &err), &err);
    tb_score_table_destroy(table);
    tb_store_close(store);
    /* a store that no trial process could open */
    CHECK_FAILS(tb_bench_run(":memory:", &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "must be a file path");
    CHECK_FAILS(tb_bench_run("", &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "must be a file path");
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_seeds_exact();
    test_library_path();
    test_library_defects();
    test_search_space_checked();
    test_store_failure_in_trial();
    test_one_run_at_a_time();
    test_schema_1_store();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return tb_test_finish("test_bench_plan");
}

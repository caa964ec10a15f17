/* test_bench_replan.c: a store written before the environment-failure classification holds
 * trials the machine failed (data missing or corrupt, a full disk) as failed rows; the next
 * run plans them again and runs them, while the submission's own failures (its callbacks'
 * errors, a crash, a divergence) stay recorded. The old rows are built here as such a
 * trainbench wrote them. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reasons as the trial code recorded them ("<status name>: <message>"), and whether each is
 * the machine's; steps and evals: what the row holds (0 and none: it failed before training). */
static const struct {
    const char *reason;
    int64_t steps;
    bool evals, machine;
} reasons[] = {
    {"format: /d/t10k-images-idx3-ubyte.gz: not a gzip file (IDX files are read gzip-compressed)",
     0, false, true},
    {"io: cannot write the cache /c/kjv-chars.tbcache: No space left on device", 0, false, true},
    {"io: results store /s/r.db: disk I/O error", 40, true, true},
    {"missing: Fashion-MNIST not found in the data directory /d", 0, false, true},
    /* corrupt data found after training began is not known to be the machine's */
    {"format: the data cache /c/w.tbcache is corrupt (checksum mismatch)", 12, true, false},
    {"format: something malformed", 0, true, false},
    /* the submission's own errors, whatever their status */
    {"missing: update_params at step 3: no such table", 2, false, false},
    {"io: init_optimizer_state: cannot open its file", 0, false, false},
    {"io: data selection at step 1: read failed", 0, false, false},
    {"format: prepare_for_eval: bad state", 0, false, false},
    {"crashed: killed by signal 11 (Segmentation fault)", 3, false, false},
    {"diverged: loss nan at step 4", 4, true, false},
    {"numeric: update_params at step 2 returned numeric without a message", 1, false, false},
    {"invalid: learning_rate 0 is 0 in float32", 0, false, false},
    {"", 0, false, false},
};

#define N_REASONS (int)(sizeof reasons / sizeof reasons[0])

static void test_classify(void)
{
    for (int i = 0; i < N_REASONS; i++) {
        bool got =
            tb_trial_reason_is_machine(reasons[i].reason, reasons[i].steps, reasons[i].evals);
        if (got != reasons[i].machine)
            fprintf(stderr, "\"%s\" (steps %lld%s): %s\n", reasons[i].reason,
                    (long long)reasons[i].steps, reasons[i].evals ? ", evals" : "",
                    got ? "the machine's" : "the submission's");
        CHECK(got == reasons[i].machine);
    }
    CHECK(!tb_trial_reason_is_machine(NULL, 0, false));
}

static void sql(const char *db, const char *text)
{
    sqlite3 *h = NULL;
    bool ok =
        sqlite3_open(db, &h) == SQLITE_OK && sqlite3_exec(h, text, NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", text, h ? sqlite3_errmsg(h) : "no memory");
    CHECK(ok);
    sqlite3_close(h);
}

/* Trial id made an old failed row: reason, steps, and its evals kept or dropped. */
static void make_old_row(const char *db, int64_t id, const char *reason, int64_t steps, bool evals)
{
    char *text = sqlite3_mprintf("UPDATE trials SET status='failed', reason=%Q, steps=%lld, "
                                 "reached=0, time_to_target=NULL, attempts=1 WHERE id=%lld;"
                                 "DELETE FROM evals WHERE trial_id=%lld AND %d;",
                                 reason, (long long)steps, (long long)id, (long long)id, !evals);
    sql(db, text);
    sqlite3_free(text);
}

/* Every reason's row in one store: those of the machine back to planned (evals dropped,
 * attempts kept), the others left as they were; a second pass finds nothing. */
static void test_store(const char *dir)
{
    char db[300];
    snprintf(db, sizeof db, "%s/rows.db", dir);
    tb_store *s = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open(db, &s, &err), &err)) return;
    int64_t ids[N_REASONS];
    for (int i = 0; i < N_REASONS; i++)
        ids[i] =
            tb_test_add_trial(s, "old", "adam", "fmnist_mlp", 0, i, NULL, TB_TRIAL_DONE, 0.1, 3.0);
    tb_test_add_trial(s, "other", "adam", "fmnist_mlp", 0, 0, NULL, TB_TRIAL_DONE, 0.1, 3.0);
    tb_store_close(s);
    for (int i = 0; i < N_REASONS; i++)
        make_old_row(db, ids[i], reasons[i].reason, reasons[i].steps, reasons[i].evals);
    sql(db, "UPDATE trials SET status='failed', reason='io: disk full', steps=0 "
            "WHERE benchmark='other'; DELETE FROM evals WHERE trial_id IN "
            "(SELECT id FROM trials WHERE benchmark='other');");
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    int n = -1, want = 0;
    CHECK_OK(tb_store_replan_machine_failures(s, "old", &n, &err), &err);
    for (int i = 0; i < N_REASONS; i++) {
        want += reasons[i].machine;
        tb_trial_record t;
        CHECK_OK(tb_store_trial_get(s, ids[i], &t, &err), &err);
        CHECK(t.status == (reasons[i].machine ? TB_TRIAL_PLANNED : TB_TRIAL_FAILED));
        CHECK(strcmp(t.reason, reasons[i].machine ? "" : reasons[i].reason) == 0);
        CHECK(t.attempts == 1);
        char q[128];
        snprintf(q, sizeof q, "SELECT count(*) FROM evals WHERE trial_id=%lld", (long long)ids[i]);
        CHECK(tb_test_query_int(db, q) == (reasons[i].evals && !reasons[i].machine));
    }
    CHECK(n == want && want == 4);
    CHECK_OK(tb_store_replan_machine_failures(s, "old", &n, &err), &err);
    CHECK(n == 0);
    tb_store_close(s);
    /* another benchmark's rows are its own run's to replan */
    CHECK(tb_test_query_int(db, "SELECT count(*) FROM trials WHERE benchmark='other' AND "
                                "status='failed'") == 1);
    tb_test_remove_store(db);
}

/* End to end: a benchmark run, its trial's row then made an old failure of the machine, and
 * a second run runs it again; a crash recorded the same way is reused. */
static void test_bench(const char *dir)
{
    char db[300];
    snprintf(db, sizeof db, "%s/bench.db", dir);
    const char *subs[1] = {"sgd"};
    tb_bench_spec spec = tb_test_bench_spec(subs, 1, 0.4, 200);
    tb_bench_summary sum;
    tb_error err = {0};
    if (!CHECK_OK(tb_bench_run(db, &spec, NULL, NULL, &sum, &err), &err)) return;
    CHECK(sum.planned == 1 && sum.ran == 1);
    int64_t id = tb_test_query_int(db, "SELECT id FROM trials");
    make_old_row(db, id,
                 "format: /d/t10k-labels-idx1-ubyte.gz: corrupt gzip stream: "
                 "incorrect data check (zlib code -3)",
                 0, false);
    CHECK_OK(tb_bench_run(db, &spec, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 1 && sum.reused == 0 && sum.failed == 0);
    CHECK(tb_test_query_int(db, "SELECT count(*) FROM trials WHERE status='done' AND "
                                "attempts=2") == 1);
    make_old_row(db, id, "crashed: killed by signal 11 (Segmentation fault)", 0, false);
    CHECK_OK(tb_bench_run(db, &spec, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 0 && sum.reused == 1 && sum.failed == 1);
    tb_test_remove_store(db);
}

int main(void)
{
    char dir[] = "/tmp/tb_test_bench_replan_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_classify();
    test_store(dir);
    test_bench(dir);
    rmdir(dir);
    return tb_test_finish("test_bench_replan");
}

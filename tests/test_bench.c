/* test_bench.c: the benchmark executor on real short trials: an external submission that
 * segfaults is a failed trial with the signal recorded while the others finish, one that
 * crashes while loading is skipped, one that writes NaN weights diverges; a hanging one
 * is killed at its wall-clock limit; a benchmark killed with SIGKILL in the middle of a trial
 * resumes with nothing finished lost or rerun and the interrupted trial rerun; export; missing
 * data stops the benchmark without failing the trial; a target in bits per character. */
#include "testutil.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_bench_%s_%d.db", tag, (int)getpid());
    unlink(buf);
}


static tb_bench_spec small_spec(const char *const *subs, int n)
{
    return tb_test_bench_spec(subs, n, 0.4, 200);
}

static void test_crash_isolated(void)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    CHECK(crash != NULL);
    if (!crash) return;
    char db[256];
    temp_path(db, sizeof db, "crash");
    const char *subs[2] = {crash, "sgd"};
    tb_bench_spec s = small_spec(subs, 2);
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 2 && sum.ran == 2 && sum.failed == 1);
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t;
    int n;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 2);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].submission, "crasher") == 0) {
            CHECK(t[i].status == TB_TRIAL_FAILED);
            CHECK(strstr(t[i].reason, "signal 11") != NULL);
            printf("crasher: %s\n", t[i].reason);
        } else {
            CHECK(t[i].status == TB_TRIAL_DONE && t[i].steps > 0 && t[i].attempts == 1);
            tb_eval_record *ev;
            int ne;
            CHECK_OK(tb_store_evals(store, t[i].id, &ev, &ne, &err), &err);
            CHECK(ne >= 1 && ev[0].validation_examples == 200);
            CHECK(strstr(t[i].machine, "\"cpu\"") && strstr(t[i].machine, "\"blas\""));
            CHECK(t[i].code_version[0] != 0);
            free(ev);
        }
    }
    free(t);

    /* a hanging submission is killed at its wall-clock limit (--timeout: set here, not by
     * default; tests/test_bench_conditions.c kills one by its progress) */
    tb_trial_record h;
    memset(&h, 0, sizeof h);
    snprintf(h.benchmark, sizeof h.benchmark, "hang");
    snprintf(h.submission, sizeof h.submission, "crasher");
    snprintf(h.workload, sizeof h.workload, "fmnist_mlp");
    snprintf(h.ruleset, sizeof h.ruleset, "external");
    snprintf(h.metric, sizeof h.metric, "error_rate");
    h.budget_s = 100;
    h.eval_period_s = 1;
    tb_hparams_set(&h.hparams, "hang", 1, NULL);
    CHECK_OK(tb_store_plan_trial(store, &h, &err), &err);
    tb_submission_ref *ref;
    CHECK_OK(tb_submission_load(crash, NULL, &ref, &err), &err);
    tb_trial_options o = s.trial;
    o.timeout_s = 1.5;
    CHECK_OK(tb_trial_run_isolated(db, h.id, ref, &o, &err), &err);
    CHECK_OK(tb_store_trial_get(store, h.id, &h, &err), &err);
    CHECK(h.status == TB_TRIAL_FAILED && strstr(h.reason, "timed out") &&
          strstr(h.reason, "its 1.5 s wall-clock limit"));
    tb_submission_unload(ref);

    /* a library without the entry point, and a missing one, are clear errors */
    CHECK_FAILS(tb_submission_load("/nonexistent/sub.so", NULL, &ref, &err), TB_ERR_INVALID,
                &err, "/nonexistent/sub.so does not exist");
    CHECK_FAILS(tb_submission_load("no_such_optimizer", NULL, &ref, &err), TB_ERR_INVALID, &err,
                "unknown submission 'no_such_optimizer'");
    tb_store_close(store);
    tb_test_remove_store(db);
}

static void test_kill_and_resume(void)
{
    char db[256];
    temp_path(db, sizeof db, "resume");
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = small_spec(subs, 1);
    s.trials = 3;
    s.budget_s = 0.8;
    s.run_to_budget = true;
    tb_error err = {0};
    pid_t pid = tb_test_bench_in_child(db, &s);
    /* wait until one trial is done and the next is running with an eval written */
    bool killed = false, exited = false;
    int wst = 0;
    for (int i = 0; i < (int)(TB_TEST_WAIT_S / 0.01) && !killed; i++) {
        int running_evals = 0;
        int done = tb_test_count_trials(db, "t", TB_TRIAL_DONE, NULL);
        int running = tb_test_count_trials(db, "t", TB_TRIAL_RUNNING, &running_evals);
        if (done >= 1 && running == 1 && running_evals >= 1) {
            kill(pid, SIGKILL);
            killed = true;
        }
        if (!killed && tb_test_child_exited(pid, &wst, &exited)) break; /* it finished first */
        tb_test_sleep_s(0.01);
    }
    if (!exited) waitpid(pid, &wst, 0);
    CHECK(killed && WIFSIGNALED(wst));
    struct timespec ts = {0, 300 * 1000 * 1000}; /* the trial process dies with its parent */
    nanosleep(&ts, NULL);

    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *before;
    int n;
    CHECK_OK(tb_store_trials(store, "t", &before, &n, &err), &err);
    CHECK(n == 3); /* the whole plan was written before anything ran */
    int done_before = 0, interrupted = -1;
    for (int i = 0; i < n; i++) {
        done_before += before[i].status == TB_TRIAL_DONE;
        if (before[i].status == TB_TRIAL_RUNNING) interrupted = i;
    }
    CHECK(done_before >= 1 && interrupted >= 0);
    /* give the orphan (if any) a chance to write: it must not, it is dead */
    tb_trial_record again;
    if (interrupted >= 0) {
        CHECK_OK(tb_store_trial_get(store, before[interrupted].id, &again, &err), &err);
        CHECK(again.status == TB_TRIAL_RUNNING);
    }
    tb_store_close(store);

    /* resume */
    tb_bench_summary sum;
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 3 && sum.reused == done_before && sum.ran == 3 - done_before);
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *after;
    CHECK_OK(tb_store_trials(store, "t", &after, &n, &err), &err);
    for (int i = 0; i < n; i++) {
        CHECK(after[i].status == TB_TRIAL_DONE);
        if (before[i].status == TB_TRIAL_DONE) {
            /* kept as it was, not rerun */
            CHECK(after[i].attempts == 1 && after[i].steps == before[i].steps &&
                  after[i].submission_time == before[i].submission_time);
        }
    }
    if (interrupted >= 0) CHECK(after[interrupted].attempts == 2);
    /* a third run reuses everything */
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 3 && sum.ran == 0);
    /* a different spec under the same name is refused */
    s.budget_s = 5;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "different spec");

    /* export: CSV with AlgoPerf's columns, one row per eval; JSON lines, one per trial */
    int evals = 0;
    for (int i = 0; i < n; i++) {
        tb_eval_record *ev;
        int ne;
        CHECK_OK(tb_store_evals(store, after[i].id, &ev, &ne, &err), &err);
        evals += ne;
        free(ev);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(tb_store_export(store, "t", TB_EXPORT_CSV, f, &err), &err);
    fclose(f);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    CHECK(lines == evals + 1);
    CHECK(strstr(buf, "accumulated_submission_time") && strstr(buf, "validation/loss"));
    free(buf);
    f = open_memstream(&buf, &len);
    CHECK_OK(tb_store_export(store, "t", TB_EXPORT_JSONL, f, &err), &err);
    fclose(f);
    lines = 0;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    CHECK(lines == 3 && strstr(buf, "\"seeds\":{\"init\""));
    free(buf);
    free(before);
    free(after);
    tb_store_close(store);
    tb_test_remove_store(db);
}

/* A workload whose metric is neither the error rate nor the loss (the transformer's bits per
 * character) is judged on that metric: a model trained for a fraction of a second is far
 * above the quick target of 3.6 bits, whatever its character error rate (about 0.8, which
 * read as the metric "reached" every target). */
static void test_target_metric(void)
{
    char db[256];
    temp_path(db, sizeof db, "metric");
    const char *subs[1] = {"sgd"};
    static const char *wl[1] = {"kjv_transformer"};
    tb_bench_spec s = small_spec(subs, 1);
    s.workloads = wl;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 1 && sum.ran == 1 && sum.failed == 0);
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t;
    int n;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 1);
    if (n == 1) {
        CHECK(strcmp(t[0].metric, "bits_per_char") == 0);
        tb_eval_record *ev;
        int ne;
        CHECK_OK(tb_store_evals(store, t[0].id, &ev, &ne, &err), &err);
        CHECK(ne >= 1);
        /* every eval is above the target in bits (loss in nats / ln 2) and below 1 in error
         * rate: the trial must not have reached it */
        for (int i = 0; i < ne; i++)
            CHECK(ev[i].validation_loss / log(2.0) > t[0].target &&
                  ev[i].validation_error < 1.0);
        CHECK(!t[0].reached);
        free(ev);
    }
    free(t);
    tb_store_close(store);
    tb_test_remove_store(db);
}

/* Evals on a 1-example validation subset: the target (calibrated on the whole split) was
 * claimed as soon as that one example was classified right. Now a subset at the target is
 * replaced by an eval of the whole validation split, which is recorded and decides: no
 * recorded subset eval is at the target, and a reached target is a whole-split eval's. */
static void test_target_on_subset(void)
{
    char db[256];
    temp_path(db, sizeof db, "subset");
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 2.0, 1);
    s.eval_period_s = 0.1;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 1 && sum.ran == 1 && sum.failed == 0);
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t;
    int n;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 1);
    if (n == 1) {
        tb_eval_record *ev;
        int ne, whole = 0;
        CHECK_OK(tb_store_evals(store, t[0].id, &ev, &ne, &err), &err);
        for (int i = 0; i < ne; i++) {
            if (ev[i].validation_examples == 1) {
                CHECK(ev[i].validation_error > t[0].target);
            } else {
                CHECK(ev[i].validation_examples == 5000);
                whole++;
            }
            if (t[0].reached && ev[i].submission_time == t[0].time_to_target)
                CHECK(ev[i].validation_examples == 5000 &&
                      ev[i].validation_error <= t[0].target);
        }
        /* the one example (row 2500) was classified right at some eval: confirmed on the whole
         * split at least once (else this test checked nothing) */
        CHECK(whole >= 1);
        printf("subset trial: %d evals, %d on the whole split, %s\n", ne, whole,
               t[0].reached ? "reached" : "missed");
        free(ev);
    }
    free(t);
    tb_store_close(store);
    tb_test_remove_store(db);
}

/* Missing or corrupt data is the machine's failure (TB_ERR_MISSING, TB_ERR_FORMAT), not the
 * trial's: the trial is left unfinished (not recorded as failed and reused), and the same
 * benchmark, run again with the data, runs it, as its first attempt. */
static void check_rerun_with_data(const char *db, const char *data_dir, tb_status want)
{
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = small_spec(subs, 1);
    s.trial.data_dir = data_dir;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), want, &err,
                "left unfinished to rerun");
    s.trial.data_dir = NULL;
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 1 && sum.ran == 1 && sum.reused == 0 && sum.failed == 0);
    /* the run that could not start was not an attempt (no preemption in the export) */
    tb_store *store;
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 1 && t[0].status == TB_TRIAL_DONE && t[0].attempts == 1);
    free(t);
    tb_store_close(store);
    tb_test_remove_store(db);
}

static void test_missing_data(void)
{
    char db[256];
    temp_path(db, sizeof db, "missing");
    check_rerun_with_data(db, "/nonexistent/trainbench", TB_ERR_MISSING);
}

static void test_corrupt_data(void)
{
    static const char *const files[4] = {"train-images-idx3-ubyte.gz",
                                         "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    char db[256], dir[300], path[400];
    temp_path(db, sizeof db, "corrupt");
    snprintf(dir, sizeof dir, "%s.data", db);
    CHECK(mkdir(dir, 0700) == 0);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("not gzip at all", f);
            fclose(f);
        }
    }
    check_rerun_with_data(db, dir, TB_ERR_FORMAT);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A submission's own error is its trial's failure, recorded with a reason, whatever its
 * status: one returned without a message (it had been recorded as a trial that "missed the
 * target"), a TB_ERR_MISSING of its own (it had stopped the benchmark as missing data, on
 * every rerun), and the TB_ERR_NUMERIC of an optimizer step over a NaN gradient, a divergence
 * (the step had written NaN weights and returned TB_OK). */
static void test_submission_errors(void)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    if (!crash) return; /* test_crash_isolated reports it */
    const char *modes[3] = {"silent", "missing", "nan"};
    const char *reasons[3] = {"returned invalid without a message", "its lookup table",
                              "sgd: step 1: the gradient of"};
    for (int m = 0; m < 3; m++) {
        char db[256];
        temp_path(db, sizeof db, modes[m]);
        setenv("TB_CRASHER_FAIL", modes[m], 1);
        const char *subs[2] = {crash, "sgd"};
        tb_bench_spec s = small_spec(subs, 2);
        tb_bench_summary sum;
        tb_error err = {0};
        CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
        CHECK(sum.planned == 2 && sum.ran == 2 && sum.failed == 1);
        tb_store *store;
        tb_trial_record *t = NULL;
        int n = 0;
        CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
        CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
        for (int i = 0; i < n; i++)
            if (strcmp(t[i].submission, "crasher") == 0 &&
                !CHECK(t[i].status == TB_TRIAL_FAILED && strstr(t[i].reason, reasons[m]) &&
                      strstr(t[i].reason, "update_params at step") &&
                      (m < 2 || strncmp(t[i].reason, "diverged: update_params", 23) == 0)))
                fprintf(stderr, "reason: %s\n", t[i].reason);
        free(t);
        tb_store_close(store);
        tb_test_remove_store(db);
    }
    unsetenv("TB_CRASHER_FAIL");
}

/* A submission library that crashes while loading is skipped, with its path and the signal,
 * and the other submissions run (it had killed the benchmark's process); with none left the
 * run fails. */
static void test_load_crash(void)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    if (!crash) return; /* test_crash_isolated reports it */
    char db[256];
    temp_path(db, sizeof db, "loadcrash");
    setenv("TB_CRASHER_LOAD", "segv", 1);
    const char *subs[2] = {crash, "sgd"};
    tb_bench_spec s = small_spec(subs, 2);
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.skipped == 1 && sum.planned == 1 && sum.ran == 1 && sum.failed == 0);
    CHECK(strstr(sum.skipped_reasons, crash) && strstr(sum.skipped_reasons, "signal 11"));
    CHECK(tb_test_count_trials(db, "t", TB_TRIAL_DONE, NULL) == 1);
    s = small_spec(subs, 1);
    s.name = "only_crash";
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_CRASHED, &err,
                "no submission left to run");
    CHECK(sum.skipped == 1 && sum.planned == 0);
    unsetenv("TB_CRASHER_LOAD");
    tb_test_remove_store(db);
}

/* NaN weights behind a finite reported loss: the eval's validation loss is NaN and the trial
 * fails as diverged (it had been recorded as done, "missed the target"). */
static void test_nan_weights(void)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    if (!crash) return;
    char db[256];
    temp_path(db, sizeof db, "nan");
    setenv("TB_CRASHER_NAN", "1", 1);
    const char *subs[1] = {crash};
    tb_bench_spec s = small_spec(subs, 1);
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    unsetenv("TB_CRASHER_NAN");
    CHECK(sum.ran == 1 && sum.failed == 1);
    tb_store *store;
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_open_readonly(db, &store, &err), &err);
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 1 && t[0].status == TB_TRIAL_FAILED &&
          strstr(t[0].reason, "diverged: the validation loss is nan"));
    free(t);
    tb_store_close(store);
    tb_test_remove_store(db);
}

int main(void)
{
    test_submission_errors();
    test_load_crash();
    test_nan_weights();
    test_missing_data();
    test_corrupt_data();
    test_target_metric();
    test_target_on_subset();
    test_crash_isolated();
    test_kill_and_resume();
    return tb_test_finish("test_bench");
}

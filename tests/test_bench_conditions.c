/* test_bench_conditions.c: the conditions of real short trials: a trial run beside busy
 * processes (two per core) is flagged contended in the store and in the score table; a trial
 * stopped again and again (SIGSTOP / SIGCONT) for longer in all than its hang limit
 * finishes, while one stuck in update_params is killed as hung; the submissions' trials run
 * interleaved, in the order recorded, and a benchmark killed in the middle resumes. */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_bench_conditions_%s_%d.db", tag, (int)getpid());
    unlink(buf);
}


/* The only trial of benchmark "t" in db. */
static bool only_trial(const char *db, tb_trial_record *out)
{
    tb_store *store;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return false;
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    bool ok = CHECK(n == 1);
    if (ok) *out = t[0];
    free(t);
    tb_store_close(store);
    return ok;
}

static void test_contended(void)
{
    char db[256];
    temp_path(db, sizeof db, "busy");
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 0.4, 200);
    /* two busy processes per core: the trial's 2 threads get at most a third of the CPUs */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n_busy = (int)(cores > 0 && cores < 16 ? 2 * cores : 4);
    pid_t busy[32];
    fflush(NULL);
    for (int i = 0; i < n_busy; i++) {
        busy[i] = fork();
        if (busy[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
            for (volatile unsigned long x = 0;; x++) {}
        }
    }
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    for (int i = 0; i < n_busy; i++) {
        kill(busy[i], SIGKILL);
        waitpid(busy[i], NULL, 0);
    }
    tb_trial_record t;
    if (!only_trial(db, &t)) return;
    printf("beside %d busy processes: %s (cpu %.2f s over %.2f s, load %.2f, %lld involuntary "
           "switches)\n", n_busy, t.contention, t.cpu_time, t.wall_time, t.load_avg,
           (long long)t.nivcsw);
    CHECK(t.status == TB_TRIAL_DONE && t.contended == 1 && t.contention[0] != 0);
    CHECK(t.cpu_time > 0 && t.wall_time > 0 && t.load_avg >= 0 && t.nivcsw >= 0 &&
          t.run_order == 1);
    tb_store *store;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    tb_eval_record *ev;
    int ne = 0;
    CHECK_OK(tb_store_evals(store, t.id, &ev, &ne, &err), &err);
    CHECK(ne >= 1 && ev[ne - 1].cpu_time > 0 && ev[ne - 1].load_avg >= 0 &&
          ev[ne - 1].nivcsw >= 0);
    free(ev);
    /* the score table marks the cell and says why in a footnote */
    tb_score_options o = {.benchmark = "t"};
    tb_score_table *table = NULL;
    if (CHECK_OK(tb_score_store(store, &o, &table, &err), &err)) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        tb_score_table_write_text(table, f);
        fclose(f);
        CHECK(strstr(text, "~ (0/1 studies, 1 contended)") ||
              strstr(text, "s~ (1/1 studies, 1 contended)"));
        CHECK(strstr(text, "~ marks a time with trials run on a contended machine (1 in all"));
        free(text);
        f = open_memstream(&text, &len);
        tb_score_table_write_json(table, f);
        fclose(f);
        CHECK(strstr(text, "\"trials_contended\":1"));
        free(text);
        tb_score_table_destroy(table);
    }
    tb_store_close(store);
    tb_test_remove_store(db);
}

/* Stopped 10 times for 0.5 s, 5 s in all against a hang limit of 4 s: slow, not hung. Between
 * stops it runs 0.2 s, so that even on a loaded machine under the sanitizers it completes a
 * step in every 4 s; the budget outlasts the stops, whose time counts as submission time when
 * they stop a step. (Its set-up, which beats once at its end, has a limit of its own:
 * test_bench_steps.) */
static void test_slow_not_hung(void)
{
    char db[256];
    temp_path(db, sizeof db, "slow");
    const char *subs[1] = {"sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 10, 200);
    s.run_to_budget = true;
    s.trial.hang_s = 4;
    pid_t bench = tb_test_bench_in_child(db, &s);
    pid_t trial = 0;
    bool exited = false;
    int wst = 0;
    /* until it trains (its set-up is done) */
    for (int i = 0; i < (int)(TB_TEST_WAIT_S / 0.01) && !trial; i++) {
        if (tb_test_count_trials(db, "t", TB_TRIAL_RUNNING, NULL) == 1)
            trial = (pid_t)tb_test_child_of(bench);
        if (!trial && tb_test_child_exited(bench, &wst, &exited)) break;
        tb_test_sleep_s(0.01);
    }
    int stops = 0;
    for (; trial > 0 && stops < 10; stops++) {
        if (kill(trial, SIGSTOP) != 0) break;
        tb_test_sleep_s(0.5);
        kill(trial, SIGCONT);
        tb_test_sleep_s(0.2);
    }
    if (!exited) waitpid(bench, &wst, 0);
    CHECK(trial > 0 && stops == 10 && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    tb_trial_record t;
    if (!only_trial(db, &t)) return;
    printf("stopped %d x 0.5 s: %s, %lld steps, %.1f s of submission time, %.1f s wall\n", stops,
           t.reason, (long long)t.steps, t.submission_time, t.wall_time);
    CHECK(t.status == TB_TRIAL_DONE && t.attempts == 1 && t.steps > 0 &&
          strstr(t.reason, "the target"));
    /* it trained through every stop: its wall time holds them */
    CHECK(t.wall_time > stops * 0.5 && stops * 0.5 > s.trial.hang_s);
    tb_test_remove_store(db);
}

/* A submission stuck in update_params, with no wall-clock limit: killed as hung, once it was
 * training (its attempt counted: its set-up was done). */
static void test_stuck_hung(void)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    if (!CHECK(crash != NULL)) return;
    char db[256];
    temp_path(db, sizeof db, "stuck");
    tb_error err = {0};
    tb_store *store;
    if (!CHECK_OK(tb_store_open(db, &store, &err), &err)) return;
    tb_trial_record h;
    memset(&h, 0, sizeof h);
    snprintf(h.benchmark, sizeof h.benchmark, "t");
    snprintf(h.submission, sizeof h.submission, "crasher");
    snprintf(h.workload, sizeof h.workload, "fmnist_mlp");
    snprintf(h.ruleset, sizeof h.ruleset, "external");
    snprintf(h.metric, sizeof h.metric, "error_rate");
    h.budget_s = 100;
    h.eval_period_s = 1;
    tb_hparams_set(&h.hparams, "hang", 1, NULL);
    CHECK_OK(tb_store_plan_trial(store, &h, &err), &err);
    tb_submission_ref *ref;
    if (CHECK_OK(tb_submission_load(crash, NULL, &ref, &err), &err)) {
        const char *subs[1] = {"sgd"};
        tb_trial_options o = tb_test_bench_spec(subs, 1, 1, 200).trial;
        o.hang_s = 3;
        o.timeout_s = 0;
        CHECK_OK(tb_trial_run_isolated(db, h.id, ref, &o, &err), &err);
        CHECK_OK(tb_store_trial_get(store, h.id, &h, &err), &err);
        printf("stuck: %s\n", h.reason);
        CHECK(h.status == TB_TRIAL_FAILED && h.attempts == 1 &&
              strstr(h.reason, "hung: the trial process completed no step for 3 s (the last "
                               "completed step was 0"));
        tb_submission_unload(ref);
    }
    tb_store_close(store);
    tb_test_remove_store(db);
}

/* Two submissions, two studies: run one of each in turn (the second study's in the other
 * order), the order recorded; killed in the middle, the same call resumes. */
static void test_interleaved_resume(void)
{
    char db[256];
    temp_path(db, sizeof db, "order");
    const char *subs[2] = {"sgd", "adamw"};
    tb_bench_spec s = tb_test_bench_spec(subs, 2, 0.6, 100);
    s.studies = 2;
    s.run_to_budget = true;
    pid_t pid = tb_test_bench_in_child(db, &s);
    bool killed = false, exited = false;
    int wst = 0;
    for (int i = 0; i < (int)(TB_TEST_WAIT_S / 0.01) && !killed; i++) {
        int evals = 0;
        int done = tb_test_count_trials(db, "t", TB_TRIAL_DONE, NULL);
        int running = tb_test_count_trials(db, "t", TB_TRIAL_RUNNING, &evals);
        if (done >= 1 && running == 1 && evals >= 1) killed = kill(pid, SIGKILL) == 0;
        if (!killed && tb_test_child_exited(pid, &wst, &exited)) break; /* it finished first */
        tb_test_sleep_s(0.01);
    }
    if (!exited) waitpid(pid, NULL, 0);
    CHECK(killed);
    tb_test_sleep_s(0.3); /* the trial process dies with its parent */
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 4 && sum.reused >= 1 && sum.ran == 4 - sum.reused);
    tb_store *store;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    tb_store_close(store);
    /* by run order: sgd, adamw in study 0; adamw, sgd in study 1 */
    static const struct { int study; const char *sub; } want[4] = {
        {0, "sgd"}, {0, "adamw"}, {1, "adamw"}, {1, "sgd"}};
    int rerun = 0;
    /* sort by run order (4 items) */
    for (int i = 0; n == 4 && i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (t[j].run_order < t[i].run_order) {
                tb_trial_record x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    for (int i = 0; n == 4 && i < 4; i++) {
        CHECK(t[i].status == TB_TRIAL_DONE && t[i].run_order > 0 && t[i].study == want[i].study &&
              strcmp(t[i].submission, want[i].sub) == 0);
        rerun += t[i].attempts == 2;
    }
    CHECK(n == 4 && rerun == 1);
    free(t);
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 4 && sum.ran == 0);
    tb_test_remove_store(db);
}

int main(void)
{
    test_contended();
    test_slow_not_hung();
    test_stuck_hung();
    test_interleaved_resume();
    return tb_test_finish("test_bench_conditions");
}

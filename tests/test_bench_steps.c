/* test_bench_steps.c: evals placed by steps (tb_trial_options.eval_every_steps) make the steps
 * to target a function of the seeds alone: an identical trial run twice, the second time
 * stopped 4 times for 0.3 s (SIGSTOP / SIGCONT) while it trains, evaluates at the same steps
 * and reaches the target at the same step; and a trial's set-up, slower than its hang limit, is not
 * taken for a hang, while a set-up stuck for good is killed at the set-up limit. */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_bench_steps_%s_%d.db", tag, (int)getpid());
    unlink(buf);
}


/* The only trial of benchmark "t" in db, and the steps of its evals (at most cap). */
static bool only_trial(const char *db, tb_trial_record *out, int64_t *steps, int cap, int *n_ev)
{
    tb_store *store;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return false;
    tb_trial_record *t = NULL;
    int n = 0;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    bool ok = CHECK(n == 1);
    *n_ev = 0;
    if (ok) {
        *out = t[0];
        tb_eval_record *ev = NULL;
        int ne = 0;
        CHECK_OK(tb_store_evals(store, t[0].id, &ev, &ne, &err), &err);
        for (int i = 0; i < ne && i < cap; i++) steps[i] = ev[i].step;
        *n_ev = ne < cap ? ne : cap;
        free(ev);
    }
    free(t);
    tb_store_close(store);
    return ok;
}

/* The spec of both runs: adamw at one point (which reaches fmnist_mlp's quick target in about
 * 130 steps), an eval every 10 steps; its search space written under dir. */
static tb_bench_spec steps_spec(char *dir, size_t cap)
{
    static const char *subs[1] = {"adamw"};
    snprintf(dir, cap, "/tmp/tb_test_bench_steps_space_%d", (int)getpid());
    mkdir(dir, 0700);
    char path[600];
    snprintf(path, sizeof path, "%s/adamw.json", dir);
    tb_test_write_text(path, "[{\"learning_rate\": 0.003}]");
    /* a budget far beyond the target's 130 steps even on a machine loaded 20-fold */
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 600, 500);
    s.search_space_dir = dir;
    s.eval_period_s = 0.2; /* by the clock, other evals: off with eval_every_steps */
    s.trial.eval_every_steps = 10;
    return s;
}

/* Runs the benchmark in a child; with stops > 0, stops its trial that many times for 0.3 s
 * once it has made its first eval (12 more evals and 120 steps to go: it is still training
 * when the stops end, as each lets it run 0.1 s only). Returns the stops made. */
static int run_slowed(const char *db, const tb_bench_spec *s, int stops)
{
    pid_t bench = tb_test_bench_in_child(db, s);
    pid_t trial = 0;
    for (int i = 0; stops > 0 && i < 6000 && !trial; i++) {
        int evals = 0;
        if (tb_test_count_trials(db, "t", TB_TRIAL_RUNNING, &evals) == 1 && evals == 1)
            trial = (pid_t)tb_test_child_of(bench);
        tb_test_sleep_s(0.01);
    }
    int made = 0;
    for (; trial > 0 && made < stops; made++) {
        if (kill(trial, SIGSTOP) != 0) break;
        tb_test_sleep_s(0.3);
        kill(trial, SIGCONT);
        tb_test_sleep_s(0.1);
    }
    int wst = 0;
    waitpid(bench, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    return made;
}

static void test_steps_to_target(void)
{
    char a[256], b[256];
    temp_path(a, sizeof a, "plain");
    temp_path(b, sizeof b, "slowed");
    char dir[256];
    tb_bench_spec s = steps_spec(dir, sizeof dir);
    run_slowed(a, &s, 0);
    int stops = run_slowed(b, &s, 4);
    tb_trial_record ta, tb;
    int64_t sa[256], sb[256];
    int na = 0, nb = 0;
    if (!only_trial(a, &ta, sa, 256, &na) || !only_trial(b, &tb, sb, 256, &nb)) return;
    printf("plain: %s at step %lld (%.2f s, %d evals); slowed %d x 0.3 s: %s at step %lld "
           "(%.2f s, %d evals, %.1f s wall)\n", ta.reason, (long long)ta.steps,
           ta.time_to_target, na, stops, tb.reason, (long long)tb.steps, tb.time_to_target, nb,
           tb.wall_time);
    CHECK(ta.status == TB_TRIAL_DONE && ta.reached && tb.status == TB_TRIAL_DONE && tb.reached);
    /* the same steps to target and the same evals, at multiples of 10, however slowed */
    CHECK(stops == 4 && tb.wall_time > stops * 0.3);
    CHECK(ta.steps == tb.steps && ta.steps % 10 == 0 && na == nb && na >= 1);
    for (int i = 0; i < na && i < nb; i++) CHECK(sa[i] == sb[i] && sa[i] == 10 * (i + 1));
    /* the spec holds the interval: the same runs resume (reused), another is refused */
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(a, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 1 && sum.ran == 0);
    s.trial.eval_every_steps = 0;
    CHECK_FAILS(tb_bench_run(a, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "differs in: eval_every_steps");
    tb_test_remove_store(a);
    tb_test_remove_store(b);
    char path[600];
    snprintf(path, sizeof path, "%s/adamw.json", dir);
    unlink(path);
    rmdir(dir);
}

/* A crasher trial planned in db with hyperparameter hp at value. */
static bool plan_crasher(const char *db, const char *hp, double value, tb_trial_record *h)
{
    tb_error err = {0};
    tb_store *store;
    if (!CHECK_OK(tb_store_open(db, &store, &err), &err)) return false;
    memset(h, 0, sizeof *h);
    snprintf(h->benchmark, sizeof h->benchmark, "t");
    snprintf(h->submission, sizeof h->submission, "crasher");
    snprintf(h->workload, sizeof h->workload, "fmnist_mlp");
    snprintf(h->ruleset, sizeof h->ruleset, "external");
    snprintf(h->metric, sizeof h->metric, "error_rate");
    h->budget_s = 0.3;
    h->eval_period_s = 1;
    tb_hparams_set(&h->hparams, hp, value, NULL);
    tb_hparams_set(&h->hparams, "crash_step", 1e12, NULL); /* never crashes */
    bool ok = CHECK_OK(tb_store_plan_trial(store, h, &err), &err);
    tb_store_close(store);
    return ok;
}

/* Runs the crasher trial h in a child process under hang limit hang_s and set-up limit
 * setup_s; re-reads h. */
static void run_crasher(const char *db, tb_trial_record *h, double hang_s, double setup_s)
{
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    tb_error err = {0};
    tb_submission_ref *ref;
    if (!CHECK_OK(tb_submission_load(crash, NULL, &ref, &err), &err)) return;
    const char *subs[1] = {"sgd"};
    tb_trial_options o = tb_test_bench_spec(subs, 1, 1, 200).trial;
    o.hang_s = hang_s;
    o.setup_s = setup_s;
    CHECK_OK(tb_trial_run_isolated(db, h->id, ref, &o, &err), &err);
    tb_submission_unload(ref);
    tb_store *store;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    CHECK_OK(tb_store_trial_get(store, h->id, h, &err), &err);
    tb_store_close(store);
}

static void test_slow_setup(void)
{
    if (!CHECK(getenv("TB_CRASH_SUBMISSION") != NULL)) return;
    char db[256];
    temp_path(db, sizeof db, "setup");
    /* a set-up of 2.5 s against a hang limit of 1 s: not hung (the set-up's limit is 1800 s) */
    tb_trial_record h;
    if (plan_crasher(db, "setup_sleep", 2.5, &h)) {
        run_crasher(db, &h, 1, 0);
        printf("slow set-up: %s (%s)\n", tb_trial_status_name(h.status), h.reason);
        CHECK(h.status == TB_TRIAL_DONE && h.steps > 0 && strstr(h.reason, "the target"));
    }
    tb_test_remove_store(db);
    /* stuck in set-up for good: killed at the set-up limit, saying so */
    if (plan_crasher(db, "setup_hang", 1, &h)) {
        run_crasher(db, &h, 1, 2);
        printf("stuck set-up: %s\n", h.reason);
        CHECK(h.status == TB_TRIAL_FAILED &&
              strstr(h.reason, "hung in set-up: the trial process did not finish its set-up") &&
              strstr(h.reason, "in 2 s"));
    }
    tb_test_remove_store(db);
}

int main(void)
{
    test_steps_to_target();
    test_slow_setup();
    return tb_test_finish("test_bench_steps");
}

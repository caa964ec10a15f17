/* test_bench_jobs.c: bench with several jobs (trials side by side): the same trials, points,
 * seeds and, where the training is deterministic (one thread, evals by steps), the same evals
 * as one job; the jobs really overlap; each trial records its jobs and CPUs; a gp study's
 * trial planned without a point starts only after the study's trials before it finished;
 * a benchmark killed with several trials running resumes them; bad jobs and CPU lists. */
#include "testutil.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_bench_jobs_%s_%d.db", tag, (int)getpid());
    tb_test_remove_store(buf);
}

/* The children of this process now (zombies included), from /proc. */
static int children_now(void)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    FILE *f = fopen(path, "r");
    int n = 0;
    long c;
    while (f && fscanf(f, "%ld", &c) == 1) n++;
    if (f) fclose(f);
    return n;
}

typedef struct watch {
    const char *db;
    int reports, most_children;
    int gp_initial;
    int violations; /* gp trials whose point was chosen before an earlier trial finished */
} watch;

/* At each trial's report: how many trial processes run beside it; and, for the gp rule, that
 * no later trial of the reported trial's study has its point yet. */
static void on_trial(void *user, const tb_bench_event *e)
{
    watch *w = user;
    w->reports++;
    int c = children_now();
    if (c > w->most_children) w->most_children = c;
    if (w->gp_initial <= 0 || e->reused) return;
    tb_store *store;
    tb_error err = {0};
    if (tb_store_open_readonly(w->db, &store, &err) != TB_OK) return;
    tb_trial_record *t;
    int n;
    if (tb_store_trials(store, "t", &t, &n, &err) == TB_OK) {
        for (int i = 0; i < n; i++)
            if (t[i].study == e->trial->study && t[i].trial > e->trial->trial &&
                t[i].trial >= w->gp_initial && t[i].hparams.count > 0)
                w->violations++;
        free(t);
    }
    tb_store_close(store);
}

static tb_bench_spec det_spec(const char *const *subs, int n)
{
    tb_bench_spec s = tb_test_bench_spec(subs, n, 2.0, 200);
    s.studies = 2;
    s.trials = 1;
    s.trial.threads = 1;
    s.trial.eval_every_steps = 2; /* evals at the same steps however fast */
    return s;
}

static void test_same_as_one_job(void)
{
    const char *subs[2] = {"sgd", "adamw"};
    char one[256], two[256];
    temp_path(one, sizeof one, "one");
    temp_path(two, sizeof two, "two");
    tb_error err = {0};
    tb_bench_summary sum;
    tb_bench_spec s = det_spec(subs, 2);
    watch w1 = {.db = one};
    CHECK_OK(tb_bench_run(one, &s, on_trial, &w1, &sum, &err), &err);
    CHECK(sum.planned == 4 && sum.ran == 4 && w1.reports == 4);
    CHECK(w1.most_children == 0); /* one job: no trial beside the one reported */
    s.trial.jobs = 2;
    watch w2 = {.db = two};
    CHECK_OK(tb_bench_run(two, &s, on_trial, &w2, &sum, &err), &err);
    CHECK(sum.planned == 4 && sum.ran == 4 && sum.reused == 0 && w2.reports == 4);
    /* at the first report the other job's trial was running (or ended, not yet reaped) */
    CHECK(w2.most_children >= 1);
    tb_trial_record *a, *b;
    int na, nb;
    tb_test_read_trials(one, "t", &a, &na);
    tb_test_read_trials(two, "t", &b, &nb);
    CHECK(na == 4 && nb == 4);
    int compared = 0;
    for (int i = 0; i < na && i < nb; i++) {
        /* the same plan, trial by trial */
        CHECK(strcmp(a[i].submission, b[i].submission) == 0 && a[i].study == b[i].study);
        CHECK(memcmp(a[i].seeds, b[i].seeds, sizeof a[i].seeds) == 0);
        CHECK(a[i].hparams.count == b[i].hparams.count && a[i].hparams.count > 0);
        for (int k = 0; k < a[i].hparams.count; k++)
            CHECK(a[i].hparams.values[k] == b[i].hparams.values[k]);
        CHECK(a[i].status == TB_TRIAL_DONE && b[i].status == TB_TRIAL_DONE);
        CHECK(a[i].attempts == 1 && b[i].attempts == 1); /* each ran exactly once */
        /* how they were run */
        CHECK(strstr(a[i].machine, "\"jobs\":1") && strstr(b[i].machine, "\"jobs\":2"));
        CHECK(strstr(b[i].machine, "\"cpus\":null") != NULL);
        /* the same training: the same losses at the same steps */
        tb_eval_record ea[64], eb[64];
        int ka = tb_test_evals_at_steps(one, a[i].id, 2, ea, 64);
        int kb = tb_test_evals_at_steps(two, b[i].id, 2, eb, 64);
        for (int k = 0; k < ka && k < kb; k++) {
            CHECK(ea[k].step == eb[k].step);
            CHECK(ea[k].validation_loss == eb[k].validation_loss);
            CHECK(ea[k].train_loss == eb[k].train_loss);
            compared++;
        }
        /* a target reached by both is reached at the same step */
        if (a[i].reached && b[i].reached) CHECK(a[i].steps == b[i].steps);
    }
    CHECK(compared >= 1); /* (a machine so loaded that no trial took 2 steps compares none) */
    printf("jobs 2 against jobs 1: %d evals compared, identical\n", compared);
    /* the same command resumes with any number of jobs: nothing reruns */
    s.trial.jobs = 3;
    CHECK_OK(tb_bench_run(two, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == 4 && sum.ran == 0);
    free(a);
    free(b);
    tb_test_remove_store(one);
    tb_test_remove_store(two);
}

static void test_gp_studies(void)
{
    const char *subs[1] = {"adamw"};
    char db[256];
    temp_path(db, sizeof db, "gp");
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 0.4, 200);
    s.studies = 2;
    s.trials = 3;
    s.sampler = TB_SAMPLER_GP;
    s.gp_initial = 1;
    s.trial.threads = 1;
    s.trial.jobs = 2;
    tb_error err = {0};
    tb_bench_summary sum;
    watch w = {.db = db, .gp_initial = 1};
    CHECK_OK(tb_bench_run(db, &s, on_trial, &w, &sum, &err), &err);
    CHECK(sum.planned == 6 && sum.ran == 6 && w.reports == 6);
    CHECK(w.violations == 0);
    tb_trial_record *t;
    int n;
    tb_test_read_trials(db, "t", &t, &n);
    for (int i = 0; i < n; i++) {
        CHECK(t[i].attempts == 1 && t[i].hparams.count > 0);
        CHECK(t[i].status == TB_TRIAL_DONE || t[i].status == TB_TRIAL_FAILED);
        /* a study's trials started in turn */
        for (int j = 0; j < n; j++)
            if (t[j].study == t[i].study && t[j].trial < t[i].trial)
                CHECK(t[j].run_order < t[i].run_order);
    }
    free(t);
    tb_test_remove_store(db);
}

/* --cpus: each job pinned to its share, recorded. */
static void test_cpus(void)
{
    const char *subs[1] = {"sgd"};
    char db[256];
    temp_path(db, sizeof db, "cpus");
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 0.3, 200);
    s.trial.threads = 1;
    s.trial.cpus = "0";
    tb_error err = {0};
    tb_bench_summary sum;
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    tb_trial_record *t;
    int n;
    tb_test_read_trials(db, "t", &t, &n);
    CHECK(n == 1 && strstr(t[0].machine, "\"cpus\":\"0\"") && t[0].status == TB_TRIAL_DONE);
    free(t);
    /* bad lists and counts are refused before anything is planned */
    s.name = "bad";
    const char *bad[] = {"", "x", "1-0", "0,0", "0-", "99999", "1023"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s.trial.cpus = bad[i];
        CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                    "CPU");
    }
    s.trial.cpus = "0";
    s.trial.jobs = 2;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err, "jobs");
    s.trial.cpus = NULL;
    s.trial.jobs = -1;
    CHECK_FAILS(tb_bench_run(db, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err, "jobs");
    CHECK(tb_test_query_int(db, "SELECT count(*) FROM trials WHERE benchmark = 'bad'") == 0);
    tb_test_remove_store(db);
}

/* Killed while two trials run: both are rerun by the next run (with one job), nothing
 * finished is rerun. */
static void test_kill_two_running(void)
{
    const char *subs[2] = {"sgd", "adamw"};
    char db[256];
    temp_path(db, sizeof db, "kill");
    tb_bench_spec s = tb_test_bench_spec(subs, 2, 0.8, 200);
    s.studies = 2;
    s.run_to_budget = true;
    s.trial.threads = 1;
    s.trial.jobs = 2;
    pid_t pid = tb_test_bench_in_child(db, &s);
    bool killed = false;
    for (int i = 0; i < 3000 && !killed; i++) {
        int running = tb_test_count_trials(db, "t", TB_TRIAL_RUNNING, NULL);
        if (running == 2) {
            kill(pid, SIGKILL);
            killed = true;
        }
        tb_test_sleep_s(0.01);
    }
    int wst;
    waitpid(pid, &wst, 0);
    CHECK(killed);
    tb_test_sleep_s(0.3); /* the trial processes die with their parent */
    tb_trial_record *before;
    int n;
    tb_test_read_trials(db, "t", &before, &n);
    int done = 0, running = 0;
    for (int i = 0; i < n; i++) {
        done += before[i].status == TB_TRIAL_DONE;
        running += before[i].status == TB_TRIAL_RUNNING;
    }
    CHECK(n == 4 && running == 2);
    s.trial.jobs = 1;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.reused == done && sum.ran == 4 - done);
    tb_trial_record *after;
    tb_test_read_trials(db, "t", &after, &n);
    for (int i = 0; i < n; i++) {
        CHECK(after[i].status == TB_TRIAL_DONE);
        CHECK(after[i].attempts == (before[i].status == TB_TRIAL_RUNNING ? 2 : 1));
    }
    free(before);
    free(after);
    tb_test_remove_store(db);
}

int main(void)
{
    test_same_as_one_job();
    test_gp_studies();
    test_cpus();
    test_kill_two_running();
    return tb_test_finish("test_bench_jobs");
}

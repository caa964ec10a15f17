/* test_cli_bench_dist.c: `trainbench bench` under a real mpirun (rank 0 the coordinator, 2
 * workers): every planned trial runs exactly once, on the workers, and the store holds what a
 * one-process run's holds (the same trials, points, seeds, and evals where the training is
 * deterministic: one thread, evals by steps); a worker that stops answering has its trial
 * re-queued to the other; a killed coordinator's job resumes when the command is run again;
 * one rank runs as one process; a store whose benchmark is being run is refused at once
 * without a hang; --jobs under mpirun is refused. (TB_MPIEXEC: the mpiexec CMake found.) */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[65536];

#define SPEC "-w fmnist_mlp -s sgd -s adamw --studies 2 --eval-every-steps 2 " \
             "--eval-examples 200 -t 1 --calibration-s -1 -q"

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_cli_bench_dist_%s_%d.db", tag, (int)getpid());
    tb_test_remove_store(buf);
}

/* mpirun -np np trainbench ARGS started in the background (its pid: mpirun's). */
static int start_mpi(int np, const char *args)
{
    const char *mpiexec = getenv("TB_MPIEXEC"), *bin = getenv("TB_BINARY");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec %s --oversubscribe --allow-run-as-root -np %d %s %s "
             ">/dev/null 2>&1", mpiexec ? mpiexec : "mpiexec", np, bin ? bin : "./trainbench",
             args);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return (int)pid;
}

/* The process of rank `rank` among mpirun's children (0 when not found yet). */
static int rank_pid(int mpirun, int rank)
{
    char path[96], want[48];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", mpirun, mpirun);
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    FILE *f = fopen(path, "r");
    long c;
    int found = 0;
    while (f && !found && fscanf(f, "%ld", &c) == 1) {
        char env_path[64];
        snprintf(env_path, sizeof env_path, "/proc/%ld/environ", c);
        FILE *e = fopen(env_path, "r");
        char env[16384];
        size_t n = e ? fread(env, 1, sizeof env - 1, e) : 0;
        if (e) fclose(e);
        for (size_t i = 0; i < n; i += strlen(env + i) + 1)
            if (strcmp(env + i, want) == 0) found = (int)c;
    }
    if (f) fclose(f);
    return found;
}

static void test_equals_one_process(void)
{
    char mpi[256], one[256], cmd[1024];
    temp_path(mpi, sizeof mpi, "mpi");
    temp_path(one, sizeof one, "one");
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 1.5 " SPEC, mpi);
    CHECK(tb_test_run_mpi(3, cmd, out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "4 trials: 4 run now (on 2 worker ranks)"));
    CHECK(tb_test_count(out, "4 trials:") == 1); /* rank 0 alone prints */
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 1.5 " SPEC, one);
    CHECK(tb_test_run_cli(cmd, out, sizeof out) == 0);
    tb_trial_record *a, *b;
    int na, nb, compared = 0;
    tb_test_read_trials(one, "quick", &a, &na);
    tb_test_read_trials(mpi, "quick", &b, &nb);
    CHECK(na == 4 && nb == 4);
    for (int i = 0; i < na && i < nb; i++) {
        CHECK(strcmp(a[i].submission, b[i].submission) == 0 && a[i].study == b[i].study);
        CHECK(memcmp(a[i].seeds, b[i].seeds, sizeof a[i].seeds) == 0);
        CHECK(a[i].hparams.count == b[i].hparams.count);
        for (int k = 0; k < a[i].hparams.count; k++)
            CHECK(a[i].hparams.values[k] == b[i].hparams.values[k]);
        CHECK(b[i].status == TB_TRIAL_DONE && b[i].attempts == 1); /* exactly once */
        CHECK(a[i].status == b[i].status);
        CHECK(strstr(b[i].machine, "\"ranks\":3") && !strstr(b[i].machine, "\"rank\":0"));
        CHECK(b[i].resolved_hparams.count > 0 && b[i].run_order >= 1);
        tb_eval_record ea[64], eb[64];
        int ka = tb_test_evals_at_steps(one, a[i].id, 2, ea, 64);
        int kb = tb_test_evals_at_steps(mpi, b[i].id, 2, eb, 64);
        for (int k = 0; k < ka && k < kb; k++) {
            CHECK(ea[k].step == eb[k].step && ea[k].validation_loss == eb[k].validation_loss);
            compared++;
        }
        if (a[i].reached && b[i].reached) CHECK(a[i].steps == b[i].steps);
    }
    CHECK(compared >= 1);
    printf("mpirun -np 3 against one process: %d evals compared, identical\n", compared);
    /* run again under mpirun: everything reused */
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 1.5 " SPEC, mpi);
    CHECK(tb_test_run_mpi(3, cmd, out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "0 run now (on 2 worker ranks), 4 reused"));
    free(a);
    free(b);
    tb_test_remove_store(one);
    tb_test_remove_store(mpi);
}

/* Worker rank 1 stopped (SIGSTOP) while it runs a trial: after the worker timeout its trial
 * goes to rank 2, which runs it; rank 1, continued, is told to stop; nothing runs twice but
 * the re-queued trial. */
static void test_lost_worker(void)
{
    char db[256], cmd[1024];
    temp_path(db, sizeof db, "lost");
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 2 --worker-timeout 10 --run-to-budget "
             SPEC, db);
    int mpirun = start_mpi(3, cmd);
    int worker = 0;
    bool stopped = false;
    for (int i = 0; i < 6000 && !stopped; i++) {
        if (!worker) worker = rank_pid(mpirun, 1);
        if (worker && tb_test_query_int(db, "SELECT count(*) FROM trials t WHERE status = "
                                            "'running' AND machine LIKE '%\"rank\":1,%'") == 1) {
            kill(worker, SIGSTOP);
            stopped = true;
        }
        tb_test_sleep_s(0.01);
    }
    CHECK(stopped);
    /* wait for the re-queued trial to start again on rank 2 */
    bool requeued = false;
    for (int i = 0; i < 6000 && !requeued; i++) {
        requeued = tb_test_query_int(db, "SELECT count(*) FROM trials WHERE attempts = 2") == 1;
        tb_test_sleep_s(0.01);
    }
    CHECK(requeued);
    if (worker) kill(worker, SIGCONT);
    int wst;
    waitpid(mpirun, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    tb_trial_record *t;
    int n;
    tb_test_read_trials(db, "quick", &t, &n);
    int twice = 0;
    for (int i = 0; i < n; i++) {
        CHECK(t[i].status == TB_TRIAL_DONE);
        if (t[i].attempts == 2) {
            twice++;
            CHECK(strstr(t[i].machine, "\"rank\":2,") != NULL); /* run again by the other */
        }
        CHECK(t[i].attempts == 1 || t[i].attempts == 2);
    }
    CHECK(n == 4 && twice == 1);
    free(t);
    tb_test_remove_store(db);
}

/* Rank 0 killed with SIGKILL while trials run: mpirun ends the job; the same command again
 * reruns the interrupted trials and reuses the finished ones. */
static void test_killed_coordinator(void)
{
    char db[256], cmd[1024];
    temp_path(db, sizeof db, "kill");
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 1.5 --run-to-budget " SPEC, db);
    int mpirun = start_mpi(3, cmd);
    bool killed = false;
    for (int i = 0; i < 6000 && !killed; i++) {
        int with_evals = 0;
        int running = tb_test_count_trials(db, "quick", TB_TRIAL_RUNNING, &with_evals);
        int coordinator = rank_pid(mpirun, 0);
        if (running >= 1 && with_evals >= 1 && coordinator) {
            kill(coordinator, SIGKILL);
            killed = true;
        }
        tb_test_sleep_s(0.01);
    }
    CHECK(killed);
    int wst;
    waitpid(mpirun, &wst, 0);
    CHECK(!(WIFEXITED(wst) && WEXITSTATUS(wst) == 0));
    tb_test_sleep_s(0.3);
    tb_trial_record *before, *after;
    int n;
    tb_test_read_trials(db, "quick", &before, &n);
    int done = 0;
    for (int i = 0; i < n; i++) done += before[i].status == TB_TRIAL_DONE;
    CHECK(n == 4 && done < 4);
    CHECK(tb_test_run_mpi(3, cmd, out, sizeof out) == 0);
    char want[96];
    snprintf(want, sizeof want, "%d run now (on 2 worker ranks), %d reused", 4 - done, done);
    CHECK(tb_test_output_has(out, want));
    tb_test_read_trials(db, "quick", &after, &n);
    for (int i = 0; i < n; i++) {
        CHECK(after[i].status == TB_TRIAL_DONE);
        if (before[i].status == TB_TRIAL_DONE)
            CHECK(after[i].attempts == 1 && after[i].steps == before[i].steps);
        if (before[i].status == TB_TRIAL_RUNNING) CHECK(after[i].attempts == 2);
    }
    free(before);
    free(after);
    tb_test_remove_store(db);
}

static void test_refusals(void)
{
    char db[256], cmd[1024];
    temp_path(db, sizeof db, "refuse");
    /* one rank: one process */
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 0.3 --studies 1 -w fmnist_mlp -s sgd "
             "-t 1 --eval-examples 200 --calibration-s -1 -q", db);
    CHECK(tb_test_run_mpi(1, cmd, out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "as 1 rank: the benchmark runs as one process"));
    CHECK(tb_test_output_has(out, "1 trials: 1 run now"));
    /* --jobs under mpirun */
    snprintf(cmd, sizeof cmd, "bench --db %s --jobs 2 " SPEC, db);
    CHECK(tb_test_run_mpi(3, cmd, out, sizeof out) == 2);
    CHECK(tb_test_count(out, "--jobs and --cpus are for one machine") == 1);
    /* the benchmark being run by another process: refused at once, the workers dismissed */
    snprintf(cmd, sizeof cmd, "bench --db %s --name busy --budget 3 --run-to-budget " SPEC, db);
    int busy = start_mpi(1, cmd);
    bool running = false;
    for (int i = 0; i < 6000 && !running; i++) {
        running = tb_test_count_trials(db, "busy", TB_TRIAL_RUNNING, NULL) >= 1;
        tb_test_sleep_s(0.01);
    }
    CHECK(running);
    CHECK(tb_test_run_mpi(3, cmd, out, sizeof out) == 1);
    CHECK(tb_test_output_has(out, "is being run by process"));
    CHECK(tb_test_count(out, "is being run by") == 1); /* rank 0 alone says so */
    kill(busy, SIGTERM);
    int wst;
    waitpid(busy, &wst, 0);
    tb_test_remove_store(db);
}

int main(void)
{
    test_equals_one_process();
    test_lost_worker();
    test_killed_coordinator();
    test_refusals();
    return tb_test_finish("test_cli_bench_dist");
}

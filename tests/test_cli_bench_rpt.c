/* test_cli_bench_rpt.c: `bench --ranks-per-trial 2`, each trial a real `mpirun -np 2` of
 * data-parallel ranks: the benchmark finishes, the store records the ranks (spec and machine
 * facts), and each trial's evals are a one-process trial's (the same point and seeds; at one
 * thread with evals by steps, the same steps and losses within float summation order), also
 * for a worker of `mpirun -np 2 trainbench bench`; a rank of a trial killed with SIGKILL: that
 * trial is recorded failed with the reason and the other trial finishes; bad values and
 * impossible combinations are refused before a store is made. (TB_MPIEXEC: the mpiexec CMake
 * found; the trial's own mpirun is the one on PATH.) */
#include "testutil.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char out[65536];

#define SPEC "-w fmnist_mlp -s sgd --studies 1 --trials 2 --eval-every-steps 2 " \
             "--eval-examples 200 -t 1 --calibration-s -1 -q"

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_cli_bench_rpt_%s_%d.db", tag, (int)getpid());
    tb_test_remove_store(buf);
}

/* Store `db` (a run with --ranks-per-trial 2) against `one` (the same benchmark, one process
 * per trial): the same trials, points and seeds, the ranks recorded, and the evals at the
 * same steps, with the same losses to float summation order over the first 30 steps.
 * Returns the evals compared. */
static int compare_stores(const char *one, const char *db)
{
    tb_trial_record *a, *b;
    int na, nb, compared = 0;
    tb_test_read_trials(one, "quick", &a, &na);
    tb_test_read_trials(db, "quick", &b, &nb);
    CHECK(na == 2 && nb == 2);
    for (int i = 0; i < na && i < nb; i++) {
        CHECK(strcmp(a[i].submission, b[i].submission) == 0 && a[i].trial == b[i].trial);
        CHECK(memcmp(a[i].seeds, b[i].seeds, sizeof a[i].seeds) == 0);
        CHECK(a[i].hparams.count == b[i].hparams.count);
        for (int k = 0; k < a[i].hparams.count && k < b[i].hparams.count; k++)
            CHECK(a[i].hparams.values[k] == b[i].hparams.values[k]);
        CHECK(b[i].status == TB_TRIAL_DONE && b[i].attempts == 1);
        CHECK(strstr(b[i].machine, "\"ranks_per_trial\":2") != NULL);
        CHECK(strstr(a[i].machine, "ranks_per_trial") == NULL);
        tb_eval_record ea[64], eb[64];
        int ka = tb_test_evals_at_steps(one, a[i].id, 2, ea, 64);
        int kb = tb_test_evals_at_steps(db, b[i].id, 2, eb, 64);
        for (int k = 0; k < ka && k < kb; k++) {
            CHECK(ea[k].step == eb[k].step);
            /* one process sums the batch's gradient in one order, two ranks each sum half and
             * average: 1e-7 of the loss apart in the first 30 steps (measured: at most 1.3e-7),
             * which training then grows chaotically (to 0.7% by step 92 of one trial on an idle
             * machine); a wrong average (a rank's half alone, a sum for a mean) is far off from
             * the first step. compare_train_dist checks the same computation at any step. */
            if (ea[k].step > 30) continue;
            CHECK_NEAR(eb[k].train_loss, ea[k].train_loss, 1e-5 * fabs(ea[k].train_loss));
            CHECK_NEAR(eb[k].validation_loss, ea[k].validation_loss,
                       1e-5 * fabs(ea[k].validation_loss));
            compared++;
        }
    }
    free(a);
    free(b);
    return compared;
}

/* The first trial of db (a run with --ranks-per-trial 2) against `mpirun -np 2 trainbench
 * train --dist` of the same point, batch and seeds for as many steps as one of its evals came
 * after: the same validation and test losses (to the 6 digits --json prints). */
static void compare_train_dist(const char *db)
{
    tb_trial_record *t;
    int n;
    tb_test_read_trials(db, "quick", &t, &n);
    CHECK(n >= 1);
    if (n < 1) return;
    tb_eval_record e[64];
    int ne = tb_test_evals_at_steps(db, t[0].id, 2, e, 64), k = ne - 1;
    while (k > 0 && e[k].step > 10) k--; /* a short run of train */
    CHECK(ne >= 1 && e[k].step >= 2);
    char cmd[4096];
    int len = snprintf(cmd, sizeof cmd, "train -w %s -a %s -b %d --steps %lld --schedule "
                       "constant --threads 1 --evals 0 --eval-examples 200 --dist --json",
                       t[0].workload, t[0].submission,
                       (int)tb_hparams_get(&t[0].resolved_hparams, "batch_size", 0),
                       (long long)e[k].step);
    for (int i = 0; i < t[0].hparams.count; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --hp %s=%.17g",
                        t[0].hparams.names[i], t[0].hparams.values[i]);
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --seed-%s %llu",
                        tb_stream_name((tb_stream)s), (unsigned long long)t[0].seeds[s]);
    CHECK(tb_test_run_mpi(2, cmd, out, sizeof out) == 0);
    const char *val = strstr(out, "\"validation\":"), *test = strstr(out, "\"test\":");
    CHECK(val && test);
    if (val && test) {
        double vl = tb_test_json_number(val, "loss"), tl = tb_test_json_number(test, "loss");
        CHECK_NEAR(vl, e[k].validation_loss, 1e-5 * fabs(e[k].validation_loss));
        CHECK_NEAR(tl, e[k].test_loss, 1e-5 * fabs(e[k].test_loss));
        printf("trial 1 at step %lld against train --dist: validation loss %.6f and %.6f, "
               "test loss %.6f and %.6f\n", (long long)e[k].step, e[k].validation_loss, vl,
               e[k].test_loss, tl);
    }
    free(t);
}

static void test_equals_one_process(void)
{
    char one[256], rpt[256], mpi[256], cmd[1024];
    temp_path(one, sizeof one, "one");
    temp_path(rpt, sizeof rpt, "rpt");
    temp_path(mpi, sizeof mpi, "mpi");
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 1.5 " SPEC, one);
    CHECK(tb_test_run_cli(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 2 --ranks-per-trial 2 " SPEC, rpt);
    int rc = tb_test_run_cli(cmd, out, sizeof out);
    CHECK(rc == 0);
    if (rc != 0) printf("%s\n", out);
    CHECK(tb_test_output_has(out, "2 trials: 2 run now"));
    CHECK(tb_test_query_int(rpt, "SELECT count(*) FROM benchmarks WHERE spec LIKE "
                                 "'%\"ranks_per_trial\":2%'") == 1);
    int n = compare_stores(one, rpt);
    CHECK(n >= 2);
    printf("--ranks-per-trial 2 against one process: %d evals compared (to step 30), "
           "equal to 1e-5\n", n);
    compare_train_dist(rpt);
    /* a worker of an MPI benchmark starts its trials' ranks the same way */
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 2 --ranks-per-trial 2 " SPEC, mpi);
    rc = tb_test_run_mpi(2, cmd, out, sizeof out);
    CHECK(rc == 0);
    if (rc != 0) printf("%s\n", out);
    CHECK(tb_test_output_has(out, "2 trials: 2 run now (on 1 worker rank)"));
    n = compare_stores(one, mpi);
    CHECK(n >= 2);
    printf("under mpirun -np 2 (a worker's trials of 2 ranks): %d evals compared\n", n);
    tb_test_remove_store(one);
    tb_test_remove_store(rpt);
    tb_test_remove_store(mpi);
}

/* The pid of a process running `trainbench bench-trial` as rank `rank` (0: none yet). */
static int trial_rank_pid(int rank)
{
    char want[48];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *dir = opendir("/proc");
    struct dirent *de;
    int found = 0;
    while (dir && !found && (de = readdir(dir))) {
        int pid = atoi(de->d_name);
        if (pid <= 0) continue;
        char path[64], buf[16384];
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        bool trial = false;
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
            if (strcmp(buf + i, "bench-trial") == 0) trial = true;
        if (!trial) continue;
        snprintf(path, sizeof path, "/proc/%d/environ", pid);
        f = fopen(path, "r");
        n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = 0;
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
            if (strcmp(buf + i, want) == 0) found = pid;
    }
    if (dir) closedir(dir);
    return found;
}

/* Rank 1 of the first trial killed with SIGKILL once it trains: that trial is failed with the
 * reason, the second trial runs and finishes, and the benchmark ends normally. */
static void test_rank_killed(void)
{
    char db[256], cmd[1024];
    temp_path(db, sizeof db, "kill");
    const char *bin = getenv("TB_BINARY");
    snprintf(cmd, sizeof cmd, "exec %s bench --db %s --budget 3 --run-to-budget "
             "--ranks-per-trial 2 " SPEC " >/dev/null 2>&1", bin ? bin : "./trainbench", db);
    fflush(NULL);
    pid_t bench = fork();
    if (bench == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int victim = 0;
    for (int i = 0; i < 600 && !victim; i++) { /* up to 60 s */
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        if (tb_test_query_int(db, "SELECT count(*) FROM evals") > 0) victim = trial_rank_pid(1);
    }
    CHECK(victim > 0);
    if (victim > 0) kill(victim, SIGKILL);
    int wst = 0;
    waitpid(bench, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    tb_trial_record *t;
    int n;
    tb_test_read_trials(db, "quick", &t, &n);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(t[0].status == TB_TRIAL_FAILED);
        CHECK(strstr(t[0].reason, "crashed: a rank of the trial's 2 (mpirun -np 2) died") != NULL);
        CHECK(t[1].status == TB_TRIAL_DONE && t[1].steps > 0);
        printf("rank 1 killed: trial 1 %s; trial 2 done after %lld steps\n", t[0].reason,
               (long long)t[1].steps);
    }
    free(t);
    CHECK(trial_rank_pid(0) == 0 && trial_rank_pid(1) == 0); /* no rank left behind */
    tb_test_remove_store(db);
}

/* `PATH=path trainbench ARGS`: its exit code, its output in out. */
static int run_with_path(const char *path, const char *args)
{
    const char *bin = getenv("TB_BINARY");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "PATH=%s %s %s 2>&1", path, bin ? bin : "./trainbench", args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void refused(const char *args, int code, const char *want)
{
    char db[256], cmd[1024];
    temp_path(db, sizeof db, "bad");
    snprintf(cmd, sizeof cmd, "bench --db %s " SPEC " %s", db, args);
    int rc = tb_test_run_cli(cmd, out, sizeof out);
    CHECK(rc == code);
    CHECK(tb_test_output_has(out, want));
    if (rc != code || !strstr(out, want)) printf("%s: %d\n%s\n", args, rc, out);
    CHECK(access(db, F_OK) != 0); /* refused before a store is made */
}

static void test_refused(void)
{
    refused("--ranks-per-trial 0", 2, "--ranks-per-trial: 0 ranks train nothing");
    refused("--ranks-per-trial -1", 2, "--ranks-per-trial");
    refused("--ranks-per-trial two", 2, "--ranks-per-trial");
    char many[64], why[128];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(many, sizeof many, "--ranks-per-trial %ld", cores + 1);
    snprintf(why, sizeof why, "--ranks-per-trial %ld: more ranks than the %ld cores", cores + 1,
             cores);
    refused(many, 2, why);
    if (cores >= 2 && cores < 4)
        refused("--ranks-per-trial 2 --jobs 2", 2, "--ranks-per-trial 2 with --jobs 2: 4 ranks");
    refused("--ranks-per-trial 2 --device cuda", 3, "--ranks-per-trial 2 with --device cuda");
    /* a library's own update_params (the build folder's example) */
    refused("--ranks-per-trial 2 -s ./submission_example.so", 3,
            "--ranks-per-trial 2 with submission ./submission_example.so: only the built-in");
    /* no mpirun on PATH (the binary is named by its full path) */
    char db[256], cmd[1024];
    temp_path(db, sizeof db, "path");
    snprintf(cmd, sizeof cmd, "bench --db %s --ranks-per-trial 2 " SPEC, db);
    CHECK(run_with_path("/nonexistent", cmd) != 0);
    CHECK(tb_test_output_has(out, "--ranks-per-trial 2: no mpirun on PATH"));
    CHECK(access(db, F_OK) != 0);
    /* kfac, which train --dist refuses: its trial fails saying why */
    temp_path(db, sizeof db, "kfac");
    snprintf(cmd, sizeof cmd, "bench --db %s --budget 1 --ranks-per-trial 2 -w fmnist_mlp -s kfac "
             "--studies 1 --trials 1 --eval-examples 200 -t 1 --calibration-s -1 -q", db);
    CHECK(tb_test_run_cli(cmd, out, sizeof out) == 0);
    tb_trial_record *t;
    int n;
    tb_test_read_trials(db, "quick", &t, &n);
    CHECK(n == 1 && t[0].status == TB_TRIAL_FAILED &&
          strstr(t[0].reason, "kfac is not built for data-parallel training"));
    free(t);
    tb_test_remove_store(db);
}

int main(void)
{
    test_refused();
    test_equals_one_process();
    test_rank_killed();
    return tb_test_finish("test_cli_bench_rpt");
}

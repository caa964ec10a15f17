/* isolate.c: a trial in a child process, so that a submission that crashes or hangs becomes a
 * failed trial with the reason recorded while the benchmark goes on. The child writes to the
 * store through its own connection (SQLite's WAL keeps committed rows whatever happens to it)
 * and dies with its parent (PR_SET_PDEATHSIG), so killing the benchmark leaves no orphans. When
 * the child cannot record an outcome because the store failed (a full disk), its error comes
 * back through a pipe and is the benchmark's error, not the submission's failure. The child's
 * stdout is its stderr: what a submission prints never mixes into the caller's output (the
 * score table of `bench --json`). The child beats a heartbeat in memory shared with the parent
 * at every step and eval; a trial is hung, and killed, when it beats no more for
 * opts->hang_s, however long it has run: a slow machine slows the beats, it does not stop
 * them. Its set-up (reading the data), which beats only at its end, has a limit of its own,
 * opts->setup_s. An absolute wall-clock limit applies only when opts->timeout_s sets one. */
/* MAP_ANONYMOUS */
#define _DEFAULT_SOURCE

#include "trainbench/benchmark.h"
#include "bench/child.h"
#include "bench/isolate.h"
#include "bench/rank_trial.h"
#include "bench/trial_impl.h"
#include "core/clock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* The exit status of a trial process that could not start or record an outcome (its error is
 * in the pipe). */
#define CHILD_NO_OUTCOME 2

/* The started child watched by its heartbeat hb. */
static void watch_child(tb_trial_proc *p, pid_t pid, tb_trial_heartbeat *hb)
{
    p->hb = hb;
    p->t0 = tb_monotonic_s();
    const tb_child_watch watch = {.beats = &hb->beats, .ready = &hb->ready,
                                  .setup_s = p->setup, .stall_s = p->hang};
    tb_child_watch_start(&p->watcher, pid, p->limit, &watch);
}

/* A data-parallel trial: the forked child, pinned, execs mpirun of the trial's ranks
 * (rank_trial.c); the error of its rank 0 comes back in the file they share. */
static tb_status spawn_ranks(const char *store_path, int64_t trial_id,
                             const tb_submission_ref *sub, const tb_trial_options *opts,
                             tb_trial_proc *p, tb_error *err)
{
    tb_rank_trial_shared *sh;
    tb_status st = tb_rank_trial_share(store_path, trial_id, sub, opts, &sh, p->shared_path,
                                       sizeof p->shared_path, err);
    if (st != TB_OK) return st;
    int fd;
    pid_t pid = tb_child_fork(&fd);
    if (pid < 0) {
        int e = errno;
        tb_rank_trial_release(sh, p->shared_path);
        return tb_fail(err, TB_ERR_IO, "cannot start a trial process: %s", strerror(e));
    }
    if (pid == 0) {
        tb_error cerr = {0};
        if (tb_bench_cpus_pin(opts->cpus, &cerr) != TB_OK) {
            sh->err = cerr;
            atomic_store(&sh->failed, 1);
            _exit(CHILD_NO_OUTCOME);
        }
        close(fd); /* mpirun's processes need not hold the pipe */
        tb_rank_trial_exec(sh, p->shared_path);
    }
    close(fd);
    p->fd = -1;
    p->shared = sh;
    p->ranks = opts->ranks_per_trial;
    watch_child(p, pid, &sh->hb);
    return TB_OK;
}

tb_status tb_trial_spawn(const char *store_path, int64_t trial_id, const tb_submission_ref *sub,
                         const tb_trial_options *opts, tb_trial_proc *p, tb_error *err)
{
    if (!store_path || !sub || !opts || !p)
        return tb_fail(err, TB_ERR_INVALID, "trial_spawn: %s is NULL",
                       !store_path ? "the store's path" : !sub ? "the submission"
                       : !opts ? "opts" : "the process");
    memset(p, 0, sizeof *p);
    p->id = trial_id;
    p->fd = -1;
    tb_store *store;
    tb_status st = tb_store_open(store_path, &store, err);
    if (st != TB_OK) return st;
    st = tb_store_trial_get(store, trial_id, &p->rec, err);
    tb_store_close(store); /* no connection open across fork */
    if (st != TB_OK) return st;
    p->limit = opts->timeout_s > 0 ? opts->timeout_s : 0;
    p->hang = opts->hang_s > 0 ? opts->hang_s : TB_TRIAL_HANG_DEFAULT_S;
    p->setup = fmax(opts->setup_s > 0 ? opts->setup_s : TB_TRIAL_SETUP_DEFAULT_S, p->hang);
    if (opts->ranks_per_trial > 1) /* its ranks' rank 0 beats in a file they share */
        return spawn_ranks(store_path, trial_id, sub, opts, p, err);
    tb_trial_heartbeat *hb = mmap(NULL, sizeof *hb, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (hb == MAP_FAILED)
        return tb_fail(err, TB_ERR_IO, "cannot share a heartbeat with a trial process: %s",
                       strerror(errno));
    atomic_init(&hb->beats, 0);
    atomic_init(&hb->step, 0);
    atomic_init(&hb->ready, 0);

    /* the child's error, when it could not record an outcome, comes back through a pipe;
     * its stdout is stderr: the submission's prints stay off the caller's (bench --json) */
    int fd;
    pid_t pid = tb_child_fork(&fd);
    if (pid < 0) {
        int e = errno;
        munmap(hb, sizeof *hb);
        return tb_fail(err, TB_ERR_IO, "cannot start a trial process: %s", strerror(e));
    }
    if (pid == 0) {
        tb_error cerr = {0};
        /* pinned before the trial starts its threads (OpenMP's workers inherit the set) */
        tb_status cst = tb_bench_cpus_pin(opts->cpus, &cerr);
        if (cst == TB_OK)
            cst = tb_trial_execute_watched(store_path, trial_id, sub, opts, hb, &cerr);
        if (cst != TB_OK) {
            cerr.status = cst;
            /* one write of a few hundred bytes: atomic, and the pipe holds it */
            ssize_t wrote = write(fd, &cerr, sizeof cerr);
            (void)wrote;
        }
        _exit(cst == TB_OK ? 0 : CHILD_NO_OUTCOME);
    }
    p->fd = fd;
    watch_child(p, pid, hb);
    return TB_OK;
}

bool tb_trial_proc_poll(tb_trial_proc *p)
{
    return tb_child_poll(&p->watcher, &p->wstatus);
}

/* The reason a trial whose process ended without an outcome is recorded failed with. */
static void no_outcome_reason(const tb_trial_proc *p, bool ready, long long last_step,
                              double ran, char *reason, size_t cap)
{
    const tb_child_end end = p->watcher.end;
    const int wstatus = p->wstatus;
    if (end == TB_CHILD_TIMED_OUT)
        snprintf(reason, cap,
                 "timed out: the trial process ran past its %g s wall-clock limit and "
                 "was killed", p->limit);
    else if (end == TB_CHILD_HUNG && !ready)
        snprintf(reason, cap,
                 "hung in set-up: the trial process did not finish its set-up (reading the "
                 "data, building the model) in %g s and was killed", p->setup);
    else if (end == TB_CHILD_HUNG)
        snprintf(reason, cap,
                 "hung: the trial process completed no step for %g s (the last completed "
                 "step was %lld, after %.0f s) and was killed", p->hang, last_step, ran);
    else if (p->ranks > 1 && !WIFSIGNALED(wstatus))
        snprintf(reason, cap,
                 "crashed: a rank of the trial's %d (mpirun -np %d) died or failed, and "
                 "mpirun ended the others with status %d, without an outcome (the last "
                 "completed step was %lld; mpirun's message is on the benchmark's stderr)",
                 p->ranks, p->ranks, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                 last_step);
    else if (WIFSIGNALED(wstatus)) {
        char how[128];
        tb_child_describe(wstatus, how, sizeof how);
        snprintf(reason, cap, "crashed: %s", how);
    } else
        snprintf(reason, cap,
                 "crashed: the trial process exited with status %d without an outcome",
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

tb_status tb_trial_proc_finish(const char *store_path, tb_trial_proc *p, tb_error *err)
{
    const int64_t trial_id = p->id;
    const int wstatus = p->wstatus;
    const double ran = tb_monotonic_s() - p->t0;
    const long long last_step = (long long)atomic_load(&p->hb->step);
    const bool ready = atomic_load(&p->hb->ready) != 0;
    tb_error child_err = {0};
    bool child_failed;
    if (p->shared) { /* a data-parallel trial: its rank 0's error, in the file they share */
        child_failed = atomic_load(&p->shared->failed) && p->shared->err.status != TB_OK;
        if (child_failed) child_err = p->shared->err;
        tb_rank_trial_release(p->shared, p->shared_path);
        p->shared = NULL;
    } else {
        munmap(p->hb, sizeof *p->hb);
        child_failed = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == CHILD_NO_OUTCOME &&
                       read(p->fd, &child_err, sizeof child_err) == (ssize_t)sizeof child_err &&
                       child_err.status != TB_OK;
        close(p->fd);
    }
    p->hb = NULL;
    p->fd = -1;
    const tb_trial_record *rec0 = &p->rec;
    if (child_failed) {
        /* the trial could not run or record its outcome (the results store failed: a full
         * disk, an I/O error; its data or device is missing): an error of the benchmark, not
         * the submission's failure. The trial is left unfinished, so that running the
         * benchmark again, once mended, reruns it. */
        child_err.message[sizeof child_err.message - 1] = 0;
        return tb_fail(err, child_err.status,
                       "trial %lld (%s on %s, study %d, trial %d) %s, left unfinished to rerun: "
                       "%s", (long long)trial_id, rec0->submission, rec0->workload, rec0->study,
                       rec0->trial,
                       child_err.status == TB_ERR_IO ? "could not record its outcome"
                                                     : "could not start",
                       child_err.message);
    }
    /* did the child record an outcome? */
    tb_store *store;
    tb_trial_record rec;
    tb_status st = tb_store_open(store_path, &store, err);
    if (st != TB_OK) return st;
    st = tb_store_trial_get(store, trial_id, &rec, err);
    if (st == TB_OK && (rec.status == TB_TRIAL_RUNNING || rec.status == TB_TRIAL_PLANNED)) {
        char reason[512];
        no_outcome_reason(p, ready, last_step, ran, reason, sizeof reason);
        tb_eval_record *ev = NULL;
        int ne = 0;
        tb_store_evals(store, trial_id, &ev, &ne, NULL);
        double sub_time = ne > 0 ? ev[ne - 1].submission_time : 0;
        int64_t steps = ne > 0 ? ev[ne - 1].step : 0;
        free(ev);
        st = tb_store_trial_finish(store, trial_id, TB_TRIAL_FAILED, reason, false, INFINITY,
                                   sub_time, steps, err);
    }
    tb_store_close(store);
    return st;
}

tb_status tb_trial_run_isolated(const char *store_path, int64_t trial_id,
                                const tb_submission_ref *sub, const tb_trial_options *opts,
                                tb_error *err)
{
    tb_trial_proc p;
    tb_status st = tb_trial_spawn(store_path, trial_id, sub, opts, &p, err);
    if (st != TB_OK) return st;
    while (!tb_trial_proc_poll(&p)) tb_child_nap();
    return tb_trial_proc_finish(store_path, &p, err);
}

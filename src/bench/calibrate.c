/* calibrate.c: the calibration windows of a benchmark run: the reference step of a workload
 * timed for a few seconds in a child process, between the trials (docs/TIME_TO_RESULT.md
 * "Time bases"), and the rule for when one is due. */
#include "trainbench/benchmark.h"
#include "bench/child.h"

#include "trainbench/machine.h"
#include "trainbench/throughput.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The exit status of a window's process that failed (its error is in the pipe). */
#define CHILD_FAILED 2

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* In the child: the window timed, then recorded through the child's own store connection. */
static tb_status run_window(const char *store_path, const char *benchmark, const char *workload,
                            const tb_trial_options *opts, double seconds, int trials_before,
                            tb_error *err)
{
    tb_throughput_config c = tb_throughput_config_default();
    c.workload = workload;
    c.algorithm = TB_BENCH_REFERENCE_ALGORITHM;
    c.backend.device = opts->device;
    c.backend.threads = opts->threads;
    c.data.data_dir = opts->data_dir;
    c.data.cache_dir = opts->cache_dir;
    c.warmup_steps = 3;
    c.windows = 1;
    c.window_steps = 3;
    c.window_s = seconds;
    c.seed = 1;
    tb_calibration_record w = {.started_unix = unix_now(), .trials_before = trials_before};
    tb_throughput_result res;
    tb_status st = tb_throughput_run(&c, &res, err);
    if (st != TB_OK) return tb_error_prefix(err, "calibration window of %s", workload);
    snprintf(w.benchmark, sizeof w.benchmark, "%s", benchmark);
    snprintf(w.workload, sizeof w.workload, "%s", workload);
    snprintf(w.algorithm, sizeof w.algorithm, "%s", c.algorithm);
    snprintf(w.device, sizeof w.device, "%s", tb_device_name(opts->device));
    snprintf(w.code_version, sizeof w.code_version, "%s", tb_code_version());
    w.threads = opts->threads;
    w.batch_size = res.batch_size;
    w.steps = res.steps;
    w.seconds = res.timed_s;
    w.cpu_seconds = 1e-3 * res.cpu_ms_per_step * (double)res.steps;
    tb_store *store;
    st = tb_store_open(store_path, &store, err);
    if (st != TB_OK) return st;
    st = tb_store_add_calibration(store, &w, err);
    tb_store_close(store);
    return st;
}

tb_status tb_bench_calibrate(const char *store_path, const char *benchmark,
                             const char *workload, const tb_trial_options *opts, double seconds,
                             int trials_before, tb_error *err)
{
    if (!store_path || !benchmark || !workload || !opts)
        return tb_fail(err, TB_ERR_INVALID, "bench_calibrate: %s is NULL",
                       !store_path ? "the store's path" : !benchmark ? "the benchmark"
                       : !workload ? "the workload" : "opts");
    if (!(seconds > 0) || seconds > 3600)
        return tb_fail(err, TB_ERR_INVALID, "a calibration window must last more than 0 and at "
                       "most 3600 s, got %g", seconds);
    int fd;
    pid_t pid = tb_child_fork(&fd);
    if (pid < 0)
        return tb_fail(err, TB_ERR_IO, "cannot start a calibration process: %s", strerror(errno));
    if (pid == 0) {
        tb_error cerr = {0};
        tb_status cst = run_window(store_path, benchmark, workload, opts, seconds,
                                   trials_before, &cerr);
        if (cst != TB_OK) {
            cerr.status = cst;
            ssize_t wrote = write(fd, &cerr, sizeof cerr); /* one small write: atomic */
            (void)wrote;
        }
        _exit(cst == TB_OK ? 0 : CHILD_FAILED);
    }
    /* setup (data, model) and the window itself, with room for a loaded machine */
    const double limit = 10.0 * seconds + 300.0;
    int wstatus;
    bool timed_out = tb_child_wait(pid, limit, NULL, &wstatus) == TB_CHILD_TIMED_OUT;
    tb_error child_err = {0};
    bool reported = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == CHILD_FAILED &&
                    read(fd, &child_err, sizeof child_err) == (ssize_t)sizeof child_err &&
                    child_err.status != TB_OK;
    close(fd);
    if (reported) {
        child_err.message[sizeof child_err.message - 1] = 0;
        return tb_fail(err, child_err.status, "%s", child_err.message);
    }
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return TB_OK;
    char how[128];
    if (timed_out) snprintf(how, sizeof how, "ran past its %g s limit and was killed", limit);
    else tb_child_describe(wstatus, how, sizeof how);
    return tb_fail(err, TB_ERR_CRASHED, "the calibration window of %s (%s, %g s) failed: its "
                   "process %s", workload, TB_BENCH_REFERENCE_ALGORITHM, seconds, how);
}

/* The state's slot of workload, added if new; -1 when the state is full. */
static int slot_of(tb_bench_calibration_state *s, const char *workload)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->workloads[i], workload) == 0) return i;
    const int cap = (int)(sizeof s->workloads / sizeof s->workloads[0]);
    if (s->n == cap) return -1;
    snprintf(s->workloads[s->n], sizeof s->workloads[0], "%s", workload);
    s->last[s->n] = 0;
    s->taken[s->n] = false;
    return s->n++;
}

/* Whether the store holds a window of workload for benchmark. */
static tb_status stored_window(const char *store_path, const char *benchmark,
                               const char *workload, bool *found, tb_error *err)
{
    *found = false;
    tb_store *store;
    tb_status st = tb_store_open(store_path, &store, err);
    if (st != TB_OK) return st;
    tb_calibration_record *w = NULL;
    int n = 0;
    st = tb_store_calibrations(store, benchmark, &w, &n, err);
    tb_store_close(store);
    for (int i = 0; st == TB_OK && i < n; i++) *found = *found || strcmp(w[i].workload, workload) == 0;
    free(w);
    return st;
}

tb_status tb_bench_calibrate_due(tb_bench_calibration_state *state, const char *store_path,
                                 const tb_bench_spec *spec, const tb_trial_record *t,
                                 bool will_run, tb_error *err)
{
    if (!state || !store_path || !spec || !t)
        return tb_fail(err, TB_ERR_INVALID, "bench_calibrate_due: an argument is NULL");
    if (spec->calibration_s < 0) return TB_OK;
    const int i = slot_of(state, t->workload);
    if (i < 0) return TB_OK; /* more workloads than the state holds: no more windows */
    const int every = spec->calibrate_every > 0 ? spec->calibrate_every : TB_BENCH_CALIBRATE_EVERY;
    bool due = will_run && (!state->taken[i] || state->ran - state->last[i] >= every);
    tb_status st = TB_OK;
    if (!will_run && !state->taken[i]) { /* reused: a window only if the store has none */
        bool found;
        st = stored_window(store_path, spec->name, t->workload, &found, err);
        if (st != TB_OK) return st;
        state->taken[i] = found;
        due = !found;
    }
    if (due) {
        const double seconds = spec->calibration_s > 0 ? spec->calibration_s
                                                       : TB_BENCH_CALIBRATION_S;
        st = tb_bench_calibrate(store_path, spec->name, t->workload, &spec->trial, seconds,
                                state->ran, err);
        /* the machine's failure (its data, its device, the store), not the submission's: the
         * benchmark stops before the trial, which a rerun runs once it is mended */
        if (st != TB_OK)
            tb_error_prefix(err, "trial %lld (%s on %s, study %d, trial %d) left unfinished to "
                            "rerun, its workload's calibration window could not run",
                            (long long)t->id, t->submission, t->workload, t->study, t->trial);
        state->taken[i] = true;
        state->last[i] = state->ran;
    }
    state->ran += will_run;
    return st;
}

bool tb_bench_calibrate_may_run(const tb_bench_calibration_state *state,
                                const tb_bench_spec *spec, const tb_trial_record *t,
                                bool will_run)
{
    if (spec->calibration_s < 0) return false;
    const int every = spec->calibrate_every > 0 ? spec->calibrate_every : TB_BENCH_CALIBRATE_EVERY;
    for (int i = 0; i < state->n; i++)
        if (strcmp(state->workloads[i], t->workload) == 0)
            return !state->taken[i] || (will_run && state->ran - state->last[i] >= every);
    return state->n < (int)(sizeof state->workloads / sizeof state->workloads[0]);
}

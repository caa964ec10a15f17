/* testutil.h: a minimal test harness (checks, a closing "N passed, N failed" line) and a
 * finite-difference gradient checker for ops. Tests are plain executables run by ctest. */
#ifndef TRAINBENCH_TESTUTIL_H
#define TRAINBENCH_TESTUTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "trainbench/nn.h"
#include "trainbench/dist.h"
#include "trainbench/trainbench.h"

typedef struct tb_test_state {
    int passed, failed;
} tb_test_state;

/* The one test-state object of the executable (tests are not the library). */
tb_test_state *tb_test_state_get(void);

bool tb_test_check(bool ok, const char *expr, const char *file, int line);
#define CHECK(cond) tb_test_check((cond), #cond, __FILE__, __LINE__)
#define CHECK_NEAR(a, b, tol)                                                                   \
    tb_test_check_near((double)(a), (double)(b), (double)(tol), #a, #b, __FILE__, __LINE__)
bool tb_test_check_near(double a, double b, double tol, const char *ea, const char *eb,
                        const char *file, int line);
/* Checks that a call returns TB_OK; prints the error message otherwise. */
#define CHECK_OK(call, errp) tb_test_check_ok((call), (errp), #call, __FILE__, __LINE__)
bool tb_test_check_ok(tb_status st, const tb_error *err, const char *expr, const char *file,
                      int line);
/* Checks a status and that the message contains `needle`. */
#define CHECK_FAILS(call, want, errp, needle)                                                   \
    tb_test_check_fails((call), (want), (errp), (needle), #call, __FILE__, __LINE__)
bool tb_test_check_fails(tb_status st, tb_status want, const tb_error *err, const char *needle,
                         const char *expr, const char *file, int line);

/* Prints "<name>: N passed, N failed" and returns the process exit code. */
int tb_test_finish(const char *name);

/* A CPU backend with 2 threads; aborts the test on failure. */
tb_backend *tb_test_backend(void);

/* A persistent variable (value and gradient allocated, gradient zeroed) filled with uniform
 * values in [lo, hi) from rng. Free with tb_test_var_free. */
tb_var *tb_test_var(tb_backend *be, int ndim, const int64_t *shape, tb_rng *rng, float lo,
                    float hi, bool requires_grad);
/* An int32 variable from host values. */
tb_var *tb_test_ivar(tb_backend *be, int ndim, const int64_t *shape, const int32_t *values);
void tb_test_var_free(tb_var *v);

/* Reduces any float output to a scalar loss that depends on every element with a different
 * weight: mse(out, fixed pseudo-random target). */
tb_var *tb_test_reduce(tb_tape *tape, tb_var *out);

/* Builds the loss from the inputs on a fresh tape. ctx is passed through. */
typedef tb_var *(*tb_test_loss_fn)(tb_tape *tape, tb_var *const *inputs, void *ctx);

/* Compares the tape's gradients of every input that requires one with central finite
 * differences (step h) on up to max_checks elements per input. Passes when
 * |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|) everywhere. Records one
 * check per input and returns whether all passed. */
bool tb_gradcheck(const char *name, tb_backend *be, tb_test_loss_fn fn, void *ctx,
                  tb_var *const *inputs, int n_inputs, double h, double atol, double rtol,
                  int max_checks);

/* Host copy of a variable's value (malloc'd; the caller frees). */
float *tb_test_host_copy(const tb_var *v);
/* A new tape on be; aborts the test if it cannot be created. */
tb_tape *tb_test_tape(tb_backend *be);
/* Parameters "w" (a weight of 3 values) and "b" (a bias of 2) on be, with values w and b and
 * gradients gw and gb (NULL: left zero). Free with tb_params_destroy. */
tb_params *tb_test_params_wb(tb_backend *be, const float *w, const float *b, const float *gw,
                             const float *gb);

/* ctest's exit code for a skipped test (SKIP_RETURN_CODE). */
#define TB_TEST_SKIP 77

/* A CUDA backend on device 0, or NULL with *exit_code set: TB_TEST_SKIP after printing
 * "NAME: skipped: no CUDA device (<cause>)" when there is no usable GPU (and the error names
 * that cause), 1 after printing any other failure. */
tb_backend *tb_test_cuda_backend(const char *name, int *exit_code);

/* Runs the trainbench command ($TB_BINARY, or ./trainbench) with args in shell syntax,
 * capturing stdout and stderr together into out (NUL-terminated); returns the exit code (-1 if
 * it did not exit normally). */
/* A benchmark "t" of the given submissions on fmnist_mlp: 1 study x 1 trial, quick targets,
 * budget_s of training with an eval every budget_s / 2, evals on `examples` examples of each
 * split, 2 threads, the repository's search spaces, no calibration windows. */
tb_bench_spec tb_test_bench_spec(const char *const *subs, int n, double budget_s,
                                 int64_t examples);
/* Runs benchmark s into the store db in a forked child (exit status 0 on TB_OK, else 1);
 * returns the child's pid. */
int tb_test_bench_in_child(const char *db, const tb_bench_spec *s);
/* The trials of benchmark bench in the store db with status want (-1 when the store cannot be
 * opened yet), and in *with_evals (or NULL) how many of them have an eval. Opens the store
 * read-only: a poll never creates the store the benchmark is about to create. */
int tb_test_count_trials(const char *db, const char *bench, tb_trial_status want,
                         int *with_evals);
int tb_test_run_cli(const char *args, char *out, size_t cap);
/* The trials of benchmark bench in the store db, opened read-only (a check fails when it
 * cannot be read); *t is the caller's to free. */
void tb_test_read_trials(const char *db, const char *bench, tb_trial_record **t, int *n);
/* At most cap of trial id's evals in the store db, those at steps that are multiples of every
 * (the budget's last one, at whatever step the time ran out, left out); returns how many. */
int tb_test_evals_at_steps(const char *db, int64_t id, int every, tb_eval_record *out, int cap);
/* SQL that turns a store of schema 3 into one of schema 2 (before the conditions): drops the
 * columns schema 3 added to the trials and evals tables (the version row is the caller's). */
#define TB_TEST_DROP_SCHEMA_3_COLUMNS                                                           \
    "ALTER TABLE trials DROP COLUMN wall_time; ALTER TABLE trials DROP COLUMN cpu_time;"        \
    "ALTER TABLE trials DROP COLUMN load_avg; ALTER TABLE trials DROP COLUMN steal;"            \
    "ALTER TABLE trials DROP COLUMN nivcsw; ALTER TABLE trials DROP COLUMN contended;"          \
    "ALTER TABLE trials DROP COLUMN contention; ALTER TABLE trials DROP COLUMN run_order;"      \
    "ALTER TABLE evals DROP COLUMN cpu_time; ALTER TABLE evals DROP COLUMN load_avg;"           \
    "ALTER TABLE evals DROP COLUMN steal; ALTER TABLE evals DROP COLUMN nivcsw;"
/* tb_test_run_cli under `TB_MPIEXEC --oversubscribe --allow-run-as-root -np np` (the mpiexec
 * CMake found; every rank's output together). */
int tb_test_run_mpi(int np, const char *args, char *out, size_t cap);
/* The first column of the first row of sql on the SQLite file db (-1 when none). */
int64_t tb_test_query_int(const char *db, const char *sql);
/* The number after "key": in text (NaN if absent). */
double tb_test_json_number(const char *text, const char *key);
/* The main of a test run plainly and under mpirun: a tb_dist context, then one(d) for a world
 * of 1 or ranks(d) for more ranks, then finalize; returns tb_test_finish(name). */
int tb_test_dist_main(const char *name, void (*one)(tb_dist *), void (*ranks)(tb_dist *));
/* How many times needle occurs in hay. */
int tb_test_count(const char *hay, const char *needle);
/* Removes a results store's file and its -wal, -shm and -lock files (those there). */
void tb_test_remove_store(const char *path);
/* Sleeps s seconds. */
void tb_test_sleep_s(double s);
/* How long a test waits for a benchmark in a child to reach a state before it gives up: long
 * enough for a machine loaded several times over (a trial's set-up alone took 20 s at a load
 * average of 20), and cut short when the child has exited (tb_test_child_exited). */
#define TB_TEST_WAIT_S 180.0
/* Whether child pid has exited (reaped: its wait status in *wst, and *exited set, so the
 * caller does not wait for it again); false while it runs. */
bool tb_test_child_exited(int pid, int *wst, bool *exited);
/* The first child of process pid (0 when it has none yet), from /proc. */
int tb_test_child_of(int pid);
/* A synthetic trial (no training) of submission on workload in benchmark bench, planned with
 * hp (NULL: without a point) and, unless want is TB_TRIAL_PLANNED, finished with that status
 * and one eval of validation error err_rate: target 0.2 in error_rate, budget 10 s, reached
 * at ttt seconds when ttt >= 0. Returns its id (checks that the store took it). */
int64_t tb_test_add_trial(tb_store *store, const char *bench, const char *submission,
                          const char *workload, int study, int trial, const tb_hparams *hp,
                          tb_trial_status want, double err_rate, double ttt);
/* Whether out contains needle; prints out when not. */
bool tb_test_output_has(const char *out, const char *needle);
/* Writes text to the file at path (a failed check when it cannot be created). */
void tb_test_write_text(const char *path, const char *text);

#endif

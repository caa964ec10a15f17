/* store.h: the results store: one SQLite file holding benchmark plans, trials and every eval.
 *
 * Plans are written before anything runs; each eval is written in its own transaction as soon
 * as it is measured; a trial's outcome when it ends. The file is in WAL mode with a busy
 * timeout, so a trial's child process writes through its own connection while the parent
 * reads, and a process killed at any moment (kill -9) leaves every committed row intact. A
 * trial found 'running' by a later run was interrupted: it is rerun from its start (its evals
 * are dropped when it restarts; its attempt count says how often it ran). */
#ifndef TRAINBENCH_STORE_H
#define TRAINBENCH_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trainbench/optim.h"
#include "trainbench/rng.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_store tb_store;

typedef enum tb_trial_status {
    TB_TRIAL_PLANNED = 0,
    TB_TRIAL_RUNNING = 1, /* started; found so by a later run: interrupted */
    TB_TRIAL_DONE = 2,    /* ran to its end: reached the target, or missed it in the budget */
    TB_TRIAL_FAILED = 3,  /* crashed, hung, diverged or errored: the reason says which */
} tb_trial_status;

const char *tb_trial_status_name(tb_trial_status st);

typedef struct tb_trial_record {
    int64_t id; /* set by the store */
    char benchmark[64];
    char submission[128];       /* name results are grouped under */
    char submission_spec[512];  /* what was loaded: optimizer name or library path */
    char workload[64];
    char ruleset[32];           /* "external" or "self" */
    int study, trial;           /* 0-based */
    tb_hparams hparams;
    uint64_t seeds[TB_STREAM_COUNT];
    char metric[32];            /* validation metric the target refers to (lower is better) */
    double target;
    double budget_s;            /* max accumulated submission time */
    double eval_period_s;
    bool stop_at_target;
    /* outcome */
    tb_trial_status status;
    char reason[512];           /* failures: what happened ("killed by signal 11 ...") */
    int attempts;
    bool reached;
    double time_to_target;      /* submission seconds at the first eval at target; inf if not */
    double submission_time;     /* accumulated submission seconds at the end */
    int64_t steps;
    char code_version[64];
    char machine[512];          /* JSON: cpu, cores, threads, blas */
    /* (store schema 2) */
    /* The hyperparameters in effect, recorded when the trial starts: the point's values and
     * the defaults of everything else trainbench sees (a built-in's optimizer and its own
     * warmup_fraction and batch_size; the optimizers an external submission creates through
     * the API, whose own defaults it does not see); default_hparams: those that took their
     * defaults. Both empty for a trial not started (or started by an older trainbench). */
    tb_hparams resolved_hparams;
    tb_hparams default_hparams;
    /* (store schema 3) The conditions of the trial's last attempt, from the end of its set-up
     * to its end, recorded by the trial when it ends (unknown, NaN or -1, for a trial not
     * started, killed, or recorded by an older trainbench; see trainbench/machine.h). */
    double wall_time;           /* wall seconds */
    double cpu_time;            /* its process's CPU seconds (user + system, all threads) */
    double load_avg;            /* the largest 1-minute load average sampled */
    double steal;               /* share of the machine's CPU time stolen, [0, 1] */
    int64_t nivcsw;             /* its process's involuntary context switches */
    int contended;              /* 1 contended (tb_machine_contended), 0 not, -1 unknown */
    char contention[160];       /* why it was contended ("cpu share 0.31 < 0.5"), or "" */
    int64_t run_order;          /* 1, 2, ... within the benchmark, in the order attempts
                                   started (a rerun gets a later one); 0: never started */
} tb_trial_record;

typedef struct tb_eval_record {
    int index;                  /* 0, 1, ... within the trial */
    int64_t step;
    double submission_time;     /* accumulated, timed */
    double eval_time;           /* accumulated, untimed */
    double total_duration;      /* wall seconds since the trial started */
    double train_loss, train_accuracy, train_error;
    double validation_loss, validation_accuracy, validation_error;
    int64_t validation_examples;
    double test_loss, test_accuracy, test_error;
    int64_t test_examples;
    /* (store schema 3) since the end of the trial's set-up: its process's CPU seconds, the
     * share of the machine's CPU time stolen, its involuntary context switches; and the
     * 1-minute load average at the eval (NaN or -1: unknown, or an older store) */
    double cpu_time, load_avg, steal;
    int64_t nivcsw;
} tb_eval_record;

/* Opens (creating if needed) the store at path: schema, WAL mode, busy timeout. Fails with
 * TB_ERR_IO naming the path (read-only included), TB_ERR_FORMAT if the file is something else
 * (another program's database is left untouched), TB_ERR_INVALID for a path that is not a
 * file's (empty, ":memory:"). */
tb_status tb_store_open(const char *path, tb_store **out, tb_error *err);
/* Opens an existing store for reading only (score, export): creates nothing and writes
 * nothing, so a read-only file or directory is fine. TB_ERR_INVALID when path does not
 * exist, TB_ERR_FORMAT when it is not a trainbench store (an empty database included). */
tb_status tb_store_open_readonly(const char *path, tb_store **out, tb_error *err);
void tb_store_close(tb_store *store);

/* Transactions around several calls (BEGIN IMMEDIATE / COMMIT / ROLLBACK). */
tb_status tb_store_begin(tb_store *store, tb_error *err);
tb_status tb_store_commit(tb_store *store, tb_error *err);
void tb_store_rollback(tb_store *store);

/* Records benchmark `name` with its spec (JSON text), or checks that an existing one has the
 * same spec (TB_ERR_INVALID naming the benchmark if it differs). */
tb_status tb_store_put_benchmark(tb_store *store, const char *name, const char *spec_json,
                                 tb_error *err);
/* Plans a trial (status planned) unless one with the same benchmark, submission, workload,
 * ruleset, study and trial exists; either way t->id is set. */
tb_status tb_store_plan_trial(tb_store *store, tb_trial_record *t, tb_error *err);
/* All trials of a benchmark (NULL: every benchmark), in plan order. *out is malloc'ed; the
 * caller frees it. */
tb_status tb_store_trials(tb_store *store, const char *benchmark, tb_trial_record **out,
                          int *n, tb_error *err);
/* The names of the benchmarks in the store; free with free() (array and strings). */
tb_status tb_store_benchmarks(tb_store *store, char ***names, int *n, tb_error *err);
/* The benchmarks' names joined by ", " into buf (truncated to cap; "none" when there are none
 * or they cannot be read), for messages that name what a store holds. */
void tb_store_benchmark_list(tb_store *store, char *buf, size_t cap);

/* Marks a trial running (attempts + 1), drops evals of an earlier interrupted attempt, and
 * records the code version and machine facts. One transaction. */
tb_status tb_store_trial_start(tb_store *store, int64_t id, const char *code_version,
                               const char *machine_json, tb_error *err);
tb_status tb_store_add_eval(tb_store *store, int64_t trial_id, const tb_eval_record *e,
                            tb_error *err);
/* Records the hyperparameters a started trial runs with: every value in effect, and which
 * of them took defaults (see tb_trial_record). */
tb_status tb_store_trial_hparams(tb_store *store, int64_t id, const tb_hparams *resolved,
                                 const tb_hparams *defaults, tb_error *err);
/* Records the conditions a started trial ran in (t's wall_time to contention). */
tb_status tb_store_trial_conditions(tb_store *store, int64_t id, const tb_trial_record *t,
                                    tb_error *err);
/* Records the outcome (status done or failed) of a trial; reason may be NULL (none). */
tb_status tb_store_trial_finish(tb_store *store, int64_t id, tb_trial_status status,
                                const char *reason, bool reached, double time_to_target,
                                double submission_time, int64_t steps, tb_error *err);
/* Whether a failed trial's recorded reason is the machine's failure, not the submission's:
 * "missing: ..." or "io: ..." (its data or device missing, an I/O error: a full disk), or
 * "format: ..." (its data corrupt) when it failed before training (no steps, no evals);
 * never an error of a submission's callback (a message opening with update_params,
 * init_optimizer_state, prepare_for_eval, get_batch_size or data selection), a crash, a
 * divergence or a time-out. */
bool tb_trial_reason_is_machine(const char *reason, int64_t steps, bool has_evals);
/* Plans again (status planned, its outcome and evals dropped, its attempts kept) every trial
 * of benchmark that a store written before the environment-failure classification recorded
 * as failed by the machine (tb_trial_reason_is_machine); *n (may be NULL): how many. */
tb_status tb_store_replan_machine_failures(tb_store *store, const char *benchmark, int *n,
                                           tb_error *err);
/* Sets the hyperparameters of a trial that was planned without them (a sampler that chooses
 * a trial's point when its turn comes, after the trials before it: bench's gp sampler). */
tb_status tb_store_trial_set_hparams(tb_store *store, int64_t id, const tb_hparams *hp,
                                     tb_error *err);
/* The pre-trained GP prior (JSON text) a benchmark planned for a submission on a workload, kept
 * so that a resumed run uses the same one: put refuses to replace one (TB_ERR_INVALID); get
 * sets *json to NULL when there is none, else to malloc'ed text the caller frees. */
tb_status tb_store_put_prior(tb_store *store, const char *benchmark, const char *submission,
                             const char *workload, const char *json, tb_error *err);
tb_status tb_store_get_prior(tb_store *store, const char *benchmark, const char *submission,
                             const char *workload, char **json, tb_error *err);
/* Reads one trial by id. */
tb_status tb_store_trial_get(tb_store *store, int64_t id, tb_trial_record *out, tb_error *err);
/* The evals of a trial in order; *out malloc'ed, caller frees. */
tb_status tb_store_evals(tb_store *store, int64_t trial_id, tb_eval_record **out, int *n,
                         tb_error *err);

/* What merging a benchmark of one store into another did (tb_store_merge_benchmark). */
typedef struct tb_store_merge_counts {
    int copied;  /* finished trials the target lacked (or had unfinished): copied, evals too */
    int already; /* finished trials the target holds already as the same run */
    int planned; /* unfinished trials the target lacked: copied as planned */
    int kept;    /* unfinished trials the target has (planned, or finished there) */
} tb_store_merge_counts;

/* Merges benchmark `name` of src into dst, in one transaction of dst: its spec (or checks that
 * dst's is the same: TB_ERR_INVALID naming the difference), every finished trial with its
 * evals (replacing an unfinished one of the same key in dst), the unfinished trials dst lacks
 * as planned, and the GP priors dst lacks. TB_ERR_INVALID, with nothing written, when a trial
 * is finished in both as different runs (the stores overlap) or when every finished trial of
 * src is in dst already (merged before); a trial is the same run when its attempts, start,
 * end, code version and machine facts agree. */
tb_status tb_store_merge_benchmark(tb_store *dst, tb_store *src, const char *name,
                                   tb_store_merge_counts *out, tb_error *err);

/* ---- reads of the side tables (hardware runs, study runs) for reports and exports ----------
 * A store without the table (never given a hardware run or a study, or written by an older
 * build) has none: n = 0, not an error. Nothing is created or written. */
typedef struct tb_store_hw_row {
    int64_t run_id;
    char created[32];           /* UTC, "YYYY-MM-DD HH:MM:SS" */
    char machine[512];          /* the run's machine facts (JSON) */
    char code_version[64];
    int world_size;
    char workload[64], algorithm[32], device[16];
    int threads, batch_size;
    bool failed;
    char reason[512];
    double examples_per_s, sem_pct, ratio; /* NaN where the store has none */
} tb_store_hw_row;

typedef struct tb_store_hw_score_row {
    int64_t run_id;
    char created[32];
    char machine[512];
    char config[64];            /* "cpu, 2 threads", "cuda" */
    int workloads, failed;
    double score, low, high, level; /* NaN where the store has none */
} tb_store_hw_score_row;

/* Every hardware result (*rows, by run then row) and score (*scores, by run) in the store;
 * both malloc'ed (NULL when none), the caller frees them. */
tb_status tb_store_hw_history(tb_store *store, tb_store_hw_row **rows, int *n_rows,
                              tb_store_hw_score_row **scores, int *n_scores, tb_error *err);

typedef struct tb_store_study_row {
    char study[64];
    char key[2048];             /* the run's whole configuration */
    char created[32];
    bool diverged, reached;
    char reason[512];
    int64_t steps;
    double train_time_s, validation_loss, validation_error, validation_metric, test_metric,
        time_to_target_s;       /* NaN where the store has none */
} tb_store_study_row;

/* Every study run in the store, by study then time recorded; *out malloc'ed (NULL when none),
 * the caller frees it. */
tb_status tb_store_study_history(tb_store *store, tb_store_study_row **out, int *n,
                                 tb_error *err);

/* ---- calibration windows of a benchmark (the reference step, docs/TIME_TO_RESULT.md) -------
 * A window times the reference step of one workload (a fixed algorithm at the workload's
 * batch size) for a few seconds, between the trials of a benchmark run; the windows price a
 * trial's steps in reference time. Their table is kept beside the schema (created when the
 * first window is recorded); a store without it has no windows: n = 0, not an error. */
typedef struct tb_calibration_record {
    char benchmark[64];
    char workload[64];
    char algorithm[32];         /* the reference step's algorithm */
    char device[16];
    int threads, batch_size;
    char started_at[32];        /* UTC, "YYYY-MM-DD HH:MM:SS" (set by the store) */
    double started_unix;        /* seconds since 1970, when the window opened */
    int trials_before;          /* trials this run had run before the window */
    int64_t steps;              /* timed steps */
    double seconds;             /* their wall seconds */
    double cpu_seconds;         /* the process's CPU seconds over them (NaN: unknown) */
    char code_version[64];
} tb_calibration_record;

/* Records one window (its table created if needed). */
tb_status tb_store_add_calibration(tb_store *store, const tb_calibration_record *window,
                                   tb_error *err);
/* The windows of benchmark (NULL: every benchmark's) in the order recorded; *out malloc'ed
 * (NULL when none), the caller frees it. Nothing is created or written. */
tb_status tb_store_calibrations(tb_store *store, const char *benchmark,
                                tb_calibration_record **out, int *n, tb_error *err);
/* The reference step time of workload: the median over windows[0..n) of that workload of
 * seconds / steps (a window another process slowed moves it little); NaN when it has none. */
double tb_calibration_step_s(const tb_calibration_record *windows, int n, const char *workload);
/* The reference step time of workload in benchmark: the median of seconds / steps over every
 * window of windows[0..n) (a store's, of all its benchmarks) of the same reference step as
 * the benchmark's first window of workload (the same workload, algorithm, device, threads and
 * batch size), so that benchmarks of one store are priced alike; NaN when the benchmark has no
 * window of it. */
double tb_calibration_reference_step_s(const tb_calibration_record *windows, int n,
                                       const char *benchmark, const char *workload);
/* The steps of trial t at its target: those of its first eval at its recorded time to target
 * (evals: the trial's, in order); -1 when it did not reach it. */
int64_t tb_trial_steps_to_target(const tb_trial_record *t, const tb_eval_record *evals,
                                 int n_evals);

typedef enum tb_export_format {
    TB_EXPORT_CSV = 0,   /* one row per eval: trial keys + AlgoPerf's eval_measurements columns
                            (a trial without evals: one row, its eval columns empty) */
    TB_EXPORT_JSONL = 1, /* one JSON object per trial, with its evals */
    TB_EXPORT_ALGOPERF = 2, /* AlgoPerf's directory tree (tb_store_export_algoperf) */
} tb_export_format;

tb_status tb_export_format_parse(const char *name, tb_export_format *out, tb_error *err);
/* Writes the trials of benchmark (NULL: all) to f. A benchmark with no trials in the store
 * fails with TB_ERR_INVALID naming it and listing the store's benchmarks, writing nothing. */
tb_status tb_store_export(tb_store *store, const char *benchmark, tb_export_format format,
                          FILE *f, tb_error *err);

/* Writes every hardware run (CSV: a row per result, row = result, and per configuration's
 * score, row = score; JSON lines: one object per run with its results and scores) / every
 * study run (a row or object each) to f. A store without any is TB_ERR_INVALID saying which
 * command records them, writing nothing; TB_EXPORT_ALGOPERF is TB_ERR_INVALID (trials only). */
tb_status tb_store_export_hw(tb_store *store, tb_export_format format, FILE *f, tb_error *err);
tb_status tb_store_export_studies(tb_store *store, tb_export_format format, FILE *f,
                                  tb_error *err);

/* Writes benchmark's trials (NULL: the store's only benchmark; a store of several is refused,
 * naming them) in AlgoPerf's experiment layout, which its scoring loader reads unchanged:
 * dir/<submission>/study_<s>/<workload>_pytorch/trial_<t+1>/eval_measurements.csv (AlgoPerf's
 * columns; the header alone for a trial without evals) and hparams.json beside it. The tree is
 * written under dir.tmp-XXXXXX and renamed to dir: dir may be new or an empty directory; a
 * non-empty one is TB_ERR_INVALID unless replace (then it is replaced whole). On failure
 * nothing is left. */
tb_status tb_store_export_algoperf(tb_store *store, const char *benchmark, const char *dir,
                                   bool replace, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

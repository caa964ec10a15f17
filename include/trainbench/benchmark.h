/* benchmark.h: the time-to-result benchmark: per-workload benchmark settings, rulesets, trials
 * run in child processes, and the planner/executor that fills a results store and resumes it.
 *
 * Flow: a spec (submissions x workloads x ruleset x studies x trials) is planned into the
 * store (every trial with its hyperparameters and seeds, before anything runs), then each
 * trial not yet finished runs in a child process that writes its evals to the store; a trial
 * whose child crashes, hangs (killed at its wall-clock limit) or diverges is a failed trial
 * with the reason recorded, and the benchmark goes on. Running the same spec again reuses
 * every finished trial and reruns interrupted ones from their start. */
#ifndef TRAINBENCH_BENCHMARK_H
#define TRAINBENCH_BENCHMARK_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/dist.h"
#include "trainbench/machine.h"
#include "trainbench/run.h"
#include "trainbench/status.h"
#include "trainbench/store.h"
#include "trainbench/submission.h"
#include "trainbench/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- per-workload benchmark settings ------------------------------------------------------
 * Read from the workload (tb_workload_info: calibrated target, budget, eval period, step
 * hint), plus the looser target of the quick preset. */
typedef struct tb_bench_workload {
    const char *workload;
    const char *metric;        /* validation metric the target refers to */
    double target;             /* validation target */
    double max_runtime_s;      /* budget of accumulated submission time (external tuning) */
    double eval_period_s;      /* submission seconds between evals */
    int64_t step_hint;         /* steps a tuned baseline takes within the budget */
    double quick_target;       /* the looser target of the quick preset */
    const char *variant_of;    /* the base workload of a variant, or NULL */
    bool held_out;             /* a held-out variant, of AlgoPerf's kind (tb_workload_info) */
    bool lower_is_better;      /* direction of the metric */
} tb_bench_workload;

/* Which variants a benchmark of the default workloads adds to the base workloads. */
typedef enum tb_bench_variants {
    TB_BENCH_VARIANTS_NONE = 0, /* the base workloads only */
    TB_BENCH_VARIANTS_HELD_OUT, /* and their held-out variants (AlgoPerf's kind: 2 a base) */
    TB_BENCH_VARIANTS_ALL,      /* and every variant (the studies' dropout and targets too) */
} tb_bench_variants;

/* Whether a benchmark of the default workloads with `variants` runs workload w. */
bool tb_bench_workload_default(const tb_bench_workload *w, tb_bench_variants variants);

/* Fills *out with the settings of workload id; false if there is no such workload. */
bool tb_bench_workload_find(const char *id, tb_bench_workload *out);

/* A submission (a Python file or a library, tb_submission_load) as the update hook of one run
 * of the run core (`trainbench train -a FILE`): get_batch_size when the workload exists,
 * init_optimizer_state before the first step, data_selection and update_params every step,
 * prepare_for_eval before every evaluation, all with hyperparameters hp (copied) and the
 * workload's step hint, through the API table a benchmark trial hands them. A Python file
 * runs in this process's interpreter (pysub.h): a crash in it ends the process. Errors of the
 * submission's functions are prefixed with its spec and the function (and step). */
typedef struct tb_submission_hook tb_submission_hook;
tb_status tb_submission_hook_open(const tb_submission_ref *ref, const char *workload,
                                  const tb_hparams *hp, tb_submission_hook **out, tb_error *err);
/* The hook for tb_run_config.update (valid until close). */
tb_run_update tb_submission_hook_update(tb_submission_hook *h);
/* A run that failed with st: when get_batch_size raised (the run core saw no batch size),
 * err becomes the Python error, named, and the status TB_ERR_CRASHED; else st unchanged. */
tb_status tb_submission_hook_explain(const tb_submission_hook *h, tb_status st, tb_error *err);
void tb_submission_hook_close(tb_submission_hook *h);
int tb_bench_workload_count(void);
bool tb_bench_workload_at(int i, tb_bench_workload *out);

/* ---- rulesets ----------------------------------------------------------------------------- */
typedef enum tb_ruleset {
    TB_RULESET_EXTERNAL = 0, /* tuned from the submission's search space: studies x trials */
    TB_RULESET_SELF = 1,     /* no hyperparameters, 1.5x the budget */
} tb_ruleset;

const char *tb_ruleset_name(tb_ruleset r);
tb_status tb_ruleset_parse(const char *name, tb_ruleset *out, tb_error *err);
#define TB_SELF_TUNING_BUDGET_FACTOR 1.5

/* ---- one trial ------------------------------------------------------------------------------ */
/* Seconds without progress after which a trial is hung (tb_trial_options.hang_s): far more
 * than a step, a whole-split eval or a set-up takes even on a machine 20 times slower than
 * idle (docs/TIME_TO_RESULT.md). */
#define TB_TRIAL_HANG_DEFAULT_S 300.0
/* Seconds a trial's set-up may take before it is hung (tb_trial_options.setup_s): set-up
 * reads and prepares the data, which on a loaded machine or a cold cache takes far longer than
 * a step, and beats only when it is done. */
#define TB_TRIAL_SETUP_DEFAULT_S 1800.0

typedef struct tb_trial_options {
    tb_device device;
    int threads;                   /* CPU threads of the trial (0: all cores) */
    const char *data_dir;          /* NULL: the Debian package's directory */
    /* evaluation subsets: that many examples spread evenly over the split (see
     * tb_workload_evaluate) */
    int64_t eval_train_examples;   /* train-metric subset per eval (0: as many as validation) */
    int64_t eval_validation_examples; /* 0: the whole validation split */
    int64_t eval_test_examples;    /* 0: the whole test split; < 0: no test evals */
    double timeout_s;              /* absolute wall-clock limit of a trial's process; 0: none
                                      (a slow trial that makes progress runs on) */
    double hang_s;                 /* a trial whose process, once set up, completes no step
                                      (nor eval) for this long is hung and killed; 0:
                                      TB_TRIAL_HANG_DEFAULT_S */
    double setup_s;                /* the same for its set-up (reading the data, building the
                                      model), which beats only at its end; 0:
                                      TB_TRIAL_SETUP_DEFAULT_S (at least hang_s) */
    int64_t eval_every_steps;      /* > 0: evaluate after every this many steps instead of
                                      every eval period (the steps of the evals, and so the
                                      steps to target, do not move with the machine's speed:
                                      for the steps and reference time bases); 0: AlgoPerf's
                                      eval period of submission seconds */
    const char *cache_dir;         /* prepared-data cache (see tb_workload_prepare); NULL:
                                      each trial prepares the data in memory */
    /* how trials are run, recorded with each trial's machine facts ("jobs", "cpus"); not in a
       benchmark's spec: they change a trial's times, not what it trains */
    int jobs;                      /* trials run at once on this machine (0: 1); tb_bench_run
                                      runs that many side by side */
    const char *cpus;              /* CPUs to pin to ("0-3,6"); NULL: none. tb_bench_run gives
                                      each of its jobs an equal share; a trial's process is
                                      pinned to its share */
    int rank, ranks;               /* under MPI: the worker's rank and the job's ranks
                                      (recorded; 0: not under MPI) */
    int ranks_per_trial;           /* > 1: each trial data-parallel over that many ranks, the
                                      process `mpirun -np R trainbench bench-trial` (in the
                                      spec and the machine facts; 0: 1) */
} tb_trial_options;

/* Runs trial `trial_id` of the store at store_path in this process, with its own store
 * connection: marks it running, trains by AlgoPerf's timing rules, writes each eval, and
 * records its outcome (done, or failed with the reason: divergence, a submission error).
 * Returns TB_OK when an outcome was recorded; an error only when it could not be. */
tb_status tb_trial_execute(const char *store_path, int64_t trial_id,
                           const tb_submission_ref *sub, const tb_trial_options *opts,
                           tb_error *err);

/* Runs tb_trial_execute in a child process (fork; the child dies with its parent), waits for
 * it, watching its progress (SIGKILL when it completes no step for opts->hang_s, or when it
 * passes opts->timeout_s if one is set), and, when the child ended without
 * recording an outcome (a crash, a kill, a hang), records the trial failed with the reason.
 * When the child could not record an outcome because the store failed (tb_trial_execute's
 * error: a full disk, an I/O error), returns that error (its status, the trial named) and
 * leaves the trial unfinished, so that the benchmark stops and a rerun retries the trial.
 * The child's stdout goes to stderr (a submission's prints never reach the caller's stdout).
 * The calling process must not have started threads (OpenMP, BLAS) before. */
tb_status tb_trial_run_isolated(const char *store_path, int64_t trial_id,
                                const tb_submission_ref *sub, const tb_trial_options *opts,
                                tb_error *err);

/* The data-parallel trial's ranks (tb_trial_options.ranks_per_trial > 1): the process
 * `mpirun -np R trainbench bench-trial FILE` runs this with FILE, the memory it shares with the
 * benchmark that started it (the trial, its heartbeat): every rank trains its shard of each
 * batch, rank 0 alone writes the store. Returns the trial's status (TB_OK once its outcome is
 * recorded); rank 0's error also goes back to the benchmark through FILE. */
tb_status tb_bench_trial_ranks_main(const char *file, tb_error *err);
/* Whether ranks_per_trial (R) can run here: TB_ERR_INVALID for R < 0 or R above this
 * machine's cores, TB_ERR_UNSUPPORTED with a device other than the CPU, TB_ERR_MISSING when
 * mpirun is not on PATH; each message names --ranks-per-trial and the cause. */
tb_status tb_bench_ranks_per_trial_check(const tb_trial_options *o, tb_error *err);

/* ---- CPU lists (tb_trial_options.cpus): "0-3,8,10-11" ---- */
#define TB_BENCH_CPUS_MAX 1024
/* Parses text into cpus (room for TB_BENCH_CPUS_MAX; ascending, no repeats) and *n;
 * TB_ERR_INVALID naming the text and the cause (a bad number or range, a repeat, a CPU this
 * process may not run on). */
tb_status tb_bench_cpus_parse(const char *text, int *cpus, int *n, tb_error *err);

/* ---- samplers of the external-tuning ruleset ------------------------------------------------ */
typedef enum tb_bench_sampler {
    TB_SAMPLER_HALTON = 0, /* every trial's point planned up front: the scrambled Halton
                              sequence (AlgoPerf's quasi-random search) */
    TB_SAMPLER_GP = 1,     /* Bayesian optimisation: a study's first points from the same
                              Halton sequence, then each next point the one that maximises
                              expected improvement under a GP given the study's finished
                              trials, chosen when its turn comes */
} tb_bench_sampler;

const char *tb_bench_sampler_name(tb_bench_sampler s);
tb_status tb_bench_sampler_parse(const char *name, tb_bench_sampler *out, tb_error *err);

/* What the gp sampler minimises for a finished trial, one scale for every workload: a trial
 * that reached its target scores log(time to target / budget) (<= 0: faster is better), one
 * that missed it log(best validation metric / target) (> 0: closer is better), so that a trial
 * scores below 0 exactly when it reached the target. NaN for a failed trial or one without a
 * finite validation metric (evals: the trial's, in order). */
double tb_trial_objective(const tb_trial_record *t, const tb_eval_record *evals, int n_evals);
/* tb_trial_objective of each of trials[0..n) (its evals read from store) into y. A failed
 * trial (diverged, crashed, killed) or one without a finite objective is kept at the worst
 * finite objective of the n (docs/MATH.md section 4: failed trials kept, flagged) and flagged in
 * imputed (may be NULL); when none is finite, every y is NaN. */
tb_status tb_trial_objectives(tb_store *store, const tb_trial_record *trials, int n, double *y,
                              bool *imputed, tb_error *err);

/* ---- search-space utility of a store's trials (Ariafar et al., AISTATS 2022) ------------------
 * Fits a GP to the objectives (tb_trial_objective) of one submission's finished trials on one
 * workload, then scores candidate search spaces with tb_gp_utility: the expected best
 * objective of b points drawn uniformly from each space, and the probability that the best
 * reaches the target (objective below 0). The GP's coordinates are shared by the spaces: per
 * dimension its values (their logs where a space scales it by log) mapped linearly from the
 * smallest to the largest value the spaces and the trials reach. */
typedef struct tb_space_utility_spec {
    const char *workload;
    const char *submission; /* NULL: the only submission with finished trials on it */
    const char *benchmark;  /* NULL: the trials of every benchmark in the store */
    const tb_search_space *const *spaces; /* spaces of ranges, all with the same dimensions */
    const char *const *space_names;       /* their files, for messages (NULL: "search space N") */
    int n_spaces;
    const int *budgets;
    int n_budgets;
    int draws;              /* Monte Carlo draws per space (0: 1000) */
    uint64_t seed;
} tb_space_utility_spec;

typedef struct tb_space_utility_info {
    char submission[128]; /* whose trials */
    int trials;           /* finished trials the GP was fitted to */
    int imputed;          /* of them, failed ones kept at the worst objective */
    int skipped;          /* finished trials left out: a dimension missing from their point */
} tb_space_utility_info;

/* Fills out (n_spaces x n_budgets, space-major) and info (may be NULL). TB_ERR_INVALID for a
 * bad spec (spaces whose dimensions differ, a list of points, no dimension that varies,
 * several submissions on the workload and none named, a built-in's space with a name or
 * value its optimizer refuses, as bench checks it), TB_ERR_MISSING when there are fewer
 * than 2 finished trials to fit to. */
tb_status tb_space_utility(tb_store *store, const tb_space_utility_spec *spec, tb_utility *out,
                           tb_space_utility_info *info, tb_error *err);

/* The same scores from given points (n of them, each with every dimension of the spaces) and
 * their objectives y (lower is better; a value that is not finite: a failed point, kept at the
 * worst finite one) in place of a store's trials: spec's spaces, budgets, draws and seed (its
 * workload, submission and benchmark unused). The same errors; info (may be NULL) counts the
 * points as it counts trials. */
tb_status tb_space_utility_points(const tb_space_utility_spec *spec, const tb_hparams *points,
                                  const double *y, int n, tb_utility *out,
                                  tb_space_utility_info *info, tb_error *err);

/* ---- a benchmark ---------------------------------------------------------------------------- */
typedef struct tb_bench_spec {
    const char *name;                  /* the benchmark's name in the store */
    const char *const *submissions;    /* optimizer names or shared-library paths */
    int n_submissions;
    const char *const *workloads;      /* NULL: every base workload (and the variants that
                                          `variants` names) */
    int n_workloads;
    tb_ruleset ruleset;
    int studies, trials;               /* trials per study (external tuning); runs (self) */
    double budget_s;                   /* 0: the workload's max runtime (x1.5 self-tuning) */
    bool quick_targets;                /* use the workloads' quick targets */
    double eval_period_s;              /* 0: the workload's */
    bool run_to_budget;                /* do not stop at the target */
    uint64_t seed;                     /* seeds every trial's sources of variation (all 64
                                          bits; the store and exports hold seeds exactly) */
    const char *search_space_dir;      /* where built-ins' <name>.json search spaces live */
    const char *search_space_file;     /* the one submission's search space instead (NULL:
                                          the built-in's <dir>/<name>.json or the library's) */
    tb_trial_options trial;
    tb_bench_variants variants;        /* with workloads NULL: which variants too */
    /* how external tuning picks each trial's point (a gp study's trials run one after another
       and depend on the results before them) */
    tb_bench_sampler sampler;
    int gp_initial;                    /* gp: Halton points per study before the first BO
                                          point (0: 3, or 1 with a prior) */
    /* gp: HyperBO. Pre-train the GP's mean, kernel and noise on the finished trials of the same
       submission on other workloads in the store (each benchmark x workload a task), when the
       benchmark is planned; the prior is stored with the plan and a resumed run uses it */
    bool gp_prior;
    const char *const *prior_workloads; /* NULL: every other workload with finished trials */
    int n_prior_workloads;
    /* calibration windows (the reference step, tb_bench_calibrate): not part of the spec (they
       change no trial's outcome) */
    double calibration_s;              /* each window's least seconds; 0: TB_BENCH_CALIBRATION_S;
                                          < 0: no windows */
    int calibrate_every;               /* trials run between two windows of a workload; 0:
                                          TB_BENCH_CALIBRATE_EVERY */
    /* under MPI (tb_bench_run_ranks): a worker holding a trial that sends nothing for this
       long is lost and its trial re-queued (once); 0: 120 s. Not part of the spec */
    double worker_timeout_s;
    /* a share of the benchmark (bench --shard I/N), for independent runs (a job array): with
       shards > 1 the run plans the whole benchmark and runs only share `shard` (0-based) of
       its trials (tb_bench_shard_parse says which). Not part of the spec: every shard's store
       holds the same plan, and tb_bench_merge joins them */
    int shard, shards;
} tb_bench_spec;

/* Parses a shard "I/N" (0 <= I < N <= TB_BENCH_SHARDS_MAX, decimal). A shard's share: the
 * trials in the run's interleaved order are numbered in units (a trial; under the gp sampler a
 * whole study, whose trials depend on each other) and unit u is shard u mod N's. */
#define TB_BENCH_SHARDS_MAX 100000
tb_status tb_bench_shard_parse(const char *text, int *shard, int *shards, tb_error *err);

/* Merges benchmark `name` (NULL: the only one src holds) of the store at src_path, a shard's,
 * into the store at dst_path (created if missing), holding dst's lock of the benchmark as a
 * run does; see tb_store_merge_benchmark for what is copied and refused. *merged_name (cap
 * bytes; may be NULL): the benchmark merged. TB_ERR_INVALID when src and dst are one file or
 * src holds several benchmarks and none is named. */
tb_status tb_bench_merge(const char *dst_path, const char *src_path, const char *name,
                         char *merged_name, size_t cap, tb_store_merge_counts *counts,
                         tb_error *err);

/* ---- calibration windows: the reference step of a workload ------------------------------------
 * A window runs the reference step of a workload (TB_BENCH_REFERENCE_ALGORITHM at its default
 * hyperparameters and the workload's batch size, on the trials' device and threads) in a child
 * process: a few warm-up steps, then timed steps for at least the window's seconds, recorded in
 * the store (tb_store_add_calibration). A trial's reference time is its steps priced at the
 * median step time of its workload's windows (tb_score_reference_step_s). */
#define TB_BENCH_REFERENCE_ALGORITHM "sgd"
#define TB_BENCH_CALIBRATION_S 2.0
#define TB_BENCH_CALIBRATE_EVERY 8

/* Runs one window of workload for benchmark `benchmark` and records it; trials_before is
 * how many trials the run has run so far. TB_ERR_* when the window could not run or be
 * recorded (its data missing, the store failing, the child crashing or passing its limit). */
tb_status tb_bench_calibrate(const char *store_path, const char *benchmark,
                             const char *workload, const tb_trial_options *opts, double seconds,
                             int trials_before, tb_error *err);

/* When an executor takes its windows: before the first trial it runs of each workload, and
 * again before one of a workload once calibrate_every trials (of any workload) have run since
 * that workload's last window; and, for a workload whose trials are all reused and that has
 * no window in the store, once. State of one run, zeroed before its first trial. */
typedef struct tb_bench_calibration_state {
    char workloads[64][64];
    int last[64];     /* trials run when the workload's last window of this run was taken */
    bool taken[64];   /* a window of it this run (or one in the store, for reused trials) */
    int n;
    int ran;          /* trials run so far */
} tb_bench_calibration_state;

/* Before trial t of the plan (will_run: it runs now, not reused): takes a window of its
 * workload when one is due (above). Nothing with spec->calibration_s < 0. */
tb_status tb_bench_calibrate_due(tb_bench_calibration_state *state, const char *store_path,
                                 const tb_bench_spec *spec, const tb_trial_record *t,
                                 bool will_run, tb_error *err);

/* Zeroed spec with 1 study of 1 trial, external tuning. */
tb_bench_spec tb_bench_spec_default(void);
/* Fills spec with a named preset: "quick" (2 studies x 1 trial, 15 s budgets, quick
 * targets, 1 s eval period, eval subsets) or "full" (5 x 5, the workloads' settings). Leaves
 * submissions, workloads, name and paths alone. */
tb_status tb_bench_preset(const char *preset, tb_bench_spec *spec, tb_error *err);

typedef struct tb_bench_event {
    const tb_trial_record *trial; /* after it ran (or was found finished) */
    int index, total;             /* 1-based: the trials reported so far (in the order of
                                     execution, interleaved: submissions in turn, workload by
                                     workload; with several jobs or ranks, as they end) */
    bool reused;                  /* finished in an earlier run: not rerun */
} tb_bench_event;

typedef void (*tb_bench_progress_fn)(void *user, const tb_bench_event *event);

typedef struct tb_bench_summary {
    int planned, reused, ran, failed;
    int skipped;                /* submission libraries that crashed while loading */
    char skipped_reasons[1024]; /* their reasons (library, signal), "; "-separated */
    char notes[1024];           /* what planning did that the spec did not say (a list of
                                   points shorter than the trials), newline-separated */
} tb_bench_summary;

/* tb_bench_run across the ranks of an MPI job d (docs/DISTRIBUTED.md): rank 0 plans, owns
 * the store (only it opens it) and hands the trials to the other ranks, which run each in a
 * child process and send rank 0 its evals and outcome; with one rank it is tb_bench_run. Every
 * rank calls it with the same spec; the summary and the store's trials are rank 0's. */
tb_status tb_bench_run_ranks(const char *store_path, const tb_bench_spec *spec, tb_dist *d,
                             tb_bench_progress_fn progress, void *user,
                             tb_bench_summary *summary, tb_error *err);

/* Plans spec into the store at store_path (idempotent: a second call with the same spec adds
 * nothing; a different spec under the same name is refused) and runs every trial that is not
 * finished, each in a child process (spec->trial.jobs of them at once), reporting each to
 * progress (optional; summary may be NULL too). A submission
 * library that crashes while loading (tb_submission_load's TB_ERR_CRASHED) is skipped: no
 * trials of it are planned, it is counted in summary->skipped with its reason, and the
 * others run (when none is left, the run fails with TB_ERR_CRASHED). Any other submission
 * that cannot be loaded stops the run before anything is planned. The run holds a
 * lock on the benchmark (<store_path>-lock) throughout: while another process runs the same
 * benchmark of the same store, it fails at once (TB_ERR_IO naming that process). store_path
 * must be a file ("" and ":memory:" fail with TB_ERR_INVALID). */
tb_status tb_bench_run(const char *store_path, const tb_bench_spec *spec,
                       tb_bench_progress_fn progress, void *user, tb_bench_summary *summary,
                       tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

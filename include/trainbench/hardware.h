/* hardware.h: the hardware suite (`trainbench hw`, docs/HARDWARE.md): how fast this machine
 * trains the workloads, each as a ratio to a reference machine's figures, and a score.
 *
 * Each workload trains with its fixed reference algorithm (tb_hw_settings) on its real data;
 * tb_throughput_run times it (warm-up, then timed windows, the validation check). The
 * reference file (JSON, data/hw_reference.json in the repository) holds the reference
 * machine's examples/s per workload and configuration, the weights, and where the figures
 * came from; a run's ratio is its examples/s over the reference's, so 1.0 means "as fast as
 * the reference machine". The score of a configuration is the weighted geometric mean of its
 * workloads' ratios, with an interval propagated from the windows' standard errors; a failed
 * workload counts as 0, which makes the score 0 (the geometric mean of the workloads that
 * passed is given beside it). A run of the whole suite (tb_hw_run, at the end) plans the rows,
 * measures them, scores them and records them; `trainbench hw` parses its options into a
 * tb_hw_request and prints the run. Nothing here prints. */
#ifndef TRAINBENCH_HARDWARE_H
#define TRAINBENCH_HARDWARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/optim.h"
#include "trainbench/status.h"
#include "trainbench/store.h"
#include "trainbench/throughput.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the suite ---------------------------------------------------------------------------- */

/* The training algorithm and hyperparameters of `workload` in the suite: its base workload's
 * calibration baseline (docs/WORKLOADS.md). TB_ERR_INVALID naming the workload when there is
 * no such workload, or no settings for its base. */
tb_status tb_hw_settings(const char *workload, const char **algorithm, tb_hparams *hparams,
                         tb_error *err);
/* The suite's default workloads: the base workloads, in their order. Writes up to cap ids and
 * returns how many there are. */
int tb_hw_default_workloads(const char **ids, int cap);

/* ---- the reference file ------------------------------------------------------------------- */

#define TB_HW_MAX_REFERENCE 32 /* workloads in a reference file */
#define TB_HW_MAX_FIGURES 8    /* configurations per workload */

typedef struct tb_hw_figure {
    tb_device device;
    int threads;           /* CPU threads (1 on a GPU) */
    double examples_per_s;
    double sem_pct;        /* as measured; not used in the ratio's interval (the reference
                              figures define the unit) */
} tb_hw_figure;

typedef struct tb_hw_ref_workload {
    char workload[64];
    char algorithm[32];    /* what the figures were measured with: a run with another
                              algorithm or batch size has no ratio */
    int batch_size;
    double weight;         /* > 0; 1 when the file gives none */
    int n_figures;
    tb_hw_figure figures[TB_HW_MAX_FIGURES];
} tb_hw_ref_workload;

typedef struct tb_hw_reference {
    char path[512];
    char date[32], commit[64], cpu[160], command[256], note[512];
    int cores;             /* the reference machine's cores: its "all cores" configuration */
    int n;
    tb_hw_ref_workload workloads[TB_HW_MAX_REFERENCE];
} tb_hw_reference;

/* Reads a reference file. TB_ERR_IO when it cannot be read, TB_ERR_FORMAT naming the file and
 * the field when it is not a valid reference (format "trainbench-hw-reference", version 1;
 * date, commit, cpu, cores and command; workloads with algorithm, batch_size, figures of
 * positive examples/s; no workload twice). */
tb_status tb_hw_reference_load(const char *path, tb_hw_reference *out, tb_error *err);

/* Writes ref as a reference file at path (what tb_hw_reference_load reads; ref->path is not
 * written). TB_ERR_IO naming the path when it cannot be written. */
tb_status tb_hw_reference_write(const tb_hw_reference *ref, const char *path, tb_error *err);

/* The reference workload and figure a run compares with, or NULL with why (e.g. "no reference
 * figure for wordnet_sparse at 4 threads"). The workload's entry must have the run's algorithm
 * and batch size; its figure is the one at the run's device and thread count, else, for a run
 * on all of this machine's cores (cores_here) or on a GPU, the CPU figure at all of the
 * reference machine's cores (the two machines at their best). */
const tb_hw_figure *tb_hw_reference_find(const tb_hw_reference *ref, const char *workload,
                                         const char *algorithm, int batch_size,
                                         tb_device device, int threads, int cores_here,
                                         const tb_hw_ref_workload **entry, char *why,
                                         size_t cap);

/* ---- the score ---------------------------------------------------------------------------- */

typedef struct tb_hw_item {
    bool failed;           /* counts as ratio 0 */
    double ratio;          /* examples/s over the reference's (> 0) */
    double rel_sem;        /* the examples/s' standard error over its mean (sem_pct / 100) */
    int windows;           /* the observations behind rel_sem (>= 2 for an interval) */
    double weight;         /* > 0 */
} tb_hw_item;

typedef struct tb_hw_score {
    int items, failed;
    double score;          /* weighted geometric mean of the ratios; 0 if any failed */
    double low, high;      /* its interval at `level` (NaN where a sem is unknown) */
    double df;             /* Welch-Satterthwaite degrees of freedom of the interval */
    /* over the workloads that passed, their weights renormalised (NaN when none passed;
       equal to score, low, high when none failed) */
    double passed_score, passed_low, passed_high;
} tb_hw_score;

/* The score of items[0..n) with its interval at level (e.g. 0.95): ln(score) = sum a_i
 * ln(r_i), a_i = w_i / sum w; its variance sum a_i^2 rel_sem_i^2 (delta method), and the
 * interval score * exp(+-t sd) with Student's t at the Welch-Satterthwaite degrees of freedom
 * (windows - 1 per item). TB_ERR_INVALID for no items, a weight <= 0, a passed item's ratio
 * <= 0 or not finite, a level outside (0, 1). */
tb_status tb_hw_score_compute(const tb_hw_item *items, int n, double level, tb_hw_score *out,
                              tb_error *err);

/* ---- the results store -------------------------------------------------------------------- */

/* One hardware run (a `trainbench hw` command). */
typedef struct tb_hw_run_record {
    const char *code_version;     /* tb_code_version */
    const char *machine;          /* tb_machine_facts (JSON) */
    const tb_throughput_config *settings; /* warm-up, windows, window, time limit, seed */
    const char *reference;        /* the reference file's path, date and commit in words */
    int world_size;               /* the ranks of a data-parallel run (0 or 1: one process) */
} tb_hw_run_record;

/* One workload in one configuration. */
typedef struct tb_hw_result_record {
    const char *workload, *algorithm;
    tb_device device;
    int threads;
    const tb_throughput_result *result;
    bool failed;
    const char *reason;           /* why it failed, or why it has no ratio; "" otherwise */
    double ratio;                 /* NaN: no reference figure */
} tb_hw_result_record;

/* One configuration's score. */
typedef struct tb_hw_score_record {
    const char *config;           /* "cpu, 2 threads", "cuda" */
    double level;
    const tb_hw_score *score;
} tb_hw_score_record;

/* Creates the store's hardware tables if needed and checks their columns: TB_ERR_FORMAT when
 * they exist with other columns (written by another build). hw_runs from before `hw --dist`
 * gets its world_size column (1 for the runs it holds). The other tables and the store's
 * schema version are untouched, so a store stays readable by builds without these tables. */
tb_status tb_store_hw_tables(tb_store *store, tb_error *err);
/* Records one run, its results and scores in one transaction (tables created if needed);
 * *run_id (optional) gets the run's id. */
tb_status tb_store_add_hw_run(tb_store *store, const tb_hw_run_record *run,
                              const tb_hw_result_record *results, int n_results,
                              const tb_hw_score_record *scores, int n_scores, int64_t *run_id,
                              tb_error *err);

/* What a data-parallel run's scaling efficiency is measured against: a one-process run of the
 * same workload, algorithm, batch size and CPU threads, with the same settings (warm-up,
 * windows, window, window steps, time limit, seed), on the same machine (the machine facts'
 * cpu and cores). */
typedef struct tb_hw_single_query {
    const char *workload, *algorithm;
    int batch_size, threads;
    const char *machine;                  /* tb_machine_facts (JSON) of this machine */
    const tb_throughput_config *settings;
} tb_hw_single_query;

/* The examples/s of the latest such run that passed, recorded in the store (world size 1,
 * cpu), and its run id; *examples_per_s NaN and *run_id 0 when the store has none. The tables
 * are created or checked first (tb_store_hw_tables, whose errors it returns); TB_ERR_IO when
 * the query fails. */
tb_status tb_store_hw_single_rank(tb_store *store, const tb_hw_single_query *query,
                                  double *examples_per_s, int64_t *run_id, tb_error *err);

/* ---- a run of the suite ------------------------------------------------------------------
 * Every workload in every configuration (a device and thread count) is one row. In order:
 * tb_hw_plan, tb_hw_use_reference, tb_hw_measure for each row, tb_hw_describe_machine,
 * tb_hw_score_run; then, as wanted, tb_hw_scaling, tb_hw_record, tb_hw_save_reference. With
 * dist every rank makes the same calls up to tb_hw_score_run (tb_hw_measure and
 * tb_hw_describe_machine are collective) and rank 0's run holds the job's figures. */

#define TB_HW_MAX_WORKLOADS 32 /* in one run */
#define TB_HW_MAX_CONFIGS 8

/* What to run. */
typedef struct tb_hw_request {
    const char *const *workloads; /* ids, each once (none: tb_hw_default_workloads) */
    int n_workloads;
    const int *threads;           /* CPU thread counts (per rank with dist), each once, 1 to
                                     4096 (none: 1 and all cores, or each rank's share of its
                                     machine's); not used on a GPU */
    int n_threads;
    tb_device device;             /* a GPU is one configuration */
    tb_throughput_config settings; /* warm-up, windows, window, time limit, seed, data (its
                                     strings must outlive the run) */
    bool lr_set;                  /* replace every workload's learning rate with lr (for
                                     checks: the examples/s do not depend on it) */
    double lr;
    double level;                 /* of the scores' intervals, in (0, 1) */
    int cores;                    /* this machine's (0: its online cores) */
    tb_dist *dist;                /* data-parallel across an MPI job's ranks (NULL: one
                                     process) */
} tb_hw_request;

/* The defaults: the default workloads at 1 thread and all cores on the CPU, 20 warm-up steps,
 * 10 windows of >= 0.5 s and >= 1 step, 60 s per run at most, seed 0, level 0.95. */
tb_hw_request tb_hw_request_default(void);

/* One workload in one configuration. */
typedef struct tb_hw_row {
    const char *workload, *algorithm;
    tb_hparams hparams;        /* tb_hw_settings', lr replaced */
    int config;                /* index into tb_hw_run.configs */
    int batch_size;            /* the workload's default */
    tb_throughput_result res;
    bool failed;
    char reason[512];          /* why it failed (a tb_error message fits) */
    double ratio;              /* examples/s over the reference's; NaN: no reference figure */
    double reference_examples_per_s;
    double weight;             /* the reference file's */
    char note[256];            /* why there is no ratio */
    /* with dist: the one-process examples/s at the same threads per rank, where from, and the
       scaling efficiency examples_per_s / (ranks x it) (NaN: no one-process figure) */
    double single_examples_per_s, efficiency;
    char single_source[160];
} tb_hw_row;

/* A device and thread count, and its score. */
typedef struct tb_hw_config {
    tb_device device;
    int threads;
    char label[48];            /* "cpu, 2 threads", "cpu, 2 ranks x 1 thread", "cuda" */
    bool scored;               /* some workload of it has a reference figure */
    tb_hw_score score;
} tb_hw_config;

typedef struct tb_hw_run {
    tb_throughput_config settings;
    tb_hw_reference ref;       /* n 0: none (no ratios, no score) */
    double level;
    int cores;                 /* of this machine */
    tb_dist *dist;
    int ranks;                 /* the job's (1: one process) */
    int job_cores;             /* the cores of the job's machines (cores with one process) */
    tb_hw_config configs[TB_HW_MAX_CONFIGS];
    int n_configs;
    tb_hw_row *rows;           /* workload by workload, each in every configuration */
    int n_rows;
    char machine[1024];        /* tb_machine_facts */
    char cpu[160];             /* its cpu ("" where unknown) */
    double load_start, load_end; /* one-minute load averages around the rows (NaN: unknown) */
} tb_hw_run;

/* Plans the run: its configurations, and per workload a row in each with the workload's
 * settings and batch size. TB_ERR_INVALID naming the culprit for an unknown workload, one
 * listed twice, a thread count out of range or listed twice, more than TB_HW_MAX_WORKLOADS or
 * TB_HW_MAX_CONFIGS, a level outside (0, 1), or with dist a batch that does not divide among
 * the ranks; TB_ERR_NOMEM. *out (NULL on failure) is freed with tb_hw_run_free. */
tb_status tb_hw_plan(const tb_hw_request *request, tb_hw_run **out, tb_error *err);
void tb_hw_run_free(tb_hw_run *run);

/* The reference file the run compares with (tb_hw_reference_load and its errors), or path
 * "none": no figures, so no ratio and no score. */
tb_status tb_hw_use_reference(tb_hw_run *run, const char *path, tb_error *err);

/* Measures row i (tb_throughput_run with the validation check; progress may be NULL). A run
 * that fails its check, or whose step fails, is the row's failure (failed, with the reason)
 * and returns TB_OK; returned instead, as tb_throughput_run words them, are the failures that
 * stop the suite: data missing (TB_ERR_MISSING), no such device or no support for it
 * (TB_ERR_NO_DEVICE, TB_ERR_UNSUPPORTED), a bad setting (TB_ERR_INVALID). Row 0 first reads
 * run->load_start. */
tb_status tb_hw_measure(tb_hw_run *run, int i, tb_throughput_progress_fn progress, void *user,
                        tb_error *err);

/* After the rows: the machine facts (with the last row's backend), the job's cores (a
 * collective with dist) and run->load_end. */
void tb_hw_describe_machine(tb_hw_run *run);

/* Each row's ratio to the reference (0 for a failed row; NaN, with the note why, where the
 * reference has no figure for it) and each configuration's score. TB_ERR_NOMEM. */
tb_status tb_hw_score_run(tb_hw_run *run, tb_error *err);

/* How many rows failed. */
int tb_hw_failures(const tb_hw_run *run);

/* With dist, on rank 0: each row's one-process examples/s at its threads per rank on this
 * machine, from store (a one-process run of the same settings: tb_store_hw_single_rank; store
 * may be NULL), else from the reference file if it was measured here (same cpu and cores),
 * and its scaling efficiency. A one-process run's rows keep NaN. A failing store query is
 * returned after every row is done (from the reference file where the store failed). */
tb_status tb_hw_scaling(tb_hw_run *run, tb_store *store, tb_error *err);

/* Opens the results store at path with its hardware tables made or checked
 * (tb_store_hw_tables), so that a bad store fails before minutes of measuring; *out NULL on
 * failure. */
tb_status tb_hw_open_store(const char *path, tb_store **out, tb_error *err);

/* Records the run, every row and each scored configuration (tb_store_add_hw_run); *run_id
 * (optional) gets its id. */
tb_status tb_hw_record(const tb_hw_run *run, tb_store *store, int64_t *run_id, tb_error *err);

/* Writes the rows that passed as a reference file at path, to make this machine the reference:
 * today's date, the code version, the cpu and cores, command (how the run was made) and the
 * load averages. TB_ERR_INVALID when no row passed, or for a run of several ranks (a reference
 * is one process's figures); tb_hw_reference_write's errors. */
tb_status tb_hw_save_reference(const tb_hw_run *run, const char *path, const char *command,
                               tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* study.h: experiments built from many training runs: the variance of a result by source of
 * variation, and the paired comparison of two training algorithms (Bouthillier et al. 2021).
 *
 * Both run tb_train many times with chosen seeds, collect one metric per run, and hand the
 * numbers to the statistics part (stats.h). Both check the configuration (workload,
 * algorithm, hyperparameters) before the first training, and stop at the first run that fails
 * for any reason but a divergence (TB_ERR_NUMERIC, or a NaN or infinite metric). A variance
 * study leaves diverged runs out and counts them; a comparison scores a diverged run as the
 * worst possible result of its side, so it loses its pair (both diverged: a tie). */
#ifndef TRAINBENCH_STUDY_H
#define TRAINBENCH_STUDY_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/stats.h"
#include "trainbench/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a search draws its points: the scrambled Halton sequence, shifted by the search's seed
 * (every seed a different set of points), or Bayesian optimisation (a GP fitted to the trials
 * so far, expected improvement; its first TB_STUDY_GP_INITIAL points are Halton's), or BO with
 * a pre-trained prior (HyperBO: the GP's mean, kernel and noise fitted beforehand to other
 * workloads' searches and only conditioned on the trials so far; its first point Halton's). */
typedef enum tb_study_sampler {
    TB_STUDY_SAMPLER_HALTON = 0,
    TB_STUDY_SAMPLER_GP,
    TB_STUDY_SAMPLER_GP_PRIOR,
} tb_study_sampler;
#define TB_STUDY_GP_INITIAL 3
#define TB_STUDY_GP_PRIOR_INITIAL 1
/* "halton", "gp", "gp_prior" ("unknown" out of range). */
const char *tb_study_sampler_name(tb_study_sampler s);

/* What one run contributes: a metric of the validation or test split after the run. */
typedef enum tb_study_metric {
    TB_METRIC_VALIDATION = 0,   /* the workload's own metric (error rate, loss, bits/char) */
    TB_METRIC_TEST,             /* the same on the test split */
    TB_METRIC_VALIDATION_ERROR,
    TB_METRIC_VALIDATION_LOSS,
    TB_METRIC_TEST_ERROR,
    TB_METRIC_TEST_LOSS,
    TB_METRIC_TIME_TO_TARGET, /* timed seconds to the workload's validation target (+inf if
                                 not reached within its budget); runs stop at the target */
    TB_METRIC_TIME_PER_STEP,  /* timed seconds per step: train_time_s / steps */
    TB_METRIC_EXAMPLES_PER_SECOND, /* examples per timed second (higher is better) */
    TB_METRIC_FRESH_TO_TARGET, /* fresh examples read (tb_train_result.fresh_to_target) up to
                                  the evaluation at the target; runs stop at the target as for
                                  time_to_target (+inf if not reached) */
} tb_study_metric;

const char *tb_study_metric_name(tb_study_metric m);
tb_status tb_study_metric_parse(const char *name, tb_study_metric *out, tb_error *err);
/* Whether higher values of m are better (examples_per_second); every other metric is
 * lower-is-better. */
bool tb_study_metric_higher_is_better(tb_study_metric m);
/* Whether runs under m stop at the target and a miss is +inf (time_to_target,
 * fresh_to_target). */
bool tb_study_metric_to_target(tb_study_metric m);
/* Whether m is a measurement of time (time_to_target, time_per_step, examples_per_second):
 * the machine and its load enter it. */
bool tb_study_metric_timed(tb_study_metric m);
/* The metric a search selects by: the validation form of m (never the test split; the
 * workload's own validation metric for time_per_step and examples_per_second: a search picks
 * what trains best, not what steps fastest). */
tb_study_metric tb_study_selection_metric(tb_study_metric m);
/* The metric's value in a result (NaN where the result lacks it). */
double tb_study_metric_value(tb_study_metric m, const tb_train_result *r);
/* Sets what a run needs for metric m: for time to target, the workload's budget, eval period
 * and stop-at-target (unless the config already sets a budget). Fails with TB_ERR_INVALID for
 * an unknown workload, or an error-rate metric on a workload without one (the autoencoder),
 * so that a study refuses it before any training. */
tb_status tb_study_prepare_config(tb_study_metric m, tb_run_config *c, tb_error *err);

/* The seed a source gets in run `index` of a study with master seed `seed` (index 0 is the
 * base run every source shares). Distinct (seed, source, index) give distinct seeds. */
uint64_t tb_study_seed(uint64_t seed, tb_stream source, int64_t index);

/* Called after every run (r is NULL and err set if it failed); for progress displays. */
typedef void (*tb_study_run_fn)(void *user, const char *group, int index, int total,
                                const tb_train_result *r, const tb_error *err);

/* How a study trains one run, with tb_train's contract (the run's config, its result, the
 * error). train NULL: tb_train, the registry's optimizers (the algorithm checked against the
 * registry before any run). A side whose algorithm is not the registry's brings its own, e.g.
 * the command line's for a submission file (tb_submission_hook: `compare -A x.py`); its
 * algorithm is not checked against the registry (its train function's owner has loaded it). */
typedef tb_status (*tb_study_train_fn)(void *user, const tb_run_config *cfg,
                                       tb_train_result *res, tb_error *err);
typedef struct tb_study_trainer {
    tb_study_train_fn train;
    void *user;
} tb_study_trainer;

/* ---- variance by source ------------------------------------------------------------------ */
typedef struct tb_variance_study_config {
    tb_run_config base;               /* workload, algorithm, hyperparameters, length */
    uint64_t seed;                      /* master seed of the study */
    int runs;                           /* runs per group, >= 2 */
    int n_sources;                      /* sources varied one at a time (plus "all") */
    tb_stream sources[TB_STREAM_COUNT];
    tb_study_metric metric;
    /* A search (0 trials: none). One search of search_trials Halton points of the space
     * (AlgoPerf JSON text) on the base seeds picks the point every source's runs train, except
     * the hparam source's and "all"'s: each of their runs makes its own search on its own seeds
     * (its hparam seed draws the points) and gives its best trial's metric. */
    const char *space;
    const char *space_source;           /* its file, for messages (NULL: "search space") */
    int search_trials;
    tb_study_run_fn on_run;
    void *user;
} tb_variance_study_config;

#define TB_STUDY_MAX_GROUPS (TB_STREAM_COUNT + 1)
/* The level of a variance study's std intervals is 1 - this. */
#define TB_VARIANCE_STUDY_ALPHA 0.05

typedef struct tb_variance_study {
    int n_groups;                                  /* sources, then "all" last */
    const char *names[TB_STUDY_MAX_GROUPS];
    double *values[TB_STUDY_MAX_GROUPS];           /* finite metric values, owned */
    int64_t n_values[TB_STUDY_MAX_GROUPS];
    int64_t failed[TB_STUDY_MAX_GROUPS];           /* runs that diverged (left out) */
    tb_variance_row rows[TB_STUDY_MAX_GROUPS];     /* std per group, share of "all" */
} tb_variance_study;

/* For every listed source, `runs` trainings that change only that source's seed; then `runs`
 * trainings that change every seed ("all"). Fills out (free with tb_variance_study_free); the
 * std intervals are the chi-square ones at 95% (tb_std_interval, which assumes normal
 * results). Fails with TB_ERR_INVALID for an invalid configuration (checked before any
 * training: unknown workload, algorithm or hyperparameter, a source listed twice, or
 * TB_METRIC_TIME_TO_TARGET, whose misses have no finite time), with the status of the first
 * run that fails other than by diverging, and with TB_ERR_NUMERIC if a group keeps fewer than
 * 2 finite results. */
tb_status tb_variance_study_run(const tb_variance_study_config *config, tb_variance_study *out,
                                tb_error *err);
void tb_variance_study_free(tb_variance_study *study);

/* ---- paired comparison of two algorithms -------------------------------------------------- */
typedef struct tb_compare_config {
    tb_run_config a, b;   /* the two sides: algorithm, hyperparameters, length */
    const char *name_a, *name_b;
    /* Hyperparameter search (0 trials: none; a and b's hyperparameters are used as given).
     * Each side draws search_trials points of its search space (AlgoPerf JSON text) from the
     * scrambled Halton sequence, trains each on the base seeds, keeps the best by the metric,
     * and retrains it `pairs` times (FixHOptEst(k, All), Bouthillier et al.). With `ideal`,
     * every pair runs its own search on its own seeds instead (IdealEst(k)): pairs x trials
     * trainings per side instead of pairs + trials. */
    const char *space_a, *space_b;
    const char *space_a_source, *space_b_source; /* where each space came from (its file),
                                                    for messages; NULL: "<name>'s search space" */
    int search_trials;
    bool ideal;
    uint64_t seed;          /* master seed: pair i uses tb_study_seed(seed, s, i + 1) for every
                               source s, the same on both sides */
    int pairs;              /* >= 2 */
    tb_study_metric metric;
    tb_pab_options pab;     /* direction is forced to lower-is-better */
    tb_study_run_fn on_run;
    void *user;
    tb_study_trainer trainer_a, trainer_b; /* how each side's runs train (zero: tb_train) */
} tb_compare_config;

typedef struct tb_compare_result {
    tb_hparams best_a, best_b; /* the configurations retrained (the first pair's with ideal) */
    int64_t runs;           /* trainings done in all */
    int64_t n;              /* pairs (all of them: a diverged run loses its pair) */
    double *a, *b;          /* their metric values, owned; +inf for a diverged run (and for a
                               missed target under time_to_target) */
    int64_t failed_a, failed_b; /* runs of each side that diverged (scored +inf) */
    tb_summary summary_a, summary_b; /* of each side's finite values (summary.n of them; all
                                        NaN if none) */
    tb_pab_result pab;      /* P(A better than B) */
} tb_compare_result;

/* Runs the comparison (see tb_compare_config). Fails with TB_ERR_INVALID for an invalid
 * configuration of either side (named "side A" or "side B", checked before any training), with
 * the status of the first run that fails other than by diverging, and with TB_ERR_NUMERIC if
 * every run of both sides diverged (or, with a single search, every trial of one side). */
tb_status tb_compare_run(const tb_compare_config *config, tb_compare_result *out, tb_error *err);
void tb_compare_result_free(tb_compare_result *r);

#ifdef __cplusplus
}
#endif
#endif

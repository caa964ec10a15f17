/* study_impl.h: the helpers the studies share (internal to src/study/). */
#ifndef TRAINBENCH_STUDY_IMPL_H
#define TRAINBENCH_STUDY_IMPL_H

#include "trainbench/study.h"
#include "trainbench/study_plan.h"
#include "trainbench/tune.h"

/* TB_ERR_INVALID: an error-rate metric asked of a workload without classes, named with where. */
tb_status tb_study_no_error_rate(const char *workload, const char *where, tb_error *err);

/* One run of a study: TB_OK with *value metric m (finite, or +inf for a missed target) and,
 * if other is not NULL, *other metric other_m of the same run (NaN if not finite);
 * TB_ERR_NUMERIC when the run diverged (tb_train said so, or its metric is NaN or infinite:
 * *value NaN, the study goes on); another status stops the study, the run named in err. The
 * run trains with trainer's function (NULL, or its train NULL: tb_train). */
tb_status tb_study_run_one(const tb_run_config *cfg, const tb_study_trainer *trainer,
                           tb_study_metric m, tb_study_metric other_m,
                           double *value, double *other, const char *group, int index, int total,
                           tb_study_run_fn on_run, void *user, tb_error *err);

/* TB_OK when source s varies something in runs of config c, else TB_ERR_INVALID naming
 * why not: dropout on a model without dropout (and no true-Fisher sampling), augment without
 * augmentation, hparam in runs that search nothing (searches false) (sources.c). */
tb_status tb_study_check_source(const tb_run_config *c, tb_stream s, bool searches,
                                tb_error *err);
/* The checks of a configuration that tb_train would make only after loading data (workload,
 * algorithm, hyperparameters), before any training: a typo in B's algorithm fails at once
 * instead of after A's runs. With a trainer of its own (trainer->train set) the algorithm is
 * not the registry's and only the workload is checked. */
tb_status tb_study_check_base(const tb_run_config *c, const tb_study_trainer *trainer,
                              tb_error *err);

/* One trial of a search: cfg is the base with the trial's point; sets *select (the selection
 * metric) and *report (the reported one). TB_ERR_NUMERIC: it diverged (the search goes on);
 * another status stops the search. */
typedef tb_status (*tb_study_trial_fn)(void *user, const tb_run_config *cfg, int trial,
                                       double *select, double *report, tb_error *err);

typedef struct tb_study_search {
    const tb_search_space *space;
    int trials;
    tb_study_sampler sampler;
    uint64_t seed;             /* the search's own: the run's TB_STREAM_HPARAM seed */
    tb_study_trial_fn trial;
    void *user;
    const tb_gp_params *prior; /* the gp_prior sampler's pre-trained GP (else NULL) */
} tb_study_search;

typedef struct tb_study_search_result {
    int n;                     /* trials */
    int best;                  /* the best trial, -1 if every one diverged */
    double best_select, best_report;
    double *select;            /* per trial (+inf: diverged); owned */
    tb_hparams *points;        /* per trial: the space's hyperparameters; owned */
} tb_study_search_result;

/* The first n points of a Halton search (or of a list's) with the given seed (search.c). */
tb_status tb_study_search_points(const tb_search_space *space, int n, uint64_t seed,
                                 tb_hparams *out, tb_error *err);
/* Runs the search's trials on base (each with its point over base's hyperparameters). */
tb_status tb_study_search_run(const tb_study_search *s, const tb_run_config *base,
                              tb_study_search_result *out, tb_error *err);
void tb_study_search_result_free(tb_study_search_result *r);

/* A search whose trials are tb_study_run_one's runs (compare, variance): the metric selected
 * by its validation form, progress as group's runs 1..trials, *runs counting the trainings. */
typedef struct tb_study_train_search {
    const tb_search_space *space;
    int trials;
    tb_study_sampler sampler;
    tb_study_metric metric;
    const char *group;
    tb_study_run_fn on_run;
    void *user;
    int64_t *runs;             /* may be NULL */
    const tb_study_trainer *trainer; /* how the trials train (NULL: tb_train) */
} tb_study_train_search;

/* Runs it on base's seeds (its TB_STREAM_HPARAM seed draws the points); *best: base's
 * hyperparameters with the best point over them, *best_report (may be NULL) its reported
 * metric (NaN if not finite). TB_ERR_NUMERIC if every trial diverged. */
tb_status tb_study_search_train(const tb_study_train_search *t, const tb_run_config *base,
                                tb_hparams *best, double *best_report, tb_error *err);
/* The Halton points a search with this seed tries, checked as their runs would be
 * (tb_study_check_base with trainer), before any training. */
tb_status tb_study_search_check(const tb_search_space *space, int trials, uint64_t seed,
                                const tb_run_config *base, const tb_study_trainer *trainer,
                                tb_error *err);

/* The line and column (1-based) of the value at key path `path` ("overrides[1].tune.sampler")
 * of JSON text, or of the deepest part of the path the text has; 0 and 0 when not even its
 * first key is there (locate.c). */
void tb_study_locate(const char *text, const char *path, int *line, int *column);

/* The pre-trained GP of gp_prior cell `cell` (prior.c): the NLL averaged over tasks (HyperBO),
 * each task one search already in v of a cell on another workload that tunes the same space
 * with another sampler, in the unit coordinates of the dimensions that vary (a diverged trial
 * at its search's worst). TB_ERR_MISSING when those searches hold fewer than 2 finished
 * trials. */
tb_status tb_study_prior_fit(const tb_study_plan *plan, const tb_study_values *v, int cell,
                             tb_gp_params *out, tb_error *err);
/* The cell that can lend cell `cell` a prior: another workload, the same space, not gp_prior;
 * whether cell d is one. */
bool tb_study_prior_source(const tb_study_plan *plan, int cell, int d);

/* The curve figure's row of cell `cell`: the best selection value so far after each trial (the
 * median over the runs' searches for per_run), max_trials values into out (NaN past the
 * cell's trials); scratch holds (seeds + 1) x max_trials (figures.c). */
tb_status tb_study_curve_cell(const tb_study_plan *plan, const tb_study_values *v, int cell,
                              double *scratch, double *out);
/* The regret figure (regret.c); free with tb_study_regret_free. */
tb_status tb_study_regret_compute(const tb_study_plan *plan, const tb_study_values *v,
                                  tb_study_regret_fig *out, tb_error *err);
void tb_study_regret_free(tb_study_regret_fig *r);

/* The search-space utility figure of the plan's values (space_utility.c); u's arrays owned,
 * freed by tb_study_figures_free. */
tb_status tb_study_utility_compute(const tb_study_plan *plan, const tb_study_values *v,
                                   tb_study_utility_fig *u, tb_error *err);

/* The detection figure over the plan's two cells into out (figures.c calls it when the plan
 * asks); TB_ERR_NUMERIC when a cell has fewer than 2 finished runs. */
tb_status tb_study_detection_compute(const tb_study_plan *plan, const tb_study_values *v,
                                     tb_study_detection_fig *out, tb_error *err);

/* The stability threshold of cell `cell`'s optimizer at its learning rate, from its
 * hyperparameters (tb_optimizer_stability_threshold_of); TB_ERR_UNSUPPORTED naming the
 * algorithm where there is none (stability.c). */
tb_status tb_study_cell_threshold(const tb_study_plan *plan, int cell, double *out,
                                  tb_error *err);
/* The stability figure's rows, one per cell, into rows (figures.c calls it when the plan
 * asks). */
tb_status tb_study_stability_compute(const tb_study_plan *plan, const tb_study_values *v,
                                     tb_study_stability_row *rows, tb_error *err);

/* The sharpness measurements of one study run as tb_train reports them (sharpness_runs.c). */
typedef struct tb_study_collector {
    tb_study_sharpness_curve curve;
    int cap;
    bool nomem;                 /* a measurement could not be kept */
} tb_study_collector;
/* A tb_train_sharpness_fn: appends the measurement to user, a tb_study_collector. */
void tb_study_collect_sharpness(void *user, const tb_sharpness *m);
/* Hands the curve over to *to (NULL: frees it) and empties c. */
void tb_study_collector_take(tb_study_collector *c, tb_study_sharpness_curve *to);

#endif

/* study_plan.h: studies as data. A study file (JSON, docs/STUDIES.md) names a claim of a paper
 * and a plan to check it at CPU scale: a grid of training runs over named axes (workload,
 * algorithm, batch size, steps, a hyperparameter), each cell run with the same seeds (cells
 * are paired by seed index), one metric per run (tb_study_metric), and a figure: a table of
 * medians (or means) with intervals per cell, and paired comparisons of cells (P(A>B), its
 * interval and verdict, as tb_compare_run) whose expected outcome the report marks as
 * reproduced, not reproduced or inconclusive.
 *
 * Three parts: the parser (tb_study_plan_parse: every check, the configuration of every cell
 * included, before any training), the runner (tb_study_execute: runs the plan, recording every
 * run in a results store and reusing the runs it already holds) and the figure
 * (tb_study_figure_compute). Nothing prints; errors name the file, the key and the problem. */
#ifndef TRAINBENCH_STUDY_PLAN_H
#define TRAINBENCH_STUDY_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/stats.h"
#include "trainbench/store.h"
#include "trainbench/study.h"
#include "trainbench/train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_STUDY_MAX_AXES 4
#define TB_STUDY_MAX_VALUES 8
#define TB_STUDY_MAX_HP_SETS 16     /* hparams entries: "*" and one per algorithm */
#define TB_STUDY_MAX_OVERRIDES 32
#define TB_STUDY_MAX_COMPARISONS 8
#define TB_STUDY_MAX_ECHO_ROWS 64
/* How a slow upstream's step time is measured (tb_run_measure_step_s), before each run index
 * of a group of cells: warm-up steps, then the median of windows of steps. */
#define TB_STUDY_STEP_TIME_WARMUP 5
#define TB_STUDY_STEP_TIME_STEPS 20
#define TB_STUDY_STEP_TIME_WINDOWS 3   /* the echoing figure's rows: other axes x slowdowns */
#define TB_STUDY_MAX_SEEDS 1000
#define TB_STUDY_TEXT_MAX 512
#define TB_STUDY_LABEL_MAX 48
#define TB_STUDY_MAX_BUDGETS 8     /* the utility figure's budgets */

typedef enum tb_study_axis_kind {
    TB_AXIS_WORKLOAD = 0,
    TB_AXIS_ALGORITHM,
    TB_AXIS_BATCH_SIZE,
    TB_AXIS_STEPS,
    TB_AXIS_ECHO,   /* "echo_factor": data echoing's factor (settings.echo: its kind) */
    TB_AXIS_HPARAM, /* any other name: a hyperparameter of every algorithm of the cell */
    TB_AXIS_SEARCH, /* "search": "once" or "per_run", in place of every tune's own "search"
                       (the two estimators of Bouthillier et al. side by side) */
    TB_AXIS_SAMPLER, /* "sampler": "halton", "gp", "gp_prior", in place of every tune's own */
    TB_AXIS_SPACE,  /* "space": names of candidate search spaces; every cell tunes, an
                       override's tune giving each name its space (the utility figure) */
    TB_AXIS_SLOWDOWN, /* "upstream_slowdown": the upstream's cost per batch of fresh examples
                         as a multiple (> 0) of the step time measured before the cell's runs
                         (tb_run_measure_step_s); numbers[] the multiples */
    TB_AXIS_ECHO_MODE, /* "echo": "none" or "KIND:FACTOR" (an echo kind and factor >= 1, e.g.
                          "batch:2"); numbers[] the factors (1 for none) */
} tb_study_axis_kind;

typedef struct tb_study_axis {
    char name[TB_HPARAM_NAME_MAX];
    tb_study_axis_kind kind;
    int n;                                               /* values, >= 1 */
    char labels[TB_STUDY_MAX_VALUES][TB_STUDY_LABEL_MAX]; /* each value as text */
    double numbers[TB_STUDY_MAX_VALUES];                  /* numeric axes' values */
} tb_study_axis;

/* Some axes' values: value[k] is an index into axis k's values, or -1 (any). */
typedef struct tb_study_where {
    int value[TB_STUDY_MAX_AXES];
} tb_study_where;

/* Tuning inside a cell ("tune": docs/STUDIES.md): a search of `trials` points of a search
 * space, each a trial trained for the budget, the best by the validation form of the study's
 * metric; the cell's runs are that point retrained on each run's seeds (every source re-drawn:
 * FixHOptEst(k, All) of Bouthillier et al.), or with per_run a new search per run on the run's
 * own seeds, its hyperparameter-search seed included (IdealEst(k)). */
typedef struct tb_study_tune {
    bool on;
    char key[48];               /* where the file gives it ("tune", "overrides[2].tune") */
    int space;                  /* index into the plan's space_json */
    char space_source[TB_STUDY_TEXT_MAX]; /* the file it came from, or "inline" */
    int trials;                 /* >= 1 */
    tb_study_sampler sampler;
    int64_t budget_steps;       /* the length of a trial: steps, epochs or timed seconds; */
    double budget_epochs;       /* all 0: the cell's own length */
    double budget_seconds;
    bool per_run;               /* "search": "per_run" (else "once") */
} tb_study_tune;

typedef struct tb_study_override {
    tb_study_where when;
    tb_hparams hparams;
    tb_study_tune tune;         /* when on: the matching cells tune so (the last one wins) */
} tb_study_override;

typedef enum tb_study_expect {
    TB_EXPECT_NONE = 0,        /* reported, not judged */
    TB_EXPECT_A_BETTER,        /* verdict a_better */
    TB_EXPECT_B_BETTER,        /* verdict b_better */
    TB_EXPECT_NO_DIFFERENCE,   /* verdict no_meaningful_difference */
    TB_EXPECT_A_NOT_WORSE,     /* verdict a_better or no_meaningful_difference */
    TB_EXPECT_A_WINS,          /* A better in at least min_wins of the pairs (a fraction) */
    TB_EXPECT_SAME_WITHIN,     /* every pair equal within tolerance: |a - b| <= tolerance
                                  max(|a|, |b|) (an exact rewrite of the same computation) */
} tb_study_expect;

typedef struct tb_study_comparison {
    tb_study_where a, b;        /* the axes a side sets; the axes neither sets vary: one
                                   comparison per combination of their values */
    tb_study_expect expect;
    double min_wins;            /* TB_EXPECT_A_WINS: in (0, 1] */
    double tolerance;           /* TB_EXPECT_SAME_WITHIN: relative, in (0, 1) */
    double gamma;               /* the decision rule's gamma, (0.5, 1) */
} tb_study_comparison;

typedef enum tb_study_outcome {
    TB_STUDY_NOT_JUDGED = 0,
    TB_STUDY_REPRODUCED,
    TB_STUDY_NOT_REPRODUCED,
    TB_STUDY_INCONCLUSIVE,
} tb_study_outcome;

/* The file's name of an expectation ("none", "a_better", ..., "a_wins"); "unknown" if out of
 * range. */
const char *tb_study_expect_name(tb_study_expect e);
/* "reproduced", "not reproduced", "inconclusive", "not judged". */
const char *tb_study_outcome_name(tb_study_outcome o);

typedef struct tb_study_plan {
    char name[64];
    char claim[TB_STUDY_TEXT_MAX];
    char source[TB_STUDY_TEXT_MAX];
    char file[TB_STUDY_TEXT_MAX];   /* where it was read from, for messages */
    char workload[64], algorithm[64]; /* the fixed ones ("" when an axis sets it) */
    tb_run_config base;           /* settings: steps or epochs, batch size, eval_examples,
                                       schedule, warmup_fraction, echo; workload/algorithm
                                       point into this struct */
    int n_hp_sets;
    char hp_names[TB_STUDY_MAX_HP_SETS][64]; /* "*" or an algorithm */
    tb_hparams hp_sets[TB_STUDY_MAX_HP_SETS];
    int n_overrides;
    tb_study_override overrides[TB_STUDY_MAX_OVERRIDES];
    int n_axes;
    tb_study_axis axes[TB_STUDY_MAX_AXES];
    int seeds;                      /* runs per cell (pairs), >= 2 */
    uint64_t seed;                  /* master seed: run i of every cell has the seeds
                                       tb_study_seed(seed, s, i + 1) */
    tb_study_metric metric;
    tb_statistic statistic;         /* of the table: median (bootstrap CI) or mean (t CI) */
    int n_comparisons;
    tb_study_comparison comparisons[TB_STUDY_MAX_COMPARISONS];
    tb_study_tune tune;             /* the study's own "tune" (every cell without an override's) */
    bool fig_variance, fig_rank, fig_curve, fig_estimators; /* "figures" beyond the table
                                                               (figures.c) */
    bool fig_estimators_judged;     /* "expect": "close": each estimator row a check */
    bool fig_utility;               /* the search-space utility figure (utility.c) */
    int n_utility_budgets;          /* its budgets, increasing, each at most every cell's trials */
    int utility_budgets[TB_STUDY_MAX_BUDGETS];
    double utility_min_tau;         /* "min_tau": judged when the mean Kendall tau over the
                                       budgets reaches it; NaN: not judged */
    bool fig_regret;                /* the regret figure of the samplers (regret.c) */
    double regret_min_ratio;        /* "min_ratio": each gp_prior cell judged on it; NaN: not */
    bool fig_echoing;               /* "echoing": echo cells against no echoing per upstream
                                       slowdown (echo_figure.c) */
    bool fig_echoing_judged;        /* "expect": "choi2019": its rows are checks */
    bool fig_detection;             /* detection rates of three comparison methods over the
                                       two cells (detection.c) */
    int detection_n, detection_k;   /* runs a side of P(A>B) and of the mean (k <= n) */
    int detection_resamples;        /* simulated comparisons per row */
    double detection_gamma;         /* P(A>B) test's gamma, in (0.5, 1) */
    double detection_max_fp, detection_max_fn; /* "max_false_positive", "max_false_negative":
                                       the P(A>B) test's rates judged against them (both
                                       given); NaN: not judged */
    bool fig_stability;             /* the edge-of-stability figure over each cell's sharpness
                                       measurements (settings.sharpness_every; stability.c) */
    double stability_tail;          /* "tail": the last fraction of each run's measurements
                                       the median ratio is taken over, (0, 1] */
    double stability_tolerance;     /* "tolerance": judged when |median - 1| <= it */
    bool stability_judged;          /* "expect": "at_threshold": each cell a check */
    int n_fig_sources;              /* the variance figure's sources, each varied alone */
    tb_stream fig_sources[TB_STREAM_COUNT];
    int n_spaces;
    char *space_json[TB_STUDY_MAX_OVERRIDES + 1]; /* the tunes' search spaces, owned */
} tb_study_plan;

/* Parses and validates study text; `file` names it in messages ("file: key: problem").
 * Refuses bad JSON, unknown or missing keys, wrong types, unknown workloads, algorithms,
 * metrics or axis values, empty axes, impossible values, and any cell whose configuration
 * tb_train or the metric would refuse (tb_optimizer_check_hparams, tb_study_prepare_config):
 * TB_ERR_INVALID. *out is malloc'ed: free with tb_study_plan_free. */
tb_status tb_study_plan_parse(const char *text, const char *file, tb_study_plan **out,
                              tb_error *err);
/* Reads the file at path and parses it (TB_ERR_IO naming the path if it cannot be read). */
tb_status tb_study_plan_load(const char *path, tb_study_plan **out, tb_error *err);
void tb_study_plan_free(tb_study_plan *plan);

/* Scales the steps or epochs of every run (at least 1 step; a tuning budget too) by factor > 0,
 * for a quick look (< 1) or a closer one (> 1). The runs per cell are left alone: they are
 * set by tb_study_plan_set_seeds. */
tb_status tb_study_plan_scale(tb_study_plan *plan, double factor, tb_error *err);
/* Sets the runs per cell (pairs), 2 to TB_STUDY_MAX_SEEDS, in place of the file's "seeds". */
tb_status tb_study_plan_set_seeds(tb_study_plan *plan, int seeds, tb_error *err);

/* An "echo" axis value: "none" (kind none, factor 1) or "KIND:FACTOR" (tb_echo_kind_parse's
 * kinds, the factor in [1, 100]); TB_ERR_INVALID naming the cause. */
tb_status tb_study_echo_parse(const char *text, tb_echo_kind *kind, double *factor,
                              tb_error *err);
/* The upstream slowdown of cell `cell` (its "upstream_slowdown" axis value; 0 without that
 * axis). */
double tb_study_plan_cell_slowdown(const tb_study_plan *plan, int cell);

/* Cells: every combination of the axes' values, the last axis varying fastest. */
int tb_study_plan_cells(const tb_study_plan *plan);
/* The value index of each axis in cell `cell`. */
void tb_study_plan_cell_values(const tb_study_plan *plan, int cell, int *values);
/* "algorithm=ekfac batch_size=64" (the fixed grid of one cell: "all"). */
void tb_study_plan_cell_label(const tb_study_plan *plan, int cell, char *buf, size_t cap);
/* The tuning of cell `cell` (the last matching override's, else the study's), or NULL. */
const tb_study_tune *tb_study_plan_cell_tune(const tb_study_plan *plan, int cell);
/* The sampler of cell `cell`'s searches: its "sampler" axis value where the plan has that
 * axis, else its tune's (halton for a cell that does not tune). */
tb_study_sampler tb_study_plan_cell_sampler(const tb_study_plan *plan, int cell);
/* Whether cell `cell` tunes with a new search per run: its "search" axis value where the plan
 * has that axis, else its tune's "search" (false for a cell that does not tune). */
bool tb_study_plan_cell_per_run(const tb_study_plan *plan, int cell);
/* The configuration of a tuning trial of cell `cell`: the cell's configuration with the
 * tune's budget as its length, the seeds of index `seeds_index` (0: the base seeds of a search
 * made once; run + 1 for a run's own search) and the hyperparameters of point over the cell's;
 * prepared for the metric. */
tb_status tb_study_plan_trial_config(const tb_study_plan *plan, int cell, int seeds_index,
                                     const tb_hparams *point, tb_run_config *out,
                                     tb_error *err);
/* The training configuration of run `run` (0-based seed index) of cell `cell`: the settings,
 * the cell's axis values, its hyperparameters ("*", then its algorithm's, then the matching
 * overrides in order, then a hyperparameter axis) and seeds; prepared for the metric. */
tb_status tb_study_plan_run_config(const tb_study_plan *plan, int cell, int run,
                                   tb_run_config *out, tb_error *err);

/* ---- running -------------------------------------------------------------------------------- */

/* After each run of the study, and each trial of a tuning search (trial >= 0: its index; -1
 * for a run): done of total, whether it came from the store, its value (NaN if it diverged;
 * err then says why). A trial's value is the metric it is selected by. */
typedef void (*tb_study_progress_fn)(void *user, int done, int total, int cell, int run,
                                     int trial, bool reused, double value, const tb_error *err);

typedef struct tb_study_exec_options {
    tb_backend_config backend;
    const char *data_dir, *cache_dir; /* as tb_run_config's */
    tb_store *store;            /* optional: runs recorded there, and reused from there */
    tb_study_progress_fn progress;
    void *user;
} tb_study_exec_options;

/* One sharpness measurement of a study run (settings.sharpness_every): after step `step`,
 * lambda_1(H), lambda_1(P^-1 H) (= lambda_1(H) where P = 1) and the step's stability threshold
 * (tb_sharpness). */
typedef struct tb_study_sharpness_point {
    int64_t step;
    double lambda_max, pre_max, threshold;
} tb_study_sharpness_point;

typedef struct tb_study_sharpness_curve {
    bool diverged;              /* the run diverged (its measurements up to then kept) */
    int n;
    tb_study_sharpness_point *points; /* n of them, by step; owned */
} tb_study_sharpness_curve;

typedef struct tb_study_values {
    int cells, seeds;
    double *v;                  /* v[cell * seeds + run]: the metric (+inf for a run that
                                   diverged or missed its target); owned */
    int64_t trained, reused;    /* runs trained now, runs read from the store (tuning trials
                                   included) */
    int max_trials;             /* the most trials of any cell's search (0: nothing tuned) */
    double *trial_v;            /* [(cell * seeds + run) * max_trials + t]: the selection metric
                                   of trial t of run `run`'s search (a search made once: run
                                   0's), +inf if it diverged, NaN where there is none; owned */
    tb_hparams *trial_points;   /* [(cell * seeds + run) * max_trials + t]: the point of trial t
                                   of that search (count 0 where there is none); owned */
    tb_hparams *chosen;         /* [cell * seeds + run]: the point its search chose (only the
                                   space's hyperparameters; count 0 where nothing was tuned);
                                   owned */
    double *fresh;              /* [cell * seeds + run]: fresh examples read to the target
                                   (+inf: a miss or a divergence); owned */
    double *delay_s;            /* [cell * seeds + run]: the upstream delay per fresh example
                                   the run trained with (0: none; NaN: a stored run from
                                   before this was recorded); owned */
    tb_study_sharpness_curve *sharpness; /* [cell * seeds + run]: its measurements
                                   (settings.sharpness_every; NULL without); owned */
    double *source_v;           /* the variance figure's runs: [(k * cells + cell) * seeds + i]
                                   for plan->fig_sources[k], run i varying that source alone
                                   (the others at the base seeds); owned */
} tb_study_values;

/* Runs every run of the plan, run index outer and cells inner (a study stopped early has
 * balanced cells). With a store, each run is looked up by its whole configuration first
 * (workload, algorithm, resolved hyperparameters, length, batch size, evaluation, seeds) and
 * trained only if absent; a finished run (done or diverged) is recorded as soon as it ends.
 * Fails with the status of the first run that fails other than by diverging. */
tb_status tb_study_execute(const tb_study_plan *plan, const tb_study_exec_options *opts,
                           tb_study_values *out, tb_error *err);
void tb_study_values_free(tb_study_values *values);

/* ---- the figure ------------------------------------------------------------------------------ */

typedef struct tb_study_cell_row {
    int cell;
    int64_t n, lost;            /* finite values, and runs diverged (or missing the target) */
    tb_summary summary;         /* of the finite values (NaN when n = 0) */
    double center;              /* the median or the mean */
    tb_interval ci;             /* its 95% interval (NaN when it has none) */
} tb_study_cell_row;

typedef struct tb_study_pair_row {
    int comparison;             /* index into plan->comparisons */
    int cell_a, cell_b;
    tb_pab_result pab;          /* P(A better than B), lower metric better */
    double max_rel_gap;         /* max over pairs of |a - b| / max(|a|, |b|) (0 when both are
                                   0; +inf when one side is not finite and the other is) */
    tb_study_outcome outcome;
} tb_study_pair_row;

typedef struct tb_study_figure {
    int n_cells;
    tb_study_cell_row *cells;   /* owned */
    int n_pairs;
    tb_study_pair_row *pairs;   /* owned */
    tb_study_outcome outcome;   /* not reproduced if any check is; else inconclusive if any
                                   is; else reproduced (not judged without checks) */
} tb_study_figure;

/* The table and the comparisons of the values (deterministic: the bootstrap's rng is seeded
 * from the plan's seed). */
tb_status tb_study_figure_compute(const tb_study_plan *plan, const tb_study_values *values,
                                  tb_study_figure *out, tb_error *err);
void tb_study_figure_free(tb_study_figure *figure);

/* ---- the figures beyond the table (figures.c): data first -------------------------------- */

typedef struct tb_study_variance_cell {
    int n_groups;                /* the sources, then "all" (the cell's runs) */
    tb_variance_row rows[TB_STREAM_COUNT + 1];
    int64_t lost[TB_STREAM_COUNT + 1]; /* runs left out: diverged, or a miss */
} tb_study_variance_cell;

typedef struct tb_study_rank_cell {
    double mean_rank;            /* over the runs: 1 the best cell of a run (ties share) */
    int64_t firsts;              /* runs in which the cell ranked first (alone or tied) */
} tb_study_rank_cell;

/* The biased estimator against the ideal one (fig_estimators): a cell with search=once (one
 * search, then k retrains with every source re-drawn: FixHOptEst(k, All)) and its twin with
 * search=per_run (a search per run: IdealEst(k)), the other axes equal. */
typedef struct tb_study_estimator_row {
    int cell_once, cell_ideal;
    int64_t n_once, n_ideal;     /* finite runs of each */
    double mean_once, std_once, mean_ideal, std_ideal;
    tb_interval std_ci_once, std_ci_ideal; /* 95% chi-square intervals (tb_std_interval) */
    double mean_error;           /* mean_once - mean_ideal */
    double std_ratio;            /* std_once / std_ideal (1: the same spread as the ideal) */
    int64_t trainings_once;      /* the plan's: trials + k */
    int64_t trainings_ideal;     /* k (trials + 1) */
    double compute_ratio;        /* trainings_ideal / trainings_once */
    tb_study_outcome outcome;    /* judged ("expect": "close"): reproduced when each std lies in
                                    the other's interval and |mean_error| <= std_ideal; not
                                    reproduced otherwise; inconclusive with < 2 runs a side */
} tb_study_estimator_row;

/* The search-space utility figure (fig_utility; Ariafar et al. 2022): per cell (a candidate
 * space of the "space" axis) and budget b, the score U(S; b) = E[best of b points drawn
 * uniformly from S] under a GP fitted to every cell's first search (run 1's: the pilot
 * searches), and the best value the other runs' searches reached after b trials (their median);
 * per budget the rank correlations of the two over the cells. Arrays [cell * n_budgets + b]. */
typedef struct tb_study_utility_fig {
    int n_budgets;
    int budgets[TB_STUDY_MAX_BUDGETS];
    int fit_points, fit_imputed;  /* the pilot trials the GP was fitted to; of them, diverged
                                     ones kept at the worst */
    int searches;                 /* searches per cell behind `reached` (seeds - 1) */
    double *score, *score_se;     /* E[best of b] and its Monte Carlo standard error; owned */
    double *reached;              /* the median best after b trials; owned */
    double tau[TB_STUDY_MAX_BUDGETS], rho[TB_STUDY_MAX_BUDGETS]; /* Kendall tau-b, Spearman
                                     rho of score against reached (NaN: undefined, e.g. ties) */
    double mean_tau;              /* over the budgets with a tau (NaN: none) */
    tb_study_outcome outcome;     /* min_tau given: reproduced when mean_tau >= it, not
                                     reproduced below, inconclusive when a budget has no tau */
} tb_study_utility_fig;

/* The regret figure (fig_regret; Wang et al., HyperBO): per cell of the "sampler" axis, its
 * regret after b trials, the median over its runs' searches of the best so far minus the best
 * trial its group ever saw (its group: the cells that differ only in the sampler, every sampler
 * and run counted); the target, the regret the group's halton cell reaches after its last
 * trial; the trials each cell needs to reach it; and halton's trials over the cell's. Arrays per
 * cell ([cell * trials + b - 1] for regret). */
typedef struct tb_study_regret_fig {
    int cells;
    int trials;                   /* the values' max_trials */
    double *regret;               /* NaN where there is none; owned */
    double *best_known, *target;  /* owned */
    int *to_target;               /* the first b with regret <= target, 0 never; owned */
    double *ratio;                /* halton's to_target / this cell's (NaN when either never
                                     reaches it); owned */
    tb_study_outcome *outcome;    /* gp_prior cells with min_ratio: reproduced when ratio >=
                                     min_ratio, not reproduced below it or when the cell never
                                     reaches the target, inconclusive without a finite target;
                                     others not judged; owned */
} tb_study_regret_fig;
/* The echoing figure (fig_echoing, echo_figure.c): for each group of cells (the axes other
 * than "echo" and "upstream_slowdown" equal) and each slowdown, the cell without echoing
 * against each echo cell, pairwise over the runs, in time to target and in fresh examples read
 * to it. */
typedef struct tb_study_echo_cell {
    int cell;
    double time, fresh;          /* medians over the runs (+inf when half or more missed) */
    tb_pab_result time_pab;      /* P(it reaches the target sooner than no echoing) */
    tb_pab_result fresh_pab;     /* P(it reads fewer fresh examples to it); n = 0 when a run's
                                    count is unknown (a stored run from before it was kept) */
    tb_pab_result fast_pab;      /* P(sooner than no echoing at the smallest slowdown) */
} tb_study_echo_cell;

typedef struct tb_study_echo_row {
    int group;                   /* the group's first cell */
    double slowdown;             /* the upstream's cost per batch, in step times */
    int cell_base;               /* echo "none" at this slowdown */
    double base_time, base_fresh; /* its medians */
    double delay_s;              /* the median delay per fresh example of its runs */
    int n_echo;
    tb_study_echo_cell echo[TB_STUDY_MAX_VALUES];
    int best;                    /* echo[] index of the lowest median time (-1: every one +inf) */
    bool control;                /* the group's smallest slowdown, at most 1: echoing should
                                    not help there */
    bool compensated;            /* some echo cell's median time here is at most no
                                    echoing's at the smallest slowdown */
    tb_study_outcome outcome;    /* judged ("expect": "helps_when_slow"). A slow row: reproduced
                                    when some echo cell is sooner (a_better) and reads fewer
                                    fresh examples (a_better); not reproduced when every echo
                                    cell is slower or no meaningfully different in time;
                                    inconclusive otherwise. The control: not reproduced when
                                    some echo cell is sooner; reproduced when every one is
                                    slower or no meaningfully different; else inconclusive */
} tb_study_echo_row;

/* The detection rates (fig_detection; Bouthillier et al. 2021): how often each method
 * declares "A better than B" over `resamples` simulated comparisons, each of n runs a side
 * drawn with replacement from recorded runs: single (A's first run better than B's), mean
 * (the mean of A's first k better) and pab (tb_pab_paired at alpha 0.05 on the n pairs: A
 * better, significant with P >= gamma). */
typedef struct tb_study_detection_rates {
    int64_t resamples;
    double single, mean, pab;    /* fractions of the resamples declaring A better */
} tb_study_detection_rates;

typedef struct tb_study_detection_fig {
    int better, worse;           /* the cells, ordered by the median of all their runs */
    double median_better, median_worse; /* the true difference is taken as theirs */
    int64_t n_better, n_worse;   /* finite runs of each */
    tb_study_detection_rates control_better, control_worse; /* A and B both drawn from one
                                    cell: no true difference, each rate a false positive */
    tb_study_detection_rates difference; /* A from better, B from worse: 1 - rate is the
                                    false-negative rate */
    tb_study_outcome outcome;    /* judged (max_fp, max_fn given): reproduced when the P(A>B)
                                    test's false positives on each control are at most max_fp
                                    and its false negatives at most max_fn */
} tb_study_detection_fig;

/* The rates for A drawn from a[0..na) and B from b[0..nb) (finite values, na, nb >= 1; lower
 * better unless higher), seeded by seed: deterministic. TB_ERR_INVALID for a bad argument
 * (named); TB_ERR_NOMEM. */
tb_status tb_study_detection_rates_of(const double *a, int64_t na, const double *b, int64_t nb,
                                      int n, int k, double gamma, int resamples, bool higher,
                                      uint64_t seed, tb_study_detection_rates *out,
                                      tb_error *err);

/* The edge-of-stability figure's row of a cell (fig_stability; Cohen et al. 2022): the
 * ratio of the preconditioned sharpness lambda_1(P^-1 H) (lambda_1(H) for gradient descent) to
 * the stability threshold of the measurement's step, over the last `tail` fraction of each
 * run's measurements (the last ceil(tail m) of its m), every finished run's pooled. */
typedef struct tb_study_stability_row {
    double threshold;            /* the cell's at its learning rate (38/eta for Adam at beta1
                                    0.9, 2/eta for gradient descent) */
    int64_t runs, lost;          /* runs with measurements; runs diverged (left out) */
    int64_t n;                   /* tail measurements with a finite ratio */
    double median, lo, hi;       /* their median ratio and its range (NaN when n = 0) */
    tb_study_outcome outcome;    /* judged ("expect": "at_threshold"): reproduced when
                                    |median - 1| <= tolerance, not reproduced otherwise,
                                    inconclusive when n = 0 */
} tb_study_stability_row;

/* The ratio of measurement p to its threshold (NaN when the threshold is not finite and > 0). */
double tb_study_sharpness_ratio(const tb_study_sharpness_point *p);
/* A cell's row from its runs' curves (curves[0..runs); threshold the cell's): the median over
 * the last tail of each finished run's measurements, judged when tolerance is a number (NaN:
 * not judged). TB_ERR_INVALID for tail outside (0, 1]; TB_ERR_NOMEM. */
tb_status tb_study_stability_row_of(const tb_study_sharpness_curve *curves, int runs,
                                    double threshold, double tail, double tolerance,
                                    tb_study_stability_row *out, tb_error *err);

typedef struct tb_study_figures {
    tb_study_variance_cell *variance; /* per cell (fig_variance), owned */
    tb_study_rank_cell *rank;         /* per cell (fig_rank), owned */
    double *curve;                    /* per cell, max_trials values (fig_curve): the best
                                         selection value so far after each trial (the median
                                         over the runs' searches for per_run; NaN for a cell
                                         that does not tune), owned */
    int n_estimators;
    tb_study_estimator_row *estimators; /* fig_estimators: one per search=once cell, owned */
    tb_study_utility_fig utility;       /* fig_utility */
    tb_study_regret_fig regret;         /* fig_regret */
    int n_echo_rows;
    tb_study_echo_row *echo_rows;     /* fig_echoing: per group, slowdowns in the axis' order,
                                         owned */
    tb_study_detection_fig detection; /* fig_detection */
    int n_stability;
    tb_study_stability_row *stability; /* fig_stability: per cell, owned */
} tb_study_figures;

/* The largest slowdown of group `group`'s rows that echoing compensates (some echo cell's
 * median time there at most no echoing's at the smallest slowdown), 0 when none is. */
double tb_study_echo_compensated(const tb_study_figures *f, int group);
/* The echoing figure's rows into f (figures.c calls it when the plan asks). */
tb_status tb_study_echo_figure(const tb_study_plan *plan, const tb_study_values *values,
                               tb_study_figures *f, tb_error *err);

/* The study's outcome over its checks: the figure's paired comparisons, the judged
 * estimator rows, the judged echoing rows, a judged utility figure and the judged cells of a
 * regret figure (not reproduced if any is; else inconclusive if any is; else reproduced; not
 * judged without checks); *judged and *reproduced (either may be NULL) count the checks. */
tb_study_outcome tb_study_outcome_of(const tb_study_figure *figure,
                                     const tb_study_figures *figures, int *judged,
                                     int *reproduced);

/* The figures the plan asks for, from its values. */
tb_status tb_study_figures_compute(const tb_study_plan *plan, const tb_study_values *values,
                                   tb_study_figures *out, tb_error *err);
void tb_study_figures_free(tb_study_figures *f);

/* ---- the store's study runs (src/store/study_store.c) ---------------------------------------- */

typedef struct tb_study_run_record {
    char study[64];
    char key[2048];             /* the run's whole configuration (tb_study_execute) */
    bool diverged;
    char reason[TB_ERROR_MESSAGE_MAX];
    tb_train_result result;     /* steps, train_time_s, validation, test, time_to_target_s,
                                   reached_target, examples, steps_to_target,
                                   fresh_to_target (the rest zero) */
    double upstream_delay_s;    /* the stated upstream cost per fresh example it ran with (0:
                                   none; NaN: a run recorded before the store kept it) */
} tb_study_run_record;

/* Records a finished run (replacing one with the same key) made by code_version (the
 * caller's tb_code_version, as tb_store_trial_start takes it). */
tb_status tb_store_put_study_run(tb_store *store, const tb_study_run_record *r,
                                 const char *code_version, tb_error *err);
/* Looks a run up by key: *found false when the store does not hold it. */
tb_status tb_store_get_study_run(tb_store *store, const char *key, tb_study_run_record *out,
                                 bool *found, tb_error *err);

/* The sharpness measurements of the run with this key (src/store/study_sharpness.c), in
 * their own table (study_sharpness: key, step, the three values), replacing any the key had;
 * recorded before the run itself, so a stored run's measurements are there. */
tb_status tb_store_put_study_sharpness(tb_store *store, const char *key,
                                       const tb_study_sharpness_curve *c, tb_error *err);
/* Reads them back by step into *out (its points malloc'ed; n = 0 and NULL for none). */
tb_status tb_store_get_study_sharpness(tb_store *store, const char *key,
                                       tb_study_sharpness_curve *out, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

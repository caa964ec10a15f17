/* bench_impl.h: internals shared by the benchmark's files (not public): seed mixing, and the
 * gp sampler's steps that planning and execution call. */
#ifndef TRAINBENCH_BENCH_IMPL_H
#define TRAINBENCH_BENCH_IMPL_H

#include "trainbench/benchmark.h"
#include "trainbench/optim.h"
#include "trainbench/submission.h"
#include "trainbench/tune.h"

/* splitmix64's finaliser, and FNV-1a of a text: the benchmark's seed derivations. */
uint64_t tb_bench_mix(uint64_t x);
uint64_t tb_bench_hash(const char *text);
/* The seed of the Halton points of a benchmark's studies (every submission's). */
uint64_t tb_bench_points_seed(const tb_bench_spec *s);

/* Halton points per study before the gp sampler's first BO point. */
int tb_bench_gp_initial(const tb_bench_spec *s);
/* Checks that the gp sampler can tune from space (a space of ranges with a dimension that
 * varies), naming the submission. */
tb_status tb_bench_gp_check(const tb_search_space *space, const char *submission,
                            tb_error *err);
/* With s->gp_prior: pre-trains the prior of submission on workload from the store's other
 * workloads and records it, unless the store holds it already. TB_ERR_MISSING when there is
 * nothing to pre-train on. */
tb_status tb_bench_gp_prior(tb_store *store, const tb_bench_spec *s, const char *submission,
                            const tb_search_space *space, const char *workload, tb_error *err);
/* Chooses the point of trial t (planned without one), records it in the store and in t. */
tb_status tb_bench_gp_point(tb_store *store, const tb_bench_spec *s,
                            const tb_search_space *space, tb_trial_record *t, tb_error *err);

/* One value of a built-in's search-space dimension against what its baseline accepts: its
 * own names (the schedule's, the workload's dropout_rate and label_smoothing, batch_size:
 * baseline_hparams.c), one of its optimizer's hyperparameters, or one_minus_beta1 as
 * 1 - beta1 (or 1 - momentum); TB_ERR_INVALID naming source and the dimension, and for an
 * unknown name the accepted ones. */
tb_status tb_bench_check_dimension(const tb_optimizer_info *info, const char *source,
                                   const char *name, double value, tb_error *err);
/* Every dimension of a parsed space of ranges (its ends and feasible points) the same way. */
tb_status tb_bench_space_check(const tb_optimizer_info *info, const tb_search_space *space,
                               const char *source, tb_error *err);

/* The parsed search space of submission ref under external tuning, checked (a built-in's
 * against its baseline: tb_bench_check_dimension); the caller destroys it. */
tb_status tb_bench_load_space(const tb_bench_spec *s, const tb_submission_ref *ref,
                              tb_search_space **space, tb_error *err);
/* The points of ref's trials under s, study-major, *trials per study (the caller frees
 * *points and destroys *space, the parsed search space, NULL under self-tuning): Halton points
 * of a space of ranges; of a list, min(points, s->trials) per study, every study the list's
 * first ones in file order, with a note (note_cap bytes) when fewer than s->trials; empty
 * points (1 per study) under self-tuning. */
tb_status tb_bench_plan_points(const tb_bench_spec *s, const tb_submission_ref *ref,
                               tb_hparams **points, int *trials, tb_search_space **space,
                               char *note, size_t note_cap, tb_error *err);

/* The name one_minus_beta1 stands for in info's baseline: one_minus_beta1 itself (nadamw),
 * beta1, momentum, or NULL when the optimizer has neither. */
const char *tb_baseline_one_minus_beta1_target(const tb_optimizer_info *info);

/* What a built-in baseline runs with for a point: its optimizer's hyperparameters (the point's
 * other names, one_minus_beta1 turned into beta1 or momentum) and its schedule over the step
 * hint (baseline_hparams.c says which). */
typedef struct tb_baseline_config {
    tb_hparams opt;
    tb_schedule schedule;
    double warmup_fraction; /* in effect: the point's, or warmup_steps / step hint */
} tb_baseline_config;

/* Fills out from point for optimizer over step_hint steps; TB_ERR_INVALID naming the value
 * when the optimizer refuses one (one_minus_beta1 named with what it makes), two names of
 * one value disagree, or a schedule's value is out of range. */
tb_status tb_baseline_config_make(const char *optimizer, const tb_hparams *point,
                                  int64_t step_hint, tb_baseline_config *out, tb_error *err);

/* The order to run n trials in (order: a permutation of 0..n-1): interleaved by workload (the
 * order of wls), study, trial, then one of each submission (the order of subs, reversed every
 * other round); order.c says why. */
tb_status tb_bench_interleave(const tb_trial_record *trials, int n, const char *const *wls,
                              int n_wl, const char *const *subs, int n_subs, int *order,
                              tb_error *err);

/* Whether tb_bench_calibrate_due may take a window before trial t (conservative: true when
 * it would ask the store): an executor running trials side by side lets them end first, so
 * that a window never shares the machine with a trial. */
bool tb_bench_calibrate_may_run(const tb_bench_calibration_state *state,
                                const tb_bench_spec *spec, const tb_trial_record *t,
                                bool will_run);

/* What the executor runs: the planned trials in their order, the submissions loaded and, for
 * the gp sampler, their search spaces (spaces[j] for refs[j]; NULL otherwise). */
typedef struct tb_bench_plan {
    const char *store_path;
    const tb_bench_spec *spec;
    tb_trial_record *trials;
    int n;
    const int *order;                      /* a permutation of 0..n-1 (tb_bench_interleave) */
    tb_submission_ref *const *refs;
    tb_search_space *const *spaces;
    int n_refs;
} tb_bench_plan;

/* Runs every unfinished trial of the plan, spec->trial.jobs of them at once (execute.c),
 * reusing finished ones, reporting each to progress (may be NULL) and counting into sum. */
tb_status tb_bench_execute(const tb_bench_plan *plan, tb_bench_progress_fn progress, void *user,
                           tb_bench_summary *sum, tb_error *err);
/* Whether every trial of t's study before t has finished (execute.c). */
bool tb_bench_study_settled(const tb_trial_record *trials, int n, const tb_trial_record *t);

/* ---- shards (shard.c, merge.c) ----
 * The unit (unit[k], for position k of order) each planned trial belongs to: numbered in
 * the order, a unit per trial, or per study under the gp sampler (its trials depend on each
 * other); unit u is shard u mod shards'. */
void tb_bench_shard_units(const tb_bench_spec *s, const tb_trial_record *trials, int n,
                          const int *order, int *unit);
/* With s->shards > 1: keeps in *trials (reallocated) only the shard's share, in the order,
 * and makes order (n entries) the identity over them; appends a line saying so to note. */
tb_status tb_bench_shard_take(const tb_bench_spec *s, tb_trial_record **trials, int *n,
                              int *order, char *note, size_t note_cap, tb_error *err);
/* Holds the lock of benchmark `name` of the store at store_path (*fd: close it to release):
 * TB_ERR_IO naming the process that holds it (benchmark.c). */
tb_status tb_bench_lock(const char *store_path, const char *name, int *fd, tb_error *err);

#endif

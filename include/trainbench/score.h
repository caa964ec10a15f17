/* score.h: AlgoPerf's scoring (docs/MATH.md section 1): time to target per trial, the fastest
 * trial of each study (by time), the median over studies per workload (a miss counts as
 * infinite), performance ratios capped at tau_max = 4, performance profiles, the benchmark
 * score in its exact closed form, the geometric-mean speedup over a reference submission, and
 * optionally the variant rule (a workload counts only if its held-out variant is reached too). */
#ifndef TRAINBENCH_SCORE_H
#define TRAINBENCH_SCORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trainbench/status.h"
#include "trainbench/store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_SCORE_TAU_MAX 4.0

/* The median of x[0..n) (n >= 1; INFINITY entries allowed: a miss); for even n the mean of
 * the two middle values (infinite if either is). NAN if n < 1. x is not modified. */
double tb_score_median(const double *x, int n);

/* Scores n_subs submissions on n_wl workloads from their workload times (times[s*n_wl + w],
 * seconds to target, INFINITY for a miss). variant_of (NULL: no variant rule) gives for each
 * workload the index of the base workload it is the held-out variant of, or -1: with it, a
 * variant only gates its base (the base's time counts only if the submission reached the
 * variant within tau_max of the fastest variant time among submissions that passed the base)
 * and is not itself counted. Writes ratios[s*n_wl + w] (INFINITY above tau_max or for a
 * miss) and scores[s] = sum_w max(0, tau_max - r)/(n (tau_max - 1)) over counted workloads.
 * Fails with TB_ERR_INVALID for bad sizes, tau_max <= 1 or a bad variant index. */
tb_status tb_score_compute(int n_subs, int n_wl, const double *times, const int *variant_of,
                           double tau_max, double *ratios, double *scores, tb_error *err);
/* rho(tau): the share of counted workloads (counted NULL: all) with ratio <= tau. */
double tb_score_profile(const double *ratios, const bool *counted, int n_wl, double tau);
/* Geometric mean over workloads of t_ref / t_sub, a miss counted as budget + 1 s
 * (budgets[w]). */
double tb_score_speedup(const double *t_ref, const double *t_sub, const double *budgets,
                        int n_wl);

/* ---- time bases (docs/TIME_TO_RESULT.md "Time bases") -------------------------------------
 * wall: AlgoPerf's accumulated submission seconds (the default); reference: the trial's steps
 * priced at its workload's reference step time (tb_calibration_reference_step_s: the median
 * of the store's calibration windows of the benchmark's reference step); steps: the steps at
 * the target (tb_trial_steps_to_target). */
typedef enum tb_time_basis {
    TB_TIME_WALL = 0,
    TB_TIME_REFERENCE = 1,
    TB_TIME_STEPS = 2,
} tb_time_basis;

const char *tb_time_basis_name(tb_time_basis basis);
/* "wall", "reference" or "steps"; anything else TB_ERR_INVALID naming the three. */
tb_status tb_time_basis_parse(const char *name, tb_time_basis *out, tb_error *err);

/* ---- a score table from a results store ----------------------------------------------------- */
typedef struct tb_score_options {
    const char *benchmark; /* required */
    const char *reference; /* submission for speedups (one of the benchmark's); NULL: the
                              first submission */
    bool variant_rule;
    double tau_max;        /* 0: TB_SCORE_TAU_MAX */
    tb_time_basis basis;   /* the time a trial's time to target is in (default wall) */
} tb_score_options;

typedef struct tb_score_table {
    char benchmark[64];
    char ruleset[32];
    int n_subs, n_wl;
    char (*subs)[128];
    char (*wls)[64];
    tb_time_basis basis;
    double *budgets;        /* [n_wl], in the basis: seconds, or for steps the most steps any
                               trial of the workload ran */
    double *reference_step_s; /* [n_wl] the reference step time (NaN unless basis reference) */
    /* [s * n_wl + w] */
    double *time;           /* median over studies of each study's fastest time to target */
    int *studies;           /* studies planned */
    int *studies_reached;   /* studies whose fastest trial reached the target */
    int *trials, *trials_failed, *trials_unfinished;
    int *trials_contended;  /* finished trials flagged contended (tb_trial_record.contended) */
    double *ratio;
    bool *disqualified;     /* a reached base time the variant rule voids (scored as a miss) */
    /* [w] */
    bool *counted;          /* in the score, profile and speedup: every workload, or with the
                               variant rule every one but the held-out variants */
    /* [s] */
    double *score;
    double *speedup;        /* over the reference, on the counted workloads (a miss or a
                               disqualified time as budget + 1 s) */
    char reference[128];
    double tau_max;
    bool variant_rule;
} tb_score_table;

/* Builds the score table of one benchmark in store, in options->basis: the score, the profile
 * (JSON) and the speedup all count the same workloads (`counted`). The reference basis fails
 * with TB_ERR_MISSING naming a workload that has no calibration window. Free with tb_score_table_destroy. Fails
 * with TB_ERR_INVALID naming the benchmark if the store has no trials of it, and naming the
 * reference and listing the benchmark's submissions if the reference is not one of them. */
tb_status tb_score_store(tb_store *store, const tb_score_options *options,
                         tb_score_table **out, tb_error *err);
void tb_score_table_destroy(tb_score_table *table);
/* rho(tau) of submission s of the table: tb_score_profile over its row of ratios and the
 * counted workloads. */
double tb_score_table_profile(const tb_score_table *table, int s, double tau);
/* Writes the table for a terminal (aligned columns) or as one JSON object. */
void tb_score_table_write_text(const tb_score_table *table, FILE *f);
void tb_score_table_write_json(const tb_score_table *table, FILE *f);

#ifdef __cplusplus
}
#endif
#endif

/* stats.h: statistics for honest comparisons of training algorithms.
 *
 * Summaries of a sample (mean, std, quartiles) with percentile-bootstrap intervals; the
 * probability of outperforming P(A>B) from paired runs with its bootstrap interval and the
 * decision rule of Bouthillier et al. ("Accounting for Variance in Machine Learning
 * Benchmarks", MLSys 2021); Noether's sample size; the standard normal CDF and quantile; and a
 * variance decomposition by source of variation. docs/STATISTICS.md explains each estimator.
 *
 * Conventions: every random draw comes from a tb_rng the caller passes in (no global state),
 * so a result is reproduced from its seed. Quantiles are Hyndman-Fan type 7 (linear
 * interpolation between order statistics, R's and NumPy's default). Functions that can fail
 * return a tb_status and name the bad value in err; nothing prints. */
#ifndef TRAINBENCH_STATS_H
#define TRAINBENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/rng.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the standard normal distribution ------------------------------------------------------ */

/* Phi(x) = P(Z <= x) for Z ~ N(0, 1), computed as erfc(-x / sqrt 2) / 2 (accurate in both
 * tails). NaN gives NaN. */
double tb_normal_cdf(double x);

/* Phi^-1(p): the x with Phi(x) = p. An Abramowitz-Stegun 26.2.23 starting point refined by
 * Halley steps on tb_normal_cdf, to a relative error near machine precision for p in
 * [1e-300, 1 - 1e-16]. Returns -inf for p = 0, +inf for p = 1 and NaN for p outside [0, 1] or
 * NaN (use tb_normal_quantile_checked for an error message instead). */
double tb_normal_quantile(double p);

/* As tb_normal_quantile, but p must lie in (0, 1): otherwise TB_ERR_INVALID naming p. */
tb_status tb_normal_quantile_checked(double p, double *out, tb_error *err);

/* ---- quantiles and summaries --------------------------------------------------------------- */

/* A closed interval [lo, hi]. */
typedef struct tb_interval {
    double lo, hi;
} tb_interval;

/* The type-7 quantile of an ascending sorted[0..n), n >= 1, p in [0, 1]: with h = (n-1) p,
 * sorted[floor h] + (h - floor h)(sorted[floor h + 1] - sorted[floor h]). No checks (the
 * caller guarantees sortedness and ranges); never fails. */
double tb_quantile_sorted(const double *sorted, int64_t n, double p);

/* The type-7 quantile of x[0..n) (any order; x is not modified). Fails with TB_ERR_INVALID for
 * n < 1, a NaN or infinite value (named by index), or p outside [0, 1]; TB_ERR_NOMEM if the
 * sorted copy cannot be allocated. */
tb_status tb_quantile(const double *x, int64_t n, double p, double *out, tb_error *err);

/* The statistic a bootstrap interval is computed for. */
typedef enum tb_statistic {
    TB_STAT_MEAN = 0,
    TB_STAT_MEDIAN = 1,
    TB_STAT_STD = 2, /* sample standard deviation, n - 1 denominator (needs n >= 2) */
} tb_statistic;

/* Percentile-bootstrap settings: `resamples` (K) samples of size n drawn with replacement;
 * the interval is the type-7 alpha/2 and 1 - alpha/2 quantiles of the K statistics. */
typedef struct tb_bootstrap_options {
    int resamples; /* K, at least 100; 1000 or more recommended (the default) */
    double alpha;  /* in (0, 1): 0.05 gives a 95% interval */
} tb_bootstrap_options;

/* K = 1000, alpha = 0.05. */
tb_bootstrap_options tb_bootstrap_options_default(void);

/* The percentile-bootstrap interval of `stat` over x[0..n). Draws K * n indices from rng
 * (advancing it). Fails with TB_ERR_INVALID for n < 1 (n < 2 for TB_STAT_STD), a non-finite
 * value, resamples < 100 or alpha outside (0, 1); TB_ERR_NOMEM on allocation failure. */
tb_status tb_bootstrap_ci(const double *x, int64_t n, tb_statistic stat,
                          const tb_bootstrap_options *opts, tb_rng *rng, tb_interval *ci,
                          tb_error *err);

/* What tb_summarize reports. std uses n - 1 (0 when n = 1); sem = std / sqrt(n); quartiles
 * are type 7; iqr = q3 - q1. The intervals are NaN unless bootstrap options were given. */
typedef struct tb_summary {
    int64_t n;
    double mean, std, sem;
    double min, q1, median, q3, max, iqr;
    tb_interval mean_ci, median_ci;
} tb_summary;

/* Summarises x[0..n), n >= 1, all finite. With boot non-NULL also the percentile-bootstrap
 * intervals of the mean and the median (rng must then be non-NULL and is advanced); with boot
 * NULL, rng may be NULL and the intervals are NaN. Errors as tb_bootstrap_ci. */
tb_status tb_summarize(const double *x, int64_t n, const tb_bootstrap_options *boot, tb_rng *rng,
                       tb_summary *out, tb_error *err);

/* ---- P(A > B): the probability of outperforming -------------------------------------------- */

typedef enum tb_direction {
    TB_HIGHER_IS_BETTER = 0, /* accuracy, score */
    TB_LOWER_IS_BETTER = 1,  /* loss, error rate, time to target (+inf = never reached) */
} tb_direction;

typedef enum tb_ties {
    TB_TIES_HALF = 0,   /* a tie counts 1/2 (Mann-Whitney); all tied gives exactly 0.5 */
    TB_TIES_STRICT = 1, /* a tie counts 0, as the paper's strict 1[a > b]; biased toward B */
} tb_ties;

typedef enum tb_verdict {
    TB_VERDICT_NOT_SIGNIFICANT = 0,      /* the interval contains 0.5: need more runs */
    TB_VERDICT_NO_MEANINGFUL_DIFFERENCE, /* significant, but within [1 - gamma, gamma] */
    TB_VERDICT_A_BETTER,                 /* CI_min > 0.5 and CI_max > gamma */
    TB_VERDICT_B_BETTER,                 /* CI_max < 0.5 and CI_min < 1 - gamma */
} tb_verdict;

/* Stable short name of a verdict ("a_better", "b_better", "no_meaningful_difference",
 * "not_significant"); never NULL. */
const char *tb_verdict_name(tb_verdict verdict);

typedef struct tb_pab_options {
    tb_direction direction;
    tb_ties ties;
    int resamples; /* K bootstrap resamples of the N pairs, at least 100; default 1000 */
    double alpha;  /* interval level 1 - alpha and test size, in (0, 1); default 0.05 */
    double beta;   /* 1 - power, for the Noether sample size advice, in (0, 1); default 0.05 */
    double gamma;  /* the smallest meaningful P(A>B), in (0.5, 1); default 0.75 */
} tb_pab_options;

/* Higher is better, ties as 1/2, K = 1000, alpha = beta = 0.05, gamma = 0.75. */
tb_pab_options tb_pab_options_default(void);

typedef struct tb_pab_result {
    int64_t n;                  /* pairs compared */
    int64_t wins, ties, losses; /* pairs where A was better, equal, worse */
    double p;                   /* the estimate p_hat = (wins + ties/2) / n (or wins / n) */
    tb_interval ci;             /* percentile bootstrap interval at level 1 - alpha */
    tb_verdict verdict;         /* tb_pab_decide(ci, gamma) */
    int64_t runs_needed;        /* Noether's N for (alpha, beta, gamma) */
    int64_t more_runs;          /* max(0, runs_needed - n) */
    double alpha, beta, gamma;  /* as used */
} tb_pab_result;

/* The point estimate only: p_hat over the pairs (a[i], b[i]), i < n, with counts (any of
 * wins/ties/losses may be NULL). Values may be +-inf (ordered as usual; equal infinities tie)
 * but not NaN. Fails with TB_ERR_INVALID for n < 1, a NaN (named by side and index), or an
 * unknown direction or tie rule. */
tb_status tb_pab_estimate(const double *a, const double *b, int64_t n, tb_direction direction,
                          tb_ties ties, double *p, int64_t *wins, int64_t *n_ties, int64_t *losses,
                          tb_error *err);

/* P(A>B) from paired results: a[i] and b[i] come from runs that share every seed (split,
 * init, data order, ...). Computes p_hat, resamples the n pairs with replacement K times
 * (drawing K * n indices from rng) for the percentile interval, applies the decision rule and
 * Noether's formula. Fails with TB_ERR_INVALID for the reasons of tb_pab_estimate or an
 * option out of range (named); TB_ERR_NOMEM on allocation failure. */
tb_status tb_pab_paired(const double *a, const double *b, int64_t n, const tb_pab_options *opts,
                        tb_rng *rng, tb_pab_result *out, tb_error *err);

/* P(A>B) from unpaired results (runs that share no seeds): both samples are shuffled with rng
 * and the first m = min(na, nb) of each are paired (the extra runs of the larger sample are
 * left out, so the result depends on the rng), then as tb_pab_paired with the same rng.
 * Errors as tb_pab_paired (na, nb >= 1). */
tb_status tb_pab_unpaired(const double *a, int64_t na, const double *b, int64_t nb,
                          const tb_pab_options *opts, tb_rng *rng, tb_pab_result *out,
                          tb_error *err);

/* The decision rule (Bouthillier et al. 2021, appendix C), in this order:
 *   CI_min > 0.5:  CI_max > gamma      -> A better,  else no meaningful difference;
 *   CI_max < 0.5:  CI_min < 1 - gamma  -> B better,  else no meaningful difference;
 *   otherwise (0.5 inside the interval) -> not significant.
 * Pure function; ci and gamma are not validated. */
tb_verdict tb_pab_decide(tb_interval ci, double gamma);

/* Writes one human sentence about r into buf (at most cap bytes, always NUL-terminated when
 * cap > 0), e.g. "adamw better than sgd: P(A>B) = 0.83, 95% CI [0.71, 0.93], 30 pairs" or
 * "not significant: need about 19 more runs (29 in all, Noether) ...". name_a / name_b may be
 * NULL ("A", "B"). Returns the length the full sentence needs (as snprintf). */
int tb_pab_describe(const tb_pab_result *r, const char *name_a, const char *name_b, char *buf,
                    size_t cap);

/* Noether's sample size for the one-sided test of P(A>B) = 0.5 against P(A>B) = gamma:
 * N = ceil((Phi^-1(1 - alpha) + Phi^-1(1 - beta))^2 / (6 (gamma - 1/2)^2)); 29 for
 * alpha = beta = 0.05, gamma = 0.75. Fails with TB_ERR_INVALID naming alpha or beta outside
 * (0, 1) or gamma outside (0.5, 1). */
tb_status tb_noether_sample_size(double alpha, double beta, double gamma, int64_t *n,
                                 tb_error *err);

/* ---- variance by source of variation ------------------------------------------------------- */

/* Results of runs where only the named source of variation changed between runs (the others
 * kept their seeds), e.g. "init", "data_order", "split", "dropout", "augment", or "all" where
 * every source changed. values is borrowed, not copied. */
typedef struct tb_variation_group {
    const char *name;
    const double *values;
    int64_t n; /* at least 2 */
} tb_variation_group;

typedef struct tb_variance_row {
    const char *name; /* borrowed from the group */
    int64_t n;
    double mean, std;   /* sample mean and std (n - 1) */
    tb_interval std_ci; /* percentile bootstrap interval of std */
    double std_share;   /* std / std of the reference group ("all"); NaN without one */
    double var_share;   /* variance / variance of the reference group; NaN without one */
} tb_variance_row;

/* One row per group (out[0..n_groups), caller-allocated), each with its std, bootstrap
 * interval (groups in order, one rng) and share relative to the group named `reference`
 * (NULL means "all"); if no group has that name the shares are NaN. Fails with TB_ERR_INVALID
 * for n_groups < 1, a group with a NULL name, n < 2 or a non-finite value (named by group and
 * index), or bad bootstrap options. */
tb_status tb_variance_decompose(const tb_variation_group *groups, int n_groups,
                                const char *reference, const tb_bootstrap_options *boot,
                                tb_rng *rng, tb_variance_row *out, tb_error *err);

/* A gap between two algorithms measured against one source's std. */
typedef struct tb_gap_row {
    const char *name; /* the source, borrowed from the variance row */
    double std;       /* that source's std */
    double ratio;     /* |gap| / std (inf when std = 0 and gap != 0, 0 when both are 0) */
    double implied_p; /* Phi(|gap| / (std sqrt 2)): P(better > worse) if both algorithms had
                       * Gaussian scores with this std */
} tb_gap_row;

/* gap = mean(a) - mean(b) over a[0..na), b[0..nb) (finite, na, nb >= 1), written to *gap, and
 * for each of rows[0..n_rows) the ratio of |gap| to that source's std (out[0..n_rows),
 * caller-allocated). A gap below one std of a source is within that source's noise. Fails with
 * TB_ERR_INVALID for empty or non-finite inputs. */
tb_status tb_gap_versus_sources(const double *a, int64_t na, const double *b, int64_t nb,
                                const tb_variance_row *rows, int n_rows, double *gap,
                                tb_gap_row *out, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif

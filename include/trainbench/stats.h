/* stats.h: statistics for honest comparisons of training algorithms.
 *
 * Summaries of a sample (mean, std, quartiles) with intervals (Student t for the mean,
 * chi-square for the std, percentile bootstrap for the median); the probability of
 * outperforming P(A>B) from paired runs with its exact (Clopper-Pearson) interval and the
 * decision rule of Bouthillier et al. ("Accounting for Variance in Machine Learning
 * Benchmarks", MLSys 2021); the number of pairs the exact sign test needs; the standard normal
 * CDF and quantile; and a variance decomposition by source of variation. docs/STATISTICS.md
 * explains each estimator.
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

/* Sorts x[0..n) ascending (infinities at the ends; a NaN has no defined place). */
void tb_stats_sort(double *x, int64_t n);

/* The type-7 quantile of an ascending sorted[0..n), n >= 1, p in [0, 1]: with h = (n-1) p
 * and f = h - floor h, (1 - f) sorted[floor h] + f sorted[floor h + 1] (in this form, which
 * does not overflow for finite values; between the two, equal to them when they are equal).
 * No checks (the caller guarantees sortedness and ranges); never fails. */
double tb_quantile_sorted(const double *sorted, int64_t n, double p);

/* The type-7 quantile of x[0..n) (any order; x is not modified). Fails with TB_ERR_INVALID for
 * n < 1, a NaN or infinite value (named by index), or p outside [0, 1]; TB_ERR_NOMEM if the
 * sorted copy cannot be allocated. */
tb_status tb_quantile(const double *x, int64_t n, double p, double *out, tb_error *err);

/* The statistic a bootstrap interval is computed for. (There is no bootstrap of the std: it
 * shrinks the spread of small samples and covers far less than it claims; tb_std_interval is
 * the interval for a std.) */
typedef enum tb_statistic {
    TB_STAT_MEAN = 0,
    TB_STAT_MEDIAN = 1,
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
 * (advancing it). Fails with TB_ERR_INVALID for n < 1, an unknown statistic, a non-finite
 * value, resamples < 100 or alpha outside (0, 1); TB_ERR_NOMEM on allocation failure. */
tb_status tb_bootstrap_ci(const double *x, int64_t n, tb_statistic stat,
                          const tb_bootstrap_options *opts, tb_rng *rng, tb_interval *ci,
                          tb_error *err);

/* The smallest test size (alpha) the intervals, P(A>B) and the runs needed accept: below it
 * 1 - alpha/2 rounds in a double and the quantiles lose their accuracy. */
#define TB_STATS_ALPHA_MIN 1e-10

/* The Student-t interval of the mean of x[0..n), n >= 2, at level 1 - alpha:
 * mean -+ t_{1-alpha/2, n-1} std / sqrt(n). Exact when the values are a normal sample; an
 * approximation otherwise. Fails with TB_ERR_INVALID for n < 2, a non-finite value or alpha
 * outside [TB_STATS_ALPHA_MIN, 1). */
tb_status tb_mean_interval(const double *x, int64_t n, double alpha, tb_interval *ci,
                           tb_error *err);

/* The chi-square interval of the standard deviation of x[0..n), n >= 2, at level 1 - alpha:
 * [s sqrt((n-1) / chi2_{1-alpha/2, n-1}), s sqrt((n-1) / chi2_{alpha/2, n-1})] with s the
 * sample std (n - 1). Exact when the values are a normal sample (it is not robust to heavy
 * tails). Fails as tb_mean_interval. */
tb_status tb_std_interval(const double *x, int64_t n, double alpha, tb_interval *ci,
                          tb_error *err);

/* What tb_summarize reports. std uses n - 1 (0 when n = 1); sem = std / sqrt(n); quartiles
 * are type 7; iqr = q3 - q1. The intervals are NaN unless bootstrap options were given (and
 * the mean's also when n = 1). */
typedef struct tb_summary {
    int64_t n;
    double mean, std, sem;
    double min, q1, median, q3, max, iqr;
    tb_interval mean_ci, median_ci;
} tb_summary;

/* Summarises x[0..n), n >= 1, all finite. With boot non-NULL also intervals at level
 * 1 - boot->alpha: the mean's by Student t (tb_mean_interval; assumes normality, no
 * resampling) and the median's by percentile bootstrap (rng must then be non-NULL and is
 * advanced); with boot NULL, rng may be NULL and the intervals are NaN. Errors as
 * tb_bootstrap_ci. */
tb_status tb_summarize(const double *x, int64_t n, const tb_bootstrap_options *boot, tb_rng *rng,
                       tb_summary *out, tb_error *err);
/* tb_summarize of the finite values among x[0..n) (n >= 0; out->n says how many): diverged or
 * missing runs left out. With none, every statistic and interval is NaN and out->n is 0. */
tb_status tb_summarize_finite(const double *x, int64_t n, const tb_bootstrap_options *boot,
                              tb_rng *rng, tb_summary *out, tb_error *err);

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
    TB_VERDICT_B_BETTER,                 /* CI_max < 0.5 and 1 - CI_min > gamma */
} tb_verdict;

/* Stable short name of a verdict ("a_better", "b_better", "no_meaningful_difference",
 * "not_significant"); never NULL. */
const char *tb_verdict_name(tb_verdict verdict);

typedef struct tb_pab_options {
    tb_direction direction;
    tb_ties ties;
    double alpha; /* interval level 1 - alpha and two-sided test size, in (0, 1); default 0.05 */
    double beta;  /* 1 - power, for the runs-needed advice, in (0, 1); default 0.05 */
    double gamma; /* the smallest meaningful P(A>B), in (0.5, 1); default 0.75 */
} tb_pab_options;

/* Higher is better, ties as 1/2, alpha = beta = 0.05, gamma = 0.75. */
tb_pab_options tb_pab_options_default(void);

typedef struct tb_pab_result {
    int64_t n;                  /* pairs compared */
    int64_t wins, ties, losses; /* pairs where A was better, equal, worse */
    double p;                   /* the estimate p_hat = (wins + ties/2) / n (or wins / n) */
    tb_interval ci;             /* exact (Clopper-Pearson) interval at level 1 - alpha */
    tb_verdict verdict;         /* tb_pab_decide(ci, gamma); not significant when every
                                   pair tied */
    int64_t runs_needed;        /* tb_sign_test_sample_size(alpha, beta, gamma) */
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
 * init, data order, ...). Computes p_hat and the exact Clopper-Pearson interval at level
 * 1 - alpha for x = wins + ties/2 (ties count 0 under TB_TIES_STRICT) out of n:
 * [BetaInv(alpha/2; x, n-x+1), BetaInv(1-alpha/2; x+1, n-x)] (0 for x = 0, 1 for x = n). Its
 * excluding 0.5 is the exact two-sided sign test at size alpha: with every pair a win, 5
 * pairs are never significant at alpha = 0.05 and 6 are. Then applies the decision rule and
 * tb_sign_test_sample_size; when every pair tied the verdict is not significant whatever the
 * interval (tied pairs carry no information: under TB_TIES_STRICT identical results would
 * otherwise be "B better"). Deterministic (no resampling). Fails with TB_ERR_INVALID for the
 * reasons of tb_pab_estimate or an option out of range (named). */
tb_status tb_pab_paired(const double *a, const double *b, int64_t n, const tb_pab_options *opts,
                        tb_pab_result *out, tb_error *err);

/* P(A>B) from unpaired results (runs that share no seeds): both samples are shuffled with rng
 * and the first m = min(na, nb) of each are paired (the extra runs of the larger sample are
 * left out, so the result depends on the rng), then as tb_pab_paired. Errors as
 * tb_pab_paired (na, nb >= 1, rng non-NULL); TB_ERR_NOMEM on allocation failure. */
tb_status tb_pab_unpaired(const double *a, int64_t na, const double *b, int64_t nb,
                          const tb_pab_options *opts, tb_rng *rng, tb_pab_result *out,
                          tb_error *err);

/* The decision rule (Bouthillier et al. 2021, appendix C), in this order:
 *   CI_min > 0.5:  CI_max > gamma      -> A better,  else no meaningful difference;
 *   CI_max < 0.5:  1 - CI_min > gamma  -> B better,  else no meaningful difference;
 *   otherwise (0.5 inside the interval) -> not significant.
 * B's test is written 1 - CI_min > gamma (not CI_min < 1 - gamma, which rounds: 1 - 0.7 is
 * 0.30000000000000004), so the interval [1 - hi, 1 - lo] of the swapped comparison gets the
 * swapped verdict. Pure function; ci and gamma are not validated. */
tb_verdict tb_pab_decide(tb_interval ci, double gamma);

/* Writes one human sentence about r into buf (at most cap bytes, always NUL-terminated when
 * cap > 0; buf NULL: nothing written; r NULL: an empty sentence), e.g. "adamw better than sgd: P(A>B) = 0.833, 95% CI [0.653, 0.944], 30 pairs",
 * "not significant: need about 39 more pairs (49 in all ...) ..." or, when every pair tied,
 * "no difference seen: all 10 pairs tied ...". Numbers get 3 decimals, more (up to 12) where
 * 3 would print the interval as a point or a value inside (0, 1) as 0 or 1. name_a / name_b
 * may be NULL ("A", "B"). Returns the length the full sentence needs (as snprintf). */
int tb_pab_describe(const tb_pab_result *r, const char *name_a, const char *name_b, char *buf,
                    size_t cap);

/* The number of pairs the decision rule needs: the smallest n at which the exact two-sided
 * sign test at size alpha (the Clopper-Pearson interval of tb_pab_paired excluding 0.5) has
 * power >= 1 - beta when the true P(A>B) is gamma and no pair ties. With c_n the smallest count
 * whose interval's lower end exceeds 0.5, power(n) = P(Bin(n, gamma) >= c_n). 49 for
 * alpha = beta = 0.05, gamma = 0.75 (the normal approximation says 46). Power is a sawtooth
 * in n, so a few larger n fall just short of 1 - beta (50 and 53 here). Fails with
 * TB_ERR_INVALID naming alpha or beta outside (0, 1), gamma outside (0.5, 1), or a gamma so
 * close to 0.5 that more than TB_SIGN_TEST_MAX_PAIRS pairs would be needed. */
#define TB_SIGN_TEST_MAX_PAIRS 100000
tb_status tb_sign_test_sample_size(double alpha, double beta, double gamma, int64_t *n,
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
    tb_interval std_ci; /* chi-square interval of std (tb_std_interval: assumes normality) */
    double std_share;   /* std / std of the reference group ("all"); NaN without one */
    double var_share;   /* variance / variance of the reference group; NaN without one */
} tb_variance_row;

/* One row per group (out[0..n_groups), caller-allocated), each with its std, its chi-square
 * interval at level 1 - alpha (tb_std_interval) and its share relative to the group named
 * `reference` (NULL means "all"); if no group has that name the shares are NaN. Fails with
 * TB_ERR_INVALID for n_groups < 1, a group with a NULL name, n < 2 or a non-finite value
 * (named by group and index), or alpha outside (0, 1). */
tb_status tb_variance_decompose(const tb_variation_group *groups, int n_groups,
                                const char *reference, double alpha, tb_variance_row *out,
                                tb_error *err);

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

/* ---- rank correlation (rank.c) ------------------------------------------------------------ */
/* Spearman's rho of the pairs (x[i], y[i]), i < n: the Pearson correlation of their ranks, tied
 * values sharing the mean of their places; in [-1, 1], 1 when both order the pairs alike.
 * Only the order counts: infinities take part (equal ones tied). TB_ERR_INVALID for n < 2, a
 * NaN, or a sample whose values are all equal (no order). */
tb_status tb_spearman_rho(const double *x, const double *y, int64_t n, double *rho,
                          tb_error *err);
/* Kendall's tau-b of the same pairs: (concordant - discordant) / sqrt(n1 n2), n1 and n2 the
 * pairs of indices not tied in x and in y; the same errors. */
tb_status tb_kendall_tau(const double *x, const double *y, int64_t n, double *tau,
                         tb_error *err);

/* ---- building blocks ----------------------------------------------------------------------- */
/* Mean and sample std (n - 1; 0 when n = 1) of x[0..n), two-pass. */
void tb_stats_mean_std(const double *x, int64_t n, double *mean, double *std);
/* The p quantile of Student's t with df degrees of freedom (p in (0, 1)), from
 * P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2). */
double tb_stats_t_quantile(double p, double df);

#ifdef __cplusplus
}
#endif
#endif

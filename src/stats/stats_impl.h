/* stats_impl.h: helpers shared by the statistics sources (not public API). */
#ifndef TRAINBENCH_STATS_IMPL_H
#define TRAINBENCH_STATS_IMPL_H

#include "trainbench/stats.h"

/* TB_OK if x[0..n) are all finite; otherwise TB_ERR_INVALID naming `what`, the index and the
 * value. */
tb_status tb_stats_check_finite(const double *x, int64_t n, const char *what, tb_error *err);

/* TB_OK if opts is non-NULL with resamples >= 100 and alpha in (0, 1); a named error
 * otherwise. */
tb_status tb_stats_check_bootstrap(const tb_bootstrap_options *opts, tb_error *err);



/* The percentile interval of replicates[0..k): sorts them, then the type-7 alpha/2 and
 * 1 - alpha/2 quantiles. */
tb_interval tb_stats_percentile_interval(double *replicates, int64_t k, double alpha);

/* ---- special functions (special.c) ---------------------------------------------------------- */

/* I_x(a, b), the regularized incomplete beta function, for a, b > 0 (0 for x <= 0, 1 for
 * x >= 1, NaN for bad a, b or NaN x). Continued fraction, modified Lentz's method; relative
 * accuracy near 1e-14 for moderate a, b (the lgamma terms lose a few digits as a + b grows). */
double tb_stats_beta_inc(double a, double b, double x);

/* The x in [0, 1] with I_x(a, b) = p (Newton with bisection); NaN for p outside [0, 1]. */
double tb_stats_beta_inv(double p, double a, double b);

/* P(a, x), the regularized lower incomplete gamma function, for a > 0 (0 for x <= 0). Series
 * below x = a + 1, continued fraction above. */
double tb_stats_gamma_inc(double a, double x);

/* The x >= 0 with P(a, x) = p (Newton with bisection); inf for p = 1, NaN for p outside
 * [0, 1]. */
double tb_stats_gamma_inv(double p, double a);

/* The p quantile of the chi-square distribution with df degrees of freedom: 2 P^-1(p; df/2). */
double tb_stats_chi2_quantile(double p, double df);


/* P(X >= c) for X ~ Bin(n, p), as I_p(c, n - c + 1) (also for a fractional c, the usual
 * continuous extension); 1 for c <= 0, 0 for c > n. */
double tb_stats_binomial_upper_tail(int64_t n, double c, double p);

/* The lower end of the exact (Clopper-Pearson) interval at level 1 - alpha for x successes
 * out of n: BetaInv(alpha/2; x, n - x + 1), 0 for x <= 0. A fractional x (ties counted 1/2)
 * uses the same formula. No checks. */
double tb_stats_clopper_pearson_lower(double x, int64_t n, double alpha);

/* The Clopper-Pearson interval [lower(x), 1 - lower(n - x)]; the upper end equals
 * BetaInv(1 - alpha/2; x + 1, n - x) (1 for x = n), written so that the interval of n - x is
 * the mirror of x's (up to the rounding of 1 - y) and tb_pab_decide's verdicts on the two
 * mirror exactly. */
tb_interval tb_stats_clopper_pearson(double x, int64_t n, double alpha);

#endif

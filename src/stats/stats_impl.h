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

/* Sorts x[0..n) ascending (no NaN allowed). */
void tb_stats_sort(double *x, int64_t n);

/* Mean and sample std (n - 1; 0 when n = 1) of x[0..n), two-pass. */
void tb_stats_mean_std(const double *x, int64_t n, double *mean, double *std);

/* The percentile interval of replicates[0..k): sorts them, then the type-7 alpha/2 and
 * 1 - alpha/2 quantiles. */
tb_interval tb_stats_percentile_interval(double *replicates, int64_t k, double alpha);

#endif

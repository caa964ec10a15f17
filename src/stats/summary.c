/* summary.c: type-7 quantiles, sample summaries, the normal-theory intervals of a mean
 * (Student t) and of a standard deviation (chi-square), and percentile-bootstrap intervals. */
#include "stats_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers -------------------------------------------------------------------------- */

tb_status tb_stats_check_finite(const double *x, int64_t n, const char *what, tb_error *err)
{
    if (!x && n > 0) return tb_fail(err, TB_ERR_INVALID, "%s: the values are NULL", what);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return tb_fail(err, TB_ERR_INVALID, "%s: value %lld is %g (need a finite number)", what,
                           (long long)i, x[i]);
    return TB_OK;
}

tb_status tb_stats_check_bootstrap(const tb_bootstrap_options *opts, tb_error *err)
{
    if (!opts) return tb_fail(err, TB_ERR_INVALID, "bootstrap: no options given");
    if (opts->resamples < 100)
        return tb_fail(err, TB_ERR_INVALID,
                       "bootstrap: %d resamples is too few (need at least 100; 1000 recommended)",
                       opts->resamples);
    if (!(opts->alpha > 0.0 && opts->alpha < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "bootstrap: alpha %g is outside (0, 1)", opts->alpha);
    return TB_OK;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void tb_stats_sort(double *x, int64_t n)
{
    qsort(x, (size_t)n, sizeof(double), cmp_double);
}

void tb_stats_mean_std(const double *x, int64_t n, double *mean, double *std)
{
    /* Work on x / 2^e with 2^e near max |x|: dividing by a power of two is exact, and the sum
     * and the squares then stay far from overflow even for values near 1e308. */
    double big = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > big) big = fabs(x[i]);
    int e = 0;
    if (big > 0.0 && isfinite(big)) frexp(big, &e);
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += ldexp(x[i], -e);
    double m = s / (double)n;
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = ldexp(x[i], -e) - m;
        ss += d * d;
    }
    *mean = ldexp(m, e);
    *std = n > 1 ? ldexp(sqrt(ss / (double)(n - 1)), e) : 0.0;
}

tb_interval tb_stats_percentile_interval(double *replicates, int64_t k, double alpha)
{
    tb_stats_sort(replicates, k);
    tb_interval ci = {tb_quantile_sorted(replicates, k, 0.5 * alpha),
                      tb_quantile_sorted(replicates, k, 1.0 - 0.5 * alpha)};
    return ci;
}

/* ---- quantiles ------------------------------------------------------------------------------- */

double tb_quantile_sorted(const double *sorted, int64_t n, double p)
{
    if (!sorted || n < 1) return NAN;
    double h = (double)(n - 1) * p;
    int64_t lo = (int64_t)floor(h);
    if (lo >= n - 1) return sorted[n - 1];
    if (lo < 0) return sorted[0];
    double frac = h - (double)lo, x0 = sorted[lo], x1 = sorted[lo + 1];
    if (frac == 0.0 || x0 == x1) return x0;
    /* weighted ends, not x0 + frac (x1 - x0): the difference overflows for ends of opposite
     * sign near DBL_MAX (q1 of {-1e308, 1e308, 1.7e308} was inf); rounding kept inside */
    double q = (1.0 - frac) * x0 + frac * x1;
    return q < x0 ? x0 : q > x1 ? x1 : q;
}

tb_status tb_quantile(const double *x, int64_t n, double p, double *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "quantile: out is NULL");
    if (n < 1)
        return tb_fail(err, TB_ERR_INVALID, "quantile: empty sample (n = %lld)", (long long)n);
    if (!(p >= 0.0 && p <= 1.0))
        return tb_fail(err, TB_ERR_INVALID, "quantile: probability %g is outside [0, 1]", p);
    tb_status st = tb_stats_check_finite(x, n, "quantile", err);
    if (st != TB_OK) return st;
    double *s = malloc((size_t)n * sizeof(double));
    if (!s)
        return tb_fail(err, TB_ERR_NOMEM, "quantile: cannot allocate %lld values", (long long)n);
    memcpy(s, x, (size_t)n * sizeof(double));
    tb_stats_sort(s, n);
    *out = tb_quantile_sorted(s, n, p);
    free(s);
    return TB_OK;
}

/* ---- normal-theory intervals ----------------------------------------------------------------- */

static tb_status check_interval_input(const double *x, int64_t n, double alpha, const char *what,
                                      tb_error *err)
{
    if (n < 2)
        return tb_fail(err, TB_ERR_INVALID, "%s interval: %lld values (need at least 2)", what,
                       (long long)n);
    if (!(alpha >= TB_STATS_ALPHA_MIN && alpha < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "%s interval: alpha %g is outside [1e-10, 1)", what,
                       alpha);
    return tb_stats_check_finite(x, n, what, err);
}

tb_status tb_mean_interval(const double *x, int64_t n, double alpha, tb_interval *ci,
                           tb_error *err)
{
    if (!ci) return tb_fail(err, TB_ERR_INVALID, "mean interval: ci is NULL");
    tb_status st = check_interval_input(x, n, alpha, "mean", err);
    if (st != TB_OK) return st;
    double mean, std;
    tb_stats_mean_std(x, n, &mean, &std);
    double half = tb_stats_t_quantile(1.0 - 0.5 * alpha, (double)(n - 1)) * std / sqrt((double)n);
    *ci = (tb_interval){mean - half, mean + half};
    return TB_OK;
}

tb_status tb_std_interval(const double *x, int64_t n, double alpha, tb_interval *ci,
                          tb_error *err)
{
    if (!ci) return tb_fail(err, TB_ERR_INVALID, "std interval: ci is NULL");
    tb_status st = check_interval_input(x, n, alpha, "std", err);
    if (st != TB_OK) return st;
    double mean, std;
    tb_stats_mean_std(x, n, &mean, &std);
    /* (n - 1) s^2 / sigma^2 ~ chi2(n - 1) for a normal sample */
    double df = (double)(n - 1);
    *ci = (tb_interval){std * sqrt(df / tb_stats_chi2_quantile(1.0 - 0.5 * alpha, df)),
                        std * sqrt(df / tb_stats_chi2_quantile(0.5 * alpha, df))};
    return TB_OK;
}

/* ---- bootstrap ------------------------------------------------------------------------------- */

tb_bootstrap_options tb_bootstrap_options_default(void)
{
    tb_bootstrap_options o = {.resamples = 1000, .alpha = 0.05};
    return o;
}

/* The statistic of x[0..n); x may be reordered (median sorts it). */
static double statistic(double *x, int64_t n, tb_statistic stat)
{
    if (stat == TB_STAT_MEDIAN) {
        tb_stats_sort(x, n);
        return tb_quantile_sorted(x, n, 0.5);
    }
    double mean, std;
    tb_stats_mean_std(x, n, &mean, &std);
    return mean;
}

tb_status tb_bootstrap_ci(const double *x, int64_t n, tb_statistic stat,
                          const tb_bootstrap_options *opts, tb_rng *rng, tb_interval *ci,
                          tb_error *err)
{
    if (!ci) return tb_fail(err, TB_ERR_INVALID, "bootstrap: ci is NULL");
    if (stat != TB_STAT_MEAN && stat != TB_STAT_MEDIAN)
        return tb_fail(err, TB_ERR_INVALID,
                       "bootstrap: unknown statistic %d (mean or median; tb_std_interval gives "
                       "the interval of a std)",
                       (int)stat);
    const char *name = stat == TB_STAT_MEAN ? "mean" : "median";
    if (n < 1)
        return tb_fail(err, TB_ERR_INVALID, "bootstrap %s: %lld values (need at least 1)", name,
                       (long long)n);
    tb_status st = tb_stats_check_bootstrap(opts, err);
    if (st != TB_OK) return st;
    if (!rng) return tb_fail(err, TB_ERR_INVALID, "bootstrap %s: no rng given", name);
    st = tb_stats_check_finite(x, n, "bootstrap sample", err);
    if (st != TB_OK) return st;

    int64_t k = opts->resamples;
    double *sample = malloc((size_t)n * sizeof(double));
    double *reps = malloc((size_t)k * sizeof(double));
    if (!sample || !reps) {
        free(sample);
        free(reps);
        return tb_fail(err, TB_ERR_NOMEM, "bootstrap: cannot allocate %lld + %lld values",
                       (long long)n, (long long)k);
    }
    for (int64_t r = 0; r < k; r++) {
        for (int64_t i = 0; i < n; i++)
            sample[i] = x[tb_rng_below(rng, (uint64_t)n)];
        reps[r] = statistic(sample, n, stat);
    }
    *ci = tb_stats_percentile_interval(reps, k, opts->alpha);
    free(sample);
    free(reps);
    return TB_OK;
}

/* ---- summaries ------------------------------------------------------------------------------- */

tb_status tb_summarize(const double *x, int64_t n, const tb_bootstrap_options *boot, tb_rng *rng,
                       tb_summary *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "summary: out is NULL");
    if (n < 1)
        return tb_fail(err, TB_ERR_INVALID, "summary: empty sample (n = %lld)", (long long)n);
    tb_status st = tb_stats_check_finite(x, n, "summary", err);
    if (st != TB_OK) return st;
    if (boot) {
        st = tb_stats_check_bootstrap(boot, err);
        if (st != TB_OK) return st;
        if (!rng)
            return tb_fail(err, TB_ERR_INVALID, "summary: bootstrap asked for but no rng given");
    }
    double *s = malloc((size_t)n * sizeof(double));
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "summary: cannot allocate %lld values", (long long)n);
    memcpy(s, x, (size_t)n * sizeof(double));
    tb_stats_sort(s, n);

    tb_summary r;
    r.n = n;
    tb_stats_mean_std(x, n, &r.mean, &r.std);
    r.sem = r.std / sqrt((double)n);
    r.min = s[0];
    r.max = s[n - 1];
    r.q1 = tb_quantile_sorted(s, n, 0.25);
    r.median = tb_quantile_sorted(s, n, 0.5);
    r.q3 = tb_quantile_sorted(s, n, 0.75);
    r.iqr = r.q3 - r.q1;
    r.mean_ci = r.median_ci = (tb_interval){NAN, NAN};
    free(s);
    if (boot) {
        if (n >= 2) st = tb_mean_interval(x, n, boot->alpha, &r.mean_ci, err);
        if (st == TB_OK) st = tb_bootstrap_ci(x, n, TB_STAT_MEDIAN, boot, rng, &r.median_ci, err);
        if (st != TB_OK) {
            tb_error_prefix(err, "summary");
            return st;
        }
    }
    *out = r;
    return TB_OK;
}

tb_status tb_summarize_finite(const double *x, int64_t n, const tb_bootstrap_options *boot,
                              tb_rng *rng, tb_summary *out, tb_error *err)
{
    if (!out || (n > 0 && !x))
        return tb_fail(err, TB_ERR_INVALID, "summary: %s is NULL", out ? "x" : "out");
    double *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!f) return tb_fail(err, TB_ERR_NOMEM, "out of memory for a summary");
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i])) f[m++] = x[i];
    tb_status st = TB_OK;
    if (m > 0) {
        st = tb_summarize(f, m, boot, rng, out, err);
    } else {
        *out = (tb_summary){0};
        out->mean = out->std = out->sem = out->min = out->q1 = out->median = NAN;
        out->q3 = out->max = out->iqr = NAN;
        out->mean_ci = out->median_ci = (tb_interval){NAN, NAN};
    }
    free(f);
    return st;
}

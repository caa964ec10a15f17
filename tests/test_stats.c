/* test_stats.c: the normal CDF and quantile, the incomplete beta and gamma functions and the
 * quantiles built on them, the sign test's runs needed, summaries with Student-t, chi-square
 * and bootstrap intervals, P(A>B) with its exact interval, tie rules and decision rule, the
 * variance decomposition, bad input, and simulations of interval coverage, false positives
 * and power. Simulations use fixed seeds, so every figure printed here is reproducible.
 *
 * Reference values marked "stdlib Python" were computed offline with Python's standard
 * library only, independently of this code: binomial tails as exact sums of math.comb terms
 * in fractions.Fraction, Clopper-Pearson ends by bisecting those exact tails to 80 halvings,
 * chi-square quantiles from closed forms (df 1: the square of statistics.NormalDist's
 * quantile; df 2: -2 ln(1 - p); df 4: bisecting 1 - e^{-x/2}(1 + x/2)), t quantiles from
 * closed forms (df 1: tan(pi (p - 1/2)); df 2: (2p - 1) / sqrt(2p(1 - p))) and, for df 4, by
 * bisecting a Simpson integral of the density (20000 intervals). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "stats/stats_impl.h"
#include "trainbench/stats.h"

/* ---- normal distribution, sample size ------------------------------------------------------ */

static void test_normal(void)
{
    /* Reference values from torch.special.ndtri / ndtr in float64, checked with mpmath. */
    CHECK_NEAR(tb_normal_quantile(0.975), 1.959963984540054, 1e-13);
    CHECK_NEAR(tb_normal_quantile(0.025), -1.959963984540054, 1e-13);
    CHECK_NEAR(tb_normal_quantile(0.95), 1.644853626951472, 1e-13);
    CHECK_NEAR(tb_normal_quantile(0.999), 3.090232306167813, 1e-12);
    CHECK_NEAR(tb_normal_quantile(0.3), -0.5244005127080409, 1e-13);
    CHECK_NEAR(tb_normal_quantile(1e-10), -6.361340902404056, 1e-11);
    CHECK_NEAR(tb_normal_quantile(1e-300), -37.0470962993612, 1e-10);
    CHECK(tb_normal_quantile(0.5) == 0.0);
    CHECK(isinf(tb_normal_quantile(0.0)) && tb_normal_quantile(0.0) < 0);
    CHECK(isinf(tb_normal_quantile(1.0)) && tb_normal_quantile(1.0) > 0);
    CHECK(isnan(tb_normal_quantile(1.5)) && isnan(tb_normal_quantile(NAN)));

    CHECK_NEAR(tb_normal_cdf(1.96), 0.9750021048517796, 1e-15);
    CHECK_NEAR(tb_normal_cdf(-1.0), 0.15865525393145702, 1e-15);
    CHECK_NEAR(tb_normal_cdf(3.0), 0.9986501019683699, 1e-15);
    /* Far tail, relative (mpmath; torch.special.ndtr loses digits out here). */
    CHECK_NEAR(tb_normal_cdf(-8.0) / 6.220960574271784e-16, 1.0, 1e-12);
    CHECK(tb_normal_cdf(0.0) == 0.5);

    /* Round trip over a grid, relative error in the lower tail. */
    double worst = 0.0;
    for (double p = 1e-12; p < 0.999999; p *= 1.7) {
        double back = tb_normal_cdf(tb_normal_quantile(p));
        double rel = fabs(back - p) / (p < 0.5 ? p : 1.0 - p);
        if (rel > worst) worst = rel;
    }
    CHECK(worst < 1e-12);

    double x = 0.0;
    tb_error err = {0};
    CHECK_OK(tb_normal_quantile_checked(0.975, &x, &err), &err);
    CHECK_NEAR(x, 1.959963984540054, 1e-13);
    CHECK_FAILS(tb_normal_quantile_checked(1.0, &x, &err), TB_ERR_INVALID, &err, "outside (0, 1)");
}

/* ---- special functions, exact binomial intervals, runs needed ------------------------------ */

static void test_special_functions(void)
{
    /* closed forms: I_x(1/2, 1/2) = (2 / pi) asin(sqrt x), I_x(a, 1) = x^a, P(1, x) = 1 - e^-x,
     * P(1/2, x) = erf(sqrt x) (both sides of the series / continued-fraction switch) */
    CHECK_NEAR(tb_stats_beta_inc(0.5, 0.5, 0.3), 2.0 / 3.14159265358979323846 * asin(sqrt(0.3)), 1e-14);
    CHECK_NEAR(tb_stats_beta_inc(0.5, 0.5, 0.9), 2.0 / 3.14159265358979323846 * asin(sqrt(0.9)), 1e-14);
    CHECK_NEAR(tb_stats_beta_inc(6.0, 1.0, 0.8), pow(0.8, 6.0), 1e-15);
    CHECK_NEAR(tb_stats_gamma_inc(1.0, 2.0), 1.0 - exp(-2.0), 1e-15);
    CHECK_NEAR(tb_stats_gamma_inc(0.5, 0.2), erf(sqrt(0.2)), 1e-15);
    CHECK_NEAR(tb_stats_gamma_inc(0.5, 2.0), erf(sqrt(2.0)), 1e-15);
    CHECK(tb_stats_beta_inc(2.0, 3.0, 0.0) == 0.0 && tb_stats_beta_inc(2.0, 3.0, 1.0) == 1.0);
    CHECK(isnan(tb_stats_beta_inc(-1.0, 3.0, 0.5)) && isnan(tb_stats_beta_inv(1.5, 2.0, 2.0)));
    /* P(Bin(10000, 1/2) >= 5000) = 1/2 + P(X = 5000) / 2 = 0.503989... (stdlib Python) */
    CHECK_NEAR(tb_stats_binomial_upper_tail(10000, 5000, 0.5), 0.5039893230700630, 1e-11);
    /* P(Bin(29, 0.75) >= 21) = 0.712541... (stdlib Python) */
    CHECK_NEAR(tb_stats_binomial_upper_tail(29, 21, 0.75), 0.7125413965916819, 1e-13);
    /* the inverses invert */
    for (double q = 0.001; q < 1.0; q += 0.0997) {
        CHECK_NEAR(tb_stats_beta_inc(3.5, 40.0, tb_stats_beta_inv(q, 3.5, 40.0)), q, 1e-13);
        CHECK_NEAR(tb_stats_gamma_inc(7.5, tb_stats_gamma_inv(q, 7.5)), q, 1e-13);
    }

    /* chi-square quantiles (stdlib Python) */
    CHECK_NEAR(tb_stats_chi2_quantile(0.025, 1), 0.000982069117175249, 1e-15);
    CHECK_NEAR(tb_stats_chi2_quantile(0.975, 1), 5.02388618731489, 1e-12);
    CHECK_NEAR(tb_stats_chi2_quantile(0.025, 2), 0.0506356159685798, 1e-14);
    CHECK_NEAR(tb_stats_chi2_quantile(0.975, 2), 7.37775890822787, 1e-12);
    CHECK_NEAR(tb_stats_chi2_quantile(0.025, 4), 0.484418557087929, 1e-13);
    CHECK_NEAR(tb_stats_chi2_quantile(0.975, 4), 11.1432867818778, 1e-12);
    /* Student t quantiles (stdlib Python) */
    CHECK_NEAR(tb_stats_t_quantile(0.975, 1), 12.7062047361747, 1e-10);
    CHECK_NEAR(tb_stats_t_quantile(0.975, 2), 4.30265272974946, 1e-12);
    CHECK_NEAR(tb_stats_t_quantile(0.975, 4), 2.776445105198, 1e-9);
    CHECK_NEAR(tb_stats_t_quantile(0.025, 4), -2.776445105198, 1e-9);
    CHECK_NEAR(tb_stats_t_quantile(0.975, 1e6), 1.959963984540054, 1e-5);
}

static void test_clopper_pearson(void)
{
    /* Clopper-Pearson ends at 95% (stdlib Python, exact binomial sums) */
    static const struct {
        int n, x;
        double lo, hi;
    } ref[] = {
        {6, 6, 0.5407418735601, 1.0}, /* 0.025^(1/6) */
        {5, 5, 0.478176249895019, 1.0},
        {10, 7, 0.347547149940003, 0.933260488822266},
        {10, 10, 0.691502892181239, 1.0},
        {29, 20, 0.49167664619001, 0.847154060391369},
        {1, 0, 0.0, 0.975},
        {20, 3, 0.0320709371854637, 0.378926826545314},
    };
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        tb_interval ci = tb_stats_clopper_pearson(ref[i].x, ref[i].n, 0.05);
        CHECK_NEAR(ci.lo, ref[i].lo, 1e-12);
        CHECK_NEAR(ci.hi, ref[i].hi, 1e-12);
    }
    /* a fractional count (ties as 1/2) lies between its neighbours */
    tb_interval c13 = tb_stats_clopper_pearson(13, 20, 0.05),
                c135 = tb_stats_clopper_pearson(13.5, 20, 0.05),
                c14 = tb_stats_clopper_pearson(14, 20, 0.05);
    CHECK(c13.lo < c135.lo && c135.lo < c14.lo && c13.hi < c135.hi && c135.hi < c14.hi);
    /* the mirror: n - x gives [1 - hi, 1 - lo] (to a rounding of 1 - y; the verdicts mirror
     * exactly, test_decision_rule) */
    for (int n = 1; n <= 40; n++)
        for (int x = 0; x <= n; x++) {
            tb_interval c = tb_stats_clopper_pearson(x, n, 0.05);
            tb_interval m = tb_stats_clopper_pearson(n - x, n, 0.05);
            if (fabs(c.lo - (1.0 - m.hi)) > 1e-16 || fabs(m.lo - (1.0 - c.hi)) > 1e-16) {
                CHECK(!"Clopper-Pearson interval of n - x is not the mirror of x's");
                return;
            }
        }
}

static void test_runs_needed(void)
{
    tb_error err = {0};
    int64_t n = 0;
    /* Exact two-sided sign test, power >= 1 - beta at P(A>B) = gamma. Values and the powers
     * quoted are from stdlib Python (exact sums over n = 1, 2, ...); the normal approximation
     * says 45.8, 28.9, 318.9 and 75.1; Noether's one-sided two-sample formula said 29, 17 and
     * 181. */
    CHECK_OK(tb_sign_test_sample_size(0.05, 0.05, 0.75, &n, &err), &err);
    CHECK(n == 49); /* power 0.9544 at 49, 0.9296 at 48, and 0.7125 at 29 (Noether's n) */
    CHECK_OK(tb_sign_test_sample_size(0.05, 0.2, 0.75, &n, &err), &err);
    CHECK(n == 30); /* power 0.8034; 0.7125 at 29 */
    CHECK_OK(tb_sign_test_sample_size(0.05, 0.05, 0.6, &n, &err), &err);
    CHECK(n == 327); /* power 0.9509; 0.9440 at 326 */
    CHECK_OK(tb_sign_test_sample_size(0.05, 0.05, 0.7, &n, &err), &err);
    CHECK(n == 79);
    /* the power it promises, and that one pair fewer falls short (the critical count at 49 and
     * 48 is 32: P(Bin(n, 1/2) >= 32) < 0.025 there, not at 31) */
    CHECK(tb_stats_binomial_upper_tail(49, 32, 0.5) < 0.025);
    CHECK(tb_stats_binomial_upper_tail(49, 31, 0.5) >= 0.025);
    CHECK_NEAR(tb_stats_binomial_upper_tail(49, 32, 0.75), 0.954377, 1e-6);
    CHECK_NEAR(tb_stats_binomial_upper_tail(48, 32, 0.75), 0.929560, 1e-6);
    CHECK_FAILS(tb_sign_test_sample_size(0.0, 0.05, 0.75, &n, &err), TB_ERR_INVALID, &err,
                "alpha 0");
    CHECK_FAILS(tb_sign_test_sample_size(0.05, 1.0, 0.75, &n, &err), TB_ERR_INVALID, &err,
                "beta 1");
    CHECK_FAILS(tb_sign_test_sample_size(0.05, 0.05, 0.5, &n, &err), TB_ERR_INVALID, &err,
                "gamma 0.5 ");
    CHECK_FAILS(tb_sign_test_sample_size(NAN, 0.05, 0.75, &n, &err), TB_ERR_INVALID, &err,
                "alpha");
    /* too close to 0.5, and said with every digit (not "gamma 0.5") */
    CHECK_FAILS(tb_sign_test_sample_size(0.05, 0.05, 0.5 + 1e-9, &n, &err), TB_ERR_INVALID,
                &err, "gamma 0.50000000099999997 is too close to 0.5");
    CHECK_OK(tb_sign_test_sample_size(0.05, 0.05, 0.51, &n, &err), &err);
    CHECK(n > 32000 && n < 33500); /* the normal approximation says 32,481 */
}

/* ---- summaries ----------------------------------------------------------------------------- */

static void test_summaries(void)
{
    tb_error err = {0};
    tb_summary s;
    const double x[5] = {10, 2, 4, 1, 3}; /* sorted 1 2 3 4 10 */
    CHECK_OK(tb_summarize(x, 5, NULL, NULL, &s, &err), &err);
    CHECK(s.n == 5);
    CHECK_NEAR(s.mean, 4.0, 1e-15);
    CHECK_NEAR(s.std, sqrt(12.5), 1e-14); /* squares 9 4 1 0 36 = 50, / 4 */
    CHECK_NEAR(s.sem, sqrt(12.5 / 5.0), 1e-14);
    CHECK(s.min == 1.0 && s.max == 10.0);
    CHECK_NEAR(s.q1, 2.0, 1e-15); /* type 7: h = 4 * 0.25 = 1 */
    CHECK_NEAR(s.median, 3.0, 1e-15);
    CHECK_NEAR(s.q3, 4.0, 1e-15);
    CHECK_NEAR(s.iqr, 2.0, 1e-15);
    CHECK(isnan(s.mean_ci.lo) && isnan(s.median_ci.hi));

    const double y[4] = {4, 1, 3, 2}; /* interpolated quartiles: h = 0.75, 1.5, 2.25 */
    CHECK_OK(tb_summarize(y, 4, NULL, NULL, &s, &err), &err);
    CHECK_NEAR(s.q1, 1.75, 1e-15);
    CHECK_NEAR(s.median, 2.5, 1e-15);
    CHECK_NEAR(s.q3, 3.25, 1e-15);
    double q = 0.0;
    CHECK_OK(tb_quantile(y, 4, 0.1, &q, &err), &err);
    CHECK_NEAR(q, 1.3, 1e-15);
    CHECK_OK(tb_quantile(y, 4, 1.0, &q, &err), &err);
    CHECK(q == 4.0);

    const double one = 7.0;
    CHECK_OK(tb_summarize(&one, 1, NULL, NULL, &s, &err), &err);
    CHECK(s.std == 0.0 && s.median == 7.0 && s.q1 == 7.0 && s.iqr == 0.0);

    /* Values near the largest double: the mean and std do not overflow. */
    const double huge[2] = {1.5e308, 1.7e308};
    CHECK_OK(tb_summarize(huge, 2, NULL, NULL, &s, &err), &err);
    CHECK_NEAR(s.mean / 1.6e308, 1.0, 1e-15);
    CHECK_NEAR(s.std / (0.1e308 * sqrt(2.0)), 1.0, 1e-13);
    /* ... nor the quartiles between ends of opposite sign (q1 was inf): sorted -1e308, 1e308,
     * 1.7e308, h = 0.5 for q1 (halfway: 0), 1.5 for q3 (halfway: 1.35e308) */
    const double wide[3] = {1e308, 1.7e308, -1e308};
    CHECK_OK(tb_summarize(wide, 3, NULL, NULL, &s, &err), &err);
    CHECK(fabs(s.q1) < 1e293 && s.median == 1e308);
    CHECK_NEAR(s.q3 / 1.35e308, 1.0, 1e-15);

    /* Normal-theory intervals. The mean's is Student t: 4 -+ t_{0.975,4} sqrt(12.5 / 5). */
    tb_interval ci;
    CHECK_OK(tb_mean_interval(x, 5, 0.05, &ci, &err), &err);
    CHECK_NEAR(ci.lo, 4.0 - 2.776445105198 * sqrt(2.5), 1e-8);
    CHECK_NEAR(ci.hi, 4.0 + 2.776445105198 * sqrt(2.5), 1e-8);
    /* The std's is chi-square: s [sqrt(4 / chi2_{0.975,4}), sqrt(4 / chi2_{0.025,4})], and for
     * two values s [sqrt(1 / chi2_{0.975,1}), sqrt(1 / chi2_{0.025,1})] (stdlib Python). The
     * bootstrap it replaces gave [0, s] for two values. */
    CHECK_OK(tb_std_interval(x, 5, 0.05, &ci, &err), &err);
    CHECK_NEAR(ci.lo, sqrt(12.5) * 0.599133139134141, 1e-12);
    CHECK_NEAR(ci.hi, sqrt(12.5) * 2.87355563407822, 1e-11);
    const double two[2] = {1, 3};
    CHECK_OK(tb_std_interval(two, 2, 0.05, &ci, &err), &err);
    CHECK_NEAR(ci.lo, sqrt(2.0) * 0.446149184920709, 1e-12);
    CHECK_NEAR(ci.hi, sqrt(2.0) * 31.9101593496441, 1e-10);

    /* Coverage of the std interval for normal samples: 95% at any n (the percentile bootstrap
     * covered sigma 45% of the time at n = 3 and 90% at n = 50). */
    tb_rng rng = tb_rng_make(11, 0);
    for (int n = 3; n <= 10; n += 7) {
        enum { SIMS = 2000 };
        int covered = 0;
        double sample[10];
        for (int sim = 0; sim < SIMS; sim++) {
            for (int i = 0; i < n; i++)
                sample[i] = 5.0 + 2.0 * tb_rng_normal(&rng);
            CHECK_OK(tb_std_interval(sample, n, 0.05, &ci, &err), &err);
            covered += ci.lo <= 2.0 && 2.0 <= ci.hi;
        }
        printf("chi-square std interval, normal samples of %d, %d samples: covers sigma in "
               "%.1f%%\n",
               n, SIMS, 100.0 * covered / SIMS);
        CHECK(covered >= 0.93 * SIMS && covered <= 0.97 * SIMS);
    }

    /* With bootstrap options: the mean's Student-t interval and the median's bootstrap one. A
     * constant sample gives points; a Gaussian sample a mean interval of about the
     * normal-theory width 2 * 1.96 * sigma / sqrt n. */
    tb_bootstrap_options bo = tb_bootstrap_options_default();
    double c[6] = {2, 2, 2, 2, 2, 2};
    CHECK_OK(tb_summarize(c, 6, &bo, &rng, &s, &err), &err);
    CHECK(s.mean_ci.lo == 2.0 && s.mean_ci.hi == 2.0 && s.median_ci.lo == 2.0);
    enum { N = 200 };
    double g[N];
    for (int i = 0; i < N; i++)
        g[i] = 5.0 + 2.0 * tb_rng_normal(&rng);
    CHECK_OK(tb_summarize(g, N, &bo, &rng, &s, &err), &err);
    CHECK(s.mean_ci.lo < s.mean && s.mean < s.mean_ci.hi);
    CHECK(s.median_ci.lo <= s.median && s.median <= s.median_ci.hi);
    double width = s.mean_ci.hi - s.mean_ci.lo, expect = 2.0 * 1.959964 * s.std / sqrt(N);
    CHECK(fabs(width / expect - 1.0) < 0.15);
    tb_interval mci;
    CHECK_OK(tb_mean_interval(g, N, bo.alpha, &mci, &err), &err);
    CHECK(mci.lo == s.mean_ci.lo && mci.hi == s.mean_ci.hi);
    tb_interval sci;
    CHECK_OK(tb_std_interval(g, N, 0.05, &sci, &err), &err);
    CHECK(sci.lo < s.std && s.std < sci.hi && sci.lo < 2.0 && 2.0 < sci.hi);
    /* Same seed, same interval. */
    tb_rng r1 = tb_rng_make(3, 0), r2 = tb_rng_make(3, 0);
    tb_interval i1, i2;
    CHECK_OK(tb_bootstrap_ci(g, N, TB_STAT_MEDIAN, &bo, &r1, &i1, &err), &err);
    CHECK_OK(tb_bootstrap_ci(g, N, TB_STAT_MEDIAN, &bo, &r2, &i2, &err), &err);
    CHECK(i1.lo == i2.lo && i1.hi == i2.hi);
}

/* ---- P(A>B) -------------------------------------------------------------------------------- */

static void test_ties_and_direction(void)
{
    tb_error err = {0};
    double p;
    int64_t w, t, l;
    const double a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 4, 4}; /* tie, win, loss, tie */
    CHECK_OK(tb_pab_estimate(a, b, 4, TB_HIGHER_IS_BETTER, TB_TIES_HALF, &p, &w, &t, &l, &err),
             &err);
    CHECK(w == 1 && t == 2 && l == 1);
    CHECK_NEAR(p, 0.5, 1e-15);
    CHECK_OK(
        tb_pab_estimate(a, b, 4, TB_HIGHER_IS_BETTER, TB_TIES_STRICT, &p, NULL, NULL, NULL, &err),
        &err);
    CHECK_NEAR(p, 0.25, 1e-15);
    /* Lower is better: the win and the loss swap. */
    const double a2[3] = {1, 2, 3}, b2[3] = {2, 2, 5};
    CHECK_OK(tb_pab_estimate(a2, b2, 3, TB_LOWER_IS_BETTER, TB_TIES_HALF, &p, &w, &t, &l, &err),
             &err);
    CHECK(w == 2 && t == 1 && l == 0);
    CHECK_NEAR(p, 2.5 / 3.0, 1e-15);
    /* Time to target: +inf (never reached) loses to any finite time, two infs tie. */
    const double ta[3] = {10, INFINITY, INFINITY}, tb[3] = {INFINITY, 12, INFINITY};
    CHECK_OK(tb_pab_estimate(ta, tb, 3, TB_LOWER_IS_BETTER, TB_TIES_HALF, &p, &w, &t, &l, &err),
             &err);
    CHECK(w == 1 && t == 1 && l == 1);

    /* All tied: exactly 0.5, the interval of 15 out of 30 around it, not significant (strict:
     * 0 out of 30, whose interval alone would say B better: tied pairs carry no information,
     * so with no untied pair the verdict is not significant under either rule). */
    double same[30];
    for (int i = 0; i < 30; i++)
        same[i] = 0.9;
    tb_pab_options o = tb_pab_options_default();
    tb_pab_result r;
    CHECK_OK(tb_pab_paired(same, same, 30, &o, &r, &err), &err);
    CHECK(r.p == 0.5 && r.ties == 30 && r.verdict == TB_VERDICT_NOT_SIGNIFICANT);
    CHECK_NEAR(r.ci.lo + r.ci.hi, 1.0, 1e-15);
    CHECK(r.ci.lo > 0.3 && r.ci.lo < 0.35);
    o.ties = TB_TIES_STRICT;
    CHECK_OK(tb_pab_paired(same, same, 30, &o, &r, &err), &err);
    CHECK(r.p == 0.0 && r.ci.lo == 0.0 && r.verdict == TB_VERDICT_NOT_SIGNIFICANT);
    char msg[512];
    tb_pab_describe(&r, "adamw", "adamw", msg, sizeof msg);
    CHECK(strstr(msg, "no difference seen: all 30 pairs tied") && !strstr(msg, "better than"));
    o.ties = TB_TIES_HALF;
    CHECK_OK(tb_pab_paired(same, same, 30, &o, &r, &err), &err);
    tb_pab_describe(&r, "adamw", "adamw", msg, sizeof msg);
    CHECK(strstr(msg, "all 30 pairs tied") && !strstr(msg, "more pairs ("));
    /* one untied pair among ties: the advice says it assumes none */
    double one[30];
    for (int i = 0; i < 30; i++)
        one[i] = i ? 0.9 : 1.0;
    CHECK_OK(tb_pab_paired(one, same, 30, &o, &r, &err), &err);
    tb_pab_describe(&r, NULL, NULL, msg, sizeof msg);
    CHECK(r.verdict == TB_VERDICT_NOT_SIGNIFICANT && strstr(msg, "if no pair ties"));
}

/* The sentence prints the interval with decimals enough not to show it as a point: 99999 wins
 * in 100000 pairs is an interval below 1 (it had printed "CI [1.000, 1.000]"). */
static void test_describe_digits(void)
{
    enum { N = 100000 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    if (!CHECK(a && b)) return;
    for (int i = 0; i < N; i++) {
        a[i] = i ? 1.0 : -1.0;
        b[i] = 0.0;
    }
    tb_pab_options o = tb_pab_options_default();
    tb_pab_result r;
    tb_error err = {0};
    CHECK_OK(tb_pab_paired(a, b, N, &o, &r, &err), &err);
    CHECK(r.wins == N - 1 && r.ci.lo < r.ci.hi && r.ci.hi < 1.0);
    char msg[512];
    tb_pab_describe(&r, NULL, NULL, msg, sizeof msg);
    const char *ci = strstr(msg, "CI [");
    double lo = NAN, hi = NAN, p = NAN;
    CHECK(ci && sscanf(ci, "CI [%lf, %lf]", &lo, &hi) == 2);
    CHECK(sscanf(strstr(msg, "= "), "= %lf", &p) == 1);
    CHECK(lo < hi && hi < 1.0 && p < 1.0);
    CHECK(fabs(lo - r.ci.lo) < 1e-6 && fabs(hi - r.ci.hi) < 1e-6);
    /* ordinary intervals keep three decimals */
    CHECK_OK(tb_pab_paired(a, b, 30, &o, &r, &err), &err);
    tb_pab_describe(&r, NULL, NULL, msg, sizeof msg);
    ci = strstr(msg, "CI [");
    /* 29/30, and [0.xxx, 0.xxx] */
    CHECK(strstr(msg, "= 0.967,") && ci && ci[9] == ',' && ci[16] == ']');
    free(a);
    free(b);
}

static void test_decision_rule(void)
{
    const double g = 0.75;
    CHECK(tb_pab_decide((tb_interval){0.60, 0.90}, g) == TB_VERDICT_A_BETTER);
    CHECK(tb_pab_decide((tb_interval){0.55, 0.70}, g) == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE);
    CHECK(tb_pab_decide((tb_interval){0.55, 0.75}, g) == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE);
    CHECK(tb_pab_decide((tb_interval){0.50, 0.90}, g) == TB_VERDICT_NOT_SIGNIFICANT);
    CHECK(tb_pab_decide((tb_interval){0.40, 0.80}, g) == TB_VERDICT_NOT_SIGNIFICANT);
    CHECK(tb_pab_decide((tb_interval){0.45, 0.55}, g) == TB_VERDICT_NOT_SIGNIFICANT);
    CHECK(tb_pab_decide((tb_interval){0.10, 0.40}, g) == TB_VERDICT_B_BETTER);
    CHECK(tb_pab_decide((tb_interval){0.30, 0.45}, g) == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE);
    CHECK(tb_pab_decide((tb_interval){0.25, 0.45}, g) == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE);
    CHECK(tb_pab_decide((tb_interval){0.10, 0.50}, g) == TB_VERDICT_NOT_SIGNIFICANT);
    CHECK(strcmp(tb_verdict_name(TB_VERDICT_B_BETTER), "b_better") == 0);

    /* Swapping A and B mirrors the interval and must swap the verdict. At gamma = 0.7,
     * 1 - gamma rounds to 0.30000000000000004, so CI_min < 1 - gamma called [0.30, 0.45] "B
     * better" while its mirror [0.55, 0.70] is "no meaningful difference". */
    CHECK(tb_pab_decide((tb_interval){0.55, 0.70}, 0.7) == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE);
    CHECK(tb_pab_decide((tb_interval){0.30, 0.45}, 0.7) == TB_VERDICT_NO_MEANINGFUL_DIFFERENCE);
    CHECK(tb_pab_decide((tb_interval){0.54, 0.71}, 0.7) == TB_VERDICT_A_BETTER);
    CHECK(tb_pab_decide((tb_interval){0.29, 0.46}, 0.7) == TB_VERDICT_B_BETTER);
    /* The same on data: every count out of n = 1..40, and gammas whose complements round. */
    const double gammas[4] = {0.7, 0.75, 0.6, 0.9};
    double a[40], b[40];
    int asymmetric = 0;
    for (int k = 0; k < 4; k++) {
        tb_pab_options o = tb_pab_options_default();
        o.gamma = gammas[k];
        for (int n = 1; n <= 40; n++)
            for (int wins = 0; wins <= n; wins++) {
                for (int i = 0; i < n; i++) {
                    a[i] = i < wins ? 1.0 : 0.0;
                    b[i] = 1.0 - a[i];
                }
                tb_pab_result ab, ba;
                tb_error err = {0};
                if (tb_pab_paired(a, b, n, &o, &ab, &err) != TB_OK ||
                    tb_pab_paired(b, a, n, &o, &ba, &err) != TB_OK) {
                    CHECK(!"tb_pab_paired failed");
                    return;
                }
                tb_verdict swapped = ba.verdict == TB_VERDICT_A_BETTER   ? TB_VERDICT_B_BETTER
                                     : ba.verdict == TB_VERDICT_B_BETTER ? TB_VERDICT_A_BETTER
                                                                         : ba.verdict;
                asymmetric += ab.verdict != swapped;
            }
    }
    CHECK(asymmetric == 0);
}

static void test_pab_paired_and_describe(void)
{
    tb_error err = {0};
    tb_pab_options o = tb_pab_options_default();
    tb_rng rng = tb_rng_make(21, 0);
    tb_pab_result r;
    char msg[512];
    /* A clearly better: every pair a win. */
    double a[30], b[30];
    for (int i = 0; i < 30; i++) {
        b[i] = tb_rng_normal(&rng);
        a[i] = b[i] + 0.5;
    }
    CHECK_OK(tb_pab_paired(a, b, 30, &o, &r, &err), &err);
    CHECK(r.p == 1.0 && r.verdict == TB_VERDICT_A_BETTER && r.runs_needed == 49 &&
          r.more_runs == 19);
    CHECK_NEAR(r.ci.lo, pow(0.025, 1.0 / 30.0), 1e-13); /* all wins: (alpha/2)^(1/n) */
    CHECK(r.ci.hi == 1.0);
    tb_pab_describe(&r, "adamw", "sgd", msg, sizeof msg);
    CHECK(strstr(msg, "adamw better than sgd") != NULL);
    /* Lower is better (a loss): the same numbers make B better. */
    o.direction = TB_LOWER_IS_BETTER;
    CHECK_OK(tb_pab_paired(a, b, 30, &o, &r, &err), &err);
    CHECK(r.p == 0.0 && r.verdict == TB_VERDICT_B_BETTER);
    tb_pab_describe(&r, "adamw", "sgd", msg, sizeof msg);
    CHECK(strstr(msg, "sgd better than adamw") != NULL);
    o.direction = TB_HIGHER_IS_BETTER;

    /* Every pair a win: 5 pairs are not significant (P(5 of 5 | P = 1/2) = 1/32 > 0.025), 6 are
     * (1/64 < 0.025), as the exact sign test says. The bootstrap said [1, 1], "A better", for
     * any n. */
    for (int n = 1; n <= 6; n++) {
        CHECK_OK(tb_pab_paired(a, b, n, &o, &r, &err), &err);
        CHECK(r.wins == n && r.ci.hi == 1.0);
        CHECK(r.verdict == (n <= 5 ? TB_VERDICT_NOT_SIGNIFICANT : TB_VERDICT_A_BETTER));
    }
    CHECK_NEAR(r.ci.lo, 0.5407418735601, 1e-12); /* 0.025^(1/6) */
    CHECK_OK(tb_pab_paired(b, a, 6, &o, &r, &err), &err); /* every pair a loss */
    CHECK(r.verdict == TB_VERDICT_B_BETTER && r.ci.lo == 0.0);
    CHECK_OK(tb_pab_paired(b, a, 5, &o, &r, &err), &err);
    CHECK(r.verdict == TB_VERDICT_NOT_SIGNIFICANT);

    /* Ten noisy pairs: not significant, and the sign test needs 39 more. */
    for (int i = 0; i < 10; i++)
        a[i] = tb_rng_normal(&rng);
    CHECK_OK(tb_pab_paired(a, b, 10, &o, &r, &err), &err);
    if (r.verdict == TB_VERDICT_NOT_SIGNIFICANT) {
        tb_pab_describe(&r, NULL, NULL, msg, sizeof msg);
        CHECK(strstr(msg, "not significant: need about 39 more pairs (49 in all") != NULL);
        CHECK(r.more_runs == 39);
    } else {
        CHECK(!"ten noisy pairs should not be significant with this seed");
    }
    /* The sentence is truncated safely. */
    char tiny[8];
    int need = tb_pab_describe(&r, NULL, NULL, tiny, sizeof tiny);
    CHECK(need > 7 && strlen(tiny) == 7);

    /* Unpaired: m = min(na, nb) random pairs, reproducible from the seed. */
    double ua[40], ub[25];
    for (int i = 0; i < 40; i++)
        ua[i] = 1.0 + tb_rng_normal(&rng);
    for (int i = 0; i < 25; i++)
        ub[i] = tb_rng_normal(&rng);
    tb_rng s1 = tb_rng_make(8, 0), s2 = tb_rng_make(8, 0);
    tb_pab_result u1, u2;
    CHECK_OK(tb_pab_unpaired(ua, 40, ub, 25, &o, &s1, &u1, &err), &err);
    CHECK_OK(tb_pab_unpaired(ua, 40, ub, 25, &o, &s2, &u2, &err), &err);
    CHECK(u1.n == 25 && u1.p == u2.p && u1.ci.lo == u2.ci.lo && u1.ci.hi == u2.ci.hi);
    CHECK(u1.p > 0.6); /* true P = Phi(1 / sqrt 2) = 0.76 */
}

/* Identical distributions: how often the 95% interval covers 0.5, and how often the rule
 * declares a winner (a false positive). `levels` > 0 rounds scores to that many discrete
 * values, as accuracies on a small test set are, so ties are frequent. */
static void coverage(int levels, tb_ties ties, int n, int sims, double *covered,
                     double *false_pos)
{
    tb_pab_options o = tb_pab_options_default();
    o.ties = ties;
    tb_rng data = tb_rng_make(2021, (uint64_t)(levels * 1000 + n));
    double a[64], b[64];
    int cover = 0, fp = 0;
    tb_error err = {0};
    for (int s = 0; s < sims; s++) {
        for (int i = 0; i < n; i++) {
            a[i] = tb_rng_normal(&data);
            b[i] = tb_rng_normal(&data);
            if (levels > 0) {
                a[i] = floor(a[i] * levels / 4.0);
                b[i] = floor(b[i] * levels / 4.0);
            }
        }
        tb_pab_result r;
        if (tb_pab_paired(a, b, n, &o, &r, &err) != TB_OK) {
            CHECK(!"coverage simulation failed");
            return;
        }
        cover += r.ci.lo <= 0.5 && 0.5 <= r.ci.hi;
        fp += r.verdict == TB_VERDICT_A_BETTER || r.verdict == TB_VERDICT_B_BETTER;
    }
    *covered = (double)cover / sims;
    *false_pos = (double)fp / sims;
}

static void test_coverage_simulation(void)
{
    /* The exact interval is conservative: it covers at least 95% by construction (the sign
     * test's size at n = 50 is 2 P(Bin(50, 1/2) >= 33) = 3.3%, stdlib Python). */
    double cov, fp;
    coverage(0, TB_TIES_HALF, 50, 1000, &cov, &fp);
    printf("identical Gaussians, N = 50 pairs, 1000 comparisons: 95%% CI covers 0.5 in %.1f%%, "
           "a winner declared in %.1f%%\n",
           100.0 * cov, 100.0 * fp);
    CHECK(cov >= 0.94);
    CHECK(fp <= 0.06);
    coverage(8, TB_TIES_HALF, 50, 1000, &cov, &fp);
    printf("identical discrete scores (~8 levels, many ties, ties = 1/2): covers 0.5 in %.1f%%, "
           "a winner declared in %.1f%%\n",
           100.0 * cov, 100.0 * fp);
    CHECK(cov >= 0.94);
    CHECK(fp <= 0.06);
    /* Strict '>' counts a tie as a loss for A, so with many ties the estimate sits below 0.5:
     * the interval misses it more often and "B better" is declared well above alpha, between
     * identical algorithms: why ties count 1/2 by default. */
    double cov_strict, fp_strict;
    coverage(8, TB_TIES_STRICT, 50, 1000, &cov_strict, &fp_strict);
    printf("same discrete scores, strict '>': covers 0.5 in %.1f%%, a winner declared in "
           "%.1f%%\n",
           100.0 * cov_strict, 100.0 * fp_strict);
    CHECK(cov_strict < cov - 0.05);
    CHECK(fp_strict > 0.08);

    /* Few pairs: the bootstrap interval declared a winner between identical algorithms in 52%
     * of comparisons at n = 2, 25% at 3, 12% at 4 and about 7% up to 15. The exact test never
     * does below 6 pairs and stays under alpha above (its size is at most 3.5% for n <= 15). */
    double worst = 0.0;
    int worst_n = 0;
    for (int n = 2; n <= 15; n++) {
        coverage(0, TB_TIES_HALF, n, 2000, &cov, &fp);
        if (n <= 5) CHECK(fp == 0.0);
        if (fp > worst) {
            worst = fp;
            worst_n = n;
        }
    }
    printf("identical Gaussians, 2 to 15 pairs, 2000 comparisons each: a winner declared in at "
           "most %.1f%% (n = %d)\n",
           100.0 * worst, worst_n);
    CHECK(worst <= 0.06); /* the exact size is at most 3.9% here (n = 9, 12; stdlib Python) */
}

/* Gaussian scores with means differing by delta and std sigma: P(A>B) = Phi(delta/(sigma
 * sqrt 2)); the estimate converges to it, and with the N the sign test needs (49) the rule
 * finds A better in about 95% of comparisons when the truth is exactly gamma = 0.75. */
static void test_gaussian_pab(void)
{
    enum { BIG = 20000 };
    double *a = malloc(BIG * sizeof(double)), *b = malloc(BIG * sizeof(double));
    tb_rng rng = tb_rng_make(77, 0);
    tb_error err = {0};
    const double delta = 0.5, sigma = 1.0;
    for (int i = 0; i < BIG; i++) {
        a[i] = delta + sigma * tb_rng_normal(&rng);
        b[i] = sigma * tb_rng_normal(&rng);
    }
    double p = 0.0, truth = tb_normal_cdf(delta / (sigma * sqrt(2.0)));
    CHECK_OK(
        tb_pab_estimate(a, b, BIG, TB_HIGHER_IS_BETTER, TB_TIES_HALF, &p, NULL, NULL, NULL, &err),
        &err);
    printf("Gaussian delta = 0.5, sigma = 1, N = %d: P_hat = %.4f, Phi(delta/(sigma sqrt 2)) = "
           "%.4f\n",
           BIG, p, truth);
    CHECK_NEAR(p, truth, 0.012); /* standard error 0.0034 */
    CHECK_NEAR(truth, 0.6381631950841185, 1e-12);

    /* Power at the boundary: truth = gamma = 0.75, N = 49 (exact power 95.4%). */
    enum { SIMS = 1000, N = 49 };
    double d75 = sqrt(2.0) * tb_normal_quantile(0.75);
    tb_pab_options o = tb_pab_options_default();
    int64_t need = 0;
    CHECK_OK(tb_sign_test_sample_size(o.alpha, o.beta, o.gamma, &need, &err), &err);
    CHECK(need == N);
    int found = 0;
    for (int s = 0; s < SIMS; s++) {
        for (int i = 0; i < N; i++) {
            a[i] = d75 + tb_rng_normal(&rng);
            b[i] = tb_rng_normal(&rng);
        }
        tb_pab_result r;
        CHECK_OK(tb_pab_paired(a, b, N, &o, &r, &err), &err);
        found += r.verdict == TB_VERDICT_A_BETTER;
    }
    printf("true P(A>B) = 0.75, N = 49, %d comparisons: A better in %.1f%%\n", SIMS,
           100.0 * found / SIMS);
    CHECK(found >= SIMS * 0.93); /* standard error 0.7% */
    free(a);
    free(b);
}

/* ---- variance by source -------------------------------------------------------------------- */

static void test_variance(void)
{
    tb_error err = {0};
    tb_rng rng = tb_rng_make(9, 0);
    const double init[2] = {1, 3}, all[2] = {0, 4}; /* std sqrt 2 and 2 sqrt 2 */
    tb_variation_group groups[2] = {{"init", init, 2}, {"all", all, 2}};
    tb_variance_row rows[2];
    CHECK_OK(tb_variance_decompose(groups, 2, NULL, 0.05, rows, &err), &err);
    CHECK(strcmp(rows[0].name, "init") == 0);
    CHECK_NEAR(rows[0].std, sqrt(2.0), 1e-15);
    CHECK_NEAR(rows[0].std_share, 0.5, 1e-15);
    CHECK_NEAR(rows[0].var_share, 0.25, 1e-15);
    CHECK_NEAR(rows[1].std_share, 1.0, 1e-15);
    /* chi-square with 1 degree of freedom (stdlib Python); the bootstrap gave [0, s] */
    CHECK_NEAR(rows[0].std_ci.lo, sqrt(2.0) * 0.446149184920709, 1e-12);
    CHECK_NEAR(rows[0].std_ci.hi, sqrt(2.0) * 31.9101593496441, 1e-10);
    CHECK_OK(tb_variance_decompose(groups, 1, NULL, 0.05, rows, &err), &err);
    CHECK(isnan(rows[0].std_share)); /* no "all" group */

    /* Simulated sources with known stds 0.5 (init), 1 (split), sqrt(1.25) (all). */
    enum { N = 200 };
    static double gi[N], gs[N], ga[N];
    for (int i = 0; i < N; i++) {
        gi[i] = 0.5 * tb_rng_normal(&rng);
        gs[i] = tb_rng_normal(&rng);
        ga[i] = 0.5 * tb_rng_normal(&rng) + tb_rng_normal(&rng);
    }
    tb_variation_group sim[3] = {{"init", gi, N}, {"split", gs, N}, {"all", ga, N}};
    tb_variance_row sr[3];
    CHECK_OK(tb_variance_decompose(sim, 3, "all", 0.05, sr, &err), &err);
    CHECK(sr[0].std_ci.lo < 0.5 && 0.5 < sr[0].std_ci.hi);
    CHECK(sr[1].std_ci.lo < 1.0 && 1.0 < sr[1].std_ci.hi);
    CHECK_NEAR(sr[0].var_share, 0.2, 0.08);
    CHECK_NEAR(sr[1].var_share, 0.8, 0.2);

    /* A gap of 1 against a source of std 2: half a std, P = Phi(0.5 / sqrt 2). */
    const double a[3] = {1, 2, 3}, b[3] = {0, 1, 2};
    tb_variance_row row = {.name = "data_order", .std = 2.0};
    tb_gap_row gr;
    double gap = 0.0;
    CHECK_OK(tb_gap_versus_sources(a, 3, b, 3, &row, 1, &gap, &gr, &err), &err);
    CHECK_NEAR(gap, 1.0, 1e-15);
    CHECK_NEAR(gr.ratio, 0.5, 1e-15);
    CHECK_NEAR(gr.implied_p, 0.6381631950841185, 1e-12);
}

/* ---- bad input ----------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    tb_error err = {0};
    tb_rng rng = tb_rng_make(1, 0);
    tb_pab_options o = tb_pab_options_default();
    tb_pab_result r;
    double p;
    const double a[3] = {1, NAN, 3}, b[3] = {1, 2, 3};
    CHECK_FAILS(tb_pab_paired(b, b, 0, &o, &r, &err), TB_ERR_INVALID, &err, "no pairs");
    CHECK_FAILS(tb_pab_paired(a, b, 3, &o, &r, &err), TB_ERR_INVALID, &err,
                "result 1 of A is NaN");
    CHECK_FAILS(
        tb_pab_estimate(b, a, 3, TB_HIGHER_IS_BETTER, TB_TIES_HALF, &p, NULL, NULL, NULL, &err),
        TB_ERR_INVALID, &err, "result 1 of B is NaN");
    CHECK_FAILS(tb_pab_estimate(b, b, 3, (tb_direction)7, TB_TIES_HALF, &p, NULL, NULL, NULL, &err),
                TB_ERR_INVALID, &err, "direction 7");
    o.alpha = 1.5;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &r, &err), TB_ERR_INVALID, &err,
                "alpha 1.5 is outside [1e-10, 1)");
    o.alpha = 0.0;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &r, &err), TB_ERR_INVALID, &err, "alpha 0");
    /* below TB_STATS_ALPHA_MIN 1 - alpha/2 rounds: refused, not a NaN interval */
    tb_interval ci;
    CHECK_FAILS(tb_mean_interval(b, 3, 1e-30, &ci, &err), TB_ERR_INVALID, &err, "alpha 1e-30");
    CHECK_FAILS(tb_std_interval(b, 3, 1e-30, &ci, &err), TB_ERR_INVALID, &err, "alpha 1e-30");
    CHECK_OK(tb_mean_interval(b, 3, TB_STATS_ALPHA_MIN, &ci, &err), &err);
    CHECK(isfinite(ci.lo) && isfinite(ci.hi) && ci.lo < ci.hi);
    o = tb_pab_options_default();
    o.gamma = 0.4;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &r, &err), TB_ERR_INVALID, &err, "gamma 0.4");
    o.gamma = 0.5 + 1e-9;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &r, &err), TB_ERR_INVALID, &err, "too close to 0.5");
    o = tb_pab_options_default();
    CHECK_FAILS(tb_pab_unpaired(b, 3, b, 3, &o, NULL, &r, &err), TB_ERR_INVALID, &err, "no rng");
    CHECK_FAILS(tb_pab_unpaired(b, 3, b, 0, &o, &rng, &r, &err), TB_ERR_INVALID, &err,
                "B has no results");
    CHECK_FAILS(tb_pab_unpaired(b, 3, a, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err,
                "result 1 of B is NaN"); /* named before the random pairing */
    /* Failures are reported without an error struct too. */
    CHECK(tb_pab_paired(a, b, 3, &o, &r, NULL) == TB_ERR_INVALID);
    tb_variation_group ok1[1] = {{"init", b, 3}};
    tb_variance_row row1;
    CHECK(tb_variance_decompose(ok1, 1, NULL, 1.5, &row1, NULL) == TB_ERR_INVALID);

    tb_summary s;
    double q;
    const double inf[2] = {1, INFINITY};
    CHECK_FAILS(tb_summarize(b, 0, NULL, NULL, &s, &err), TB_ERR_INVALID, &err, "empty sample");
    CHECK_FAILS(tb_summarize(inf, 2, NULL, NULL, &s, &err), TB_ERR_INVALID, &err, "value 1 is inf");
    CHECK_FAILS(tb_quantile(b, 3, 1.2, &q, &err), TB_ERR_INVALID, &err, "1.2 is outside [0, 1]");
    tb_bootstrap_options bo = {.resamples = 1000, .alpha = -0.1};
    CHECK_FAILS(tb_summarize(b, 3, &bo, &rng, &s, &err), TB_ERR_INVALID, &err, "alpha -0.1");
    bo.alpha = 0.05;
    CHECK_FAILS(tb_std_interval(b, 1, 0.05, &ci, &err), TB_ERR_INVALID, &err, "need at least 2");
    CHECK_FAILS(tb_mean_interval(inf, 2, 0.05, &ci, &err), TB_ERR_INVALID, &err,
                "value 1 is inf");
    CHECK_FAILS(tb_std_interval(b, 3, 0.0, &ci, &err), TB_ERR_INVALID, &err, "alpha 0 is outside");
    CHECK_FAILS(tb_bootstrap_ci(b, 3, (tb_statistic)2, &bo, &rng, &ci, &err), TB_ERR_INVALID,
                &err, "unknown statistic 2");

    tb_variance_row rows[2];
    tb_variation_group g1[1] = {{"dropout", b, 1}};
    CHECK_FAILS(tb_variance_decompose(g1, 1, NULL, 0.05, rows, &err), TB_ERR_INVALID, &err,
                "'dropout' has 1 results");
    tb_variation_group g2[1] = {{"augment", a, 3}};
    CHECK_FAILS(tb_variance_decompose(g2, 1, NULL, 0.05, rows, &err), TB_ERR_INVALID, &err,
                "augment: value 1 is nan");
}

/* Rank correlations against values worked by hand: x = 1..5, y = 2 1 4 3 5 (two adjacent
 * swaps): sum d^2 = 4, rho = 1 - 6 * 4 / (5 * 24) = 0.8; 8 concordant and 2 discordant pairs
 * of 10, tau = 0.6. With a tie, x = 1 2 2 3, y = 1 3 2 4: ranks of x 1 2.5 2.5 4, rho =
 * 4.5 / sqrt(4.5 * 5); 5 concordant, 0 discordant, 5 pairs untied in x and 6 in y, tau-b =
 * 5 / sqrt(30). */
static void test_rank_correlation(void)
{
    tb_error err = {0};
    const double x[5] = {1, 2, 3, 4, 5}, y[5] = {2, 1, 4, 3, 5}, r[5] = {50, 40, 30, 20, 10};
    double rho = 0, tau = 0;
    CHECK_OK(tb_spearman_rho(x, y, 5, &rho, &err), &err);
    CHECK_NEAR(rho, 0.8, 1e-15);
    CHECK_OK(tb_kendall_tau(x, y, 5, &tau, &err), &err);
    CHECK_NEAR(tau, 0.6, 1e-15);
    CHECK_OK(tb_spearman_rho(x, r, 5, &rho, &err), &err);
    CHECK_NEAR(rho, -1.0, 1e-15);
    CHECK_OK(tb_kendall_tau(x, r, 5, &tau, &err), &err);
    CHECK_NEAR(tau, -1.0, 1e-15);
    const double tx[4] = {1, 2, 2, 3}, ty[4] = {1, 3, 2, 4};
    CHECK_OK(tb_spearman_rho(tx, ty, 4, &rho, &err), &err);
    CHECK_NEAR(rho, 4.5 / sqrt(22.5), 1e-15);
    CHECK_OK(tb_kendall_tau(tx, ty, 4, &tau, &err), &err);
    CHECK_NEAR(tau, 5.0 / sqrt(30.0), 1e-15);
    /* only the order counts: +inf ranks last, two of them tie */
    const double inf3[3] = {1, INFINITY, INFINITY}, up3[3] = {1, 2, 3};
    CHECK_OK(tb_kendall_tau(inf3, up3, 3, &tau, &err), &err);
    CHECK_NEAR(tau, 2.0 / sqrt(6.0), 1e-15); /* 2 concordant, 2 and 3 untied pairs */
    const double same[3] = {2, 2, 2}, bad[3] = {1, NAN, 3};
    CHECK_FAILS(tb_kendall_tau(same, x, 3, &tau, &err), TB_ERR_INVALID, &err,
                "every first value is the same");
    CHECK_FAILS(tb_spearman_rho(x, same, 3, &rho, &err), TB_ERR_INVALID, &err,
                "every second value is the same");
    CHECK_FAILS(tb_spearman_rho(x, bad, 3, &rho, &err), TB_ERR_INVALID, &err,
                "pair 2 is not a number");
    CHECK_FAILS(tb_kendall_tau(x, y, 1, &tau, &err), TB_ERR_INVALID, &err, "2 or more pairs");
}

int main(void)
{
    test_normal();
    test_special_functions();
    test_clopper_pearson();
    test_runs_needed();
    test_summaries();
    test_ties_and_direction();
    test_decision_rule();
    test_pab_paired_and_describe();
    test_describe_digits();
    test_coverage_simulation();
    test_gaussian_pab();
    test_variance();
    test_bad_input();
    test_rank_correlation();
    return tb_test_finish("test_stats");
}

/* test_stats.c: the normal CDF and quantile, Noether's sample size, summaries and bootstrap
 * intervals, P(A>B) with its interval, tie rules and decision rule, the variance
 * decomposition, bad input, and simulations of interval coverage and of P(A>B) for Gaussian
 * scores. Simulations use fixed seeds, so every figure printed here is reproducible. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

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

static void test_noether(void)
{
    tb_error err = {0};
    int64_t n = 0;
    CHECK_OK(tb_noether_sample_size(0.05, 0.05, 0.75, &n, &err), &err);
    CHECK(n == 29); /* 28.859 rounded up */
    CHECK_OK(tb_noether_sample_size(0.05, 0.2, 0.75, &n, &err), &err);
    CHECK(n == 17); /* (1.6449 + 0.8416)^2 / 0.375 = 16.49 */
    CHECK_OK(tb_noether_sample_size(0.05, 0.05, 0.6, &n, &err), &err);
    CHECK(n == 181); /* 10.8222 / 0.06 = 180.37 */
    CHECK_FAILS(tb_noether_sample_size(0.0, 0.05, 0.75, &n, &err), TB_ERR_INVALID, &err, "alpha 0");
    CHECK_FAILS(tb_noether_sample_size(0.05, 1.0, 0.75, &n, &err), TB_ERR_INVALID, &err, "beta 1");
    CHECK_FAILS(tb_noether_sample_size(0.05, 0.05, 0.5, &n, &err), TB_ERR_INVALID, &err,
                "gamma 0.5");
    CHECK_FAILS(tb_noether_sample_size(NAN, 0.05, 0.75, &n, &err), TB_ERR_INVALID, &err, "alpha");
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

    /* Bootstrap intervals: a constant sample gives a point; a Gaussian sample an interval of
     * about the normal-theory width 2 * 1.96 * sigma / sqrt n around the mean. */
    tb_bootstrap_options bo = tb_bootstrap_options_default();
    tb_rng rng = tb_rng_make(11, 0);
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
    tb_interval sci;
    CHECK_OK(tb_bootstrap_ci(g, N, TB_STAT_STD, &bo, &rng, &sci, &err), &err);
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

    /* All tied: exactly 0.5 with a point interval, not significant (strict: 0). */
    double same[30];
    for (int i = 0; i < 30; i++)
        same[i] = 0.9;
    tb_pab_options o = tb_pab_options_default();
    tb_rng rng = tb_rng_make(5, 0);
    tb_pab_result r;
    CHECK_OK(tb_pab_paired(same, same, 30, &o, &rng, &r, &err), &err);
    CHECK(r.p == 0.5 && r.ci.lo == 0.5 && r.ci.hi == 0.5 && r.ties == 30);
    CHECK(r.verdict == TB_VERDICT_NOT_SIGNIFICANT);
    o.ties = TB_TIES_STRICT;
    CHECK_OK(tb_pab_paired(same, same, 30, &o, &rng, &r, &err), &err);
    CHECK(r.p == 0.0);
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
    CHECK_OK(tb_pab_paired(a, b, 30, &o, &rng, &r, &err), &err);
    CHECK(r.p == 1.0 && r.verdict == TB_VERDICT_A_BETTER && r.runs_needed == 29 &&
          r.more_runs == 0);
    tb_pab_describe(&r, "adamw", "sgd", msg, sizeof msg);
    CHECK(strstr(msg, "adamw better than sgd") != NULL);
    /* Lower is better (a loss): the same numbers make B better. */
    o.direction = TB_LOWER_IS_BETTER;
    CHECK_OK(tb_pab_paired(a, b, 30, &o, &rng, &r, &err), &err);
    CHECK(r.p == 0.0 && r.verdict == TB_VERDICT_B_BETTER);
    tb_pab_describe(&r, "adamw", "sgd", msg, sizeof msg);
    CHECK(strstr(msg, "sgd better than adamw") != NULL);
    o.direction = TB_HIGHER_IS_BETTER;
    /* Ten noisy pairs: not significant, and Noether asks for 19 more. */
    for (int i = 0; i < 10; i++)
        a[i] = tb_rng_normal(&rng);
    CHECK_OK(tb_pab_paired(a, b, 10, &o, &rng, &r, &err), &err);
    if (r.verdict == TB_VERDICT_NOT_SIGNIFICANT) {
        tb_pab_describe(&r, NULL, NULL, msg, sizeof msg);
        CHECK(strstr(msg, "not significant: need about 19 more runs") != NULL);
        CHECK(r.more_runs == 19);
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
static void coverage(int levels, tb_ties ties, double *covered, double *false_pos)
{
    enum { SIMS = 1000, N = 50 };
    tb_pab_options o = tb_pab_options_default();
    o.resamples = 500;
    o.ties = ties;
    tb_rng data = tb_rng_make(2021, levels), boot = tb_rng_make(2021, 100 + levels);
    double a[N], b[N];
    int cover = 0, fp = 0;
    tb_error err = {0};
    for (int s = 0; s < SIMS; s++) {
        for (int i = 0; i < N; i++) {
            a[i] = tb_rng_normal(&data);
            b[i] = tb_rng_normal(&data);
            if (levels > 0) {
                a[i] = floor(a[i] * levels / 4.0);
                b[i] = floor(b[i] * levels / 4.0);
            }
        }
        tb_pab_result r;
        if (tb_pab_paired(a, b, N, &o, &boot, &r, &err) != TB_OK) {
            CHECK(!"coverage simulation failed");
            return;
        }
        cover += r.ci.lo <= 0.5 && 0.5 <= r.ci.hi;
        fp += r.verdict == TB_VERDICT_A_BETTER || r.verdict == TB_VERDICT_B_BETTER;
    }
    *covered = (double)cover / SIMS;
    *false_pos = (double)fp / SIMS;
}

static void test_coverage_simulation(void)
{
    double cov, fp;
    coverage(0, TB_TIES_HALF, &cov, &fp);
    printf("identical Gaussians, N = 50 pairs, K = 500, 1000 comparisons: 95%% CI covers 0.5 in "
           "%.1f%%, a winner declared in %.1f%%\n",
           100.0 * cov, 100.0 * fp);
    CHECK(cov >= 0.93 && cov <= 0.97);
    CHECK(fp <= 0.07);
    coverage(8, TB_TIES_HALF, &cov, &fp);
    printf("identical discrete scores (~8 levels, many ties, ties = 1/2): covers 0.5 in %.1f%%, "
           "a winner declared in %.1f%%\n",
           100.0 * cov, 100.0 * fp);
    CHECK(cov >= 0.93 && cov <= 0.97);
    CHECK(fp <= 0.07);
    /* Strict '>' counts a tie as a loss for A, so with many ties the estimate sits below 0.5
     * and the interval misses it far more often: why ties count 1/2 by default. */
    double cov_strict, fp_strict;
    coverage(8, TB_TIES_STRICT, &cov_strict, &fp_strict);
    printf("same discrete scores, strict '>': covers 0.5 in %.1f%%, a winner declared in "
           "%.1f%%\n",
           100.0 * cov_strict, 100.0 * fp_strict);
    CHECK(cov_strict < cov - 0.1);
}

/* Gaussian scores with means differing by delta and std sigma: P(A>B) = Phi(delta/(sigma
 * sqrt 2)); the estimate converges to it, and with N = 29 (Noether) the rule finds A better
 * in most comparisons when the truth is exactly gamma = 0.75. */
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

    /* Power at the boundary: truth = gamma = 0.75, N = 29. */
    enum { SIMS = 500, N = 29 };
    double d75 = sqrt(2.0) * tb_normal_quantile(0.75);
    tb_pab_options o = tb_pab_options_default();
    o.resamples = 500;
    int found = 0;
    for (int s = 0; s < SIMS; s++) {
        for (int i = 0; i < N; i++) {
            a[i] = d75 + tb_rng_normal(&rng);
            b[i] = tb_rng_normal(&rng);
        }
        tb_pab_result r;
        CHECK_OK(tb_pab_paired(a, b, N, &o, &rng, &r, &err), &err);
        found += r.verdict == TB_VERDICT_A_BETTER;
    }
    printf("true P(A>B) = 0.75, N = 29, K = 500, %d comparisons: A better in %.1f%%\n", SIMS,
           100.0 * found / SIMS);
    CHECK(found > SIMS * 0.6);
    free(a);
    free(b);
}

/* ---- variance by source -------------------------------------------------------------------- */

static void test_variance(void)
{
    tb_error err = {0};
    tb_bootstrap_options bo = tb_bootstrap_options_default();
    tb_rng rng = tb_rng_make(9, 0);
    const double init[2] = {1, 3}, all[2] = {0, 4}; /* std sqrt 2 and 2 sqrt 2 */
    tb_variation_group groups[2] = {{"init", init, 2}, {"all", all, 2}};
    tb_variance_row rows[2];
    CHECK_OK(tb_variance_decompose(groups, 2, NULL, &bo, &rng, rows, &err), &err);
    CHECK(strcmp(rows[0].name, "init") == 0);
    CHECK_NEAR(rows[0].std, sqrt(2.0), 1e-15);
    CHECK_NEAR(rows[0].std_share, 0.5, 1e-15);
    CHECK_NEAR(rows[0].var_share, 0.25, 1e-15);
    CHECK_NEAR(rows[1].std_share, 1.0, 1e-15);
    CHECK(rows[0].std_ci.lo >= 0.0 && rows[0].std_ci.hi <= sqrt(2.0) + 1e-12);
    CHECK_OK(tb_variance_decompose(groups, 1, NULL, &bo, &rng, rows, &err), &err);
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
    CHECK_OK(tb_variance_decompose(sim, 3, "all", &bo, &rng, sr, &err), &err);
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
    CHECK_FAILS(tb_pab_paired(b, b, 0, &o, &rng, &r, &err), TB_ERR_INVALID, &err, "no pairs");
    CHECK_FAILS(tb_pab_paired(a, b, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err,
                "result 1 of A is NaN");
    CHECK_FAILS(
        tb_pab_estimate(b, a, 3, TB_HIGHER_IS_BETTER, TB_TIES_HALF, &p, NULL, NULL, NULL, &err),
        TB_ERR_INVALID, &err, "result 1 of B is NaN");
    CHECK_FAILS(tb_pab_estimate(b, b, 3, (tb_direction)7, TB_TIES_HALF, &p, NULL, NULL, NULL, &err),
                TB_ERR_INVALID, &err, "direction 7");
    o.alpha = 1.5;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err,
                "alpha 1.5 is outside (0, 1)");
    o.alpha = 0.0;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err, "alpha 0");
    o = tb_pab_options_default();
    o.gamma = 0.4;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err, "gamma 0.4");
    o = tb_pab_options_default();
    o.resamples = 10;
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err, "10 bootstrap");
    o = tb_pab_options_default();
    CHECK_FAILS(tb_pab_paired(b, b, 3, &o, NULL, &r, &err), TB_ERR_INVALID, &err, "no rng");
    CHECK_FAILS(tb_pab_unpaired(b, 3, b, 0, &o, &rng, &r, &err), TB_ERR_INVALID, &err,
                "B has no results");
    CHECK_FAILS(tb_pab_unpaired(b, 3, a, 3, &o, &rng, &r, &err), TB_ERR_INVALID, &err,
                "result 1 of B is NaN"); /* named before the random pairing */
    /* Failures are reported without an error struct too. */
    CHECK(tb_pab_paired(a, b, 3, &o, &rng, &r, NULL) == TB_ERR_INVALID);
    tb_bootstrap_options few = {.resamples = 5, .alpha = 0.05};
    tb_variation_group ok1[1] = {{"init", b, 3}};
    tb_variance_row row1;
    CHECK(tb_variance_decompose(ok1, 1, NULL, &few, &rng, &row1, NULL) == TB_ERR_INVALID);

    tb_summary s;
    double q;
    const double inf[2] = {1, INFINITY};
    CHECK_FAILS(tb_summarize(b, 0, NULL, NULL, &s, &err), TB_ERR_INVALID, &err, "empty sample");
    CHECK_FAILS(tb_summarize(inf, 2, NULL, NULL, &s, &err), TB_ERR_INVALID, &err, "value 1 is inf");
    CHECK_FAILS(tb_quantile(b, 3, 1.2, &q, &err), TB_ERR_INVALID, &err, "1.2 is outside [0, 1]");
    tb_bootstrap_options bo = {.resamples = 1000, .alpha = -0.1};
    CHECK_FAILS(tb_summarize(b, 3, &bo, &rng, &s, &err), TB_ERR_INVALID, &err, "alpha -0.1");
    tb_interval ci;
    bo.alpha = 0.05;
    CHECK_FAILS(tb_bootstrap_ci(b, 1, TB_STAT_STD, &bo, &rng, &ci, &err), TB_ERR_INVALID, &err,
                "need at least 2");

    tb_variance_row rows[2];
    tb_variation_group g1[1] = {{"dropout", b, 1}};
    CHECK_FAILS(tb_variance_decompose(g1, 1, NULL, &bo, &rng, rows, &err), TB_ERR_INVALID, &err,
                "'dropout' has 1 results");
    tb_variation_group g2[1] = {{"augment", a, 3}};
    CHECK_FAILS(tb_variance_decompose(g2, 1, NULL, &bo, &rng, rows, &err), TB_ERR_INVALID, &err,
                "augment: value 1 is nan");
}

int main(void)
{
    test_normal();
    test_noether();
    test_summaries();
    test_ties_and_direction();
    test_decision_rule();
    test_pab_paired_and_describe();
    test_coverage_simulation();
    test_gaussian_pab();
    test_variance();
    test_bad_input();
    return tb_test_finish("test_stats");
}

/* pab.c: P(A>B), the probability that algorithm A outperforms algorithm B, from paired or
 * randomly paired runs; its exact (Clopper-Pearson) interval; the decision rule (Bouthillier
 * et al., MLSys 2021) and the number of pairs the exact sign test needs for a given power. */
#include "stats_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tb_verdict_name(tb_verdict verdict)
{
    switch (verdict) {
    case TB_VERDICT_NOT_SIGNIFICANT:
        return "not_significant";
    case TB_VERDICT_NO_MEANINGFUL_DIFFERENCE:
        return "no_meaningful_difference";
    case TB_VERDICT_A_BETTER:
        return "a_better";
    case TB_VERDICT_B_BETTER:
        return "b_better";
    }
    return "unknown";
}

tb_pab_options tb_pab_options_default(void)
{
    tb_pab_options o = {
        .direction = TB_HIGHER_IS_BETTER,
        .ties = TB_TIES_HALF,
        .alpha = 0.05,
        .beta = 0.05,
        .gamma = 0.75,
    };
    return o;
}

/* The score of one pair for A: 1 if A is better, 0 if worse, 1/2 (or 0, strict) if tied. */
static double pair_score(double a, double b, tb_direction direction, tb_ties ties)
{
    if (direction == TB_LOWER_IS_BETTER) {
        double t = a;
        a = b;
        b = t;
    }
    if (a > b) return 1.0;
    if (a < b) return 0.0;
    return ties == TB_TIES_HALF ? 0.5 : 0.0;
}

static tb_status check_pairs(const double *a, const double *b, int64_t n, tb_direction direction,
                             tb_ties ties, tb_error *err)
{
    if (n < 1)
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): no pairs to compare (n = %lld)", (long long)n);
    if (!a || !b)
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): the results of %s are NULL", a ? "B" : "A");
    if (direction != TB_HIGHER_IS_BETTER && direction != TB_LOWER_IS_BETTER)
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): unknown direction %d", (int)direction);
    if (ties != TB_TIES_HALF && ties != TB_TIES_STRICT)
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): unknown tie rule %d", (int)ties);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]))
            return tb_fail(err, TB_ERR_INVALID, "P(A>B): result %lld of A is NaN", (long long)i);
        if (isnan(b[i]))
            return tb_fail(err, TB_ERR_INVALID, "P(A>B): result %lld of B is NaN", (long long)i);
    }
    return TB_OK;
}

tb_status tb_pab_estimate(const double *a, const double *b, int64_t n, tb_direction direction,
                          tb_ties ties, double *p, int64_t *wins, int64_t *n_ties, int64_t *losses,
                          tb_error *err)
{
    if (!p) return tb_fail(err, TB_ERR_INVALID, "P(A>B): p is NULL");
    tb_status st = check_pairs(a, b, n, direction, ties, err);
    if (st != TB_OK) return st;
    int64_t w = 0, t = 0, l = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = pair_score(a[i], b[i], direction, TB_TIES_HALF);
        w += s == 1.0;
        t += s == 0.5;
        l += s == 0.0;
    }
    double tie_weight = ties == TB_TIES_HALF ? 0.5 : 0.0;
    *p = ((double)w + tie_weight * (double)t) / (double)n;
    if (wins) *wins = w;
    if (n_ties) *n_ties = t;
    if (losses) *losses = l;
    return TB_OK;
}

static tb_status check_options(const tb_pab_options *o, tb_error *err)
{
    if (!o) return tb_fail(err, TB_ERR_INVALID, "P(A>B): no options given");
    if (!(o->alpha >= TB_STATS_ALPHA_MIN && o->alpha < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): alpha %g is outside [1e-10, 1)", o->alpha);
    if (!(o->beta > 0.0 && o->beta < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): beta %g is outside (0, 1)", o->beta);
    if (!(o->gamma > 0.5 && o->gamma < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): gamma %.17g is outside (0.5, 1)",
                       o->gamma);
    return TB_OK;
}

tb_verdict tb_pab_decide(tb_interval ci, double gamma)
{
    if (ci.lo > 0.5)
        return ci.hi > gamma ? TB_VERDICT_A_BETTER : TB_VERDICT_NO_MEANINGFUL_DIFFERENCE;
    if (ci.hi < 0.5)
        return 1.0 - ci.lo > gamma ? TB_VERDICT_B_BETTER : TB_VERDICT_NO_MEANINGFUL_DIFFERENCE;
    return TB_VERDICT_NOT_SIGNIFICANT;
}

tb_status tb_pab_paired(const double *a, const double *b, int64_t n, const tb_pab_options *opts,
                        tb_pab_result *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "P(A>B): out is NULL");
    tb_status st = check_options(opts, err);
    if (st != TB_OK) return st;
    tb_pab_result r = {0};
    st = tb_pab_estimate(a, b, n, opts->direction, opts->ties, &r.p, &r.wins, &r.ties, &r.losses,
                         err);
    if (st != TB_OK) return st;
    /* x = n p_hat, counted from the integers so that no rounding creeps in */
    double x = (double)r.wins + (opts->ties == TB_TIES_HALF ? 0.5 * (double)r.ties : 0.0);
    r.n = n;
    r.ci = tb_stats_clopper_pearson(x, n, opts->alpha);
    r.alpha = opts->alpha;
    r.beta = opts->beta;
    r.gamma = opts->gamma;
    /* tied pairs say nothing about which side is better: with no other pair there is no
     * evidence either way (strict ties would otherwise make identical results "B better") */
    r.verdict = r.wins + r.losses > 0 ? tb_pab_decide(r.ci, opts->gamma)
                                      : TB_VERDICT_NOT_SIGNIFICANT;
    st = tb_sign_test_sample_size(opts->alpha, opts->beta, opts->gamma, &r.runs_needed, err);
    if (st != TB_OK) {
        tb_error_prefix(err, "P(A>B)");
        return st;
    }
    r.more_runs = r.runs_needed > n ? r.runs_needed - n : 0;
    *out = r;
    return TB_OK;
}

/* The smallest count c whose Clopper-Pearson lower end exceeds 0.5 out of n (n + 1 if none):
 * by the duality of the interval and the test, lower(c) > 0.5 exactly when
 * P(Bin(n, 1/2) >= c) < alpha / 2. The tail falls as c grows, so a binary search finds it. */
static int64_t critical_count(int64_t n, double alpha)
{
    int64_t lo = 0, hi = n + 1; /* tail(lo) >= alpha/2 (tail(0) = 1); hi: the answer or past */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (tb_stats_binomial_upper_tail(n, (double)mid, 0.5) < 0.5 * alpha)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

tb_status tb_sign_test_sample_size(double alpha, double beta, double gamma, int64_t *n,
                                   tb_error *err)
{
    if (!n) return tb_fail(err, TB_ERR_INVALID, "runs needed: n is NULL");
    if (!(alpha >= TB_STATS_ALPHA_MIN && alpha < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "runs needed: alpha %g (test size) is outside [1e-10, 1)",
                       alpha);
    if (!(beta > 0.0 && beta < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "runs needed: beta %g (1 - power) is outside (0, 1)",
                       beta);
    if (!(gamma > 0.5 && gamma < 1.0))
        return tb_fail(err, TB_ERR_INVALID,
                       "runs needed: gamma %.17g (smallest meaningful P(A>B)) is outside (0.5, 1)",
                       gamma);
    /* The normal approximation of the sign test's power, N = ((z_{1-alpha/2} / 2 +
     * z_{1-beta} sqrt(gamma (1 - gamma))) / (gamma - 1/2))^2, sizes the search. */
    double z = 0.5 * tb_normal_quantile(1.0 - 0.5 * alpha) +
               tb_normal_quantile(1.0 - beta) * sqrt(gamma * (1.0 - gamma));
    double approx = z > 0.0 ? (z / (gamma - 0.5)) * (z / (gamma - 0.5)) : 1.0;
    if (!(approx <= 0.9 * TB_SIGN_TEST_MAX_PAIRS))
        return tb_fail(err, TB_ERR_INVALID,
                       "runs needed: gamma %.17g is too close to 0.5: the sign test would need "
                       "about %.3g pairs (more than %d)",
                       gamma, approx, TB_SIGN_TEST_MAX_PAIRS);
    /* The exact power is a sawtooth around the approximation and below it for small n, so the
     * scan starts well below N: at n = N / 2 the approximate power is Phi(z_{1-beta}/sqrt 2 -
     * 0.29 z_{1-alpha/2} / (2 sigma)), under 1 - beta by a wide margin when beta <= 1/2; for a
     * larger beta it starts at 1. Going up, the critical count grows by 0 or 1 per pair. */
    int64_t start = beta <= 0.5 ? (int64_t)floor(0.5 * approx) : 1;
    if (start < 1) start = 1;
    int64_t c = critical_count(start, alpha);
    for (int64_t m = start; m <= TB_SIGN_TEST_MAX_PAIRS; m++) {
        if (m > start && tb_stats_binomial_upper_tail(m, (double)c, 0.5) >= 0.5 * alpha) c++;
        if (c <= m && tb_stats_binomial_upper_tail(m, (double)c, gamma) >= 1.0 - beta) {
            *n = m;
            return TB_OK;
        }
    }
    return tb_fail(err, TB_ERR_INVALID,
                   "runs needed: gamma %.17g is too close to 0.5: the sign test would need more "
                   "than %d pairs",
                   gamma, TB_SIGN_TEST_MAX_PAIRS);
}

tb_status tb_pab_unpaired(const double *a, int64_t na, const double *b, int64_t nb,
                          const tb_pab_options *opts, tb_rng *rng, tb_pab_result *out,
                          tb_error *err)
{
    if (!a || !b)
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): the results of %s are NULL", a ? "B" : "A");
    if (!out) return tb_fail(err, TB_ERR_INVALID, "P(A>B): out is NULL");
    if (na < 1 || nb < 1)
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): %s has no results (%lld and %lld runs)",
                       na < 1 ? "A" : "B", (long long)na, (long long)nb);
    if (!rng) return tb_fail(err, TB_ERR_INVALID, "P(A>B): no rng given for the random pairing");
    tb_status st = check_options(opts, err);
    if (st != TB_OK) return st;
    /* Check here, so a NaN is named by its index before the shuffle. */
    for (int64_t i = 0; i < na; i++)
        if (isnan(a[i]))
            return tb_fail(err, TB_ERR_INVALID, "P(A>B): result %lld of A is NaN", (long long)i);
    for (int64_t i = 0; i < nb; i++)
        if (isnan(b[i]))
            return tb_fail(err, TB_ERR_INVALID, "P(A>B): result %lld of B is NaN", (long long)i);
    int64_t *ia = malloc((size_t)na * sizeof(int64_t));
    int64_t *ib = malloc((size_t)nb * sizeof(int64_t));
    int64_t m = na < nb ? na : nb;
    double *pa = malloc((size_t)m * sizeof(double)), *pb = malloc((size_t)m * sizeof(double));
    if (!ia || !ib || !pa || !pb) {
        st = tb_fail(err, TB_ERR_NOMEM, "P(A>B): cannot allocate the random pairing");
        goto done;
    }
    for (int64_t i = 0; i < na; i++)
        ia[i] = i;
    for (int64_t i = 0; i < nb; i++)
        ib[i] = i;
    tb_rng_shuffle_i64(rng, ia, na);
    tb_rng_shuffle_i64(rng, ib, nb);
    for (int64_t i = 0; i < m; i++) {
        pa[i] = a[ia[i]];
        pb[i] = b[ib[i]];
    }
    st = tb_pab_paired(pa, pb, m, opts, out, err);
done:
    free(ia);
    free(ib);
    free(pa);
    free(pb);
    return st;
}

/* Decimals (3 to 12) enough that the interval's ends print apart when they differ and that no
 * value inside (0, 1) prints as 0 or 1: 99999 wins of 100000 is not "[1.000, 1.000]". */
static int decimals_for(const tb_pab_result *r)
{
    const double v[3] = {r->ci.lo, r->p, r->ci.hi};
    int d = 3;
    for (; d < 12; d++) {
        char s[3][40];
        bool ok = true;
        for (int i = 0; i < 3; i++) {
            snprintf(s[i], sizeof s[i], "%.*f", d, v[i]);
            double shown = strtod(s[i], NULL);
            if (v[i] > 0 && v[i] < 1 && (shown == 0 || shown == 1)) ok = false;
        }
        if (r->ci.lo < r->ci.hi && strcmp(s[0], s[2]) == 0) ok = false;
        if (ok) break;
    }
    return d;
}

int tb_pab_describe(const tb_pab_result *r, const char *name_a, const char *name_b, char *buf,
                    size_t cap)
{
    if (!buf) cap = 0; /* the length it would need */
    if (!r) return snprintf(buf, cap, "%s", "");
    const char *A = name_a ? name_a : "A", *B = name_b ? name_b : "B";
    char tail[256];
    int d = decimals_for(r);
    snprintf(tail, sizeof tail, "P(%s>%s) = %.*f, %g%% CI [%.*f, %.*f], %lld pairs", A, B, d,
             r->p, 100.0 * (1.0 - r->alpha), d, r->ci.lo, d, r->ci.hi, (long long)r->n);
    switch (r->verdict) {
    case TB_VERDICT_A_BETTER:
        return snprintf(buf, cap, "%s better than %s: %s", A, B, tail);
    case TB_VERDICT_B_BETTER:
        return snprintf(buf, cap, "%s better than %s: %s", B, A, tail);
    case TB_VERDICT_NO_MEANINGFUL_DIFFERENCE:
        return snprintf(buf, cap,
                        "no meaningful difference between %s and %s: %s (significant, but the "
                        "interval stays within [%g, %g])",
                        A, B, tail, 1.0 - r->gamma, r->gamma);
    case TB_VERDICT_NOT_SIGNIFICANT:
    default:
        if (r->wins + r->losses == 0)
            return snprintf(buf, cap,
                            "no difference seen: all %lld pairs tied (identical results?), and "
                            "tied pairs carry no information on which is better, so more pairs "
                            "of the same kind would not decide: %s",
                            (long long)r->n, tail);
        if (r->more_runs > 0)
            return snprintf(buf, cap,
                            "not significant: need about %lld more pairs (%lld in all: the "
                            "exact sign test at alpha = %g then detects P >= %g with power "
                            "%g%s): %s",
                            (long long)r->more_runs, (long long)r->runs_needed, r->alpha,
                            r->gamma, 1.0 - r->beta,
                            r->ties > 0 ? " if no pair ties; tied pairs carry no information, "
                                          "so more are needed with ties" : "",
                            tail);
        return snprintf(buf, cap,
                        "not significant with %lld pairs, already the %lld the sign test needs "
                        "to detect P >= %g with power %g: any difference is likely smaller "
                        "than that: %s",
                        (long long)r->n, (long long)r->runs_needed, r->gamma, 1.0 - r->beta,
                        tail);
    }
}

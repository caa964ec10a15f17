/* pab.c: P(A>B), the probability that algorithm A outperforms algorithm B, from paired or
 * randomly paired runs; its percentile-bootstrap interval; the decision rule and Noether's
 * sample-size advice (Bouthillier et al., MLSys 2021). */
#include "stats_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
        .resamples = 1000,
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
    if (o->resamples < 100)
        return tb_fail(err, TB_ERR_INVALID,
                       "P(A>B): %d bootstrap resamples is too few (need at least 100; 1000 "
                       "recommended)",
                       o->resamples);
    if (!(o->alpha > 0.0 && o->alpha < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): alpha %g is outside (0, 1)", o->alpha);
    if (!(o->beta > 0.0 && o->beta < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): beta %g is outside (0, 1)", o->beta);
    if (!(o->gamma > 0.5 && o->gamma < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "P(A>B): gamma %g is outside (0.5, 1)", o->gamma);
    return TB_OK;
}

tb_verdict tb_pab_decide(tb_interval ci, double gamma)
{
    if (ci.lo > 0.5)
        return ci.hi > gamma ? TB_VERDICT_A_BETTER : TB_VERDICT_NO_MEANINGFUL_DIFFERENCE;
    if (ci.hi < 0.5)
        return ci.lo < 1.0 - gamma ? TB_VERDICT_B_BETTER : TB_VERDICT_NO_MEANINGFUL_DIFFERENCE;
    return TB_VERDICT_NOT_SIGNIFICANT;
}

tb_status tb_pab_paired(const double *a, const double *b, int64_t n, const tb_pab_options *opts,
                        tb_rng *rng, tb_pab_result *out, tb_error *err)
{
    tb_status st = check_options(opts, err);
    if (st != TB_OK) return st;
    if (!rng) return tb_fail(err, TB_ERR_INVALID, "P(A>B): no rng given for the bootstrap");
    tb_pab_result r = {0};
    st = tb_pab_estimate(a, b, n, opts->direction, opts->ties, &r.p, &r.wins, &r.ties, &r.losses,
                         err);
    if (st != TB_OK) return st;

    int64_t k = opts->resamples;
    double *score = malloc((size_t)n * sizeof(double));
    double *reps = malloc((size_t)k * sizeof(double));
    if (!score || !reps) {
        free(score);
        free(reps);
        return tb_fail(err, TB_ERR_NOMEM, "P(A>B): cannot allocate %lld + %lld values",
                       (long long)n, (long long)k);
    }
    for (int64_t i = 0; i < n; i++)
        score[i] = pair_score(a[i], b[i], opts->direction, opts->ties);
    for (int64_t rep = 0; rep < k; rep++) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i++)
            s += score[tb_rng_below(rng, (uint64_t)n)];
        reps[rep] = s / (double)n;
    }
    r.n = n;
    r.ci = tb_stats_percentile_interval(reps, k, opts->alpha);
    free(score);
    free(reps);

    r.alpha = opts->alpha;
    r.beta = opts->beta;
    r.gamma = opts->gamma;
    r.verdict = tb_pab_decide(r.ci, opts->gamma);
    st = tb_noether_sample_size(opts->alpha, opts->beta, opts->gamma, &r.runs_needed, err);
    if (st != TB_OK) {
        tb_error_prefix(err, "P(A>B)");
        return st;
    }
    r.more_runs = r.runs_needed > n ? r.runs_needed - n : 0;
    *out = r;
    return TB_OK;
}

tb_status tb_pab_unpaired(const double *a, int64_t na, const double *b, int64_t nb,
                          const tb_pab_options *opts, tb_rng *rng, tb_pab_result *out,
                          tb_error *err)
{
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
    st = tb_pab_paired(pa, pb, m, opts, rng, out, err);
done:
    free(ia);
    free(ib);
    free(pa);
    free(pb);
    return st;
}

int tb_pab_describe(const tb_pab_result *r, const char *name_a, const char *name_b, char *buf,
                    size_t cap)
{
    const char *A = name_a ? name_a : "A", *B = name_b ? name_b : "B";
    char tail[256];
    snprintf(tail, sizeof tail, "P(%s>%s) = %.3f, %g%% CI [%.3f, %.3f], %lld pairs", A, B, r->p,
             100.0 * (1.0 - r->alpha), r->ci.lo, r->ci.hi, (long long)r->n);
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
        if (r->more_runs > 0)
            return snprintf(buf, cap,
                            "not significant: need about %lld more runs (%lld pairs in all, "
                            "Noether, to detect P >= %g with alpha = %g, beta = %g): %s",
                            (long long)r->more_runs, (long long)r->runs_needed, r->gamma, r->alpha,
                            r->beta, tail);
        return snprintf(buf, cap,
                        "not significant with %lld pairs, already Noether's %lld for P >= %g: "
                        "any difference is likely smaller than that: %s",
                        (long long)r->n, (long long)r->runs_needed, r->gamma, tail);
    }
}

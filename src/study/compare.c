/* compare.c: is algorithm A better than B? Paired runs with the same seeds per pair, each
 * side tuned first by a search when asked, scored as P(A > B) with an interval and a verdict
 * (trainbench/stats.h). */
#include "study/study_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainbench/tune.h"

void tb_compare_result_free(tb_compare_result *r)
{
    if (!r) return;
    free(r->a);
    free(r->b);
    memset(r, 0, sizeof *r);
}

/* One side's search space, parsed (malformed JSON counts as a bad value, as in bench). */
static tb_status parse_space(const char *name, const char *space_json, const char *source,
                             tb_search_space **out, tb_error *err)
{
    char src[512];
    if (source) snprintf(src, sizeof src, "search space %s (%s)", source, name);
    else snprintf(src, sizeof src, "%s's search space", name);
    tb_status st = tb_search_space_parse(space_json, src, out, err);
    if (st == TB_ERR_FORMAT) {
        st = TB_ERR_INVALID;
        if (err) err->status = st;
    }
    return st;
}

/* Every search a side makes (index 0: the single search; 1..pairs: the ideal estimator's),
 * its points checked before any training, so a typo in B's search space fails at once
 * instead of after A's search. */
static tb_status check_searches(const tb_compare_config *cfg, const tb_search_space *space,
                                const tb_run_config *base, const tb_study_trainer *trainer,
                                const char *name, tb_error *err)
{
    for (int k = cfg->ideal ? 1 : 0; k <= (cfg->ideal ? cfg->pairs : 0); k++) {
        tb_status st = tb_study_search_check(space, cfg->search_trials,
                                             tb_study_seed(cfg->seed, TB_STREAM_HPARAM, k), base,
                                             trainer, err);
        if (st != TB_OK) return tb_error_prefix(err, "search space of %s", name);
    }
    return TB_OK;
}

/* The search of one side on the seeds of pair index `pair` (0: the base seeds; its hparam
 * seed draws the points, so each pair of the ideal estimator searches anew). */
static tb_status search(const tb_compare_config *cfg, const tb_run_config *c,
                        const tb_study_trainer *trainer, const tb_search_space *space,
                        const char *name, int64_t pair,
                        tb_hparams *best, double *best_reported, int64_t *runs, tb_error *err)
{
    char group[64];
    snprintf(group, sizeof group, "search %s", name);
    tb_run_config base = *c;
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        base.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, pair);
    tb_study_train_search t = {space, cfg->search_trials, TB_STUDY_SAMPLER_HALTON, cfg->metric,
                               group, cfg->on_run, cfg->user, runs, trainer};
    return tb_study_search_train(&t, &base, best, best_reported, err);
}

tb_status tb_compare_run(const tb_compare_config *cfg, tb_compare_result *out, tb_error *err)
{
    if (!cfg || !out)
        return tb_fail(err, TB_ERR_INVALID, "compare_run: %s is NULL", cfg ? "out" : "config");
    memset(out, 0, sizeof *out);
    const tb_study_trainer *ta = &cfg->trainer_a, *tb = &cfg->trainer_b;
    tb_status st = tb_study_check_base(&cfg->a, ta, err);
    if (st != TB_OK) return tb_error_prefix(err, "side A");
    st = tb_study_check_base(&cfg->b, tb, err);
    if (st != TB_OK) return tb_error_prefix(err, "side B");
    if (cfg->metric == TB_METRIC_TIME_PER_STEP || cfg->metric == TB_METRIC_EXAMPLES_PER_SECOND)
        return tb_fail(err, TB_ERR_INVALID, "compare cannot use %s: it is a study file's metric "
                       "(`trainbench study`, docs/STUDIES.md)", tb_study_metric_name(cfg->metric));
    if (cfg->pairs < 2)
        return tb_fail(err, TB_ERR_INVALID, "a comparison needs at least 2 pairs, got %d",
                       cfg->pairs);
    if (cfg->search_trials < 0)
        return tb_fail(err, TB_ERR_INVALID, "a search needs at least 1 trial, got %d",
                       cfg->search_trials);
    if (cfg->search_trials > 0 && (!cfg->space_a || !cfg->space_b))
        return tb_fail(err, TB_ERR_INVALID, "a search needs a search space for each side: "
                       "%s is NULL", cfg->space_a ? "space_b" : "space_a");
    int64_t need; /* the P(A>B) options, checked now rather than after the trainings */
    st = tb_sign_test_sample_size(cfg->pab.alpha, cfg->pab.beta, cfg->pab.gamma, &need, err);
    if (st != TB_OK) return st;
    tb_run_config base_a = cfg->a, base_b = cfg->b;
    st = tb_study_prepare_config(cfg->metric, &base_a, err);
    if (st == TB_OK) st = tb_study_prepare_config(cfg->metric, &base_b, err);
    if (st != TB_OK) return st;
    out->a = malloc((size_t)cfg->pairs * sizeof(double));
    out->b = malloc((size_t)cfg->pairs * sizeof(double));
    if (!out->a || !out->b) {
        tb_compare_result_free(out);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for comparison results");
    }
    const char *na = cfg->name_a ? cfg->name_a : "A", *nb = cfg->name_b ? cfg->name_b : "B";
    out->best_a = base_a.model.hparams;
    out->best_b = base_b.model.hparams;
    bool searching = cfg->search_trials > 0;
    tb_search_space *sp_a = NULL, *sp_b = NULL;
    if (searching) {
        st = parse_space(na, cfg->space_a, cfg->space_a_source, &sp_a, err);
        if (st == TB_OK) st = parse_space(nb, cfg->space_b, cfg->space_b_source, &sp_b, err);
        if (st == TB_OK) st = check_searches(cfg, sp_a, &base_a, ta, na, err);
        if (st == TB_OK) st = check_searches(cfg, sp_b, &base_b, tb, nb, err);
    }
    if (st == TB_OK && searching && !cfg->ideal) { /* one search per side, on the base seeds */
        st = search(cfg, &base_a, ta, sp_a, na, 0, &out->best_a, NULL, &out->runs, err);
        if (st == TB_OK)
            st = search(cfg, &base_b, tb, sp_b, nb, 0, &out->best_b, NULL, &out->runs, err);
    }
    if (st != TB_OK) {
        tb_search_space_destroy(sp_a);
        tb_search_space_destroy(sp_b);
        tb_compare_result_free(out);
        return st;
    }
    int total = 2 * cfg->pairs;
    for (int i = 0; i < cfg->pairs && st == TB_OK; i++) {
        double va = NAN, vb = NAN;
        tb_status sa, sb;
        if (searching && cfg->ideal) {
            /* IdealEst: a new search on this pair's seeds (split, init, order, ... and the
             * search's own points); the sample is the selected trial's result. A side whose
             * every trial diverged has diverged in this pair. */
            tb_hparams ha, hb;
            sa = search(cfg, &base_a, ta, sp_a, na, i + 1, &ha, &va, &out->runs, err);
            sb = sa == TB_OK || sa == TB_ERR_NUMERIC
                     ? search(cfg, &base_b, tb, sp_b, nb, i + 1, &hb, &vb, &out->runs, err)
                     : sa;
            if (i == 0) {
                if (sa == TB_OK) out->best_a = ha;
                if (sb == TB_OK) out->best_b = hb;
            }
            if (sa == TB_OK && isnan(va)) sa = TB_ERR_NUMERIC; /* the reported metric */
            if (sb == TB_OK && isnan(vb)) sb = TB_ERR_NUMERIC;
        } else {
            tb_run_config ca = base_a, cb = base_b;
            ca.model.hparams = out->best_a;
            cb.model.hparams = out->best_b;
            for (int s = 0; s < TB_STREAM_COUNT; s++)
                ca.seeds[s] = cb.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, i + 1);
            sa = tb_study_run_one(&ca, ta, cfg->metric, cfg->metric, &va, NULL, na, 2 * i + 1,
                                  total, cfg->on_run, cfg->user, err);
            sb = sa == TB_OK || sa == TB_ERR_NUMERIC
                     ? tb_study_run_one(&cb, tb, cfg->metric, cfg->metric, &vb, NULL, nb,
                                        2 * i + 2, total, cfg->on_run, cfg->user, err)
                     : sa;
            out->runs += 1 + (sa == TB_OK || sa == TB_ERR_NUMERIC);
        }
        if ((sa != TB_OK && sa != TB_ERR_NUMERIC) || (sb != TB_OK && sb != TB_ERR_NUMERIC)) {
            st = sa != TB_OK && sa != TB_ERR_NUMERIC ? sa : sb;
            break;
        }
        /* A divergence scores as the worst result (lower is better: +inf), so the side that
         * diverged loses the pair, and two divergences tie. Leaving the pair out instead
         * would favour the side that diverges. Under time_to_target +inf is also a miss: a
         * run that diverged never reached the target. */
        out->failed_a += sa == TB_ERR_NUMERIC;
        out->failed_b += sb == TB_ERR_NUMERIC;
        out->a[out->n] = sa == TB_OK ? va : INFINITY;
        out->b[out->n] = sb == TB_OK ? vb : INFINITY;
        out->n++;
    }
    tb_search_space_destroy(sp_a);
    tb_search_space_destroy(sp_b);
    if (st == TB_OK && out->failed_a == out->n && out->failed_b == out->n)
        st = tb_fail(err, TB_ERR_NUMERIC, "every run diverged, on both sides (%lld pairs)",
                     (long long)out->n);
    tb_pab_options opts = cfg->pab;
    opts.direction = TB_LOWER_IS_BETTER;
    /* summaries of each side's finite values (a divergence or a missed target is +inf) */
    if (st == TB_OK) st = tb_summarize_finite(out->a, out->n, NULL, NULL, &out->summary_a, err);
    if (st == TB_OK) st = tb_summarize_finite(out->b, out->n, NULL, NULL, &out->summary_b, err);
    if (st == TB_OK) st = tb_pab_paired(out->a, out->b, out->n, &opts, &out->pab, err);
    if (st != TB_OK) tb_compare_result_free(out);
    return st;
}


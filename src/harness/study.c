/* study.c: variance-by-source studies and paired comparisons, run as many tb_train calls. */
#include "trainbench/study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[] = {"validation_error", "validation_loss", "test_error",
                                           "test_loss"};

const char *tb_study_metric_name(tb_study_metric m)
{
    return (unsigned)m < 4 ? metric_names[m] : "unknown";
}

tb_status tb_study_metric_parse(const char *name, tb_study_metric *out, tb_error *err)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, metric_names[i]) == 0) {
            *out = (tb_study_metric)i;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID,
                   "unknown metric '%s' (expected validation_error, validation_loss, "
                   "test_error or test_loss)",
                   name);
}

double tb_study_metric_value(tb_study_metric m, const tb_train_result *r)
{
    switch (m) {
    case TB_METRIC_VALIDATION_ERROR: return r->validation.error_rate;
    case TB_METRIC_VALIDATION_LOSS: return r->validation.loss;
    case TB_METRIC_TEST_ERROR: return r->test.error_rate;
    case TB_METRIC_TEST_LOSS: return r->test.loss;
    }
    return NAN;
}

uint64_t tb_study_seed(uint64_t seed, tb_stream source, int64_t index)
{
    if (index == 0) return seed;
    tb_rng r = tb_rng_make(seed ^ 0x5eedull, 1000u + (uint64_t)source);
    r.counter = (uint64_t)index;
    return tb_rng_u64(&r);
}

/* One run; returns the metric (NaN if the run failed or diverged). */
static double one_run(const tb_train_config *cfg, tb_study_metric metric, const char *group,
                      int index, int total, tb_study_run_fn on_run, void *user)
{
    tb_train_result r;
    tb_error e = {0};
    tb_status st = tb_train(cfg, &r, &e);
    if (on_run) on_run(user, group, index, total, st == TB_OK ? &r : NULL, st == TB_OK ? NULL : &e);
    if (st != TB_OK) return NAN;
    return tb_study_metric_value(metric, &r);
}

static tb_status check_base(const tb_train_config *c, tb_error *err)
{
    if (!c->workload || !c->algorithm)
        return tb_fail(err, TB_ERR_INVALID, "a study needs a workload and an algorithm");
    return TB_OK;
}

void tb_variance_study_free(tb_variance_study *s)
{
    if (!s) return;
    for (int g = 0; g < s->n_groups; g++) free(s->values[g]);
    memset(s, 0, sizeof *s);
}

tb_status tb_variance_study_run(const tb_variance_study_config *cfg, tb_variance_study *out,
                                tb_error *err)
{
    memset(out, 0, sizeof *out);
    tb_status st = check_base(&cfg->base, err);
    if (st != TB_OK) return st;
    if (cfg->runs < 2)
        return tb_fail(err, TB_ERR_INVALID, "a variance study needs at least 2 runs per source, "
                       "got %d", cfg->runs);
    if (cfg->n_sources < 0 || cfg->n_sources > TB_STREAM_COUNT)
        return tb_fail(err, TB_ERR_INVALID, "%d sources of variation (at most %d)",
                       cfg->n_sources, TB_STREAM_COUNT);
    int n_groups = cfg->n_sources + 1;
    int total = n_groups * cfg->runs;
    for (int g = 0; g < n_groups; g++) {
        bool all = g == cfg->n_sources;
        out->names[g] = all ? "all" : tb_stream_name(cfg->sources[g]);
        if (!out->names[g]) {
            tb_variance_study_free(out);
            return tb_fail(err, TB_ERR_INVALID, "unknown source of variation %d",
                           (int)cfg->sources[g]);
        }
        out->values[g] = malloc((size_t)cfg->runs * sizeof(double));
        out->n_groups = g + 1;
        if (!out->values[g]) {
            tb_variance_study_free(out);
            return tb_fail(err, TB_ERR_NOMEM, "out of memory for study results");
        }
        for (int i = 0; i < cfg->runs; i++) {
            tb_train_config c = cfg->base;
            for (int s = 0; s < TB_STREAM_COUNT; s++) c.seeds[s] = tb_study_seed(cfg->seed, s, 0);
            if (all)
                for (int s = 0; s < TB_STREAM_COUNT; s++)
                    c.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, i + 1);
            else
                c.seeds[cfg->sources[g]] = tb_study_seed(cfg->seed, cfg->sources[g], i + 1);
            double v = one_run(&c, cfg->metric, out->names[g], g * cfg->runs + i + 1, total,
                               cfg->on_run, cfg->user);
            if (isfinite(v))
                out->values[g][out->n_values[g]++] = v;
            else
                out->failed[g]++;
        }
    }
    tb_variation_group groups[TB_STUDY_MAX_GROUPS];
    for (int g = 0; g < n_groups; g++) {
        if (out->n_values[g] < 2) {
            st = tb_fail(err, TB_ERR_NUMERIC, "source %s: only %lld of %d runs finished",
                         out->names[g], (long long)out->n_values[g], cfg->runs);
            tb_variance_study_free(out);
            return st;
        }
        groups[g] = (tb_variation_group){out->names[g], out->values[g], out->n_values[g]};
    }
    tb_bootstrap_options boot = tb_bootstrap_options_default();
    tb_rng rng = tb_rng_make(cfg->seed, TB_STREAM_HPARAM + 100);
    st = tb_variance_decompose(groups, n_groups, "all", &boot, &rng, out->rows, err);
    if (st != TB_OK) tb_variance_study_free(out);
    return st;
}

void tb_compare_result_free(tb_compare_result *r)
{
    if (!r) return;
    free(r->a);
    free(r->b);
    memset(r, 0, sizeof *r);
}

tb_status tb_compare_run(const tb_compare_config *cfg, tb_compare_result *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    tb_status st = check_base(&cfg->a, err);
    if (st == TB_OK) st = check_base(&cfg->b, err);
    if (st != TB_OK) return st;
    if (cfg->pairs < 2)
        return tb_fail(err, TB_ERR_INVALID, "a comparison needs at least 2 pairs, got %d",
                       cfg->pairs);
    out->a = malloc((size_t)cfg->pairs * sizeof(double));
    out->b = malloc((size_t)cfg->pairs * sizeof(double));
    if (!out->a || !out->b) {
        tb_compare_result_free(out);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for comparison results");
    }
    const char *na = cfg->name_a ? cfg->name_a : "A", *nb = cfg->name_b ? cfg->name_b : "B";
    int total = 2 * cfg->pairs;
    for (int i = 0; i < cfg->pairs; i++) {
        tb_train_config ca = cfg->a, cb = cfg->b;
        for (int s = 0; s < TB_STREAM_COUNT; s++)
            ca.seeds[s] = cb.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, i + 1);
        double va = one_run(&ca, cfg->metric, na, 2 * i + 1, total, cfg->on_run, cfg->user);
        double vb = one_run(&cb, cfg->metric, nb, 2 * i + 2, total, cfg->on_run, cfg->user);
        out->failed_a += !isfinite(va);
        out->failed_b += !isfinite(vb);
        if (isfinite(va) && isfinite(vb)) {
            out->a[out->n] = va;
            out->b[out->n] = vb;
            out->n++;
        }
    }
    if (out->n < 2) {
        st = tb_fail(err, TB_ERR_NUMERIC, "only %lld pairs finished on both sides "
                     "(%lld runs of %s and %lld of %s failed)", (long long)out->n,
                     (long long)out->failed_a, na, (long long)out->failed_b, nb);
        tb_compare_result_free(out);
        return st;
    }
    tb_pab_options opts = cfg->pab;
    opts.direction = TB_LOWER_IS_BETTER;
    tb_rng rng = tb_rng_make(cfg->seed, TB_STREAM_HPARAM + 101);
    st = tb_summarize(out->a, out->n, NULL, NULL, &out->summary_a, err);
    if (st == TB_OK) st = tb_summarize(out->b, out->n, NULL, NULL, &out->summary_b, err);
    if (st == TB_OK) st = tb_pab_paired(out->a, out->b, out->n, &opts, &rng, &out->pab, err);
    if (st != TB_OK) tb_compare_result_free(out);
    return st;
}

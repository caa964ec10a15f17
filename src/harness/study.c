/* study.c: variance-by-source studies and paired comparisons, run as many tb_train calls. */
#include "trainbench/study.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainbench/tune.h"

#define N_METRICS 7
static const char *const metric_names[N_METRICS] = {
    "validation", "test", "validation_error", "validation_loss", "test_error", "test_loss",
    "time_to_target"};

const char *tb_study_metric_name(tb_study_metric m)
{
    return (unsigned)m < N_METRICS ? metric_names[m] : "unknown";
}

tb_status tb_study_metric_parse(const char *name, tb_study_metric *out, tb_error *err)
{
    for (int i = 0; i < N_METRICS; i++)
        if (strcmp(name, metric_names[i]) == 0) {
            *out = (tb_study_metric)i;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID,
                   "unknown metric '%s' (expected validation, test, validation_error, "
                   "validation_loss, test_error, test_loss or time_to_target)",
                   name);
}

double tb_study_metric_value(tb_study_metric m, const tb_train_result *r)
{
    switch (m) {
    case TB_METRIC_VALIDATION: return r->validation.metric;
    case TB_METRIC_TEST: return r->test.metric;
    case TB_METRIC_VALIDATION_ERROR: return r->validation.error_rate;
    case TB_METRIC_VALIDATION_LOSS: return r->validation.loss;
    case TB_METRIC_TEST_ERROR: return r->test.error_rate;
    case TB_METRIC_TEST_LOSS: return r->test.loss;
    case TB_METRIC_TIME_TO_TARGET: return r->reached_target ? r->time_to_target_s : INFINITY;
    }
    return NAN;
}

tb_status tb_study_prepare_config(tb_study_metric m, tb_train_config *c, tb_error *err)
{
    if (m != TB_METRIC_TIME_TO_TARGET) return TB_OK;
    const tb_workload_info *w = NULL;
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, c->workload) == 0) w = tb_workload_info_at(i);
    if (!w) return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s'", c->workload);
    c->stop_at_target = true;
    if (c->max_time_s <= 0) c->max_time_s = w->max_runtime_s;
    if (c->eval_period_s <= 0) c->eval_period_s = w->eval_period_s;
    if (c->max_steps <= 0) c->max_steps = 1000000000; /* the budget ends the run */
    if (c->schedule == TB_SCHEDULE_WARMUP_COSINE) c->schedule = TB_SCHEDULE_CONSTANT;
    return TB_OK;
}

uint64_t tb_study_seed(uint64_t seed, tb_stream source, int64_t index)
{
    if (index == 0) return seed;
    tb_rng r = tb_rng_make(seed ^ 0x5eedull, 1000u + (uint64_t)source);
    r.counter = (uint64_t)index;
    return tb_rng_u64(&r);
}

/* One run; returns metric m (NaN if the run failed or diverged) and, if other is not NULL,
 * writes metric `other_m` of the same run to *other. */
static double run_two(const tb_train_config *cfg, tb_study_metric m, tb_study_metric other_m,
                      double *other, const char *group, int index, int total,
                      tb_study_run_fn on_run, void *user)
{
    tb_train_result r;
    tb_error e = {0};
    tb_status st = tb_train(cfg, &r, &e);
    if (on_run) on_run(user, group, index, total, st == TB_OK ? &r : NULL, st == TB_OK ? NULL : &e);
    if (other) *other = NAN;
    if (st != TB_OK) return NAN;
    double v = tb_study_metric_value(m, &r);
    if (other) {
        *other = tb_study_metric_value(other_m, &r);
        if (isinf(*other) && other_m != TB_METRIC_TIME_TO_TARGET) *other = NAN;
    }
    return isinf(v) && m != TB_METRIC_TIME_TO_TARGET ? NAN : v;
}

static double one_run(const tb_train_config *cfg, tb_study_metric metric, const char *group,
                      int index, int total, tb_study_run_fn on_run, void *user)
{
    return run_two(cfg, metric, metric, NULL, group, index, total, on_run, user);
}

/* A search selects on validation, never on test. */
static tb_study_metric selection_metric(tb_study_metric m)
{
    return m == TB_METRIC_TEST_ERROR  ? TB_METRIC_VALIDATION_ERROR
           : m == TB_METRIC_TEST_LOSS ? TB_METRIC_VALIDATION_LOSS
           : m == TB_METRIC_TEST      ? TB_METRIC_VALIDATION
                                      : m;
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
    tb_train_config base = cfg->base;
    st = tb_study_prepare_config(cfg->metric, &base, err);
    if (st != TB_OK) return st;
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
            tb_train_config c = base;
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
    st = tb_variance_decompose(groups, n_groups, "all", 0.05, out->rows, err);
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

/* Draws the points of every search a comparison makes on one side: study 0 for the single
 * search, study i + 1 for pair i's search of the ideal estimator; studies get distinct points
 * (tb_search_space_sample). */
static tb_status draw_points(const tb_compare_config *cfg, const char *name,
                             const char *space_json, tb_hparams **out, tb_error *err)
{
    tb_search_space *space = NULL;
    tb_status st = tb_search_space_parse(space_json, name, &space, err);
    if (st != TB_OK) return st;
    int studies = cfg->ideal ? cfg->pairs + 1 : 1;
    *out = calloc((size_t)studies * (size_t)cfg->search_trials, sizeof **out);
    if (!*out) st = tb_fail(err, TB_ERR_NOMEM, "out of memory for search points");
    if (st == TB_OK)
        st = tb_search_space_sample(space, studies, cfg->search_trials,
                                    tb_study_seed(cfg->seed, TB_STREAM_HPARAM, 0), *out, err);
    tb_search_space_destroy(space);
    if (st != TB_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* Trains the `trials` points (given) on the seeds of pair index `pair` (0: the base seeds),
 * selects the best by the validation form of the metric, writes its configuration to best and
 * its reported metric to *best_reported (if not NULL). */
static tb_status search(const tb_compare_config *cfg, const tb_train_config *c, const char *name,
                        const tb_hparams *points, int64_t pair, tb_hparams *best,
                        double *best_reported, int64_t *runs, tb_error *err)
{
    tb_status st = TB_OK;
    double best_v = INFINITY, best_r = NAN;
    int best_i = -1;
    char group[64];
    snprintf(group, sizeof group, "search %s", name);
    for (int i = 0; i < cfg->search_trials; i++) {
        tb_train_config t = *c;
        for (int k = 0; k < points[i].count; k++)
            tb_hparams_set(&t.hparams, points[i].names[k], points[i].values[k], NULL);
        for (int s = 0; s < TB_STREAM_COUNT; s++)
            t.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, pair);
        double reported;
        double v = run_two(&t, selection_metric(cfg->metric), cfg->metric, &reported, group,
                           i + 1, cfg->search_trials, cfg->on_run, cfg->user);
        (*runs)++;
        if (!isnan(v) && (best_i < 0 || v < best_v)) {
            best_v = v;
            best_r = reported;
            best_i = i;
        }
    }
    if (best_i < 0)
        st = tb_fail(err, TB_ERR_NUMERIC, "%s: every one of the %d search trials failed", name,
                     cfg->search_trials);
    if (best_reported) *best_reported = best_r;
    if (st == TB_OK) {
        *best = c->hparams;
        for (int k = 0; k < points[best_i].count; k++)
            tb_hparams_set(best, points[best_i].names[k], points[best_i].values[k], NULL);
    }
    return st;
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
    if (cfg->search_trials < 0 || (cfg->search_trials > 0 && (!cfg->space_a || !cfg->space_b)))
        return tb_fail(err, TB_ERR_INVALID, "a search needs a search space for each side and "
                       "at least 1 trial");
    tb_train_config base_a = cfg->a, base_b = cfg->b;
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
    out->best_a = base_a.hparams;
    out->best_b = base_b.hparams;
    bool searching = cfg->search_trials > 0;
    tb_hparams *pts_a = NULL, *pts_b = NULL;
    const int T = cfg->search_trials;
    if (searching) {
        st = draw_points(cfg, na, cfg->space_a, &pts_a, err);
        if (st == TB_OK) st = draw_points(cfg, nb, cfg->space_b, &pts_b, err);
    }
    if (st == TB_OK && searching && !cfg->ideal) { /* one search per side, on the base seeds */
        st = search(cfg, &base_a, na, pts_a, 0, &out->best_a, NULL, &out->runs, err);
        if (st == TB_OK)
            st = search(cfg, &base_b, nb, pts_b, 0, &out->best_b, NULL, &out->runs, err);
    }
    if (st != TB_OK) {
        free(pts_a);
        free(pts_b);
        tb_compare_result_free(out);
        return st;
    }
    int total = 2 * cfg->pairs;
    for (int i = 0; i < cfg->pairs; i++) {
        double va, vb;
        if (searching && cfg->ideal) {
            /* IdealEst: a new search on this pair's seeds (split, init, order, ... and the
             * search's own points); the sample is the selected trial's result */
            tb_hparams ha, hb;
            st = search(cfg, &base_a, na, pts_a + (size_t)(i + 1) * T, i + 1, &ha, &va,
                        &out->runs, err);
            if (st == TB_OK)
                st = search(cfg, &base_b, nb, pts_b + (size_t)(i + 1) * T, i + 1, &hb, &vb,
                            &out->runs, err);
            if (st != TB_OK) {
                free(pts_a);
                free(pts_b);
                tb_compare_result_free(out);
                return st;
            }
            if (i == 0) {
                out->best_a = ha;
                out->best_b = hb;
            }
        } else {
            tb_train_config ca = base_a, cb = base_b;
            ca.hparams = out->best_a;
            cb.hparams = out->best_b;
            for (int s = 0; s < TB_STREAM_COUNT; s++)
                ca.seeds[s] = cb.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, i + 1);
            va = one_run(&ca, cfg->metric, na, 2 * i + 1, total, cfg->on_run, cfg->user);
            vb = one_run(&cb, cfg->metric, nb, 2 * i + 2, total, cfg->on_run, cfg->user);
            out->runs += 2;
        }
        out->failed_a += isnan(va);
        out->failed_b += isnan(vb);
        if (!isnan(va) && !isnan(vb)) {
            out->a[out->n] = va;
            out->b[out->n] = vb;
            out->n++;
        }
    }
    free(pts_a);
    free(pts_b);
    if (out->n < 2) {
        st = tb_fail(err, TB_ERR_NUMERIC, "only %lld pairs finished on both sides "
                     "(%lld runs of %s and %lld of %s failed)", (long long)out->n,
                     (long long)out->failed_a, na, (long long)out->failed_b, nb);
        tb_compare_result_free(out);
        return st;
    }
    tb_pab_options opts = cfg->pab;
    opts.direction = TB_LOWER_IS_BETTER;
    /* summaries need finite values (time to target may be +inf: a miss) */
    bool finite = true;
    for (int64_t i = 0; i < out->n; i++) finite &= isfinite(out->a[i]) && isfinite(out->b[i]);
    if (finite) {
        st = tb_summarize(out->a, out->n, NULL, NULL, &out->summary_a, err);
        if (st == TB_OK) st = tb_summarize(out->b, out->n, NULL, NULL, &out->summary_b, err);
    } else {
        out->summary_a.mean = out->summary_b.mean = NAN;
        out->summary_a.std = out->summary_b.std = NAN;
        out->summary_a.median = out->summary_b.median = NAN;
    }
    if (st == TB_OK) st = tb_pab_paired(out->a, out->b, out->n, &opts, &out->pab, err);
    if (st != TB_OK) tb_compare_result_free(out);
    return st;
}

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
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "study_metric_parse: %s is NULL",
                       name ? "out" : "name");
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
    if (!r) return NAN;
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

/* An error-rate metric asked of a workload that does not classify. */
static tb_status no_error_rate(const char *workload, const char *where, tb_error *err)
{
    return tb_fail(err, TB_ERR_INVALID,
                   "%s%sworkload %s has no error rate (it does not classify): use a loss or "
                   "its own metric (-m validation)", where, where[0] ? ": " : "", workload);
}

tb_status tb_study_prepare_config(tb_study_metric m, tb_run_config *c, tb_error *err)
{
    if (!c || !c->model.workload)
        return tb_fail(err, TB_ERR_INVALID, "study_prepare_config: %s is NULL",
                       c ? "config->workload" : "config");
    const tb_workload_info *w = NULL;
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, c->model.workload) == 0) w = tb_workload_info_at(i);
    if (!w) return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s'", c->model.workload);
    if ((m == TB_METRIC_VALIDATION_ERROR || m == TB_METRIC_TEST_ERROR) && w->no_error_rate)
        return no_error_rate(c->model.workload, "", err);
    if (m != TB_METRIC_TIME_TO_TARGET) return TB_OK;
    c->eval.stop_at_target = true;
    if (c->length.max_time_s <= 0) c->length.max_time_s = w->max_runtime_s;
    if (c->eval.period_s <= 0) c->eval.period_s = w->eval_period_s;
    /* the budget ends the run: no step or epoch limit, so the schedule spans the workload's
     * step hint (tb_train) */
    if (c->length.max_steps <= 0) c->length.epochs = 0;
    if (c->length.schedule == TB_SCHEDULE_WARMUP_COSINE) c->length.schedule = TB_SCHEDULE_CONSTANT;
    return TB_OK;
}

uint64_t tb_study_seed(uint64_t seed, tb_stream source, int64_t index)
{
    if (index == 0) return seed;
    tb_rng r = tb_rng_make(seed ^ 0x5eedull, 1000u + (uint64_t)source);
    r.counter = (uint64_t)index;
    return tb_rng_u64(&r);
}

/* One run. TB_OK: *value is metric m (finite, or +inf for a missed target) and, if other is
 * not NULL, *other is metric other_m of the same run (NaN if not finite). TB_ERR_NUMERIC: the
 * run diverged (tb_train said so, or its metric is NaN or infinite), *value is NaN; the study
 * goes on. Any other status is a configuration or system error, returned in err with the run
 * named: the study stops. */
static tb_status run_two(const tb_run_config *cfg, tb_study_metric m, tb_study_metric other_m,
                         double *value, double *other, const char *group, int index, int total,
                         tb_study_run_fn on_run, void *user, tb_error *err)
{
    tb_train_result r;
    tb_error e = {0};
    tb_status st = tb_train(cfg, NULL, &r, &e);
    if (on_run) on_run(user, group, index, total, st == TB_OK ? &r : NULL, st == TB_OK ? NULL : &e);
    *value = NAN;
    if (other) *other = NAN;
    if (st == TB_ERR_NUMERIC) return st;
    if (st != TB_OK) {
        *err = e;
        return tb_error_prefix(err, "%s, run %d", group, index);
    }
    double v = tb_study_metric_value(m, &r);
    const bool error_metric = m == TB_METRIC_VALIDATION_ERROR || m == TB_METRIC_TEST_ERROR;
    if (isnan(v) && error_metric && isnan(r.validation.accuracy)) { /* finished: no classes */
        char where[96];
        snprintf(where, sizeof where, "%s, run %d", group, index);
        return no_error_rate(cfg->model.workload, where, err);
    }
    if (isnan(v) || (isinf(v) && m != TB_METRIC_TIME_TO_TARGET)) return TB_ERR_NUMERIC;
    *value = v;
    if (other) {
        *other = tb_study_metric_value(other_m, &r);
        if (isinf(*other) && other_m != TB_METRIC_TIME_TO_TARGET) *other = NAN;
    }
    return TB_OK;
}

/* A search selects on validation, never on test. */
static tb_study_metric selection_metric(tb_study_metric m)
{
    return m == TB_METRIC_TEST_ERROR  ? TB_METRIC_VALIDATION_ERROR
           : m == TB_METRIC_TEST_LOSS ? TB_METRIC_VALIDATION_LOSS
           : m == TB_METRIC_TEST      ? TB_METRIC_VALIDATION
                                      : m;
}

/* The checks of a configuration that tb_train would make only after loading data (workload,
 * algorithm, hyperparameters as tb_optimizer_check_hparams: names, ranges, values that break
 * in float32): done before any training, so a typo in B's algorithm fails at once instead of
 * after A's runs. */
static tb_status check_base(const tb_run_config *c, tb_error *err)
{
    if (!c->model.workload || !c->model.algorithm)
        return tb_fail(err, TB_ERR_INVALID, "the %s is NULL (a study needs a workload and an "
                       "algorithm)", c->model.workload ? "algorithm" : "workload");
    bool known = false;
    for (int i = 0; i < tb_workload_count() && !known; i++)
        known = strcmp(tb_workload_info_at(i)->id, c->model.workload) == 0;
    if (!known) return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s'", c->model.workload);
    return tb_optimizer_check_hparams(c->model.algorithm, &c->model.hparams, err);
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
    if (!cfg || !out)
        return tb_fail(err, TB_ERR_INVALID, "variance_study_run: %s is NULL",
                       cfg ? "out" : "config");
    memset(out, 0, sizeof *out);
    tb_status st = check_base(&cfg->base, err);
    if (st != TB_OK) return st;
    if (cfg->metric == TB_METRIC_TIME_TO_TARGET)
        return tb_fail(err, TB_ERR_INVALID,
                       "a variance study cannot use time_to_target: a run that misses the "
                       "target has no finite time, so a std would describe only the runs that "
                       "reached it (a paired comparison can use it: there a miss counts as "
                       "+inf)");
    if (cfg->runs < 2)
        return tb_fail(err, TB_ERR_INVALID, "a variance study needs at least 2 runs per source, "
                       "got %d", cfg->runs);
    if (cfg->n_sources < 0 || cfg->n_sources > TB_STREAM_COUNT)
        return tb_fail(err, TB_ERR_INVALID, "%d sources of variation (at most %d)",
                       cfg->n_sources, TB_STREAM_COUNT);
    for (int g = 0; g < cfg->n_sources; g++)
        for (int h = 0; h < g; h++)
            if (cfg->sources[g] == cfg->sources[h] && tb_stream_name(cfg->sources[g]))
                return tb_fail(err, TB_ERR_INVALID, "source of variation '%s' is listed twice",
                               tb_stream_name(cfg->sources[g]));
    tb_run_config base = cfg->base;
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
            tb_run_config c = base;
            for (int s = 0; s < TB_STREAM_COUNT; s++) c.seeds[s] = tb_study_seed(cfg->seed, s, 0);
            if (all)
                for (int s = 0; s < TB_STREAM_COUNT; s++)
                    c.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, i + 1);
            else
                c.seeds[cfg->sources[g]] = tb_study_seed(cfg->seed, cfg->sources[g], i + 1);
            double v;
            st = run_two(&c, cfg->metric, cfg->metric, &v, NULL, out->names[g],
                         g * cfg->runs + i + 1, total, cfg->on_run, cfg->user, err);
            if (st == TB_OK) {
                out->values[g][out->n_values[g]++] = v;
            } else if (st == TB_ERR_NUMERIC) {
                out->failed[g]++;
            } else {
                tb_variance_study_free(out);
                return st;
            }
        }
    }
    tb_variation_group groups[TB_STUDY_MAX_GROUPS];
    for (int g = 0; g < n_groups; g++) {
        if (out->n_values[g] < 2) {
            st = tb_fail(err, TB_ERR_NUMERIC,
                         "source %s: only %lld of %d runs finished (the others diverged)",
                         out->names[g], (long long)out->n_values[g], cfg->runs);
            tb_variance_study_free(out);
            return st;
        }
        groups[g] = (tb_variation_group){out->names[g], out->values[g], out->n_values[g]};
    }
    st = tb_variance_decompose(groups, n_groups, "all", TB_VARIANCE_STUDY_ALPHA, out->rows, err);
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
                             const char *space_json, const char *source, tb_hparams **out,
                             tb_error *err)
{
    char src[512];
    if (source) snprintf(src, sizeof src, "search space %s (%s)", source, name);
    else snprintf(src, sizeof src, "%s's search space", name);
    tb_search_space *space = NULL;
    tb_status st = tb_search_space_parse(space_json, src, &space, err);
    if (st == TB_ERR_FORMAT) { /* malformed JSON: a bad value, as a bad range (as in bench) */
        st = TB_ERR_INVALID;
        if (err) err->status = st;
    }
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

/* Every drawn point checked as its run would be (names and ranges of the algorithm's
 * hyperparameters) before any training, so a typo in B's search space fails at once instead
 * of after A's search. */
static tb_status check_points(const tb_run_config *base, const char *name,
                              const tb_hparams *points, int n, tb_error *err)
{
    for (int i = 0; i < n; i++) {
        tb_run_config t = *base;
        for (int k = 0; k < points[i].count; k++)
            tb_hparams_set(&t.model.hparams, points[i].names[k], points[i].values[k], NULL);
        tb_status st = check_base(&t, err);
        if (st != TB_OK) return tb_error_prefix(err, "search space of %s", name);
    }
    return TB_OK;
}

/* Trains the `trials` points (given) on the seeds of pair index `pair` (0: the base seeds),
 * selects the best by the validation form of the metric, writes its configuration to best and
 * its reported metric to *best_reported (if not NULL). Trials that diverge are passed over;
 * TB_ERR_NUMERIC if every one did; any other failure of a trial stops the search. */
static tb_status search(const tb_compare_config *cfg, const tb_run_config *c, const char *name,
                        const tb_hparams *points, int64_t pair, tb_hparams *best,
                        double *best_reported, int64_t *runs, tb_error *err)
{
    tb_status st = TB_OK;
    double best_v = INFINITY, best_r = NAN;
    int best_i = -1;
    char group[64];
    snprintf(group, sizeof group, "search %s", name);
    for (int i = 0; i < cfg->search_trials; i++) {
        tb_run_config t = *c;
        for (int k = 0; k < points[i].count; k++)
            tb_hparams_set(&t.model.hparams, points[i].names[k], points[i].values[k], NULL);
        for (int s = 0; s < TB_STREAM_COUNT; s++)
            t.seeds[s] = tb_study_seed(cfg->seed, (tb_stream)s, pair);
        double v, reported;
        st = run_two(&t, selection_metric(cfg->metric), cfg->metric, &v, &reported, group, i + 1,
                     cfg->search_trials, cfg->on_run, cfg->user, err);
        (*runs)++;
        if (st == TB_ERR_NUMERIC) continue;
        if (st != TB_OK) return st;
        if (best_i < 0 || v < best_v) {
            best_v = v;
            best_r = reported;
            best_i = i;
        }
    }
    st = TB_OK;
    if (best_i < 0)
        st = tb_fail(err, TB_ERR_NUMERIC, "%s: every one of the %d search trials diverged", name,
                     cfg->search_trials);
    if (best_reported) *best_reported = best_r;
    if (st == TB_OK) {
        *best = c->model.hparams;
        for (int k = 0; k < points[best_i].count; k++)
            tb_hparams_set(best, points[best_i].names[k], points[best_i].values[k], NULL);
    }
    return st;
}

tb_status tb_compare_run(const tb_compare_config *cfg, tb_compare_result *out, tb_error *err)
{
    if (!cfg || !out)
        return tb_fail(err, TB_ERR_INVALID, "compare_run: %s is NULL", cfg ? "out" : "config");
    memset(out, 0, sizeof *out);
    tb_status st = check_base(&cfg->a, err);
    if (st != TB_OK) return tb_error_prefix(err, "side A");
    st = check_base(&cfg->b, err);
    if (st != TB_OK) return tb_error_prefix(err, "side B");
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
    tb_hparams *pts_a = NULL, *pts_b = NULL;
    const int T = cfg->search_trials;
    if (searching) {
        st = draw_points(cfg, na, cfg->space_a, cfg->space_a_source, &pts_a, err);
        if (st == TB_OK)
            st = draw_points(cfg, nb, cfg->space_b, cfg->space_b_source, &pts_b, err);
        const int points = (cfg->ideal ? cfg->pairs + 1 : 1) * T;
        if (st == TB_OK) st = check_points(&base_a, na, pts_a, points, err);
        if (st == TB_OK) st = check_points(&base_b, nb, pts_b, points, err);
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
    for (int i = 0; i < cfg->pairs && st == TB_OK; i++) {
        double va = NAN, vb = NAN;
        tb_status sa, sb;
        if (searching && cfg->ideal) {
            /* IdealEst: a new search on this pair's seeds (split, init, order, ... and the
             * search's own points); the sample is the selected trial's result. A side whose
             * every trial diverged has diverged in this pair. */
            tb_hparams ha, hb;
            sa = search(cfg, &base_a, na, pts_a + (size_t)(i + 1) * T, i + 1, &ha, &va,
                        &out->runs, err);
            sb = sa == TB_OK || sa == TB_ERR_NUMERIC
                     ? search(cfg, &base_b, nb, pts_b + (size_t)(i + 1) * T, i + 1, &hb, &vb,
                              &out->runs, err)
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
            sa = run_two(&ca, cfg->metric, cfg->metric, &va, NULL, na, 2 * i + 1, total,
                         cfg->on_run, cfg->user, err);
            sb = sa == TB_OK || sa == TB_ERR_NUMERIC
                     ? run_two(&cb, cfg->metric, cfg->metric, &vb, NULL, nb, 2 * i + 2, total,
                               cfg->on_run, cfg->user, err)
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
    free(pts_a);
    free(pts_b);
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

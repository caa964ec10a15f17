/* variance.c: how much each source of variation moves a result (Bouthillier et al. 2021): runs
 * that vary one source at a time, the others fixed, then all together. */
#include "study/study_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_variance_study_free(tb_variance_study *s)
{
    if (!s) return;
    for (int g = 0; g < s->n_groups; g++) free(s->values[g]);
    memset(s, 0, sizeof *s);
}

/* The search space parsed, every search's points checked (the base search and each run's
 * own, before any training), then the base search run: base gets its point. */
static tb_status prepare_search(const tb_variance_study_config *cfg, tb_run_config *base,
                                tb_search_space **space, tb_error *err)
{
    tb_status st = tb_search_space_parse(cfg->space, cfg->space_source, space, err);
    if (st == TB_ERR_FORMAT) {
        st = TB_ERR_INVALID;
        if (err) err->status = st;
    }
    if (st != TB_OK) return st;
    for (int i = 0; i <= cfg->runs && st == TB_OK; i++)
        st = tb_study_search_check(*space, cfg->search_trials,
                                   tb_study_seed(cfg->seed, TB_STREAM_HPARAM, i), base, NULL,
                                   err);
    for (int s = 0; s < TB_STREAM_COUNT; s++) base->seeds[s] = tb_study_seed(cfg->seed, s, 0);
    tb_study_train_search t = {*space, cfg->search_trials, TB_STUDY_SAMPLER_HALTON, cfg->metric,
                               "search", cfg->on_run, cfg->user, NULL, NULL};
    tb_hparams best;
    if (st == TB_OK) st = tb_study_search_train(&t, base, &best, NULL, err);
    if (st == TB_OK) base->model.hparams = best;
    if (st != TB_OK) {
        tb_search_space_destroy(*space);
        *space = NULL;
    }
    return st;
}

/* A run of the hparam source (or of "all") with a search: a search of its own on its seeds,
 * whose best trial is the run (TB_ERR_NUMERIC if every trial diverged or its metric is not
 * finite). */
static tb_status searched_run(const tb_variance_study_config *cfg, const tb_search_space *space,
                              const tb_run_config *c, const char *group, double *v,
                              tb_error *err)
{
    char name[64];
    snprintf(name, sizeof name, "%s search", group);
    tb_study_train_search t = {space, cfg->search_trials, TB_STUDY_SAMPLER_HALTON, cfg->metric,
                               name, cfg->on_run, cfg->user, NULL, NULL};
    tb_hparams best;
    *v = NAN;
    tb_status st = tb_study_search_train(&t, c, &best, v, err);
    if (st == TB_OK && !isfinite(*v)) st = TB_ERR_NUMERIC;
    return st;
}

tb_status tb_variance_study_run(const tb_variance_study_config *cfg, tb_variance_study *out,
                                tb_error *err)
{
    if (!cfg || !out)
        return tb_fail(err, TB_ERR_INVALID, "variance_study_run: %s is NULL",
                       cfg ? "out" : "config");
    memset(out, 0, sizeof *out);
    tb_status st = tb_study_check_base(&cfg->base, NULL, err);
    if (st != TB_OK) return st;
    if (tb_study_metric_to_target(cfg->metric))
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
    for (int g = 0; g < cfg->n_sources; g++)
        if ((st = tb_study_check_source(&cfg->base, cfg->sources[g], cfg->search_trials > 0,
                                        err)) != TB_OK)
            return st;
    tb_run_config base = cfg->base;
    st = tb_study_prepare_config(cfg->metric, &base, err);
    if (st != TB_OK) return st;
    tb_search_space *space = NULL;
    if (cfg->search_trials > 0) {
        st = prepare_search(cfg, &base, &space, err);
        if (st != TB_OK) return st;
    }
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
            if (space && (all || cfg->sources[g] == TB_STREAM_HPARAM))
                st = searched_run(cfg, space, &c, out->names[g], &v, err);
            else
                st = tb_study_run_one(&c, NULL, cfg->metric, cfg->metric, &v, NULL,
                                      out->names[g], g * cfg->runs + i + 1, total,
                                      cfg->on_run, cfg->user, err);
            if (st == TB_OK) {
                out->values[g][out->n_values[g]++] = v;
            } else if (st == TB_ERR_NUMERIC) {
                out->failed[g]++;
            } else {
                tb_search_space_destroy(space);
                tb_variance_study_free(out);
                return st;
            }
        }
    }
    tb_search_space_destroy(space);
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


/* search.c: one hyperparameter search of a study: `trials` points of a search space, each
 * trained by the caller's trial function, the best by the selection metric. The points come
 * from the search's own seed (a run's hyperparameter-search seed, TB_STREAM_HPARAM), so that a
 * new seed is a new search: the scrambled Halton sequence shifted by a random vector drawn from
 * the seed (a Cranley-Patterson rotation: the seed alone only shuffles Halton's points, and a
 * shuffled set of the same points would be the same search), a list's points in an order drawn
 * from it, or Bayesian optimisation whose first TB_STUDY_GP_INITIAL points are those Halton
 * points (with a pre-trained prior: its first TB_STUDY_GP_PRIOR_INITIAL). Shared by study
 * files (exec.c), comparisons (compare.c) and variance studies. */
#include "study/study_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *tb_study_sampler_name(tb_study_sampler s)
{
    switch (s) {
    case TB_STUDY_SAMPLER_HALTON: return "halton";
    case TB_STUDY_SAMPLER_GP: return "gp";
    case TB_STUDY_SAMPLER_GP_PRIOR: return "gp_prior";
    }
    return "unknown";
}

void tb_study_search_result_free(tb_study_search_result *r)
{
    if (!r) return;
    free(r->select);
    free(r->points);
    memset(r, 0, sizeof *r);
}

/* The unit-cube points of a space of ranges: n scrambled Halton points, rotated by the seed. */
static tb_status halton_units(const tb_search_space *space, int n, uint64_t seed, double *u,
                              tb_error *err)
{
    const int dims = tb_search_space_dims(space);
    tb_status st = tb_halton(n, dims, 0, true, seed, u, err);
    if (st != TB_OK) return st;
    tb_rng rng = tb_rng_make(seed, 0x5ea7c4u);
    double shift[TB_HPARAMS_MAX];
    for (int d = 0; d < dims; d++) shift[d] = tb_rng_uniform(&rng);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < dims; d++) {
            double x = u[i * dims + d] + shift[d];
            u[i * dims + d] = x - floor(x);
        }
    return TB_OK;
}

tb_status tb_study_search_points(const tb_search_space *space, int n, uint64_t seed,
                                 tb_hparams *out, tb_error *err)
{
    if (tb_search_space_list_size(space) > 0)
        return tb_search_space_sample(space, 1, n, seed, out, err);
    const int dims = tb_search_space_dims(space);
    double *u = malloc((size_t)n * (size_t)(dims > 0 ? dims : 1) * sizeof *u);
    if (!u) return tb_fail(err, TB_ERR_NOMEM, "out of memory for search points");
    tb_status st = halton_units(space, n, seed, u, err);
    for (int i = 0; i < n && st == TB_OK; i++) {
        out[i].count = 0;
        tb_search_space_map(space, u + (size_t)i * (size_t)dims, &out[i]);
    }
    free(u);
    return st;
}

/* BO's point for trial t from trials 0..t-1 (their points and selection values; a diverged
 * trial counts as the worst finished one), over the dimensions that vary (the others held at
 * their Halton point's value), under a GP fitted to them or, with a prior, the prior's GP
 * conditioned on them. Leaves *point alone (the Halton point) with fewer than two finished
 * trials (one with a prior). */
static tb_status gp_point(const tb_search_space *space, const tb_study_search_result *r, int t,
                          uint64_t seed, const tb_gp_params *prior, tb_hparams *point,
                          tb_error *err)
{
    const int dims = tb_search_space_dims(space);
    int active[TB_HPARAMS_MAX], na = 0, finished = 0;
    for (int d = 0; d < dims; d++)
        if (tb_search_space_dim_varies(space, d)) active[na++] = d;
    double worst = -INFINITY;
    for (int i = 0; i < t; i++)
        if (isfinite(r->select[i])) {
            finished++;
            worst = fmax(worst, r->select[i]);
        }
    if (na == 0 || finished < (prior ? 1 : 2)) return TB_OK;
    if (prior && prior->dims != na)
        return tb_fail(err, TB_ERR_INTERNAL, "search: a prior of %d dimensions for a space "
                       "with %d that vary", prior->dims, na);
    double *x = malloc((size_t)t * (size_t)na * sizeof *x), *y = malloc((size_t)t * sizeof *y);
    double u[TB_HPARAMS_MAX], next[TB_HPARAMS_MAX];
    tb_status st = x && y ? TB_OK : tb_fail(err, TB_ERR_NOMEM, "out of memory for a GP");
    for (int i = 0; i < t && st == TB_OK; i++) {
        if (!tb_search_space_unmap(space, &r->points[i], u))
            st = tb_fail(err, TB_ERR_INTERNAL, "search: trial %d's point is not in the space", i);
        for (int k = 0; k < na; k++) x[i * na + k] = u[active[k]];
        y[i] = isfinite(r->select[i]) ? r->select[i] : worst;
    }
    tb_bo_options o = {0};
    o.prior = prior;
    o.seed = seed ^ (uint64_t)t;
    o.fit.seed = o.seed;
    if (st == TB_OK) st = tb_bo_suggest(na, x, y, t, &o, next, NULL, err);
    if (st == TB_OK && tb_search_space_unmap(space, point, u)) {
        for (int k = 0; k < na; k++) u[active[k]] = fmin(fmax(next[k], 0.0), 1.0 - 1e-12);
        point->count = 0;
        tb_search_space_map(space, u, point);
    }
    free(x);
    free(y);
    return st;
}

tb_status tb_study_search_run(const tb_study_search *s, const tb_run_config *base,
                              tb_study_search_result *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    out->best_select = out->best_report = NAN;
    if (!s || !s->space || s->trials < 1 || !s->trial)
        return tb_fail(err, TB_ERR_INVALID, "search: no space, trials or trial function");
    if ((s->sampler == TB_STUDY_SAMPLER_GP_PRIOR) != (s->prior != NULL))
        return tb_fail(err, TB_ERR_INVALID, "search: the gp_prior sampler and a prior go "
                       "together");
    out->n = s->trials;
    out->select = malloc((size_t)s->trials * sizeof *out->select);
    out->points = calloc((size_t)s->trials, sizeof *out->points);
    if (!out->select || !out->points) {
        tb_study_search_result_free(out);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a search");
    }
    tb_status st = tb_study_search_points(s->space, s->trials, s->seed, out->points, err);
    for (int t = 0; t < s->trials && st == TB_OK; t++) {
        if ((s->sampler == TB_STUDY_SAMPLER_GP && t >= TB_STUDY_GP_INITIAL) ||
            (s->sampler == TB_STUDY_SAMPLER_GP_PRIOR && t >= TB_STUDY_GP_PRIOR_INITIAL))
            st = gp_point(s->space, out, t, s->seed, s->prior, &out->points[t], err);
        if (st != TB_OK) break;
        tb_run_config c = *base;
        for (int k = 0; k < out->points[t].count; k++)
            tb_hparams_set(&c.model.hparams, out->points[t].names[k], out->points[t].values[k],
                           NULL);
        double select = NAN, report = NAN;
        st = s->trial(s->user, &c, t, &select, &report, err);
        if (st == TB_ERR_NUMERIC) {
            st = TB_OK;
            select = INFINITY;
        }
        if (st != TB_OK) break;
        out->select[t] = select;
        if (isfinite(select) && (out->best < 0 || select < out->best_select)) {
            out->best = t;
            out->best_select = select;
            out->best_report = report;
        }
    }
    if (st != TB_OK) tb_study_search_result_free(out);
    return st;
}

typedef struct train_ctx {
    tb_study_metric metric;
    const char *group;
    int trials;
    tb_study_run_fn on_run;
    void *user;
    int64_t *runs;
    const tb_study_trainer *trainer;
} train_ctx;

static tb_status train_trial(void *user, const tb_run_config *cfg, int trial, double *select,
                             double *report, tb_error *err)
{
    train_ctx *c = user;
    if (c->runs) (*c->runs)++;
    return tb_study_run_one(cfg, c->trainer, tb_study_selection_metric(c->metric), c->metric,
                            select, report, c->group, trial + 1, c->trials, c->on_run, c->user,
                            err);
}

tb_status tb_study_search_train(const tb_study_train_search *t, const tb_run_config *base,
                                tb_hparams *best, double *best_report, tb_error *err)
{
    train_ctx c = {t->metric, t->group, t->trials, t->on_run, t->user, t->runs, t->trainer};
    tb_study_search s = {t->space, t->trials, t->sampler, base->seeds[TB_STREAM_HPARAM],
                         train_trial, &c, NULL};
    tb_study_search_result r;
    tb_status st = tb_study_search_run(&s, base, &r, err);
    if (st != TB_OK) return st;
    if (r.best < 0) {
        st = tb_fail(err, TB_ERR_NUMERIC, "%s: every one of the %d search trials diverged",
                     t->group, t->trials);
    } else {
        *best = base->model.hparams;
        for (int k = 0; k < r.points[r.best].count; k++)
            tb_hparams_set(best, r.points[r.best].names[k], r.points[r.best].values[k], NULL);
        if (best_report) *best_report = r.best_report;
    }
    tb_study_search_result_free(&r);
    return st;
}

tb_status tb_study_search_check(const tb_search_space *space, int trials, uint64_t seed,
                                const tb_run_config *base, const tb_study_trainer *trainer,
                                tb_error *err)
{
    tb_hparams *pts = calloc((size_t)trials, sizeof *pts);
    if (!pts) return tb_fail(err, TB_ERR_NOMEM, "out of memory for search points");
    tb_status st = tb_study_search_points(space, trials, seed, pts, err);
    for (int i = 0; i < trials && st == TB_OK; i++) {
        tb_run_config t = *base;
        for (int k = 0; k < pts[i].count; k++)
            tb_hparams_set(&t.model.hparams, pts[i].names[k], pts[i].values[k], NULL);
        st = tb_study_check_base(&t, trainer, err);
    }
    free(pts);
    return st;
}

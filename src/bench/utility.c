/* utility.c: the utility of candidate search spaces scored against the trials a results
 * store holds (Ariafar et al., AISTATS 2022; docs/MATH.md section 5): the trials' objectives,
 * coordinates shared by the spaces, a GP fitted to them, and tb_gp_utility per space. */
#include "bench/bench_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GP's coordinates: per dimension of the spaces (by name), its values or their logs,
 * mapped linearly from lo to hi; the dimensions that vary (lo < hi) are the GP's. */
typedef struct coords {
    int n;                          /* dimensions of the spaces */
    char names[TB_HPARAMS_MAX][TB_HPARAM_NAME_MAX];
    bool log[TB_HPARAMS_MAX];
    double lo[TB_HPARAMS_MAX], hi[TB_HPARAMS_MAX];
    int active[TB_GP_MAX_DIMS], n_active;
} coords;

static int coord_of(const coords *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0) return i;
    return -1;
}

static void widen(coords *c, int i, double v)
{
    double t = c->log[i] ? log(v) : v;
    c->lo[i] = fmin(c->lo[i], t);
    c->hi[i] = fmax(c->hi[i], t);
}

/* A point's GP coordinates; false when it lacks a dimension or a log value is not positive. */
static bool to_coords(const coords *c, const tb_hparams *hp, double *x)
{
    for (int k = 0; k < c->n_active; k++) {
        int i = c->active[k], j = 0;
        while (j < hp->count && strcmp(hp->names[j], c->names[i]) != 0) j++;
        if (j == hp->count || !isfinite(hp->values[j]) || (c->log[i] && !(hp->values[j] > 0)))
            return false;
        double t = c->log[i] ? log(hp->values[j]) : hp->values[j];
        x[k] = (t - c->lo[i]) / (c->hi[i] - c->lo[i]);
    }
    return true;
}

static tb_status build_coords(const tb_space_utility_spec *u, coords *c, tb_error *err)
{
    memset(c, 0, sizeof *c);
    for (int s = 0; s < u->n_spaces; s++) {
        const tb_search_space *sp = u->spaces[s];
        if (tb_search_space_dims(sp) == 0)
            return tb_fail(err, TB_ERR_INVALID,
                           "search space %d is a list of points; the utility draws points "
                           "uniformly from a space of ranges", s + 1);
        if (s > 0 && tb_search_space_dims(sp) != c->n)
            return tb_fail(err, TB_ERR_INVALID,
                           "search space %d has %d dimensions, search space 1 has %d: spaces "
                           "compared must have the same ones", s + 1, tb_search_space_dims(sp),
                           c->n);
        for (int i = 0; i < tb_search_space_dims(sp); i++) {
            tb_search_dim d;
            tb_search_space_dim(sp, i, &d);
            int k = coord_of(c, d.name);
            if (k < 0 && s > 0)
                return tb_fail(err, TB_ERR_INVALID,
                               "search space %d has '%s', which search space 1 has not: "
                               "spaces compared must have the same dimensions", s + 1, d.name);
            if (k < 0) {
                k = c->n++;
                snprintf(c->names[k], sizeof c->names[k], "%s", d.name);
                c->lo[k] = INFINITY;
                c->hi[k] = -INFINITY;
            }
            c->log[k] |= d.scaling == TB_SCALING_LOG;
        }
    }
    /* the ranges: every space's ends (feasible points: their smallest and largest) */
    for (int s = 0; s < u->n_spaces; s++)
        for (int i = 0; i < c->n; i++) {
            tb_search_dim d;
            tb_search_space_dim(u->spaces[s], i, &d);
            int k = coord_of(c, d.name);
            if (c->log[k] && !(d.min > 0))
                return tb_fail(err, TB_ERR_INVALID,
                               "'%s' is log-scaled in one search space, but search space %d "
                               "reaches %g: its logs cannot be compared", d.name, s + 1, d.min);
            widen(c, k, d.min);
            widen(c, k, d.max);
        }
    return TB_OK;
}

/* ---- the trials ------------------------------------------------------------------------------ */
/* A built-in submission's spaces against its optimizer, as bench checks them (an external
 * submission reads its hyperparameters itself). */
static tb_status check_spaces(const tb_space_utility_spec *u, const char *submission,
                              tb_error *err)
{
    const tb_optimizer_info *info = tb_optimizer_find(submission);
    tb_status st = TB_OK;
    for (int s = 0; info && st == TB_OK && s < u->n_spaces; s++) {
        char source[1100];
        if (u->space_names && u->space_names[s])
            snprintf(source, sizeof source, "search space %s", u->space_names[s]);
        else snprintf(source, sizeof source, "search space %d", s + 1);
        st = tb_bench_space_check(info, u->spaces[s], source, err);
    }
    return st;
}

static bool wanted(const tb_space_utility_spec *u, const tb_trial_record *t)
{
    return strcmp(t->workload, u->workload) == 0 && strcmp(t->ruleset, "external") == 0 &&
           (t->status == TB_TRIAL_DONE || t->status == TB_TRIAL_FAILED) &&
           (!u->benchmark || strcmp(t->benchmark, u->benchmark) == 0);
}

/* The submission whose trials count: the one named, or the only one with trials. */
static tb_status pick_submission(const tb_space_utility_spec *u, const tb_trial_record *t,
                                 int n, char *out, size_t cap, tb_error *err)
{
    if (u->submission) {
        snprintf(out, cap, "%s", u->submission);
        return TB_OK;
    }
    out[0] = 0;
    char all[400] = "";
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        if (!wanted(u, &t[i])) continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = wanted(u, &t[j]) && strcmp(t[j].submission, t[i].submission) == 0;
        if (seen) continue;
        if (distinct++ == 0) snprintf(out, cap, "%s", t[i].submission);
        size_t len = strlen(all);
        snprintf(all + len, sizeof all - len, "%s%s", len ? ", " : "", t[i].submission);
    }
    if (distinct > 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "the store has finished trials of several submissions on %s (%s): name "
                       "the one whose search spaces these are", u->workload, all);
    return TB_OK;
}

typedef struct draw_ctx {
    const tb_search_space *space;
    const coords *c;
} draw_ctx;

static void draw_space(void *user, tb_rng *rng, double *x)
{
    const draw_ctx *d = user;
    double u[TB_HPARAMS_MAX];
    tb_hparams hp;
    for (int i = 0; i < tb_search_space_dims(d->space); i++) u[i] = tb_rng_uniform(rng);
    tb_search_space_map(d->space, u, &hp);
    to_coords(d->c, &hp, x); /* a space's own points always have every dimension */
}

/* The utilities of u's spaces under a GP fitted to the n points pts with objectives y (finite;
 * imputed[i]: a failed trial kept at the worst), on the coordinates c of the spaces, widened to
 * reach the points. who names the points in the error when fewer than 2 did not fail. */
static tb_status score_points(const tb_space_utility_spec *u, coords *c, const tb_hparams *pts,
                              const double *y, const bool *imputed, int n, const char *who,
                              tb_utility *out, tb_space_utility_info *inf, tb_error *err)
{
    for (int i = 0; i < n; i++) /* the coordinates reach the points' values too */
        for (int j = 0; j < pts[i].count; j++) {
            int k = coord_of(c, pts[i].names[j]);
            double v = pts[i].values[j];
            if (k >= 0 && isfinite(v) && (!c->log[k] || v > 0)) widen(c, k, v);
        }
    for (int i = 0; i < c->n; i++)
        if (c->hi[i] > c->lo[i]) c->active[c->n_active++] = i;
    if (c->n_active == 0)
        return tb_fail(err, TB_ERR_INVALID, "search-space utility: no dimension of the spaces "
                       "takes more than one value");
    double *x = malloc((size_t)(n > 0 ? n : 1) * TB_GP_MAX_DIMS * sizeof *x);
    double *yk = malloc((size_t)(n > 0 ? n : 1) * sizeof *yk);
    tb_status st = x && yk ? TB_OK
                           : tb_fail(err, TB_ERR_NOMEM, "search-space utility: out of memory");
    int kept = 0;
    for (int i = 0; st == TB_OK && i < n; i++) {
        if (!isfinite(y[i])) continue; /* no trial has an objective of its own */
        if (!to_coords(c, &pts[i], x + (size_t)kept * c->n_active)) {
            inf->skipped++;
            continue;
        }
        yk[kept++] = y[i];
        inf->imputed += imputed[i];
    }
    inf->trials = kept;
    if (st == TB_OK && kept - inf->imputed < 2)
        st = tb_fail(err, TB_ERR_MISSING,
                     "search-space utility: %d finished trials of %s to fit a GP to (at least 2 "
                     "that did not fail are needed)", kept - inf->imputed, who);
    tb_gp_task data = {x, yk, kept};
    tb_gp_params p;
    tb_gp *gp = NULL;
    tb_gp_fit_options fo = {.seed = tb_bench_mix(u->seed ^ 0x5554ull)};
    if (st == TB_OK) st = tb_gp_fit(&data, 1, c->n_active, &fo, &p, err);
    if (st == TB_OK) st = tb_gp_create(&p, &data, &gp, err);
    for (int s = 0; st == TB_OK && s < u->n_spaces; s++) {
        draw_ctx d = {u->spaces[s], c};
        st = tb_gp_utility(gp, draw_space, &d, u->budgets, u->n_budgets,
                           u->draws > 0 ? u->draws : 1000, 0.0, u->seed,
                           out + (size_t)s * u->n_budgets, err);
        if (st != TB_OK) tb_error_prefix(err, "search space %d", s + 1);
    }
    tb_gp_destroy(gp);
    free(x);
    free(yk);
    return st;
}

tb_status tb_space_utility(tb_store *store, const tb_space_utility_spec *u, tb_utility *out,
                           tb_space_utility_info *info, tb_error *err)
{
    tb_space_utility_info inf;
    memset(&inf, 0, sizeof inf);
    if (info) *info = inf;
    if (!u->workload || u->n_spaces < 1 || u->n_budgets < 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "search-space utility: needs a workload, a search space and a budget");
    coords c;
    tb_status st = build_coords(u, &c, err);
    if (st != TB_OK) return st;
    tb_trial_record *all = NULL;
    int n_all = 0, n = 0;
    st = tb_store_trials(store, u->benchmark, &all, &n_all, err);
    if (st == TB_OK)
        st = pick_submission(u, all, n_all, inf.submission, sizeof inf.submission, err);
    if (st == TB_OK && inf.submission[0]) st = check_spaces(u, inf.submission, err);
    for (int i = 0; st == TB_OK && i < n_all; i++) /* the trials that count, first in all */
        if (wanted(u, &all[i]) && strcmp(all[i].submission, inf.submission) == 0)
            all[n++] = all[i];
    const size_t m = (size_t)(n > 0 ? n : 1);
    double *y = malloc(m * sizeof *y);
    bool *imputed = malloc(m * sizeof *imputed);
    tb_hparams *pts = malloc(m * sizeof *pts);
    if (st == TB_OK && (!y || !imputed || !pts))
        st = tb_fail(err, TB_ERR_NOMEM, "search-space utility: out of memory");
    if (st == TB_OK) st = tb_trial_objectives(store, all, n, y, imputed, err);
    for (int i = 0; st == TB_OK && i < n; i++) pts[i] = all[i].hparams;
    char who[400];
    snprintf(who, sizeof who, "%.128s on %.64s%s%.128s",
             inf.submission[0] ? inf.submission : "any submission", u->workload,
             u->benchmark ? " in benchmark " : "", u->benchmark ? u->benchmark : "");
    if (st == TB_OK) st = score_points(u, &c, pts, y, imputed, n, who, out, &inf, err);
    free(y);
    free(imputed);
    free(pts);
    free(all);
    if (info) *info = inf;
    return st;
}

tb_status tb_space_utility_points(const tb_space_utility_spec *u, const tb_hparams *points,
                                  const double *y, int n, tb_utility *out,
                                  tb_space_utility_info *info, tb_error *err)
{
    tb_space_utility_info inf;
    memset(&inf, 0, sizeof inf);
    if (info) *info = inf;
    if (u->n_spaces < 1 || u->n_budgets < 1 || n < 0 || (n > 0 && (!points || !y)))
        return tb_fail(err, TB_ERR_INVALID,
                       "search-space utility: needs a search space, a budget and points");
    coords c;
    tb_status st = build_coords(u, &c, err);
    if (st != TB_OK) return st;
    const size_t m = (size_t)(n > 0 ? n : 1);
    double *yk = malloc(m * sizeof *yk), worst = -INFINITY;
    bool *imputed = malloc(m * sizeof *imputed);
    if (!yk || !imputed) st = tb_fail(err, TB_ERR_NOMEM, "search-space utility: out of memory");
    for (int i = 0; st == TB_OK && i < n; i++)
        if (isfinite(y[i])) worst = fmax(worst, y[i]);
    for (int i = 0; st == TB_OK && i < n; i++) { /* a failed point: the worst finished one */
        imputed[i] = !isfinite(y[i]) && isfinite(worst);
        yk[i] = isfinite(y[i]) ? y[i] : worst;
    }
    if (st == TB_OK) st = score_points(u, &c, points, yk, imputed, n, "the points given", out,
                                       &inf, err);
    free(yk);
    free(imputed);
    if (info) *info = inf;
    return st;
}

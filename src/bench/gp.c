/* gp.c: the gp sampler of a benchmark (Bayesian optimisation of each study, optionally
 * with a HyperBO prior pre-trained on other workloads' trials; docs/MATH.md section 4): the
 * objective of a finished trial, the prior planned with the benchmark, and the point of a
 * study's next trial chosen from the trials finished before it. */
#include "bench/bench_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *sampler_names[] = {"halton", "gp"};

const char *tb_bench_sampler_name(tb_bench_sampler s)
{
    return (unsigned)s < 2 ? sampler_names[s] : "unknown";
}

tb_status tb_bench_sampler_parse(const char *name, tb_bench_sampler *out, tb_error *err)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(name, sampler_names[i]) == 0) {
            *out = (tb_bench_sampler)i;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID, "unknown sampler '%s' (halton or gp)", name);
}

int tb_bench_gp_initial(const tb_bench_spec *s)
{
    return s->gp_initial > 0 ? s->gp_initial : s->gp_prior ? 1 : 3;
}

/* ---- the objective ----------------------------------------------------------------------------- */
/* The workload's validation metric in an eval (the store keeps loss, accuracy and error). */
static double validation_metric(const char *metric, const tb_eval_record *e)
{
    if (strcmp(metric, "error_rate") == 0) return e->validation_error;
    if (strcmp(metric, "bits_per_char") == 0) return e->validation_loss / log(2.0);
    if (strcmp(metric, "loss") == 0) return e->validation_loss;
    return NAN;
}

double tb_trial_objective(const tb_trial_record *t, const tb_eval_record *evals, int n_evals)
{
    if (t->status != TB_TRIAL_DONE || !(t->budget_s > 0)) return NAN;
    if (t->reached && isfinite(t->time_to_target))
        return log(fmax(t->time_to_target, 1e-3 * t->budget_s) / t->budget_s);
    double best = INFINITY;
    for (int i = 0; i < n_evals; i++) {
        double m = validation_metric(t->metric, &evals[i]);
        if (isfinite(m) && m < best) best = m;
    }
    if (!isfinite(best) || !(t->target > 0)) return NAN;
    return fmax(log(fmax(best, 1e-10) / t->target), 0.0); /* missed: not below a hit */
}

tb_status tb_trial_objectives(tb_store *store, const tb_trial_record *trials, int n, double *y,
                              bool *imputed, tb_error *err)
{
    double worst = -INFINITY;
    for (int i = 0; i < n; i++) {
        y[i] = NAN;
        if (trials[i].status != TB_TRIAL_DONE) continue;
        tb_eval_record *e = NULL;
        int ne = 0;
        tb_status st = tb_store_evals(store, trials[i].id, &e, &ne, err);
        if (st != TB_OK) return st;
        y[i] = tb_trial_objective(&trials[i], e, ne);
        free(e);
        if (isfinite(y[i])) worst = fmax(worst, y[i]);
    }
    for (int i = 0; i < n; i++) {
        bool missing = !isfinite(y[i]);
        if (imputed) imputed[i] = missing;
        if (missing) y[i] = isfinite(worst) ? worst : NAN;
    }
    return TB_OK;
}

/* ---- observations in the GP's coordinates ------------------------------------------------------ */
/* The dimensions of space that vary: the GP's coordinates (a fixed one would only add a
 * direction in which nothing changes). Returns how many, their indices in idx. */
static int active_dims(const tb_search_space *space, int *idx)
{
    int k = 0;
    for (int i = 0; i < tb_search_space_dims(space); i++)
        if (tb_search_space_dim_varies(space, i)) idx[k++] = i;
    return k;
}

tb_status tb_bench_gp_check(const tb_search_space *space, const char *submission,
                            tb_error *err)
{
    int idx[TB_GP_MAX_DIMS];
    if (tb_search_space_dims(space) == 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "the gp sampler needs a search space of ranges; %s's is a list of points "
                       "(use --sampler halton)", submission);
    if (active_dims(space, idx) == 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "the gp sampler has nothing to tune in %s's search space: every "
                       "dimension has a single value", submission);
    return TB_OK;
}

typedef struct observations {
    int n, dims;
    double *x; /* (n, dims): the active coordinates */
    double *y; /* (n) */
    int finite; /* observations with an objective of their own (not imputed) */
} observations;

/* The trials' points (active coordinates of space) and objectives; trials whose point is not
 * in the space's dimensions, or without an objective at all, are left out. */
static tb_status observe(tb_store *store, const tb_search_space *space,
                         const tb_trial_record *trials, int n, observations *o, tb_error *err)
{
    int act[TB_GP_MAX_DIMS];
    memset(o, 0, sizeof *o);
    o->dims = active_dims(space, act);
    double *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    bool *imputed = malloc((size_t)(n > 0 ? n : 1) * sizeof *imputed);
    o->x = malloc((size_t)(n > 0 ? n : 1) * o->dims * sizeof *o->x);
    o->y = malloc((size_t)(n > 0 ? n : 1) * sizeof *o->y);
    tb_status st = y && imputed && o->x && o->y
                       ? tb_trial_objectives(store, trials, n, y, imputed, err)
                       : tb_fail(err, TB_ERR_NOMEM, "out of memory for observations");
    for (int i = 0; st == TB_OK && i < n; i++) {
        double u[TB_HPARAMS_MAX];
        if (!isfinite(y[i]) || !tb_search_space_unmap(space, &trials[i].hparams, u)) continue;
        for (int k = 0; k < o->dims; k++) o->x[(size_t)o->n * o->dims + k] = u[act[k]];
        o->y[o->n++] = y[i];
        o->finite += !imputed[i];
    }
    free(y);
    free(imputed);
    return st;
}

static void observations_free(observations *o)
{
    free(o->x);
    free(o->y);
}

/* ---- the prior ---------------------------------------------------------------------------------- */
static bool prior_source(const tb_bench_spec *s, const tb_trial_record *t, const char *submission,
                         const char *workload)
{
    if (strcmp(t->submission, submission) != 0 || strcmp(t->workload, workload) == 0 ||
        strcmp(t->ruleset, "external") != 0 ||
        (t->status != TB_TRIAL_DONE && t->status != TB_TRIAL_FAILED))
        return false;
    if (!s->prior_workloads) return true;
    for (int i = 0; i < s->n_prior_workloads; i++)
        if (strcmp(s->prior_workloads[i], t->workload) == 0) return true;
    return false;
}

static char *prior_json(const tb_gp_params *p, const tb_search_space *space, const char *tasks)
{
    int act[TB_GP_MAX_DIMS];
    active_dims(space, act);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "mean", p->mean);
    cJSON_AddNumberToObject(o, "amplitude", p->amplitude);
    cJSON_AddNumberToObject(o, "noise", p->noise);
    cJSON *ls = cJSON_AddObjectToObject(o, "lengthscales");
    for (int k = 0; k < p->dims; k++) {
        tb_search_dim d;
        tb_search_space_dim(space, act[k], &d);
        cJSON_AddNumberToObject(ls, d.name, p->lengthscales[k]);
    }
    cJSON_AddStringToObject(o, "tasks", tasks);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* The prior recorded for (benchmark, submission, workload), read back for space's active
 * dimensions; *found false when there is none. */
static tb_status read_prior(tb_store *store, const tb_bench_spec *s, const char *submission,
                            const char *workload, const tb_search_space *space,
                            tb_gp_params *p, bool *found, tb_error *err)
{
    char *text = NULL;
    *found = false;
    tb_status st = tb_store_get_prior(store, s->name, submission, workload, &text, err);
    if (st != TB_OK || !text) return st;
    cJSON *o = cJSON_Parse(text);
    free(text);
    int act[TB_GP_MAX_DIMS];
    memset(p, 0, sizeof *p);
    p->dims = active_dims(space, act);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(o, "lengthscales");
    p->mean = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "mean"));
    p->amplitude = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "amplitude"));
    p->noise = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "noise"));
    for (int k = 0; k < p->dims; k++) {
        tb_search_dim d;
        tb_search_space_dim(space, act[k], &d);
        p->lengthscales[k] = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ls, d.name));
    }
    cJSON_Delete(o);
    st = tb_gp_params_check(p, err);
    if (st != TB_OK)
        return tb_error_prefix(err, "the prior of %s on %s recorded with benchmark '%s'",
                               submission, workload, s->name);
    *found = true;
    return TB_OK;
}

tb_status tb_bench_gp_prior(tb_store *store, const tb_bench_spec *s, const char *submission,
                            const tb_search_space *space, const char *workload, tb_error *err)
{
    char *have = NULL;
    tb_status st = tb_store_get_prior(store, s->name, submission, workload, &have, err);
    if (st != TB_OK || have) {
        free(have);
        return st;
    }
    tb_trial_record *all = NULL;
    int n_all = 0;
    st = tb_store_trials(store, NULL, &all, &n_all, err);
    /* the tasks: one per benchmark x workload, their trials contiguous in `sel` */
    tb_trial_record *sel = malloc((size_t)(n_all > 0 ? n_all : 1) * sizeof *sel);
    observations *obs = calloc((size_t)(n_all > 0 ? n_all : 1), sizeof *obs);
    tb_gp_task *tasks = malloc((size_t)(n_all > 0 ? n_all : 1) * sizeof *tasks);
    bool *used = calloc((size_t)(n_all > 0 ? n_all : 1), sizeof *used);
    if (st == TB_OK && (!sel || !obs || !tasks || !used))
        st = tb_fail(err, TB_ERR_NOMEM, "pre-training a prior: out of memory");
    int n_tasks = 0;
    char names[400] = "";
    for (int i = 0; st == TB_OK && i < n_all; i++) {
        if (used[i] || !prior_source(s, &all[i], submission, workload)) continue;
        int n = 0;
        for (int j = i; j < n_all; j++)
            if (!used[j] && prior_source(s, &all[j], submission, workload) &&
                strcmp(all[j].benchmark, all[i].benchmark) == 0 &&
                strcmp(all[j].workload, all[i].workload) == 0) {
                used[j] = true;
                sel[n++] = all[j];
            }
        observations *o = &obs[n_tasks];
        st = observe(store, space, sel, n, o, err);
        if (st == TB_OK && o->finite < 2) { /* too little to learn from */
            observations_free(o);
            memset(o, 0, sizeof *o);
            continue;
        }
        if (st != TB_OK) break;
        tasks[n_tasks++] = (tb_gp_task){o->x, o->y, o->n};
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s/%s (%d)", len ? ", " : "",
                 all[i].benchmark, all[i].workload, o->n);
    }
    tb_gp_params p;
    if (st == TB_OK && n_tasks == 0)
        st = tb_fail(err, TB_ERR_MISSING,
                     "no finished trials of %s on %s to pre-train a prior for %s from (a "
                     "task needs 2 finished trials in the search space): run those workloads "
                     "first, or leave the prior out", submission,
                     s->prior_workloads ? "the workloads named" : "other workloads", workload);
    if (st == TB_OK) {
        tb_gp_fit_options fo = {.seed = tb_bench_mix(s->seed ^ tb_bench_hash(workload))};
        st = tb_gp_fit(tasks, n_tasks, obs[0].dims, &fo, &p, err);
        if (st != TB_OK) tb_error_prefix(err, "pre-training the prior of %s on %s", submission,
                                         workload);
    }
    if (st == TB_OK) {
        char *text = prior_json(&p, space, names);
        st = text ? tb_store_put_prior(store, s->name, submission, workload, text, err)
                  : tb_fail(err, TB_ERR_NOMEM, "out of memory");
        free(text);
    }
    for (int i = 0; obs && i < n_all; i++) observations_free(&obs[i]);
    free(obs);
    free(tasks);
    free(used);
    free(sel);
    free(all);
    return st;
}

/* ---- the next point of a study -------------------------------------------------------------- */
tb_status tb_bench_gp_point(tb_store *store, const tb_bench_spec *s,
                            const tb_search_space *space, tb_trial_record *t, tb_error *err)
{
    tb_trial_record *all = NULL;
    int n_all = 0, n = 0;
    tb_status st = tb_store_trials(store, s->name, &all, &n_all, err);
    /* the study's trials finished before this one */
    for (int i = 0; st == TB_OK && i < n_all; i++)
        if (strcmp(all[i].submission, t->submission) == 0 &&
            strcmp(all[i].workload, t->workload) == 0 && all[i].study == t->study &&
            all[i].trial < t->trial &&
            (all[i].status == TB_TRIAL_DONE || all[i].status == TB_TRIAL_FAILED))
            all[n++] = all[i];
    observations o = {0};
    if (st == TB_OK) st = observe(store, space, all, n, &o, err);
    tb_gp_params prior;
    bool have_prior = false;
    if (st == TB_OK && s->gp_prior)
        st = read_prior(store, s, t->submission, t->workload, space, &prior, &have_prior, err);
    double u[TB_HPARAMS_MAX];
    const int dims = tb_search_space_dims(space);
    if (st == TB_OK && o.finite < (have_prior ? 1 : 2)) {
        /* too little to model (the first trials failed): the Halton point of this trial */
        const int trials = s->trials;
        tb_hparams *pts = malloc((size_t)s->studies * trials * sizeof *pts);
        st = pts ? tb_search_space_sample(space, s->studies, trials, tb_bench_points_seed(s),
                                          pts, err)
                 : tb_fail(err, TB_ERR_NOMEM, "out of memory");
        if (st == TB_OK) t->hparams = pts[t->study * trials + t->trial];
        free(pts);
    } else if (st == TB_OK) {
        int act[TB_GP_MAX_DIMS];
        active_dims(space, act);
        const uint64_t where = tb_bench_hash(t->workload) ^ tb_bench_hash(t->submission);
        const uint64_t which = ((uint64_t)t->study << 32) | (uint32_t)t->trial;
        const uint64_t seed = tb_bench_mix(s->seed ^ tb_bench_mix(where) ^ tb_bench_mix(which));
        tb_bo_options bo = {.prior = have_prior ? &prior : NULL, .seed = seed};
        double next[TB_GP_MAX_DIMS];
        st = tb_bo_suggest(o.dims, o.x, o.y, o.n, &bo, next, NULL, err);
        for (int i = 0; i < dims; i++) u[i] = 0.5; /* fixed dimensions: any u */
        for (int k = 0; k < o.dims; k++) u[act[k]] = next[k];
        if (st == TB_OK) tb_search_space_map(space, u, &t->hparams);
        else tb_error_prefix(err, "choosing the point of %s %s study %d trial %d",
                             t->submission, t->workload, t->study, t->trial);
    }
    if (st == TB_OK) st = tb_store_trial_set_hparams(store, t->id, &t->hparams, err);
    observations_free(&o);
    free(all);
    return st;
}

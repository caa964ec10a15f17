/* score_table.c: the score table of one benchmark in a results store: per trial the time to
 * target, per study the fastest trial (by time), per workload the median over studies, then
 * ratios, scores and speedups, all over the same counted workloads (score_write.c writes it). */
#include "trainbench/score.h"

#include "trainbench/workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tb_score_table_profile(const tb_score_table *t, int s, double tau)
{
    return tb_score_profile(t->ratio + (size_t)s * (size_t)t->n_wl, t->counted, t->n_wl, tau);
}

void tb_score_table_destroy(tb_score_table *t)
{
    if (!t) return;
    free(t->subs);
    free(t->wls);
    free(t->budgets);
    free(t->reference_step_s);
    free(t->time);
    free(t->studies);
    free(t->studies_reached);
    free(t->trials);
    free(t->trials_failed);
    free(t->trials_unfinished);
    free(t->trials_contended);
    free(t->ratio);
    free(t->score);
    free(t->speedup);
    free(t->counted);
    free(t->disqualified);
    free(t);
}

static int index_of_sub(const tb_score_table *t, const char *name)
{
    for (int i = 0; i < t->n_subs; i++)
        if (strcmp(t->subs[i], name) == 0) return i;
    return -1;
}

static int index_of_wl(const tb_score_table *t, const char *name)
{
    for (int i = 0; i < t->n_wl; i++)
        if (strcmp(t->wls[i], name) == 0) return i;
    return -1;
}

/* What the variant rule leaves: the workloads counted (all without it; with it every
 * workload but the held-out variants, which only gate their base) and the base times it voids
 * (reached, but the submission's variant was missed or slower than tau_max times the fastest
 * variant time: tb_score_compute then scored that base as a miss). */
static void mark_variants(tb_score_table *t, const int *variant_of)
{
    for (int w = 0; w < t->n_wl; w++) t->counted[w] = !variant_of || variant_of[w] < 0;
    for (int w = 0; variant_of && w < t->n_wl; w++) {
        int b = variant_of[w];
        for (int s = 0; b >= 0 && s < t->n_subs; s++) {
            size_t c = (size_t)s * (size_t)t->n_wl;
            if (!isfinite(t->ratio[c + (size_t)w]) && isfinite(t->time[c + (size_t)b]))
                t->disqualified[c + (size_t)b] = true;
        }
    }
}

/* The speedups over submission ref (NaN for every one if ref < 0) on the counted workloads, a
 * voided base time counted as a miss, as the score counts them. */
static tb_status speedups(tb_score_table *t, int ref, tb_error *err)
{
    double *a = malloc((size_t)t->n_wl * sizeof *a), *b = malloc((size_t)t->n_wl * sizeof *b);
    double *budgets = malloc((size_t)t->n_wl * sizeof *budgets);
    tb_status st = a && b && budgets ? TB_OK : tb_fail(err, TB_ERR_NOMEM, "scoring: out of memory");
    for (int s = 0; st == TB_OK && s < t->n_subs; s++) {
        int n = 0;
        for (int w = 0; ref >= 0 && w < t->n_wl; w++) {
            if (!t->counted[w]) continue;
            size_t cr = (size_t)ref * (size_t)t->n_wl + (size_t)w;
            size_t cs = (size_t)s * (size_t)t->n_wl + (size_t)w;
            a[n] = t->disqualified[cr] ? INFINITY : t->time[cr];
            b[n] = t->disqualified[cs] ? INFINITY : t->time[cs];
            budgets[n++] = t->budgets[w];
        }
        t->speedup[s] = n ? tb_score_speedup(a, b, budgets, n) : NAN;
    }
    free(a);
    free(b);
    free(budgets);
    return st;
}

/* The reference step time of each workload of t from the store's calibration windows of the
 * benchmark's reference step;
 * TB_ERR_MISSING naming the first workload without one. */
static tb_status reference_steps(tb_store *store, tb_score_table *t, tb_error *err)
{
    tb_calibration_record *w = NULL;
    int n = 0;
    tb_status st = tb_store_calibrations(store, NULL, &w, &n, err); /* every benchmark's */
    for (int i = 0; st == TB_OK && i < t->n_wl; i++) {
        t->reference_step_s[i] = tb_calibration_reference_step_s(w, n, t->benchmark, t->wls[i]);
        if (!isfinite(t->reference_step_s[i]))
            st = tb_fail(err, TB_ERR_MISSING,
                         "benchmark '%s' has no calibration window of workload %s, which the "
                         "reference time prices its steps with (a store written before "
                         "calibration windows, or run with --calibration-s -1): score it with "
                         "--time wall or --time steps, or run the benchmark again to take one",
                         t->benchmark, t->wls[i]);
    }
    free(w);
    return st;
}

/* Trial tr's time to target in t's basis (infinite for a miss or a failed trial): its steps
 * at the target, read from its evals, priced in the reference basis at rstep seconds. */
static tb_status trial_time(tb_store *store, const tb_score_table *t, const tb_trial_record *tr,
                            double rstep, double *out, tb_error *err)
{
    *out = INFINITY;
    if (tr->status != TB_TRIAL_DONE || !tr->reached) return TB_OK;
    if (t->basis == TB_TIME_WALL) {
        *out = tr->time_to_target;
        return TB_OK;
    }
    tb_eval_record *ev = NULL;
    int n = 0;
    tb_status st = tb_store_evals(store, tr->id, &ev, &n, err);
    int64_t steps = st == TB_OK ? tb_trial_steps_to_target(tr, ev, n) : -1;
    free(ev);
    if (steps >= 0) *out = t->basis == TB_TIME_STEPS ? (double)steps : (double)steps * rstep;
    return st;
}

tb_status tb_score_store(tb_store *store, const tb_score_options *o, tb_score_table **out,
                         tb_error *err)
{
    if (!store || !out)
        return tb_fail(err, TB_ERR_INVALID, "score_store: %s is NULL",
                       store ? "out" : "the store");
    *out = NULL;
    if (!o || !o->benchmark)
        return tb_fail(err, TB_ERR_INVALID, "score_store: %s is NULL (scoring needs a benchmark "
                       "name)", o ? "options->benchmark" : "options");
    tb_trial_record *tr;
    int n;
    tb_status st = tb_store_trials(store, o->benchmark, &tr, &n, err);
    if (st != TB_OK) return st;
    if (n == 0) {
        free(tr);
        char list[400];
        tb_store_benchmark_list(store, list, sizeof list);
        return tb_fail(err, TB_ERR_INVALID,
                       "the results store has no trials of benchmark '%s' (its benchmarks: %s)",
                       o->benchmark, list);
    }
    tb_score_table *t = calloc(1, sizeof *t);
    int max_study = 0;
    if (t) {
        t->subs = calloc((size_t)n, sizeof *t->subs);
        t->wls = calloc((size_t)n, sizeof *t->wls);
    }
    if (!t || !t->subs || !t->wls) {
        free(tr);
        tb_score_table_destroy(t);
        return tb_fail(err, TB_ERR_NOMEM, "scoring: out of memory");
    }
    snprintf(t->benchmark, sizeof t->benchmark, "%s", o->benchmark);
    snprintf(t->ruleset, sizeof t->ruleset, "%s", tr[0].ruleset);
    t->tau_max = o->tau_max > 0 ? o->tau_max : TB_SCORE_TAU_MAX;
    t->variant_rule = o->variant_rule;
    t->basis = o->basis;
    if (t->basis < TB_TIME_WALL || t->basis > TB_TIME_STEPS) {
        free(tr);
        tb_score_table_destroy(t);
        return tb_fail(err, TB_ERR_INVALID, "score_store: unknown time basis %d", (int)o->basis);
    }
    for (int i = 0; i < n; i++) {
        if (index_of_sub(t, tr[i].submission) < 0)
            snprintf(t->subs[t->n_subs++], sizeof t->subs[0], "%s", tr[i].submission);
        if (index_of_wl(t, tr[i].workload) < 0)
            snprintf(t->wls[t->n_wl++], sizeof t->wls[0], "%s", tr[i].workload);
        if (tr[i].study + 1 > max_study) max_study = tr[i].study + 1;
    }
    if (o->reference && index_of_sub(t, o->reference) < 0) {
        char list[512] = "";
        for (int i = 0; i < t->n_subs; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, t->subs[i], sizeof list - strlen(list) - 1);
        }
        free(tr);
        tb_score_table_destroy(t);
        return tb_fail(err, TB_ERR_INVALID,
                       "reference submission '%s' is not in benchmark '%s' (its submissions: %s)",
                       o->reference, o->benchmark, list);
    }
    size_t cells = (size_t)t->n_subs * (size_t)t->n_wl;
    t->budgets = calloc((size_t)t->n_wl, sizeof(double));
    t->reference_step_s = calloc((size_t)t->n_wl, sizeof(double));
    t->time = calloc(cells, sizeof(double));
    t->ratio = calloc(cells, sizeof(double));
    t->studies = calloc(cells, sizeof(int));
    t->studies_reached = calloc(cells, sizeof(int));
    t->trials = calloc(cells, sizeof(int));
    t->trials_failed = calloc(cells, sizeof(int));
    t->trials_unfinished = calloc(cells, sizeof(int));
    t->trials_contended = calloc(cells, sizeof(int));
    t->score = calloc((size_t)t->n_subs, sizeof(double));
    t->speedup = calloc((size_t)t->n_subs, sizeof(double));
    t->counted = calloc((size_t)t->n_wl, sizeof(bool));
    t->disqualified = calloc(cells, sizeof(bool));
    double *study_best = malloc(cells * (size_t)max_study * sizeof(double));
    int *variant_of = malloc((size_t)t->n_wl * sizeof(int));
    if (!t->budgets || !t->reference_step_s || !t->time || !t->ratio || !t->studies ||
        !t->studies_reached || !t->trials || !t->trials_failed || !t->trials_unfinished ||
        !t->trials_contended || !t->score || !t->speedup ||
        !t->counted || !t->disqualified || !study_best || !variant_of) {
        free(tr);
        free(study_best);
        free(variant_of);
        tb_score_table_destroy(t);
        return tb_fail(err, TB_ERR_NOMEM, "scoring: out of memory");
    }
    for (size_t i = 0; i < cells * (size_t)max_study; i++) study_best[i] = NAN; /* no trial */
    for (int w = 0; w < t->n_wl; w++) t->reference_step_s[w] = NAN;
    st = t->basis == TB_TIME_REFERENCE ? reference_steps(store, t, err) : TB_OK;
    for (int i = 0; st == TB_OK && i < n; i++) {
        int s = index_of_sub(t, tr[i].submission), w = index_of_wl(t, tr[i].workload);
        size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
        /* a miss in the speedup: the budget, or in steps the most steps of the workload's trials */
        if (t->basis != TB_TIME_STEPS) t->budgets[w] = tr[i].budget_s;
        else if ((double)tr[i].steps > t->budgets[w]) t->budgets[w] = (double)tr[i].steps;
        t->trials[c]++;
        t->trials_failed[c] += tr[i].status == TB_TRIAL_FAILED;
        t->trials_unfinished[c] +=
            tr[i].status == TB_TRIAL_PLANNED || tr[i].status == TB_TRIAL_RUNNING;
        t->trials_contended[c] += tr[i].status == TB_TRIAL_DONE && tr[i].contended == 1;
        double ttt;
        st = trial_time(store, t, &tr[i], t->reference_step_s[w], &ttt, err);
        double *b = &study_best[c * (size_t)max_study + (size_t)tr[i].study];
        if (isnan(*b) || ttt < *b) *b = ttt; /* the fastest trial of the study, by time */
    }
    if (st != TB_OK) {
        free(tr);
        free(study_best);
        free(variant_of);
        tb_score_table_destroy(t);
        return st;
    }
    double *per_study = malloc((size_t)max_study * sizeof(double));
    for (size_t c = 0; per_study && c < cells; c++) {
        int k = 0;
        for (int j = 0; j < max_study; j++) {
            double b = study_best[c * (size_t)max_study + (size_t)j];
            if (isnan(b)) continue;
            per_study[k++] = b;
            t->studies_reached[c] += isfinite(b);
        }
        t->studies[c] = k;
        t->time[c] = k ? tb_score_median(per_study, k) : INFINITY;
    }
    free(per_study);
    free(study_best);
    free(tr);
    for (int w = 0; w < t->n_wl; w++) {
        const char *base = tb_workload_variant_of(tb_workload_find_info(t->wls[w]));
        variant_of[w] = base ? index_of_wl(t, base) : -1;
    }
    st = tb_score_compute(t->n_subs, t->n_wl, t->time, o->variant_rule ? variant_of : NULL,
                          t->tau_max, t->ratio, t->score, err);
    if (st == TB_OK) mark_variants(t, o->variant_rule ? variant_of : NULL);
    free(variant_of);
    int ref = o->reference ? index_of_sub(t, o->reference) : 0;
    snprintf(t->reference, sizeof t->reference, "%s",
             ref >= 0 ? t->subs[ref] : (o->reference ? o->reference : ""));
    if (st == TB_OK) st = speedups(t, ref, err);
    if (st != TB_OK) {
        tb_score_table_destroy(t);
        return st;
    }
    *out = t;
    return TB_OK;
}

/* score_table.c: the score table of one benchmark in a results store: per trial the time to
 * target, per study the fastest trial (by time), per workload the median over studies, then
 * ratios, scores and speedups; written for a terminal or as JSON. */
#include "trainbench/score.h"

#include "trainbench/benchmark.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void tb_score_table_destroy(tb_score_table *t)
{
    if (!t) return;
    free(t->subs);
    free(t->wls);
    free(t->budgets);
    free(t->time);
    free(t->studies);
    free(t->studies_reached);
    free(t->trials);
    free(t->trials_failed);
    free(t->trials_unfinished);
    free(t->ratio);
    free(t->score);
    free(t->speedup);
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
    t->time = calloc(cells, sizeof(double));
    t->ratio = calloc(cells, sizeof(double));
    t->studies = calloc(cells, sizeof(int));
    t->studies_reached = calloc(cells, sizeof(int));
    t->trials = calloc(cells, sizeof(int));
    t->trials_failed = calloc(cells, sizeof(int));
    t->trials_unfinished = calloc(cells, sizeof(int));
    t->score = calloc((size_t)t->n_subs, sizeof(double));
    t->speedup = calloc((size_t)t->n_subs, sizeof(double));
    double *study_best = malloc(cells * (size_t)max_study * sizeof(double));
    int *variant_of = malloc((size_t)t->n_wl * sizeof(int));
    if (!t->budgets || !t->time || !t->ratio || !t->studies || !t->studies_reached ||
        !t->trials || !t->trials_failed || !t->trials_unfinished || !t->score || !t->speedup ||
        !study_best || !variant_of) {
        free(tr);
        free(study_best);
        free(variant_of);
        tb_score_table_destroy(t);
        return tb_fail(err, TB_ERR_NOMEM, "scoring: out of memory");
    }
    for (size_t i = 0; i < cells * (size_t)max_study; i++) study_best[i] = NAN; /* no trial */
    for (int i = 0; i < n; i++) {
        int s = index_of_sub(t, tr[i].submission), w = index_of_wl(t, tr[i].workload);
        size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
        t->budgets[w] = tr[i].budget_s;
        t->trials[c]++;
        t->trials_failed[c] += tr[i].status == TB_TRIAL_FAILED;
        t->trials_unfinished[c] +=
            tr[i].status == TB_TRIAL_PLANNED || tr[i].status == TB_TRIAL_RUNNING;
        double ttt = tr[i].status == TB_TRIAL_DONE && tr[i].reached ? tr[i].time_to_target
                                                                    : INFINITY;
        double *b = &study_best[c * (size_t)max_study + (size_t)tr[i].study];
        if (isnan(*b) || ttt < *b) *b = ttt; /* the fastest trial of the study, by time */
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
        tb_bench_workload bw;
        variant_of[w] = tb_bench_workload_find(t->wls[w], &bw) && bw.variant_of
                            ? index_of_wl(t, bw.variant_of) : -1;
    }
    st = tb_score_compute(t->n_subs, t->n_wl, t->time, o->variant_rule ? variant_of : NULL,
                          t->tau_max, t->ratio, t->score, err);
    free(variant_of);
    int ref = o->reference ? index_of_sub(t, o->reference) : 0;
    snprintf(t->reference, sizeof t->reference, "%s",
             ref >= 0 ? t->subs[ref] : (o->reference ? o->reference : ""));
    for (int s = 0; s < t->n_subs; s++)
        t->speedup[s] = ref < 0 ? NAN
                                : tb_score_speedup(t->time + (size_t)ref * (size_t)t->n_wl,
                                                   t->time + (size_t)s * (size_t)t->n_wl,
                                                   t->budgets, t->n_wl);
    if (st != TB_OK) {
        tb_score_table_destroy(t);
        return st;
    }
    *out = t;
    return TB_OK;
}

static void fmt_time(char *buf, size_t cap, double x)
{
    if (isfinite(x)) snprintf(buf, cap, "%.1f s", x);
    else snprintf(buf, cap, "miss");
}

void tb_score_table_write_text(const tb_score_table *t, FILE *f)
{
    if (!t || !f) return;
    fprintf(f, "benchmark %s (%s tuning): time to target (median over studies of each study's "
               "fastest trial)\n\n", t->benchmark, t->ruleset);
    fprintf(f, "%-24s", "submission");
    for (int w = 0; w < t->n_wl; w++) fprintf(f, "  %-28s", t->wls[w]);
    fprintf(f, "  %7s  %9s\n", "score", "speedup");
    for (int s = 0; s < t->n_subs; s++) {
        fprintf(f, "%-24s", t->subs[s]);
        for (int w = 0; w < t->n_wl; w++) {
            size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
            char tm[32], cell[64];
            fmt_time(tm, sizeof tm, t->time[c]);
            int n = snprintf(cell, sizeof cell, "%s (%d/%d studies", tm, t->studies_reached[c],
                             t->studies[c]);
            if (t->trials_failed[c])
                n += snprintf(cell + n, sizeof cell - (size_t)n, ", %d failed",
                              t->trials_failed[c]);
            if (t->trials_unfinished[c])
                n += snprintf(cell + n, sizeof cell - (size_t)n, ", %d unfinished",
                              t->trials_unfinished[c]);
            snprintf(cell + n, sizeof cell - (size_t)n, ")");
            fprintf(f, "  %-28s", cell);
        }
        if (isfinite(t->speedup[s])) fprintf(f, "  %7.3f  %8.2fx\n", t->score[s], t->speedup[s]);
        else fprintf(f, "  %7.3f  %9s\n", t->score[s], "-");
    }
    fprintf(f, "\nscore: AlgoPerf benchmark score, sum_w max(0, %g - r_w) / (n (%g - 1)), r = "
               "time / fastest time (1 = fastest everywhere, 0 = never within %gx)\n",
            t->tau_max, t->tau_max, t->tau_max);
    fprintf(f, "speedup: geometric mean of %s's time / this time (a miss counts as budget + 1 s)"
               "%s\n", t->reference, t->variant_rule ? "; variant rule on" : "");
}

static void json_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

void tb_score_table_write_json(const tb_score_table *t, FILE *f)
{
    if (!t || !f) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "benchmark", t->benchmark);
    cJSON_AddStringToObject(o, "ruleset", t->ruleset);
    cJSON_AddNumberToObject(o, "tau_max", t->tau_max);
    cJSON_AddBoolToObject(o, "variant_rule", t->variant_rule);
    cJSON_AddStringToObject(o, "reference", t->reference);
    cJSON *subs = cJSON_AddArrayToObject(o, "submissions");
    for (int s = 0; s < t->n_subs; s++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", t->subs[s]);
        json_num(x, "score", t->score[s]);
        json_num(x, "speedup", t->speedup[s]);
        cJSON *wl = cJSON_AddObjectToObject(x, "workloads");
        for (int w = 0; w < t->n_wl; w++) {
            size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
            cJSON *y = cJSON_AddObjectToObject(wl, t->wls[w]);
            json_num(y, "time_to_target", t->time[c]);
            json_num(y, "ratio", t->ratio[c]);
            cJSON_AddNumberToObject(y, "studies", t->studies[c]);
            cJSON_AddNumberToObject(y, "studies_reached", t->studies_reached[c]);
            cJSON_AddNumberToObject(y, "trials", t->trials[c]);
            cJSON_AddNumberToObject(y, "trials_failed", t->trials_failed[c]);
            cJSON_AddNumberToObject(y, "trials_unfinished", t->trials_unfinished[c]);
            cJSON_AddNumberToObject(y, "budget_s", t->budgets[w]);
        }
        cJSON *prof = cJSON_AddArrayToObject(x, "profile");
        for (int k = 0; k <= 12; k++) { /* rho(tau) at tau = 1, 1.25, ..., tau_max */
            double tau = 1 + (t->tau_max - 1) * k / 12.0;
            cJSON *p = cJSON_CreateArray();
            cJSON_AddItemToArray(p, cJSON_CreateNumber(tau));
            cJSON_AddItemToArray(p, cJSON_CreateNumber(tb_score_profile(
                                        t->ratio + (size_t)s * (size_t)t->n_wl, NULL, t->n_wl,
                                        tau)));
            cJSON_AddItemToArray(prof, p);
        }
        cJSON_AddItemToArray(subs, x);
    }
    char *text = cJSON_PrintUnformatted(o);
    if (text) fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(o);
}

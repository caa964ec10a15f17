/* data_bench.c: one benchmark's part of the report's data: the score table (a miss, a failure
 * and an unfinished cell said as such), the performance profiles rho(tau) for tau from 1 to
 * tau_max, and every study's time to target per workload. */
#include "report/report_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tb_report_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

cJSON *tb_report_num_item(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* What a cell of the table is: reached, a miss, every trial failed, or not finished. */
static const char *cell_state(const tb_score_table *t, size_t c)
{
    if (isfinite(t->time[c])) return t->disqualified[c] ? "disqualified" : "reached";
    if (t->trials[c] > 0 && t->trials_failed[c] == t->trials[c]) return "failed";
    if (t->trials_unfinished[c] > 0) return "unfinished";
    return "miss";
}

static void add_table(const tb_score_table *t, cJSON *b)
{
    cJSON *rows = cJSON_AddArrayToObject(b, "table");
    for (int s = 0; s < t->n_subs; s++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "submission", t->subs[s]);
        tb_report_num(r, "score", t->score[s]);
        bool any = false;
        cJSON *cells = cJSON_AddArrayToObject(r, "cells");
        for (int w = 0; w < t->n_wl; w++) {
            size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "state", cell_state(t, c));
            tb_report_num(x, "time", t->time[c]);
            tb_report_num(x, "ratio", t->ratio[c]);
            cJSON_AddNumberToObject(x, "studies", t->studies[c]);
            cJSON_AddNumberToObject(x, "studies_reached", t->studies_reached[c]);
            cJSON_AddNumberToObject(x, "trials", t->trials[c]);
            cJSON_AddNumberToObject(x, "trials_failed", t->trials_failed[c]);
            cJSON_AddNumberToObject(x, "trials_unfinished", t->trials_unfinished[c]);
            any = any || (t->counted[w] && isfinite(t->time[c]) && !t->disqualified[c]);
            cJSON_AddItemToArray(cells, x);
        }
        /* a speedup only where the submission reached something: never one for misses */
        tb_report_num(r, "speedup", any ? t->speedup[s] : NAN);
        cJSON_AddItemToArray(rows, r);
    }
}

static void add_profiles(const tb_score_table *t, cJSON *b)
{
    cJSON *profiles = cJSON_AddArrayToObject(b, "profiles");
    for (int s = 0; s < t->n_subs; s++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "submission", t->subs[s]);
        cJSON *pts = cJSON_AddArrayToObject(p, "points");
        for (int k = 0; k <= 60; k++) { /* tau = 1, 1.05, ..., tau_max */
            double tau = 1 + (t->tau_max - 1) * k / 60.0;
            cJSON *pt = cJSON_CreateArray();
            cJSON_AddItemToArray(pt, cJSON_CreateNumber(tau));
            cJSON_AddItemToArray(pt, cJSON_CreateNumber(tb_score_table_profile(t, s, tau)));
            cJSON_AddItemToArray(pts, pt);
        }
        cJSON_AddItemToArray(profiles, p);
    }
}

static int sub_index(const tb_score_table *t, const char *name)
{
    for (int i = 0; i < t->n_subs; i++)
        if (strcmp(t->subs[i], name) == 0) return i;
    return -1;
}

/* Every study's fastest time per workload and submission ("time" null for a miss; "state"
 * reached, miss, failed: every trial of the study failed, or unfinished). */
static tb_status add_study_times(tb_store *store, const tb_score_table *t, cJSON *b,
                                 tb_error *err)
{
    tb_trial_record *tr;
    int n;
    tb_status st = tb_store_trials(store, t->benchmark, &tr, &n, err);
    if (st != TB_OK) return st;
    cJSON *wls = cJSON_AddArrayToObject(b, "time_to_target");
    for (int w = 0; w < t->n_wl; w++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "workload", t->wls[w]);
        cJSON_AddNumberToObject(x, "budget_s", t->budgets[w]);
        cJSON *med = cJSON_AddArrayToObject(x, "median");
        for (int s = 0; s < t->n_subs; s++)
            cJSON_AddItemToArray(med, tb_report_num_item(t->time[(size_t)s * (size_t)t->n_wl +
                                                                (size_t)w]));
        cJSON *vals = cJSON_AddArrayToObject(x, "studies");
        for (int i = 0; i < n; i++) {
            if (strcmp(tr[i].workload, t->wls[w]) != 0) continue;
            bool first = true; /* one entry per (submission, study): its first trial makes it */
            for (int j = 0; j < i && first; j++)
                first = !(tr[j].study == tr[i].study && strcmp(tr[j].workload, tr[i].workload) == 0 &&
                          strcmp(tr[j].submission, tr[i].submission) == 0);
            if (!first) continue;
            double best = INFINITY;
            int trials = 0, failed = 0, open = 0;
            for (int j = i; j < n; j++) {
                if (tr[j].study != tr[i].study || strcmp(tr[j].workload, tr[i].workload) != 0 ||
                    strcmp(tr[j].submission, tr[i].submission) != 0)
                    continue;
                trials++;
                failed += tr[j].status == TB_TRIAL_FAILED;
                open += tr[j].status == TB_TRIAL_PLANNED || tr[j].status == TB_TRIAL_RUNNING;
                if (tr[j].status == TB_TRIAL_DONE && tr[j].reached && tr[j].time_to_target < best)
                    best = tr[j].time_to_target;
            }
            cJSON *v = cJSON_CreateObject();
            cJSON_AddNumberToObject(v, "submission", sub_index(t, tr[i].submission));
            cJSON_AddNumberToObject(v, "study", tr[i].study);
            tb_report_num(v, "time", best);
            cJSON_AddStringToObject(v, "state", isfinite(best) ? "reached"
                                                : failed == trials ? "failed"
                                                : open ? "unfinished" : "miss");
            cJSON_AddItemToArray(vals, v);
        }
        cJSON_AddItemToArray(wls, x);
    }
    free(tr);
    return TB_OK;
}

/* The score table and profiles in the reference and steps time bases, under "bases"; a basis
 * that cannot be scored (no calibration window of a workload) says why instead. */
static tb_status add_bases(tb_store *store, const char *benchmark, cJSON *b, tb_error *err)
{
    cJSON *bases = cJSON_AddArrayToObject(b, "bases");
    static const tb_time_basis which[] = {TB_TIME_REFERENCE, TB_TIME_STEPS};
    for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
        tb_score_options o = {benchmark, NULL, false, 0, which[i]};
        tb_score_table *t;
        tb_error why = {0};
        tb_status st = tb_score_store(store, &o, &t, &why);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(bases, x);
        cJSON_AddStringToObject(x, "basis", tb_time_basis_name(which[i]));
        if (st == TB_ERR_MISSING) {
            cJSON_AddStringToObject(x, "missing", why.message);
            continue;
        }
        if (st != TB_OK) {
            if (err) *err = why;
            return st;
        }
        if (which[i] == TB_TIME_REFERENCE) {
            cJSON *rs = cJSON_AddObjectToObject(x, "reference_step_s");
            for (int w = 0; w < t->n_wl; w++) tb_report_num(rs, t->wls[w], t->reference_step_s[w]);
        }
        add_table(t, x);
        add_profiles(t, x);
        tb_score_table_destroy(t);
    }
    return TB_OK;
}

tb_status tb_report_bench_json(tb_store *store, const char *benchmark, cJSON **out,
                               tb_error *err)
{
    *out = NULL;
    tb_score_options o = {benchmark, NULL, false, 0, TB_TIME_WALL};
    tb_score_table *t;
    tb_status st = tb_score_store(store, &o, &t, err);
    if (st != TB_OK) return st;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "name", t->benchmark);
    cJSON_AddStringToObject(b, "ruleset", t->ruleset);
    cJSON_AddNumberToObject(b, "tau_max", t->tau_max);
    cJSON_AddStringToObject(b, "reference", t->reference);
    cJSON *subs = cJSON_AddArrayToObject(b, "submissions");
    for (int s = 0; s < t->n_subs; s++) cJSON_AddItemToArray(subs, cJSON_CreateString(t->subs[s]));
    cJSON *wls = cJSON_AddArrayToObject(b, "workloads");
    for (int w = 0; w < t->n_wl; w++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", t->wls[w]);
        cJSON_AddNumberToObject(x, "budget_s", t->budgets[w]);
        cJSON_AddBoolToObject(x, "counted", t->counted[w]);
        cJSON_AddItemToArray(wls, x);
    }
    add_table(t, b);
    add_profiles(t, b);
    st = add_bases(store, benchmark, b, err);
    if (st == TB_OK) st = add_study_times(store, t, b, err);
    if (st == TB_OK) st = tb_report_trials_json(store, t, b, err);
    tb_score_table_destroy(t);
    if (st != TB_OK) {
        cJSON_Delete(b);
        return st;
    }
    *out = b;
    return TB_OK;
}

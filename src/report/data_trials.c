/* data_trials.c: one benchmark's trials in the report's data: the training curves (each
 * trial's validation metric against accumulated submission time, the target, how the trial
 * ended, whether it ran on a contended machine) per workload, and the search (each trial's
 * hyperparameters and result) per submission. */
#include "report/report_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The workload's target metric in an eval, as the benchmark compares it with the target. */
static double eval_metric(const char *metric, const tb_eval_record *e)
{
    if (strcmp(metric, "error_rate") == 0) return e->validation_error;
    if (strcmp(metric, "bits_per_char") == 0) return e->validation_loss / log(2.0);
    if (strcmp(metric, "loss") == 0) return e->validation_loss;
    return NAN;
}

static const char *trial_end(const tb_trial_record *t)
{
    if (t->status == TB_TRIAL_FAILED) return "failed";
    if (t->status != TB_TRIAL_DONE) return "unfinished";
    return t->reached ? "reached" : "miss";
}

static cJSON *hparams_object(const tb_hparams *hp)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < hp->count; i++) tb_report_num(o, hp->names[i], hp->values[i]);
    return o;
}

/* One trial: its keys, how it ended, its curve and its best validation metric. */
static tb_status trial_json(tb_store *store, const tb_trial_record *t, int sub, cJSON **out,
                            tb_error *err)
{
    tb_eval_record *ev;
    int n;
    tb_status st = tb_store_evals(store, t->id, &ev, &n, err);
    if (st != TB_OK) return st;
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "submission", sub);
    cJSON_AddNumberToObject(x, "study", t->study);
    cJSON_AddNumberToObject(x, "trial", t->trial);
    cJSON_AddStringToObject(x, "end", trial_end(t));
    cJSON_AddStringToObject(x, "reason", t->reason);
    /* run on a contended machine (and why); null when unknown */
    if (t->contended >= 0) cJSON_AddBoolToObject(x, "contended", t->contended == 1);
    else cJSON_AddNullToObject(x, "contended");
    cJSON_AddStringToObject(x, "contention", t->contention);
    tb_report_num(x, "time_to_target", t->reached ? t->time_to_target : NAN);
    cJSON_AddItemToObject(x, "hparams", hparams_object(t->hparams.count ? &t->hparams
                                                                        : &t->resolved_hparams));
    cJSON *pts = cJSON_AddArrayToObject(x, "curve");
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        double v = eval_metric(t->metric, &ev[i]);
        if (!isfinite(v) || !isfinite(ev[i].submission_time)) continue;
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber(ev[i].submission_time));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(v));
        cJSON_AddItemToArray(pts, p);
        if (v < best) best = v;
    }
    tb_report_num(x, "best", best);
    free(ev);
    *out = x;
    return TB_OK;
}

static int index_of(const char (*names)[128], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

tb_status tb_report_trials_json(tb_store *store, const tb_score_table *t, cJSON *bench,
                                tb_error *err)
{
    tb_trial_record *tr;
    int n;
    tb_status st = tb_store_trials(store, t->benchmark, &tr, &n, err);
    if (st != TB_OK) return st;
    cJSON *curves = cJSON_AddArrayToObject(bench, "curves");
    for (int w = 0; st == TB_OK && w < t->n_wl; w++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToArray(curves, c);
        cJSON_AddStringToObject(c, "workload", t->wls[w]);
        cJSON *trials = cJSON_AddArrayToObject(c, "trials");
        bool first = true;
        for (int i = 0; st == TB_OK && i < n; i++) {
            if (strcmp(tr[i].workload, t->wls[w]) != 0) continue;
            if (first) {
                cJSON_AddStringToObject(c, "metric", tr[i].metric);
                tb_report_num(c, "target", tr[i].target);
                cJSON_AddNumberToObject(c, "budget_s", tr[i].budget_s);
                first = false;
            }
            cJSON *x;
            st = trial_json(store, &tr[i], index_of(t->subs, t->n_subs, tr[i].submission), &x,
                            err);
            if (st == TB_OK) {
                cJSON_AddStringToObject(x, "workload", tr[i].workload);
                cJSON_AddItemToArray(trials, x);
            }
        }
    }
    free(tr);
    return st;
}

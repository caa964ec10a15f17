/* export.c: the results store as CSV (one row per eval, AlgoPerf's eval_measurements.csv
 * columns after the trial's keys and hyperparameters; one row with empty eval columns for a
 * trial without evals) or JSON lines (one object per trial with its evals). */
#include "store/store_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

tb_status tb_export_format_parse(const char *name, tb_export_format *out, tb_error *err)
{
    if (!name || !out) return tb_store_null(err, "export_format_parse", name ? "out" : "name");
    if (strcmp(name, "csv") == 0) *out = TB_EXPORT_CSV;
    else if (strcmp(name, "jsonl") == 0 || strcmp(name, "json") == 0) *out = TB_EXPORT_JSONL;
    else if (strcmp(name, "algoperf") == 0) *out = TB_EXPORT_ALGOPERF;
    else return tb_fail(err, TB_ERR_INVALID, "unknown export format '%s' (csv, jsonl or "
                        "algoperf)", name);
    return TB_OK;
}

void tb_export_csv_text(FILE *f, const char *s)
{
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    if (!quote) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void tb_export_csv_real(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, ",%.9g", v);
    else fputc(',', f);
}

void tb_export_eval_row(FILE *f, const tb_eval_record *e, int preemptions)
{
    fprintf(f, "%lld,%d", (long long)e->step, preemptions);
    tb_export_csv_real(f, e->submission_time); /* AlgoPerf's score column: submission time */
    tb_export_csv_real(f, e->total_duration);
    tb_export_csv_real(f, e->submission_time);
    tb_export_csv_real(f, e->eval_time);
    fputs(",0", f);
    tb_export_csv_real(f, e->train_accuracy);
    tb_export_csv_real(f, e->train_loss);
    tb_export_csv_real(f, e->validation_accuracy);
    tb_export_csv_real(f, e->validation_loss);
    tb_export_csv_real(f, e->validation_error);
    fprintf(f, ",%lld", (long long)e->validation_examples);
    tb_export_csv_real(f, e->test_accuracy);
    tb_export_csv_real(f, e->test_loss);
    tb_export_csv_real(f, e->test_error);
    fprintf(f, ",%lld\n", (long long)e->test_examples);
}

void tb_export_json_real(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

/* o[k] = v, or null for an unknown count (< 0). */
static void json_count(cJSON *o, const char *k, int64_t v)
{
    if (v >= 0) cJSON_AddNumberToObject(o, k, (double)v);
    else cJSON_AddNullToObject(o, k);
}

static const char csv_header[] =
    "benchmark,submission,workload,ruleset,study,trial,trial_status,hparams,resolved_hparams,"
    "default_hparams," TB_EXPORT_EVAL_COLUMNS "\n";

static void csv_keys(FILE *f, const tb_trial_record *t, char *const hp[3])
{
    tb_export_csv_text(f, t->benchmark);
    fputc(',', f);
    tb_export_csv_text(f, t->submission);
    fprintf(f, ",%s,%s,%d,%d,%s,", t->workload, t->ruleset, t->study, t->trial,
            tb_trial_status_name(t->status));
    tb_export_csv_text(f, hp[0] ? hp[0] : "{}");
    for (int i = 1; i < 3; i++) {
        fputc(',', f);
        tb_export_csv_text(f, hp[i] ? hp[i] : "");
    }
}

/* The hyperparameters a trial ran with, {"name": value, ...}, and the names of those that took
 * defaults, ["name", ...], as JSON text (malloc'ed; NULL for a trial that has not started). */
static char *resolved_json(const tb_trial_record *t)
{
    return t->resolved_hparams.count ? tb_store_hparams_json(&t->resolved_hparams) : NULL;
}

static char *defaults_json(const tb_trial_record *t)
{
    if (t->resolved_hparams.count == 0) return NULL;
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < t->default_hparams.count; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(t->default_hparams.names[i]));
    char *text = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return text;
}

static void csv_trial(FILE *f, const tb_trial_record *t, const tb_eval_record *ev, int n)
{
    /* the point, the values in effect, the names that took defaults */
    char *hp[3] = {tb_store_hparams_json(&t->hparams), resolved_json(t), defaults_json(t)};
    int preemptions = t->attempts > 0 ? t->attempts - 1 : 0;
    if (n == 0) {
        /* a trial without evals (failed before its first, or not run yet) still has its row:
         * its keys and status, the eval columns empty */
        csv_keys(f, t, hp);
        fprintf(f, ",,%d,,,,,,,,,,,,,,,\n", preemptions);
    }
    for (int i = 0; i < n; i++) {
        csv_keys(f, t, hp);
        fputc(',', f);
        tb_export_eval_row(f, &ev[i], preemptions);
    }
    for (int i = 0; i < 3; i++) free(hp[i]);
}

/* t's steps at its target and their reference time at rstep seconds a step (NaN: its
 * workload has no calibration window), and each eval's reference time: the time bases of
 * `score --time`. */
static void jsonl_bases(cJSON *o, cJSON *evals, const tb_trial_record *t,
                        const tb_eval_record *ev, int n, double rstep)
{
    const int64_t steps = tb_trial_steps_to_target(t, ev, n);
    tb_export_json_real(o, "steps_to_target", steps >= 0 ? (double)steps : NAN);
    tb_export_json_real(o, "reference_step_s", rstep);
    tb_export_json_real(o, "reference_time_to_target", steps >= 0 ? (double)steps * rstep : NAN);
    int i = 0;
    for (cJSON *x = evals ? evals->child : NULL; x && i < n; x = x->next, i++)
        tb_export_json_real(x, "reference_time", (double)ev[i].step * rstep);
}

static void jsonl_trial(FILE *f, const tb_trial_record *t, const tb_eval_record *ev, int n,
                        double rstep)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "benchmark", t->benchmark);
    cJSON_AddStringToObject(o, "submission", t->submission);
    cJSON_AddStringToObject(o, "submission_spec", t->submission_spec);
    cJSON_AddStringToObject(o, "workload", t->workload);
    cJSON_AddStringToObject(o, "ruleset", t->ruleset);
    cJSON_AddNumberToObject(o, "study", t->study);
    cJSON_AddNumberToObject(o, "trial", t->trial);
    char *hp = tb_store_hparams_json(&t->hparams);
    char *seeds = tb_store_seeds_json(t->seeds);
    cJSON_AddItemToObject(o, "hparams", cJSON_Parse(hp ? hp : "{}"));
    char *resolved[2] = {resolved_json(t), defaults_json(t)};
    const char *keys[2] = {"resolved_hparams", "default_hparams"};
    for (int i = 0; i < 2; i++) {
        cJSON *x = resolved[i] ? cJSON_Parse(resolved[i]) : NULL;
        if (x) cJSON_AddItemToObject(o, keys[i], x);
        else cJSON_AddNullToObject(o, keys[i]);
        free(resolved[i]);
    }
    /* raw: exact integers (cJSON's doubles would round seeds above 2^53) */
    cJSON_AddItemToObject(o, "seeds", cJSON_CreateRaw(seeds ? seeds : "{}"));
    free(hp);
    free(seeds);
    cJSON_AddStringToObject(o, "metric", t->metric);
    cJSON_AddNumberToObject(o, "target", t->target);
    cJSON_AddNumberToObject(o, "budget_s", t->budget_s);
    cJSON_AddNumberToObject(o, "eval_period_s", t->eval_period_s);
    cJSON_AddStringToObject(o, "status", tb_trial_status_name(t->status));
    cJSON_AddStringToObject(o, "reason", t->reason);
    cJSON_AddNumberToObject(o, "attempts", t->attempts);
    cJSON_AddBoolToObject(o, "reached", t->reached);
    tb_export_json_real(o, "time_to_target", t->time_to_target);
    cJSON_AddNumberToObject(o, "submission_time", t->submission_time);
    cJSON_AddNumberToObject(o, "steps", (double)t->steps);
    cJSON_AddStringToObject(o, "code_version", t->code_version);
    cJSON *machine = cJSON_Parse(t->machine);
    if (machine) cJSON_AddItemToObject(o, "machine", machine);
    else cJSON_AddStringToObject(o, "machine", t->machine);
    /* the conditions it ran in (unknown: null) and the order it ran in */
    tb_export_json_real(o, "wall_time", t->wall_time);
    tb_export_json_real(o, "cpu_time", t->cpu_time);
    tb_export_json_real(o, "load_avg", t->load_avg);
    tb_export_json_real(o, "steal", t->steal);
    json_count(o, "nivcsw", t->nivcsw);
    if (t->contended >= 0) cJSON_AddBoolToObject(o, "contended", t->contended == 1);
    else cJSON_AddNullToObject(o, "contended");
    cJSON_AddStringToObject(o, "contention", t->contention);
    json_count(o, "run_order", t->run_order > 0 ? t->run_order : -1);
    cJSON *arr = cJSON_AddArrayToObject(o, "evals");
    for (int i = 0; i < n; i++) {
        const tb_eval_record *e = &ev[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "global_step", (double)e->step);
        cJSON_AddNumberToObject(x, "accumulated_submission_time", e->submission_time);
        cJSON_AddNumberToObject(x, "accumulated_eval_time", e->eval_time);
        cJSON_AddNumberToObject(x, "total_duration", e->total_duration);
        tb_export_json_real(x, "train/loss", e->train_loss);
        tb_export_json_real(x, "train/accuracy", e->train_accuracy);
        tb_export_json_real(x, "validation/loss", e->validation_loss);
        tb_export_json_real(x, "validation/accuracy", e->validation_accuracy);
        tb_export_json_real(x, "validation/error_rate", e->validation_error);
        cJSON_AddNumberToObject(x, "validation/num_examples", (double)e->validation_examples);
        tb_export_json_real(x, "test/loss", e->test_loss);
        tb_export_json_real(x, "test/accuracy", e->test_accuracy);
        tb_export_json_real(x, "test/error_rate", e->test_error);
        cJSON_AddNumberToObject(x, "test/num_examples", (double)e->test_examples);
        tb_export_json_real(x, "cpu_time", e->cpu_time);
        tb_export_json_real(x, "load_avg", e->load_avg);
        tb_export_json_real(x, "steal", e->steal);
        json_count(x, "nivcsw", e->nivcsw);
        cJSON_AddItemToArray(arr, x);
    }
    jsonl_bases(o, arr, t, ev, n, rstep);
    char *text = cJSON_PrintUnformatted(o);
    if (text) fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(o);
}

tb_status tb_store_export(tb_store *s, const char *benchmark, tb_export_format format, FILE *f,
                          tb_error *err)
{
    if (!s || !f) return tb_store_null(err, "store_export", s ? "the file" : "the store");
    if (format == TB_EXPORT_ALGOPERF)
        return tb_fail(err, TB_ERR_INVALID, "the algoperf export is a directory tree, not one "
                       "file (tb_store_export_algoperf)");
    tb_trial_record *trials;
    int n;
    tb_status st = tb_store_trials(s, benchmark, &trials, &n, err);
    if (st != TB_OK) return st;
    if (benchmark && n == 0) { /* a misspelt name: not an empty export */
        free(trials);
        char list[400];
        tb_store_benchmark_list(s, list, sizeof list);
        return tb_fail(err, TB_ERR_INVALID,
                       "results store %s has no trials of benchmark '%s' (its benchmarks: %s)",
                       s->path, benchmark, list);
    }
    if (format == TB_EXPORT_CSV) fputs(csv_header, f);
    tb_calibration_record *cal = NULL; /* the reference step times (jsonl) */
    int n_cal = 0;
    if (format == TB_EXPORT_JSONL) st = tb_store_calibrations(s, NULL, &cal, &n_cal, err);
    for (int i = 0; i < n && st == TB_OK; i++) {
        tb_eval_record *ev;
        int ne;
        st = tb_store_evals(s, trials[i].id, &ev, &ne, err);
        if (st != TB_OK) break;
        if (format == TB_EXPORT_CSV) csv_trial(f, &trials[i], ev, ne);
        else jsonl_trial(f, &trials[i], ev, ne,
                         tb_calibration_reference_step_s(cal, n_cal, trials[i].benchmark,
                                                         trials[i].workload));
        free(ev);
    }
    free(cal);
    free(trials);
    if (st == TB_OK && (fflush(f) != 0 || ferror(f)))
        st = tb_fail(err, TB_ERR_IO, "writing the export failed (disk full?)");
    return st;
}

/* data_side.c: the hardware runs (every workload in every configuration, the scores with
 * their intervals, per machine) and the study runs (per study, each run's configuration and
 * result) in the report's data. */
#include "report/report_impl.h"

#include <stdlib.h>
#include <string.h>

/* The machine facts' "cpu" and "cores" in words ("Xeon ... (2 cores)"), else the text. */
static void machine_name(const char *facts, char *buf, size_t cap)
{
    cJSON *m = cJSON_Parse(facts);
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(m, "cpu");
    const cJSON *cores = cJSON_GetObjectItemCaseSensitive(m, "cores");
    if (cJSON_IsString(cpu) && cJSON_IsNumber(cores))
        snprintf(buf, cap, "%s (%d cores)", cpu->valuestring, cores->valueint);
    else if (cJSON_IsString(cpu)) snprintf(buf, cap, "%s", cpu->valuestring);
    else snprintf(buf, cap, "%s", facts);
    cJSON_Delete(m);
}

static void add_hardware(const tb_store_hw_row *r, int n, const tb_store_hw_score_row *sc,
                         int n_sc, cJSON *root)
{
    cJSON *hw = cJSON_AddObjectToObject(root, "hardware");
    cJSON *rows = cJSON_AddArrayToObject(hw, "results");
    char name[600];
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "run", (double)r[i].run_id);
        cJSON_AddStringToObject(x, "created", r[i].created);
        machine_name(r[i].machine, name, sizeof name);
        cJSON_AddStringToObject(x, "machine", name);
        cJSON_AddNumberToObject(x, "world_size", r[i].world_size);
        cJSON_AddStringToObject(x, "workload", r[i].workload);
        cJSON_AddStringToObject(x, "algorithm", r[i].algorithm);
        char config[64];
        if (strcmp(r[i].device, "cpu") == 0)
            snprintf(config, sizeof config, "cpu, %d thread%s", r[i].threads,
                     r[i].threads == 1 ? "" : "s");
        else snprintf(config, sizeof config, "%s", r[i].device);
        cJSON_AddStringToObject(x, "config", config);
        cJSON_AddBoolToObject(x, "failed", r[i].failed);
        cJSON_AddStringToObject(x, "reason", r[i].reason);
        tb_report_num(x, "examples_per_s", r[i].examples_per_s);
        tb_report_num(x, "sem_pct", r[i].sem_pct);
        tb_report_num(x, "ratio", r[i].ratio);
        cJSON_AddItemToArray(rows, x);
    }
    cJSON *scores = cJSON_AddArrayToObject(hw, "scores");
    for (int i = 0; i < n_sc; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "run", (double)sc[i].run_id);
        cJSON_AddStringToObject(x, "created", sc[i].created);
        machine_name(sc[i].machine, name, sizeof name);
        cJSON_AddStringToObject(x, "machine", name);
        cJSON_AddStringToObject(x, "config", sc[i].config);
        cJSON_AddNumberToObject(x, "workloads", sc[i].workloads);
        cJSON_AddNumberToObject(x, "failed", sc[i].failed);
        tb_report_num(x, "score", sc[i].score);
        tb_report_num(x, "low", sc[i].low);
        tb_report_num(x, "high", sc[i].high);
        tb_report_num(x, "level", sc[i].level);
        cJSON_AddItemToArray(scores, x);
    }
}

/* A run's configuration without its seeds: what the runs of one cell share. */
static void cell_of(const char *key, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", key);
    char *seeds = strstr(buf, " seeds=");
    if (seeds) *seeds = '\0';
}

static void add_studies(const tb_store_study_row *r, int n, cJSON *root)
{
    cJSON *studies = cJSON_AddArrayToObject(root, "studies");
    cJSON *cur = NULL, *runs = NULL;
    char cell[2048];
    for (int i = 0; i < n; i++) {
        if (!cur || strcmp(r[i].study, r[i - 1].study) != 0) {
            cur = cJSON_CreateObject();
            cJSON_AddStringToObject(cur, "study", r[i].study);
            runs = cJSON_AddArrayToObject(cur, "runs");
            cJSON_AddItemToArray(studies, cur);
        }
        cJSON *x = cJSON_CreateObject();
        cell_of(r[i].key, cell, sizeof cell);
        cJSON_AddStringToObject(x, "config", cell);
        cJSON_AddStringToObject(x, "created", r[i].created);
        cJSON_AddBoolToObject(x, "diverged", r[i].diverged);
        cJSON_AddStringToObject(x, "reason", r[i].reason);
        cJSON_AddBoolToObject(x, "reached", r[i].reached);
        cJSON_AddNumberToObject(x, "steps", (double)r[i].steps);
        tb_report_num(x, "train_time_s", r[i].train_time_s);
        tb_report_num(x, "validation_metric", r[i].validation_metric);
        tb_report_num(x, "test_metric", r[i].test_metric);
        tb_report_num(x, "time_to_target_s", r[i].time_to_target_s);
        cJSON_AddItemToArray(runs, x);
    }
}

tb_status tb_report_side_json(tb_store *store, cJSON *root, int *found, tb_error *err)
{
    tb_store_hw_row *hw;
    tb_store_hw_score_row *sc;
    int n_hw, n_sc;
    *found = 0;
    tb_status st = tb_store_hw_history(store, &hw, &n_hw, &sc, &n_sc, err);
    if (st != TB_OK) return st;
    if (n_hw > 0) add_hardware(hw, n_hw, sc, n_sc, root);
    free(hw);
    free(sc);
    tb_store_study_row *sr;
    int n_sr;
    st = tb_store_study_history(store, &sr, &n_sr, err);
    if (st != TB_OK) return st;
    if (n_sr > 0) add_studies(sr, n_sr, root);
    free(sr);
    *found = n_hw + n_sr;
    return TB_OK;
}

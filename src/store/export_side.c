/* export_side.c: the hardware runs and the study runs of a results store as CSV or JSON lines
 * (read with tb_store_hw_history / tb_store_study_history). Hardware CSV: one row per result
 * (row = result) and per configuration's score (row = score), the columns that do not apply
 * empty; JSON lines: one object per run with its results and scores. Studies: one row or
 * object per study run. */
#include "store/store_impl.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char hw_header[] =
    "row,run_id,created,code_version,world_size,machine,workload,algorithm,device,threads,"
    "batch_size,status,reason,examples_per_s,sem_pct,ratio,config,workloads,failed,score,low,"
    "high,level\n";

static void hw_run_keys(FILE *f, const char *row, int64_t id, const char *created,
                        const char *code_version, int world_size, const char *machine)
{
    fprintf(f, "%s,%lld,%s,", row, (long long)id, created);
    tb_export_csv_text(f, code_version);
    fputc(',', f);
    if (world_size > 0) fprintf(f, "%d", world_size);
    fputc(',', f);
    tb_export_csv_text(f, machine);
}

static void hw_csv(FILE *f, const tb_store_hw_row *r, int nr, const tb_store_hw_score_row *c,
                   int nc)
{
    fputs(hw_header, f);
    for (int i = 0; i < nr; i++) {
        hw_run_keys(f, "result", r[i].run_id, r[i].created, r[i].code_version, r[i].world_size,
                    r[i].machine);
        fprintf(f, ",%s,%s,%s,%d,%d,%s,", r[i].workload, r[i].algorithm, r[i].device,
                r[i].threads, r[i].batch_size, r[i].failed ? "failed" : "ok");
        tb_export_csv_text(f, r[i].reason);
        tb_export_csv_real(f, r[i].examples_per_s);
        tb_export_csv_real(f, r[i].sem_pct);
        tb_export_csv_real(f, r[i].ratio);
        fputs(",,,,,,,\n", f);
    }
    for (int i = 0; i < nc; i++) {
        hw_run_keys(f, "score", c[i].run_id, c[i].created, "", 0, c[i].machine);
        fputs(",,,,,,,,,,,", f);
        tb_export_csv_text(f, c[i].config);
        fprintf(f, ",%d,%d", c[i].workloads, c[i].failed);
        tb_export_csv_real(f, c[i].score);
        tb_export_csv_real(f, c[i].low);
        tb_export_csv_real(f, c[i].high);
        tb_export_csv_real(f, c[i].level);
        fputc('\n', f);
    }
}

static cJSON *hw_result_json(const tb_store_hw_row *r)
{
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "workload", r->workload);
    cJSON_AddStringToObject(x, "algorithm", r->algorithm);
    cJSON_AddStringToObject(x, "device", r->device);
    cJSON_AddNumberToObject(x, "threads", r->threads);
    cJSON_AddNumberToObject(x, "batch_size", r->batch_size);
    cJSON_AddStringToObject(x, "status", r->failed ? "failed" : "ok");
    cJSON_AddStringToObject(x, "reason", r->reason);
    tb_export_json_real(x, "examples_per_s", r->examples_per_s);
    tb_export_json_real(x, "sem_pct", r->sem_pct);
    tb_export_json_real(x, "ratio", r->ratio);
    return x;
}

static cJSON *hw_score_json(const tb_store_hw_score_row *c)
{
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "config", c->config);
    cJSON_AddNumberToObject(x, "workloads", c->workloads);
    cJSON_AddNumberToObject(x, "failed", c->failed);
    tb_export_json_real(x, "score", c->score);
    tb_export_json_real(x, "low", c->low);
    tb_export_json_real(x, "high", c->high);
    tb_export_json_real(x, "level", c->level);
    return x;
}

static void print_line(FILE *f, cJSON *o)
{
    char *text = cJSON_PrintUnformatted(o);
    if (text) fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(o);
}

/* One object per run: rows and scores are both ordered by run. */
static void hw_jsonl(FILE *f, const tb_store_hw_row *r, int nr, const tb_store_hw_score_row *c,
                     int nc)
{
    for (int i = 0, k = 0; i < nr;) {
        int64_t id = r[i].run_id;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "run_id", (double)id);
        cJSON_AddStringToObject(o, "created", r[i].created);
        cJSON_AddStringToObject(o, "code_version", r[i].code_version);
        cJSON_AddNumberToObject(o, "world_size", r[i].world_size);
        cJSON *machine = cJSON_Parse(r[i].machine);
        if (machine) cJSON_AddItemToObject(o, "machine", machine);
        else cJSON_AddStringToObject(o, "machine", r[i].machine);
        cJSON *results = cJSON_AddArrayToObject(o, "results");
        for (; i < nr && r[i].run_id == id; i++)
            cJSON_AddItemToArray(results, hw_result_json(&r[i]));
        cJSON *scores = cJSON_AddArrayToObject(o, "scores");
        while (k < nc && c[k].run_id < id) k++;
        for (; k < nc && c[k].run_id == id; k++) cJSON_AddItemToArray(scores, hw_score_json(&c[k]));
        print_line(f, o);
    }
}

static tb_status finish(FILE *f, tb_error *err)
{
    if (fflush(f) != 0 || ferror(f))
        return tb_fail(err, TB_ERR_IO, "writing the export failed (disk full?)");
    return TB_OK;
}

tb_status tb_store_export_hw(tb_store *s, tb_export_format format, FILE *f, tb_error *err)
{
    if (!s || !f) return tb_store_null(err, "store_export_hw", s ? "the file" : "the store");
    if (format == TB_EXPORT_ALGOPERF)
        return tb_fail(err, TB_ERR_INVALID, "AlgoPerf's layout holds trials, not hardware "
                       "runs (csv or jsonl)");
    tb_store_hw_row *rows;
    tb_store_hw_score_row *scores;
    int nr, nc;
    tb_status st = tb_store_hw_history(s, &rows, &nr, &scores, &nc, err);
    if (st != TB_OK) return st;
    if (nr == 0)
        st = tb_fail(err, TB_ERR_INVALID, "results store %s has no hardware runs (trainbench "
                     "hw --db %s records them)", s->path, s->path);
    else if (format == TB_EXPORT_CSV) hw_csv(f, rows, nr, scores, nc);
    else hw_jsonl(f, rows, nr, scores, nc);
    free(rows);
    free(scores);
    return st == TB_OK ? finish(f, err) : st;
}

static const char study_header[] =
    "study,key,created,status,reason,steps,train_time_s,validation_loss,validation_error,"
    "validation_metric,test_metric,reached,time_to_target_s\n";

static void study_csv(FILE *f, const tb_store_study_row *r)
{
    tb_export_csv_text(f, r->study);
    fputc(',', f);
    tb_export_csv_text(f, r->key);
    fprintf(f, ",%s,%s,", r->created, r->diverged ? "diverged" : "ok");
    tb_export_csv_text(f, r->reason);
    fprintf(f, ",%lld", (long long)r->steps);
    tb_export_csv_real(f, r->train_time_s);
    tb_export_csv_real(f, r->validation_loss);
    tb_export_csv_real(f, r->validation_error);
    tb_export_csv_real(f, r->validation_metric);
    tb_export_csv_real(f, r->test_metric);
    fprintf(f, ",%d", r->reached ? 1 : 0);
    tb_export_csv_real(f, r->time_to_target_s);
    fputc('\n', f);
}

static void study_jsonl(FILE *f, const tb_store_study_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "study", r->study);
    cJSON_AddStringToObject(o, "key", r->key);
    cJSON_AddStringToObject(o, "created", r->created);
    cJSON_AddStringToObject(o, "status", r->diverged ? "diverged" : "ok");
    cJSON_AddStringToObject(o, "reason", r->reason);
    cJSON_AddNumberToObject(o, "steps", (double)r->steps);
    tb_export_json_real(o, "train_time_s", r->train_time_s);
    tb_export_json_real(o, "validation_loss", r->validation_loss);
    tb_export_json_real(o, "validation_error", r->validation_error);
    tb_export_json_real(o, "validation_metric", r->validation_metric);
    tb_export_json_real(o, "test_metric", r->test_metric);
    cJSON_AddBoolToObject(o, "reached", r->reached);
    tb_export_json_real(o, "time_to_target_s", r->time_to_target_s);
    print_line(f, o);
}

tb_status tb_store_export_studies(tb_store *s, tb_export_format format, FILE *f, tb_error *err)
{
    if (!s || !f) return tb_store_null(err, "store_export_studies", s ? "the file" : "the store");
    if (format == TB_EXPORT_ALGOPERF)
        return tb_fail(err, TB_ERR_INVALID, "AlgoPerf's layout holds trials, not study runs "
                       "(csv or jsonl)");
    tb_store_study_row *rows;
    int n;
    tb_status st = tb_store_study_history(s, &rows, &n, err);
    if (st != TB_OK) return st;
    if (n == 0)
        st = tb_fail(err, TB_ERR_INVALID, "results store %s has no study runs (trainbench "
                     "study NAME --db %s records them)", s->path, s->path);
    if (st == TB_OK && format == TB_EXPORT_CSV) fputs(study_header, f);
    for (int i = 0; st == TB_OK && i < n; i++) {
        if (format == TB_EXPORT_CSV) study_csv(f, &rows[i]);
        else study_jsonl(f, &rows[i]);
    }
    free(rows);
    return st == TB_OK ? finish(f, err) : st;
}

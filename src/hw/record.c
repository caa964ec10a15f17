/* record.c: what a hardware run leaves behind (trainbench/hardware.h): its record in a results
 * store, and its figures as a reference file. */
#include "trainbench/hardware.h"

#include "trainbench/machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

tb_status tb_hw_open_store(const char *path, tb_store **out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "tb_hw_open_store: out is NULL");
    tb_status st = tb_store_open(path, out, err);
    if (st == TB_OK) st = tb_store_hw_tables(*out, err);
    if (st == TB_OK) return TB_OK;
    tb_store_close(*out);
    *out = NULL;
    return st;
}

/* The reference in words, for the store. */
static void describe_reference(const tb_hw_reference *ref, char *buf, size_t cap)
{
    if (ref->n == 0)
        snprintf(buf, cap, "none");
    else
        snprintf(buf, cap, "%s (measured %s at %s on %s)", ref->path, ref->date, ref->commit,
                 ref->cpu);
}

tb_status tb_hw_record(const tb_hw_run *run, tb_store *store, int64_t *run_id, tb_error *err)
{
    if (!run || !store) return tb_fail(err, TB_ERR_INVALID, "tb_hw_record: NULL argument");
    tb_hw_result_record *res = calloc((size_t)run->n_rows + 1, sizeof *res);
    if (!res) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    for (int i = 0; i < run->n_rows; i++) {
        const tb_hw_row *r = &run->rows[i];
        const tb_hw_config *cf = &run->configs[r->config];
        res[i] = (tb_hw_result_record){r->workload, r->algorithm, cf->device, cf->threads,
                                       &r->res, r->failed, r->failed ? r->reason : r->note,
                                       r->ratio};
    }
    tb_hw_score_record scores[TB_HW_MAX_CONFIGS];
    int n_scores = 0;
    for (int c = 0; c < run->n_configs; c++)
        if (run->configs[c].scored)
            scores[n_scores++] = (tb_hw_score_record){run->configs[c].label, run->level,
                                                      &run->configs[c].score};
    char reference[1024];
    describe_reference(&run->ref, reference, sizeof reference);
    tb_hw_run_record rec = {tb_code_version(), run->machine, &run->settings, reference,
                            run->ranks};
    tb_status st = tb_store_add_hw_run(store, &rec, res, run->n_rows, scores, n_scores, run_id,
                                       err);
    free(res);
    return st;
}

/* Row r's figure in ref, under its workload's entry (added at the first figure). */
static void add_figure(tb_hw_reference *ref, const tb_hw_row *r, const tb_hw_config *cf)
{
    tb_hw_ref_workload *w = NULL;
    for (int k = 0; k < ref->n && !w; k++)
        if (strcmp(ref->workloads[k].workload, r->workload) == 0) w = &ref->workloads[k];
    if (!w) {
        w = &ref->workloads[ref->n++];
        snprintf(w->workload, sizeof w->workload, "%s", r->workload);
        snprintf(w->algorithm, sizeof w->algorithm, "%s", r->algorithm);
        w->batch_size = r->batch_size;
        w->weight = r->weight > 0 ? r->weight : 1.0;
    }
    w->figures[w->n_figures++] = (tb_hw_figure){
        .device = cf->device, .threads = cf->threads, .examples_per_s = r->res.examples_per_s,
        .sem_pct = isfinite(r->res.sem_pct) ? r->res.sem_pct : 0};
}

tb_status tb_hw_save_reference(const tb_hw_run *run, const char *path, const char *command,
                               tb_error *err)
{
    if (!run || !path) return tb_fail(err, TB_ERR_INVALID, "tb_hw_save_reference: NULL argument");
    if (run->ranks > 1)
        return tb_fail(err, TB_ERR_INVALID, "a reference file holds one process's figures, "
                       "not those of a job of %d ranks", run->ranks);
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    if (!ref) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    time_t now = time(NULL);
    struct tm day;
    strftime(ref->date, sizeof ref->date, "%Y-%m-%d", gmtime_r(&now, &day));
    snprintf(ref->commit, sizeof ref->commit, "%s", tb_code_version());
    snprintf(ref->cpu, sizeof ref->cpu, "%s", run->cpu[0] ? run->cpu : "unknown");
    ref->cores = run->cores;
    snprintf(ref->command, sizeof ref->command, "%s", command ? command : "");
    snprintf(ref->note, sizeof ref->note, "one-minute load average %.2f at the start of the "
             "run and %.2f at its end, on %d cores", run->load_start, run->load_end, run->cores);
    for (int i = 0; i < run->n_rows; i++)
        if (!run->rows[i].failed) add_figure(ref, &run->rows[i], &run->configs[run->rows[i].config]);
    tb_status st = ref->n > 0 ? tb_hw_reference_write(ref, path, err)
                              : tb_fail(err, TB_ERR_INVALID, "no run passed: nothing to write "
                                        "to %s", path);
    free(ref);
    return st;
}

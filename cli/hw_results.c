/* hw_results.c: `trainbench hw`'s results: the ratios and scores, --save-reference, --db. */
#include "cli.h"
#include "hw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- ratios and scores -------------------------------------------------------------------- */

void tb_cli_hw_score(hw_run *run)
{
    tb_hw_item *items = calloc((size_t)run->n_rows, sizeof *items);
    if (!items) return;
    for (int c = 0; c < run->n_configs; c++) {
        hw_config *cf = &run->configs[c];
        int n = 0;
        for (int i = 0; i < run->n_rows; i++) {
            hw_row *r = &run->rows[i];
            if (r->config != c) continue;
            const tb_hw_ref_workload *entry;
            /* a job of several ranks is one machine of ranks x threads: the reference's
             * figure at that many threads, or at all its cores for a job on all of its own */
            const tb_hw_figure *f = tb_hw_reference_find(
                run->ref, r->workload, r->algorithm, r->batch_size, cf->device,
                cf->threads * run->ranks, run->job_cores, &entry, r->note, sizeof r->note);
            if (!f) continue;
            r->reference_examples_per_s = f->examples_per_s;
            r->weight = entry->weight;
            r->ratio = r->failed ? 0.0 : r->res.examples_per_s / f->examples_per_s;
            items[n++] = (tb_hw_item){.failed = r->failed, .ratio = r->ratio,
                                      .rel_sem = r->res.sem_pct / 100.0,
                                      .windows = r->res.windows, .weight = entry->weight};
        }
        cf->scored = n > 0 && tb_hw_score_compute(items, n, run->level, &cf->score, NULL) == TB_OK;
    }
    free(items);
}

/* ---- the reference file and the store ----------------------------------------------------- */

/* The machine's load average over the last minute, for the reference file's note. */
double tb_cli_hw_load_average(void)
{
    double load = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1) load = NAN;
    if (f) fclose(f);
    return load;
}

/* Writes this run's passed figures as a reference file; an exit code. */
int tb_cli_hw_save_reference(const hw_run *run, const char *path, const char *command,
                              double load_start, double load_end)
{
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    if (!ref) return TB_EXIT_FAILURE;
    time_t now = time(NULL);
    strftime(ref->date, sizeof ref->date, "%Y-%m-%d", gmtime(&now));
    snprintf(ref->commit, sizeof ref->commit, "%s", tb_code_version());
    const char *cpu = strstr(run->machine, "\"cpu\":\"");
    snprintf(ref->cpu, sizeof ref->cpu, "%.*s", cpu ? (int)strcspn(cpu + 7, "\"") : 7,
             cpu ? cpu + 7 : "unknown");
    ref->cores = run->cores;
    snprintf(ref->command, sizeof ref->command, "%s", command);
    snprintf(ref->note, sizeof ref->note, "one-minute load average %.2f at the start of the "
             "run and %.2f at its end, on %d cores", load_start, load_end, run->cores);
    for (int i = 0; i < run->n_rows; i++) {
        const hw_row *r = &run->rows[i];
        if (r->failed) continue;
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
        const hw_config *cf = &run->configs[r->config];
        w->figures[w->n_figures++] = (tb_hw_figure){
            .device = cf->device, .threads = cf->threads,
            .examples_per_s = r->res.examples_per_s,
            .sem_pct = isfinite(r->res.sem_pct) ? r->res.sem_pct : 0};
    }
    tb_error err = {0};
    tb_status st = ref->n > 0 ? tb_hw_reference_write(ref, path, &err)
                              : tb_fail(&err, TB_ERR_INVALID, "no run passed: nothing to write "
                                        "to %s", path);
    free(ref);
    if (st != TB_OK) tb_cli_error("--save-reference: %s", err.message);
    return st == TB_OK ? TB_EXIT_OK : TB_EXIT_FAILURE;
}

/* Opens the store (its hardware tables checked); an exit code. */
int tb_cli_hw_open_store(const char *db, tb_store **out)
{
    tb_error err = {0};
    tb_status st = tb_store_open(db, out, &err);
    if (st == TB_OK) st = tb_store_hw_tables(*out, &err);
    if (st == TB_OK) return TB_EXIT_OK;
    tb_store_close(*out);
    *out = NULL;
    tb_cli_error("--db: %s", err.message);
    return tb_cli_exit_code(st);
}

int tb_cli_hw_record(const hw_run *run, const char *db)
{
    tb_store *store;
    int rc = tb_cli_hw_open_store(db, &store);
    if (rc != TB_EXIT_OK) return rc;
    tb_hw_result_record *res = calloc((size_t)run->n_rows, sizeof *res);
    tb_hw_score_record scores[HW_MAX_CONFIGS];
    int n_scores = 0;
    for (int i = 0; res && i < run->n_rows; i++) {
        const hw_row *r = &run->rows[i];
        const hw_config *cf = &run->configs[r->config];
        res[i] = (tb_hw_result_record){r->workload, r->algorithm, cf->device, cf->threads,
                                       &r->res, r->failed, r->failed ? r->reason : r->note,
                                       r->ratio};
    }
    for (int c = 0; c < run->n_configs; c++)
        if (run->configs[c].scored)
            scores[n_scores++] = (tb_hw_score_record){run->configs[c].label, run->level,
                                                      &run->configs[c].score};
    char reference[1024];
    if (run->ref->n == 0)
        snprintf(reference, sizeof reference, "none");
    else
        snprintf(reference, sizeof reference, "%s (measured %s at %s on %s)", run->ref->path,
                 run->ref->date, run->ref->commit, run->ref->cpu);
    tb_hw_run_record rec = {tb_code_version(), run->machine, &run->settings, reference,
                            run->ranks};
    tb_error err = {0};
    tb_status st = res ? tb_store_add_hw_run(store, &rec, res, run->n_rows, scores, n_scores,
                                             NULL, &err)
                       : tb_fail(&err, TB_ERR_NOMEM, "out of memory");
    free(res);
    tb_store_close(store);
    if (st != TB_OK) tb_cli_error("--db: %s", err.message);
    return tb_cli_exit_code(st);
}

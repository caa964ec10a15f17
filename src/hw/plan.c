/* plan.c: what a run of the hardware suite measures (trainbench/hardware.h): its
 * configurations, a row per workload and configuration, and the reference it compares with. */
#include "trainbench/hardware.h"

#include "trainbench/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HW_THREADS_MAX 4096

tb_hw_request tb_hw_request_default(void)
{
    tb_hw_request r = {.device = TB_DEVICE_CPU, .level = 0.95};
    r.settings = tb_throughput_config_default();
    r.settings.windows = 10;
    r.settings.window_s = 0.5;
    r.settings.max_time_s = 60;
    return r;
}

static void label_config(tb_hw_config *cf, int ranks)
{
    const char *s = cf->threads == 1 ? "" : "s";
    if (cf->device != TB_DEVICE_CPU)
        snprintf(cf->label, sizeof cf->label, "%s", tb_device_name(cf->device));
    else if (ranks > 1)
        snprintf(cf->label, sizeof cf->label, "cpu, %d ranks x %d thread%s", ranks, cf->threads,
                 s);
    else
        snprintf(cf->label, sizeof cf->label, "cpu, %d thread%s", cf->threads, s);
}

/* The configurations: the GPU, or each thread count (by default 1 and all cores, or with dist
 * each rank's share of its machine's cores). */
static tb_status plan_configs(const tb_hw_request *q, tb_hw_run *run, tb_error *err)
{
    int share = run->cores / tb_dist_node_size(run->dist);
    int def[2] = {1, share};
    const int *threads = q->n_threads > 0 ? q->threads : def;
    int n = q->n_threads > 0 ? q->n_threads : share > 1 ? 2 : 1;
    if (q->device != TB_DEVICE_CPU) n = 1;
    if (n > TB_HW_MAX_CONFIGS)
        return tb_fail(err, TB_ERR_INVALID, "more than %d thread counts", TB_HW_MAX_CONFIGS);
    for (int i = 0; i < n; i++) {
        tb_hw_config *cf = &run->configs[run->n_configs++];
        cf->device = q->device;
        cf->threads = q->device == TB_DEVICE_CPU ? threads[i] : 1;
        if (cf->threads < 1 || cf->threads > HW_THREADS_MAX)
            return tb_fail(err, TB_ERR_INVALID, "thread count %d is outside [1, %d]",
                           cf->threads, HW_THREADS_MAX);
        for (int k = 0; k < i; k++)
            if (run->configs[k].threads == cf->threads)
                return tb_fail(err, TB_ERR_INVALID, "thread count %d is listed twice",
                               cf->threads);
        label_config(cf, run->ranks);
    }
    return TB_OK;
}

static int default_batch(const char *id)
{
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, id) == 0)
            return tb_workload_info_at(i)->default_batch_size;
    return 0;
}

/* Workload ids[w]'s rows, one per configuration. */
static tb_status plan_workload(const tb_hw_request *q, const char *const *ids, int w,
                               tb_hw_run *run, tb_error *err)
{
    const char *algorithm;
    tb_hparams hp;
    tb_status st = tb_hw_settings(ids[w], &algorithm, &hp, err);
    for (int k = 0; st == TB_OK && k < w; k++)
        if (strcmp(ids[k], ids[w]) == 0)
            st = tb_fail(err, TB_ERR_INVALID, "workload %s is listed twice", ids[w]);
    if (st == TB_OK && q->lr_set) st = tb_hparams_set(&hp, "learning_rate", q->lr, err);
    if (st != TB_OK) return st;
    int batch = default_batch(ids[w]);
    if (batch % run->ranks != 0)
        return tb_fail(err, TB_ERR_INVALID, "the batch of %s (%d examples, its calibration "
                       "baseline's) does not divide among %d ranks: run a number of ranks "
                       "that divides every workload's batch, or leave %s out", ids[w], batch,
                       run->ranks, ids[w]);
    for (int c = 0; c < run->n_configs; c++)
        run->rows[run->n_rows++] = (tb_hw_row){
            .workload = ids[w], .algorithm = algorithm, .hparams = hp, .config = c,
            .batch_size = batch, .ratio = NAN, .reference_examples_per_s = NAN,
            .single_examples_per_s = NAN, .efficiency = NAN};
    return TB_OK;
}

static tb_status plan_rows(const tb_hw_request *q, tb_hw_run *run, tb_error *err)
{
    const char *def[TB_HW_MAX_WORKLOADS];
    const char *const *ids = q->workloads;
    int nw = q->n_workloads;
    if (nw <= 0 || !ids) {
        nw = tb_hw_default_workloads(def, TB_HW_MAX_WORKLOADS);
        ids = def;
    }
    if (nw > TB_HW_MAX_WORKLOADS)
        return tb_fail(err, TB_ERR_INVALID, "more than %d workloads", TB_HW_MAX_WORKLOADS);
    run->rows = calloc((size_t)nw * (size_t)run->n_configs, sizeof *run->rows);
    if (!run->rows) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    for (int w = 0; w < nw; w++) {
        tb_status st = plan_workload(q, ids, w, run, err);
        if (st != TB_OK) return st;
    }
    return TB_OK;
}

tb_status tb_hw_plan(const tb_hw_request *q, tb_hw_run **out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "tb_hw_plan: out is NULL");
    *out = NULL;
    if (!q) return tb_fail(err, TB_ERR_INVALID, "tb_hw_plan: request is NULL");
    if (!(q->level > 0 && q->level < 1))
        return tb_fail(err, TB_ERR_INVALID, "level %g is outside (0, 1)", q->level);
    tb_hw_run *run = calloc(1, sizeof *run);
    if (!run) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    run->settings = q->settings;
    run->level = q->level;
    run->cores = q->cores > 0 ? q->cores : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (run->cores < 1) run->cores = 1;
    run->dist = q->dist;
    run->ranks = tb_dist_size(q->dist);
    run->job_cores = run->cores;
    run->load_start = run->load_end = NAN;
    tb_status st = plan_configs(q, run, err);
    if (st == TB_OK) st = plan_rows(q, run, err);
    if (st != TB_OK) {
        tb_hw_run_free(run);
        return st;
    }
    *out = run;
    return TB_OK;
}

void tb_hw_run_free(tb_hw_run *run)
{
    if (!run) return;
    free(run->rows);
    free(run);
}

tb_status tb_hw_use_reference(tb_hw_run *run, const char *path, tb_error *err)
{
    if (!run || !path) return tb_fail(err, TB_ERR_INVALID, "tb_hw_use_reference: NULL argument");
    memset(&run->ref, 0, sizeof run->ref);
    if (strcmp(path, "none") != 0) return tb_hw_reference_load(path, &run->ref, err);
    snprintf(run->ref.path, sizeof run->ref.path, "none");
    return TB_OK;
}

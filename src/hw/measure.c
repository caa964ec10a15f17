/* measure.c: a hardware run's measuring (trainbench/hardware.h): each row's throughput run,
 * then the machine it ran on. */
#include "trainbench/hardware.h"

#include "trainbench/machine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The machine's load average over the last minute (NaN where unknown): a reference file notes
 * how busy its machine was. */
static double load_average(void)
{
    double load = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1) load = NAN;
    if (f) fclose(f);
    return load;
}

/* Failures that would fail every other row alike: the suite stops. */
static bool stops_suite(tb_status st)
{
    return st == TB_ERR_MISSING || st == TB_ERR_NO_DEVICE || st == TB_ERR_UNSUPPORTED ||
           st == TB_ERR_INVALID;
}

tb_status tb_hw_measure(tb_hw_run *run, int i, tb_throughput_progress_fn progress, void *user,
                        tb_error *err)
{
    if (!run || i < 0 || i >= run->n_rows)
        return tb_fail(err, TB_ERR_INVALID, "tb_hw_measure: no row %d", i);
    if (i == 0) run->load_start = load_average();
    tb_hw_row *r = &run->rows[i];
    const tb_hw_config *cf = &run->configs[r->config];
    tb_throughput_config tc = run->settings;
    tc.workload = r->workload;
    tc.algorithm = r->algorithm;
    tc.hparams = r->hparams;
    tc.backend = (tb_backend_config){.device = cf->device, .threads = cf->threads};
    tc.check_loss = true;
    tc.dist = run->dist;
    tc.progress = progress;
    tc.progress_user = user;
    tb_error e = {0};
    tb_status st = tb_throughput_run(&tc, &r->res, &e);
    if (stops_suite(st)) {
        if (err) *err = e;
        return st;
    }
    r->failed = st != TB_OK || !r->res.passed;
    snprintf(r->reason, sizeof r->reason, "%s", st != TB_OK ? e.message : r->res.reason);
    return TB_OK;
}

/* With dist: the cores of the job's machines (each rank's share of its machine's, summed). */
static int job_cores(const tb_hw_run *run)
{
    float share = (float)run->cores / (float)tb_dist_node_size(run->dist);
    tb_error err = {0};
    if (tb_dist_average(run->dist, &share, 1, &err) != TB_OK) return run->cores * run->ranks;
    return (int)lroundf(share * (float)run->ranks);
}

void tb_hw_describe_machine(tb_hw_run *run)
{
    if (!run) return;
    run->job_cores = run->ranks > 1 ? job_cores(run) : run->cores;
    /* the last configuration's backend: all cores by default */
    tb_machine_facts(run->n_rows > 0 ? run->rows[run->n_rows - 1].res.backend : NULL,
                     run->cores, run->machine, sizeof run->machine);
    const char *cpu = strstr(run->machine, "\"cpu\":\"");
    snprintf(run->cpu, sizeof run->cpu, "%.*s", cpu ? (int)strcspn(cpu + 7, "\"") : 0,
             cpu ? cpu + 7 : "");
    run->load_end = load_average();
}

int tb_hw_failures(const tb_hw_run *run)
{
    int n = 0;
    for (int i = 0; run && i < run->n_rows; i++) n += run->rows[i].failed;
    return n;
}

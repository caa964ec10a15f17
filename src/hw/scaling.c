/* scaling.c: a data-parallel hardware run's scaling efficiency (trainbench/hardware.h): the
 * job's examples/s over the ranks times one process's at the same threads per rank, measured
 * on this machine: a one-process run of the same settings in the results store, else the
 * reference file's figure when the reference file was measured on this machine (same cpu and
 * cores). */
#include "trainbench/hardware.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The store's one-process figure for r (NaN when none, or no store). */
static double from_store(const tb_hw_run *run, tb_store *store, tb_hw_row *r, int threads,
                         tb_error *err)
{
    if (!store) return NAN;
    tb_hw_single_query q = {r->workload, r->algorithm, r->batch_size, threads, run->machine,
                            &run->settings};
    double eps;
    int64_t id;
    if (tb_store_hw_single_rank(store, &q, &eps, &id, err) != TB_OK) return NAN;
    if (isfinite(eps))
        snprintf(r->single_source, sizeof r->single_source, "hw_runs id %lld in the store",
                 (long long)id);
    return eps;
}

/* The reference file's figure for r when it was measured on this machine (NaN otherwise). */
static double from_reference(const tb_hw_run *run, tb_hw_row *r, int threads)
{
    const tb_hw_reference *ref = &run->ref;
    if (ref->n == 0 || ref->cores != run->cores || strcmp(ref->cpu, run->cpu) != 0) return NAN;
    char why[256];
    const tb_hw_figure *f = tb_hw_reference_find(ref, r->workload, r->algorithm, r->batch_size,
                                                 TB_DEVICE_CPU, threads, 0, NULL, why,
                                                 sizeof why);
    if (!f) return NAN;
    snprintf(r->single_source, sizeof r->single_source, "the reference file (this machine, %s)",
             ref->date);
    return f->examples_per_s;
}

tb_status tb_hw_scaling(tb_hw_run *run, tb_store *store, tb_error *err)
{
    if (!run) return tb_fail(err, TB_ERR_INVALID, "tb_hw_scaling: run is NULL");
    tb_error first = {0}; /* the store's first failure; the rows go on without it */
    for (int i = 0; run->ranks > 1 && i < run->n_rows; i++) {
        tb_hw_row *r = &run->rows[i];
        int threads = run->configs[r->config].threads;
        tb_error e = {0};
        r->single_source[0] = '\0';
        r->single_examples_per_s = from_store(run, first.status ? NULL : store, r, threads, &e);
        if (e.status != TB_OK) first = e;
        if (!isfinite(r->single_examples_per_s))
            r->single_examples_per_s = from_reference(run, r, threads);
        r->efficiency = !r->failed && isfinite(r->single_examples_per_s)
                            ? r->res.examples_per_s / (run->ranks * r->single_examples_per_s)
                            : NAN;
    }
    if (first.status == TB_OK) return TB_OK;
    if (err) *err = first;
    return first.status;
}

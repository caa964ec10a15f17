/* hw_scaling.c: `trainbench hw --dist`'s scaling efficiency: the job's examples/s over the
 * ranks times one process's at the same threads per rank, measured on this machine: a
 * one-process run of the same settings in the --db store, else the reference file's figure
 * when the reference file was measured on this machine (same CPU and cores). */
#include "cli.h"
#include "hw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The machine facts' "cpu" (JSON text) into buf. */
static void facts_cpu(const char *machine, char *buf, size_t cap)
{
    const char *cpu = strstr(machine, "\"cpu\":\"");
    snprintf(buf, cap, "%.*s", cpu ? (int)strcspn(cpu + 7, "\"") : 0, cpu ? cpu + 7 : "");
}

/* The store's one-process figure for r (NaN when none, or no store). */
static double from_store(const hw_run *run, tb_store *store, hw_row *r, int threads)
{
    if (!store) return NAN;
    tb_hw_single_query q = {r->workload, r->algorithm, r->batch_size, threads, run->machine,
                            &run->settings};
    double eps;
    int64_t id;
    tb_error err = {0};
    if (tb_store_hw_single_rank(store, &q, &eps, &id, &err) != TB_OK) {
        tb_cli_error("--db: %s", err.message);
        return NAN;
    }
    if (isfinite(eps))
        snprintf(r->single_source, sizeof r->single_source, "hw_runs id %lld in the store",
                 (long long)id);
    return eps;
}

/* The reference file's figure for r when it was measured on this machine (NaN otherwise). */
static double from_reference(const hw_run *run, hw_row *r, int threads)
{
    const tb_hw_reference *ref = run->ref;
    char cpu[160];
    facts_cpu(run->machine, cpu, sizeof cpu);
    if (ref->n == 0 || ref->cores != run->cores || strcmp(ref->cpu, cpu) != 0) return NAN;
    char why[256];
    const tb_hw_figure *f = tb_hw_reference_find(ref, r->workload, r->algorithm, r->batch_size,
                                                 TB_DEVICE_CPU, threads, 0, NULL, why,
                                                 sizeof why);
    if (!f) return NAN;
    snprintf(r->single_source, sizeof r->single_source, "the reference file (this machine, %s)",
             ref->date);
    return f->examples_per_s;
}

void tb_cli_hw_scaling(hw_run *run, const char *db)
{
    tb_store *store = NULL;
    if (db && tb_cli_hw_open_store(db, &store) != TB_EXIT_OK) store = NULL;
    for (int i = 0; i < run->n_rows; i++) {
        hw_row *r = &run->rows[i];
        int threads = run->configs[r->config].threads;
        r->single_source[0] = '\0';
        r->single_examples_per_s = from_store(run, store, r, threads);
        if (!isfinite(r->single_examples_per_s))
            r->single_examples_per_s = from_reference(run, r, threads);
        r->efficiency = !r->failed && isfinite(r->single_examples_per_s)
                            ? r->res.examples_per_s / (run->ranks * r->single_examples_per_s)
                            : NAN;
    }
    tb_store_close(store);
}

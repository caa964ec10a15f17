/* ratios.c: a hardware run's ratios to the reference machine and each configuration's score
 * (trainbench/hardware.h). */
#include "trainbench/hardware.h"

#include <stdlib.h>

/* Configuration c's rows with a reference figure: their ratios, and as score items. */
static int rate_config(tb_hw_run *run, int c, tb_hw_item *items)
{
    const tb_hw_config *cf = &run->configs[c];
    int n = 0;
    for (int i = 0; i < run->n_rows; i++) {
        tb_hw_row *r = &run->rows[i];
        if (r->config != c) continue;
        const tb_hw_ref_workload *entry;
        /* a job of several ranks is one machine of ranks x threads: the reference's figure at
         * that many threads, or at all its cores for a job on all of its own */
        const tb_hw_figure *f = tb_hw_reference_find(
            &run->ref, r->workload, r->algorithm, r->batch_size, cf->device,
            cf->threads * run->ranks, run->job_cores, &entry, r->note, sizeof r->note);
        if (!f) continue;
        r->reference_examples_per_s = f->examples_per_s;
        r->weight = entry->weight;
        r->ratio = r->failed ? 0.0 : r->res.examples_per_s / f->examples_per_s;
        items[n++] = (tb_hw_item){.failed = r->failed, .ratio = r->ratio,
                                  .rel_sem = r->res.sem_pct / 100.0, .windows = r->res.windows,
                                  .weight = entry->weight};
    }
    return n;
}

tb_status tb_hw_score_run(tb_hw_run *run, tb_error *err)
{
    if (!run) return tb_fail(err, TB_ERR_INVALID, "tb_hw_score_run: run is NULL");
    tb_hw_item *items = calloc((size_t)run->n_rows + 1, sizeof *items);
    if (!items) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    for (int c = 0; c < run->n_configs; c++) {
        tb_hw_config *cf = &run->configs[c];
        int n = rate_config(run, c, items);
        cf->scored = n > 0 && tb_hw_score_compute(items, n, run->level, &cf->score, NULL) == TB_OK;
    }
    free(items);
    return TB_OK;
}

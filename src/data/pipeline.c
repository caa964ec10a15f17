/* pipeline.c: batches of a workload's training split in a seeded order, delivered on a tape. */
#include "trainbench/pipeline.h"

#include <stdlib.h>

struct tb_pipeline {
    tb_workload *wl;
    int64_t batch, n;
    int64_t *order;
    int64_t pos; /* next position in order */
    int64_t epoch, fresh;
    tb_rng order_rng;
};

tb_status tb_pipeline_create(tb_workload *wl, const tb_pipeline_config *cfg, tb_pipeline **out,
                             tb_error *err)
{
    int64_t n = tb_workload_size(wl, TB_SPLIT_TRAIN);
    if (cfg->batch_size < 1)
        return tb_fail(err, TB_ERR_INVALID, "batch size must be at least 1, got %lld",
                       (long long)cfg->batch_size);
    if (cfg->batch_size > n)
        return tb_fail(err, TB_ERR_INVALID, "batch size %lld exceeds the %lld training examples",
                       (long long)cfg->batch_size, (long long)n);
    tb_pipeline *p = calloc(1, sizeof *p);
    int64_t *order = malloc((size_t)n * sizeof *order);
    if (!p || !order) {
        free(p);
        free(order);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the input pipeline");
    }
    p->wl = wl;
    p->batch = cfg->batch_size;
    p->n = n;
    p->order = order;
    p->pos = n; /* the first call starts an epoch */
    p->order_rng = tb_rng_make(cfg->data_order_seed, TB_STREAM_DATA_ORDER);
    *out = p;
    return TB_OK;
}

void tb_pipeline_destroy(tb_pipeline *p)
{
    if (!p) return;
    free(p->order);
    free(p);
}

tb_status tb_pipeline_next(tb_pipeline *p, tb_tape *tape, tb_batch *out, tb_error *err)
{
    if (p->pos + p->batch > p->n) {
        for (int64_t i = 0; i < p->n; i++) p->order[i] = i;
        tb_rng_shuffle_i64(&p->order_rng, p->order, p->n);
        p->pos = 0;
        p->epoch++;
    }
    tb_var *x, *y;
    if (!tb_workload_gather(p->wl, tape, TB_SPLIT_TRAIN, p->order + p->pos, p->batch, &x, &y))
        return tb_fail(err, tb_tape_status(tape), "input pipeline: %s",
                       tb_tape_error(tape)->message);
    p->pos += p->batch;
    p->fresh += p->batch;
    out->n = p->batch;
    out->inputs = x;
    out->targets = y;
    out->fresh = p->batch;
    return TB_OK;
}

int64_t tb_pipeline_epoch(const tb_pipeline *p) { return p->epoch; }
int64_t tb_pipeline_fresh_examples(const tb_pipeline *p) { return p->fresh; }

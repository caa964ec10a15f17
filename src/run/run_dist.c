/* run_dist.c: what a run does differently across MPI ranks: the refusals, the batch shard,
 * the averaging between backward and update, and rank 0's decisions reaching every rank. */
#include "run/run_dist.h"

#include "trainbench/curvature.h"

#include <stdio.h>

/* The settings data-parallel runs do not build, for a world of more than 1. */
static tb_status refusals(const tb_dist *d, tb_device device, bool cuda_graph,
                          const tb_optimizer *opt, int64_t batch, tb_error *err)
{
    int size = tb_dist_size(d);
    if (device != TB_DEVICE_CPU)
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "data-parallel training runs on the cpu backend only: averaging "
                       "gradients on %s devices would need NCCL, which is not built",
                       tb_device_name(device));
    if (cuda_graph)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "data-parallel training cannot use CUDA graphs");
    if (opt && tb_optimizer_has_curvature(opt))
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "%s is not built for data-parallel training: its Kronecker factors come "
                       "from each rank's activations and output gradients, which averaging the "
                       "gradients does not combine",
                       tb_optimizer_get_info(opt)->name);
    if (batch > 0 && batch % size != 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "the batch of %lld examples does not divide among %d ranks (%lld left "
                       "over): give a batch size that is a multiple of %d, e.g. %lld",
                       (long long)batch, size, (long long)(batch % size), size,
                       (long long)((batch / size + 1) * size));
    return TB_OK;
}

tb_status tb_run_dist_refusals(const tb_run_config *c, int64_t batch, const tb_optimizer *opt,
                               tb_error *err)
{
    if (tb_dist_size(c->dist) == 1) return TB_OK;
    tb_status st = refusals(c->dist, c->model.backend.device, c->model.cuda_graph, opt, batch,
                            err);
    if (st == TB_OK && c->diag.sharpness_every > 0)
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "sharpness measurements are not built for data-parallel training");
    return st;
}

static tb_var *shard_of(tb_tape *tape, tb_var *v, int64_t start, int64_t len, tb_error *err)
{
    tb_tensor view;
    if (tb_tensor_narrow(&v->value, 0, start, len, &view, err) != TB_OK) return NULL;
    tb_var *out = tb_tape_constant(tape, &view);
    if (!out) tb_fail(err, tb_tape_status(tape), "%s", tb_tape_error(tape)->message);
    return out;
}

tb_status tb_run_dist_shard(tb_dist *d, tb_tape *tape, const tb_batch *b, tb_batch *shard,
                              tb_error *err)
{
    *shard = *b;
    int size = tb_dist_size(d), rank = tb_dist_rank(d);
    if (size == 1) return TB_OK;
    int64_t start = b->n * rank / size, len = b->n * (rank + 1) / size - start;
    shard->n = len;
    shard->rows = b->rows ? b->rows + start : NULL;
    shard->fresh = b->fresh * (rank + 1) / size - b->fresh * rank / size;
    shard->inputs = shard_of(tape, b->inputs, start, len, err);
    shard->targets = shard->inputs ? shard_of(tape, b->targets, start, len, err) : NULL;
    if (!shard->targets) return tb_error_prefix(err, "rank %d's shard of the batch", rank);
    return TB_OK;
}

void tb_run_dist_dropout(const tb_dist *d, tb_rng *rng)
{
    rng->counter += (uint64_t)tb_dist_rank(d) << 40;
}

tb_status tb_run_dist_reduce(tb_dist *d, tb_params *params, float *loss, tb_error *err)
{
    tb_status st = tb_dist_average(d, tb_params_grads(params), tb_params_numel(params), err);
    if (st == TB_OK) st = tb_dist_average(d, loss, 1, err);
    return st == TB_OK ? TB_OK : tb_error_prefix(err, "data-parallel gradient average");
}

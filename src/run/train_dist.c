/* train_dist.c: data-parallel training's part of tb_train: the refusals, the batch shard,
 * the averaging between backward and update, and rank 0's decisions reaching every rank. */
#include "run/train_dist.h"

#include "trainbench/curvature.h"

#include <stdio.h>

tb_status tb_dist_refusals(const tb_dist *d, tb_device device, bool cuda_graph,
                           const tb_optimizer *opt, int64_t batch, tb_error *err)
{
    int size = tb_dist_size(d);
    if (size == 1) return TB_OK;
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

tb_status tb_train_dist_check(const tb_train_config *cfg, int64_t batch,
                              const tb_optimizer *opt, tb_error *err)
{
    tb_status st = tb_dist_refusals(cfg->dist, cfg->backend.device, cfg->cuda_graph, opt, batch,
                                    err);
    if (st == TB_OK && tb_dist_size(cfg->dist) > 1 && cfg->sharpness_every > 0)
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

tb_status tb_train_dist_shard(tb_dist *d, tb_tape *tape, const tb_batch *b, tb_batch *shard,
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

void tb_train_dist_dropout(const tb_dist *d, tb_rng *rng)
{
    rng->counter += (uint64_t)tb_dist_rank(d) << 40;
}

tb_status tb_train_dist_reduce(tb_dist *d, tb_params *params, float *loss, tb_error *err)
{
    tb_status st = tb_dist_average(d, tb_params_grads(params), tb_params_numel(params), err);
    if (st == TB_OK) st = tb_dist_average(d, loss, 1, err);
    return st == TB_OK ? TB_OK : tb_error_prefix(err, "data-parallel gradient average");
}

tb_status tb_train_dist_agree_code(tb_dist *d, tb_status st, int *code, tb_error *err)
{
    if (tb_dist_size(d) == 1) return st;
    /* the maximum over the ranks of: FAILED + status for a failure, else rank 0's code */
    int verdict = st != TB_OK ? TB_DIST_FAILED + (int)st
                  : tb_dist_rank(d) == 0 && code ? *code
                                                 : 0;
    tb_error own = {0};
    tb_status mst = tb_dist_max(d, &verdict, &own);
    if (st != TB_OK) return st;
    if (mst != TB_OK) {
        if (err) *err = own;
        return mst;
    }
    if (verdict >= TB_DIST_FAILED)
        return tb_fail(err, (tb_status)(verdict - TB_DIST_FAILED),
                       "another rank failed (%s; it reports why)",
                       tb_status_name((tb_status)(verdict - TB_DIST_FAILED)));
    if (code) *code = verdict;
    return TB_OK;
}

tb_status tb_train_dist_agree(tb_dist *d, tb_status st, bool *stop, tb_error *err)
{
    int code = stop && *stop;
    st = tb_train_dist_agree_code(d, st, stop ? &code : NULL, err);
    if (st == TB_OK && stop) *stop = code != 0;
    return st;
}

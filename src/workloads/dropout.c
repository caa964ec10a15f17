/* dropout.c: a workload's dropout on its hidden layers (docs/DROPOUT.md): the rate a run sets
 * (AlgoPerf's dropout_rate) or the variant's own, fixed or drawn per example, or projected
 * into the input space instead (the projected variants). */
#include "trainbench/dropout.h"

#include "workloads/workload_impl.h"

#include <math.h>

tb_status tb_workload_set_dropout(tb_workload *wl, float config_rate, tb_error *err)
{
    const tb_workload_vtable *vt = wl->vt;
    if (!(config_rate >= 0.0f && config_rate < 1.0f))
        return tb_fail(err, TB_ERR_INVALID, "%s: dropout_rate = %g is outside [0, 1)",
                       vt->info.id, (double)config_rate);
    if (config_rate > 0.0f && vt->dropout_rate == 0.0f)
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "%s has no dropout (dropout_rate = %g; the variants with dropout: "
                       "fmnist_mlp_dropout, fmnist_mlp_dropout_random, fmnist_mlp_projected, "
                       "fmnist_cnn_dropout)",
                       vt->info.id, (double)config_rate);
    float rate = config_rate > 0.0f ? config_rate : vt->dropout_rate;
    if (vt->dropout_random && !(rate < 0.5f))
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: dropout_rate = %g: the random-rate scheme draws rates in [0, 2 x "
                       "rate), which must stay below 1 (a rate below 0.5)",
                       vt->info.id, (double)rate);
    wl->dropout_rate = rate;
    return TB_OK;
}

bool tb_workload_drops(const tb_workload *wl)
{
    return wl->dropout_rate > 0.0f && !wl->vt->dropout_projected;
}

float tb_workload_projection_rate(const tb_workload *wl)
{
    return wl && wl->vt->dropout_projected ? wl->dropout_rate : 0.0f;
}

tb_var *tb_workload_dropout(tb_workload *wl, tb_tape *tape, tb_var *h, tb_rng *rng)
{
    if (!h || !tb_tape_training(tape) || !tb_workload_drops(wl)) return h;
    if (wl->vt->dropout_random)
        return tb_op_dropout_random(tape, h, 0.0f, 2.0f * wl->dropout_rate, rng);
    return tb_op_dropout(tape, h, wl->dropout_rate, rng);
}

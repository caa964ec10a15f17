/* hessian.c: how a trainer feeds Sophia's Hessian-diagonal estimates: on the steps the
 * optimizer asks for one, a gradient function of the step's batch for its Hessian-vector
 * products, before the training pass (see hessian.h). */
#include "run/hessian.h"

#include "trainbench/curvature.h"

typedef struct batch_grad {
    tb_workload *wl;
    tb_tape *tape;
    tb_params *params;
    tb_var *inputs, *targets;
    const tb_rng *dropout;
} batch_grad;

/* The gradient of the batch's loss at the parameters' current values (tb_grad_fn). */
static tb_status grad_of_batch(void *user, tb_error *err)
{
    batch_grad *b = user;
    int mark = tb_tape_mark(b->tape);
    tb_params_zero_grad(b->params);
    tb_rng dropout = *b->dropout; /* the same masks at every evaluation */
    tb_tape_set_freeze_running_stats(b->tape, true);
    tb_var *out = tb_workload_forward(b->wl, b->tape, b->inputs, &dropout);
    tb_var *loss = out ? tb_workload_loss_fn(b->wl, b->tape, out, b->targets) : NULL;
    tb_tape_set_freeze_running_stats(b->tape, false);
    tb_status st = loss ? tb_tape_backward(b->tape, loss) : tb_tape_status(b->tape);
    if (st != TB_OK || !loss)
        st = tb_fail(err, tb_tape_status(b->tape), "Hessian estimate: %s",
                     tb_tape_error(b->tape)->message);
    tb_tape_rewind(b->tape, mark);
    return st;
}

tb_status tb_hessian_pass(tb_optimizer *opt, tb_workload *wl, tb_tape *tape, tb_params *params,
                          tb_var *inputs, tb_var *targets, int ranks, tb_rng *probes,
                          const tb_rng *dropout, tb_error *err)
{
    if (!tb_optimizer_wants_hessian(opt)) return TB_OK;
    if (ranks > 1)
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "%s: Hessian-diagonal estimates with %d data-parallel ranks are not "
                       "supported (each rank would estimate from its own shard, and the replicas "
                       "would drift apart); run it on one rank",
                       tb_optimizer_get_info(opt)->name, ranks);
    batch_grad b = {.wl = wl, .tape = tape, .params = params, .inputs = inputs,
                    .targets = targets, .dropout = dropout};
    tb_status st = tb_optimizer_update_hessian(opt, grad_of_batch, &b, probes, err);
    tb_params_zero_grad(params);
    return st;
}

/* fisher.c: how a trainer feeds curvature optimizers (K-FAC, EKFAC): it attaches the
 * workload's layers once, and on the steps the optimizer asks for statistics it runs an extra
 * forward/backward pass with targets sampled from the model (the true Fisher) before the
 * training pass. The Fisher pass normalises as a training pass does but leaves batch norm's
 * running statistics alone (the training pass updates them). Optimizers without curvature
 * ignore both. */
#include "run/fisher.h"

#include "trainbench/curvature.h"

tb_status tb_fisher_attach(tb_optimizer *opt, tb_workload *wl, tb_error *err)
{
    tb_layer_ref layers[64];
    int n = tb_workload_layers(wl, layers, 64);
    if (n > 64)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the model has %d layers (at most 64 for "
                       "curvature optimizers)", n);
    if (n == 0) return TB_OK;
    return tb_optimizer_set_layers(opt, layers, n, err);
}

tb_status tb_fisher_pass(tb_optimizer *opt, tb_workload *wl, tb_tape *tape, tb_params *params,
                         tb_var *inputs, tb_rng *fisher, tb_rng *dropout, tb_error *err)
{
    if (!tb_optimizer_wants_fisher(opt)) return TB_OK;
    int mark = tb_tape_mark(tape);
    tb_params_zero_grad(params);
    tb_tape_set_keep_grads(tape, true); /* the statistics read the layers' output gradients */
    /* the training pass that follows updates batch norm's moving averages, once a step */
    tb_tape_set_freeze_running_stats(tape, true);
    tb_var *out = tb_workload_forward(wl, tape, inputs, dropout);
    tb_var *loss = tb_workload_fisher_loss(wl, tape, out, fisher);
    tb_tape_set_freeze_running_stats(tape, false);
    if (!loss || tb_tape_backward(tape, loss) != TB_OK) {
        tb_tape_set_keep_grads(tape, false);
        return tb_fail(err, tb_tape_status(tape), "Fisher pass: %s",
                       tb_tape_error(tape)->message);
    }
    tb_status st = tb_optimizer_update_fisher(opt, err);
    tb_tape_set_keep_grads(tape, false);
    tb_tape_rewind(tape, mark);
    tb_params_zero_grad(params);
    return st;
}

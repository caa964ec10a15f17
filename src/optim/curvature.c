/* curvature.c: the trainer-facing calls of curvature optimizers (trainbench/curvature.h):
 * attaching layers, the Fisher-statistics handshake and Sophia's Hessian estimates. */
#include "optim/optim_impl.h"


tb_status tb_optimizer_set_layers(tb_optimizer *opt, const tb_layer_ref *layers, int n,
                                  tb_error *err)
{
    if (!opt) return tb_fail(err, TB_ERR_INVALID, "optimizer_set_layers: the optimizer is NULL");
    if (n < 0 || (n > 0 && !layers))
        return tb_fail(err, TB_ERR_INVALID, "optimizer_set_layers: %s", n < 0 ?
                       "a negative number of layers" : "layers is NULL");
    if (!opt->vt->set_layers) return TB_OK;
    return opt->vt->set_layers(opt, layers, n, err);
}

bool tb_optimizer_has_curvature(const tb_optimizer *opt)
{
    return opt && opt->vt->set_layers != NULL;
}

bool tb_optimizer_wants_fisher(const tb_optimizer *opt)
{
    return opt && opt->vt->wants_fisher && opt->vt->wants_fisher(opt);
}

tb_status tb_optimizer_update_fisher(tb_optimizer *opt, tb_error *err)
{
    if (!opt)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_update_fisher: the optimizer is NULL");
    if (!opt->vt->update_fisher) return TB_OK;
    return opt->vt->update_fisher(opt, err);
}

bool tb_optimizer_wants_hessian(const tb_optimizer *opt)
{
    return opt && opt->vt->wants_hessian && opt->vt->wants_hessian(opt);
}

tb_status tb_optimizer_update_hessian(tb_optimizer *opt, tb_grad_fn grad, void *user,
                                      tb_rng *rng, tb_error *err)
{
    if (!opt || !grad || !rng)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_update_hessian: %s is NULL",
                       !opt ? "the optimizer" : !grad ? "the gradient function" : "rng");
    if (!opt->vt->update_hessian) return TB_OK;
    return opt->vt->update_hessian(opt, grad, user, rng, err);
}

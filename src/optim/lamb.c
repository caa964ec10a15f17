/* lamb.c: LAMB (You et al. 2020): Adam moments with bias correction give the direction
 *     u = m_hat / (sqrt(v_hat) + eps) + wd w,
 * and each layer steps w -= lr (||w|| / ||u||) u, the ratio being 1 when either norm is 0
 * (phi is the identity, unclipped). Biases and normalisation parameters are excluded from both
 * the decay and the trust ratio (they take the plain Adam step). */
#include "optim/optim_impl.h"

#include <math.h>

static const tb_hparam_spec lamb_hparams[] = {
    {"learning_rate", 1e-3, 0.0, 1e6, true, false, false, "step size"},
    {"beta1", 0.9, 0.0, 1.0, false, true, false, "first-moment decay, in [0, 1)"},
    {"beta2", 0.999, 0.0, 1.0, false, true, false, "second-moment decay, in [0, 1)"},
    {"epsilon", 1e-6, 0.0, 1e12, true, false, false, "added to sqrt(v_hat); > 0"},
    {"weight_decay", 0.01, 0.0, 1e6, false, false, false, "decay added to the direction"},
};

static tb_status lamb_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                            tb_error *err)
{
    (void)given;
    return tb_opt_check_guard(hp, algorithm, "epsilon",
                              "sqrt(v_hat) + epsilon would be 0 for a parameter whose gradients "
                              "have been 0, and the update 0/0 = NaN",
                              err);
}

/* State: m, v, and a scratch buffer for the direction u (n floats each). */
static tb_status lamb_init(tb_optimizer *opt, tb_error *err)
{
    opt->state = tb_opt_alloc_state(opt, 3 * tb_params_numel(opt->params), 0.0f, err);
    return opt->state ? TB_OK : TB_ERR_NOMEM;
}

static tb_status lamb_step(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    tb_backend *be = opt->be;
    int64_t total = tb_params_numel(opt->params);
    float *m = opt->state, *v = m + total, *u = v + total;
    double t = (double)opt->step, b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    double wd = tb_opt_hp(opt, "weight_decay");
    tb_adam_coefs c = {.beta1 = (float)b1, .beta2 = (float)b2,
                       .eps = (float)tb_opt_hp(opt, "epsilon"),
                       .c_m = (float)(1.0 / (1.0 - pow(b1, t))),
                       .inv_bc2 = (float)(1.0 / (1.0 - pow(b2, t)))};
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        int64_t n = tb_tensor_numel(&p->var.value), o = p->offset;
        bool layerwise = tb_param_decays(p->kind);
        c.decay = layerwise ? (float)(1.0 - wd) : 1.0f; /* so u = r + wd w */
        be->ops.adam_update(be, n, p->var.value.data, p->var.grad.data, m + o, v + o, &c, u + o);
        double ratio = 1.0;
        if (layerwise) {
            double wn = sqrt(be->ops.sum_squares(be, n, p->var.value.data));
            double un = sqrt(be->ops.sum_squares(be, n, u + o));
            if (wn > 0.0 && un > 0.0) ratio = wn / un;
        }
        be->ops.axpy(be, n, (float)(-lr * ratio), u + o, p->var.value.data);
    }
    return TB_OK;
}

static void lamb_destroy(tb_optimizer *opt) { tb_backend_free(opt->be, opt->state); }

const tb_optimizer_vtable tb_optim_lamb = {
    .info = {"lamb", "LAMB: Adam direction plus decay, rescaled per layer by ||w|| / ||u||",
             lamb_hparams, (int)(sizeof lamb_hparams / sizeof *lamb_hparams)},
    .check = lamb_check,
    .init = lamb_init,
    .step = lamb_step,
    .graph_blocker = "per-layer trust ratios read weight and update norms back to the host "
                     "every step",
    .destroy = lamb_destroy,
};

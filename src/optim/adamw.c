/* adamw.c: AdamW (Loshchilov & Hutter): Adam moments with bias correction and weight decay
 * decoupled from the adaptive step (w *= 1 - lr wd), applied to weights only. */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdlib.h>

static const tb_hparam_spec adamw_hparams[] = {
    {"learning_rate", 1e-3, 0.0, 1e6, true, false, false, "step size"},
    {"beta1", 0.9, 0.0, 1.0, false, true, false, "first-moment decay, in [0, 1)"},
    {"beta2", 0.999, 0.0, 1.0, false, true, false, "second-moment decay, in [0, 1)"},
    {"epsilon", 1e-8, 0.0, 1e12, true, false, false, "added to sqrt(v); > 0"},
    {"weight_decay", 0.01, 0.0, 1e6, false, false, false, "decoupled decay per unit lr"},
};

static tb_status adamw_init(tb_optimizer *opt, tb_error *err)
{
    int64_t n = tb_params_numel(opt->params);
    float *mv = tb_backend_alloc(opt->be, (size_t)(2 * n + 1) * sizeof(float));
    if (!mv) return tb_fail(err, TB_ERR_NOMEM, "adamw: cannot allocate moments for %lld values",
                            (long long)n);
    opt->be->ops.fill(opt->be, mv, 2 * n, 0.0f);
    opt->state = mv;
    return TB_OK;
}

static tb_status adamw_step(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    int64_t n = tb_params_numel(opt->params);
    float *m = opt->state, *v = m + n;
    double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    float bc1 = (float)(1.0 - pow(b1, (double)opt->step));
    float bc2 = (float)(1.0 - pow(b2, (double)opt->step));
    float eps = (float)tb_opt_hp(opt, "epsilon"), wd = (float)tb_opt_hp(opt, "weight_decay");
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        int64_t k = tb_tensor_numel(&p->var.value);
        opt->be->ops.adamw_update(opt->be, k, p->var.value.data, p->var.grad.data, m + p->offset,
                                  v + p->offset, (float)lr, (float)b1, (float)b2, eps,
                                  tb_param_decays(p->kind) ? wd : 0.0f, bc1, bc2);
    }
    return TB_OK;
}

static void adamw_destroy(tb_optimizer *opt) { tb_backend_free(opt->be, opt->state); }

const tb_optimizer_vtable tb_optim_adamw = {
    .info = {"adamw", "Adam with decoupled weight decay (Loshchilov & Hutter 2019)",
             adamw_hparams, (int)(sizeof adamw_hparams / sizeof *adamw_hparams)},
    .init = adamw_init,
    .step = adamw_step,
    .destroy = adamw_destroy,
};

/* lion.c: Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), as
 * lion-pytorch's Lion: the sign of an interpolation of momentum and gradient, decoupled decay.
 *   w *= 1 - lr wd;  w -= lr sign(beta1 m + (1 - beta1) g);  m = beta2 m + (1 - beta2) g
 * Weight decay applies to weights and embeddings only (tb_param_decays). */
#include "optim/optim_impl.h"

#include <stdlib.h>

typedef struct lion_state {
    float *m;         /* momentum, one value per parameter value */
    tb_lion_coefs *c; /* the step's coefficients (step block): [0] without decay, [1] with */
} lion_state;

static const tb_hparam_spec lion_hparams[] = {
    {.name = "learning_rate",
     .default_value = 1e-4,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "step size (lr); every value moves by lr per step"},
    {.name = "beta1",
     .default_value = 0.9,
     .min = 0.0,
     .max = 1.0,
     .help = "weight of the momentum in the signed direction, in [0, 1]"},
    {.name = "beta2",
     .default_value = 0.99,
     .min = 0.0,
     .max = 1.0,
     .help = "momentum decay, in [0, 1]"},
    {.name = "weight_decay",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1e6,
     .help = "decoupled decay per unit lr: w *= 1 - lr wd"},
};

static tb_status lion_init(tb_optimizer *opt, tb_error *err)
{
    lion_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "lion: cannot allocate its state");
    opt->state = s;
    s->m = tb_opt_alloc_state(opt, tb_params_numel(opt->params), 0.0f, err);
    if (!s->m) return TB_ERR_NOMEM;
    s->c = tb_opt_alloc_step(opt, 2 * sizeof *s->c, err);
    return s->c ? TB_OK : TB_ERR_NOMEM;
}

static tb_status lion_prepare(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    lion_state *s = opt->state;
    double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    tb_lion_coefs c = {.beta1 = (float)b1,
                       .one_minus_beta1 = (float)(1.0 - b1),
                       .beta2 = (float)b2,
                       .one_minus_beta2 = (float)(1.0 - b2),
                       .lr = (float)lr,
                       .decay = 1.0f};
    s->c[0] = c;
    c.decay = (float)(1.0 - lr * tb_opt_hp(opt, "weight_decay"));
    s->c[1] = c;
    return TB_OK;
}

static void lion_queue(tb_optimizer *opt)
{
    lion_state *s = opt->state;
    bool wd = tb_opt_hp(opt, "weight_decay") != 0.0;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        bool decays = wd && tb_param_decays(p->kind);
        opt->be->ops.lion_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                 p->var.grad.data, s->m + p->offset, &s->c[decays]);
    }
}

static void lion_destroy(tb_optimizer *opt)
{
    lion_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->m);
    tb_backend_step_free(opt->be, s->c);
    free(s);
}

const tb_optimizer_vtable tb_optim_lion = {
    .info = {.name = "lion",
             .summary = "Lion: signed momentum interpolation, decoupled decay (lion-pytorch)",
             .hparams = lion_hparams,
             .n_hparams = (int)(sizeof lion_hparams / sizeof *lion_hparams)},
    .init = lion_init,
    .prepare = lion_prepare,
    .queue = lion_queue,
    .destroy = lion_destroy,
    .no_preconditioner = "its step is a sign, not a gradient divided by a diagonal",
};

/* lion.c: Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), as
 * lion-pytorch's Lion: the sign of an interpolation of momentum and gradient, decoupled decay.
 *   w *= 1 - lr wd;  w -= lr sign(beta1 m + (1 - beta1) g);  m = beta2 m + (1 - beta2) g
 * Weight decay applies to weights and embeddings only (tb_param_decays). */
#include "optim/elem_state.h"

typedef struct lion_state {
    tb_elem_state e;  /* one buffer, and the step's coefficients */
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
    tb_status st = tb_elem_create(opt, sizeof(lion_state), 1, sizeof(tb_lion_coefs), err);
    if (st != TB_OK) return st;
    lion_state *s = opt->state;
    s->m = tb_elem_buffer(&s->e, 0);
    s->c = s->e.coefs;
    return TB_OK;
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
    const bool decays = tb_elem_decays(opt);
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        opt->be->ops.lion_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                 p->var.grad.data, s->m + p->offset,
                                 &s->c[tb_elem_decay_index(decays, p)]);
    }
}

const tb_optimizer_vtable tb_optim_lion = {
    .info = {.name = "lion",
             .summary = "Lion: signed momentum interpolation, decoupled decay (lion-pytorch)",
             .hparams = lion_hparams,
             .n_hparams = (int)(sizeof lion_hparams / sizeof *lion_hparams)},
    .init = lion_init,
    .prepare = lion_prepare,
    .queue = lion_queue,
    .destroy = tb_elem_destroy,
    .no_preconditioner = "its step is a sign, not a gradient divided by a diagonal",
};

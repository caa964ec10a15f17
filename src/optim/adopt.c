/* adopt.c: ADOPT (Taniguchi et al. 2024, "ADOPT: Modified Adam Can Converge with Any beta2"), as
 * pytorch-optimizer's ADOPT: the gradient is normalised by the second moment of the steps
 * BEFORE it (so v_{t-1} and g_t are independent), clipped to +-step^0.25, then averaged:
 *   g' = g + wd w (weight_decouple 0) or w *= 1 - lr wd (weight_decouple 1)
 *   step 1:  v = g'^2 and nothing else
 *   later:   u = clip(g' / max(sqrt(v), eps));  m += (1 - beta1)(u - m);  w -= lr m;
 *            v = beta2 v + (1 - beta2) g'^2
 * Weight decay applies to weights and embeddings only (tb_param_decays). */
#include "optim/elem_state.h"

#include <math.h>

typedef struct adopt_state {
    tb_elem_state e;   /* two buffers, and the step's coefficients */
    float *m, *v;      /* one value per parameter value each */
    tb_adopt_coefs *c; /* the step's coefficients (step block): [0] without decay, [1] with */
} adopt_state;

static const tb_hparam_spec adopt_hparams[] = {
    {.name = "learning_rate",
     .default_value = 1e-3,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "step size (lr)"},
    {.name = "beta1",
     .default_value = 0.9,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "first-moment decay, in [0, 1)"},
    {.name = "beta2",
     .default_value = 0.9999,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "second-moment decay, in [0, 1)"},
    {.name = "epsilon",
     .default_value = 1e-6,
     .min = 0.0,
     .max = 1e12,
     .min_open = true,
     .help = "floor of sqrt(v): g' / max(sqrt(v), epsilon)"},
    {.name = "weight_decay",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1e6,
     .help = "L2 (weight_decouple 0) or decoupled decay per unit lr (1)"},
    {.name = "weight_decouple",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1.0,
     .is_flag = true,
     .help = "1: decoupled decay w *= 1 - lr wd; 0: L2 added to the gradient"},
    {.name = "clip_lambda",
     .default_value = 1.0,
     .min = 0.0,
     .max = 1.0,
     .is_flag = true,
     .help = "1: clip the normalised gradient to +-step^0.25 (the reference default; 0: None)"},
};

static tb_status adopt_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                             tb_error *err)
{
    (void)given;
    return tb_opt_check_guard(hp, algorithm, "epsilon",
                              "max(sqrt(v), epsilon) would be 0 for a parameter whose gradients "
                              "have been 0, and the update 0/0 = NaN",
                              err);
}

static tb_status adopt_init(tb_optimizer *opt, tb_error *err)
{
    tb_status st = tb_elem_create(opt, sizeof(adopt_state), 2, sizeof(tb_adopt_coefs), err);
    if (st != TB_OK) return st;
    adopt_state *s = opt->state;
    s->m = tb_elem_buffer(&s->e, 0);
    s->v = tb_elem_buffer(&s->e, 1);
    s->c = s->e.coefs;
    return TB_OK;
}

static tb_status adopt_prepare(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    adopt_state *s = opt->state;
    double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    double wd = tb_opt_hp(opt, "weight_decay");
    bool decouple = tb_opt_hp(opt, "weight_decouple") != 0.0;
    bool clip = tb_opt_hp(opt, "clip_lambda") != 0.0;
    tb_adopt_coefs c = {.beta1_gap = (float)(1.0 - b1),
                        .beta2 = (float)b2,
                        .one_minus_beta2 = (float)(1.0 - b2),
                        .eps = (float)tb_opt_hp(opt, "epsilon"),
                        .decay = 1.0f,
                        .lr = (float)lr,
                        .clip = clip ? (float)pow((double)opt->step, 0.25) : INFINITY,
                        .first = opt->step == 1};
    s->c[0] = c;
    if (decouple)
        c.decay = (float)(1.0 - lr * wd);
    else
        c.l2 = (float)wd;
    s->c[1] = c;
    return TB_OK;
}

static void adopt_queue(tb_optimizer *opt)
{
    adopt_state *s = opt->state;
    const bool decays = tb_elem_decays(opt);
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        opt->be->ops.adopt_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                  p->var.grad.data, s->m + p->offset, s->v + p->offset,
                                  &s->c[tb_elem_decay_index(decays, p)]);
    }
}

const tb_optimizer_vtable tb_optim_adopt = {
    .info = {.name = "adopt",
             .summary = "ADOPT: Adam normalising by the previous second moment, clipped "
                        "(pytorch-optimizer)",
             .hparams = adopt_hparams,
             .n_hparams = (int)(sizeof adopt_hparams / sizeof *adopt_hparams)},
    .check = adopt_check,
    .init = adopt_init,
    .prepare = adopt_prepare,
    .queue = adopt_queue,
    .destroy = tb_elem_destroy,
    .no_preconditioner = "it normalises before averaging (and clips), so its step is not the "
                         "momentum divided by a diagonal",
};

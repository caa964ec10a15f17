/* mars.c: MARS (Yuan et al. 2024, "MARS: Unleashing the Power of Variance Reduction for
 * Training Large Models"), as pytorch-optimizer's MARS with mars_type "adamw": AdamW on a
 * variance-reduced gradient for the parameters of two or more dimensions, plain AdamW with its
 * own lr_1d, betas_1d and weight_decay_1d for the others (optimize_1d 0):
 *   c = g + gamma beta1/(1 - beta1) (g - g_prev);  c /= max(1, ||c||)   (per tensor)
 *   m += (1-beta1)(c - m);  v = beta2 v + (1-beta2) c^2;  w *= 1 - lr wd
 *   w -= lr (m / (1 - beta1^t)) / (sqrt(v) / sqrt(1 - beta2^t) + eps / sqrt(1 - beta2^t))
 * The split is by dimension as in the reference (weights and embeddings are the 2-D ones
 * here), and so is the decay: weight_decay for the first kind, weight_decay_1d (default 0.1)
 * for biases and norm parameters. The update runs on adam_update, the corrected gradient on
 * mars_correct. */
#include "optim/elem_state.h"

#include <math.h>

typedef struct mars_state {
    tb_elem_state e;         /* four buffers, no step block (its step is not split) */
    float *m, *v, *last, *c; /* moments, the previous gradient, the corrected gradient */
} mars_state;

static const tb_hparam_spec mars_hparams[] = {
    {.name = "learning_rate",
     .default_value = 3e-3,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "step size of the 2-D parameters (lr)"},
    {.name = "beta1",
     .default_value = 0.95,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "first-moment decay of the 2-D parameters, in [0, 1)"},
    {.name = "beta2",
     .default_value = 0.99,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "second-moment decay of the 2-D parameters, in [0, 1)"},
    {.name = "gamma",
     .default_value = 0.025,
     .min = 0.0,
     .max = 1e6,
     .help = "weight of the gradient correction"},
    {.name = "epsilon",
     .default_value = 1e-8,
     .min = 0.0,
     .max = 1e12,
     .min_open = true,
     .help = "added to sqrt(v) before the bias correction"},
    {.name = "weight_decay",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1e6,
     .help = "decoupled decay per unit lr of the 2-D parameters"},
    {.name = "optimize_1d",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1.0,
     .is_flag = true,
     .help = "1: the 1-D parameters get the corrected update too, with lr, betas, weight_decay"},
    {.name = "lr_1d",
     .default_value = 3e-3,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "step size of the 1-D parameters (scaled by the schedule as learning_rate)"},
    {.name = "beta1_1d",
     .default_value = 0.9,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "first-moment decay of the 1-D parameters (the reference's betas_1d[0])"},
    {.name = "beta2_1d",
     .default_value = 0.95,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "second-moment decay of the 1-D parameters (betas_1d[1])"},
    {.name = "weight_decay_1d",
     .default_value = 0.1,
     .min = 0.0,
     .max = 1e6,
     .help = "decoupled decay per unit lr of the 1-D parameters"},
};

static tb_status mars_init(tb_optimizer *opt, tb_error *err)
{
    tb_status st = tb_elem_create(opt, sizeof(mars_state), 4, 0, err);
    if (st != TB_OK) return st;
    mars_state *s = opt->state;
    s->m = tb_elem_buffer(&s->e, 0);
    s->v = tb_elem_buffer(&s->e, 1);
    s->last = tb_elem_buffer(&s->e, 2);
    s->c = tb_elem_buffer(&s->e, 3);
    return TB_OK;
}

/* Whether a parameter gets the corrected (MARS) update: two or more dimensions, or all. */
static bool mixed(const tb_optimizer *opt, const tb_param *p)
{
    return tb_opt_hp(opt, "optimize_1d") != 0.0 || p->var.value.ndim >= 2;
}

/* adam_update's coefficients for one group: the reference's denominator
 * (sqrt(v) + eps) / sqrt(bc2) * bc1 is sqrt(v / bc2) + eps / sqrt(bc2) over lr / bc1. */
static tb_adam_coefs group_coefs(double t, double lr, double b1, double b2, double eps, double wd)
{
    double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
    return (tb_adam_coefs){.beta1 = (float)b1,
                           .beta2 = (float)b2,
                           .one_minus_beta1 = (float)(1.0 - b1),
                           .one_minus_beta2 = (float)(1.0 - b2),
                           .eps = (float)(eps / sqrt(bc2)),
                           .decay = (float)(1.0 - lr * wd),
                           .c_m = (float)(lr / bc1),
                           .inv_bc2 = (float)(1.0 / bc2)};
}

static tb_status mars_step(tb_optimizer *opt, double lr, tb_error *err)
{
    mars_state *s = opt->state;
    tb_backend *be = opt->be;
    double t = (double)opt->step, scale = lr / tb_opt_hp(opt, "learning_rate");
    double b1 = tb_opt_hp(opt, "beta1"), eps = tb_opt_hp(opt, "epsilon");
    tb_adam_coefs c2 =
        group_coefs(t, lr, b1, tb_opt_hp(opt, "beta2"), eps, tb_opt_hp(opt, "weight_decay"));
    tb_adam_coefs c1 =
        group_coefs(t, tb_opt_hp(opt, "lr_1d") * scale, tb_opt_hp(opt, "beta1_1d"),
                    tb_opt_hp(opt, "beta2_1d"), eps, tb_opt_hp(opt, "weight_decay_1d"));
    float k = (float)(tb_opt_hp(opt, "gamma") * (b1 / (1.0 - b1)));
    /* every corrected gradient and its clip first, so that a non-finite one moves no weight */
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        if (!mixed(opt, p)) continue;
        int64_t n = tb_tensor_numel(&p->var.value);
        float *c = s->c + p->offset;
        be->ops.mars_correct(be, n, p->var.grad.data, s->last + p->offset, c, k);
        double norm = sqrt(be->ops.sum_squares(be, n, c));
        if (!isfinite(norm))
            return tb_fail(err, TB_ERR_NUMERIC,
                           "mars: step %lld: the corrected gradient of '%s' is not finite (norm "
                           "%g); the weights were not updated",
                           (long long)opt->step, p->name, norm);
        if (norm > 1.0) be->ops.scale(be, c, n, (float)(1.0 / norm));
    }
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        bool mix = mixed(opt, p);
        be->ops.adam_update(be, tb_tensor_numel(&p->var.value), p->var.value.data,
                            mix ? s->c + p->offset : p->var.grad.data, s->m + p->offset,
                            s->v + p->offset, mix ? &c2 : &c1, NULL);
    }
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_mars = {
    .info = {.name = "mars",
             .summary = "MARS-AdamW: variance-reduced, clipped gradient for 2-D parameters "
                        "(pytorch-optimizer)",
             .hparams = mars_hparams,
             .n_hparams = (int)(sizeof mars_hparams / sizeof *mars_hparams)},
    .check = tb_adam_check,
    .init = mars_init,
    .step = mars_step,
    .graph_blocker = "the per-tensor clip reads each corrected gradient's norm back every step",
    .destroy = tb_elem_destroy,
    .no_preconditioner = "not reported yet: the 2-D parameters' direction is a clipped, "
                         "corrected gradient",
};

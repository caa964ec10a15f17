/* ademamix.c: AdEMAMix (Pagliardini et al. 2024, "The AdEMAMix Optimizer: Better, Faster,
 * Older"), as pytorch-optimizer's AdEMAMix: Adam plus a slow EMA of the gradient (beta3) mixed
 * in with weight alpha, both warmed up over t_alpha_beta3 steps:
 *   alpha_t = min(t alpha / T, alpha)
 *   beta3_t = min(exp(ln b1 ln b3 / ((1 - t/T) ln b3 + (t/T) ln b1)), b3)   (T = 0: none)
 *   m1 += (1-b1)(g' - m1);  v = b2 v + (1-b2) g'^2;  m2 += (1-beta3_t)(g' - m2)
 *   w -= lr (m1 / (1 - b1^t) + alpha_t m2) / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * with g' = g + wd w (weight_decouple 0) or w *= 1 - lr wd (1). Weight decay applies to weights
 * and embeddings only (tb_param_decays). */
#include "optim/elem_state.h"

#include <math.h>

typedef struct ademamix_state {
    tb_elem_state e;      /* three buffers, and the step's coefficients */
    float *m1, *m2, *v;   /* fast EMA, slow EMA, second moment */
    tb_ademamix_coefs *c; /* the step's coefficients (step block): [0] without decay, [1] with */
} ademamix_state;

static const tb_hparam_spec ademamix_hparams[] = {
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
     .min_open = true,
     .max_open = true,
     .help = "fast EMA decay, in (0, 1)"},
    {.name = "beta2",
     .default_value = 0.999,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "second-moment decay, in [0, 1)"},
    {.name = "beta3",
     .default_value = 0.9999,
     .min = 0.0,
     .max = 1.0,
     .min_open = true,
     .max_open = true,
     .help = "slow EMA decay, in (0, 1)"},
    {.name = "alpha",
     .default_value = 5.0,
     .min = 0.0,
     .max = 1e6,
     .help = "weight of the slow EMA in the numerator"},
    {.name = "t_alpha_beta3",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1e12,
     .help = "steps of the alpha and beta3 warmups (0: none, the reference's None)"},
    {.name = "epsilon",
     .default_value = 1e-8,
     .min = 0.0,
     .max = 1e12,
     .min_open = true,
     .help = "added to the bias-corrected sqrt(v)"},
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
};

static tb_status ademamix_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                                tb_error *err)
{
    if (tb_hparams_get(hp, "beta3", 0.9999) < tb_hparams_get(hp, "beta1", 0.9) &&
        tb_hparams_get(hp, "t_alpha_beta3", 0.0) > 0.0)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: beta3 = %g is below beta1 = %g: the beta3 warmup runs from beta1 up "
                       "to beta3",
                       algorithm, tb_hparams_get(hp, "beta3", 0), tb_hparams_get(hp, "beta1", 0));
    return tb_adam_check(algorithm, hp, given, err);
}

static tb_status ademamix_init(tb_optimizer *opt, tb_error *err)
{
    tb_status st = tb_elem_create(opt, sizeof(ademamix_state), 3, sizeof(tb_ademamix_coefs), err);
    if (st != TB_OK) return st;
    ademamix_state *s = opt->state;
    s->m1 = tb_elem_buffer(&s->e, 0);
    s->m2 = tb_elem_buffer(&s->e, 1);
    s->v = tb_elem_buffer(&s->e, 2);
    s->c = s->e.coefs;
    return TB_OK;
}

/* beta3 at step t of a warmup over T steps (the reference's schedule_beta3). */
static double beta3_at(double t, double T, double b1, double b3)
{
    if (T <= 0.0) return b3;
    double l1 = log(b1), l3 = log(b3);
    double b = exp(l1 * l3 / ((1.0 - t / T) * l3 + (t / T) * l1));
    return b < b3 ? b : b3;
}

static tb_status ademamix_prepare(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    ademamix_state *s = opt->state;
    double t = (double)opt->step, T = tb_opt_hp(opt, "t_alpha_beta3");
    double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    double alpha = tb_opt_hp(opt, "alpha"), wd = tb_opt_hp(opt, "weight_decay");
    double alpha_t = T > 0.0 && t * alpha / T < alpha ? t * alpha / T : alpha;
    double b3 = beta3_at(t, T, b1, tb_opt_hp(opt, "beta3"));
    tb_ademamix_coefs c = {.one_minus_beta1 = (float)(1.0 - b1),
                           .beta2 = (float)b2,
                           .one_minus_beta2 = (float)(1.0 - b2),
                           .one_minus_beta3 = (float)(1.0 - b3),
                           .alpha = (float)alpha_t,
                           .bc1 = (float)(1.0 - pow(b1, t)),
                           .bc2_sqrt = (float)sqrt(1.0 - pow(b2, t)),
                           .eps = (float)tb_opt_hp(opt, "epsilon"),
                           .decay = 1.0f,
                           .lr = (float)lr};
    s->c[0] = c;
    if (tb_opt_hp(opt, "weight_decouple") != 0.0)
        c.decay = (float)(1.0 - lr * wd);
    else
        c.l2 = (float)wd;
    s->c[1] = c;
    return TB_OK;
}

static void ademamix_queue(tb_optimizer *opt)
{
    ademamix_state *s = opt->state;
    const bool decays = tb_elem_decays(opt);
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        opt->be->ops.ademamix_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                     p->var.grad.data, s->m1 + p->offset, s->m2 + p->offset,
                                     s->v + p->offset, &s->c[tb_elem_decay_index(decays, p)]);
    }
}

const tb_optimizer_vtable tb_optim_ademamix = {
    .info = {.name = "ademamix",
             .summary = "AdEMAMix: Adam plus a slow gradient EMA, alpha/beta3 warmups "
                        "(pytorch-optimizer)",
             .hparams = ademamix_hparams,
             .n_hparams = (int)(sizeof ademamix_hparams / sizeof *ademamix_hparams)},
    .check = ademamix_check,
    .init = ademamix_init,
    .prepare = ademamix_prepare,
    .queue = ademamix_queue,
    .destroy = tb_elem_destroy,
    .no_preconditioner = "not reported yet: its numerator mixes two EMAs (a P exists, "
                         "sqrt(v_hat) + eps, but no stability threshold is derived)",
};

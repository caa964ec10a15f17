/* prodigy.c: Prodigy (Mishchenko & Defazio 2024, "Prodigy: An Expeditiously Adaptive
 * Parameter-Free Learner"), as prodigyopt's Prodigy: Adam whose step size d is estimated on
 * the way, from the distance travelled from the initial point p0. One step, over every
 * parameter (dlr = d lr bc with bc = sqrt(1 - b2^t)/(1 - b1^t) under use_bias_correction, else
 * 1; beta3 = sqrt(beta2) unless given):
 *   g' = g + wd w (decouple 0);  num = beta3 num + (d/d0) dlr sum g' (p0 - w)
 *   m = b1 m + d (1-b1) g';  v = b2 v + d^2 (1-b2) g'^2
 *   s = beta3 s + (d/d0) (safeguard_warmup ? d : dlr) g';  den = sum |s|
 *   d_hat = d_coef num / den;  d = max(d, d_hat) at d = d0;  d_max = max(d_max, d_hat);
 *   d = min(d_max, d growth_rate)
 *   w *= 1 - wd dlr (decouple 1);  w -= dlr m / (sqrt(v) + d eps)     (the new d, the old dlr)
 * den = 0 (every gradient 0 so far) leaves the parameters as they are, as the reference does.
 * Weight decay applies to weights and embeddings only (tb_param_decays). */
#include "optim/elem_state.h"

#include <math.h>

typedef struct prodigy_state {
    tb_elem_state e;       /* four buffers, no step block (its step is not split) */
    float *m, *v, *s, *p0; /* moments, the d-weighted gradient sum, the initial point */
    bool p0_ready;
    double d, d_max, num; /* the estimate, its largest value, the numerator */
} prodigy_state;

static const tb_hparam_spec prodigy_hparams[] = {
    {.name = "learning_rate",
     .default_value = 1.0,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "multiplies the estimated step size d (lr)"},
    {.name = "beta1",
     .default_value = 0.9,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "first-moment decay, in [0, 1)"},
    {.name = "beta2",
     .default_value = 0.999,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "second-moment decay, in [0, 1)"},
    {.name = "beta3",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "decay of the d estimate's sums; 0: sqrt(beta2) (the reference's None)"},
    {.name = "epsilon",
     .default_value = 1e-8,
     .min = 0.0,
     .max = 1e12,
     .min_open = true,
     .help = "d epsilon is added to sqrt(v)"},
    {.name = "weight_decay",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1e6,
     .help = "decoupled (decouple 1) or L2 (decouple 0)"},
    {.name = "decouple",
     .default_value = 1.0,
     .min = 0.0,
     .max = 1.0,
     .is_flag = true,
     .help = "1: w *= 1 - wd dlr; 0: L2 added to the gradient"},
    {.name = "use_bias_correction",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1.0,
     .is_flag = true,
     .help = "1: Adam's bias correction in dlr"},
    {.name = "safeguard_warmup",
     .default_value = 0.0,
     .min = 0.0,
     .max = 1.0,
     .is_flag = true,
     .help = "1: leave lr out of the denominator's sum (for warmup schedules)"},
    {.name = "d0",
     .default_value = 1e-6,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "initial d estimate"},
    {.name = "d_coef",
     .default_value = 1.0,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "multiplies the d estimate"},
    {.name = "growth_rate",
     .default_value = 1e30,
     .min = 1.0,
     .max = 1e30,
     .help = "largest factor d may grow by per step (1e30: unbounded, the reference's inf)"},
};

static tb_status prodigy_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                               tb_error *err)
{
    (void)given;
    return tb_opt_check_guard(hp, algorithm, "epsilon",
                              "sqrt(v) + d epsilon would be 0 for a parameter whose gradients "
                              "have been 0, and the update 0/0 = NaN",
                              err);
}

static tb_status prodigy_init(tb_optimizer *opt, tb_error *err)
{
    tb_status st = tb_elem_create(opt, sizeof(prodigy_state), 4, 0, err);
    if (st != TB_OK) return st;
    prodigy_state *s = opt->state;
    s->m = tb_elem_buffer(&s->e, 0);
    s->v = tb_elem_buffer(&s->e, 1);
    s->s = tb_elem_buffer(&s->e, 2);
    s->p0 = tb_elem_buffer(&s->e, 3);
    s->d = s->d_max = tb_opt_hp(opt, "d0");
    return TB_OK;
}

static tb_status prodigy_step(tb_optimizer *opt, double lr, tb_error *err)
{
    prodigy_state *s = opt->state;
    tb_backend *be = opt->be;
    if (!s->p0_ready) {
        be->ops.copy(be, s->p0, tb_params_values(opt->params),
                     (size_t)tb_params_numel(opt->params) * sizeof(float));
        s->p0_ready = true;
    }
    double t = (double)opt->step;
    double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    double b3 = tb_opt_hp(opt, "beta3") > 0.0 ? tb_opt_hp(opt, "beta3") : sqrt(b2);
    double d = s->d, d0 = tb_opt_hp(opt, "d0"), wd = tb_opt_hp(opt, "weight_decay");
    bool decouple = tb_opt_hp(opt, "decouple") != 0.0;
    double bc = tb_opt_hp(opt, "use_bias_correction") != 0.0
                    ? sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t))
                    : 1.0;
    double dlr = d * lr * bc;
    bool safeguard = tb_opt_hp(opt, "safeguard_warmup") != 0.0;
    tb_prodigy_coefs c = {.beta1 = (float)b1,
                          .beta2 = (float)b2,
                          .beta3 = (float)b3,
                          .m_scale = (float)(d * (1.0 - b1)),
                          .v_scale = (float)(d * d * (1.0 - b2)),
                          .s_scale = (float)(d / d0 * (safeguard ? d : dlr))};
    double dot = 0.0, den = 0.0;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        c.l2 = tb_param_decays(p->kind) && !decouple ? (float)wd : 0.0f;
        double sums[2];
        be->ops.prodigy_accumulate(be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                   p->var.grad.data, s->p0 + p->offset, s->m + p->offset,
                                   s->v + p->offset, s->s + p->offset, &c, sums);
        dot += sums[0];
        den += sums[1];
    }
    double num = b3 * s->num + d / d0 * dlr * dot;
    if (den == 0.0) return TB_OK; /* nothing to estimate from: no update (the reference's) */
    double d_hat = tb_opt_hp(opt, "d_coef") * num / den;
    if (!isfinite(d_hat))
        return tb_fail(err, TB_ERR_NUMERIC,
                       "prodigy: step %lld: the step-size estimate d_hat = %g / %g is not finite; "
                       "the weights were not updated",
                       (long long)opt->step, num, den);
    if (d == d0 && d_hat > d) d = d_hat;
    if (d_hat > s->d_max) s->d_max = d_hat;
    double grown = d * tb_opt_hp(opt, "growth_rate");
    d = s->d_max < grown ? s->d_max : grown;
    s->num = num;
    s->d = d;
    c.dlr = (float)dlr;
    c.d_eps = (float)(d * tb_opt_hp(opt, "epsilon"));
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        c.decay = tb_param_decays(p->kind) && decouple ? (float)(1.0 - wd * dlr) : 1.0f;
        be->ops.prodigy_apply(be, tb_tensor_numel(&p->var.value), p->var.value.data,
                              s->m + p->offset, s->v + p->offset, &c);
    }
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_prodigy = {
    .info = {.name = "prodigy",
             .summary = "Prodigy: Adam with an estimated step size d (prodigyopt)",
             .hparams = prodigy_hparams,
             .n_hparams = (int)(sizeof prodigy_hparams / sizeof *prodigy_hparams)},
    .check = prodigy_check,
    .init = prodigy_init,
    .step = prodigy_step,
    .graph_blocker = "its step-size estimate reads two sums back to the host every step",
    .destroy = tb_elem_destroy,
    .no_preconditioner = "not reported yet: its denominator scales with the estimate d, which "
                         "changes every step",
};

/* adam.c: the Adam family, one state layout and one backend kernel (adam_update):
 *   "adam"   torch.optim.Adam: L2 decay added to the gradient (coupled), bias-corrected moments;
 *   "adamw"  Loshchilov & Hutter: decay decoupled from the adaptive step, w *= 1 - lr wd;
 *   "nadam"  Adam with the Nesterov numerator beta1 m + (1-beta1) g (Choi et al.'s table),
 *            L2 decay as torch.optim.NAdam; momentum_decay > 0 selects torch's (Dozat's)
 *            mu_t = beta1 (1 - 0.5 * 0.96^(t psi)) schedule instead;
 *   "nadamw" the AlgoPerf NAdamW baseline: the nadam numerator with decoupled decay.
 * Weight decay applies to weights and embeddings only (tb_param_decays). */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum adam_kind { ADAM, ADAMW, NADAM, NADAMW } adam_kind;

typedef struct adam_state {
    float *m, *v;      /* first and second moments, one value per parameter value */
    double mu_product; /* prod of mu_1..mu_t (torch's NAdam schedule only) */
    tb_adam_coefs *c;  /* the step's coefficients (step block): [0] without decay, [1] with */
} adam_state;

#define LR_SPEC                                                                                    \
    {.name = "learning_rate", .default_value = 1e-3, .min = 0.0, .max = 1e12, .min_open = true,    \
     .help = "step size (large values allowed for Choi et al.'s eps-scaled search)"}
#define BETA1_SPEC                                                                                 \
    {.name = "beta1", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,              \
     .help = "first-moment decay, in [0, 1)"}
#define BETA2_SPEC                                                                                 \
    {.name = "beta2", .default_value = 0.999, .min = 0.0, .max = 1.0, .max_open = true,            \
     .help = "second-moment decay, in [0, 1)"}
#define EPS_SPEC                                                                                   \
    {.name = "epsilon", .default_value = 1e-8, .min = 0.0, .max = 1e12, .min_open = true,          \
     .help = "added to sqrt(v_hat); > 0"}

static const tb_hparam_spec adam_hparams[] = {
    LR_SPEC, BETA1_SPEC, BETA2_SPEC, EPS_SPEC,
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "L2 penalty added to the gradient"},
};

static const tb_hparam_spec adamw_hparams[] = {
    LR_SPEC, BETA1_SPEC, BETA2_SPEC, EPS_SPEC,
    {.name = "weight_decay", .default_value = 0.01, .min = 0.0, .max = 1e6,
     .help = "decoupled decay per unit lr"},
};

static const tb_hparam_spec nadam_hparams[] = {
    {.name = "learning_rate", .default_value = 2e-3, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "step size"},
    BETA1_SPEC, BETA2_SPEC, EPS_SPEC,
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "L2 penalty added to the gradient"},
    {.name = "momentum_decay", .default_value = 0.0, .min = 0.0, .max = 10.0,
     .help = "0: Choi et al.'s NAdam; psi > 0: torch's mu_t schedule (torch default 0.004)"},
};

static const tb_hparam_spec nadamw_hparams[] = {
    LR_SPEC, BETA1_SPEC,
    {.name = "one_minus_beta1", .default_value = 0.1, .min = 0.0, .max = 1.0, .min_open = true,
     .help = "AlgoPerf's name: 1 - beta1, in (0, 1]; give this or beta1"},
    BETA2_SPEC, EPS_SPEC,
    {.name = "weight_decay", .default_value = 0.01, .min = 0.0, .max = 1e6,
     .help = "decoupled decay per unit lr"},
};

static adam_kind kind_of(const tb_optimizer *opt)
{
    if (opt->vt == &tb_optim_adamw) return ADAMW;
    if (opt->vt == &tb_optim_nadam) return NADAM;
    if (opt->vt == &tb_optim_nadamw) return NADAMW;
    return ADAM;
}

/* The moments' update computes 1 - beta in float32, and epsilon keeps sqrt(v_hat) + epsilon
 * from 0 where a gradient has always been 0 (the ranges refuse a beta that float32 rounds
 * to 1 when it is given; nadamw_check a beta1 derived from one_minus_beta1). LAMB's too. */
tb_status tb_adam_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                        tb_error *err)
{
    (void)given;
    return tb_opt_check_guard(hp, algorithm, "epsilon",
                              "sqrt(v_hat) + epsilon would be 0 for a parameter whose gradients "
                              "have been 0, and the update 0/0 = NaN",
                              err);
}

/* nadamw: beta1 and one_minus_beta1 name one value; resolve whichever was given. */
static tb_status nadamw_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                              tb_error *err)
{
    bool has_b1 = tb_hparams_has(given, "beta1");
    bool has_omb1 = tb_hparams_has(given, "one_minus_beta1");
    double b1 = tb_hparams_get(hp, "beta1", 0), omb1 = tb_hparams_get(hp, "one_minus_beta1", 0);
    if (has_b1 && has_omb1 && fabs((1.0 - omb1) - b1) > 1e-12)
        return tb_fail(err, TB_ERR_INVALID,
                       "nadamw: beta1 = %g and one_minus_beta1 = %g disagree (give one of them)",
                       b1, omb1);
    if (has_omb1 && (float)(1.0 - omb1) == 1.0f)
        return tb_fail(err, TB_ERR_INVALID,
                       "nadamw: one_minus_beta1 = %g makes beta1 = %.10g, which is 1 in float32, "
                       "in which the update runs (1 - beta1 would be 0: the first moment would "
                       "never move); one_minus_beta1 must be greater than %g",
                       omb1, 1.0 - omb1, 0x1p-25);
    if (has_omb1)
        tb_hparams_set(hp, "beta1", 1.0 - omb1, NULL);
    else
        tb_hparams_set(hp, "one_minus_beta1", 1.0 - b1, NULL);
    return tb_adam_check(algorithm, hp, given, err);
}

static tb_status adam_init(tb_optimizer *opt, tb_error *err)
{
    int64_t n = tb_params_numel(opt->params);
    adam_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate its state",
                           opt->vt->info.name);
    opt->state = s;
    s->mu_product = 1.0;
    s->m = tb_opt_alloc_state(opt, 2 * n, 0.0f, err);
    if (!s->m) return TB_ERR_NOMEM;
    s->v = s->m + n;
    s->c = tb_opt_alloc_step(opt, 2 * sizeof *s->c, err);
    return s->c ? TB_OK : TB_ERR_NOMEM;
}

/* The coefficients of step opt->step at lr, for parameters without (c[0]) and with (c[1])
 * weight decay. */
static tb_status adam_prepare(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    adam_state *s = opt->state;
    adam_kind kind = kind_of(opt);
    double t = (double)opt->step;
    double b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    double wd = tb_opt_hp(opt, "weight_decay");
    double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
    bool decoupled = kind == ADAMW || kind == NADAMW;
    double c_m = lr / bc1, c_g = 0.0;
    if (kind == NADAM || kind == NADAMW) {
        double psi = kind == NADAM ? tb_opt_hp(opt, "momentum_decay") : 0.0;
        if (psi > 0.0) { /* torch.optim.NAdam (its multi-tensor path; see docs/OPTIMIZERS.md) */
            double mu = b1 * (1.0 - 0.5 * pow(0.96, t * psi));
            double mu_next = b1 * (1.0 - 0.5 * pow(0.96, (t + 1.0) * psi));
            s->mu_product *= mu;
            c_g = lr * (1.0 - mu) / (1.0 - s->mu_product);
            c_m = lr * mu_next / (1.0 - s->mu_product * mu_next);
        } else {
            c_g = lr * (1.0 - b1) / bc1;
            c_m = lr * b1 / bc1;
        }
    }
    tb_adam_coefs c = {.beta1 = (float)b1, .beta2 = (float)b2,
                       .one_minus_beta1 = (float)(1.0 - b1), .one_minus_beta2 = (float)(1.0 - b2),
                       .eps = (float)tb_opt_hp(opt, "epsilon"), .c_m = (float)c_m,
                       .c_g = (float)c_g, .inv_bc2 = (float)(1.0 / bc2)};
    for (int decays = 0; decays < 2; decays++) {
        c.l2 = decays && !decoupled ? (float)wd : 0.0f;
        c.decay = decays && decoupled ? (float)(1.0 - lr * wd) : 1.0f;
        s->c[decays] = c;
    }
    return TB_OK;
}

static void adam_queue(tb_optimizer *opt)
{
    adam_state *s = opt->state;
    bool wd = tb_opt_hp(opt, "weight_decay") != 0.0;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        bool decays = tb_param_decays(p->kind) && wd;
        opt->be->ops.adam_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                 p->var.grad.data, s->m + p->offset, s->v + p->offset,
                                 &s->c[decays], NULL);
    }
}

/* P of the latest step, sqrt(v inv_bc2) + eps: the kernel's float expression on the second
 * moments it stored and the coefficients it read (adam_update). */
static tb_status adam_preconditioner(const tb_optimizer *opt, float *p, tb_error *err)
{
    const adam_state *s = opt->state;
    tb_status st = tb_opt_latest_state(opt, s->v, p, err);
    if (st != TB_OK) return st;
    int64_t n = tb_params_numel(opt->params);
    const float inv_bc2 = s->c[0].inv_bc2, eps = s->c[0].eps;
    for (int64_t i = 0; i < n; i++) p[i] = sqrtf(p[i] * inv_bc2) + eps;
    return TB_OK;
}

/* Along an eigenvector of P^-1 H (eigenvalue a) with P frozen, the step is
 * x -= lr (alpha m + gamma a x) with m = beta1 m + (1 - beta1) a x: Adam alpha = 1, gamma = 0;
 * the Nesterov numerator alpha = beta1, gamma = 1 - beta1. Its characteristic polynomial
 * (z - 1)(z - beta1) + lr a ((alpha (1 - beta1) + gamma) z - gamma beta1) has a root at -1 when
 * lr a = 2 (1 + beta1) / (alpha (1 - beta1) + gamma (1 + beta1)), and both inside the unit
 * circle below that. */
static double adam_stability(const tb_optimizer *opt, double lr)
{
    adam_kind kind = kind_of(opt);
    double b1 = tb_opt_hp(opt, "beta1");
    if (kind == NADAM && tb_opt_hp(opt, "momentum_decay") > 0.0) return NAN;
    bool nesterov = kind == NADAM || kind == NADAMW;
    double alpha = nesterov ? b1 : 1.0, gamma = nesterov ? 1.0 - b1 : 0.0;
    return 2.0 * (1.0 + b1) / (lr * (alpha * (1.0 - b1) + gamma * (1.0 + b1)));
}

static void adam_destroy(tb_optimizer *opt)
{
    adam_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->m);
    tb_backend_step_free(opt->be, s->c);
    free(s);
}

#define ADAM_VTABLE(var, id, about, specs, check_fn)                                        \
    const tb_optimizer_vtable var = {                                                       \
        .info = {.name = id, .summary = about, .hparams = specs,                            \
                 .n_hparams = (int)(sizeof specs / sizeof *specs)},                         \
        .check = check_fn,                                                                  \
        .init = adam_init,                                                                  \
        .prepare = adam_prepare,                                                            \
        .queue = adam_queue,                                                                \
        .destroy = adam_destroy,                                                            \
        .preconditioner = adam_preconditioner,                                              \
        .stability = adam_stability,                                                        \
    }

ADAM_VTABLE(tb_optim_adam, "adam", "Adam with L2 weight decay in the gradient (torch.optim.Adam)",
            adam_hparams, tb_adam_check);
ADAM_VTABLE(tb_optim_adamw, "adamw", "Adam with decoupled weight decay (Loshchilov & Hutter 2019)",
            adamw_hparams, tb_adam_check);
ADAM_VTABLE(tb_optim_nadam, "nadam",
            "Adam with a Nesterov numerator (Choi et al.); L2 decay; optional torch mu schedule",
            nadam_hparams, tb_adam_check);
ADAM_VTABLE(tb_optim_nadamw, "nadamw",
            "AlgoPerf NAdamW: Nesterov numerator, decoupled decay, bias correction",
            nadamw_hparams, nadamw_check);

/* rmsprop.c: the second-moment-only methods, one backend kernel (rms_update):
 *   "rmsprop"  TF style (Choi et al.'s table): v0 = 1, m0 = 0, epsilon inside the square root,
 *              learning rate inside the momentum buffer:
 *                  v = rho v + (1-rho) g^2;  m = mu m + lr g / sqrt(v + eps);  w -= m.
 *              torch_style = 1 gives torch.optim.RMSprop instead: v0 = 0, eps outside the root,
 *              lr outside the buffer: m = mu m + g / (sqrt(v) + eps); w -= lr m.
 *   "adagrad"  G0 = initial_accumulator (0.1 as TF); G += g^2; w -= lr g / (sqrt(G) + eps).
 * Optional L2 weight decay (added to the gradient) on weights and embeddings only. */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdlib.h>

static const tb_hparam_spec rmsprop_hparams[] = {
    {.name = "learning_rate", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size"},
    {.name = "rho", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "second-moment decay, in [0, 1)"},
    {.name = "momentum", .default_value = 0.0, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "momentum coefficient, in [0, 1)"},
    {.name = "epsilon", .default_value = 1e-10, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "inside sqrt (TF) or added to it (torch)"},
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "L2 penalty added to the gradient"},
    {.name = "torch_style", .default_value = 0.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: torch.optim.RMSprop (v0 = 0, eps outside sqrt, lr outside the buffer)"},
};

static const tb_hparam_spec adagrad_hparams[] = {
    {.name = "learning_rate", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size"},
    {.name = "initial_accumulator", .default_value = 0.1, .min = 0.0, .max = 1e6,
     .help = "starting value of the sum of squares (TF 0.1, torch 0)"},
    {.name = "epsilon", .default_value = 1e-7, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "added to sqrt(G); > 0"},
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "L2 penalty added to the gradient"},
};

static bool is_adagrad(const tb_optimizer *opt) { return opt->vt == &tb_optim_adagrad; }

/* Epsilon keeps the denominator from 0 where v (or G) is 0: torch-style v and a zero
 * initial_accumulator start there, and TF-style v decays to it under zero gradients. */
static tb_status rms_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                           tb_error *err)
{
    (void)given;
    const char *why =
        tb_hparams_has(hp, "initial_accumulator")
            ? "sqrt(G) + epsilon would be 0 while G is (initial_accumulator 0, zero gradients), "
              "and the update 0/0 = NaN"
        : tb_hparams_get(hp, "torch_style", 0) != 0.0
            ? "sqrt(v) + epsilon would be 0 while v is (it starts at 0), and the update "
              "0/0 = NaN"
            : "sqrt(v + epsilon) would be 0 once v has decayed to 0 under zero gradients, and "
              "the update 0/0 = NaN";
    return tb_opt_check_guard(hp, algorithm, "epsilon", why, err);
}

/* State: v (n floats), then for rmsprop the momentum buffer m (n floats), on the device; the
 * step's coefficients in the step block: [0] for parameters without L2 decay, [1] with. */
typedef struct rms_state {
    float *v, *m;
    tb_rms_coefs *c;
} rms_state;

static tb_status rms_init(tb_optimizer *opt, tb_error *err)
{
    int64_t n = tb_params_numel(opt->params);
    rms_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate its state", opt->vt->info.name);
    opt->state = s;
    float v0 = is_adagrad(opt) ? (float)tb_opt_hp(opt, "initial_accumulator")
               : tb_opt_hp(opt, "torch_style") != 0.0 ? 0.0f
                                                      : 1.0f;
    s->v = tb_opt_alloc_state(opt, is_adagrad(opt) ? n : 2 * n, v0, err);
    if (!s->v) return TB_ERR_NOMEM;
    if (!is_adagrad(opt)) {
        s->m = s->v + n;
        if (n > 0) opt->be->ops.fill(opt->be, s->m, n, 0.0f);
    }
    s->c = tb_opt_alloc_step(opt, 2 * sizeof *s->c, err);
    return s->c ? TB_OK : TB_ERR_NOMEM;
}

static tb_status rms_prepare(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    rms_state *s = opt->state;
    double wd = tb_opt_hp(opt, "weight_decay");
    tb_rms_coefs c = {.eps = (float)tb_opt_hp(opt, "epsilon")};
    if (is_adagrad(opt)) {
        c.v_decay = 1.0f;
        c.sq_scale = 1.0f;
        c.lr_in = 1.0f;
        c.lr_out = (float)lr;
    } else {
        bool torch = tb_opt_hp(opt, "torch_style") != 0.0;
        double rho = tb_opt_hp(opt, "rho");
        c.v_decay = (float)rho;
        c.sq_scale = (float)(1.0 - rho);
        c.eps_inside = !torch;
        c.momentum = (float)tb_opt_hp(opt, "momentum");
        c.lr_in = torch ? 1.0f : (float)lr;
        c.lr_out = torch ? (float)lr : 1.0f;
    }
    for (int decays = 0; decays < 2; decays++) {
        c.l2 = decays ? (float)wd : 0.0f;
        s->c[decays] = c;
    }
    return TB_OK;
}

static void rms_queue(tb_optimizer *opt)
{
    rms_state *s = opt->state;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        opt->be->ops.rms_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                                p->var.grad.data, s->v + p->offset, s->m ? s->m + p->offset : NULL,
                                &s->c[tb_param_decays(p->kind)]);
    }
}

/* P of the latest step: the kernel's denominator d (rms_update) on the v it stored. */
static tb_status rms_preconditioner(const tb_optimizer *opt, float *p, tb_error *err)
{
    const rms_state *s = opt->state;
    tb_status st = tb_opt_latest_state(opt, s->v, p, err);
    if (st != TB_OK) return st;
    int64_t n = tb_params_numel(opt->params);
    const float eps = s->c[0].eps;
    const bool inside = s->c[0].eps_inside;
    for (int64_t i = 0; i < n; i++) p[i] = inside ? sqrtf(p[i] + eps) : sqrtf(p[i]) + eps;
    return TB_OK;
}

/* Heavy ball on the preconditioned gradient (the learning rate inside the buffer or outside
 * it gives the same iteration): (2 + 2 mu) / lr; adagrad has no momentum, 2 / lr. */
static double rms_stability(const tb_optimizer *opt, double lr)
{
    double mu = is_adagrad(opt) ? 0.0 : tb_opt_hp(opt, "momentum");
    return (2.0 + 2.0 * mu) / lr;
}

static void rms_destroy(tb_optimizer *opt)
{
    rms_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->v);
    tb_backend_step_free(opt->be, s->c);
    free(s);
}

const tb_optimizer_vtable tb_optim_rmsprop = {
    .info = {.name = "rmsprop",
             .summary = "RMSProp, TF style (v0 = 1, eps inside sqrt) with momentum; or torch's",
             .hparams = rmsprop_hparams,
             .n_hparams = (int)(sizeof rmsprop_hparams / sizeof *rmsprop_hparams)},
    .check = rms_check,
    .init = rms_init,
    .prepare = rms_prepare,
    .queue = rms_queue,
    .destroy = rms_destroy,
    .preconditioner = rms_preconditioner,
    .stability = rms_stability,
};

const tb_optimizer_vtable tb_optim_adagrad = {
    .info = {.name = "adagrad", .summary = "Adagrad with a TF-style initial accumulator",
             .hparams = adagrad_hparams,
             .n_hparams = (int)(sizeof adagrad_hparams / sizeof *adagrad_hparams)},
    .check = rms_check,
    .init = rms_init,
    .prepare = rms_prepare,
    .queue = rms_queue,
    .destroy = rms_destroy,
    .preconditioner = rms_preconditioner,
    .stability = rms_stability,
};

/* sgd.c: SGD with heavy-ball or Nesterov momentum (PyTorch's form: v = mu v + g,
 * w -= lr v, or w -= lr (g + mu v) for Nesterov) and L2 weight decay on weights only.
 * Registered three times: "sgd" (momentum and nesterov are hyperparameters), "momentum"
 * (heavy ball) and "nesterov", the names of Choi et al.'s comparison. */
#include "optim/optim_impl.h"

#include <stdlib.h>

/* the specs sgd and its fixed-momentum forms share */
#define LR_SPEC                                                                                    \
    {.name = "learning_rate", .default_value = 0.1, .min = 0.0, .max = 1e6, .min_open = true,     \
     .help = "step size"}
#define MOMENTUM_SPEC                                                                              \
    {.name = "momentum", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,           \
     .help = "momentum coefficient mu, in [0, 1)"}
#define WEIGHT_DECAY_SPEC                                                                          \
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,                         \
     .help = "L2 penalty added to the gradient"}

static const tb_hparam_spec sgd_hparams[] = {
    LR_SPEC,
    MOMENTUM_SPEC,
    {.name = "nesterov", .default_value = 1.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: Nesterov momentum, 0: heavy ball"},
    WEIGHT_DECAY_SPEC,
};

static const tb_hparam_spec momentum_hparams[] = {LR_SPEC, MOMENTUM_SPEC, WEIGHT_DECAY_SPEC};

/* State: the velocity v (n floats, device) and the step's learning rate (step block). */
typedef struct sgd_state {
    float *v;
    float *lr;
} sgd_state;

static tb_status sgd_init(tb_optimizer *opt, tb_error *err)
{
    sgd_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate its state", opt->vt->info.name);
    opt->state = s;
    s->v = tb_opt_alloc_state(opt, tb_params_numel(opt->params), 0.0f, err);
    if (!s->v) return TB_ERR_NOMEM;
    s->lr = tb_opt_alloc_step(opt, sizeof *s->lr, err);
    return s->lr ? TB_OK : TB_ERR_NOMEM;
}

static tb_status sgd_prepare(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    *((sgd_state *)opt->state)->lr = (float)lr;
    return TB_OK;
}

/* "sgd" says so in its hyperparameter; "nesterov" is, "momentum" is not. */
static bool is_nesterov(const tb_optimizer *opt)
{
    return tb_hparams_has(&opt->hp, "nesterov") ? tb_opt_hp(opt, "nesterov") != 0.0
                                                : opt->vt == &tb_optim_nesterov;
}

static void sgd_queue(tb_optimizer *opt)
{
    sgd_state *s = opt->state;
    float mu = (float)tb_opt_hp(opt, "momentum"), wd = (float)tb_opt_hp(opt, "weight_decay");
    bool nesterov = is_nesterov(opt);
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        int64_t n = tb_tensor_numel(&p->var.value);
        opt->be->ops.sgd_update(opt->be, n, p->var.value.data, p->var.grad.data, s->v + p->offset,
                                s->lr, mu, nesterov, tb_param_decays(p->kind) ? wd : 0.0f);
    }
}

/* P = 1: the step divides by nothing. */
static tb_status sgd_preconditioner(const tb_optimizer *opt, float *p, tb_error *err)
{
    (void)err;
    int64_t n = tb_params_numel(opt->params);
    for (int64_t i = 0; i < n; i++) p[i] = 1.0f;
    return TB_OK;
}

/* On a quadratic, v = mu v + a x, x -= lr v (heavy ball) or lr (a x + mu v) (Nesterov) has
 * the characteristic polynomial (z - 1)(z - mu) + lr a ((1 + c mu) z - c mu), c = 1 for
 * Nesterov and 0 for heavy ball; its root crosses -1 at lr a = (2 + 2 mu) / (1 + 2 c mu). */
static double sgd_stability(const tb_optimizer *opt, double lr)
{
    double mu = tb_opt_hp(opt, "momentum");
    return (2.0 + 2.0 * mu) / ((is_nesterov(opt) ? 1.0 + 2.0 * mu : 1.0) * lr);
}

static void sgd_destroy(tb_optimizer *opt)
{
    sgd_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->v);
    tb_backend_step_free(opt->be, s->lr);
    free(s);
}

const tb_optimizer_vtable tb_optim_sgd = {
    .info = {.name = "sgd",
             .summary = "SGD with heavy-ball or Nesterov momentum and L2 weight decay",
             .hparams = sgd_hparams, .n_hparams = (int)(sizeof sgd_hparams / sizeof *sgd_hparams)},
    .init = sgd_init,
    .prepare = sgd_prepare,
    .queue = sgd_queue,
    .destroy = sgd_destroy,
    .preconditioner = sgd_preconditioner,
    .stability = sgd_stability,
};

const tb_optimizer_vtable tb_optim_momentum = {
    .info = {.name = "momentum",
             .summary = "heavy-ball momentum: v = mu v + g; w -= lr v (L2 decay on weights)",
             .hparams = momentum_hparams,
             .n_hparams = (int)(sizeof momentum_hparams / sizeof *momentum_hparams)},
    .init = sgd_init,
    .prepare = sgd_prepare,
    .queue = sgd_queue,
    .destroy = sgd_destroy,
    .preconditioner = sgd_preconditioner,
    .stability = sgd_stability,
};

const tb_optimizer_vtable tb_optim_nesterov = {
    .info = {.name = "nesterov",
             .summary = "Nesterov momentum: v = mu v + g; w -= lr (g + mu v) (L2 on weights)",
             .hparams = momentum_hparams,
             .n_hparams = (int)(sizeof momentum_hparams / sizeof *momentum_hparams)},
    .init = sgd_init,
    .prepare = sgd_prepare,
    .queue = sgd_queue,
    .destroy = sgd_destroy,
    .preconditioner = sgd_preconditioner,
    .stability = sgd_stability,
};

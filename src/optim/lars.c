/* lars.c: LARS (You et al.), in the TF / MLPerf form: per layer
 *     trust = eeta ||w|| / (||g|| + wd ||w|| + eps)   (1 when either norm is 0)
 *     v = mu v + lr trust (g + wd w);  w -= v.
 * MLPerf exclusions: normalisation parameters get neither the trust ratio nor L2 decay; biases
 * skip the trust ratio but keep L2 decay. Weights and embeddings get both. */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdlib.h>

static const tb_hparam_spec lars_hparams[] = {
    {.name = "learning_rate", .default_value = 0.1, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size (inside the momentum)"},
    {.name = "momentum", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "momentum coefficient, in [0, 1)"},
    {.name = "weight_decay", .default_value = 1e-4, .min = 0.0, .max = 1e6,
     .help = "L2 penalty (beta) in the gradient"},
    {.name = "eeta", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "trust coefficient; > 0"},
    {.name = "epsilon", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "added to the trust ratio's denominator"},
};

/* State: the momentum v (device, n floats) and each parameter's lr * trust of the current step
 * (host). */
typedef struct lars_state {
    float *v;
    float *scaled_lr;
} lars_state;

static tb_status lars_init(tb_optimizer *opt, tb_error *err)
{
    lars_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "lars: cannot allocate its state");
    opt->state = s;
    s->scaled_lr = calloc((size_t)tb_params_count(opt->params) + 1, sizeof *s->scaled_lr);
    if (!s->scaled_lr) return tb_fail(err, TB_ERR_NOMEM, "lars: cannot allocate its state");
    s->v = tb_opt_alloc_state(opt, tb_params_numel(opt->params), 0.0f, err);
    return s->v ? TB_OK : TB_ERR_NOMEM;
}

/* Two sweeps: every parameter's trust ratio, then (when every lr * trust is finite in float32)
 * the updates, so that a ratio that overflows (a gradient norm near 0 next to a large weight
 * norm) leaves the weights as they were. */
static tb_status lars_step(tb_optimizer *opt, double lr, tb_error *err)
{
    lars_state *s = opt->state;
    tb_backend *be = opt->be;
    double mu = tb_opt_hp(opt, "momentum"), wd = tb_opt_hp(opt, "weight_decay");
    double eeta = tb_opt_hp(opt, "eeta"), eps = tb_opt_hp(opt, "epsilon");
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        int64_t n = tb_tensor_numel(&p->var.value);
        double trust = 1.0;
        if (tb_param_decays(p->kind)) {
            double wn = sqrt(be->ops.sum_squares(be, n, p->var.value.data));
            double gn = sqrt(be->ops.sum_squares(be, n, p->var.grad.data));
            if (wn > 0.0 && gn > 0.0) trust = eeta * wn / (gn + wd * wn + eps);
        }
        s->scaled_lr[i] = (float)(lr * trust);
        if (!isfinite(s->scaled_lr[i]))
            return tb_fail(err, TB_ERR_NUMERIC,
                           "lars: step %lld: '%s': the trust ratio %g times the learning rate %g "
                           "is not finite in float32; the weights were not updated",
                           (long long)opt->step, p->name, trust, lr);
    }
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        be->ops.lars_update(be, tb_tensor_numel(&p->var.value), p->var.value.data,
                            p->var.grad.data, s->v + p->offset, s->scaled_lr[i], (float)mu,
                            p->kind == TB_PARAM_NORM ? 0.0f : (float)wd);
    }
    return TB_OK;
}

static void lars_destroy(tb_optimizer *opt)
{
    lars_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->v);
    free(s->scaled_lr);
    free(s);
}

const tb_optimizer_vtable tb_optim_lars = {
    .info = {.name = "lars",
             .summary = "LARS: momentum with a per-layer trust ratio (MLPerf exclusions)",
             .hparams = lars_hparams,
             .n_hparams = (int)(sizeof lars_hparams / sizeof *lars_hparams)},
    .init = lars_init,
    .step = lars_step,
    .graph_blocker = "per-layer trust ratios read weight and gradient norms back to the host "
                     "every step",
    .destroy = lars_destroy,
    .no_preconditioner = "its per-layer trust ratio is computed from each step's gradient and "
                         "not kept, so its P is not known after the step",
};

/* lamb.c: LAMB (You et al. 2020): Adam moments with bias correction give the direction
 *     u = m_hat / (sqrt(v_hat) + eps) + wd w,
 * and each layer steps w -= lr (||w|| / ||u||) u, the ratio being 1 when either norm is 0
 * (phi is the identity, unclipped). Biases and normalisation parameters are excluded from both
 * the decay and the trust ratio (they take the plain Adam step). */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdlib.h>

static const tb_hparam_spec lamb_hparams[] = {
    {.name = "learning_rate", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size"},
    {.name = "beta1", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "first-moment decay, in [0, 1)"},
    {.name = "beta2", .default_value = 0.999, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "second-moment decay, in [0, 1)"},
    {.name = "epsilon", .default_value = 1e-6, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "added to sqrt(v_hat); > 0"},
    {.name = "weight_decay", .default_value = 0.01, .min = 0.0, .max = 1e6,
     .help = "decay added to the direction"},
};

/* State: m, v, and a scratch buffer for the direction u (device, n floats each); each
 * parameter's step size lr * ratio of the current step (host). */
typedef struct lamb_state {
    float *m, *v, *u;
    double *alpha;
} lamb_state;

static tb_status lamb_init(tb_optimizer *opt, tb_error *err)
{
    lamb_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "lamb: cannot allocate its state");
    opt->state = s;
    int64_t n = tb_params_numel(opt->params);
    s->alpha = calloc((size_t)tb_params_count(opt->params) + 1, sizeof *s->alpha);
    if (!s->alpha) return tb_fail(err, TB_ERR_NOMEM, "lamb: cannot allocate its state");
    s->m = tb_opt_alloc_state(opt, 3 * n, 0.0f, err);
    if (!s->m) return TB_ERR_NOMEM;
    s->v = s->m + n;
    s->u = s->v + n;
    return TB_OK;
}

/* Two sweeps: the moments, directions and trust ratios of every parameter, then (when every
 * step size is finite in float32) the steps, so that a trust ratio that overflows leaves the
 * weights as they were. */
static tb_status lamb_step(tb_optimizer *opt, double lr, tb_error *err)
{
    lamb_state *s = opt->state;
    tb_backend *be = opt->be;
    double t = (double)opt->step, b1 = tb_opt_hp(opt, "beta1"), b2 = tb_opt_hp(opt, "beta2");
    double wd = tb_opt_hp(opt, "weight_decay");
    tb_adam_coefs c = {.beta1 = (float)b1, .beta2 = (float)b2,
                       .one_minus_beta1 = (float)(1.0 - b1), .one_minus_beta2 = (float)(1.0 - b2),
                       .eps = (float)tb_opt_hp(opt, "epsilon"),
                       .c_m = (float)(1.0 / (1.0 - pow(b1, t))),
                       .inv_bc2 = (float)(1.0 / (1.0 - pow(b2, t)))};
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        int64_t n = tb_tensor_numel(&p->var.value), o = p->offset;
        bool layerwise = tb_param_decays(p->kind);
        c.decay = 1.0f;
        c.dir_decay = layerwise ? (float)wd : 0.0f; /* u = r + wd w, wd carried itself */
        be->ops.adam_update(be, n, p->var.value.data, p->var.grad.data, s->m + o, s->v + o, &c,
                            s->u + o);
        double wn = 1.0, un = 1.0;
        if (layerwise) {
            wn = sqrt(be->ops.sum_squares(be, n, p->var.value.data));
            un = sqrt(be->ops.sum_squares(be, n, s->u + o));
        }
        double ratio = wn > 0.0 && un > 0.0 ? wn / un : 1.0;
        s->alpha[i] = -lr * ratio;
        if (!isfinite(un) || !isfinite((float)s->alpha[i]))
            return tb_fail(err, TB_ERR_NUMERIC,
                           "lamb: step %lld: '%s': the trust ratio ||w|| / ||u|| = %g / %g times "
                           "the learning rate %g is not finite in float32; the weights were not "
                           "updated",
                           (long long)opt->step, p->name, wn, un, lr);
    }
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        be->ops.axpy(be, tb_tensor_numel(&p->var.value), (float)s->alpha[i], s->u + p->offset,
                     p->var.value.data);
    }
    return TB_OK;
}

static void lamb_destroy(tb_optimizer *opt)
{
    lamb_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->m);
    free(s->alpha);
    free(s);
}

const tb_optimizer_vtable tb_optim_lamb = {
    .info = {.name = "lamb",
             .summary = "LAMB: Adam direction plus decay, rescaled per layer by ||w|| / ||u||",
             .hparams = lamb_hparams,
             .n_hparams = (int)(sizeof lamb_hparams / sizeof *lamb_hparams)},
    .check = tb_adam_check, /* epsilon as Adam's */
    .init = lamb_init,
    .step = lamb_step,
    .graph_blocker = "per-layer trust ratios read weight and update norms back to the host "
                     "every step",
    .destroy = lamb_destroy,
    .no_preconditioner = "its per-layer trust ratio is computed from each step's update and "
                         "not kept, so its P is not known after the step",
};

/* sophia.c: Sophia with the Hutchinson estimator of the Hessian diagonal (Liu et al. 2023;
 * pytorch-optimizer's SophiaH update, its names and defaults).
 *
 * Every update_period steps, before the step (steps 1, 1 + k, 1 + 2k, ...), the trainer hands
 * the optimizer a gradient function (tb_optimizer_update_hessian) and the estimate
 *   h = mean over num_samples probes z (gaussian or rademacher) of z * (H z)
 * is formed with central-difference Hessian-vector products (src/diag/hvp.c). Per value, with
 * lr = learning_rate times the schedule's factor:
 *   w *= 1 - lr wd  (weight_decouple; 1 - wd with fixed_decay)   or  g += wd w  (L2)
 *   m  = beta1 m + (1 - beta1) g
 *   hm = beta2 hm + (1 - beta2) h          (estimate steps only; hm0 = 0)
 *   w -= lr clamp(m / max(hm, epsilon), -p, p)
 * Decay applies to weights and embeddings only. The state and the update live on the host
 * (the backend has no clamp-and-divide kernel): each step downloads the gradients and the
 * weights and uploads the weights. */
#include "optim/sophia.h"

#include "trainbench/sharpness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const tb_hparam_spec sophia_hparams[] = {
    {.name = "learning_rate", .default_value = 6e-2, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size (SophiaH lr)"},
    {.name = "beta1", .default_value = 0.96, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "gradient momentum decay (SophiaH betas[0])"},
    {.name = "beta2", .default_value = 0.99, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "Hessian-diagonal EMA decay (SophiaH betas[1])"},
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "weight decay (weights and embeddings)"},
    {.name = "weight_decouple", .default_value = 1.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: decoupled decay w *= 1 - lr wd; 0: L2 added to the gradient"},
    {.name = "fixed_decay", .default_value = 0.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: decoupled decay w *= 1 - wd, not scaled by lr"},
    {.name = "p", .default_value = 1e-2, .min = 0.0, .max = 1e6,
     .help = "clip: largest |entry| of m / max(hm, epsilon) (Sophia's rho)"},
    {.name = "update_period", .default_value = 10, .min = 1, .max = 1e9,
     .help = "steps between Hessian estimates, integer"},
    {.name = "num_samples", .default_value = 1, .min = 1, .max = 100,
     .help = "Hutchinson probes per estimate, integer"},
    {.name = "hessian_distribution", .default_value = 0, .min = 0, .max = 1, .is_flag = true,
     .help = "probe distribution: 0 gaussian, 1 rademacher"},
    {.name = "epsilon", .default_value = 1e-12, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "floor of the Hessian EMA in the denominator (SophiaH eps)"},
};

typedef struct sophia_state {
    int64_t numel, dim;
    float *m, *hm, *h;    /* host [numel]: momentum, Hessian EMA, the latest estimate */
    float *w, *g;         /* host [numel]: weights and gradients of the step */
    float *z, *hz;        /* host [dim * num_samples], [dim]: probes and products */
    bool fresh;           /* h holds an estimate the next step has not used */
} sophia_state;

static tb_status sophia_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                              tb_error *err)
{
    (void)given;
    const char *ints[] = {"update_period", "num_samples"};
    for (int i = 0; i < 2; i++) {
        double v = tb_hparams_get(hp, ints[i], 1);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    return tb_opt_check_guard(hp, algorithm, "epsilon",
                              "m / max(hm, epsilon) would be 0/0 = NaN where the gradient and "
                              "the Hessian estimate are 0",
                              err);
}

static void sophia_destroy(tb_optimizer *opt)
{
    sophia_state *s = opt->state;
    if (!s) return;
    free(s->m);
    free(s->z);
    free(s->hz);
    free(s);
}

static tb_status sophia_init(tb_optimizer *opt, tb_error *err)
{
    sophia_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "sophia: cannot allocate its state");
    opt->state = s;
    s->numel = tb_params_numel(opt->params);
    s->dim = tb_params_trainable(opt->params);
    int samples = (int)tb_opt_hp(opt, "num_samples");
    s->m = calloc((size_t)(5 * s->numel + 1), sizeof(float));
    s->z = malloc((size_t)(s->dim * samples + 1) * sizeof(float));
    s->hz = malloc((size_t)(s->dim + 1) * sizeof(float));
    if (!s->m || !s->z || !s->hz)
        return tb_fail(err, TB_ERR_NOMEM, "sophia: cannot allocate state for %lld values",
                       (long long)s->numel);
    s->hm = s->m + s->numel;
    s->h = s->hm + s->numel;
    s->w = s->h + s->numel;
    s->g = s->w + s->numel;
    return TB_OK;
}

static bool sophia_wants_hessian(const tb_optimizer *opt)
{
    return opt->step % (int64_t)tb_opt_hp(opt, "update_period") == 0;
}

/* The parameter holding trainable value k (vectors skip the flat buffers' padding). */
static const tb_param *param_of_value(tb_params *params, int64_t k)
{
    for (int i = 0; i < tb_params_count(params); i++) {
        const tb_param *p = tb_params_get(params, i);
        int64_t n = tb_tensor_numel(&p->var.value);
        if (k < n) return p;
        k -= n;
    }
    return NULL;
}

tb_status tb_sophia_update_hessian_probes(tb_optimizer *opt, tb_grad_fn grad, void *user,
                                          const float *probes, tb_error *err)
{
    sophia_state *s = opt->state;
    const int samples = (int)tb_opt_hp(opt, "num_samples");
    const long long step = (long long)opt->step + 1;
    tb_hvp *h = NULL;
    tb_status st = tb_hvp_begin(opt->params, grad, user, 0.0, &h, err);
    if (st == TB_ERR_NUMERIC || st == TB_ERR_INVALID)
        return tb_error_prefix(err, "sophia: step %lld: Hessian estimate", step);
    if (st != TB_OK) return st;
    memset(s->h, 0, (size_t)s->numel * sizeof(float));
    double *acc = calloc((size_t)s->dim + 1, sizeof *acc);
    if (!acc) {
        tb_hvp_end(h);
        return tb_fail(err, TB_ERR_NOMEM, "sophia: cannot allocate its estimate");
    }
    for (int j = 0; j < samples && st == TB_OK; j++) {
        const float *z = probes + (int64_t)j * s->dim;
        st = tb_hvp_apply(h, z, s->hz, err);
        for (int64_t k = 0; st == TB_OK && k < s->dim; k++)
            acc[k] += (double)z[k] * s->hz[k] / samples;
    }
    tb_hvp_end(h);
    if (st != TB_OK) {
        free(acc);
        return st == TB_ERR_NUMERIC
                   ? tb_error_prefix(err, "sophia: step %lld: Hessian estimate", step)
                   : st;
    }
    int64_t k = 0;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        const tb_param *p = tb_params_get(opt->params, i);
        for (int64_t e = 0; e < tb_tensor_numel(&p->var.value); e++, k++)
            s->h[p->offset + e] = (float)acc[k];
    }
    for (k = 0; k < s->dim; k++)
        if (!isfinite((float)acc[k])) {
            const tb_param *p = param_of_value(opt->params, k);
            double bad = acc[k];
            free(acc);
            return tb_fail(err, TB_ERR_NUMERIC,
                           "sophia: step %lld: the Hessian-diagonal estimate of '%s' is not "
                           "finite in float32 (%g); the update was not applied",
                           step, p ? p->name : "?", bad);
        }
    free(acc);
    s->fresh = true;
    return TB_OK;
}

/* Draws num_samples probes of the configured distribution from rng. */
static tb_status sophia_update_hessian(tb_optimizer *opt, tb_grad_fn grad, void *user,
                                       tb_rng *rng, tb_error *err)
{
    sophia_state *s = opt->state;
    const int64_t n = s->dim * (int64_t)tb_opt_hp(opt, "num_samples");
    const bool rademacher = tb_opt_hp(opt, "hessian_distribution") != 0.0;
    for (int64_t k = 0; k < n; k++)
        s->z[k] = rademacher ? ((tb_rng_u32(rng) & 1u) ? 1.0f : -1.0f)
                             : (float)tb_rng_normal(rng);
    return tb_sophia_update_hessian_probes(opt, grad, user, s->z, err);
}

static tb_status sophia_step(tb_optimizer *opt, double lr, tb_error *err)
{
    sophia_state *s = opt->state;
    const int64_t period = (int64_t)tb_opt_hp(opt, "update_period");
    if ((opt->step - 1) % period == 0 && !s->fresh)
        return tb_fail(err, TB_ERR_INVALID,
                       "sophia: step %lld needs a Hessian estimate (every update_period = %lld "
                       "steps from step 1) and none was given: the trainer must call "
                       "tb_optimizer_update_hessian when tb_optimizer_wants_hessian",
                       (long long)opt->step, (long long)period);
    tb_backend *be = opt->be;
    size_t bytes = (size_t)s->numel * sizeof(float);
    tb_backend_download(be, s->w, tb_params_values(opt->params), bytes);
    tb_backend_download(be, s->g, tb_params_grads(opt->params), bytes);
    const float b1 = (float)tb_opt_hp(opt, "beta1"), b2 = (float)tb_opt_hp(opt, "beta2");
    const float omb1 = (float)(1.0 - tb_opt_hp(opt, "beta1"));
    const float omb2 = (float)(1.0 - tb_opt_hp(opt, "beta2"));
    const float eps = (float)tb_opt_hp(opt, "epsilon"), clip = (float)tb_opt_hp(opt, "p");
    const double wd = tb_opt_hp(opt, "weight_decay");
    const bool decouple = tb_opt_hp(opt, "weight_decouple") != 0.0;
    const float decay = (float)(1.0 - wd * (tb_opt_hp(opt, "fixed_decay") != 0.0 ? 1.0 : lr));
    const float lr_f = (float)lr;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        const tb_param *p = tb_params_get(opt->params, i);
        const bool decays = wd != 0.0 && tb_param_decays(p->kind);
        for (int64_t e = 0, o = p->offset; e < tb_tensor_numel(&p->var.value); e++, o++) {
            float g = s->g[o], w = s->w[o];
            if (decays && decouple) w *= decay;
            if (decays && !decouple) g += (float)wd * w;
            s->m[o] = b1 * s->m[o] + omb1 * g;
            if (s->fresh) s->hm[o] = b2 * s->hm[o] + omb2 * s->h[o];
            float u = s->m[o] / fmaxf(s->hm[o], eps);
            u = fminf(fmaxf(u, -clip), clip);
            s->w[o] = w - lr_f * u;
        }
    }
    s->fresh = false;
    tb_backend_upload(be, tb_params_values(opt->params), s->w, bytes);
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_sophia = {
    .info = {.name = "sophia",
             .summary = "SophiaH: momentum over a clipped Hutchinson Hessian-diagonal EMA",
             .hparams = sophia_hparams,
             .n_hparams = (int)(sizeof sophia_hparams / sizeof *sophia_hparams)},
    .check = sophia_check,
    .init = sophia_init,
    .step = sophia_step,
    .graph_blocker = "its Hessian estimates run extra gradient evaluations and its update runs "
                     "on the host",
    .destroy = sophia_destroy,
    .wants_hessian = sophia_wants_hessian,
    .update_hessian = sophia_update_hessian,
    .no_preconditioner = "its step is clipped per value (clamp(m / max(hm, eps), -p, p)), so "
                         "no frozen diagonal P describes it",
};

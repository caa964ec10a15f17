/* sharpness.c: the sharpness lambda_1(H) and the preconditioned sharpness lambda_1(P^-1 H) at
 * the current parameters (see trainbench/sharpness.h).
 *
 * P^-1 H is not symmetric, but D H D with D = P^-1/2 is, and has the same eigenvalues
 * (D H D = D^-1 (P^-1 H) D), so Lanczos runs on v -> D H (D v). P is read from the optimizer
 * before any gradient is evaluated, so a measurement that cannot be made touches nothing. */
#include "trainbench/sharpness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tb_sharpness_config tb_sharpness_config_default(void)
{
    tb_sharpness_config c = {.iterations = TB_SHARPNESS_DEFAULT_ITERS, .preconditioned = true};
    return c;
}

/* The operator Lanczos sees: H, or D H D when d is set. */
typedef struct op_ctx {
    tb_hvp *hvp;
    const float *d; /* [dim] P^-1/2, or NULL */
    float *tmp;     /* [dim] */
} op_ctx;

static tb_status apply_op(void *user, const float *x, float *y, tb_error *err)
{
    op_ctx *c = user;
    if (!c->d) return tb_hvp_apply(c->hvp, x, y, err);
    int64_t n = tb_hvp_dim(c->hvp);
    for (int64_t i = 0; i < n; i++) c->tmp[i] = c->d[i] * x[i];
    tb_status st = tb_hvp_apply(c->hvp, c->tmp, y, err);
    if (st == TB_OK)
        for (int64_t i = 0; i < n; i++) y[i] *= c->d[i];
    return st;
}

/* D = P^-1/2 over the trainable values (the flat buffers' order, padding left out) into d;
 * *identity says whether P is 1 everywhere. */
static tb_status scaling(tb_params *params, const tb_optimizer *opt, float *d, bool *identity,
                         tb_error *err)
{
    float *p = malloc((size_t)tb_params_numel(params) * sizeof *p);
    if (!p) return tb_fail(err, TB_ERR_NOMEM, "sharpness: cannot allocate the preconditioner");
    tb_status st = tb_optimizer_preconditioner(opt, p, err);
    *identity = true;
    int64_t k = 0;
    for (int i = 0; st == TB_OK && i < tb_params_count(params); i++) {
        const tb_param *prm = tb_params_get(params, i);
        for (int64_t j = 0; j < tb_tensor_numel(&prm->var.value); j++, k++) {
            float v = p[prm->offset + j];
            if (!(v > 0.0f && isfinite(v))) {
                st = tb_fail(err, TB_ERR_NUMERIC,
                             "sharpness: the preconditioner of %s is %g at value %lld (not "
                             "finite and positive)",
                             prm->name, (double)v, (long long)j);
                break;
            }
            *identity = *identity && v == 1.0f;
            d[k] = (float)(1.0 / sqrt((double)v));
        }
    }
    free(p);
    return st;
}

/* Lanczos on c's operator: its largest and smallest Ritz values and the largest's residual. */
static tb_status extremes(int64_t n, op_ctx *c, const tb_sharpness_config *cfg, double *max,
                          double *min, double *residual, int *iterations, tb_error *err)
{
    tb_lanczos_result *r = malloc(sizeof *r);
    if (!r) return tb_fail(err, TB_ERR_NOMEM, "sharpness: cannot allocate Lanczos' result");
    tb_status st = tb_lanczos(n, apply_op, c, cfg->iterations, cfg->seed, r, err);
    if (st == TB_OK) {
        *max = r->ritz[0];
        *min = r->ritz[r->iterations - 1];
        *residual = r->residual[0];
        *iterations = r->iterations;
    }
    free(r);
    return st;
}

tb_status tb_sharpness_measure(tb_params *params, tb_grad_fn grad, void *user,
                               const tb_optimizer *opt, double lr_scale,
                               const tb_sharpness_config *cfg, tb_sharpness *out, tb_error *err)
{
    if (!params || !grad || !cfg || !out)
        return tb_fail(err, TB_ERR_INVALID, "sharpness: %s is NULL",
                       !params ? "params" : !grad ? "the gradient function"
                                          : !cfg  ? "the configuration"
                                                  : "out");
    if (cfg->iterations < 1 || cfg->iterations > TB_LANCZOS_MAX_ITERS)
        return tb_fail(err, TB_ERR_INVALID, "sharpness: iterations must be 1 to %d, got %d",
                       TB_LANCZOS_MAX_ITERS, cfg->iterations);
    if (cfg->preconditioned && !opt)
        return tb_fail(err, TB_ERR_INVALID,
                       "sharpness: the preconditioned sharpness needs the optimizer (NULL)");
    memset(out, 0, sizeof *out);
    out->learning_rate = out->threshold = NAN;
    out->pre_max = out->pre_min = out->pre_residual = NAN;
    if (opt) {
        tb_error e = {0};
        tb_status st = tb_optimizer_stability_threshold(opt, lr_scale, &out->threshold, &e);
        if (st == TB_ERR_INVALID) {
            *err = e;
            return st;
        }
        out->step = tb_optimizer_steps(opt);
        out->learning_rate = tb_optimizer_hparam(opt, "learning_rate") * lr_scale;
    }
    int64_t n = tb_params_trainable(params);
    op_ctx c = {0};
    float *d = cfg->preconditioned ? malloc(2 * (size_t)n * sizeof *d) : NULL;
    if (cfg->preconditioned && !d)
        return tb_fail(err, TB_ERR_NOMEM, "sharpness: cannot allocate 2 x %lld values",
                       (long long)n);
    bool identity = true;
    tb_status st = cfg->preconditioned ? scaling(params, opt, d, &identity, err) : TB_OK;
    if (st == TB_OK) st = tb_hvp_begin(params, grad, user, cfg->fd_scale, &c.hvp, err);
    if (st == TB_OK)
        st = extremes(n, &c, cfg, &out->lambda_max, &out->lambda_min, &out->lambda_residual,
                      &out->iterations, err);
    if (st == TB_OK && cfg->preconditioned && identity) { /* D H D = H */
        out->pre_max = out->lambda_max;
        out->pre_min = out->lambda_min;
        out->pre_residual = out->lambda_residual;
    } else if (st == TB_OK && cfg->preconditioned) {
        c.d = d;
        c.tmp = d + n;
        st = extremes(n, &c, cfg, &out->pre_max, &out->pre_min, &out->pre_residual,
                      &out->iterations, err);
    }
    out->grad_evals = tb_hvp_grad_evals(c.hvp);
    out->step_size = tb_hvp_step(c.hvp);
    tb_hvp_end(c.hvp);
    free(d);
    return st;
}

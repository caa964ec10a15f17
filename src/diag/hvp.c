/* hvp.c: Hessian-vector products by central differences of gradients (see
 * trainbench/sharpness.h):  H v ~ ||v|| (g(theta + r u) - g(theta - r u)) / (2 r), u = v/||v||.
 *
 * The parameters live on the backend; a product downloads nothing but the two gradients:
 * theta and the gradients found at the start are kept on the host, each perturbed theta is
 * built there and uploaded, and theta itself is uploaded back after each product (and the
 * gradients at the end), so the parameters are bit for bit what they were. Vectors hold the
 * trainable values only; the flat buffers pad every tensor, and the padding is left alone. */
#include "trainbench/sharpness.h"

#include <math.h>
#include <stdlib.h>

struct tb_hvp {
    tb_params *params;
    tb_backend *be;
    tb_grad_fn grad;
    void *user;
    int64_t numel, dim; /* flat buffers (padded), vectors (trainable values) */
    float *theta0;      /* [numel] the parameters at the start */
    float *grad0;       /* [numel] the gradients at the start */
    float *work;        /* [numel] a perturbed theta */
    float *gp, *gm;     /* [numel] gradients at theta + r u and theta - r u */
    int64_t *at;        /* [dim] the flat index of each vector element */
    double r;
    int64_t evals;
};

int64_t tb_hvp_dim(const tb_hvp *h) { return h ? h->dim : 0; }
double tb_hvp_step(const tb_hvp *h) { return h ? h->r : NAN; }
int64_t tb_hvp_grad_evals(const tb_hvp *h) { return h ? h->evals : 0; }

void tb_hvp_end(tb_hvp *h)
{
    if (!h) return;
    size_t bytes = (size_t)h->numel * sizeof(float);
    if (h->theta0) tb_backend_upload(h->be, tb_params_values(h->params), h->theta0, bytes);
    if (h->grad0) tb_backend_upload(h->be, tb_params_grads(h->params), h->grad0, bytes);
    free(h->theta0);
    free(h->grad0);
    free(h->work);
    free(h->gp);
    free(h->gm);
    free(h->at);
    free(h);
}

tb_status tb_hvp_begin(tb_params *params, tb_grad_fn grad, void *user, double fd_scale,
                       tb_hvp **out, tb_error *err)
{
    if (!params || !grad || !out)
        return tb_fail(err, TB_ERR_INVALID, "hvp: %s is NULL",
                       !params ? "params" : !grad ? "the gradient function" : "out");
    if (!(fd_scale >= 0.0 && isfinite(fd_scale)))
        return tb_fail(err, TB_ERR_INVALID,
                       "hvp: the relative step %g is not a finite value >= 0 (0: the default)",
                       fd_scale);
    if (!tb_params_values(params) || tb_params_trainable(params) < 1)
        return tb_fail(err, TB_ERR_INVALID, "hvp: the parameters are not finalized or empty");
    tb_hvp *h = calloc(1, sizeof *h);
    if (!h) return tb_fail(err, TB_ERR_NOMEM, "hvp: cannot allocate its state");
    h->params = params;
    h->be = tb_params_backend(params);
    h->grad = grad;
    h->user = user;
    h->numel = tb_params_numel(params);
    h->dim = tb_params_trainable(params);
    size_t bytes = (size_t)h->numel * sizeof(float);
    float *bufs[5];
    for (int i = 0; i < 5; i++) bufs[i] = malloc(bytes);
    h->work = bufs[2];
    h->gp = bufs[3];
    h->gm = bufs[4];
    h->at = malloc((size_t)h->dim * sizeof *h->at);
    if (!bufs[0] || !bufs[1] || !bufs[2] || !bufs[3] || !bufs[4] || !h->at) {
        free(bufs[0]);
        free(bufs[1]);
        tb_hvp_end(h); /* theta0 and grad0 are not set: nothing is uploaded */
        return tb_fail(err, TB_ERR_NOMEM, "hvp: cannot allocate 5 x %lld values",
                       (long long)h->numel);
    }
    tb_backend_download(h->be, bufs[0], tb_params_values(params), bytes);
    tb_backend_download(h->be, bufs[1], tb_params_grads(params), bytes);
    h->theta0 = bufs[0];
    h->grad0 = bufs[1];
    int64_t k = 0;
    for (int i = 0; i < tb_params_count(params); i++) {
        const tb_param *p = tb_params_get(params, i);
        for (int64_t j = 0; j < tb_tensor_numel(&p->var.value); j++) h->at[k++] = p->offset + j;
    }
    double ss = 0;
    for (k = 0; k < h->dim; k++) ss += (double)h->theta0[h->at[k]] * h->theta0[h->at[k]];
    if (!isfinite(ss)) {
        tb_hvp_end(h);
        return tb_fail(err, TB_ERR_NUMERIC, "hvp: the parameters are not finite");
    }
    h->r = (fd_scale > 0 ? fd_scale : TB_HVP_DEFAULT_SCALE) * fmax(sqrt(ss), 1.0);
    *out = h;
    return TB_OK;
}

/* The name of the parameter holding flat value i. */
static const char *param_at(const tb_hvp *h, int64_t i)
{
    const char *name = "?";
    for (int j = 0; j < tb_params_count(h->params); j++) {
        const tb_param *p = tb_params_get(h->params, j);
        if (p->offset <= i) name = p->name;
    }
    return name;
}

/* The gradient at theta0 + s v (v packed) into g (flat); theta0 is uploaded back after. */
static tb_status grad_at(tb_hvp *h, double s, const float *v, float *g, tb_error *err)
{
    size_t bytes = (size_t)h->numel * sizeof(float);
    for (int64_t i = 0; i < h->numel; i++) h->work[i] = h->theta0[i];
    for (int64_t k = 0; k < h->dim; k++)
        h->work[h->at[k]] = (float)((double)h->theta0[h->at[k]] + s * v[k]);
    float *values = tb_params_values(h->params);
    tb_backend_upload(h->be, values, h->work, bytes);
    tb_status st = h->grad(h->user, err);
    h->evals++;
    if (st == TB_OK) tb_backend_download(h->be, g, tb_params_grads(h->params), bytes);
    tb_backend_upload(h->be, values, h->theta0, bytes);
    return st;
}

tb_status tb_hvp_apply(tb_hvp *h, const float *v, float *hv, tb_error *err)
{
    if (!h || !v || !hv)
        return tb_fail(err, TB_ERR_INVALID, "hvp_apply: %s is NULL",
                       !h ? "the product's state" : !v ? "v" : "hv");
    double vv = 0;
    for (int64_t k = 0; k < h->dim; k++) vv += (double)v[k] * v[k];
    if (!isfinite(vv))
        return tb_fail(err, TB_ERR_NUMERIC, "hvp: the vector is not finite");
    double norm = sqrt(vv);
    if (norm == 0) {
        for (int64_t k = 0; k < h->dim; k++) hv[k] = 0;
        return TB_OK;
    }
    double s = h->r / norm; /* theta +- s v = theta +- r u */
    tb_status st = grad_at(h, s, v, h->gp, err);
    if (st == TB_OK) st = grad_at(h, -s, v, h->gm, err);
    if (st != TB_OK) return st;
    for (int64_t k = 0; k < h->dim; k++) {
        double d = ((double)h->gp[h->at[k]] - h->gm[h->at[k]]) / (2.0 * s);
        if (!isfinite(d))
            return tb_fail(err, TB_ERR_NUMERIC,
                           "hvp: the gradient of '%s' at theta +- %g u is not finite (value "
                           "%lld of %lld)",
                           param_at(h, h->at[k]), h->r, (long long)k, (long long)h->dim);
        hv[k] = (float)d;
    }
    return TB_OK;
}

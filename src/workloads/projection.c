/* projection.c: dropout noise projected into the input space (docs/DROPOUT.md, "The
 * projection"): x* minimising ||h(x*) - m * h(x)||^2 by gradient steps from x* = x. */
#include "trainbench/dropout.h"

#include "workloads/workload_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 10

typedef struct proj {
    tb_workload *wl;
    tb_tape *tape;
    int64_t n, in, hid; /* examples, inputs and hidden units per example */
    int64_t xshape[4];
    int xdim;
    float *t, *g;       /* the target t = m * h(x) (n x hid), the input gradient (n x in) */
    float *v, *best;    /* the momentum and the best iterate (n x in) */
    double t_sq;        /* ||t||^2 */
} proj;

static tb_var *upload(proj *p, const float *x, bool grad, tb_error *err)
{
    tb_var *v = tb_tape_new_var(p->tape, TB_F32, p->xdim, p->xshape, grad);
    if (!v || tb_tensor_upload(&v->value, x, err) != TB_OK) return NULL;
    return v;
}

static tb_status tape_status(proj *p, tb_error *err)
{
    const tb_error *e = tb_tape_error(p->tape);
    return tb_fail(err, e->status != TB_OK ? e->status : TB_ERR_INTERNAL, "projection: %s",
                   e->message);
}

/* t = m * h(x), m drawn from rng at the rate (training-mode dropout on the hidden layer) */
static tb_status draw_target(proj *p, const float *x, float rate, tb_rng *rng, tb_error *err)
{
    tb_tape_reset(p->tape);
    tb_tape_set_training(p->tape, true);
    tb_var *xv = upload(p, x, false, err);
    if (!xv) return err->status ? err->status : tape_status(p, err);
    tb_var *t = tb_op_dropout(p->tape, p->wl->vt->hidden(p->wl, p->tape, xv), rate, rng);
    if (!t) return tape_status(p, err);
    tb_status st = tb_tensor_download(&t->value, p->t, err);
    p->t_sq = 0;
    for (int64_t i = 0; i < p->n * p->hid; i++) p->t_sq += (double)p->t[i] * p->t[i];
    return st;
}

/* the relative error at xs, and its gradient (per-example squared error) into p->g */
static tb_status error_at(proj *p, const float *xs, double *e, tb_error *err)
{
    tb_tape_reset(p->tape);
    tb_var *xv = upload(p, xs, true, err);
    if (!xv) return err->status ? err->status : tape_status(p, err);
    tb_var *h = p->wl->vt->hidden(p->wl, p->tape, xv);
    tb_var *tv = h ? tb_tape_new_var(p->tape, TB_F32, 2, (int64_t[]){p->n, p->hid}, false) : NULL;
    if (tv && tb_tensor_upload(&tv->value, p->t, err) != TB_OK) return err->status;
    tb_var *loss = tv ? tb_op_mse(p->tape, h, tv) : NULL; /* mean over n x hid */
    if (!loss || tb_tape_backward(p->tape, loss) != TB_OK) return tape_status(p, err);
    float l;
    tb_status st = tb_tensor_download(&loss->value, &l, err);
    if (st == TB_OK) st = tb_tensor_download(&xv->grad, p->g, err);
    *e = (double)l * (double)(p->n * p->hid) / (p->t_sq > 0 ? p->t_sq : 1.0);
    return st;
}

static tb_status check(const tb_workload *wl, int64_t n, const tb_projection_config *c,
                       tb_error *err)
{
    if (!wl->vt->hidden)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "%s has no dropout projection (the fmnist_mlp "
                       "family has)", wl->vt->info.id);
    if (n < 1) return tb_fail(err, TB_ERR_INVALID, "projection: %lld examples", (long long)n);
    if (!(c->rate >= 0.0f && c->rate < 1.0f))
        return tb_fail(err, TB_ERR_INVALID, "projection: rate = %g is outside [0, 1)",
                       (double)c->rate);
    if (c->max_steps < 0 || !(c->step_size >= 0) || !(c->tol >= 0) || !(c->target_error >= 0))
        return tb_fail(err, TB_ERR_INVALID, "projection: max_steps, step_size, tol and "
                       "target_error must not be negative");
    if (!(c->momentum >= 0 && c->momentum < 1))
        return tb_fail(err, TB_ERR_INVALID, "projection: momentum = %g is outside [0, 1)",
                       c->momentum);
    return TB_OK;
}

/* Nesterov momentum steps from x_out = x (PyTorch's form: v = mu v + g, z -= eta (g + mu v))
 * until the error reaches the goal or its best value stalls; x_out ends at the best iterate. */
static tb_status descend(proj *p, const tb_projection_config *c, float *xs,
                         tb_projection_report *r, tb_error *err)
{
    int max = c->max_steps ? c->max_steps : 500;
    /* the gradient of the mean is that of the per-example sum over n * hid: eta rescales */
    double eta = (c->step_size > 0 ? c->step_size : 0.3) * (double)(p->n * p->hid) / p->n;
    double mu = c->momentum > 0 ? c->momentum : 0.0;
    double tol = c->tol > 0 ? c->tol : 1e-2, best_hist[WINDOW] = {0};
    double goal = c->target_error > 0 ? c->target_error : 0.01;
    const int64_t len = p->n * p->in;
    double e;
    tb_status st = error_at(p, xs, &e, err);
    r->initial_error = r->final_error = e;
    memcpy(p->best, xs, (size_t)len * sizeof *xs);
    memset(p->v, 0, (size_t)len * sizeof *p->v);
    for (int k = 0; st == TB_OK && isfinite(e) && k < max && !r->converged; k++) {
        best_hist[k % WINDOW] = r->final_error;
        for (int64_t i = 0; i < len; i++) {
            float g = p->g[i];
            p->v[i] = (float)(mu * p->v[i]) + g;
            xs[i] -= (float)(eta * (g + mu * p->v[i]));
        }
        st = error_at(p, xs, &e, err);
        r->steps = k + 1;
        if (e < r->final_error) { /* the best so far: what is returned */
            r->final_error = e;
            memcpy(p->best, xs, (size_t)len * sizeof *xs);
        }
        double old = best_hist[(k + 1) % WINDOW]; /* the best WINDOW steps ago */
        r->converged = r->final_error <= goal ||
                       (k + 1 >= WINDOW && old - r->final_error <= tol * old &&
                        r->final_error < r->initial_error);
    }
    memcpy(xs, p->best, (size_t)len * sizeof *xs);
    if (st != TB_OK) return st;
    if (!r->converged)
        return tb_fail(err, TB_ERR_NUMERIC, "projection did not converge: %d steps, relative "
                       "error %.4g -> %.4g (not for use)", r->steps, r->initial_error,
                       isfinite(e) ? r->final_error : e);
    return TB_OK;
}

/* Whether each parameter takes a gradient: off while projecting (only the input's gradient is
 * wanted, so the first layer's weight-gradient product is skipped and the model's gradients
 * stay as they were), restored after. */
static bool *freeze_params(tb_params *params)
{
    int n = tb_params_count(params);
    bool *was = malloc((size_t)(n > 0 ? n : 1) * sizeof *was);
    for (int i = 0; was && i < n; i++) {
        tb_var *v = &tb_params_get(params, i)->var;
        was[i] = v->requires_grad;
        v->requires_grad = false;
    }
    return was;
}

static void thaw_params(tb_params *params, const bool *was)
{
    for (int i = 0; was && i < tb_params_count(params); i++)
        tb_params_get(params, i)->var.requires_grad = was[i];
}

tb_status tb_dropout_project(tb_workload *wl, tb_tape *tape, int64_t n, const float *x,
                             const tb_projection_config *config, tb_rng *rng, float *x_out,
                             tb_projection_report *report, tb_error *err)
{
    if (!wl || !tape || !x || !config || !rng || !x_out || !report)
        return tb_fail(err, TB_ERR_INVALID, "dropout_project: an argument is NULL");
    memset(report, 0, sizeof *report);
    tb_status st = check(wl, n, config, err);
    if (st != TB_OK) return st;
    const tb_example_layout *l = &wl->src.layout;
    proj p = {.wl = wl, .tape = tape, .n = n, .in = l->x_shape[0] * l->x_shape[1] * l->x_shape[2],
              .hid = wl->layers[0].linear->w->value.shape[0], .xdim = 4,
              .xshape = {n, l->x_shape[0], l->x_shape[1], l->x_shape[2]}};
    p.t = malloc((size_t)(n * p.hid) * sizeof *p.t);
    p.g = malloc((size_t)(n * p.in) * sizeof *p.g);
    p.v = malloc((size_t)(n * p.in) * sizeof *p.v);
    p.best = malloc((size_t)(n * p.in) * sizeof *p.best);
    bool *frozen = freeze_params(wl->params);
    if (!p.t || !p.g || !p.v || !p.best || !frozen) st = tb_fail(err, TB_ERR_NOMEM, "projection: no host memory");
    if (st == TB_OK) st = draw_target(&p, x, config->rate, rng, err);
    memcpy(x_out, x, (size_t)(n * p.in) * sizeof *x_out);
    if (st == TB_OK) st = descend(&p, config, x_out, report, err);
    tb_tape_reset(tape);
    thaw_params(wl->params, frozen);
    free(frozen);
    free(p.t);
    free(p.g);
    free(p.v);
    free(p.best);
    return st;
}

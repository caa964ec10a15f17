/* kfac.c: K-FAC (Martens & Grosse 2015; KFC for convolutions, Grosse & Martens 2016) and
 * EKFAC (George et al. 2018) for the dense and convolution layers attached with
 * tb_optimizer_set_layers (trainbench/curvature.h); momentum SGD for every other parameter.
 *
 * Step t (1-based) with W-bar = [W, b] and its gradient dW [dout, din]:
 *   statistics (every cov_interval steps; kfac_stats.c): EMAs of A and G from a sampled-label
 *     backward (or the training one with empirical_fisher = 1);
 *   K-FAC, every inv_interval steps (host, double): with pi = sqrt((tr A/din)/(tr G/dout)),
 *     PA = (A + pi sqrt(damping) I)^-1, PG = (G + sqrt(damping)/pi I)^-1;
 *     each step: delta = PG dW PA                       (backend gemm)
 *   EKFAC, every inv_interval steps (host): A = U_A diag(l_A) U_A^T, G likewise, and
 *     S = l_G l_A^T; every scale_interval steps in between: S <- EMA of per-example squared
 *     projections; each step: delta = U_G [(U_G^T dW U_A) / (S + damping)] U_A^T
 *     (gemms on the backend, the element-wise division on the host);
 *   kl_clip c > 0: delta *= min(1, sqrt(c / (lr^2 sum_layers <delta, dW>)));
 *   then for every parameter v = mu v + d + wd w (wd on weights only), w -= lr v, with d the
 *   layer's delta or, for parameters of no attached layer, the plain gradient. */
#include "optim/kfac_impl.h"

#include "optim/kron.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KFAC_COMMON_HPARAMS                                                                        \
    {.name = "learning_rate", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,     \
     .help = "step size"},                                                                         \
    {.name = "momentum", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,           \
     .help = "heavy-ball momentum, in [0, 1)"},                                                    \
    {.name = "damping", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,           \
     .help = "Tikhonov damping lambda, > 0"},                                                      \
    {.name = "stat_decay", .default_value = 0.95, .min = 0.0, .max = 1.0, .max_open = true,        \
     .help = "EMA weight of the old statistics, in [0, 1)"},                                       \
    {.name = "cov_interval", .default_value = 10, .min = 1, .max = 1e9,                            \
     .help = "steps between factor statistics (T_cov), integer"},                                  \
    {.name = "inv_interval", .default_value = 100, .min = 1, .max = 1e9,                           \
     .help = "steps between inverses / eigenbases (T_inv), integer"},                              \
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,                         \
     .help = "L2 added to the preconditioned direction (weights only)"},                           \
    {.name = "kl_clip", .default_value = 1e-3, .min = 0.0, .max = 1e6,                             \
     .help = "KL clipping constant; 0 = off"},                                                     \
    {.name = "empirical_fisher", .default_value = 0.0, .min = 0.0, .max = 1.0, .is_flag = true,    \
     .help = "1: statistics from the training backward (empirical Fisher)"},                       \
    {.name = "max_factor_dim", .default_value = 4096, .min = 1, .max = 1e9,                        \
     .help = "largest factor side (a layer's inputs +1, or outputs); larger layers are refused, "  \
             "integer"}

static const tb_hparam_spec kfac_hparams[] = {KFAC_COMMON_HPARAMS};
static const tb_hparam_spec ekfac_hparams[] = {
    KFAC_COMMON_HPARAMS,
    {.name = "scale_interval", .default_value = 10, .min = 1, .max = 1e9,
     .help = "steps between updates of the eigenbasis scaling S (T_s), integer"},
};

static int64_t hp_int(const tb_optimizer *opt, const char *name)
{
    return (int64_t)tb_opt_hp(opt, name);
}

bool tb_kfac_is_cov_step(const tb_optimizer *opt, int64_t t)
{
    return (t - 1) % hp_int(opt, "cov_interval") == 0;
}
bool tb_kfac_is_inv_step(const tb_optimizer *opt, int64_t t)
{
    return (t - 1) % hp_int(opt, "inv_interval") == 0;
}
bool tb_kfac_is_scale_step(const tb_optimizer *opt, int64_t t)
{
    const tb_kfac_state *s = opt->state;
    return s->ekfac && (t - 1) % hp_int(opt, "scale_interval") == 0;
}

/* ---- lifetime ------------------------------------------------------------------------------- */

static tb_status kfac_init_common(tb_optimizer *opt, bool ekfac, tb_error *err)
{
    tb_kfac_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate state", opt->vt->info.name);
    opt->state = s;
    s->ekfac = ekfac;
    int64_t n = tb_params_numel(opt->params);
    s->dir = tb_backend_alloc(opt->be, (size_t)(n + 1) * sizeof(float));
    s->mom = tb_backend_alloc(opt->be, (size_t)(n + 1) * sizeof(float));
    s->dot = tb_backend_alloc(opt->be, sizeof(float));
    if (!s->dir || !s->mom || !s->dot)
        return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate momentum for %lld values",
                       opt->vt->info.name, (long long)n);
    opt->be->ops.fill(opt->be, s->mom, n, 0.0f);
    return TB_OK;
}

static tb_status kfac_init(tb_optimizer *opt, tb_error *err)
{
    return kfac_init_common(opt, false, err);
}
static tb_status ekfac_init(tb_optimizer *opt, tb_error *err)
{
    return kfac_init_common(opt, true, err);
}

static void free_layer(tb_backend *be, tb_kfac_layer *L)
{
    float *dev[] = {L->A, L->G, L->PA, L->PG, L->grad, L->tmp, L->delta};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) tb_backend_free(be, dev[i]);
    free(L->S);
    free(L->host);
}

static void kfac_destroy(tb_optimizer *opt)
{
    tb_kfac_state *s = opt->state;
    if (!s) return;
    for (int i = 0; i < s->n_layers; i++) free_layer(opt->be, &s->layers[i]);
    free(s->layers);
    tb_backend_free(opt->be, s->dir);
    tb_backend_free(opt->be, s->mom);
    tb_backend_free(opt->be, s->dot);
    free(s);
}

static tb_param *find_param(tb_params *params, const tb_var *v)
{
    for (int i = 0; v && i < tb_params_count(params); i++)
        if (&tb_params_get(params, i)->var == v) return tb_params_get(params, i);
    return NULL;
}

/* Validates and allocates every layer into a new array; attaches it only when all succeed,
 * so that a failed call leaves the optimizer as it was (nothing attached, nothing kept). */
static tb_status kfac_set_layers(tb_optimizer *opt, const tb_layer_ref *refs, int n,
                                 tb_error *err)
{
    tb_kfac_state *s = opt->state;
    const char *name = opt->vt->info.name;
    if (s->n_layers > 0 || opt->step > 0)
        return tb_fail(err, TB_ERR_INVALID, "%s: layers are set once, before the first step",
                       name);
    if (n < 1 || !refs) return tb_fail(err, TB_ERR_INVALID, "%s: no layers given", name);
    tb_kfac_layer *layers = calloc((size_t)n, sizeof *layers);
    if (!layers) return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate %d layers", name, n);
    tb_status st = TB_OK;
    int allocated = 0; /* layers[0, allocated) may hold memory */
    for (int i = 0; i < n && st == TB_OK; i++) {
        tb_kfac_layer *L = &layers[i];
        L->ref = refs[i];
        const tb_var *w = NULL, *b = NULL;
        if (refs[i].kind == TB_LAYER_LINEAR && refs[i].linear) {
            w = refs[i].linear->w;
            b = refs[i].linear->b;
        } else if (refs[i].kind == TB_LAYER_CONV && refs[i].conv) {
            w = refs[i].conv->w;
            b = refs[i].conv->b;
        } else {
            st = tb_fail(err, TB_ERR_INVALID, "%s: layer %d has an unknown kind or no layer",
                         name, i);
            break;
        }
        L->pw = find_param(opt->params, w);
        L->pb = b ? find_param(opt->params, b) : NULL;
        if (!L->pw || (b && !L->pb)) {
            st = tb_fail(err, TB_ERR_INVALID,
                         "%s: layer %d's parameters are not among the optimizer's", name, i);
            break;
        }
        for (int j = 0; j < i && st == TB_OK; j++)
            if (layers[j].pw == L->pw)
                st = tb_fail(err, TB_ERR_INVALID, "%s: layer '%s' is listed twice", name,
                             L->pw->name);
        if (st != TB_OK) break;
        const tb_tensor *wv = &w->value;
        L->dout = (int)wv->shape[0];
        L->in = (int)(tb_tensor_numel(wv) / wv->shape[0]);
        L->din = L->in + (L->pb ? 1 : 0);
        st = tb_kfac_check_layer(opt, L->pw->name, L->din, L->dout, err);
        if (st != TB_OK) break;
        allocated = i + 1;
        size_t dd = (size_t)L->dout * L->din * sizeof(float);
        size_t aa = (size_t)L->din * L->din * sizeof(float);
        size_t gg = (size_t)L->dout * L->dout * sizeof(float);
        L->A = tb_backend_alloc(opt->be, aa);
        L->PA = tb_backend_alloc(opt->be, aa);
        L->G = tb_backend_alloc(opt->be, gg);
        L->PG = tb_backend_alloc(opt->be, gg);
        L->grad = tb_backend_alloc(opt->be, dd);
        L->tmp = tb_backend_alloc(opt->be, dd);
        L->delta = tb_backend_alloc(opt->be, dd);
        L->host = malloc(dd);
        L->S = s->ekfac ? calloc(1, dd) : NULL;
        if (!L->A || !L->PA || !L->G || !L->PG || !L->grad || !L->tmp || !L->delta ||
            !L->host || (s->ekfac && !L->S))
            st = tb_fail(err, TB_ERR_NOMEM, "%s: layer '%s': cannot allocate factors (%d x %d)",
                         name, L->pw->name, L->din, L->dout);
    }
    if (st != TB_OK) {
        for (int i = 0; i < allocated; i++) free_layer(opt->be, &layers[i]);
        free(layers);
        return st;
    }
    s->layers = layers;
    s->n_layers = n;
    return TB_OK;
}

/* ---- statistics ------------------------------------------------------------------------------ */

/* Statistics step t needs: factors and/or EKFAC scaling (only between basis refreshes). */
static bool needs_factors(const tb_optimizer *opt, int64_t t) { return tb_kfac_is_cov_step(opt, t); }
static bool needs_scale(const tb_optimizer *opt, int64_t t)
{
    const tb_kfac_state *s = opt->state;
    return s->ekfac && s->n_layers > 0 && s->layers[0].have_precond &&
           tb_kfac_is_scale_step(opt, t) && !tb_kfac_is_inv_step(opt, t);
}

static tb_status stats_for_step(tb_optimizer *opt, int64_t t, tb_error *err)
{
    tb_kfac_state *s = opt->state;
    if (s->n_layers == 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: no layers attached (call tb_optimizer_set_layers first)",
                       opt->vt->info.name);
    bool f = needs_factors(opt, t), sc = needs_scale(opt, t);
    for (int i = 0; i < s->n_layers; i++) {
        tb_status st = tb_kfac_layer_stats(opt, &s->layers[i], f, sc, err);
        if (st != TB_OK) return st;
    }
    s->fisher_step = t;
    return TB_OK;
}

static bool kfac_wants_fisher(const tb_optimizer *opt)
{
    int64_t t = opt->step + 1;
    if (tb_opt_hp(opt, "empirical_fisher") != 0.0) return false;
    return needs_factors(opt, t) || needs_scale(opt, t);
}

static tb_status kfac_update_fisher(tb_optimizer *opt, tb_error *err)
{
    return stats_for_step(opt, opt->step + 1, err);
}

/* ---- inverses and eigenbases (host, double) -------------------------------------------------- */

static void to_double(const float *f, double *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
}
static void to_float(const double *d, float *f, int64_t n)
{
    for (int64_t i = 0; i < n; i++) f[i] = (float)d[i];
}

static tb_status refresh_layer(tb_optimizer *opt, tb_kfac_layer *L, tb_error *err)
{
    tb_kfac_state *s = opt->state;
    int da = L->din, dg = L->dout;
    size_t na = (size_t)da * da, ng = (size_t)dg * dg, nmax = na > ng ? na : ng;
    double *a = malloc(na * sizeof *a), *g = malloc(ng * sizeof *g);
    double *la = malloc((size_t)da * sizeof *la), *lg = malloc((size_t)dg * sizeof *lg);
    float *f = malloc(nmax * sizeof *f);
    tb_status st = TB_OK;
    if (!a || !g || !la || !lg || !f) {
        st = tb_fail(err, TB_ERR_NOMEM, "%s: layer '%s': no host memory for the factors",
                     opt->vt->info.name, L->pw->name);
        goto done;
    }
    tb_backend_download(opt->be, f, L->A, na * sizeof *f);
    to_double(f, a, (int64_t)na);
    tb_backend_download(opt->be, f, L->G, ng * sizeof *f);
    to_double(f, g, (int64_t)ng);
    char what[192];
    if (!s->ekfac) {
        double lambda = tb_opt_hp(opt, "damping"), pi = tb_kron_pi(da, a, dg, g);
        /* the message names the user's damping, not only the factored pi sqrt(damping) */
        snprintf(what, sizeof what, "%s: damping = %g: layer '%s' factor A",
                 opt->vt->info.name, lambda, L->pw->name);
        st = tb_kron_damped_inverse(da, a, pi * sqrt(lambda), a, what, err);
        if (st != TB_OK) goto done;
        snprintf(what, sizeof what, "%s: damping = %g: layer '%s' factor G",
                 opt->vt->info.name, lambda, L->pw->name);
        st = tb_kron_damped_inverse(dg, g, sqrt(lambda) / pi, g, what, err);
        if (st != TB_OK) goto done;
    } else {
        snprintf(what, sizeof what, "%s: layer '%s' factor A", opt->vt->info.name, L->pw->name);
        st = tb_kron_eigh(da, a, la, what, err);
        if (st != TB_OK) goto done;
        snprintf(what, sizeof what, "%s: layer '%s' factor G", opt->vt->info.name, L->pw->name);
        st = tb_kron_eigh(dg, g, lg, what, err);
        if (st != TB_OK) goto done;
        for (int i = 0; i < dg; i++)
            for (int j = 0; j < da; j++)
                L->S[(size_t)i * da + j] = (float)(fmax(lg[i], 0.0) * fmax(la[j], 0.0));
    }
    to_float(a, f, (int64_t)na);
    tb_backend_upload(opt->be, L->PA, f, na * sizeof *f);
    to_float(g, f, (int64_t)ng);
    tb_backend_upload(opt->be, L->PG, f, ng * sizeof *f);
    L->have_precond = true;
done:
    free(a);
    free(g);
    free(la);
    free(lg);
    free(f);
    return st;
}

/* ---- the step ----------------------------------------------------------------------------------- */

/* grad = [dW, db] (as the [dout, din] matrix W-bar), or the reverse into dst. */
static void pack_grad(tb_backend *be, const tb_kfac_layer *L, const float *w, const float *b,
                      float *wbar)
{
    int64_t shape[2] = {L->dout, L->in}, ds[2] = {L->din, 1}, ss[2] = {L->in, 1};
    be->ops.strided_copy(be, 2, shape, wbar, ds, w, ss, false);
    if (b) {
        int64_t bs[1] = {L->dout}, bds[1] = {L->din}, bss[1] = {1};
        be->ops.strided_copy(be, 1, bs, wbar + L->in, bds, b, bss, false);
    }
}
static void unpack_dir(tb_backend *be, const tb_kfac_layer *L, const float *wbar, float *w,
                       float *b)
{
    int64_t shape[2] = {L->dout, L->in}, ds[2] = {L->in, 1}, ss[2] = {L->din, 1};
    be->ops.strided_copy(be, 2, shape, w, ds, wbar, ss, false);
    if (b) {
        int64_t bs[1] = {L->dout}, bds[1] = {1}, bss[1] = {L->din};
        be->ops.strided_copy(be, 1, bs, b, bds, wbar + L->in, bss, false);
    }
}

/* delta = preconditioned grad of one layer. */
static void precondition(tb_optimizer *opt, tb_kfac_layer *L)
{
    tb_backend *be = opt->be;
    tb_kfac_state *s = opt->state;
    int m = L->dout, n = L->din;
    if (!s->ekfac) {
        be->ops.gemm(be, false, false, m, n, m, 1.0f, L->PG, m, L->grad, n, 0.0f, L->tmp, n);
        be->ops.gemm(be, false, false, m, n, n, 1.0f, L->tmp, n, L->PA, n, 0.0f, L->delta, n);
        return;
    }
    be->ops.gemm(be, true, false, m, n, m, 1.0f, L->PG, m, L->grad, n, 0.0f, L->tmp, n);
    be->ops.gemm(be, false, false, m, n, n, 1.0f, L->tmp, n, L->PA, n, 0.0f, L->delta, n);
    size_t bytes = (size_t)m * n * sizeof(float);
    tb_backend_download(be, L->host, L->delta, bytes);
    float eps = (float)tb_opt_hp(opt, "damping");
    for (int64_t i = 0; i < (int64_t)m * n; i++) L->host[i] /= L->S[i] + eps;
    tb_backend_upload(be, L->delta, L->host, bytes);
    be->ops.gemm(be, false, false, m, n, m, 1.0f, L->PG, m, L->delta, n, 0.0f, L->tmp, n);
    be->ops.gemm(be, false, true, m, n, n, 1.0f, L->tmp, n, L->PA, n, 0.0f, L->delta, n);
}

static tb_status kfac_step(tb_optimizer *opt, double lr, tb_error *err)
{
    tb_kfac_state *s = opt->state;
    tb_backend *be = opt->be;
    int64_t t = opt->step;
    const char *name = opt->vt->info.name;
    if (s->n_layers == 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: no layers attached (call tb_optimizer_set_layers first)", name);
    if ((needs_factors(opt, t) || needs_scale(opt, t)) && s->fisher_step != t) {
        if (tb_opt_hp(opt, "empirical_fisher") == 0.0)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: step %lld needs Fisher statistics: call "
                           "tb_optimizer_update_fisher after a backward pass with sampled "
                           "labels (tb_optimizer_wants_fisher says when), or set "
                           "empirical_fisher=1",
                           name, (long long)t);
        tb_status st = stats_for_step(opt, t, err);
        if (st != TB_OK) return st;
    }
    if (tb_kfac_is_inv_step(opt, t) || !s->layers[0].have_precond)
        for (int i = 0; i < s->n_layers; i++) {
            if (!s->layers[i].have_stats)
                return tb_fail(err, TB_ERR_INVALID, "%s: layer '%s' has no statistics yet",
                               name, s->layers[i].pw->name);
            tb_status st = refresh_layer(opt, &s->layers[i], err);
            if (st != TB_OK) return st;
        }
    /* every parameter's direction starts as its gradient; attached layers' are replaced */
    be->ops.copy(be, s->dir, tb_params_grads(opt->params),
                 (size_t)tb_params_numel(opt->params) * sizeof(float));
    double kl_clip = tb_opt_hp(opt, "kl_clip"), vg = 0.0;
    for (int i = 0; i < s->n_layers; i++) {
        tb_kfac_layer *L = &s->layers[i];
        pack_grad(be, L, L->pw->var.grad.data, L->pb ? L->pb->var.grad.data : NULL, L->grad);
        precondition(opt, L);
        if (kl_clip > 0.0) {
            int64_t k = (int64_t)L->dout * L->din;
            be->ops.gemm(be, false, true, 1, 1, (int)k, 1.0f, L->delta, (int)k, L->grad, (int)k,
                         0.0f, s->dot, 1);
            vg += be->ops.read_scalar(be, s->dot) * lr * lr;
        }
    }
    float nu = 1.0f;
    if (kl_clip > 0.0 && vg > 0.0) nu = (float)fmin(1.0, sqrt(kl_clip / vg));
    for (int i = 0; i < s->n_layers; i++) {
        tb_kfac_layer *L = &s->layers[i];
        if (nu != 1.0f) be->ops.scale(be, L->delta, (int64_t)L->dout * L->din, nu);
        unpack_dir(be, L, L->delta, s->dir + L->pw->offset, L->pb ? s->dir + L->pb->offset : NULL);
    }
    /* the whole direction, checked before any parameter moves (with kl_clip = 0 nothing
     * else would catch a preconditioned gradient that overflowed) */
    if (!isfinite(vg) || !isfinite(nu) ||
        !isfinite(be->ops.sum_squares(be, tb_params_numel(opt->params), s->dir)))
        return tb_fail(err, TB_ERR_NUMERIC,
                       "%s: step %lld: preconditioned gradient is not finite (damping = %g: too "
                       "small a damping, or a diverging run); the weights were not updated",
                       name, (long long)t, tb_opt_hp(opt, "damping"));
    float mu = (float)tb_opt_hp(opt, "momentum"), wd = (float)tb_opt_hp(opt, "weight_decay");
    const float lr_f = (float)lr;
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        be->ops.sgd_update(be, tb_tensor_numel(&p->var.value), p->var.value.data,
                           s->dir + p->offset, s->mom + p->offset, &lr_f, mu, false,
                           tb_param_decays(p->kind) ? wd : 0.0f);
    }
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_kfac = {
    .info = {.name = "kfac",
             .summary = "K-FAC: Kronecker-factored natural gradient for dense and conv layers",
             .hparams = kfac_hparams,
             .n_hparams = (int)(sizeof kfac_hparams / sizeof *kfac_hparams)},
    .check = tb_kfac_check,
    .init = kfac_init,
    .step = kfac_step,
    .graph_blocker = "factor inverses (eigenbases) are recomputed on the host every "
                     "inv_interval steps",
    .destroy = kfac_destroy,
    .set_layers = kfac_set_layers,
    .wants_fisher = kfac_wants_fisher,
    .update_fisher = kfac_update_fisher,
    .no_preconditioner = "it preconditions each layer with Kronecker factors of its curvature, "
                         "a full matrix per layer, not a per-value diagonal",
};

const tb_optimizer_vtable tb_optim_ekfac = {
    .info = {.name = "ekfac", .summary = "EKFAC: K-FAC eigenbasis with per-coordinate rescaling",
             .hparams = ekfac_hparams,
             .n_hparams = (int)(sizeof ekfac_hparams / sizeof *ekfac_hparams)},
    .check = tb_kfac_check,
    .init = ekfac_init,
    .step = kfac_step,
    .graph_blocker = "factor inverses (eigenbases) are recomputed on the host every "
                     "inv_interval steps",
    .destroy = kfac_destroy,
    .set_layers = kfac_set_layers,
    .wants_fisher = kfac_wants_fisher,
    .update_fisher = kfac_update_fisher,
    .no_preconditioner = "it preconditions each layer with Kronecker factors of its curvature, "
                         "a full matrix per layer, not a per-value diagonal",
};

/* psgd_kron.c: PSGD Kron, preconditioned SGD with Kronecker-factored preconditioners fitted by
 * the whitening criterion (Li 2018; kron-torch's Kron update, its names and defaults).
 *
 * A parameter is a matrix G [a, b] (a 1-D one a vector with one factor; one of more dimensions
 * merged to two as kron-torch's merge_dims does). Each dimension keeps a factor Q_k, upper
 * triangular [n, n] when the parameter has at least min_ndim_triangular dimensions, n > 1,
 * n <= max_size_triangular and memory_save_mode leaves it so, diagonal [n] otherwise; each
 * starts as precond_init_scale^(1/ndim) I. Per step t, with lr = learning_rate times the
 * schedule's factor:
 *   m = b1 m + (1 - b1) g;  m_hat = m / (1 - b1^t)
 *   balance (2-D, probability 0.01 on an update step): Q_k *= geomean(max|Q|) / max|Q_k|
 *   update step (see below): G = m_hat (g with momentum_into_precond_update = 0),
 *     V ~ N(0, 1); G += sqrt(eps32) mean|G| V;  A = Q0 G Q1^T;  B = Q0^-T V Q1^-1
 *     per side: T1 = A A^T - B B^T, T2 = A A^T + B B^T (A^T A, B^T B on side 1; diagonals only
 *     for a diagonal factor);  triangular: Q -= precond_lr triu(T1) Q / lb(T2) with lb a
 *     cheap lower bound of T2's spectral norm;  diagonal: Q -= precond_lr T1 Q / max|T2|
 *   P = Q0^T Q0 m_hat Q1^T Q1  (m_hat perturbed by the probe when it fed the update)
 *   P *= min(1, 1.1 / (rms(P) + 1e-12));  w -= lr (P + wd w)  (wd: weights of >= 2 dims)
 * Update steps: every step with preconditioner_update_probability 1; with p < 1 a counter
 * updates when it reaches 1/p; -1 (the reference's default) anneals p = clamp(exp(-0.001
 * (n - 500)), 0.03, 1) over the steps n from 0. The probes and the balance draw come from the
 * optimizer's generator (probe_seed). The state and arithmetic are double on the host. */
#include "optim/psgd_kron.h"

#include "optim/psgd_kron_factor.h"
#include "trainbench/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const tb_hparam_spec kron_hparams[] = {
    {.name = "learning_rate", .default_value = 3e-4, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size (Kron lr)"},
    {.name = "b1", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "momentum decay (Kron b1)"},
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "decay added to the update, lr wd w (weights of two or more dims)"},
    {.name = "preconditioner_update_probability", .default_value = -1.0, .min = -1.0,
     .max = 1.0, .help = "in (0, 1]: fixed; -1: the reference's annealed schedule"},
    {.name = "max_size_triangular", .default_value = 8192, .min = 1, .max = 65536,
     .help = "dims longer than this take a diagonal factor, integer"},
    {.name = "min_ndim_triangular", .default_value = 2, .min = 1, .max = 8,
     .help = "parameters with fewer dims take diagonal factors, integer"},
    {.name = "memory_save_mode", .default_value = 0, .min = 0, .max = 3,
     .help = "0 none, 1 smart_one_diag, 2 one_diag, 3 all_diag, integer"},
    {.name = "momentum_into_precond_update", .default_value = 1, .min = 0, .max = 1,
     .is_flag = true, .help = "1: fit the preconditioner to m_hat; 0: to the gradient"},
    {.name = "precond_lr", .default_value = 0.1, .min = 0.0, .max = 1.0, .min_open = true,
     .help = "step size of the preconditioner fit"},
    {.name = "precond_init_scale", .default_value = 1.0, .min = 0.0, .max = 1e6,
     .min_open = true, .help = "initial scale of the preconditioner"},
    {.name = "probe_seed", .default_value = 42, .min = 0, .max = 4294967295.0,
     .help = "seed of the probes and balance draws, integer (not in kron-torch)"},
};

typedef struct kron_param {
    tb_param *p;
    kron_factors f;
    bool decays;
    const double *probe; /* given for the next step (tb_psgd_kron_give_probe), or NULL */
} kron_param;

typedef struct kron_state {
    kron_param *ps;
    int n_ps;
    int64_t numel, counter;
    float *w, *g;        /* host [numel] */
    double *m, *gd, *p;  /* host [numel]: momentum, the fitted pair's G, directions */
    double *v;           /* host [numel]: probes */
    kron_scratch s;
    tb_rng rng;
    bool given, balance; /* the next step's draws were given */
} kron_state;

static tb_status kron_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                            tb_error *err)
{
    (void)given;
    const char *ints[] = {"max_size_triangular", "min_ndim_triangular", "memory_save_mode",
                          "probe_seed"};
    for (int i = 0; i < 4; i++) {
        double v = tb_hparams_get(hp, ints[i], 1);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    double p = tb_hparams_get(hp, "preconditioner_update_probability", -1);
    if (p != -1.0 && p <= 0.0)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: preconditioner_update_probability = %g must be -1 (the annealed "
                       "schedule) or in (0, 1]",
                       algorithm, p);
    return TB_OK;
}

static void kron_destroy(tb_optimizer *opt)
{
    kron_state *s = opt->state;
    if (!s) return;
    for (int i = 0; s->ps && i < s->n_ps; i++)
        for (int k = 0; k < 2; k++) free(s->ps[i].f.side[k].q);
    free(s->ps);
    free(s->w);
    free(s->m);
    free(s->s.x);
    free(s);
}

/* The matrix view and the factors' kinds of parameter q, as kron-torch's _init_Q_exprs. */
static void layout(const tb_optimizer *opt, kron_param *q)
{
    const tb_tensor *t = &q->p->var.value;
    const int64_t numel = tb_tensor_numel(t);
    int ndim = t->ndim < 1 ? 1 : t->ndim;
    int64_t a = 1, b = numel;
    if (t->ndim == 2) {
        a = t->shape[0];
        b = t->shape[1];
    } else if (t->ndim > 2) { /* merge_dims: the split with the smaller signed difference */
        int64_t last = t->shape[t->ndim - 1], first = t->shape[0];
        if (last - numel / last <= numel / first - first)
            a = numel / last, b = last;
        else
            a = first, b = numel / first;
        ndim = 2;
    }
    q->f.a = (int)a;
    q->f.b = (int)b;
    const int mode = (int)tb_opt_hp(opt, "memory_save_mode");
    const int64_t maxn = (int64_t)tb_opt_hp(opt, "max_size_triangular");
    const int minnd = (int)tb_opt_hp(opt, "min_ndim_triangular");
    bool diag[2] = {mode == 3, mode == 3};
    if (ndim == 2 && (mode == 2 || (mode == 1 && a != b))) diag[a > b ? 0 : 1] = true;
    if (ndim == 1 && mode == 2) diag[1] = true; /* a vector's one dimension is side 1 */
    int64_t n[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        q->f.side[k].n = (int)n[k];
        q->f.side[k].tri =
            (ndim == 2 || k == 1) && !diag[k] && n[k] > 1 && n[k] <= maxn && ndim >= minnd;
    }
    q->decays = t->ndim >= 2 && tb_param_decays(q->p->kind);
}

static tb_status kron_init(tb_optimizer *opt, tb_error *err)
{
    kron_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "psgd_kron: cannot allocate its state");
    opt->state = s;
    s->n_ps = tb_params_count(opt->params);
    s->numel = tb_params_numel(opt->params);
    s->rng = tb_rng_make((uint64_t)tb_opt_hp(opt, "probe_seed"), 0x6b726f6e);
    s->ps = calloc((size_t)s->n_ps + 1, sizeof *s->ps);
    s->w = calloc((size_t)(2 * s->numel + 1), sizeof(float));
    s->m = calloc((size_t)(4 * s->numel + 1), sizeof(double));
    if (!s->ps || !s->w || !s->m)
        return tb_fail(err, TB_ERR_NOMEM, "psgd_kron: cannot allocate its state");
    s->g = s->w + s->numel;
    s->gd = s->m + s->numel;
    s->p = s->gd + s->numel;
    s->v = s->p + s->numel;
    const double init = tb_opt_hp(opt, "precond_init_scale");
    int64_t largest = 1, side_max = 1;
    for (int i = 0; i < s->n_ps; i++) {
        kron_param *q = &s->ps[i];
        q->p = tb_params_get(opt->params, i);
        layout(opt, q);
        const bool matrix = q->p->var.value.ndim >= 2;
        const double scale = pow(init, matrix ? 0.5 : 1.0);
        if ((int64_t)q->f.a * q->f.b > largest) largest = (int64_t)q->f.a * q->f.b;
        for (int k = matrix ? 0 : 1; k < 2; k++) {
            kron_side *side = &q->f.side[k];
            const int64_t n = side->n, nn = side->tri ? n * n : n;
            side->q = calloc((size_t)nn, sizeof(double));
            if (!side->q)
                return tb_fail(err, TB_ERR_NOMEM,
                               "psgd_kron: cannot allocate the %lldx%lld factor of '%s'",
                               (long long)n, (long long)n, q->p->name);
            for (int64_t j = 0; j < n; j++) side->q[side->tri ? j * n + j : j] = scale;
            if (n > side_max) side_max = n;
        }
    }
    s->s.x = malloc((size_t)(2 * largest + 3 * side_max * side_max) * sizeof(double));
    if (!s->s.x) return tb_fail(err, TB_ERR_NOMEM, "psgd_kron: cannot allocate its scratch");
    s->s.y = s->s.x + largest;
    s->s.t = s->s.y + largest;
    s->s.u = s->s.t + 2 * side_max * side_max;
    return TB_OK;
}

/* Whether step t (from 1) updates the preconditioner (the reference's counter, in float32). */
static bool update_now(const tb_optimizer *opt, kron_state *s)
{
    const double hp = tb_opt_hp(opt, "preconditioner_update_probability");
    float prob = (float)hp;
    if (hp == -1.0) {
        float n = (float)(opt->step - 1);
        prob = expf(-0.001f * (n - 500.0f));
        prob = prob < 0.03f ? 0.03f : (prob > 1.0f ? 1.0f : prob);
    }
    s->counter++;
    if ((float)s->counter < 1.0f / prob) return false;
    s->counter = 0;
    return true;
}

tb_status tb_psgd_kron_give_probe(tb_optimizer *opt, int i, const double *v, int64_t numel,
                                  bool balance, tb_error *err)
{
    if (strcmp(opt->vt->info.name, "psgd_kron") != 0)
        return tb_fail(err, TB_ERR_INVALID, "%s: not a psgd_kron optimizer", opt->vt->info.name);
    kron_state *s = opt->state;
    if (i < 0 || i >= s->n_ps || numel != tb_tensor_numel(&s->ps[i].p->var.value))
        return tb_fail(err, TB_ERR_INVALID, "psgd_kron: no parameter %d of %lld values", i,
                       (long long)numel);
    s->ps[i].probe = v;
    s->given = true;
    s->balance = balance;
    return TB_OK;
}

/* The clipped preconditioned direction of parameter q into s->p (at its offset). */
static void direction(const tb_optimizer *opt, kron_state *s, kron_param *q, bool update,
                      bool balance)
{
    const int64_t o = q->p->offset, n = (int64_t)q->f.a * q->f.b;
    const double b1 = tb_opt_hp(opt, "b1");
    const double corr = 1.0 - pow(b1, (double)opt->step);
    double *m = s->m + o, *g = s->gd + o, *mh = s->p + o, *v = s->v + o;
    for (int64_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1.0 - b1) * g[i];
        mh[i] = m[i] / corr;
    }
    if (balance && q->p->var.value.ndim > 1) kron_balance(&q->f);
    if (update) {
        if (q->probe) memcpy(v, q->probe, (size_t)n * sizeof *v);
        else
            for (int64_t i = 0; i < n; i++) v[i] = tb_rng_normal(&s->rng);
        bool mom = tb_opt_hp(opt, "momentum_into_precond_update") != 0.0;
        kron_update_precond(&q->f, mom ? mh : g, v, tb_opt_hp(opt, "precond_lr"), &s->s);
    }
    q->probe = NULL;
    kron_precondition(&q->f, mh, s->s.x);
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += s->s.x[i] * s->s.x[i];
    double c = 1.1 / (sqrt(ss / (double)n) + 1e-12);
    if (c > 1.0) c = 1.0;
    for (int64_t i = 0; i < n; i++) mh[i] = s->s.x[i] * c;
}

static tb_status kron_step(tb_optimizer *opt, double lr, tb_error *err)
{
    kron_state *s = opt->state;
    tb_backend *be = opt->be;
    const size_t bytes = (size_t)s->numel * sizeof(float);
    tb_backend_download(be, s->g, tb_params_grads(opt->params), bytes);
    for (int64_t i = 0; i < s->numel; i++) s->gd[i] = s->g[i];
    const bool update = update_now(opt, s);
    const double draw = tb_rng_uniform(&s->rng);
    const bool balance = update && (s->given ? s->balance : draw < 0.01);
    s->given = false;
    for (int i = 0; i < s->n_ps; i++) {
        kron_param *q = &s->ps[i];
        direction(opt, s, q, update, balance);
        double ss = 0.0;
        const int64_t o = q->p->offset, n = (int64_t)q->f.a * q->f.b;
        for (int64_t e = o; e < o + n; e++) ss += s->p[e] * s->p[e];
        if (!isfinite(ss))
            return tb_fail(err, TB_ERR_NUMERIC,
                           "psgd_kron: step %lld: the preconditioned gradient of '%s' is not "
                           "finite; the weights were not updated",
                           (long long)opt->step, q->p->name);
    }
    const double wd = tb_opt_hp(opt, "weight_decay");
    tb_backend_download(be, s->w, tb_params_values(opt->params), bytes);
    for (int i = 0; i < s->n_ps; i++) {
        const kron_param *q = &s->ps[i];
        const int64_t o = q->p->offset, n = (int64_t)q->f.a * q->f.b;
        const bool decays = wd != 0.0 && q->decays;
        for (int64_t e = o; e < o + n; e++)
            s->w[e] = (float)(s->w[e] - lr * (s->p[e] + (decays ? wd * s->w[e] : 0.0)));
    }
    tb_backend_upload(be, tb_params_values(opt->params), s->w, bytes);
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_psgd_kron = {
    .info = {.name = "psgd_kron",
             .summary = "PSGD Kron: SGD preconditioned by Kronecker factors fitted to whiten",
             .hparams = kron_hparams,
             .n_hparams = (int)(sizeof kron_hparams / sizeof *kron_hparams)},
    .check = kron_check,
    .init = kron_init,
    .step = kron_step,
    .graph_blocker = "its preconditioner is fitted on the host (BLAS) with host-drawn probes "
                     "and its update runs on the host",
    .destroy = kron_destroy,
    .no_preconditioner = "it preconditions with Kronecker-factored dense matrices, not with a "
                         "per-value diagonal",
};

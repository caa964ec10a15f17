/* shampoo.c: blocked Shampoo (Gupta, Koren & Singer 2018; Anil et al.'s Distributed Shampoo
 * practice) with SGD or Adam grafting and Nesterov momentum.
 *
 * Every parameter of two or more dimensions is viewed as a matrix [d0, rest] (a conv weight
 * [Cout, Cin, k, k] as [Cout, Cin k k]) and cut into blocks of at most block_size x
 * block_size. Per block with gradient G (plus L2 weight decay on weights):
 *   L <- beta2 L + (1 - beta2) G G^T,  R <- beta2 R + (1 - beta2) G^T G   (beta2 = 1: sums)
 * every step (backend gemm); from start_preconditioning_step on, every precondition_interval
 * steps, the roots L^-1/4 and R^-1/4 are recomputed on the host in double through an
 * eigendecomposition, with epsilon relative to the largest eigenvalue:
 *   root(X) = (X + epsilon lambda_max(X) I)^(-1/4)
 * (the -1/(2k) exponent of an order-k tensor with k = 2 after the reshape). A block side
 * longer than max_preconditioner_dim is left unpreconditioned (identity). The direction
 * D = L^-1/4 G R^-1/4 (backend gemm; D = B, the grafting method's direction, before
 * preconditioning starts and for 1-D parameters) is grafted per parameter: D *= ||B|| / ||D||,
 * with B = G (SGD) or, grafting_method = 1, Adam's B = G / (sqrt(v_hat) + grafting_epsilon),
 * v = grafting_beta2 v + (1 - grafting_beta2) G^2. Then Nesterov (or heavy ball) momentum:
 * v = mu v + D, w -= lr (D + mu v) (or lr v). */
#include "optim/optim_impl.h"

#include "optim/kron.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const tb_hparam_spec shampoo_hparams[] = {
    {.name = "learning_rate", .default_value = 0.1, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "step size (of the grafted SGD step)"},
    {.name = "momentum", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "momentum coefficient mu, in [0, 1)"},
    {.name = "nesterov", .default_value = 1.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: Nesterov momentum, 0: heavy ball"},
    {.name = "beta2", .default_value = 0.999, .min = 0.0, .max = 1.0, .min_open = true,
     .help = "EMA weight of old statistics L, R, in (0, 1]; 1 = plain sums"},
    {.name = "epsilon", .default_value = 1e-4, .min = 0.0, .max = 1.0, .min_open = true,
     .help = "matrix epsilon, relative to the statistic's largest eigenvalue"},
    {.name = "block_size", .default_value = 128, .min = 1, .max = 65536,
     .help = "largest block side, integer"},
    {.name = "start_preconditioning_step", .default_value = 25, .min = 1, .max = 1e9,
     .help = "first step that preconditions (SGD before), integer"},
    {.name = "precondition_interval", .default_value = 20, .min = 1, .max = 1e9,
     .help = "steps between recomputations of the inverse roots, integer"},
    {.name = "max_preconditioner_dim", .default_value = 8192, .min = 1, .max = 1e9,
     .help = "block sides longer than this stay unpreconditioned, integer"},
    {.name = "grafting", .default_value = 1.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: take each parameter's step norm from the grafting method"},
    {.name = "grafting_method", .default_value = 0.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "the diagonal method grafted from: 0 SGD, 1 Adam (RMSProp-normalised, "
             "bias-corrected; Distributed Shampoo's ADAM grafting)"},
    {.name = "grafting_beta2", .default_value = 0.999, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "Adam grafting: second-moment decay"},
    {.name = "grafting_epsilon", .default_value = 1e-8, .min = 0.0, .max = 1e12,
     .min_open = true, .help = "Adam grafting: added to sqrt(v_hat)"},
    {.name = "weight_decay", .default_value = 0.0, .min = 0.0, .max = 1e6,
     .help = "L2 added to the gradient (weights)"},
};

typedef struct sh_block {
    int r0, c0, bm, bn;   /* rows [r0, r0 + bm), columns [c0, c0 + bn) of the matrix view */
    bool pl, pr;          /* whether the left / right side is preconditioned */
    float *L, *R;         /* device [bm, bm], [bn, bn] statistics */
    float *Lr, *Rr;       /* device inverse roots */
} sh_block;

typedef struct sh_param {
    tb_param *p;
    int m, n;             /* matrix view [m, n]; m = 0 for a 1-D parameter */
    int n_blocks;
    sh_block *blocks;
} sh_param;

typedef struct sh_state {
    sh_param *ps;
    int n_ps;
    float *g, *d, *mom;   /* device [numel]: decayed gradient, direction, momentum */
    float *gv, *gm, *a;   /* device [numel], Adam grafting: second moment, scratch, direction */
    float *tmp;           /* device [largest block's bm x bn] (scratch of L^-1/4 G) */
    bool have_roots;
} sh_state;

static void shampoo_destroy(tb_optimizer *opt)
{
    sh_state *s = opt->state;
    if (!s) return;
    for (int i = 0; i < s->n_ps; i++) {
        for (int b = 0; b < s->ps[i].n_blocks; b++) {
            sh_block *k = &s->ps[i].blocks[b];
            tb_backend_free(opt->be, k->L);
            tb_backend_free(opt->be, k->R);
            tb_backend_free(opt->be, k->Lr);
            tb_backend_free(opt->be, k->Rr);
        }
        free(s->ps[i].blocks);
    }
    free(s->ps);
    tb_backend_free(opt->be, s->g);
    tb_backend_free(opt->be, s->d);
    tb_backend_free(opt->be, s->mom);
    tb_backend_free(opt->be, s->tmp);
    tb_backend_free(opt->be, s->gv);
    free(s);
}

/* Whole numbers where they count steps or sizes; epsilon lambda_max is what the inverse roots
 * of a block's statistics add before the -1/4 power, so below float32's smallest normal
 * number the roots (used in float32) overflow along directions the statistics have not
 * seen. */
static tb_status shampoo_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                               tb_error *err)
{
    (void)given;
    const char *ints[] = {"block_size", "start_preconditioning_step", "precondition_interval",
                          "max_preconditioner_dim"};
    for (int i = 0; i < 4; i++) {
        double v = tb_hparams_get(hp, ints[i], 1);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    tb_status st = tb_opt_check_guard(hp, algorithm, "epsilon",
                                      "the inverse roots (X + epsilon lambda_max(X) I)^(-1/4) of "
                                      "the statistics X, used in float32, would overflow along "
                                      "directions X has not seen",
                                      err);
    if (st != TB_OK) return st;
    return tb_opt_check_guard(hp, algorithm, "grafting_epsilon",
                              "Adam grafting's sqrt(v_hat) + grafting_epsilon would be 0 for a "
                              "parameter whose gradients have been 0, and the direction 0/0 = NaN",
                              err);
}

static tb_status shampoo_init(tb_optimizer *opt, tb_error *err)
{
    int bs = (int)tb_opt_hp(opt, "block_size");
    int maxdim = (int)fmin(tb_opt_hp(opt, "max_preconditioner_dim"), 1e9);
    sh_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "shampoo: cannot allocate state");
    opt->state = s;
    int64_t numel = tb_params_numel(opt->params);
    tb_backend *be = opt->be;
    s->g = tb_backend_alloc(be, (size_t)(numel + 1) * 4);
    s->d = tb_backend_alloc(be, (size_t)(numel + 1) * 4);
    s->mom = tb_backend_alloc(be, (size_t)(numel + 1) * 4);
    s->n_ps = tb_params_count(opt->params);
    s->ps = calloc((size_t)s->n_ps + 1, sizeof *s->ps);
    if (!s->g || !s->d || !s->mom || !s->ps)
        return tb_fail(err, TB_ERR_NOMEM, "shampoo: cannot allocate state for %lld values",
                       (long long)numel);
    be->ops.fill(be, s->mom, numel, 0.0f);
    if (tb_opt_hp(opt, "grafting_method") != 0.0) { /* Adam grafting */
        s->gv = tb_opt_alloc_state(opt, 3 * numel, 0.0f, err);
        if (!s->gv) return TB_ERR_NOMEM;
        s->gm = s->gv + numel;
        s->a = s->gm + numel;
    }
    size_t tmp_floats = 1; /* the largest real block, not block_size^2 */
    for (int i = 0; i < s->n_ps; i++) {
        sh_param *q = &s->ps[i];
        q->p = tb_params_get(opt->params, i);
        const tb_tensor *v = &q->p->var.value;
        if (v->ndim < 2) continue;
        q->m = (int)v->shape[0];
        q->n = (int)(tb_tensor_numel(v) / v->shape[0]);
        int rb = (q->m + bs - 1) / bs, cb = (q->n + bs - 1) / bs;
        q->blocks = calloc((size_t)rb * cb, sizeof *q->blocks);
        if (!q->blocks)
            return tb_fail(err, TB_ERR_NOMEM, "shampoo: cannot allocate blocks of '%s'",
                           q->p->name);
        for (int r = 0; r < rb; r++)
            for (int c = 0; c < cb; c++) {
                sh_block *k = &q->blocks[q->n_blocks++];
                k->r0 = r * bs;
                k->c0 = c * bs;
                k->bm = q->m - k->r0 < bs ? q->m - k->r0 : bs;
                k->bn = q->n - k->c0 < bs ? q->n - k->c0 : bs;
                if ((size_t)k->bm * k->bn > tmp_floats) tmp_floats = (size_t)k->bm * k->bn;
                k->pl = k->bm <= maxdim;
                k->pr = k->bn <= maxdim;
                size_t lb = (size_t)k->bm * k->bm * 4, rbytes = (size_t)k->bn * k->bn * 4;
                if (k->pl) {
                    k->L = tb_backend_alloc(be, lb);
                    k->Lr = tb_backend_alloc(be, lb);
                }
                if (k->pr) {
                    k->R = tb_backend_alloc(be, rbytes);
                    k->Rr = tb_backend_alloc(be, rbytes);
                }
                if ((k->pl && (!k->L || !k->Lr)) || (k->pr && (!k->R || !k->Rr)))
                    return tb_fail(err, TB_ERR_NOMEM, "shampoo: no memory for '%s' statistics",
                                   q->p->name);
                if (k->pl) be->ops.fill(be, k->L, (int64_t)k->bm * k->bm, 0.0f);
                if (k->pr) be->ops.fill(be, k->R, (int64_t)k->bn * k->bn, 0.0f);
            }
    }
    s->tmp = tb_backend_alloc(be, tmp_floats * 4);
    if (!s->tmp)
        return tb_fail(err, TB_ERR_NOMEM, "shampoo: cannot allocate a %zu-value scratch block",
                       tmp_floats);
    return TB_OK;
}

/* root = (X + eps lambda_max I)^(-1/4) of the device matrix X [n, n], on the host. */
static tb_status device_root(tb_optimizer *opt, int n, const float *x, float *root,
                             const char *pname, tb_error *err)
{
    size_t nn = (size_t)n * n;
    float *f = malloc(nn * sizeof *f);
    double *m = malloc(nn * sizeof *m), *out = malloc(nn * sizeof *out);
    tb_status st;
    if (!f || !m || !out) {
        st = tb_fail(err, TB_ERR_NOMEM, "shampoo: '%s': no host memory for a %dx%d root", pname,
                     n, n);
    } else {
        tb_backend_download(opt->be, f, x, nn * sizeof *f);
        for (size_t i = 0; i < nn; i++) m[i] = f[i];
        char what[96];
        snprintf(what, sizeof what, "shampoo: '%s'", pname);
        st = tb_kron_inverse_root(n, m, 4.0, tb_opt_hp(opt, "epsilon"), out, what, err);
        if (st == TB_OK) {
            for (size_t i = 0; i < nn; i++) f[i] = (float)out[i];
            tb_backend_upload(opt->be, root, f, nn * sizeof *f);
        }
    }
    free(f);
    free(m);
    free(out);
    return st;
}

static tb_status shampoo_step(tb_optimizer *opt, double lr, tb_error *err)
{
    sh_state *s = opt->state;
    tb_backend *be = opt->be;
    const int64_t t = opt->step;
    const int64_t start = (int64_t)tb_opt_hp(opt, "start_preconditioning_step");
    const int64_t every = (int64_t)tb_opt_hp(opt, "precondition_interval");
    const double beta2 = tb_opt_hp(opt, "beta2");
    const float a_new = beta2 == 1.0 ? 1.0f : (float)(1.0 - beta2), a_old = (float)beta2;
    const float wd = (float)tb_opt_hp(opt, "weight_decay"), mu = (float)tb_opt_hp(opt, "momentum");
    const bool nesterov = tb_opt_hp(opt, "nesterov") != 0.0;
    const bool graft = tb_opt_hp(opt, "grafting") != 0.0;
    const bool precond = t >= start;
    const bool refresh = precond && (!s->have_roots || (t - start) % every == 0);
    const double gb2 = tb_opt_hp(opt, "grafting_beta2");
    /* Adam grafting's direction g / (sqrt(v / (1 - beta2^t)) + eps): adam_update with
     * beta1 = 0 (its m is then g), written to s->a without moving w */
    const tb_adam_coefs ac = {.beta1 = 0.0f, .beta2 = (float)gb2, .one_minus_beta1 = 1.0f,
                              .one_minus_beta2 = (float)(1.0 - gb2),
                              .eps = (float)tb_opt_hp(opt, "grafting_epsilon"), .decay = 1.0f,
                              .c_m = 1.0f, .inv_bc2 = (float)(1.0 / (1.0 - pow(gb2, (double)t)))};
    for (int i = 0; i < s->n_ps; i++) {
        sh_param *q = &s->ps[i];
        tb_param *p = q->p;
        int64_t numel = tb_tensor_numel(&p->var.value);
        float *g = s->g + p->offset, *d = s->d + p->offset;
        be->ops.copy(be, g, p->var.grad.data, (size_t)numel * 4);
        if (wd != 0.0f && tb_param_decays(p->kind)) be->ops.axpy(be, numel, wd, p->var.value.data, g);
        const float *base = g; /* the grafting method's direction */
        if (s->gv) {
            be->ops.adam_update(be, numel, p->var.value.data, g, s->gm + p->offset,
                                s->gv + p->offset, &ac, s->a + p->offset);
            base = s->a + p->offset;
        }
        if (!precond || q->m == 0) be->ops.copy(be, d, base, (size_t)numel * 4);
        const int n = q->n;
        for (int b = 0; b < q->n_blocks; b++) {
            sh_block *k = &q->blocks[b];
            const float *gb = g + (int64_t)k->r0 * n + k->c0;
            float *db = d + (int64_t)k->r0 * n + k->c0;
            if (k->pl)
                be->ops.gemm(be, false, true, k->bm, k->bm, k->bn, a_new, gb, n, gb, n, a_old,
                             k->L, k->bm);
            if (k->pr)
                be->ops.gemm(be, true, false, k->bn, k->bn, k->bm, a_new, gb, n, gb, n, a_old,
                             k->R, k->bn);
            if (!precond) continue;
            if (refresh) {
                tb_status st = k->pl ? device_root(opt, k->bm, k->L, k->Lr, p->name, err) : TB_OK;
                if (st == TB_OK && k->pr) st = device_root(opt, k->bn, k->R, k->Rr, p->name, err);
                if (st != TB_OK) return st;
            }
            if (k->pl && k->pr) {
                be->ops.gemm(be, false, false, k->bm, k->bn, k->bm, 1.0f, k->Lr, k->bm, gb, n,
                             0.0f, s->tmp, k->bn);
                be->ops.gemm(be, false, false, k->bm, k->bn, k->bn, 1.0f, s->tmp, k->bn, k->Rr,
                             k->bn, 0.0f, db, n);
            } else if (k->pl) {
                be->ops.gemm(be, false, false, k->bm, k->bn, k->bm, 1.0f, k->Lr, k->bm, gb, n,
                             0.0f, db, n);
            } else if (k->pr) {
                be->ops.gemm(be, false, false, k->bm, k->bn, k->bn, 1.0f, gb, n, k->Rr, k->bn,
                             0.0f, db, n);
            } else {
                int64_t shape[2] = {k->bm, k->bn}, st2[2] = {n, 1};
                be->ops.strided_copy(be, 2, shape, db, st2,
                                     base + (int64_t)k->r0 * n + k->c0, st2, false);
            }
        }
        if (precond && q->m > 0) {
            double nd = be->ops.sum_squares(be, numel, d);
            if (!isfinite(nd))
                return tb_fail(err, TB_ERR_NUMERIC,
                               "shampoo: step %lld: preconditioned gradient of '%s' is not finite "
                               "(epsilon = %g); the weights were not updated",
                               (long long)t, p->name, tb_opt_hp(opt, "epsilon"));
            if (graft && nd > 0.0)
                be->ops.scale(be, d, numel,
                              (float)sqrt(be->ops.sum_squares(be, numel, base) / nd));
        }
    }
    if (refresh) s->have_roots = true;
    /* every direction is finite: now the parameters move */
    const float lr_f = (float)lr;
    for (int i = 0; i < s->n_ps; i++) {
        tb_param *p = s->ps[i].p;
        be->ops.sgd_update(be, tb_tensor_numel(&p->var.value), p->var.value.data,
                           s->d + p->offset, s->mom + p->offset, &lr_f, mu, nesterov, 0.0f);
    }
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_shampoo = {
    .info = {.name = "shampoo",
             .summary = "Blocked Shampoo with SGD grafting and Nesterov momentum",
             .hparams = shampoo_hparams,
             .n_hparams = (int)(sizeof shampoo_hparams / sizeof *shampoo_hparams)},
    .check = shampoo_check,
    .init = shampoo_init,
    .step = shampoo_step,
    .graph_blocker = "inverse roots are recomputed on the host every precondition_interval "
                     "steps and grafting reads norms back every step",
    .destroy = shampoo_destroy,
    .no_preconditioner = "it preconditions each block with inverse roots of Kronecker "
                         "factors, full matrices, not a per-value diagonal",
};

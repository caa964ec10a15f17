/* muon.c: Muon (Jordan et al. 2024; torch.optim.Muon's update) for the hidden 2-D weight
 * matrices, AdamW for every other parameter (the common Muon recipe).
 *
 * Per Muon matrix W [A, B] with gradient G (lr = learning_rate times the schedule's factor):
 *   M = mu M + (1 - mu) G                        (M0 = 0; torch's lerp form)
 *   U = (1 - mu) G + mu M  (nesterov)  or  M
 *   X = U / max(||U||_F, epsilon), then ns_steps times (s = min(A, B) side):
 *     A <= B:  S = X X^T,  X = a X + (b S + c S S) X
 *     A >  B:  S = X^T X,  X = a X + X (b S + c S S)     (torch's transpose, without copying)
 *   W = (1 - lr weight_decay) W - lr scale(A, B) X
 * scale (adjust_lr_fn): 0 original sqrt(max(1, A/B)), 1 match_rms_adamw 0.2 sqrt(max(A, B)),
 * 2 spectral_unclamped sqrt(A/B). Every product is the backend's gemm.
 * Routing: parameters of kind weight with exactly 2 dimensions go to Muon, except the last
 * such weight (the output layer) when there are two or more, unless muon_output_layer = 1;
 * biases, norm parameters, embeddings, convolution weights and the output layer take AdamW
 * with its own adamw_* hyperparameters (decoupled decay on weights and embeddings only),
 * scheduled by the same factor. */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const tb_hparam_spec muon_hparams[] = {
    {.name = "learning_rate", .default_value = 1e-3, .min = 0.0, .max = 1e6, .min_open = true,
     .help = "Muon's step size (torch lr), before the shape scale"},
    {.name = "weight_decay", .default_value = 0.1, .min = 0.0, .max = 1e6,
     .help = "decoupled decay of the Muon matrices, w *= 1 - lr wd"},
    {.name = "momentum", .default_value = 0.95, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "momentum mu, in [0, 1)"},
    {.name = "nesterov", .default_value = 1.0, .min = 0.0, .max = 1.0, .is_flag = true,
     .help = "1: orthogonalise (1 - mu) g + mu M, 0: M"},
    {.name = "ns_a", .default_value = 3.4445, .min = -100.0, .max = 100.0,
     .help = "Newton-Schulz coefficient a (torch ns_coefficients[0])"},
    {.name = "ns_b", .default_value = -4.7750, .min = -100.0, .max = 100.0,
     .help = "Newton-Schulz coefficient b (torch ns_coefficients[1])"},
    {.name = "ns_c", .default_value = 2.0315, .min = -100.0, .max = 100.0,
     .help = "Newton-Schulz coefficient c (torch ns_coefficients[2])"},
    {.name = "epsilon", .default_value = 1e-7, .min = 0.0, .max = 1.0, .min_open = true,
     .help = "floor of ||U||_F before the iteration (torch eps)"},
    {.name = "ns_steps", .default_value = 5, .min = 0, .max = 99,
     .help = "Newton-Schulz iterations, integer below 100"},
    {.name = "adjust_lr_fn", .default_value = 0, .min = 0, .max = 2,
     .help = "shape scale: 0 original, 1 match_rms_adamw, 2 spectral_unclamped"},
    {.name = "muon_output_layer", .default_value = 0, .min = 0, .max = 1, .is_flag = true,
     .help = "1: the last 2-D weight (output layer) takes Muon too; 0: AdamW (if not the only "
             "one)"},
    {.name = "adamw_learning_rate", .default_value = 3e-4, .min = 0.0, .max = 1e6,
     .min_open = true, .help = "AdamW's step size for the parameters Muon does not take"},
    {.name = "adamw_beta1", .default_value = 0.9, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "AdamW first-moment decay"},
    {.name = "adamw_beta2", .default_value = 0.999, .min = 0.0, .max = 1.0, .max_open = true,
     .help = "AdamW second-moment decay"},
    {.name = "adamw_epsilon", .default_value = 1e-8, .min = 0.0, .max = 1e12, .min_open = true,
     .help = "AdamW epsilon, added to sqrt(v_hat)"},
    {.name = "adamw_weight_decay", .default_value = 0.01, .min = 0.0, .max = 1e6,
     .help = "AdamW decoupled decay (weights and embeddings)"},
};

typedef struct muon_state {
    bool *muon;           /* [count] parameter i takes Muon */
    float *mom;           /* device [numel] Muon momentum M */
    float *m, *v;         /* device [numel] AdamW moments */
    float *d;             /* device [numel] orthogonalised updates */
    float *s, *h, *tmp;   /* device scratch: [side^2] twice, [largest matrix] */
} muon_state;

/* Whether a parameter is a 2-D weight matrix, Muon's candidates. */
static bool is_matrix(const tb_param *p)
{
    return p->kind == TB_PARAM_WEIGHT && p->var.value.ndim == 2;
}

static tb_status muon_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                            tb_error *err)
{
    (void)given;
    const char *ints[] = {"ns_steps", "adjust_lr_fn"};
    for (int i = 0; i < 2; i++) {
        double v = tb_hparams_get(hp, ints[i], 0);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    tb_status st = tb_opt_check_guard(hp, algorithm, "epsilon",
                                      "U / max(||U||, epsilon) would be 0/0 = NaN for a zero "
                                      "momentum",
                                      err);
    if (st != TB_OK) return st;
    return tb_opt_check_guard(hp, algorithm, "adamw_epsilon",
                              "sqrt(v_hat) + adamw_epsilon would be 0 for a parameter whose "
                              "gradients have been 0, and the update 0/0 = NaN",
                              err);
}

static void muon_destroy(tb_optimizer *opt)
{
    muon_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->mom);
    tb_backend_free(opt->be, s->m);
    tb_backend_free(opt->be, s->s);
    tb_backend_free(opt->be, s->tmp);
    free(s->muon);
    free(s);
}

/* Marks the Muon matrices; TB_ERR_INVALID when there are none. *side and *largest: the
 * largest min(A, B) and A B among them. */
static tb_status route(tb_optimizer *opt, muon_state *s, int64_t *side, int64_t *largest,
                       tb_error *err)
{
    int n = tb_params_count(opt->params), last = -1, n_matrices = 0;
    for (int i = 0; i < n; i++)
        if (is_matrix(tb_params_get(opt->params, i))) {
            last = i;
            n_matrices++;
        }
    /* a lone matrix is the whole model (a linear classifier): Muon takes it */
    bool output_too = tb_opt_hp(opt, "muon_output_layer") != 0.0 || n_matrices == 1;
    *side = *largest = 1;
    for (int i = 0; i < n; i++) {
        const tb_param *p = tb_params_get(opt->params, i);
        s->muon[i] = is_matrix(p) && (output_too || i != last);
        if (!s->muon[i]) continue;
        int64_t a = p->var.value.shape[0], b = p->var.value.shape[1];
        if ((a < b ? a : b) > *side) *side = a < b ? a : b;
        if (a * b > *largest) *largest = a * b;
    }
    if (n_matrices > 0) return TB_OK;
    return tb_fail(err, TB_ERR_INVALID,
                   "muon: the model has no 2-D weight matrix, so Muon would update nothing (it "
                   "orthogonalises 2-D weights; biases, norms, embeddings and convolution "
                   "weights take AdamW): use adamw");
}

static tb_status muon_init(tb_optimizer *opt, tb_error *err)
{
    muon_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "muon: cannot allocate its state");
    opt->state = s;
    int n = tb_params_count(opt->params);
    s->muon = calloc((size_t)n + 1, sizeof *s->muon);
    if (!s->muon) return tb_fail(err, TB_ERR_NOMEM, "muon: cannot allocate its state");
    int64_t side, largest;
    tb_status st = route(opt, s, &side, &largest, err);
    if (st != TB_OK) return st;
    int64_t numel = tb_params_numel(opt->params);
    s->mom = tb_opt_alloc_state(opt, numel, 0.0f, err);
    s->m = s->mom ? tb_opt_alloc_state(opt, 3 * numel, 0.0f, err) : NULL;
    s->s = s->m ? tb_opt_alloc_state(opt, 2 * side * side, 0.0f, err) : NULL;
    s->tmp = s->s ? tb_opt_alloc_state(opt, largest, 0.0f, err) : NULL;
    if (!s->tmp) return TB_ERR_NOMEM;
    s->v = s->m + numel;
    s->d = s->v + numel;
    s->h = s->s + side * side;
    return TB_OK;
}

/* The shape scale of adjust_lr_fn for a matrix [a, b] (torch's _adjust_lr). */
static double shape_scale(int kind, double a, double b)
{
    if (kind == 1) return 0.2 * sqrt(fmax(a, b));
    if (kind == 2) return sqrt(a / b);
    return sqrt(fmax(1.0, a / b));
}

/* ns_steps quintic Newton-Schulz iterations on x [a, b] in place (backend gemm). */
static void newton_schulz(tb_optimizer *opt, int a, int b, float *x)
{
    muon_state *s = opt->state;
    tb_backend *be = opt->be;
    const float ca = (float)tb_opt_hp(opt, "ns_a"), cb = (float)tb_opt_hp(opt, "ns_b"),
                cc = (float)tb_opt_hp(opt, "ns_c");
    const int steps = (int)tb_opt_hp(opt, "ns_steps");
    const bool wide = a <= b; /* S = X X^T [a, a]; else S = X^T X [b, b] */
    const int k = wide ? a : b;
    const size_t bytes = (size_t)a * b * sizeof(float);
    for (int it = 0; it < steps; it++) {
        if (wide)
            be->ops.gemm(be, false, true, k, k, b, 1.0f, x, b, x, b, 0.0f, s->s, k);
        else
            be->ops.gemm(be, true, false, k, k, a, 1.0f, x, b, x, b, 0.0f, s->s, k);
        be->ops.copy(be, s->h, s->s, (size_t)k * k * sizeof(float));
        be->ops.gemm(be, false, false, k, k, k, cc, s->s, k, s->s, k, cb, s->h, k);
        be->ops.copy(be, s->tmp, x, bytes);
        if (wide)
            be->ops.gemm(be, false, false, a, b, a, 1.0f, s->h, k, x, b, ca, s->tmp, b);
        else
            be->ops.gemm(be, false, false, a, b, b, 1.0f, x, b, s->h, k, ca, s->tmp, b);
        be->ops.copy(be, x, s->tmp, bytes);
    }
}

/* The orthogonalised update of Muon matrix p into d; TB_ERR_NUMERIC if it is not finite. */
static tb_status muon_direction(tb_optimizer *opt, tb_param *p, tb_error *err)
{
    muon_state *s = opt->state;
    tb_backend *be = opt->be;
    const double mu = tb_opt_hp(opt, "momentum");
    const int64_t n = tb_tensor_numel(&p->var.value);
    const int a = (int)p->var.value.shape[0], b = (int)p->var.value.shape[1];
    float *mom = s->mom + p->offset, *d = s->d + p->offset;
    const float *g = p->var.grad.data;
    be->ops.scale(be, mom, n, (float)mu);
    be->ops.axpy(be, n, (float)(1.0 - mu), g, mom);
    if (tb_opt_hp(opt, "nesterov") != 0.0) {
        be->ops.copy(be, d, g, (size_t)n * sizeof(float));
        be->ops.scale(be, d, n, (float)(1.0 - mu));
        be->ops.axpy(be, n, (float)mu, mom, d);
    } else {
        be->ops.copy(be, d, mom, (size_t)n * sizeof(float));
    }
    double norm = sqrt(be->ops.sum_squares(be, n, d));
    be->ops.scale(be, d, n, (float)(1.0 / fmax(norm, tb_opt_hp(opt, "epsilon"))));
    newton_schulz(opt, a, b, d);
    double out = be->ops.sum_squares(be, n, d);
    if (isfinite(out) && isfinite(norm)) return TB_OK;
    return tb_fail(err, TB_ERR_NUMERIC,
                   "muon: step %lld: the orthogonalised update of '%s' is not finite "
                   "(Newton-Schulz coefficients %g, %g, %g over %g steps); the weights were not "
                   "updated",
                   (long long)opt->step, p->name, tb_opt_hp(opt, "ns_a"), tb_opt_hp(opt, "ns_b"),
                   tb_opt_hp(opt, "ns_c"), tb_opt_hp(opt, "ns_steps"));
}

/* AdamW's coefficients at step t for the non-Muon parameters, scheduled by `factor`. */
static tb_adam_coefs adamw_coefs(const tb_optimizer *opt, double factor, bool decays)
{
    double t = (double)opt->step, b1 = tb_opt_hp(opt, "adamw_beta1");
    double b2 = tb_opt_hp(opt, "adamw_beta2");
    double lr = tb_opt_hp(opt, "adamw_learning_rate") * factor;
    double wd = decays ? tb_opt_hp(opt, "adamw_weight_decay") : 0.0;
    tb_adam_coefs c = {.beta1 = (float)b1, .beta2 = (float)b2,
                       .one_minus_beta1 = (float)(1.0 - b1), .one_minus_beta2 = (float)(1.0 - b2),
                       .eps = (float)tb_opt_hp(opt, "adamw_epsilon"),
                       .decay = (float)(1.0 - lr * wd), .c_m = (float)(lr / (1.0 - pow(b1, t))),
                       .inv_bc2 = (float)(1.0 / (1.0 - pow(b2, t)))};
    return c;
}

/* Two sweeps: every Muon direction (checked finite), then the updates. */
static tb_status muon_step(tb_optimizer *opt, double lr, tb_error *err)
{
    muon_state *s = opt->state;
    tb_backend *be = opt->be;
    const int n = tb_params_count(opt->params);
    for (int i = 0; i < n; i++) {
        if (!s->muon[i]) continue;
        tb_status st = muon_direction(opt, tb_params_get(opt->params, i), err);
        if (st != TB_OK) return st;
    }
    const double factor = lr / tb_opt_hp(opt, "learning_rate");
    const double wd = tb_opt_hp(opt, "weight_decay");
    const int kind = (int)tb_opt_hp(opt, "adjust_lr_fn");
    const tb_adam_coefs c[2] = {adamw_coefs(opt, factor, false), adamw_coefs(opt, factor, true)};
    for (int i = 0; i < n; i++) {
        tb_param *p = tb_params_get(opt->params, i);
        int64_t numel = tb_tensor_numel(&p->var.value);
        float *w = p->var.value.data;
        if (!s->muon[i]) {
            be->ops.adam_update(be, numel, w, p->var.grad.data, s->m + p->offset,
                                s->v + p->offset, &c[tb_param_decays(p->kind)], NULL);
            continue;
        }
        double scale = shape_scale(kind, (double)p->var.value.shape[0],
                                   (double)p->var.value.shape[1]);
        if (wd != 0.0) be->ops.scale(be, w, numel, (float)(1.0 - lr * wd));
        be->ops.axpy(be, numel, (float)(-lr * scale), s->d + p->offset, w);
    }
    return TB_OK;
}

const tb_optimizer_vtable tb_optim_muon = {
    .info = {.name = "muon",
             .summary = "Muon: Newton-Schulz orthogonalised momentum for 2-D weights, AdamW "
                        "for the rest",
             .hparams = muon_hparams,
             .n_hparams = (int)(sizeof muon_hparams / sizeof *muon_hparams)},
    .check = muon_check,
    .init = muon_init,
    .step = muon_step,
    .graph_blocker = "the update's Frobenius norm is read back to the host every step",
    .destroy = muon_destroy,
    .no_preconditioner = "its update is an orthogonalised matrix (Newton-Schulz), not a "
                         "per-value diagonal scaling",
};

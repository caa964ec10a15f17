/* test_optim_zoo.c: every first-order algorithm's first steps against a closed form computed
 * here in double (with a schedule factor that changes between steps), the inclusions of Choi
 * et al. (Adam with a huge epsilon tracks momentum; AdamW/NAdamW with no decay equal
 * Adam/NAdam; LARS with trust 1 is momentum with L2), trust-ratio zero-norm cases, parameter
 * exclusions, hyperparameter bounds of every registered algorithm, schedules and clipping. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static tb_backend *be;

/* Three layers: a weight (3 values), a bias (2) and a norm scale (2); flat index i. */
#define NV 7
static const tb_param_kind kind_of[NV] = {TB_PARAM_WEIGHT, TB_PARAM_WEIGHT, TB_PARAM_WEIGHT,
                                          TB_PARAM_BIAS,   TB_PARAM_BIAS,   TB_PARAM_NORM,
                                          TB_PARAM_NORM};
static const int layer_start[4] = {0, 3, 5, 7};
static const double w_init[NV] = {0.8, -1.5, 0.3, 0.4, -0.2, 1.1, 0.9};

static double grad_at(int i, int t) { return sin(1.3 * i + 0.7 * t) + 0.1 * (i % 3); }

/* Value i of the flat numbering (parameters are 16-float aligned in the real flat buffers). */
static float *val(tb_params *p, int i)
{
    int l = i < 3 ? 0 : i < 5 ? 1 : 2;
    return (float *)tb_params_get(p, l)->var.value.data + (i - layer_start[l]);
}
static float *grd(tb_params *p, int i)
{
    int l = i < 3 ? 0 : i < 5 ? 1 : 2;
    return (float *)tb_params_get(p, l)->var.grad.data + (i - layer_start[l]);
}

static tb_params *make_params(const double *w)
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    int64_t s3 = 3, s2 = 2;
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, &s3, NULL);
    tb_params_add(p, "b", TB_PARAM_BIAS, 1, &s2, NULL);
    tb_params_add(p, "n", TB_PARAM_NORM, 1, &s2, NULL);
    tb_params_finalize(p, NULL);
    for (int i = 0; i < NV; i++) *val(p, i) = (float)w[i];
    return p;
}

static void set_grads(tb_params *p, const double *g)
{
    for (int i = 0; i < NV; i++) *grd(p, i) = (float)g[i];
}

/* ---- reference implementations in double ------------------------------------------------- */
typedef struct ref {
    double w[NV], m[NV], v[NV];
    double mu_product;
} ref;

static bool decays(int i) { return kind_of[i] == TB_PARAM_WEIGHT; }

static double norm_of(const double *x, int a, int b)
{
    double s = 0;
    for (int i = a; i < b; i++) s += x[i] * x[i];
    return sqrt(s);
}

static void ref_init(ref *r, const char *alg, const tb_hparams *hp)
{
    memset(r, 0, sizeof *r);
    memcpy(r->w, w_init, sizeof r->w);
    r->mu_product = 1;
    for (int i = 0; i < NV; i++)
        r->v[i] = strcmp(alg, "rmsprop") == 0 ? (tb_hparams_get(hp, "torch_style", 0) ? 0 : 1)
                  : strcmp(alg, "adagrad") == 0 ? tb_hparams_get(hp, "initial_accumulator", 0.1)
                                                : 0;
}

/* One step of algorithm alg at step t with learning rate lr (schedule applied). */
static void ref_step(ref *r, const char *alg, const tb_hparams *hp, const double *g, int t,
                     double lr)
{
#define H(name, def) tb_hparams_get(hp, name, def)
    double wd = H("weight_decay", 0), mu = H("momentum", 0.9), eps = H("epsilon", 1e-8);
    double b1 = H("beta1", 0.9), b2 = H("beta2", 0.999);
    if (strcmp(alg, "nadamw") == 0 && tb_hparams_has(hp, "one_minus_beta1"))
        b1 = 1 - H("one_minus_beta1", 0.1);
    double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
    if (!strcmp(alg, "momentum") || !strcmp(alg, "nesterov")) {
        for (int i = 0; i < NV; i++) {
            double gi = g[i] + (decays(i) ? wd * r->w[i] : 0);
            r->m[i] = mu * r->m[i] + gi;
            r->w[i] -= lr * (!strcmp(alg, "nesterov") ? gi + mu * r->m[i] : r->m[i]);
        }
    } else if (!strcmp(alg, "rmsprop")) { /* TF: v0 = 1, eps inside, lr inside */
        double rho = H("rho", 0.9), mom = H("momentum", 0);
        for (int i = 0; i < NV; i++) {
            r->v[i] = rho * r->v[i] + (1 - rho) * g[i] * g[i];
            r->m[i] = mom * r->m[i] + lr * g[i] / sqrt(r->v[i] + eps);
            r->w[i] -= r->m[i];
        }
    } else if (!strcmp(alg, "adagrad")) {
        for (int i = 0; i < NV; i++) {
            r->v[i] += g[i] * g[i];
            r->w[i] -= lr * g[i] / (sqrt(r->v[i]) + eps);
        }
    } else if (!strcmp(alg, "adam") || !strcmp(alg, "nadam")) { /* L2 in the gradient */
        for (int i = 0; i < NV; i++) {
            double gi = g[i] + (decays(i) ? wd * r->w[i] : 0);
            r->m[i] = b1 * r->m[i] + (1 - b1) * gi;
            r->v[i] = b2 * r->v[i] + (1 - b2) * gi * gi;
            double num = !strcmp(alg, "nadam") ? b1 * r->m[i] + (1 - b1) * gi : r->m[i];
            r->w[i] -= lr / bc1 * num / (sqrt(r->v[i] / bc2) + eps);
        }
    } else if (!strcmp(alg, "adamw") || !strcmp(alg, "nadamw")) {
        /* AlgoPerf NAdamW, steps 1-5 of docs/MATH.md section 6; AdamW without step 4 */
        for (int i = 0; i < NV; i++) {
            if (decays(i)) r->w[i] *= 1 - lr * wd;
            r->m[i] = b1 * r->m[i] + (1 - b1) * g[i];
            r->v[i] = b2 * r->v[i] + (1 - b2) * g[i] * g[i];
            double mbar = !strcmp(alg, "nadamw") ? b1 * r->m[i] + (1 - b1) * g[i] : r->m[i];
            r->w[i] -= lr / bc1 * mbar / (sqrt(r->v[i] / bc2) + eps);
        }
    } else if (!strcmp(alg, "lars")) {
        double eeta = H("eeta", 1e-3), leps = H("epsilon", 0);
        for (int l = 0; l < 3; l++) {
            int a = layer_start[l], b = layer_start[l + 1];
            double trust = 1, wn = norm_of(r->w, a, b), gn = norm_of(g, a, b);
            if (kind_of[a] == TB_PARAM_WEIGHT && wn > 0 && gn > 0)
                trust = eeta * wn / (gn + wd * wn + leps);
            double l2 = kind_of[a] == TB_PARAM_NORM ? 0 : wd;
            for (int i = a; i < b; i++) {
                r->m[i] = mu * r->m[i] + lr * trust * (g[i] + l2 * r->w[i]);
                r->w[i] -= r->m[i];
            }
        }
    } else if (!strcmp(alg, "lamb")) {
        for (int l = 0; l < 3; l++) {
            int a = layer_start[l], b = layer_start[l + 1];
            double u[NV] = {0};
            for (int i = a; i < b; i++) {
                r->m[i] = b1 * r->m[i] + (1 - b1) * g[i];
                r->v[i] = b2 * r->v[i] + (1 - b2) * g[i] * g[i];
                u[i] = r->m[i] / bc1 / (sqrt(r->v[i] / bc2) + eps) + (decays(i) ? wd * r->w[i] : 0);
            }
            double ratio = 1, wn = norm_of(r->w, a, b), un = norm_of(u, a, b);
            if (decays(a) && wn > 0 && un > 0) ratio = wn / un;
            for (int i = a; i < b; i++) r->w[i] -= lr * ratio * u[i];
        }
    }
#undef H
}

/* Runs alg for `steps` steps with schedule factors 1, 0.5, 0.25, ... and compares every value
 * with the double reference after every step. */
static void check_closed_form(const char *alg, const tb_hparams *hp, int steps, double tol)
{
    tb_params *p = make_params(w_init);
    tb_optimizer *opt = NULL;
    tb_error err = {0};
    CHECK_OK(tb_optimizer_create(alg, p, hp, &opt, &err), &err);
    if (!opt) return;
    ref r;
    ref_init(&r, alg, hp);
    double base = tb_optimizer_hparam(opt, "learning_rate");
    bool ok = true;
    for (int t = 1; t <= steps; t++) {
        double g[NV], scale = pow(0.5, t - 1);
        for (int i = 0; i < NV; i++) g[i] = grad_at(i, t);
        set_grads(p, g);
        CHECK_OK(tb_optimizer_step(opt, scale, &err), &err);
        ref_step(&r, alg, hp, g, t, base * scale);
                for (int i = 0; i < NV; i++)
            if (!(fabs(*val(p, i) - r.w[i]) <= tol)) {
                fprintf(stderr, "%s step %d: value %d is %.9g, closed form %.9g\n", alg, t, i,
                        *val(p, i), r.w[i]);
                ok = false;
            }
    }
    tb_test_check(ok, alg, __FILE__, __LINE__);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

static tb_hparams hps(int n, const char *const *names, const double *values)
{
    tb_hparams hp = {0};
    for (int i = 0; i < n; i++) tb_hparams_set(&hp, names[i], values[i], NULL);
    return hp;
}
#define HP(...)                                                                                \
    hps((int)(sizeof(const char *[]){__VA_ARGS__} / sizeof(const char *)), (const char *[]){__VA_ARGS__}
#define VALS(...) , (const double[]){__VA_ARGS__})

static void test_closed_forms(void)
{
    tb_hparams hp;
    hp = HP("learning_rate", "weight_decay") VALS(0.1, 0.05);
    check_closed_form("momentum", &hp, 4, 2e-6);
    check_closed_form("nesterov", &hp, 4, 2e-6);
    hp = HP("learning_rate", "rho", "momentum", "epsilon") VALS(0.01, 0.8, 0.7, 1e-4);
    check_closed_form("rmsprop", &hp, 4, 1e-6);
    hp = HP("learning_rate") VALS(0.1);
    check_closed_form("adagrad", &hp, 4, 1e-6); /* TF defaults: G0 = 0.1, eps = 1e-7 */
    hp = HP("learning_rate", "beta1", "beta2", "weight_decay") VALS(0.01, 0.8, 0.95, 0.1);
    check_closed_form("adam", &hp, 4, 1e-6);
    check_closed_form("adamw", &hp, 4, 1e-6);
    check_closed_form("nadam", &hp, 4, 1e-6);
    check_closed_form("nadamw", &hp, 4, 1e-6);
    check_closed_form("lamb", &hp, 4, 1e-6);
    /* AlgoPerf's first published search-space point, by its names */
    hp = HP("learning_rate", "one_minus_beta1", "beta2", "weight_decay")
        VALS(1.308e-3, 0.0269, 0.99812, 0.164);
    check_closed_form("nadamw", &hp, 4, 1e-6);
    hp = HP("learning_rate", "momentum", "weight_decay", "eeta") VALS(1.0, 0.9, 1e-2, 0.02);
    check_closed_form("lars", &hp, 4, 1e-6);
}

/* ---- inclusions ---------------------------------------------------------------------------- */

/* Runs alg over `steps` steps of grad_at(); returns the values after every step in out
 * [steps][NV]. */
static void trajectory(const char *alg, const tb_hparams *hp, int steps, double *out)
{
    tb_params *p = make_params(w_init);
    tb_optimizer *opt = NULL;
    tb_error err = {0};
    CHECK_OK(tb_optimizer_create(alg, p, hp, &opt, &err), &err);
    for (int t = 1; opt && t <= steps; t++) {
        double g[NV];
        for (int i = 0; i < NV; i++) g[i] = grad_at(i, t);
        set_grads(p, g);
        tb_optimizer_step(opt, 1.0, &err);
        for (int i = 0; i < NV; i++) out[(t - 1) * NV + i] = *val(p, i);
    }
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

static double max_diff(const double *a, const double *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

/* Choi et al.: Adam with eps = 1e8 and alpha = eta eps / (1 - beta1) is heavy-ball momentum
 * (mu = beta1, lr eta) except for the factor 1/(1 - beta1^t) on step t: with epsilon added to
 * sqrt(v_hat) (torch's convention, used here) the early factor is that alone; Choi's table,
 * with b_t = sqrt(1 - beta2^t) / (1 - beta1^t), also has a beta2 part. So each step's update
 * ratio must be 1/(1 - beta1^t) to float precision and within 1% of 1 once t >= 5/(1 - beta1)
 * = 50 (0.9^50 = 0.5%). */
static void test_adam_tracks_momentum(void)
{
    enum { T = 80 };
    const double eta = 1e-3, eps = 1e8, b1 = 0.9;
    tb_hparams ha = HP("learning_rate", "beta1", "beta2", "epsilon")
        VALS(eta * eps / (1 - b1), b1, 0.9, eps);
    tb_hparams hm = HP("learning_rate", "momentum") VALS(eta, b1);
    static double a[T * NV], m[T * NV];
    trajectory("adam", &ha, T, a);
    trajectory("momentum", &hm, T, m);
    double worst_factor = 0, worst_late = 0;
    for (int t = 1; t <= T; t++)
        for (int i = 0; i < NV; i++) {
            double prev_a = t > 1 ? a[(t - 2) * NV + i] : w_init[i];
            double prev_m = t > 1 ? m[(t - 2) * NV + i] : w_init[i];
            double da = a[(t - 1) * NV + i] - prev_a, dm = m[(t - 1) * NV + i] - prev_m;
            if (fabs(dm) < 1e-4) continue; /* ratio of tiny float differences */
            double ratio = da / dm;
            worst_factor = fmax(worst_factor, fabs(ratio * (1 - pow(b1, t)) - 1));
            if (t >= 50) worst_late = fmax(worst_late, fabs(ratio - 1));
        }
    if (getenv("TB_VERBOSE"))
        printf("adam(eps=1e8) vs momentum: max |ratio (1-b1^t) - 1| = %.3g, max |ratio - 1| "
               "for t >= 50 = %.3g\n", worst_factor, worst_late);
    CHECK(worst_factor < 1e-3);
    CHECK(worst_late < 0.01);
}

static void test_equalities(void)
{
    enum { T = 6 };
    double a[T * NV], b[T * NV];
    /* AdamW and NAdamW without decay are Adam and NAdam without decay: the same numbers */
    tb_hparams h = HP("learning_rate", "weight_decay") VALS(0.01, 0.0);
    trajectory("adamw", &h, T, a);
    trajectory("adam", &h, T, b);
    CHECK(max_diff(a, b, T * NV) == 0.0);
    trajectory("nadamw", &h, T, a);
    trajectory("nadam", &h, T, b);
    CHECK(max_diff(a, b, T * NV) == 0.0);
    /* sgd with its flags is momentum / nesterov */
    tb_hparams hs = HP("learning_rate", "momentum", "nesterov", "weight_decay")
        VALS(0.1, 0.9, 0.0, 0.01);
    tb_hparams hm = HP("learning_rate", "momentum", "weight_decay") VALS(0.1, 0.9, 0.01);
    trajectory("sgd", &hs, T, a);
    trajectory("momentum", &hm, T, b);
    CHECK(max_diff(a, b, T * NV) == 0.0);
    tb_hparams_set(&hs, "nesterov", 1, NULL);
    trajectory("sgd", &hs, T, a);
    trajectory("nesterov", &hm, T, b);
    CHECK(max_diff(a, b, T * NV) == 0.0);
    /* LARS with trust 1 is momentum with L2 (lr inside the buffer equals lr outside at a
     * constant lr): biases (trust 1, L2 kept) against the closed form of momentum with L2 on
     * them; norm parameters (trust 1, no L2) against the "momentum" optimizer itself. */
    tb_hparams hl = HP("learning_rate", "momentum", "weight_decay") VALS(0.1, 0.9, 0.05);
    tb_hparams hn = HP("learning_rate", "momentum", "weight_decay") VALS(0.1, 0.9, 0.05);
    trajectory("lars", &hl, T, a);
    trajectory("momentum", &hn, T, b);
    double w3 = w_init[3], v3 = 0, worst = 0;
    for (int t = 1; t <= T; t++) {
        double gi = grad_at(3, t) + 0.05 * w3;
        v3 = 0.9 * v3 + gi;
        w3 -= 0.1 * v3;
        worst = fmax(worst, fabs(a[(t - 1) * NV + 3] - w3));
        for (int i = 5; i < 7; i++)
            worst = fmax(worst, fabs(a[(t - 1) * NV + i] - b[(t - 1) * NV + i]));
    }
    CHECK(worst < 1e-6);
}

/* ---- trust ratios at zero norms ------------------------------------------------------------ */
static void test_trust_zero_norms(void)
{
    tb_error err = {0};
    double zero_w[NV];
    memcpy(zero_w, w_init, sizeof zero_w);
    zero_w[0] = zero_w[1] = zero_w[2] = 0; /* the weight layer has norm 0 */
    double g[NV];
    for (int i = 0; i < NV; i++) g[i] = grad_at(i, 1);
    /* LAMB, ||w|| = 0: ratio 1, the plain Adam first step lr g/(|g| + eps) */
    tb_params *p = make_params(zero_w);
    tb_optimizer *opt = NULL;
    tb_hparams h = HP("learning_rate", "epsilon") VALS(0.01, 1e-6);
    CHECK_OK(tb_optimizer_create("lamb", p, &h, &opt, &err), &err);
    set_grads(p, g);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    for (int i = 0; i < 3; i++)
        CHECK_NEAR(*val(p, i), -0.01 * g[i] / (fabs(g[i]) + 1e-6), 1e-7);
    /* LAMB, g = 0 on step 2 after a zero gradient step 1 elsewhere: u = wd w only, so the
     * step is lr ||w|| / ||wd w|| * wd w = lr w */
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    p = make_params(w_init);
    h = HP("learning_rate", "weight_decay") VALS(0.01, 0.3);
    CHECK_OK(tb_optimizer_create("lamb", p, &h, &opt, &err), &err);
    double gz[NV] = {0};
    set_grads(p, gz);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    for (int i = 0; i < 3; i++) CHECK_NEAR(*val(p, i), w_init[i] * 0.99, 1e-7);
    for (int i = 3; i < NV; i++) CHECK_NEAR(*val(p, i), (float)w_init[i], 0);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    /* LARS, ||g|| = 0: trust 1, v = lr wd w */
    p = make_params(w_init);
    h = HP("learning_rate", "weight_decay") VALS(0.1, 0.01);
    CHECK_OK(tb_optimizer_create("lars", p, &h, &opt, &err), &err);
    set_grads(p, gz);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    for (int i = 0; i < 5; i++) CHECK_NEAR(*val(p, i), w_init[i] * 0.999, 1e-7);
    for (int i = 5; i < NV; i++) CHECK_NEAR(*val(p, i), (float)w_init[i], 0);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    /* LARS, ||w|| = 0: trust 1, v = lr g */
    p = make_params(zero_w);
    CHECK_OK(tb_optimizer_create("lars", p, &h, &opt, &err), &err);
    set_grads(p, g);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    for (int i = 0; i < 3; i++) CHECK_NEAR(*val(p, i), -0.1 * g[i], 1e-7);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

/* torch.optim.RMSprop differs from the TF form by v0 (0 vs 1), eps outside the root and lr
 * outside the buffer; the first step shows all three. */
static void test_rmsprop_styles(void)
{
    tb_error err = {0};
    for (int torch = 0; torch <= 1; torch++) {
        tb_params *p = make_params(w_init);
        tb_optimizer *opt = NULL;
        tb_hparams h = HP("learning_rate", "rho", "epsilon", "torch_style")
            VALS(0.01, 0.9, 1e-3, (double)torch);
        CHECK_OK(tb_optimizer_create("rmsprop", p, &h, &opt, &err), &err);
        double g[NV];
        for (int i = 0; i < NV; i++) g[i] = grad_at(i, 1);
        set_grads(p, g);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
        for (int i = 0; i < NV; i++) {
            double v = (torch ? 0.0 : 0.9) + 0.1 * g[i] * g[i];
            double d = torch ? sqrt(v) + 1e-3 : sqrt(v + 1e-3);
            CHECK_NEAR(*val(p, i), w_init[i] - 0.01 * g[i] / d, 1e-7);
        }
        tb_optimizer_destroy(opt);
        tb_params_destroy(p);
    }
}

/* ---- hyperparameters --------------------------------------------------------------------- */
static void test_every_bound(void)
{
    tb_params *p = make_params(w_init);
    tb_error err = {0};
    int checked = 0;
    for (int a = 0; a < tb_optimizer_count(); a++) {
        const tb_optimizer_info *info = tb_optimizer_info_at(a);
        tb_optimizer *opt = NULL;
        if (strcmp(info->name, "muon") == 0) /* no 2-D weight here: refused (test_optim_matrix) */
            CHECK(tb_optimizer_create(info->name, p, NULL, &opt, &err) == TB_ERR_INVALID);
        else
            CHECK_OK(tb_optimizer_create(info->name, p, NULL, &opt, &err), &err); /* defaults */
        tb_optimizer_destroy(opt);
        for (int j = 0; j < info->n_hparams; j++) {
            const tb_hparam_spec *s = &info->hparams[j];
            bool in = s->min_open ? s->default_value > s->min : s->default_value >= s->min;
            in &= s->max_open ? s->default_value < s->max : s->default_value <= s->max;
            if (!in) fprintf(stderr, "%s: default of %s is out of range\n", info->name, s->name);
            CHECK(in);
            double bad[3] = {s->min_open ? s->min : s->min - fmax(1e-3, fabs(s->min) * 1e-3),
                             s->max_open ? s->max : s->max + fmax(1e-3, fabs(s->max) * 1e-3),
                             s->is_flag ? 0.5 : NAN};
            for (int k = 0; k < 3; k++) {
                tb_hparams hp = {0};
                tb_hparams_set(&hp, s->name, bad[k], NULL);
                opt = NULL;
                tb_status st = tb_optimizer_create(info->name, p, &hp, &opt, &err);
                bool named = st == TB_ERR_INVALID && strstr(err.message, s->name) &&
                             strstr(err.message, info->name);
                if (!named)
                    fprintf(stderr, "%s: %s = %g accepted or unnamed (%s)\n", info->name,
                            s->name, bad[k], st == TB_OK ? "accepted" : err.message);
                CHECK(named);
                tb_optimizer_destroy(opt);
                checked++;
            }
        }
    }
    CHECK(checked >= 3 * 40);
    /* nadamw: beta1 and one_minus_beta1 are one value */
    tb_optimizer *opt = NULL;
    tb_hparams hp = HP("one_minus_beta1") VALS(0.0269);
    CHECK_OK(tb_optimizer_create("nadamw", p, &hp, &opt, &err), &err);
    CHECK_NEAR(tb_optimizer_hparam(opt, "beta1"), 0.9731, 1e-15);
    tb_optimizer_destroy(opt);
    hp = HP("beta1") VALS(0.95);
    CHECK_OK(tb_optimizer_create("nadamw", p, &hp, &opt, &err), &err);
    CHECK_NEAR(tb_optimizer_hparam(opt, "one_minus_beta1"), 0.05, 1e-15);
    tb_optimizer_destroy(opt);
    opt = NULL;
    hp = HP("beta1", "one_minus_beta1") VALS(0.9, 0.2);
    CHECK_FAILS(tb_optimizer_create("nadamw", p, &hp, &opt, &err), TB_ERR_INVALID, &err,
                "beta1 = 0.9 and one_minus_beta1 = 0.2 disagree");
    CHECK(opt == NULL);
    hp = HP("eeta") VALS(0.0);
    CHECK_FAILS(tb_optimizer_create("lars", p, &hp, &opt, &err), TB_ERR_INVALID, &err,
                "lars: eeta = 0 is outside (0, 1e+06]");
    tb_params_destroy(p);
}

/* ---- schedules and clipping ---------------------------------------------------------------- */
static void test_schedules(void)
{
    tb_error err = {0};
    for (int k = 0; k < TB_SCHEDULE_COUNT; k++) { /* names round-trip */
        tb_schedule_kind got = TB_SCHEDULE_COUNT;
        CHECK_OK(tb_schedule_parse(tb_schedule_name((tb_schedule_kind)k), &got, &err), &err);
        CHECK(got == (tb_schedule_kind)k);
    }
    tb_schedule_kind kind;
    CHECK_OK(tb_schedule_parse("poly", &kind, &err), &err);
    CHECK(kind == TB_SCHEDULE_POLYNOMIAL);
    CHECK_FAILS(tb_schedule_parse("exponential", &kind, &err), TB_ERR_INVALID, &err,
                "unknown schedule 'exponential'");
    tb_schedule lin = {.kind = TB_SCHEDULE_LINEAR_DECAY, .warmup_steps = 10, .total_steps = 110};
    CHECK_NEAR(tb_schedule_factor(&lin, 1), 0.1, 1e-15);
    CHECK_NEAR(tb_schedule_factor(&lin, 10), 1.0, 1e-15);
    CHECK_NEAR(tb_schedule_factor(&lin, 35), 0.75, 1e-15);
    CHECK_NEAR(tb_schedule_factor(&lin, 110), 0.0, 0);
    CHECK_NEAR(tb_schedule_factor(&lin, 200), 0.0, 0);
    /* AlgoPerf's end_factor: the decay ends there and holds it; warmup is unchanged */
    tb_schedule lin_end = lin, cos_end = {.kind = TB_SCHEDULE_WARMUP_COSINE, .warmup_steps = 10,
                                          .total_steps = 110, .end_factor = 0.01};
    lin_end.end_factor = 0.01;
    CHECK_NEAR(tb_schedule_factor(&lin_end, 5), 0.5, 1e-15);
    CHECK_NEAR(tb_schedule_factor(&lin_end, 35), 0.01 + 0.99 * 0.75, 1e-15);
    CHECK_NEAR(tb_schedule_factor(&lin_end, 110), 0.01, 0);
    CHECK_NEAR(tb_schedule_factor(&lin_end, 500), 0.01, 0);
    CHECK_NEAR(tb_schedule_factor(&cos_end, 60), 0.01 + 0.99 * 0.5, 1e-15);
    CHECK_NEAR(tb_schedule_factor(&cos_end, 110), 0.01, 0);
    CHECK_OK(tb_schedule_validate(&lin_end, &err), &err);
    lin_end.end_factor = 1.5;
    CHECK_FAILS(tb_schedule_validate(&lin_end, &err), TB_ERR_INVALID, &err,
                "end_factor = 1.5 is outside [0, 1]");
    tb_schedule poly = {.kind = TB_SCHEDULE_POLYNOMIAL, .warmup_steps = 196, .total_steps = 1729};
    CHECK_NEAR(tb_schedule_factor(&poly, 98), 0.5, 1e-15); /* Nado et al.'s lengths, power 2 */
    double p = (1000.0 - 196) / 1533;
    CHECK_NEAR(tb_schedule_factor(&poly, 1000), (1 - p) * (1 - p), 1e-15);
    poly.power = 1.0; /* power 1 is linear decay */
    CHECK_NEAR(tb_schedule_factor(&poly, 1000), 1 - p, 1e-15);
    tb_schedule step = {.kind = TB_SCHEDULE_STEP, .total_steps = 90, .decay_factor = 0.5,
                        .step_every = 30};
    CHECK_NEAR(tb_schedule_factor(&step, 1), 1.0, 0);
    CHECK_NEAR(tb_schedule_factor(&step, 30), 1.0, 0);
    CHECK_NEAR(tb_schedule_factor(&step, 31), 0.5, 0);
    CHECK_NEAR(tb_schedule_factor(&step, 61), 0.25, 0);
    step.decay_factor = 0;
    step.step_every = 0; /* defaults: 0.1 every (90 - 0) / 3 = 30 steps */
    CHECK_NEAR(tb_schedule_factor(&step, 31), 0.1, 1e-15);
    /* the default interval rounds up: 3 levels (x0.1 every third), never a fourth at the end */
    step.total_steps = 10; /* every 4 steps, not 10 / 3 = 3 (which gave 0.001 at step 10) */
    const double ten[10] = {1, 1, 1, 1, 0.1, 0.1, 0.1, 0.1, 0.01, 0.01};
    for (int t = 1; t <= 10; t++) CHECK_NEAR(tb_schedule_factor(&step, t), ten[t - 1], 1e-15);
    step.total_steps = 2;
    CHECK_NEAR(tb_schedule_factor(&step, 1), 1.0, 0);
    CHECK_NEAR(tb_schedule_factor(&step, 2), 0.1, 1e-15);
    for (int64_t total = 1; total <= 40; total++) { /* the last step is at most x0.01 */
        step.total_steps = total;
        CHECK(tb_schedule_factor(&step, total) >= 0.01 - 1e-15);
    }
    /* past the end (a run longer than its schedule) every schedule holds its last factor */
    step.total_steps = 10;
    CHECK_NEAR(tb_schedule_factor(&step, 1000), 0.01, 1e-15);
    tb_schedule cos = {.kind = TB_SCHEDULE_WARMUP_COSINE, .warmup_steps = 0, .total_steps = 100};
    CHECK_NEAR(tb_schedule_factor(&cos, 50), 0.5, 1e-15);
    CHECK_OK(tb_schedule_validate(&cos, &err), &err);
    tb_schedule bad = {.kind = TB_SCHEDULE_POLYNOMIAL, .warmup_steps = 5, .total_steps = 100,
                       .power = -1};
    CHECK_FAILS(tb_schedule_validate(&bad, &err), TB_ERR_INVALID, &err, "power = -1");
    bad = (tb_schedule){.kind = TB_SCHEDULE_STEP, .total_steps = 100, .decay_factor = 1.5};
    CHECK_FAILS(tb_schedule_validate(&bad, &err), TB_ERR_INVALID, &err, "decay_factor = 1.5");
    bad = (tb_schedule){.kind = TB_SCHEDULE_LINEAR_DECAY, .warmup_steps = 50, .total_steps = 10};
    CHECK_FAILS(tb_schedule_validate(&bad, &err), TB_ERR_INVALID, &err,
                "warmup_steps = 50 exceeds total_steps = 10");
}

static void test_clipping(void)
{
    tb_params *p = make_params(w_init);
    double g[NV] = {3, 0, 0, 4, 0, 0, 0}; /* global norm 5 across two parameters */
    set_grads(p, g);
    CHECK_NEAR(tb_params_clip_grad_norm(p, 10.0), 5.0, 1e-12); /* below: unchanged */
    CHECK_NEAR(*grd(p, 0), 3.0, 0);
    CHECK_NEAR(tb_params_clip_grad_norm(p, 0.0), 5.0, 1e-12); /* disabled */
    CHECK_NEAR(*grd(p, 3), 4.0, 0);
    CHECK_NEAR(tb_params_clip_grad_norm(p, 1.0), 5.0, 1e-12);
    CHECK_NEAR(*grd(p, 0), 3.0 / (5.0 + 1e-6), 1e-7);
    CHECK_NEAR(*grd(p, 3), 4.0 / (5.0 + 1e-6), 1e-7);
    CHECK_NEAR(tb_params_grad_norm(p), 1.0, 1e-6);
    g[1] = NAN; /* a non-finite norm is reported and nothing is scaled */
    set_grads(p, g);
    CHECK(isnan(tb_params_clip_grad_norm(p, 1.0)));
    CHECK_NEAR(*grd(p, 0), 3.0, 0);
    tb_params_destroy(p);
}

int main(void)
{
    be = tb_test_backend();
    test_closed_forms();
    test_adam_tracks_momentum();
    test_equalities();
    test_trust_zero_norms();
    test_rmsprop_styles();
    test_every_bound();
    test_schedules();
    test_clipping();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_zoo");
}

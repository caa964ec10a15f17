/* test_optim_matrix.c: Muon, SOAP and PSGD Kron against their reference implementations'
 * 24-step trajectories on an MLP 6-10-5-3 (6-6-6-6 for SOAP; tests/golden/golden_traj.py and
 * make_<algorithm>_golden.py): the recorded gradients are replayed with the recorded schedule
 * factors (and Kron's recorded probes and balance draws) and every parameter is compared after
 * every step. Also Muon's routing and its refusals, and Kron's refusals. (Sophia computes its
 * own gradients: test_optim_sophia.c.) */
#include "optim_traj.h"

#include "optim/psgd_kron.h"

static tb_backend *be;
static const int64_t shapes[6][2] = {{10, 6}, {10, 0}, {5, 10}, {5, 0}, {3, 5}, {3, 0}};

/* Kron's tolerance (atol and rtol): 7x its observed worst difference (README of tests/golden/),
 * and 10x below the difference the probes make (replaying -V moves the parameters 1e-5), which
 * MAT_ATOL would not see. */
#define KRON_TOL 1e-6

static const struct {
    const char *fixture, *algorithm;
    double tol; /* 0: MAT_ATOL, MAT_RTOL */
} cases[] = {
    {"optim_muon", "muon", 0},
    {"optim_muon_rms", "muon", 0},
    {"optim_soap", "soap", 0},
    {"optim_soap_norm", "soap", 0},
    {"optim_kron", "psgd_kron", KRON_TOL},
    {"optim_kron_diag", "psgd_kron", KRON_TOL},
};

/* Hands psgd_kron step t's recorded probes (v.<name>.<t>, as double into buf) and balance draw. */
static void give_probes(const tb_golden *g, tb_optimizer *opt, int t, double *buf)
{
    char name[48];
    snprintf(name, sizeof name, "bal.%d", t);
    bool balance = tb_golden_scalar(g, name) != 0.0;
    tb_error err = {0};
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "v.%s.%d", traj_names[i], t);
        const tb_golden_tensor *v = tb_golden_get(g, name);
        CHECK(v != NULL);
        if (!v) return;
        double *dst = buf + 64 * i;
        const float *src = v->data;
        for (int64_t e = 0; e < v->numel && e < 64; e++) dst[e] = src[e];
        CHECK_OK(tb_psgd_kron_give_probe(opt, i, dst, v->numel, balance, &err), &err);
    }
}

/* The MLP's parameters, in golden_traj.py's order, with the fixture's shapes (g NULL: the
 * default widths 6-10-5-3). */
static tb_params *mlp_params(const tb_golden *g, tb_var **vars, tb_error *err)
{
    tb_params *p = NULL;
    if (tb_params_create(be, &p, err) != TB_OK) return NULL;
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s.0", traj_names[i]);
        const tb_golden_tensor *t = g ? tb_golden_get(g, name) : NULL;
        bool matrix = traj_names[i][0] == 'w';
        int64_t shape[2] = {t ? t->shape[0] : shapes[i][0],
                            t && matrix ? t->shape[1] : shapes[i][1]};
        vars[i] = tb_params_add(p, traj_names[i], matrix ? TB_PARAM_WEIGHT : TB_PARAM_BIAS,
                                matrix ? 2 : 1, shape, err);
    }
    if (tb_params_finalize(p, err) != TB_OK) {
        tb_params_destroy(p);
        return NULL;
    }
    return p;
}

static void run_case(const char *fixture, const char *algorithm, double tol)
{
    tb_golden g;
    if (!tb_golden_load(fixture, &g)) {
        tb_test_check(false, fixture, __FILE__, __LINE__);
        return;
    }
    tb_hparams hp = traj_hparams(&g);
    tb_error err = {0};
    tb_var *v[6];
    tb_params *p = mlp_params(&g, v, &err);
    CHECK(p != NULL);
    char name[48];
    for (int i = 0; p && i < 6; i++) {
        snprintf(name, sizeof name, "%s.0", traj_names[i]);
        tb_golden_upload(&g, name, &v[i]->value);
    }
    tb_optimizer *opt = NULL;
    if (p) CHECK_OK(tb_optimizer_create(algorithm, p, &hp, &opt, &err), &err);
    double max_diff = 0;
    const int steps = (int)tb_golden_scalar(&g, "steps");
    CHECK(steps >= 20);
    double probes[6 * 64];
    for (int t = 1; opt && t <= steps; t++) {
        snprintf(name, sizeof name, "f.%d", t);
        double factor = tb_golden_scalar(&g, name);
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "g.%s.%d", traj_names[i], t);
            tb_golden_upload(&g, name, &v[i]->grad);
        }
        if (strcmp(algorithm, "psgd_kron") == 0) give_probes(&g, opt, t, probes);
        CHECK_OK(tb_optimizer_step(opt, factor, &err), &err);
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "%s.%d", traj_names[i], t);
            traj_compare_tol(&g, name, &v[i]->value, &max_diff, tol ? tol : MAT_ATOL,
                             tol ? tol : MAT_RTOL);
        }
    }
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-16s %-8s: max abs diff over %d steps %.3g\n", fixture, algorithm, steps,
               max_diff);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_golden_free(&g);
}

/* Muon on parameters without a 2-D weight matrix is refused naming the cause; a lone matrix
 * takes Muon (a linear model), the output layer of two does not unless muon_output_layer = 1:
 * one step with the same gradient moves the matrices by Muon's or AdamW's rule. */
static void muon_refusals(void)
{
    tb_error err = {0};
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    int64_t ws[2] = {3, 4}, cs[4] = {2, 1, 3, 3};
    tb_params_add(p, "conv.weight", TB_PARAM_WEIGHT, 4, cs, NULL);
    tb_params_add(p, "emb", TB_PARAM_EMBEDDING, 2, ws, NULL);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    tb_optimizer *opt = NULL;
    CHECK(tb_optimizer_create("muon", p, NULL, &opt, &err) == TB_ERR_INVALID && !opt);
    CHECK(strstr(err.message, "muon: the model has no 2-D weight matrix") != NULL);
    tb_params_destroy(p);

    tb_hparams bad = {0};
    tb_hparams_set(&bad, "ns_steps", 2.5, NULL);
    CHECK(tb_optimizer_check_hparams("muon", &bad, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "ns_steps = 2.5 must be a whole number") != NULL);
    tb_hparams_set(&bad, "ns_steps", 100, NULL);
    CHECK(tb_optimizer_check_hparams("muon", &bad, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "ns_steps = 100 is outside [0, 99]") != NULL);
    tb_hparams big = {0};
    tb_hparams_set(&big, "adjust_lr_fn", 3, NULL);
    CHECK(tb_optimizer_check_hparams("muon", &big, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "adjust_lr_fn = 3 is outside [0, 2]") != NULL);
}

/* The change of the output layer w2 (of w1 [4, 3], w2 [2, 4]) after one step from 0.5 with
 * gradient 1 everywhere, output_layer as muon_output_layer. */
static void routed_step(double output_layer, float *w2)
{
    tb_error err = {0};
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    int64_t s1[2] = {4, 3}, s2[2] = {2, 4};
    tb_var *v1 = tb_params_add(p, "w1", TB_PARAM_WEIGHT, 2, s1, NULL);
    tb_var *v2 = tb_params_add(p, "w2", TB_PARAM_WEIGHT, 2, s2, NULL);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    float half[12], one[12];
    for (int i = 0; i < 12; i++)
        half[i] = 0.5f, one[i] = 1.0f;
    tb_tensor_upload(&v1->value, half, NULL);
    tb_tensor_upload(&v2->value, half, NULL);
    tb_tensor_upload(&v1->grad, one, NULL);
    tb_tensor_upload(&v2->grad, one, NULL);
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "muon_output_layer", output_layer, NULL);
    tb_hparams_set(&hp, "adamw_learning_rate", 1e-5, NULL);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create("muon", p, &hp, &opt, &err), &err);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    tb_tensor_download(&v2->value, w2, NULL);
    for (int i = 0; i < 8; i++)
        w2[i] -= 0.5f;
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

/* By default the output layer takes AdamW's first step, -adamw_lr g / (|g| + eps) and the
 * decay (adamw_lr = 1e-5, far below Muon's step); with muon_output_layer = 1 Muon's: -lr
 * sqrt(max(1, 2/4)) X, the orthogonalised rank-1 update X = c 1 1^T with c = s / sqrt(8) for the
 * iteration's singular value s in [0.5, 1.5] (torch's quintic does not converge to 1). */
static void muon_routing(void)
{
    float w2[8];
    routed_step(0, w2);
    double adamw = -1e-5 * 0.5 * 0.01 - 1e-5 / (1.0 + 1e-8);
    for (int i = 0; i < 8; i++)
        CHECK_NEAR(w2[i], adamw, 6e-8); /* an ulp of 0.5 */
    routed_step(1, w2);
    double c = (w2[0] + 1e-3 * 0.1 * 0.5) / -1e-3;
    CHECK(c > 0.5 / sqrt(8.0) && c < 1.5 / sqrt(8.0));
    for (int i = 1; i < 8; i++)
        CHECK_NEAR(w2[i], w2[0], 1e-9);
}

/* A Newton-Schulz iteration that blows up (coefficients far outside the quintic's) fails the
 * step with TB_ERR_NUMERIC naming the parameter, the weights unchanged. */
static void muon_overflow(void)
{
    tb_error err = {0};
    tb_var *v[6];
    tb_params *p = mlp_params(NULL, v, &err);
    CHECK(p != NULL);
    if (!p) return;
    float half[60], one[60];
    for (int i = 0; i < 60; i++) {
        half[i] = 0.5f;
        one[i] = 1.0f;
    }
    for (int i = 0; i < 6; i++) {
        tb_tensor_upload(&v[i]->value, half, NULL);
        tb_tensor_upload(&v[i]->grad, one, NULL);
    }
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "ns_a", 100, NULL);
    tb_hparams_set(&hp, "ns_steps", 40, NULL);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create("muon", p, &hp, &opt, &err), &err);
    CHECK(tb_optimizer_step(opt, 1.0, &err) == TB_ERR_NUMERIC);
    CHECK(strstr(err.message, "step 1: the orthogonalised update of 'w1' is not finite") != NULL);
    CHECK(tb_optimizer_steps(opt) == 0);
    float w[60];
    tb_tensor_download(&v[0]->value, w, NULL);
    bool same = true;
    for (int i = 0; i < 60; i++)
        same = same && w[i] == 0.5f;
    CHECK(same);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

/* PSGD Kron refuses an update probability of 0 or below (but -1), fractional integers and
 * out-of-range values, naming the hyperparameter; a probe of the wrong size is refused. */
static void kron_refusals(void)
{
    tb_error err = {0};
    tb_hparams bad = {0};
    tb_hparams_set(&bad, "preconditioner_update_probability", 0, NULL);
    CHECK(tb_optimizer_check_hparams("psgd_kron", &bad, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "preconditioner_update_probability = 0 must be -1") != NULL);
    tb_hparams frac = {0};
    tb_hparams_set(&frac, "max_size_triangular", 2.5, NULL);
    CHECK(tb_optimizer_check_hparams("psgd_kron", &frac, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "max_size_triangular = 2.5 must be a whole number") != NULL);
    tb_hparams far = {0};
    tb_hparams_set(&far, "memory_save_mode", 4, NULL);
    CHECK(tb_optimizer_check_hparams("psgd_kron", &far, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "memory_save_mode = 4 is outside [0, 3]") != NULL);

    tb_var *v[6];
    tb_params *p = mlp_params(NULL, v, &err);
    CHECK(p != NULL);
    if (!p) return;
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create("psgd_kron", p, NULL, &opt, &err), &err);
    double probe[60] = {0};
    CHECK(tb_psgd_kron_give_probe(opt, 0, probe, 59, false, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "psgd_kron: no parameter 0 of 59 values") != NULL);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

int main(void)
{
    be = tb_test_backend();
    if (tb_golden_available())
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(cases[i].fixture, cases[i].algorithm, cases[i].tol);
    else
        tb_test_check(false, "golden fixtures present", __FILE__, __LINE__);
    muon_refusals();
    muon_routing();
    muon_overflow();
    kron_refusals();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_matrix");
}

/* test_optim_matrix.c: the matrix optimizers against their reference implementations' 24-step
 * trajectories on an MLP 6-10-5-3 (tests/golden/golden_traj.py and make_<algorithm>_golden.py):
 * the recorded gradients are replayed with the recorded schedule factors and every parameter
 * is compared after every step. Sophia computes its own gradients and Hessian-vector products
 * on the model through the tape, with the reference's probes. Also Muon's routing and its
 * refusals, and Sophia's report of a Hessian estimate that is not finite. */
#include "golden.h"
#include "optim/sophia.h"

#include <stdlib.h>
#include <string.h>

/* float32 against float64 over 24 steps; the worst observed differences are in the README of
 * tests/golden/ (they are 1 to 2 orders of magnitude below this). */
#define MAT_ATOL 2e-5
#define MAT_RTOL 2e-5

static tb_backend *be;

static const char *const names[] = {"w1", "b1", "w2", "b2", "w3", "b3"};
static const int64_t shapes[6][2] = {{10, 6}, {10, 0}, {5, 10}, {5, 0}, {3, 5}, {3, 0}};

static const struct {
    const char *fixture, *algorithm;
} cases[] = {
    {"optim_muon", "muon"},
    {"optim_muon_rms", "muon"},
    {"optim_soap", "soap"},
    {"optim_soap_norm", "soap"},
};

/* The MLP's parameters, in golden_traj.py's order, with the fixture's shapes (g NULL: the
 * default widths 6-10-5-3). */
static tb_params *mlp_params(const tb_golden *g, tb_var **vars, tb_error *err)
{
    tb_params *p = NULL;
    if (tb_params_create(be, &p, err) != TB_OK) return NULL;
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s.0", names[i]);
        const tb_golden_tensor *t = g ? tb_golden_get(g, name) : NULL;
        bool matrix = names[i][0] == 'w';
        int64_t shape[2] = {t ? t->shape[0] : shapes[i][0], t && matrix ? t->shape[1] : shapes[i][1]};
        vars[i] = tb_params_add(p, names[i], matrix ? TB_PARAM_WEIGHT : TB_PARAM_BIAS,
                                matrix ? 2 : 1, shape, err);
    }
    if (tb_params_finalize(p, err) != TB_OK) {
        tb_params_destroy(p);
        return NULL;
    }
    return p;
}

/* Compares a parameter with the reference; prints the worst element on failure. */
static bool compare(const tb_golden *g, const char *name, const tb_tensor *got, double *max_diff)
{
    const tb_golden_tensor *ref = tb_golden_get(g, name);
    int64_t n = tb_tensor_numel(got);
    if (!ref || ref->numel != n) return tb_test_check(false, name, __FILE__, __LINE__);
    float *host = malloc((size_t)n * sizeof(float));
    tb_tensor_download(got, host, NULL);
    const float *r = ref->data;
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)host[i] - (double)r[i]);
        if (!(diff == diff)) diff = INFINITY;
        if (diff > *max_diff) *max_diff = diff;
        if (ok && diff > MAT_ATOL + MAT_RTOL * fabs((double)r[i])) {
            fprintf(stderr, "%s: %s[%lld] is %.8g, reference %.8g\n", g->name, name,
                    (long long)i, host[i], r[i]);
            ok = false;
        }
    }
    free(host);
    return tb_test_check(ok, name, __FILE__, __LINE__);
}

static tb_hparams fixture_hparams(const tb_golden *g)
{
    tb_hparams hp = {0};
    for (int i = 0; i < g->count; i++)
        if (strncmp(g->tensors[i].name, "hp.", 3) == 0)
            tb_hparams_set(&hp, g->tensors[i].name + 3, tb_golden_scalar(g, g->tensors[i].name),
                           NULL);
    return hp;
}

static void run_case(const char *fixture, const char *algorithm)
{
    tb_golden g;
    if (!tb_golden_load(fixture, &g)) {
        tb_test_check(false, fixture, __FILE__, __LINE__);
        return;
    }
    tb_hparams hp = fixture_hparams(&g);
    tb_error err = {0};
    tb_var *v[6];
    tb_params *p = mlp_params(&g, v, &err);
    CHECK(p != NULL);
    char name[48];
    for (int i = 0; p && i < 6; i++) {
        snprintf(name, sizeof name, "%s.0", names[i]);
        tb_golden_upload(&g, name, &v[i]->value);
    }
    tb_optimizer *opt = NULL;
    if (p) CHECK_OK(tb_optimizer_create(algorithm, p, &hp, &opt, &err), &err);
    double max_diff = 0;
    const int steps = (int)tb_golden_scalar(&g, "steps");
    CHECK(steps >= 20);
    for (int t = 1; opt && t <= steps; t++) {
        snprintf(name, sizeof name, "f.%d", t);
        double factor = tb_golden_scalar(&g, name);
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "g.%s.%d", names[i], t);
            tb_golden_upload(&g, name, &v[i]->grad);
        }
        CHECK_OK(tb_optimizer_step(opt, factor, &err), &err);
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "%s.%d", names[i], t);
            compare(&g, name, &v[i]->value, &max_diff);
        }
    }
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-16s %-8s: max abs diff over %d steps %.3g\n", fixture, algorithm, steps,
               max_diff);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_golden_free(&g);
}

/* ---- sophia: the model on the tape ---------------------------------------------------------- */

typedef struct mlp {
    tb_params *params;
    tb_linear_layer fc[3];
    tb_tape *tape;
    const tb_golden *g;
    int poison; /* fc3.bias[1]'s gradient: 1 NaN; 2 -+3e38 below / above its start value */
} mlp;

/* The gradient of the fixture's batch loss at the parameters' values (tb_grad_fn). */
static tb_status mlp_grad(void *user, tb_error *err)
{
    mlp *m = user;
    tb_tape_reset(m->tape);
    tb_params_zero_grad(m->params);
    tb_var *h = tb_golden_var(m->tape, m->g, "x", false);
    tb_var *labels = tb_golden_var(m->tape, m->g, "y", false);
    for (int i = 0; i < 3; i++) {
        h = tb_linear_layer_forward(m->tape, &m->fc[i], h);
        if (i < 2) h = tb_op_tanh(m->tape, h);
    }
    tb_var *loss = tb_op_softmax_xent(m->tape, h, labels, 0.0f);
    if (tb_tape_backward(m->tape, loss) != TB_OK)
        return tb_fail(err, tb_tape_status(m->tape), "%s", tb_tape_error(m->tape)->message);
    if (m->poison) {
        tb_param *b3 = tb_params_get(m->params, 5);
        float gb[3], v[3];
        tb_tensor_download(&b3->var.grad, gb, NULL);
        tb_tensor_download(&b3->var.value, v, NULL);
        const float *v0 = tb_golden_get(m->g, "b3.0")->data;
        gb[1] = m->poison == 1 ? NAN : v[1] > v0[1] ? 3e38f : -3e38f;
        tb_tensor_upload(&b3->var.grad, gb, NULL);
    }
    return TB_OK;
}

static bool mlp_create(mlp *m, const tb_golden *g, tb_error *err)
{
    const int64_t sizes[4] = {6, 10, 5, 3};
    memset(m, 0, sizeof *m);
    m->g = g;
    if (tb_params_create(be, &m->params, err) != TB_OK) return false;
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "fc%d", i + 1);
        if (tb_linear_layer_init(&m->fc[i], m->params, name, sizes[i], sizes[i + 1], true,
                                 err) != TB_OK)
            return false;
    }
    if (tb_params_finalize(m->params, err) != TB_OK) return false;
    if (tb_tape_create(be, &m->tape, err) != TB_OK) return false;
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "%s.0", names[i]);
        tb_golden_upload(g, name, &tb_params_get(m->params, i)->var.value);
    }
    return true;
}

static void mlp_destroy(mlp *m)
{
    tb_tape_destroy(m->tape);
    tb_params_destroy(m->params);
}

/* The fixture's probes of step t, samples after each other, in parameter order. */
static float *fixture_probes(const tb_golden *g, int samples, int t, int64_t dim)
{
    float *z = malloc((size_t)(samples * dim) * sizeof *z);
    int64_t k = 0;
    for (int j = 0; j < samples; j++)
        for (int i = 0; i < 6; i++) {
            char name[48];
            snprintf(name, sizeof name, "z.%d.%s.%d", j, names[i], t);
            const tb_golden_tensor *r = tb_golden_get(g, name);
            if (r) memcpy(z + k, r->data, (size_t)r->numel * sizeof *z);
            k += r ? r->numel : 0;
        }
    CHECK(k == samples * dim);
    return z;
}

static void run_sophia(const char *fixture)
{
    tb_golden g;
    if (!tb_golden_load(fixture, &g)) {
        tb_test_check(false, fixture, __FILE__, __LINE__);
        return;
    }
    tb_hparams hp = fixture_hparams(&g);
    tb_error err = {0};
    mlp m;
    tb_optimizer *opt = NULL;
    if (CHECK(mlp_create(&m, &g, &err)))
        CHECK_OK(tb_optimizer_create("sophia", m.params, &hp, &opt, &err), &err);
    const int steps = (int)tb_golden_scalar(&g, "steps"), samples = (int)tb_hparams_get(&hp,
                                                                                  "num_samples", 1);
    const int64_t dim = tb_params_trainable(m.params);
    double max_diff = 0;
    int estimates = 0;
    for (int t = 1; opt && t <= steps; t++) {
        char name[48];
        if (tb_optimizer_wants_hessian(opt)) {
            float *z = fixture_probes(&g, samples, t, dim);
            CHECK_OK(tb_sophia_update_hessian_probes(opt, mlp_grad, &m, z, &err), &err);
            free(z);
            estimates++;
        }
        CHECK_OK(mlp_grad(&m, &err), &err);
        snprintf(name, sizeof name, "f.%d", t);
        CHECK_OK(tb_optimizer_step(opt, tb_golden_scalar(&g, name), &err), &err);
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "%s.%d", names[i], t);
            compare(&g, name, &tb_params_get(m.params, i)->var.value, &max_diff);
        }
    }
    int period = (int)tb_hparams_get(&hp, "update_period", 1);
    CHECK(estimates == (steps + period - 1) / period);
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-16s sophia  : max abs diff over %d steps %.3g (%d estimates)\n", fixture,
               steps, max_diff, estimates);
    tb_optimizer_destroy(opt);
    mlp_destroy(&m);
    tb_golden_free(&g);
}

/* An estimate whose gradients are not finite fails naming the step and the parameter, and a
 * step that needs an estimate without one is refused; the weights stay as they were. */
static void sophia_failures(void)
{
    tb_golden g;
    if (!tb_golden_load("optim_sophia", &g)) return;
    tb_error err = {0};
    mlp m;
    tb_optimizer *opt = NULL;
    if (CHECK(mlp_create(&m, &g, &err)))
        CHECK_OK(tb_optimizer_create("sophia", m.params, NULL, &opt, &err), &err);
    if (!opt) return;
    tb_rng rng = tb_rng_make(1, 2);
    CHECK(tb_optimizer_wants_hessian(opt));
    CHECK_OK(mlp_grad(&m, &err), &err);
    CHECK(tb_optimizer_step(opt, 1.0, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "sophia: step 1 needs a Hessian estimate") != NULL);
    m.poison = 1;
    CHECK(tb_optimizer_update_hessian(opt, mlp_grad, &m, &rng, &err) == TB_ERR_NUMERIC);
    CHECK(strstr(err.message, "sophia: step 1: Hessian estimate") != NULL);
    CHECK(strstr(err.message, "the gradient of 'fc3.bias'") != NULL);
    m.poison = 2; /* finite gradients, a product that overflows float32 */
    CHECK(tb_optimizer_update_hessian(opt, mlp_grad, &m, &rng, &err) == TB_ERR_NUMERIC);
    CHECK(strstr(err.message, "sophia: step 1: the Hessian-diagonal estimate of 'fc3.bias' is "
                              "not finite") != NULL);
    float w[3], w0[3];
    tb_tensor_download(&tb_params_get(m.params, 5)->var.value, w, NULL);
    memcpy(w0, tb_golden_get(&g, "b3.0")->data, sizeof w0);
    CHECK(memcmp(w, w0, sizeof w) == 0);
    m.poison = 0;
    CHECK_OK(tb_optimizer_update_hessian(opt, mlp_grad, &m, &rng, &err), &err);
    CHECK_OK(mlp_grad(&m, &err), &err);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    CHECK(!tb_optimizer_wants_hessian(opt)); /* the next estimate is at step 11 */
    tb_optimizer_destroy(opt);
    mlp_destroy(&m);
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
    for (int i = 0; i < 12; i++) half[i] = 0.5f, one[i] = 1.0f;
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
    for (int i = 0; i < 8; i++) w2[i] -= 0.5f;
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

/* By default the output layer takes AdamW's first step, -adamw_lr g / (|g| + eps) and the
 * decay (adamw_lr = 1e-5, far below Muon's step); with muon_output_layer = 1 Muon's: -lr sqrt(max(1, 2/4)) X, the orthogonalised
 * rank-1 update X = c 1 1^T with c = s / sqrt(8) for the iteration's singular value s in
 * [0.5, 1.5] (torch's quintic does not converge to 1). */
static void muon_routing(void)
{
    float w2[8];
    routed_step(0, w2);
    double adamw = -1e-5 * 0.5 * 0.01 - 1e-5 / (1.0 + 1e-8);
    for (int i = 0; i < 8; i++) CHECK_NEAR(w2[i], adamw, 6e-8); /* an ulp of 0.5 */
    routed_step(1, w2);
    double c = (w2[0] + 1e-3 * 0.1 * 0.5) / -1e-3;
    CHECK(c > 0.5 / sqrt(8.0) && c < 1.5 / sqrt(8.0));
    for (int i = 1; i < 8; i++) CHECK_NEAR(w2[i], w2[0], 1e-9);
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
    for (int i = 0; i < 60; i++) same = same && w[i] == 0.5f;
    CHECK(same);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

int main(void)
{
    be = tb_test_backend();
    if (tb_golden_available())
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(cases[i].fixture, cases[i].algorithm);
    else
        tb_test_check(false, "golden fixtures present", __FILE__, __LINE__);
    if (tb_golden_available()) {
        run_sophia("optim_sophia");
        run_sophia("optim_sophia_l2");
        sophia_failures();
    }
    muon_refusals();
    muon_routing();
    muon_overflow();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_matrix");
}

/* test_optim_sophia.c: sophia against pytorch-optimizer's SophiaH trajectories
 * (tests/golden/make_sophia_golden.py): trainbench computes its own gradients and
 * Hessian-vector products on golden_traj.py's MLP through the tape, with the reference's
 * recorded probes, and every parameter is compared after every step; and the report of a
 * Hessian estimate that is not finite, naming the step and the parameter. */
#include "optim/sophia.h"
#include "optim_traj.h"

static tb_backend *be;
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
        if (tb_linear_layer_init(&m->fc[i], m->params, name, sizes[i], sizes[i + 1], true, err) !=
            TB_OK)
            return false;
    }
    if (tb_params_finalize(m->params, err) != TB_OK) return false;
    if (tb_tape_create(be, &m->tape, err) != TB_OK) return false;
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "%s.0", traj_names[i]);
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
            snprintf(name, sizeof name, "z.%d.%s.%d", j, traj_names[i], t);
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
    tb_hparams hp = traj_hparams(&g);
    tb_error err = {0};
    mlp m;
    tb_optimizer *opt = NULL;
    if (CHECK(mlp_create(&m, &g, &err)))
        CHECK_OK(tb_optimizer_create("sophia", m.params, &hp, &opt, &err), &err);
    const int steps = (int)tb_golden_scalar(&g, "steps"),
              samples = (int)tb_hparams_get(&hp, "num_samples", 1);
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
            snprintf(name, sizeof name, "%s.%d", traj_names[i], t);
            traj_compare(&g, name, &tb_params_get(m.params, i)->var.value, &max_diff);
        }
    }
    int period = (int)tb_hparams_get(&hp, "update_period", 1);
    CHECK(estimates == (steps + period - 1) / period);
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-16s sophia  : max abs diff over %d steps %.3g (%d estimates)\n", fixture, steps,
               max_diff, estimates);
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

int main(void)
{
    be = tb_test_backend();
    if (tb_golden_available()) {
        run_sophia("optim_sophia");
        run_sophia("optim_sophia_l2");
        sophia_failures();
    } else {
        tb_test_check(false, "golden fixtures present", __FILE__, __LINE__);
    }
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_sophia");
}

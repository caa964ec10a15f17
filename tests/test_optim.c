/* test_optim.c: SGD (heavy ball, Nesterov) and AdamW against closed forms; weight-decay
 * exclusions; hyperparameter validation; schedules. */
#include "testutil.h"

#include <string.h>

static tb_backend *be;

/* params: "w" (weight, 3 values) and "b" (bias, 2 values) with given values and grads */
static tb_params *make_params(const float *w, const float *b, const float *gw, const float *gb)
{
    return tb_test_params_wb(be, w, b, gw, gb);
}

static float *val(tb_params *p, int i) { return tb_params_get(p, i)->var.value.data; }

static void test_sgd_closed_form(void)
{
    const float w[3] = {1, -2, 3}, b[2] = {0.5f, -0.5f}, gw[3] = {0.1f, 0.2f, -0.3f},
                gb[2] = {1, -1};
    for (int nesterov = 0; nesterov <= 1; nesterov++) {
        tb_params *p = make_params(w, b, gw, gb);
        tb_hparams hp = {0};
        tb_hparams_set(&hp, "learning_rate", 0.1, NULL);
        tb_hparams_set(&hp, "momentum", 0.9, NULL);
        tb_hparams_set(&hp, "nesterov", nesterov, NULL);
        tb_hparams_set(&hp, "weight_decay", 0.01, NULL);
        tb_optimizer *opt;
        tb_error err = {0};
        CHECK_OK(tb_optimizer_create("sgd", p, &hp, &opt, &err), &err);
        /* two steps with the same gradient: v1 = g', v2 = 0.9 v1 + g'' */
        double ew[3], eb[2], vw[3] = {0}, vb[2] = {0};
        for (int i = 0; i < 3; i++) ew[i] = w[i];
        for (int i = 0; i < 2; i++) eb[i] = b[i];
        for (int step = 0; step < 2; step++) {
            CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
            for (int i = 0; i < 3; i++) {
                double g = gw[i] + 0.01 * ew[i];
                vw[i] = 0.9 * vw[i] + g;
                ew[i] -= 0.1 * (nesterov ? g + 0.9 * vw[i] : vw[i]);
            }
            for (int i = 0; i < 2; i++) { /* biases: no weight decay */
                vb[i] = 0.9 * vb[i] + gb[i];
                eb[i] -= 0.1 * (nesterov ? gb[i] + 0.9 * vb[i] : vb[i]);
            }
        }
        for (int i = 0; i < 3; i++) CHECK_NEAR(val(p, 0)[i], ew[i], 1e-6);
        for (int i = 0; i < 2; i++) CHECK_NEAR(val(p, 1)[i], eb[i], 1e-6);
        CHECK(tb_optimizer_steps(opt) == 2);
        tb_optimizer_destroy(opt);
        tb_params_destroy(p);
    }
}

static void test_adamw_closed_form(void)
{
    const float w[3] = {1, -2, 3}, b[2] = {0.5f, -0.5f}, gw[3] = {0.1f, 0.2f, -0.3f},
                gb[2] = {1, -1};
    tb_params *p = make_params(w, b, gw, gb);
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 0.01, NULL);
    tb_hparams_set(&hp, "weight_decay", 0.1, NULL);
    tb_optimizer *opt;
    tb_error err = {0};
    CHECK_OK(tb_optimizer_create("adamw", p, &hp, &opt, &err), &err);
    CHECK_NEAR(tb_optimizer_hparam(opt, "beta2"), 0.999, 0);
    double ew[3], m[3] = {0}, v[3] = {0};
    for (int i = 0; i < 3; i++) ew[i] = w[i];
    for (int t = 1; t <= 3; t++) {
        CHECK_OK(tb_optimizer_step(opt, 0.5, &err), &err); /* schedule factor 0.5 */
        double lr = 0.005;
        for (int i = 0; i < 3; i++) {
            ew[i] *= 1 - lr * 0.1;
            m[i] = 0.9 * m[i] + 0.1 * gw[i];
            v[i] = 0.999 * v[i] + 0.001 * gw[i] * gw[i];
            double mh = m[i] / (1 - pow(0.9, t)), vh = v[i] / (1 - pow(0.999, t));
            ew[i] -= lr * mh / (sqrt(vh) + 1e-8);
        }
    }
    for (int i = 0; i < 3; i++) CHECK_NEAR(val(p, 0)[i], ew[i], 2e-6);
    /* first step of Adam moves each coordinate by about lr * sign(g); biases get no decay */
    CHECK_NEAR(val(p, 1)[0], 0.5 - 3 * 0.005, 1e-5);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
}

static void test_validation(void)
{
    const float z[3] = {0};
    tb_params *p = make_params(z, z, z, z);
    tb_optimizer *opt = NULL;
    tb_error err = {0};
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", -0.1, NULL);
    CHECK_FAILS(tb_optimizer_create("adamw", p, &hp, &opt, &err), TB_ERR_INVALID, &err,
                "learning_rate = -0.1");
    hp = (tb_hparams){0};
    tb_hparams_set(&hp, "beta1", 1.0, NULL);
    CHECK_FAILS(tb_optimizer_create("adamw", p, &hp, &opt, &err), TB_ERR_INVALID, &err,
                "beta1 = 1 is outside [0, 1)");
    hp = (tb_hparams){0};
    tb_hparams_set(&hp, "momentum", 0.9, NULL);
    tb_hparams_set(&hp, "beta3", 0.9, NULL);
    CHECK_FAILS(tb_optimizer_create("adamw", p, &hp, &opt, &err), TB_ERR_INVALID, &err,
                "no hyperparameter 'momentum'");
    hp = (tb_hparams){0};
    tb_hparams_set(&hp, "nesterov", 0.5, NULL);
    CHECK_FAILS(tb_optimizer_create("sgd", p, &hp, &opt, &err), TB_ERR_INVALID, &err,
                "must be 0 or 1");
    CHECK_FAILS(tb_optimizer_create("adamax", p, NULL, &opt, &err), TB_ERR_INVALID, &err,
                "unknown algorithm 'adamax'");
    CHECK_FAILS(tb_hparams_parse_assignment(&hp, "learning_rate=fast", &err), TB_ERR_INVALID,
                &err, "not a number");
    CHECK_OK(tb_hparams_parse_assignment(&hp, "learning_rate=3e-4", &err), &err);
    CHECK_NEAR(tb_hparams_get(&hp, "learning_rate", 0), 3e-4, 1e-12);
    CHECK(opt == NULL);
    tb_params_destroy(p);
}

/* tb_hparams_resolve: every hyperparameter an algorithm runs with, in the registry's order,
 * given values and defaults (marked), aliases derived from a given name (not defaults); the
 * values an optimizer created from the same point uses. */
static void test_resolve(void)
{
    tb_error err = {0};
    tb_hparams given = {0}, out, defaults;
    tb_hparams_set(&given, "learning_rate", 0.01, NULL);
    CHECK_OK(tb_hparams_resolve("adamw", &given, &out, &defaults, &err), &err);
    const tb_optimizer_info *info = tb_optimizer_find("adamw");
    CHECK(out.count == info->n_hparams && defaults.count == info->n_hparams - 1);
    for (int i = 0; i < out.count && i < info->n_hparams; i++) {
        CHECK(strcmp(out.names[i], info->hparams[i].name) == 0);
        bool lr = strcmp(out.names[i], "learning_rate") == 0;
        CHECK(out.values[i] == (lr ? 0.01 : info->hparams[i].default_value));
        CHECK(tb_hparams_has(&defaults, out.names[i]) == !lr);
    }
    /* nadamw's beta1 follows a given one_minus_beta1: derived, not a default */
    given = (tb_hparams){0};
    tb_hparams_set(&given, "one_minus_beta1", 0.05, NULL);
    CHECK_OK(tb_hparams_resolve("nadamw", &given, &out, &defaults, &err), &err);
    CHECK_NEAR(tb_hparams_get(&out, "beta1", 0), 0.95, 1e-15);
    CHECK(!tb_hparams_has(&defaults, "beta1") && !tb_hparams_has(&defaults, "one_minus_beta1") &&
          tb_hparams_has(&defaults, "beta2"));
    const float z[3] = {0};
    tb_params *p = make_params(z, z, z, z);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create("nadamw", p, &given, &opt, &err), &err);
    for (int i = 0; i < out.count; i++)
        CHECK(tb_optimizer_hparam(opt, out.names[i]) == out.values[i]);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    /* no values: all defaults; a bad one or an unknown algorithm: empty, as create fails */
    CHECK_OK(tb_hparams_resolve("sgd", NULL, &out, &defaults, &err), &err);
    CHECK(out.count == 4 && defaults.count == 4 && tb_hparams_get(&out, "nesterov", 0) == 1);
    tb_hparams_set(&given, "beta1", 0.5, NULL);
    CHECK_FAILS(tb_hparams_resolve("nadamw", &given, &out, &defaults, &err), TB_ERR_INVALID,
                &err, "disagree");
    CHECK(out.count == 0 && defaults.count == 0);
    CHECK_FAILS(tb_hparams_resolve("adamax", NULL, &out, NULL, &err), TB_ERR_INVALID, &err,
                "unknown algorithm 'adamax'");
    CHECK_FAILS(tb_hparams_resolve(NULL, NULL, &out, NULL, &err), TB_ERR_INVALID, &err,
                "name is NULL");
    CHECK_FAILS(tb_hparams_resolve("sgd", NULL, NULL, NULL, &err), TB_ERR_INVALID, &err,
                "out is NULL");
}

/* NULL arguments to hyperparameter, optimizer, schedule and curvature calls fail with
 * TB_ERR_INVALID naming the argument (most of them segfaulted). */
static void test_null_arguments(void)
{
    tb_error err = {0};
    tb_hparams hp = {0};
    CHECK_FAILS(tb_hparams_set(&hp, NULL, 1.0, &err), TB_ERR_INVALID, &err, "name is NULL");
    CHECK_FAILS(tb_hparams_set(NULL, "x", 1.0, &err), TB_ERR_INVALID, &err, "hp is NULL");
    CHECK_FAILS(tb_hparams_parse_assignment(&hp, NULL, &err), TB_ERR_INVALID, &err,
                "text is NULL");
    CHECK(!tb_hparams_has(&hp, NULL) && tb_hparams_get(NULL, "x", 2.0) == 2.0);
    CHECK(tb_optimizer_find(NULL) == NULL);
    const float z[3] = {0};
    tb_params *p = make_params(z, z, z, z);
    tb_optimizer *opt = NULL;
    CHECK_FAILS(tb_optimizer_create(NULL, p, NULL, &opt, &err), TB_ERR_INVALID, &err,
                "name is NULL");
    CHECK_FAILS(tb_optimizer_create("sgd", NULL, NULL, &opt, &err), TB_ERR_INVALID, &err,
                "params is NULL");
    CHECK_FAILS(tb_optimizer_create("sgd", p, NULL, NULL, &err), TB_ERR_INVALID, &err,
                "out is NULL");
    CHECK_FAILS(tb_optimizer_step(NULL, 1.0, &err), TB_ERR_INVALID, &err, "optimizer is NULL");
    CHECK_FAILS(tb_optimizer_step_prepare(NULL, 1.0, &err), TB_ERR_INVALID, &err,
                "optimizer is NULL");
    CHECK_FAILS(tb_optimizer_step_queue(NULL, &err), TB_ERR_INVALID, &err, "optimizer is NULL");
    CHECK_FAILS(tb_optimizer_set_layers(NULL, NULL, 0, &err), TB_ERR_INVALID, &err,
                "optimizer is NULL");
    CHECK_FAILS(tb_optimizer_update_fisher(NULL, &err), TB_ERR_INVALID, &err,
                "optimizer is NULL");
    CHECK(!tb_optimizer_wants_fisher(NULL) && tb_optimizer_steps(NULL) == 0);
    tb_optimizer_destroy(NULL);
    CHECK_OK(tb_optimizer_create("sgd", p, NULL, &opt, &err), &err);
    CHECK_FAILS(tb_optimizer_set_layers(opt, NULL, 2, &err), TB_ERR_INVALID, &err,
                "layers is NULL");
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_schedule_kind kind;
    CHECK_FAILS(tb_schedule_parse(NULL, &kind, &err), TB_ERR_INVALID, &err, "name is NULL");
    CHECK_FAILS(tb_schedule_validate(NULL, &err), TB_ERR_INVALID, &err, "schedule is NULL");
    CHECK(tb_schedule_factor(NULL, 5) == 1.0);
    tb_tape *t;
    CHECK_OK(tb_tape_create(be, &t, &err), &err);
    CHECK(tb_fisher_sample_labels(NULL, NULL, NULL) == NULL);
    tb_rng r = tb_rng_make(3, 0);
    int64_t s[2] = {2, 3};
    tb_var *logits = tb_test_var(be, 2, s, &r, -1, 1, false);
    CHECK(tb_fisher_sample_labels(t, logits, NULL) == NULL);
    CHECK(strstr(tb_tape_error(t)->message, "rng is NULL") != NULL);
    tb_test_var_free(logits);
    tb_tape_destroy(t);
}

static void test_schedule(void)
{
    tb_schedule s = {.kind = TB_SCHEDULE_WARMUP_COSINE, .warmup_steps = 10, .total_steps = 110};
    CHECK_NEAR(tb_schedule_factor(&s, 5), 0.5, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, 10), 1.0, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, 60), 0.5, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, 110), 0.0, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, 500), 0.0, 1e-12);
    tb_schedule c = {.kind = TB_SCHEDULE_CONSTANT};
    CHECK_NEAR(tb_schedule_factor(&c, 77), 1.0, 0);
    /* steps are 1-based: a step < 1 gets the first step's factor (was 0 at step 0 and -0.5 at
     * step -5 with warmup) */
    CHECK_NEAR(tb_schedule_factor(&s, 1), 0.1, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, 0), 0.1, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, -5), 0.1, 1e-12);
    CHECK_NEAR(tb_schedule_factor(&s, INT64_MIN), 0.1, 1e-12);
    for (int k = TB_SCHEDULE_WARMUP_COSINE; k < TB_SCHEDULE_COUNT; k++) {
        tb_schedule d = {.kind = (tb_schedule_kind)k, .total_steps = 20};
        CHECK(tb_schedule_factor(&d, -5) == tb_schedule_factor(&d, 1));
        CHECK(tb_schedule_factor(&d, 0) > 0.0);
    }
}

int main(void)
{
    be = tb_test_backend();
    test_sgd_closed_form();
    test_adamw_closed_form();
    test_validation();
    test_resolve();
    test_schedule();
    test_null_arguments();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim");
}

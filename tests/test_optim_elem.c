/* test_optim_elem.c: trainbench's element-wise optimizers of 2024-2025 against their reference
 * implementations' trajectories (tests/golden/make_optim_elem_golden.py: 25 steps of a
 * tanh-linear model, W [3, 4] decayed and b [3] not, under a warmup-cosine schedule):
 * Schedule-Free AdamW and SGD (schedulefree; with the evaluation point x at steps 10 and 25),
 * Lion (lion-pytorch), ADOPT, AdEMAMix and MARS (pytorch-optimizer), Prodigy (prodigyopt). */
#include "optim_traj.h"

#include <stdlib.h>
#include <string.h>

/* The references ran in float64 from float32 values; trainbench runs in float32. Observed at
 * most 1.8e-7 over 25 steps for every algorithm but Prodigy (TB_GOLDEN_VERBOSE=1 prints each
 * case's); the tolerance is 1e-5 + 1e-5 |ref|, far below any formula difference (a bias
 * correction left out, epsilon inside instead of outside the bias correction, the lr of the
 * step before). Prodigy's step size d is a ratio of sums over the distance from the start,
 * which float32 keeps to a few digits while it is small: observed 8.6e-6 (the reference itself
 * run in float32 ends 5.3e-6 from its float64 run), tolerance 5e-5 + 5e-5 |ref|. */
#define ELEM_TOL 1e-5
#define PRODIGY_TOL 5e-5
#define STEPS 25

static tb_backend *be;

static const struct {
    const char *fixture, *algorithm;
    double tol; /* absolute and relative */
} cases[] = {
    {"optim_elem_sfadamw", "schedule_free_adamw", ELEM_TOL},
    {"optim_elem_sfsgd", "schedule_free_sgd", ELEM_TOL},
    {"optim_elem_lion", "lion", ELEM_TOL},
    {"optim_elem_adopt", "adopt", ELEM_TOL},
    {"optim_elem_adopt_decoupled", "adopt", ELEM_TOL},
    {"optim_elem_ademamix", "ademamix", ELEM_TOL},
    {"optim_elem_ademamix_l2", "ademamix", ELEM_TOL},
    {"optim_elem_prodigy", "prodigy", PRODIGY_TOL},
    {"optim_elem_prodigy_options", "prodigy", PRODIGY_TOL},
    {"optim_elem_mars", "mars", ELEM_TOL},
};

static float *download(const tb_tensor *t)
{
    float *host = malloc((size_t)tb_tensor_numel(t) * sizeof(float));
    tb_tensor_download(t, host, NULL);
    return host;
}

/* At a step with a recorded x: prepare_for_eval gives x, a step then is refused, and
 * prepare_for_train gives y back bit for bit. */
static void check_eval_point(const tb_golden *g, tb_optimizer *opt, int t, tb_var *w, tb_var *b,
                             double tol, double *max_diff)
{
    char wx[32], bx[32];
    snprintf(wx, sizeof wx, "wx.%d", t);
    snprintf(bx, sizeof bx, "bx.%d", t);
    bool recorded = false;
    for (int i = 0; i < g->count; i++)
        recorded = recorded || strcmp(g->tensors[i].name, wx) == 0;
    if (!recorded) return;
    tb_error err = {0};
    float *wy = download(&w->value), *by = download(&b->value);
    CHECK_OK(tb_optimizer_prepare_for_eval(opt, &err), &err);
    traj_compare_tol(g, wx, &w->value, max_diff, tol, tol);
    traj_compare_tol(g, bx, &b->value, max_diff, tol, tol);
    CHECK_OK(tb_optimizer_prepare_for_eval(opt, &err), &err); /* a second one: nothing */
    traj_compare_tol(g, wx, &w->value, max_diff, tol, tol);
    CHECK(tb_optimizer_step(opt, 1.0, &err) == TB_ERR_INVALID);
    CHECK(strstr(err.message, "evaluation point") != NULL);
    CHECK(tb_optimizer_steps(opt) == t);
    CHECK_OK(tb_optimizer_prepare_for_train(opt, &err), &err);
    float *w2 = download(&w->value), *b2 = download(&b->value);
    CHECK(memcmp(w2, wy, 12 * sizeof(float)) == 0);
    CHECK(memcmp(b2, by, 3 * sizeof(float)) == 0);
    free(wy), free(by), free(w2), free(b2);
}

static void run_case(const char *fixture, const char *algorithm, double tol)
{
    traj_wb t;
    tb_error err = {0};
    tb_optimizer *opt = NULL;
    if (traj_wb_open(fixture, be, 3, &t) &&
        CHECK_OK(tb_optimizer_create(algorithm, t.params, &t.hp, &opt, &err), &err))
        CHECK(tb_optimizer_evaluates_elsewhere(opt) ==
              (strncmp(algorithm, "schedule_free", 13) == 0));
    double max_diff = 0;
    for (int step = 1; opt && step <= STEPS; step++) {
        traj_wb_grads(&t, step);
        char name[32];
        snprintf(name, sizeof name, "f.%d", step);
        CHECK_OK(tb_optimizer_step(opt, tb_golden_scalar(&t.g, name), &err), &err);
        traj_wb_compare(&t, step, tol, tol, &max_diff);
        check_eval_point(&t.g, opt, step, t.w, t.b, tol, &max_diff);
    }
    if (getenv("TB_GOLDEN_VERBOSE"))
        printf("%-28s %-20s max abs diff over %d steps %.3g\n", fixture, algorithm, STEPS,
               max_diff);
    tb_optimizer_destroy(opt);
    traj_wb_close(&t);
}

/* Every other algorithm has no evaluation point of its own: the hooks leave the weights. */
static void test_hooks_elsewhere(void)
{
    tb_params *p = NULL;
    tb_error err = {0};
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    int64_t ws[2] = {2, 2};
    tb_var *w = tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, ws, NULL);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    float init[4] = {1, 2, 3, 4}, grad[4] = {0.5f, -0.5f, 0.25f, 1};
    tb_tensor_upload(&w->value, init, NULL);
    tb_tensor_upload(&w->grad, grad, NULL);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create("adamw", p, NULL, &opt, &err), &err);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    CHECK(!tb_optimizer_evaluates_elsewhere(opt));
    float *before = download(&w->value);
    CHECK_OK(tb_optimizer_prepare_for_eval(opt, &err), &err);
    float *during = download(&w->value);
    CHECK(memcmp(before, during, sizeof init) == 0);
    CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err); /* not in an eval mode of its own */
    CHECK_OK(tb_optimizer_prepare_for_train(opt, &err), &err);
    CHECK(tb_optimizer_prepare_for_eval(NULL, &err) == TB_ERR_INVALID);
    free(before), free(during);
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
    test_hooks_elsewhere();
    tb_backend_destroy(be);
    return tb_test_finish("test_optim_elem");
}

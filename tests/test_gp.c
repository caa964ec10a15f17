/* test_gp.c: the Gaussian-process core of src/tune: the posterior interpolates noise-free
 * data, the marginal likelihood's analytic gradient matches finite differences (one task and
 * several), expected improvement is zero where the variance is zero and the mean is worse,
 * joint posterior draws have the posterior's mean and variance, a fit recovers a lengthscale
 * that tells a relevant dimension from an irrelevant one, pre-training on tasks drawn from a
 * known GP recovers its parameters (HyperBO), and bad input is refused. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static double uniform_in(tb_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * tb_rng_uniform(rng);
}

static tb_gp_params params_2d(void)
{
    tb_gp_params p = {.dims = 2, .mean = 0.3, .amplitude = 1.7, .noise = 1e-10};
    p.lengthscales[0] = 0.3;
    p.lengthscales[1] = 0.5;
    return p;
}

static void test_interpolates(void)
{
    enum { N = 12 };
    tb_rng rng = tb_rng_make(1, 0);
    double x[N * 2], y[N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = tb_rng_uniform(&rng);
        x[2 * i + 1] = tb_rng_uniform(&rng);
        y[i] = sin(6 * x[2 * i]) + x[2 * i + 1] * x[2 * i + 1];
    }
    tb_gp_params p = params_2d();
    tb_gp_task data = {x, y, N};
    tb_gp *gp = NULL;
    tb_error err = {0};
    CHECK_OK(tb_gp_create(&p, &data, &gp, &err), &err);
    if (!gp) return;
    double worst_mean = 0, worst_var = 0;
    for (int i = 0; i < N; i++) {
        double m, v;
        tb_gp_predict(gp, x + 2 * i, &m, &v);
        worst_mean = fmax(worst_mean, fabs(m - y[i]));
        worst_var = fmax(worst_var, v);
    }
    CHECK(worst_mean < 1e-6);
    CHECK(worst_var < 1e-6);
    /* far from the data: back to the prior */
    double far[2] = {40, -40}, m, v;
    tb_gp_predict(gp, far, &m, &v);
    CHECK_NEAR(m, p.mean, 1e-9);
    CHECK_NEAR(v, p.amplitude, 1e-9);
    tb_gp_destroy(gp);
    /* the prior alone (no data) */
    CHECK_OK(tb_gp_create(&p, NULL, &gp, &err), &err);
    tb_gp_predict(gp, x, &m, &v);
    CHECK(m == p.mean && v == p.amplitude);
    tb_gp_destroy(gp);
}

/* Central differences of tb_gp_nll in every coordinate of theta against its gradient. */
static void check_gradient(const tb_gp_params *p, const tb_gp_task *tasks, int n_tasks)
{
    tb_error err = {0};
    const int nt = tb_gp_theta_count(p->dims);
    double theta[TB_GP_MAX_DIMS + 3], grad[TB_GP_MAX_DIMS + 3], f;
    tb_gp_theta_pack(p, theta);
    if (!CHECK_OK(tb_gp_nll(p, tasks, n_tasks, &f, grad, &err), &err)) return;
    double worst = 0;
    for (int k = 0; k < nt; k++) {
        const double h = 1e-5;
        double tp[TB_GP_MAX_DIMS + 3], fp, fm;
        tb_gp_params q;
        memcpy(tp, theta, sizeof tp);
        tp[k] = theta[k] + h;
        tb_gp_theta_unpack(p->dims, tp, &q);
        tb_gp_nll(&q, tasks, n_tasks, &fp, NULL, &err);
        tp[k] = theta[k] - h;
        tb_gp_theta_unpack(p->dims, tp, &q);
        tb_gp_nll(&q, tasks, n_tasks, &fm, NULL, &err);
        double fd = (fp - fm) / (2 * h);
        worst = fmax(worst, fabs(fd - grad[k]) / (1e-4 + fabs(fd)));
    }
    if (!CHECK(worst < 1e-5)) printf("  worst relative gradient error %g\n", worst);
}

static void test_gradient(void)
{
    enum { D = 3, N1 = 15, N2 = 9 };
    tb_rng rng = tb_rng_make(2, 0);
    double x1[N1 * D], y1[N1], x2[N2 * D], y2[N2];
    for (int i = 0; i < N1 * D; i++) x1[i] = tb_rng_uniform(&rng);
    for (int i = 0; i < N2 * D; i++) x2[i] = tb_rng_uniform(&rng);
    for (int i = 0; i < N1; i++) y1[i] = cos(3 * x1[i * D]) + 0.1 * tb_rng_normal(&rng);
    for (int i = 0; i < N2; i++) y2[i] = x2[i * D + 1] + 0.1 * tb_rng_normal(&rng);
    tb_gp_params p = {.dims = D, .mean = 0.2, .amplitude = 0.8, .noise = 0.05};
    for (int k = 0; k < D; k++) p.lengthscales[k] = uniform_in(&rng, 0.2, 1.0);
    tb_gp_task one[1] = {{x1, y1, N1}};
    check_gradient(&p, one, 1);
    tb_gp_task two[2] = {{x1, y1, N1}, {x2, y2, N2}};
    check_gradient(&p, two, 2);
    /* the NLL of two tasks is the mean of theirs */
    double f1, f2, f12;
    tb_error err = {0};
    tb_gp_nll(&p, &two[0], 1, &f1, NULL, &err);
    tb_gp_nll(&p, &two[1], 1, &f2, NULL, &err);
    tb_gp_nll(&p, two, 2, &f12, NULL, &err);
    CHECK_NEAR(f12, 0.5 * (f1 + f2), 1e-10);
}

/* A 1-D GP (mean 0, amplitude 1) conditioned on n points; NULL (a failed check) if it fails. */
static tb_gp *gp_1d(const double *x, const double *y, int n, double lengthscale, double noise)
{
    tb_gp_params p = {.dims = 1, .mean = 0, .amplitude = 1, .noise = noise};
    p.lengthscales[0] = lengthscale;
    tb_gp_task data = {x, y, n};
    tb_gp *gp = NULL;
    tb_error err = {0};
    CHECK_OK(tb_gp_create(&p, &data, &gp, &err), &err);
    return gp;
}

static void test_expected_improvement(void)
{
    /* variance zero: the improvement is certain */
    CHECK(tb_gp_expected_improvement(1.0, 0.0, 0.5) == 0.0);
    CHECK_NEAR(tb_gp_expected_improvement(0.2, 0.0, 0.5), 0.3, 1e-15);
    /* with variance, some hope even when the mean is worse; more variance, more hope */
    double a = tb_gp_expected_improvement(1.0, 0.01, 0.5);
    double b = tb_gp_expected_improvement(1.0, 1.0, 0.5);
    CHECK(a > 0 && b > a);
    /* the closed form at mean = best: sd / sqrt(2 pi) */
    CHECK_NEAR(tb_gp_expected_improvement(0.0, 4.0, 0.0), 2.0 / sqrt(2 * 3.14159265358979), 1e-12);
    /* at a noise-free observation worse than the best: zero */
    double x[3] = {0.1, 0.5, 0.9}, y[3] = {1.0, -1.0, 2.0};
    tb_gp *gp = gp_1d(x, y, 3, 0.2, 0);
    if (!gp) return;
    double m, v;
    tb_gp_predict(gp, &x[2], &m, &v);
    CHECK(tb_gp_expected_improvement(m, v, -1.0) < 1e-6);
    tb_gp_destroy(gp);
}

static void test_sample(void)
{
    double x[2] = {0.2, 0.7}, y[2] = {1.0, -0.5};
    tb_gp *gp = gp_1d(x, y, 2, 0.3, 0.01);
    tb_error err = {0};
    if (!gp) return;
    enum { M = 3, DRAWS = 4000 };
    double at[M] = {0.2, 0.45, 0.95}, f[M], sum[M] = {0}, sum2[M] = {0};
    tb_rng rng = tb_rng_make(3, 0);
    tb_status st = TB_OK;
    for (int r = 0; r < DRAWS && st == TB_OK; r++) {
        st = tb_gp_sample(gp, at, M, &rng, f, &err);
        for (int j = 0; j < M; j++) {
            sum[j] += f[j];
            sum2[j] += f[j] * f[j];
        }
    }
    CHECK_OK(st, &err);
    for (int j = 0; j < M; j++) {
        double m, v, mean = sum[j] / DRAWS, var = sum2[j] / DRAWS - mean * mean;
        tb_gp_predict(gp, &at[j], &m, &v);
        CHECK_NEAR(mean, m, 4 * sqrt(v / DRAWS) + 1e-9);
        CHECK_NEAR(var, v, 0.1 * v + 1e-6);
    }
    tb_gp_destroy(gp);
}

/* y depends on dimension 1 only: the fitted lengthscale of dimension 2 is much longer. */
static void test_fit(void)
{
    enum { N = 30, D = 2 };
    double x[N * D], y[N];
    tb_error err = {0};
    CHECK_OK(tb_halton(N, D, 0, true, 4, x, &err), &err);
    for (int i = 0; i < N; i++) y[i] = 3 + 2 * sin(5 * x[i * D]);
    tb_gp_task t = {x, y, N};
    tb_gp_params p;
    if (!CHECK_OK(tb_gp_fit(&t, 1, D, NULL, &p, &err), &err)) return;
    CHECK(p.lengthscales[1] > 5 * p.lengthscales[0]);
    CHECK(p.noise < 1e-3);
    /* the fit predicts a point it did not see */
    tb_gp *gp = NULL;
    CHECK_OK(tb_gp_create(&p, &t, &gp, &err), &err);
    double at[2] = {0.33, 0.5}, m, v;
    tb_gp_predict(gp, at, &m, &v);
    CHECK_NEAR(m, 3 + 2 * sin(5 * 0.33), 0.05);
    tb_gp_destroy(gp);
}

/* HyperBO's pre-training: tasks drawn from one known GP (each its own function at its own
 * points); the fit of the NLL averaged over tasks recovers the GP's parameters. */
static void test_pretrain_recovers(void)
{
    enum { TASKS = 16, N = 25, D = 2 };
    tb_gp_params truth = {.dims = D, .mean = 1.0, .amplitude = 0.5, .noise = 0.01};
    truth.lengthscales[0] = 0.2;
    truth.lengthscales[1] = 0.5;
    static double x[TASKS][N * D], y[TASKS][N];
    tb_gp_task tasks[TASKS];
    tb_rng rng = tb_rng_make(6, 0);
    tb_error err = {0};
    tb_gp *prior = NULL;
    if (!CHECK_OK(tb_gp_create(&truth, NULL, &prior, &err), &err)) return;
    for (int t = 0; t < TASKS; t++) {
        for (int i = 0; i < N * D; i++) x[t][i] = tb_rng_uniform(&rng);
        CHECK_OK(tb_gp_sample(prior, x[t], N, &rng, y[t], &err), &err);
        for (int i = 0; i < N; i++) y[t][i] += sqrt(truth.noise) * tb_rng_normal(&rng);
        tasks[t] = (tb_gp_task){x[t], y[t], N};
    }
    tb_gp_destroy(prior);
    tb_gp_params p;
    if (!CHECK_OK(tb_gp_fit(tasks, TASKS, D, NULL, &p, &err), &err)) return;
    printf("  pre-trained on %d tasks x %d points: mean %.3f (1), amplitude %.3f (0.5), "
           "lengthscales %.3f %.3f (0.2 0.5), noise %.4f (0.01)\n", TASKS, N, p.mean,
           p.amplitude, p.lengthscales[0], p.lengthscales[1], p.noise);
    CHECK_NEAR(p.mean, truth.mean, 0.35);
    CHECK_NEAR(p.amplitude / truth.amplitude, 1, 0.4);
    CHECK_NEAR(p.lengthscales[0] / truth.lengthscales[0], 1, 0.25);
    CHECK_NEAR(p.lengthscales[1] / truth.lengthscales[1], 1, 0.25);
    CHECK(p.noise > truth.noise / 2 && p.noise < truth.noise * 2);
}

static void test_bad_input(void)
{
    tb_error err = {0};
    double x[2] = {0.1, 0.2}, y[2] = {1, NAN};
    tb_gp_task one = {x, y, 1}, bad = {x, y, 2};
    tb_gp_params p;
    CHECK_FAILS(tb_gp_fit(&one, 1, 1, NULL, &p, &err), TB_ERR_INVALID, &err, "at least 2");
    CHECK_FAILS(tb_gp_fit(&bad, 1, 1, NULL, &p, &err), TB_ERR_INVALID, &err, "not finite");
    CHECK_FAILS(tb_gp_fit(&one, 1, 0, NULL, &p, &err), TB_ERR_INVALID, &err, "dimensions");
    tb_gp_params q = {.dims = 1, .mean = 0, .amplitude = 1, .noise = 0};
    tb_gp *gp = NULL;
    CHECK_FAILS(tb_gp_create(&q, &one, &gp, &err), TB_ERR_INVALID, &err, "lengthscale 1");
    q.lengthscales[0] = 0.5;
    CHECK_FAILS(tb_gp_create(&q, &bad, &gp, &err), TB_ERR_INVALID, &err, "observation 2");
    /* the same point twice without noise: jitter makes it factorable */
    double xx[2] = {0.3, 0.3}, yy[2] = {1, 1};
    tb_gp_task twice = {xx, yy, 2};
    CHECK_OK(tb_gp_create(&q, &twice, &gp, &err), &err);
    CHECK(gp != NULL);
    tb_gp_destroy(gp);
}

int main(void)
{
    test_interpolates();
    test_gradient();
    test_expected_improvement();
    test_sample();
    test_fit();
    test_pretrain_recovers();
    test_bad_input();
    return tb_test_finish("test_gp");
}

/* test_optim_precision.c: Adam and LAMB where float32 rounding of a coefficient used to show,
 * against a float64 reference of each algorithm written here (the papers' update rules, torch
 * .optim.Adam's and the LAMB paper's, evaluated in double from the same float32 start and
 * gradients):
 *   - beta2 = 0.999999: the second-moment weight 1 - beta2 was formed in float32 (1.00136e-6)
 *     while the bias correction used the double beta2, so the first steps were 0.066% .. 0.66%
 *     off; now within float32 rounding (1e-5 relative, measured below 1e-6);
 *   - LAMB weight_decay = 1e-6 and 1e-8: the decay added to the direction was
 *     1 - (float)(1 - wd) (1.013e-6, and 0 below about 3e-8); now wd itself. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

enum { N = 12, STEPS = 5 };

static float grad_at(int t, int i) { return (float)(0.3 * sin(1.7 * i + 0.9 * t) + 0.05 * i); }
static float w0_at(int i) { return (float)(0.5 - 0.07 * i); }

/* The float64 reference: Adam (lamb false) or LAMB (its trust ratio ||w|| / ||u||). */
static void reference(bool lamb, double lr, double b1, double b2, double eps, double wd,
                      double *w)
{
    double m[N] = {0}, v[N] = {0}, u[N];
    for (int i = 0; i < N; i++) w[i] = w0_at(i);
    for (int t = 1; t <= STEPS; t++) {
        double wn = 0, un = 0;
        for (int i = 0; i < N; i++) {
            double g = grad_at(t, i);
            m[i] = b1 * m[i] + (1 - b1) * g;
            v[i] = b2 * v[i] + (1 - b2) * g * g;
            double mh = m[i] / (1 - pow(b1, t)), vh = v[i] / (1 - pow(b2, t));
            u[i] = mh / (sqrt(vh) + eps) + (lamb ? wd * w[i] : 0);
            wn += w[i] * w[i];
            un += u[i] * u[i];
        }
        double ratio = lamb && wn > 0 && un > 0 ? sqrt(wn) / sqrt(un) : 1;
        for (int i = 0; i < N; i++) w[i] -= lr * ratio * u[i];
    }
}

/* The largest relative difference of the change w - w0 from the reference's, after STEPS. */
static double run(const char *algorithm, double lr, double b2, double eps, double wd)
{
    tb_backend *be = tb_test_backend();
    tb_error err = {0};
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    int64_t shape[1] = {N};
    tb_var *w = tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, shape, NULL);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    float host[N];
    for (int i = 0; i < N; i++) host[i] = w0_at(i);
    CHECK_OK(tb_tensor_upload(&w->value, host, &err), &err);
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", lr, NULL);
    tb_hparams_set(&hp, "beta2", b2, NULL);
    tb_hparams_set(&hp, "epsilon", eps, NULL);
    tb_hparams_set(&hp, "weight_decay", wd, NULL);
    tb_optimizer *opt = NULL;
    CHECK_OK(tb_optimizer_create(algorithm, p, &hp, &opt, &err), &err);
    for (int t = 1; opt && t <= STEPS; t++) {
        for (int i = 0; i < N; i++) host[i] = grad_at(t, i);
        CHECK_OK(tb_tensor_upload(&w->grad, host, &err), &err);
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    }
    tb_tensor_download(&w->value, host, NULL);
    double ref[N], worst = 0;
    reference(strcmp(algorithm, "lamb") == 0, lr, 0.9, b2, eps, wd, ref);
    for (int i = 0; i < N; i++) {
        double d_ref = ref[i] - w0_at(i), d_got = (double)host[i] - (double)w0_at(i);
        double rel = fabs(d_got - d_ref) / fabs(d_ref);
        if (rel > worst) worst = rel;
    }
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_backend_destroy(be);
    return worst;
}

int main(void)
{
    /* lr 1e-3 on weights of 0.5: the change is 5e-3, 1e5 float32 ulps of w, so 1e-4 relative
     * would be 10 ulps; the old rounding was 6.6e-3 relative at beta2 = 0.999999 */
    double a6 = run("adam", 1e-3, 0.999999, 1e-8, 0), a5 = run("adam", 1e-3, 0.99999, 1e-8, 0);
    /* LAMB: an epsilon that makes the Adam part of the direction (|g| / eps, about 3e-7 and
     * 3e-9) as large as the decay term wd w, so an error in the decay shows in the step: the
     * old 1.3% at wd = 1e-6, and a decay of 0 at wd = 1e-8 */
    double l6 = run("lamb", 1e-2, 0.999, 1e6, 1e-6), l8 = run("lamb", 1e-2, 0.999, 1e8, 1e-8);
    printf("relative error of the change after %d steps: adam beta2=0.999999 %.3g, "
           "beta2=0.99999 %.3g; lamb wd=1e-6 %.3g, wd=1e-8 %.3g\n", STEPS, a6, a5, l6, l8);
    CHECK(a6 < 1e-4);
    CHECK(a5 < 1e-4);
    CHECK(l6 < 1e-4);
    CHECK(l8 < 1e-4);
    return tb_test_finish("test_optim_precision");
}

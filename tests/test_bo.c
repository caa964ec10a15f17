/* test_bo.c: Bayesian optimisation with the GP of src/tune finds the minimum of Branin's
 * function (on the unit square) in far fewer evaluations than the scrambled Halton sequence,
 * on average over seeds; a suggestion is deterministic; bad input is refused. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846
#define BRANIN_MIN 0.397887357729738

/* Branin-Hoo on [-5, 10] x [0, 15], from the unit square. */
static double branin(const double *u)
{
    double x1 = -5 + 15 * u[0], x2 = 15 * u[1];
    double b = 5.1 / (4 * PI * PI), c = 5 / PI, t = 1 / (8 * PI);
    double q = x2 - b * x1 * x1 + c * x1 - 6;
    return q * q + 10 * (1 - t) * cos(x1) + 10;
}

enum { INIT = 3, BO_MAX = 30, HALTON_MAX = 4000 };
#define GOAL 0.1 /* evaluations until f - f* < GOAL */

/* Evaluations the Halton sequence of seed needs (HALTON_MAX + 1 if it never gets there). */
static int halton_evals(uint64_t seed)
{
    static double u[HALTON_MAX * 2];
    tb_error err = {0};
    if (tb_halton(HALTON_MAX, 2, 100, true, seed, u, &err) != TB_OK) return HALTON_MAX + 1;
    for (int i = 0; i < HALTON_MAX; i++)
        if (branin(u + 2 * i) - BRANIN_MIN < GOAL) return i + 1;
    return HALTON_MAX + 1;
}

/* Evaluations BO needs from the same INIT first Halton points (BO_MAX + 1 if more). */
static int bo_evals(uint64_t seed)
{
    double x[BO_MAX * 2], y[BO_MAX];
    tb_error err = {0};
    if (tb_halton(INIT, 2, 100, true, seed, x, &err) != TB_OK) return BO_MAX + 1;
    for (int i = 0; i < BO_MAX; i++) {
        if (i >= INIT) {
            tb_bo_options o = {.seed = seed * 1000 + (uint64_t)i};
            if (tb_bo_suggest(2, x, y, i, &o, x + 2 * i, NULL, &err) != TB_OK) {
                printf("  seed %llu step %d: %s\n", (unsigned long long)seed, i, err.message);
                return BO_MAX + 1;
            }
        }
        double f = branin(x + 2 * i);
        if (f - BRANIN_MIN < GOAL) return i + 1;
        y[i] = log(f); /* Branin spans 0.4 to 300: its log is easier to model */
    }
    return BO_MAX + 1;
}

static void test_branin(void)
{
    enum { SEEDS = 5 };
    double bo = 0, halton = 0;
    for (uint64_t s = 1; s <= SEEDS; s++) {
        int b = bo_evals(s), h = halton_evals(s);
        printf("  seed %llu: BO %d evaluations, Halton %d\n", (unsigned long long)s, b, h);
        bo += b;
        halton += h;
    }
    bo /= SEEDS;
    halton /= SEEDS;
    printf("  mean evaluations to within %g of Branin's minimum: BO %.1f, Halton %.1f\n", GOAL,
           bo, halton);
    CHECK(bo <= BO_MAX);    /* every seed got there */
    CHECK(4 * bo < halton); /* in less than a quarter of the evaluations */
}

static void test_deterministic(void)
{
    double x[8], y[4], a[2], b[2], ea, eb;
    tb_error err = {0};
    CHECK_OK(tb_halton(4, 2, 100, true, 9, x, &err), &err);
    for (int i = 0; i < 4; i++) y[i] = branin(x + 2 * i);
    tb_bo_options o = {.seed = 5};
    CHECK_OK(tb_bo_suggest(2, x, y, 4, &o, a, &ea, &err), &err);
    CHECK_OK(tb_bo_suggest(2, x, y, 4, &o, b, &eb, &err), &err);
    CHECK(memcmp(a, b, sizeof a) == 0 && ea == eb && ea > 0);
    CHECK(a[0] >= 0 && a[0] <= 1 && a[1] >= 0 && a[1] <= 1);
    /* with a prior the GP is not refitted: one observation is enough */
    tb_gp_params p = {.dims = 2, .mean = 0, .amplitude = 1, .noise = 1e-4};
    p.lengthscales[0] = p.lengthscales[1] = 0.3;
    o.prior = &p;
    CHECK_OK(tb_bo_suggest(2, x, y, 1, &o, a, NULL, &err), &err);
    o.prior = NULL;
    CHECK_FAILS(tb_bo_suggest(2, x, y, 1, &o, a, NULL, &err), TB_ERR_INVALID, &err,
                "at least 2");
    p.dims = 3;
    o.prior = &p;
    CHECK_FAILS(tb_bo_suggest(2, x, y, 2, &o, a, NULL, &err), TB_ERR_INVALID, &err,
                "prior has 3");
}

int main(void)
{
    test_deterministic();
    test_branin();
    return tb_test_finish("test_bo");
}

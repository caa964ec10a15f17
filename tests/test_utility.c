/* test_utility.c: the search-space utility of src/tune (Ariafar et al. 2022) under a GP fitted
 * to a known function with its minimum at (0.7, 0.4): the expected best value never grows with
 * the budget, a nested space containing the minimum wins at small budgets, a tight space near
 * (not at) the minimum wins at a budget of 1 and loses to the whole square at 64, and P(best
 * below a threshold) grows with the budget. */
#include "testutil.h"

#include <stdlib.h>

typedef struct box {
    double lo[2], hi[2];
} box;

static void draw_box(void *user, tb_rng *rng, double *x)
{
    const box *b = user;
    for (int k = 0; k < 2; k++) x[k] = b->lo[k] + (b->hi[k] - b->lo[k]) * tb_rng_uniform(rng);
}

static double bowl(const double *u)
{
    return 2 * ((u[0] - 0.7) * (u[0] - 0.7) + 0.3 * (u[1] - 0.4) * (u[1] - 0.4));
}

enum { N = 40, NB = 6, DRAWS = 400 };
static const int budgets[NB] = {1, 2, 4, 8, 16, 64};

static void test_spaces(void)
{
    double x[N * 2], y[N];
    tb_error err = {0};
    CHECK_OK(tb_halton(N, 2, 100, true, 3, x, &err), &err);
    for (int i = 0; i < N; i++) y[i] = bowl(x + 2 * i);
    tb_gp_task data = {x, y, N};
    tb_gp_params p;
    tb_gp *gp = NULL;
    if (!CHECK_OK(tb_gp_fit(&data, 1, 2, NULL, &p, &err), &err)) return;
    if (!CHECK_OK(tb_gp_create(&p, &data, &gp, &err), &err)) return;
    box spaces[3] = {{{0, 0}, {1, 1}},         /* the whole square */
                     {{0.6, 0.3}, {0.8, 0.5}}, /* nested, around the minimum */
                     {{0.5, 0.2}, {0.6, 0.3}}}; /* tight, near the minimum but not at it */
    tb_utility u[3][NB];
    for (int s = 0; s < 3; s++)
        CHECK_OK(tb_gp_utility(gp, draw_box, &spaces[s], budgets, NB, DRAWS, 0.01, 7, u[s],
                               &err), &err);
    for (int s = 0; s < 3; s++) {
        printf("  space %d:", s);
        for (int i = 0; i < NB; i++)
            printf(" b=%d %.4f (%.4f) p=%.2f;", u[s][i].budget, u[s][i].expected_best,
                   u[s][i].std_error, u[s][i].p_below);
        printf("\n");
        bool monotone = true, p_grows = true;
        for (int i = 1; i < NB; i++) {
            monotone &= u[s][i].expected_best <= u[s][i - 1].expected_best;
            p_grows &= u[s][i].p_below >= u[s][i - 1].p_below;
        }
        CHECK(monotone);
        CHECK(p_grows);
    }
    /* the whole square at b = 1: the mean of the bowl over it, 2 (1/12 + 0.04 + 0.3 (1/12 +
     * 0.01)) = 0.3027, within Monte Carlo error */
    CHECK_NEAR(u[0][0].expected_best, 0.3027, 4 * u[0][0].std_error + 0.01);
    /* the nested space with the minimum beats the whole square at small budgets */
    for (int i = 0; i < 3; i++)
        CHECK(u[1][i].expected_best + 2 * (u[1][i].std_error + u[0][i].std_error) <
              u[0][i].expected_best);
    /* the tight space off the minimum: better at b = 1, worse at b = 64 (its best point is
     * bowl(0.6, 0.3) = 0.026) */
    CHECK(u[2][0].expected_best < u[0][0].expected_best - 0.1);
    CHECK(u[2][NB - 1].expected_best > u[0][NB - 1].expected_best + 0.01);
    CHECK(u[2][NB - 1].p_below == 0 || u[2][NB - 1].p_below < u[0][NB - 1].p_below);
    /* bad input */
    int bad[1] = {0};
    CHECK_FAILS(tb_gp_utility(gp, draw_box, &spaces[0], bad, 1, DRAWS, 0, 7, u[0], &err),
                TB_ERR_INVALID, &err, "budget 0");
    CHECK_FAILS(tb_gp_utility(gp, draw_box, &spaces[0], budgets, NB, 1, 0, 7, u[0], &err),
                TB_ERR_INVALID, &err, "1 draws");
    tb_gp_destroy(gp);
}

int main(void)
{
    test_spaces();
    return tb_test_finish("test_utility");
}

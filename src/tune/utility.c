/* utility.c: the budget-aware utility of a search space under a GP's posterior (Ariafar,
 * Gilmer, Nado, Snoek, Jenatton, Dahl, AISTATS 2022; docs/MATH.md section 5), by Monte Carlo
 * over joint posterior draws. */
#include "tune/gp_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUDGET 1024

tb_status tb_gp_utility(const tb_gp *gp, tb_utility_draw_fn draw, void *user,
                        const int *budgets, int n_budgets, int draws, double threshold,
                        uint64_t seed, tb_utility *out, tb_error *err)
{
    if (n_budgets < 1) return tb_fail(err, TB_ERR_INVALID, "search-space utility: no budgets");
    if (draws < 2)
        return tb_fail(err, TB_ERR_INVALID, "search-space utility: %d draws (at least 2)",
                       draws);
    int m = 0;
    for (int i = 0; i < n_budgets; i++) {
        if (budgets[i] < 1 || budgets[i] > MAX_BUDGET)
            return tb_fail(err, TB_ERR_INVALID, "search-space utility: budget %d is outside "
                           "[1, %d]", budgets[i], MAX_BUDGET);
        if (budgets[i] > m) m = budgets[i];
    }
    const int dims = tb_gp_get_params(gp)->dims;
    double *x = malloc((size_t)m * dims * sizeof *x);
    double *f = malloc((size_t)m * sizeof *f);
    double *sum = calloc((size_t)n_budgets * 3, sizeof *sum); /* best, best^2, hits */
    tb_status st = TB_OK;
    if (!x || !f || !sum) st = tb_fail(err, TB_ERR_NOMEM, "search-space utility: out of memory");
    tb_rng rng = tb_rng_make(seed, 0x7574ull);
    for (int r = 0; st == TB_OK && r < draws; r++) {
        for (int j = 0; j < m; j++) draw(user, &rng, x + (size_t)j * dims);
        st = tb_gp_sample(gp, x, m, &rng, f, err);
        for (int j = 1; st == TB_OK && j < m; j++) f[j] = fmin(f[j], f[j - 1]); /* best so far */
        for (int i = 0; st == TB_OK && i < n_budgets; i++) {
            double best = f[budgets[i] - 1];
            sum[3 * i] += best;
            sum[3 * i + 1] += best * best;
            sum[3 * i + 2] += best < threshold;
        }
    }
    for (int i = 0; st == TB_OK && i < n_budgets; i++) {
        double mean = sum[3 * i] / draws;
        double var = fmax(sum[3 * i + 1] / draws - mean * mean, 0) * draws / (draws - 1);
        out[i] = (tb_utility){.budget = budgets[i], .expected_best = mean,
                              .std_error = sqrt(var / draws), .p_below = sum[3 * i + 2] / draws};
    }
    free(x);
    free(f);
    free(sum);
    return st == TB_OK ? TB_OK : tb_error_prefix(err, "search-space utility");
}

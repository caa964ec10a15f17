/* hw_score.c: the hardware suite's score: the weighted geometric mean of the workloads'
 * throughput ratios, with an interval propagated from the windows' standard errors. */
#include "trainbench/hardware.h"

#include "trainbench/stats.h"

#include <math.h>
#include <string.h>

/* The weighted geometric mean of the items that passed, its interval at level and the
 * interval's degrees of freedom. */
static void geometric_mean(const tb_hw_item *items, int n, double level, double *score,
                           double *low, double *high, double *df)
{
    double wsum = 0;
    for (int i = 0; i < n; i++)
        if (!items[i].failed) wsum += items[i].weight;
    double log_mean = 0, var = 0, dof_den = 0;
    bool known = true;
    for (int i = 0; i < n; i++) {
        const tb_hw_item *it = &items[i];
        if (it->failed) continue;
        double a = it->weight / wsum;
        log_mean += a * log(it->ratio);
        /* Var(ln mean) ~ (sem / mean)^2, the delta method */
        double v = a * a * it->rel_sem * it->rel_sem;
        if (it->windows < 2 || !isfinite(v)) {
            known = false;
            continue;
        }
        var += v;
        dof_den += v * v / (double)(it->windows - 1);
    }
    *score = wsum > 0 ? exp(log_mean) : NAN;
    *df = known && dof_den > 0 ? var * var / dof_den : NAN;
    if (!known || wsum <= 0) {
        *low = *high = NAN;
    } else if (var == 0) {
        *low = *high = *score;
    } else {
        double t = tb_stats_t_quantile(0.5 + 0.5 * level, *df);
        *low = *score * exp(-t * sqrt(var));
        *high = *score * exp(t * sqrt(var));
    }
}

tb_status tb_hw_score_compute(const tb_hw_item *items, int n, double level, tb_hw_score *out,
                              tb_error *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1) return tb_fail(err, TB_ERR_INVALID, "hardware score: no workloads to score");
    if (!(level > 0 && level < 1))
        return tb_fail(err, TB_ERR_INVALID, "hardware score: the level must be in (0, 1), got "
                       "%g", level);
    for (int i = 0; i < n; i++) {
        if (!(items[i].weight > 0 && isfinite(items[i].weight)))
            return tb_fail(err, TB_ERR_INVALID, "hardware score: workload %d's weight is %g, "
                           "not positive", i, items[i].weight);
        if (!items[i].failed && !(items[i].ratio > 0 && isfinite(items[i].ratio)))
            return tb_fail(err, TB_ERR_INVALID, "hardware score: workload %d's ratio is %g, "
                           "not positive", i, items[i].ratio);
        out->failed += items[i].failed;
    }
    out->items = n;
    double df;
    geometric_mean(items, n, level, &out->passed_score, &out->passed_low,
                   &out->passed_high, &df);
    if (out->failed == n) out->passed_score = out->passed_low = out->passed_high = NAN;
    if (out->failed > 0) { /* a ratio of 0 makes the geometric mean 0 */
        out->score = out->low = out->high = 0;
        out->df = NAN;
    } else {
        out->score = out->passed_score;
        out->low = out->passed_low;
        out->high = out->passed_high;
        out->df = df;
    }
    return TB_OK;
}

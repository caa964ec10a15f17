/* variance.c: how much each source of variation (init, data order, split, dropout, ...) moves
 * a result, with chi-square intervals of each std, its share of the total, and a gap between
 * two algorithms measured in those units (Bouthillier et al., MLSys 2021, section 3). */
#include "stats_impl.h"

#include <math.h>
#include <string.h>

tb_status tb_variance_decompose(const tb_variation_group *groups, int n_groups,
                                const char *reference, double alpha, tb_variance_row *out,
                                tb_error *err)
{
    if (!groups || !out)
        return tb_fail(err, TB_ERR_INVALID, "variance: %s is NULL", groups ? "out" : "groups");
    if (n_groups < 1)
        return tb_fail(err, TB_ERR_INVALID, "variance: no groups of results (%d)", n_groups);
    if (!reference) reference = "all";
    if (!(alpha >= TB_STATS_ALPHA_MIN && alpha < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "variance: alpha %g is outside [1e-10, 1)", alpha);
    tb_status st = TB_OK;
    for (int g = 0; g < n_groups; g++) {
        const tb_variation_group *grp = &groups[g];
        if (!grp->name) return tb_fail(err, TB_ERR_INVALID, "variance: group %d has no name", g);
        if (!grp->values)
            return tb_fail(err, TB_ERR_INVALID, "variance: the values of source '%s' are NULL",
                           grp->name);
        if (grp->n < 2)
            return tb_fail(err, TB_ERR_INVALID,
                           "variance: source '%s' has %lld results (need at least 2)", grp->name,
                           (long long)grp->n);
        st = tb_stats_check_finite(grp->values, grp->n, grp->name, err);
        if (st != TB_OK) {
            tb_error_prefix(err, "variance: source");
            return st;
        }
    }
    int ref = -1;
    for (int g = 0; g < n_groups && ref < 0; g++)
        if (strcmp(groups[g].name, reference) == 0) ref = g;

    for (int g = 0; g < n_groups; g++) {
        tb_variance_row *row = &out[g];
        row->name = groups[g].name;
        row->n = groups[g].n;
        tb_stats_mean_std(groups[g].values, groups[g].n, &row->mean, &row->std);
        st = tb_std_interval(groups[g].values, groups[g].n, alpha, &row->std_ci, err);
        if (st != TB_OK) {
            tb_error_prefix(err, "variance of '%s'", groups[g].name);
            return st;
        }
    }
    double ref_std = ref >= 0 ? out[ref].std : NAN;
    for (int g = 0; g < n_groups; g++) {
        out[g].std_share = out[g].std / ref_std; /* NaN without reference; inf if it is 0 */
        out[g].var_share = out[g].std_share * out[g].std_share;
    }
    return TB_OK;
}

tb_status tb_gap_versus_sources(const double *a, int64_t na, const double *b, int64_t nb,
                                const tb_variance_row *rows, int n_rows, double *gap,
                                tb_gap_row *out, tb_error *err)
{
    if (na < 1 || nb < 1)
        return tb_fail(err, TB_ERR_INVALID, "gap: %s has no results (%lld and %lld runs)",
                       na < 1 ? "A" : "B", (long long)na, (long long)nb);
    if (!gap || (n_rows > 0 && (!rows || !out)))
        return tb_fail(err, TB_ERR_INVALID, "gap: %s is NULL",
                       !gap ? "gap" : !rows ? "rows" : "out");
    if (n_rows < 0) return tb_fail(err, TB_ERR_INVALID, "gap: bad list of %d sources", n_rows);
    tb_status st = tb_stats_check_finite(a, na, "gap: results of A", err);
    if (st == TB_OK) st = tb_stats_check_finite(b, nb, "gap: results of B", err);
    if (st != TB_OK) return st;
    double ma, mb, sd;
    tb_stats_mean_std(a, na, &ma, &sd);
    tb_stats_mean_std(b, nb, &mb, &sd);
    double g = ma - mb, ag = fabs(g);
    *gap = g;
    for (int r = 0; r < n_rows; r++) {
        out[r].name = rows[r].name;
        out[r].std = rows[r].std;
        if (rows[r].std > 0.0) {
            out[r].ratio = ag / rows[r].std;
            out[r].implied_p = tb_normal_cdf(ag / (rows[r].std * 1.41421356237309504880));
        } else {
            out[r].ratio = ag > 0.0 ? INFINITY : 0.0;
            out[r].implied_p = ag > 0.0 ? 1.0 : 0.5;
        }
    }
    return TB_OK;
}

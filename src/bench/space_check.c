/* space_check.c: a built-in submission's search space against what its optimizer accepts,
 * dimension by dimension: used by bench (on the space's text) and by utility (on a parsed
 * space), so both refuse the same names and values. */
#include "bench/bench_impl.h"

#include <string.h>

/* One value of a built-in's search-space dimension against what the baseline accepts: its
 * own warmup_fraction and batch_size, or one of the optimizer's hyperparameters as
 * tb_optimizer_check_hparams accepts it (the others at their defaults). */
tb_status tb_bench_check_dimension(const tb_optimizer_info *info, const char *source,
                                   const char *name, double value, tb_error *err)
{
    if (!name || !name[0])
        return tb_fail(err, TB_ERR_INVALID, "%s: a dimension has an empty name", source);
    if (strcmp(name, TB_HP_WARMUP_FRACTION) == 0 || strcmp(name, TB_HP_DROPOUT_RATE) == 0) {
        if (!(value >= 0 && value < 1))
            return tb_fail(err, TB_ERR_INVALID, "%s: dimension '%s': %g is outside [0, 1)",
                           source, name, value);
        return TB_OK;
    }
    if (strcmp(name, "batch_size") == 0) {
        if (!(value >= 1 && value <= 1e9))
            return tb_fail(err, TB_ERR_INVALID, "%s: dimension '%s': %g is not a batch size",
                           source, name, value);
        return TB_OK;
    }
    bool known = false;
    for (int j = 0; j < info->n_hparams; j++) known |= strcmp(info->hparams[j].name, name) == 0;
    if (!known) {
        char list[512] = "";
        for (int j = 0; j < info->n_hparams; j++) {
            strncat(list, info->hparams[j].name, sizeof list - strlen(list) - 1);
            strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: dimension '%s' is not a hyperparameter of %s (it has: %s"
                       TB_HP_WARMUP_FRACTION ", " TB_HP_DROPOUT_RATE ", batch_size)", source, name,
                       info->name, list);
    }
    tb_hparams one = {0};
    tb_status st = tb_hparams_set(&one, name, value, err);
    if (st == TB_OK) st = tb_optimizer_check_hparams(info->name, &one, err);
    if (st != TB_OK) tb_error_prefix(err, "%s: dimension '%s'", source, name);
    return st;
}

tb_status tb_bench_space_check(const tb_optimizer_info *info, const tb_search_space *space,
                               const char *source, tb_error *err)
{
    tb_status st = TB_OK;
    tb_search_dim d;
    for (int i = 0; st == TB_OK && tb_search_space_dim(space, i, &d); i++) {
        st = tb_bench_check_dimension(info, source, d.name, d.min, err);
        if (st == TB_OK) st = tb_bench_check_dimension(info, source, d.name, d.max, err);
        for (int k = 0; st == TB_OK && k < d.n_feasible; k++)
            st = tb_bench_check_dimension(info, source, d.name, d.feasible[k], err);
    }
    return st;
}

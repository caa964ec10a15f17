/* diverge.c: the divergence rule, one for every driver (see trainbench/run.h). */
#include "run/run_impl.h"

#include <math.h>
#include <stdio.h>

tb_status tb_run_check_loss(const tb_run *r, const char *what, double loss, int64_t step,
                            bool after_last, tb_error *err)
{
    const double first = r->first_loss;
    if (isfinite(loss) && !(first > 0 && loss > TB_RUN_DIVERGENCE_FACTOR * first))
        return TB_OK;
    char when[64];
    snprintf(when, sizeof when, after_last ? "after the last step (%lld)" : "at step %lld",
             (long long)step);
    if (!isfinite(loss))
        return tb_fail(err, TB_ERR_NUMERIC, "the run diverged: %s is %g %s (not finite)", what,
                       loss, when);
    return tb_fail(err, TB_ERR_NUMERIC,
                   "the run diverged: %s is %g %s, more than %g times the first step's training "
                   "loss %g",
                   what, loss, when, TB_RUN_DIVERGENCE_FACTOR, first);
}

/* kfac_limits.c: what K-FAC and EKFAC refuse before they allocate or train: hyperparameters
 * that are in range but cannot work (a fractional interval, a damping below float32's
 * smallest normal number). */
#include "optim/kfac_impl.h"

#include <math.h>
#include <string.h>

tb_status tb_kfac_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                        tb_error *err)
{
    (void)given;
    const char *ints[] = {"cov_interval", "inv_interval", "scale_interval"};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        if (!tb_hparams_has(hp, ints[i])) continue; /* scale_interval: EKFAC only */
        double v = tb_hparams_get(hp, ints[i], 1);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    /* EKFAC divides by S + damping in float32 (S is 0 along directions no example has taken);
     * K-FAC's factored damping pi sqrt(damping) sets the largest eigenvalue of the inverses
     * kept in float32 */
    return tb_opt_check_guard(hp, algorithm, "damping",
                              strcmp(algorithm, "ekfac") == 0
                                  ? "S + damping would be 0 where S is (directions no example "
                                    "has taken), and the update divides by it"
                                  : "the inverses of A + pi sqrt(damping) I and G + "
                                    "sqrt(damping)/pi I, kept in float32, would overflow where "
                                    "a factor is singular",
                              err);
}
